"""The compiled executor runs the lowered plan like the numpy rule: same numbers, same errors."""
import numpy as np
import pytest
from hypothesis import assume, event, example, given, settings

import elimination
from elimination import Ordering, SingularProblemError, analyze, factorize
from elimination.compiled_factorization import CompiledFactorization
from factorgraph import FactorGraph, LinearEquality, Quadratic, Variable
from tests.random_graphs import GraphSpec, build_graph, graph_specs, max_relative_error, well_conditioned

RTOL = 1e-12


def _both(graph, ordering, **solve):
    plan = analyze(graph, ordering)
    numpy_values = factorize(graph, plan, backend="numpy").solve(**solve)
    compiled = factorize(graph, plan, backend="numba")
    assert type(compiled).__name__ == "CompiledFactorization"
    return numpy_values, compiled.solve(**solve)


@settings(max_examples=60)
@given(graph_specs(hard_multipliers=True))
def test_random_graphs_equal_the_numpy_rule(spec):
    """Every kind of front (identity-free substitutions, rows passed on or dropped, definite, negative,
    quasi-definite and indefinite pivots) in every order the heuristics pick, batches included; one
    refinement step on both sides (the two sum in different orders: cond * eps apart before it)."""
    for batch in ((), (3,)):
        graph = build_graph(spec, batch=batch)
        assume(well_conditioned(graph))
        for name in elimination.ORDERINGS:
            ordering = elimination.resolve_ordering(graph, name)
            try:
                numpy_values = factorize(graph, analyze(graph, ordering), backend="numpy").solve()
            except SingularProblemError:  # an unregularized multiplier ordered first: refused on both sides
                with pytest.raises(SingularProblemError):
                    factorize(graph, analyze(graph, ordering), backend="numba").solve()
                event("refused on both sides")
                continue
            event("compiled")
            compiled = factorize(graph, analyze(graph, ordering), backend="numba")
            assert type(compiled).__name__ == "CompiledFactorization"
            assert max_relative_error(compiled.solve(), numpy_values) < RTOL
            assert max_relative_error(compiled.solve(), graph.dense_solve()) < 1e-9


def _chain(T: int = 6, batch: tuple = ()):
    """x_{k+1} = x_k + u_k (declared identity blocks), priors on x_0 and every u_k, measurements on x_k."""
    rng = np.random.default_rng(4)
    g = FactorGraph()
    for k in range(T):
        g.add_variable(Variable(("x", k), 2))
        g.add_variable(Variable(("u", k), 2))
        g.add(Quadratic([("u", k)], np.eye(2), rng.normal(size=batch + (2,))))
        g.add(Quadratic([("x", k)], 0.5 * np.eye(2), rng.normal(size=batch + (2,))))
    for k in range(T - 1):
        g.add(LinearEquality([("x", k + 1), ("x", k), ("u", k)], [np.eye(2), -np.eye(2), -np.eye(2)],
                             rng.normal(size=batch + (2,)), units=(1, -1, -1)))
    order = [key for k in reversed(range(1, T)) for key in (("x", k), ("u", k))] + [("u", 0), ("x", 0)]
    return g, Ordering.from_keys(order)


def test_identity_substitutions_and_batched_linear_terms():
    graph, ordering = _chain(batch=(4,))
    program = analyze(graph, ordering).lowered()
    assert not program.unsupported and program.summary()["identity_substitutions"] == 5
    numpy_values, compiled_values = _both(graph, ordering)
    assert max_relative_error(compiled_values, numpy_values) < RTOL
    plan = analyze(graph, ordering)
    fact = factorize(graph, plan, backend="numba")  # matrices unbatched, new linear terms batched (5, 4)
    g = {i: np.random.default_rng(1).normal(size=(5, 4, 2)) for i, f in enumerate(graph.factors) if isinstance(f, Quadratic)}
    assert max_relative_error(fact.solve(g=g), factorize(graph, plan, backend="numpy").solve(g=g)) < RTOL
    own = fact.solve(refine=0)  # the graph's own terms, unrefined: straight from the factors into the kernel
    assert max_relative_error(own, factorize(graph, plan, backend="numpy").solve(refine=0)) < RTOL
    assert all(np.array_equal(own[k], v) for k, v in fact.solve(refine=0).items())  # its laid-out terms stay as read
    first = next(i for i, f in enumerate(graph.factors) if isinstance(f, Quadratic))  # the same terms, overridden
    assert max_relative_error(fact.solve(g={first: graph.factors[first].g.copy()}, refine=0), own) == 0.0


