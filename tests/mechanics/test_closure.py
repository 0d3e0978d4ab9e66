"""The loops at position and velocity level, and Baumgarte's correction, against Pinocchio's."""
import warnings

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings

import mechanics
from mechanics import GROUND, Connect, General, Joint, Link, Mechanism, Pose, Weld, at, models
from mechanics.pinocchio_io import from_pinocchio
from tests.mechanics.pinocchio_oracle import pinocchio_model_of, random_state, scenario, std_vectors
from tests.mechanics.random_mechanisms import mechanisms
from tests.mechanics.random_mechanisms import random_state as random_mechanism_state

ROBOTS = ("talos_feet", "solo12_feet", "four_bar")
GAINS = (30.0, 7.0)


def relative(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


def pinocchio_run(model, cms, q, v, tau, gains=(0.0, 0.0)):
    """``(ddq, [(e, e_dot)] per constraint)`` of Pinocchio's constraintDynamics with Baumgarte ``gains`` (its
    errors are Pinocchio's ``contact_placement_error`` / ``contact_velocity_error``, first ``dim`` rows)."""
    for cm in cms:
        cm.setBaumgarteCorrectorParameters(pin.BaumgarteCorrectorParameters(*gains))
    data = model.createData()
    models_, datas = std_vectors(cms)
    pin.initConstraintDynamics(model, data, models_, datas)
    ddq = pin.constraintDynamics(model, data, q, v, tau, models_, datas, pin.ProximalSettings(1e-13, 1e-7, 300))
    dims = [3 if cm.type == pin.ContactType.CONTACT_3D else 6 for cm in cms]
    errors = [(np.array(d.contact_placement_error.vector)[:n], np.array(d.contact_velocity_error.vector)[:n])
              for d, n in zip(datas, dims)]
    return np.array(ddq), errors


def moved(name, rng):
    """A robot scene whose constraints were placed at one configuration, and a state at another."""
    model, cms, _ = scenario(name, rng=rng)
    q, v, tau = random_state(model, rng)
    return model, cms, q, v, tau


@pytest.mark.parametrize("name", ROBOTS)
def test_constraint_errors_are_pinocchios(name):
    rng = np.random.default_rng(21)
    model, cms, q, v, tau = moved(name, rng)
    mech = from_pinocchio(model, cms)
    _, errors = pinocchio_run(model, cms, q, v, tau)
    e, e_dot = mech.constraint_error(q), mech.constraint_velocity(q, v)
    assert list(e) == list(e_dot) == [c.name for c in mech.constraints]
    for c, (e_pin, e_dot_pin) in zip(mech.constraints, errors):
        assert np.max(np.abs(e_pin)) > 1e-2  # (the loops are open here: a real test)
        assert np.max(np.abs(e[c.name] - e_pin)) < 1e-12 and np.max(np.abs(e_dot[c.name] - e_dot_pin)) < 1e-12


@settings(max_examples=25, deadline=None)
@given(mechanisms(max_links=5, max_constraints=3, min_constraints=1))
def test_constraint_errors_of_random_mechanisms_are_pinocchios(mech):
    """Random frames on random trees: every relative rotation angle, the ones near pi included."""
    q, v, tau = random_mechanism_state(mech, np.random.default_rng(2))
    model, cms = pinocchio_model_of(mech)
    _, errors = pinocchio_run(model, cms, q, v, tau)
    e, e_dot = mech.constraint_error(q), mech.constraint_velocity(q, v)
    for c, (e_pin, e_dot_pin) in zip(mech.constraints, errors):
        assert np.max(np.abs(e[c.name] - e_pin)) < 1e-9 * (1 + np.max(np.abs(e_pin)))
        assert np.max(np.abs(e_dot[c.name] - e_dot_pin)) < 1e-10 * (1 + np.max(np.abs(e_dot_pin)))


def test_errors_batch_and_keep_their_axes():
    mech = models.four_bar()  # a Connect on axes (0, 1)
    rng = np.random.default_rng(3)
    q, v = mech.random_configuration(rng, (4,)), rng.normal(size=(4, mech.nv))
    batch = mech.constraint_velocity(q, v)["loop"]
    assert batch.shape == (4, 2)
    assert np.allclose(batch[2], mech.constraint_velocity(q[2], v[2])["loop"], rtol=0, atol=1e-15)
    full = mech.with_constraints([Connect(c.link1, c.link2, c.placement1, c.placement2, name="loop")
                                  for c in mech.constraints])
    assert np.array_equal(mech.constraint_error(q)["loop"], full.constraint_error(q)["loop"][:, :2])


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("name", ["talos_feet", "solo12_feet"])
def test_baumgarte_equals_pinocchio(name, backend):
    """Anchored where the state's feet are (only Kd acts) and elsewhere (both act)."""
    rng = np.random.default_rng(8)
    model, cms, q, v, tau = moved(name, rng)
    for model, cms in ((model, cms), scenario(name, q=q)[:2]):
        mech = from_pinocchio(model, cms)
        ddq, _ = pinocchio_run(model, cms, q, v, tau, GAINS)
        plain, _ = pinocchio_run(model, cms, q, v, tau)
        ours = mechanics.forward_dynamics(mech, q, v, tau, "proxbbo", tol=1e-13, backend=backend, baumgarte=GAINS)
        assert relative(ddq, plain) > 1e-3  # (the correction moves the answer)
        assert relative(ours.qdd, ddq) < 1e-8 and ours.converged


def test_baumgarte_batches_run_compiled_and_equal_their_single_calls():
    rng = np.random.default_rng(9)
    model, cms, _ = scenario("solo12_feet", rng=rng)
    mech = from_pinocchio(model, cms)
    states = [random_state(model, rng) for _ in range(20)]
    q, v, tau = (np.array([s[i] for s in states]) for i in range(3))
    prepared = mechanics.prepare(mech, "lcaba", mu=1e4, tol=1e-12, baumgarte={"c0": (50.0, 3.0), "c2": (0.0, 9.0)})
    batch = prepared(q, v, tau)
    assert prepared.compiled.states_run == {"lanes": 20, "one_by_one": 0}  # (compiled, in lanes)
    for i in (0, 17):
        assert np.array_equal(batch.qdd[i], prepared(q[i], v[i], tau[i]).qdd)
        for cm, gains in zip(cms, [(50.0, 3.0), (0.0, 0.0), (0.0, 9.0), (0.0, 0.0)]):
            cm.setBaumgarteCorrectorParameters(pin.BaumgarteCorrectorParameters(*gains))
        data = model.createData()
        models_, datas = std_vectors(cms)
        pin.initConstraintDynamics(model, data, models_, datas)
        ddq = pin.constraintDynamics(model, data, q[i], v[i], tau[i], models_, datas, pin.ProximalSettings(1e-13, 1e-7, 300))
        assert relative(batch.qdd[i], np.array(ddq)) < 1e-7


@pytest.mark.parametrize("angle", [0.3, 2.5, np.pi - 1e-4])
def test_a_weld_far_from_closure_corrected_the_same_compiled_numpy_and_in_pinocchio(angle):
    """A free body welded to the ground, turned by ``angle`` from its anchor (the log's branch near pi too)."""
    axis = np.array([1.0, 2.0, 2.0]) / 3.0
    body = Link("body", GROUND, Joint("free"), at(), 1.5, np.array([0.01, 0.0, 0.02]), np.diag([0.02, 0.03, 0.04]))
    mech = Mechanism([body], [Weld("body", GROUND, at(0.1, 0.0, 0.0), at(0.3, -0.2, 0.5), name="weld")])
    q = np.concatenate([[0.2, 0.1, -0.3], np.sin(angle / 2) * axis, [np.cos(angle / 2)]])
    v, tau = np.array([0.3, -0.2, 0.1, 0.5, 0.4, -0.6]), np.array([1.0, 0.0, -2.0, 0.1, 0.2, 0.3])
    model, cms = pinocchio_model_of(mech)
    ddq, errors = pinocchio_run(model, cms, q, v, tau, GAINS)
    assert np.max(np.abs(mech.constraint_error(q)["weld"] - errors[0][0])) < 1e-9
    for backend in ("numpy", "numba"):
        ours = mechanics.forward_dynamics(mech, q, v, tau, "proxbbo", tol=1e-13, backend=backend, baumgarte=GAINS)
        assert relative(ours.qdd, ddq) < 1e-8, backend


def test_anchored_closes_the_ground_constraints_at_q_and_leaves_the_rest():
    mech = models.fig4()
    grounded = mech.with_constraints(list(mech.constraints) + [
        Weld(mech.links[-1].name, GROUND, at(0.1, 0.0, 0.0), name="foot"),
        Connect(GROUND, mech.links[2].name, at(0.5, 0.5, 0.5), at(0.0, 0.1, 0.0), name="toe")])
    q = grounded.random_configuration(np.random.default_rng(4))
    anchored = grounded.anchored(q)
    error = anchored.constraint_error(q)
    assert np.max(np.abs(error["foot"])) < 1e-12 and np.max(np.abs(error["toe"])) < 1e-12
    before = grounded.constraint_error(q)
    assert np.max(np.abs(before["foot"])) > 1e-2
    for c in mech.constraints:  # the loops between links are not the ground's
        assert np.array_equal(error[c.name], before[c.name])
    toe = anchored.constraint("toe")  # the ground is its first end: its rows' frame keeps its orientation
    assert np.array_equal(toe.placement1.rotation, np.eye(3)) and np.array_equal(toe.placement2.translation, [0.0, 0.1, 0.0])
    with pytest.raises(ValueError, match="one configuration"):
        grounded.anchored(grounded.random_configuration(np.random.default_rng(4), (2,)))


def test_bad_gains_are_refused_with_the_reason():
    mech = models.four_bar()
    q, v, tau = mech.neutral_configuration(), np.zeros(mech.nv), np.zeros(mech.nv)
    with pytest.raises(ValueError, match="did you mean 'loop'"):
        mechanics.forward_dynamics(mech, q, v, tau, baumgarte={"lop": (1.0, 1.0)})
    with pytest.raises(ValueError, match=">= 0"):
        mechanics.forward_dynamics(mech, q, v, tau, baumgarte=(-1.0, 1.0))
    with pytest.raises(TypeError, match=r"pair \(Kp, Kd\)"):
        mechanics.prepare(mech, baumgarte=10.0)
    general = Mechanism(mech.links, [General(("crank",), (np.eye(6)[:1],), np.zeros(1), name="g")])
    with pytest.raises(ValueError, match="'g' is a General, which has no position level"):
        mechanics.prepare(general, baumgarte={"g": (1.0, 1.0)})
    assert mechanics.prepare(general, baumgarte=(1.0, 1.0)).baumgarte == {}  # (one pair for all: Welds and Connects)
    assert list(general.constraint_error(q)) == []


def test_from_pinocchio_says_where_its_gains_go():
    rng = np.random.default_rng(1)
    model, cms, _ = scenario("solo12_feet", rng=rng)
    cms[1].setBaumgarteCorrectorParameters(pin.BaumgarteCorrectorParameters(10.0, 2.0))
    with pytest.raises(ValueError, match=r"baumgarte=\{'c1': \(10.0, 2.0\)\}"):
        from_pinocchio(model, cms)


def largest(errors: dict) -> float:
    return max((float(np.max(np.abs(e))) for e in errors.values()), default=0.0)


def test_project_closes_fig4_from_random_configurations():
    mech = models.fig4()
    q = mech.random_configuration(np.random.default_rng(12), (8,))
    closed = mech.project(q)
    assert largest(mech.constraint_error(closed)) <= 1e-10 and largest(mech.constraint_error(q)) > 1e-2
    assert np.array_equal(closed[3], mech.project(q[3]))
    assert np.array_equal(mech.project(closed[0]), closed[0])  # (closed already: left as it is)


def test_project_closes_welded_feet_as_pinocchio_measures_them():
    """Talos's feet welded where they were at another configuration: the base and legs move to close them."""
    rng = np.random.default_rng(14)
    model, cms, q, v, tau = moved("talos_feet", rng)
    mech = from_pinocchio(model, cms)
    _, errors = pinocchio_run(model, cms, q, v, tau)
    assert max(np.max(np.abs(e)) for e, _ in errors) > 1e-2
    closed = mech.project(q)
    _, errors = pinocchio_run(model, cms, closed, v, tau)
    assert max(np.max(np.abs(e)) for e, _ in errors) <= 1e-12


def test_project_closes_cassie_from_perturbed_closed_configurations():
    mech = mechanics.load_sdf(mechanics.pinocchio_io.example_robot_data_dir() / "cassie_description/robots/cassie_v2.sdf")
    rng = np.random.default_rng(15)
    for _ in range(5):
        dq = np.zeros(mech.nv)
        dq[6:] = rng.uniform(-0.3, 0.3, mech.nv - 6)  # (the joints; the base moves nothing)
        q = mech.integrate(mech.neutral_configuration(), dq)
        assert largest(mech.constraint_error(mech.project(q))) <= 1e-10 < largest(mech.constraint_error(q))


def test_incompatible_ground_constraints_are_named_when_built_and_when_projected():
    mech = models.four_bar()
    link = mech.links[0].name
    with pytest.warns(mechanics.IncompatibleConstraintsWarning, match="'here' and 'there' fix link"):
        twice = mech.with_constraints([Weld(link, GROUND, name="here"), Weld(link, GROUND, at(0.5, 0.0, 0.0), name="there")])
    with pytest.raises(ValueError, match="local minimum.*'here'.*'there'|local minimum.*'there'.*'here'"):
        twice.project(twice.neutral_configuration())
    with pytest.warns(mechanics.IncompatibleConstraintsWarning, match="'weld' and 'tip'"):  # a point off the weld's pose
        mech.with_constraints([Weld(link, GROUND, name="weld"), Connect(link, GROUND, at(1.0), at(0.0, 1.0), name="tip")])
    with pytest.warns(mechanics.IncompatibleConstraintsWarning, match="'a' and 'b'"):  # two points, another distance
        mech.with_constraints([Connect(link, GROUND, at(1.0), at(1.0), name="a"), Connect(link, GROUND, at(), at(3.0), name="b")])


def test_incompatible_constraints_between_two_links_are_named_when_built():
    """Two Welds or Connects between the same two links ask for a relative placement that does not depend on
    ``q``: where no configuration gives both, the mechanism says so when built (either order of the ends);
    a consistent pair builds quietly."""
    mech = models.fig4()
    a, b = mech.links[2].name, mech.links[5].name
    with pytest.warns(mechanics.IncompatibleConstraintsWarning, match="'w1' and 'w2' fix link '.*' to link '.*'"):
        mech.with_constraints(list(mech.constraints) + [Weld(a, b, name="w1"), Weld(b, a, at(0.1), name="w2")])
    with pytest.warns(mechanics.IncompatibleConstraintsWarning, match="'c1' and 'c2'"):  # another distance apart
        mech.with_constraints(list(mech.constraints) + [Connect(a, b, at(0.2), at(), name="c1"),
                                                        Connect(b, a, at(0.5), at(), name="c2")])
    with warnings.catch_warnings():
        warnings.simplefilter("error", mechanics.IncompatibleConstraintsWarning)
        mech.with_constraints(list(mech.constraints) + [Weld(a, b, at(0.1), at(), name="w1"),
                                                        Weld(b, a, at(-0.1), at(), name="w2"),
                                                        Connect(b, a, at(0.1), at(0.2), name="c")])


def test_compatible_ground_constraints_build_quietly():
    mech = models.four_bar()
    link = mech.links[0].name
    turn = Pose(mechanics.spatial.rotation_about("z", 0.7), np.zeros(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", mechanics.IncompatibleConstraintsWarning)
        mech.with_constraints([Weld(link, GROUND, at(1.0), Pose(turn.rotation, turn.rotation @ [1.0, 0, 0]), name="w1"),
                               Weld(link, GROUND, Pose(), turn, name="w2"),
                               Connect(link, GROUND, at(0.0, 2.0), at(*turn.rotation @ [0.0, 2.0, 0.0]), name="c1")])


@pytest.mark.parametrize("metric", ["identity", "mass"])
def test_project_velocity_is_the_dense_projection(metric):
    rng = np.random.default_rng(16)
    model, cms, q, v, tau = moved("solo12_feet", rng)
    mech = from_pinocchio(model, cms)
    data = model.createData()
    pin.computeJointJacobians(model, data, q)
    J = np.vstack([np.array(pin.getFrameJacobian(model, data, cm.joint1_id, cm.joint1_placement,
                                                 pin.ReferenceFrame.LOCAL))[:3] for cm in cms])  # the feet's velocities
    M = np.triu(pin.crba(model, data, q))
    W = np.eye(mech.nv) if metric == "identity" else np.linalg.inv(M + np.triu(M, 1).T)
    projected = mech.project_velocity(q, v, metric)
    expected = v - W @ J.T @ np.linalg.solve(J @ W @ J.T, J @ v)  # (four feet, 12 independent rows)
    assert np.max(np.abs(projected - expected)) < 1e-10 * (1 + np.max(np.abs(v)))
    assert largest(mech.constraint_velocity(q, projected)) < 1e-10
