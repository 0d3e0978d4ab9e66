"""Constrained forward dynamics: the GPLC graph, one factorization, the outer loop.

The pieces, each in one place: the constraint policies (what a constraint adds
to the graph, what moves, how lambda is updated) in :mod:`mechanics.policies`;
the ordering policies and the plans in :mod:`mechanics.algorithms`; the outer
loop's moves in :mod:`mechanics.outer`, run by :func:`elimination.drive`.
Under ``alm`` and ``prox`` the outer iterations only change linear terms
(``lambda^k``), so every iteration after the first is a re-solve of the one
factorization -- the reduced two sweeps of 000 Algorithms 2 and 5 -- with the termination rule of
Algorithms 3 and 6: stop when ``min(||qdd^k - qdd^(k-1)||_inf, ||K a - k||_inf)
< tol``.  Each batch element stops on its own; whether its answer meets the
constraints is its ``converged`` flag (:mod:`mechanics.convergence`).  Input is
validated by :mod:`mechanics.checks`.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

import elimination
from elimination import Ordering
from elimination.factorization import check_refine
from elimination.numeric import BACKENDS

from .algorithms import layout_of, plan_of, policy_types, resolve_algorithm, tree_order
from .checks import (
    check_baumgarte, check_max_iter, check_mechanism, check_mu, check_multipliers, check_state, check_tol, plain_state,
    state_arrays,
)
from .convergence import RESIDUAL_RTOL, NumpyPathWarning, element_max, warn_inverse_mu, warn_not_converged
from .compiled import CompiledDynamics
from .compiled_tables import CONVERGED, ITERATIONS, OK, STATUS
from .diagnosis import diagnose
from .gplc import GPLCLayout, split_multipliers
from .keys import JointAcceleration, LinkAcceleration, Multiplier
from .kinematics import LINEAR_FIRST, kinematics
from .mechanism import Coupling, Mechanism, PlanCache
from .outer import PolicyIterations
from .policies import EXACT, resolve_policies

HARD_RESIDUAL_RTOL = RESIDUAL_RTOL  # a hard solution must satisfy its constraints; anything else is a singular problem


PREPARED_KEPT = 8  # forward_dynamics keeps the prepared calls of this many settings per mechanism


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
    cause : str or ndarray of str (*batch)
        Why an element did not converge, from a dense check of its state
        (:mod:`mechanics.diagnosis`): ``"inconsistent"``, ``"singular
        configuration"``, ``"ill-conditioned"`` or ``"max_iter"``; ``""``
        where it converged.
    link_accelerations : Mapping
        Link name -> spatial acceleration (*batch, 6) of the link, in the world
        frame at the world origin, Pinocchio's ``[linear; angular]`` order
        (as its Weld rows and free-flyer velocities), gravity offset included
        (the ground accelerates at ``-gravity``, as in ABA).
    algorithm : str
    constraint_forces : Mapping
        Constraint name -> its force (*batch, m_j), Pinocchio's sign and row
        order (a Weld's ``[linear; angular]`` in its first frame): the parts of
        ``forces``.
    """

    qdd: np.ndarray
    forces: np.ndarray
    iterations: int | np.ndarray
    residual: float | np.ndarray
    link_accelerations: Mapping
    algorithm: str
    converged: bool | np.ndarray
    constraint_forces: Mapping
    _cause: object = field(default="", repr=False, compare=False)  # the cause, or a function that finds it

    @property
    def cause(self) -> str | np.ndarray:
        if callable(self._cause):  # diagnosed on first use where the warning was not shown
            self._cause = self._cause()
        return self._cause


class NamedParts(Mapping):
    """Name -> a part of one array, ``array[..., *where[name]]``, made on access (views, no copies).

    >>> parts = NamedParts({"a": (slice(0, 2),), "b": (slice(2, 3),)}, np.arange(3.0))
    >>> parts["b"], list(parts)
    (array([2.]), ['a', 'b'])
    """

    def __init__(self, where: dict, array: np.ndarray):
        self._where, self._array = where, array

    def __getitem__(self, name: str) -> np.ndarray:
        return self._array[(Ellipsis, *self._where[name])]

    def __iter__(self):
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def __repr__(self) -> str:
        return f"NamedParts({list(self._where)}, of an array {self._array.shape})"


