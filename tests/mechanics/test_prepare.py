"""The prepared call: validated and planned once, then the same answers as forward_dynamics."""
import warnings

import numpy as np
import pytest

import mechanics
from mechanics import models
from tests.mechanics.pinocchio_oracle import dense_reference, pinocchio_model_of


def _states(mech, rng, count):
    return [(mech.random_configuration(rng), rng.normal(size=mech.nv), rng.normal(size=mech.nv)) for _ in range(count)]


@pytest.mark.parametrize("algorithm", ["lcaba", "proxbbo", "proxltl", "pv"])
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_prepared_call_answers_as_forward_dynamics_and_as_pinocchio(algorithm, backend):
    """Bit for bit as forward_dynamics with the same settings, whatever was called before; and against
    the dense KKT solve of the same mechanism built independently in Pinocchio."""
    mech = models.fig4()
    model, cms = pinocchio_model_of(mech)
    dynamics = mechanics.prepare(mech, algorithm, mu=1e8, tol=1e-12, backend=backend)
    rng = np.random.default_rng(11)
    states = _states(mech, rng, 3)
    results = [dynamics(q, v, tau) for q, v, tau in states]
    for (q, v, tau), result in zip(reversed(states), reversed(results)):  # another call history
        again = dynamics(q, v, tau)
        direct = mechanics.forward_dynamics(mech, q, v, tau, algorithm=algorithm, mu=1e8, tol=1e-12, backend=backend)
        assert np.array_equal(again.qdd, result.qdd) and np.array_equal(direct.qdd, result.qdd)
        assert np.array_equal(direct.forces, result.forces) and direct.iterations == result.iterations
        ddq, _ = dense_reference(model, cms, q, v, tau)
        assert np.max(np.abs(result.qdd - ddq)) <= 1e-8 * max(1.0, np.max(np.abs(ddq)))


def test_a_prepared_call_batches_and_warm_starts():
    mech = models.fig4()
    dynamics = mechanics.prepare(mech, "proxbbo", tol=1e-11)
    rng = np.random.default_rng(2)
    Q, V, T = (np.stack(x) for x in zip(*_states(mech, rng, 4)))
    batched = dynamics(Q, V, T)
    for i in range(4):
        single = dynamics(Q[i], V[i], T[i])
        assert np.max(np.abs(batched.qdd[i] - single.qdd)) <= 1e-12 * max(1.0, np.max(np.abs(single.qdd)))
    warm = dynamics(Q, V, T, forces0=batched.forces)
    assert np.all(warm.iterations <= batched.iterations) and np.all(warm.converged)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("name", ["proxbbo", "lcaba", "pv"])
def test_one_state_warm_started_from_several_force_guesses_is_a_batch_of_them(name, backend):
    """``forces0 (k, m)`` beside one state ``(q, v, tau)``: a batch of ``k`` warm starts, each the call with its
    own guess (the numpy path refused it: the proximal prior broadcast its centre to the state's batch alone)."""
    mech = models.fig4()
    q, v, tau = _states(mech, np.random.default_rng(4), 1)[0]
    guesses = np.random.default_rng(5).normal(size=(3, mech.constraint_dim))
    dynamics = mechanics.prepare(mech, name, mu=1e6, backend=backend)
    batch = dynamics(q, v, tau, forces0=guesses)
    assert batch.qdd.shape == (3, mech.nv) and batch.iterations.shape == (3,)
    for i in range(3):
        single = dynamics(q, v, tau, forces0=guesses[i])
        assert batch.iterations[i] == single.iterations
        if backend == "numba":  # (lanes and the per-state kernel: bit for bit; numpy's batched products: round-off)
            assert np.array_equal(batch.qdd[i], single.qdd)
        assert np.max(np.abs(batch.qdd[i] - single.qdd)) <= 1e-12 * max(1.0, np.max(np.abs(single.qdd)))
    model, cms = pinocchio_model_of(mech)
    ddq, _ = dense_reference(model, cms, q, v, tau)
    assert np.all(batch.converged) and np.max(np.abs(batch.qdd - ddq)) <= 1e-8 * max(1.0, np.max(np.abs(ddq)))


