"""Constraint embedding (``embed/clusters``) against the same constraints as multipliers (``proxbbo``).

Couplings (``--models``): per state, interleaved in one process on the same random states (best of
``--repeats``), the whole prepared call on a batch, the compiled kernel alone on that batch as it runs (sixteen
states side by side where the program is tree pairs, else state by state), the kernel state by state for both,
and the plans' flops and steps by opcode.  Local loops (``--loops``: their maps made per state): flops, the
compiled prepared call per state on a batch of closed states (``--loop-batch``) and on one state, and the numpy
path's time per state on 64 of them, both algorithms on both.
Ratios: embedded / proxBBO.  Run with ``OPENBLAS_NUM_THREADS=1``.

    python benchmarks/embedding.py [--models geared_chain,belt_chain,mini_cheetah,tello_leg]
        [--loops four_bar,digit_leg,fig4,chain_of_loops,ladder,cassie] [--batch 1024] [--loop-batch 256]
        [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mechanics  # noqa: E402
from elimination.program import F, Op  # noqa: E402

ALGORITHMS = ("proxbbo", "embed/clusters")
CASSIE = "cassie_description/robots/cassie_v2.sdf"


def _best(call, repeats: int, per: int) -> float:
    """Best of ``repeats`` timings of ``call()``, in microseconds per ``per`` states."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times) / per * 1e6


def measure(name: str, batch: int, repeats: int) -> list:
    mech = mechanics.models.MODELS[name]()
    rng = np.random.default_rng(0)
    Q = mech.random_configuration(rng, (batch,))
    V, T = rng.normal(size=(batch, mech.nv)), rng.normal(size=(batch, mech.nv))
    F0 = np.zeros((batch, mech.constraint_dim))
    prepared = {a: mechanics.prepare(mech, a, tol=1e-10, backend="numba") for a in ALGORITHMS}
    answers = {a: p(Q, V, T).qdd for a, p in prepared.items()}  # (compiled here)
    rows = {a: {"model": name, "algorithm": a, "batch": np.inf, "kernel": np.inf, "states": np.inf} for a in ALGORITHMS}
    for _ in range(repeats):  # (interleaved: the machine's noise falls on both)
        for a, p in prepared.items():
            c, r = p.compiled, rows[a]
            r["batch"] = min(r["batch"], _best(lambda: p(Q, V, T), 1, batch))
            r["kernel"] = min(r["kernel"], _best(lambda: c.run(Q, V, T, F0, p.mu, p.tol, p.max_iter, p.refine), 1, batch))
            r["states"] = min(r["states"], _best(
                lambda: c._run_states(Q, V, T, F0, p.mu, p.tol, p.max_iter, p.refine, c.data), 1, batch))
    for a, p in prepared.items():
        program = p.compiled.program
        ops = Counter(Op(o).name for o in program.steps[:, F["op"]])
        rows[a].update(flops=p.plan.flops, steps=dict(ops), lanes=bool(p.compiled.lanes),
                       deviation=float(np.max(np.abs(answers[a] - answers[ALGORITHMS[0]])) /
                                       max(1.0, np.max(np.abs(answers[ALGORITHMS[0]])))))
    return list(rows.values())


