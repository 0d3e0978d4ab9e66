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
"""
from __future__ import annotations

import numpy as np

from factorgraph import LinearEquality

from .gaussian import RANK_RTOL, mT, numerical_rank, row_norms
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
