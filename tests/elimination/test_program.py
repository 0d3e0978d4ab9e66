"""The program as an instruction set: each step's instruction decided once, at lowering, as plain data."""
import dataclasses
import pickle

import numpy as np
import pytest

import mechanics
from elimination import Ordering, analyze, factorize
from elimination.program import F, KEEP_MIRRORED, START_LEFT, Op
from factorgraph import FactorGraph, LeastSquares, LinearEquality, Variable
from mechanics import GROUND, Joint, Link, Mechanism, at
from tests.dense_reference import reference_solve, relative_error


def _ops(plan) -> np.ndarray:
    return plan.lowered().steps[:, F["op"]]


def test_aba_lowers_each_link_and_its_joint_to_one_pair_instruction():
    """ABA's step on a free torso, a spherical hip and a revolute knee: a tree pair per joint (the fixed-size one
    for the revolute joint of a 6-d link), each followed by the step it fuses; nothing else."""
    links = [Link("torso", GROUND, Joint("free"), at(0.0), 5.0, (0.0, 0.0, 0.1), 0.1 * np.eye(3)),
             Link("thigh", "torso", Joint("spherical"), at(z=-0.2), 1.0, (0.0, 0.0, -0.2), 0.01 * np.eye(3)),
             Link("shin", "thigh", Joint("revolute", "y"), at(z=-0.4), 0.5, (0.0, 0.0, -0.2), 0.005 * np.eye(3))]
    _, plan = mechanics.algorithm_plan(Mechanism(links), "aba")
    assert plan.lowered().instructions() == {"tree_pair": 2, "revolute_pair": 1, "fused": 3}
    ops = _ops(plan)
    assert np.array_equal(np.flatnonzero(ops == Op.FUSED), np.flatnonzero(ops != Op.FUSED) + 1)


def test_fig4_under_each_algorithm_lowers_to_the_instructions_its_steps_need():
    """fig4 (11 revolute joints, two loops): every algorithm's program is made of known instructions, a pair
    instruction is always followed by the step it fuses, and a wide pair's link half (a ``UNIT`` that leaves its
    front) is always followed by a step that starts from it."""
    mech = mechanics.models.fig4()
    for algorithm in ("lcaba", "proxbbo", "pv", "proxltl"):
        _, plan = mechanics.algorithm_plan(mech, algorithm)
        steps = plan.lowered().steps
        ops = steps[:, F["op"]]
        assert set(ops) <= {int(op) for op in Op if op < Op.USER}, algorithm
        paired = np.flatnonzero(np.isin(ops, (Op.TREE_PAIR, Op.REVOLUTE_PAIR, Op.WIDE_REVOLUTE)))
        assert np.array_equal(np.flatnonzero(ops == Op.FUSED), paired + 1), algorithm
        left = np.flatnonzero(steps[:, F["keep"]] == KEEP_MIRRORED)
        assert np.array_equal(np.flatnonzero(steps[:, F["start"]] == START_LEFT), left + 1), algorithm
        assert np.all(ops[left] == Op.UNIT), algorithm


def _graph(hard: bool) -> FactorGraph:
    rng = np.random.default_rng(3)
    g = FactorGraph()
    for k in "abc":
        g.add_variable(Variable(k, 2))
    for k in "abc":
        g.add(LeastSquares([k], [np.eye(2)], rng.normal(size=2)))
    g.add(LeastSquares(["a", "b"], [rng.normal(size=(2, 2)), rng.normal(size=(2, 2))], rng.normal(size=2)))
    if hard:
        g.add(LinearEquality(["b", "c"], [rng.normal(size=(1, 2)), rng.normal(size=(1, 2))], rng.normal(size=1)))
    return g


def test_a_least_squares_graph_is_pivots_and_a_hard_row_makes_a_front():
    """Least squares alone: every step a ``PIVOT`` (what the lane kernels run); a hard row through two variables
    makes the step that substitutes it a ``FRONT``."""
    order = Ordering.from_keys(["a", "b", "c"])
    assert set(_ops(analyze(_graph(False), order))) == {Op.PIVOT}
    assert Op.FRONT in set(_ops(analyze(_graph(True), order)))


def test_the_program_is_plain_data_that_pickles():
    """A program round-trips through pickle with its step table and maps unchanged."""
    _, plan = mechanics.algorithm_plan(mechanics.models.four_bar(), "lcaba")
    program = plan.lowered()
    back = pickle.loads(pickle.dumps(program))
    assert np.array_equal(back.steps, program.steps) and back.summary() == program.summary()
    assert all(np.array_equal(a, b) for name in program.maps for a, b in zip(back.maps[name], program.maps[name]))


def test_an_instruction_the_compiled_executor_has_no_kernel_for_is_refused_by_step():
    """A step whose instruction is one of the free values (:attr:`Op.USER` on) is not run as something else: the
    compiled executor names the step and the instruction; the numpy path, which runs the plan, still solves."""
    g = _graph(True)
    plan = analyze(g, Ordering.from_keys(["a", "b", "c"]))
    program = plan.lowered()
    steps = program.steps.copy()
    steps[1, F["op"]] = Op.USER + 1
    plan.programs["program"] = dataclasses.replace(program, steps=steps, derived={})
    with pytest.raises(ValueError, match=r"step 1 of the program is instruction 65"):
        factorize(g, plan, backend="numba")
    reference = reference_solve(g)
    assert reference.status == "unique"
    assert relative_error(factorize(g, plan, backend="numpy").solve(), reference.values) < 1e-9


def test_every_instruction_means_its_front():
    """A ``PIVOT`` is a ``FRONT`` by a shorter road: a batch of least-squares graphs whose program is all
    ``PIVOT`` runs in lanes; the same program with every instruction relabelled ``FRONT`` runs element by
    element through the generic kernel -- the same values and pivot ratios, bit for bit, and the dense solve's."""
    rng = np.random.default_rng(5)
    g = FactorGraph()
    for k in "abcd":
        g.add_variable(Variable(k, 3))
    for k in "abcd":
        g.add(LeastSquares([k], [np.eye(3) + 0.1 * rng.normal(size=(20, 3, 3))], rng.normal(size=(20, 3))))
    for a, b in ("ab", "bc", "cd", "da"):
        g.add(LeastSquares([a, b], [rng.normal(size=(20, 3, 3)), rng.normal(size=(20, 3, 3))], rng.normal(size=(20, 3))))
    plan = analyze(g, Ordering.from_keys(list("abcd")))
    program = plan.lowered()
    assert set(program.steps[:, F["op"]]) == {Op.PIVOT}
    lanes = factorize(g, plan, backend="numba")
    assert lanes.C.ndim == 3  # (groups, entries, lanes): the lane kernels ran
    steps = program.steps.copy()
    steps[:, F["op"]] = Op.FRONT
    relabelled = analyze(g, Ordering.from_keys(list("abcd")))
    relabelled.programs["program"] = dataclasses.replace(program, steps=steps, derived={})
    fronts = factorize(g, relabelled, backend="numba")
    assert fronts.C.ndim == 2  # one element at a time
    x, y = lanes.solve(refine=0), fronts.solve(refine=0)
    assert all(np.array_equal(x[k], y[k]) for k in x)
    assert np.array_equal(lanes.pivot_ratio, fronts.pivot_ratio)
    assert relative_error(x, reference_solve(g).values) < 1e-10
