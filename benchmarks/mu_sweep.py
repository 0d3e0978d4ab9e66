"""The 000 Fig. 11 experiment: deviation from the exact solution as mu grows, per algorithm.

Scene: two Allegro hands holding a free cube, every fingertip contact listed
twice (redundant constraints, 000 Table II case 2).  Reference: the dense KKT
of Pinocchio's quantities solved by least squares (``qdd`` is unique).  Each
algorithm runs to convergence (tol 1e-12, up to 200 iterations), with and
without iterative refinement (``refine=0`` is the raw recursion, as in the
paper).

Run from the repository root (needs the test extra)::

    python benchmarks/mu_sweep.py --states 10 --json mu_sweep.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import elimination  # noqa: E402
import mechanics  # noqa: E402
from mechanics.pinocchio_io import from_pinocchio  # noqa: E402
from tests.mechanics.pinocchio_oracle import dense_reference, hands_and_cube, random_state  # noqa: E402

ALGORITHMS = ["lcaba", "proxbbo", "proxpv", "proxltl", "min_fill"]
MUS = [10.0**k for k in range(2, 11)]


def sweep(states: int, seed: int) -> list:
    model, cms, q = hands_and_cube(2, np.random.default_rng(seed))
    cms = list(cms) * 2
    mech = from_pinocchio(model, cms)
    rng = np.random.default_rng(seed + 1)
    samples = [random_state(model, rng)[1:] for _ in range(states)]
    references = [dense_reference(model, cms, q, v, tau)[0] for v, tau in samples]
    rows = []
    for algorithm in ALGORITHMS:
        for refine in (0, 1):
            for mu in MUS:
                deviations, iterations, failures = [], [], 0
                for (v, tau), reference in zip(samples, references):
                    try:
                        result = mechanics.forward_dynamics(mech, q, v, tau, algorithm=algorithm, mu=mu, tol=1e-12,
                                                            max_iter=200, refine=refine)
                    except elimination.SingularProblemError:
                        failures += 1
                        continue
                    deviations.append(float(np.max(np.abs(result.qdd - reference)) / np.max(np.abs(reference))))
                    iterations.append(result.iterations)
                rows.append({
                    "algorithm": algorithm, "refine": refine, "mu": mu, "states": states, "singular": failures,
                    "median_deviation": float(np.median(deviations)) if deviations else None,
                    "max_deviation": float(np.max(deviations)) if deviations else None,
                    "median_iterations": float(np.median(iterations)) if iterations else None,
                })
    return rows


def print_table(rows: list) -> None:
    print(f"{'algorithm':<10}{'refine':>7}" + "".join(f"{mu:>10.0e}" for mu in MUS))
    for algorithm in ALGORITHMS:
        for refine in (0, 1):
            cells = []
            for mu in MUS:
                row = next(r for r in rows if (r["algorithm"], r["refine"], r["mu"]) == (algorithm, refine, mu))
                cells.append(f"{row['max_deviation']:>10.1e}" if row["singular"] == 0 else f"{'sing.' + str(row['singular']):>10}")
            print(f"{algorithm:<10}{refine:>7}" + "".join(cells))
    print("cells: max over states of |qdd - qdd_ref|_inf / |qdd_ref|_inf; 'sing.k': k states refused as singular")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=10, help="random states (default 10)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args()
    rows = sweep(args.states, args.seed)
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
