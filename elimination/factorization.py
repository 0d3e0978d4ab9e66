"""A factorization and its solves: the conditionals of an eliminated graph, re-solved for new linear terms.

:class:`Factorization` pushes linear terms through the conditionals the
numeric pass kept (:func:`elimination.factorize`): a new ``g`` or ``b`` costs
matrix-vector products.  Each solve may refine (re-solve for the residual
with the same factorization); a factorization whose pivots are suspect
(:meth:`Factorization.suspect`) is verified by refinement until it settles,
or refused with the variables named; dropped rows are checked for
consistency; a solve may start from given values (the outer iterations' last
iterate).  :attr:`Factorization.last_solve` says what a solve did
(:class:`SolveWork`).  :class:`~elimination.compiled_factorization.CompiledFactorization`
runs the same solves on the compiled executor.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from factorgraph import FactorGraph, LeastSquares, LinearEquality, Quadratic, Variable
from factorgraph.factors import as_float_array, concat_last

from .compiled import started_error
from .errors import SingularProblemError
from .gaussian import CONSISTENCY_RTOL, PIVOT_SUSPECT_RTOL, SINGULAR_RTOL, batch_note, mv, singular_advice
from .symbolic import Plan

VERIFY_RTOL = 1e-6  # a suspect factorization's last refinement step may move the solution by this much
SETTLED_RTOL = 64 * np.finfo(float).eps  # a correction this small is round-off: refinement has settled
WARM_RTOL = 1e-13  # a solve started from given values refines once more where its error may exceed this
SUSPECT_REFINE = 16  # refinement steps at most to settle a suspect factorization
FINISHING_REFINE = 2  # of which at most this many once the corrections are below VERIFY_RTOL


def _element(array: np.ndarray, index: tuple, core_ndim: int, batch: tuple) -> np.ndarray:
    """Batch element ``index`` of ``batch`` (the trailing batch dimensions) of ``array``;
    leading dimensions beyond ``batch`` (batched linear terms) are kept."""
    lead = array.shape[: array.ndim - core_ndim]
    full = np.broadcast_shapes(lead, batch)
    array = np.broadcast_to(array, full + array.shape[array.ndim - core_ndim :])
    return array[(Ellipsis,) + index + (slice(None),) * core_ndim]


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
        check_consistent(step, residual, magnitude, lambda: _describe(self.graph, step.hard_factors), self.deficient)

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
                if warm and finish and started_error(self.last_solve.changes[-1],  # (the last step's, recorded)
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
        return unfinished(values, start, self.pivot_ratio)

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
        self.last_solve.changes.append(relative_size(correction.values(), values.values()))
        return values, correction

    def _verified(self, values: dict, lin_g: dict, lin_b: dict, measurements: dict, suspect: np.ndarray,
                  verified: bool = False, previous=np.inf) -> dict:
        """Refine a solution whose pivots were suspect until refinement settles, or refuse it (:func:`settle`)."""
        return settle(lambda v: self._refined(v, lin_g, lin_b, measurements), values, suspect, self, verified,
                      previous)

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
                if not index:  # (the whole problem re-planned: its solution as it comes, batched linear terms too)
                    out[key] = np.array(value)
                    continue
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


def check_consistent(step, residual: np.ndarray, magnitude: np.ndarray, described, deficient=None) -> None:
    """Dropped rows read ``0 = residual``: it must vanish relative to the right-hand sides it combines
    (``magnitude``), else :class:`SingularProblemError` naming ``described()``, the step's hard factors;
    ``deficient`` elements (placeholders, re-planned apart) are not checked."""
    bad = np.any(np.abs(residual) > CONSISTENCY_RTOL * magnitude, axis=-1)
    if deficient is not None:
        bad = bad & ~deficient
    if not np.any(bad):
        return
    worst = float(np.max(np.abs(residual)))
    raise SingularProblemError(
        f"step {step.index}: eliminating {list(step.frontal)}: the hard equalities {described()} are "
        f"inconsistent: a combination of their rows reads 0 = {worst:.3g}{batch_note(bad)}; they have no common "
        f"solution. Correct their right-hand sides or remove the ones that contradict the others.",
        step.index, step.frontal, kind="inconsistent", factors=step.hard_factors,
    )


def settle(refined, values: dict, suspect: np.ndarray, fact, verified: bool = False, previous=np.inf) -> dict:
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
    ``verified`` the factorization (:meth:`Factorization.solve`) its contraction was
    seen already, and the first such step ends it.  The solution is
    refused when its last correction still exceeds ``VERIFY_RTOL`` of it.
    Past ``VERIFY_RTOL`` at most ``FINISHING_REFINE`` more steps are taken:
    near round-off the corrections of an ill-conditioned problem keep
    shrinking slowly, and each step is a solve of the whole batch.

    ``refined(values) -> (values, correction)`` is one refinement step (dicts of ``(..., dim)`` arrays); ``fact``
    has ``pivot_ratio``, ``weakest_step`` and ``last_solve`` (a :class:`Factorization`, or the array seam's
    :class:`~elimination.arrays.ArrayFactorization`).
    """
    small = 0
    for _ in range(SUSPECT_REFINE):
        fact.last_solve.verifications += 1
        values, correction = refined(values)
        change = _change(correction, values)
        # an element is done once a step contracted (or an earlier solve saw it) and left a small error
        seen = verified | ((change <= 0.5 * previous) & (previous < np.inf))
        suspect = suspect & ~(seen & (_error_left(change, previous, fact.pivot_ratio) <= WARM_RTOL))
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
    raise _unsettled(fact.weakest_step, fact.pivot_ratio, bad, change)


