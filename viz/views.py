"""What each picture shows, as networkx graphs with display attributes.

Every view is a pure function returning a networkx graph whose nodes and
edges carry Graphviz attributes (``label``, ``shape``, ``color``, ``style``,
...) plus semantic ones (``kind``, ``role``, ``fill``); :func:`viz.dot.to_dot`
writes any of them as DOT, and tests check their content here.

Views: the bipartite factor graph (:func:`factor_graph_view`), the mechanism
topology of 000 Fig. 2/4 (:func:`mechanism_view`), the elimination step by
step (:func:`elimination_frames`) and the clique tree of a plan
(:func:`clique_tree_view`).
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Callable, Hashable

import networkx as nx

from factorgraph import FactorNode
from mechanics import GROUND, ClusterCoordinates, Coupling, JointAcceleration, LinkAcceleration, Mechanism, Multiplier
from mechanics.algorithms import embedded_blocks


@dataclass(frozen=True)
class Palette:
    """Colours and shapes shared by every view."""

    frontal: str = "gold"
    separator: str = "darkorange"
    fill: str = "red"
    eliminated: str = "gray85"
    ground: str = "gray70"
    variable: dict = field(default_factory=lambda: {
        "link": ("ellipse", "lightblue"), "joint": ("ellipse", "palegreen"), "multiplier": ("diamond", "salmon"),
        "cluster": ("box", "palegreen"), "min": ("ellipse", "white"), "max": ("diamond", "salmon"),
    })
    factor: dict = field(default_factory=lambda: {
        "prior": "lightblue", "torque": "palegreen", "tree joint": "black", "loop/contact": "red",
        "penalty": "orange", "multiplier prior": "salmon", "hard": "black", "quadratic": "gray40",
    })


PALETTE = Palette()


def _label(key: Hashable) -> str:
    """A typed key's own label (``a 3``, ``λ c1``), else the key as text."""
    return getattr(key, "label", str(key))


def variable_kind(key: Hashable, role: str) -> str:
    """``link``, ``joint``, ``multiplier`` for typed GPLC keys (:mod:`mechanics.keys`); the role otherwise."""
    return getattr(key, "kind", role)


def factor_kind(factor) -> str:
    """What a factor stands for: its role's ``kind`` (prior, torque, tree joint, loop/contact, penalty,
    multiplier prior) when the graph's builder gave one, else ``hard`` or ``quadratic``.

    ``factor`` is a :class:`factorgraph.FactorStructure` (``graph.structure().factors``).
    """
    kind = getattr(factor.role, "kind", None)
    if kind is not None:
        return kind
    return "hard" if factor.rows else "quadratic"


def factor_graph_view(graph, palette: Palette = PALETTE) -> nx.Graph:
    """Bipartite factor graph (of a FactorGraph or GraphStructure): variables by kind, factors (small boxes) by role."""
    structure = graph.structure()
    view = nx.Graph()
    for var in structure.variables:
        kind = variable_kind(var.key, var.role)
        shape, color = palette.variable[kind]
        view.add_node(var.key, label=_label(var.key), kind=kind, shape=shape, style="filled", fillcolor=color)
    for index, factor in enumerate(structure.factors):
        kind = factor_kind(factor)
        node = FactorNode(index)
        view.add_node(node, label="", kind=kind, shape="box", style="filled", fillcolor=palette.factor[kind],
                      width="0.15", height="0.15", tooltip=f"{kind} {index}")
        view.add_edges_from((node, key) for key in factor.keys)
    return view


def joint_label(joint) -> str:
    """A tree joint as an edge label: its kind and axis (``revolute z``, ``prismatic (0.6, 0, 0.8)``, ``free``).

    >>> from mechanics import Joint
    >>> joint_label(Joint("revolute", "z")), joint_label(Joint("prismatic", (3.0, 0.0, 4.0))), joint_label(Joint("free"))
    ('revolute z', 'prismatic (0.6, 0, 0.8)', 'free')
    """
    if joint.axis is None:
        return joint.kind
    unit = [name for name, axis in (("x", (1, 0, 0)), ("y", (0, 1, 0)), ("z", (0, 0, 1))) if tuple(joint.axis) == axis]
    axis = unit[0] if unit else "(" + ", ".join(f"{a:.2g}" for a in joint.axis) + ")"
    return f"{joint.kind} {axis}"


