"""The papers' algorithms as (constraint policy, ordering policy) pairs.

An ordering policy is a small function ``(mechanism, graph) -> Ordering`` over
the GPLC graph's typed keys (:mod:`mechanics.keys`); ``graph`` is the
structure of the GPLC layout, so it never touches numbers.  Most are the engine's heuristics with a predicate
("leaf links of the spanning tree only", "multipliers last") -- the greedy
game is written once, in :mod:`elimination.ordering`.

============== ======== ===========================================================
name           policy   ordering
============== ======== ===========================================================
aba            --       spanning tree, leaves to root: a_i (substitution) then qdd_i
pv             hard     as ABA, all multipliers last (dense dual Hessian at the root)
proxpv         prox     as PV
proxbbo        prox     as ABA, multipliers of loop j right before its root link r_j
lcaba          alm      spanning-tree-constrained minimum degree over leaf links
constrained_aba alm     as LCABA, contacts (loops through the ground) only
pv_soft        soft     as ABA
proxltl        prox     joint space: all a_i root to leaves, qdd leaves to root, multipliers last
min_degree     prox     a_i root to leaves, then minimum degree over qdd and multipliers
min_fill       prox     a_i root to leaves, then minimum fill over qdd and multipliers
caba           embed    as proxBBO, each embedded cluster one block: its links, then its y
============== ======== ===========================================================

Constraint embedding (003's C-ABA, ``caba``) is the pair ``"embed/clusters"``: the ``embed`` policy writes
each cluster -- coupled joints, a local loop's joints -- through independent coordinates ``y``
(:class:`~mechanics.policies.Embed`), and :func:`cluster_order` eliminates links leaves to root, each
cluster as one block (its links, then its ``y``) in its top link's place, the other loops' multipliers as
proxBBO's (004 Sec. VII's mixed algorithm).  Couplings' maps are constant; a loop's depends on the state and
is made per state (both run compiled; a loop cluster's programs state by state, not in lanes).
"""
from __future__ import annotations

import heapq
from typing import Callable, NamedTuple

import elimination
from elimination import Ordering
from elimination.ordering import Precedence

from .gplc import GPLCLayout
from .keys import ClusterCoordinates, JointAcceleration, LinkAcceleration, Multiplier, TreeJoint
from .mechanism import GROUND, Mechanism
from .policies import policy, policy_label, resolve_policies


def _link_keys(link) -> tuple:
    keys = (LinkAcceleration(link.name),)
    return keys + ((JointAcceleration(link.name),) if link.joint.nv else ())


def _multipliers(graph) -> tuple:
    return tuple(v.key for v in graph.variables if isinstance(v.key, Multiplier))


def tree_order(mechanism: Mechanism, graph) -> Ordering:
    """ABA / PV: links leaves to root (reverse topological), ``a_i`` then ``qdd_i``; multipliers last, as one block."""
    blocks = [(key,) for link in reversed(mechanism.links) for key in _link_keys(link)]
    multipliers = _multipliers(graph)
    return Ordering(blocks + ([multipliers] if multipliers else []))


def _leaf_links_first(mechanism: Mechanism, graph) -> Precedence:
    """Eligibility: a link's variables once all its children are eliminated; multipliers after every link.

    As data, so the game keeps it with counters instead of rescanning the graph:
    gate ``("children", i)`` holds the children's ``a_c`` and link ``i``'s
    variables wait on it; gate ``"links"`` holds every link and joint variable
    and every multiplier waits on it.  On fig4, ``a_3`` and ``qdd_3`` wait for
    ``a_4``, ``a_7`` and ``a_9``; ``a_6`` waits for nothing.
    """
    keys = [v.key for v in graph.variables]
    gates = {("children", link.name): [LinkAcceleration(c) for c in mechanism.children(link.name)] for link in mechanism.links}
    gates["links"] = [k for k in keys if not isinstance(k, Multiplier)]
    waits = {k: ["links"] if isinstance(k, Multiplier) else [("children", k.name)] for k in keys}
    return Precedence(gates, waits)


