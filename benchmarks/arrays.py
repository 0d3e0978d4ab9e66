"""The refill loop of a Gauss-Newton iteration, through the FactorGraph seam and through the array seam.

Each iteration of a nonlinear least-squares solver has new Jacobians for every factor and the same
structure.  On the pose-graph-like graph of ``benchmarks/engine.py`` (1400 six-dimensional variables,
2999 factors; its Jacobians, right-hand sides and COLAMD-free ``min_fill`` plan), one iteration is timed
three ways, interleaved round by round (medians, ``OPENBLAS_NUM_THREADS=1``, the first round dropped):

* ``graph``: build the ``FactorGraph`` of ``LeastSquares`` factors from the arrays, ``elimination.factorize``
  and ``solve(refine=0)`` -- what a loop over factor objects costs;
* ``arrays``: ``H = A'A`` and ``g = A'b`` per factor type (one batched product each), written with
  ``Layout.set_matrices`` / ``set_linear``, then ``elimination.factorize_arrays`` and ``solve(refine=0)``;
* ``gtsam``: GTSAM's ``GaussianFactorGraph`` of ``JacobianFactor`` s built from the same arrays,
  ``eliminateSequential`` along its COLAMD order and ``optimize`` -- the reference a GTSAM user pays.

Also printed: the fill alone on each of our seams (the part the array seam removes), the elimination
alone (``factorize`` + ``solve``, equal on both), and the largest difference between the two seams'
solutions (the same kernels: 0).

Run from the repository root (needs the ``test`` extra for GTSAM)::

    python benchmarks/arrays.py --rounds 7 --json arrays.json
    python benchmarks/arrays.py --batch 16      # 16 graphs per iteration
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy is imported

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import elimination  # noqa: E402
from engine import gtsam_graph, numbers, ours_graph, structure  # noqa: E402


def _gram(A1: np.ndarray, A2: np.ndarray | None, b: np.ndarray) -> tuple:
    """``(H, g)`` of least-squares factors ``[A1 A2] x = b`` stacked ``(..., k, rows, n)``."""
    A = A1 if A2 is None else np.concatenate([A1, A2], axis=-1)
    At = np.swapaxes(A, -1, -2)
    return At @ A, (At @ b[..., None])[..., 0]


def arrays_iteration(layout, num: dict, element, kinds: tuple, Fw: np.ndarray, Lin: np.ndarray):
    """One refill + factorize + solve on the array seam; returns ``(X, seconds of the fill)``."""
    pick = (lambda a: a[element]) if element is not None else (lambda a: a)
    t0 = time.perf_counter()
    for indices, (A1, A2, b) in kinds:
        H, g = _gram(pick(num[A1]), pick(num[A2]) if A2 else None, pick(num[b]))
        layout.set_matrices(Fw, indices, H)
        layout.set_linear(Lin, indices, g)
    fill = time.perf_counter() - t0
    return elimination.factorize_arrays(layout, Fw).solve(Lin, refine=0), fill


def graph_iteration(plan, num: dict, element):
    """One build + factorize + solve on the FactorGraph seam; returns ``(values, seconds of the build)``."""
    t0 = time.perf_counter()
    graph = ours_graph(num, element)
    build = time.perf_counter() - t0
    return elimination.factorize(graph, plan).solve(refine=0), build


def gtsam_iteration(num: dict, element: int):
    import gtsam

    graph = gtsam_graph(num, element)
    return graph.eliminateSequential(gtsam.Ordering.ColamdGaussianFactorGraph(graph)).optimize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--batch", type=int, default=0, help="graphs per iteration (0: one graph)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    B = max(args.batch, 1)
    num = numbers(B, 0)
    element = None if args.batch else 0
    first = ours_graph(num, element)
    plan = elimination.analyze(first, elimination.resolve_ordering(first, "min_fill"))
    layout = plan.layout()
    priors, pairs = structure()
    kinds = ((np.arange(len(priors)), ("prior_A", None, "prior_b")),
             (len(priors) + np.arange(len(pairs)), ("between_A1", "between_A2", "between_b")))
    batch = (B,) if args.batch else ()
    Fw, Lin = layout.factor_workspace(batch), layout.linear_workspace(batch)
    times = {name: [] for name in ("graph", "arrays", "gtsam", "graph build", "arrays fill", "elimination")}
    diff = 0.0
    for r in range(args.rounds + 1):
        (values, build), t_graph = _timed(lambda: graph_iteration(plan, num, element))
        (X, fill), t_arrays = _timed(lambda: arrays_iteration(layout, num, element, kinds, Fw, Lin))
        t_gtsam = sum(_timed(lambda: gtsam_iteration(num, e))[1] for e in range(B)) if B <= 16 else np.nan
        diff = max(diff, max(float(np.max(np.abs(layout.value(X, k) - v))) for k, v in values.items()))
        if r:  # (the first round pays lazy imports and first touches)
            for name, t in (("graph", t_graph), ("arrays", t_arrays), ("gtsam", t_gtsam), ("graph build", build),
                            ("arrays fill", fill), ("elimination", t_arrays - fill)):
                times[name].append(t)
    med = {name: float(np.median(t)) * 1e3 for name, t in times.items()}
    print(f"one Gauss-Newton refill iteration, {B} graph(s) of 1400 x 6-d variables, 2999 factors; "
          f"medians of {args.rounds} rounds (ms)")
    print(f"{'seam':<14}{'ms':>10}{'/ arrays':>10}")
    for name in ("graph", "arrays", "gtsam", "graph build", "arrays fill", "elimination"):
        print(f"{name:<14}{med[name]:>10.2f}{med[name] / med['arrays']:>10.2f}")
    print(f"largest |difference| between the seams' solutions: {diff:.1e}")
    if args.json:
        args.json.write_text(json.dumps({"batch": B, "rounds": args.rounds, "median_ms": med, "max_diff": diff},
                                        indent=2))


def _timed(call):
    start = time.perf_counter()
    out = call()
    return out, time.perf_counter() - start


if __name__ == "__main__":
    main()