def constraint_label(constraint) -> str:
    """A constraint as the pictures name it: what it is, its name and its kind -- ``cut joint 12 (connect)``,
    ``contact FL_FOOT (point)``; the kind left out where the name already ends with it (``FL_FOOT:point``).

    >>> from mechanics import GROUND, Connect, Weld
    >>> constraint_label(Connect("6", "8", name="12")), constraint_label(Weld("foot", GROUND, name="foot:weld"))
    ('cut joint 12 (connect)', 'contact foot:weld')
    """
    if isinstance(constraint, Coupling):
        return f"coupling {constraint.name}"
    contact = GROUND in constraint.links
    role = "contact" if contact else "cut joint" if len(constraint.links) == 2 else "constraint"
    kind = type(constraint).__name__.lower()
    kind = "point" if kind == "connect" and contact else kind
    name = str(constraint.name)
    return f"{role} {name}" if name.endswith(f":{kind}") else f"{role} {name} ({kind})"


def mechanism_view(mechanism: Mechanism, palette: Palette = PALETTE) -> nx.DiGraph:
    """000 Fig. 2/4: tree joints as directed edges, cut joints dashed and named (:func:`constraint_label`),
    couplings dotted between their joints' links, the ground marked; each cluster's links (003's, what
    embedding eliminates as one block: :meth:`mechanics.Mechanism.clusters`) in one box, their nodes'
    ``cluster`` naming its loops."""
    view = nx.DiGraph()
    view.add_node(GROUND, label="ground", kind="ground", shape="box", style="filled", fillcolor=palette.ground)
    cluster = {link: f"cluster {', '.join(c.constraints)}" for c in mechanism.clusters() for link in c.links}
    for link in mechanism.links:
        view.add_node(link.name, label=link.name, kind="link", shape="circle",
                      **({"cluster": cluster[link.name]} if link.name in cluster else {}))
        view.add_edge(link.parent, link.name, kind="tree joint", label=joint_label(link.joint), style="solid")
    for c in mechanism.constraints:
        if isinstance(c, Coupling):  # between the coupled joints' links, dotted
            for a, b in zip(c.joints, c.joints[1:]):
                a, b = (b, a) if view.has_edge(a, b) else (a, b)  # (a joint coupled to its parent's: keep the tree edge)
                view.add_edge(a, b, kind="coupling", label=constraint_label(c), style="dotted", color=palette.fill,
                              fontcolor=palette.fill, dir="none", constraint="false")
            continue
        if len(c.links) == 2:
            view.add_edge(c.links[0], c.links[1], kind="cut joint", label=constraint_label(c), style="dashed",
                          color=palette.fill, fontcolor=palette.fill, dir="none", constraint="false")
        else:  # 000 Remark 1: a constraint on several links is a small hub
            hub = f"constraint {c.name}"
            view.add_node(hub, label=constraint_label(c), xlabel=constraint_label(c), kind="constraint", shape="point")
            for link in c.links:
                view.add_edge(hub, link, kind="cut joint", style="dashed", color=palette.fill, dir="none", constraint="false")
    return view


@dataclass
class Frame:
    """One picture of the elimination: the graph just before ``steps`` (plan steps) run, and what they do.

    ``number`` is the frame's place in the elimination, 1, 2, 3...: the step its title names and its fill
    edges are labelled with (a link's ``a`` and ``qdd``, two plan steps, are one step on the pictures).
    """

    title: str
    graph: nx.Graph
    steps: tuple
    number: int


@dataclass(frozen=True)
class ClusterFront:
    """One frame's front: an embedded cluster (003), its links' and its ``y``'s steps shown as one elimination."""

    links: tuple
    constraints: tuple


