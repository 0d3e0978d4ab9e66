"""Arrays in and out: a Layout names each factor's and variable's place in the workspaces; factorize_arrays and
ArrayFactorization.solve run on them (many right-hand sides on one factorization)."""
import pickle

import numpy as np
import pytest
from hypothesis import assume, event, given, settings

import elimination
from elimination import Layout, Ordering, SingularProblemError, analyze, factorize, factorize_arrays
from factorgraph import FactorGraph, LinearEquality, Quadratic, Variable
from tests.dense_reference import reference_solve, relative_error
from tests.random_graphs import build_graph, graph_specs, well_conditioned


def _with_terms(graph: FactorGraph, layout: Layout, Fw: np.ndarray, Lin: np.ndarray) -> FactorGraph:
    """The graph whose factors have the matrices of ``Fw`` and the linear terms of ``Lin`` (one element each),
    as Quadratic and LinearEquality factors: what the dense oracle solves."""
    out = FactorGraph()
    for var in graph.variables:
        out.add_variable(Variable(var.key, var.dim, role=var.role))
    for slot in layout.factors:
        M, v = layout.matrix(Fw, slot.index), layout.linear(Lin, slot.index)
        if slot.hard:
            dims = np.cumsum([graph.variable(k).dim for k in slot.keys])[:-1]
            out.add(LinearEquality(slot.keys, np.split(M, dims, axis=-1), v))
        else:
            out.add(Quadratic(slot.keys, M, v))
    return out


@settings(max_examples=40, deadline=None)
@given(graph_specs(hard_multipliers=True))
def test_arrays_from_a_graph_solve_as_the_graph_does_bit_for_bit(spec):
    """The FactorGraph's numbers through Layout.fill, factorized and solved on arrays: the values of
    factorize(graph, plan).solve(refine=0) bit for bit (the same kernels, one element at a time), and with
    refinement those of the dense KKT solve."""
    for batch in ((), (3,)):
        graph = build_graph(spec, batch=batch)
        assume(well_conditioned(graph))
        plan = analyze(graph, elimination.resolve_ordering(graph, "min_fill"))
        try:
            expected = factorize(graph, plan, backend="numba").solve(refine=0)
        except (SingularProblemError, ValueError):
            event("refused on the graph path")
            continue  # (refused pivots, re-planned rows: the graph path's, checked in test_compiled)
        event(f"compared, hard rows: {any(s.hard for s in plan.layout().factors)}")
        layout = plan.layout()
        Fw, Lin = layout.fill(graph)
        fact = factorize_arrays(layout, Fw)
        X = fact.solve(Lin, refine=0)
        for key, value in expected.items():
            assert np.array_equal(layout.value(X, key), value), key
        reference = reference_solve(graph)
        if reference.status == "unique":
            assert relative_error(layout.values(fact.solve(Lin)), reference.values) < 1e-9


def _chain(n: int = 5, hard: bool = True) -> FactorGraph:
    rng = np.random.default_rng(7)
    g = FactorGraph()
    for k in range(n):
        g.add_variable(Variable(k, 2))
        g.add(Quadratic([k], np.eye(2) + 0.1 * np.diag(rng.random(2)), rng.normal(size=2)))
    for k in range(n - 1):
        g.add(Quadratic([k, k + 1], 0.3 * np.block([[np.eye(2), -np.eye(2)], [-np.eye(2), np.eye(2)]])))
    if hard:
        g.add(LinearEquality([0, n - 1], [rng.normal(size=(1, 2)), rng.normal(size=(1, 2))], [0.5]))
    return g


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_many_right_hand_sides_solve_on_one_factorization(backend):
    """Lin (rhs, *batch, linear_size): every right-hand side's values equal the dense KKT solve of the graph
    with those linear terms; each equals its own solve bit for bit."""
    graph = _chain()
    plan = analyze(graph, elimination.resolve_ordering(graph, "min_degree"))
    layout = plan.layout()
    rng = np.random.default_rng(1)
    Fw = np.stack([layout.fill(graph)[0]] * 2)  # a batch of two graphs of the same structure ...
    for slot in layout.factors[:5]:  # ... whose priors differ
        layout.matrix(Fw, slot.index)[1] *= 2.0
    Lin = rng.normal(size=(4, 2, layout.linear_size))  # four right-hand sides of each
    fact = factorize_arrays(layout, Fw, backend=backend)
    X = fact.solve(Lin)
    assert X.shape == (4, 2, layout.value_size) and fact.last_solve.refinements == 1
    for r in range(4):
        for e in range(2):
            reference = reference_solve(_with_terms(graph, layout, Fw[e], Lin[r, e]))
            assert reference.status == "unique"
            assert relative_error(layout.values(X[r, e]), reference.values) < 1e-12
        assert np.array_equal(fact.solve(Lin[r]), X[r])