def _named_links(mechanism: Mechanism) -> dict:
    return {link.name: (i, slice(None)) for i, link in enumerate(mechanism.links)}


def _row_parts(mechanism: Mechanism, columns: dict) -> tuple:
    """Where one state's answer lies in its row of the compiled kernel's output (``columns``,
    :meth:`mechanics.compiled.CompiledDynamics.run`): the ``qdd`` and ``forces`` columns, the columns of the
    residual, the hard rows' residual and their largest ``|k|`` (consecutive), and each link's acceleration
    as :class:`NamedParts` of the row (no reshape: a single call's result is made in Python)."""
    first = columns["accelerations"].start
    links = {link.name: (slice(first + 6 * i, first + 6 * i + 6),) for i, link in enumerate(mechanism.links)}
    assert columns["hard_worst"] == columns["worst"] + 1 and columns["hard_k"] == columns["worst"] + 2
    return columns["qdd"], columns["forces"], slice(columns["worst"], columns["worst"] + 3), links


def _named_constraints(mechanism: Mechanism) -> dict:
    starts = np.cumsum([0] + [c.dim for c in mechanism.constraints])
    return {c.name: (slice(int(a), int(b)),) for c, a, b in zip(mechanism.constraints, starts, starts[1:])}


def algorithm_plan(mechanism: Mechanism, algorithm):
    """The GPLC structure of ``mechanism`` under ``algorithm`` and the plan that eliminates it.

    No numbers are involved: the structure is the layout's (variables with
    typed keys, factors with their roles), and the plan -- the one
    :func:`forward_dynamics` uses, kept in ``mechanism.plans`` -- holds for
    every state.

    Returns
    -------
    (factorgraph.GraphStructure, elimination.Plan)

    Examples
    --------
    >>> import mechanics
    >>> structure, plan = algorithm_plan(mechanics.models.fig4(), "lcaba")
    >>> plan.steps[0].frontal
    (LinkAcceleration('6'),)
    """
    check_mechanism(mechanism)
    _, algo = resolve_algorithm(algorithm)
    layout = layout_of(mechanism, algo)
    return layout.structure(), plan_of(mechanism, algo, layout)


def _embedded_forces(mechanism: Mechanism, embedding: tuple, q, v, tau, qdd, forces, backend: str = "numpy",
                     inverse=None):
    """``forces`` with the embedded constraints' rows filled in: with ``M qdd + b = tau + J' f`` (Pinocchio's
    sign), their ``J_e' f_e = M qdd + b - tau - J_o' f_o`` (the other constraints' rows ``o`` known), least
    squares on ``J_e'`` (least norm where an embedded loop is redundant); ``M qdd + b`` as given
    (``inverse``: the compiled kernel's, from the accelerations it solved for), else by inverse dynamics on
    ``backend``.  Couplings alone: their constant ``C`` and no Jacobian.  ``embedding``: :func:`_embedding_rows`."""
    from .inverse_dynamics import inverse_dynamics

    embedded, solve = embedding
    left = (inverse_dynamics(mechanism, q, v, qdd, backend=backend) if inverse is None else inverse) - tau
    if solve is not None:  # (every row embedded: couplings alone)
        # (products summed row by row, in one order for a state alone or in a batch: BLAS would pick gemv for one
        # and gemm for many, whose sums round apart)
        out = left[..., 0, None] * solve[0]
        for i in range(1, solve.shape[0]):
            out += left[..., i, None] * solve[i]
        return out
    from .diagnosis import joint_space_constraints

    out = np.array(forces, dtype=float)
    J = joint_space_constraints(mechanism, q, v)[0]
    left = left - (np.where(embedded, 0.0, forces)[..., None, :] @ J)[..., 0, :]
    out[..., embedded] = (np.linalg.pinv(np.swapaxes(J[..., embedded, :], -1, -2)) @ left[..., None])[..., 0]
    return out


def _embedding_rows(mechanism: Mechanism, policies: dict) -> tuple:
    """``(embedded, solve)``: which constraint rows ``policies`` embed (a boolean mask), and where they are all
    couplings' the constant ``pinv(C')'`` their forces come from (else None); kept with the mechanism (a
    single call's Python is most of a small robot's time)."""
    from .couplings import coupling_rows

    names = tuple(c.name for c in mechanism.constraints if policies[c.name].embeds(c))

    def made():
        embedded = np.concatenate([np.full(c.dim, c.name in names) for c in mechanism.constraints])
        couplings = bool(embedded.all()) and all(isinstance(mechanism.constraint(n), Coupling) for n in names)
        return embedded, (np.linalg.pinv(coupling_rows(mechanism, frozenset(names))[0].T).T if couplings else None)

    return mechanism.derived.get(("embedded rows", names), made)


