"""Constraint policies as objects, typed keys and roles, plans from structure alone."""
import dataclasses
import warnings

import numpy as np
import pytest

import elimination
import mechanics
from factorgraph import LinearEquality, Quadratic
from mechanics import GROUND, Connect, JointAcceleration, LinkAcceleration, Mechanism, Multiplier, Prox, models
from mechanics.algorithms import early_multipliers, tree_min_degree
from mechanics.gplc import GPLCLayout
from mechanics.policies import POLICIES, resolve_policies
from tests.mechanics.pinocchio_oracle import dense_reference, pinocchio_model_of
from tests.mechanics.random_mechanisms import random_state


def relative(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


def _fig4_state(seed=0):
    mech = models.fig4()
    return mech, random_state(mech, np.random.default_rng(seed))


def test_two_constraints_under_two_policies_equal_the_dense_solve():
    """prox on one cut joint, alm on the other (000 Fig. 4), against Pinocchio's dense KKT."""
    mech, (q, v, tau) = _fig4_state()
    model, cms = pinocchio_model_of(mech)
    ddq, forces = dense_reference(model, cms, q, v, tau)
    mixed = {"12": "prox", "13": "alm"}
    for ordering in (early_multipliers, tree_min_degree):
        result = mechanics.forward_dynamics(mech, q, v, tau, algorithm=(mixed, ordering), mu=1e4, tol=1e-12, max_iter=200)
        assert result.converged and result.algorithm.startswith("(alm+prox")
        assert relative(result.qdd, ddq) < 1e-9 and relative(result.forces, forces) < 1e-7
    graph = mechanics.gplc_graph(mech, q, v, tau, policy=mixed)
    assert [k.name for k in graph.keys if isinstance(k, Multiplier)] == ["12"]  # alm keeps no multiplier


class StiffProx(Prox):
    """A policy written outside the package: prox with its own stiffness ``scale * mu``.

    Its numbers are all it changes (what it adds, what moves and how lambda is
    updated follow from them), so it runs compiled like the built-in ones.
    """

    name = "stiff_prox"

    def __init__(self, scale: float):
        self.numbers = dataclasses.replace(Prox.numbers, stiffness=scale)


class HalfStepALM(mechanics.ALM):
    """An ALM whose multiplier takes half of eq. 33's step: arithmetic no PolicyNumbers says (a Python update)."""

    name = "half_alm"

    def update(self, lam, x, residual, mu, constraint):
        return lam + 0.5 * mu * residual


def test_a_policy_written_in_a_test_is_accepted_per_constraint():
    mech, (q, v, tau) = _fig4_state(1)
    model, cms = pinocchio_model_of(mech)
    ddq, _ = dense_reference(model, cms, q, v, tau)
    policies = {"12": StiffProx(100.0), "default": "prox"}
    result = mechanics.forward_dynamics(mech, q, v, tau, algorithm=(policies, early_multipliers), tol=1e-12, max_iter=100)
    assert result.converged and relative(result.qdd, ddq) < 1e-9
    graph = mechanics.gplc_graph(mech, q, v, tau, policy=policies, mu=1e4)
    priors = {graph.role(i).constraint: graph.factor(i).H for i in range(len(graph)) if graph.role(i).kind == "multiplier prior"}
    assert np.allclose(priors["12"], -np.eye(3) / 1e6) and np.allclose(priors["13"], -np.eye(3) / 1e4)


@pytest.mark.parametrize("algorithm", [early_multipliers, tree_min_degree])
def test_a_policy_of_numbers_alone_runs_compiled_as_the_numpy_path(algorithm):
    """StiffProx runs in the compiled kernels (one state, a batch) and gives the numpy path's answers (to
    round-off: the two decide refinement per state and per batch), a batch element its single call's bits;
    a stiffness of 1 is prox itself, bit for bit; two stiffnesses are two policies (their own tables)."""
    mech, _ = _fig4_state()
    q, v, tau = random_state(mech, np.random.default_rng(4), (20,))
    model, cms = pinocchio_model_of(mech)
    for scale in (0.01, 100.0):
        spec = ({"12": StiffProx(scale), "default": "prox"}, algorithm)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no NumpyPathWarning: it runs compiled
            prepared = mechanics.prepare(mech, spec, mu=1e4, tol=1e-12, max_iter=400, backend="numba")
        assert prepared.compiled is not None and prepared.policies["12"].numbers.stiffness == scale
        compiled = prepared(q, v, tau)
        numpy_path = mechanics.forward_dynamics(mech, q, v, tau, algorithm=spec, mu=1e4, tol=1e-12, max_iter=400,
                                                backend="numpy")
        assert compiled.converged.all() and numpy_path.converged.all() and relative(compiled.qdd, numpy_path.qdd) < 1e-9
        one = prepared(q[3], v[3], tau[3])
        assert np.array_equal(one.qdd, compiled.qdd[3]) and one.iterations == compiled.iterations[3]
        ddq, _ = dense_reference(model, cms, q[3], v[3], tau[3])
        assert relative(one.qdd, ddq) < 1e-8
        # one iteration (warned unconverged): its iterate depends on the stiffness, the same on both paths
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mechanics.ConvergenceWarning)
            first = {backend: mechanics.forward_dynamics(mech, q, v, tau, algorithm=spec, mu=100.0, max_iter=1,
                                                         backend=backend) for backend in ("numba", "numpy")}
            prox = mechanics.forward_dynamics(mech, q, v, tau, algorithm=("prox", algorithm), mu=100.0, max_iter=1)
        assert relative(first["numba"].forces, first["numpy"].forces) < 1e-9
        assert relative(first["numba"].forces, prox.forces) > 1e-3
    unit = mechanics.forward_dynamics(mech, q, v, tau, algorithm=({"12": StiffProx(1.0), "default": "prox"}, algorithm))
    prox = mechanics.forward_dynamics(mech, q, v, tau, algorithm=("prox", algorithm))
    assert np.array_equal(unit.qdd, prox.qdd) and np.array_equal(unit.iterations, prox.iterations)
    assert StiffProx(2.0) != StiffProx(3.0) and StiffProx(2.0) == StiffProx(2.0) and StiffProx(1.0) != Prox()


