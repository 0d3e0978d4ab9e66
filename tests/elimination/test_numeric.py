"""The numeric pass: re-solves, batches, partial elimination, errors."""
import numpy as np
import pytest
from hypothesis import assume, given, settings

import elimination
from elimination import Ordering, SingularProblemError, analyze, factorize
from elimination.program import F, START_SPREAD
from factorgraph import FactorGraph, LinearEquality, Quadratic, Variable
from tests.random_graphs import (
    GraphSpec, build_graph, graph_specs, max_relative_error, take, well_conditioned, with_linear_terms,
)

RTOL = 1e-9


def _factorization(graph, ordering="min_fill"):
    return factorize(graph, analyze(graph, elimination.resolve_ordering(graph, ordering)))


def _random_linear_terms(graph, rng):
    g = {i: rng.normal(size=f.g.shape) for i, f in enumerate(graph.factors) if isinstance(f, Quadratic)}
    b = {i: rng.normal(size=f.b.shape) for i, f in enumerate(graph.factors) if isinstance(f, LinearEquality)}
    return g, b


@given(graph_specs(hard_multipliers=False))
def test_resolve_with_new_linear_terms_equals_a_fresh_factorization(spec):
    graph = build_graph(spec)
    assume(well_conditioned(graph))
    fact = _factorization(graph)
    g, b = _random_linear_terms(graph, np.random.default_rng(spec.seed + 1))
    changed = with_linear_terms(graph, g, b)
    resolved = fact.solve(g=g, b=b)
    assert max_relative_error(resolved, _factorization(changed).solve()) < RTOL
    assert max_relative_error(resolved, changed.dense_solve()) < RTOL
    assert max_relative_error(fact.solve(), graph.dense_solve()) < RTOL  # the original terms are kept


@settings(max_examples=5)
@given(graph_specs())
def test_a_batch_of_1000_graphs_equals_1000_separate_solves(spec):
    batched = build_graph(spec, batch=(1000,))
    solution = elimination.solve(batched, "min_degree")
    plan = analyze(take(batched, 0), elimination.min_degree(batched))
    for i in range(1000):
        single = take(batched, i)
        separate = factorize(single, plan).solve()
        assert max(np.max(np.abs(solution[k][i] - separate[k])) for k in separate) <= 1e-12 * (
            1 + max(np.max(np.abs(v)) for v in separate.values())
        )


def test_unbatched_matrices_with_batched_linear_terms():
    """The Kalman-smoother case: one factorization, many right-hand sides."""
    spec = GraphSpec(dims=(2, 1, 3), couplings=((0, 1), (1, 2)), equalities=(((0, 2), 2),), multipliers=(), seed=3)
    graph = build_graph(spec)
    fact = _factorization(graph)
    rng = np.random.default_rng(0)
    g = {i: rng.normal(size=(50, f.g.shape[-1])) for i, f in enumerate(graph.factors) if isinstance(f, Quadratic)}
    batch = fact.solve(g=g)
    for j in range(50):
        single = with_linear_terms(graph, {i: v[j] for i, v in g.items()}, {})
        assert max_relative_error({k: v[j] for k, v in batch.items()}, single.dense_solve()) < RTOL