def measure_loops(name: str, batch: int, repeats: int) -> list:
    """Flops, and per state the compiled prepared call on a batch of ``batch`` closed states near the neutral
    one, on one of them (a single call, best of ``SINGLE`` calls) and the numpy path's on 64 of them."""
    rng = np.random.default_rng(0)
    if name == "cassie":  # (its file's pose moved by 0.1 rad at each joint, as examples/simulate_loops.py)
        mech = mechanics.load_sdf(mechanics.pinocchio_io.example_robot_data_dir() / CASSIE)
        moved = lambda: np.concatenate([np.zeros(6), rng.uniform(-0.1, 0.1, mech.nv - 6)])  # noqa: E731
    else:
        mech = mechanics.models.MODELS[name]()
        moved = lambda: 0.3 * rng.normal(size=mech.nv)  # noqa: E731
    Q = np.stack([_closed(mech, moved) for _ in range(batch)])
    V = np.stack([mechanics.closure.project_velocity(mech, q, rng.normal(size=mech.nv)) for q in Q])
    T = rng.normal(size=(batch, mech.nv))
    few = min(batch, 64)
    reference = {a: mechanics.prepare(mech, a, tol=1e-10, backend="numpy") for a in ALGORITHMS}
    prepared = {a: mechanics.prepare(mech, a, tol=1e-10, backend="numba") for a in ALGORITHMS}
    answers = {a: p(Q, V, T) for a, p in prepared.items()}  # (compiled here)
    numpy_answers = {a: p(Q[:few], V[:few], T[:few]) for a, p in reference.items()}
    rows = {a: {"model": name, "algorithm": a, "batch": np.inf, "single": np.inf, "numpy": np.inf} for a in ALGORITHMS}
    for _ in range(repeats):  # (interleaved: the machine's noise falls on both)
        for a, p in prepared.items():
            r = rows[a]
            r["batch"] = min(r["batch"], _best(lambda: p(Q, V, T), 1, batch))
            r["single"] = min(r["single"], _best(lambda: [p(Q[0], V[0], T[0]) for _ in range(SINGLE)], 1, SINGLE))
            r["numpy"] = min(r["numpy"], _best(lambda: reference[a](Q[:few], V[:few], T[:few]), 1, few))
    base = answers[ALGORITHMS[0]].qdd
    for a, p in prepared.items():
        scale = max(1.0, np.max(np.abs(numpy_answers[a].qdd)))
        rows[a].update(flops=p.plan.flops, iterations=float(np.mean(answers[a].iterations)),
                       lanes=bool(p.compiled.lanes),
                       deviation=float(np.max(np.abs(answers[a].qdd - base)) / max(1.0, np.max(np.abs(base)))),
                       executors=float(np.max(np.abs(answers[a].qdd[:few] - numpy_answers[a].qdd)) / scale))
    return list(rows.values())


def _closed(mech, moved):
    """A configuration near the neutral one, moved by ``moved()`` and closed (drawn again where it does not close)."""
    for _ in range(100):
        try:
            return mech.project(mech.integrate(mech.neutral_configuration(), moved()))
        except ValueError:
            continue
    raise ValueError(f"{mech.name!r}: no closed configuration in 100 draws")


SINGLE = 200
"""Single calls per timing of :func:`measure_loops`."""


def _table(header: list, rows: list, cells) -> None:
    """A markdown table: per row its model, algorithm and ``cells(row, proxBBO's row on the same model)``."""
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    base = {r["model"]: r for r in rows if r["algorithm"] == ALGORITHMS[0]}
    for r in rows:
        print("| " + " | ".join([r["model"], r["algorithm"], *cells(r, base[r["model"]])]) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="geared_chain,belt_chain,mini_cheetah,tello_leg")
    parser.add_argument("--loops", default="four_bar,digit_leg,fig4,chain_of_loops,ladder,cassie")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--loop-batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    warnings.simplefilter("ignore", mechanics.ConvergenceWarning)  # (fig4's dependent rows: the table's iterations)
    rows = [r for name in filter(None, args.models.split(",")) for r in measure(name, args.batch, args.repeats)]
    _table(["model", "algorithm", "batch (us/state)", "kernel (us/state)", "kernel state by state (us/state)",
            "lanes", "flops", "steps", "vs proxbbo: batch, state by state, flops", "deviation"], rows,
           lambda r, b: [f"{r['batch']:.2f}", f"{r['kernel']:.2f}", f"{r['states']:.2f}", "yes" if r["lanes"] else "no",
                         f"{r['flops']:.0f}", ", ".join(f"{k} {v}" for k, v in sorted(r["steps"].items())),
                         f"{r['batch'] / b['batch']:.2f}, {r['states'] / b['states']:.2f}, {r['flops'] / b['flops']:.2f}",
                         f"{r['deviation']:.1e}"])
    loops = [r for name in filter(None, args.loops.split(",")) for r in measure_loops(name, args.loop_batch,
                                                                                       args.repeats)]
    print()
    _table(["model (local loops)", "algorithm", f"batch of {args.loop_batch} (us/state)", "single call (us)",
            "lanes", "numpy path (us/state)", "mean iterations", "flops", "vs proxbbo: batch, single, flops",
            "deviation from proxbbo", "compiled vs numpy path"], loops,
           lambda r, b: [f"{r['batch']:.1f}", f"{r['single']:.1f}", "yes" if r["lanes"] else "no", f"{r['numpy']:.1f}",
                         f"{r['iterations']:.1f}", f"{r['flops']:.0f}",
                         f"{r['batch'] / b['batch']:.2f}, {r['single'] / b['single']:.2f}, {r['flops'] / b['flops']:.2f}",
                         f"{r['deviation']:.1e}", f"{r['executors']:.1e}"])
    if args.json:
        Path(args.json).write_text(json.dumps(rows + loops, indent=1))


if __name__ == "__main__":
    main()
