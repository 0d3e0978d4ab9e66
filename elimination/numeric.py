"""The numeric pass: replay a :class:`~elimination.symbolic.Plan` on numbers.

:func:`factorize` walks the plan's steps, gathers each bucket's factors into a
dense local block (positions decided by the plan), and hands it to the
elimination rule -- :func:`~elimination.gaussian.eliminate_gaussian` unless
another is passed, as GTSAM's ``eliminateSequential(ordering, function)``.  It
keeps the conditionals; :meth:`Factorization.solve` then only pushes linear
terms through them, so a new ``g`` or ``b`` costs matrix-vector products.
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from factorgraph import FactorGraph, LeastSquares, LinearEquality, Quadratic, Variable
from factorgraph.factors import as_float_array, concat_last

from .gaussian import eliminate_gaussian, mv
from .symbolic import Plan


def _gather_hessian(step, hessians: dict, scales: dict, batch: tuple):
    n = step.front_size
    H, scale = np.zeros(batch + (n, n)), np.zeros(batch + (n,))
    for i, pos in zip(step.factors, step.positions):
        if i in hessians:
            H[..., pos[:, None], pos[None, :]] += hessians[i]
            scale[..., pos] += scales[i]
    return H, scale


def _gather_rows(step, coefficients: dict, rows: dict, batch: tuple) -> np.ndarray | None:
    if not step.hard_rows:
        return None
    A = np.zeros(batch + (step.hard_rows, step.front_size))
    start = 0
    for i, pos in zip(step.factors, step.positions):
        if i in coefficients:
            A[..., start : start + rows[i], pos] = coefficients[i]
            start += rows[i]
    return A


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
    """

    def __init__(self, plan: Plan, graph: FactorGraph, conditionals: list, hessians: dict, coefficients: dict):
        self.plan = plan
        self.graph = graph
        self.conditionals = conditionals
        self.hessians = hessians
        self.coefficients = coefficients

    def __repr__(self) -> str:
        return f"Factorization({len(self.conditionals)} steps, batch={self.graph.batch_shape})"

    # -- linear terms -----------------------------------------------------------------
    def _linear_terms(self, g: Mapping | None, b: Mapping | None):
        """Tables of the linear terms: ``g`` of quadratic factors, ``b`` of hard
        ones, and the measurements ``b`` of least-squares factors (kept for
        Jacobian-form residuals)."""
        factors = self.graph.factors
        lin_g = {i: f.g for i, f in enumerate(factors) if isinstance(f, Quadratic)}
        lin_b = {i: f.b for i, f in enumerate(factors) if isinstance(f, LinearEquality)}
        measurements = {i: f.b for i, f in enumerate(factors) if isinstance(f, LeastSquares)}
        for i, value in (b or {}).items():
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
        for i, value in (g or {}).items():
            if i not in lin_g:
                raise KeyError(
                    f"solve(g=...): factor {i!r} is not a Quadratic factor of the graph; g overrides apply to "
                    f"Quadratic and LeastSquares factors (indices returned by FactorGraph.add)"
                )
            lin_g[i] = _checked_override("g", i, value, lin_g[i])
            measurements.pop(i, None)  # g given directly: no measurement to take residuals against
        return lin_g, lin_b, measurements

    def _forward(self, lin_g: dict, lin_b: dict):
        """Forward sweep of the linear terms; returns the caches and the terms
        of every working factor (the tables are extended in place)."""
        caches = []
        for step, conditional in zip(self.plan.steps, self.conditionals):
            terms = [lin_g[i] for i in step.factors if i in lin_g]
            batch = np.broadcast_shapes(*(t.shape[:-1] for t in terms))
            g_local = np.zeros(batch + (step.front_size,))
            for i, pos in zip(step.factors, step.positions):
                if i in lin_g:
                    g_local[..., pos] += lin_g[i]
            rhs = [lin_b[i] for i in step.factors if i in lin_b]
            b_local = concat_last(rhs, 1) if rhs else None
            cache, g_sep, b_sep = conditional.forward(g_local, b_local)
            caches.append(cache)
            if step.new_quadratic is not None:
                lin_g[step.new_quadratic] = g_sep
            if step.new_equality is not None:
                lin_b[step.new_equality] = b_sep
        return caches, lin_g, lin_b

    def _sweeps(self, lin_g: dict, lin_b: dict) -> dict:
        """Forward and backward sweeps: the solution for the given linear terms."""
        caches, _, _ = self._forward(dict(lin_g), dict(lin_b))
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
    def solve(self, g: Mapping | None = None, b: Mapping | None = None, refine: int = 1) -> dict:
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

        Returns
        -------
        dict
            Variable key -> value, shape ``batch + (dim,)``, in the graph's key order.

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
        if not self.plan.complete:
            raise ValueError(
                f"this factorization is partial (variables {list(self.plan.remaining)} are not "
                "eliminated); use remaining() to get the graph left over"
            )
        lin_g, lin_b, measurements = self._linear_terms(g, b)
        values = self._sweeps(lin_g, lin_b)
        for _ in range(refine):
            correction = self._sweeps(*self._residual_terms(values, lin_g, lin_b, measurements))
            values = {key: values[key] + correction[key] for key in values}
        return values

    def remaining(self, g: Mapping | None = None, b: Mapping | None = None) -> FactorGraph:
        """The factor graph left over on the variables a partial plan did not eliminate.

        Its factors are the untouched factors of the original graph plus those
        the elimination generated (e.g. the dual Hessian on the multipliers
        after eliminating every primal variable).
        """
        _, lin_g, lin_b = self._forward(*self._linear_terms(g, b)[:2])
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


