"""Hard-row ranks read from numbers: the re-planning fallback.

A plan's ranks are structural (generic): one plan serves every numeric
instance.  Numbers can fall short of them -- a constraint added twice, rows
that are combinations of others, coefficients that cancel exactly -- and the
numeric pass then finds a substitution block whose numerical rank is below the
plan's (:func:`elimination.gaussian.substitution`).  For such a graph (one
batch element), :func:`elimination.numeric.factorize` calls
:func:`~elimination.symbolic.analyze` again with :class:`NumericHardRows`,
which runs the elimination of the *hard rows alone* on the numbers, in the
same order, and answers each step with

* the numerical rank ``r`` of the front's hard block in unit-origin units
  (:mod:`elimination.gaussian`: a rank drop is judged against the original
  rows, never against the block's own size);
* of the ``m - r`` rows left over, the ``k`` combinations that are
  numerically nonzero on the separator (passed on, on the keys where they are
  nonzero), and the others, which are dropped once their right-hand side is
  checked (consistent: redundant rows; inconsistent: an error naming the
  factors).

Fronts, separators and fill are those of the structural plan; only the hard
row counts change, so the usual numeric pass then runs on the new plan.

Multipliers are the other place where dependent rows meet numbers: a
constraint whose multiplier has no prior (the ``hard`` policy) is a bilinear
factor, not a hard row, and dependent constraints make the multipliers' pivot
singular.  Whether they are redundant or contradict each other depends on the
right-hand sides, which a factorization does not see;
:func:`classify_singular` reads them from the graph's dense system on that
error path alone.
"""
from __future__ import annotations

import numpy as np

from factorgraph import LinearEquality
from factorgraph.dense import to_dense

from .errors import SingularProblemError
from .gaussian import CONSISTENCY_RTOL, RANK_RTOL, mT, numerical_rank, row_norms
from .symbolic import HardStep


class NumericHardRows:
    """Hard-row bookkeeping (the interface of :class:`~elimination.symbolic.HardRows`) from numbers.

    Parameters
    ----------
    graph : factorgraph.FactorGraph
        One numeric instance: the coefficient blocks carry no batch
        dimensions (right-hand sides are not read).

    Examples
    --------
    >>> import numpy as np
    >>> from factorgraph import FactorGraph, Variable, Quadratic, LinearEquality
    >>> from elimination import Ordering, analyze
    >>> g = FactorGraph()
    >>> for k in "xy": g.add_variable(Variable(k, 1))
    >>> _ = g.add(Quadratic(["x"], [[1.0]]))
    >>> _ = g.add(LinearEquality(["x", "y"], [[[1.0]], [[2.0]]], [1.0]))
    >>> _ = g.add(LinearEquality(["x", "y"], [[[2.0]], [[4.0]]], [2.0]))   # the same row, twice
    >>> plan = analyze(g, Ordering.from_keys(["y", "x"]), hard_rows=NumericHardRows(g))
    >>> [(s.substituted, s.passed_rows, s.dropped_rows) for s in plan.steps]
    [(1, 0, 1), (0, 0, 0)]
    """

    def __init__(self, graph):
        self.dims = {v.key: v.dim for v in graph.variables}
        self.rows: dict = {}
        for i, factor in enumerate(graph.factors):
            if isinstance(factor, LinearEquality):
                A = np.concatenate(factor.A, axis=-1)
                if A.ndim != 2:
                    raise ValueError(
                        f"NumericHardRows reads one numeric instance; factor {i} has batch shape {A.shape[:-2]}"
                    )
                self.rows[i] = (factor.keys, A / row_norms(A)[:, None], frozenset({i}))  # unit-origin rows
        self._pending = None

    def _local(self, hard: list, frontal: tuple, order_position: dict):
        """The bucket's rows on the columns ``frontal + others`` (others in elimination order)."""
        others = sorted({k for i in hard for k in self.rows[i][0]} - set(frontal), key=order_position.get)
        keys = tuple(frontal) + tuple(others)
        start = np.cumsum([0] + [self.dims[k] for k in keys])
        column = {k: np.arange(start[j], start[j + 1]) for j, k in enumerate(keys)}
        A = np.zeros((sum(len(self.rows[i][1]) for i in hard), start[-1]))
        top = 0
        for i in hard:
            scope, Ai, _ = self.rows[i]
            A[top : top + len(Ai), np.concatenate([column[k] for k in scope])] = Ai
            top += len(Ai)
        return A, tuple(others), column

    def eliminate(self, hard: list, m: int, frontal: tuple, order_position: dict) -> HardStep:
        """Numerical rank of the front's hard block and what becomes of the rows left over."""
        group = frozenset().union(*(self.rows[i][2] for i in hard))
        A, others, column = self._local(hard, frontal, order_position)
        nF = sum(self.dims[k] for k in frontal)
        U, s, _ = np.linalg.svd(A[:, :nF], full_matrices=True)
        r = int(numerical_rank(s))
        leftover = mT(U[:, r:]) @ A[:, nF:]  # orthonormal combinations: unit-origin rows
        passed, scope = 0, ()
        if len(leftover) and leftover.shape[1]:
            UL, sL, _ = np.linalg.svd(leftover, full_matrices=True)
            kept = mT(UL[:, : int(numerical_rank(sL))]) @ leftover
            scope = tuple(k for k in others if np.max(np.abs(kept[:, column[k] - nF]), initial=0.0) > RANK_RTOL)
            if scope:
                passed = len(kept)
                self._pending = (scope, kept[:, np.concatenate([column[k] - nF for k in scope])], group)
        return HardStep(r, passed, m - r - passed, scope, group)

    def record(self, index: int) -> None:
        """The rows passed on by the last :meth:`eliminate` become working factor ``index``."""
        self.rows[index] = self._pending


