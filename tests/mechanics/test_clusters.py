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
