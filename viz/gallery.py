"""Every picture of a mechanism under an algorithm, written to a folder."""
from __future__ import annotations

from pathlib import Path

from mechanics import ALGORITHMS, algorithm_plan

from .compare import OnStep, Step
from .dot import overview_dot, render, to_dot
from .layout import mechanism_positions
from .views import (
    CLIQUE_TREE_KEY, clique_tree_view, cluster_fronts, elimination_frames, factor_graph_view, legend_dot, link_group,
    mechanism_view, step_legend,
)


SPLINE_EDGES = 60  # frames with more edges are drawn straight: routing around nodes costs seconds per dense frame


def with_subgraph(source: str, subgraph: str) -> str:
    """DOT ``source`` with ``subgraph`` (DOT statements) added before its closing brace."""
    head, _, _ = source.rstrip().rpartition("}")
    return f"{head}{subgraph}\n}}\n"


def render_gallery(mech, algorithm: str, out_dir, formats=("svg",), mu: float = 1e6, warn=None,
                   on_step: OnStep | None = None, columns: int | None = None, drawn: set | None = None) -> list:
    """Write the mechanism topology, its factor graph (with a legend), the elimination frames (one per
    link or multiplier block, files ``step_01``, ``step_02``... numbered as their titles, each with a legend
    of its colours, plus an overview sheet of ``columns`` frames per row: by default as many as fit
    4,000 px) and the clique tree; return the paths written.

    Every frame of every algorithm of one mechanism is drawn at the same node positions
    (:mod:`viz.layout`): eliminated variables stay in place, faded; fill edges stay red, labelled with
    the step that made them; the front in gold, its separator outlined.  ``drawn`` (a set of paths, kept
    across calls) skips the pictures an earlier algorithm drew: the mechanism, a policy's factor graph.

    ``on_step``, if given, is told (a :class:`viz.compare.Step`) before the plan is made and
    before each picture is drawn (``"drawing"``, ``index`` of ``total`` pictures).
    """
    on_step = on_step or (lambda step: None)
    out = Path(out_dir)
    algo = ALGORITHMS[algorithm]
    on_step(Step("planning", algorithm))
    graph, plan = algorithm_plan(mech, algorithm)
    frames = elimination_frames(graph, plan, group=link_group, keep_eliminated=True, front=cluster_fronts(mech, plan))
    positions = mech.derived.get(("picture layout",), lambda: mechanism_positions(mech, link_group))
    factor_graph = factor_graph_view(graph)
    pictures = [
        (to_dot(mechanism_view(mech), "mechanism", rankdir="TB"), out / "mechanism", warn),
        (with_subgraph(to_dot(factor_graph, "factor_graph", layout="neato", overlap="false"), legend_dot(factor_graph)),
         out / f"factor_graph_{algo.policy_label}", None),
    ]
    width = max(2, len(str(len(frames))))  # step_01...: the files sort as the steps run
    pictures += [(to_dot(frame.graph, f"step_{frame.number}", positions, step_legend(), label=frame.title,
                         labelloc="t", splines=str(frame.graph.number_of_edges() <= SPLINE_EDGES).lower()),
                  out / algorithm / f"step_{frame.number:0{width}d}", None, True) for frame in frames]
    pictures.append((overview_dot(frames, f"{algorithm}_overview", columns, positions, step_legend(across=True)),
                     out / algorithm / "overview", None, True))
    pictures.append((to_dot(clique_tree_view(plan), "clique_tree", rankdir="BT", label=CLIQUE_TREE_KEY, fontsize=10),
                     out / algorithm / "clique_tree", None))
    written = []
    drawn = set() if drawn is None else drawn  # the pictures several algorithms share: drawn once
    pictures = [picture for picture in pictures if picture[1] not in drawn]
    for k, (source, path, warn_to, *fixed) in enumerate(pictures):
        on_step(Step("drawing", algorithm, k, len(pictures)))
        written += render(source, path, formats, warn_to, fixed=bool(fixed))
        drawn.add(path)
    return written