def test_partial_plans_are_named_or_left_to_numpy():
    g = FactorGraph()
    for k in "xy":
        g.add_variable(Variable(k, 2))
        g.add(Quadratic([k], np.eye(2)))
    g.add(LinearEquality(["x", "y"], [np.ones((1, 2)), np.ones((1, 2))], [1.0]))  # a general hard block
    full = analyze(g, Ordering.from_keys(["x", "y"]))
    assert full.lowered().summary()["general_substitutions"] == 1 and not full.lowered().unsupported
    partial = analyze(g, Ordering.from_keys(["x"]), complete=False)
    with pytest.raises(ValueError, match="partial.*backend='numpy' or 'auto'"):
        factorize(g, partial, backend="numba")
    assert type(factorize(g, partial, backend="auto")).__name__ == "Factorization"
    with pytest.raises(ValueError, match="backend must be one of"):
        factorize(g, full, backend="gpu")


def test_dependent_and_contradicting_rows_are_handled_as_by_the_numpy_path():
    """Redundant rows (numerical rank below the plan's): re-planned; contradicting ones: named."""
    for inconsistent, expect in ((False, None), (True, "inconsistent")):
        g = FactorGraph()
        for k in "xy":
            g.add_variable(Variable(k, 1))
        g.add(Quadratic(["x"], [[1.0]], [0.3]))
        g.add(LinearEquality(["x", "y"], [[[0.7]], [[-1.3]]], [0.4]))
        g.add(LinearEquality(["x", "y"], [[[1.75]], [[-3.25]]], [1.0 + inconsistent]))
        plan = analyze(g, Ordering.from_keys(["x", "y"]))
        if expect:
            with pytest.raises(SingularProblemError, match=expect):
                factorize(g, plan, backend="numba").solve()
        else:
            values = factorize(g, plan, backend="auto").solve()
            assert values["x"][0] == pytest.approx(0.3) and values["y"][0] == pytest.approx((0.4 - 0.21) / -1.3)


def test_a_failing_pivot_is_reported_as_by_the_numpy_rule():
    g = FactorGraph()
    g.add_variable(Variable("x", 2))
    g.add(Quadratic(["x"], np.diag([1.0, 0.0])))
    with pytest.raises(SingularProblemError, match="undetermined"):
        factorize(g, analyze(g, Ordering.from_keys(["x"])), backend="numba")


def test_compiled_elimination_is_one_factorization_and_solve_of_the_graph():
    """What `gaussgraph compare` times as the elimination's cost computes the solution, at each call, from
    the workspaces filled once (the solve writes into its linear workspace: a copy each time) and outputs
    and scratch made once, the same bits every call; a pivot it cannot take raises instead of returning
    numbers."""
    rng = np.random.default_rng(3)
    graph = FactorGraph()
    graph.add_variable(Variable("x", 2))
    graph.add_variable(Variable("y", 3))
    graph.add_variable(Variable("l", 2, role="max"))
    M = rng.normal(size=(5, 5))
    graph.add(Quadratic(["x", "y"], M @ M.T + 5 * np.eye(5), rng.normal(size=5)))
    graph.add(LinearEquality(["x", "y"], [rng.normal(size=(2, 2)), rng.normal(size=(2, 3))], rng.normal(size=2)))
    graph.add(Quadratic(["l", "y"], _saddle(rng), np.zeros(5)))
    plan = analyze(graph, elimination.resolve_ordering(graph, "min_fill"))
    expected = graph.dense_solve()
    run = elimination.compiled_elimination(graph, plan)
    offsets = plan.lowered().value_offset
    first = run().copy()  # (a call overwrites the last one's outputs: its workspaces are made once)
    for _ in range(2):
        X = run()
        assert np.array_equal(X, first)  # independent of call history
        for key, value in expected.items():
            got = X[0, offsets[key] : offsets[key] + value.shape[-1]]
            assert np.max(np.abs(got - value)) <= 1e-9 * max(1.0, np.max(np.abs(value)))
    batched = FactorGraph()  # linear terms batched beyond the matrices: every element solved
    batched.add_variable(Variable("x", 2))
    batched.add_variable(Variable("y", 1))
    batched.add(Quadratic(["x", "y"], M[:3, :3] @ M[:3, :3].T + np.eye(3), rng.normal(size=(4, 3))))
    expected = batched.dense_solve()
    plan = analyze(batched, elimination.resolve_ordering(batched, "min_fill"))
    X, offsets = elimination.compiled_elimination(batched, plan)(), plan.lowered().value_offset
    assert X.shape[0] == 4
    for key, value in expected.items():
        assert np.allclose(X[:, offsets[key] : offsets[key] + value.shape[-1]], value, rtol=1e-10, atol=1e-12)
    singular = FactorGraph()
    singular.add_variable(Variable("x", 2))
    singular.add(Quadratic(["x"], np.diag([1.0, 0.0]), np.ones(2)))
    with pytest.raises(SingularProblemError):
        elimination.compiled_elimination(singular, analyze(singular, elimination.resolve_ordering(singular, "natural")))()


