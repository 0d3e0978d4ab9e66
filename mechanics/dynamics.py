"""Constrained forward dynamics: the GPLC graph, one factorization, the outer loop.

For ``alm`` and ``prox`` the outer iterations only change linear terms
(``lambda^k``), so every iteration after the first is a re-solve through
:meth:`elimination.Factorization.solve` -- the reduced two sweeps of 000
Algorithms 2 and 5 -- with the termination rule of Algorithms 3 and 6:
stop when ``min(||qdd^k - qdd^(k-1)||_inf, ||K a - k||_inf) < tol``.  Each
batch element stops on its own; whether its answer meets the constraints is
its ``converged`` flag (:mod:`mechanics.convergence`).  Input is validated by
:mod:`mechanics.checks`.
"""
from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass

import numpy as np

import elimination
from elimination import Ordering

from .algorithms import resolve_algorithm, tree_order
from .checks import check_max_iter, check_mechanism, check_mu, check_multipliers, check_state, check_tol
from .convergence import (
    RESIDUAL_RTOL, SOFT_CONTRACTION, element_max, element_norm, residual_tolerance, warn_inverse_mu, warn_not_converged,
)
from .gplc import a_key, build_gplc, lam_key, penalty_target, prior_information, qdd_key, split_multipliers
from .kinematics import kinematics
from .mechanism import Mechanism

_PLANS: "weakref.WeakKeyDictionary[Mechanism, dict]" = weakref.WeakKeyDictionary()


HARD_RESIDUAL_RTOL = RESIDUAL_RTOL  # a hard solution must satisfy its constraints; anything else is a singular problem
_ADVICE = {
    "hard": "The hard policy needs independent constraints: use a prox algorithm (proxbbo, proxpv, proxltl).",
    "alm": "With the alm policy mu K'K enters the link pivots: lower mu, or use a prox algorithm (proxbbo, proxpv).",
    "prox": ("With the prox policy 1/mu regularizes the multipliers; where constraints are dependent it must stay "
             "above round-off: lower mu (1e5-1e10). Otherwise check the mechanism's inertias and joints (a massless "
             "link or a dependent joint makes it singular)."),
    "soft": "Lower mu, or check the mechanism's inertias.",
}


@dataclass
class DynamicsResult:
    """Result of :func:`forward_dynamics`.

    ``batch`` below is the broadcast of the leading dimensions of ``q``, ``v``,
    ``tau`` (and ``forces0``); for an unbatched call (``batch == ()``)
    ``converged``, ``iterations`` and ``residual`` are Python scalars.

    Attributes
    ----------
    qdd : ndarray (*batch, nv)
        Joint accelerations, in the mechanism's velocity layout.
    forces : ndarray (*batch, m)
        Constraint forces stacked in constraint order, with Pinocchio's sign:
        the generalized force they exert is ``+J' forces`` (the papers'
        multipliers are ``-forces``).
    iterations : int or ndarray of int (*batch)
        Factorizations plus re-solves that produced each element's answer (1
        for ``hard`` and ``soft``).  An element that meets the termination rule
        stops there: its answer equals the one of an unbatched call.
    residual : float or ndarray (*batch)
        ``max |K a - k|`` over the constraints at the returned solution.
    converged : bool or ndarray of bool (*batch)
        Whether the returned accelerations satisfy the constraints -- for
        ``alm`` and ``prox``: the residual is within ``tol`` (or the round-off
        floor the ``hard`` policy accepts, where ``tol`` is below it); for
        ``soft``: the soft constraints hold (consistent, and mu large enough).  See
        :mod:`mechanics.convergence`; a False element also issued a
        :class:`~mechanics.ConvergenceWarning`.
    link_accelerations : dict
        Link name -> world-frame spatial acceleration (*batch, 6), gravity
        offset included (``a_0 = -a_grav``).
    algorithm : str
    """

    qdd: np.ndarray
    forces: np.ndarray
    iterations: int | np.ndarray
    residual: float | np.ndarray
    link_accelerations: dict
    algorithm: str
    converged: bool | np.ndarray


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
    check_mechanism(mechanism)
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


def _merge(active: np.ndarray, new, old):
    """``new`` where ``active`` (shape ``batch``), else ``old``; arrays (*batch, d) or dicts of them."""
    if active.all():
        return new
    if isinstance(new, dict):
        return {key: _merge(active, new[key], old[key]) for key in new}
    return np.where(active[..., None], new, old)


def _multipliers(policy: str, mu: float, lam: dict, x: dict, residual: dict) -> dict:
    """lambda after a solve: the ALM update (000 eq. 33), the prox multipliers, or the soft penalty force."""
    if policy == "alm":
        return {c: lam[c] + mu * residual[c] for c in lam}
    if policy in ("prox", "hard"):
        return {c: x[lam_key(c)] for c in lam}
    return {c: mu * residual[c] for c in lam}


