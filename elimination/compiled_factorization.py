"""The numeric pass on the compiled executor: a :class:`~elimination.factorization.Factorization` whose numbers live in
the program's flat workspaces.

:class:`CompiledFactorization` keeps the conditionals in the array ``C`` laid
out by the program (:mod:`elimination.program`) and runs its sweeps in
:mod:`elimination.compiled` (or :mod:`elimination.lanes`, a batch side by
side); the graph's linear terms are laid out once and only the groups a
solve overrides are restacked, and refinement takes its residuals one
product per factor group.  Overrides, refinement, verification of suspect
pivots and error messages are :class:`~elimination.factorization.Factorization`'s.
:func:`compiled_elimination` is one factorization and solve of a graph in one
trip into compiled code (what ``gaussgraph compare`` times).
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from factorgraph import FactorGraph, LeastSquares
from factorgraph.factors import concat_last

from .compiled import (SOLVE_SCRATCH, eliminate_kernel, eliminate_tables, factor_workspace, factorize_scratch_size,
                       max_front, run_solve, stacked, zeroed)
from .errors import SingularProblemError
from . import lanes
from .factorization import Factorization, SolveWork, check_refine, relative_size
from .numeric import SCALE_FLOOR
from .program import F
from .symbolic import Plan

class CompiledFactorization(Factorization):
    """A :class:`Factorization` whose sweeps run in compiled code (:mod:`elimination.compiled`).

    The conditionals live in the flat array ``C`` laid out by ``program``
    (:func:`elimination.program.lower`): ``(elements, conditional_size)``, or
    ``(groups, conditional_size, LANES)`` where the batch ran with its elements
    side by side (:mod:`elimination.lanes`); overrides, refinement, verification
    of suspect pivots and error messages are the numpy path's.
    """

    def __init__(self, plan: Plan, graph: FactorGraph, program, C: np.ndarray, batch_shape: tuple,
                 pivot_ratio: np.ndarray, weakest_step):
        super().__init__(plan, graph, [], {}, {}, batch_shape)
        self.program, self.C = program, C
        self.pivot_ratio, self.weakest_step = pivot_ratio, weakest_step
        self._own_linear = None  # the graph's own linear terms laid out, made at the first solve
        self._residual_groups = None  # refinement's terms per factor group, stacked at the first refinement
        self._per_element = None  # lane conditionals one row per element, made at the first solve that needs them
        self._linear_memory = None  # a consumed factorization's laid-out linear terms, refilled at the first solve

    def _hand_on(self) -> dict:
        """The conditionals and the laid-out linear terms (where a solve laid them out): what
        ``factorize(..., out=self)`` fills again."""
        memory = {"C": self.C, "linear": self._own_linear[:2] if self._own_linear is not None else self._linear_memory}
        super()._hand_on()
        self.C = self._own_linear = self._per_element = self._linear_memory = None  # (no stale reads: gone)
        return memory

    def __repr__(self) -> str:
        return f"CompiledFactorization({len(self.plan.steps)} steps, batch={self.graph.batch_shape})"

    def solve(self, g: Mapping | None = None, b: Mapping | None = None, refine: int = 1,
              start: Mapping | None = None, verified: bool = False, finish: bool = True) -> dict:
        # The graph's own terms, no refinement, nothing suspect: one trip into the solve kernel, without
        # tables of the graph's terms (reading 3000 factor objects into dicts cost more than the sweeps).
        refine = check_refine(refine)
        self._check_live()
        if g or b or (start is not None and refine) or np.any(self.suspect()) or (
                refine and not self._laid_out_residuals()):
            return super().solve(g, b, refine, start, verified, finish)
        self.last_solve = work = SolveWork()
        Lin, Lmag, full = self._linear(None, None)
        X = self._flat_sweeps(Lin, Lmag, full)
        for _ in range(refine):  # Factorization._refined, on the laid-out terms
            correction = self._flat_sweeps(*self._flat_residual(X, full), full, check=False)
            X += correction
            work.refinements += 1
            work.changes.append(relative_size((correction,), (X,)))
        return self._values(X, full)

    solve.__doc__ = Factorization.solve.__doc__

    def _linear(self, lin_g: dict | None, lin_b: dict | None):
        """``(Lin, Lmag, full)``: the graph's own terms (``None, None``) are laid out once, read straight from
        its factors; a solve restacks only the groups holding a term that differs from the graph's (an
        override, the outer iterations' moving terms)."""
        program = self.program
        if self._own_linear is None:
            self._own_linear = _laid_out(program, _own_linear_terms(self.graph.factors, program), self.batch_shape,
                                         self._linear_memory)
            self._linear_memory = None
        Lin, Lmag, full = self._own_linear
        if lin_g is None:  # the graph's own terms, as laid out
            return Lin, Lmag, full  # (read, not written, by the solve: compiled.run_solve)
        own_g, own_b, _ = self._own_terms  # the tables _linear_terms read
        if lin_g is own_g and lin_b is own_b:
            return Lin.copy(), _copied(Lmag), full
        changed = [group for group in program.groups
                   if any((lin_b if group.hard else lin_g)[i] is not (own_b if group.hard else own_g)[i]
                          for i in group.members)]
        if len(changed) == len(program.groups):
            return _linear_workspace(program, lin_g, lin_b, self.batch_shape)
        stacks = [stacked([(lin_b if group.hard else lin_g)[i] for i in group.members], 1) for group in changed]
        if np.broadcast_shapes(full, *(b for _, b in stacks)) != full:
            return _linear_workspace(program, lin_g, lin_b, self.batch_shape)
        Lin, Lmag = Lin.copy(), _copied(Lmag)  # the graph's own terms stay as laid out
        for group, (stack, _) in zip(changed, stacks):
            _store(Lin, Lmag, group, stack, full)
        return Lin, Lmag, full

    def _sweeps(self, lin_g: dict, lin_b: dict, check: bool = True) -> dict:
        Lin, Lmag, full = self._linear(lin_g, lin_b)
        return self._values(self._flat_sweeps(Lin, Lmag, full, check), full)

    def _flat_sweeps(self, Lin: np.ndarray, Lmag: np.ndarray, full: tuple, check: bool = True) -> np.ndarray:
        """The values ``X (prod(full), value_size)`` for the laid-out linear terms."""
        self.last_solve.sweeps += 1
        C, elements = self.C, int(np.prod(self.batch_shape))
        if C.ndim == 3:  # conditionals in lanes (elimination.lanes): no hard rows, so no dropped rows to check
            if Lin.shape[0] == elements:
                return lanes.run_solve(self.program, C, Lin)
            if self._per_element is None:  # terms batched beyond the matrices: the per-element solve
                self._per_element = lanes.elements(C, elements)
            C = self._per_element
        X, dropped = run_solve(self.program, _aligned(C, self.batch_shape, full), Lin, Lmag)
        if check:
            self._check_dropped(dropped, full)
        return X

    def _values(self, X: np.ndarray, full: tuple) -> dict:
        X = X.reshape(full + X.shape[-1:])
        values = {}
        for keys, start, dim in _value_runs(self.program):  # a run's views made by numpy, in C
            block = X[..., start : start + len(keys) * dim].reshape(full + (len(keys), dim))
            values.update(zip(keys, np.moveaxis(block, -2, 0)))
        return values

    def _laid_out_residuals(self) -> bool:
        """Whether refinement's residuals can be taken group by group (:meth:`_flat_residual`): no group
        mixes least-squares factors with others or their row counts."""
        if self._residual_groups is None:
            self._residual_groups = _residual_groups(self.graph, self.program)
        return self._residual_groups is not False

    def _flat_residual(self, X: np.ndarray, full: tuple):
        """``(Lres, None)``: ``g - H x`` and ``b - A x`` of every graph factor at ``X``, laid out as its linear
        terms (:meth:`Factorization._residual_terms`), one product per factor group; no sizes of the hard
        rows' right-hand sides, which only the dropped rows' check reads, and refinement does not check."""
        program = self.program
        Lin = self._own_linear[0]  # the graph's own terms (the solves write into copies)
        B = X.shape[0]
        Lres = np.zeros((B, program.linear_size))
        groups = zip(program.groups, program.plan.layout().group_columns(), self._residual_groups)
        for group, columns, terms in groups:
            k, rows = len(group.members), group.rows
            x = X[:, columns][..., None]  # (B, k, n, 1)
            if len(terms) == 1:  # g - H x, b - A x
                M = _batch_rows(terms[0], full, 3)
                own = Lin[:, group.linear : group.linear + k * rows].reshape(-1, k, rows)
                residual = own - (M @ x)[..., 0]
            else:  # A'W (b - A x): the measurement form, as LeastSquares.residual_information
                A, W, b = (a if a is None else _batch_rows(a, full, core) for a, core in zip(terms, (3, 3, 2)))
                r = b[..., None] - A @ x
                residual = (np.swapaxes(A, -1, -2) @ (r if W is None else W @ r))[..., 0]
            Lres[:, group.linear : group.linear + k * rows] = residual.reshape(B, k * rows)
        return Lres, None

    def _check_dropped(self, dropped: np.ndarray, full: tuple) -> None:
        """The rows the program dropped read ``0 = residual``: check them as the numpy path does."""
        rows = self.program.steps
        for st in np.flatnonzero(rows[:, F["d"]]):
            step, d, off = self.plan.steps[st], int(rows[st, F["d"]]), int(rows[st, F["drop"]])
            residual = dropped[:, off : off + d].reshape(full + (d,))
            self._check_consistent(step, residual, dropped[:, off + d].reshape(full + (1,)))

    def remaining(self, g: Mapping | None = None, b: Mapping | None = None) -> FactorGraph:
        raise ValueError("a compiled factorization is of a complete plan; use backend='numpy' for partial plans")