def cluster_fronts(mechanism: Mechanism, plan, group: Callable | None = None) -> Callable:
    """``key -> front`` for :func:`elimination_frames`' ``front``: the variables of each cluster ``plan``
    eliminates as one block (:func:`mechanics.algorithms.embedded_blocks`: C-ABA's, ``caba``) -> one
    :class:`ClusterFront`, the others -> ``group(key)`` (default :func:`link_group`).

    >>> from mechanics import algorithm_plan, models
    >>> leg = models.digit_leg()
    >>> front = cluster_fronts(leg, algorithm_plan(leg, "caba")[1])
    >>> front(LinkAcceleration("shin")), front(LinkAcceleration("toe"))
    (ClusterFront(links=('thigh', 'shin', 'tarsus', 'achilles_rod', 'knee_rod'), constraints=('achilles', 'knee')), 'toe')
    """
    group = group or link_group
    constraints = {link: c.constraints for c in mechanism.clusters() for link in c.links}
    fronts = {}
    for links, y in embedded_blocks(mechanism, plan.structure):
        front = ClusterFront(links, constraints.get(links[0], ()))
        fronts.update({key: front for link in links for key in (LinkAcceleration(link), JointAcceleration(link), y)})
    return lambda key: fronts.get(key, group(key))


def _grouped_steps(plan, group: Callable) -> list:
    """Consecutive plan steps whose fronts belong to the same display group (or front)."""
    runs = []
    for step in plan.steps:
        name = group(step.frontal[0])
        if runs and runs[-1][0] == name:
            runs[-1][1].append(step)
        else:
            runs.append((name, [step]))
    return runs


MOST_NAMED = 3  # names a title lists before "and N more": titles stay one short line


def _listed(names) -> str:
    """``a``, ``a and b``, ``a, b and c``, ``a, b and 5 more``."""
    names = list(names)
    if len(names) > MOST_NAMED:
        names = names[:MOST_NAMED - 1] + [f"{len(names) - MOST_NAMED + 1} more"]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _link_words(name: str, kinds: list) -> str:
    """A link's accelerations in the order eliminated: ``link 4's acceleration, then its joint's``."""
    first = "acceleration" if kinds[0] == "link" else "joint acceleration"
    then = "" if len(kinds) == 1 else ", then its joint's" if kinds[0] == "link" else ", then the link's"
    return f"link {name}'s {first}{then}"


def elimination_words(keys) -> str:
    """What eliminating ``keys`` (in their order) does, in words: links by their accelerations,
    multipliers by their constraints, any other key by its label; a count where that would run long.

    >>> elimination_words([LinkAcceleration("4"), JointAcceleration("4")])
    "eliminate link 4's acceleration, then its joint's"
    >>> elimination_words([Multiplier("knee")]), elimination_words([Multiplier("12"), Multiplier("13")])
    ('eliminate the multiplier of constraint knee', 'eliminate the multipliers of constraints 12 and 13')
    >>> elimination_words(["x1", "x2", "x3", "x4"])
    'eliminate x1, x2 and 2 more'
    """
    links, multipliers, others = {}, [], []
    for key in keys:
        if isinstance(key, (LinkAcceleration, JointAcceleration)):
            links.setdefault(key.name, []).append(key.kind)
        elif isinstance(key, Multiplier):
            multipliers.append(key.name)
        else:
            others.append(_label(key))
    parts = [_link_words(name, kinds) for name, kinds in links.items()]
    if multipliers:
        parts.append(f"the multiplier of constraint {multipliers[0]}" if len(multipliers) == 1
                     else f"the multipliers of constraints {_listed(multipliers)}")
    if others:
        parts.append(_listed(others))
    if len(parts) > 2:  # several links at once (an amalgamated plan): their count and the first few
        return f"eliminate {len(keys)} variables: {_listed(_label(k) for k in keys)}"
    return "eliminate " + " and ".join(parts)


