"""DOT text for any view, and rendering it to files.

:func:`to_dot` is pure (view -> DOT source); :func:`render` writes the ``.dot``
file always and SVG/PNG when Graphviz's ``dot`` binary is installed, saying
in one line how to get it otherwise.

The views hold plain text (a link, frame or constraint name as the user wrote
it, a newline for a line break); this module alone writes it as DOT: node ids
by :func:`node_id`, labels by :func:`dot_text` and :func:`record_label`, so
that any character a name may hold -- ``:``, quotes, backslashes, ``<>{}|``,
non-ASCII -- draws as itself.
"""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import graphviz
import networkx as nx

# attributes Graphviz understands; the views' semantic attributes (kind, state, fill...) stay out
DISPLAY = ("label", "shape", "style", "fillcolor", "color", "width", "height", "tooltip", "dir", "constraint",
           "penwidth", "fontsize", "fixedsize", "fontcolor", "pos", "xlabel")
TEXT = ("label", "xlabel", "tooltip", "headlabel", "taillabel")  # escStrings: written by dot_text
FONT = {"fontname": "Helvetica", "fontsize": "10"}  # nodes' and edges' labels alike
INSTALL_DOT = "Graphviz's `dot` is not installed, only .dot files were written (apt-get install graphviz, brew install graphviz)"

# in a node id: ``:`` (the graphviz package reads it as a port), ``"`` and ``\`` (DOT's quoting), ``<>`` (an
# HTML string), ``|`` (the page's edge keys), control characters; ``%`` so that the escape reads back uniquely
NOT_IN_ID = re.compile(r'[%:"\\<>|\x00-\x1f\x7f]')
RECORD_SYNTAX = re.compile(r"([{}|<>])")


def node_id(node) -> str:
    r"""The DOT node id of a view's node: its text, with the characters DOT or the graphviz package would
    read as syntax written ``%XX`` (so distinct nodes keep distinct ids).

    >>> node_id("6"), node_id(("lam", "left_sole_link:weld")), node_id('a"b\\c')
    ('6', "('lam', 'left_sole_link%3Aweld')", 'a%22b%5Cc')
    """
    return NOT_IN_ID.sub(lambda match: f"%{ord(match.group()):02X}", str(node))


def dot_text(text) -> graphviz.quoting.NoHtml:
    r"""``text`` as a DOT label (an escString) that draws as itself: backslashes doubled (``\N`` would be the
    node's id), a line break as DOT's ``\n``; quotes are escaped when the graphviz package quotes it, and
    text that looks like ``<html>`` stays text.

    >>> print(dot_text('a:b "c" \\d\nnext line'))
    a:b "c" \\d\nnext line
    """
    return graphviz.nohtml(str(text).replace("\\", "\\\\").replace("\n", "\\n"))


def quoted_text(text) -> str:
    """``text`` as a DOT attribute value, in quotes where DOT needs them, for DOT written by hand
    (:func:`viz.layout.tree_positions`)."""
    return graphviz.quoting.quote(dot_text(text))


def record_label(fields) -> graphviz.quoting.NoHtml:
    r"""A ``shape=record`` label of ``fields`` (plain texts) side by side, each drawn as itself: the record
    syntax ``{}|<>`` escaped inside them.

    >>> print(record_label(["a {b|c}", "d"]))
    a \{b\|c\} | d
    """
    return graphviz.nohtml(" | ".join(RECORD_SYNTAX.sub(r"\\\1", dot_text(field)) for field in fields))


def _display(attributes: dict) -> dict:
    """The Graphviz attributes of a view's node or edge, as DOT text; a node with ``fields`` (texts) is a
    record of them."""
    shown = {k: dot_text(v) if k in TEXT else str(v) for k, v in attributes.items() if k in DISPLAY}
    if "fields" in attributes:
        shown["label"] = record_label(attributes["fields"])
    return shown


def _graph_attributes(attributes: dict) -> dict:
    return {k: dot_text(v) if k in TEXT else str(v) for k, v in attributes.items()}


def to_graphviz(view: nx.Graph, name: str = "view", positions: dict | None = None, legend: str | None = None,
                **graph_attr) -> graphviz.Graph:
    """A ``graphviz.Graph`` (``Digraph`` for directed views) with the view's display attributes; with
    ``positions`` (node -> ``(x, y)`` in points, :func:`viz.layout.fixed_positions`) every node is pinned
    there, for :func:`render` with ``fixed=True``.  ``legend``, an HTML-like label (``<<TABLE>...</TABLE>>``,
    e.g. :func:`viz.views.step_legend`), is one more node: with ``positions``, pinned right of the drawing.  Nodes
    with a ``cluster`` attribute are drawn in a box of that label, one per value."""
    cls = graphviz.Digraph if view.is_directed() else graphviz.Graph
    dot = cls(name=name, graph_attr=_graph_attributes({"fontname": "Helvetica", **graph_attr}),
              node_attr=FONT, edge_attr=FONT)
    boxes: dict = {}  # a node's "cluster": the box it is drawn in, labelled so
    for node, data in view.nodes(data=True):
        if positions is not None:
            x, y = positions[node]
            data = {**data, "pos": f"{x:.1f},{y:.1f}!"}
        box = data.get("cluster")
        if box is None:
            dot.node(node_id(node), **_display(data))
        else:
            boxes.setdefault(box, []).append((node, data))
    for k, (box, nodes) in enumerate(boxes.items()):
        with dot.subgraph(name=f"cluster_{k}", graph_attr={"label": dot_text(box), "style": "dashed", "labelloc": "b",
                                                            "fontsize": "9", "fontname": "Helvetica"}) as sub:
            for node, data in nodes:
                sub.node(node_id(node), **_display(data))
    for u, v, data in view.edges(data=True):
        dot.edge(node_id(u), node_id(v), **_display(data))
    if legend is not None:
        where = {} if positions is None else {"pos": _beside(view, positions, legend)}
        dot.node("legend", label=legend, shape="plaintext", fontsize="10", **where)
    return dot


