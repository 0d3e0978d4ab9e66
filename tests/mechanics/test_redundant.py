"""Redundant constraints: prox and alm converge to the least-squares solution, hard refuses."""
import warnings
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import elimination
import mechanics
from mechanics import Mechanism
from mechanics.pinocchio_io import from_pinocchio
from tests.mechanics.pinocchio_oracle import (
    ALM_MU, constraint_jacobian, dense_reference, hands_and_cube, pinocchio_model_of, random_state as pinocchio_state, scenario,
)
from tests.mechanics.random_mechanisms import mechanisms, random_state


def relative(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


def _duplicated(name):
    if name == "ur5_double_weld":
        model, cms, q = scenario("ur5_6d")
    else:
        model, cms, q = hands_and_cube(2)
    return model, list(cms) * 2, q  # every constraint listed twice


@pytest.mark.parametrize("name", ["ur5_double_weld", "two_hands_cube_double_contacts"])
def test_prox_and_alm_converge_to_the_least_squares_solution(name):
    model, cms, q = _duplicated(name)
    rng = np.random.default_rng(1)
    _, v, tau = pinocchio_state(model, rng)
    mech = from_pinocchio(model, cms)
    data = model.createData()
    J = constraint_jacobian(model, data, cms, q)
    assert np.linalg.matrix_rank(J) < J.shape[0]  # really redundant
    ddq, forces = dense_reference(model, cms, q, v, tau)  # least squares: ddq unique, forces min-norm
    for algorithm in ("proxbbo", "proxpv", "proxltl", "min_fill", "lcaba"):
        result = mechanics.forward_dynamics(mech, q, v, tau, algorithm=algorithm, tol=1e-12, max_iter=200)
        assert relative(result.qdd, ddq) < 1e-8, algorithm
        assert relative(J.T @ result.forces, J.T @ forces) < 1e-7, algorithm  # same generalized force
        assert result.residual < 1e-8, algorithm


@pytest.mark.parametrize("mu", [1e11, 1e12])
def test_prox_solves_duplicated_contacts_at_a_pinocchio_users_mu(mu):
    """Pinocchio's mu=1e-12 is mu=1e12 here: the 1/mu prior keeps the multipliers of dependent
    contacts regular down to round-off (refused at mu >= 1e11 before)."""
    model, cms, q = _duplicated("two_hands_cube_double_contacts")
    _, v, tau = pinocchio_state(model, np.random.default_rng(4))
    mech = from_pinocchio(model, cms)
    ddq, _ = dense_reference(model, cms, q, v, tau)
    for algorithm in ("proxbbo", "proxpv"):
        result = mechanics.forward_dynamics(mech, q, v, tau, algorithm=algorithm, mu=mu, tol=1e-12, max_iter=50)
        assert result.converged and relative(result.qdd, ddq) < 1e-8, algorithm


@pytest.mark.parametrize("name", ["ur5_double_weld", "two_hands_cube_double_contacts"])
def test_hard_policy_refuses_redundant_constraints_and_points_to_prox(name):
    model, cms, q = _duplicated(name)
    _, v, tau = pinocchio_state(model, np.random.default_rng(2))
    mech = from_pinocchio(model, cms)
    with pytest.raises(elimination.SingularProblemError, match="prox"):
        mechanics.forward_dynamics(mech, q, v, tau, algorithm="pv")


def test_a_full_rank_grasp_is_solved_by_every_algorithm():
    """The two-hand grasp as built here has independent contacts (rank 24 of 38)."""
    model, cms, q = hands_and_cube(2)
    _, v, tau = pinocchio_state(model, np.random.default_rng(3))
    mech = from_pinocchio(model, cms)
    ddq, forces = dense_reference(model, cms, q, v, tau)
    for algorithm in ("pv", "proxbbo", "lcaba", "proxltl"):
        result = mechanics.forward_dynamics(mech, q, v, tau, algorithm=algorithm, tol=1e-12)
        assert relative(result.qdd, ddq) < 1e-8 and relative(result.forces, forces) < 1e-7, algorithm


@settings(max_examples=25)
@given(mechanisms(max_links=6, max_constraints=2, min_constraints=1), st.integers(0, 2**31 - 1))
def test_random_mechanisms_with_every_constraint_twice(mech, seed):
    """Duplicated constraints: qdd is still unique (Pinocchio's least-squares KKT).  prox and alm reach it
    wherever the constraints stated once are independent, and are right whenever they say they converged;
    hard refuses, or -- where the duplicates happen to stay solvable -- is right.  None is silent."""
    twice = Mechanism(mech.links, list(mech.constraints) + [replace(c, name=f"{c.name}_again") for c in mech.constraints],
                      name="twice")
    rng = np.random.default_rng(seed)
    q, v, tau = random_state(twice, rng)
    model, cms = pinocchio_model_of(twice)
    J = constraint_jacobian(model, model.createData(), cms, q)
    once = J[: J.shape[0] // 2]
    independent = np.linalg.matrix_rank(once, tol=1e-3 * max(1.0, np.abs(once).max())) == once.shape[0]
    event(f"constraints stated once are {'independent' if independent else 'dependent'}")
    ddq, forces = dense_reference(model, cms, q, v, tau)
    for name in ("proxbbo", "proxltl", "lcaba"):
        mu = ALM_MU if name == "lcaba" else 1e6
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mechanics.ConvergenceWarning)
            result = mechanics.forward_dynamics(twice, q, v, tau, algorithm=name, mu=mu, tol=1e-12, max_iter=300)
        assert result.converged or not independent, name
        if result.converged:
            assert relative(result.qdd, ddq) < 1e-6, name
            assert relative(J.T @ result.forces, J.T @ forces) < 1e-5, name
    try:
        result = mechanics.forward_dynamics(twice, q, v, tau, algorithm="pv")
    except elimination.SingularProblemError as error:
        assert "prox" in str(error)
    else:
        assert relative(result.qdd, ddq) < 1e-6
