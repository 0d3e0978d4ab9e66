"""Against Pinocchio on robots of example-robot-data."""
import numpy as np
import pinocchio as pin
import pytest

import mechanics
from mechanics.pinocchio_io import ROBOTS, from_pinocchio, load_pinocchio_robot
from tests.mechanics.pinocchio_oracle import (
    ALM_MU, constraint_dynamics, constraint_jacobian, dense_reference, random_state, scenario, std_vectors,
)

SCENARIOS = ["ur5_6d", "talos_feet", "solo12_feet", "four_bar"]


def relative(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


BACKENDS = ["auto", "numpy"]  # the compiled path (the default) and the numpy reference, both against Pinocchio


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("robot", ["ur5", "talos", "solo12", "anymal", "allegro"])
def test_aba_equals_pinocchio_aba(robot, backend):
    model = load_pinocchio_robot(robot)
    mech = from_pinocchio(model)
    rng = np.random.default_rng(hash(robot) % 2**31)
    states = [random_state(model, rng) for _ in range(4)]
    for q, v, tau in states:
        reference = pin.aba(model, model.createData(), q, v, tau)
        assert relative(mechanics.forward_dynamics(mech, q, v, tau, algorithm="aba", backend=backend).qdd, reference) < 1e-9
    Q, V, T = (np.stack(x) for x in zip(*states))  # the same states as one batch, one plan
    batched = mechanics.forward_dynamics(mech, Q, V, T, algorithm="aba", backend=backend).qdd
    for i, (q, v, tau) in enumerate(states):
        assert relative(batched[i], pin.aba(model, model.createData(), q, v, tau)) < 1e-9


def test_the_dense_oracle_agrees_with_pinocchio_constraint_dynamics():
    """The reference itself is checked against Pinocchio's own solver (mu_pin = 1e-4, converged)."""
    rng = np.random.default_rng(5)
    for name in SCENARIOS:
        model, cms, q = scenario(name, rng=rng)
        _, v, tau = random_state(model, rng)
        ddq, forces = dense_reference(model, cms, q, v, tau)
        ddq_pin, forces_pin, _ = constraint_dynamics(model, cms, q, v, tau)
        assert relative(ddq, ddq_pin) < 1e-10 and relative(forces, forces_pin) < 1e-10


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("algorithm", [a for a in mechanics.ALGORITHMS if a not in ("aba", "pv_soft")])
def test_constrained_algorithms_equal_the_pinocchio_reference(name, algorithm, backend):
    rng = np.random.default_rng(7)
    model, cms, q = scenario(name, rng=rng)
    _, v, tau = random_state(model, rng)
    mech = from_pinocchio(model, cms)
    if algorithm == "constrained_aba" and name == "four_bar":
        with pytest.raises(ValueError, match="lcaba"):
            mechanics.forward_dynamics(mech, q, v, tau, algorithm=algorithm)
        return
    mu = ALM_MU if mechanics.ALGORITHMS[algorithm].policies == "alm" else 1e6
    result = mechanics.forward_dynamics(mech, q, v, tau, algorithm=algorithm, mu=mu, tol=1e-12, backend=backend)
    ddq, forces = dense_reference(model, cms, q, v, tau)
    assert relative(result.qdd, ddq) < 1e-8
    assert relative(result.forces, forces) < 1e-8
    assert result.residual < 1e-8


def test_pinocchio_constraint_dynamics_converges_to_our_solution_under_the_mu_conversion():
    """Pinocchio's mu is a regularization (smaller = stiffer); ours is a stiffness: mu_pin = 1 / mu."""
    rng = np.random.default_rng(11)
    model, cms, q = scenario("talos_feet", rng=rng)
    _, v, tau = random_state(model, rng)
    mech = from_pinocchio(model, cms)
    mu = 1e4
    ours = mechanics.forward_dynamics(mech, q, v, tau, algorithm="proxbbo", mu=mu, tol=1e-13)
    ddq_pin, forces_pin, iterations = constraint_dynamics(model, cms, q, v, tau, mu_pin=1.0 / mu, accuracy=1e-13)
    assert relative(ours.qdd, ddq_pin) < 1e-9 and relative(ours.forces, forces_pin) < 1e-9
    # one proximal step from zero forces is the same regularized problem in both conventions
    with pytest.warns(mechanics.ConvergenceWarning, match="max_iter=1"):
        one = mechanics.forward_dynamics(mech, q, v, tau, algorithm="proxpv", mu=mu, max_iter=1)
    assert not one.converged
    pin_one, _, _ = constraint_dynamics(model, cms, q, v, tau, mu_pin=1.0 / mu, max_iter=1, accuracy=1e-300)
    assert relative(one.qdd, pin_one) < 1e-9


@pytest.mark.parametrize("name", SCENARIOS)
def test_delassus_equals_j_minv_jt_from_pinocchio(name):
    rng = np.random.default_rng(13)
    model, cms, q = scenario(name, rng=rng)
    data = model.createData()
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    J = constraint_jacobian(model, data, cms, q)
    assert relative(mechanics.delassus(from_pinocchio(model, cms), q), J @ np.linalg.solve(M, J.T)) < 1e-9


@pytest.mark.parametrize("name", ["talos_feet", "solo12_feet", "ur5_6d"])
def test_delassus_equals_pinocchio_compute_delassus_matrix(name):
    """Contacts only: pin 4.1's computeDelassusMatrix returns a wrong matrix for a two-joint
    (internal loop) constraint such as the four-bar's (first row zero), while J M^-1 J' agrees with us."""
    rng = np.random.default_rng(13)
    model, cms, q = scenario(name, rng=rng)
    mech = from_pinocchio(model, cms)
    data = model.createData()
    models, datas = std_vectors(cms)
    pin.initConstraintDynamics(model, data, models, datas)
    assert relative(mechanics.delassus(mech, q), pin.computeDelassusMatrix(model, data, q, models, datas, 0.0)) < 1e-9


def test_results_never_depend_on_call_history():
    """Pinocchio 4.1's lcaba with CONTACT_6D reads stale data.oa; our calls share no state."""
    rng = np.random.default_rng(17)
    model, cms, q = scenario("talos_feet", rng=rng)
    mech = from_pinocchio(model, cms)
    states = [random_state(model, rng) for _ in range(3)]
    first = [mechanics.forward_dynamics(mech, q, v, tau, algorithm="lcaba", mu=ALM_MU).qdd for _, v, tau in states]
    again = [mechanics.forward_dynamics(mech, q, v, tau, algorithm="lcaba", mu=ALM_MU).qdd for _, v, tau in reversed(states)]
    for a, b in zip(first, reversed(again)):
        assert np.array_equal(a, b)


def test_from_pinocchio_keeps_names_layout_and_inertias():
    model = load_pinocchio_robot("talos")
    mech = from_pinocchio(model)
    assert (mech.nq, mech.nv) == (model.nq, model.nv)
    for link in mech.links:
        j = model.getJointId(link.name)
        assert mech.q_slices[link.name].start == model.joints[j].idx_q
        assert link.mass == pytest.approx(model.inertias[j].mass)
        assert mech.parent(link.name) == (model.names[model.parents[j]] if model.parents[j] else mechanics.GROUND)


def test_integrate_equals_pinocchio_integrate():
    rng = np.random.default_rng(19)
    for robot in ("talos", "allegro"):
        model = load_pinocchio_robot(robot)
        mech = from_pinocchio(model)
        q, v, _ = random_state(model, rng)
        assert relative(mech.integrate(q, 0.1 * v), pin.integrate(model, q, 0.1 * v)) < 1e-12


def test_world_poses_equal_pinocchio_forward_kinematics():
    rng = np.random.default_rng(23)
    model = load_pinocchio_robot("talos")
    mech = from_pinocchio(model)
    q, v, _ = random_state(model, rng)
    data = model.createData()
    pin.forwardKinematics(model, data, q, v)
    kin = mechanics.kinematics(mech, q, v)
    for link in mech.links:
        oMi = data.oMi[model.getJointId(link.name)]
        assert np.allclose(kin.rotation[link.name], oMi.rotation, atol=1e-12)
        assert np.allclose(kin.position[link.name], oMi.translation, atol=1e-12)
        world_velocity = oMi.act(data.v[model.getJointId(link.name)])  # Pinocchio: [linear; angular] at the world origin
        assert np.allclose(kin.velocity[link.name], np.concatenate([world_velocity.angular, world_velocity.linear]), atol=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("robot", ["ur5", "talos"])
def test_link_accelerations_are_pinocchios_world_spatial_accelerations(robot, backend):
    """[linear; angular] at the world origin, as Pinocchio's oMi.act(a_i) after forwardKinematics(q, v, ddq),
    with the gravity offset ABA carries (the ground accelerates upwards at -gravity)."""
    model = load_pinocchio_robot(robot)
    mech = from_pinocchio(model)
    q, v, tau = random_state(model, np.random.default_rng(8))
    result = mechanics.forward_dynamics(mech, q, v, tau, algorithm="aba", backend=backend)
    data = model.createData()
    pin.forwardKinematics(model, data, q, v, result.qdd)
    offset = -np.array(model.gravity.linear)
    for link in mech.links:
        j = model.getJointId(link.name)
        world = data.oMi[j].act(data.a[j])
        expected = np.concatenate([world.linear + offset, world.angular])
        assert np.allclose(result.link_accelerations[link.name], expected, atol=1e-9 * max(1.0, np.max(np.abs(expected))))


def test_every_listed_robot_loads():
    for robot in ROBOTS:
        assert from_pinocchio(load_pinocchio_robot(robot)).nv > 0