def _value_runs(program) -> list:
    """``(keys, start, dim)``: runs of consecutive variables of one dimension in the program's value layout
    (kept with the program), so that a solve's values are a few reshapes, not one slice per variable."""
    if "value runs" not in program.derived:
        runs = []
        for key, (off, dim) in sorted(program.plan.layout().variables.items(), key=lambda item: item[1][0]):
            if runs and runs[-1][2] == dim and runs[-1][1] + len(runs[-1][0]) * dim == off:
                runs[-1][0].append(key)
            else:
                runs.append(([key], off, dim))
        program.derived["value runs"] = runs
    return program.derived["value runs"]


def _residual_groups(graph: FactorGraph, program) -> list | bool:
    """Per factor group of ``program``, what its residuals are taken from, stacked ``(*batch, k, ...)``:
    ``(H,)`` of quadratic and ``(A,)`` of hard factors, ``(A, W, b)`` of least-squares factors of one row
    count (``W`` ``None`` for unit weights); ``False`` where a group mixes least-squares factors with others."""
    factors, out = graph.factors, []
    for group in program.groups:
        members = [factors[i] for i in group.members]
        least_squares = [type(f) is LeastSquares for f in members]
        if not any(least_squares):
            out.append((stacked([concat_last(f.A, 2) if group.hard else f.H for f in members], 2)[0],))
            continue
        if not all(least_squares) or len({f.jacobian.shape[-2] for f in members}) > 1:
            return False
        A, b = stacked([f.jacobian for f in members], 2)[0], stacked([f.b for f in members], 1)[0]
        weighted = any(f.weight is not None for f in members)
        W = stacked([f._weighted(np.eye(f.jacobian.shape[-2])) for f in members], 2)[0] if weighted else None
        out.append((A, W, b))  # (W as LeastSquares weighs: its own convention, applied to I)
    return out


