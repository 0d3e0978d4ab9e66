"""The numeric pass on arrays: factorize a factor workspace, solve for linear workspaces (many right-hand sides).

The seam under :func:`elimination.factorize` for code that computes its
numbers in place -- a model filling link inertias per state, a Gauss-Newton
step filling residuals and Jacobians, a derivative pass solving for many
right-hand sides on one factorization.  The workspaces and their named views
are a :class:`~elimination.layout.Layout`'s; the kernels are the compiled
executor's (:mod:`elimination.compiled`), one element at a time, so an
element's numbers are those of ``factorize(graph, plan)`` on a graph with
the same numbers, bit for bit.  Refinement, the verification of suspect
pivots and the consistency check of dropped rows are those of
:class:`~elimination.factorization.Factorization`.
"""
from __future__ import annotations

import numpy as np

from .compiled import group_scales, run_factorize, run_solve, started_error
from .errors import SingularProblemError
from .factorization import (WARM_RTOL, SolveWork, _change, check_consistent, check_refine, relative_size, settle,
                            unfinished)
from .gaussian import PIVOT_SUSPECT_RTOL, batch_note
from .layout import Layout
from .numeric import SCALE_FLOOR
from .program import F


def factorize_arrays(layout, Fw: np.ndarray, floor_rtol: float = SCALE_FLOOR,
                     backend: str = "numba") -> "ArrayFactorization":
    """Factorize the factor workspace ``Fw (*batch, factor_size)`` along ``layout``'s program.

    Parameters
    ----------
    layout : Layout or Plan
        Where each factor's matrix sits (a plan stands for its :meth:`~elimination.Plan.layout`).
    Fw : ndarray, shape (*batch, factor_size)
        The graph's matrices in place (:meth:`Layout.matrix`); the rest is ignored.  Read, not written:
        the elimination works on a copy (its generated factors and scales go there).
    floor_rtol : float
        Diagonal magnitudes below this fraction of the batch's largest count as zero information
        (:data:`elimination.numeric.SCALE_FLOOR`, as :func:`elimination.factorize`).
    backend : {"numba", "numpy"}
        The compiled executor (:mod:`elimination.compiled`, the layout's program), or the numpy reference
        (:mod:`elimination.reference`: the unfused program, every step by the numpy rule, a batch at once).
        The two agree to round-off.

    Returns
    -------
    ArrayFactorization

    Raises
    ------
    ValueError
        ``Fw`` of the wrong shape, or not finite where a factor's matrix sits (the factor is named).
    SingularProblemError
        A pivot is numerically singular or of the wrong sign, or hard rows are numerically dependent
        (the step and its variables named; ``elimination.factorize`` on a ``FactorGraph`` re-plans
        dependent rows).

    Examples
    --------
    Three right-hand sides on one factorization:

    >>> import numpy as np
    >>> from factorgraph import FactorGraph, Quadratic, Variable
    >>> import elimination
    >>> g = FactorGraph(); g.add_variable(Variable("x", 1))
    >>> i = g.add(Quadratic(["x"], [[2.0]], [0.0]))
    >>> layout = elimination.analyze(g, elimination.natural(g)).layout()
    >>> Fw, _ = layout.fill(g)
    >>> Lin = layout.linear_workspace((3,)); layout.linear(Lin, i)[:, 0] = [2.0, 4.0, 6.0]
    >>> elimination.factorize_arrays(layout, Fw).solve(Lin)[:, 0]
    array([1., 2., 3.])
    """
    layout = layout if isinstance(layout, Layout) else _layout_of(layout)
    program = layout.program
    Fw = np.asarray(Fw, dtype=float)
    if Fw.ndim < 1 or Fw.shape[-1] != layout.factor_size:
        raise ValueError(f"factorize_arrays: Fw must be (*batch, {layout.factor_size}), got {Fw.shape}")
    batch = Fw.shape[:-1]
    W = np.array(Fw.reshape(-1, layout.factor_size))  # the kernel's own copy: it writes generated factors there
    _check_finite(layout, W, batch)
    largest = 0.0
    for group in program.groups:
        block = W[:, group.start : group.start + len(group.members) * group.rows * group.n]
        largest = max(largest, group_scales(W, group, block.reshape(-1, len(group.members), group.rows, group.n)))
    if backend == "numpy":
        executor = _Reference(program.plan.lowered(fuse=False), W, floor_rtol * largest)
    elif backend == "numba":
        executor = _Compiled(program, W, floor_rtol * largest, batch)
    else:
        raise ValueError(f"factorize_arrays: backend must be 'numba' or 'numpy', got {backend!r}")
    ratio, weak = executor.ratio, executor.weak
    worst = int(np.argmin(ratio)) if ratio.size else 0
    weakest = program.plan.steps[weak[worst]] if ratio.size and weak[worst] >= 0 else None
    return ArrayFactorization(layout, W, executor, batch, ratio.reshape(batch), weakest)


