"""Convergence status: ``converged`` per batch element, ConvergenceWarning, MuConventionWarning.

Inconsistent mechanisms come with their least-squares residual in closed form
or from Pinocchio: that residual is what no motion can remove, so every policy
must end there and say it has not converged (``hard`` refuses).
"""
import warnings

import numpy as np
import pinocchio as pin
import pytest

import elimination
import mechanics
from mechanics import GROUND, Connect, General, Joint, Link, Mechanism, Weld, at, models
from tests.mechanics.pinocchio_oracle import _drift, dense_reference, pinocchio_model_of
from tests.mechanics.random_mechanisms import random_state
from tests.mechanics.test_dynamics import embedding_stopped_open

ITERATING = ["proxbbo", "proxpv", "lcaba"]  # prox and alm
MUS = [1e3, 1e4, 1e6, 1e8]
CONSTRAINED = [a for a, algo in mechanics.ALGORITHMS.items() if algo.scope == "any"]


def run(mech, q, v, tau, **kwargs):
    """forward_dynamics with every warning recorded: (result, ConvergenceWarnings, MuConventionWarnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = mechanics.forward_dynamics(mech, q, v, tau, **kwargs)
    of = lambda kind: [str(w.message) for w in caught if issubclass(w.category, kind)]  # noqa: E731
    return result, of(mechanics.ConvergenceWarning), of(mechanics.MuConventionWarning)


def pinned_twice():
    """A free body pinned to the ground at two points 1 m apart along its x axis.

    Both points can keep still only while the body spins about the line through
    them: with angular velocity w (body frame) the centripetal accelerations
    differ by |w x d|^2 / |d| along d, so the least-squares compromise leaves
    (w_y^2 + w_z^2) / 2 on the x rows of both constraints.
    """
    body = Link("body", GROUND, Joint("free"), mass=2.0, com=np.array([0.5, 0.0, 0.0]), inertia=np.diag([0.1, 0.2, 0.3]))
    return Mechanism([body], [Connect("body", GROUND, at(0, 0, 0), at(0, 0, 0)),
                              Connect("body", GROUND, at(1, 0, 0), at(1, 0, 0))], name="pinned_twice")


def pinned_state(w):
    q = np.array([0.1, -0.2, 0.3, 0.0, 0.0, 0.0, 1.0])
    v = np.concatenate([[0.0, 0.0, 0.0], w])
    return q, v, np.array([0.3, -0.1, 0.2, 0.05, 0.0, -0.1])


def held_at_two_accelerations(k1, k2):
    """A free body whose spatial acceleration relative to the ground is prescribed twice, to k1 and to k2.

    Each constraint alone is met (a free joint reaches any acceleration); together
    the least-squares answer is the mean, leaving max |k1 - k2| / 2.
    """
    I6 = np.eye(6)
    body = Link("body", GROUND, Joint("free"))
    return Mechanism([body], [General(("body", GROUND), (I6, -I6), k1, "first"),
                              General(("body", GROUND), (I6, -I6), k2, "second")], name="held_twice")


def arm_welded_twice():
    """A two-hinge arm whose tip is welded to the ground at two places (six rows each, two joints)."""
    links = [Link("upper", GROUND, Joint("revolute", "z")), Link("lower", "upper", Joint("revolute", "x"), at(1.0))]
    return Mechanism(links, [Weld("lower", GROUND, at(0.5), at(1.5)), Weld("lower", GROUND, at(1.0), at(2.0))],
                     name="arm_welded_twice")


def least_squares_residual(mech, q, v, tau):
    """Pinocchio's least-squares answer (dense KKT, lstsq) and the constraint acceleration it leaves."""
    model, cms = pinocchio_model_of(mech)
    ddq, _ = dense_reference(model, cms, q, v, tau)
    data = model.createData()
    pin.forwardKinematics(model, data, q, v, ddq)
    return ddq, max(np.max(np.abs(_drift(model, data, cm))) for cm in cms)