def _max_abs(arrays) -> float:
    return max((float(np.max(np.abs(a), initial=0.0)) for a in arrays), default=0.0)


def _beyond_round_off(worst: float, k_max: float) -> bool:
    """A ``hard`` solution's constraint residual ``worst`` exceeds what round-off leaves (``k_max = max |k|``)."""
    return worst > HARD_RESIDUAL_RTOL * (1.0 + k_max)


def _check_hard_residual(name: str, mechanism: Mechanism, gplc, policies: dict, residual: dict) -> None:
    hard = [c for c, p in policies.items() if p.numbers.test == EXACT]
    worst = _max_abs(residual[c] for c in hard)
    if hard and _beyond_round_off(worst, _max_abs(gplc.terms[c].k for c in hard)):
        advice = " ".join(dict.fromkeys(policies[c].advice for c in hard))
        raise elimination.SingularProblemError(
            f"{name} (hard policy) on {mechanism.name!r}: the solution leaves a constraint residual of {worst:.2e}: "
            f"the constraints are dependent (or inconsistent) at this state. {advice}", -1, (),
        )


@contextlib.contextmanager
def _explained(name: str, label: str, policies: dict, mechanism: Mechanism, mu: float):
    """Engine errors (at factorization, or at a solve that cannot be verified) with the algorithm,
    the mechanism and the policies' advice."""
    try:
        yield
    except elimination.SingularProblemError as error:
        advice = " ".join(dict.fromkeys(p.advice for p in policies.values()))
        stiff = any(p.numbers.stiffness for p in policies.values())
        settings = f"{label} policy, mu={mu:g}" if stiff else f"{label} policy"  # (mu: no part in hard)
        raise elimination.SingularProblemError(
            f"{name} ({settings}) on {mechanism.name!r}: {error} {advice}",
            error.step, error.keys, error.kind, error.factors,
        ) from None


def default_refine(policies: dict, plan) -> int:
    """Refinement steps per solve when the caller names none: the largest of the policies' own (1 for the
    penalties, 0 for ``prox`` and ``hard``), and at least 1 where the plan eliminates a multiplier before a
    link or joint acceleration it couples to.

    A multiplier eliminated first leaves ``mu K'K`` (its ``-1/mu`` pivot inverted) on those accelerations,
    as a penalty does: their pivots then carry inertias of order 1 beside terms of order ``mu``, and the
    solve loses about ``log10(mu)`` digits that one refinement step restores (proxBBO on a random
    three-link loop at mu=1e8: 2e-9 from the dense KKT solve without it, 3e-14 with it).  Orders that
    eliminate the multipliers last (PV, proxPV, proxLTL) keep 0.
    """
    refine = max((p.refine for p in policies.values()), default=0)
    for step in plan.steps:
        if any(isinstance(k, Multiplier) for k in step.frontal) and any(
                isinstance(k, (LinkAcceleration, JointAcceleration)) for k in step.separator):
            return max(refine, 1)
    return refine


def _scalar_if_unbatched(value: np.ndarray, batch: tuple, kind):
    return kind(value) if batch == () else value


