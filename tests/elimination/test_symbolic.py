"""Symbolic analysis checked against numbers it never sees."""
import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import elimination
from elimination import Ordering, OrderingError, analyze
from elimination.symbolic import HardRows, HardStep
from factorgraph import FactorGraph, FactorStructure, GraphStructure, LinearEquality, Quadratic, Variable
from tests.graph_classes import generated_graphs, multipliers_last
from tests.random_graphs import build_graph, graph_specs


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


# --- HardRows (one flow per step, grown across steps) against the max-flow per candidate it replaced ---


class MaxFlowHardRows:
    """Oracle: :class:`HardRows` as it was before issue 10 (a networkx max-flow per rank query).

    Generic-rank bookkeeping of the hard rows during symbolic elimination.

    The rows of a working hard factor are the original rows of a *group* of
    the graph's hard factors, with the columns of the variables *eliminated*
    along the way reduced out.  For generic coefficients the rank of a set of
    columns ``X`` in a group ``G`` is ``rho_G(X)``, a maximum flow from the
    group's factors (capacity: rows) to the variables of ``X`` they touch
    (capacity: dimension).  Column reduction then gives

    * the substitution rank of a front ``F``: ``rho_G(C + F) - rho_G(C)``;
    * the support of the leftover rows: the ``y`` with
      ``rho_G(C + F + y) > rho_G(C + F)`` -- a union of scopes would be too
      wide, since eliminating a column can cancel a factor out of a row
      combination exactly.

    The interface :meth:`eliminate` / :meth:`record` is what :func:`analyze`
    asks of any bookkeeping (see :class:`elimination.numeric_rank.NumericHardRows`).
    """

    def __init__(self, originals: dict, dims: dict):
        self.originals = originals
        self.dims = dims
        self.provenance = {i: (frozenset({i}), frozenset()) for i in originals}
        self._memo: dict = {}
        self._pending = None

    def rank(self, group: frozenset, columns: frozenset) -> int:
        """``rho_G(X)``: generic rank of the columns ``X`` in the rows of group ``G``."""
        memo_key = (group, columns)
        if memo_key not in self._memo:
            self._memo[memo_key] = self._max_flow(group, columns)
        return self._memo[memo_key]

    def _max_flow(self, group: frozenset, columns: frozenset) -> int:
        touched = {k for i in group for k in self.originals[i].keys if k in columns}
        if len(group) == 1:
            (i,) = group
            return min(self.originals[i].rows, sum(self.dims[k] for k in touched))
        network = nx.DiGraph()
        for i in group:
            network.add_edge("source", ("factor", i), capacity=self.originals[i].rows)
            for k in self.originals[i].keys:
                if k in touched:
                    network.add_edge(("factor", i), ("var", k))
        for k in touched:
            network.add_edge(("var", k), "sink", capacity=self.dims[k])
        return nx.maximum_flow_value(network, "source", "sink") if touched else 0

    def eliminate(self, hard: list, m: int, frontal: tuple, order_position: dict) -> HardStep:
        """What the bucket's hard factors ``hard`` (working indices, ``m`` rows in all) do to ``frontal``."""
        group = frozenset().union(*(self.provenance[i][0] for i in hard))
        before = frozenset().union(*(self.provenance[i][1] for i in hard))
        after = before | set(frontal)
        base, rank_after = self.rank(group, before), self.rank(group, after)
        candidates = {k for i in group for k in self.originals[i].keys} - after
        support = tuple(sorted(
            (y for y in candidates if self.rank(group, after | {y}) > rank_after), key=order_position.get,
        ))
        substituted = rank_after - base
        passed = m - substituted if support else 0
        self._pending = (group, after)
        return HardStep(substituted, passed, m - substituted - passed, support, group)

    def record(self, index: int) -> None:
        """The rows passed on by the last :meth:`eliminate` become working factor ``index``."""
        self.provenance[index] = self._pending


@st.composite
def hard_row_sequences(draw):
    """Hard factors on a few variables and an elimination order in blocks."""
    nvars = draw(st.integers(1, 8))
    dims = {k: draw(st.integers(1, 3)) for k in range(nvars)}
    factors = []
    for _ in range(draw(st.integers(1, 6))):
        keys = tuple(draw(st.lists(st.sampled_from(range(nvars)), min_size=1, max_size=min(nvars, 4), unique=True)))
        factors.append(FactorStructure(keys, draw(st.integers(1, 5))))
    order = draw(st.permutations(range(nvars)))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, nvars - 1)), max_size=nvars - 1))) if nvars > 1 else []
    blocks = [tuple(order[a:b]) for a, b in zip([0] + cuts, cuts + [nvars])]
    return dims, factors, blocks


def _replay(book_class, dims, factors, calls, twice=False):
    """Drive a hard-row bookkeeping as :func:`analyze` does; each call's ``hard(live, working)`` picks its bucket.

    With ``twice`` the passed rows are recorded as two working factors (never in analyze).
    """
    book = book_class(dict(enumerate(factors)), dims)
    working = dict(enumerate(factors))
    live = dict(working)
    steps = []
    for hard, frontal, order_position in calls:
        hard = hard(live, working)
        if not hard:
            continue
        step = book.eliminate(hard, sum(working[i].rows for i in hard), frontal, order_position)
        steps.append((tuple(hard), step))
        for i in hard:
            live.pop(i, None)
        for _ in range(2 if twice else 1 if step.passed else 0):
            index = len(working)
            book.record(index)
            working[index] = live[index] = FactorStructure(step.scope, step.passed)
    return steps