def _resolve(fact, gplc, policy: str, mu: float, lam: dict, refine: int) -> dict:
    """One outer iteration's re-solve: only ``lambda^k`` moves (the reduced two sweeps)."""
    if policy in ("alm", "soft"):
        return fact.solve(b={gplc.moving[c]: penalty_target(gplc.terms[c], mu, lam[c]) for c in lam}, refine=refine)
    return fact.solve(g={gplc.moving[c]: prior_information(mu, lam[c]) for c in lam}, refine=refine)


def _outer_loop(mechanism, gplc, fact, policy: str, mu: float, lam: dict, tol: float, max_iter: int, refine: int, batch):
    """000 Alg. 3 (``alm``) and Alg. 6 (``prox``), per batch element; one pass for ``hard`` and ``soft``.

    An element that meets ``min(||qdd^k - qdd^(k-1)||_inf, ||K a - k||_inf) < tol``
    keeps that iterate while the others go on.  Returns ``(x, qdd, lam,
    residual, iterations)``, ``iterations`` of shape ``batch``.
    """
    x = fact.solve(refine=refine)
    qdd, residual = _qdd(mechanism, x, batch), _residuals(gplc, x)
    iterations, step = np.ones(batch, dtype=int), np.full(batch, np.inf)
    active, met = np.ones(batch, dtype=bool), np.zeros(batch, dtype=bool)
    while True:
        lam = _merge(active, _multipliers(policy, mu, lam, x, residual), lam)
        met |= active & (np.minimum(step, element_max(residual.values(), batch)) < tol)
        active &= ~met
        if policy not in ("alm", "prox") or not active.any() or np.max(iterations[active]) >= max_iter:
            return x, qdd, lam, residual, iterations
        new_x = _resolve(fact, gplc, policy, mu, lam, refine)
        new_qdd = _qdd(mechanism, new_x, batch)
        step = np.where(active, element_max([new_qdd - qdd], batch), step)
        iterations += active
        x, qdd = _merge(active, new_x, x), _merge(active, new_qdd, qdd)
        residual = _merge(active, _residuals(gplc, new_x), residual)


def _soft_holds(fact, gplc, mu: float, lam: dict, residual: dict, tolerance: np.ndarray, refine: int, batch):
    """``soft``: the constraints hold where one ALM correction halves the residual (:mod:`~mechanics.convergence`)."""
    settled = element_max(residual.values(), batch) <= tolerance
    if settled.all():
        return settled
    corrected = element_norm(_residuals(gplc, _resolve(fact, gplc, "soft", mu, lam, refine)).values(), batch)
    return settled | (corrected <= SOFT_CONTRACTION * element_norm(residual.values(), batch))


def _converged(policy, fact, gplc, mu, lam, residual, tol, refine, batch) -> np.ndarray:
    tolerance = residual_tolerance(tol, gplc.terms, batch)
    if policy in ("alm", "prox"):
        return element_max(residual.values(), batch) <= tolerance
    if policy == "soft":
        return _soft_holds(fact, gplc, mu, lam, residual, tolerance, refine, batch)
    return np.ones(batch, dtype=bool)  # hard: the residual guard raised otherwise


def _check_hard_residual(name: str, mechanism: Mechanism, gplc, worst: float) -> None:
    if worst > HARD_RESIDUAL_RTOL * (1.0 + _max_abs(t.k for t in gplc.terms.values())):
        raise elimination.SingularProblemError(
            f"{name} (hard policy) on {mechanism.name!r}: the solution leaves a constraint residual of {worst:.2e}: "
            f"the constraints are dependent (or inconsistent) at this state. {_ADVICE['hard']}", -1, (),
        )


@contextlib.contextmanager
def _explained(name: str, algo, mechanism: Mechanism, mu: float):
    """Engine errors (at factorization, or at a solve that cannot be verified) with the algorithm,
    the mechanism and the policy's advice."""
    try:
        yield
    except elimination.SingularProblemError as error:
        raise elimination.SingularProblemError(
            f"{name} ({algo.constraints} policy, mu={mu:g}) on {mechanism.name!r}: {error} {_ADVICE[algo.constraints]}",
            error.step, error.keys, error.kind, error.factors,
        ) from None


def _scalar_if_unbatched(value: np.ndarray, batch: tuple, kind):
    return kind(value) if batch == () else value


