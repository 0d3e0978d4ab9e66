"""Regenerate the README's pictures (SVG) from the built-ins and the examples.

    python docs/make_pictures.py        (needs Graphviz's dot and the robots extra)
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import elimination
import mechanics
from mechanics.pinocchio_io import allegro_grasp, from_pinocchio
from viz.dot import overview_dot, render, to_dot
from viz.gallery import with_subgraph
from viz.layout import mechanism_positions
from viz.page import elimination_page
from viz.views import (CLIQUE_TREE_KEY, clique_tree_view, elimination_frames, factor_graph_view, interaction_with_fill,
                       legend_dot, link_group, mechanism_view, step_legend)

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "images"


def example(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def picture(view_dot: str, name: str, fixed: bool = False) -> None:
    render(view_dot, OUT / name, ("svg",), fixed=fixed)
    (OUT / f"{name}.dot").unlink()  # keep the SVGs only


def main() -> None:
    fig4 = mechanics.models.fig4()
    picture(to_dot(mechanism_view(fig4), rankdir="TB"), "fig4_mechanism")
    positions = mechanism_positions(fig4, link_group)  # one layout: the two orderings side by side
    for algorithm in ("lcaba", "proxbbo"):
        graph, plan = mechanics.algorithm_plan(fig4, algorithm)
        frames = elimination_frames(graph, plan, group=link_group, keep_eliminated=True)
        sheet = overview_dot(frames, columns=4, positions=positions, legend=step_legend(across=True))
        picture(sheet, f"fig4_{algorithm}", fixed=True)
    plans = {name: mechanics.algorithm_plan(fig4, name)[1] for name in ("lcaba", "proxbbo", "pv", "proxltl", "min_fill")}
    (ROOT / "docs" / "fig4_elimination.html").write_text(
        elimination_page(plans, "000 Fig. 4: elimination step by step", positions, link_group))
    graph, plan = mechanics.algorithm_plan(fig4, "lcaba")
    picture(to_dot(clique_tree_view(plan), rankdir="BT", label=CLIQUE_TREE_KEY, fontsize=10), "fig4_lcaba_clique_tree")
    four_bar = mechanics.models.four_bar()
    graph, _ = mechanics.algorithm_plan(four_bar, "proxbbo")
    view = factor_graph_view(graph)
    picture(with_subgraph(to_dot(view, layout="neato", overlap="false"), legend_dot(view)), "four_bar_factor_graph")
    picture(to_dot(mechanism_view(mechanics.models.digit_leg()), rankdir="TB"), "digit_leg_mechanism")
    picture(to_dot(mechanism_view(four_bar), rankdir="TB"), "four_bar_mechanism")
    for hands, name in ((1, "allegro_cube_mechanism"), (2, "two_hands_cube_mechanism")):
        model, constraints, _ = allegro_grasp(hands)
        picture(to_dot(mechanism_view(from_pinocchio(model, constraints)), rankdir="LR"), name)
    kalman = example("kalman_smoother")
    picture(to_dot(factor_graph_view(kalman.smoother_graph(kalman.problem(steps=6))), rankdir="LR"), "kalman_factor_graph")
    pose = example("pose_graph")
    graph = pose.pose_graph(pose.measurements())
    plan = elimination.analyze(graph, elimination.min_fill(graph))
    picture(to_dot(interaction_with_fill(graph, plan), layout="circo"), "pose_graph_fill")
    lqr = example("lqr")
    cycle = lqr.periodic(12)
    plan = elimination.analyze(cycle, elimination.min_fill(cycle))
    picture(to_dot(interaction_with_fill(cycle, plan), layout="circo"), "lqr_periodic_fill")
    example("simulate_loops").main(["--seconds", "2", "--plot", str(OUT / "simulate_loops_gaps.svg")])  # (minutes)
    print(f"pictures written to {OUT}")


if __name__ == "__main__":
    sys.exit(main())