def step_title(number: int, steps, front=None) -> str:
    """A frame's title: ``step 5: eliminate link 4's acceleration, then its joint's``; for a
    :class:`ClusterFront`, ``step 2: eliminate the cluster of constraint knee as one block: links a, b and c, then its
    y``."""
    if isinstance(front, ClusterFront):
        then = ", then its y" if any(isinstance(k, ClusterCoordinates) for s in steps for k in s.frontal) else ""
        named = "constraints" if len(front.constraints) > 1 else "constraint"
        return (f"step {number}: eliminate the cluster of {named} {_listed(front.constraints)} as one block: "
                f"links {_listed(front.links)}{then}")
    return f"step {number}: {elimination_words([k for s in steps for k in s.frontal])}"


def fill_label(number: int) -> str:
    """The label of a fill edge made at step ``number`` (a frame's number)."""
    return f"fill, step {number}"


def elimination_frames(graph, plan, group: Callable | None = None, palette: Palette = PALETTE,
                       keep_eliminated: bool = False, front: Callable | None = None) -> list:
    """The interaction graph before each elimination step, eliminated block and fill highlighted.

    Parameters
    ----------
    graph : FactorGraph or GraphStructure
    plan : elimination.Plan
    group : callable ``key -> display node``, optional
        Draw several variables as one node -- e.g. a link for ``a_i`` and
        ``qdd_i``, as the papers' figures do (:func:`link_group`); steps
        eliminating one group make one frame.
    keep_eliminated : bool
        Keep every node in every frame (for pictures drawn at fixed positions,
        :mod:`viz.layout`): the eliminated ones faded (state ``"eliminated"``),
        the current front's separator outlined (state ``"separator"``), and the
        fill of earlier frames in red, labelled ``fill, step N`` with the
        number of the frame that made it (edge attribute ``fill_step``).
    front : callable ``key -> front``, optional
        Show consecutive steps whose variables share a front as one frame
        (default ``group``) -- e.g. each embedded cluster as the one block
        C-ABA eliminates (:func:`cluster_fronts`).

    Returns
    -------
    list of Frame
        Numbered 1, 2, 3... and titled in words (:func:`step_title`).  In
        each frame's graph: node attribute ``state`` (``"frontal"`` or
        ``"remaining"``, and with ``keep_eliminated`` ``"separator"`` or
        ``"eliminated"``), edge attribute ``fill`` (True for the edges this
        frame's steps create, drawn in ``palette.fill``).
    """
    group = group or (lambda key: key)
    if keep_eliminated:
        return _frames_in_place(graph, plan, group, palette, front or group)
    current = graph.structure().interaction_graph()
    frames = []
    for number, (name, steps) in enumerate(_grouped_steps(plan, front or group), start=1):
        before = nx.Graph()
        for key in current:
            before.add_node(group(key))
        before.add_edges_from((group(u), group(v)) for u, v in current.edges if group(u) != group(v))
        created = set()
        for step in steps:
            current.add_edges_from(step.fill_edges)
            created |= {frozenset((group(u), group(v))) for u, v in step.fill_edges if group(u) != group(v)}
            current.remove_nodes_from(step.frontal)
        created -= {frozenset(e) for e in before.edges}
        frontal = {group(k) for s in steps for k in s.frontal}
        for node in before:
            is_frontal = node in frontal
            before.nodes[node].update(label=_label(node), state="frontal" if is_frontal else "remaining",
                                      style="filled", fillcolor=palette.frontal if is_frontal else "white")
        for u, v in before.edges:
            before.edges[u, v].update(fill=False)
        for edge in created:
            u, v = tuple(edge)
            before.add_edge(u, v, fill=True, color=palette.fill, style="bold")
        frames.append(Frame(step_title(number, steps, name), before, tuple(steps), number))
    return frames


