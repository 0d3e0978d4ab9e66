"""The elimination engine alone against GTSAM, on a pose-graph-like linear Gaussian graph.

The graph (1400 six-dimensional variables in 200 loops, 2999 factors), built identically in our
``FactorGraph`` (``LeastSquares`` factors, i.e. ``Quadratic`` with ``H = A'A``, ``g = A'b``) and in a
GTSAM ``GaussianFactorGraph`` (``JacobianFactor`` with unit noise; a second copy made of
``HessianFactor`` s of the same Jacobians):

* variables ``k = 7 l + j`` for loop ``l = 0..199`` and position ``j = 0..6``, each of dimension 6;
* a prior on every variable (1400 factors): ``A = I / 10``, ``b ~ N(0, 1) / 10`` (sigma 10);
* odometry-like between-factors around each loop, ``j -> j + 1`` for ``j = 0..5`` and the loop
  closure ``6 -> 0`` (7 per loop, 1400 factors);
* a between-factor chaining loop ``l`` (its variable ``j = 3``) to loop ``l + 1`` (its ``j = 0``)
  (199 factors) -- 2999 factors in all;
* a between-factor on ``(i, k)`` has the Jacobian of a linearized SE(3) between-factor,
  ``[-Ad(T), I]`` with ``Ad(T) = [[R, 0], [[p]x R, R]]`` for a random rotation ``R`` (QR of a normal
  matrix) and ``p ~ N(0, 0.5^2)``, and ``b ~ N(0, 0.1^2)``; its rows are whitened by sigmas drawn
  uniformly in [0.05, 0.2] (so the noise model is unit on both sides).

Every batch element draws its own numbers; the structure is the same.  Element 0 is the single
graph.

Measured (medians over ``--repeat``, default 11, the two sides interleaved, ``OPENBLAS_NUM_THREADS=1``;
the first round is a warm-up and is dropped):

* symbolic: GTSAM's COLAMD ordering; our ``min_fill`` ordering; our ``analyze`` along the COLAMD
  order (fed to us with ``elimination.Ordering.from_keys``) and along ``min_fill`` (medians, and
  the first call apart: it pays lazy imports and caches);
* numeric, one graph: our ``factorize`` and ``Factorization.solve(refine=0)`` (``refine=1``, the
  default, also shown) against GTSAM ``eliminateSequential(ordering)`` (its default
  ``EliminatePreferCholesky``, which builds its ``VariableIndex`` inside the call) and
  ``GaussianBayesNet.optimize()``, along the same COLAMD order; GTSAM on the HessianFactor graph
  and with ``EliminateQR`` as further reference rows; plan flops (our estimate of the dense kernels)
  next to the times; the largest |difference| between our solution and GTSAM's;
* batched: 256 graphs of the same structure, ours as one ``FactorGraph`` whose arrays carry a leading
  batch dimension of 256, factorized and solved through the one COLAMD plan, against GTSAM looping
  over 256 graphs (each built outside the timing; ``eliminateSequential`` + ``optimize`` timed per
  graph and summed); per-graph time ratio; the largest |difference| over all 256 solutions.
  ``--repeat-batch`` repeats (default 3) after a first round, which is reported apart: it is the
  first to touch the memory of the batch's arrays, which on these virtual machines costs ~10 us a
  page the first time the machine hands it out (0.5 us later), a cost that GTSAM's small, recycled
  allocations do not meet.  Between our rounds GTSAM's loop runs for seconds, long enough for the
  machine to take back the memory our last round freed; ours is also timed alone, round after round
  (factorize + solve), as a loop of batched solves would run, and, in the interleaved rounds, as a loop
  that hands each factorization's memory to the next (``factorize(graph, plan, out=last)``: no fresh
  pages; the same numbers, bit for bit, checked here).

With the defaults a run takes about a minute on a 2-core machine.

Run from the repository root (needs the ``test`` extra for GTSAM)::

    python benchmarks/engine.py --json engine.json
    python benchmarks/engine.py --batch 16 --repeat 3     # a quicker look
    python benchmarks/engine.py --backend numba           # where elimination.factorize takes a backend
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy is imported

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import gtsam  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import elimination  # noqa: E402
from factorgraph import FactorGraph, LeastSquares, Variable  # noqa: E402

LOOPS, PER_LOOP, DIM = 200, 7, 6
OPTIONS = {}  # extra keyword arguments of elimination.factorize (--backend)
PRIOR_SIGMA = 10.0


# -- the graph ------------------------------------------------------------------------------------
def structure() -> tuple:
    """(prior keys, between pairs): 1400 priors and 1599 (i, k) between-factors."""
    priors = list(range(LOOPS * PER_LOOP))
    pairs = []
    for l in range(LOOPS):
        base = PER_LOOP * l
        pairs += [(base + j, base + j + 1) for j in range(PER_LOOP - 1)] + [(base + PER_LOOP - 1, base)]
    pairs += [(PER_LOOP * l + 3, PER_LOOP * (l + 1)) for l in range(LOOPS - 1)]
    return priors, pairs


def _rotations(rng, shape) -> np.ndarray:
    Q, R = np.linalg.qr(rng.normal(size=(*shape, 3, 3)))
    Q = Q * np.sign(np.diagonal(R, axis1=-2, axis2=-1))[..., None, :]
    Q[..., :, 0] *= np.sign(np.linalg.det(Q))[..., None]  # det +1
    return Q


def numbers(batch: int, seed: int) -> dict:
    """Whitened Jacobians and right-hand sides, leading dimension ``batch``."""
    rng = np.random.default_rng(seed)
    priors, pairs = structure()
    n, e = len(priors), len(pairs)
    R = _rotations(rng, (batch, e))
    p = rng.normal(scale=0.5, size=(batch, e, 3))
    skew = np.zeros((batch, e, 3, 3))
    skew[..., 0, 1], skew[..., 0, 2], skew[..., 1, 2] = -p[..., 2], p[..., 1], -p[..., 0]
    skew -= np.swapaxes(skew, -1, -2)
    Ad = np.zeros((batch, e, DIM, DIM))
    Ad[..., :3, :3], Ad[..., 3:, 3:], Ad[..., 3:, :3] = R, R, skew @ R
    whiten = 1.0 / rng.uniform(0.05, 0.2, size=(batch, e, DIM))
    return {
        "prior_A": np.broadcast_to(np.eye(DIM) / PRIOR_SIGMA, (batch, n, DIM, DIM)),
        "prior_b": rng.normal(size=(batch, n, DIM)) / PRIOR_SIGMA,
        "between_A1": -Ad * whiten[..., None],
        "between_A2": np.eye(DIM) * whiten[..., None],
        "between_b": rng.normal(scale=0.1, size=(batch, e, DIM)) * whiten,
    }


def ours_graph(num: dict, element: int | None = None) -> FactorGraph:
    """Our graph: one element (``element``) or the whole batch (``None``)."""
    pick = (lambda a: a[:, i]) if element is None else (lambda a: a[element, i])
    priors, pairs = structure()
    g = FactorGraph()
    for k in priors:
        g.add_variable(Variable(k, DIM))
    for i, k in enumerate(priors):
        g.add(LeastSquares([k], [pick(num["prior_A"])], pick(num["prior_b"])))
    for i, (a, b) in enumerate(pairs):
        g.add(LeastSquares([a, b], [pick(num["between_A1"]), pick(num["between_A2"])], pick(num["between_b"])))
    return g


def gtsam_graph(num: dict, element: int, hessian: bool = False) -> gtsam.GaussianFactorGraph:
    priors, pairs = structure()
    unit = gtsam.noiseModel.Unit.Create(DIM)
    g = gtsam.GaussianFactorGraph()
    factors = [gtsam.JacobianFactor(k, num["prior_A"][element, i], num["prior_b"][element, i], unit)
               for i, k in enumerate(priors)]
    factors += [gtsam.JacobianFactor(a, num["between_A1"][element, i], b, num["between_A2"][element, i],
                                     num["between_b"][element, i], unit) for i, (a, b) in enumerate(pairs)]
    for f in factors:
        g.add(gtsam.HessianFactor(f) if hessian else f)
    return g


def max_diff(ours: dict, theirs, element: int | None = None) -> float:
    pick = (lambda x: x) if element is None else (lambda x: x[element])
    return max(float(np.max(np.abs(pick(ours[k]) - theirs.at(k)))) for k in ours)


# -- timing ---------------------------------------------------------------------------------------
def timed(call):
    start = time.perf_counter()
    out = call()
    return out, time.perf_counter() - start


def median(values) -> float:
    return float(np.median(values))


def single(num: dict, repeat: int) -> tuple:
    """Symbolic and numeric times on element 0."""
    graph, theirs = ours_graph(num, 0), gtsam_graph(num, 0)
    hessians = gtsam_graph(num, 0, hessian=True)
    sym = {"colamd": [], "min_fill_order": [], "analyze_colamd": [], "analyze_min_fill": []}
    for _ in range(repeat):
        gtsam_order, t = timed(lambda: gtsam.Ordering.ColamdGaussianFactorGraph(theirs))
        sym["colamd"].append(t)
        min_fill_order, t = timed(lambda: elimination.min_fill(graph))
        sym["min_fill_order"].append(t)
        colamd_order = elimination.Ordering.from_keys([gtsam_order.at(i) for i in range(gtsam_order.size())])
        plan, t = timed(lambda: elimination.analyze(graph, colamd_order))
        sym["analyze_colamd"].append(t)
        plan_mf, t = timed(lambda: elimination.analyze(graph, min_fill_order))
        sym["analyze_min_fill"].append(t)
    num_t = {k: [] for k in ("factorize", "solve", "solve_refine1", "factorize_mf", "solve_mf",
                             "gtsam_eliminate", "gtsam_optimize", "gtsam_hessian_eliminate", "gtsam_hessian_optimize",
                             "gtsam_qr_eliminate", "gtsam_qr_optimize")}
    for r in range(repeat + 1):  # the first round warms up and is dropped
        rec = {}
        fact, rec["factorize"] = timed(lambda: elimination.factorize(graph, plan, **OPTIONS))
        x, rec["solve"] = timed(lambda: fact.solve(refine=0))
        x1, rec["solve_refine1"] = timed(lambda: fact.solve())
        bn, rec["gtsam_eliminate"] = timed(lambda: theirs.eliminateSequential(gtsam_order))
        y, rec["gtsam_optimize"] = timed(lambda: bn.optimize())
        fact_mf, rec["factorize_mf"] = timed(lambda: elimination.factorize(graph, plan_mf, **OPTIONS))
        x_mf, rec["solve_mf"] = timed(lambda: fact_mf.solve(refine=0))
        hbn, rec["gtsam_hessian_eliminate"] = timed(lambda: hessians.eliminateSequential(gtsam_order))
        yh, rec["gtsam_hessian_optimize"] = timed(lambda: hbn.optimize())
        qbn, rec["gtsam_qr_eliminate"] = timed(lambda: theirs.eliminateSequential(gtsam_order, gtsam.EliminateQR))
        yq, rec["gtsam_qr_optimize"] = timed(lambda: qbn.optimize())
        if r:
            for k, v in rec.items():
                num_t[k].append(v)
    t = {k: median(v) for k, v in {**sym, **num_t}.items()}
    t.update({f"{k}_first": v[0] for k, v in sym.items()})  # first calls: lazy imports, caches
    diffs = {"ours_colamd": max_diff(x, y), "ours_colamd_refine1": max_diff(x1, y), "ours_min_fill": max_diff(x_mf, y),
             "gtsam_hessian": max_diff({k: yh.at(k) for k in x}, y), "gtsam_qr": max_diff({k: yq.at(k) for k in x}, y),
             "solution_scale": max(float(np.max(np.abs(y.at(k)))) for k in x)}
    plans = {"colamd": plan.summary(), "min_fill": plan_mf.summary()}
    return t, diffs, plans, plan


def batched(num: dict, plan, repeat: int) -> dict:
    batch = num["prior_b"].shape[0]
    graph = ours_graph(num)
    assert graph.structure() == plan.structure
    order = gtsam.Ordering()
    for k in plan.ordering.keys():
        order.push_back(k)
    ours_f, ours_s, x = [], [], None
    kept_f, kept_s, kept = [], [], None  # factorize(..., out=kept): the last round's memory, filled again
    theirs_e, theirs_o, diff = [], [], 0.0
    for _ in range(repeat + 1):  # the first round apart: it pays the first touch of the batch's memory
        fact, t = timed(lambda: elimination.factorize(graph, plan, **OPTIONS))
        ours_f.append(t)
        x, t = timed(lambda: fact.solve(refine=0))
        ours_s.append(t)
        del fact
        kept, t = timed(lambda: elimination.factorize(graph, plan, **OPTIONS, out=kept))
        kept_f.append(t)
        x_kept, t = timed(lambda: kept.solve(refine=0))
        kept_s.append(t)
        assert all(np.array_equal(x_kept[k], x[k]) for k in x)  # the same numbers, bit for bit
        total_e = total_o = 0.0
        for element in range(batch):
            g = gtsam_graph(num, element)
            bn, t = timed(lambda: g.eliminateSequential(order))
            total_e += t
            y, t = timed(lambda: bn.optimize())
            total_o += t
            diff = max(diff, max_diff(x, y, element))
        theirs_e.append(total_e)
        theirs_o.append(total_o)
    back_to_back = []  # ours alone, round after round: memory the machine handed out moments ago
    for _ in range(repeat):
        fact, t = timed(lambda: elimination.factorize(graph, plan, **OPTIONS))
        _, ts = timed(lambda: fact.solve(refine=0))
        back_to_back.append(t + ts)
        del fact
    out = {"back_to_back": median(back_to_back), "batch": batch, "repeat": repeat, "factorize": median(ours_f[1:]), "solve": median(ours_s[1:]),
           "factorize_out": median(kept_f[1:]), "solve_out": median(kept_s[1:]),
           "gtsam_eliminate": median(theirs_e[1:]), "gtsam_optimize": median(theirs_o[1:]), "max_diff": diff,
           "first": {"factorize": ours_f[0], "solve": ours_s[0], "gtsam_eliminate": theirs_e[0],
                     "gtsam_optimize": theirs_o[0]},
           "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0}
    return out


# -- printing -------------------------------------------------------------------------------------
def print_tables(t: dict, diffs: dict, plans: dict, b: dict | None) -> None:
    print(f"graph: {LOOPS * PER_LOOP} variables of dimension {DIM} in {LOOPS} loops, "
          f"{LOOPS * PER_LOOP + LOOPS * PER_LOOP + LOOPS - 1} factors")
    print()
    print(f"{'symbolic':<39}{'ms':>9}{'first call':>12}")
    for key, label in (("colamd", "GTSAM COLAMD ordering"), ("min_fill_order", "ours: min_fill ordering"),
                       ("analyze_colamd", "ours: analyze, COLAMD order"), ("analyze_min_fill", "ours: analyze, min_fill order")):
        print(f"  {label:<37}{t[key] * 1e3:>9.2f}{t[key + '_first'] * 1e3:>12.2f}")
    print()
    for name, p in plans.items():
        print(f"plan {name:<8} flops {p['flops']:.3e}, max front {p['max_front']}, fill edges {p['fill_edges']}, "
              f"max separator {p['max_separator']}")
    print()
    print(f"{'one graph':<46}{'ms':>10}{'Mflop/s':>10}{'ratio':>9}")
    flops = plans["colamd"]["flops"]
    ge, go = t["gtsam_eliminate"], t["gtsam_optimize"]
    rows = [
        ("ours factorize (COLAMD order)", t["factorize"], flops, ge),
        ("ours solve, refine=0", t["solve"], None, go),
        ("ours solve, refine=1 (default)", t["solve_refine1"], None, go),
        ("ours factorize + solve (refine=0)", t["factorize"] + t["solve"], flops, ge + go),
        ("ours factorize (min_fill order)", t["factorize_mf"], plans["min_fill"]["flops"], ge),
        ("ours solve (min_fill), refine=0", t["solve_mf"], None, go),
        ("GTSAM eliminateSequential (COLAMD order)", ge, flops, None),
        ("GTSAM optimize", go, None, None),
        ("GTSAM eliminate + optimize", ge + go, flops, None),
        ("GTSAM HessianFactor graph: eliminate", t["gtsam_hessian_eliminate"], flops, None),
        ("GTSAM HessianFactor graph: optimize", t["gtsam_hessian_optimize"], None, None),
        ("GTSAM EliminateQR: eliminate", t["gtsam_qr_eliminate"], None, None),
        ("GTSAM EliminateQR: optimize", t["gtsam_qr_optimize"], None, None),
    ]
    for label, secs, fl, ref in rows:
        rate = f"{fl / secs / 1e6:>10.2f}" if fl else f"{'':>10}"
        ratio = f"{secs / ref:>9.1f}" if ref else f"{'':>9}"
        print(f"  {label:<44}{secs * 1e3:>10.2f}{rate}{ratio}")
    print("  ratio: ours / GTSAM's eliminateSequential (factorize), optimize (solve), or their sum")
    print(f"  max |x_ours - x_gtsam|: COLAMD {diffs['ours_colamd']:.1e} (refine=1 {diffs['ours_colamd_refine1']:.1e}), "
          f"min_fill {diffs['ours_min_fill']:.1e}; GTSAM Hessian {diffs['gtsam_hessian']:.1e}, QR {diffs['gtsam_qr']:.1e}; "
          f"max |x| {diffs['solution_scale']:.2g}")
    if b is None:
        return
    print()
    n = b["batch"]
    print(f"{n} same-structure graphs (COLAMD plan; repeat {b['repeat']})    total s   ms/graph   ratio")
    for label, ours_s, theirs_s in (("factorize vs eliminateSequential", b["factorize"], b["gtsam_eliminate"]),
                                    ("solve (refine=0) vs optimize", b["solve"], b["gtsam_optimize"]),
                                    ("both", b["factorize"] + b["solve"], b["gtsam_eliminate"] + b["gtsam_optimize"])):
        print(f"  ours  {label:<38}{ours_s:>9.2f}{ours_s / n * 1e3:>11.2f}{ours_s / theirs_s:>8.1f}")
        print(f"  GTSAM {label:<38}{theirs_s:>9.2f}{theirs_s / n * 1e3:>11.2f}")
    kept, theirs = b["factorize_out"] + b["solve_out"], b["gtsam_eliminate"] + b["gtsam_optimize"]
    print(f"  ours  {'both, factorize(..., out=last round)':<38}{kept:>9.2f}{kept / n * 1e3:>11.2f}{kept / theirs:>8.1f}"
          f"   (factorize {b['factorize_out'] / n * 1e3:.2f}, solve {b['solve_out'] / n * 1e3:.2f} ms/graph: "
          f"the last round's memory filled again, no fresh pages)")
    first = b["first"]
    ours_first, theirs_first = first["factorize"] + first["solve"], first["gtsam_eliminate"] + first["gtsam_optimize"]
    print(f"  first round (not in the medians): ours {ours_first / n * 1e3:.2f} ms/graph, GTSAM "
          f"{theirs_first / n * 1e3:.2f}, ratio {ours_first / theirs_first:.1f}")
    print(f"  ours alone, {b['repeat']} rounds back to back: {b['back_to_back'] / n * 1e3:.2f} ms/graph, ratio "
          f"{b['back_to_back'] / theirs:.1f} to GTSAM's median (the memory freed by one round reused by the next)")
    print(f"  ours, batched: {flops * n / b['factorize'] / 1e6:.2f} Mflop/s in factorize; "
          f"max |x_ours - x_gtsam| over the {n} graphs {b['max_diff']:.1e}; peak RSS of the process {b['peak_rss_mb']:.0f} MB")


def _revision() -> str:
    """``git describe`` of the code measured ("+dirty" with uncommitted changes), or "unknown"."""
    try:
        done = subprocess.run(["git", "describe", "--always", "--dirty=+dirty"], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parents[1])
        return done.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11, help="repeats of the single-graph timings (default 11)")
    parser.add_argument("--batch", type=int, default=256, help="graphs in the batched comparison (0: skip)")
    parser.add_argument("--repeat-batch", type=int, default=3, help="repeats of the batched comparison (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--backend", help="elimination.factorize(backend=...) where the library has one (default: its own)")
    args = parser.parse_args()
    if args.backend:
        OPTIONS["backend"] = args.backend
    print(f"gaussgraph at {_revision()}; backend {args.backend or 'default'}")
    started = time.perf_counter()
    num = numbers(max(1, args.batch), args.seed)
    t, diffs, plans, plan = single(num, args.repeat)
    single_s = time.perf_counter() - started
    b = batched(num, plan, args.repeat_batch) if args.batch else None
    print_tables(t, diffs, plans, b)
    total = time.perf_counter() - started
    print(f"\ntotal {total:.0f} s (single graph {single_s:.0f} s)")
    print(f"load average (1, 5, 15 min) at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cpus")
    if args.json:
        args.json.write_text(json.dumps({
            "benchmark": "engine", "machine": platform.platform(), "loadavg_end": os.getloadavg(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "numpy": np.__version__, "revision": _revision(), "backend": args.backend, "gtsam": getattr(gtsam, "__version__", "4.3"),
            "settings": {"loops": LOOPS, "per_loop": PER_LOOP, "dim": DIM, "repeat": args.repeat,
                         "batch": args.batch, "repeat_batch": args.repeat_batch, "seed": args.seed},
            "single_s": t, "max_diff": diffs, "plans": plans, "batched": b, "total_s": total,
        }, indent=1))


if __name__ == "__main__":
    main()