def test_a_model_writes_its_numbers_through_the_layout_views():
    """No FactorGraph numbers per state: the structure's graph once (placeholders), then a batch of states
    written straight into the views; the values are the dense solve's of the graph of those numbers."""
    graph = _chain(hard=False)
    layout = analyze(graph, Ordering.from_keys(list(range(5)))).layout()
    rng = np.random.default_rng(2)
    Fw, Lin = layout.factor_workspace((6,)), layout.linear_workspace((6,))
    for slot in layout.factors:
        B = rng.normal(size=(6, slot.n, slot.n))
        layout.matrix(Fw, slot.index)[...] = B @ np.swapaxes(B, -1, -2) + slot.n * np.eye(slot.n)
        layout.linear(Lin, slot.index)[...] = rng.normal(size=(6, slot.rows))
    X = factorize_arrays(layout, Fw).solve(Lin)
    for e in range(6):
        reference = reference_solve(_with_terms(graph, layout, Fw[e], Lin[e]))
        assert relative_error(layout.values(X[e]), reference.values) < 1e-12


@pytest.mark.parametrize("suspect", [False, True])
@pytest.mark.parametrize("verified, finish", [(False, True), (True, True), (True, False), (False, False)])
def test_a_solve_from_given_values_takes_the_graph_paths_steps(suspect, verified, finish):
    """A solve from ``start`` (a nearby problem's solution) on the arrays: the same steps as
    ``Factorization.solve`` with the same ``verified`` and ``finish`` -- refinement steps, verification steps,
    the same values to round-off -- on pivots that lose most digits (suspect: verified from the start unless an
    earlier solve verified them and ``finish`` leaves it to the caller) and on pivots that lose none; and
    ``unfinished`` says the same of the values it ends at."""
    g = FactorGraph()
    for k in "xy":
        g.add_variable(Variable(k, 1))
    near = 1.0 - (1e-11 if suspect else 0.5)
    i = g.add(Quadratic(["x", "y"], [[1.0, near], [near, 1.0]], [1.0, 0.5]))
    plan = analyze(g, Ordering.from_keys(["x", "y"]))
    graph_fact = factorize(g, plan, backend="numba")
    assert bool(np.all(graph_fact.suspect())) == suspect and graph_fact.startable()
    layout = plan.layout()
    Fw, Lin = layout.fill(g)
    fact = factorize_arrays(layout, Fw)
    assert bool(np.all(fact.suspect())) == suspect and fact.startable()
    start = graph_fact.solve()
    moved = np.array([1.0 + 1e-6, 0.5])
    expected = graph_fact.solve(g={i: moved}, refine=1, start=start, verified=verified, finish=finish)
    Lin2 = Lin.copy()
    layout.linear(Lin2, i)[...] = moved
    X0 = np.empty(layout.value_size)
    for key in "xy":
        layout.value(X0, key)[...] = start[key]
    X = fact.solve(Lin2, refine=1, start=X0, verified=verified, finish=finish)
    ours, theirs = fact.last_solve, graph_fact.last_solve
    assert ours.started and theirs.started
    assert (ours.refinements, ours.verifications) == (theirs.refinements, theirs.verifications)
    assert (ours.verifications > 0) == (suspect and (finish or not verified))
    for key in "xy":
        assert layout.value(X, key) == pytest.approx(expected[key], rel=1e-9)
    assert bool(fact.unfinished(X, X0)) == bool(graph_fact.unfinished(expected, start))


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_a_suspect_factorization_is_verified_as_on_the_graph_path(backend):
    """Pivots that lose most digits (a nearly singular prior): refinement goes on until it settles, the same
    steps as the graph path's, and the values agree with it."""
    g = FactorGraph()
    for k in "xy":
        g.add_variable(Variable(k, 1))
    g.add(Quadratic(["x", "y"], [[1.0, 1.0 - 1e-11], [1.0 - 1e-11, 1.0]], [1.0, 0.5]))
    plan = analyze(g, Ordering.from_keys(["x", "y"]))
    graph_fact = factorize(g, plan, backend="numba")
    assert np.all(graph_fact.suspect())
    expected = graph_fact.solve()
    fact = factorize_arrays(plan, plan.layout().fill(g)[0], backend=backend)
    X = fact.solve(plan.layout().fill(g)[1])
    assert fact.last_solve.verifications == graph_fact.last_solve.verifications > 0
    for key in "xy":
        assert plan.layout().value(X, key) == pytest.approx(expected[key], rel=1e-10)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_dropped_rows_are_checked_for_consistency(backend):
    """x = 1 twice: the plan drops a row; a second right-hand side that contradicts the first is named."""
    g = FactorGraph()
    g.add_variable(Variable("x", 1))
    g.add(Quadratic(["x"], [[1.0]], [0.0]))
    first = g.add(LinearEquality(["x"], [[[1.0]]], [1.0]))
    second = g.add(LinearEquality(["x"], [[[2.0]]], [2.0]))
    layout = analyze(g, Ordering.from_keys(["x"])).layout()
    Fw, Lin = layout.fill(g)
    fact = factorize_arrays(layout, Fw, backend=backend)
    assert layout.value(fact.solve(Lin), "x") == pytest.approx([1.0])
    layout.linear(Lin, second)[...] = 3.0
    with pytest.raises(SingularProblemError, match=rf"factor {first} on \['x'\], factor {second} on \['x'\] are inconsistent"):
        fact.solve(Lin)