def tree_min_degree(mechanism: Mechanism, graph) -> Ordering:
    """LCABA (000 Sec. IV): among the current leaf links, the one with the fewest
    neighbours first (ties by link order); per link ``a_i`` then ``qdd_i``."""
    eligible = _leaf_links_first(mechanism, graph)
    return elimination.min_degree(graph, eligible=eligible, blocks=_link_blocks(mechanism), split_blocks=True)


def _rooted_multipliers(mechanism: Mechanism, graph) -> dict:
    """Loop root (a link, or the ground) -> the multipliers of the loops rooted there."""
    present, rooted = set(_multipliers(graph)), {}
    for c in mechanism.constraints:
        if Multiplier(c.name) in present:
            rooted.setdefault(mechanism.loop_root(c.name), []).append(Multiplier(c.name))
    return rooted


def early_multipliers(mechanism: Mechanism, graph) -> Ordering:
    """proxBBO (000 Sec. V): links leaves to root; the multipliers of the loops
    rooted at a link, as one block, right before that link; loops through the
    ground last."""
    rooted, blocks = _rooted_multipliers(mechanism, graph), []
    for link in reversed(mechanism.links):
        if link.name in rooted:
            blocks.append(tuple(rooted[link.name]))
        blocks += [(key,) for key in _link_keys(link)]
    if GROUND in rooted:
        blocks.append(tuple(rooted[GROUND]))
    return Ordering(blocks)


def cluster_order(mechanism: Mechanism, graph) -> Ordering:
    """C-ABA (003) in proxBBO's order (000 Sec. V): links leaves to root, ``a_i`` then ``qdd_i``; each embedded
    cluster as one block (:func:`embedded_blocks`) -- its links substituted leaves to root, then one pivot on its
    ``y`` ends it, leaving its parent a block (003's recursion over the tree of clusters: what hangs below a
    cluster -- Digit's toe and its rod below its knee's -- is eliminated before it); the other loops'
    multipliers right before their root link (before the block where that is a cluster's), as proxBBO's."""
    present = {v.key for v in graph.variables}
    rooted, blocks = _rooted_multipliers(mechanism, graph), []
    for links, ys in _leaves_first(mechanism, embedded_blocks(mechanism, graph)):
        blocks += [tuple(rooted[name]) for name in links if name in rooted]
        blocks += [(k,) for name in reversed(links) for k in _link_keys(mechanism.link(name)) if k in present]
        blocks += [(y,) for y in ys]
    if GROUND in rooted:
        blocks.append(tuple(rooted[GROUND]))
    return Ordering(blocks)


def _leaves_first(mechanism: Mechanism, clusters: tuple) -> list:
    """``(links, ys)`` units to eliminate in turn: each cluster of ``clusters`` (``(links, y)``) one unit, every
    other link its own; a unit once the units below it are done, the deepest link's first (the reverse
    topological order where there are no clusters).  Where no order keeps every cluster whole -- a member
    hangs, through links outside its cluster, from another member (a coupling of a joint and its grandchild),
    or two clusters hang from each other -- each link is its own unit, a cluster's ``y`` right after its top
    link."""
    units = [(links, (y,)) for links, y in clusters]
    unit_of = {link: u for u, (links, _) in enumerate(units) for link in links}
    for link in mechanism.links:
        if link.name not in unit_of:
            unit_of[link.name] = len(units)
            units.append(((link.name,), ()))
    above = [set() for _ in units]
    for link in mechanism.links:
        if link.parent != GROUND and unit_of[link.parent] != unit_of[link.name]:
            above[unit_of[link.name]].add(unit_of[link.parent])
    below = [0] * len(units)
    for parents in above:
        for p in parents:
            below[p] += 1
    deepest = lambda u: -max(mechanism.index[link] for link in units[u][0])  # noqa: E731
    ready = [(deepest(u), u) for u in range(len(units)) if not below[u]]
    heapq.heapify(ready)
    order = []
    while ready:
        u = heapq.heappop(ready)[1]
        order.append(units[u])
        for p in above[u]:
            below[p] -= 1
            if not below[p]:
                heapq.heappush(ready, (deepest(p), p))
    if len(order) == len(units):
        return order
    ys = {links[0]: (y,) for links, y in clusters}
    return [((link.name,), ys.get(link.name, ())) for link in reversed(mechanism.links)]


