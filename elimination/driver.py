"""Outer loops over one plan: a :class:`Driver` says what each iteration factorizes and solves, and when an
element is done; :func:`drive` runs it.

The loops of the field are all of this shape -- plan once, then per
iteration fill the workspaces, factorize where the matrices changed, solve,
update -- and differ only in what moves:

- the method of multipliers (000 Algorithm 3, :class:`AugmentedLagrangian`)
  and the proximal point method (000 Algorithm 6, ``proximal=True``) keep the
  matrices and move linear terms: one factorization, a re-solve per
  iteration (the "reduced two sweeps"); ``mechanics``' forward dynamics runs
  its policies' iterations the same way (``mechanics.outer``);
- Gauss-Newton (:class:`GaussNewton`) and Levenberg-Marquardt re-linearize: the
  matrices move too, a factorization per iteration, in the same memory.

A driver holds its own state (multipliers, the linearization point) and
writes the next problem in place; the loop knows nothing of what the
numbers mean.  Batches run element-wise: an element that is done keeps its
last values while the others go on.

Two seams carry the numbers, and :func:`drive` runs either:

- **arrays** (:mod:`elimination.arrays`): the driver's ``start`` returns a
  factor workspace and a linear workspace, written through the plan's
  :class:`~elimination.layout.Layout`; the compiled executor or the numpy
  reference factorizes them;
- **the graph** (:class:`GraphFactorization`): ``start`` returns a
  :class:`~factorgraph.FactorGraph` and :class:`Overrides` of its linear
  terms; :func:`elimination.factorize` factorizes it by the elimination rule,
  re-planning elements whose hard rows are numerically dependent, and
  refines least-squares factors in their own residual form.

Either way a solve's values come back as arrays ``X (*batch, value_size)``
that the layout names (:meth:`Layout.value`).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
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

    ``start(layout) -> (Fw, Lin)`` gives the first problem: workspaces (their batch is the driver's), or a
    ``FactorGraph`` and its :class:`Overrides` (the graph seam); ``advance(layout, X, Fw, Lin, active) ->
    Advance`` reads the solution ``X (*batch, value_size)``, updates the driver's state of the ``active``
    elements (only theirs) and writes the next problem into ``Fw`` and ``Lin`` in place.

    A driver whose re-solves move linear terms alone may also say ``may_stop(layout, X) -> bool (batch)``:
    whether its stopping test would hold at ``X``, its state unchanged.  With it :func:`drive`'s ``defer``
    refines an iterate only where it may be the answer (the next re-solve corrects the others).
    """

    def start(self, layout: Layout) -> tuple:
        ...

    def advance(self, layout: Layout, X: np.ndarray, Fw, Lin, active: np.ndarray) -> Advance:
        ...


@dataclass
class Overrides:
    """The graph seam's linear terms: factor index -> a new ``g`` (``Quadratic``, ``LeastSquares``) or ``b``
    (``LinearEquality``; a ``LeastSquares``' measurement, refined in its residual form), as
    :meth:`elimination.Factorization.solve`'s ``g=`` and ``b=``; the factors not named keep the graph's."""

    g: dict = field(default_factory=dict)
    b: dict = field(default_factory=dict)


class GraphFactorization:
    """A :class:`~elimination.Factorization` of a ``FactorGraph`` on :func:`drive`'s seam: it solves
    :class:`Overrides` and returns the values as arrays of ``layout`` (:meth:`Layout.value`).

    Parameters
    ----------
    factorization : elimination.Factorization
    layout : Layout
        The plan's layout (only its values' places are read).
    batch : tuple
        The batch the values are broadcast to (the matrices' and the linear terms').
    """

    def __init__(self, factorization, layout: Layout, batch: tuple):
        self.factorization, self.layout, self.batch_shape = factorization, layout, tuple(batch)

    def __repr__(self) -> str:
        return f"GraphFactorization({self.factorization!r})"

    @property
    def last_solve(self):
        return self.factorization.last_solve

    def solve(self, Lin: Overrides, refine: int = 1, start: np.ndarray | None = None, verified: bool = False,
              finish: bool = True) -> np.ndarray:
        """The values ``X (*batch, value_size)`` for the linear terms ``Lin`` (:meth:`elimination.Factorization.solve`'s
        arguments otherwise, ``start`` as values' arrays)."""
        values = self.factorization.solve(g=Lin.g, b=Lin.b, refine=refine, verified=verified, finish=finish,
                                          start=None if start is None else self.layout.values(start))
        return self._array(values)

    def suspect(self) -> np.ndarray:
        return self.factorization.suspect()

    def startable(self) -> bool:
        return self.factorization.startable()

    def unfinished(self, X: np.ndarray, start: np.ndarray) -> np.ndarray:
        return self.factorization.unfinished(self.layout.values(X), self.layout.values(start))

    def _array(self, values: dict) -> np.ndarray:
        batch = np.broadcast_shapes(self.batch_shape, *(v.shape[:-1] for v in values.values()))
        X = np.empty(batch + (self.layout.value_size,))
        for key, (offset, dim) in self.layout.variables.items():
            X[..., offset : offset + dim] = values[key]
        return X


