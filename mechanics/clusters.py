"""Clusters: groups of links closed by local loops, each hanging from one parent (003 Sec. III).

Constraint embedding (003's C-ABA) eliminates a cluster as one block: its joints' accelerations written
through independent ones, ``qdd_c = G y + g``.  Which loops are local is a choice: here a coupling always is
(a rotor and its link, a belt, a differential, a mimic joint), and a Weld, Connect or General constraint is
where neither of its ends is the ground and its loop has at most ``max_joints`` joints, none of them free (a
four-bar knee: 3; a loop spanning the tree, a contact, a hand holding a floating object keep their
multipliers).  A cluster's links are its loops' joints (the supporting links but the loop root,
:meth:`Mechanism.loop_joints`), loops sharing a link merged; where the merged group hangs from more than one
link outside it, the tree paths between those are added, so that every cluster has one parent.
"""
from __future__ import annotations

from dataclasses import dataclass

from .mechanism import GROUND, Coupling, Mechanism

LOCAL_JOINTS = 6
"""The most joints a local loop has (003's clusters are small: a four-bar's three, a differential's four)."""


@dataclass(frozen=True)
class Cluster:
    """Links eliminated as one block under embedding.

    Attributes
    ----------
    links : tuple of str
        In the mechanism's (topological) order.
    parent : str
        The link (or ``"ground"``) the cluster hangs from: every member's parent is a member or it.
    constraints : tuple of str
        The local loops and couplings inside it.
    """

    links: tuple
    parent: str
    constraints: tuple


def local(mechanism: Mechanism, name: str, max_joints: int = LOCAL_JOINTS) -> bool:
    """Whether constraint ``name`` closes a local loop (module docstring)."""
    c = mechanism.constraint(name)
    if isinstance(c, Coupling):
        return True
    joints = mechanism.loop_joints(name)
    return (GROUND not in c.links and len(joints) <= max_joints
            and all(mechanism.link(link).joint.kind != "free" for link in joints))


def find_clusters(mechanism: Mechanism, max_joints: int = LOCAL_JOINTS) -> tuple:
    """The clusters of ``mechanism``'s local loops (module docstring), ordered by their first link.

    Examples
    --------
    >>> from mechanics import models
    >>> [(c.links, c.parent) for c in find_clusters(models.geared_chain(2))]
    [(('link1_rotor', 'link1'), 'ground'), (('link2_rotor', 'link2'), 'link1')]
    """
    index = mechanism.index
    group: dict = {}  # link -> the representative of its group (union-find)

    def find(link):
        while group[link] != link:
            group[link] = group[group[link]]
            link = group[link]
        return link

    inside: dict = {}  # representative -> constraints
    for c in mechanism.constraints:
        if not local(mechanism, c.name, max_joints):
            continue
        members = sorted(mechanism.loop_joints(c.name) | set(getattr(c, "joints", ())), key=index.__getitem__)
        for link in members:
            group.setdefault(link, link)
        first = find(members[0])
        for link in members[1:]:
            group[find(link)] = first
        inside.setdefault(first, []).append(c.name)
    groups: dict = {}
    for link in group:
        groups.setdefault(find(link), set()).add(link)
    clusters = []
    for root, links in groups.items():
        names = [name for r, names in inside.items() if find(r) == root for name in names]
        links = _closed_under_tree(mechanism, links)
        ordered = tuple(sorted(links, key=index.__getitem__))
        clusters.append(Cluster(ordered, mechanism.parent(ordered[0]), tuple(names)))
    return _merged_overlaps(mechanism, sorted(clusters, key=lambda c: index[c.links[0]]))


def _closed_under_tree(mechanism: Mechanism, links: set) -> set:
    """``links`` with the tree paths added until they hang from one link outside them."""
    links = set(links)
    while True:
        outside = {mechanism.parent(l) for l in links} - links
        if len(outside) <= 1:
            return links
        top = _common_ancestor(mechanism, outside)
        for link in outside:
            while link != top and link != GROUND:
                links.add(link)
                link = mechanism.parent(link)


def _common_ancestor(mechanism: Mechanism, links) -> str:
    paths = [set(mechanism.ancestors(l)) | {GROUND} if l != GROUND else {GROUND} for l in links]
    common = set.intersection(*paths)
    return max(common, key=lambda l: mechanism.index.get(l, 0))  # (the deepest: ancestors have smaller indices)


def _merged_overlaps(mechanism: Mechanism, clusters: list) -> tuple:
    """Clusters that the tree paths made overlap, merged (and closed again)."""
    merged = True
    while merged:
        merged = False
        for i, a in enumerate(clusters):
            for b in clusters[i + 1:]:
                if set(a.links) & set(b.links):
                    links = _closed_under_tree(mechanism, set(a.links) | set(b.links))
                    ordered = tuple(sorted(links, key=mechanism.index.__getitem__))
                    joined = Cluster(ordered, mechanism.parent(ordered[0]), a.constraints + b.constraints)
                    clusters = [c for c in clusters if c is not a and c is not b] + [joined]
                    merged = True
                    break
            if merged:
                break
    return tuple(sorted(clusters, key=lambda c: mechanism.index[c.links[0]]))
