"""A 2-D linear pose graph with a loop closure, solved by elimination.

Poses (x, y, theta) around a square; odometry between consecutive poses and
one loop-closure measurement back to the start, all linear (the small-angle
pose graph of estimation textbooks).  The test solves the same graph with
GTSAM's JacobianFactors and compares.

    python examples/pose_graph.py
"""
from __future__ import annotations

import numpy as np

import elimination
from factorgraph import FactorGraph, LeastSquares, Variable

SIGMA_ODOMETRY = np.array([0.1, 0.1, 0.05])
SIGMA_LOOP = np.array([0.2, 0.2, 0.1])


def measurements(sides: int = 4, per_side: int = 5, seed: int = 0) -> dict:
    """Noisy relative displacements around a square, and a loop closure."""
    rng = np.random.default_rng(seed)
    truth = [np.zeros(3)]
    for side in range(sides):
        for _ in range(per_side):
            heading = side * np.pi / 2
            truth.append(truth[-1] + np.array([np.cos(heading), np.sin(heading), 0.0]))
    truth = np.array(truth)
    odometry = np.diff(truth, axis=0) + rng.normal(scale=SIGMA_ODOMETRY, size=(len(truth) - 1, 3))
    loop = truth[-1] - truth[0] + rng.normal(scale=SIGMA_LOOP)
    return {"truth": truth, "odometry": odometry, "loop": loop}


def pose_graph(m: dict) -> FactorGraph:
    graph = FactorGraph()
    n = len(m["truth"])
    for k in range(n):
        graph.add_variable(Variable(k, 3))
    graph.add(LeastSquares([0], [np.eye(3)], np.zeros(3), weight=1e6))  # anchor the first pose
    for k, delta in enumerate(m["odometry"]):
        graph.add(LeastSquares([k, k + 1], [-np.eye(3), np.eye(3)], delta, weight=np.diag(SIGMA_ODOMETRY**-2)))
    graph.add(LeastSquares([0, n - 1], [-np.eye(3), np.eye(3)], m["loop"], weight=np.diag(SIGMA_LOOP**-2)))
    return graph


def main() -> dict:
    m = measurements()
    graph = pose_graph(m)
    plan = elimination.analyze(graph, elimination.min_fill(graph))
    poses = elimination.factorize(graph, plan).solve()
    estimate = np.array([poses[k] for k in range(len(m["truth"]))])
    dead_reckoning = np.vstack([np.zeros(3), np.cumsum(m["odometry"], axis=0)])
    print(f"{len(estimate)} poses; the loop closure adds fill {len(plan.fill_edges)} edges under min_fill")
    def rms(poses):
        return float(np.sqrt(np.mean(np.sum((poses[:, :2] - m["truth"][:, :2]) ** 2, axis=1))))

    print(f"RMS position error: dead reckoning {rms(dead_reckoning):.3f}, with the loop closure {rms(estimate):.3f}")
    return {"measurements": m, "graph": graph, "estimate": estimate, "plan": plan}


if __name__ == "__main__":
    main()