def _frames_in_place(graph, plan, group: Callable, palette: Palette, front: Callable) -> list:
    """:func:`elimination_frames` with every node kept (see ``keep_eliminated`` there)."""
    start = graph.structure().interaction_graph()
    nodes = list(dict.fromkeys(group(k) for k in start))
    edges = {frozenset((group(u), group(v))): None for u, v in start.edges if group(u) != group(v)}  # -> fill step
    eliminated, frames = set(), []
    for number, (name, steps) in enumerate(_grouped_steps(plan, front), start=1):
        frontal = {group(k) for s in steps for k in s.frontal}
        separator = {group(k) for s in steps for k in s.separator} - frontal - eliminated
        created = {}
        for step in steps:
            for u, v in step.fill_edges:
                edge = frozenset((group(u), group(v)))
                if len(edge) == 2 and edge not in edges and edge not in created:
                    created[edge] = number
        view = nx.Graph()
        for node in nodes:
            state = ("eliminated" if node in eliminated else "frontal" if node in frontal
                     else "separator" if node in separator else "remaining")
            view.add_node(node, label=_label(node), state=state, **_node_style(state, palette))
        for edge, made in {**edges, **created}.items():
            u, v = tuple(edge)
            view.add_edge(u, v, fill=edge in created, fill_step=made,
                          **_edge_style(made, edge in created, u in eliminated or v in eliminated, palette))
        frames.append(Frame(step_title(number, steps, name), view, tuple(steps), number))
        edges.update(created)
        eliminated |= frontal
    return frames


def _edge_style(made: int | None, new: bool, faded: bool, palette: Palette) -> dict:
    """An edge of a frame in place: faded once an end is eliminated; fill in red, labelled with its step
    (bold in the frame that makes it)."""
    if faded:
        return {"color": palette.eliminated}
    if made is None:
        return {}
    return {"color": palette.fill, "style": "bold" if new else "solid", "label": fill_label(made),
            "fontcolor": palette.fill, "fontsize": "11"}


def _node_style(state: str, palette: Palette) -> dict:
    return {
        "frontal": {"style": "filled", "fillcolor": palette.frontal},
        "separator": {"style": "filled,bold", "fillcolor": "white", "color": palette.separator, "penwidth": "2.5"},
        "remaining": {"style": "filled", "fillcolor": "white"},
        "eliminated": {"style": "filled,dashed", "fillcolor": palette.eliminated, "color": "gray70",
                       "fontcolor": "gray55"},
    }[state]


def step_legend(across: bool = False, palette: Palette = PALETTE) -> str:
    """An HTML-like DOT label saying what the colours of an elimination frame mean, one entry a row (one
    row with ``across``, for the overview sheet); :func:`viz.dot.to_dot` and :func:`viz.dot.overview_dot`
    pin it beside the drawing (``legend=``)."""
    line = (f'<TABLE BORDER="0" CELLPADDING="0" CELLSPACING="0"><TR><TD BGCOLOR="{palette.fill}" WIDTH="24" '
            f'HEIGHT="3" FIXEDSIZE="TRUE"></TD></TR></TABLE>')
    entries = [
        (f'BGCOLOR="{palette.frontal}" BORDER="1"', "", "being eliminated in this step (the front)"),
        (f'BGCOLOR="white" COLOR="{palette.separator}" BORDER="3"', "", "its separator: what the front is coupled to"),
        ("", line, "fill: a coupling made by the step it names"),
        (f'BGCOLOR="{palette.eliminated}" COLOR="gray70" BORDER="1" STYLE="dashed"', "", "already eliminated"),
        ('BGCOLOR="white" BORDER="1"', "", "still to eliminate"),
    ]
    cells = [f'<TD WIDTH="24" {swatch}>{inside}</TD><TD ALIGN="LEFT">{html.escape(text)}</TD>'
             for swatch, inside, text in entries]
    if across:
        rows = ["<TR><TD><B>legend:</B></TD>" + "".join(cells) + "</TR>"]
    else:
        rows = ['<TR><TD COLSPAN="2" ALIGN="LEFT"><B>legend</B></TD></TR>'] + [f"<TR>{c}</TR>" for c in cells]
    return f'<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="3" CELLPADDING="2">{"".join(rows)}</TABLE>>'


