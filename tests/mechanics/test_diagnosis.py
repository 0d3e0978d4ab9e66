"""Why a run did not converge (:mod:`mechanics.diagnosis`): each cause named, and confirmed by Pinocchio.

The oracle is Pinocchio's own view of the same state -- its constraint
Jacobian, ``crba`` and the constraint drift -- from which the test computes,
with numpy alone, what no motion can remove (the least-squares gap), how far
the constraint rows are from dependent, and the Delassus matrix's eigenvalues.
"""
import dataclasses
import warnings

import numpy as np
import pinocchio as pin
import pytest

import mechanics
from mechanics import models
from tests.mechanics.pinocchio_oracle import _drift, constraint_jacobian, pinocchio_model_of
from tests.mechanics.random_mechanisms import random_state
from tests.mechanics.test_convergence import pinned_state, pinned_twice

ITERATING = ["proxbbo", "proxpv", "lcaba"]


def run(mech, q, v, tau, **kwargs):
    """forward_dynamics with its ConvergenceWarnings recorded: (result, their texts)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = mechanics.forward_dynamics(mech, q, v, tau, **kwargs)
    return result, [str(w.message) for w in caught if issubclass(w.category, mechanics.ConvergenceWarning)]


def pinocchio_view(mech, q, v) -> dict:
    """The state through Pinocchio: the least-squares gap of ``J ddq = -gamma``, the relative smallest singular
    value of the row-scaled ``J``, and the eigenvalues of ``D = J M^-1 J'``."""
    model, cms = pinocchio_model_of(mech)
    data = model.createData()
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    J = constraint_jacobian(model, data, cms, q)
    pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))
    gamma = np.concatenate([_drift(model, data, cm) for cm in cms])
    ddq = np.linalg.lstsq(J, -gamma, rcond=1e-10)[0]
    norms = np.linalg.norm(J, axis=1)
    rows = J / np.where(norms > 0, norms, 1.0)[:, None]  # (a row no joint moves stays zero)
    s = np.linalg.svd(rows, compute_uv=False)
    s = s[s > 1e-10 * s[0]]
    return {"gap": float(np.max(np.abs(J @ ddq + gamma))), "dependence": float(s[-1] / s[0]),
            "rank": len(s), "eigenvalues": np.linalg.eigvalsh(J @ np.linalg.solve(M, J.T))}


def near_singular():
    """fig4 within 1e-4 rad of its neutral configuration, where its two loops' rows lose rank (4 of 6), at rest."""
    mech = models.fig4()
    q = mech.neutral_configuration() + 1e-4 * np.random.default_rng(0).normal(size=mech.nv)
    return mech, q, np.zeros(mech.nv), np.ones(mech.nv)


def heavy_end():
    """fig4 with link 11 10^10 times heavier than its rod, at a regular configuration: its rows well apart."""
    fig4 = models.fig4()
    links = [dataclasses.replace(l, mass=l.mass * 1e10, inertia=l.inertia * 1e10) if l.name == "11" else l
             for l in fig4.links]
    mech = mechanics.Mechanism(links, fig4.constraints, fig4.gravity, "fig4_heavy_end")
    return mech, mech.random_configuration(np.random.default_rng(4)), np.zeros(mech.nv), np.ones(mech.nv)


def regular():
    mech = models.fig4()
    rng = np.random.default_rng(3)
    return mech, mech.random_configuration(rng), rng.normal(size=mech.nv), rng.normal(size=mech.nv)


CASES = {  # cause -> (state, settings, what the warning says helps)
    "inconsistent": (lambda: (pinned_twice(), *pinned_state(np.array([0.4, 1.5, -2.0]))), {}, "check the constraints"),
    "singular configuration": (near_singular, {}, "move away from this configuration"),
    "ill-conditioned": (heavy_end, {}, "raise max_iter, or mu"),
    "max_iter": (regular, {"max_iter": 1}, "raise max_iter"),
}


def confirm(cause: str, view: dict, mu: float) -> None:
    """What Pinocchio's view of the state must show for ``cause``."""
    smallest = view["eigenvalues"][len(view["eigenvalues"]) - view["rank"]]
    if cause == "inconsistent":
        assert view["gap"] > 1.0
        return
    assert view["gap"] < 1e-9  # consistent: some motion meets every constraint
    if cause == "max_iter":
        assert 1.0 / (1.0 + mu * smallest) < 0.01  # fast contraction: only the cap stopped it
    elif cause == "singular configuration":
        assert view["dependence"] < 1e-3 and 1.0 / (1.0 + mu * smallest) > 0.9
    else:  # ill-conditioned: rows well apart, the Delassus matrix ill-conditioned
        assert view["dependence"] > 0.05 and view["eigenvalues"][-1] / smallest > 1e9
        assert 1.0 / (1.0 + mu * smallest) > 0.9