def test_a_policy_with_arithmetic_of_its_own_says_it_runs_on_the_numpy_path():
    mech, (q, v, tau) = _fig4_state(2)
    spec = ({"12": HalfStepALM(), "default": "alm"}, tree_min_degree)
    with pytest.warns(mechanics.NumpyPathWarning, match="'12'.*half_alm.*update is Python of its own"):
        prepared = mechanics.prepare(mech, spec, mu=1e4, tol=1e-12, max_iter=400)
    assert prepared.compiled is None
    model, cms = pinocchio_model_of(mech)
    ddq, _ = dense_reference(model, cms, q, v, tau)
    assert relative(prepared(q, v, tau).qdd, ddq) < 1e-8  # right, at numpy speed
    with pytest.raises(ValueError, match="backend='numba'"):
        mechanics.prepare(mech, spec, backend="numba")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mechanics.prepare(mech, spec, backend="numpy")  # asked for: nothing to say


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("model", ["fig4", "four_bar", "digit_leg", "chain_of_loops"])
def test_the_layout_is_the_structure_of_every_filled_graph(model, policy):
    mech = mechanics.models.MODELS[model]()
    q, v, tau = random_state(mech, np.random.default_rng(2))
    layout = GPLCLayout(mech, resolve_policies(policy, mech))
    graph = mechanics.gplc_graph(mech, q, v, tau, policy=policy)
    assert graph.structure() == layout.structure()  # same variables, scopes and rows, in the same order
    assert [f.role for f in graph.structure().factors] == [f.role for f in layout.structure().factors]
    for var in graph.variables:  # every key says what it is
        assert isinstance(var.key, (LinkAcceleration, JointAcceleration, Multiplier))
        assert (var.role == "max") == isinstance(var.key, Multiplier)
    kinds = {graph.role(i).kind for i in range(len(graph))}
    assert {"prior", "tree joint"} <= kinds and None not in kinds
    for factor in graph.factors:  # the trusted constructors' contract: what the checking ones would accept as is
        if isinstance(factor, LinearEquality):
            checked = LinearEquality(factor.keys, factor.A, factor.b, units=factor.units or None)
            assert all(np.array_equal(a, c) for a, c in zip(factor.A, checked.A)) and factor.units == checked.units
        else:
            assert np.array_equal(factor.H, np.swapaxes(factor.H, -1, -2)) and factor.H.dtype == np.float64
            assert np.array_equal(Quadratic(factor.keys, factor.H, factor.g).H, factor.H)


