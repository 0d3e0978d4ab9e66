"""The fused compiled dynamics (mechanics.compiled): one kernel per call, answering as the numpy path.

The oracle is the numpy reference path (``backend="numpy"``: Python kinematics, factor objects, the
step-by-step elimination rule), itself checked against Pinocchio and the dense KKT solve elsewhere;
here also directly against Pinocchio's dense solve on random mechanisms of every joint kind.
"""
import warnings

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import elimination
import elimination.program
import mechanics
from mechanics import GROUND, Connect, Coupling, General, Joint, Link, Mechanism, Weld, at, models
from elimination import lanes
from elimination.compiled import (SOLVE_SCRATCH, factorize_maps, factorize_one, factorize_scratch_in, factorize_scratch_size,
                                  factorize_steps, max_front, solve_maps, solve_one, solve_scratch_in)
from elimination.lanes import LANES
from mechanics.compiled_tables import BAD_INPUT, CONVERGED, FALLBACK, OK, STATUS
from mechanics.pinocchio_io import from_pinocchio
from tests.mechanics.pinocchio_oracle import (ALM_MU, constraint_jacobian, dense_reference, hands_and_cube,
                                          pinocchio_model_of, scenario, std_vectors)
from tests.mechanics.random_mechanisms import _pose, mechanisms, random_state

ALGORITHMS = ["pv", "proxpv", "proxbbo", "lcaba", "pv_soft", "proxltl", "min_degree", "min_fill"]


def relative(a, b) -> float:
    return float(np.max(np.abs(a - b), initial=0.0) / max(1.0, np.max(np.abs(b), initial=0.0)))


def _quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(*args, **kwargs)


def _kernel_status(prepared, q, v, tau) -> np.ndarray:
    """The fused kernel's per-state status (OK: its own answer; FALLBACK: the numpy path's)."""
    forces0 = np.zeros((q.shape[0], prepared.mechanism.constraint_dim))
    _, flags = prepared.compiled.run(q, v, tau, forces0, prepared.mu, prepared.tol, prepared.max_iter, prepared.refine)
    return flags[:, STATUS]


@pytest.mark.parametrize("model, rtol", [("fig4", 1e-12), ("four_bar", 1e-12), ("cycle", 1e-12), ("ladder", 1e-12),
                                         ("digit_leg", 1e-12), ("branching", 1e-10), ("worst_case", 1e-10)])
def test_the_fused_kernel_answers_every_algorithm_as_the_numpy_path(model, rtol):
    """Every state answered by the kernel itself (no fallback), to round-off: accelerations, forces (mu times
    round-off for the penalty policies, whose force is mu times a residual), iterations, convergence.
    branching and worst_case (000's deep chain, accelerations over four orders of magnitude) are
    ill-conditioned: the numpy path and the batch kernels of elimination.compiled differ by 1e-11 there too."""
    mech = models.MODELS[model]()
    q, v, tau = random_state(mech, np.random.default_rng(3), (3,))
    for name in ALGORITHMS:
        mu = ALM_MU if name == "lcaba" else 1e6
        fused = mechanics.prepare(mech, name, mu=mu, backend="numba")
        assert fused.compiled is not None, name
        assert np.all(_kernel_status(fused, q, v, tau) == OK), name
        got = fused(q, v, tau)
        ref = mechanics.prepare(mech, name, mu=mu, backend="numpy")(q, v, tau)
        assert relative(got.qdd, ref.qdd) < rtol, name
        penalty = name in ("lcaba", "pv_soft")
        assert relative(got.forces, ref.forces) < (mu * 1e-13 if penalty else 100 * rtol), name
        assert np.array_equal(got.converged, ref.converged), name
        if rtol <= 1e-12:  # where round-off is 1e-11, it can move a residual across tol=1e-10: one more iteration
            assert np.array_equal(got.iterations, ref.iterations), name
        for link in mech.links:
            assert relative(got.link_accelerations[link.name], ref.link_accelerations[link.name]) < rtol, name
        assert np.allclose(got.residual, ref.residual, rtol=0, atol=1e-9), name


def kkt_condition(model, cms, q) -> float:
    """Condition number of the dense KKT matrix ``[[M, J'], [J, 0]]`` at ``q`` (Pinocchio's M and J)."""
    data = model.createData()
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    J = constraint_jacobian(model, data, cms, q)
    m = J.shape[0]
    return float(np.linalg.cond(np.block([[M, J.T], [J, np.zeros((m, m))]])))


def penalized_condition(model, cms, q, mu: float) -> float:
    """Condition number of ``M + mu J'J`` at ``q``: what a penalty policy's elimination solves."""
    data = model.createData()
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    J = constraint_jacobian(model, data, cms, q)
    return float(np.linalg.cond(M + mu * J.T @ J))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mechanisms(max_links=6, max_constraints=2), st.integers(0, 2**31 - 1),
       st.sampled_from(["proxbbo", "lcaba", "pv_soft", "proxltl"]))
