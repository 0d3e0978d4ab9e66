"""LQR on graphs (000 Sec. VII-A): the Riccati recursion is bucket elimination.

* Finite horizon: states x_0..x_T and controls u_0..u_{T-1}; dynamics
  x_{k+1} = A x_k + B u_k as hard factors, costs 1/2 x'Qx and 1/2 u'Ru as
  quadratic factors.  Eliminating backwards (x_T, u_{T-1}, x_{T-1}, ...) is
  the Riccati recursion; the feedback gain K_k (u_k = -K_k x_k) is read by
  re-solving with the initial state set to each unit vector -- one batched
  re-solve, no refactorization.  For a long horizon K_0 tends to the gain of
  ``scipy.linalg.solve_discrete_are``, printed beside it.
* Periodic: x_0 = x_T closes the chain into a loop (a tracking cost makes the
  solution nontrivial); elimination handles the cycle with a little fill.
  It and the scenario tree are printed with their difference from the dense
  KKT solve.
* Scenario tree: after the first stage the dynamics branch into scenarios
  with different A; the graph is a tree and elimination runs leaves to root.

    python examples/lqr.py
"""
from __future__ import annotations

import numpy as np
import scipy.linalg

import elimination
from factorgraph import FactorGraph, LinearEquality, Quadratic, Variable

A = np.array([[1.0, 0.1], [0.0, 1.0]])
B = np.array([[0.005], [0.1]])
Q = np.diag([1.0, 0.1])
R = np.array([[0.01]])


def x(k, branch=None):
    return ("x", k) if branch is None else ("x", branch, k)


def u(k, branch=None):
    return ("u", k) if branch is None else ("u", branch, k)


def finite_horizon(T: int, x_init=(1.0, 0.0)) -> tuple:
    """The LQR graph and the index of the initial-state factor."""
    graph = FactorGraph()
    for k in range(T + 1):
        graph.add_variable(Variable(x(k), 2))
        graph.add(Quadratic([x(k)], Q))
    for k in range(T):
        graph.add_variable(Variable(u(k), 1))
        graph.add(Quadratic([u(k)], R))
        graph.add(LinearEquality([x(k + 1), x(k), u(k)], [np.eye(2), -A, -B], np.zeros(2)))
    initial = graph.add(LinearEquality([x(0)], [np.eye(2)], np.asarray(x_init, dtype=float)))
    return graph, initial


def backward(T: int) -> elimination.Ordering:
    """x_T, u_{T-1}, x_{T-1}, ..., u_0, x_0: the Riccati order."""
    keys = [x(T)] + [k for t in reversed(range(T)) for k in (u(t), x(t))]
    return elimination.Ordering.from_keys(keys)


def gains(T: int) -> np.ndarray:
    """K_0 of the T-step problem: u_0 = -K_0 x_0, from one batched re-solve."""
    graph, initial = finite_horizon(T)
    fact = elimination.factorize(graph, elimination.analyze(graph, backward(T)))
    unit_states = fact.solve(b={initial: np.eye(2)})  # batch of two initial states
    return -unit_states[u(0)].T


def periodic(T: int) -> tuple:
    """Track a periodic reference with x_0 = x_T: the chain closes into a cycle."""
    graph = FactorGraph()
    reference = np.stack([np.sin(2 * np.pi * np.arange(T + 1) / T), np.zeros(T + 1)], axis=1)
    for k in range(T + 1):
        graph.add_variable(Variable(x(k), 2))
        graph.add(Quadratic([x(k)], Q, Q @ reference[k]))
    for k in range(T):
        graph.add_variable(Variable(u(k), 1))
        graph.add(Quadratic([u(k)], R))
        graph.add(LinearEquality([x(k + 1), x(k), u(k)], [np.eye(2), -A, -B], np.zeros(2)))
    graph.add(LinearEquality([x(T), x(0)], [np.eye(2), -np.eye(2)], np.zeros(2)))  # the loop
    return graph


def scenario_tree(branches: int = 3, T: int = 10) -> FactorGraph:
    """One first-stage decision, then ``branches`` scenarios with perturbed dynamics."""
    graph = FactorGraph()
    graph.add_variable(Variable(x(0), 2))
    graph.add_variable(Variable(u(0), 1))
    graph.add(Quadratic([u(0)], R))
    graph.add(LinearEquality([x(0)], [np.eye(2)], np.array([1.0, 0.0])))
    for s in range(branches):
        A_s = A + 0.05 * s * np.array([[0.0, 1.0], [0.0, 0.0]])
        previous_x, previous_u = x(0), u(0)
        for k in range(1, T + 1):
            graph.add_variable(Variable(x(k, s), 2))
            graph.add(Quadratic([x(k, s)], Q / branches))
            graph.add(LinearEquality([x(k, s), previous_x, previous_u], [np.eye(2), -A_s, -B], np.zeros(2)))
            if k < T:
                graph.add_variable(Variable(u(k, s), 1))
                graph.add(Quadratic([u(k, s)], R / branches))
            previous_x, previous_u = x(k, s), u(k, s)
    return graph


def riccati_limit() -> np.ndarray:
    """The infinite-horizon gain from ``scipy.linalg.solve_discrete_are``: the reference K_0 tends to."""
    P = scipy.linalg.solve_discrete_are(A, B, Q, R)
    return np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)


def dense_difference(graph: FactorGraph, solution: dict) -> float:
    """Largest difference between ``solution`` and the dense KKT solve of ``graph`` (the reference)."""
    dense = graph.dense_solve()
    return max(float(np.max(np.abs(solution[k] - dense[k]))) for k in dense)


def main(T: int = 200) -> dict:
    K, K_inf = gains(T), riccati_limit()
    print(f"K_0 of a {T}-step LQR from elimination: {K.round(4)}; scipy.linalg.solve_discrete_are's gain "
          f"{K_inf.round(4)}, max difference {np.max(np.abs(K - K_inf)):.1e}")
    cyc = periodic(40)
    plan = elimination.analyze(cyc, elimination.min_fill(cyc))
    cyc_solution = elimination.solve(cyc, elimination.min_fill(cyc))
    print(f"periodic LQR (40 steps, x_0 = x_T): fill edges {len(plan.fill_edges)}, max front {plan.max_front}; "
          f"against the dense KKT solve: max difference {dense_difference(cyc, cyc_solution):.1e}")
    tree = scenario_tree()
    tree_plan = elimination.analyze(tree, elimination.min_degree(tree))
    tree_solution = elimination.solve(tree, elimination.min_degree(tree))
    print(f"scenario tree ({len(tree.keys)} variables): fill edges {len(tree_plan.fill_edges)}, "
          f"first control {tree_solution[u(0)].round(4)}; against the dense KKT solve: max difference "
          f"{dense_difference(tree, tree_solution):.1e}")
    return {"K": K, "periodic": cyc, "periodic_plan": plan, "tree": tree, "tree_solution": tree_solution}


if __name__ == "__main__":
    main()