def _unsettled(step, pivot_ratio: np.ndarray, bad: np.ndarray, change: np.ndarray) -> SingularProblemError:
    """The refusal of a suspect factorization whose refinement does not settle (:func:`settle`)."""
    worst = float(np.min(pivot_ratio))
    singular = worst < SINGULAR_RTOL
    roles = {"definite": "min", "negative": "max"}.get(step.pivot, "mixed")
    cause = (f"the pivot is numerically singular: {singular_advice(roles)}" if singular else
             "the problem is too ill-conditioned for this order: try another ordering, or check for nearly "
             "undetermined variables or nearly dependent constraints.")
    return SingularProblemError(
        f"step {step.index}: eliminating {list(step.frontal)}: pivots fell to {worst:.1e} of the magnitude of "
        f"their contributions (condition ~{1 / max(worst, 1e-300):.0e}) and iterative refinement does not "
        f"settle: its last step changed the solution by {float(np.max(np.where(bad, change, 0))):.1e} of its "
        f"size{batch_note(bad)}; {cause}",
        step.index, step.frontal, kind="singular" if singular else "ill-conditioned",
    )


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


def _change(correction: dict, values: dict) -> np.ndarray:
    """``max |correction| / max |values|`` of each element (shape ``batch``)."""
    return _largest(correction.values()) / np.maximum(_largest(values.values()), np.finfo(float).tiny)


def unfinished(values: Mapping, start: Mapping, ratio: np.ndarray) -> np.ndarray:
    """:meth:`Factorization.unfinished` on values ``{key: (..., dim)}`` and a factorization's pivot ``ratio``
    (shape ``batch``): the change from ``start`` times the digits the pivots lose exceeds ``WARM_RTOL``."""
    change = _largest(values[key] - start[key] for key in values) / np.maximum(_largest(values.values()),
                                                                              np.finfo(float).tiny)
    return _error_left(change, np.inf, ratio) > WARM_RTOL


def _error_left(change: np.ndarray, previous, ratio: np.ndarray) -> np.ndarray:
    """The relative error a refinement step that changed the solution by ``change`` may leave (shape
    ``batch``): ``change`` times the refinement's contraction rate, the larger of the one its pivots imply
    (``eps / ratio``: ``started_error``) and the one seen from the step before (``change / previous``)."""
    eps = np.finfo(float).eps
    return change * np.maximum(eps / np.clip(ratio, eps, 1.0), change / np.maximum(previous, np.finfo(float).tiny))


def relative_size(corrections, values) -> float:
    """``max |correction| / max |values|`` over arrays ``corrections`` and ``values`` and the batch (0 for a zero
    solution): a refinement step's change, :attr:`SolveWork.changes`."""
    values = list(values)
    top = float(np.max(_largest(values))) if values else 0.0
    return float(np.max(_largest(corrections))) / top if top > 0.0 else 0.0


def _checked_override(name: str, index, value, current: np.ndarray) -> np.ndarray:
    value = as_float_array(value, f"solve({name}=...) for factor {index}", 1)
    if value.shape[-1] != current.shape[-1]:
        raise ValueError(f"solve({name}=...) for factor {index}: length {value.shape[-1]}, expected {current.shape[-1]}")
    return value