def _batch_rows(a: np.ndarray, full: tuple, core: int) -> np.ndarray:
    """``a (*batch, *core_shape)`` with its batch as the rows of the flattened ``full`` (an unbatched ``a`` as
    it is: matmul broadcasts it)."""
    batch = a.shape[: a.ndim - core]
    if batch == ():
        return a
    if batch != full:
        a = np.broadcast_to(a, full + a.shape[a.ndim - core :])
    return a.reshape((-1,) + a.shape[len(full) :])


def _linear_workspace(program, lin_g: dict, lin_b: dict, batch: tuple):
    """``(Lin, Lmag, full)``: the linear terms ``g`` of quadratic and ``b`` of hard factors in the program's
    layout, ``Lmag = |b|`` (what dropped rows are checked against; ``None`` without hard factors: nothing
    reads it), rows over the broadcast batch ``full``."""
    return _laid_out(program, [[(lin_b if group.hard else lin_g)[i] for i in group.members]
                               for group in program.groups], batch)


def _own_linear_terms(factors, program) -> list:
    """The graph's own ``b`` (hard factors) or ``g`` per factor group of ``program``, read from the factors."""
    # two plain comprehensions: attribute reads, not getattr, on thousands of factors (benchmarks/README.md)
    return [[factors[i].b for i in group.members] if group.hard else [factors[i].g for i in group.members]
            for group in program.groups]


def _laid_out(program, terms: list, batch: tuple, memory: tuple | None = None):
    """:func:`_linear_workspace` of the terms listed per factor group: a group of factors of one shape
    (:class:`elimination.program.FactorGroup`) is one stacked store; into ``memory`` ``(Lin, Lmag)``
    (zeroed first) where it has their shapes."""
    stacks = [stacked(group_terms, 1) for group_terms in terms]
    full = tuple(np.broadcast_shapes(batch, *(b for _, b in stacks)))
    B = int(np.prod(full))
    hard = any(group.hard for group in program.groups)
    Lin, Lmag = _zeroed(memory, (B, program.linear_size), hard)
    for group, (stack, _) in zip(program.groups, stacks):
        _store(Lin, Lmag, group, stack, full)
    return Lin, Lmag, full


