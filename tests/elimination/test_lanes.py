"""Batches with their elements side by side (:mod:`elimination.lanes`) give each element the numbers of the
per-element kernels, bit for bit."""
import numpy as np
import pytest
from hypothesis import assume, event, given, settings

import elimination
from elimination import SingularProblemError, analyze, factorize, lanes
from factorgraph import FactorGraph, LinearEquality, Quadratic, Variable
from tests.random_graphs import build_graph, graph_specs, max_relative_error, well_conditioned, x

B = lanes.LANES + 3  # one full lane group and a padded one


def _per_element(graph, plan):
    """The factorization the per-element kernels make (the lane kernels switched off)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lanes, "covers", lambda program: False)
        return factorize(graph, plan, backend="numba")


def _equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def _assert_same(graph, plan, overrides: dict):
    """Lanes and per-element factorizations of ``graph`` agree bit for bit: conditionals, pivot ratios, the
    weakest step, solutions refined or not, and solutions for linear terms batched beyond the matrices."""
    side, alone = factorize(graph, plan, backend="numba"), _per_element(graph, plan)
    assert side.C.shape == (lanes.groups_of(B), plan.lowered().conditional_size, lanes.LANES)
    assert alone.C.shape == (B, plan.lowered().conditional_size)
    assert np.array_equal(lanes.elements(side.C, B), alone.C)
    assert np.array_equal(side.pivot_ratio, alone.pivot_ratio) and side.weakest_step is alone.weakest_step
    for call in ({"refine": 0}, {"refine": 1}, {"g": overrides, "refine": 0}, {"g": overrides, "refine": 1}):
        assert _equal(side.solve(**call), alone.solve(**call)), call
    return side


@settings(max_examples=40, deadline=None)
@given(graph_specs(equalities=False))
def test_lanes_give_the_per_element_numbers_bit_for_bit(spec):
    """Random quadratic graphs with multipliers, a batch of 11 with an unbatched factor, in every order
    the heuristics pick: where the program is one the lane kernels cover (definite and negative pivots) the
    batch runs there, and every element's numbers are the per-element kernels'; the dense solve agrees."""
    graph = build_graph(spec, batch=(B,))
    graph.add(Quadratic([x(0)], 0.1 * np.eye(spec.dims[0]), np.ones(spec.dims[0])))  # one matrix for every element
    assume(well_conditioned(graph))
    rng = np.random.default_rng(spec.seed)
    overrides = {i: rng.normal(size=(2, B) + f.g.shape[-1:]) for i, f in enumerate(graph.factors)}
    for name in elimination.ORDERINGS:
        plan = analyze(graph, elimination.resolve_ordering(graph, name))
        if not lanes.covers(plan.lowered()):
            event("not covered")
            continue
        try:
            side = _assert_same(graph, plan, overrides)
        except SingularProblemError:  # refused on both sides
            with pytest.raises(SingularProblemError):
                _per_element(graph, plan)
            event("refused")
            continue
        event("lanes")
        assert max_relative_error(side.solve(), graph.dense_solve()) < 1e-9


def _chain(batch: tuple, seed: int = 2) -> FactorGraph:
    """A chain of 3-d variables with priors and couplings, every matrix batched."""
    rng = np.random.default_rng(seed)
    g = FactorGraph()
    for k in range(6):
        g.add_variable(Variable(k, 3))
        M = rng.normal(size=batch + (3, 3))
        g.add(Quadratic([k], M @ np.swapaxes(M, -1, -2) + np.eye(3), rng.normal(size=batch + (3,))))
    for k in range(5):
        M = rng.normal(size=batch + (6, 4))
        g.add(Quadratic([k, k + 1], M @ np.swapaxes(M, -1, -2), rng.normal(size=batch + (6,))))
    return g


def test_the_scale_floor_is_the_whole_batchs_and_padding_stays_out():
    """One element 1e12 larger than the rest sets every element's scale floor, as on the per-element path
    (an element alone has another pivot ratio); the padded lanes of the last group repeat an element and
    change nothing."""
    graph = _chain((B,))
    for f in graph.factors:
        f.H[0] *= 1e12
        f.g[0] *= 1e12
    plan = analyze(graph, elimination.min_fill(graph))
    assert lanes.covers(plan.lowered())
    rng = np.random.default_rng(0)
    side = _assert_same(graph, plan, {i: rng.normal(size=(2, B, 6 if len(f.keys) == 2 else 3))
                                      for i, f in enumerate(graph.factors)})
    element = elimination.numeric.element_graph(graph, (7,), (B,))
    assert factorize(element, plan, backend="numba").pivot_ratio != side.pivot_ratio[7]
    assert max_relative_error(side.solve(), graph.dense_solve()) < 1e-9


def test_a_lane_whose_pivot_fails_is_reported_as_by_the_per_element_kernels():
    """An element whose variable is undetermined (a zero pivot) among elements that are fine: the batch
    goes to the numpy path, which names the variable and the element, as from the per-element kernels."""
    graph = _chain((B,))
    graph.factors[3].H[9] = 0.0  # variable 3 of element 9: its prior gone ...
    for f in graph.factors[6:]:
        f.H[9] = 0.0  # ... and every coupling
    plan = analyze(graph, elimination.min_fill(graph))
    with pytest.raises(SingularProblemError) as side:
        factorize(graph, plan, backend="numba")
    with pytest.raises(SingularProblemError) as alone:
        _per_element(graph, plan)
    assert str(side.value) == str(alone.value) and "(9,)" in str(side.value)


def test_a_batch_of_several_axes_runs_in_lanes_element_by_element():
    """A (3, 7) batch: twenty-one elements in two lane groups, each element's numbers the per-element kernels',
    and each the solution of its own graph."""
    graph = _chain((3, 7), seed=5)
    plan = analyze(graph, elimination.min_fill(graph))
    side, alone = factorize(graph, plan, backend="numba"), _per_element(graph, plan)
    assert side.C.shape[0] == lanes.groups_of(21) == 2 and side.pivot_ratio.shape == (3, 7)
    assert np.array_equal(side.pivot_ratio, alone.pivot_ratio)
    values = side.solve()
    assert _equal(values, alone.solve())
    element = elimination.numeric.element_graph(graph, (2, 1), (3, 7))
    assert max_relative_error({k: v[2, 1] for k, v in values.items()}, element.dense_solve()) < 1e-9


def test_small_batches_and_hard_rows_keep_the_per_element_kernels():
    graph = _chain((lanes.LANES - 1,))
    plan = analyze(graph, elimination.min_fill(graph))
    assert factorize(graph, plan, backend="numba").C.ndim == 2  # fewer elements than lanes
    bigger = _chain((lanes.LANES,))
    assert factorize(bigger, plan, backend="numba").C.ndim == 3
    bigger.add(LinearEquality([0, 1], [np.eye(3), -np.eye(3)], np.zeros(3)))
    hard = analyze(bigger, elimination.min_fill(bigger))
    assert not lanes.covers(hard.lowered()) and factorize(bigger, hard, backend="numba").C.ndim == 2