@dataclass
class Driven:
    """The outcome of :func:`drive`.

    Attributes
    ----------
    X : ndarray, shape (*batch, value_size)
        Each element's last solve (:meth:`Layout.values` names its values; where the driver solves for steps,
        as :class:`GaussNewton`, the last step: the driver's state holds the answer).
    iterations : ndarray of int, shape batch
        Solves each element took (a deferred refinement of an iterate is not one more).
    converged : ndarray of bool, shape batch
        Its stopping test held.
    factorizations : int
        Factorizations of the whole batch.
    factorization : ArrayFactorization or GraphFactorization
        The last one: more linear terms solve on it (workspaces with more right-hand sides, or
        :class:`Overrides`).
    solves : list of (str, SolveWork)
        Each solve of the whole batch in order, with its purpose -- ``"first"`` (of a factorization),
        ``"re-solve"`` (of the next iterate), ``"refine"`` (a deferred first iterate refined from itself),
        ``"finish"`` (a re-solve's one more step, or its verification, where the iterate may be the answer) --
        and what it did (:class:`~elimination.SolveWork`).
    """

    X: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray
    factorizations: int
    factorization: object = None
    solves: list = field(default_factory=list)


def drive(plan, driver: Driver, max_iter: int = 50, refine: int = 1, backend: str = "numba", defer: bool = False,
          warn: bool = True) -> Driven:
    """Run ``driver``'s outer loop along ``plan`` (a Plan or its Layout) for at most ``max_iter`` iterations.

    Each iteration solves (with ``refine`` refinement steps), then the driver advances the elements not done;
    the matrices are factorized again only where the driver says they moved, and where they did not the next
    solve refines from the last iterate (the factorization's ``solve(..., start=)``: one sweep per step once the
    changes are small; the suspect pivots were verified by the first solve, ``verified=True``).  Elements still
    not done after ``max_iter`` iterations are reported
    by a :class:`NotConvergedWarning` naming the driver, how many and the largest measure it saw (unless
    ``warn`` is false: the caller reports them).

    Parameters
    ----------
    plan : Plan or Layout
    driver : Driver
    max_iter : int
    refine : int
        Refinement steps per solve.
    backend : str
        The arrays' executor (:func:`~elimination.arrays.factorize_arrays`: ``"numba"``, ``"numpy"``), or on
        the graph seam :func:`elimination.factorize`'s (``"auto"`` too).
    defer : bool
        Refinement deferred to the iterates that may be the answer (the driver's ``may_stop``, or the last
        iteration): where re-solves follow, each corrects what the solve before it left, so the first solve is
        not refined until its iterate may be the answer, and a re-solve's one more step where its change is
        large -- or on a suspect factorization its verification -- waits the same way (the ``"refine"`` and
        ``"finish"`` solves of :attr:`Driven.solves`, beside the iterations).  One solve fewer per call, the same
        answers to round-off.  A factorization whose pivots are suspect, or that cannot start from given values
        (``startable()``: it drops rows, or re-planned elements), refines every solve as without it.  For
        drivers that move linear terms only.

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
    if defer and not callable(getattr(driver, "may_stop", None)):
        raise TypeError(f"drive: defer needs the driver's may_stop(layout, X) (what its stopping test would say); "
                        f"{driver!r} has none")
    Fw, Lin = driver.start(layout)
    fact, factorizations = _factorized(layout, Fw, backend), 1
    solves = []
    solve = lambda purpose, *args, **kwargs: _solved(fact, solves, purpose, Lin, *args, **kwargs)
    started = bool(refine) and fact.startable()  # (re-solves refine from the last iterate)
    deferred = defer and started and not np.any(fact.suspect())  # the first iterate's refinement
    X = solve("first", 0 if deferred else refine)
    batch = X.shape[:-1]
    iterations, active = np.ones(batch, dtype=int), np.ones(batch, dtype=bool)
    if deferred:  # the first iterate, refined from itself where it may be the answer
        X = _where(driver.may_stop(layout, X) | (max_iter == 1), lambda: solve("refine", refine, start=X), X)
    while True:
        step = driver.advance(layout, X, Fw, Lin, active)
        wider = np.broadcast_shapes(batch, np.shape(step.done))
        if wider != batch:  # the driver's state batches the problem beyond its numbers (the graph seam's values)
            X, iterations, active = _widened(fact, wider, X, iterations, active)
            batch = wider
        active = active & ~np.asarray(step.done)
        if not active.any() or np.max(iterations[active]) >= max_iter:
            break
        if step.refactor:
            fact, factorizations = _factorized(layout, Fw, backend), factorizations + 1
            started = bool(refine) and fact.startable()
            new = solve("first", refine)
        else:
            new = solve("re-solve", refine, start=X, verified=True, finish=not (defer and started))
            if defer and started:  # may be the answer, and the change was large: one more step before it is judged
                final = active & (driver.may_stop(layout, new) | (iterations + 1 >= max_iter)) & fact.unfinished(new, X)
                new = _where(final, lambda: solve("finish", 1, start=new, verified=True,
                                                  finish=bool(np.any(fact.suspect()))), new)
        iterations += active
        X = new if active.all() else np.where(active[..., None], new, X)  # (the same values: what may_stop saw)
    if warn and active.any():
        worst = float(np.max(np.where(active, step.measure, 0.0)))
        warnings.warn(f"{driver!r}: {int(active.sum())} of {active.size} elements not done after {max_iter} solves "
                      f"(largest measure {worst:.2e}); raise max_iter, or see the driver's tolerance", NotConvergedWarning,
                      stacklevel=2)
    return Driven(X, iterations, ~active, factorizations, fact, solves)


def _factorized(layout: Layout, Fw, backend: str):
    """The factorization of a driver's matrices: a factor workspace's, or a ``FactorGraph``'s (the graph seam)."""
    if isinstance(Fw, FactorGraph):
        from .numeric import factorize

        plan = layout.program.plan
        return GraphFactorization(factorize(Fw, plan, backend=backend), layout, Fw.batch_shape)
    return factorize_arrays(layout, Fw, backend=backend)