def embedded_blocks(mechanism: Mechanism, graph) -> tuple:
    """``(links, y)`` of each embedded cluster of ``graph`` (a GPLC structure) with coordinates ``y``: the links
    whose tree-joint factors hold ``y``, in the mechanism's order -- what :func:`cluster_order` eliminates as one
    block each.  (A cluster with no free motion has no ``y``: its links are substituted one by one.)

    >>> from mechanics import models, algorithm_plan
    >>> leg = models.digit_leg()
    >>> embedded_blocks(leg, algorithm_plan(leg, "caba")[0])
    ((('thigh', 'shin', 'tarsus', 'achilles_rod', 'knee_rod'), ClusterCoordinates('thigh')),)
    """
    held = {f.role.link: k for f in graph.factors if isinstance(f.role, TreeJoint)
            for k in f.keys if isinstance(k, ClusterCoordinates)}
    blocks = {}
    for link in mechanism.links:
        if link.name in held:
            blocks.setdefault(held[link.name], []).append(link.name)
    return tuple((tuple(links), y) for y, links in blocks.items())


def joint_space(mechanism: Mechanism, graph) -> Ordering:
    """proxLTL (002): every ``a_i`` root to leaves (substitution assembles the
    branch-sparse joint-space inertia), then ``qdd`` leaves to root (the UDU'
    order), multipliers last."""
    blocks = [(LinkAcceleration(link.name),) for link in mechanism.links]
    blocks += [(JointAcceleration(link.name),) for link in reversed(mechanism.links) if link.joint.nv]
    multipliers = _multipliers(graph)
    return Ordering(blocks + ([multipliers] if multipliers else []))


def _link_blocks(mechanism: Mechanism) -> list:
    return [_link_keys(link) for link in mechanism.links]


def _accelerations_root_first(mechanism: Mechanism, graph) -> Precedence:
    """Eligibility: ``a_i`` once its parent's is eliminated; everything else after every ``a_i``.

    Substituting link accelerations root to leaves is exact for any geometry
    (each ``a_c`` keeps the identity block of its joint).  Relaxing the tree
    order further -- ``qdd_i`` before ``a_i``, or a link before its children --
    builds the "fictitious joints" of 000 Sec. VII-B, whose rank depends on the
    geometry (planar legs, coincident spherical joints) and needs pivoting.

    As data: gate ``("link", p)`` holds ``a_p``, which ``a_i`` waits on for its
    parent ``p`` (links on the ground wait on nothing); gate ``"accelerations"``
    holds every ``a_i`` and every other variable waits on it.
    """
    gates = {("link", link.name): [LinkAcceleration(link.name)] for link in mechanism.links}
    gates["accelerations"] = [LinkAcceleration(link.name) for link in mechanism.links]
    waits = {}
    for key in (v.key for v in graph.variables):
        if not isinstance(key, LinkAcceleration):
            waits[key] = ["accelerations"]
        elif mechanism.parent(key.name) != GROUND:
            waits[key] = [("link", mechanism.parent(key.name))]
    return Precedence(gates, waits)


def any_min_degree(mechanism: Mechanism, graph) -> Ordering:
    """Joint-space minimum degree (000 Sec. VII-B): link accelerations substituted
    root to leaves, then minimum degree over joint accelerations and multipliers."""
    return elimination.min_degree(graph, eligible=_accelerations_root_first(mechanism, graph))


def any_min_fill(mechanism: Mechanism, graph) -> Ordering:
    """Joint-space minimum fill: as :func:`any_min_degree` with the minimum-fill score."""
    return elimination.min_fill(graph, eligible=_accelerations_root_first(mechanism, graph))


SCOPES = {
    "tree": "mechanisms without constraints",
    "contacts": "mechanisms whose constraints all involve the ground",
    "any": "any mechanism",
}


