"""Every picture of a mechanism under an algorithm, written to a folder."""
from __future__ import annotations

from pathlib import Path

from mechanics import ALGORITHMS, algorithm_plan

from .compare import OnStep, Step
from .dot import overview_dot, render, to_dot
from .views import clique_tree_view, elimination_frames, factor_graph_view, link_group, mechanism_view


def render_gallery(mech, algorithm: str, out_dir, formats=("svg",), mu: float = 1e6, warn=None,
                   on_step: OnStep | None = None) -> list:
    """Write the mechanism topology, its factor graph, the elimination frames (one per link or
    multiplier block, plus an overview sheet) and the clique tree; return the paths written.

    ``on_step``, if given, is told (a :class:`viz.compare.Step`) before the plan is made and
    before each picture is drawn (``"drawing"``, ``index`` of ``total`` pictures).
    """
    on_step = on_step or (lambda step: None)
    out = Path(out_dir)
    algo = ALGORITHMS[algorithm]
    on_step(Step("planning", algorithm))
    graph, plan = algorithm_plan(mech, algorithm)
    frames = elimination_frames(graph, plan, group=link_group)
    pictures = [
        (to_dot(mechanism_view(mech), "mechanism", rankdir="TB"), out / "mechanism", warn),
        (to_dot(factor_graph_view(graph), "factor_graph", layout="neato", overlap="false"),
         out / f"factor_graph_{algo.policy_label}", None),
    ]
    pictures += [(to_dot(frame.graph, f"frame_{k}", label=frame.title, layout="circo"), out / algorithm / f"frame_{k:02d}", None)
                 for k, frame in enumerate(frames)]
    pictures.append((overview_dot(frames, f"{algorithm}_overview"), out / algorithm / "overview", None))
    pictures.append((to_dot(clique_tree_view(plan), "clique_tree", rankdir="BT"), out / algorithm / "clique_tree", None))
    written = []
    for k, (source, path, warn_to) in enumerate(pictures):
        on_step(Step("drawing", algorithm, k, len(pictures)))
        written += render(source, path, formats, warn_to)
    return written
