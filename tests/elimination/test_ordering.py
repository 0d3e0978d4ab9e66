"""Contract tests shared by every ordering policy, and the greedy choices replayed."""
from itertools import combinations

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

import elimination
from elimination import Ordering, OrderingError
from elimination.ordering import Precedence, degree_score, fill_score

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


# -- the re-sorting game of elimination/ordering.py before issue 10, kept as the oracle ---------------
# Copied verbatim (names prefixed ``_ref``): every step it re-sorts all candidates by (score, rank) and
# asks the predicate down that list.  The incremental game must return exactly its orders.
def _ref_interaction_graph_of(graph):
    if isinstance(graph, nx.Graph):
        result = graph.copy()
        for position, node in enumerate(result.nodes):
            result.nodes[node].setdefault("position", position)
            result.nodes[node].setdefault("dim", 1)
            result.nodes[node].setdefault("role", "min")
        return result
    return graph.interaction_graph()


def _ref_neighbourhood(graph, block):
    inside = set(block)
    return {n for key in block for n in graph.adj[key] if n not in inside}


def _ref_degree_score(graph, block):
    return len(_ref_neighbourhood(graph, block))


def _ref_fill_score(graph, block):
    nbrs = list(_ref_neighbourhood(graph, block))
    return sum(1 for u, v in combinations(nbrs, 2) if not graph.has_edge(u, v))


def _ref_zero_score(graph, block):
    return 0


def _ref_groups(graph, blocks):
    position = nx.get_node_attributes(graph, "position")
    grouped, groups = {}, []
    for block in blocks or ():
        block = tuple(block)
        for key in block:
            if key not in graph:
                raise OrderingError(f"block {block!r} names {key!r}, which is not a variable of the graph")
            if key in grouped:
                raise OrderingError(f"variable {key!r} appears in two blocks: {grouped[key]!r} and {block!r}")
            grouped[key] = block
        groups.append(block)
    groups += [(key,) for key in graph.nodes if key not in grouped]
    return sorted(groups, key=lambda g: min(position[k] for k in g))


def reference_greedy(graph, score, eligible=None, blocks=None, split_blocks=False):
    """The old ``greedy``: sort every candidate by (score, rank) at every step."""
    remaining = _ref_interaction_graph_of(graph)
    groups = _ref_groups(remaining, blocks)
    rank = {g: i for i, g in enumerate(groups)}
    group_of = {key: g for g in groups for key in g}
    state = elimination.EliminationState(remaining)
    scores = {g: score(remaining, g) for g in groups}
    out = []
    while scores:
        for group in sorted(scores, key=lambda g: (scores[g], rank[g])):
            if eligible is None or all(eligible(key, state) for key in group):
                break
        else:
            stuck = [k for g in sorted(scores, key=rank.get) for k in g]
            raise OrderingError(f"the eligibility predicate admits none of the remaining variables {stuck}")
        nbrs = _ref_neighbourhood(remaining, group)
        remaining.add_edges_from(combinations(nbrs, 2))
        remaining.remove_nodes_from(group)
        state.eliminated.extend(group)
        del scores[group]
        touched = set(nbrs).union(*(remaining.adj[n] for n in nbrs))
        for g in {group_of[k] for k in touched}:
            scores[g] = score(remaining, g)
        out.extend((key,) for key in group) if split_blocks else out.append(group)
    return Ordering(out)


# -- the incremental game against the oracle ---------------------------------------------------------
@st.composite
def games(draw):
    """A random graph, grouping, eligibility rule (as a plain predicate and as a Precedence) and flags."""
    graph = draw(graphs())
    nodes = list(graph.nodes)
    if draw(st.booleans()):  # insertion order other than 0..n-1
        graph = nx.relabel_nodes(graph, dict(zip(nodes, draw(st.permutations(nodes)))))
        graph = nx.Graph(graph.subgraph(draw(st.permutations(list(graph.nodes)))))
        nodes = list(graph.nodes)
    # a random grouping: consecutive runs of a random permutation
    shuffled, blocks, i = draw(st.permutations(nodes)), [], 0
    while i < len(shuffled):
        size = draw(st.integers(1, 3))
        if size > 1 or draw(st.booleans()):
            blocks.append(tuple(shuffled[i : i + size]))
        i += size
    # a random precedence: gates of random keys, each key waiting on a few gates
    gates = {g: draw(st.lists(st.sampled_from(nodes), max_size=3)) for g in range(draw(st.integers(0, 4)))}
    waits = {k: draw(st.lists(st.sampled_from(sorted(gates)), max_size=2)) if gates else [] for k in nodes}
    return graph, blocks, gates, waits, draw(st.booleans())


def _outcome(policy, *args, **kwargs):
    try:
        return policy(*args, **kwargs)
    except OrderingError as error:
        return str(error)


REFERENCE_SCORES = {elimination.natural: _ref_zero_score, elimination.min_degree: _ref_degree_score,
                    elimination.min_fill: _ref_fill_score}


@pytest.mark.parametrize("policy", POLICIES)
@given(game=games())
def test_incremental_game_returns_the_orders_of_the_resorting_game(policy, game):
    """Same orders (and the same refusals) as the old game, with no rule, a Precedence, or plain predicates."""
    graph, blocks, gates, waits, split = game
    ref = REFERENCE_SCORES[policy]

    def waits_done(key, state):  # the Precedence written as the plain predicate it replaces
        return all(k not in state.remaining for g in waits[key] for k in gates[g])

    threshold = len(graph) // 3

    def low_degree_or_late(key, state):  # reads the remaining graph, fill included
        return state.remaining.degree(key) <= threshold or len(state.remaining) <= threshold + 1

    cases = [(None, None), (Precedence(gates, waits), waits_done), (waits_done, waits_done),
             (low_degree_or_late, low_degree_or_late)]
    for ours, theirs in cases:
        expected = _outcome(reference_greedy, graph, ref, theirs, blocks, split)
        assert _outcome(policy, graph, eligible=ours, blocks=blocks, split_blocks=split) == expected


@given(game=games())
def test_any_score_function_is_refreshed_as_before(game):
    """A score the game does not know (here one that also looks beyond the neighbourhood) is
    refreshed exactly where the old game refreshed it."""
    graph, blocks, _, _, split = game

    def odd_score(g, block):
        return (len(_ref_neighbourhood(g, block)) % 3, -len(g))

    expected = _outcome(reference_greedy, graph, odd_score, None, blocks, split)
    assert _outcome(elimination.greedy, graph, odd_score, None, blocks, split) == expected


def test_precedence_on_a_factor_graph_places_multipliers_last():
    from factorgraph import GraphStructure

    structure = GraphStructure.from_networkx(nx.star_graph(4))
    last = Precedence({"primal": [1, 2, 3, 4]}, {0: ["primal"]})
    assert elimination.min_fill(structure, eligible=last).keys()[-1] == 0
    assert last(0, elimination.EliminationState(structure.interaction_graph())) is False


def test_precedence_names_unknown_gates():
    with pytest.raises(OrderingError, match="not in gates"):
        Precedence({}, {0: ["links"]})