@given(graph_specs(equalities=False))
def test_partial_elimination_leaves_the_dense_schur_complement(spec):
    """Eliminating every primal variable leaves the dual (Delassus-like) factor on the multipliers."""
    graph = build_graph(spec)
    assume(spec.multipliers and well_conditioned(graph))
    primal = [v.key for v in graph.variables if v.role == "min"]
    dual = [v.key for v in graph.variables if v.role == "max"]
    def primal_first(key, state):
        return key in primal or all(k not in primal for k in state.remaining)

    prefix = elimination.min_fill(graph, eligible=primal_first).blocks[: len(primal)]
    plan = analyze(graph, Ordering(prefix), complete=False)
    assert set(plan.remaining) == set(dual)
    rest = factorize(graph, plan).remaining()
    system = graph.to_dense()
    P = np.concatenate([np.arange(system.index[k].start, system.index[k].stop) for k in primal])
    Dx = np.concatenate([np.arange(system.index[k].start, system.index[k].stop) for k in dual])
    K, rhs = system.K, system.rhs
    schur = K[np.ix_(Dx, Dx)] - K[np.ix_(Dx, P)] @ np.linalg.solve(K[np.ix_(P, P)], K[np.ix_(P, Dx)])
    schur_rhs = rhs[Dx] - K[np.ix_(Dx, P)] @ np.linalg.solve(K[np.ix_(P, P)], rhs[P])
    reduced = rest.to_dense()
    order = np.concatenate([np.arange(reduced.index[k].start, reduced.index[k].stop) for k in dual])
    scale = np.abs(schur).max()
    assert np.max(np.abs(reduced.K[np.ix_(order, order)] - schur)) < 1e-9 * scale
    assert np.max(np.abs(reduced.rhs[order] - schur_rhs)) < 1e-9 * (scale + np.abs(schur_rhs).max())


def test_identity_blocks_take_the_fast_path_and_agree_with_the_dense_solve():
    """x_{k+1} = x_k + u_k: eliminating x_{k+1} uses its identity block, declared in the structure."""
    rng = np.random.default_rng(1)
    g = FactorGraph()
    for k in range(4):
        g.add_variable(Variable(("x", k), 2))
        g.add_variable(Variable(("u", k), 2))
        g.add(Quadratic([("u", k)], np.eye(2), rng.normal(size=2)))
    g.add(Quadratic([("x", 0)], 3 * np.eye(2), rng.normal(size=2)))
    for k in range(3):
        g.add(LinearEquality([("x", k + 1), ("x", k), ("u", k)], [np.eye(2), -np.eye(2), -np.eye(2)], rng.normal(size=2),
                             units=(1, -1, -1)))
    ordering = Ordering.from_keys([("x", 3), ("u", 3), ("u", 2), ("x", 2), ("u", 1), ("x", 1), ("u", 0), ("x", 0)])
    plan = analyze(g, ordering)
    assert plan.steps[0].identity == 1 and plan.steps[1].identity == 0  # decided from structure, not numbers
    fact = factorize(g, plan, backend="numpy")  # the reference rule's conditionals, inspected
    assert fact.conditionals[0].W is not None and np.array_equal(fact.conditionals[0].W, np.eye(2))  # no decomposition
    with pytest.raises(ValueError, match=r"declare the block of \('x', 1\) \+I"):
        LinearEquality([("x", 1), ("x", 0)], [2 * np.eye(2), -np.eye(2)], np.zeros(2), units=(1, -1))
    assert max_relative_error(fact.solve(), g.dense_solve()) < RTOL


def _tree_of_sums(batch: tuple = (), rhs=None):
    """``x_c = x_parent + u_c`` (units declared) on a tree with two children per node, priors on every ``u``
    and on the root; ordered root to leaves, so that each ``x`` meets its own equality and its children's."""
    rng = np.random.default_rng(7)
    parent = {1: 0, 2: 0, 3: 1, 4: 1, 5: 2}
    g = FactorGraph()
    for k in range(6):
        g.add_variable(Variable(("x", k), 2))
        g.add_variable(Variable(("u", k), 2))
        g.add(Quadratic([("u", k)], np.diag([1.0, 2.0]) + 0.1, rng.normal(size=batch + (2,))))
    g.add(Quadratic([("x", 0)], 3 * np.eye(2), rng.normal(size=batch + (2,))))
    g.add(LinearEquality([("x", 0), ("u", 0)], [np.eye(2), -np.eye(2)], rng.normal(size=batch + (2,)), units=(1, -1)))
    for c, p in parent.items():
        g.add(LinearEquality([("x", c), ("x", p), ("u", c)], [np.eye(2), -np.eye(2), -np.eye(2)],
                             rng.normal(size=batch + (2,)) if rhs is None else rhs, units=(1, -1, -1)))
    order = [("x", k) for k in range(6)] + [("u", k) for k in range(6)]
    return g, Ordering.from_keys(order)


