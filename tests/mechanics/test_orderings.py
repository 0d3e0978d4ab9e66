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
