"""Outer loops over one plan: a :class:`Driver` says what each iteration factorizes and solves, and when an
element is done; :func:`drive` runs it on the array seam (:mod:`elimination.arrays`).

The loops of the field are all of this shape -- plan once, then per
iteration fill the workspaces, factorize where the matrices changed, solve,
update -- and differ only in what moves:

- the method of multipliers (000 Algorithm 3, :class:`AugmentedLagrangian`)
  and the proximal point method (000 Algorithm 6, ``proximal=True``) keep the
  matrices and move linear terms: one factorization, a re-solve per
  iteration (the "reduced two sweeps");
- Gauss-Newton (:class:`GaussNewton`) and Levenberg-Marquardt re-linearize: the
  matrices move too, a factorization per iteration, in the same memory.

A driver holds its own state (multipliers, the linearization point) and
writes the next problem into the workspaces in place, through the plan's
:class:`~elimination.layout.Layout`; the loop knows nothing of what the
numbers mean.  Batches run element-wise: an element that is done keeps its
last values while the others go on.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from factorgraph import FactorGraph, LinearEquality, Quadratic, Variable
from factorgraph.factors import concat_last

from .arrays import factorize_arrays
from .layout import Layout


class NotConvergedWarning(RuntimeWarning):
    """:func:`drive` stopped at ``max_iter`` with elements that are not done (:attr:`Driven.converged`)."""


@dataclass
class Advance:
    """What a driver says after a solve (:meth:`Driver.advance`).

    Attributes
    ----------
    done : ndarray of bool, shape batch
        Elements whose stopping test holds (their values are the answer).
    refactor : bool
        The driver wrote new matrices into the factor workspace: factorize again before the next solve.
    measure : ndarray, shape batch
        What the stopping test compares with its tolerance (a constraint residual, a step), for the message
        of an element that does not converge.
    """

    done: np.ndarray
    refactor: bool
    measure: np.ndarray


class Driver(Protocol):
    """An outer loop's moves (module docstring).

    ``start(layout) -> (Fw, Lin)`` gives the first problem's workspaces (their batch is the driver's);
    ``advance(layout, X, Fw, Lin, active) -> Advance`` reads the solution ``X (*batch, value_size)``,
    updates the driver's state of the ``active`` elements (only theirs) and writes the next problem into
    ``Fw`` and ``Lin`` in place.
    """

    def start(self, layout: Layout) -> tuple:
        ...

    def advance(self, layout: Layout, X: np.ndarray, Fw: np.ndarray, Lin: np.ndarray, active: np.ndarray) -> Advance:
        ...


@dataclass
class Driven:
    """The outcome of :func:`drive`.

    Attributes
    ----------
    X : ndarray, shape (*batch, value_size)
        Each element's last solve (:meth:`Layout.values` names its values; where the driver solves for steps,
        as :class:`GaussNewton`, the last step: the driver's state holds the answer).
    iterations : ndarray of int, shape batch
        Solves each element took.
    converged : ndarray of bool, shape batch
        Its stopping test held.
    factorizations : int
        Factorizations of the whole batch.
    """

    X: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray
    factorizations: int


def drive(plan, driver: Driver, max_iter: int = 50, refine: int = 1, backend: str = "numba") -> Driven:
    """Run ``driver``'s outer loop along ``plan`` (a Plan or its Layout) for at most ``max_iter`` solves.

    Each iteration solves (with ``refine`` refinement steps), then the driver advances the elements not done;
    the workspaces are factorized again only where the driver says its matrices moved, and where they did not
    the next solve refines from the last iterate (:meth:`ArrayFactorization.solve`'s ``start``).  Elements still not
    done after ``max_iter`` solves are reported by a :class:`NotConvergedWarning` naming the driver, how many
    and the largest measure it saw.  ``backend``: :func:`~elimination.arrays.factorize_arrays`'s.

    Examples
    --------
    The nearest point to ``(1, 2)`` on the line ``x + y = 1`` (000 Algorithm 3 on a two-variable graph):

    >>> import numpy as np
    >>> from factorgraph import FactorGraph, LinearEquality, Quadratic, Variable
    >>> import elimination
    >>> g = FactorGraph()
    >>> for k in "xy": g.add_variable(Variable(k, 1))
    >>> _ = g.add(Quadratic(["x"], [[1.0]], [1.0])); _ = g.add(Quadratic(["y"], [[1.0]], [2.0]))
    >>> alm = elimination.AugmentedLagrangian(g, [LinearEquality(["x", "y"], [[[1.0]], [[1.0]]], [1.0])], mu=1e3)
    >>> plan = elimination.analyze(alm.graph, elimination.natural(alm.graph))
    >>> out = elimination.drive(plan, alm)
    >>> np.round([plan.layout().value(out.X, k)[0] for k in "xy"], 10), bool(out.converged)
    (array([0., 1.]), True)
    """
    layout = plan if isinstance(plan, Layout) else plan.layout()
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"drive: max_iter must be an int >= 1, got {max_iter!r}")
    Fw, Lin = driver.start(layout)
    batch = Fw.shape[:-1]
    fact, factorizations = factorize_arrays(layout, Fw, backend=backend), 1
    active, iterations = np.ones(batch, dtype=bool), np.zeros(batch, dtype=int)
    X, start = None, None
    for _ in range(max_iter):
        new = fact.solve(Lin, refine, start=start)
        X = new if X is None else np.where(active[..., None], new, X)
        iterations += active
        step = driver.advance(layout, X, Fw, Lin, active)
        active = active & ~np.broadcast_to(step.done, batch)
        if not active.any():
            break
        start = None if step.refactor else X  # the same matrices: refine from the last iterate (one sweep)
        if step.refactor:
            fact, factorizations = factorize_arrays(layout, Fw, backend=backend), factorizations + 1
    if active.any():
        worst = float(np.max(np.where(active, step.measure, 0.0)))
        warnings.warn(f"{driver!r}: {int(active.sum())} of {active.size} elements not done after {max_iter} solves "
                      f"(largest measure {worst:.2e}); raise max_iter, or see the driver's tolerance", NotConvergedWarning,
                      stacklevel=2)
    return Driven(X, iterations, ~active, factorizations)


@dataclass(frozen=True)
class MultiplierRule:
    """How a multiplier moves after a solve (000 eqs. 33, 42): ``lambda' = keep lambda + push mu (K x - k) + take
    lambda_x``, ``lambda_x`` the solution's multiplier; eq. 33 (method of multipliers) is ``1, 1, 0``, eq. 42
    (proximal point) ``0, 0, 1``.  One source for every loop that updates multipliers (:class:`AugmentedLagrangian`,
    ``mechanics.policies``)."""

    keep: float
    push: float
    take: float

    def updated(self, lam: np.ndarray, residual: np.ndarray, mu: float, lam_x=None) -> np.ndarray:
        """``lambda'`` (the terms whose coefficient is 0 left out: no ``0 * inf``, and no rounding they would add)."""
        terms = []
        if self.keep:
            terms.append(self.keep * lam)
        if self.push:
            terms.append(self.push * mu * residual)
        if self.take:
            terms.append(self.take * lam_x)
        return sum(terms[1:], terms[0]) if terms else np.zeros_like(residual)


METHOD_OF_MULTIPLIERS, PROXIMAL_POINT = MultiplierRule(1.0, 1.0, 0.0), MultiplierRule(0.0, 0.0, 1.0)


class AugmentedLagrangian:
    """000 Algorithm 3 (method of multipliers, eq. 25 / 33) or Algorithm 6 (proximal point, eq. 42) for a
    graph and equality constraints ``K x = k`` that may be redundant.

    The method of multipliers adds each constraint as the penalty ``mu/2 ||K x - k + lambda/mu||^2`` (a
    quadratic factor on its scope whose ``g = K'(mu k - lambda)`` moves) and updates ``lambda += mu (K x -
    k)``; the proximal point method adds a multiplier variable (role ``max``) with the prior
    ``-1/(2 mu) ||lambda - lambda_k||^2`` (its ``g = k - lambda_k / mu`` moves) and takes ``lambda_k`` from
    the solution.  Either way the matrices stay: one factorization, a re-solve per iteration.  An element is
    done when ``max |K x - k| <= tol`` (relative to ``max(1, max |k|)``).

    Parameters
    ----------
    graph : FactorGraph
        The objective (soft factors; hard ones stay hard).
    constraints : sequence of LinearEquality
        The constraints the loop enforces (their ``b`` is ``k``; batched ``b`` or ``A`` batch the problem).
    mu : float
        Penalty stiffness (> 0).
    tol : float
        Constraint residual at which an element is done.
    proximal : bool
        Algorithm 6 instead of Algorithm 3.
    rule : MultiplierRule, optional
        Another update (default: eq. 33, or eq. 42 when ``proximal``), e.g. a damped proximal step
        ``MultiplierRule(0.5, 0.0, 0.5)``.

    Attributes
    ----------
    graph : FactorGraph
        The graph the loop factorizes (``analyze`` it for :func:`drive`).
    lam : list of ndarray
        Each constraint's multiplier (Pinocchio's sign: the constraint force ``K' lambda`` opposes the
        violation), updated by :meth:`advance`.
    """

    def __init__(self, graph: FactorGraph, constraints: Sequence[LinearEquality], mu: float = 1e6,
                 tol: float = 1e-10, proximal: bool = False, rule: MultiplierRule | None = None):
        if not (isinstance(mu, (int, float)) and np.isfinite(mu) and mu > 0):
            raise ValueError(f"AugmentedLagrangian: mu must be a finite number > 0, got {mu!r}")
        if any(not isinstance(c, LinearEquality) for c in constraints):
            raise TypeError("AugmentedLagrangian: constraints must be LinearEquality factors (K x = k)")
        self.mu, self.tol, self.proximal = float(mu), float(tol), bool(proximal)
        self.rule = rule if rule is not None else PROXIMAL_POINT if proximal else METHOD_OF_MULTIPLIERS
        if self.rule.take and not proximal:
            raise ValueError("AugmentedLagrangian: a rule that takes the solution's multiplier needs proximal=True "
                             "(the method of multipliers has no multiplier variable)")
        self.constraints = tuple(constraints)
        self.graph, self.moving = _penalized(graph, self.constraints, self.mu, self.proximal)
        self.lam = [np.zeros(np.broadcast_shapes(c.b.shape, *(a.shape[:-1] for a in c.A))) for c in self.constraints]

    def __repr__(self) -> str:
        name = "proximal point" if self.proximal else "method of multipliers"
        return f"AugmentedLagrangian({name}, {len(self.constraints)} constraints, mu={self.mu:g})"

    def start(self, layout: Layout) -> tuple:
        Fw, Lin = layout.fill(self.graph)
        batch = np.broadcast_shapes(Fw.shape[:-1], Lin.shape[:-1])
        Fw = np.array(np.broadcast_to(Fw, batch + Fw.shape[-1:]))  # (writable copies: the loop writes them)
        Lin = np.array(np.broadcast_to(Lin, batch + Lin.shape[-1:]))
        self.lam = [np.broadcast_to(l, batch + l.shape[-1:]).copy() for l in self.lam]
        for c, i, lam in zip(self.constraints, self.moving, self.lam):
            layout.linear(Lin, i)[...] = self._moving_term(c, lam)
        return Fw, Lin

    def advance(self, layout: Layout, X: np.ndarray, Fw: np.ndarray, Lin: np.ndarray, active: np.ndarray) -> Advance:
        worst = np.zeros(X.shape[:-1])
        for j, (c, i) in enumerate(zip(self.constraints, self.moving)):
            residual = _product(layout, X, c) - c.b
            lam_x = layout.value(X, _multiplier(j)) if self.proximal else None
            new = self.rule.updated(self.lam[j], residual, self.mu, lam_x)
            self.lam[j] = np.where(active[..., None], new, self.lam[j])
            layout.linear(Lin, i)[...] = self._moving_term(c, self.lam[j])
            scale = np.maximum(1.0, np.max(np.abs(c.b), axis=-1))
            worst = np.maximum(worst, np.max(np.abs(residual), axis=-1) / scale)
        return Advance(worst <= self.tol, False, worst)

    def _moving_term(self, c: LinearEquality, lam: np.ndarray) -> np.ndarray:
        """The moving factor's linear term: ``k - lambda_k / mu`` (proximal), else ``K'(mu k - lambda)``."""
        if self.proximal:
            return np.broadcast_to(c.b - lam / self.mu, lam.shape)
        K = concat_last(c.A, 2)
        return (np.swapaxes(K, -1, -2) @ (self.mu * c.b - lam)[..., None])[..., 0]


def _multiplier(j: int) -> tuple:
    return ("AugmentedLagrangian multiplier", j)


def _penalized(graph: FactorGraph, constraints: tuple, mu: float, proximal: bool) -> tuple:
    """``(graph', moving)``: ``graph`` and, per constraint, its penalty factor (or its multiplier and the
    multiplier's factor); ``moving``: the index of the factor whose linear term the loop moves."""
    out = FactorGraph()
    for var in graph.variables:
        out.add_variable(var)
    for f in graph.factors:
        out.add(f)
    moving = []
    for j, c in enumerate(constraints):
        K = concat_last(c.A, 2)
        if proximal:  # lambda' (K x) on the scope and the multiplier, and the proximal prior, whose g moves
            out.add_variable(Variable(_multiplier(j), c.rows, role="max"))
            n = K.shape[-1]
            H = np.zeros(K.shape[:-2] + (n + c.rows, n + c.rows))
            H[..., n:, :n], H[..., :n, n:] = K, np.swapaxes(K, -1, -2)
            out.add(Quadratic([*c.keys, _multiplier(j)], H, np.zeros(n + c.rows)))
            moving.append(out.add(Quadratic([_multiplier(j)], -np.eye(c.rows) / mu, np.zeros(c.rows))))
        else:
            moving.append(out.add(Quadratic(list(c.keys), mu * np.swapaxes(K, -1, -2) @ K, np.zeros(K.shape[-1]))))
    return out, tuple(moving)


def _product(layout: Layout, X: np.ndarray, c: LinearEquality) -> np.ndarray:
    """``K x`` of constraint ``c`` at the values ``X``."""
    return sum((a @ layout.value(X, key)[..., None])[..., 0] for key, a in zip(c.keys, c.A))


class GaussNewton:
    """Gauss-Newton on vector variables: minimize ``1/2 sum_i ||r_i(x)||^2`` from ``x0``.

    Each residual term is ``(keys, function)`` with ``function(*values) -> (r, jacobians)``: its residual
    ``(..., m)`` and one Jacobian ``(..., m, dim)`` per key, at the values of its variables.  Each iteration
    writes ``H = J'J``, ``g = -J'r`` per term into the workspaces and steps ``x += dx``; an element is done
    when ``max |dx| <= tol * max(1, max |x|)``.  (Manifold variables and Levenberg-Marquardt damping: the
    estimation issue's.)

    Parameters
    ----------
    variables : dict
        Key -> initial value ``(..., dim)`` (a leading batch shape batches the problem).
    terms : sequence of (keys, function)
    tol : float

    Attributes
    ----------
    graph : FactorGraph
        The structure to ``analyze`` (one quadratic factor per term, in order).
    x : dict
        The current values, updated by :meth:`advance`.
    """

    def __init__(self, variables: dict, terms: Sequence, tol: float = 1e-10):
        self.x = {key: np.asarray(value, dtype=float) for key, value in variables.items()}
        self.terms = [(tuple(keys), function) for keys, function in terms]
        self.tol = float(tol)
        self.batch = np.broadcast_shapes(*(v.shape[:-1] for v in self.x.values()))
        self.graph = FactorGraph()
        for key, value in self.x.items():
            self.graph.add_variable(Variable(key, value.shape[-1]))
        for keys, _ in self.terms:
            n = sum(self.x[k].shape[-1] for k in keys)
            self.graph.add(Quadratic(list(keys), np.eye(n)))

    def __repr__(self) -> str:
        return f"GaussNewton({len(self.x)} variables, {len(self.terms)} terms)"

    def start(self, layout: Layout) -> tuple:
        Fw, Lin = layout.factor_workspace(self.batch), layout.linear_workspace(self.batch)
        self._linearized(layout, Fw, Lin)
        return Fw, Lin

    def advance(self, layout: Layout, X: np.ndarray, Fw: np.ndarray, Lin: np.ndarray, active: np.ndarray) -> Advance:
        top, step = np.zeros(self.batch), np.zeros(self.batch)
        for key in self.x:
            dx = np.where(active[..., None], layout.value(X, key), 0.0)
            self.x[key] = self.x[key] + dx
            step = np.maximum(step, np.max(np.abs(dx), axis=-1))
            top = np.maximum(top, np.max(np.abs(self.x[key]), axis=-1))
        self._linearized(layout, Fw, Lin)
        measure = step / np.maximum(1.0, top)
        return Advance(measure <= self.tol, True, measure)

    def _linearized(self, layout: Layout, Fw: np.ndarray, Lin: np.ndarray) -> None:
        """Each term's ``J'J`` and ``-J'r`` at the current values, into its factor's places."""
        for i, (keys, function) in enumerate(self.terms):
            r, jacobians = function(*(self.x[k] for k in keys))
            J = concat_last([np.asarray(j, dtype=float) for j in jacobians], 2)
            JT = np.swapaxes(J, -1, -2)
            layout.matrix(Fw, i)[...] = JT @ J
            layout.linear(Lin, i)[...] = -(JT @ np.asarray(r)[..., None])[..., 0]
