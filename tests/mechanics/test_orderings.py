"""The orderings reproduce the papers' walkthroughs on the 000 Fig. 4 mechanism."""
import numpy as np

import elimination
import mechanics
from mechanics import gplc_graph, models


def _plan(algorithm: str, mech=None):
    mech = mech or models.fig4()
    return mech, mechanics.algorithm_plan(mech, algorithm)[1]


def _link_steps(plan):
    """(link eliminated, links in its separator) for each a_i step, in order."""
    out = []
    for step in plan.steps:
        if step.frontal[0][0] == "a":
            out.append((step.frontal[0][1], {k[1] for k in step.separator if k[0] == "a"}))
    return out


def test_lcaba_follows_000_section_iv_b():
    """6 first (fewest neighbours among leaves 6, 8, 11), coupling 5&8; then 5, 4 (coupling 3&8);
    11, 10, 9 (9 adds no coupling: 3&8 already coupled); 8 and 7; then as ABA."""
    _, plan = _plan("lcaba")
    steps = _link_steps(plan)
    assert [link for link, _ in steps] == ["6", "5", "4", "11", "10", "9", "8", "7", "3", "2", "1"]
    neighbours = dict(steps)  # {parent} plus the coupled links N_i when i is eliminated
    assert neighbours == {
        "6": {"5", "8"}, "5": {"4", "8"}, "4": {"3", "8"}, "11": {"10", "8"}, "10": {"9", "8"},
        "9": {"3", "8"}, "8": {"7", "3"}, "7": {"3"}, "3": {"2"}, "2": {"1"}, "1": set(),
    }
    couplings = [{frozenset((u[1], v[1])) for u, v in s.fill_edges if u[0] == v[0] == "a"} for s in plan.steps]
    new = [c for c in couplings if c]  # 8's coupling of 7 & 3 adds no edge: 3 is 7's parent
    assert new == [{frozenset("58")}, {frozenset("48")}, {frozenset("38")}, {frozenset(("10", "8"))}, {frozenset("98")}]


def test_eliminating_8_first_would_couple_6_and_11():
    """000 Fig. 4e: the minimum-degree choice avoids this coupling."""
    mech, plan = _plan("lcaba")
    graph = gplc_graph(mech, mech.neutral_configuration(), np.zeros(mech.nv), np.zeros(mech.nv), policy="alm")
    bad = elimination.Ordering([(("a", "8"),)] + [b for b in plan.ordering.blocks if b != (("a", "8"),)])
    first = elimination.analyze(graph, bad, complete=True).steps[0]
    assert frozenset((("a", "6"), ("a", "11"))) in {frozenset(e) for e in first.fill_edges}


def test_proxbbo_follows_000_section_v_b():
    """Both multipliers are eliminated at link 3, their common loop root, right before link 3 (Fig. 5)."""
    mech, plan = _plan("proxbbo")
    assert mech.loop_root("12") == mech.loop_root("13") == "3"
    fronts = [s.frontal for s in plan.steps]
    multipliers = fronts.index((("lam", "12"), ("lam", "13")))
    assert fronts[multipliers + 1] == (("a", "3"),)
    step = plan.steps[multipliers]
    assert set(step.separator) == {("a", "3")}  # Fig. 5e: only link 3 is left next to them
    # Fig. 5d: eliminating link 8 couples constraints 12 and 13
    eight = next(s for s in plan.steps if s.frontal == (("a", "8"),))
    assert frozenset((("lam", "12"), ("lam", "13"))) in {frozenset(e) for e in eight.fill_edges}


def test_pv_eliminates_all_multipliers_last_and_proxltl_is_joint_space():
    _, pv = _plan("pv")
    assert pv.steps[-1].frontal == (("lam", "12"), ("lam", "13"))
    _, ltl = _plan("proxltl")
    kinds = [s.frontal[0][0] for s in ltl.steps]
    assert kinds == ["a"] * 11 + ["qdd"] * 11 + ["lam"]
    assert [s.frontal[0][1] for s in ltl.steps[:11]] == [str(i) for i in range(1, 12)]  # root to leaves


def test_minimum_degree_in_joint_space_does_not_fill_more_than_pv_on_the_favourable_topology():
    """000 Fig. 9: with branches welded tip to tip, tree-constrained minimum degree keeps fronts small."""
    mech = models.branching(branches=5, length=6)
    sizes = {name: _plan(name, mech)[1].max_front for name in ("lcaba", "pv", "proxbbo")}
    assert sizes["lcaba"] < sizes["proxbbo"] <= sizes["pv"]


# -- the eligibility kept as data gives the orders of the predicates it replaced ----------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from mechanics import GROUND, LinkAcceleration, Multiplier  # noqa: E402
from mechanics.algorithms import Algorithm, _link_blocks, any_min_degree, any_min_fill, layout_of, tree_min_degree  # noqa: E402
from tests.elimination.test_ordering import _ref_degree_score, _ref_fill_score, reference_greedy  # noqa: E402
from tests.mechanics.random_mechanisms import mechanisms  # noqa: E402


def _old_leaf_links_first(mechanism):
    """The predicate tree_min_degree used before issue 10 (rescans the remaining graph)."""

    def eligible(key, state):
        if isinstance(key, Multiplier):
            return all(isinstance(k, Multiplier) for k in state.remaining)
        return all(LinkAcceleration(child) not in state.remaining for child in mechanism.children(key.name))

    return eligible


def _old_accelerations_root_first(mechanism):
    """The predicate any_min_degree / any_min_fill used before issue 10."""

    def eligible(key, state):
        if isinstance(key, LinkAcceleration):
            parent = mechanism.parent(key.name)
            return parent == GROUND or LinkAcceleration(parent) not in state.remaining
        return not any(isinstance(k, LinkAcceleration) for k in state.remaining)

    return eligible


def _old_orders(mech, structure) -> dict:
    blocks = _link_blocks(mech)
    return {
        tree_min_degree: reference_greedy(structure, _ref_degree_score, _old_leaf_links_first(mech), blocks, True),
        any_min_degree: reference_greedy(structure, _ref_degree_score, _old_accelerations_root_first(mech)),
        any_min_fill: reference_greedy(structure, _ref_fill_score, _old_accelerations_root_first(mech)),
    }


def _assert_same_orders(mech, policy):
    structure = layout_of(mech, Algorithm(policy, tree_min_degree)).structure()
    for ordering, expected in _old_orders(mech, structure).items():
        assert ordering(mech, structure) == expected, (mech.name, policy, ordering.__name__)


@settings(max_examples=40, deadline=None)
@given(mech=mechanisms(max_links=9, max_constraints=4), policy=st.sampled_from(["alm", "prox"]))
def test_tree_and_joint_space_orderings_equal_the_old_predicates_on_random_mechanisms(mech, policy):
    _assert_same_orders(mech, policy)


def test_tree_and_joint_space_orderings_equal_the_old_predicates_on_the_models():
    for mech in (models.fig4(), models.chain_of_loops(loops=3, links_per_loop=5), models.branching(branches=3, length=3)):
        for policy in ("alm", "prox"):
            _assert_same_orders(mech, policy)