@pytest.mark.parametrize("cause", sorted(CASES))
def test_each_cause_is_named_and_pinocchio_confirms_it(cause):
    make, settings, remedy = CASES[cause]
    mech, q, v, tau = make()
    confirm(cause, pinocchio_view(mech, q, v), mu=1e6)
    for algorithm in ITERATING:
        for backend in ("auto", "numpy"):
            result, reported = run(mech, q, v, tau, algorithm=algorithm, backend=backend, **settings)
            assert result.converged is False and result.cause == cause, (algorithm, backend, result.cause)
            assert len(reported) == 1 and remedy in reported[0], (algorithm, reported)
            others = [c for c in CASES if c != cause and c != "max_iter"]  # ("max_iter=" is in every text)
            assert not any(f"Cause: {CASES[c][2]}" in reported[0] for c in others)


def test_a_state_that_converges_has_no_cause():
    mech, q, v, tau = regular()
    result, reported = run(mech, q, v, tau)
    assert result.converged is True and result.cause == "" and not reported


def test_causes_are_told_apart_per_batch_element():
    """One fig4 batch: a regular state, a near-singular one, and its exactly singular neutral configuration with
    velocities the loops cannot follow there (rank 4 of 6: the drift leaves the rows' range)."""
    mech, q_near, v_near, tau = near_singular()
    _, q_regular, v_regular, _ = regular()
    q_neutral, v_neutral = mech.neutral_configuration(), np.random.default_rng(0).normal(size=mech.nv)
    view = pinocchio_view(mech, q_neutral, v_neutral)
    assert view["rank"] == 4 and view["gap"] > 0.1  # Pinocchio: singular, and inconsistent at these velocities
    Q, V = np.stack([q_regular, q_near, q_neutral]), np.stack([v_regular, v_near, v_neutral])
    expected = ["", "singular configuration", "inconsistent"]
    for backend in ("auto", "numpy"):
        result, reported = run(mech, Q, V, tau, backend=backend)
        assert result.cause.tolist() == expected and result.converged.tolist() == [True, False, False], backend
        assert len(reported) == 1 and "in 2 of 3 batch elements" in reported[0]
        assert "Cause of 1: a singular configuration" in reported[0]
        assert "Cause of 1: the constraints are inconsistent" in reported[0] and "rank 4 of 6" in reported[0]


def test_a_run_that_settles_above_tol_says_round_off_is_the_floor():
    """proxLTL on a chain of welded loops near a singular configuration: the iterations contract fast but the
    accelerations settle with the residual near eps cond(D) -- not the cap (it stops itself before max_iter)."""
    mech = models.chain_of_loops()
    q, v, tau = (a[1] for a in random_state(mech, np.random.default_rng(5), (4,)))
    view = pinocchio_view(mech, q, v)
    smallest = view["eigenvalues"][len(view["eigenvalues"]) - view["rank"]]
    assert view["gap"] < 1e-9 and 1.0 / (1.0 + 1e6 * smallest) < 0.5 and view["dependence"] < 1e-2
    result, reported = run(mech, q, v, tau, algorithm="proxltl", max_iter=500)
    assert result.converged is False and result.iterations < 500 and result.cause == "singular configuration"
    assert "round-off floor" in reported[0] and "loosen tol" in reported[0] and "raise max_iter" not in reported[0]


def test_soft_names_the_cause_with_mu_as_the_remedy():
    """Under ``soft`` an ill-conditioned state needs a larger mu, and there is no max_iter to raise."""
    mech, q, v, tau = heavy_end()
    result, reported = run(mech, q, v, tau, algorithm="pv_soft")
    assert result.converged is False and result.cause == "ill-conditioned"
    assert "raise mu" in reported[0] and "raise max_iter" not in reported[0]


def test_the_joint_space_rows_are_pinocchios():
    """``joint_space_constraints``: J, the drift and M equal Pinocchio's on a regular fig4 state."""
    from mechanics.diagnosis import joint_space_constraints

    mech, q, v, _ = regular()
    J, c, M = joint_space_constraints(mech, q, v)
    model, cms = pinocchio_model_of(mech)
    data = model.createData()
    M_pin = pin.crba(model, data, q)
    J_pin = constraint_jacobian(model, data, cms, q)
    pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))
    gamma = np.concatenate([_drift(model, data, cm) for cm in cms])
    assert np.allclose(J, J_pin, atol=1e-12) and np.allclose(c, -gamma, atol=1e-12)
    assert np.allclose(M, np.triu(M_pin) + np.triu(M_pin, 1).T, atol=1e-12)


def test_the_cause_is_found_when_read_where_the_warning_is_ignored():
    """With the warning ignored the dense check waits until ``cause`` is read (no cost to a loop that ignores
    it), and finds the same."""
    mech, q, v, tau = near_singular()
    for backend in ("auto", "numpy"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.simplefilter("ignore", mechanics.ConvergenceWarning)
            result = mechanics.forward_dynamics(mech, np.stack([q, q]), np.stack([v, v]), tau, backend=backend)
        assert not caught and result.cause.tolist() == ["singular configuration"] * 2