class _Compiled:
    """The compiled executor's factorization (:mod:`elimination.compiled`): conditionals one row per element."""

    def __init__(self, program, W: np.ndarray, floor: float, batch: tuple):
        self.program = program
        self.C, self.ratio, self.weak, failed = run_factorize(program, W, floor)
        if np.any(failed != -1):
            raise _refused(program.plan, failed, batch)

    def solve(self, L: np.ndarray, magnitude: np.ndarray | None) -> tuple:
        return run_solve(self.program, self.C, L, magnitude)


class _Reference:
    """The numpy reference's factorization (:mod:`elimination.reference`) of the unfused ``program``, in a
    workspace of its size (the graph's matrices and scales copied: they lead both layouts)."""

    def __init__(self, program, W: np.ndarray, floor: float):
        from . import reference

        self.program, self.reference = program, reference
        graph = max((g.scales + len(g.members) * g.rows for g in program.groups), default=0)
        own = np.zeros((W.shape[0], program.factor_size))
        own[:, :graph] = W[:, :graph]
        self.conditionals, self.ratio, self.weak = reference.factorize(program, own, floor)
        self.elements = W.shape[0]

    def solve(self, L: np.ndarray, magnitude: np.ndarray | None) -> tuple:
        return self.reference.solve(self.program, self.conditionals, L, magnitude, self.elements)


