"""Symbolic analysis checked against numbers it never sees."""
import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import elimination
from elimination import Ordering, OrderingError, analyze
from elimination.symbolic import HardRows
from factorgraph import FactorGraph, FactorStructure, GraphStructure, LinearEquality, Quadratic, Variable


@st.composite
def sparsity_patterns(draw):
    n = draw(st.integers(1, 14))
    p = draw(st.floats(0.05, 0.6))
    seed = draw(st.integers(0, 2**31 - 1))
    return nx.gnp_random_graph(n, p, seed=seed)


def _orderings(graph, random):
    keys = list(graph.nodes)
    random.shuffle(keys)
    return [Ordering.from_keys(keys), elimination.natural(graph), elimination.min_degree(graph), elimination.min_fill(graph)]


def _cholesky_of_pattern(graph, ordering, seed):
    """Cholesky factor of a random SPD matrix with the graph's pattern, permuted by the ordering."""
    rng = np.random.default_rng(seed)
    order = ordering.keys()
    index = {k: i for i, k in enumerate(order)}
    n = len(order)
    A = np.zeros((n, n))
    for u, v in graph.edges:
        A[index[u], index[v]] = A[index[v], index[u]] = rng.uniform(0.5, 1.0) * rng.choice([-1, 1])
    A += np.diag(np.abs(A).sum(axis=1) + rng.uniform(1.0, 2.0, n))  # diagonally dominant: SPD
    return A, np.linalg.cholesky(A), order


@given(sparsity_patterns(), st.randoms(use_true_random=False), st.integers(0, 2**31 - 1))
def test_fill_edges_and_etree_match_the_cholesky_factor(graph, random, seed):
    structure = GraphStructure.from_networkx(graph)
    for ordering in _orderings(graph, random):
        plan = analyze(structure, ordering)
        A, L, order = _cholesky_of_pattern(graph, ordering, seed)
        nonzero = np.abs(L) > 1e-12 * np.abs(L).max()
        expected_fill = {
            frozenset((order[i], order[j])) for j in range(len(order)) for i in range(j + 1, len(order))
            if nonzero[i, j] and A[i, j] == 0
        }
        assert {frozenset(e) for e in plan.fill_edges} == expected_fill
        for j, step in enumerate(plan.steps):
            below = [i for i in range(j + 1, len(order)) if nonzero[i, j]]
            assert set(step.separator) == {order[i] for i in below}
            parent = plan.parent(step)
            assert (parent.frontal[0] if parent else None) == (order[below[0]] if below else None)


@given(sparsity_patterns())
def test_elimination_tree_is_a_forest_with_one_tree_per_component(graph):
    plan = analyze(GraphStructure.from_networkx(graph), elimination.min_fill(graph))
    tree = plan.tree()
    assert set(tree.nodes) == set(range(len(plan.steps)))
    assert nx.is_branching(tree)
    roots = [n for n in tree if tree.in_degree(n) == 0]
    assert len(roots) == nx.number_connected_components(graph)
    for parent, child in tree.edges:
        assert parent > child  # parents are eliminated later


def test_plan_totals_are_sums_of_steps():
    structure = GraphStructure.from_networkx(nx.grid_2d_graph(3, 3), dim=2)
    plan = analyze(structure, elimination.min_degree(structure))
    assert plan.flops == pytest.approx(sum(s.flops for s in plan.steps))
    assert plan.max_front == max(s.frontal_dim + s.separator_dim for s in plan.steps)
    assert plan.summary()["fill_edges"] == len(plan.fill_edges)
    assert sum(s.frontal_dim for s in plan.steps) == 2 * 9


@st.composite
def hard_structures(draw):
    nvars = draw(st.integers(1, 5))
    dims = {k: draw(st.integers(1, 3)) for k in range(nvars)}
    factors = {}
    for i in range(draw(st.integers(1, 4))):
        keys = tuple(draw(st.lists(st.sampled_from(range(nvars)), min_size=1, max_size=nvars, unique=True)))
        factors[i] = FactorStructure(keys, draw(st.integers(1, 4)))
    group = frozenset(draw(st.lists(st.sampled_from(sorted(factors)), min_size=1, unique=True)))
    columns = frozenset(draw(st.lists(st.sampled_from(range(nvars)), unique=True)))
    return dims, factors, group, columns, draw(st.integers(0, 2**31 - 1))


@given(hard_structures())
def test_generic_rank_of_hard_rows_equals_numeric_rank(case):
    dims, factors, group, columns, seed = case
    rng = np.random.default_rng(seed)
    offsets = np.cumsum([0] + [dims[k] for k in sorted(dims)])
    rows = []
    for i in sorted(group):
        block = np.zeros((factors[i].rows, offsets[-1]))
        for k in factors[i].keys:
            block[:, offsets[k] : offsets[k + 1]] = rng.normal(size=(factors[i].rows, dims[k]))
        rows.append(block)
    A = np.vstack(rows)
    cols = [c for k in sorted(columns) for c in range(offsets[k], offsets[k + 1])]
    numeric = np.linalg.matrix_rank(A[:, cols]) if cols else 0
    assert HardRows(factors, dims).rank(group, columns) == numeric


def _chain_graph():
    g = FactorGraph()
    for k in "abc":
        g.add_variable(Variable(k, 1))
    g.add(Quadratic(["a", "b"], np.eye(2)))
    g.add(Quadratic(["b", "c"], np.eye(2)))
    return g


@pytest.mark.parametrize(
    "ordering, message",
    [
        (Ordering.from_keys(["a", "b"]), "omits"),
        (Ordering.from_keys(["a", "b", "b", "c"]), "twice"),
        (Ordering.from_keys(["a", "b", "c", "z"]), "'z'"),
    ],
)
def test_bad_orderings_are_refused(ordering, message):
    with pytest.raises(OrderingError, match=message):
        analyze(_chain_graph(), ordering)


def test_partial_ordering_is_allowed_when_asked():
    plan = analyze(_chain_graph(), Ordering.from_keys(["a"]), complete=False)
    assert plan.remaining == ("b", "c") and not plan.complete


def test_variable_in_no_factor_is_refused():
    g = _chain_graph()
    g.add_variable(Variable("lonely", 2))
    with pytest.raises(ValueError, match="lonely.*no factor"):
        analyze(g, elimination.natural(g))


def test_front_with_only_hard_rows_and_free_directions_is_refused():
    g = FactorGraph()
    g.add_variable(Variable("x", 2))
    g.add_variable(Variable("y", 1))
    g.add(Quadratic(["y"], np.eye(1)))
    g.add(LinearEquality(["x", "y"], [np.ones((1, 2)), np.ones((1, 1))], [0.0]))
    with pytest.raises(ValueError, match=r"\('x'|'x'.*undetermined"):
        analyze(g, Ordering.from_keys(["x", "y"]))