def _zeroed(memory: tuple | None, shape: tuple, hard: bool) -> tuple:
    """``(Lin, Lmag)`` of ``shape`` (``Lmag`` only where some rows are hard): zeros, in ``memory``'s arrays
    where they fit (:func:`elimination.compiled.zeroed`)."""
    Lin, Lmag = memory if memory is not None else (None, None)
    return zeroed(Lin, shape), zeroed(Lmag, shape) if hard else None


def _copied(a: np.ndarray | None) -> np.ndarray | None:
    return None if a is None else a.copy()


def _store(Lin: np.ndarray, Lmag: np.ndarray | None, group, stack: np.ndarray, full: tuple) -> None:
    """One group's stacked linear terms ``(*batch, k, rows)`` (and, for hard factors, their sizes) into the
    linear workspace."""
    B, k, rows = Lin.shape[0], len(group.members), group.rows
    block = Lin[:, group.linear : group.linear + k * rows].reshape(B, k, rows)
    block[...] = np.broadcast_to(stack, full + (k, rows)).reshape(B, k, rows)
    if group.hard:
        np.abs(block, out=Lmag[:, group.linear : group.linear + k * rows].reshape(B, k, rows))


def compiled_elimination(graph: FactorGraph, plan: Plan) -> Callable[[], np.ndarray]:
    """One compiled factorization and one solve of ``graph`` along ``plan``, as a call without arguments.

    The workspaces are filled and the kernels' outputs and scratch made once,
    here; each call runs only the kernels (:mod:`elimination.compiled`), so
    timing it measures the elimination's own cost -- what tracks the plan's
    flops -- without the Python that builds workspaces and result dicts, nor
    fresh pages for megabytes of scratch.  No refinement, no checks of
    dropped rows.  Linear terms batched beyond the matrices: every element is
    factorized, its matrices repeated.

    Returns
    -------
    callable
        ``run() -> X``, ``X: (B, value_size)``, the values in the program's
        layout (``plan.lowered().value_offset``); the next call overwrites it
        (the outputs and scratch are made once, so a call allocates nothing).

    Raises
    ------
    ValueError
        The plan is partial (its program cannot run compiled).
    SingularProblemError
        When called, if a pivot is refused or hard rows are dependent
        (:func:`factorize` says which and handles the dependent rows).

    Examples
    --------
    >>> import numpy as np
    >>> from factorgraph import FactorGraph, Quadratic, Variable
    >>> from elimination import analyze, natural
    >>> g = FactorGraph()
    >>> g.add_variable(Variable("x", 1))
    >>> _ = g.add(Quadratic(["x"], 2 * np.eye(1), np.array([4.0])))
    >>> compiled_elimination(g, analyze(g, natural(g)))()
    array([[2.]])
    """
    program = plan.lowered()
    if program.unsupported:
        raise ValueError(f"compiled_elimination: {program.unsupported}")
    Fw, batch, largest = factor_workspace(graph, program)
    floor = SCALE_FLOOR * largest
    Lin, Lmag, full = _laid_out(program, _own_linear_terms(graph.factors, program), batch)
    if Lin.shape[0] != Fw.shape[0]:  # linear terms batched beyond the matrices: each element factorized
        Fw = _aligned(Fw, batch, full)
        Fw = Fw[np.arange(Lin.shape[0]) % Fw.shape[0]]
    B, maxn = Fw.shape[0], max_front(program)
    Lmag = np.zeros_like(Lin) if Lmag is None else Lmag
    floats, ints = factorize_scratch_size(maxn)
    # the kernel's outputs and scratch, made once: a call runs the kernel only
    C, X = np.zeros((B, program.conditional_size)), np.zeros((B, program.value_size))
    arrays = (np.zeros(floats), np.zeros(ints, dtype=np.int64), Lin, Lmag, np.empty_like(Lin), np.empty_like(Lin),
              np.zeros((B, program.cache_size)), X, np.zeros((B, program.dropped_size)), np.zeros(SOLVE_SCRATCH * maxn))
    flat, index = eliminate_tables(program)

    def run() -> np.ndarray:
        if not eliminate_kernel(flat, index, Fw, C, floor, maxn, program.check_rank, *arrays):
            raise SingularProblemError(
                "compiled_elimination: a pivot was refused or hard rows were found dependent; "
                "elimination.factorize(graph, plan) names the variables and handles dependent rows.", -1, ())
        return X

    return run


def _aligned(C: np.ndarray, batch: tuple, full: tuple) -> np.ndarray:
    """``C`` (prod(batch), n), indexable by ``b % len(C)`` for the elements ``b`` of ``full``."""
    if not batch or tuple(full[len(full) - len(batch):]) == tuple(batch):
        return C
    return np.broadcast_to(C.reshape(batch + C.shape[-1:]), full + C.shape[-1:]).reshape(-1, C.shape[-1]).copy()