def test_bad_arrays_are_named():
    graph = _chain()
    layout = analyze(graph, elimination.resolve_ordering(graph, "min_fill")).layout()
    Fw, Lin = layout.fill(graph)
    with pytest.raises(ValueError, match=rf"Fw must be \(\*batch, {layout.factor_size}\)"):
        factorize_arrays(layout, Fw[:-1])
    bad = Fw.copy()
    layout.matrix(bad, 3)[0, 0] = np.nan
    with pytest.raises(ValueError, match=r"factor 3 on \[3\] has NaN or inf"):
        factorize_arrays(layout, bad)
    singular = Fw.copy()
    for slot in layout.factors:
        if 0 in slot.keys and not slot.hard:
            layout.matrix(singular, slot.index)[...] = 0.0
    with pytest.raises(SingularProblemError, match=r"eliminating \[0\]"):
        factorize_arrays(layout, singular)
    with pytest.raises(ValueError, match="backend must be 'numba' or 'numpy', got 'gpu'"):
        factorize_arrays(layout, Fw, backend="gpu")
    fact = factorize_arrays(layout, Fw)
    with pytest.raises(ValueError, match="Lin must be"):
        fact.solve(Lin[:-1])
    with pytest.raises(IndexError, match="no factor 99"):
        layout.matrix(Fw, 99)
    with pytest.raises(KeyError, match="no variable 'z'"):
        layout.value(np.zeros(layout.value_size), "z")
    strided = np.zeros((layout.linear_size, 3)).T  # any strides: a view still, writes reach the array
    layout.linear(strided, 0)[...] = 1.0
    assert np.all(strided[:, layout.factors[0].linear] == 1.0)
    with pytest.raises(ValueError, match="structure .* differs"):
        layout.fill(_chain(hard=False))


def test_the_layout_is_structure_only_and_pickles():
    graph = _chain()
    plan = analyze(graph, elimination.resolve_ordering(graph, "min_fill"))
    layout = plan.layout()
    assert plan.layout() is layout
    again = pickle.loads(pickle.dumps(layout))
    assert again.factors == layout.factors and again.variables == layout.variables
    Fw, Lin = layout.fill(graph)
    X = factorize_arrays(again, Fw).solve(Lin)
    assert np.array_equal(X, factorize_arrays(layout, Fw).solve(Lin))
    slot = layout.factors[-1]
    assert slot.hard and slot.keys == (0, 4) and (slot.rows, slot.n) == (1, 4)
    assert "5 variables" in repr(layout)


def test_a_factor_type_is_written_in_one_store():
    """set_matrices / set_linear of the chain's priors (side by side: a slice) and of its couplings in reverse
    order (an index array) equal the views written one by one."""
    graph = _chain(hard=False)
    layout = analyze(graph, elimination.resolve_ordering(graph, "min_fill")).layout()
    rng = np.random.default_rng(4)
    priors, couplings = [0, 1, 2, 3, 4], [8, 7, 6, 5]
    M1, M2 = rng.normal(size=(3, 5, 2, 2)), rng.normal(size=(3, 4, 4, 4))
    v1 = rng.normal(size=(3, 5, 2))
    one, each = layout.factor_workspace((3,)), layout.factor_workspace((3,))
    Lone, Leach = layout.linear_workspace((3,)), layout.linear_workspace((3,))
    layout.set_matrices(one, priors, M1)
    layout.set_matrices(one, couplings, M2)
    layout.set_linear(Lone, priors, v1)
    for j, i in enumerate(priors):
        layout.matrix(each, i)[...] = M1[:, j]
        layout.linear(Leach, i)[...] = v1[:, j]
    for j, i in enumerate(couplings):
        layout.matrix(each, i)[...] = M2[:, j]
    assert np.array_equal(one, each) and np.array_equal(Lone, Leach)
    with pytest.raises(ValueError, match="one shape"):
        layout.set_matrices(one, [0, 5], M2[:, :2])
    with pytest.raises(ValueError, match=r"expected an array \(\.\.\., 5, 2, 2\)"):
        layout.set_matrices(one, priors, M2)