def test_random_mechanisms_of_every_joint_kind_equal_pinocchio_and_the_numpy_path(mech, seed, name):
    """Kinematics of every joint kind, Weld and Connect to links and to the ground, through the kernel: the
    numpy path's answer to round-off times the condition of what is solved (random inertias and poses make
    nearly singular mechanisms: the forward error of two stable solves differs by that much; 1e-11 at
    least): the KKT matrix, and for the soft and alm policies ``M + mu J'J`` too, as ``mu K'K`` enters
    their link pivots; Pinocchio's dense solve to 1e-5."""
    q, v, tau = random_state(mech, np.random.default_rng(seed), (2,))
    try:
        ref = _quiet(mechanics.forward_dynamics, mech, q, v, tau, algorithm=name, mu=1e8, backend="numpy")
    except elimination.SingularProblemError:
        with pytest.raises(elimination.SingularProblemError):
            _quiet(mechanics.forward_dynamics, mech, q, v, tau, algorithm=name, mu=1e8, backend="numba")
        return
    got = _quiet(mechanics.forward_dynamics, mech, q, v, tau, algorithm=name, mu=1e8, backend="numba")
    assert np.array_equal(got.converged, ref.converged)
    if not np.all(ref.converged):  # inconsistent constraints: where max_iter stops an oscillation is round-off
        return
    model, cms = pinocchio_model_of(mech)
    condition = max(kkt_condition(model, cms, q[i]) for i in range(2))
    if name in ("pv_soft", "lcaba") and mech.constraints:
        condition = max(condition, *(penalized_condition(model, cms, q[i], 1e8) for i in range(2)))
    assert relative(got.qdd, ref.qdd) < min(1e-6, max(1e-11, 1e-15 * condition))  # ~10 eps times the condition
    if not mech.constraints or name == "pv_soft":  # soft answers are 1/mu away from the constrained one
        return
    ddq, _ = dense_reference(model, cms, q[0], v[0], tau[0])
    if np.all(np.isfinite(ddq)):
        assert relative(got.qdd[0], ddq) < 1e-5


@pytest.mark.parametrize("model, max_iter", [("fig4", 1), ("ladder", 50), ("digit_leg", 50)])
def test_the_first_solve_is_refined_only_where_its_iterate_may_be_the_answer(model, max_iter):
    """LCABA (refine 1): each re-solve refines from the last iterate, correcting what the solve before it left,
    so the first solve is refined only where its iterate may be the answer -- here at ``max_iter`` 1, where an
    unrefined answer is 1e-8 off on fig4 -- and so is a re-solve's one more step where its change is large.
    Read on the numpy path's record of its solves (``PreparedDynamics.last_run``): the first solve takes no
    refinement step, each re-solve one step from the last iterate (its one more step left to a finishing solve),
    the first iterate is refined from itself only at ``max_iter`` 1; and the kernel answers as the numpy path to
    round-off in as many iterations."""
    mech = models.MODELS[model]()
    q, v, tau = random_state(mech, np.random.default_rng(3), ())
    prepared = mechanics.prepare(mech, "lcaba", mu=1e6, max_iter=max_iter, backend="numpy")
    ref = _quiet(prepared, q, v, tau)
    assert (ref.iterations == 1) == (max_iter == 1)
    solves = prepared.last_run.solves
    purposes = [purpose for purpose, _ in solves]
    assert purposes[0] == "first" and solves[0][1].refinements == 0 and not solves[0][1].started
    assert purposes.count("re-solve") == ref.iterations - 1
    assert ("refine" in purposes) == (max_iter == 1)
    assert set(purposes) <= {"first", "refine", "re-solve", "finish"}
    for k, (purpose, work) in enumerate(solves[1:], 1):
        assert work.started and work.refinements >= 1 and not work.verifications, purpose  # (pivots not suspect)
        if purpose == "re-solve":
            assert work.refinements == 1 and work.sweeps == 1  # (one sweep: the change alone)
        if purpose == "finish":  # one step, right after the re-solve whose iterate may be the answer
            assert work.refinements == 1 and purposes[k - 1] == "re-solve"
    assert purposes.count("finish") <= 1
    fused = mechanics.prepare(mech, "lcaba", mu=1e6, max_iter=max_iter, backend="numba")
    assert np.all(_kernel_status(fused, q[None], v[None], tau[None]) == OK)
    got = _quiet(fused, q, v, tau)
    assert relative(got.qdd, ref.qdd) < 1e-12 and got.iterations == ref.iterations


@pytest.mark.parametrize("name", ["aba", "lcaba", "proxbbo", "proxltl"])
def test_tree_factors_only_pair_kernels_read_are_filled_in_their_joint_columns_alone(name):
    """A tree factor ``[I, -I, -S]`` that only a tree pair's kernel reads (through its joint columns) gets only
    those columns each state; the refinement's residuals read it as what it is.  With every entry of the factor
    workspace poisoned (NaN) between calls, each answer is the clean one bit for bit: nothing reads an entry no
    state writes.  ABA, LCABA and proxBBO run pairs; proxLTL's order leaves its tree factors to generic steps."""
    from mechanics.compiled_tables import FKIND, JOINT_ONLY, TREE

    mech = models.fig4()
    mech = mech.without_constraints() if name == "aba" else mech
    q, v, tau = random_state(mech, np.random.default_rng(5), (3,))
    fused = mechanics.prepare(mech, name, mu=1e6, refine=1, backend="numba")
    compiled = fused.compiled
    trees = compiled.factors[compiled.factors[:, FKIND] == TREE]
    assert trees[:, JOINT_ONLY].all() if name != "proxltl" else not trees[:, JOINT_ONLY].any()
    clean = fused(q, v, tau)
    Fw = compiled.data.floats[compiled.parts[6] : compiled.parts[7]]  # (the factor workspace: _workspace_parts)
    for state in range(3):
        Fw[...] = np.nan
        again = fused(q[state], v[state], tau[state])
        assert np.array_equal(again.qdd, clean.qdd[state]) and np.array_equal(again.forces, clean.forces[state])


@pytest.mark.parametrize("name", ["aba", "lcaba", "proxbbo"])
def test_the_conditionals_hold_only_what_the_solves_read(name):
    """A revolute pair's ``T = [t, sigma E_p]`` keeps only ``t`` in the conditionals (``sigma`` is structure,
    applied by the kernels): with the whole conditional workspace poisoned (NaN) between calls, each answer is
    the clean one bit for bit -- no solve reads an entry the factorization of that state did not write."""
    mech = models.fig4()
    mech = mech.without_constraints() if name == "aba" else mech
    q, v, tau = random_state(mech, np.random.default_rng(6), (3,))
    fused = mechanics.prepare(mech, name, mu=1e6, refine=1, backend="numba")
    compiled = fused.compiled
    clean = fused(q, v, tau)
    C = compiled.data.floats[compiled.parts[7] : compiled.parts[8]]  # (the conditionals: _workspace_parts)
    for state in range(3):
        C[...] = np.nan
        again = fused(q[state], v[state], tau[state])
        assert np.array_equal(again.qdd, clean.qdd[state]) and np.array_equal(again.forces, clean.forces[state])


