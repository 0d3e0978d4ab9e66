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

import networkx as nx

from mechanics import Mechanism, resolve_policies
from mechanics.gplc import GPLCLayout

POINTS_PER_INCH = 72.0
KAMADA_KAWAI_NODES = 300  # above this, a seeded spring layout (Kamada-Kawai is quadratic in memory and time)


def fixed_positions(view: nx.Graph, spacing: float = 1.0) -> dict:
    """Node -> ``(x, y)`` in points: one layout of ``view``, the same at every call.

    ``spacing`` is about the distance between neighbours, in inches.

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
    ordered = nx.Graph()  # the same node order whatever order the view was built in: the same layout
    ordered.add_nodes_from(sorted(view.nodes, key=str))
    ordered.add_edges_from(sorted((tuple(sorted(e, key=str)) for e in view.edges), key=str))
    if ordered.number_of_nodes() <= KAMADA_KAWAI_NODES:
        unit = nx.kamada_kawai_layout(ordered)
    else:
        unit = nx.spring_layout(ordered, seed=0)
    scale = spacing * POINTS_PER_INCH * 0.6 * math.sqrt(ordered.number_of_nodes())
    return {node: (float(x) * scale, float(y) * scale) for node, (x, y) in unit.items()}


def mechanism_nodes(mechanism: Mechanism, group) -> nx.Graph:
    """The grouped interaction graph of ``mechanism`` with a multiplier for every constraint: the nodes every
    algorithm's frames draw (a policy without multipliers just leaves theirs out)."""
    structure = GPLCLayout(mechanism, resolve_policies("prox", mechanism)).structure()
    full = structure.interaction_graph()
    view = nx.Graph()
    view.add_nodes_from(group(key) for key in full)
    view.add_edges_from((group(u), group(v)) for u, v in full.edges if group(u) != group(v))
    return view


__all__ = ["fixed_positions", "mechanism_nodes"]
