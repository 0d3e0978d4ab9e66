"""Outer loops on the array seam: the method of multipliers and the proximal point method (000 Algorithms 3
and 6) against the dense KKT solve of the constrained graph; Gauss-Newton against scipy's least_squares."""
import numpy as np
import pytest
from scipy.optimize import least_squares

import elimination
from elimination import analyze, drive
from elimination.driver import Advance, AugmentedLagrangian, GaussNewton, NotConvergedWarning, Overrides
from factorgraph import FactorGraph, LeastSquares, LinearEquality, Quadratic, Variable
from tests.dense_reference import reference_solve, relative_error


def _objective(batch: tuple = (), seed: int = 0) -> FactorGraph:
    """Five 2-d variables: SPD priors and couplings along a chain."""
    rng = np.random.default_rng(seed)
    g = FactorGraph()
    for k in range(5):
        g.add_variable(Variable(k, 2))
        B = rng.normal(size=batch + (2, 2))
        g.add(Quadratic([k], B @ np.swapaxes(B, -1, -2) + np.eye(2), rng.normal(size=batch + (2,))))
    for k in range(4):
        B = rng.normal(size=(2, 4))
        g.add(Quadratic([k, k + 1], B.T @ B, rng.normal(size=4)))
    return g


def _constraints(rng, redundant: bool) -> list:
    """A loop closure between the ends and a constraint on the middle; redundant: the closure twice more (a
    copy and a scaled copy), which a substitution would find dependent."""
    A0, A4, b = rng.normal(size=(2, 2)), rng.normal(size=(2, 2)), rng.normal(size=2)
    out = [LinearEquality([0, 4], [A0, A4], b), LinearEquality([2], [rng.normal(size=(1, 2))], rng.normal(size=1))]
    if redundant:
        out += [LinearEquality([0, 4], [A0, A4], b), LinearEquality([0, 4], [3 * A0, 3 * A4], 3 * b)]
    return out


def _reference(graph: FactorGraph, constraints: list):
    """The dense KKT solve (tests/dense_reference.py) of the graph with the constraints hard."""
    hard = FactorGraph()
    for var in graph.variables:
        hard.add_variable(var)
    for f in [*graph.factors, *constraints]:
        hard.add(f)
    return reference_solve(hard)


@pytest.mark.parametrize("proximal", [False, True])
@pytest.mark.parametrize("redundant", [False, True])
@pytest.mark.parametrize("batch", [(), (3,)])
def test_multiplier_loops_reach_the_constrained_solution(proximal, redundant, batch):
    """The loop's values equal the dense KKT solve of the graph with its constraints hard, redundant ones
    included, for every element; one factorization serves every iteration."""
    graph, constraints = _objective(batch), _constraints(np.random.default_rng(1), redundant)
    loop = AugmentedLagrangian(graph, constraints, mu=1e4, tol=1e-12, proximal=proximal)
    plan = analyze(loop.graph, elimination.resolve_ordering(loop.graph, "min_fill"))
    out = drive(plan, loop, max_iter=100)
    assert out.converged.all() and out.factorizations == 1 and np.all(out.iterations > 1)
    reference = _reference(graph, constraints)
    assert reference.status == "unique"  # (the primal solution: redundant rows are consistent)
    values = {k: plan.layout().value(out.X, k) for k in range(5)}
    assert relative_error(values, reference.values) < 1e-9


def test_a_damped_proximal_rule_converges_to_the_same_solution():
    """A user's rule (half the old multiplier, half the solution's): more iterations, the same answer."""
    graph, constraints = _objective(), _constraints(np.random.default_rng(2), True)
    runs = {}
    for name, rule in (("eq. 42", None), ("damped", elimination.MultiplierRule(0.5, 0.0, 0.5))):
        loop = AugmentedLagrangian(graph, constraints, mu=1e3, tol=1e-12, proximal=True, rule=rule)
        plan = analyze(loop.graph, elimination.resolve_ordering(loop.graph, "min_fill"))
        out = drive(plan, loop, max_iter=200)
        assert out.converged
        runs[name] = ({k: plan.layout().value(out.X, k) for k in range(5)}, int(out.iterations))
    assert runs["damped"][1] > runs["eq. 42"][1]
    assert relative_error(runs["damped"][0], _reference(graph, constraints).values) < 1e-9
    with pytest.raises(ValueError, match="needs proximal=True"):
        AugmentedLagrangian(graph, constraints, rule=elimination.MultiplierRule(0.0, 0.0, 1.0))