class ArrayFactorization:
    """A factorization of a factor workspace (:func:`factorize_arrays`); solves linear workspaces.

    Attributes
    ----------
    layout : Layout
    batch_shape : tuple
        The matrices' batch.
    pivot_ratio : ndarray, shape batch
        Each element's smallest pivot relative to its contributions (below
        ``elimination.gaussian.PIVOT_SUSPECT_RTOL``: suspect, verified by refinement).
    weakest_step : Step or None
        The step of the smallest pivot.
    last_solve : SolveWork or None
        What the last :meth:`solve` did.
    """

    def __init__(self, layout: Layout, W: np.ndarray, executor, batch: tuple, pivot_ratio: np.ndarray,
                 weakest_step):
        self.layout, self.batch_shape = layout, tuple(batch)
        self._W, self._executor = W, executor  # the matrices (residuals read them); the executor's conditionals
        self.pivot_ratio, self.weakest_step = pivot_ratio, weakest_step
        self.last_solve = None

    def __repr__(self) -> str:
        return f"ArrayFactorization({len(self.layout.program.steps)} steps, batch={self.batch_shape})"

    def suspect(self) -> np.ndarray:
        """Elements (shape ``batch``) whose smallest pivot is suspect: their solutions are verified."""
        return self.pivot_ratio < PIVOT_SUSPECT_RTOL

    def solve(self, Lin: np.ndarray, refine: int = 1, start: np.ndarray | None = None, verified: bool = False,
              finish: bool = True) -> np.ndarray:
        """The values ``X (*rhs, *batch, value_size)`` for the linear workspace ``Lin (*rhs, *batch,
        linear_size)`` (:meth:`Layout.linear`; read, not written).

        Leading axes of ``Lin`` beyond the matrices' batch are right-hand sides solved on the same
        factorization (columns of an inverse, a derivative's directions).  ``refine`` steps of iterative
        refinement follow (:meth:`elimination.Factorization.solve`); a suspect factorization is refined until
        it settles, or refused.  ``start`` (values of ``X``'s shape, a nearby problem's solution: an outer
        loop's last iterate) makes the solve ``refine`` refinement steps from it -- one sweep instead of two
        once the changes are small -- and one more where the last may leave an error above ``WARM_RTOL``;
        ignored where ``refine`` is 0 or the plan drops dependent rows (:meth:`startable`).  On a suspect
        factorization a solve from ``start`` is verified from there: steps until they settle.  ``verified`` and
        ``finish``: as :meth:`elimination.Factorization.solve`'s (an earlier solve verified the suspect
        pivots: the steps stop at the first whose error left is small; ``finish=False`` leaves the one more
        step, or the verification, to the caller: ``refine`` steps alone, and :meth:`unfinished` says where
        more are wanted).

        Raises
        ------
        ValueError
            ``Lin`` of the wrong shape.
        SingularProblemError
            Dependent hard rows the plan drops contradict each other for these right-hand sides
            (``kind="inconsistent"``), or refinement of a suspect factorization does not settle.
        """
        refine = check_refine(refine)
        lead, L = self._rows(Lin)
        warm = start is not None and refine and self.startable()
        self.last_solve = SolveWork(started=bool(warm))
        X = self._started(start, L.shape[0]) if warm else self._sweeps(L, check=True)
        suspect = np.broadcast_to(self.suspect(), lead)
        if warm and np.any(suspect) and (finish or not verified):  # verified from the start: steps until they settle
            return self._settled(X, L, lead, suspect, verified, np.inf)
        correction = None
        for _ in range(refine):
            X, correction = self._refined(X, L)
        if warm and finish and started_error(self.last_solve.changes[-1],
                                             float(np.min(self.pivot_ratio))) > WARM_RTOL:
            X, correction = self._refined(X, L)  # a change too large for one step
        if not warm and np.any(suspect):  # the verification's steps go on from the last plain one's change
            return self._settled(X, L, lead, suspect, False, np.inf if correction is None else
                                 _change({"x": correction}, {"x": X}))
        return X.reshape(lead + (self.layout.value_size,))

    def _settled(self, X: np.ndarray, L: np.ndarray, lead: tuple, suspect: np.ndarray, verified: bool,
                 previous) -> np.ndarray:
        """:func:`~elimination.factorization.settle` on the values' rows ``X`` (its values: one ``"x"`` entry)."""
        view = lambda A: {"x": A.reshape(lead + A.shape[-1:])}
        step = lambda values: tuple(view(A) for A in self._refined(values["x"].reshape(X.shape), L))
        if np.ndim(previous):
            previous = previous.reshape(lead)
        return settle(step, view(X), suspect, self, verified, previous)["x"].reshape(lead + (self.layout.value_size,))

    def startable(self) -> bool:
        """Whether :meth:`solve` refines from given values (its ``start``): no step drops rows (their
        consistency is checked on a solve from scratch)."""
        return not self.layout.program.dropped_size

    def unfinished(self, X: np.ndarray, start: np.ndarray) -> np.ndarray:
        """Elements of a solve from ``start`` that ended at ``X`` without its one more step, or its verification
        (``solve(..., finish=False)``), whose error may exceed ``WARM_RTOL``: the change from ``start`` times the
        digits the pivots lose (:meth:`elimination.Factorization.unfinished`, on the values' arrays)."""
        return unfinished({"x": X}, {"x": start}, self.pivot_ratio)

    def _started(self, start, rows: int) -> np.ndarray:
        """``start`` as the values' rows ``(rows, value_size)`` (a copy: the refinement adds to it)."""
        X = np.array(start, dtype=float)
        if X.size != rows * self.layout.value_size:
            raise ValueError(f"ArrayFactorization.solve: start must have the values' shape (..., "
                             f"{self.layout.value_size}) of Lin's elements, got {X.shape}")
        return X.reshape(rows, self.layout.value_size)

    def _rows(self, Lin) -> tuple:
        """``(lead, L (R * B, linear_size))``: ``Lin``'s leading shape and its rows, right-hand side major."""
        Lin = np.asarray(Lin, dtype=float)
        size, batch = self.layout.linear_size, self.batch_shape
        lead = Lin.shape[:-1]
        if Lin.ndim < 1 or Lin.shape[-1] != size or lead[len(lead) - len(batch):] != batch:
            raise ValueError(f"ArrayFactorization.solve: Lin must be (*rhs, *{batch}, {size}) (the matrices' batch "
                             f"last), got {Lin.shape}")
        return lead, Lin.reshape(-1, size)

    def _sweeps(self, L: np.ndarray, check: bool) -> np.ndarray:
        """One forward and back substitution of the rows ``L``: the values ``(R * B, value_size)``."""
        self.last_solve.sweeps += 1
        program = self.layout.program
        magnitude = _hard_magnitude(program, L) if check and program.dropped_size else None
        X, dropped = self._executor.solve(L, magnitude)
        if magnitude is not None:
            self._check_dropped(dropped)
        return X

    def _refined(self, X: np.ndarray, L: np.ndarray) -> tuple:
        """One refinement step: ``(X + correction, correction)``."""
        correction = self._sweeps(self.residual(X, L), check=False)
        X = X + correction
        self.last_solve.refinements += 1
        self.last_solve.changes.append(relative_size((correction,), (X,)))
        return X, correction

    def residual(self, X: np.ndarray, Lin: np.ndarray) -> np.ndarray:
        """``g - H x`` of every quadratic and ``b - A x`` of every hard factor at the values ``X``, laid out
        as the linear terms ``Lin`` (both ``(..., size)`` over this factorization's batch, last)."""
        program, B = self.layout.program, max(1, self._W.shape[0])
        X2, L2 = X.reshape(-1, X.shape[-1]), Lin.reshape(-1, Lin.shape[-1])
        R = L2.shape[0] // B
        out = np.zeros_like(L2)
        for group, columns in zip(program.groups, self.layout.group_columns()):
            k, rows, n = len(group.members), group.rows, group.n
            M = self._W[:, group.start : group.start + k * rows * n].reshape(-1, k, rows, n)
            x = X2[:, columns].reshape(R, -1, k, n, 1)
            own = L2[:, group.linear : group.linear + k * rows].reshape(R, -1, k, rows)
            out[:, group.linear : group.linear + k * rows] = (own - (M @ x)[..., 0]).reshape(-1, k * rows)
        return out.reshape(Lin.shape)

    def _check_dropped(self, dropped: np.ndarray) -> None:
        """The rows the program dropped read ``0 = residual``: checked against the right-hand sides' sizes."""
        program, plan = self._executor.program, self.layout.program.plan
        rows = program.steps
        for st in np.flatnonzero(rows[:, F["d"]]):
            step, d, off = plan.steps[st], int(rows[st, F["d"]]), int(rows[st, F["drop"]])
            described = lambda: ", ".join(f"factor {i} on {list(plan.factors[i].keys)}" for i in step.hard_factors)
            check_consistent(step, dropped[:, off : off + d], dropped[:, off + d : off + d + 1], described)