@pytest.mark.parametrize("batch", [(), (3,)])
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_unit_substitution_passes_the_other_rows_on(batch, backend):
    """Root to leaves, ``x_p``'s bucket holds its own equality (``+I``) and its children's (``-I``): it is read
    from its own (``W`` selects those rows, no decomposition), eliminated from the others exactly, and they
    go on to the children -- the dense KKT solve agrees, on both backends."""
    g, ordering = _tree_of_sums(batch)
    plan = analyze(g, ordering)
    first = plan.steps[0]
    assert (first.identity, first.hard_rows, first.passed_rows) == (1, 6, 4)
    # x_1's and x_2's own rows come generated: a child's equality (-I) is read; a leaf's rows are all generated
    assert [s.identity for s in plan.steps[:6]] == [1, -1, -1, 0, 0, 0]
    # each x's front holds the factor the step before generated, spread wider (the kernel carries it over)
    assert plan.lowered().steps[1:3, F["start"]].tolist() == [START_SPREAD] * 2
    fact = factorize(g, plan, backend=backend)
    if backend == "numpy":
        W = fact.conditionals[0].W
        assert np.array_equal(W, np.broadcast_to(np.hstack([np.eye(2), np.zeros((2, 4))]), W.shape))
    assert max_relative_error(fact.solve(), g.dense_solve()) < RTOL


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_redundant_unit_equalities_are_checked_then_dropped(backend):
    """``x_1 = x_0 + u`` twice: eliminating ``x_1`` through the first leaves the second with nothing on the
    separator -- its right-hand side must equal the first's (dropped), else the two are named."""
    def graph(b2):
        g = FactorGraph()
        for k in ("x0", "x1", "u"):
            g.add_variable(Variable(k, 2))
            g.add(Quadratic([k], np.eye(2), np.arange(2.0)))
        for b in (np.array([1.0, -1.0]), b2):
            g.add(LinearEquality(["x1", "x0", "u"], [np.eye(2), -np.eye(2), -np.eye(2)], b, units=(1, -1, -1)))
        return g
    ordering = Ordering.from_keys(["x1", "x0", "u"])
    g = graph(np.array([1.0, -1.0]))
    x = elimination.solve(g, ordering, backend=backend)
    assert np.allclose(x["x1"] - x["x0"] - x["u"], [1.0, -1.0], atol=1e-12)
    with pytest.raises(SingularProblemError, match="inconsistent") as error:
        elimination.solve(graph(np.array([1.0, -1.5])), ordering, backend=backend)
    assert set(error.value.factors) >= {3, 4}


def test_consistent_redundant_equalities_are_solved():
    """x = 1 twice: the second row is dropped after a consistency check (the dense KKT is singular)."""
    g = FactorGraph()
    g.add_variable(Variable("x", 1))
    g.add(Quadratic(["x"], [[1.0]]))
    g.add(LinearEquality(["x"], [[[1.0]]], [1.0]))
    g.add(LinearEquality(["x"], [[[2.0]]], [2.0]))
    assert elimination.solve(g)["x"] == pytest.approx([1.0])
    with pytest.raises(ValueError, match="singular"):
        g.dense_solve()


def test_inconsistent_equalities_are_reported():
    g = FactorGraph()
    g.add_variable(Variable("x", 1))
    g.add(Quadratic(["x"], [[1.0]]))
    g.add(LinearEquality(["x"], [[[1.0]]], [1.0]))
    g.add(LinearEquality(["x"], [[[1.0]]], [2.0]))
    with pytest.raises(SingularProblemError, match="inconsistent"):
        elimination.solve(g)


def test_singular_pivot_names_the_variable_and_the_step():
    g = FactorGraph()
    for k in ("a", "b"):
        g.add_variable(Variable(k, 2))
    g.add(Quadratic(["a"], np.eye(2)))
    g.add(Quadratic(["b"], np.diag([1.0, 0.0])))  # b[1] is undetermined
    with pytest.raises(SingularProblemError, match=r"step 1: eliminating \['b'\].*undetermined") as error:
        elimination.solve(g, Ordering.from_keys(["a", "b"]))
    assert error.value.keys == ("b",) and error.value.step == 1