class Algorithm(NamedTuple):
    """A named algorithm: constraint policies and an ordering policy (plus what it applies to).

    ``policies`` is one policy for every constraint (a name in
    :data:`mechanics.POLICIES` or a :class:`~mechanics.policies.ConstraintPolicy`)
    or a mapping per constraint (:func:`~mechanics.policies.resolve_policies`);
    ``ordering`` a function ``(mechanism, graph structure) -> Ordering``.
    """

    policies: object
    ordering: Callable
    description: str = ""
    scope: str = "any"

    @property
    def policy_label(self) -> str:
        """``"prox"``, ``"alm"``, ... or ``"alm+prox"`` for a per-constraint mixture."""
        return policy_label(self.policies)

    def check(self, mechanism: Mechanism, name: str) -> None:
        """Raise ``ValueError`` if the algorithm does not apply to ``mechanism``."""
        if self.scope == "tree" and mechanism.constraints:
            raise ValueError(
                f"{name} solves a kinematic tree, but {mechanism.name!r} has {len(mechanism.constraints)} "
                f"constraint(s); use e.g. 'lcaba' or 'proxbbo', or mechanism.without_constraints()"
            )
        if self.scope == "contacts":
            internal = [c.name for c in mechanism.constraints if GROUND not in c.links]
            if internal:
                raise ValueError(
                    f"{name} handles contacts (constraints to the ground) only; {internal} close internal "
                    f"loops -- use 'lcaba', which extends it to internal loops"
                )


PAPERS = {
    "000": "Sathya & Carpentier, Constrained Articulated Body Algorithms for Closed-Loop Mechanisms (LCABA, proxBBO)",
    "001": "Sathya et al., Efficient Constrained Dynamics Algorithms based on an Equivalent LQR Formulation "
           "(PV, PV-soft)",
    "002": "Carpentier, Budhiraja & Mansard, Proximal and Sparse Resolution of Constrained Dynamic Equations (proxLTL)",
    "003": "Chignoli et al., Recursive Rigid-Body Dynamics Algorithms for Systems with Kinematic Loops (C-ABA)",
    "004": "A Propagation Perspective on Recursive Forward Dynamics for Systems with Kinematic Loops",
}
"""The papers behind the algorithms, by the codes the descriptions, docstrings and README cite them with
("000 Sec. V", "001 Fig. 4")."""

ALGORITHMS = {
    "aba": Algorithm("hard", tree_order, "ABA: recursive tree dynamics, no constraints", "tree"),
    "pv": Algorithm("hard", tree_order, "PV (001): hard multipliers, all eliminated last at the root"),
    "proxpv": Algorithm("prox", tree_order, "proximal PV: PV with regularized multipliers"),
    "proxbbo": Algorithm("prox", early_multipliers, "proxBBO (000 Sec. V): multipliers eliminated at their loop root"),
    "lcaba": Algorithm("alm", tree_min_degree, "LCABA (000 Sec. IV): ALM, tree-constrained minimum degree"),
    "constrained_aba": Algorithm("alm", tree_min_degree, "constrainedABA: LCABA restricted to contacts", "contacts"),
    "pv_soft": Algorithm("soft", tree_order, "PV-soft (001 Sec. VI): MuJoCo's soft constraints, ABA order"),
    "proxltl": Algorithm("prox", joint_space, "proxLTL (002): joint-space sparse LTL order"),
    "min_degree": Algorithm("prox", any_min_degree, "joint-space minimum degree: tree-unconstrained over qdd and multipliers"),
    "min_fill": Algorithm("prox", any_min_fill, "joint-space minimum fill: tree-unconstrained over qdd and multipliers"),
    "caba": Algorithm("embed", cluster_order, "C-ABA (003): clusters embedded as one block each, other loops prox"),
}


ORDERING_POLICIES = {
    "tree": tree_order,
    "early_multipliers": early_multipliers,
    "tree_min_degree": tree_min_degree,
    "joint_space": joint_space,
    "min_degree": any_min_degree,
    "min_fill": any_min_fill,
    "clusters": cluster_order,
}
"""The ordering policies by name, for pairs written as text: ``"prox/tree_min_degree"``, ``"embed/clusters"``
(constraint embedding, :class:`~mechanics.policies.Embed`: ``caba``)."""