def _layout_of(plan) -> Layout:
    from .symbolic import Plan

    if not isinstance(plan, Plan):
        raise TypeError(f"factorize_arrays: layout must be a Layout or a Plan, got {type(plan).__name__}")
    return plan.layout()


def _check_finite(layout: Layout, W: np.ndarray, batch: tuple) -> None:
    """NaN or inf among the graph's matrices: a ``ValueError`` naming the first such factor."""
    groups = layout.program.groups
    if all(np.all(np.isfinite(W[:, g.start : g.start + len(g.members) * g.rows * g.n])) for g in groups):
        return
    for slot in layout.factors:
        finite = np.all(np.isfinite(W[:, slot.matrix : slot.matrix + slot.rows * slot.n]), axis=-1)
        if not np.all(finite):
            raise ValueError(f"factorize_arrays: factor {slot.index} on {list(slot.keys)} has NaN or inf in its "
                             f"matrix{batch_note(~finite.reshape(batch))}; fill it with finite numbers")


def _refused(plan, failed: np.ndarray, batch: tuple) -> SingularProblemError:
    """The error of elements whose step ``failed`` (its pivot refused, or its hard rows found dependent)."""
    st = int(failed[failed != -1][0])
    step = plan.steps[st]
    bad = (failed == st).reshape(batch)
    return SingularProblemError(
        f"step {st}: eliminating {list(step.frontal)}: its pivot is numerically singular or of the wrong sign, or its "
        f"hard rows are numerically dependent{batch_note(bad)}; elimination.factorize on a FactorGraph of these "
        f"numbers says which (and re-plans dependent rows), or regularize the problem (a prior, a proximal term)",
        st, step.frontal, kind="singular")


def _hard_magnitude(program, L: np.ndarray) -> np.ndarray:
    """``|b|`` of the hard factors' right-hand sides among the linear terms ``L`` (zeros elsewhere): what the
    dropped rows are checked against."""
    M = np.zeros_like(L)
    for group in program.groups:
        if group.hard:
            part = slice(group.linear, group.linear + len(group.members) * group.rows)
            np.abs(L[:, part], out=M[:, part])
    return M