class PreparedDynamics:
    """Forward dynamics of one mechanism under one algorithm and settings, validated and planned once.

    For loops that call the dynamics many times (a simulator, an MPC, a
    learning loop): the algorithm is resolved and checked against the
    mechanism, the GPLC layout built, the plan analysed and lowered, ``mu``,
    ``tol``, ``max_iter`` and ``refine`` validated, and the mu-convention
    warning issued, all here, once.  A call then does only what depends on
    the state: kinematics, filling the graph, the factorization and the outer
    iterations.  Make one with :func:`prepare`; :func:`forward_dynamics` is
    ``prepare(...)(q, v, tau, forces0)``.

    Attributes
    ----------
    mechanism : Mechanism
    name : str
        The algorithm's name (or its ``"policy/ordering"`` text).
    plan : elimination.Plan
        The plan every call runs (its program: ``plan.lowered()``).
    mu, tol, max_iter, refine, backend
        The validated settings.
    last_run : elimination.Driven or None
        What the numpy path's outer loop did in the last call it answered: its iterations and each solve's work
        (:attr:`elimination.Driven.solves`; not its arrays).
    """

    last_run = None

    def __init__(self, mechanism: Mechanism, algorithm="lcaba", mu: float = 1e6, tol: float = 1e-10,
                 max_iter: int = 50, refine: int | None = None, backend: str = "auto", baumgarte=None, *,
                 _stacklevel: int | None = 3):
        check_mechanism(mechanism)
        self.mu, self.tol, self.max_iter = check_mu(mu), check_tol(tol), check_max_iter(max_iter)
        self.baumgarte = check_baumgarte(mechanism, baumgarte)
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.name, algo = resolve_algorithm(algorithm)
        algo.check(mechanism, self.name)
        self.mechanism, self.algorithm, self.backend = mechanism, algo, backend
        self.layout = layout_of(mechanism, algo)
        self.policies, self.label = self.layout.policies, algo.policy_label
        self._embedding = _embedding_rows(mechanism, self.policies) if self.layout.clusters else None
        self._numbers = {p.numbers for p in self.policies.values()}
        self._context = f"forward_dynamics: {self.name} ({self.label} policy, mu={self.mu:g}) on {mechanism.name!r}"
        if _stacklevel is not None:  # (None: the caller warns, forward_dynamics for a kept one too)
            warn_inverse_mu(self.mu, self._numbers, self._context, stacklevel=_stacklevel)
        self._say_numpy_path(backend, _stacklevel if _stacklevel is not None else 6)
        self.plan = plan_of(mechanism, algo, self.layout)
        if refine is None:
            refine = mechanism.derived.get(("refine", policy_types(self.policies), algo.ordering),
                                           lambda: default_refine(self.policies, self.plan))
        self.refine = refine  # checked by the solve
        self._link_parts = mechanism.derived.get(("link parts",), lambda: _named_links(mechanism))
        self._constraint_parts = mechanism.derived.get(("constraint parts",), lambda: _named_constraints(mechanism))
        self.compiled = None
        if backend != "numpy":
            self.plan.lowered()  # lowered now, not at the first call
            self.refine = check_refine(self.refine)
            gains = tuple(sorted(self.baumgarte.items()))
            key = ("compiled", policy_types(self.policies), algo.ordering, gains)  # tables kept with the mechanism
            compiled = mechanism.derived.get(key, lambda: CompiledDynamics(mechanism, self.layout, self.plan,
                                                                           self.baumgarte))
            self.compiled = None if compiled.unsupported else compiled
            if self.compiled is not None:
                self._row_parts = mechanism.derived.get(("row parts",), lambda: _row_parts(mechanism, compiled.columns))

    def _say_numpy_path(self, backend: str, stacklevel: int) -> None:
        """A policy the compiled kernels cannot run from its numbers: refused under ``backend="numba"``, a
        :class:`~mechanics.convergence.NumpyPathWarning` under ``"auto"``."""
        own = [(c, p) for c, p in self.policies.items() if p.lowered()]
        if own:
            c, p = own[0]
            self._say(f"constraint {c!r}'s policy {p!r} runs on the numpy path -- {p.lowered()}; a policy whose "
                      f"arithmetic is its PolicyNumbers runs compiled", backend, stacklevel + 1)

    def _say(self, why: str, backend: str, stacklevel: int) -> None:
        """The numpy path, for ``why``: refused under ``backend="numba"``, a :class:`NumpyPathWarning` under
        ``"auto"``."""
        if backend == "numpy":
            return
        text = f"{self._context}: {why}"
        if backend == "numba":
            raise ValueError(f"{text} (backend='numba' asks for compiled code: use backend='auto' or 'numpy')")
        warnings.warn(text, NumpyPathWarning, stacklevel=stacklevel + 1)

    def __repr__(self) -> str:
        gains = f", baumgarte={self.baumgarte}" if self.baumgarte else ""
        return (f"PreparedDynamics({self.name!r} on {self.mechanism.name!r}, mu={self.mu:g}, tol={self.tol:g}, "
                f"max_iter={self.max_iter}, backend={self.backend!r}{gains})")

    def __call__(self, q, v, tau, forces0=None) -> DynamicsResult:
        """Forward dynamics at ``(q, v, tau)`` (shapes and checks as :func:`forward_dynamics`)."""
        return self._run(q, v, tau, forces0, stacklevel=3)

    def _run(self, q, v, tau, forces0, stacklevel: int) -> DynamicsResult:
        if self.compiled is not None:
            if forces0 is None and plain_state(self.mechanism, q, v, tau):  # one state, the common call
                result = self._run_one(q, v, tau, stacklevel + 1)
            else:
                result = self._run_compiled(q, v, tau, forces0, stacklevel + 1)
            if result is not None:
                return result
        mechanism, policies, mu = self.mechanism, self.policies, self.mu
        q, v, tau = check_state(mechanism, q, v, tau)
        state = {"q": q, "v": v, "tau": tau}
        if forces0 is not None:
            forces0 = check_multipliers(mechanism, forces0, "forces0", state)
            state["forces0"] = forces0
        batch = tuple(np.broadcast_shapes(*(a.shape[:-1] for a in state.values())))
        lam = split_multipliers(mechanism, None if forces0 is None else -forces0, batch)
        gplc = self.layout.fill(kinematics(mechanism, q, v), tau, mu, lam, self.baumgarte)
        iterations_of = PolicyIterations(gplc, policies, mu, lam, self.tol, batch)
        with _explained(self.name, self.label, policies, mechanism, mu):
            driven = elimination.drive(self.plan, iterations_of, self.max_iter, self.refine, backend=self.backend,
                                       defer=iterations_of.iterating, warn=False)
            layout = self.plan.layout()
            x, qdd, residual = iterations_of.evaluated(layout, driven.X)
            converged = iterations_of.converged(layout, driven.factorization, residual, self.refine)
        self.last_run = dataclasses.replace(driven, X=None, factorization=None)  # (the record, not the memory)
        lam, iterations = iterations_of.lam, driven.iterations
        _check_hard_residual(self.name, mechanism, gplc, policies, residual)
        worst = element_max(residual.values(), batch)
        cause = self._causes(q, v, converged, iterations, worst, stacklevel + 1)
        forces = [np.broadcast_to(-lam[c.name], batch + (c.dim,)) for c in mechanism.constraints]
        forces = np.concatenate(forces, axis=-1) if forces else np.zeros(batch + (0,))
        if self.layout.clusters:
            forces = _embedded_forces(mechanism, _embedding_rows(mechanism, policies), q, v, tau, qdd, forces)
        accelerations = np.stack([np.broadcast_to(x[LinkAcceleration(l.name)], batch + (6,)) for l in mechanism.links],
                                 axis=-2)
        return self._result(qdd, forces, accelerations[..., LINEAR_FIRST], iterations, worst, converged, cause, batch)

    def _run_one(self, q, v, tau, stacklevel: int) -> DynamicsResult | None:
        """:meth:`_run_compiled` of one plain state (:func:`mechanics.checks.plain_state`): no copies, no batch,
        the settings as set now."""
        row, flags = self.compiled.run_one(q, v, tau, self.mu, self.tol, self.max_iter, self.refine)
        return self._answer_one(row, flags, q, v, tau, stacklevel + 1)

    def _answer_one(self, row: np.ndarray, flags: np.ndarray, q, v, tau, stacklevel: int) -> DynamicsResult | None:
        """One state's row of the kernel's output and of its flags as a result: the row's parts as they are,
        Python scalars for the flags and the residual, the result made here (a single call's Python is most
        of a small robot's time: numpy's reductions, even a helper's frame, cost as much as a link's
        dynamics); ``None`` where the numpy path must answer (as :meth:`_run_compiled`)."""
        iterations, converged, status = flags.tolist()
        qdd_columns, forces_columns, tail, link_parts = self._row_parts
        worst, hard_worst, hard_k = row[tail].tolist()  # (hard_*: the kernel's, 0 without hard rows)
        if status != OK or _beyond_round_off(hard_worst, hard_k):
            return None
        cause = "" if converged else self._causes(q, v, np.asarray(False), np.asarray(iterations),
                                                  np.asarray(worst), stacklevel + 1)
        forces = row[forces_columns]
        if self.layout.clusters:
            forces = _embedded_forces(self.mechanism, self._embedding, q, v, tau, row[qdd_columns], forces, "numba",
                                      row[self.compiled.columns["inverse"]])
        return DynamicsResult(row[qdd_columns], forces, iterations, worst, NamedParts(link_parts, row), self.name,
                              converged == 1, NamedParts(self._constraint_parts, forces), cause)

    def _result(self, qdd, forces, accelerations, iterations, worst, converged, cause, batch: tuple) -> DynamicsResult:
        """``accelerations (*batch, n_links, 6)`` in Pinocchio's ``[linear; angular]`` order."""
        return DynamicsResult(
            qdd=qdd,
            forces=forces,
            iterations=_scalar_if_unbatched(iterations, batch, int),
            residual=_scalar_if_unbatched(worst, batch, float),
            algorithm=self.name,
            converged=_scalar_if_unbatched(converged, batch, bool),
            link_accelerations=NamedParts(self._link_parts, accelerations),
            constraint_forces=NamedParts(self._constraint_parts, forces),
            _cause=cause,
        )

    def _compiled_rows(self, q, v, tau, forces0) -> tuple:
        """``(batch, (q, v, tau, forces0) as (B, n) rows)`` for the kernel: shapes and types checked here, values
        (finite, unit parts of ``q``) by the kernel, which normalises ``q``."""
        mechanism = self.mechanism
        q, v, tau = state_arrays(mechanism, q, v, tau, finite=False)  # (the kernel refuses NaN and inf)
        state = {"q": q, "v": v, "tau": tau}
        if forces0 is not None:
            state["forces0"] = check_multipliers(mechanism, forces0, "forces0", state)
        batch = tuple(np.broadcast_shapes(*(a.shape[:-1] for a in state.values())))
        B = math.prod(batch)
        rows = [a.reshape(B, a.shape[-1]) if a.shape[:-1] == batch  # (fresh copies: contiguous)
                else np.ascontiguousarray(np.broadcast_to(a, batch + a.shape[-1:]).reshape(B, a.shape[-1]))
                for a in state.values()]
        if forces0 is None:
            rows.append(np.zeros((B, mechanism.constraint_dim)))
        return batch, rows

    def _run_compiled(self, q, v, tau, forces0, stacklevel: int) -> DynamicsResult | None:
        """Every state in one trip into compiled code (:mod:`mechanics.compiled`); ``None`` where a state needs
        the numpy path (it then answers for the whole call, naming what is singular) or its checks (they then
        name what is wrong with the state)."""
        compiled = self.compiled
        batch, rows = self._compiled_rows(q, v, tau, forces0)
        out, flags = compiled.run(*rows, self.mu, self.tol, self.max_iter, self.refine)
        if batch == ():
            return self._answer_one(out[0], flags[0], rows[0][0], rows[1][0], rows[2][0], stacklevel + 1)
        iterations, converged = flags[:, ITERATIONS].reshape(batch), flags[:, CONVERGED].astype(bool).reshape(batch)
        columns = compiled.columns
        if flags[:, STATUS].any() or _beyond_round_off(float(np.max(out[:, columns["hard_worst"]], initial=0.0)),
                                                       float(np.max(out[:, columns["hard_k"]], initial=0.0))):
            return None  # the numpy path (its refinement decided over the batch) answers, or refuses
        row = out.reshape(batch + out.shape[-1:])
        worst = row[..., columns["worst"]]
        qdd, forces = np.ascontiguousarray(row[..., columns["qdd"]]), np.ascontiguousarray(row[..., columns["forces"]])
        q, v, tau = (a.reshape(batch + (-1,)) for a in rows[:3])
        if self.layout.clusters:
            forces = _embedded_forces(self.mechanism, self._embedding, q, v, tau, qdd, forces, "numba",
                                      row[..., columns["inverse"]])
        cause = self._causes(q, v, converged, iterations, worst, stacklevel + 1)
        accelerations = row[..., columns["accelerations"]].reshape(batch + (len(self.mechanism.links), 6))
        return self._result(qdd, forces, accelerations, iterations, worst, converged, cause, batch)

    def _causes(self, q, v, converged: np.ndarray, iterations: np.ndarray, worst: np.ndarray, stacklevel: int):
        """The result's ``cause`` (shape of ``converged``; ``""`` where an element converged), or a function that
        finds it: a dense check of the failed states (:mod:`mechanics.diagnosis`), made where the
        :class:`ConvergenceWarning` that names it is shown, else when ``cause`` is first read."""
        failed, batch = ~converged, converged.shape
        if not failed.any():
            return np.full(batch, "") if batch else ""
        state = [np.array(np.broadcast_to(a, batch + a.shape[-1:])[failed]) for a in (q, v)]  # (kept past the call)
        iterating = any(p.iterates for p in self.policies.values())
        capped = (iterations >= self.max_iter)[failed] & iterating
        diagnosed = functools.cache(lambda: diagnose(self.mechanism, *state, self.mu, self.tol, capped, self.baumgarte,
                                                           [c for c in self.layout.clusters if not c.constant]))
        warn_not_converged(self._context, self._numbers, self.tol, self.max_iter, converged, iterations, worst,
                           diagnosed, stacklevel=stacklevel)

        def causes():
            found = np.full(batch, "", dtype=object)
            found[failed] = [d.cause for d in diagnosed()]
            return found.astype(str) if batch else str(found[()])

        return causes