def _check_policies(spec) -> None:
    if isinstance(spec, dict):
        for value in spec.values():
            policy(value)
    else:
        policy(spec)


def _text_pair(text: str) -> tuple:
    """``"POLICY/ORDERING"`` -> ``(name, Algorithm)``."""
    policy_name, _, ordering_name = text.partition("/")
    if ordering_name not in ORDERING_POLICIES:
        raise ValueError(f"unknown ordering policy {ordering_name!r} in {text!r}; use one of {sorted(ORDERING_POLICIES)}")
    algo = Algorithm(policy_name, ORDERING_POLICIES[ordering_name], f"{policy_name} policy, {ordering_name} ordering")
    _check_policies(algo.policies)
    return text, algo


def resolve_algorithm(algorithm) -> tuple:
    """``(name, Algorithm)`` from a name in :data:`ALGORITHMS`, a ``"POLICY/ORDERING"`` text
    (:data:`ORDERING_POLICIES`), an :class:`Algorithm`, or a ``(policies, ordering)`` pair
    (optionally with description and scope).

    Examples
    --------
    >>> resolve_algorithm("LCABA")[0], resolve_algorithm("prox/tree_min_degree")[1].policy_label
    ('lcaba', 'prox')
    """
    if isinstance(algorithm, str):
        if "/" in algorithm:
            return _text_pair(algorithm.lower())
        if algorithm.lower() not in ALGORITHMS:
            raise ValueError(
                f"unknown algorithm {algorithm!r}; use one of {sorted(ALGORITHMS)}, POLICY/ORDERING text "
                f"(orderings {sorted(ORDERING_POLICIES)}) or a (policy, ordering) pair"
            )
        return algorithm.lower(), ALGORITHMS[algorithm.lower()]
    named = next((name for name, algo in ALGORITHMS.items() if algo is algorithm), None)
    if named is not None:  # (one of ALGORITHMS itself: by its name, as its messages say it)
        return named, algorithm
    if isinstance(algorithm, tuple) and len(algorithm) in (2, 3, 4):
        algo = Algorithm(*algorithm)
        _check_policies(algo.policies)
        if not callable(algo.ordering):
            raise TypeError("the ordering policy of an algorithm pair must be callable (mechanism, graph) -> Ordering")
        return f"({algo.policy_label}, {getattr(algo.ordering, '__name__', 'ordering')})", algo
    raise TypeError(f"algorithm must be a name in {sorted(ALGORITHMS)} or a (policy, ordering) pair, got {algorithm!r}")


def layout_of(mechanism: Mechanism, algorithm: Algorithm) -> GPLCLayout:
    """The GPLC layout (structure, no numbers) of ``mechanism`` under ``algorithm``'s policies, kept in
    ``mechanism.derived`` (a layout depends on the policies' types only)."""
    policies = resolve_policies(algorithm.policies, mechanism)
    return mechanism.derived.get(("layout", policy_types(policies)), lambda: GPLCLayout(mechanism, policies))


def policy_types(policies: dict) -> tuple:
    """``(constraint, policy)`` pairs: what a layout and tables derived from a choice of policies depend on
    (a policy compares by class and numbers: a stiffer ``prox`` fills other numbers)."""
    return tuple(policies.items())


def plan_key(layout: GPLCLayout, algorithm: Algorithm) -> tuple:
    """What a plan depends on: each constraint's policy and the ordering policy (by identity)."""
    return tuple((c, p.name) for c, p in layout.policies.items()), algorithm.ordering


def plan_of(mechanism: Mechanism, algorithm: Algorithm, layout: GPLCLayout | None = None) -> elimination.Plan:
    """The symbolic plan of ``algorithm`` on ``mechanism``, from structure alone, kept in ``mechanism.plans``."""
    layout = layout if layout is not None else layout_of(mechanism, algorithm)

    def make() -> elimination.Plan:
        structure = layout.structure()
        return elimination.analyze(structure, algorithm.ordering(mechanism, structure))

    return mechanism.plans.get(plan_key(layout, algorithm), make)
