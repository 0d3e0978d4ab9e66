"""Every algorithm on built-in and random mechanisms: exact per iteration, converged to the reference."""
import warnings

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import elimination
import mechanics
from mechanics import gplc_graph, models
from tests.mechanics.pinocchio_oracle import constraint_dynamics, dense_reference, pinocchio_model_of
from tests.mechanics.random_mechanisms import mechanisms, random_state

CONSTRAINED = [a for a, algo in mechanics.ALGORITHMS.items() if algo.scope == "any"]


def relative(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


def reporting(mech, q, v, tau, **kwargs):
    """``forward_dynamics`` that checks its status: one ConvergenceWarning exactly when ``converged`` is False.

    For runs that may legitimately stop short: one outer iteration, or a soft
    penalty too small for the constraints to hold.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = mechanics.forward_dynamics(mech, q, v, tau, **kwargs)
    reported = [w for w in caught if issubclass(w.category, mechanics.ConvergenceWarning)]
    assert len(reported) == (0 if result.converged else 1), (result.converged, [str(w.message) for w in reported])
    return result


def dense_qdd(mech, q, v, tau, policy, mu=1e6):
    x = gplc_graph(mech, q, v, tau, policy=policy, mu=mu).dense_solve()
    return np.concatenate([x[("qdd", l.name)] for l in mech.links if l.joint.nv], axis=-1)


def embedding_reference(mech):
    """The policies of the dense reference of ``caba``: its embedded constraints exact (``hard``), the others
    as it holds them (``prox``)."""
    chosen = mechanics.policies.resolve_policies("embed", mech)
    return {name: ("hard" if p.name == "embed" else p.name) for name, p in chosen.items()} or "hard"


def opened_where_it_closes(mech, q) -> bool:
    """Whether some loop is open at ``q``: its ends apart (position level)."""
    return max(float(np.max(np.abs(e), initial=0.0)) for e in mech.constraint_error(q).values()) > 1e-8


def embedding_stopped_open(mech, q, result, name) -> bool:
    """Whether ``caba`` stopped short at an open state and said so: its coordinates ``y`` are made for the rank
    the loops have where they close (fig4's two loops: 4 of 6), which an opened planar loop exceeds -- the one
    answer it may give in place of the reference's (at a closed state it must converge)."""
    if name != "caba" or result.converged or result.cause != "open loops":
        return False
    assert opened_where_it_closes(mech, q), name
    return True


def regularized_qdd(mech, q, v, tau, policy, mu):
    """Dense solve of one outer iteration's problem (multipliers at zero).

    The ALM inner problem (and the soft one, ALM at lambda = 0) has the solution of
    the proximal saddle problem with the same mu -- eliminating lambda from it gives
    the penalty -- and the saddle form's KKT is far better conditioned (cond 1e5
    against 5e8 on worst_case at mu = 1e3), so it is the accurate reference.
    """
    if policy == "embed":
        return dense_qdd(mech, q, v, tau, embedding_reference(mech), mu)
    return dense_qdd(mech, q, v, tau, "hard" if policy == "hard" else "prox", mu)



@pytest.mark.parametrize("model", sorted(models.MODELS))
def test_builtin_mechanisms_all_algorithms_agree_with_the_dense_solve(model):
    mech = models.MODELS[model]()
    rng = np.random.default_rng(3)
    q, v, tau = random_state(mech, rng)
    reference = dense_qdd(mech, q, v, tau, "hard")
    for name in CONSTRAINED:
        if name == "pv_soft":  # a different problem: compared where its dense (penalty) solve is accurate
            result = reporting(mech, q, v, tau, algorithm=name, mu=1e2)  # may be too soft to hold: reported
            assert relative(result.qdd, dense_qdd(mech, q, v, tau, "soft", 1e2)) < 1e-9
            continue
        result = mechanics.forward_dynamics(mech, q, v, tau, algorithm=name, mu=1e6, tol=1e-12, max_iter=100)
        if embedding_stopped_open(mech, q, result, name):
            continue
        assert relative(result.qdd, reference) < 1e-8 and result.converged, name
    assert mechanics.forward_dynamics(mech, q, v, tau, algorithm="pv").residual < 1e-8


@pytest.mark.parametrize("model", sorted(models.MODELS))
def test_one_outer_iteration_is_the_exact_regularized_solve(model):
    """Orderings are exact, not only convergent: iteration 1 equals the dense solve of the same graph."""
    mech = models.MODELS[model]()
    q, v, tau = random_state(mech, np.random.default_rng(4))
    for name in CONSTRAINED:
        policy = mechanics.ALGORITHMS[name].policies
        result = reporting(mech, q, v, tau, algorithm=name, mu=1e3, max_iter=1)
        if embedding_stopped_open(mech, q, result, name):
            continue
        assert relative(result.qdd, regularized_qdd(mech, q, v, tau, policy, 1e3)) < 1e-9, name
        if policy in ("alm", "prox"):  # one step at mu = 1e3 leaves a residual ~ force / mu
            assert not result.converged and result.iterations == 1, name


def well_posed_hard(mech, q) -> bool:
    """The hard (PV) problem needs independent constraints: a well-conditioned Delassus matrix."""
    D = mechanics.delassus(mech, q)
    return D.size == 0 or np.linalg.cond(D) < 1e8


@settings(max_examples=40)
@given(mechanisms(), st.integers(0, 2**31 - 1))
def test_random_mechanisms_one_iteration_equals_the_regularized_dense_solve(mech, seed):
    """Every algorithm with multipliers; embedding (``caba``) at random open states leaves the rows its loops
    gain there out by least squares, which this oracle does not say: its random mechanisms are
    tests/mechanics/test_couplings.py's (closed and opened loops, redundant ones, against the KKT on the rows'
    row space)."""
    q, v, tau = random_state(mech, np.random.default_rng(seed))
    hard_ok = well_posed_hard(mech, q)
    for name in (name for name in CONSTRAINED if mechanics.ALGORITHMS[name].policies != "embed"):
        policy = mechanics.ALGORITHMS[name].policies
        if policy == "hard" and not hard_ok:  # ill-conditioned or singular: solved to the constraint, or refused
            try:
                assert mechanics.forward_dynamics(mech, q, v, tau, algorithm=name).residual < 1e-6, name
            except elimination.SingularProblemError as error:
                assert "prox" in str(error)
            continue
        result = reporting(mech, q, v, tau, algorithm=name, mu=1e3, max_iter=1)
        assert relative(result.qdd, regularized_qdd(mech, q, v, tau, policy, 1e3)) < 1e-9, name


@settings(max_examples=40)
@given(mechanisms(), st.integers(0, 2**31 - 1))
def test_random_mechanisms_agree_with_pinocchio(mech, seed):
    """Trees against pinocchio.aba; full-rank constraints against Pinocchio's dense reference."""
    rng = np.random.default_rng(seed)
    q, v, tau = random_state(mech, rng)
    model, cms = pinocchio_model_of(mech)
    dq = 0.3 * rng.normal(size=mech.nv)  # configuration manifold: every joint kind integrates as Pinocchio's
    assert np.allclose(mech.integrate(q, dq), pin.integrate(model, q, dq), atol=1e-12)
    tree = mech.without_constraints()
    assert relative(mechanics.forward_dynamics(tree, q, v, tau, algorithm="aba").qdd,
                    pin.aba(model, model.createData(), q, v, tau)) < 1e-8
    if not cms:
        return
    from tests.mechanics.pinocchio_oracle import constraint_jacobian
    J = constraint_jacobian(model, model.createData(), cms, q)
    assume(np.linalg.matrix_rank(J, tol=1e-6 * max(1.0, np.abs(J).max())) == J.shape[0])
    ddq, forces = dense_reference(model, cms, q, v, tau)
    for name in ("pv", "proxbbo", "proxltl", "min_fill"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", mechanics.ConvergenceWarning)
            result = mechanics.forward_dynamics(mech, q, v, tau, algorithm=name, tol=1e-12, max_iter=200)
        assert bool(caught) == (not result.converged), name  # an unconverged answer is always reported
        if not result.converged:
            # A nearly dependent pair of constraints (Delassus condition ~1e8) slows the proximal iteration
            # to hundreds of steps: so it does Pinocchio's, which must be as slow here, and both finish.
            _, _, pin_iterations = constraint_dynamics(model, cms, q, v, tau, mu_pin=1e-6, max_iter=2000)
            assert pin_iterations > 100, (name, pin_iterations)
            with warnings.catch_warnings():
                warnings.simplefilter("error", mechanics.ConvergenceWarning)
                result = mechanics.forward_dynamics(mech, q, v, tau, algorithm=name, tol=1e-12, max_iter=2000)
        assert relative(result.qdd, ddq) < 1e-6, name  # random geometry can be poorly conditioned
        assert relative(result.forces, forces) < 1e-5, name


def test_batched_states_go_through_one_plan():
    mech = models.fig4()
    rng = np.random.default_rng(8)
    Q, V, T = random_state(mech, rng, (5,))
    batched = mechanics.forward_dynamics(mech, Q, V, T, algorithm="proxbbo")
    for i in range(5):
        single = mechanics.forward_dynamics(mech, Q[i], V[i], T[i], algorithm="proxbbo")
        assert relative(batched.qdd[i], single.qdd) < 1e-9
        assert batched.iterations[i] == single.iterations and batched.converged[i] == single.converged
        assert np.isclose(batched.residual[i], single.residual, rtol=1e-3, atol=1e-13)
    assert batched.qdd.shape == (5, mech.nv) and batched.forces.shape == (5, mech.constraint_dim)
    assert batched.converged.shape == batched.iterations.shape == batched.residual.shape == (5,)


def test_an_explicit_policy_ordering_pair_is_accepted():
    mech = models.four_bar()
    q, v, tau = random_state(mech, np.random.default_rng(9))
    pair = ("prox", mechanics.ALGORITHMS["proxbbo"].ordering)
    assert relative(mechanics.forward_dynamics(mech, q, v, tau, algorithm=pair).qdd,
                    mechanics.forward_dynamics(mech, q, v, tau, algorithm="proxbbo").qdd) < 1e-12


def test_long_cycles_are_solved_at_the_default_mu_without_a_false_singular_error():
    """LCABA's pivots on a long loop fall to ~1e-12 of their penalty contributions (refused before):
    they are suspect, and refinement settles them.  Reference: Pinocchio's recursive
    constraintDynamics (its dense joint-space KKT loses 2e-6 to the chain's conditioning at n=320);
    at n=1000 (beyond what the Pinocchio oracle builds in memory here) the two policies agree."""
    def solve(n, name):
        mech = models.cycle(n)
        rng = np.random.default_rng(n)
        q, v, tau = mech.neutral_configuration(), 0.1 * rng.normal(size=mech.nv), rng.normal(size=mech.nv)
        result = mechanics.forward_dynamics(mech, q, v, tau, algorithm=name)
        assert result.converged, (n, name)
        return mech, (q, v, tau), result.qdd

    mech, state, qdd = solve(320, "lcaba")
    model, cms = pinocchio_model_of(mech)
    ddq, _, iterations = constraint_dynamics(model, cms, *state, mu_pin=1e-6, accuracy=1e-13, max_iter=200)
    assert iterations < 200  # the oracle converged
    assert relative(qdd, ddq) < 1e-8 and relative(solve(320, "proxbbo")[2], ddq) < 1e-8
    assert relative(solve(1000, "lcaba")[2], solve(1000, "proxbbo")[2]) < 1e-8
