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


# -- topology in linear time: the same answers as the definitions ---------------------------------

def _sorted_by_passes(links):
    """000's numbering by its definition: passes over the given order, placing each link whose parent is placed."""
    placed, ordered, pending = {GROUND}, [], list(links)
    while pending:
        left = []
        for link in pending:
            if link.parent in placed:
                ordered.append(link.name)
                placed.add(link.name)
            else:
                left.append(link)
        assert len(left) < len(pending)
        pending = left
    return ordered


def _supporting_links_by_definition(mech, name):
    """SL(j): the tree paths up to the common ancestors, the lowest one kept; the root as in 000."""
    c = mech.constraint(name)
    paths = [mech.ancestors(l) if l != GROUND else [] for l in c.links]
    common = set(paths[0]).intersection(*paths[1:]) if all(paths) else set()
    members = {l for path in paths for l in path if l not in common}
    if common:
        members.add(max(common, key=mech.index.get))
    sl = tuple(sorted(members, key=mech.index.get))
    through_ground = GROUND in c.links or not set.intersection(*(set(mech.ancestors(l)) for l in c.links))
    return sl, GROUND if through_ground or not sl else sl[0]


def _random_mechanism(rng, n=30):
    """A forest on the ground in shuffled order, with loops, contacts and a General constraint on three links."""
    names = [f"l{i}" for i in range(n)]
    parents = {name: GROUND if i == 0 or rng.random() < 0.15 else names[rng.integers(0, i)] for i, name in enumerate(names)}
    links = [Link(name, parent, Joint("revolute", "z"), at(0.1)) for name, parent in parents.items()]
    rng.shuffle(links)
    constraints = [Connect(*rng.choice(names, 2, replace=False)) for _ in range(5)]
    constraints += [Weld(rng.choice(names), GROUND), Weld(GROUND, rng.choice(names))]
    constraints.append(General(tuple(rng.choice(names, 3, replace=False)), (np.eye(1, 6),) * 3, np.zeros(1)))
    constraints.append(General((rng.choice(names),), (np.eye(1, 6),), np.zeros(1)))
    return links, constraints


def test_fast_topology_agrees_with_the_definitions():
    rng = np.random.default_rng(7)
    for _ in range(40):
        links, constraints = _random_mechanism(rng)
        mech = Mechanism(links, constraints)
        assert list(mech.link_names) == _sorted_by_passes(links)
        for link in mech.links:
            assert mech.children(link.name) == tuple(l.name for l in mech.links if l.parent == link.name)
        for c in mech.constraints:
            assert (mech.supporting_links(c.name), mech.loop_root(c.name)) == _supporting_links_by_definition(mech, c.name)
        for link in mech.links:
            assert mech.loops_supported(link.name) == tuple(
                c.name for c in mech.constraints if link.name in _supporting_links_by_definition(mech, c.name)[0])


def test_a_cycle_behind_valid_links_names_every_link_it_holds_back():
    z = Joint("revolute", "z")
    links = [Link("a", "b", z), Link("ok", GROUND, z), Link("b", "a", z), Link("c", "a", z), Link("d", "ok", z)]
    with pytest.raises(ValueError, match=r"links \['a', 'b', 'c'\] form a cycle"):
        Mechanism(links)


def test_large_built_ins_keep_their_structure():
    """Thousands of links (built in well under a second now): deep trees, no recursion, loops found."""
    chain = models.chain_of_loops(loops=1000)
    assert len(chain.links) == 6001 and len(chain.constraints) == 1000
    assert chain.loop_root("weld1000") == "l999a3" and len(chain.supporting_links("weld1000")) == 7
    assert chain.loops_supported("l999a3") == ("weld999", "weld1000")
    serial = models.serial_chain(5000)
    assert serial.loop_root("end_effector") == GROUND and len(serial.supporting_links("end_effector")) == 5000
    assert serial.ancestors("link5000")[-1] == "link1"