def link_group(key: Hashable):
    """Display group of a GPLC key: the link of ``a_i`` and ``qdd_i``; the multiplier itself."""
    if isinstance(key, (LinkAcceleration, JointAcceleration)):
        return key.name
    return key


CLIQUE_TREE_KEY = ("clique tree: each box is one elimination, the variables it eliminates | the separator it "
                   "leaves them conditioned on; below, their dimensions (eliminated + separator); an arrow points to the "
                   "box that eliminates the first separator variable")


def clique_tree_view(plan) -> nx.DiGraph:
    """The elimination (clique) tree: a node per plan step, a record of two fields, frontal | separator (their
    dimensions below: ``eliminated + separator``; :data:`CLIQUE_TREE_KEY` says so on the picture).

    Node attributes: ``fields`` (the two texts, drawn by :func:`viz.dot.record_label`), ``label`` (the same
    as one text), ``frontal`` and ``separator`` (the keys).
    """
    view = nx.DiGraph()
    tree = plan.tree()
    for node, data in tree.nodes(data=True):
        frontal = ", ".join(_label(k) for k in data["frontal"])
        separator = ", ".join(_label(k) for k in data["separator"]) or "-"
        dims = f"{data['frontal_dim']} eliminated + {data['separator_dim']} separator"
        fields = (frontal, f"{separator}\n{dims}")
        view.add_node(node, label=" | ".join(fields), fields=fields, shape="record", frontal=data["frontal"],
                      separator=data["separator"])
    view.add_edges_from(tree.edges)
    return view


VARIABLE_NAMES = {"link": "link acceleration a", "joint": "joint acceleration qdd", "multiplier": "multiplier λ",
                  "cluster": "cluster coordinates y (qdd = G y + g)", "min": "variable", "max": "multiplier (max)"}


def legend_dot(view: nx.Graph, palette: Palette = PALETTE) -> str:
    """A DOT legend node for a factor-graph view: one row per variable and factor kind the view shows, its
    colour and what it is.  One node with a table label, so that every layout engine (``neato`` too, which
    ignores clusters) keeps it apart from the graph."""
    kinds = {data["kind"]: node for node, data in view.nodes(data=True)}
    rows = ['<TR><TD COLSPAN="2"><B>legend</B></TD></TR>']
    for kind in (k for k in palette.variable if k in kinds and not isinstance(kinds[k], FactorNode)):
        shape, color = palette.variable[kind]
        rows.append(f'<TR><TD BGCOLOR="{color}" WIDTH="18"></TD><TD ALIGN="LEFT">{VARIABLE_NAMES[kind]} ({shape})</TD></TR>')
    for kind in (k for k in palette.factor if k in kinds and isinstance(kinds[k], FactorNode)):
        rows.append(f'<TR><TD BGCOLOR="{palette.factor[kind]}" WIDTH="18"></TD><TD ALIGN="LEFT">{kind} factor '
                    f'(small box)</TD></TR>')
    table = "".join(rows)
    return f'  legend [shape=plaintext fontsize=9 label=<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="2">{table}</TABLE>>]'


def interaction_with_fill(graph, plan) -> nx.Graph:
    """The interaction graph with every fill edge of the plan (attribute ``fill``): the chordal completion."""
    view = graph.structure().interaction_graph()
    for u, v in view.edges:
        view.edges[u, v]["fill"] = False
    for u, v in plan.fill_edges:
        view.add_edge(u, v, fill=True, color=PALETTE.fill)
    for node in view:
        view.nodes[node]["label"] = _label(node)
    return view


__all__ = [
    "CLIQUE_TREE_KEY", "ClusterFront", "Frame", "PALETTE", "Palette", "clique_tree_view", "cluster_fronts",
    "constraint_label", "elimination_frames", "elimination_words", "factor_graph_view", "factor_kind", "fill_label",
    "interaction_with_fill", "joint_label", "legend_dot", "link_group", "mechanism_view", "step_legend", "step_title",
    "variable_kind",
]