def forward_dynamics(
    mechanism: Mechanism, q, v, tau, algorithm="lcaba", mu: float = 1e6, tol: float = 1e-10,
    max_iter: int = 50, forces0=None, refine: int | None = None,
) -> DynamicsResult:
    """Constrained forward dynamics by bucket elimination of the GPLC graph.

    Parameters
    ----------
    mechanism : Mechanism
    q : array_like (..., nq)
        Configuration, Pinocchio's layout.  Quaternions (spherical and free
        joints) and (cos, sin) pairs must have unit norm: within
        ``|norm^2 - 1| <= 1e-4`` (Pinocchio's tolerance) they are normalised,
        beyond it ``q`` is refused (:data:`mechanics.checks.UNIT_NORM_TOL`).
    v, tau : array_like (..., nv)
        Leading batch dimensions of ``q``, ``v``, ``tau`` (and ``forces0``)
        must broadcast against each other; they go through one symbolic plan.
        Real input only: complex arrays raise ``TypeError``.
    algorithm : str or tuple
        A name in :data:`mechanics.ALGORITHMS` or a ``(constraint policy,
        ordering policy)`` pair.
    mu : float
        Penalty / proximal parameter, larger is stiffer (000 uses 1e5-1e7).
        It is the inverse of Pinocchio's ``ProximalSettings`` mu: ``mu < 1``
        under ``prox`` or ``alm`` issues a :class:`~mechanics.MuConventionWarning`.
    tol : float
        Termination tolerance of the outer loop, and the constraint residual
        a converged result reaches (:mod:`mechanics.convergence`).
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
        ``converged``, ``iterations`` and ``residual`` per batch element
        (scalars for an unbatched call).

    Warns
    -----
    ConvergenceWarning
        Once per call when an element has not converged: ``max_iter`` reached,
        the residual stays above ``tol`` (inconsistent constraints), or -- for
        ``soft`` -- the constraints are inconsistent.
    MuConventionWarning
        ``mu < 1`` with the ``prox`` or ``alm`` policy.

    Raises
    ------
    TypeError
        An argument of the wrong kind (``mu="big"``, ``algorithm=3``, complex
        ``q``), named in the message.
    ValueError
        Wrong shapes, NaN / inf, ``mu <= 0``, quaternions far from unit norm,
        batch shapes that do not broadcast.
    elimination.SingularProblemError
        A singular problem, e.g. dependent or inconsistent constraints under ``hard``.

    Examples
    --------
    >>> import numpy as np, mechanics
    >>> mech = mechanics.models.four_bar()
    >>> res = forward_dynamics(mech, mech.neutral_configuration(), np.zeros(mech.nv), np.zeros(mech.nv))
    >>> res.converged, res.residual < 1e-9
    (True, True)
    """
    q, v, tau = check_state(mechanism, q, v, tau)
    mu, tol, max_iter = check_mu(mu), check_tol(tol), check_max_iter(max_iter)
    name, algo = resolve_algorithm(algorithm)
    algo.check(mechanism, name)
    policy = algo.constraints
    label = f"forward_dynamics: {name} ({policy} policy, mu={mu:g}) on {mechanism.name!r}"
    warn_inverse_mu(mu, policy, label, stacklevel=2)
    if refine is None:
        refine = 1 if policy in ("alm", "soft") else 0
    state = {"q": q, "v": v, "tau": tau}
    if forces0 is not None:
        forces0 = check_multipliers(mechanism, forces0, "forces0", state)
        state["forces0"] = forces0
    batch = tuple(np.broadcast_shapes(*(a.shape[:-1] for a in state.values())))
    kin = kinematics(mechanism, q, v)
    lam = split_multipliers(mechanism, None if forces0 is None else -forces0, batch)
    gplc = build_gplc(mechanism, kin, tau, policy, mu, lam)
    with _explained(name, algo, mechanism, mu):
        fact = elimination.factorize(gplc.graph, _plan(mechanism, algo, gplc.graph))
        x, qdd, lam, residual, iterations = _outer_loop(mechanism, gplc, fact, policy, mu, lam, tol, max_iter, refine, batch)
        converged = _converged(policy, fact, gplc, mu, lam, residual, tol, refine, batch)
    worst = element_max(residual.values(), batch)
    if policy == "hard":
        _check_hard_residual(name, mechanism, gplc, float(np.max(worst, initial=0.0)))
    warn_not_converged(label, policy, tol, max_iter, converged, iterations, worst, stacklevel=2)
    forces = [np.broadcast_to(-lam[c.name], batch + (c.dim,)) for c in mechanism.constraints]
    return DynamicsResult(
        qdd=qdd,
        forces=np.concatenate(forces, axis=-1) if forces else np.zeros(batch + (0,)),
        iterations=_scalar_if_unbatched(iterations, batch, int),
        residual=_scalar_if_unbatched(worst, batch, float),
        link_accelerations={l.name: x[a_key(l.name)] for l in mechanism.links},
        algorithm=name,
        converged=_scalar_if_unbatched(converged, batch, bool),
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