def test_general_constraints_with_the_ground_folded_in():
    """General rows on two links and on a link and the ground (the ground's acceleration moves to k)."""
    mech = models.fig4()
    rows = np.eye(6)[[1, 5]]
    mech = mech.with_constraints(list(mech.constraints) + [General(("6", "8"), (rows, -rows), np.array([0.3, -0.2]), "pair"),
                                                           General(("11", GROUND), (rows, -rows), np.zeros(2), "ground")])
    q, v, tau = random_state(mech, np.random.default_rng(4), (2,))
    for name in ("proxbbo", "lcaba", "pv_soft"):
        fused = mechanics.prepare(mech, name, mu=1e7, backend="numba")
        assert np.all(_kernel_status(fused, q, v, tau) == OK)
        got, ref = _quiet(fused, q, v, tau), _quiet(mechanics.prepare(mech, name, mu=1e7, backend="numpy"), q, v, tau)
        assert relative(got.qdd, ref.qdd) < 1e-12 and np.array_equal(got.converged, ref.converged), name


def test_a_batch_element_equals_its_unbatched_call_bit_for_bit():
    """Each state runs on its own in the kernel: its answer depends neither on the batch nor on call history."""
    mech = models.digit_leg()
    q, v, tau = random_state(mech, np.random.default_rng(8), (5,))
    fused = mechanics.prepare(mech, "lcaba", backend="numba")
    batched = fused(q, v, tau)
    for i in reversed(range(5)):
        single = fused(q[i], v[i], tau[i])
        assert np.array_equal(single.qdd, batched.qdd[i]) and np.array_equal(single.forces, batched.forces[i])
        assert single.iterations == batched.iterations[i] and isinstance(single.iterations, int)


def test_warm_start_and_broadcast_batches_go_through_the_kernel():
    mech = models.four_bar()
    q, v, tau = random_state(mech, np.random.default_rng(9), (4,))
    fused = mechanics.prepare(mech, "proxbbo", backend="numba")
    cold = fused(q, v, tau)
    warm = fused(q, v, tau, forces0=cold.forces)
    assert np.all(warm.iterations <= cold.iterations) and relative(warm.qdd, cold.qdd) < 1e-9
    shared = fused(q[0], v, tau[None, 0])  # q unbatched, v batched, tau (1, nv)
    ref = mechanics.prepare(mech, "proxbbo", backend="numpy")(q[0], v, tau[None, 0])
    assert shared.qdd.shape == (4, mech.nv) and relative(shared.qdd, ref.qdd) < 1e-12


def _welded_twice():
    links = [Link("upper", GROUND, Joint("revolute", "z")), Link("lower", "upper", Joint("revolute", "x"), at(1.0))]
    return Mechanism(links, [Weld("lower", GROUND, at(0.5), at(1.5)), Weld("lower", GROUND, at(1.0), at(2.0))])


def test_what_only_the_numpy_path_can_answer_is_left_to_it():
    """Dependent hard rows: the kernel says FALLBACK and the call raises the numpy path's named error; an
    inconsistent soft problem is answered by the kernel and reported not converged, as there."""
    mech = _welded_twice()
    q, v, tau = random_state(mech, np.random.default_rng(1), (2,))
    fused = mechanics.prepare(mech, "pv", backend="numba")
    assert np.all(_kernel_status(fused, q, v, tau) == FALLBACK)
    with pytest.raises(elimination.SingularProblemError) as compiled_error:
        fused(q, v, tau)
    with pytest.raises(elimination.SingularProblemError) as numpy_error:
        mechanics.prepare(mech, "pv", backend="numpy")(q, v, tau)
    assert str(compiled_error.value) == str(numpy_error.value)
    soft = mechanics.prepare(mech, "pv_soft", backend="numba")
    with pytest.warns(mechanics.ConvergenceWarning):
        got = soft(q, v, tau)
    ref = _quiet(mechanics.prepare(mech, "pv_soft", backend="numpy"), q, v, tau)
    assert np.array_equal(got.converged, ref.converged) and not np.any(got.converged)


@pytest.mark.parametrize("batch", [(), (2,)])
def test_a_kernel_answer_that_leaves_hard_rows_unsolved_is_not_returned(monkeypatch, batch):
    """The kernel's answer is checked after it: where its hard rows' residual is beyond round-off (a
    dependence its factorization did not see), the numpy path answers instead -- one state (its own path
    through the kernel) and a batch.  The kernel's output is spoiled here to stand for such an answer."""
    from mechanics.compiled import CompiledDynamics

    mech = models.MODELS["four_bar"]()
    q, v, tau = random_state(mech, np.random.default_rng(2), batch)
    fused = mechanics.prepare(mech, "pv", backend="numba")
    hard, columns = fused.compiled.hard_rows, fused.compiled.columns
    assert hard is not None and hard.all()
    rows = [np.atleast_2d(a) for a in (q, v, tau)]  # (B, n) rows, B = 1 unbatched
    out, _ = fused.compiled.run(*rows, np.zeros((rows[0].shape[0], mech.constraint_dim)), fused.mu, fused.tol,
                                fused.max_iter, fused.refine)
    for name, part in (("hard_worst", "residual"), ("hard_k", "k")):  # the kernel's largest over the hard rows
        assert np.array_equal(out[:, columns[name]], np.max(np.abs(out[:, columns[part]][:, hard]), axis=1))
    assert np.all(out[:, columns["hard_k"]] > 0)
    fused(q, v, tau)
    assert fused.last_run is None  # the kernel answers this state itself
    run, run_one = CompiledDynamics.run, CompiledDynamics.run_one

    def spoiled(out, flags):
        out[..., columns["hard_worst"]] += 1.0
        return out, flags

    monkeypatch.setattr(CompiledDynamics, "run", lambda self, *a: spoiled(*run(self, *a)))
    monkeypatch.setattr(CompiledDynamics, "run_one", lambda self, *a: spoiled(*run_one(self, *a)))
    got = fused(q, v, tau)
    assert fused.last_run is not None  # the numpy path answered
    ref = mechanics.prepare(mech, "pv", backend="numpy")(q, v, tau)
    assert relative(got.qdd, ref.qdd) < 1e-12 and np.allclose(got.residual, ref.residual, rtol=0, atol=1e-12)