def prepare(mechanism: Mechanism, algorithm="lcaba", mu: float = 1e6, tol: float = 1e-10, max_iter: int = 50,
            refine: int | None = None, backend: str = "auto", baumgarte=None) -> PreparedDynamics:
    """Forward dynamics validated and planned once: a callable ``(q, v, tau, forces0=None) -> DynamicsResult``.

    Parameters are those of :func:`forward_dynamics` less the state; the
    mechanism must not change afterwards (its plans are cached on it).

    Examples
    --------
    >>> import numpy as np, mechanics
    >>> mech = mechanics.models.four_bar()
    >>> dynamics = prepare(mech, "proxbbo", mu=1e6, tol=1e-10)
    >>> res = dynamics(mech.neutral_configuration(), np.zeros(mech.nv), np.ones(mech.nv))
    >>> res.converged
    True
    """
    return PreparedDynamics(mechanism, algorithm, mu, tol, max_iter, refine, backend, baumgarte)


def forward_dynamics(
    mechanism: Mechanism, q, v, tau, algorithm="lcaba", mu: float = 1e6, tol: float = 1e-10,
    max_iter: int = 50, forces0=None, refine: int | None = None, backend: str = "auto", baumgarte=None,
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
        A name in :data:`mechanics.ALGORITHMS` or a ``(policies, ordering
        policy)`` pair; ``policies`` is one constraint policy for all (a name in
        :data:`mechanics.POLICIES` or a :class:`~mechanics.policies.ConstraintPolicy`)
        or a mapping per constraint, e.g. ``{"knee": "alm", "default": "prox"}``.
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
        Iterative-refinement steps per solve (:meth:`elimination.Factorization.solve`);
        an outer iteration's re-solve takes them from the last iterate, the first
        solving for the change alone (one more where the change is large).
        The penalty policies (``alm``, ``soft``) put ``mu K'K`` in the link
        pivots; one refinement step against the penalty's Jacobian-form
        residual restores the accuracy the paper's LCABA loses at large mu
        (see ``benchmarks/mu_sweep.py``).  Default: the largest of the
        policies' own (1 for ``alm`` and ``soft``, 0 for ``prox`` and
        ``hard``), and 1 where the order eliminates a multiplier before the
        accelerations it couples (proxBBO): see :func:`default_refine`.
    backend : {"auto", "numba", "numpy"}
        ``"auto"`` (the default) and ``"numba"`` run each state in one trip
        into compiled code (:mod:`mechanics.compiled`: kinematics, fill,
        elimination, outer iterations; compiled once, announced on stderr and
        cached on disk); ``"numpy"`` is the reference path (Python
        kinematics, factor objects, the elimination rule step by step).
        States the kernel cannot answer -- a refused pivot, dependent hard
        rows, refinement that does not settle -- and constraint policies of
        one's own run on the numpy path.  The two agree to round-off.
    baumgarte : (Kp, Kd) or dict, optional
        Baumgarte stabilisation of the Weld and Connect constraints, as Pinocchio's
        ``BaumgarteCorrectorParameters``: each asks for the relative acceleration ``-Kp e - Kd e_dot``
        instead of zero, ``e`` and ``e_dot`` its position and velocity errors
        (:meth:`Mechanism.constraint_error`, :meth:`Mechanism.constraint_velocity`).  One pair for all of
        them, or ``{constraint name: (Kp, Kd)}``.  A constraint to the ground is drawn to its ground-side
        frame: :meth:`Mechanism.anchored` puts those where the constraints hold at a configuration.

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
    check_mechanism(mechanism)
    try:
        prepared = _prepared(mechanism, algorithm, mu, tol, max_iter, refine, backend, baumgarte)
    except (TypeError, ValueError):
        check_state(mechanism, q, v, tau)  # the state's errors before the settings', as always
        raise
    return prepared._run(q, v, tau, forces0, stacklevel=3)