INCONSISTENT = {
    "pinned_twice": lambda: (pinned_twice(), *pinned_state(np.array([0.4, 1.5, -2.0])), (1.5**2 + 2.0**2) / 2),
    "held_twice": lambda: (held_at_two_accelerations(np.zeros(6), np.array([0.0, 0.0, 0.0, 0.8, 0.0, 0.0])),
                           np.array([0, 0, 0, 0, 0, 0, 1.0]), np.zeros(6), np.zeros(6), 0.4),
}


@pytest.mark.parametrize("mu", MUS)
@pytest.mark.parametrize("case", sorted(INCONSISTENT))
def test_an_inconsistent_mechanism_is_not_converged_under_every_policy(case, mu):
    mech, q, v, tau, left = INCONSISTENT[case]()
    for algorithm in ITERATING + ["pv_soft"]:
        result, reported, _ = run(mech, q, v, tau, algorithm=algorithm, mu=mu)
        assert result.converged is False and len(reported) == 1, algorithm
        assert "inconsistent" in reported[0] and mech.name in reported[0] and algorithm in reported[0]
        assert f"tol={1e-10:g}" in reported[0] and "max_iter=50" in reported[0]
        # the residual no motion can remove, up to the penalty's own share for soft (~ force / mu)
        assert np.isclose(result.residual, left, rtol=1e-6 if algorithm != "pv_soft" else 20.0 / mu), algorithm
    with pytest.raises(elimination.SingularProblemError):
        mechanics.forward_dynamics(mech, q, v, tau, algorithm="pv", mu=mu)


def test_an_arm_welded_at_two_places_ends_at_pinocchios_least_squares_answer():
    mech = arm_welded_twice()
    rng = np.random.default_rng(5)
    q, v, tau = mech.random_configuration(rng), rng.normal(size=2), rng.normal(size=2)
    ddq, left = least_squares_residual(mech, q, v, tau)
    assert left > 0.1  # inconsistent at these velocities
    for algorithm in ITERATING + ["pv_soft"]:
        result, reported, _ = run(mech, q, v, tau, algorithm=algorithm)
        assert result.converged is False and len(reported) == 1, algorithm
        assert np.isclose(result.residual, left, rtol=1e-4), algorithm
        assert np.allclose(result.qdd, ddq, rtol=1e-4, atol=1e-6), algorithm
    with pytest.raises(elimination.SingularProblemError):
        mechanics.forward_dynamics(mech, q, v, tau, algorithm="pv")


def test_a_free_body_welded_at_two_places_is_consistent():
    """Acceleration-level welds to the ground both say a_body = a_ground, wherever they sit: redundant, not inconsistent."""
    body = Link("body", GROUND, Joint("free"))
    mech = Mechanism([body], [Weld("body", GROUND, at(0, 0, 0), at(0, 0, 0)), Weld("body", GROUND, at(1, 0, 0), at(1, 0, 0))])
    q, v, tau = np.array([0, 0, 0, 0, 0, 0, 1.0]), np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]), np.ones(6)
    for algorithm in ITERATING + ["pv_soft"]:
        result, reported, _ = run(mech, q, v, tau, algorithm=algorithm)
        assert result.converged is True and not reported, (algorithm, reported)


def test_spinning_about_the_line_through_both_pins_is_consistent():
    mech = pinned_twice()
    for algorithm in ITERATING + ["pv_soft"]:
        result, reported, _ = run(mech, *pinned_state(np.array([1.3, 0.0, 0.0])), algorithm=algorithm)
        assert result.converged is True and not reported, (algorithm, reported)


@pytest.mark.parametrize("model", sorted(models.MODELS))
def test_consistent_mechanisms_converge_at_the_default_settings_without_warnings(model):
    mech = models.MODELS[model]()
    q, v, tau = random_state(mech, np.random.default_rng(21))
    for algorithm in CONSTRAINED:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = mechanics.forward_dynamics(mech, q, v, tau, algorithm=algorithm)
        if embedding_stopped_open(mech, q, result, algorithm):  # (fig4's loops, opened past their coordinates)
            continue
        assert result.converged is True and not caught, (algorithm, [str(w.message) for w in caught])
        assert isinstance(result.iterations, int) and isinstance(result.residual, float)


