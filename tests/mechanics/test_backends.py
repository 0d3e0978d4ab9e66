"""forward_dynamics through the compiled executor equals the numpy path, and both equal Pinocchio."""
import numpy as np
import pytest

import mechanics
from mechanics import models
from tests.mechanics.pinocchio_oracle import ALM_MU, dense_reference, pinocchio_model_of
from tests.mechanics.random_mechanisms import random_state

ALL = ["pv", "proxpv", "proxbbo", "lcaba", "pv_soft", "proxltl", "min_degree", "min_fill"]


def relative(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


@pytest.mark.parametrize("model, rtol", [("fig4", 1e-10), ("digit_leg", 1e-10), ("four_bar", 1e-10), ("chain_of_loops", 1e-8)])
def test_compiled_equals_numpy_on_batches_of_states(model, rtol):
    """Round-off apart (the chain of welded loops is ill-conditioned: 3e-10 between the two orders of summation)."""
    mech = mechanics.models.MODELS[model]()
    q, v, tau = random_state(mech, np.random.default_rng(5), (4,))
    for name in ALL:
        mu = ALM_MU if name == "lcaba" else 1e6
        numpy_run = mechanics.forward_dynamics(mech, q, v, tau, algorithm=name, mu=mu, backend="numpy")
        compiled = mechanics.forward_dynamics(mech, q, v, tau, algorithm=name, mu=mu, backend="numba")
        assert relative(compiled.qdd, numpy_run.qdd) < rtol, name
        if rtol < 1e-9:  # on the ill-conditioned chain, round-off can move a residual across tol
            assert np.array_equal(compiled.iterations, numpy_run.iterations), name
            assert np.array_equal(compiled.converged, numpy_run.converged), name


def test_compiled_proxbbo_and_lcaba_equal_pinocchio():
    mech = models.fig4()
    q, v, tau = random_state(mech, np.random.default_rng(6))
    model, cms = pinocchio_model_of(mech)
    ddq, forces = dense_reference(model, cms, q, v, tau)
    for name, mu in (("proxbbo", 1e6), ("lcaba", ALM_MU)):
        result = mechanics.forward_dynamics(mech, q, v, tau, algorithm=name, mu=mu, tol=1e-12, max_iter=200, backend="numba")
        assert result.converged and relative(result.qdd, ddq) < 1e-9 and relative(result.forces, forces) < 1e-7, name


def test_the_delassus_matrix_partial_plan_stays_on_numpy_and_auto_equals_numba():
    mech = models.four_bar()
    q, v, tau = random_state(mech, np.random.default_rng(7))
    auto = mechanics.forward_dynamics(mech, q, v, tau, algorithm="proxltl", backend="auto")
    assert relative(auto.qdd, mechanics.forward_dynamics(mech, q, v, tau, algorithm="proxltl", backend="numpy").qdd) < 1e-12
    assert mechanics.delassus(mech, q).shape == (mech.constraint_dim, mech.constraint_dim)