def _one_constraint_twice(targets) -> FactorGraph:
    """``x_0 + x_1 = t`` for each ``t`` of ``targets``, each with an unregularized multiplier (the 'hard' policy)."""
    g = FactorGraph()
    g.add_variable(Variable("x", 2))
    g.add(Quadratic(["x"], np.eye(2)))
    for j, target in enumerate(targets):
        g.add_variable(Variable(("lam", j), 1, "max"))
        H = np.zeros((3, 3))
        H[0, 1:] = H[1:, 0] = [1.0, 1.0]
        g.add(Quadratic([("lam", j), "x"], H, [target, 0.0, 0.0]))
    return g


def test_redundant_hard_multipliers_are_singular_and_point_to_prox():
    """Two unregularized multipliers on the same constraint (the 'hard' policy on a duplicated weld)."""
    with pytest.raises(SingularProblemError, match="prox") as error:
        elimination.solve(_one_constraint_twice([0.5, 0.5]), Ordering.from_keys(["x", ("lam", 0), ("lam", 1)]))
    assert error.value.kind == "singular" and str(error.value).endswith(".")


def test_contradicting_hard_multipliers_are_inconsistent_and_named():
    """``x_0 + x_1 = 0.5`` and ``= 1.5``: no x meets both; the multipliers' pivot says so, not "redundant"."""
    with pytest.raises(SingularProblemError, match="contradict each other") as error:
        elimination.solve(_one_constraint_twice([0.5, 1.5]), Ordering.from_keys(["x", ("lam", 0), ("lam", 1)]))
    assert error.value.kind == "inconsistent" and "[('lam', 0), ('lam', 1)]" in str(error.value)


def test_wrong_sign_of_a_max_variable_is_reported():
    g = FactorGraph()
    g.add_variable(Variable("lam", 1, "max"))
    g.add(Quadratic(["lam"], [[1.0]]))  # a positive prior on a multiplier
    with pytest.raises(SingularProblemError, match="negative definite"):
        elimination.solve(g)


def test_batched_singularity_names_the_batch_element():
    g = FactorGraph()
    g.add_variable(Variable("x", 1))
    g.add(Quadratic(["x"], np.array([[[1.0]], [[0.0]], [[2.0]]])))
    with pytest.raises(SingularProblemError, match=r"batch element\(s\) \[\(1,\)\]") as error:
        elimination.solve(g)
    assert str(error.value).endswith(".")  # the note sits before the advice: callers may append a sentence


def test_plan_of_another_structure_is_refused():
    a, b = FactorGraph(), FactorGraph()
    for g in (a, b):
        g.add_variable(Variable("x", 1))
        g.add(Quadratic(["x"], [[1.0]]))
    b.add(Quadratic(["x"], [[1.0]]))
    with pytest.raises(ValueError, match="structure"):
        factorize(b, analyze(a, elimination.natural(a)))


def test_bad_resolve_arguments_are_refused():
    g = FactorGraph()
    g.add_variable(Variable("x", 2))
    i = g.add(Quadratic(["x"], np.eye(2)))
    j = g.add(LinearEquality(["x"], [np.ones((1, 2))], [1.0]))
    fact = _factorization(g)
    with pytest.raises(KeyError, match="not a Quadratic"):
        fact.solve(g={j: [0.0, 0.0]})
    with pytest.raises(ValueError, match="length 3, expected 2"):
        fact.solve(g={i: [0.0, 0.0, 0.0]})
    with pytest.raises(ValueError, match="NaN"):
        fact.solve(b={j: [np.nan]})


def test_partial_factorization_cannot_solve():
    g = FactorGraph()
    for k in "xy":
        g.add_variable(Variable(k, 1))
    g.add(Quadratic(["x", "y"], np.eye(2)))
    fact = factorize(g, analyze(g, Ordering.from_keys(["x"]), complete=False))
    with pytest.raises(ValueError, match="partial"):
        fact.solve()