@given(hard_row_sequences())
def test_hard_rows_equal_a_max_flow_per_candidate_along_an_elimination(case):
    dims, factors, blocks = case
    position = {k: p for p, k in enumerate(k for block in blocks for k in block)}

    def bucket(frontal):
        return lambda live, working: sorted(i for i, f in live.items() if set(f.keys) & set(frontal))

    calls = [(bucket(frontal), frontal, position) for frontal in blocks]
    assert _replay(HardRows, dims, factors, calls) == _replay(MaxFlowHardRows, dims, factors, calls)


@given(hard_row_sequences(), st.data())
def test_hard_rows_equal_a_max_flow_per_candidate_on_any_calls(case, data):
    """Buckets that reuse consumed or overlapping factors (never in analyze) still get the max-flow answer."""
    dims, factors, blocks = case
    position = {k: p for p, k in enumerate(data.draw(st.permutations(sorted(dims))))}
    picks = []
    for _ in range(data.draw(st.integers(1, 6))):
        picks.append((data.draw(st.lists(st.integers(0, 20), min_size=1, max_size=4, unique=True)),
                      tuple(data.draw(st.lists(st.sampled_from(sorted(dims)), max_size=3, unique=True)))))

    def chosen(pick):
        return lambda live, working: sorted(i for i in pick if i in working)

    calls = [(chosen(pick), frontal, position) for pick, frontal in picks]
    twice = data.draw(st.booleans())
    assert _replay(HardRows, dims, factors, calls, twice) == _replay(MaxFlowHardRows, dims, factors, calls, twice)


@given(hard_structures())
def test_generic_rank_equals_the_max_flow(case):
    dims, factors, group, columns, _ = case
    assert HardRows(factors, dims).rank(group, columns) == MaxFlowHardRows(factors, dims).rank(group, columns)


def _plans_with_both_rank_rules(structure, ordering):
    """``analyze`` with the default :class:`HardRows` and with the max-flow oracle (or the error each raises)."""
    results = []
    for book in (None, MaxFlowHardRows):
        hard_rows = None if book is None else book(
            {i: f for i, f in enumerate(structure.factors) if f.hard}, {v.key: v.dim for v in structure.variables}
        )
        try:
            results.append(analyze(structure, ordering, hard_rows=hard_rows))
        except elimination.SingularProblemError as error:
            results.append((type(error), str(error)))
    return results


STEP_FIELDS = ("index", "frontal", "separator", "fill_edges", "frontal_dim", "separator_dim", "frontal_min_dim",
               "hard_rows", "substituted", "passed_rows", "dropped_rows", "hard_factors", "pivot", "flops", "factors",
               "new_quadratic", "new_equality", "layout", "identity")


def _assert_same_plans(new, old):
    if isinstance(old, tuple) or isinstance(new, tuple):
        assert new == old
        return
    assert new.factors == old.factors and new.remaining_factors == old.remaining_factors
    assert len(new.steps) == len(old.steps)
    for s, t in zip(new.steps, old.steps):
        assert [getattr(s, f) for f in STEP_FIELDS] == [getattr(t, f) for f in STEP_FIELDS]
        assert np.array_equal(s.equality_columns, t.equality_columns)
        assert all(np.array_equal(p, q) for p, q in zip(s.positions, t.positions))


def _factor_graph_orderings(structure, random):
    keys = [v.key for v in structure.variables]
    random.shuffle(keys)
    return [Ordering.from_keys(keys), elimination.natural(structure), elimination.min_degree(structure),
            elimination.min_fill(structure)]


@given(graph_specs(max_vars=8, hard_multipliers=True), st.randoms(use_true_random=False))
def test_plans_of_random_graphs_equal_those_of_the_max_flow(spec, random):
    structure = build_graph(spec).structure()
    for ordering in _factor_graph_orderings(structure, random):
        _assert_same_plans(*_plans_with_both_rank_rules(structure, ordering))


@pytest.mark.parametrize("kind", ["well_posed", "redundant", "inconsistent"])
@given(data=st.data())
def test_plans_of_generated_graphs_equal_those_of_the_max_flow(kind, data):
    generated = data.draw(generated_graphs(kind, max_vars=8, batches=False))
    structure = generated.graph.structure()
    random = data.draw(st.randoms(use_true_random=False))
    orderings = _factor_graph_orderings(structure, random)
    orderings.append(elimination.min_degree(structure, eligible=multipliers_last))
    for ordering in orderings:
        _assert_same_plans(*_plans_with_both_rank_rules(structure, ordering))


@given(graph_specs(max_vars=10, hard_multipliers=True), st.randoms(use_true_random=False))
def test_each_steps_fill_is_the_pairs_of_its_separator_not_yet_adjacent(spec, random):
    """Step by step against the elimination game played on a networkx graph: the fill edges of a step,
    in combinations(separator, 2) order (analyze skips the pairs inside a bucket factor's scope)."""
    from itertools import combinations

    structure = build_graph(spec).structure()
    for ordering in _factor_graph_orderings(structure, random):
        plan = analyze(structure, ordering)
        game = structure.interaction_graph()
        for step in plan.steps:
            expected = tuple((u, v) for u, v in combinations(step.separator, 2) if not game.has_edge(u, v))
            assert step.fill_edges == expected
            game.add_edges_from(expected)
            game.remove_nodes_from(step.frontal)