def test_a_loop_that_cannot_converge_says_so():
    """Contradicting constraints (x_2 = 1 and x_2 = 2 along the same row): never done; the warning names the
    driver and the residual it keeps."""
    graph = _objective()
    row = np.array([[1.0, 0.5]])
    loop = AugmentedLagrangian(graph, [LinearEquality([2], [row], [1.0]), LinearEquality([2], [row], [2.0])],
                               mu=1e3)
    plan = analyze(loop.graph, elimination.resolve_ordering(loop.graph, "min_fill"))
    with pytest.warns(NotConvergedWarning, match=r"method of multipliers, 2 constraints.*1 of 1 elements not done "
                                                 r"after 20 solves \(largest measure [0-9.]+e-01"):
        out = drive(plan, loop, max_iter=20)
    assert not out.converged and out.iterations == 20


def test_bad_parameters_are_named():
    graph = _objective()
    with pytest.raises(ValueError, match="mu must be a finite number > 0"):
        AugmentedLagrangian(graph, [], mu=0.0)
    with pytest.raises(TypeError, match="LinearEquality"):
        AugmentedLagrangian(graph, [Quadratic([0], np.eye(2))])
    loop = AugmentedLagrangian(graph, _constraints(np.random.default_rng(0), False))
    with pytest.raises(ValueError, match="max_iter must be an int >= 1"):
        drive(analyze(loop.graph, elimination.natural(loop.graph)), loop, max_iter=0)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_gauss_newton_refactors_each_iteration_and_matches_scipy(backend):
    """Trilateration of two points from four anchors each (one term linking them), a batch of three
    problems: the minimizer scipy.optimize.least_squares finds, a factorization per iteration."""
    rng = np.random.default_rng(5)
    anchors = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0], [4.0, 4.0]])
    truth = rng.uniform(1.0, 3.0, size=(3, 2))
    measured = np.linalg.norm(truth[:, None, :] - anchors[None], axis=-1) + 0.05 * rng.normal(size=(3, 4))
    terms = []
    for a_index, a in enumerate(anchors):
        def residual(p, a=a, a_index=a_index):
            diff = p - a
            dist = np.linalg.norm(diff, axis=-1, keepdims=True)
            return dist - measured[:, a_index : a_index + 1], [(diff / dist)[..., None, :]]
        terms.append((("p",), residual))
    terms.append((("p", "q"), lambda p, q: (q - p - 0.5, [-np.broadcast_to(np.eye(2), p.shape[:-1] + (2, 2)),
                                                           np.broadcast_to(np.eye(2), q.shape[:-1] + (2, 2))])))
    gn = GaussNewton({"p": np.full((3, 2), 2.0), "q": np.full((3, 2), 2.5)}, terms, tol=1e-12)
    plan = analyze(gn.graph, elimination.natural(gn.graph))
    out = drive(plan, gn, backend=backend)
    assert out.converged.all() and out.factorizations == int(out.iterations.max())
    for e in range(3):
        def stacked(z):
            p, q = z[:2], z[2:]
            return np.concatenate([np.linalg.norm(p - anchors, axis=-1) - measured[e], q - p - 0.5])
        expected = least_squares(stacked, np.r_[2.0, 2.0, 2.5, 2.5], xtol=1e-15, ftol=1e-15, gtol=1e-15).x
        assert np.allclose(np.r_[gn.x["p"][e], gn.x["q"][e]], expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize("proximal", [False, True])
def test_deferred_refinement_reaches_the_same_solution_with_fewer_steps(proximal):
    """``defer``: the first solve is not refined (its iterate is not the answer), each re-solve takes its one step
    from the last iterate, and only an iterate that may be the answer is finished -- the dense KKT solve's
    answer again, in fewer refinement steps than refining every solve; a driver without ``may_stop`` is refused."""
    graph, constraints = _objective((3,)), _constraints(np.random.default_rng(1), True)
    runs = {}
    for defer in (False, True):
        loop = AugmentedLagrangian(graph, constraints, mu=1e4, tol=1e-12, proximal=proximal)
        plan = analyze(loop.graph, elimination.resolve_ordering(loop.graph, "min_fill"))
        out = drive(plan, loop, max_iter=100, defer=defer)
        assert out.converged.all() and out.factorizations == 1
        assert relative_error({k: plan.layout().value(out.X, k) for k in range(5)},
                              _reference(graph, constraints).values) < 1e-9
        runs[defer] = out
    first, *rest = runs[True].solves
    assert first[0] == "first" and first[1].refinements == 0  # (its iterate is not the answer: no "refine")
    assert [purpose for purpose, _ in rest].count("re-solve") == runs[True].iterations.max() - 1
    assert all(purpose in ("re-solve", "finish") and work.started for purpose, work in rest)
    assert all(work.refinements == 1 for purpose, work in rest if purpose == "re-solve")
    assert [purpose for purpose, _ in runs[False].solves].count("finish") == 0
    steps = {defer: sum(work.refinements for _, work in out.solves) for defer, out in runs.items()}
    assert steps[True] < steps[False]
    gn = GaussNewton({"p": np.zeros(2)}, [(("p",), lambda p: (p - 1.0, [np.eye(2)]))])
    with pytest.raises(TypeError, match="defer needs the driver's may_stop"):
        drive(analyze(gn.graph, elimination.natural(gn.graph)), gn, defer=True)


class _PenaltyOnTheGraph:
    """The method of multipliers on the graph seam (a test's own driver): the constraint as a ``LeastSquares``
    penalty whose measurement ``b = k - lambda / mu`` moves (an :class:`~elimination.driver.Overrides` ``b``)."""

    def __init__(self, graph: FactorGraph, constraint: LinearEquality, mu: float, tol: float):
        self.graph = FactorGraph()
        for var in graph.variables:
            self.graph.add_variable(var)
        for f in graph.factors:
            self.graph.add(f)
        self.constraint, self.mu, self.tol = constraint, mu, tol
        self.index = self.graph.add(LeastSquares(constraint.keys, constraint.A, constraint.b, weight=mu))
        self.lam = np.zeros(constraint.rows)

    def start(self, layout):
        return self.graph, Overrides()

    def _residual(self, layout, X):
        c = self.constraint
        return sum((a @ layout.value(X, k)[..., None])[..., 0] for k, a in zip(c.keys, c.A)) - c.b

    def may_stop(self, layout, X):
        return np.max(np.abs(self._residual(layout, X)), axis=-1) <= self.tol

    def advance(self, layout, X, graph, Lin, active):
        residual = self._residual(layout, X)
        self.lam = np.where(active[..., None], self.lam + self.mu * residual, self.lam)
        Lin.b[self.index] = self.constraint.b - self.lam / self.mu
        worst = np.max(np.abs(residual), axis=-1)
        return Advance(worst <= self.tol, False, worst)


def test_the_graph_seam_re_plans_dependent_hard_rows_the_arrays_refuse():
    """Hard rows stated twice (numerically dependent, consistent) under an outer loop that moves a
    least-squares penalty's measurement: on the array seam the factorization refuses them and says where they
    are re-planned; on the graph seam (the driver's ``start`` returns the ``FactorGraph`` and its overrides) the
    same loop re-plans them -- every solve from scratch then, ``defer`` or not -- and reaches the dense KKT
    solve of the graph with every constraint hard; with the rows stated once the loop starts each re-solve
    from the last iterate and defers its refinement."""
    graph = _objective()
    row = np.array([[1.0, 0.5]])
    for _ in range(2):
        graph.add(LinearEquality([1], [row], [0.3]))
    closure = _constraints(np.random.default_rng(4), False)[0]
    loop = _PenaltyOnTheGraph(graph, closure, mu=1e4, tol=1e-12)
    plan = analyze(loop.graph, elimination.resolve_ordering(loop.graph, "min_fill"))
    with pytest.raises(elimination.SingularProblemError, match="re-plans dependent rows"):
        elimination.factorize_arrays(plan.layout(), plan.layout().fill(loop.graph)[0])
    out = drive(plan, loop, max_iter=100, backend="numpy", defer=True)
    assert out.converged and out.factorization.factorization.fallbacks  # (re-planned)
    assert not any(work.started for _, work in out.solves)
    reference = _reference(graph, [closure])
    assert reference.status == "unique"
    assert relative_error({k: plan.layout().value(out.X, k) for k in range(5)}, reference.values) < 1e-9
    once = _objective()
    once.add(LinearEquality([1], [row], [0.3]))
    loop = _PenaltyOnTheGraph(once, closure, mu=1e4, tol=1e-12)
    plan = analyze(loop.graph, elimination.resolve_ordering(loop.graph, "min_fill"))
    out = drive(plan, loop, max_iter=100, defer=True)
    assert out.converged and out.solves[0][1].refinements == 0
    assert all(work.started for _, work in out.solves[1:])
    assert relative_error({k: plan.layout().value(out.X, k) for k in range(5)}, reference.values) < 1e-9


def test_a_driver_batched_beyond_its_workspaces_is_refused_on_the_array_seam():
    """A stopping test of another batch than the workspaces the driver's ``start`` returned: solved in place,
    they cannot grow, so the loop says what is wrong instead of broadcasting into a shape error."""
    graph, constraints = _objective(), _constraints(np.random.default_rng(1), False)

    class Wider(AugmentedLagrangian):
        def advance(self, layout, X, Fw, Lin, active):
            out = super().advance(layout, X, Fw, Lin, active)
            return Advance(np.broadcast_to(out.done, (2,)), out.refactor, np.broadcast_to(out.measure, (2,)))

    loop = Wider(graph, constraints, mu=1e4)
    plan = analyze(loop.graph, elimination.natural(loop.graph))
    with pytest.raises(ValueError, match=r"stopping test has batch \(2,\) but its workspaces \(\).*start\(\) must return"):
        drive(plan, loop)
