"""Inverse dynamics of the tree against Pinocchio's rnea, and against our own forward dynamics."""
import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings

import mechanics
from mechanics.pinocchio_io import ROBOTS as EVERY_ROBOT, from_pinocchio, load_pinocchio_robot
from tests.mechanics.pinocchio_oracle import pinocchio_model_of, random_state
from tests.mechanics.random_mechanisms import mechanisms
from tests.mechanics.random_mechanisms import random_state as random_mechanism_state

ROBOTS = sorted(EVERY_ROBOT)  # every example-robot-data robot load_robot knows (the tests load each)


def relative(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@pytest.mark.parametrize("robot", ROBOTS)
def test_equals_pinocchio_rnea(robot, backend):
    model = load_pinocchio_robot(robot)
    mech = from_pinocchio(model)
    rng = np.random.default_rng(1)
    data = model.createData()
    for _ in range(3):
        q, v, qdd = random_state(model, rng)
        tau = mechanics.inverse_dynamics(mech, q, v, qdd, backend=backend)
        assert relative(tau, np.array(pin.rnea(model, data, q, v, qdd))) < 1e-12


@settings(max_examples=30, deadline=None)
@given(mechanisms(max_links=7, max_constraints=0))
def test_random_trees_equal_pinocchio_rnea(mech):
    model, _ = pinocchio_model_of(mech)
    q, v, qdd = random_mechanism_state(mech, np.random.default_rng(4))
    expected = np.array(pin.rnea(model, model.createData(), q, v, qdd))
    for backend in ("numba", "numpy"):
        assert relative(mechanics.inverse_dynamics(mech, q, v, qdd, backend=backend), expected) < 1e-11, backend


def test_batches_and_undoes_forward_dynamics():
    mech = from_pinocchio(load_pinocchio_robot("solo12"))
    rng = np.random.default_rng(2)
    q, v, tau = mech.random_configuration(rng, (5,)), rng.normal(size=(5, mech.nv)), rng.normal(size=(5, mech.nv))
    qdd = mechanics.forward_dynamics(mech, q, v, tau, "aba").qdd
    tau_back = mechanics.inverse_dynamics(mech, q, v, qdd)
    assert relative(tau_back, tau) < 1e-10
    assert np.array_equal(tau_back[3], mechanics.inverse_dynamics(mech, q[3], v[3], qdd[3]))  # (state by state: bits)
    assert relative(mechanics.inverse_dynamics(mech, q, v, qdd, backend="numpy"), tau_back) < 1e-12


def test_bad_accelerations_are_named():
    mech = mechanics.models.four_bar()
    q, zeros = mech.neutral_configuration(), np.zeros(mech.nv)
    with pytest.raises(ValueError, match="qdd has shape"):
        mechanics.inverse_dynamics(mech, q, zeros, np.zeros(mech.nv + 1))
    with pytest.raises(ValueError, match="qdd contains NaN"):  # (one plain state: the fast path names it too)
        mechanics.inverse_dynamics(mech, q, zeros, np.full(mech.nv, np.nan))
