"""The numeric pass: replay a :class:`~elimination.symbolic.Plan` on numbers.

:func:`factorize` walks the plan's steps, gathers each bucket's factors into a
dense local block (positions decided by the plan), and hands it to the
elimination rule -- :func:`~elimination.gaussian.eliminate_gaussian` unless
another is passed, as GTSAM's ``eliminateSequential(ordering, function)``.  It
keeps the conditionals in a :class:`~elimination.factorization.Factorization`,
whose solves then only push linear terms through them, so a new ``g`` or
``b`` costs matrix-vector products.  Where the compiled executor runs the
program (:mod:`elimination.compiled`), the result is a
:class:`~elimination.compiled_factorization.CompiledFactorization`.

**When numbers fall short of the plan.**  The plan's hard-row ranks are
structural.  Each substitution checks the numerical rank of its block against
them (relative to the norms of the original rows); a batch element whose
rank falls short -- redundant rows, rows that are combinations of others,
exactly cancelling coefficients -- is marked *deficient* and, after the pass,
re-planned alone with the ranks its numbers have
(:class:`~elimination.numeric_rank.NumericHardRows`) and factorized again; its
solutions come from that factorization.  Rows found dependent are dropped
once their right-hand side is checked at solve time: consistent ones were
redundant, inconsistent ones raise :class:`SingularProblemError` naming the
factors.  Nothing is returned that the checks did not pass.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from factorgraph import FactorGraph, LeastSquares, LinearEquality, Quadratic
from factorgraph.factors import concat_last

from .errors import SingularProblemError
from .gaussian import eliminate_gaussian, row_norms
from .compiled import factorize_graph
from .factorization import Factorization, _element, _in_element
from .numeric_rank import NumericHardRows, classify_singular
from .symbolic import Plan, analyze


def _gather_hessian(step, hessians: dict, scales: dict, batch: tuple):
    n = step.front_size
    H, scale = np.zeros(batch + (n, n)), np.zeros(batch + (n,))
    for i, pos in zip(step.factors, step.positions):
        if i in hessians:
            H[..., pos[:, None], pos[None, :]] += hessians[i]
            scale[..., pos] += scales[i]
    return H, scale


def _gather_rows(step, coefficients: dict, row_scales: dict, rows: dict, batch: tuple):
    """The bucket's hard rows ``A`` in the step's layout and their ``1 / omega`` (or ``None, None``)."""
    if not step.hard_rows:
        return None, None
    A = np.zeros(batch + (step.hard_rows, step.front_size))
    row_scale = np.ones(batch + (step.hard_rows,))
    start = 0
    for i, pos in zip(step.factors, step.positions):
        if i in coefficients:
            A[..., start : start + rows[i], pos] = coefficients[i]
            if i in row_scales:
                row_scale[..., start : start + rows[i]] = row_scales[i]
            start += rows[i]
    return A, row_scale


def element_graph(graph: FactorGraph, index: tuple, batch: tuple) -> FactorGraph:
    """The graph of one element of the matrices' batch shape ``batch``."""
    if not index:
        return graph
    out = FactorGraph()
    for var in graph.variables:
        out.add_variable(var)
    for i, f in enumerate(graph.factors):
        if isinstance(f, LinearEquality):
            out.add(LinearEquality(f.keys, [_element(a, index, 2, batch) for a in f.A], _element(f.b, index, 1, batch),
                                   f.units or None), role=graph.role(i))
        elif isinstance(f, LeastSquares):
            weight = f.weight if f.weight is None or f.weight.ndim == 0 else _element(f.weight, index, 2, batch)
            out.add(LeastSquares(f.keys, [_element(a, index, 2, batch) for a in f.A], _element(f.b, index, 1, batch), weight),
                    role=graph.role(i))
        else:
            out.add(Quadratic(f.keys, _element(f.H, index, 2, batch), _element(f.g, index, 1, batch)), role=graph.role(i))
    return out


SCALE_FLOOR = 1e-10  # relative to the largest diagonal magnitude of the graph


BACKENDS = ("numpy", "numba", "auto")


