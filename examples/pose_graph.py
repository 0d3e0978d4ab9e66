"""A 2-D linear pose graph with a loop closure, solved by elimination.

Poses (x, y, theta) around a square; odometry between consecutive poses and
one loop-closure measurement back to the start, all linear (the small-angle
pose graph of estimation textbooks).  The test solves the same graph with
GTSAM's JacobianFactors and compares.

What a loop closure buys is a statement about the estimator, not about one
noise draw: averaged over many draws it removes about a third of the position
error of dead reckoning, and the mean squared error it leaves is the trace of
the posterior covariance (the inverse of the graph's information matrix) --
both printed, both tested (2000 draws, one batched solve).  In a single draw it can lose: in draw 0 the
loop-closure measurement itself is off by 0.25 m (its sigma is 0.2 m) while
the odometry happened to drift by only 0.05 m, so pulling the loop shut makes
that draw worse (0.173 -> 0.245); about one draw in five is like that.

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
    for k in range(n - 1):  # measurements may carry a leading batch of draws
        graph.add(LeastSquares([k, k + 1], [-np.eye(3), np.eye(3)], m["odometry"][..., k, :],
                               weight=np.diag(SIGMA_ODOMETRY**-2)))
    graph.add(LeastSquares([0, n - 1], [-np.eye(3), np.eye(3)], m["loop"], weight=np.diag(SIGMA_LOOP**-2)))
    return graph


def rms_position_error(poses: np.ndarray, truth: np.ndarray) -> float:
    """Root mean square of the position errors, ``(n, 3)`` poses against the truth."""
    return float(np.sqrt(np.mean(np.sum((poses[:, :2] - truth[:, :2]) ** 2, axis=1))))


def estimate(m: dict) -> tuple:
    """``(poses (n, 3), plan)``: the pose graph of ``m`` solved along a min-fill order."""
    graph = pose_graph(m)
    plan = elimination.analyze(graph, elimination.min_fill(graph))
    poses = elimination.factorize(graph, plan).solve()
    return np.array([poses[k] for k in range(len(m["truth"]))]), plan


def dead_reckoning(m: dict) -> np.ndarray:
    """The poses the odometry alone gives, ``(n, 3)``."""
    return np.vstack([np.zeros(3), np.cumsum(m["odometry"], axis=0)])


def over_draws(draws: int = 2000) -> dict:
    """Mean squared position error with and without the loop closure over ``draws`` noise draws (seeds
    ``0 .. draws-1``), and the fraction of draws the closure improves.  The draws share the graph's
    matrices, so they are one batched solve: one factorization, the measurements as a batch."""
    batch = [measurements(seed=seed) for seed in range(draws)]
    stacked = {key: np.stack([m[key] for m in batch]) for key in ("odometry", "loop")}
    truth = batch[0]["truth"]
    poses = elimination.solve(pose_graph({"truth": truth, **stacked}))
    mine = np.stack([poses[k] for k in range(len(truth))], axis=-2)  # (draws, n, 3)
    dead = np.concatenate([np.zeros((draws, 1, 3)), np.cumsum(stacked["odometry"], axis=-2)], axis=-2)

    def mse(p: np.ndarray) -> np.ndarray:
        return np.mean(np.sum((p[..., :2] - truth[:, :2]) ** 2, axis=-1), axis=-1)

    with_loop, without = mse(mine), mse(dead)
    return {"mse_loop": float(np.mean(with_loop)), "mse_dead_reckoning": float(np.mean(without)),
            "fraction_better": float(np.mean(with_loop < without))}


def posterior_position_mse(m: dict) -> float:
    """The expected mean squared position error of the estimate: the trace of the posterior covariance
    of the positions over the poses, from the dense information matrix of the graph."""
    covariance = np.linalg.inv(_information(m))  # the noise does not enter: the same for every draw
    n = len(m["truth"])
    positions = [3 * k + i for k in range(n) for i in (0, 1)]
    return float(np.trace(covariance[np.ix_(positions, positions)]) / n)


def _information(m: dict) -> np.ndarray:
    """The graph's information matrix ``sum A' W A``, assembled densely (poses in order, 3 each)."""
    graph = pose_graph(m)
    n = len(m["truth"])
    H = np.zeros((3 * n, 3 * n))
    for factor in graph.factors:
        cols = np.concatenate([np.arange(3 * k, 3 * k + 3) for k in factor.keys])
        H[np.ix_(cols, cols)] += factor.H
    return H


def main(draws: int = 2000) -> dict:
    m = measurements()
    poses, plan = estimate(m)
    dead = dead_reckoning(m)
    print(f"{len(poses)} poses; the loop closure adds fill {len(plan.fill_edges)} edges under min_fill")
    stats = over_draws(draws)
    expected = posterior_position_mse(m)
    print(f"RMS position error over {draws} noise draws: dead reckoning {np.sqrt(stats['mse_dead_reckoning']):.3f}, "
          f"with the loop closure {np.sqrt(stats['mse_loop']):.3f} (the posterior covariance says "
          f"{np.sqrt(expected):.3f}); better in {stats['fraction_better']:.0%} of the draws")
    print(f"draw 0: dead reckoning {rms_position_error(dead, m['truth']):.3f}, with the loop closure "
          f"{rms_position_error(poses, m['truth']):.3f} (its loop-closure measurement is off by "
          f"{np.linalg.norm(m['loop'][:2] - (m['truth'][-1, :2] - m['truth'][0, :2])):.2f} m)")
    return {"measurements": m, "graph": pose_graph(m), "estimate": poses, "plan": plan, "draws": stats,
            "posterior_mse": expected}


if __name__ == "__main__":
    main()
