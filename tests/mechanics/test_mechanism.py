"""Mechanism topology, validation and bad input."""
import numpy as np
import pytest

import mechanics
from mechanics import GROUND, Connect, General, Joint, Link, Mechanism, Weld, at, models


def test_fig4_topology_matches_000():
    mech = models.fig4()
    assert mech.parent("4") == "3" and set(mech.children("3")) == {"4", "7", "9"}
    assert mech.supporting_links("12") == ("3", "4", "5", "6", "7", "8")
    assert mech.supporting_links("13") == ("3", "7", "8", "9", "10", "11")
    assert mech.loop_root("12") == mech.loop_root("13") == "3"
    assert mech.loops_supported("8") == ("12", "13") and mech.loops_supported("2") == ()
    assert mech.coupled("12", "13")  # they share the joints of 7 and 8


def test_contacts_are_rooted_at_the_ground_and_chain_loops_are_not_coupled():
    serial = models.serial_chain(6)
    assert serial.loop_root("end_effector") == GROUND
    chain = models.chain_of_loops(3)
    assert not chain.coupled("weld1", "weld2")
    worst = models.worst_case(4)
    assert all(worst.coupled("loop1", other) for other in ("loop2", "loop3", "loop4"))


def test_multi_link_constraint_loop():
    """000 Remark 1: one constraint on three links."""
    mech = models.fig4()
    rows = np.zeros((1, 6))
    rows[0, 3] = 1.0
    three = mech.with_constraints([General(("6", "8", "11"), (rows, -rows, rows), np.zeros(1), name="tri")])
    assert mech.loop_root("12") == "3" and three.loop_root("tri") == "3"
    q, v, tau = three.neutral_configuration(), np.zeros(three.nv), np.ones(three.nv)
    result = mechanics.forward_dynamics(three, q, v, tau, algorithm="proxbbo", tol=1e-12)
    x = mechanics.gplc_graph(three, q, v, tau, policy="hard").dense_solve()
    reference = np.concatenate([x[("qdd", l.name)] for l in three.links])
    assert np.max(np.abs(result.qdd - reference)) < 1e-8 * (1 + np.abs(reference).max())
    assert result.residual < 1e-9


def _two_links(**overrides):
    links = [Link("a", GROUND, Joint("revolute", "z")), Link("b", "a", Joint("revolute", "y"), at(0.3))]
    return links


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: Mechanism([Link("a", "b", Joint("revolute", "z")), Link("b", "a", Joint("revolute", "z"))]), "form a cycle.*cut joint"),
        (lambda: Mechanism([Link("a", "nowhere", Joint("revolute", "z"))]), "parent 'nowhere' is not a link"),
        (lambda: Mechanism(_two_links(), [Connect("a", "zz")]), "'zz', which is not a link"),
        (lambda: Mechanism(_two_links(), [Weld("a", "a")]), "joins link 'a' to itself"),
        (lambda: Mechanism(_two_links(), [Connect(GROUND, GROUND)]), "only the ground"),
        (lambda: Mechanism(_two_links() + [Link("a", GROUND, Joint("prismatic", "x"))]), "unique"),
        (lambda: General(("a",), (np.zeros((2, 6)),), np.zeros(3)), r"\(3, 6\)"),
        (lambda: Connect("a", "b", axes=(0, 5)), "axes"),
        (lambda: Joint("revolute"), "needs an axis"),
        (lambda: Joint("revolute", (0, 0, 0)), "nonzero"),
        (lambda: Joint("helicoidal", "z"), "unknown joint kind"),
        (lambda: Link("a", GROUND, Joint("free"), mass=-1.0), "mass"),
        (lambda: Link("a", GROUND, Joint("free"), inertia=-np.eye(3)), "positive semidefinite"),
        (lambda: Link(GROUND, GROUND, Joint("free")), "other than 'ground'"),
    ],
)
def test_invalid_mechanisms_are_refused_with_the_name(build, message):
    with pytest.raises((ValueError, TypeError), match=message):
        build()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(q=np.zeros(3)), r"q has shape \(3,\).*\(\.\.\., 2\)"),
        (dict(v=np.zeros(5)), r"v has shape"),
        (dict(tau=[np.nan, 0.0]), "tau contains NaN"),
        (dict(q=[0.0, np.inf]), "q contains NaN or inf"),
        (dict(mu=0.0), "mu must be a finite number > 0"),
        (dict(mu=-1e6), "mu must be"),
        (dict(algorithm="lcabba"), "unknown algorithm 'lcabba'.*lcaba"),
        (dict(algorithm=("magic", lambda m, g: None)), "unknown constraint policy"),
        (dict(tol=0.0), "tol"),
        (dict(max_iter=0), "max_iter"),
    ],
)
def test_bad_dynamics_input_gets_a_clear_error(kwargs, message):
    mech = Mechanism(_two_links(), [Connect("b", GROUND, at(0.3))])
    args = dict(q=np.zeros(2), v=np.zeros(2), tau=np.zeros(2))
    args.update(kwargs)
    q, v, tau = args.pop("q"), args.pop("v"), args.pop("tau")
    with pytest.raises((ValueError, TypeError), match=message):
        mechanics.forward_dynamics(mech, q, v, tau, **args)


def test_algorithms_out_of_scope_say_which_to_use():
    mech = models.fig4()
    q, zeros = mech.neutral_configuration(), np.zeros(mech.nv)
    with pytest.raises(ValueError, match="lcaba"):
        mechanics.forward_dynamics(mech, q, zeros, zeros, algorithm="constrained_aba")
    with pytest.raises(ValueError, match="without_constraints"):
        mechanics.forward_dynamics(mech, q, zeros, zeros, algorithm="aba")


def test_configuration_helpers_respect_the_manifold():
    mech = mechanics.Mechanism([Link("base", GROUND, Joint("free")), Link("ball", "base", Joint("spherical"))])
    rng = np.random.default_rng(0)
    q = mech.random_configuration(rng, (4,))
    assert q.shape == (4, mech.nq)
    q2 = mech.integrate(q, rng.normal(size=(4, mech.nv)))
    assert np.allclose(np.linalg.norm(q2[:, 3:7], axis=1), 1) and np.allclose(np.linalg.norm(q2[:, 7:11], axis=1), 1)


@pytest.mark.parametrize("model, size", [("cycle", dict(n=1)), ("chain_of_loops", dict(loops=0)), ("ladder", dict(n=2.5))])
def test_bad_model_sizes_are_refused(model, size):
    with pytest.raises(ValueError, match=list(size)[0]):
        models.MODELS[model](**size)