def test_prepare_plans_once_and_checks_its_settings_once():
    """The plan is made at prepare time: calls neither analyse nor look anything up; bad settings are
    refused there, bad states at the call."""
    mech = models.fig4()
    dynamics = mechanics.prepare(mech, "lcaba", mu=1e6)
    plan = dynamics.plan
    rng = np.random.default_rng(0)
    for q, v, tau in _states(mech, rng, 2):
        dynamics(q, v, tau)
    assert dynamics.plan is plan and "lcaba" in repr(dynamics)
    with pytest.raises(ValueError, match="mu"):
        mechanics.prepare(mech, "lcaba", mu=-1.0)
    with pytest.raises(ValueError, match="backend"):
        mechanics.prepare(mech, "lcaba", backend="gpu")
    with pytest.raises(ValueError, match="lcaba"):  # constrained_aba does not take coupled loops
        mechanics.prepare(mech, "constrained_aba")
    with pytest.raises(ValueError):
        dynamics(np.zeros(mech.nq + 1), np.zeros(mech.nv), np.zeros(mech.nv))


@pytest.mark.parametrize("backend", ["auto", "numpy"])
def test_warnings_point_at_the_callers_line(backend):
    """MuConventionWarning at prepare, ConvergenceWarning at the call: both name this file, for
    forward_dynamics too, on the compiled path and on the numpy path."""
    mech = models.four_bar()
    q, v, tau = mech.neutral_configuration(), np.ones(mech.nv), np.ones(mech.nv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dynamics = mechanics.prepare(mech, "proxbbo", mu=0.5, max_iter=1, backend=backend)
        dynamics(q, v, tau)
        mechanics.forward_dynamics(mech, q, v, tau, algorithm="proxbbo", mu=0.5, max_iter=1, backend=backend)
    kinds = [(w.category.__name__, w.filename) for w in caught]
    assert ("MuConventionWarning", __file__) in kinds and ("ConvergenceWarning", __file__) in kinds
    assert all(filename == __file__ for _, filename in kinds), kinds
    assert len(kinds) == 4


def test_forward_dynamics_keeps_its_prepared_calls_and_still_warns_each_time():
    """forward_dynamics keeps the prepared calls of its last settings with the mechanism: every answer
    equals a fresh prepared call's bit for bit (settings revisited after others pushed them out, a
    (policies, ordering) pair whose dict is not hashable), and the mu-convention warning is issued on
    every call, at the caller's line."""
    from mechanics.dynamics import PREPARED_KEPT
    from mechanics.algorithms import tree_min_degree

    mech = models.four_bar()
    rng = np.random.default_rng(3)
    q, v, tau = _states(mech, rng, 1)[0]
    settings = [dict(algorithm=a, mu=mu) for a in ("lcaba", "proxbbo", "pv") for mu in (1e4, 1e6, 1e8)]
    assert len(settings) > PREPARED_KEPT
    pair = ({c.name: "alm" for c in mech.constraints}, tree_min_degree)
    for round_ in range(2):
        for kw in settings + [dict(algorithm=pair, mu=1e6)]:
            ours = mechanics.forward_dynamics(mech, q, v, tau, **kw)
            fresh = mechanics.prepare(mech, **kw)(q, v, tau)
            assert np.array_equal(ours.qdd, fresh.qdd) and np.array_equal(ours.forces, fresh.forces), (round_, kw)
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            mechanics.forward_dynamics(mech, q, v, tau, algorithm="lcaba", mu=0.5, max_iter=3)
        mu_warnings = [w for w in caught if issubclass(w.category, mechanics.MuConventionWarning)]
        assert len(mu_warnings) == 1 and mu_warnings[0].filename == __file__