@settings(max_examples=40, deadline=None)
@given(graph_specs(hard_multipliers=True))
def test_the_numpy_reference_runs_the_program_as_the_kernels_do(spec):
    """backend="numpy" (elimination.reference: the unfused program, every step by the numpy rule, the batch at
    once) against the compiled kernels on the same workspaces: the same values to round-off, for every
    ordering the heuristics pick, batches and three right-hand sides each."""
    for batch in ((), (3,)):
        graph = build_graph(spec, batch=batch)
        assume(well_conditioned(graph))
        for name in ("min_fill", "min_degree", "natural"):
            plan = analyze(graph, elimination.resolve_ordering(graph, name))
            layout = plan.layout()
            Fw, Lin = layout.fill(graph)
            Lin = np.stack([Lin, 2 * Lin, -Lin])
            try:
                compiled = factorize_arrays(layout, Fw).solve(Lin)
            except SingularProblemError:
                with pytest.raises(SingularProblemError):
                    factorize_arrays(layout, Fw, backend="numpy").solve(Lin)
                event("refused by both")
                continue
            event("compared")
            reference = factorize_arrays(layout, Fw, backend="numpy").solve(Lin)
            scale = np.max(np.abs(compiled), axis=-1, keepdims=True)
            assert np.all(np.abs(reference - compiled) <= 1e-10 * np.maximum(scale, 1e-300)), name


@pytest.mark.parametrize("algorithm", ["aba", "lcaba", "proxbbo", "pv", "proxltl"])
def test_the_numpy_reference_on_fig4_under_each_algorithm(algorithm):
    """fig4's GPLC graph at a batch of states: the pairs the compiled program fuses run unfused here; the
    values agree with the compiled kernels' and with the dense KKT solve."""
    import mechanics
    from mechanics.gplc import gplc_graph
    from tests.mechanics.random_mechanisms import random_state

    mech = mechanics.models.fig4()
    mech = mech.without_constraints() if algorithm == "aba" else mech
    structure, plan = mechanics.algorithm_plan(mech, algorithm)
    q, v, tau = random_state(mech, np.random.default_rng(3), (4,))
    policy = {"aba": "prox", "lcaba": "alm", "proxbbo": "prox", "pv": "hard", "proxltl": "prox"}[algorithm]
    graph = gplc_graph(mech, q, v, tau, policy=policy, mu=1e3)  # (alm's penalty at 1e6: KKT condition 5e10)
    assert graph.structure() == structure
    layout = plan.layout()
    Fw, Lin = layout.fill(graph)
    compiled, reference = (factorize_arrays(layout, Fw, backend=b).solve(Lin) for b in ("numba", "numpy"))
    assert np.max(np.abs(reference - compiled)) <= 1e-10 * np.max(np.abs(compiled))
    assert plan.lowered(fuse=False).instructions().keys() <= {"front", "pivot", "unit"}
    dense = reference_solve(graph)
    assert relative_error(layout.values(reference), dense.values) < 1e-8


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_a_solve_started_from_a_nearby_solution(backend):
    """start=: refinement steps from given values (one sweep each), the values of a solve from scratch to
    round-off; from the answer itself the step changes nothing beyond round-off; a plan that drops rows
    ignores it (their consistency is checked on a solve from scratch)."""
    graph = _chain()
    layout = analyze(graph, elimination.resolve_ordering(graph, "min_fill")).layout()
    Fw, Lin = layout.fill(graph)
    fact = factorize_arrays(layout, Fw, backend=backend)
    X = fact.solve(Lin)
    moved = Lin.copy()
    layout.linear(moved, 0)[...] += 1e-3
    cold = fact.solve(moved)
    warm = fact.solve(moved, start=X)
    assert fact.last_solve.started and fact.last_solve.sweeps == fact.last_solve.refinements == 1
    assert np.max(np.abs(warm - cold)) <= 1e-13 * np.max(np.abs(cold))
    again = fact.solve(Lin, start=X)
    assert np.max(np.abs(again - X)) <= 1e-14 * np.max(np.abs(X))
    with pytest.raises(ValueError, match="start must have the values' shape"):
        fact.solve(Lin, start=X[:-1])
    g = FactorGraph()
    g.add_variable(Variable("x", 1))
    g.add(Quadratic(["x"], [[1.0]], [0.0]))
    g.add(LinearEquality(["x"], [[[1.0]]], [1.0]))
    g.add(LinearEquality(["x"], [[[2.0]]], [2.0]))
    dropping = analyze(g, Ordering.from_keys(["x"])).layout()
    Fw, Lin = dropping.fill(g)
    fact = factorize_arrays(dropping, Fw, backend=backend)
    fact.solve(Lin, start=np.zeros(dropping.value_size))
    assert not fact.last_solve.started