def factorize(graph: FactorGraph, plan: Plan, rule: Callable = eliminate_gaussian, backend: str = "auto",
              out: Factorization | None = None) -> Factorization:
    """Numeric elimination of ``graph`` along ``plan``.

    Parameters
    ----------
    graph : FactorGraph
        Must have the structure the plan was analysed for.
    plan : Plan
        From :func:`elimination.analyze`.
    rule : callable
        The per-step elimination rule ``(step, H, scale, A, row_scale,
        check_rank=, ignore=) -> Eliminated``; the default is
        :func:`elimination.gaussian.eliminate_gaussian` (use
        ``functools.partial(eliminate_gaussian, pivot_rtol=...)`` to change its
        singularity tolerance).
    backend : {"auto", "numba", "numpy"}
        ``"numpy"`` runs the rule step by step (the reference); ``"numba"``
        runs the plan's lowered program (:func:`elimination.program.lower`) in
        compiled code and refuses plans its instruction set does not cover
        (partial plans, a custom ``rule``); ``"auto"`` (the default) takes
        numba where it can.  Both give the same numbers to round-off; an
        element whose pivot the compiled kernel refuses, or whose hard rows
        it finds dependent, is factorized by the numpy rule (which names the
        variables or re-plans it).
    out : Factorization, optional
        A factorization along the same ``plan`` that is no longer needed:
        its memory holds this one's conditionals and laid-out linear terms
        (zeroed first, so the numbers are those of a fresh factorization, bit
        for bit).  For a loop that factorizes graph after graph of one
        structure -- Gauss-Newton or iLQR iterations, batches of states -- it
        then touches no fresh memory the size of the batch, which costs more
        than the elimination itself for large batches (the first touch of
        fresh pages).  ``out`` is consumed: solving it afterwards raises
        ``ValueError``.  Where the numpy path runs, or the batch differs,
        fresh memory is taken.

    Returns
    -------
    Factorization
        Batch elements whose hard rows are numerically dependent are
        re-planned with their numerical ranks (module docstring).

    Raises
    ------
    TypeError
        ``graph`` or ``plan`` of the wrong type.
    ValueError
        If the graph's structure differs from the plan's.
    elimination.SingularProblemError
        If a pivot is numerically singular or of the wrong sign, or
        variables are undetermined once dependent hard rows are set aside.

    Examples
    --------
    Graphs of one structure, new numbers each (a Gauss-Newton loop), each
    factorization in the memory of the last:

    >>> import numpy as np
    >>> from factorgraph import FactorGraph, Variable, Quadratic
    >>> import elimination
    >>> def graph(scale):
    ...     fg = FactorGraph(); fg.add_variable(Variable("x", 2))
    ...     fg.add(Quadratic(["x"], scale * np.eye(2), [1.0, 2.0]))
    ...     return fg
    >>> plan = elimination.analyze(graph(1.0), elimination.natural(graph(1.0)))
    >>> fact = None
    >>> for scale in (1.0, 2.0, 4.0):
    ...     fact = elimination.factorize(graph(scale), plan, out=fact)
    >>> fact.solve()["x"]
    array([0.25, 0.5 ])
    """
    if not isinstance(graph, FactorGraph):
        raise TypeError(f"factorize: graph must be a FactorGraph, got {type(graph).__name__}")
    if not isinstance(plan, Plan):
        raise TypeError(f"factorize: plan must be a Plan (from elimination.analyze), got {type(plan).__name__}")
    if graph.structure() != plan.structure:
        raise ValueError(
            "the graph's structure (variables, scopes, hard rows) differs from the one the plan was "
            "analysed for; call analyze(graph, ordering) again"
        )
    if backend not in BACKENDS:
        raise ValueError(f"factorize: backend must be one of {BACKENDS}, got {backend!r}")
    memory = _consumed(out, plan)
    if backend != "numpy":
        compiled = _compiled(graph, plan, rule, backend, memory)
        if compiled is not None:
            return compiled
    hessians, scales, coefficients, row_scales, rows = {}, {}, {}, {}, {}
    for i, factor in enumerate(graph.factors):
        if isinstance(factor, LinearEquality):
            coefficients[i], rows[i] = concat_last(factor.A, 2), factor.rows
            row_scales[i] = 1.0 / row_norms(coefficients[i])  # generated rows are unit already
        else:
            hessians[i] = factor.H
            scales[i] = np.abs(np.diagonal(factor.H, axis1=-2, axis2=-1))
    batch = np.broadcast_shapes(*(m.shape[:-2] for m in (*hessians.values(), *coefficients.values())))
    # A variable with no information at all (a vacuous constraint row) has a zero diagonal built
    # from zero contributions; judging it against the graph's largest magnitude catches it.
    floor = SCALE_FLOOR * max((float(np.max(s, initial=0.0)) for s in scales.values()), default=0.0)
    conditionals, deficient, ratio, weakest = [], None, np.full(batch, np.inf), None
    for step in plan.steps:
        H, scale = _gather_hessian(step, hessians, scales, batch)
        scale = np.maximum(scale, floor)
        A, row_scale = _gather_rows(step, coefficients, row_scales, rows, batch)
        for i in step.factors:  # consumed: free their memory
            for table in (hessians, scales, coefficients, row_scales):
                table.pop(i, None)
        try:
            out = rule(step, H, scale, A, row_scale, check_rank=not plan.numeric_ranks, ignore=deficient)
        except SingularProblemError as error:  # dependent multipliers: redundant, or contradictory?
            raise classify_singular(graph, error) from None
        conditionals.append(out.conditional)
        if out.deficient is not None:
            deficient = out.deficient if deficient is None else deficient | out.deficient
        if out.pivot_ratio is not None:
            if np.min(out.pivot_ratio) < np.min(ratio):
                weakest = step
            ratio = np.minimum(ratio, out.pivot_ratio)
        if step.new_quadratic is not None:
            hessians[step.new_quadratic], scales[step.new_quadratic] = out.H_sep, out.scale_sep
        if step.new_equality is not None:
            coefficients[step.new_equality], rows[step.new_equality] = out.A_sep, step.passed_rows
    fallbacks = {}
    if deficient is not None:
        deficient = np.broadcast_to(deficient, batch)
        for index in (tuple(int(i) for i in ix) for ix in np.argwhere(deficient)):
            fallbacks[index] = _replanned(graph, plan, index, batch, rule)
    fact = Factorization(plan, graph, conditionals, hessians, coefficients, batch, deficient, fallbacks)
    fact.pivot_ratio, fact.weakest_step = ratio, weakest
    return fact