def test_a_strided_state_runs_the_compiled_kernel_without_compiling_it_again():
    """Strided one-state arrays (a column of a batch, every other entry) are copied into contiguous rows, not
    handed to the kernel as they are: same answer as the contiguous state, no new signature of the kernel."""
    from mechanics.compiled_iterations import dynamics_kernel

    mech = models.MODELS["four_bar"]()
    q, v, tau = random_state(mech, np.random.default_rng(4))
    fused = mechanics.prepare(mech, "proxbbo", backend="numba")
    expected = fused(q, v, tau)
    signatures = len(dynamics_kernel.signatures)
    spread = [np.repeat(a, 2)[::2] for a in (q, v, tau)]
    assert not spread[0].flags.c_contiguous and np.array_equal(spread[0], q)
    got = fused(*spread)
    assert len(dynamics_kernel.signatures) == signatures
    assert np.array_equal(got.qdd, expected.qdd) and np.array_equal(got.forces, expected.forces)


def test_a_policy_subclass_of_the_same_numbers_runs_compiled_bit_for_bit():
    """A policy is its numbers: a renamed prox runs in the kernels, with prox's bits (one whose arithmetic is
    its own runs on the numpy path: tests/mechanics/test_policies.py)."""
    class Renamed(mechanics.Prox):
        name = "renamed"

    mech = models.four_bar()
    ordering = mechanics.ALGORITHMS["proxbbo"].ordering
    renamed = mechanics.prepare(mech, (Renamed(), ordering), backend="numba")
    assert renamed.compiled is not None
    q, v, tau = random_state(mech, np.random.default_rng(2), (20,))
    got, expected = renamed(q, v, tau), mechanics.prepare(mech, "proxbbo", backend="numba")(q, v, tau)
    assert np.array_equal(got.qdd, expected.qdd) and np.array_equal(got.iterations, expected.iterations)


@pytest.mark.parametrize("algorithm, batch", [("lcaba", ()), ("lcaba", (11,)), ("proxbbo", (3,)), ("proxltl", ())])
def test_a_gplc_factorization_into_a_consumed_ones_memory_is_a_fresh_one_bit_for_bit(algorithm, batch):
    """The engine's ``factorize(graph, plan, out=old)`` on GPLC graphs of two states: their tree pairs leave
    the zero blocks of the conditionals unwritten, so the memory handed on (poisoned here with NaN, as another
    state's numbers) must be zeroed first; the numbers then equal a fresh factorization's, bit for bit."""
    mech = models.MODELS["four_bar"]()
    rng = np.random.default_rng(7)
    structure, plan = mechanics.algorithm_plan(mech, algorithm)
    policy = {"lcaba": "alm", "proxbbo": "prox", "proxltl": "prox"}[algorithm]
    first, second = (mechanics.gplc_graph(mech, *random_state(mech, rng, batch), policy=policy) for _ in range(2))
    assert first.structure() == structure
    ops = plan.lowered().steps[:, elimination.program.F["op"]]
    Op = elimination.program.Op
    assert np.any(np.isin(ops, (Op.REVOLUTE_PAIR, Op.WIDE_REVOLUTE)))  # the fixed-size kernels that read zero blocks
    old = elimination.factorize(first, plan, backend="numba")
    old.solve()
    C = old.C
    C.fill(np.nan)
    old._own_linear[0].fill(np.nan)
    fresh = elimination.factorize(second, plan, backend="numba")
    new = elimination.factorize(second, plan, backend="numba", out=old)
    assert new.C is C and np.array_equal(new.C, fresh.C)
    got, expected = new.solve(), fresh.solve()
    assert all(np.array_equal(got[k], expected[k]) for k in expected)


def _lanes_and_states(prepared, q, v, tau):
    """The batch in lanes (lanes_kernel, as :meth:`CompiledDynamics.run` runs a tree's) and state by state."""
    c, none = prepared.compiled, np.zeros((q.shape[0], prepared.mechanism.constraint_dim))
    settings = (prepared.mu, prepared.tol, prepared.max_iter, prepared.refine)
    return c._run_lanes(q, v, tau, none, *settings, c.data), c._run_states(q, v, tau, none, *settings, c.data)


@st.composite
def grounded(draw):
    """A random tree (every joint kind) with up to two of its links welded or connected to the ground."""
    tree = draw(mechanisms(max_links=6, max_constraints=0))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    held = draw(st.permutations([l.name for l in tree.links]))[:draw(st.integers(0, 2))]
    constraints = [draw(st.sampled_from([Weld, Connect]))(name, GROUND, _pose(rng), _pose(rng), None, f"c{i}")
                   for i, name in enumerate(held)]
    return Mechanism(tree.links, constraints, name="grounded")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grounded(), st.integers(0, 2**31 - 1), st.sampled_from([LANES, LANES + 5, 2 * LANES + 3]), st.sampled_from(["lcaba", "pv_soft"]),
       st.sampled_from([1, 2, 50]))
