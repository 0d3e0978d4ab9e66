"""Every ordering policy solves random graphs like the dense KKT solve."""
from hypothesis import assume, given
from hypothesis import strategies as st

import elimination
from elimination import Ordering
from tests.random_graphs import build_graph, graph_specs, max_relative_error, well_conditioned

RTOL = 1e-9


def _solve(graph, ordering):
    return elimination.factorize(graph, elimination.analyze(graph, ordering)).solve()


@given(graph_specs())
def test_heuristic_orderings_equal_dense_solve(spec):
    graph = build_graph(spec)
    assume(well_conditioned(graph))
    reference = graph.dense_solve()
    solutions = [elimination.solve(graph, name) for name in elimination.ORDERINGS]
    for solution in solutions:
        assert max_relative_error(solution, reference) < RTOL
    for solution in solutions[1:]:  # orderings agree with each other
        assert max_relative_error(solution, solutions[0]) < RTOL


@given(graph_specs(), st.randoms(use_true_random=False))
def test_any_permutation_and_block_grouping_equals_dense_solve(spec, random):
    """With regularized multipliers the KKT matrix is quasi-definite: every order works."""
    graph = build_graph(spec)
    assume(well_conditioned(graph))
    keys = list(graph.keys)
    random.shuffle(keys)
    blocks, i = [], 0
    while i < len(keys):  # random consecutive groups of 1-3 keys, mixed roles allowed
        size = random.randint(1, 3)
        blocks.append(tuple(keys[i : i + size]))
        i += size
    assert max_relative_error(_solve(graph, Ordering(blocks)), graph.dense_solve()) < RTOL


@given(graph_specs(hard_multipliers=True))
def test_unregularized_multipliers_last_equals_dense_solve(spec):
    """The PV order (all multipliers last) handles multipliers without a prior."""
    graph = build_graph(spec)
    assume(well_conditioned(graph))

    def multipliers_last(key, state):
        primal_left = any(state.remaining.nodes[k]["role"] == "min" for k in state.remaining)
        return state.remaining.nodes[key]["role"] == "min" or not primal_left

    for heuristic in (elimination.min_degree, elimination.min_fill):
        ordering = heuristic(graph, eligible=multipliers_last)
        assert max_relative_error(_solve(graph, ordering), graph.dense_solve()) < RTOL