def _consumed(out: Factorization | None, plan: Plan) -> dict:
    """``factorize``'s ``out``, checked and consumed: the memory it hands on (none for a factorization of
    the numpy path)."""
    if out is None:
        return {}
    if not isinstance(out, Factorization):
        raise TypeError(f"factorize: out must be a Factorization (from elimination.factorize), got {type(out).__name__}")
    if out.plan is not plan:
        raise ValueError("factorize: out is a factorization along another plan; its memory fits only its own plan's "
                         "factorizations (pass out=None, or the plan out was made with)")
    return out._hand_on()


def _compiled(graph: FactorGraph, plan: Plan, rule: Callable, backend: str, memory: dict):
    from .compiled_factorization import CompiledFactorization  # (a subclass of this module's Factorization)

    """The compiled factorization, or ``None`` for the numpy path (``"auto"`` on a plan the program does
    not cover, or a pivot that fails: the numpy path then names the variables).  ``memory``: what a
    consumed factorization hands on (:meth:`Factorization._hand_on`)."""
    program = plan.lowered()
    if program.unsupported or rule is not eliminate_gaussian:
        if backend == "numba":
            why = program.unsupported or "a custom elimination rule runs on numpy only"
            raise ValueError(f"factorize(backend='numba'): {why}; use backend='numpy' or 'auto'")
        return None
    C, ratio, weak, failed, batch = factorize_graph(graph, program, SCALE_FLOOR, memory.get("C"))
    if np.any(failed != -1):  # a refused pivot (named by the numpy rule), or rows found dependent (re-planned there)
        return None
    worst = int(np.argmin(ratio)) if ratio.size else 0
    weakest = plan.steps[weak[worst]] if ratio.size and weak[worst] >= 0 else None
    fact = CompiledFactorization(plan, graph, program, C, batch, ratio.reshape(batch), weakest)
    fact._linear_memory = memory.get("linear")
    return fact


def _replanned(graph: FactorGraph, plan: Plan, index: tuple, batch: tuple, rule: Callable) -> Factorization:
    """Factorization of batch element ``index`` under a plan with its numerical hard-row ranks."""
    element = element_graph(graph, index, batch)
    try:
        replan = analyze(element, plan.ordering, complete=plan.complete, hard_rows=NumericHardRows(element))
        return factorize(element, replan, rule)
    except SingularProblemError as error:
        raise _in_element(error, index) from None