def test_keys_are_the_tuples_they_replace_and_survive_a_round_trip():
    import pickle

    key = JointAcceleration("7")
    assert key == ("qdd", "7") and hash(key) == hash(("qdd", "7")) and key != LinkAcceleration("7")
    assert pickle.loads(pickle.dumps(key)) == key and type(pickle.loads(pickle.dumps(key))) is JointAcceleration
    assert repr(Multiplier("c")) == "Multiplier('c')" and Multiplier("c").label == "λ c"


def test_plans_come_from_structure_alone_and_live_with_the_mechanism(monkeypatch):
    mech = models.fig4()

    def no_kinematics(*args, **kwargs):
        raise AssertionError("planning must not compute kinematics")

    monkeypatch.setattr(mechanics.dynamics, "kinematics", no_kinematics)
    monkeypatch.setattr(mechanics.gplc, "kinematics", no_kinematics)
    structure, plan = mechanics.algorithm_plan(mech, "lcaba")
    assert mechanics.algorithm_plan(mech, "lcaba")[1] is plan  # cached, on this mechanism
    assert len(mech.plans) == 1 and len(models.fig4().plans) == 0
    for k in range(40):  # an ordering written inline is a new key each time: the cache stays bounded
        mechanics.algorithm_plan(mech, ("prox", lambda m, g: early_multipliers(m, g)))
    assert len(mech.plans) == mech.plans.size
    assert [f.role.kind for f in structure.factors][:3] == ["prior", "torque", "tree joint"]


def test_user_constraint_objects_are_not_changed():
    mech = models.four_bar()
    loop = Connect(mech.links[-1].name, GROUND)
    built = Mechanism(mech.links, [loop])
    assert loop.name is None and built.constraints[0].name == "c0" and built.constraints[0] is not loop


def test_per_constraint_policies_name_what_is_missing_or_unknown():
    mech = models.fig4()
    with pytest.raises(ValueError, match=r"no policy for constraint\(s\) \['13'\]"):
        resolve_policies({"12": "prox"}, mech)
    with pytest.raises(ValueError, match=r"\['99'\]"):
        resolve_policies({"99": "prox", "default": "alm"}, mech)
    with pytest.raises(ValueError, match="unknown constraint policy 'stiff'"):
        resolve_policies({"12": "stiff", "default": "alm"}, mech)


def test_compare_takes_a_users_pair_and_a_policy_ordering_text():
    from viz.compare import compare

    mech = models.four_bar()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows = compare(mech, ["prox/tree_min_degree", (Prox(), early_multipliers), "proxbbo"], repeat=1)
    assert [r.policy for r in rows] == ["prox", "prox", "prox"]
    assert all(r.deviation < 1e-8 for r in rows)
    assert rows[1].flops == rows[2].flops  # the pair is proxBBO: the same plan
    with pytest.raises(ValueError, match="unknown ordering policy 'nope'"):
        mechanics.resolve_algorithm("prox/nope")


def test_engine_errors_carry_the_policies_advice():
    mech, (q, v, tau) = _fig4_state()
    twice = Mechanism(mech.links, list(mech.constraints) + [Connect("6", "8", mech.constraints[0].placement1,
                                                                    mech.constraints[0].placement2, name="12b")])
    with pytest.raises(elimination.SingularProblemError, match="hard policy needs independent constraints"):
        mechanics.forward_dynamics(twice, q, v, tau, algorithm="pv")
