"""The ``gaussgraph`` command line."""
from __future__ import annotations

import argparse
import sys

import numpy as np

import elimination
from factorgraph import FactorGraph, LeastSquares, Variable


def grid_graph(rows: int, cols: int, seed: int = 0) -> FactorGraph:
    """A 2-D grid of 2-d variables with random pairwise least-squares factors."""
    rng = np.random.default_rng(seed)
    graph = FactorGraph()
    for r in range(rows):
        for c in range(cols):
            graph.add_variable(Variable((r, c), 2))
            graph.add(LeastSquares([(r, c)], [np.eye(2)], rng.normal(size=2)))
    for r in range(rows):
        for c in range(cols):
            for nr, nc in ((r + 1, c), (r, c + 1)):
                if nr < rows and nc < cols:
                    graph.add(LeastSquares([(r, c), (nr, nc)], [np.eye(2), -np.eye(2)], rng.normal(size=2)))
    return graph


def demo(args) -> int:
    graph = grid_graph(args.rows, args.cols)
    reference = graph.dense_solve()
    print(f"{args.rows}x{args.cols} grid of 2-d variables: {graph}")
    print(f"{'ordering':<12}{'flops':>12}{'fill edges':>12}{'max front':>11}{'max |x - dense|':>18}")
    for name, heuristic in elimination.ORDERINGS.items():
        plan = elimination.analyze(graph, heuristic(graph))
        x = elimination.factorize(graph, plan).solve()
        error = max(np.max(np.abs(x[k] - reference[k])) for k in reference)
        print(f"{name:<12}{plan.flops:>12.0f}{len(plan.fill_edges):>12}{plan.max_front:>11}{error:>18.2e}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gaussgraph",
        description="Solve Gaussian factor graphs by bucket elimination and compare elimination orderings.",
    )
    sub = parser.add_subparsers(dest="command")
    p_demo = sub.add_parser("demo", help="compare orderings on a grid-shaped factor graph (the default)")
    p_demo.add_argument("--rows", type=int, default=6, help="grid rows (default 6)")
    p_demo.add_argument("--cols", type=int, default=6, help="grid columns (default 6)")
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["demo"] + (argv or []))
    if args.rows < 1 or args.cols < 1:
        parser.error("--rows and --cols must be positive")
    return demo(args)


if __name__ == "__main__":
    sys.exit(main())