def _prepared(mechanism: Mechanism, algorithm, mu, tol, max_iter, refine, backend, baumgarte) -> PreparedDynamics:
    """:func:`forward_dynamics`'s :class:`PreparedDynamics`, kept with the mechanism for its last few settings:
    made, it costs as much as a state's dynamics.  Kept or new, the mu-convention warning is issued here."""
    make = lambda: PreparedDynamics(mechanism, algorithm, mu, tol, max_iter, refine, backend, baumgarte,  # noqa: E731
                                    _stacklevel=None)
    try:
        gains = tuple(sorted((k, tuple(v)) for k, v in baumgarte.items())) if isinstance(baumgarte, dict) else (
            baumgarte if baumgarte is None else tuple(baumgarte))
        key = (algorithm, mu, tol, max_iter, refine, backend, gains)
        hash(key)
    except TypeError:  # an algorithm given as an unhashable spec: made each time
        prepared = make()
    else:
        prepared = mechanism.derived.get(("prepared calls",), lambda: PlanCache(PREPARED_KEPT)).get(key, make)
    warn_inverse_mu(prepared.mu, prepared._numbers, prepared._context, stacklevel=3)
    return prepared


def delassus(mechanism: Mechanism, q, clusters: bool = False) -> np.ndarray:
    """Delassus matrix (inverse operational-space inertia) ``J M^-1 J'`` at ``q``.

    Read off the dual factor left on the multipliers after eliminating every
    primal variable of the ``hard`` GPLC graph (001 Sec. IV): that factor's
    Hessian is ``-J M^-1 J'``.  With ``clusters``, 003's C-EFPA: the couplings and
    local loops embedded (:mod:`mechanics.clusters`, ``qdd = Gamma z + gamma``:
    :func:`~mechanics.couplings.independent_coordinates`), the matrix of the other
    constraints (contacts, loops spanning the tree) on the embedded mechanism,
    ``J Gamma (Gamma' M Gamma)^-1 Gamma' J'`` -- the clusters' links and
    coordinates eliminated as C-ABA does, then the multipliers' factor read.

    Parameters
    ----------
    mechanism : Mechanism
    q : array_like (..., nq)
    clusters : bool

    Returns
    -------
    ndarray (..., m, m), rows in constraint order (with ``clusters``, of the constraints not embedded).

    Examples
    --------
    >>> from mechanics import models
    >>> cheetah = models.mini_cheetah(contacts=True)  # four feet on the ground, a geared rotor on each joint
    >>> delassus(cheetah, cheetah.neutral_configuration(), clusters=True).shape  # the feet's rows alone
    (12, 12)
    """
    from .algorithms import cluster_order
    from .clusters import local

    zeros = np.zeros(mechanism.nv)
    q, _, _ = check_state(mechanism, q, zeros, zeros)
    embedded = {c.name for c in mechanism.constraints if local(mechanism, c.name)} if clusters else set()
    kept = [c for c in mechanism.constraints if c.name not in embedded]
    if not kept:
        return np.zeros(q.shape[:-1] + (0, 0))
    kin = kinematics(mechanism, q, zeros)
    policies = resolve_policies({**{name: "embed" for name in embedded}, "default": "hard"}, mechanism)
    layout = GPLCLayout(mechanism, policies)
    gplc = layout.fill(kin, zeros, 1.0, split_multipliers(mechanism, None, kin.batch_shape))
    structure = layout.structure()
    order = (cluster_order if embedded else tree_order)(mechanism, structure)
    primal = Ordering([b for b in order.blocks if not isinstance(b[0], Multiplier)])
    plan = elimination.analyze(structure, primal, complete=False)
    dual = elimination.factorize(gplc.graph, plan).remaining().to_dense()
    order = np.concatenate([np.arange(dual.index[Multiplier(c.name)].start, dual.index[Multiplier(c.name)].stop)
                            for c in kept])
    return -dual.K[..., order[:, None], order[None, :]]
