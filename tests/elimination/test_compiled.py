"""The compiled executor runs the lowered plan like the numpy rule: same numbers, same errors."""
import numpy as np
import pytest
from hypothesis import assume, event, given, settings

import elimination
from elimination import Ordering, SingularProblemError, analyze, factorize
from elimination.program import lower
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
@given(graph_specs(equalities=False))
def test_random_graphs_without_hard_rows_equal_the_numpy_rule(spec):
    """Definite and quasi-definite fronts in every order the heuristics pick, batches included."""
    for batch in ((), (3,)):
        graph = build_graph(spec, batch=batch)
        assume(well_conditioned(graph))
        for name in elimination.ORDERINGS:
            ordering = elimination.resolve_ordering(graph, name)
            if lower(analyze(graph, ordering)).unsupported:  # an indefinite front: numpy only, for now
                event("indefinite front: numpy only")
                continue
            event("compiled")
            numpy_values, compiled_values = _both(graph, ordering, refine=0)
            assert max_relative_error(compiled_values, numpy_values) < RTOL
            assert max_relative_error(compiled_values, graph.dense_solve()) < 1e-9


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


def test_plans_outside_the_instruction_set_are_named_or_left_to_numpy():
    g = FactorGraph()
    for k in "xy":
        g.add_variable(Variable(k, 2))
        g.add(Quadratic([k], np.eye(2)))
    g.add(LinearEquality(["x", "y"], [np.ones((1, 2)), np.ones((1, 2))], [1.0]))  # a general hard block
    plan = analyze(g, Ordering.from_keys(["x", "y"]))
    assert "general hard block" in plan.lowered().unsupported
    with pytest.raises(ValueError, match="general hard block.*backend='numpy' or 'auto'"):
        factorize(g, plan, backend="numba")
    assert type(factorize(g, plan, backend="auto")).__name__ == "Factorization"
    with pytest.raises(ValueError, match="backend must be one of"):
        factorize(g, plan, backend="gpu")


def test_a_failing_pivot_is_reported_as_by_the_numpy_rule():
    g = FactorGraph()
    g.add_variable(Variable("x", 2))
    g.add(Quadratic(["x"], np.diag([1.0, 0.0])))
    with pytest.raises(SingularProblemError, match="undetermined"):
        factorize(g, analyze(g, Ordering.from_keys(["x"])), backend="numba")