def test_a_batch_of_tree_pairs_in_lanes_equals_its_states_one_at_a_time_bit_for_bit(mech, seed, B, name, max_iter):
    """A program of tree pairs alone (ABA's; LCABA's on links held to the ground) runs LANES states at a time
    (lanes_kernel: every joint's pair as vector operations; LCABA's iterations each to its next refinement
    step, the steps in lanes, each lane stopping at its own iteration; a suspect pivot's verification in its
    lane; the batch's tail padded): every answer and iteration count is the per-state kernel's bit for bit, within ``max_iter`` or stopped by it, and a state that is not finite
    is refused in its lane alone."""
    algorithm = name if mech.constraints else "aba"
    prepared = mechanics.prepare(mech, algorithm, mu=1e6, max_iter=max_iter, backend="numba")
    if not prepared.compiled.lanes:  # (pv_soft's order may pass a multiplier-free step on: not a pair)
        assert algorithm != "aba" and name == "pv_soft"
        return
    q, v, tau = random_state(mech, np.random.default_rng(seed), (B,))
    v[3, 0] = np.nan
    if algorithm == "pv_soft":  # soft rows' one ALM correction is the per-state kernel's: they run state by state
        with pytest.raises(ValueError, match="soft rows run state by state"):
            _lanes_and_states(prepared, q, v, tau)
        c, before = prepared.compiled, dict(prepared.compiled.states_run)
        c.run(q, v, tau, np.zeros((B, mech.constraint_dim)), prepared.mu, prepared.tol, prepared.max_iter,
              prepared.refine)
        assert c.states_run == {"lanes": before["lanes"], "one_by_one": before["one_by_one"] + B}
        return
    (out, flags), (ref_out, ref_flags) = _lanes_and_states(prepared, q, v, tau)
    assert np.array_equal(flags, ref_flags) and flags[3, STATUS] == BAD_INPUT
    answered = flags[:, STATUS] == OK
    assert np.array_equal(out[answered], ref_out[answered])
    model, cms = pinocchio_model_of(mech)
    for state in np.flatnonzero(answered & (flags[:, CONVERGED] == 1))[:3]:  # against the dense KKT solve
        ddq, _ = dense_reference(model, cms, q[state], v[state], tau[state])
        if np.all(np.isfinite(ddq)):
            assert relative(out[state, :mech.nv], ddq) < 1e-5


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(mechanisms(max_links=6, max_constraints=2, min_constraints=1), st.integers(0, 2**31 - 1),
       st.sampled_from([LANES, LANES + 5, 2 * LANES + 3]), st.sampled_from([2, 50]), st.sampled_from(["lcaba", "proxbbo"]))
def test_loops_in_lanes_equal_their_states_one_at_a_time_bit_for_bit(mech, seed, B, max_iter, name):
    """LCABA and proxBBO on random trees with loops and links held to the ground, where the program is mostly
    tree and wide pairs (elimination.lanes.covers_pairs): every lane's iterations, solves, refinement steps,
    verification and verdict are the per-state kernel's, bit for bit, lanes idling and taking the next states
    as theirs end."""
    prepared = mechanics.prepare(mech, name, mu=1e6, max_iter=max_iter, backend="numba")
    assume(prepared.compiled.lanes)
    q, v, tau = random_state(mech, np.random.default_rng(seed), (B,))
    (out, flags), (ref_out, ref_flags) = _lanes_and_states(prepared, q, v, tau)
    answered = ref_flags[:, STATUS] == OK
    assert np.array_equal(flags, ref_flags) and np.array_equal(out[answered], ref_out[answered])


@pytest.mark.parametrize("name", ["lcaba", "proxbbo"])
def test_general_constraints_in_lanes_equal_their_states_one_at_a_time_bit_for_bit(name):
    """General rows (constant K, k) on two links and on a link and the ground, beside fig4's loops: their terms
    and factors filled in lanes (mechanics.compiled_kinematics._lane_constraint_terms) are the per-state kernel's."""
    mech = models.fig4()
    rows = np.eye(6)[[1, 5]]
    mech = mech.with_constraints(list(mech.constraints) + [General(("6", "8"), (rows, -rows), np.array([0.3, -0.2]), "pair"),
                                                           General(("11", GROUND), (rows, -rows), np.zeros(2), "ground")])
    prepared = mechanics.prepare(mech, name, mu=1e6, backend="numba")
    assert prepared.compiled.lanes
    q, v, tau = random_state(mech, np.random.default_rng(5), (13,))
    (out, flags), (ref_out, ref_flags) = _lanes_and_states(prepared, q, v, tau)
    assert np.all(ref_flags[:, STATUS] == OK)
    assert np.array_equal(flags, ref_flags) and np.array_equal(out, ref_out)


@pytest.mark.parametrize("name", ["lcaba", "proxbbo"])
def test_couplings_in_lanes_equal_their_states_one_at_a_time_bit_for_bit(name):
    """Couplings beside fig4's loops -- a joint on the ground geared to another, two siblings' differential, a
    mimic with its Baumgarte correction: their terms (a sum over their joints' ``C_j S_j^+``) and factors in
    lanes are the per-state kernel's."""
    mech = models.fig4()
    couplings = [Coupling.gear("1", "2", 3.0, name="gear"), Coupling(("4", "7"), ([[1.0], [2.0]], [[1.0], [-1.0]]),
                                                                   name="differential"),
                 Coupling.mimic("9", "3", 0.5, 0.1, name="mimic")]
    mech = mech.with_constraints(list(mech.constraints) + couplings)
    prepared = mechanics.prepare(mech, name, mu=1e6, backend="numba", baumgarte={"mimic": (10.0, 2.0)})
    assert prepared.compiled.lanes
    q, v, tau = random_state(mech, np.random.default_rng(6), (19,))
    (out, flags), (ref_out, ref_flags) = _lanes_and_states(prepared, q, v, tau)
    assert np.all(ref_flags[:, STATUS] == OK)
    assert np.array_equal(flags, ref_flags) and np.array_equal(out, ref_out)


