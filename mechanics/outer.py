"""The outer iterations of constrained forward dynamics (000 Algorithms 3 and 6) as an :class:`elimination.Driver`.

:func:`elimination.drive` runs the loop -- solve, update, re-solve from the last
iterate, refinement deferred to the iterates that may be the answer -- and
:class:`PolicyIterations` says what moves, from each constraint's policy
numbers (:class:`~mechanics.policies.PolicyNumbers`): after a solve every
constraint's ``lambda`` is updated by its policy (eq. 33 for ``alm``, eq. 42
for ``prox``, the solution's multiplier for ``hard``, the penalty force for
``soft``); the iterating policies' moving terms (a penalty's target, a
proximal prior's ``g``) are the next re-solve's linear terms, the reduced two
sweeps of 000 Algorithms 2 and 5; an element stops where ``min(||qdd^k -
qdd^(k-1)||_inf, ||K a - k||_inf) < tol``.  Without an iterating policy there
is one solve.  It runs on the graph seam (:class:`elimination.driver.GraphFactorization`):
the numpy path's factor objects, elements whose hard rows are numerically
dependent re-planned, penalties refined in their least-squares form.  The
compiled kernels run the same loop per state (:mod:`mechanics.compiled_iterations`).
"""
from __future__ import annotations

import numpy as np

from elimination import Advance
from elimination.driver import Overrides

from .convergence import SOFT_CONTRACTION, element_max, element_norm, residual_tolerance
from .keys import LinkAcceleration
from .policies import HOLDS, RESIDUAL


class PolicyIterations:
    """000 Algorithms 3 and 6 for a GPLC graph under per-constraint policies (module docstring).

    Parameters
    ----------
    gplc : mechanics.gplc.GPLC
        The graph at the state, its constraint terms and moving factors.
    policies : dict
        Constraint name -> :class:`~mechanics.policies.ConstraintPolicy`.
    mu, tol : float
    lam : dict
        Constraint name -> ``lambda^k (*batch, m)`` to start from (the graph was filled with it).
    batch : tuple
        The call's batch.

    Attributes
    ----------
    lam : dict
        Each constraint's multiplier after the last update.
    iterating : bool
        Some policy moves ``lambda`` between solves (else one solve answers).
    """

    def __init__(self, gplc, policies: dict, mu: float, lam: dict, tol: float, batch: tuple):
        self.gplc, self.policies, self.mu, self.lam, self.tol, self.batch = gplc, policies, mu, lam, tol, batch
        # (an embedded coupling has no multiplier to move: a mechanism of them alone is one solve)
        self.iterating = any(p.iterates for p in policies.values())
        self._qdd = None  # the last accepted iterate's, per element
        self._seen = None  # (X, x, qdd, residual) of the last values evaluated

    def __repr__(self) -> str:
        return f"PolicyIterations({len(self.policies)} constraints, mu={self.mu:g}, tol={self.tol:g})"

    def start(self, layout) -> tuple:
        return self.gplc.graph, Overrides()  # (the first solve: the graph's own terms, filled with lambda^k)

    def evaluated(self, layout, X: np.ndarray) -> tuple:
        """``(x, qdd, residual)`` at the values ``X``: the solution by key, ``qdd (*batch, nv)`` and ``K a - k``
        by constraint (kept for the same ``X``: the loop asks twice)."""
        if self._seen is None or self._seen[0] is not X:
            x = layout.values(X)
            self._seen = (X, x, self.gplc.qdd(x, self.batch), residuals(self.gplc, x))
        return self._seen[1:]

    def may_stop(self, layout, X: np.ndarray) -> np.ndarray:
        _, qdd, residual = self.evaluated(layout, X)
        return np.minimum(self._step(qdd), element_max(residual.values(), self.batch)) < self.tol

    def advance(self, layout, X: np.ndarray, graph, Lin: Overrides, active: np.ndarray) -> Advance:
        x, qdd, residual = self.evaluated(layout, X)
        worst = element_max(residual.values(), self.batch)
        done = np.minimum(self._step(qdd), worst) < self.tol
        updated = {c: p.update(self.lam[c], x, residual[c], self.mu, c) for c, p in self.policies.items()}
        self.lam = _merge(active, updated, self.lam)
        self._qdd = qdd if self._qdd is None else _merge(active, qdd, self._qdd)
        if self.iterating:
            self.moving_terms(lambda p: p.iterates, Lin)
        return Advance(done | (not self.iterating), False, worst)

    def _step(self, qdd: np.ndarray) -> np.ndarray:
        """``||qdd - qdd^(k-1)||_inf`` per element (``inf`` before a first iterate was accepted)."""
        return np.full(self.batch, np.inf) if self._qdd is None else element_max([qdd - self._qdd], self.batch)

    def moving_terms(self, moving, out: Overrides | None = None) -> Overrides:
        """The moving terms of the constraints whose policy ``moving`` selects, at the current ``lambda``, written
        into ``out`` (new overrides by default)."""
        out = Overrides() if out is None else out
        for c, policy in self.policies.items():
            if moving(policy) and c in self.gplc.moving:
                which, value = policy.moving_term(self.gplc.terms[c], self.mu, self.lam[c])
                getattr(out, which)[self.gplc.moving[c]] = value
        return out

    def converged(self, layout, fact, residual: dict, refine: int) -> np.ndarray:
        """Per element: the constraints judged by their residual (:data:`~mechanics.policies.RESIDUAL`: the
        iterating and the embedded ones) within tolerance, the soft ones holding (hard ones are guarded)."""
        tolerance = residual_tolerance(self.tol, self.gplc.terms, self.batch)
        judged = [c for c, p in self.policies.items() if p.numbers.test == RESIDUAL]
        converged = element_max((residual[c] for c in judged), self.batch) <= tolerance
        if any(p.numbers.test == HOLDS for p in self.policies.values()):
            converged &= self._soft_holds(layout, fact, residual, tolerance, refine)
        return converged

    def _soft_holds(self, layout, fact, residual: dict, tolerance: np.ndarray, refine: int) -> np.ndarray:
        """``soft`` constraints hold where one ALM correction halves their residual (:mod:`~mechanics.convergence`)."""
        soft = [c for c, p in self.policies.items() if p.numbers.test == HOLDS]
        settled = element_max((residual[c] for c in soft), self.batch) <= tolerance
        if settled.all():
            return settled
        X = fact.solve(self.moving_terms(lambda p: p.numbers.test == HOLDS), refine)
        corrected = residuals(self.gplc, layout.values(X))
        before = element_norm((residual[c] for c in soft), self.batch)
        after = element_norm((corrected[c] for c in soft), self.batch)
        return settled | (after <= SOFT_CONTRACTION * before)


def residuals(gplc, x: dict) -> dict:
    """``K a - k`` per constraint at the solution ``x``."""
    return {name: terms.residual({link: x[LinkAcceleration(link)] for link in terms.links})
            for name, terms in gplc.terms.items()}


def _merge(active: np.ndarray, new, old):
    """``new`` where ``active`` (shape ``batch``), else ``old``; arrays (*batch, d) or dicts of them."""
    if active.all():
        return new
    if isinstance(new, dict):
        return {key: _merge(active, new[key], old[key]) for key in new}
    return np.where(active[..., None], new, old)
