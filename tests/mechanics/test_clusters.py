"""Clusters of local loops (003's), found from the topology alone."""
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mechanics
from mechanics import GROUND, Coupling, models
from mechanics.clusters import find_clusters, local
from tests.mechanics.random_mechanisms import mechanisms


def test_the_papers_mechanisms_cluster_as_003_draws_them():
    """Each rotor with its link, each differential's two rotors with its two joints; fig4's two coupled loops
    as one cluster under link 3 (000 Fig. 4); Digit's achilles and knee rods together, its toe rod apart; the
    humanoid leg's two belts from the thigh as one; the arm's elbow four-bar with both rotors on the ground; a
    loop of seven joints (cycle) and contacts stay out."""
    tello = [(c.links, c.parent) for c in models.tello_leg().clusters()]
    assert tello == [(("hip_yaw_rotor", "hip_yaw"), GROUND),
                     (("hip_rotor_a", "hip_rotor_b", "hip_roll", "hip_pitch"), "hip_yaw"),
                     (("knee_rotor", "knee"), "hip_pitch"),
                     (("ankle_rotor_a", "ankle_rotor_b", "ankle_pitch", "ankle_roll"), "knee")]
    (fig4,) = models.fig4().clusters()
    assert (fig4.links, fig4.parent, fig4.constraints) == (tuple("4 5 6 7 8 9 10 11".split()), "3", ("12", "13"))
    digit = [(c.links, c.parent) for c in models.digit_leg().clusters()]
    assert digit == [(("thigh", "shin", "tarsus", "achilles_rod", "knee_rod"), "hip"), (("toe", "toe_rod"), "tarsus")]
    assert models.cycle(8).clusters() == () and models.cycle(8).clusters(max_joints=7)[0].parent == "link1"
    standing = models.mini_cheetah(contacts=True)
    assert len(standing.clusters()) == 12 and not any("foot" in n for c in standing.clusters() for n in c.constraints)
    humanoid = [(c.links, c.parent) for c in models.humanoid_leg().clusters()]
    assert humanoid[3:] == [(("knee_rotor", "ankle_rotor", "knee", "ankle"), "hip_pitch")]  # (the two belts: one)
    (arm,) = models.four_bar_arm().clusters()  # (the elbow's four-bar with the shoulder's and crank's rotors)
    assert (arm.parent, set(arm.constraints)) == (GROUND, {"elbow_drive", "crank:gear", "upper_arm:gear"})


@st.composite
def looped(draw):
    """A random mechanism with loops and couplings between random joints."""
    mech = draw(mechanisms(max_links=8, max_constraints=3))
    movable = [l.name for l in mech.links if l.joint.nv]
    couplings = []
    for i in range(draw(st.integers(0, 2)) if movable else 0):
        joints = draw(st.permutations(movable))[:draw(st.integers(1, min(3, len(movable))))]
        couplings.append(Coupling(joints, [np.ones((1, mech.link(j).joint.nv)) for j in joints], name=f"k{i}"))
    with warnings.catch_warnings():  # (placements drawn anywhere: the topology is what is tested)
        warnings.simplefilter("ignore", mechanics.IncompatibleConstraintsWarning)
        return mech.with_constraints(list(mech.constraints) + couplings)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(looped(), st.integers(1, 8))
def test_clusters_are_disjoint_closed_and_hold_every_local_loop(mech, max_joints):
    """Disjoint; each hangs from one parent outside it (every member's parent a member or that one); each local
    loop's joints (a coupling's joints too) inside one cluster, which names it; no other constraint named."""
    clusters = find_clusters(mech, max_joints)
    seen = [link for c in clusters for link in c.links]
    assert len(seen) == len(set(seen))
    for c in clusters:
        assert list(c.links) == sorted(c.links, key=mech.index.__getitem__)
        assert {mech.parent(l) for l in c.links} - set(c.links) == {c.parent}
    named = {name: c for c in clusters for name in c.constraints}
    for constraint in mech.constraints:
        if local(mech, constraint.name, max_joints):
            home = named[constraint.name]
            assert mech.loop_joints(constraint.name) <= set(home.links)
            assert set(getattr(constraint, "joints", ())) <= set(home.links)
        else:
            assert constraint.name not in named


