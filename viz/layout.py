"""Where each node sits: one layout per mechanism (or graph), shared by every frame of every ordering.

Watching an elimination means comparing consecutive frames, and two orderings
frame by frame; a layout recomputed per frame moves the nodes and hides both.
:func:`fixed_positions` lays a graph out once (Kamada-Kawai, deterministic;
a seeded spring layout past a few hundred nodes), and :func:`mechanism_nodes`
gives the graph every algorithm's frames of a mechanism draw from: its links
and one multiplier per constraint, so that the policies with multipliers and
those without place the links alike.  The frames are then drawn with these
positions (Graphviz ``neato -n2``: no layout at all, see
:func:`viz.dot.render`), which also makes drawing fast.
"""
from __future__ import annotations

import math
import shutil
import subprocess

import networkx as nx

from mechanics import GROUND, ClusterCoordinates, LinkAcceleration, Mechanism, Multiplier, resolve_policies
from mechanics.gplc import GPLCLayout

from .dot import quoted_text

POINTS_PER_INCH = 72.0
KAMADA_KAWAI_NODES = 300  # above this, a seeded spring layout (Kamada-Kawai is quadratic in memory and time)


def tree_positions(view: nx.Graph, tree_edges, labels: dict | None = None) -> dict | None:
    """Node -> ``(x, y)`` in points from Graphviz ``dot`` laying out the ``tree_edges`` (parent, child) top
    down, the view's other edges drawn but not ranking; ``None`` where ``dot`` is not installed.

    A mechanism reads best along its spanning tree (000 Fig. 4's drawing): the root on top, each link
    below its parent, loops closing sideways -- and compactly, where a spring layout stretches a robot's
    legs into one long line.
    """
    if shutil.which("dot") is None:
        return None
    ids = {node: f"n{i}" for i, node in enumerate(sorted(view.nodes, key=str))}
    labels = labels or {}
    lines = ["digraph layout {", '  node [fontname="Helvetica" fontsize=10]', "  nodesep=0.25 ranksep=0.45"]
    for node, name in ids.items():
        lines.append(f"  {name} [label={quoted_text(labels.get(node, node))}]")
    tree = {frozenset(e) for e in tree_edges}
    for parent, child in tree_edges:
        lines.append(f"  {ids[parent]} -> {ids[child]}")
    for u, v in sorted((tuple(sorted(e, key=str)) for e in view.edges), key=str):
        if frozenset((u, v)) not in tree:
            lines.append(f"  {ids[u]} -> {ids[v]} [constraint=false]")
    lines.append("}")
    plain = subprocess.run(["dot", "-Tplain"], input="\n".join(lines), capture_output=True, text=True, check=True).stdout
    back = {name: node for node, name in ids.items()}
    positions = {}
    for line in plain.splitlines():
        parts = line.split()
        if parts and parts[0] == "node":
            positions[back[parts[1]]] = (float(parts[2]) * POINTS_PER_INCH, float(parts[3]) * POINTS_PER_INCH)
    return positions


def fixed_positions(view: nx.Graph, spacing: float = 1.0, tree_edges=None, labels: dict | None = None) -> dict:
    """Node -> ``(x, y)`` in points: one layout of ``view``, the same at every call.

    With ``tree_edges`` (and Graphviz installed) the tree layout of :func:`tree_positions`; otherwise
    Kamada-Kawai, scaled so that neighbours sit about ``spacing`` inches apart.

    Examples
    --------
    >>> import networkx as nx
    >>> pos = fixed_positions(nx.path_graph(3))
    >>> pos == fixed_positions(nx.path_graph(3)), sorted(pos)
    (True, [0, 1, 2])
    """
    if view.number_of_nodes() == 0:
        return {}
    if view.number_of_nodes() == 1:
        return {next(iter(view)): (0.0, 0.0)}
    if tree_edges is not None:
        positions = tree_positions(view, tree_edges, labels)
        if positions is not None:
            return positions
    ordered = nx.Graph()  # the same node order whatever order the view was built in: the same layout
    ordered.add_nodes_from(sorted(view.nodes, key=str))
    ordered.add_edges_from(sorted((tuple(sorted(e, key=str)) for e in view.edges), key=str))
    if ordered.number_of_nodes() <= KAMADA_KAWAI_NODES:
        unit = nx.kamada_kawai_layout(ordered)
    else:
        unit = nx.spring_layout(ordered, seed=0)
    lengths = sorted(math.dist(unit[u], unit[v]) for u, v in ordered.edges) or [1.0]
    scale = spacing * POINTS_PER_INCH / max(lengths[len(lengths) // 2], 1e-9)  # the median edge: spacing inches
    return {node: (float(x) * scale, float(y) * scale) for node, (x, y) in unit.items()}


def grouped_interaction(structure, group) -> nx.Graph:
    """The interaction graph of ``structure`` with its variables drawn as ``group(key)`` nodes."""
    full = structure.interaction_graph()
    view = nx.Graph()
    view.add_nodes_from(group(key) for key in full)
    view.add_edges_from((group(u), group(v)) for u, v in full.edges if group(u) != group(v))
    return view


def mechanism_nodes(mechanism: Mechanism, group) -> nx.Graph:
    """The grouped interaction graph of ``mechanism`` with a multiplier for every constraint and the
    coordinates ``y`` of every embedded cluster: the nodes every algorithm's frames draw (a policy without
    multipliers, or one that embeds nothing, just leaves theirs out)."""
    return nx.compose(*(grouped_interaction(GPLCLayout(mechanism, resolve_policies(name, mechanism)).structure(), group)
                        for name in ("prox", "embed")))


def mechanism_positions(mechanism: Mechanism, group) -> dict:
    """Node -> ``(x, y)`` points for every frame of every algorithm of ``mechanism``: its links along the
    spanning tree (root on top), each constraint's multiplier below the deepest of its links, each embedded
    cluster's ``y`` below its top link."""
    view = mechanism_nodes(mechanism, group)
    link = lambda name: group(LinkAcceleration(name))  # noqa: E731
    tree = [(link(l.parent), link(l.name)) for l in mechanism.links if l.parent != GROUND]
    depth = {l.name: i for i, l in enumerate(mechanism.links)}  # topological order: deeper comes later
    for c in mechanism.constraints:
        deepest = max((l for l in c.links if l != GROUND), key=depth.get)
        tree.append((link(deepest), group(Multiplier(c.name))))
    tree += [(link(node.name), node) for node in view if isinstance(node, ClusterCoordinates)]  # (below its top link)
    labels = {node: getattr(node, "label", str(node)) for node in view}
    return fixed_positions(view, tree_edges=tree, labels=labels)


__all__ = ["fixed_positions", "grouped_interaction", "mechanism_nodes", "mechanism_positions", "tree_positions"]