@settings(max_examples=40, deadline=None)
@given(graph_specs(hard_multipliers=True))
@example(GraphSpec(dims=(3, 3, 2), couplings=((0, 1), (0, 1, 2), (0, 1, 2), (2,)), equalities=(((0, 2), 3), ((0, 1, 2), 3)),
                   multipliers=((1, (0,), True),), seed=1, units=()))  # (3,): an element re-planned on the numpy path
def test_a_factorization_into_a_consumed_ones_memory_is_a_fresh_one_bit_for_bit(spec):
    """``factorize(graph, plan, out=old)``: the conditionals (and, once solved, the laid-out linear terms)
    of ``old`` hold the new factorization -- the same arrays, poisoned here with NaN to stand for another
    graph's numbers -- and every number equals a fresh factorization's, bit for bit: in lanes (11
    elements), per element and unbatched.  ``old`` is spent: solving it raises."""
    from dataclasses import replace

    for batch in ((), (3,), (11,)):
        first, second = build_graph(spec, batch=batch), build_graph(replace(spec, seed=spec.seed + 1), batch=batch)
        assume(well_conditioned(first) and well_conditioned(second))
        plan = analyze(first, elimination.resolve_ordering(first, "min_fill"))
        try:
            old = factorize(first, plan, backend="numba")
            fresh = factorize(second, plan, backend="numba")
        except SingularProblemError:
            event("refused")
            continue
        if not (isinstance(old, CompiledFactorization) and isinstance(fresh, CompiledFactorization)):
            event("numpy path")  # an element's hard rows dependent: re-planned on the numpy path, no C to hand on
            continue
        old.solve()  # its linear terms laid out: handed on too
        C, linear = old.C, old._own_linear[0]
        C.fill(np.nan)
        linear.fill(np.nan)
        new = factorize(second, plan, backend="numba", out=old)
        assert new.C is C and np.array_equal(new.C, fresh.C)
        assert np.array_equal(new.pivot_ratio, fresh.pivot_ratio)
        for call in ({"refine": 0}, {"refine": 1}):
            got, expected = new.solve(**call), fresh.solve(**call)
            assert got.keys() == expected.keys() and all(np.array_equal(got[k], expected[k]) for k in got)
        assert new._own_linear[0] is linear
        with pytest.raises(ValueError, match="handed on"):
            old.solve()
        event(f"batch {batch}")


def test_factorize_out_must_be_a_factorization_along_the_same_plan():
    graph, ordering = _chain()
    plan = analyze(graph, ordering)
    fact = factorize(graph, plan)
    with pytest.raises(TypeError, match="out must be a Factorization"):
        factorize(graph, plan, out=fact.C)
    with pytest.raises(ValueError, match="another plan"):
        factorize(graph, analyze(graph, ordering), out=fact)
    numpy_side = factorize(graph, plan, backend="numpy")  # (no memory to hand on: fresh memory, same answer)
    reused = factorize(graph, plan, out=numpy_side)
    assert max_relative_error(reused.solve(), graph.dense_solve()) < 1e-9
    with pytest.raises(ValueError, match="handed on"):
        numpy_side.solve()


def _saddle(rng) -> np.ndarray:
    """A multiplier prior coupled to y: [[-1e-3 I, B], [B', 0]] over (l, y)."""
    B = rng.normal(size=(2, 3))
    return np.block([[-1e-3 * np.eye(2), B], [B.T, np.zeros((3, 3))]])


@settings(max_examples=40)
@given(graph_specs(hard_multipliers=True))
def test_live_factors_never_share_workspace(spec):
    """The program reuses a generated factor's matrices once its step has read them: at every step,
    the ranges of the factors still alive (graph factors not yet eliminated, generated ones made and
    not yet eliminated) and of the ones it makes are disjoint and inside the workspace."""
    graph = build_graph(spec)
    for name in ("natural", "min_degree", "min_fill"):
        plan = analyze(graph, elimination.resolve_ordering(graph, name))
        program = plan.lowered()

        dims = {v.key: v.dim for v in plan.structure.variables}

        def extent(i):
            """The ranges of factor i's matrix and of its scales."""
            factor, n = plan.factors[i], sum(dims[k] for k in plan.factors[i].keys)
            rows = factor.rows if factor.hard else n
            start = program.A_offset[i] if factor.hard else program.H_offset[i]
            scales = program.rs_offset[i] if factor.hard else program.scale_offset[i]
            return [(start, start + rows * n), (scales, scales + rows)]

        placed = set(program.H_offset) | set(program.A_offset)  # (not a wide pair's link half's: never made)
        alive = set(range(len(graph.factors)))
        for step in plan.steps:
            made = [i for i in (step.new_quadratic, step.new_equality) if i is not None and i in placed]
            alive -= set(step.factors)
            ranges = sorted(r for i in alive | set(made) for r in extent(i))
            assert all(lo < hi <= program.factor_size for lo, hi in ranges)
            assert all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:])), (name, ranges)
            alive |= set(made)