def to_dot(view: nx.Graph, name: str = "view", positions: dict | None = None, legend: str | None = None,
           **graph_attr) -> str:
    """DOT source of a view (see :func:`to_graphviz`).

    Examples
    --------
    >>> import networkx as nx
    >>> g = nx.Graph(); g.add_edge("a", "b", color="red", kind="fill")
    >>> "a -- b [color=red]" in to_dot(g)
    True
    """
    return to_graphviz(view, name, positions, legend, **graph_attr).source


FONT_WIDTH = 0.6  # a Helvetica character's width, in font sizes (a generous mean: the estimates must not overlap)


def table_size(label: str, fontsize: float = 10.0) -> tuple:
    """``(width, height)`` in points that an HTML-like table label takes, estimated from its rows' text
    (Graphviz tells sizes only after a layout, and a pinned node needs its centre before)."""
    rows = re.findall(r"<TR>(.*?)</TR>", label, flags=re.S) or [label]
    widths = [FONT_WIDTH * fontsize * len(re.sub(r"<[^>]*>", "", row)) + 34.0 * row.count("<TD") for row in rows]
    return max(widths), len(rows) * (fontsize + 12.0) + 8.0


def _beside(view: nx.Graph, positions: dict, legend: str) -> str:
    """The ``pos`` of a legend right of a drawing at ``positions``, its top level with the top node's."""
    right = max(x + FONT_WIDTH * 5.0 * len(str(view.nodes[n].get("label", n))) for n, (x, _) in positions.items()
                if n in view)  # a node reaches half its label's width (fontsize 10) right of its centre
    top = max(y for n, (_, y) in positions.items() if n in view) + 18.0
    width, height = table_size(legend)
    return f"{right + 30.0 + width / 2:.1f},{top - height / 2:.1f}!"


SHEET_WIDTH = 3000.0  # points (4,000 px): the widest overview drawn without being asked for more columns


def overview_dot(frames, name: str = "elimination", columns: int | None = 4, positions: dict | None = None,
                 legend: str | None = None) -> str:
    """One sheet with every frame, ``columns`` frames per row (node names prefixed by the frame number).

    With ``positions`` (node -> ``(x, y)`` points, :mod:`viz.layout`) each frame is drawn at them in its
    cell of the grid, titled above, a fill edge labelled only in the frame that makes it (``fill`` True) --
    render it with ``fixed=True``; ``columns=None`` then takes as many as fit ``SHEET_WIDTH``, at most four;
    ``legend`` (an HTML-like label, best one row:
    ``viz.views.step_legend(across=True)``) sits above the grid.  Without, every frame is a cluster
    laid out by ``dot``: an invisible anchor per cluster, the anchors of a row on one rank and each anchor
    above the one a row below, so that ``dot`` stacks the rows instead of laying every cluster side by side.
    """
    if positions is not None:
        return _overview_in_place(frames, name, columns, positions, legend)
    columns = columns or 4
    sheet = graphviz.Graph(name=name, graph_attr={"compound": "true", "newrank": "true", "nodesep": "0.15",
                                                  "fontname": "Helvetica"},
                           node_attr={**FONT, "fontsize": "9"}, edge_attr=FONT)
    for i, frame in enumerate(frames):
        title = _graph_attributes({"label": frame.title, "fontsize": "10"})
        with sheet.subgraph(name=f"cluster_{i}", graph_attr=title) as cluster:
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
    if legend is not None:
        sheet.node("legend", label=legend, shape="plaintext", fontsize="10")
    return sheet.source


def _overview_in_place(frames, name: str, columns: int, positions: dict, legend: str | None = None) -> str:
    """The overview of frames drawn at fixed positions: a grid of cells, one frame each, its title above,
    the legend above the first row."""
    xs, ys = [x for x, _ in positions.values()], [y for _, y in positions.values()]
    margin = 90.0  # points: room for labels sticking out of the layout's box
    width, height = max(xs) - min(xs) + 2 * margin, max(ys) - min(ys) + 2 * margin + 20.0
    if columns is None:  # as many as fit SHEET_WIDTH, at most four
        columns = max(1, min(4, int(SHEET_WIDTH // width)))
    sheet = graphviz.Graph(name=name, node_attr={**FONT, "fontsize": "9"}, edge_attr=FONT)  # straight edges: fast
    if legend is not None:  # the first row's titles reach y = 0 at most (see dy below)
        legend_width, legend_height = table_size(legend)
        sheet.node("legend", label=legend, shape="plaintext", fontsize="10",
                   pos=f"{10.0 + legend_width / 2:.1f},{10.0 + legend_height / 2:.1f}!")
    for i, frame in enumerate(frames):
        dx = (i % columns) * width - min(xs) + margin
        dy = -(i // columns) * height - max(ys) - margin
        sheet.node(f"title {i}", label=dot_text(frame.title), shape="plaintext", fontsize="11",
                   pos=f"{dx + (min(xs) + max(xs)) / 2:.1f},{dy + max(ys) + margin * 0.6:.1f}!")
        for node, data in frame.graph.nodes(data=True):
            x, y = positions[node]
            sheet.node(f"s{i} {node_id(node)}", **_display({**data, "pos": f"{x + dx:.1f},{y + dy:.1f}!"}))
        for u, v, data in frame.graph.edges(data=True):
            if data.get("fill") is False:  # small cells: a fill edge is labelled in the frame that makes it only
                data = {key: value for key, value in data.items() if key != "label"}
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
