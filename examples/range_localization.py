"""Gauss-Newton on the array seam: a robot's planar path from odometry and ranges to three beacons.

Positions p_0..p_T; a prior on p_0, odometry p_{k+1} - p_k = u_k and, at each
step, the range |p_k - beacon_j| to each of three beacons, all with noise.  The
ranges make the problem nonlinear: each Gauss-Newton iteration writes every
term's J'J and -J'r into the plan's workspaces (elimination.Layout), then
factorizes and solves there (elimination.factorize_arrays) -- one plan for every
iteration and for a batch of eight noisy runs solved side by side
(elimination.drive with elimination.GaussNewton).  It prints the answer beside
scipy.optimize.least_squares on each run.

    python examples/range_localization.py
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares

import elimination

BEACONS = np.array([[0.0, 0.0], [10.0, 0.0], [5.0, 8.0]])
SIGMA_ODOMETRY, SIGMA_RANGE, SIGMA_PRIOR = 0.05, 0.1, 0.01


def problem(steps: int = 30, runs: int = 8, seed: int = 0) -> dict:
    """A path along a circle, noisy odometry and ranges, ``runs`` noise draws (the batch)."""
    rng = np.random.default_rng(seed)
    angle = np.linspace(0.0, 1.5 * np.pi, steps + 1)
    path = np.stack([5.0 + 3.0 * np.cos(angle), 3.0 + 3.0 * np.sin(angle)], axis=-1)
    u = np.diff(path, axis=0) + SIGMA_ODOMETRY * rng.normal(size=(runs, steps, 2))
    ranges = np.linalg.norm(path[:, None] - BEACONS, axis=-1) + SIGMA_RANGE * rng.normal(size=(runs, steps + 1, 3))
    start = path[0] + SIGMA_PRIOR * rng.normal(size=(runs, 2))
    return {"path": path, "u": u, "ranges": ranges, "start": start}


def terms(p: dict) -> list:
    """Whitened residuals ``(keys, function)``: ``function(*values) -> (r, [J per key])``."""
    runs, eye = p["u"].shape[0], np.eye(2)
    out = [((0,), lambda x: ((x - p["start"]) / SIGMA_PRIOR, [np.broadcast_to(eye / SIGMA_PRIOR, (runs, 2, 2))]))]
    for k in range(p["u"].shape[1]):
        out.append(((k, k + 1), lambda a, b, k=k: ((b - a - p["u"][:, k]) / SIGMA_ODOMETRY,
                                                   [np.broadcast_to(-eye / SIGMA_ODOMETRY, (runs, 2, 2)),
                                                    np.broadcast_to(eye / SIGMA_ODOMETRY, (runs, 2, 2))])))
    for k in range(p["ranges"].shape[1]):
        def ranged(x, k=k):
            diff = x[:, None, :] - BEACONS  # (runs, 3, 2)
            dist = np.linalg.norm(diff, axis=-1)
            return (dist - p["ranges"][:, k]) / SIGMA_RANGE, [diff / dist[..., None] / SIGMA_RANGE]
        out.append(((k,), ranged))
    return out


def dead_reckoning(p: dict) -> np.ndarray:
    """The odometry integrated from the prior: the starting guess ``(runs, steps + 1, 2)``."""
    return np.concatenate([p["start"][:, None], p["start"][:, None] + np.cumsum(p["u"], axis=1)], axis=1)


def scipy_answer(p: dict, run: int) -> np.ndarray:
    """The same problem for one run through scipy.optimize.least_squares (an independent solver)."""
    steps = p["u"].shape[1]

    def residual(z):
        x = z.reshape(steps + 1, 2)
        return np.concatenate([(x[0] - p["start"][run]) / SIGMA_PRIOR,
                               ((x[1:] - x[:-1] - p["u"][run]) / SIGMA_ODOMETRY).ravel(),
                               ((np.linalg.norm(x[:, None] - BEACONS, axis=-1) - p["ranges"][run]) / SIGMA_RANGE).ravel()])

    def jacobian(z):  # dense, row by row as residual stacks them
        x = z.reshape(steps + 1, 2)
        J = np.zeros((2 + 2 * steps + 3 * (steps + 1), z.size))
        J[:2, :2] = np.eye(2) / SIGMA_PRIOR
        for k in range(steps):
            rows = slice(2 + 2 * k, 4 + 2 * k)
            J[rows, 2 * k : 2 * k + 2], J[rows, 2 * k + 2 : 2 * k + 4] = -np.eye(2) / SIGMA_ODOMETRY, np.eye(2) / SIGMA_ODOMETRY
        diff = x[:, None] - BEACONS
        unit = diff / np.linalg.norm(diff, axis=-1, keepdims=True) / SIGMA_RANGE
        for k in range(steps + 1):
            J[2 + 2 * steps + 3 * k : 5 + 2 * steps + 3 * k, 2 * k : 2 * k + 2] = unit[k]
        return J

    guess = dead_reckoning(p)[run].ravel()
    return least_squares(residual, guess, jacobian, method="lm", xtol=1e-15, ftol=1e-15,
                         gtol=1e-15).x.reshape(steps + 1, 2)


def main(steps: int = 30, runs: int = 8) -> dict:
    p = problem(steps, runs)
    guess = dead_reckoning(p)
    gn = elimination.GaussNewton({k: guess[:, k] for k in range(steps + 1)}, terms(p), tol=1e-12)
    plan = elimination.analyze(gn.graph, elimination.resolve_ordering(gn.graph, "min_fill"))
    out = elimination.drive(plan, gn)
    path = np.stack([gn.x[k] for k in range(steps + 1)], axis=1)  # (runs, steps + 1, 2)
    theirs = np.stack([scipy_answer(p, run) for run in range(runs)])
    print(f"{runs} runs of {steps + 1} positions: converged {bool(out.converged.all())} in "
          f"{int(out.iterations.max())} Gauss-Newton iterations, {out.factorizations} factorizations of the batch")
    print(f"error of the path: dead reckoning {np.max(np.abs(guess - p['path'])):.3f}, "
          f"Gauss-Newton {np.max(np.abs(path - p['path'])):.3f}")
    print(f"scipy's least_squares on each run, max difference {np.max(np.abs(path - theirs)):.1e}")
    return {"problem": p, "path": path, "driven": out, "plan": plan}


if __name__ == "__main__":
    main()