DENSE_LIMIT = 2000
"""Largest dense system (variables plus hard rows) :func:`classify_singular` decomposes: an SVD of a few
seconds, on an error path only."""


def classify_singular(graph, error: SingularProblemError) -> SingularProblemError:
    """A refused pivot of multipliers as ``kind="inconsistent"`` where their constraints contradict each other.

    A singular pivot of multipliers says their constraints are linearly
    dependent; they are merely redundant when the right-hand side lies in the
    range of the KKT matrix, and contradictory when part of it lies along a
    left null vector that lives on the dual coordinates (multipliers and hard
    rows).  Read from the SVD of the symmetrically scaled dense system of one
    graph (batch elements: left as they are).

    Parameters
    ----------
    graph : factorgraph.FactorGraph
        The graph whose factorization raised ``error``.
    error : SingularProblemError
        The rule's error.

    Returns
    -------
    SingularProblemError
        A new error of kind ``"inconsistent"`` naming the multipliers that
        contradict each other, or ``error`` itself (redundant constraints,
        undetermined variables, a batch, or a system above :data:`DENSE_LIMIT`).
    """
    roles = {v.key: v.role for v in graph.variables}
    dual_front = any(roles.get(k) == "max" for k in error.keys)
    if error.kind != "singular" or not dual_front or int(np.prod(graph.batch_shape)) != 1:
        return error
    system = to_dense(graph)
    if system.K.shape[-1] > DENSE_LIMIT:
        return error
    K, rhs = system.K.reshape(system.K.shape[-2:]), system.rhs.reshape(-1)
    scale = 1.0 / np.sqrt(np.maximum(np.max(np.abs(K), axis=1), np.finfo(float).tiny))
    U, s, _ = np.linalg.svd(scale[:, None] * K * scale[None, :])
    null = U[:, s <= RANK_RTOL * s[0]]
    scaled_rhs = scale * rhs
    outside = null.T @ scaled_rhs  # the part of the right-hand side no solution reaches
    size = np.linalg.norm(outside)
    if size <= CONSISTENCY_RTOL * np.linalg.norm(scaled_rhs):
        return error
    direction = null @ outside / size
    dual = np.zeros(len(rhs), dtype=bool)
    dual[system.n:] = True
    for key, where in system.index.items():
        dual[where] = roles[key] == "max"
    if np.sum(direction[dual] ** 2) < 0.5:  # it lives on primal variables: undetermined, not contradictory
        return error
    involved = [k for k, at in system.index.items() if roles[k] == "max" and np.max(np.abs(direction[at])) > 1e-3]
    return SingularProblemError(
        f"step {error.step}: eliminating {list(error.keys)}: the constraints of the multipliers {involved} contradict "
        f"each other: their rows are linearly dependent and their right-hand sides disagree (a fraction "
        f"{size / np.linalg.norm(scaled_rhs):.1e} of the right-hand side lies where no solution reaches), so no "
        f"solution meets them all. Correct their right-hand sides, or remove the ones that contradict the others.",
        error.step, error.keys, kind="inconsistent", factors=error.factors,
    )