def _widened(fact, batch: tuple, X: np.ndarray, iterations: np.ndarray, active: np.ndarray) -> tuple:
    """``X``, ``iterations`` and ``active`` broadcast to the driver's ``batch``: on the graph seam, where a driver's
    state (multipliers of a warm start) may batch what the graph's numbers do not; workspaces must be the
    driver's batch from its ``start`` (they are solved in place)."""
    if not isinstance(fact, GraphFactorization):
        raise ValueError(f"drive: the driver's stopping test has batch {batch} but its workspaces {X.shape[:-1]}; "
                         f"its start() must return workspaces over its whole batch")
    return np.array(np.broadcast_to(X, batch + X.shape[-1:])), np.array(np.broadcast_to(iterations, batch)), \
        np.array(np.broadcast_to(active, batch))


def _solved(fact, solves: list, purpose: str, Lin, refine: int, **kwargs) -> np.ndarray:
    """``fact.solve(Lin, refine, **kwargs)``, its work recorded in ``solves`` under ``purpose``."""
    X = fact.solve(Lin, refine, **kwargs)
    solves.append((purpose, fact.last_solve))
    return X


def _where(chosen: np.ndarray, solve, X: np.ndarray) -> np.ndarray:
    """``solve()`` where ``chosen`` (shape batch), ``X`` elsewhere; no solve where nothing is chosen."""
    if not np.any(chosen):
        return X
    return np.where(chosen[..., None], solve(), X)


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

    def may_stop(self, layout: Layout, X: np.ndarray) -> np.ndarray:
        return self._worst(layout, X)[0] <= self.tol

    def advance(self, layout: Layout, X: np.ndarray, Fw: np.ndarray, Lin: np.ndarray, active: np.ndarray) -> Advance:
        worst, residuals = self._worst(layout, X)
        for j, (c, i, residual) in enumerate(zip(self.constraints, self.moving, residuals)):
            lam_x = layout.value(X, _multiplier(j)) if self.proximal else None
            new = self.rule.updated(self.lam[j], residual, self.mu, lam_x)
            self.lam[j] = np.where(active[..., None], new, self.lam[j])
            layout.linear(Lin, i)[...] = self._moving_term(c, self.lam[j])
        return Advance(worst <= self.tol, False, worst)

    def _worst(self, layout: Layout, X: np.ndarray) -> tuple:
        """``(worst, residuals)``: the largest ``|K x - k|`` per element (relative to ``max(1, max |k|)``) and
        each constraint's residual at ``X``."""
        worst, residuals = np.zeros(X.shape[:-1]), []
        for c in self.constraints:
            residuals.append(_product(layout, X, c) - c.b)
            scale = np.maximum(1.0, np.max(np.abs(c.b), axis=-1))
            worst = np.maximum(worst, np.max(np.abs(residuals[-1]), axis=-1) / scale)
        return worst, residuals

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
