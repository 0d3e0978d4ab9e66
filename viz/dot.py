"""DOT text for any view, and rendering it to files.

:func:`to_dot` is pure (view -> DOT source); :func:`render` writes the ``.dot``
file always and SVG/PNG when Graphviz's ``dot`` binary is installed, saying
in one line how to get it otherwise.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import graphviz
import networkx as nx

# attributes Graphviz understands; the views' semantic attributes (kind, state, fill...) stay out
DISPLAY = ("label", "shape", "style", "fillcolor", "color", "width", "height", "tooltip", "dir", "constraint",
           "penwidth", "fontsize", "fixedsize", "fontcolor", "pos")
INSTALL_DOT = "Graphviz's `dot` is not installed, only .dot files were written (apt-get install graphviz, brew install graphviz)"


def node_id(node) -> str:
    return str(node)


def _display(attributes: dict) -> dict:
    return {k: str(v) for k, v in attributes.items() if k in DISPLAY}


def to_graphviz(view: nx.Graph, name: str = "view", positions: dict | None = None, **graph_attr) -> graphviz.Graph:
    """A ``graphviz.Graph`` (``Digraph`` for directed views) with the view's display attributes; with
    ``positions`` (node -> ``(x, y)`` in points, :func:`viz.layout.fixed_positions`) every node is pinned
    there, for :func:`render` with ``fixed=True``."""
    cls = graphviz.Digraph if view.is_directed() else graphviz.Graph
    dot = cls(name=name, graph_attr={k: str(v) for k, v in graph_attr.items()},
              node_attr={"fontname": "Helvetica", "fontsize": "10"})
    for node, data in view.nodes(data=True):
        if positions is not None:
            x, y = positions[node]
            data = {**data, "pos": f"{x:.1f},{y:.1f}!"}
        dot.node(node_id(node), **_display(data))
    for u, v, data in view.edges(data=True):
        dot.edge(node_id(u), node_id(v), **_display(data))
    return dot


def to_dot(view: nx.Graph, name: str = "view", positions: dict | None = None, **graph_attr) -> str:
    """DOT source of a view.

    Examples
    --------
    >>> import networkx as nx
    >>> g = nx.Graph(); g.add_edge("a", "b", color="red", kind="fill")
    >>> "a -- b [color=red]" in to_dot(g)
    True
    """
    return to_graphviz(view, name, positions, **graph_attr).source


SHEET_WIDTH = 3000.0  # points (4,000 px): the widest overview drawn without being asked for more columns


def overview_dot(frames, name: str = "elimination", columns: int | None = 4, positions: dict | None = None) -> str:
    """One sheet with every frame, ``columns`` frames per row (node names prefixed by the frame number).

    With ``positions`` (node -> ``(x, y)`` points, :mod:`viz.layout`) each frame is drawn at them in its
    cell of the grid, titled above -- render it with ``fixed=True``; ``columns=None`` then takes as many as
    fit ``SHEET_WIDTH``, at most four.  Without, every frame is a cluster
    laid out by ``dot``: an invisible anchor per cluster, the anchors of a row on one rank and each anchor
    above the one a row below, so that ``dot`` stacks the rows instead of laying every cluster side by side.
    """
    if positions is not None:
        return _overview_in_place(frames, name, columns, positions)
    columns = columns or 4
    sheet = graphviz.Graph(name=name, graph_attr={"compound": "true", "newrank": "true", "nodesep": "0.15"},
                           node_attr={"fontname": "Helvetica", "fontsize": "9"})
    for i, frame in enumerate(frames):
        with sheet.subgraph(name=f"cluster_{i}", graph_attr={"label": frame.title, "fontsize": "10"}) as cluster:
            cluster.node(f"anchor {i}", label="", style="invis", width="0", height="0")
            for node, data in frame.graph.nodes(data=True):
                cluster.node(f"s{i} {node_id(node)}", **_display(data))
            for node in list(frame.graph.nodes)[:1]:
                cluster.edge(f"anchor {i}", f"s{i} {node_id(node)}", style="invis")  # the anchor tops its frame
            for u, v, data in frame.graph.edges(data=True):
                cluster.edge(f"s{i} {node_id(u)}", f"s{i} {node_id(v)}", **_display(data))
    for start in range(0, len(frames), columns):
        with sheet.subgraph(graph_attr={"rank": "same"}) as row:
            for i in range(start, min(start + columns, len(frames))):
                row.node(f"anchor {i}")
    for i in range(len(frames) - columns):
        # tall frames: the next row starts below the deepest node of this one
        for node in frames[i].graph.nodes:
            sheet.edge(f"s{i} {node_id(node)}", f"anchor {i + columns}", style="invis")
    return sheet.source


def _overview_in_place(frames, name: str, columns: int, positions: dict) -> str:
    """The overview of frames drawn at fixed positions: a grid of cells, one frame each, its title above."""
    xs, ys = [x for x, _ in positions.values()], [y for _, y in positions.values()]
    margin = 90.0  # points: room for labels sticking out of the layout's box
    width, height = max(xs) - min(xs) + 2 * margin, max(ys) - min(ys) + 2 * margin + 20.0
    if columns is None:  # as many as fit SHEET_WIDTH, at most four
        columns = max(1, min(4, int(SHEET_WIDTH // width)))
    sheet = graphviz.Graph(name=name, node_attr={"fontname": "Helvetica", "fontsize": "9"})  # straight edges: fast
    for i, frame in enumerate(frames):
        dx = (i % columns) * width - min(xs) + margin
        dy = -(i // columns) * height - max(ys) - margin
        sheet.node(f"title {i}", label=frame.title, shape="plaintext", fontsize="11",
                   pos=f"{dx + (min(xs) + max(xs)) / 2:.1f},{dy + max(ys) + margin * 0.6:.1f}!")
        for node, data in frame.graph.nodes(data=True):
            x, y = positions[node]
            sheet.node(f"s{i} {node_id(node)}", **_display({**data, "pos": f"{x + dx:.1f},{y + dy:.1f}!"}))
        for u, v, data in frame.graph.edges(data=True):
            sheet.edge(f"s{i} {node_id(u)}", f"s{i} {node_id(v)}", **_display(data))
    return sheet.source


def has_dot() -> bool:
    return shutil.which("dot") is not None


def render(source: str, path, formats=("svg",), warn=sys.stderr, fixed: bool = False) -> list:
    """Write ``path.dot`` and, when ``dot`` exists, ``path.<format>`` for each format.

    ``fixed``: the nodes carry their positions (``to_dot(..., positions=...)``): drawn by ``neato -n2``,
    which computes no layout (milliseconds where ``dot`` takes minutes on a dense frame).
    Returns the paths written.  Raises ``OSError`` if the folder cannot be written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    written = [path.with_suffix(".dot")]
    written[0].write_text(source)
    if not has_dot():
        if warn is not None:
            print(INSTALL_DOT, file=warn)
        return written
    for fmt in formats:
        out = path.with_suffix(f".{fmt}")
        options = {"engine": "neato", "neato_no_op": 2} if fixed else {}
        out.write_bytes(graphviz.Source(source).pipe(format=fmt, **options))
        written.append(out)
    return written