@pytest.mark.parametrize("model", ["geared_chain", "mini_cheetah", "tello_leg"])
def test_embedded_couplings_in_lanes_equal_their_states_one_at_a_time_bit_for_bit(model):
    """C-ABA's clusters of coupled joints (``caba``: each link's ``a_i`` substituted onto ``(a_parent, y)``, a
    ``UNIT`` whose separator block is written out, then one pivot on ``y``) run in lanes -- their maps
    ``qdd_c = G y + g`` in the fill and the answer, the link steps as vector operations -- every answer and flag
    the per-state kernel's bit for bit, and each state the dense KKT's of its couplings as multipliers."""
    mech = models.MODELS[model]()
    prepared = mechanics.prepare(mech, "caba", tol=1e-12, backend="numba")
    steps, F, Op = prepared.plan.lowered().steps, elimination.program.F, elimination.program.Op
    out_units = (steps[:, F["op"]] == Op.UNIT) & (steps[:, F["keep"]] == elimination.program.KEEP_NONE)
    assert prepared.compiled.lanes and np.any(out_units) and prepared.compiled.layout.clusters
    q, v, tau = random_state(mech, np.random.default_rng(8), (LANES + 5,))
    (out, flags), (ref_out, ref_flags) = _lanes_and_states(prepared, q, v, tau)
    assert np.all(ref_flags[:, STATUS] == OK)
    assert np.array_equal(flags, ref_flags) and np.array_equal(out, ref_out)
    result = prepared(q, v, tau)  # (the couplings' forces from the kernel's M qdd + b: a state alone alike)
    for b in range(LANES + 5):
        alone = prepared(q[b], v[b], tau[b])
        assert np.array_equal(alone.qdd, result.qdd[b]) and np.array_equal(alone.forces, result.forces[b]), b
    for b in range(3):  # (the couplings' rows C qdd = c held exactly, the rest Gauss' principle: the KKT)
        x = mechanics.gplc_graph(mech, q[b], v[b], tau[b], policy="hard").dense_solve()
        qdd = np.concatenate([x[("qdd", link.name)] for link in mech.links if link.joint.nv])
        forces = np.concatenate([-x[("lam", c.name)] for c in mech.constraints])
        assert relative(out[b, :mech.nv], qdd) < 1e-9 and relative(result.forces[b], forces) < 1e-8


@pytest.mark.parametrize("robot, name", [("solo12_feet", "proxbbo"), ("allegro_cube", "proxbbo"),
                                         ("allegro_cube", "lcaba")])
def test_a_floating_base_in_lanes_equals_its_states_one_at_a_time_bit_for_bit(robot, name):
    """A free body's link half read from its joint's ``+-I`` rows (Solo12's base under proxBBO, Allegro's cube
    under both: a UNIT that leaves its front), its joint's pivot and the contacts' multipliers (a PIVOT) run in
    lanes (elimination.lanes): every answer and iteration count is the per-state kernel's bit for bit, and proxBBO's
    agrees with Pinocchio's constraintDynamics."""
    rng = np.random.default_rng(7)
    if robot == "solo12_feet":
        model, cms, _ = scenario(robot, rng=rng)
    else:
        model, cms, _ = hands_and_cube(1, rng)
    mech = from_pinocchio(model, cms)
    prepared = mechanics.prepare(mech, name, backend="numba")
    steps, F, Op = prepared.plan.lowered().steps, elimination.program.F, elimination.program.Op
    leaves = (steps[:, F["op"]] == Op.UNIT) & (steps[:, F["keep"]] == elimination.program.KEEP_MIRRORED)
    assert prepared.compiled.lanes and np.any(leaves)
    if name == "proxbbo":
        assert np.any(steps[:, F["op"]] == Op.PIVOT)  # (the multipliers)
    q, v, tau = random_state(mech, rng, (13,))
    (out, flags), (ref_out, ref_flags) = _lanes_and_states(prepared, q, v, tau)
    assert np.array_equal(flags, ref_flags) and np.all(flags[:, STATUS] == OK)
    assert np.array_equal(out, ref_out)
    if name == "proxbbo":
        models_, datas = std_vectors(cms)
        data = model.createData()
        pin.initConstraintDynamics(model, data, models_, datas)
        for b in range(3):
            ddq = pin.constraintDynamics(model, data, q[b], v[b], tau[b], models_, datas,
                                         pin.ProximalSettings(1e-12, 1.0 / prepared.mu, 100))
            assert relative(out[b, :mech.nv], ddq) < 1e-8