def _scaled_batch_graph() -> FactorGraph:
    """A (2, 3) batch of a chain of 2-d variables with hard links (unbatched ``A``, batched ``b``), an unbatched
    prior broadcast into every element, and element (0, 0) 1e12 times larger than the others: its diagonal sets
    every element's scale floor (``SCALE_FLOOR`` of the batch's largest)."""
    rng = np.random.default_rng(7)
    batch = (2, 3)
    magnitude = np.ones(batch + (1, 1))
    magnitude[0, 0] = 1e12
    g = FactorGraph()
    for k in range(5):
        g.add_variable(Variable(k, 2))
        M = rng.normal(size=batch + (2, 2))
        g.add(Quadratic([k], magnitude * (M @ np.swapaxes(M, -1, -2) + 0.1 * np.eye(2)), rng.normal(size=batch + (2,))))
    for k in range(4):
        g.add(LinearEquality([k, k + 1], [np.eye(2), -np.eye(2)], rng.normal(size=batch + (2,))))
    g.add(Quadratic([0, 4], 1e-3 * np.eye(4), np.zeros(4)))
    return g


def test_a_batch_factorized_in_chunks_equals_one_workspace_bit_for_bit(monkeypatch):
    """A batch whose factor workspace would exceed ``WORKSPACE_CHUNK`` runs a few elements at a time through
    one reused workspace: every element's conditionals, pivot ratio and solution are those of one workspace
    for the whole batch, bit for bit -- the scale floor included, which the batch's largest element sets."""
    graph = _scaled_batch_graph()
    plan = analyze(graph, elimination.min_fill(graph))
    whole = factorize(graph, plan, backend="numba")
    monkeypatch.setattr(elimination.compiled, "WORKSPACE_CHUNK", 8 * plan.lowered().factor_size * 4)
    runs = []
    run_factorize = elimination.compiled.run_factorize
    monkeypatch.setattr(elimination.compiled, "run_factorize", lambda *a: runs.append(len(a[1])) or run_factorize(*a))
    chunked = factorize(graph, plan, backend="numba")
    assert runs == [4, 2]
    assert type(chunked).__name__ == type(whole).__name__ == "CompiledFactorization"
    assert np.array_equal(chunked.pivot_ratio, whole.pivot_ratio)
    assert np.array_equal(chunked.C, whole.C)
    x_whole, x_chunked = whole.solve(refine=0), chunked.solve(refine=0)
    assert all(np.array_equal(x_chunked[k], x_whole[k]) for k in x_whole)
    element = elimination.numeric.element_graph(graph, (1, 2), (2, 3))
    alone = factorize(element, plan, backend="numba")  # its own floor: the batch's is what the test is about
    assert alone.pivot_ratio != whole.pivot_ratio[1, 2]
    assert max_relative_error(x_whole, graph.dense_solve()) < 1e-9


def test_a_batched_solve_runs_in_chunks_bit_for_bit(monkeypatch):
    """The solve copies a chunk of elements' linear terms at a time (its kernel writes the generated factors'
    terms among them): the graph's own terms (conditionals per element) and overridden ones of a larger batch
    (conditionals shared, 4 for 20 elements: chunks whole multiples of 4) give the one-chunk values bit for bit,
    refined or not, and leave the terms they read as they were."""
    graph, ordering = _chain(batch=(4,))
    rng = np.random.default_rng(3)
    graph.add(Quadratic([("x", 0)], np.eye(2) * rng.uniform(1, 2, size=(4, 1, 1)), np.zeros(2)))  # 4 elements' C
    plan = analyze(graph, ordering)
    program = plan.lowered()
    fact = factorize(graph, plan, backend="numba")
    assert fact.C.shape[0] == 4
    g = {i: rng.normal(size=(5, 4, 2)) for i, f in enumerate(graph.factors) if isinstance(f, Quadratic)}
    calls = [{"g": g, "refine": 0}, {"g": g, "refine": 1}, {"refine": 0}, {"refine": 1}]
    whole = [fact.solve(**call) for call in calls]
    monkeypatch.setattr(elimination.compiled, "WORKSPACE_CHUNK", 8 * (2 * program.linear_size + program.cache_size + 1) * 3)
    chunks = []
    solve_kernel = elimination.compiled.solve_kernel
    monkeypatch.setattr(elimination.compiled, "solve_kernel", lambda *a: chunks.append(len(a[2])) or solve_kernel(*a))
    for call, values in zip(calls, whole):
        chunks.clear()
        chunked = fact.solve(**call)
        assert chunks[:5 if "g" in call else 2] == ([4] * 5 if "g" in call else [3, 1])
        assert all(np.array_equal(chunked[k], values[k]) for k in values)
    assert max_relative_error(whole[3], factorize(graph, plan, backend="numpy").solve()) < RTOL


