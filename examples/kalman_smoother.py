"""A linear Kalman smoother is bucket elimination on a chain.

States x_0..x_T of a constant-velocity model, noisy position measurements.
The factor graph: a prior on x_0, one dynamics factor per step and one
measurement factor per state (all LeastSquares).  Eliminating x_0, x_1, ...
in order is the forward filter; back-substitution is the Rauch-Tung-Striebel
backward pass.  It prints the dense solve of the same problem beside its
answer; the test compares with an RTS smoother written out by hand.

    python examples/kalman_smoother.py
"""
from __future__ import annotations

import numpy as np

import elimination
from factorgraph import FactorGraph, LeastSquares, Variable


def problem(steps: int = 50, dt: float = 0.1, seed: int = 0) -> dict:
    """A constant-velocity system and simulated position measurements."""
    rng = np.random.default_rng(seed)
    A = np.array([[1.0, dt], [0.0, 1.0]])
    C = np.array([[1.0, 0.0]])
    Q = np.diag([1e-4, 1e-2])
    R = np.array([[0.05]])
    m0, P0 = np.array([0.0, 1.0]), np.eye(2)
    x, ys = m0.copy(), []
    for _ in range(steps + 1):
        ys.append(C @ x + rng.normal(scale=np.sqrt(R[0, 0]), size=1))
        x = A @ x + rng.multivariate_normal(np.zeros(2), Q)
    return {"A": A, "C": C, "Q": Q, "R": R, "m0": m0, "P0": P0, "ys": np.array(ys)}


def smoother_graph(p: dict) -> FactorGraph:
    graph = FactorGraph()
    T = len(p["ys"]) - 1
    for k in range(T + 1):
        graph.add_variable(Variable(("x", k), 2))
    graph.add(LeastSquares([("x", 0)], [np.eye(2)], p["m0"], weight=np.linalg.inv(p["P0"])))
    for k in range(T):
        graph.add(LeastSquares([("x", k), ("x", k + 1)], [-p["A"], np.eye(2)], np.zeros(2), weight=np.linalg.inv(p["Q"])))
    for k, y in enumerate(p["ys"]):
        graph.add(LeastSquares([("x", k)], [p["C"]], y, weight=np.linalg.inv(p["R"])))
    return graph


def main(steps: int = 50) -> dict:
    p = problem(steps)
    graph = smoother_graph(p)
    ordering = elimination.natural(graph)  # x_0 first: the forward filter
    plan = elimination.analyze(graph, ordering)
    means = elimination.factorize(graph, plan).solve()
    smoothed = np.array([means[("x", k)] for k in range(steps + 1)])
    print(f"{steps + 1} states, {len(graph)} factors, fill edges {len(plan.fill_edges)} (a chain: none)")
    dense = graph.dense_solve()  # the reference: one dense solve of the same least-squares problem
    difference = max(float(np.max(np.abs(means[k] - dense[k]))) for k in dense)
    print(f"smoothed final state {smoothed[-1].round(4)}, last measurement {p['ys'][-1].round(4)}; "
          f"dense solve's final state {dense[('x', steps)].round(4)}, max difference over all states {difference:.1e}")
    return {"problem": p, "smoothed": smoothed, "plan": plan, "graph": graph}


if __name__ == "__main__":
    main()