def test_which_programs_and_batches_run_in_lanes():
    """The lanes take a program of mostly tree and wide pairs -- a tree's, LCABA's with links held to the ground
    or a four-bar's loop, proxBBO's there (one generic step, its multipliers' pivot), not proxLTL's joint-space order --
    and a batch of LANES states or more runs in them where nothing follows the first solve (a tree's) or its
    iterations' re-solves run in lanes too (LCABA's, proxBBO's), not where soft rows' iterations would run
    lane by lane."""
    tree = models.serial_chain(6).without_constraints()
    held = Mechanism(tree.links, [Weld(tree.links[-1].name, GROUND, at(0.0), at(1.0))], name="held")
    assert mechanics.prepare(held, "lcaba", backend="numba").compiled.lanes
    assert mechanics.prepare(models.four_bar(), "lcaba", backend="numba").compiled.lanes  # (wide revolute pairs)
    assert mechanics.prepare(models.four_bar(), "proxbbo", backend="numba").compiled.lanes  # (one generic step)
    assert not mechanics.prepare(models.four_bar(), "proxltl", backend="numba").compiled.lanes  # (joint space)
    prepared = mechanics.prepare(tree, "aba", backend="numba")
    assert prepared.compiled.lanes
    q, v, tau = random_state(tree, np.random.default_rng(0), (LANES,))
    prepared(q, v, tau)
    assert prepared.compiled.states_run == {"lanes": LANES, "one_by_one": 0}
    prepared(q[:LANES - 1], v[:LANES - 1], tau[:LANES - 1])  # (fewer than LANES: state by state)
    assert prepared.compiled.states_run == {"lanes": LANES, "one_by_one": LANES - 1}
    for mech, name, B in ((held, "lcaba", LANES + 1), (models.four_bar(), "proxbbo", LANES + 2), (held, "pv_soft", LANES)):
        other = mechanics.prepare(mech, name, backend="numba")
        assert other.compiled.lanes
        other(*random_state(mech, np.random.default_rng(0), (B,)))
        # (soft rows' one ALM correction is the per-state kernel's: state by state)
        assert other.compiled.states_run == ({"lanes": 0, "one_by_one": B} if name == "pv_soft" else
                                             {"lanes": B, "one_by_one": 0})
    v[3, 1] = np.nan  # a state the lanes refuse: the call names it
    with pytest.raises(ValueError, match=r"v contains NaN or inf at index \(3, 1\)"):
        prepared(q, v, tau)
    assert prepared.compiled.states_run == {"lanes": 2 * LANES, "one_by_one": LANES - 1}


def _far_tip(inertia: float, constraint) -> Mechanism:
    """An arm of three links whose tip is a point mass 10 m out (``inertia``), with one constraint."""
    links = [Link("arm", GROUND, Joint("revolute", "z"), at(0.0), 1.0, (0.3, 0.0, 0.0), 0.01 * np.eye(3)),
             Link("mid", "arm", Joint("revolute", "y"), at(1.0), 1.0, (0.3, 0.0, 0.0), 0.01 * np.eye(3)),
             Link("tip", "mid", Joint("revolute", "x"), at(10.0), 1.0, (0.0, 0.0, 0.0), inertia * np.eye(3))]
    return Mechanism(links, [constraint], name="far_tip")


@pytest.mark.parametrize("mech, name, mu, verdicts", [
    (_far_tip(1e-8, Weld("mid", GROUND, at(1.0), at(0.0), None, "c")), "lcaba", 1e6, {OK}),
    (_far_tip(1e-8, Connect("mid", GROUND, at(1.0), at(0.0), None, "c")), "lcaba", 1e6, {OK}),
    (_far_tip(1e-8, Connect("tip", "arm", at(1.0), at(0.0), None, "c")), "lcaba", 1e6, {OK, FALLBACK}),
    (models.four_bar(), "lcaba", 1e10, {OK}),
    (_far_tip(1e-10, Connect("tip", "arm", at(1.0), at(0.0), None, "c")), "proxbbo", 1e10, {OK, FALLBACK}),
], ids=["held_weld", "held_connect", "loop", "four_bar", "loop_proxbbo"])
def test_an_ill_conditioned_batch_refines_and_verifies_in_lanes_as_state_by_state(mech, name, mu, verdicts):
    """LCABA and proxBBO where the pivots lose digits: the far point mass's (pivot ratios near 1e-10) and a
    four-bar's under mu = 1e10.  LCABA's re-solves from the last iterate take a second refinement step where
    the change is large (Factorization.solve's started error), proxBBO's are fresh solves; suspect
    factorizations refine and verify their first solve and each re-solve's iterate that may be the answer,
    some settling, some (the loops') left to the numpy path.  The lanes take each lane's solves, steps and verdicts as the per-state kernel
    does, through up to 50 iterations, bit for bit."""
    prepared = mechanics.prepare(mech, name, mu=mu, backend="numba")
    assert prepared.compiled.lanes
    q, v, tau = random_state(mech, np.random.default_rng(3), (16,))
    (out, flags), (ref_out, ref_flags) = _lanes_and_states(prepared, q, v, tau)
    answered = ref_flags[:, STATUS] == OK
    assert set(ref_flags[:, STATUS].tolist()) == verdicts
    assert np.array_equal(flags, ref_flags) and np.array_equal(out[answered], ref_out[answered])


def test_a_suspect_lane_is_verified_in_its_lane():
    """States whose pivots are suspect (a point mass 10 m out, turning about an axis through it: a pivot of
    1e-9 against entries of 1e2) are verified in their lanes as the per-state kernel verifies them -- some
    settle, some are left to the numpy path -- the batch's answers the per-state kernel's, bit for bit."""
    links = [Link("arm", GROUND, Joint("revolute", "z"), at(0.0), 1.0, (0.3, 0.0, 0.0), 0.01 * np.eye(3)),
             Link("tip", "arm", Joint("revolute", "x"), at(10.0), 1.0, (0.0, 0.0, 0.0), 1e-9 * np.eye(3))]
    mech = Mechanism(links, [], name="far_tip")
    q, v, tau = random_state(mech, np.random.default_rng(3), (LANES + 1,))
    prepared = mechanics.prepare(mech, "aba", backend="numba")
    (out, flags), (ref_out, ref_flags) = _lanes_and_states(prepared, q, v, tau)
    answered = flags[:, STATUS] == OK
    assert np.any(answered) and np.any(flags[:, STATUS] == FALLBACK)
    assert np.array_equal(flags, ref_flags) and np.array_equal(out[answered], ref_out[answered])


def _finger_on_cube() -> Mechanism:
    """A free cube touched by the tip of a four-link finger (a loop through a free-flyer: a wide pair that is not
    revolute, run lane by lane)."""
    links = [Link("cube", GROUND, Joint("free"), at(0.0), 0.5, (0.0, 0.0, 0.0), 0.01 * np.eye(3))]
    for i, (parent, axis) in enumerate([(GROUND, "z"), ("f0", "y"), ("f1", "y"), ("f2", "x")]):
        links.append(Link(f"f{i}", parent, Joint("revolute", axis), at(0.3), 1.0, (0.1, 0.0, 0.0), 0.01 * np.eye(3)))
    return Mechanism(links, [Connect("f3", "cube", at(0.2), at(0.1), None, "touch")], name="finger_on_cube")


