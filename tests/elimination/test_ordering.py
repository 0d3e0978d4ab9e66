"""Contract tests shared by every ordering policy, and the greedy choices replayed."""
from itertools import combinations

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

import elimination
from elimination import Ordering, OrderingError
from elimination.ordering import degree_score, fill_score

POLICIES = [elimination.natural, elimination.min_degree, elimination.min_fill]


@st.composite
def graphs(draw):
    n = draw(st.integers(1, 12))
    return nx.gnp_random_graph(n, draw(st.floats(0.0, 0.7)), seed=draw(st.integers(0, 2**31 - 1)))


@pytest.mark.parametrize("policy", POLICIES)
@given(graph=graphs())
def test_policy_returns_a_deterministic_permutation(policy, graph):
    ordering = policy(graph)
    assert sorted(ordering.keys()) == sorted(graph.nodes)
    assert policy(graph) == ordering


@pytest.mark.parametrize("policy", POLICIES)
@given(graph=graphs())
def test_policy_respects_the_eligibility_predicate(policy, graph):
    """'Odd keys last' as a predicate, the way 'multipliers last' is."""
    odd = {k for k in graph if k % 2}

    def evens_first(key, state):
        return key not in odd or all(k in odd for k in state.remaining)

    keys = policy(graph, eligible=evens_first).keys()
    assert all(k not in odd for k in keys[: len(graph) - len(odd)])


@pytest.mark.parametrize("policy", POLICIES)
@given(graph=graphs())
def test_policy_keeps_blocks_together(policy, graph):
    nodes = list(graph.nodes)
    blocks = [tuple(nodes[i : i + 2]) for i in range(0, len(nodes) - 1, 3)]
    ordering = policy(graph, blocks=blocks)
    for block in blocks:
        assert block in ordering.blocks
    split = policy(graph, blocks=blocks, split_blocks=True)
    assert all(len(b) == 1 for b in split.blocks)
    flat = split.keys()
    for block in blocks:  # consecutive, in the given order
        assert flat[flat.index(block[0]) : flat.index(block[0]) + len(block)] == block


def _replay(graph, ordering, score):
    """Each pick has the minimum score among the remaining nodes at its turn."""
    remaining = graph.copy()
    for (key,) in ordering.blocks:
        best = min(score(remaining, (k,)) for k in remaining)
        assert score(remaining, (key,)) == best
        nbrs = list(remaining.adj[key])
        remaining.add_edges_from(combinations(nbrs, 2))
        remaining.remove_node(key)


@given(graphs())
def test_min_degree_picks_a_minimum_degree_node_every_time(graph):
    _replay(graph, elimination.min_degree(graph), lambda g, b: g.degree(b[0]))


@given(graphs())
def test_min_fill_picks_a_minimum_fill_node_every_time(graph):
    def fill(g, block):
        nbrs = list(g.adj[block[0]])
        return sum(1 for u, v in combinations(nbrs, 2) if not g.has_edge(u, v))

    _replay(graph, elimination.min_fill(graph), fill)


def test_scores_on_a_small_graph():
    g = nx.Graph([(0, 1), (0, 2), (0, 3), (1, 2)])
    assert degree_score(g, (0,)) == 3 and fill_score(g, (0,)) == 2  # 1-3 and 2-3 missing
    assert degree_score(g, (0, 1)) == 2  # block neighbours: 2 and 3


def test_ties_follow_insertion_order():
    g = nx.Graph()
    g.add_nodes_from(["c", "a", "b"])
    assert elimination.min_degree(g).keys() == ("c", "a", "b")


def test_predicate_that_admits_nothing_is_reported():
    with pytest.raises(OrderingError, match="admits none"):
        elimination.min_degree(nx.path_graph(3), eligible=lambda key, state: False)


def test_overlapping_or_unknown_blocks_are_refused():
    with pytest.raises(OrderingError, match="two blocks"):
        elimination.natural(nx.path_graph(3), blocks=[(0, 1), (1, 2)])
    with pytest.raises(OrderingError, match="not a variable"):
        elimination.natural(nx.path_graph(3), blocks=[(0, 7)])


def test_unknown_ordering_name_lists_the_valid_ones():
    with pytest.raises(OrderingError, match="min_fill"):
        elimination.resolve_ordering(nx.path_graph(2), "colamd")


def test_ordering_blocks_must_be_sequences_of_keys():
    with pytest.raises(TypeError, match="from_keys"):
        Ordering(["a", "b"])
    assert Ordering.from_keys([("lam", 1)]).blocks == ((("lam", 1),),)  # tuple keys stay whole