def test_stacked_broadcasts_mixed_batches_and_copies_uniform_ones():
    from elimination.compiled import stacked

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 2, 2)), rng.normal(size=(2, 2))  # one batched over 3, one not
    stack, batch = stacked([a, b], 2)
    assert batch == (3,) and stack.shape == (3, 2, 2, 2)
    assert np.array_equal(stack[:, 0], a) and all(np.array_equal(stack[i, 1], b) for i in range(3))
    stack, batch = stacked([b, 2 * b], 2)
    assert batch == () and np.array_equal(stack, np.stack([b, 2 * b]))
    vectors = [rng.normal(size=(3, 4)), rng.normal(size=(3, 4))]
    stack, batch = stacked(vectors, 1)
    assert batch == (3,) and np.array_equal(stack, np.stack(vectors, axis=1))


def _tree(joints: tuple, coupled: int | None = None, seed: int = 5):
    """A kinematic tree as the GPLC graph lays it out: 6-d link accelerations ``a_i``, joint accelerations
    ``q_i`` (dims ``joints``), ``a_i = a_parent + S_i q_i + c_i`` declared ``[I, -I, 0]`` (the root has no
    parent), random inertias on the links, torques on the joints, and a damping term on some joints
    (a joint-space factor with a matrix).  ``coupled``: a link whose prior also spans its parent's
    acceleration (then its front is no tree pair).  Ordered leaves first: ``a_i`` then ``q_i``."""
    rng = np.random.default_rng(seed)
    g = FactorGraph()
    parent = [-1] + [int(rng.integers(0, i)) for i in range(1, len(joints))]
    for i, d in enumerate(joints):
        g.add_variable(Variable(("a", i), 6))
        g.add_variable(Variable(("q", i), d))
        M = rng.normal(size=(6, 6))
        g.add(Quadratic([("a", i)], M @ M.T + 0.5 * np.eye(6), rng.normal(size=6)))
        g.add(Quadratic([("q", i)], np.zeros((d, d)), rng.normal(size=d)))
        if i % 2 or d == 3:
            g.add(Quadratic([("q", i)], 0.3 * np.eye(d), np.zeros(d)))
        S = -rng.normal(size=(6, d))
        if parent[i] < 0:
            g.add(LinearEquality([("a", i), ("q", i)], [np.eye(6), S], rng.normal(size=6), units=(1, 0)))
        else:
            g.add(LinearEquality([("a", i), ("a", parent[i]), ("q", i)], [np.eye(6), -np.eye(6), S],
                                 rng.normal(size=6), units=(1, -1, 0)))
    if coupled is not None:
        K = rng.normal(size=(3, 12))
        g.add(Quadratic([("a", coupled), ("a", parent[coupled])], K.T @ K, rng.normal(size=12)))
    order = [key for i in reversed(range(len(joints))) for key in (("a", i), ("q", i))]
    return g, Ordering.from_keys(order)