SCALE_FLOOR = 1e-10  # relative to the largest diagonal magnitude of the graph


def _checked_override(name: str, index, value, current: np.ndarray) -> np.ndarray:
    value = as_float_array(value, f"solve({name}=...) for factor {index}", 1)
    if value.shape[-1] != current.shape[-1]:
        raise ValueError(f"solve({name}=...) for factor {index}: length {value.shape[-1]}, expected {current.shape[-1]}")
    return value


def factorize(graph: FactorGraph, plan: Plan, rule: Callable = eliminate_gaussian) -> Factorization:
    """Numeric elimination of ``graph`` along ``plan``.

    Parameters
    ----------
    graph : FactorGraph
        Must have the structure the plan was analysed for.
    plan : Plan
        From :func:`elimination.analyze`.
    rule : callable ``(step, H, A, scale) -> (conditional, H_sep, A_sep, scale_sep)``
        The per-step elimination rule; the default is
        :func:`elimination.gaussian.eliminate_gaussian` (use
        ``functools.partial(eliminate_gaussian, pivot_rtol=...)`` to change its
        singularity tolerance).

    Returns
    -------
    Factorization

    Raises
    ------
    ValueError
        If the graph's structure differs from the plan's.
    elimination.SingularProblemError
        If a pivot is numerically singular or of the wrong sign.
    """
    if graph.structure() != plan.structure:
        raise ValueError(
            "the graph's structure (variables, scopes, hard rows) differs from the one the plan was "
            "analysed for; call analyze(graph, ordering) again"
        )
    hessians, scales, coefficients, rows = {}, {}, {}, {}
    for i, factor in enumerate(graph.factors):
        if isinstance(factor, LinearEquality):
            coefficients[i], rows[i] = concat_last(factor.A, 2), factor.rows
        else:
            hessians[i] = factor.H
            scales[i] = np.abs(np.diagonal(factor.H, axis1=-2, axis2=-1))
    batch = np.broadcast_shapes(*(m.shape[:-2] for m in (*hessians.values(), *coefficients.values())))
    # A variable with no information at all (a vacuous constraint row) has a zero diagonal built
    # from zero contributions; judging it against the graph's largest magnitude catches it.
    floor = SCALE_FLOOR * max((float(np.max(s, initial=0.0)) for s in scales.values()), default=0.0)
    conditionals = []
    for step in plan.steps:
        H, scale = _gather_hessian(step, hessians, scales, batch)
        scale = np.maximum(scale, floor)
        A = _gather_rows(step, coefficients, rows, batch)
        for i in step.factors:  # consumed: free their memory
            for table in (hessians, scales, coefficients):
                table.pop(i, None)
        conditional, H_sep, A_sep, scale_sep = rule(step, H, A, scale)
        conditionals.append(conditional)
        if step.new_quadratic is not None:
            hessians[step.new_quadratic], scales[step.new_quadratic] = H_sep, scale_sep
        if step.new_equality is not None:
            coefficients[step.new_equality], rows[step.new_equality] = A_sep, step.leftover_rows
    return Factorization(plan, graph, conditionals, hessians, coefficients)
