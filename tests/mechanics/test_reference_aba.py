"""The reference ABA (mechanics/reference_aba.py) against Pinocchio and against the elimination's ABA."""
import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, strategies as st

import mechanics
from mechanics import Joint, Link, Mechanism, at
from mechanics.reference_aba import aba
from tests.mechanics.pinocchio_oracle import pinocchio_model_of
from tests.mechanics.random_mechanisms import KINDS, mechanisms, random_state


def relative(a, b) -> float:
    return float(np.max(np.abs(a - b), initial=0.0) / max(1.0, np.max(np.abs(b), initial=0.0)))


@given(mechanisms(max_links=7, max_constraints=0), st.integers(0, 2**31 - 1))
def test_equals_pinocchio_aba_on_random_trees(mech, seed):
    tree = mech.without_constraints()
    model, _ = pinocchio_model_of(tree)
    q, v, tau = random_state(tree, np.random.default_rng(seed))
    assert relative(aba(tree, q, v, tau), pin.aba(model, model.createData(), q, v, tau)) < 1e-9


@pytest.mark.parametrize("kind", sorted(set(KINDS)))
def test_equals_pinocchio_aba_for_every_joint_kind(kind):
    """A three-link chain of one joint kind with an unaligned placement, so no kind hides behind the others."""
    axis = {"revolute": (0.3, -0.5, 0.8), "prismatic": (0.6, 0.0, -0.8), "revolute_unbounded": "y"}.get(kind)
    rng = np.random.default_rng(len(kind))
    links = [Link(f"l{k}", "ground" if k == 0 else f"l{k - 1}", Joint(kind, axis), at(0.2, -0.1, 0.3),
                  1.0 + k, rng.uniform(-0.1, 0.1, 3), np.diag([0.02, 0.03, 0.04])) for k in range(3)]
    tree = Mechanism(links, name=f"chain of {kind}")
    model, _ = pinocchio_model_of(tree)
    for _ in range(3):
        q, v, tau = random_state(tree, rng)
        assert relative(aba(tree, q, v, tau), pin.aba(model, model.createData(), q, v, tau)) < 1e-9


@pytest.mark.parametrize("name", sorted(mechanics.models.MODELS))
def test_the_recursion_and_the_elimination_are_the_same_computation(name):
    tree = mechanics.models.MODELS[name]().without_constraints()
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, v, tau = random_state(tree, rng)
        eliminated = mechanics.forward_dynamics(tree, q, v, tau, algorithm="aba").qdd
        assert relative(aba(tree, q, v, tau), eliminated) < 1e-10


def test_a_fixed_joint_carries_its_link_along():
    welded = Mechanism([Link("a", "ground", Joint("revolute", "z")), Link("b", "a", Joint("fixed"), at(0.5)),
                        Link("c", "b", Joint("revolute", "y"), at(0.2))], name="welded")
    q, v, tau = random_state(welded, np.random.default_rng(1))
    assert relative(aba(welded, q, v, tau), mechanics.forward_dynamics(welded, q, v, tau, algorithm="aba").qdd) < 1e-10


def test_constraints_are_refused_naming_the_mechanism():
    mech = mechanics.models.fig4()
    q, v, tau = random_state(mech, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"(?s)'fig4'.*constraints.*forward_dynamics"):
        aba(mech, q, v, tau)


def test_wrong_shapes_are_refused():
    tree = mechanics.models.fig4().without_constraints()
    with pytest.raises(ValueError, match="expected q"):
        aba(tree, np.zeros(tree.nq + 1), np.zeros(tree.nv), np.zeros(tree.nv))