def _walker() -> Mechanism:
    """A free torso, a spherical hip, a knee and a point foot on the ground: under LCABA the torso's and the
    hip's tree pairs (joints of six and three degrees of freedom, the hip's with a parent) run in lanes."""
    links = [Link("torso", GROUND, Joint("free"), at(0.0), 5.0, (0.0, 0.0, 0.1), 0.1 * np.eye(3)),
             Link("thigh", "torso", Joint("spherical"), at(z=-0.2), 1.0, (0.0, 0.0, -0.2), 0.01 * np.eye(3)),
             Link("shin", "thigh", Joint("revolute", "y"), at(z=-0.4), 0.5, (0.0, 0.0, -0.2), 0.005 * np.eye(3))]
    foot = Connect("shin", GROUND, at(z=-0.4), at(z=-1.0), None, "foot")
    return Mechanism(links, [foot], name="walker")


@pytest.mark.parametrize("mech, name", [(models.four_bar(), "lcaba"), (models.cycle(), "lcaba"),
                                        (models.serial_chain(5).without_constraints(), "aba"),
                                        (models.four_bar(), "proxbbo"), (_finger_on_cube(), "lcaba"),
                                        (_walker(), "lcaba"), (_walker().without_constraints(), "aba")])
def test_the_pair_kernels_in_lanes_are_the_per_element_kernels_lane_by_lane(mech, name):
    """elimination.lanes' factorization and solve of a program of tree and wide pairs (a few generic steps and
    non-revolute wide pairs among them, lane by lane; a free flyer's and a spherical joint's tree pairs in lanes),
    on the lanes filled with LANES states' factors (each lane its own scale floor) and arbitrary linear terms:
    every lane's conditionals, pivot ratio, weakest and failed step and values are the per-element kernels' on its column,
    bit for bit -- the ratios too, which no answer shows but the suspect-pivot decisions read."""
    prepared = mechanics.prepare(mech, name, mu=1e6, backend="numba")
    c, rng = prepared.compiled, np.random.default_rng(5)
    program, maxn = c.program, max_front(prepared.compiled.program)
    assert lanes.covers_pairs(program)
    q, v, tau = random_state(mech, rng, (LANES,))
    Fw = np.zeros((program.factor_size, LANES))
    for w in range(LANES):  # each state's filled factors, from the per-state kernel's workspace
        prepared(q[w], v[w], tau[w])
        Fw[:, w] = c.data.floats[c.parts[6]:c.parts[7]]  # (the factor workspace: _workspace_parts)
    floor = 1e-12 * (1.0 + np.arange(LANES))[None, :]
    fmaps, smaps = factorize_maps(program), solve_maps(program)
    rows = np.zeros((lanes.scratch_rows(maxn), LANES))
    floats, ints = factorize_scratch_size(maxn)
    scratch = factorize_scratch_in(np.zeros(floats), np.zeros(ints, np.int64), maxn)
    sscratch = solve_scratch_in(np.zeros(SOLVE_SCRATCH * maxn), maxn)
    C, ratio, weak, failed = np.zeros((program.conditional_size, LANES)), np.zeros(LANES), np.zeros(LANES, np.int64), \
        np.zeros(LANES, np.int64)
    (pair, front, r, ok), lane_s = lanes.scratch_in(rows, maxn)
    factorize_steps(fmaps, Fw.copy(), C, floor, np.bool_(False), scratch, pair, front, r, ok, ratio, weak, failed)
    Lin = rng.normal(size=(program.linear_size, LANES))
    X, cache = np.zeros((program.value_size, LANES)), np.zeros((program.cache_size, LANES))
    L = Lin.copy()  # (the lanes' solve: the per-element one at sixteen lanes, no dropped rows to size)
    solve_one(smaps, C, L, L, cache, X, L, lane_s)
    assert np.all(failed == -1)
    for w in range(LANES):
        Cw = np.zeros(program.conditional_size)
        got = factorize_one(fmaps, Fw[:, w].copy(), Cw, floor[0, w], False, scratch)
        assert got == (ratio[w], weak[w], failed[w]) and np.array_equal(Cw, C[:, w])
        xw, dropped = np.zeros(program.value_size), np.zeros(max(program.dropped_size, 1))
        solve_one(smaps, Cw, Lin[:, w].copy(), np.zeros(program.linear_size), np.zeros(program.cache_size), xw, dropped,
                  sscratch)
        assert np.array_equal(xw, X[:, w])


@pytest.mark.parametrize("B", [3, LANES + 2])
def test_the_model_tables_are_never_written_and_each_data_runs_alone(B):
    """Model / data (Pinocchio's split): a run writes only the workspaces it is given -- the tables stay as
    made, bit for bit -- and a second set of workspaces (make_data) gives the default's answer bit for bit,
    counting its own states."""
    mech = models.fig4()
    prepared = mechanics.prepare(mech, "lcaba", mu=1e6, backend="numba")
    model = prepared.compiled
    tables = [a.copy() for a in model.tables]
    q, v, tau = random_state(mech, np.random.default_rng(9), (B,))
    forces0 = np.zeros((B, mech.constraint_dim))
    out, flags = model.run(q, v, tau, forces0, 1e6, 1e-10, 50, 1)
    mine = model.make_data()
    again, again_flags = model.run(q, v, tau, forces0, 1e6, 1e-10, 50, 1, data=mine)
    assert np.array_equal(out, again) and np.array_equal(flags, again_flags)
    assert all(np.array_equal(a, b) for a, b in zip(tables, model.tables))
    assert sum(mine.states_run.values()) == B == sum(model.states_run.values())