def test_refinement_recovers_accuracy_lost_through_an_ill_conditioned_hard_block():
    """Substituting (x3, x0) through a hard block with sigma_min = 3e-3 loses ~1e-9 without refinement."""
    spec = GraphSpec(
        dims=(3, 2, 3, 2), couplings=((0,), (0, 1), (0, 3), (1, 3), (0, 1, 2)),
        equalities=(((3, 2), 3), ((3, 0), 3)), multipliers=((1, (0, 2), True),), seed=5835067,
    )
    graph = build_graph(spec)
    ordering = Ordering([(("x", 1),), (("lam", 0),), (("x", 3), ("x", 0)), (("x", 2),)])
    fact = factorize(graph, analyze(graph, ordering))
    reference = graph.dense_solve()
    assert max_relative_error(fact.solve(refine=0), reference) > 1e-11  # the unstable path
    assert max_relative_error(fact.solve(refine=1), reference) < 1e-13


def _kkt_solution(graph) -> dict:
    """The graph's solution by a dense KKT solve, assembled here from its factors' ``H, g`` and ``A, b``, with
    three steps of refinement whose residuals are taken in extended precision (so that the oracle is accurate
    well below what a stiff problem's float64 solves lose)."""
    offsets, n = {}, 0
    for var in graph.variables:
        offsets[var.key], n = n, n + var.dim
    H, g, rows, rhs = np.zeros((n, n)), np.zeros(n), [], []
    for f in graph.factors:
        cols = np.concatenate([np.arange(offsets[k], offsets[k] + graph.variable(k).dim) for k in f.keys])
        if isinstance(f, LinearEquality):
            row = np.zeros((f.rows, n))
            row[:, cols] = np.concatenate(f.A, axis=-1)
            rows.append(row)
            rhs.append(f.b)
        else:
            H[np.ix_(cols, cols)] += f.H
            g[cols] += f.g
    A, b = np.concatenate(rows), np.concatenate(rhs)
    kkt = np.block([[H, A.T], [A, np.zeros((len(b), len(b)))]])
    rhs = np.concatenate([g, b])
    x = np.linalg.solve(kkt, rhs)
    for _ in range(3):
        residual = rhs.astype(np.longdouble) - kkt.astype(np.longdouble) @ x.astype(np.longdouble)
        x = x + np.linalg.solve(kkt, residual.astype(float))
    return {var.key: x[offsets[var.key]: offsets[var.key] + var.dim] for var in graph.variables}


def _prox_loop(rng, mu: float, redundant: bool = False):
    """Five 3-d variables with order-one priors, ``x0 = x1 + c`` declared ``[I, -I]``, and a loop closure
    ``K (x2, x4) = k`` by a multiplier ``lam`` under a proximal prior ``-|lam - lam0|^2 / (2 mu)`` (proxBBO's
    form); ``redundant``: ``x3 = 1`` stated twice as well (the plan then drops a row block).  Eliminated multiplier
    first, the loop leaves ``mu K'K`` on ``x2, x4``: the solve loses digits that refinement restores.
    Returns the graph, the proximal prior's factor index, and its ``g`` for a given ``lam0``."""
    graph = FactorGraph()
    for i in range(5):
        graph.add_variable(Variable(f"x{i}", 3))
        M = rng.normal(size=(3, 3))
        graph.add(Quadratic([f"x{i}"], M @ M.T + np.eye(3), rng.normal(size=3)))
    graph.add(LinearEquality(["x0", "x1"], [np.eye(3), -np.eye(3)], np.ones(3), units=(1, -1)))
    for _ in range(2 if redundant else 0):
        graph.add(LinearEquality(["x3"], [2.0 * np.eye(3)], 2.0 * np.ones(3)))
    graph.add_variable(Variable("lam", 2, role="max"))
    K = rng.normal(size=(2, 6))
    graph.add(Quadratic(["lam", "x2", "x4"], np.block([[np.zeros((2, 2)), K], [K.T, np.zeros((6, 6))]]),
                        np.concatenate([rng.normal(size=2), np.zeros(6)])))
    prox = graph.add(Quadratic(["lam"], -np.eye(2) / mu, np.zeros(2)))
    return graph, prox, lambda lam0: -lam0 / mu


