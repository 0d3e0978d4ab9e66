"""The compiled executor runs the lowered plan like the numpy rule: same numbers, same errors."""
import numpy as np
import pytest
from hypothesis import assume, event, given, settings

import elimination
from elimination import Ordering, SingularProblemError, analyze, factorize
from factorgraph import FactorGraph, LinearEquality, Quadratic, Variable
from tests.random_graphs import build_graph, graph_specs, max_relative_error, well_conditioned

RTOL = 1e-12


def _both(graph, ordering, **solve):
    plan = analyze(graph, ordering)
    numpy_values = factorize(graph, plan).solve(**solve)
    compiled = factorize(graph, plan, backend="numba")
    assert type(compiled).__name__ == "CompiledFactorization"
    return numpy_values, compiled.solve(**solve)


@settings(max_examples=60)
@given(graph_specs(hard_multipliers=True))
def test_random_graphs_equal_the_numpy_rule(spec):
    """Every kind of front (identity-free substitutions, rows passed on or dropped, definite, negative,
    quasi-definite and indefinite pivots) in every order the heuristics pick, batches included; one
    refinement step on both sides (the two sum in different orders: cond * eps apart before it)."""
    for batch in ((), (3,)):
        graph = build_graph(spec, batch=batch)
        assume(well_conditioned(graph))
        for name in elimination.ORDERINGS:
            ordering = elimination.resolve_ordering(graph, name)
            try:
                numpy_values = factorize(graph, analyze(graph, ordering)).solve()
            except SingularProblemError:  # an unregularized multiplier ordered first: refused on both sides
                with pytest.raises(SingularProblemError):
                    factorize(graph, analyze(graph, ordering), backend="numba").solve()
                event("refused on both sides")
                continue
            event("compiled")
            compiled = factorize(graph, analyze(graph, ordering), backend="numba")
            assert type(compiled).__name__ == "CompiledFactorization"
            assert max_relative_error(compiled.solve(), numpy_values) < RTOL
            assert max_relative_error(compiled.solve(), graph.dense_solve()) < 1e-9


def _chain(T: int = 6, batch: tuple = ()):
    """x_{k+1} = x_k + u_k (declared identity blocks), priors on x_0 and every u_k, measurements on x_k."""
    rng = np.random.default_rng(4)
    g = FactorGraph()
    for k in range(T):
        g.add_variable(Variable(("x", k), 2))
        g.add_variable(Variable(("u", k), 2))
        g.add(Quadratic([("u", k)], np.eye(2), rng.normal(size=batch + (2,))))
        g.add(Quadratic([("x", k)], 0.5 * np.eye(2), rng.normal(size=batch + (2,))))
    for k in range(T - 1):
        g.add(LinearEquality([("x", k + 1), ("x", k), ("u", k)], [np.eye(2), -np.eye(2), -np.eye(2)],
                             rng.normal(size=batch + (2,)), units=(1, -1, -1)))
    order = [key for k in reversed(range(1, T)) for key in (("x", k), ("u", k))] + [("u", 0), ("x", 0)]
    return g, Ordering.from_keys(order)


def test_identity_substitutions_and_batched_linear_terms():
    graph, ordering = _chain(batch=(4,))
    program = analyze(graph, ordering).lowered()
    assert not program.unsupported and program.summary()["identity_substitutions"] == 5
    numpy_values, compiled_values = _both(graph, ordering)
    assert max_relative_error(compiled_values, numpy_values) < RTOL
    plan = analyze(graph, ordering)
    fact = factorize(graph, plan, backend="numba")  # matrices unbatched, new linear terms batched (5, 4)
    g = {i: np.random.default_rng(1).normal(size=(5, 4, 2)) for i, f in enumerate(graph.factors) if isinstance(f, Quadratic)}
    assert max_relative_error(fact.solve(g=g), factorize(graph, plan).solve(g=g)) < RTOL


def test_partial_plans_are_named_or_left_to_numpy():
    g = FactorGraph()
    for k in "xy":
        g.add_variable(Variable(k, 2))
        g.add(Quadratic([k], np.eye(2)))
    g.add(LinearEquality(["x", "y"], [np.ones((1, 2)), np.ones((1, 2))], [1.0]))  # a general hard block
    full = analyze(g, Ordering.from_keys(["x", "y"]))
    assert full.lowered().summary()["general_substitutions"] == 1 and not full.lowered().unsupported
    partial = analyze(g, Ordering.from_keys(["x"]), complete=False)
    with pytest.raises(ValueError, match="partial.*backend='numpy' or 'auto'"):
        factorize(g, partial, backend="numba")
    assert type(factorize(g, partial, backend="auto")).__name__ == "Factorization"
    with pytest.raises(ValueError, match="backend must be one of"):
        factorize(g, full, backend="gpu")


def test_dependent_and_contradicting_rows_are_handled_as_by_the_numpy_path():
    """Redundant rows (numerical rank below the plan's): re-planned; contradicting ones: named."""
    for inconsistent, expect in ((False, None), (True, "inconsistent")):
        g = FactorGraph()
        for k in "xy":
            g.add_variable(Variable(k, 1))
        g.add(Quadratic(["x"], [[1.0]], [0.3]))
        g.add(LinearEquality(["x", "y"], [[[0.7]], [[-1.3]]], [0.4]))
        g.add(LinearEquality(["x", "y"], [[[1.75]], [[-3.25]]], [1.0 + inconsistent]))
        plan = analyze(g, Ordering.from_keys(["x", "y"]))
        if expect:
            with pytest.raises(SingularProblemError, match=expect):
                factorize(g, plan, backend="numba").solve()
        else:
            values = factorize(g, plan, backend="auto").solve()
            assert values["x"][0] == pytest.approx(0.3) and values["y"][0] == pytest.approx((0.4 - 0.21) / -1.3)


def test_a_failing_pivot_is_reported_as_by_the_numpy_rule():
    g = FactorGraph()
    g.add_variable(Variable("x", 2))
    g.add(Quadratic(["x"], np.diag([1.0, 0.0])))
    with pytest.raises(SingularProblemError, match="undetermined"):
        factorize(g, analyze(g, Ordering.from_keys(["x"])), backend="numba")