@pytest.mark.parametrize("algorithm", ["proxbbo", "lcaba"])
def test_pinocchios_mu_warns_that_ours_is_its_inverse(algorithm):
    mech = models.four_bar()
    q, v, tau = random_state(mech, np.random.default_rng(2))
    result, reported, conventions = run(mech, q, v, tau, algorithm=algorithm, mu=1e-12)
    assert len(conventions) == 1 and "Pinocchio's mu=1e-12 is mu=1e+12 here" in conventions[0]
    assert issubclass(mechanics.MuConventionWarning, UserWarning)
    assert result.converged is False and len(reported) == 1  # and the constraints are barely enforced
    for policy_free in ("pv", "pv_soft"):  # mu is not Pinocchio's proximal parameter there
        assert not run(mech, q, v, tau, algorithm=policy_free, mu=0.5)[2]


@pytest.mark.parametrize("algorithm", ITERATING)
def test_one_iteration_on_a_loop_warns_and_is_not_converged(algorithm):
    mech = models.fig4()
    q, v, tau = random_state(mech, np.random.default_rng(3))
    result, reported, _ = run(mech, q, v, tau, algorithm=algorithm, max_iter=1)
    assert result.converged is False and result.iterations == 1 and len(reported) == 1
    assert "stopped at max_iter=1" in reported[0] and "raise max_iter" in reported[0]
    assert issubclass(mechanics.ConvergenceWarning, RuntimeWarning)


def test_a_soft_penalty_too_small_to_hold_says_so():
    """At mu = 10 the digit leg's loops barely hold: the soft answer is flagged, with the advice to raise mu."""
    mech = models.digit_leg()
    q, v, tau = random_state(mech, np.random.default_rng(3))
    result, reported, _ = run(mech, q, v, tau, algorithm="pv_soft", mu=10.0)
    assert result.converged is False and "raise mu" in reported[0]
    assert run(mech, q, v, tau, algorithm="pv_soft")[0].converged is True


def test_a_batch_reports_convergence_per_element():
    """Element 0 spins about the line through both pins (consistent), element 1 does not."""
    mech = pinned_twice()
    states = [pinned_state(np.array([1.3, 0.0, 0.0])), pinned_state(np.array([0.4, 1.5, -2.0]))]
    Q, V, T = (np.stack(parts) for parts in zip(*states))
    for algorithm in ITERATING + ["pv_soft"]:
        batched, reported, _ = run(mech, Q, V, T, algorithm=algorithm)
        assert batched.converged.tolist() == [True, False] and len(reported) == 1, algorithm
        assert "in 1 of 2 batch elements" in reported[0]
        assert batched.iterations.shape == batched.residual.shape == (2,)
        assert batched.residual[0] < (1e-8 if algorithm != "pv_soft" else 1e-4)  # soft: force / mu
        assert np.isclose(batched.residual[1], (1.5**2 + 2.0**2) / 2, rtol=1e-4)
        for i, state in enumerate(states):  # an element that has converged stops there: as an unbatched call
            single, _, _ = run(mech, *state, algorithm=algorithm)
            assert batched.iterations[i] == single.iterations, algorithm
            assert np.allclose(batched.qdd[i], single.qdd, rtol=1e-9, atol=1e-9), algorithm


def test_compare_notes_a_run_that_did_not_converge():
    from viz.compare import compare

    mech, *_ = INCONSISTENT["pinned_twice"]()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the note carries it: nothing leaks
        rows = {r.algorithm: r for r in compare(mech, ["proxbbo", "lcaba", "pv_soft"], repeat=1)}
    for row in rows.values():  # with the cause a dense check finds, and what helps
        assert row.note == f"not converged (residual {row.residual:.1e}): inconsistent -- fix the constraints or the velocities", row
    assert compare(models.four_bar(), ["proxbbo"], repeat=1)[0].note == ""