ORDER = ["lam", "x2", "x0", "x1", "x3", "x4"]


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_started_solve_of_a_suspect_factorization_is_verified_from_the_start(backend):
    """Pivots below ``PIVOT_SUSPECT_RTOL`` (mu = 1e10): a solve from scratch is refined, then verified by
    refinement steps until they settle; started from the last solution of another problem, or from far, the
    verification starts there: no sweep from scratch, no step before the verification's, and the answer is the
    dense KKT solve's to round-off."""
    rng = np.random.default_rng(3)
    graph, penalty, g_of = _prox_loop(rng, mu=1e10)
    fact = factorize(graph, analyze(graph, Ordering.from_keys(ORDER)), backend=backend)
    assert np.all(fact.suspect()) and fact.startable()
    x = fact.solve(refine=1)
    g_new = g_of(x["lam"] + rng.normal(size=2))
    cold = fact.solve(g={penalty: g_new}, refine=1)
    work = fact.last_solve
    assert not work.started and work.refinements - work.verifications == 1 and work.verifications >= 1
    assert work.sweeps == 1 + work.refinements
    graph.factors[penalty].g[...] = g_new
    exact = _kkt_solution(graph)
    assert max_relative_error(cold, exact) < 1e-13
    for start in (x, {key: 0.5 * value for key, value in x.items()}):
        started = fact.solve(g={penalty: g_new}, refine=1, start=start)
        work = fact.last_solve
        assert work.started and work.refinements == work.verifications == work.sweeps >= 1
        assert max_relative_error(started, exact) < 1e-13


