"""Every picture of a mechanism under an algorithm, written to a folder."""
from __future__ import annotations

from pathlib import Path

from mechanics import ALGORITHMS, algorithm_plan

from .dot import overview_dot, render, to_dot
from .views import clique_tree_view, elimination_frames, factor_graph_view, link_group, mechanism_view


def render_gallery(mech, algorithm: str, out_dir, formats=("svg",), mu: float = 1e6, warn=None) -> list:
    """Write the mechanism topology, its factor graph, the elimination frames (one per link or
    multiplier block, plus an overview sheet) and the clique tree; return the paths written."""
    out = Path(out_dir)
    algo = ALGORITHMS[algorithm]
    graph, plan = algorithm_plan(mech, algorithm)
    written = render(to_dot(mechanism_view(mech), "mechanism", rankdir="TB"), out / "mechanism", formats, warn)
    written += render(to_dot(factor_graph_view(graph), "factor_graph", layout="neato", overlap="false"),
                      out / f"factor_graph_{algo.policy_label}", formats, None)
    frames = elimination_frames(graph, plan, group=link_group)
    for k, frame in enumerate(frames):
        written += render(to_dot(frame.graph, f"frame_{k}", label=frame.title, layout="circo"),
                          out / algorithm / f"frame_{k:02d}", formats, None)
    written += render(overview_dot(frames, f"{algorithm}_overview"), out / algorithm / "overview", formats, None)
    written += render(to_dot(clique_tree_view(plan), "clique_tree", rankdir="BT"), out / algorithm / "clique_tree", formats, None)
    return written