@pytest.mark.parametrize("coupled", [None, 3])
def test_tree_pairs_are_fused_and_equal_the_numpy_rule(coupled):
    """ABA's pattern -- a link through its tree joint, then the joint's pivot -- runs as one fused step
    (both kernels: one-dimensional joints of 6-d links, and any other size), and gives the numpy rule's
    numbers; a link whose factors reach its parent is no tree pair (a wide pair: the test below)."""
    from elimination.program import F, Op

    graph, ordering = _tree((6, 1, 3, 1, 2, 1), coupled)
    rows = analyze(graph, ordering).lowered().steps
    ops, joint_dims = rows[:, F["op"]], np.roll(rows[:, F["nF"]], -1)
    fused = set(np.flatnonzero(np.isin(ops, (Op.TREE_PAIR, Op.REVOLUTE_PAIR))) // 2)
    assert fused == set(range(6)) - ({6 - 1 - coupled} if coupled is not None else set())
    pairs = np.flatnonzero(np.isin(ops, (Op.TREE_PAIR, Op.REVOLUTE_PAIR, Op.WIDE_REVOLUTE)))
    assert np.array_equal(np.flatnonzero(ops == Op.FUSED), pairs + 1)  # (a coupled 1-d joint: a wide revolute pair)
    assert set(joint_dims[ops == Op.REVOLUTE_PAIR]) == {1} and 1 not in set(joint_dims[ops == Op.TREE_PAIR])
    numpy_values, compiled = _both(graph, ordering, refine=0)
    assert max_relative_error(compiled, numpy_values) < RTOL
    assert max_relative_error(compiled, graph.dense_solve()) < 1e-9


def test_a_tree_pair_past_the_pair_kernel_runs_as_its_two_steps():
    """A joint of seven degrees of freedom on a 6-d link (the tree-pair kernel, one source for every batch width,
    takes up to six): that link and joint run as their own steps, the other pairs stay fused, and the numbers
    are the numpy rule's and the dense solve's."""
    from elimination.program import F, Op

    graph, ordering = _tree((6, 7, 2, 1))
    rows = analyze(graph, ordering).lowered().steps
    ops, joint_dims = rows[:, F["op"]], np.roll(rows[:, F["nF"]], -1)
    paired = np.isin(ops, (Op.TREE_PAIR, Op.REVOLUTE_PAIR))
    assert sorted(joint_dims[paired]) == [1, 2, 6] and 7 not in set(joint_dims[paired])
    assert np.array_equal(np.flatnonzero(ops == Op.FUSED), np.flatnonzero(paired) + 1)
    numpy_values, compiled = _both(graph, ordering, refine=0)
    assert max_relative_error(compiled, numpy_values) < RTOL
    assert max_relative_error(compiled, graph.dense_solve()) < 1e-9


@pytest.mark.parametrize("batch", [(), (3,)])
def test_wide_pairs_run_as_one_front_and_equal_the_numpy_rule(batch):
    """A link through its tree joint whose front reaches further -- a multiplier-like key on a leaf that
    its ancestors carry in their separators (proxBBO, PV), a link coupled to its parent (a loop through
    it), a factor on a joint and another link -- runs with its joint's pivot as a wide
    pair, on one front, and gives the numpy rule's numbers (batched too) and the dense solve's."""
    from elimination.program import F, KEEP_MIRRORED, START_LEFT, Op

    joints = (6, 1, 3, 1, 2, 1)
    graph, ordering = _tree(joints, coupled=3)
    rng = np.random.default_rng(11)
    graph.add_variable(Variable("lam", 3))
    K = rng.normal(size=(3, 9))
    graph.add(Quadratic([("a", 5), "lam"], K.T @ K, rng.normal(size=9)))
    graph.add(Quadratic(["lam"], np.eye(3) + rng.uniform(size=batch + (1, 1)), rng.normal(size=batch + (3,))))
    J = rng.normal(size=(2, 7))
    graph.add(Quadratic([("q", 3), ("a", 1)], J.T @ J, np.zeros(7)))
    ordering = Ordering.from_keys(list(ordering.keys()) + ["lam"])
    rows = analyze(graph, ordering).lowered().steps
    wide = np.flatnonzero((rows[:, F["op"]] == Op.UNIT) & (rows[:, F["keep"]] == KEEP_MIRRORED))
    assert len(wide) >= 3 and np.array_equal(np.flatnonzero(rows[:, F["start"]] == START_LEFT), wide + 1)
    numpy_values, compiled = _both(graph, ordering, refine=0)
    assert max_relative_error(compiled, numpy_values) < RTOL
    assert max_relative_error(compiled, graph.dense_solve()) < 1e-9


@pytest.mark.parametrize("batch", [(), (3,)])
def test_wide_revolute_pairs_skip_the_joint_and_equal_the_numpy_rule(batch):
    """Wide pairs of 6-d links through one-dimensional joints run on the front without the joint's row and
    column (the link folded into its parent): with a multiplier-like key behind the parent in the
    separator, the parent after another link (a loop from the link to a link eliminated before its
    parent), the parent reached by the link's own factor (a loop through it), and no parent at all (the
    root).  Their factorization and both sweeps of the solve: same values and smallest pivot ratio as the
    numpy rule, and the dense solve's values."""
    from elimination.program import F, Op

    graph, ordering = _tree((1,) * 6, coupled=3)
    rng = np.random.default_rng(11)
    graph.add_variable(Variable("lam", 3))
    K, L = rng.normal(size=(3, 9)), rng.normal(size=(4, 12))
    graph.add(Quadratic([("a", 5), "lam"], K.T @ K, rng.normal(size=9)))
    graph.add(Quadratic(["lam"], np.eye(3) + rng.uniform(size=batch + (1, 1)), rng.normal(size=batch + (3,))))
    graph.add(Quadratic([("a", 4), ("a", 2)], L.T @ L, rng.normal(size=12)))  # a loop: 4's parent is 0
    plan = analyze(graph, Ordering.from_keys(list(ordering.keys()) + ["lam"]))
    rows = plan.lowered().steps
    revolute = rows[rows[:, F["op"]] == Op.WIDE_REVOLUTE]
    assert len(revolute) == 6
    assert {int(tp) for tp in revolute[:, F["tp"]]} == {-1, 0, 6}  # no parent, parent first, parent after a link
    coupled = plan.steps[4]  # link 3, whose factor reaches its parent
    assert coupled.frontal == (("a", 3),) and any(len(p) == 12 for i, p in zip(coupled.factors, coupled.positions)
                                                   if not plan.factors[i].hard)
    numpy_fact, compiled_fact = factorize(graph, plan, backend="numpy"), factorize(graph, plan, backend="numba")
    assert type(compiled_fact).__name__ == "CompiledFactorization"
    numpy_values, compiled = numpy_fact.solve(refine=0), compiled_fact.solve(refine=0)
    assert max_relative_error(compiled, numpy_values) < RTOL
    assert max_relative_error(compiled, graph.dense_solve()) < 1e-9
    assert np.allclose(compiled_fact.pivot_ratio, numpy_fact.pivot_ratio, rtol=1e-12, atol=0)


@pytest.mark.parametrize("weight", [None, 3.0, np.diag([1.0, 2.0, 3.0])])
@pytest.mark.parametrize("batch_A, batch_b", [((), ()), ((), (2, 3)), ((3,), (2, 3)), ((2, 1), (2, 3)), ((4,), (4,))])
def test_compiled_refinement_takes_residuals_group_by_group(weight, batch_A, batch_b):
    """Refinement on the compiled path takes its residuals from the stacked least-squares terms (one
    product per factor group, measurement form ``A'W(b - A x)``), with the batch of the matrices
    broadcast against the right-hand sides': equal to the numpy path's per-factor residuals and to the
    normal equations of each element; the residuals at arbitrary values equal the factors' own."""
    from elimination.compiled_factorization import CompiledFactorization
    from factorgraph import LeastSquares

    rng = np.random.default_rng(7)
    g, terms, column = FactorGraph(), [], {"x": 0, "y": 2, "z": 4}
    for key in column:
        g.add_variable(Variable(key, 2))
    for keys in (["x"], ["x", "y"], ["y", "z"], ["z", "x"]):
        A = [rng.normal(size=batch_A + (3, 2)) for _ in keys]
        b = rng.normal(size=batch_b + (3,))
        g.add(LeastSquares(keys, A, b, weight=weight))
        terms.append((keys, A, b))
    plan = analyze(g, elimination.min_fill(g))
    for refine in (1, 2):
        compiled = factorize(g, plan, backend="numba")
        ours = compiled.solve(refine=refine)
        assert compiled.last_solve.refinements == refine and compiled.last_solve.sweeps == 1 + refine
        reference = factorize(g, plan, backend="numpy").solve(refine=refine)
        assert max(np.abs(ours[k] - reference[k]).max() for k in ours) < 1e-12
    W = np.eye(3) if weight is None else np.asarray(weight) * np.eye(3) if np.ndim(weight) == 0 else weight
    batch = np.broadcast_shapes(batch_A, batch_b)
    for index in np.ndindex(*batch):  # the normal equations of each element, written out
        J, rhs = np.zeros((12, 6)), np.zeros(12)
        for f, (keys, A, b) in enumerate(terms):
            for key, Ak in zip(keys, A):
                J[3 * f : 3 * f + 3, column[key] : column[key] + 2] = np.broadcast_to(Ak, batch + (3, 2))[index]
            rhs[3 * f : 3 * f + 3] = np.broadcast_to(b, batch + (3,))[index]
        Wd = np.kron(np.eye(4), W)
        exact = np.linalg.solve(J.T @ Wd @ J, J.T @ Wd @ rhs)
        assert max(np.abs(ours[k][index] - exact[column[k] : column[k] + 2]).max() for k in column) < 1e-9
    # the residuals themselves, at values that solve nothing (a correct solution leaves nothing to check)
    fact = factorize(g, plan, backend="numba")
    fact.solve(refine=1)  # lays out the graph's terms
    full, program = fact._own_linear[2], fact.program
    X = rng.normal(size=(int(np.prod(full)), program.value_size))
    Lres, _ = CompiledFactorization._flat_residual(fact, X, full)
    values = fact._values(X, full)
    for group in program.groups:
        for j, i in enumerate(group.members):
            f = g.factors[i]
            x = np.concatenate([values[k] for k in f.keys], axis=-1)
            laid_out = Lres[:, group.linear + j * group.rows : group.linear + (j + 1) * group.rows]
            assert np.abs(laid_out.reshape(full + (-1,)) - f.residual_information(x, f.b)).max() < 1e-12


@pytest.mark.parametrize("batch_M, batch_v", [((), ()), ((), (2, 3)), ((3,), (2, 3)), ((2, 3), (2, 3))])
def test_compiled_refinement_of_quadratic_and_hard_groups(batch_M, batch_v):
    """The residuals ``g - H x`` of quadratic and ``b - A x`` of hard factors taken group by group, with
    matrices whose batch is broadcast against the linear terms', at arbitrary values; and the refined
    solve equal to the numpy path's."""
    rng = np.random.default_rng(11)
    g = FactorGraph()
    for key in "xyz":
        g.add_variable(Variable(key, 2))
    for keys in (["x"], ["y"], ["z"], ["x", "y"], ["y", "z"]):
        n = 2 * len(keys)
        R = rng.normal(size=batch_M + (n, n))
        g.add(Quadratic(keys, R @ np.swapaxes(R, -1, -2) + n * np.eye(n), rng.normal(size=batch_v + (n,))))
    g.add(LinearEquality(["x", "z"], [rng.normal(size=batch_M + (1, 2)) for _ in range(2)], rng.normal(size=batch_v + (1,))))
    plan = analyze(g, elimination.min_fill(g))
    ours = factorize(g, plan, backend="numba").solve(refine=2)
    reference = factorize(g, plan, backend="numpy").solve(refine=2)
    assert max(np.abs(ours[k] - reference[k]).max() for k in ours) < 1e-12
    fact = factorize(g, plan, backend="numba")
    fact.solve(refine=1)  # lays out the graph's terms
    full, program = fact._own_linear[2], fact.program
    X = rng.normal(size=(int(np.prod(full)), program.value_size))
    Lres, _ = fact._flat_residual(X, full)
    values = fact._values(X, full)
    for group in program.groups:
        for j, i in enumerate(group.members):
            f = g.factors[i]
            x = np.concatenate([values[k] for k in f.keys], axis=-1)
            if group.hard:
                expected = f.b - sum((Ak @ values[k][..., None])[..., 0] for k, Ak in zip(f.keys, f.A))
            else:
                expected = f.g - (f.H @ x[..., None])[..., 0]
            laid_out = Lres[:, group.linear + j * group.rows : group.linear + (j + 1) * group.rows]
            assert np.abs(laid_out.reshape(full + (-1,)) - expected).max() < 1e-12


def test_a_step_started_from_the_front_the_step_before_left_gives_the_same_numbers():
    """A dense factor over k variables eliminated one by one: each step's separator is the next step's whole
    front, so the next step starts from it (``start``, program._carried) instead of the generated factor
    written out, the front zeroed and the factor gathered back.  The conditionals are those of the same
    program with no step carried, bit for bit, and the carried factors' workspace is never written (left
    NaN): the carried path ran."""
    import dataclasses
    from elimination.compiled import factor_workspace, run_factorize
    from elimination.program import F, KEEP_UPPER, START_CARRIED, START_SPREAD

    rng = np.random.default_rng(7)
    k, d = 6, 2
    g = FactorGraph()
    for i in range(k):
        g.add_variable(Variable(("x", i), d))
        g.add(Quadratic([("x", i)], np.eye(d), rng.normal(size=d)))
    M = rng.normal(size=(k * d, k * d))
    g.add(Quadratic([("x", i) for i in range(k)], M @ M.T, rng.normal(size=k * d)))
    plan = analyze(g, Ordering.from_keys([("x", i) for i in range(k)]))
    program = plan.lowered()
    steps = program.steps
    carried = np.flatnonzero(np.isin(steps[:, F["start"]], (START_CARRIED, START_SPREAD)))
    assert len(carried) == k - 1  # every step but the first
    assert np.array_equal(np.flatnonzero(steps[:, F["keep"]] == KEEP_UPPER), carried - 1)
    plain = dataclasses.replace(program, steps=np.where(np.isin(np.arange(len(F)), (F["start"], F["keep"])), 0, steps))
    Fw, _, largest = factor_workspace(g, program)
    Fw_carried = Fw.copy()
    for st in carried - 1:  # the factors the carried steps start from: poisoned
        n = steps[st, F["nS"]]
        Fw_carried[:, steps[st, F["out_H"]]:steps[st, F["out_H"]] + n * n] = np.nan
        Fw_carried[:, steps[st, F["out_s"]]:steps[st, F["out_s"]] + n] = np.nan
    C_carried = run_factorize(program, Fw_carried, 1e-14 * largest)[0]
    C_plain = run_factorize(plain, Fw.copy(), 1e-14 * largest)[0]
    assert np.isfinite(C_carried).all() and np.array_equal(C_carried, C_plain)
    for st in carried - 1:
        assert np.isnan(Fw_carried[:, steps[st, F["out_H"]]]).all()
    x = factorize(g, plan, backend="numba").solve()
    assert max_relative_error(x, g.dense_solve()) < 1e-9