def _error_left(change: float, previous: float, ratio: float) -> float:
    """A refinement step's change times the contraction rate: the larger of the digits the pivots lose
    (eps / ratio) and the rate seen from the step before."""
    eps = np.finfo(float).eps
    return change * max(eps / min(max(ratio, eps), 1.0), change / previous)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_verification_ends_at_the_first_step_that_leaves_round_off(backend):
    """Suspect pivots (mu = 1e10): a solve from scratch refines once, then verifies until a step has contracted
    (at most half the step before, the plain one included) and the error it leaves -- its change times the
    contraction rate -- is below ``WARM_RTOL``; a re-solve from the last solution with ``verified=True`` (the
    first solve verified the factorization: the outer iterations' re-solves) stops at the first step whose
    error left is below it, fewer steps than verifying again; with ``finish=False`` it takes its one step and
    leaves the rest to a solve from there (``unfinished``).  Every answer is the dense KKT solve's to
    round-off."""
    rng = np.random.default_rng(3)
    graph, penalty, g_of = _prox_loop(rng, mu=1e10)
    fact = factorize(graph, analyze(graph, Ordering.from_keys(ORDER)), backend=backend)
    ratio = float(np.min(fact.pivot_ratio))
    assert np.all(fact.suspect())
    x = fact.solve(refine=1)
    changes = fact.last_solve.changes  # (each refinement step's correction relative to the solution)
    ends = [i for i in range(1, len(changes))
            if changes[i] <= 0.5 * changes[i - 1] and _error_left(changes[i], changes[i - 1], ratio) <= 1e-13]
    assert len(changes) >= 2 and ends[:1] == [len(changes) - 1]
    g_new = g_of(x["lam"] + rng.normal(size=2))
    again = fact.solve(g={penalty: g_new}, refine=1, start=x)
    verifying = len(fact.last_solve.changes)
    started = fact.solve(g={penalty: g_new}, refine=1, start=x, verified=True)
    changes = fact.last_solve.changes
    previous = [np.inf] + changes[:-1]
    ends = [i for i, (c, p) in enumerate(zip(changes, previous)) if _error_left(c, p, ratio) <= 1e-13]
    assert ends[:1] == [len(changes) - 1] and len(changes) < verifying
    half = {key: 0.5 * value for key, value in x.items()}  # from far: a change too large for one step
    # finish=False: the refine steps alone, the verification left to the caller ...
    deferred = fact.solve(g={penalty: g_new}, refine=1, start=half, verified=True, finish=False)
    assert len(fact.last_solve.changes) == 1 and fact.unfinished(deferred, half)
    # ... which takes it from there where the iterate may be the answer
    finished = fact.solve(g={penalty: g_new}, refine=1, start=deferred, verified=True)
    changes = fact.last_solve.changes
    previous = [np.inf] + changes[:-1]
    ends = [i for i, (c, p) in enumerate(zip(changes, previous)) if _error_left(c, p, ratio) <= 1e-13]
    assert ends[:1] == [len(changes) - 1]
    exact = _kkt_solution(graph)
    assert max_relative_error(x, exact) < 1e-13
    graph.factors[penalty].g[...] = g_new
    exact = _kkt_solution(graph)
    assert max_relative_error(deferred, exact) > 1e-13  # (what the verification is for)
    for answer in (again, started, finished):
        assert max_relative_error(answer, exact) < 1e-13


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_solve_started_from_a_nearby_solution_solves_for_the_change_once(backend):
    """``solve(start=x)`` refines from ``x`` (the outer iterations' last iterate), on an order whose pivots lose
    eight digits (a multiplier first, mu = 1e8): from the solution of a nearby problem one refinement step is
    one solve, not two; from far (half the last solution: a change too large for the digits the pivots keep)
    it refines once more (``finish=False`` leaves that step out, and ``unfinished`` says it is wanted: the
    outer iterations take it where the iterate may be the answer); both as accurate as a refined solve from
    scratch against the dense KKT solve.  Where the plan drops rows it is a solve from scratch."""
    rng = np.random.default_rng(3)
    graph, penalty, g_of = _prox_loop(rng, mu=1e8)
    fact = factorize(graph, analyze(graph, Ordering.from_keys(ORDER)), backend=backend)
    x = fact.solve(refine=1)
    centre = x["lam"] + rng.normal(size=2)  # the proximal point's next centre
    g_new = g_of(centre)
    nearby = fact.solve(g={penalty: g_of(centre + 1e-8 * rng.normal(size=2))}, refine=1)
    near = fact.solve(g={penalty: g_new}, refine=1, start=nearby)
    assert fact.last_solve.started and fact.last_solve.sweeps == 1
    half = {key: 0.5 * value for key, value in x.items()}
    far = fact.solve(g={penalty: g_new}, refine=1, start=half)
    assert fact.last_solve.sweeps == fact.last_solve.refinements == 2
    unfinished = fact.solve(g={penalty: g_new}, refine=1, start=half, finish=False)  # its one more step left out
    assert fact.last_solve.sweeps == 1 and fact.unfinished(unfinished, half) and not fact.unfinished(near, nearby)
    cold = fact.solve(g={penalty: g_new}, refine=1)
    unrefined = fact.solve(g={penalty: g_new}, refine=0)
    graph.factors[penalty].g[...] = g_new
    exact = _kkt_solution(graph)
    assert max_relative_error(unrefined, exact) > 1e-10  # the digits this order loses
    for started in (near, far, cold):
        assert max_relative_error(started, exact) < 1e-13
    with pytest.raises(ValueError, match=r"missing \['lam'\]"):
        fact.solve(refine=1, start={key: value for key, value in x.items() if key != "lam"})
    with pytest.raises(ValueError, match=r"\['x2'\] are not \(\.\.\., dim\)"):
        fact.solve(refine=1, start={**x, "x2": np.zeros(2)})

    graph, penalty, g_of = _prox_loop(rng, mu=1e8, redundant=True)
    fact = factorize(graph, analyze(graph, Ordering.from_keys(ORDER)), backend=backend)
    assert any(step.dropped_rows for step in fact.plan.steps)
    far = {key: np.full_like(value, 1e3) for key, value in fact.solve().items()}
    g_new = g_of(rng.normal(size=2))
    started = fact.solve(g={penalty: g_new}, refine=1, start=far)
    work = fact.last_solve  # from scratch: the dropped rows' consistency is checked there
    assert not work.started and work.sweeps == 2 and work.refinements == 1
    assert max_relative_error(started, fact.solve(g={penalty: g_new}, refine=1)) == 0.0