def test_a_cluster_is_drawn_as_one_box_naming_its_loops():
    from viz.dot import to_dot
    from viz.views import mechanism_view

    source = to_dot(mechanism_view(models.tello_leg()))
    assert source.count("subgraph cluster_") == 4 and 'label="cluster hip:differential"' in source
    assert "coupling hip:differential" in source


def _caba_blocks_hold(mech) -> int:
    """C-ABA's plan on ``mech`` eliminates every link after its children and each cluster's ``y`` after its
    links (those whose tree-joint factors hold it), and where the tree with each cluster contracted to one node
    has no cycle, each cluster as one run of steps -- its links, then its ``y``; returns how many it kept whole."""
    import networkx as nx

    structure, plan = mechanics.algorithm_plan(mech, "caba")
    position = {key: i for i, step in enumerate(plan.steps) for key in step.frontal}
    for link in mech.links:
        if link.parent != GROUND:
            assert position[mechanics.LinkAcceleration(link.name)] < position[mechanics.LinkAcceleration(link.parent)]
    members = {}
    for factor in structure.factors:
        if type(factor.role).__name__ == "TreeJoint":
            for y in (k for k in factor.keys if isinstance(k, mechanics.ClusterCoordinates)):
                members.setdefault(y, []).append(factor.role.link)
    node = {link: y for y, links in members.items() for link in links}
    contracted = nx.DiGraph((node.get(l.name, l.name), node.get(l.parent, l.parent)) for l in mech.links)
    contracted.remove_edges_from(nx.selfloop_edges(contracted))
    whole = nx.is_directed_acyclic_graph(contracted)
    for y, links in members.items():
        steps = sorted(position[mechanics.LinkAcceleration(link)] for link in links)
        assert position[y] > steps[-1]
        if whole:
            assert steps == list(range(steps[0], steps[0] + len(steps))) and position[y] == steps[-1] + 1, (y, steps)
    return len(members) if whole else 0


def test_caba_eliminates_each_cluster_as_one_run_of_steps():
    """003's C-ABA: a cluster's links substituted, then one pivot on its y, before anything else moves on --
    Digit's toe and its rod (under its knee cluster's tarsus) before the knee's; on every built-in."""
    checked = 0
    for make in models.MODELS.values():
        try:
            mech = make()
        except TypeError:
            continue
        checked += _caba_blocks_hold(mech)
    assert checked >= 14
    plan = mechanics.algorithm_plan(models.digit_leg(), "caba")[1]
    assert [str(k.name) for step in plan.steps[:2] for k in step.frontal] == ["toe_rod", "toe"]
    # a coupling of a joint and its grandchild: no order keeps it whole (link2 hangs between), proxBBO's then
    chain = models.serial_chain(3)
    chain = chain.with_constraints([Coupling(("link1", "link3"), (np.ones((1, 1)), -np.ones((1, 1))), name="k")])
    assert _caba_blocks_hold(chain) == 0
    plan = mechanics.algorithm_plan(chain, "caba")[1]
    assert [str(k) for step in plan.steps for k in step.frontal] == [
        "LinkAcceleration('link3')", "LinkAcceleration('link2')", "JointAcceleration('link2')",
        "LinkAcceleration('link1')", "ClusterCoordinates('link1')"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(looped())
def test_caba_eliminates_each_cluster_of_a_random_mechanism_as_one_run_of_steps(mech):
    try:
        _caba_blocks_hold(mech)
    except ValueError as error:  # (a drawn loop whose rows are singular wherever it closes: refused, named)
        assert "cluster" in str(error) or "singular" in str(error)
