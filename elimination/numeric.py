"""The numeric pass: replay a :class:`~elimination.symbolic.Plan` on numbers.

:func:`factorize` walks the plan's steps, gathers each bucket's factors into a
dense local block (positions decided by the plan), and hands it to the
elimination rule -- :func:`~elimination.gaussian.eliminate_gaussian` unless
another is passed, as GTSAM's ``eliminateSequential(ordering, function)``.  It
keeps the conditionals; :meth:`Factorization.solve` then only pushes linear
terms through them, so a new ``g`` or ``b`` costs matrix-vector products.

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

import contextlib
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from factorgraph import FactorGraph, LeastSquares, LinearEquality, Quadratic, Variable
from factorgraph.factors import as_float_array, concat_last

from .errors import SingularProblemError
from .gaussian import (
    CONSISTENCY_RTOL, PIVOT_SUSPECT_RTOL, SINGULAR_RTOL, batch_note, eliminate_gaussian, mv, row_norms, singular_advice,
)
from .compiled import (SOLVE_SCRATCH, eliminate_kernel, eliminate_tables, factor_workspace, factorize_graph,
                       factorize_scratch_size, max_front, run_solve, stacked, started_error, zeroed)
from . import lanes
from .program import F
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


def _element(array: np.ndarray, index: tuple, core_ndim: int, batch: tuple) -> np.ndarray:
    """Batch element ``index`` of ``batch`` (the trailing batch dimensions) of ``array``;
    leading dimensions beyond ``batch`` (batched linear terms) are kept."""
    lead = array.shape[: array.ndim - core_ndim]
    full = np.broadcast_shapes(lead, batch)
    array = np.broadcast_to(array, full + array.shape[array.ndim - core_ndim :])
    return array[(Ellipsis,) + index + (slice(None),) * core_ndim]


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


def _describe(graph: FactorGraph, indices) -> str:
    return ", ".join(f"factor {i} ({type(graph.factors[i]).__name__} on {list(graph.factors[i].keys)})" for i in indices)


@dataclass
class SolveWork:
    """What one :meth:`Factorization.solve` did (:attr:`Factorization.last_solve`): the cost of a solve and why.

    Attributes
    ----------
    started : bool
        It refined from given values (``start``) instead of solving from scratch.
    sweeps : int
        Forward and back substitutions of the whole batch: one for a solve from scratch, one per refinement
        step (re-planned elements solve apart, in their own factorizations: ``fallbacks``).
    refinements : int
        Refinement steps, the verification's included.
    verifications : int
        Of those, the steps that verified a suspect factorization (:meth:`Factorization.suspect`) until
        refinement settled.
    changes : list of float
        Each refinement step's correction relative to the solution (largest entries over the variables and
        the batch), in order: a contracting refinement halves them at least.

    Examples
    --------
    >>> from factorgraph import FactorGraph, Variable, Quadratic
    >>> import elimination
    >>> fg = FactorGraph(); fg.add_variable(Variable("x", 1))
    >>> _ = fg.add(Quadratic(["x"], [[2.0]], [2.0]))
    >>> fact = elimination.factorize(fg, elimination.analyze(fg, elimination.natural(fg)), backend="numpy")
    >>> _ = fact.solve(refine=2)
    >>> fact.last_solve.sweeps, fact.last_solve.refinements
    (3, 2)
    """

    started: bool = False
    sweeps: int = 0
    refinements: int = 0
    verifications: int = 0
    changes: list = field(default_factory=list)


class Factorization:
    """Conditionals of an eliminated graph; solves and re-solves it.

    Attributes
    ----------
    plan : Plan
    graph : FactorGraph
        The graph factorized (its linear terms are the defaults of :meth:`solve`).
    conditionals : list
        One per plan step, from the elimination rule.
    hessians, coefficients : dict
        Matrices of the working factors left after the last step (none for a
        complete plan), by index: ``H`` of quadratic factors, stacked ``A`` of
        hard ones.
    batch_shape : tuple
        Batch shape of the matrices.
    deficient : ndarray of bool (batch_shape) or None
        Elements whose hard rows fell short of the plan's ranks.
    fallbacks : dict
        Batch index -> the :class:`Factorization` of that element's graph
        under a plan re-made with its numerical ranks; :meth:`solve` takes
        those elements' values from it.
    pivot_ratio : ndarray (batch_shape)
        Smallest Schur pivot relative to the magnitude of its contributions
        (``inf`` without pivots); below ``PIVOT_SUSPECT_RTOL`` the solution
        is verified by refinement (:meth:`solve`).
    weakest_step : Step or None
        The step with the smallest pivot ratio.
    last_solve : SolveWork
        What the last :meth:`solve` did: sweeps, refinement and verification steps.
    """

    pivot_ratio: np.ndarray = np.inf
    weakest_step = None
    _no_dropped_rows = None  # whether no step drops rows (startable), once asked
    _spent = False  # its memory handed on to another factorization (factorize's out)

    def __init__(
        self, plan: Plan, graph: FactorGraph, conditionals: list, hessians: dict, coefficients: dict,
        batch_shape: tuple = (), deficient: np.ndarray | None = None, fallbacks: dict | None = None,
    ):
        self.plan = plan
        self.graph = graph
        self.conditionals = conditionals
        self.hessians = hessians
        self.coefficients = coefficients
        self.batch_shape = batch_shape
        self.deficient = deficient
        self.fallbacks = fallbacks or {}
        self._own_terms = None  # the graph's linear terms, read at the first solve
        self.last_solve = SolveWork()

    def __repr__(self) -> str:
        replanned = f", {len(self.fallbacks)} re-planned" if self.fallbacks else ""
        return f"Factorization({len(self.conditionals)} steps, batch={self.graph.batch_shape}{replanned})"

    # -- linear terms -----------------------------------------------------------------
    def _linear_terms(self, g: Mapping | None, b: Mapping | None):
        """Tables of the linear terms: ``g`` of quadratic factors, ``b`` of hard
        ones, and the measurements ``b`` of least-squares factors (kept for
        Jacobian-form residuals); the graph's own tables themselves (read only) when
        nothing is overridden."""
        factors = self.graph.factors
        if self._own_terms is None:
            self._own_terms = _graph_terms(factors)
        if not g and not b:
            return self._own_terms
        lin_g, lin_b, measurements = (dict(table) for table in self._own_terms)
        for i, value in _overrides("b", b):
            if i in lin_b:
                lin_b[i] = _checked_override("b", i, value, lin_b[i])
            elif i in measurements:
                measurements[i] = _checked_override("b", i, value, measurements[i])
                lin_g[i] = factors[i].information(measurements[i])
            else:
                raise KeyError(
                    f"solve(b=...): factor {i!r} has no right-hand side b; b overrides apply to LinearEquality "
                    f"and LeastSquares factors (indices returned by FactorGraph.add)"
                )
        for i, value in _overrides("g", g):
            if i not in lin_g:
                raise KeyError(
                    f"solve(g=...): factor {i!r} is not a Quadratic factor of the graph; g overrides apply to "
                    f"Quadratic and LeastSquares factors (indices returned by FactorGraph.add)"
                )
            lin_g[i] = _checked_override("g", i, value, lin_g[i])
            measurements.pop(i, None)  # g given directly: no measurement to take residuals against
        return lin_g, lin_b, measurements

    def _forward(self, lin_g: dict, lin_b: dict, check: bool = True):
        """Forward sweep of the linear terms; returns the caches and the terms
        of every working factor (the tables are extended in place).  With
        ``check``, the right-hand sides of dropped hard rows must vanish."""
        caches = []
        magnitude: dict = {}  # of generated rows' right-hand sides; |b| for the graph's (see forward)
        for step, conditional in zip(self.plan.steps, self.conditionals):
            terms = [lin_g[i] for i in step.factors if i in lin_g]
            batch = np.broadcast_shapes(*(t.shape[:-1] for t in terms))
            g_local = np.zeros(batch + (step.front_size,))
            for i, pos in zip(step.factors, step.positions):
                if i in lin_g:
                    g_local[..., pos] += lin_g[i]
            hard = [i for i in step.factors if i in lin_b]
            b_local = concat_last([lin_b[i] for i in hard], 1) if hard else None
            b_magnitude = None
            if conditional.E is not None or conditional.E_drop is not None:
                b_magnitude = concat_last([magnitude[i] if i in magnitude else np.abs(lin_b[i]) for i in hard], 1)
            cache, g_sep, b_sep, b_sep_magnitude, dropped = conditional.forward(g_local, b_local, b_magnitude)
            caches.append(cache)
            if check and dropped is not None:
                self._check_consistent(step, *dropped)
            if step.new_quadratic is not None:
                lin_g[step.new_quadratic] = g_sep
            if step.new_equality is not None:
                lin_b[step.new_equality], magnitude[step.new_equality] = b_sep, b_sep_magnitude
        return caches, lin_g, lin_b

    def _check_consistent(self, step, residual: np.ndarray, magnitude: np.ndarray) -> None:
        """Dropped rows read ``0 = residual``: it must vanish relative to the right-hand sides it combines."""
        bad = np.any(np.abs(residual) > CONSISTENCY_RTOL * magnitude, axis=-1)
        if self.deficient is not None:
            bad = bad & ~self.deficient  # placeholders: re-planned separately
        if not np.any(bad):
            return
        worst = float(np.max(np.abs(residual)))
        raise SingularProblemError(
            f"step {step.index}: eliminating {list(step.frontal)}: the hard equalities "
            f"{_describe(self.graph, step.hard_factors)} are inconsistent: a combination of their rows reads "
            f"0 = {worst:.3g}{batch_note(bad)}; they have no common solution. Correct their right-hand sides or "
            f"remove the ones that contradict the others.",
            step.index, step.frontal, kind="inconsistent", factors=step.hard_factors,
        )

    def _sweeps(self, lin_g: dict, lin_b: dict, check: bool = True) -> dict:
        """Forward and backward sweeps: the solution for the given linear terms."""
        self.last_solve.sweeps += 1
        caches, _, _ = self._forward(dict(lin_g), dict(lin_b), check)
        values: dict = {}
        for step, conditional, cache in zip(reversed(self.plan.steps), reversed(self.conditionals), reversed(caches)):
            sep = [values[k] for k in step.separator]
            x_sep = concat_last(sep, 1) if sep else np.zeros(0)
            x_front = conditional.back(cache, x_sep)
            offset = 0
            for key in step.layout[: len(step.frontal)]:
                dim = self.graph.variable(key).dim
                values[key] = x_front[..., offset : offset + dim]
                offset += dim
        return {key: values[key] for key in self.graph.keys}

    def _residual_terms(self, values: dict, lin_g: dict, lin_b: dict, measurements: dict):
        """Linear terms whose solution is the error of ``values``: ``g_f - H_f x``
        and ``b_f - A_f x`` per factor (the multipliers of the hard rows cancel).

        Least-squares factors use ``A'W(b - A x)``: a penalty ``mu ||K a - k||^2``
        would otherwise lose ``mu`` times the round-off to the cancellation of
        ``g`` against ``H x``.
        """
        res_g, res_b = {}, {}
        for i, factor in enumerate(self.graph.factors):
            if i in lin_b:
                res_b[i] = lin_b[i] - sum(mv(A, values[k]) for k, A in zip(factor.keys, factor.A))
                continue
            x = concat_last([values[k] for k in factor.keys], 1)
            if i in measurements:
                res_g[i] = factor.residual_information(x, measurements[i])
            else:
                res_g[i] = lin_g[i] - mv(factor.H, x)
        return res_g, res_b

    # -- solving --------------------------------------------------------------------
    def solve(self, g: Mapping | None = None, b: Mapping | None = None, refine: int = 1,
              start: Mapping | None = None, verified: bool = False, finish: bool = True) -> dict:
        """Solve, optionally with new linear terms, reusing every matrix factorization.

        Parameters
        ----------
        g : dict, optional
            Factor index -> new information vector ``g`` for Quadratic (and
            LeastSquares) factors.
        b : dict, optional
            Factor index -> new right-hand side ``b`` for LinearEquality and
            LeastSquares factors (for the latter ``g = A'W b``).
            Factors not named keep the graph's values; new values may carry
            batch dimensions broadcasting with the graph's.
        refine : int
            Steps of iterative refinement.  Each re-solves for the residual
            ``(g - H x, b - A x)`` of every factor with the same factorization
            and adds the correction; one step brings an order that substitutes
            through an ill-conditioned hard block back to the accuracy of a
            backward-stable dense solve.  ``0`` skips it (twice as fast when
            the order is known to be stable, e.g. identity substitutions and
            definite pivots).
        start : dict, optional
            Values to refine from instead of solving from scratch: the solution
            of a nearby problem (the outer iterations' last iterate).  The solve
            is then ``refine`` refinement steps from it, the first of which
            solves for the change alone: one solve instead of two once the
            changes are small; where the last step's correction, times the
            digits the pivots lose (``started_error``), may leave an error above
            ``WARM_RTOL``, one more step is taken.  A suspect factorization
            (:meth:`suspect`) is verified from the start: refinement steps
            until they settle, as after a solve from scratch.  Ignored (a solve
            from scratch) where ``refine`` is 0, an element was re-planned, or
            the plan drops dependent rows (their consistency is checked on a
            solve from scratch).
        verified : bool
            An earlier solve with this factorization verified its suspect
            pivots (refinement settled there; the solve would have raised
            otherwise): a solve from ``start`` then stops an element's steps
            as soon as the last may leave an error below ``WARM_RTOL`` (its
            change times the larger of the rate seen and ``started_error``'s),
            as on a factorization whose pivots are not suspect, instead of
            verifying it again -- a refinement's
            contraction belongs to the factorization, not to the right-hand
            side.  Steps that do not contract are still refused.  The outer
            iterations' re-solves pass it.  Ignored without ``start``.
        finish : bool
            A solve from ``start``: take the one more step where the last may
            leave an error above ``WARM_RTOL`` (default), or on a ``verified``
            suspect factorization the steps until they settle.  ``False``
            leaves them to the caller (``refine`` steps alone; :meth:`unfinished`
            says where more are wanted): the outer iterations refine an iterate
            from itself only where it may be the answer, the next re-solve
            corrects the others.

        Returns
        -------
        dict
            Variable key -> value, shape ``batch + (dim,)``, in the graph's key order.

        Raises
        ------
        SingularProblemError
            Hard equalities that the factorization found dependent contradict
            each other for these right-hand sides (``kind="inconsistent"``).

        Examples
        --------
        >>> import numpy as np
        >>> from factorgraph import FactorGraph, Variable, Quadratic
        >>> import elimination
        >>> fg = FactorGraph(); fg.add_variable(Variable("x", 1))
        >>> i = fg.add(Quadratic(["x"], [[2.0]], [2.0]))
        >>> fact = elimination.factorize(fg, elimination.analyze(fg, elimination.natural(fg)))
        >>> fact.solve()["x"], fact.solve(g={i: [6.0]})["x"]
        (array([1.]), array([3.]))
        """
        refine = check_refine(refine)
        self._check_live()
        if not self.plan.complete:
            raise ValueError(
                f"this factorization is partial (variables {list(self.plan.remaining)} are not "
                "eliminated); use remaining() to get the graph left over"
            )
        suspect = self.suspect()
        lin_g, lin_b, measurements = self._linear_terms(g, b)
        # Deficient elements carry placeholders until _splice: their overflow means nothing.
        warm = start is not None and refine and self.startable()
        self.last_solve = SolveWork(started=bool(warm))
        with np.errstate(over="ignore", invalid="ignore") if self.fallbacks else contextlib.nullcontext():
            values = self._start(start) if warm else self._sweeps(lin_g, lin_b)
            if warm and np.any(suspect) and (finish or not verified):  # verified from the start: refinement
                values = self._verified(values, lin_g, lin_b, measurements, suspect, verified)  # until it settles
            else:
                for _ in range(refine):
                    values, correction = self._refined(values, lin_g, lin_b, measurements)
                if warm and finish and started_error(_relative_size(correction, values),
                                                     float(np.min(self.pivot_ratio))) > WARM_RTOL:
                    values = self._refined(values, lin_g, lin_b, measurements)[0]  # a change too large for one step
                if not warm and np.any(suspect):  # the verification's steps go on from the last plain one's change
                    values = self._verified(values, lin_g, lin_b, measurements, suspect,
                                            previous=_change(correction, values) if refine else np.inf)
        return self._splice(values, g, b, refine) if self.fallbacks else values

    def _hand_on(self) -> dict:
        """The memory a later factorization along the same plan may reuse (``factorize(..., out=self)``):
        none here (the numpy path's conditionals are per step); this factorization is spent after."""
        self._spent = True
        return {}

    def _check_live(self) -> None:
        if self._spent:
            raise ValueError("solve: this factorization's memory was handed on by factorize(..., out=...), and holds "
                             "another factorization now; solve the factorization that call returned")

    def startable(self) -> bool:
        """Whether :meth:`solve` refines from given values (its ``start``): no element was re-planned, no
        step drops rows (their consistency is checked on a solve from scratch)."""
        if self._no_dropped_rows is None:
            self._no_dropped_rows = not any(step.dropped_rows for step in self.plan.steps)
        return self._no_dropped_rows and not self.fallbacks

    def _start(self, start: Mapping) -> dict:
        """:meth:`solve`'s ``start``, checked (every variable of the graph, each ``(..., dim)``), in the graph's
        order."""
        keys = [var.key for var in self.graph.variables]
        missing, extra = [k for k in keys if k not in start], [k for k in start if k not in set(keys)]
        if missing or extra:
            raise ValueError(f"solve: start must give every variable of the graph, no other: missing {missing}, "
                             f"unknown {extra}")
        values = {key: as_float_array(start[key], f"solve: start[{key!r}]", 1) for key in keys}
        wrong = [key for key in keys if values[key].shape[-1:] != (self.graph.variable(key).dim,)]
        if wrong:
            raise ValueError(f"solve: start's values of {wrong} are not (..., dim) for their variables' dims")
        return values

    def unfinished(self, values: Mapping, start: Mapping) -> np.ndarray:
        """Elements of a solve from ``start`` that ended at ``values`` without its one more step, or its
        verification (``solve(..., finish=False)``), whose error may exceed ``WARM_RTOL``: the change from
        ``start`` (the one refinement step's correction where ``refine`` is 1, at least the last step's
        above) times the digits the pivots lose (``started_error``).  The outer iterations take those steps
        where the iterate may be the answer.

        Parameters
        ----------
        values, start : dict
            Variable key -> value, shape ``batch + (dim,)``: the solve's answer and where it started.

        Returns
        -------
        np.ndarray
            Booleans, shape ``batch``.

        Examples
        --------
        >>> from factorgraph import FactorGraph, Variable, Quadratic
        >>> import elimination
        >>> fg = FactorGraph(); fg.add_variable(Variable("x", 1))
        >>> i = fg.add(Quadratic(["x"], [[2.0]], [2.0]))
        >>> fact = elimination.factorize(fg, elimination.analyze(fg, elimination.natural(fg)))
        >>> x = fact.solve()
        >>> far = fact.solve(g={i: [6.0]}, start=x, finish=False)  # pivots that lose no digits: one step is enough
        >>> far["x"], bool(fact.unfinished(far, x))
        (array([3.]), False)
        """
        change = _largest(values[key] - start[key] for key in values) / np.maximum(_largest(values.values()),
                                                                                  np.finfo(float).tiny)
        return _error_left(change, np.inf, self.pivot_ratio) > WARM_RTOL

    def suspect(self) -> np.ndarray:
        """Elements (shape ``batch``) whose smallest pivot is suspect: their solutions are verified by
        refinement; re-planned elements (``deficient``) are not, their placeholders mean nothing."""
        suspect = self.pivot_ratio < PIVOT_SUSPECT_RTOL
        return suspect & ~self.deficient if self.deficient is not None else suspect

    def _refined(self, values: dict, lin_g: dict, lin_b: dict, measurements: dict):
        """One step of iterative refinement: ``(values + correction, correction)``."""
        # Residuals of dropped (dependent) rows are round-off: no consistency check here.
        correction = self._sweeps(*self._residual_terms(values, lin_g, lin_b, measurements), check=False)
        values = {key: values[key] + correction[key] for key in values}
        self.last_solve.refinements += 1
        self.last_solve.changes.append(_relative_size(correction, values))
        return values, correction

    def _verified(self, values: dict, lin_g: dict, lin_b: dict, measurements: dict, suspect: np.ndarray,
                  verified: bool = False, previous=np.inf) -> dict:
        """Refine a solution whose pivots were suspect until refinement settles, or refuse it.

        A pivot far below the magnitude of its contributions is either the
        honest end of a long cancellation or of an ill-conditioned
        substitution that this order takes (refinement contracts: 1e-5 then
        1e-10 on LCABA's cycle(320)) or round-off standing in for zero (a
        singular problem: corrections stay as large as the solution).  Steps
        go on while the correction at least halves each time and has not
        reached round-off (``SETTLED_RTOL`` of the solution), at most
        ``SUSPECT_REFINE`` of them: a contracting refinement is not stopped at
        the first small correction -- the error left is about the last
        correction times the rate, 5e-8 on a saddle graph whose pivots had lost
        every digit when its corrections first fell below 1e-6, 5e-10 two
        steps later.  So an element is done once a step contracted (at most
        half the step before: ``previous``, the plain refinement's change
        where one preceded) and that error, its change times the larger of
        the rate seen and the one its pivots imply (``eps / ratio``:
        ``started_error``), is below ``WARM_RTOL``; where an earlier solve
        ``verified`` the factorization (:meth:`solve`) its contraction was
        seen already, and the first such step ends it.  The solution is
        refused when its last correction still exceeds ``VERIFY_RTOL`` of it.
        Past ``VERIFY_RTOL`` at most ``FINISHING_REFINE`` more steps are taken:
        near round-off the corrections of an ill-conditioned problem keep
        shrinking slowly, and each step is a solve of the whole batch.
        """
        small = 0
        for _ in range(SUSPECT_REFINE):
            self.last_solve.verifications += 1
            values, correction = self._refined(values, lin_g, lin_b, measurements)
            change = _change(correction, values)
            # an element is done once a step contracted (or an earlier solve saw it) and left a small error
            seen = verified | ((change <= 0.5 * previous) & (previous < np.inf))
            suspect = suspect & ~(seen & (_error_left(change, previous, self.pivot_ratio) <= WARM_RTOL))
            if not np.any(suspect):
                return values
            contracting = suspect & (change > SETTLED_RTOL) & (change <= 0.5 * previous)
            if np.any(suspect & (change > VERIFY_RTOL) & ~contracting):
                break  # large and not shrinking: refused below
            small = small + 1 if not np.any(suspect & (change > VERIFY_RTOL)) else 0
            if not np.any(contracting) or small > FINISHING_REFINE:
                return values
            previous = change
        bad = suspect & (change > VERIFY_RTOL)
        if not np.any(bad):
            return values
        step, worst = self.weakest_step, float(np.min(self.pivot_ratio))
        singular = worst < SINGULAR_RTOL
        roles = {"definite": "min", "negative": "max"}.get(step.pivot, "mixed")
        cause = (f"the pivot is numerically singular: {singular_advice(roles)}" if singular else
                 "the problem is too ill-conditioned for this order: try another ordering, or check for nearly "
                 "undetermined variables or nearly dependent constraints.")
        raise SingularProblemError(
            f"step {step.index}: eliminating {list(step.frontal)}: pivots fell to {worst:.1e} of the magnitude of "
            f"their contributions (condition ~{1 / max(worst, 1e-300):.0e}) and iterative refinement does not "
            f"settle: its last step changed the solution by {float(np.max(np.where(bad, change, 0))):.1e} of its "
            f"size{batch_note(bad)}; {cause}",
            step.index, step.frontal, kind="singular" if singular else "ill-conditioned",
        )

    def _splice(self, values: dict, g: Mapping | None, b: Mapping | None, refine: int) -> dict:
        """Replace the deficient elements' placeholders by their re-planned solutions."""
        batch = self.batch_shape
        out = {key: np.array(v) for key, v in values.items()}
        for index, fallback in self.fallbacks.items():
            g_e = {i: _element(np.asarray(v, dtype=float), index, 1, batch) for i, v in _overrides("g", g)}
            b_e = {i: _element(np.asarray(v, dtype=float), index, 1, batch) for i, v in _overrides("b", b)}
            try:
                solution = fallback.solve(g_e, b_e, refine)
            except SingularProblemError as error:
                raise _in_element(error, index) from None
            for key, value in solution.items():
                out[key][(Ellipsis,) + index + (slice(None),)] = value
        return out

    def remaining(self, g: Mapping | None = None, b: Mapping | None = None) -> FactorGraph:
        """The factor graph left over on the variables a partial plan did not eliminate.

        Its factors are the untouched factors of the original graph plus those
        the elimination generated (e.g. the dual Hessian on the multipliers
        after eliminating every primal variable).
        """
        if self.fallbacks:
            if not self.batch_shape:
                return self.fallbacks[()].remaining(g, b)
            raise ValueError(
                f"batch elements {sorted(self.fallbacks)} have numerically dependent hard rows, so their graphs "
                "left over differ in structure from the others'; factorize those elements separately "
                "(elimination.numeric.element_graph) to get theirs"
            )
        _, lin_g, lin_b = self._forward(*(dict(table) for table in self._linear_terms(g, b)[:2]))  # extended here
        rest = FactorGraph()
        for key in self.plan.remaining:
            var = self.graph.variable(key)
            rest.add_variable(Variable(var.key, var.dim, var.role))
        for i in self.plan.remaining_factors:
            scope = self.plan.factors[i].keys
            if i in self.hessians:
                rest.add(Quadratic(scope, self.hessians[i], lin_g[i]))
            else:
                dims = [self.graph.variable(k).dim for k in scope]
                blocks = np.split(self.coefficients[i], np.cumsum(dims)[:-1], axis=-1)
                rest.add(LinearEquality(scope, blocks, lin_b[i]))
        return rest


def _largest(arrays) -> np.ndarray:
    """Largest magnitude over several ``(..., dim)`` arrays, per batch element."""
    return np.max(np.stack(np.broadcast_arrays(*(np.max(np.abs(a), axis=-1) for a in arrays))), axis=0)


def _overrides(name: str, table: Mapping | None):
    if table is None:
        return []
    if not isinstance(table, Mapping):
        raise TypeError(f"solve({name}=...) must be a dict of factor index -> array, got {type(table).__name__}")
    return table.items()


def check_refine(refine) -> int:
    """``refine`` as a non-negative int, or a clear error."""
    if isinstance(refine, bool) or not isinstance(refine, (int, np.integer)):
        raise TypeError(f"refine must be an int >= 0 (steps of iterative refinement), got {refine!r}")
    if refine < 0:
        raise ValueError(f"refine must be >= 0 (steps of iterative refinement), got {refine}")
    return int(refine)


def _in_element(error: SingularProblemError, index: tuple) -> SingularProblemError:
    if not index:
        return error
    return SingularProblemError(f"batch element {index}: {error}", error.step, error.keys, error.kind, error.factors)


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
            top = float(np.max(np.abs(X))) if X.size else 0.0
            work.changes.append(float(np.max(np.abs(correction))) / top if top > 0.0 else 0.0)
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
        for keys, start, dim in _value_runs(self.program, self.graph):  # a run's views made by numpy, in C
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
        groups = zip(program.groups, _residual_columns(program, self.graph), self._residual_groups)
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


def _graph_terms(factors) -> tuple:
    """``(g, b, measurements)``: factor index -> ``g`` of each quadratic factor, ``b`` of each hard one, and the
    measurements ``b`` of the least-squares ones; one pass (graphs of thousands of factors)."""
    g, b, measurements = {}, {}, {}
    for i, f in enumerate(factors):
        if isinstance(f, LinearEquality):
            b[i] = f.b
        else:
            g[i] = f.g
            if isinstance(f, LeastSquares):
                measurements[i] = f.b
    return g, b, measurements


def _value_slices(program, graph) -> list:
    """``(key, offset, dim)`` of every variable's value in the program's value layout (kept with the program)."""
    if "values" not in program.derived:
        program.derived["values"] = [(key, off, graph.variable(key).dim) for key, off in program.value_offset.items()]
    return program.derived["values"]


def _value_runs(program, graph) -> list:
    """``(keys, start, dim)``: runs of consecutive variables of one dimension in the program's value layout
    (kept with the program), so that a solve's values are a few reshapes, not one slice per variable."""
    if "value runs" not in program.derived:
        runs = []
        for key, off, dim in sorted(_value_slices(program, graph), key=lambda s: s[1]):
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


def _residual_columns(program, graph) -> list:
    """Per factor group of ``program``, ``(k, n)`` indices into the value layout of each member's columns
    (its keys in order, as its matrix: the plan's structure), kept with the program."""
    if "residual columns" not in program.derived:
        where = {key: np.arange(off, off + dim) for key, off, dim in _value_slices(program, graph)}
        factors = program.plan.factors
        program.derived["residual columns"] = [
            np.array([np.concatenate([where[key] for key in factors[i].keys]) for i in group.members])
            for group in program.groups]
    return program.derived["residual columns"]


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


SCALE_FLOOR = 1e-10  # relative to the largest diagonal magnitude of the graph
VERIFY_RTOL = 1e-6  # a suspect factorization's last refinement step may move the solution by this much
SETTLED_RTOL = 64 * np.finfo(float).eps  # a correction this small is round-off: refinement has settled
WARM_RTOL = 1e-13  # a solve started from given values refines once more where its error may exceed this
SUSPECT_REFINE = 16  # refinement steps at most to settle a suspect factorization
FINISHING_REFINE = 2  # of which at most this many once the corrections are below VERIFY_RTOL


def _change(correction: dict, values: dict) -> np.ndarray:
    """``max |correction| / max |values|`` of each element (shape ``batch``)."""
    return _largest(correction.values()) / np.maximum(_largest(values.values()), np.finfo(float).tiny)


def _error_left(change: np.ndarray, previous, ratio: np.ndarray) -> np.ndarray:
    """The relative error a refinement step that changed the solution by ``change`` may leave (shape
    ``batch``): ``change`` times the refinement's contraction rate, the larger of the one its pivots imply
    (``eps / ratio``: ``started_error``) and the one seen from the step before (``change / previous``)."""
    eps = np.finfo(float).eps
    return change * np.maximum(eps / np.clip(ratio, eps, 1.0), change / np.maximum(previous, np.finfo(float).tiny))


def _relative_size(correction: dict, values: dict) -> float:
    """``max |correction| / max |values|`` over the variables and the batch (0 for a zero solution)."""
    top = float(np.max(_largest(values.values()))) if values else 0.0
    return float(np.max(_largest(correction.values()))) / top if top > 0.0 else 0.0


def _checked_override(name: str, index, value, current: np.ndarray) -> np.ndarray:
    value = as_float_array(value, f"solve({name}=...) for factor {index}", 1)
    if value.shape[-1] != current.shape[-1]:
        raise ValueError(f"solve({name}=...) for factor {index}: length {value.shape[-1]}, expected {current.shape[-1]}")
    return value


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
