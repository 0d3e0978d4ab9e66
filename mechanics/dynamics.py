"""Constrained forward dynamics: the GPLC graph, one factorization, the outer loop.

For ``alm`` and ``prox`` the outer iterations only change linear terms
(``lambda^k``), so every iteration after the first is a re-solve through
:meth:`elimination.Factorization.solve` -- the reduced two sweeps of 000
Algorithms 2 and 5 -- with the termination rule of Algorithms 3 and 6:
stop when ``min(||qdd^k - qdd^(k-1)||_inf, ||K a - k||_inf) < tol``.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

import elimination
from elimination import Ordering

from .algorithms import resolve_algorithm, tree_order
from .gplc import (
    a_key, build_gplc, check_mu, check_state, lam_key, penalty_target, prior_information, qdd_key,
    split_multipliers,
)
from .kinematics import kinematics
from .mechanism import Mechanism

_PLANS: "weakref.WeakKeyDictionary[Mechanism, dict]" = weakref.WeakKeyDictionary()


HARD_RESIDUAL_RTOL = 1e-8  # a hard solution must satisfy its constraints; anything else is a singular problem
_ADVICE = {
    "hard": "The hard policy needs independent constraints: use a prox algorithm (proxbbo, proxpv, proxltl).",
    "alm": "With the alm policy mu K'K enters the link pivots: lower mu, or use a prox algorithm (proxbbo, proxpv).",
    "prox": "Check the mechanism's inertias and joints (a massless link or a dependent joint makes it singular).",
    "soft": "Lower mu, or check the mechanism's inertias.",
}


@dataclass
class DynamicsResult:
    """Result of :func:`forward_dynamics`.

    Attributes
    ----------
    qdd : ndarray (..., nv)
        Joint accelerations, in the mechanism's velocity layout.
    forces : ndarray (..., m)
        Constraint forces stacked in constraint order, with Pinocchio's sign:
        the generalized force they exert is ``+J' forces`` (the papers'
        multipliers are ``-forces``).
    iterations : int
        Factorizations plus re-solves performed (1 for ``hard`` and ``soft``).
    residual : float
        ``max |K a - k|`` over constraints and batch at the returned solution.
    link_accelerations : dict
        Link name -> world-frame spatial acceleration (..., 6), gravity offset
        included (``a_0 = -a_grav``).
    algorithm : str
    """

    qdd: np.ndarray
    forces: np.ndarray
    iterations: int
    residual: float
    link_accelerations: dict
    algorithm: str


def _plan(mechanism: Mechanism, algorithm, graph) -> elimination.Plan:
    """Symbolic plan, cached per mechanism and algorithm (structure never depends on the state)."""
    cache = _PLANS.setdefault(mechanism, {})
    key = (algorithm.constraints, algorithm.ordering)
    if key not in cache:
        cache[key] = elimination.analyze(graph, algorithm.ordering(mechanism, graph))
    return cache[key]


def algorithm_plan(mechanism: Mechanism, algorithm, mu: float = 1e6):
    """The GPLC graph of ``mechanism`` (at its neutral state) and the plan ``algorithm`` eliminates it with.

    The plan is the one :func:`forward_dynamics` uses (cached per mechanism and
    algorithm): its fill, fronts and flops hold for every state.

    Returns
    -------
    (factorgraph.FactorGraph, elimination.Plan)

    Examples
    --------
    >>> import mechanics
    >>> graph, plan = algorithm_plan(mechanics.models.fig4(), "lcaba")
    >>> plan.steps[0].frontal
    (('a', '6'),)
    """
    _, algo = resolve_algorithm(algorithm)
    zeros = np.zeros(mechanism.nv)
    kin = kinematics(mechanism, mechanism.neutral_configuration(), zeros)
    lam = split_multipliers(mechanism, None, kin.batch_shape)
    graph = build_gplc(mechanism, kin, zeros, algo.constraints, check_mu(mu), lam).graph
    return graph, _plan(mechanism, algo, graph)


def _qdd(mechanism: Mechanism, x: dict, batch: tuple) -> np.ndarray:
    parts = [x[qdd_key(l.name)] for l in mechanism.links if l.joint.nv]
    return np.concatenate([np.broadcast_to(p, batch + p.shape[-1:]) for p in parts], axis=-1)


def _residuals(gplc, x: dict) -> dict:
    return {name: terms.residual({link: x[a_key(link)] for link in terms.links}) for name, terms in gplc.terms.items()}


def _max_abs(arrays) -> float:
    return max((float(np.max(np.abs(a), initial=0.0)) for a in arrays), default=0.0)


def _check_iterations(tol, max_iter) -> None:
    if not (isinstance(tol, (int, float)) and np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a finite number > 0, got {tol!r}")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter must be an int >= 1, got {max_iter!r}")


def forward_dynamics(
    mechanism: Mechanism, q, v, tau, algorithm="lcaba", mu: float = 1e6, tol: float = 1e-10,
    max_iter: int = 50, forces0=None, refine: int | None = None,
) -> DynamicsResult:
    """Constrained forward dynamics by bucket elimination of the GPLC graph.

    Parameters
    ----------
    mechanism : Mechanism
    q : array_like (..., nq)
    v, tau : array_like (..., nv)
        Leading batch dimensions go through one symbolic plan.
    algorithm : str or tuple
        A name in :data:`mechanics.ALGORITHMS` or a ``(constraint policy,
        ordering policy)`` pair.
    mu : float
        Penalty / proximal parameter, larger is stiffer (000 uses 1e5-1e7).
    tol : float
        Termination tolerance of the outer loop.
    max_iter : int
        Most factorizations plus re-solves.
    forces0 : array_like (..., m), optional
        Warm start for the constraint forces (Pinocchio's sign).
    refine : int, optional
        Iterative-refinement steps per solve (:meth:`elimination.Factorization.solve`).
        The penalty policies (``alm``, ``soft``) put ``mu K'K`` in the link
        pivots; one refinement step against the penalty's Jacobian-form
        residual restores the accuracy the paper's LCABA loses at large mu
        (see ``benchmarks/mu_sweep.py``).  Default: 1 for ``alm`` and
        ``soft``, 0 for ``prox`` and ``hard`` (their orders are stable).

    Returns
    -------
    DynamicsResult

    Examples
    --------
    >>> import numpy as np, mechanics
    >>> mech = mechanics.models.four_bar()
    >>> res = forward_dynamics(mech, mech.neutral_configuration(), np.zeros(mech.nv), np.zeros(mech.nv))
    >>> res.residual < 1e-9
    True
    """
    q, v, tau = check_state(mechanism, q, v, tau)
    mu = check_mu(mu)
    _check_iterations(tol, max_iter)
    name, algo = resolve_algorithm(algorithm)
    algo.check(mechanism, name)
    if refine is None:
        refine = 1 if algo.constraints in ("alm", "soft") else 0
    kin = kinematics(mechanism, q, v)
    batch = np.broadcast_shapes(kin.batch_shape, tau.shape[:-1])
    lam = split_multipliers(mechanism, None if forces0 is None else -np.asarray(forces0, dtype=float), batch)
    gplc = build_gplc(mechanism, kin, tau, algo.constraints, mu, lam)
    try:
        fact = elimination.factorize(gplc.graph, _plan(mechanism, algo, gplc.graph))
    except elimination.SingularProblemError as error:
        raise elimination.SingularProblemError(
            f"{name} ({algo.constraints} policy, mu={mu:g}) on {mechanism.name!r}: {error} {_ADVICE[algo.constraints]}",
            error.step, error.keys,
        ) from None
    x = fact.solve(refine=refine)
    iterations, qdd = 1, _qdd(mechanism, x, batch)
    step = np.inf
    while True:
        residual = _residuals(gplc, x)
        if algo.constraints == "alm":
            lam = {c: lam[c] + mu * residual[c] for c in lam}
        elif algo.constraints in ("prox", "hard"):
            lam = {c: x[lam_key(c)] for c in lam}
        else:  # soft: the penalty force
            lam = {c: mu * residual[c] for c in lam}
        if algo.constraints not in ("alm", "prox") or min(step, _max_abs(residual.values())) < tol or iterations >= max_iter:
            break
        if algo.constraints == "alm":
            x = fact.solve(b={gplc.moving[c]: penalty_target(gplc.terms[c], mu, lam[c]) for c in lam}, refine=refine)
        else:
            x = fact.solve(g={gplc.moving[c]: prior_information(mu, lam[c]) for c in lam}, refine=refine)
        iterations += 1
        new_qdd = _qdd(mechanism, x, batch)
        step, qdd = float(np.max(np.abs(new_qdd - qdd), initial=0.0)), new_qdd
    worst = _max_abs(residual.values())
    if algo.constraints == "hard" and worst > HARD_RESIDUAL_RTOL * (1.0 + _max_abs(t.k for t in gplc.terms.values())):
        raise elimination.SingularProblemError(
            f"{name} (hard policy) on {mechanism.name!r}: the solution leaves a constraint residual of {worst:.2e}: "
            f"the constraints are dependent (or inconsistent) at this state. {_ADVICE['hard']}", -1, (),
        )
    forces = [np.broadcast_to(-lam[c.name], batch + (c.dim,)) for c in mechanism.constraints]
    return DynamicsResult(
        qdd=qdd,
        forces=np.concatenate(forces, axis=-1) if forces else np.zeros(batch + (0,)),
        iterations=iterations,
        residual=worst,
        link_accelerations={l.name: x[a_key(l.name)] for l in mechanism.links},
        algorithm=name,
    )


def delassus(mechanism: Mechanism, q) -> np.ndarray:
    """Delassus matrix (inverse operational-space inertia) ``J M^-1 J'`` at ``q``.

    Read off the dual factor left on the multipliers after eliminating every
    primal variable of the ``hard`` GPLC graph (001 Sec. IV): that factor's
    Hessian is ``-J M^-1 J'``.

    Parameters
    ----------
    mechanism : Mechanism
    q : array_like (..., nq)

    Returns
    -------
    ndarray (..., m, m), rows in constraint order.
    """
    zeros = np.zeros(mechanism.nv)
    q, _, _ = check_state(mechanism, q, zeros, zeros)
    if not mechanism.constraints:
        return np.zeros(q.shape[:-1] + (0, 0))
    kin = kinematics(mechanism, q, zeros)
    lam = split_multipliers(mechanism, None, kin.batch_shape)
    gplc = build_gplc(mechanism, kin, zeros, "hard", 1.0, lam)
    primal = Ordering([b for b in tree_order(mechanism, gplc.graph).blocks if b[0][0] != "lam"])
    plan = elimination.analyze(gplc.graph, primal, complete=False)
    dual = elimination.factorize(gplc.graph, plan).remaining().to_dense()
    order = np.concatenate([np.arange(dual.index[lam_key(c.name)].start, dual.index[lam_key(c.name)].stop) for c in mechanism.constraints])
    return -dual.K[..., order[:, None], order[None, :]]
