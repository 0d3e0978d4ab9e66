"""Constraint embedding (``embed/clusters``) against the same constraints as multipliers (``proxbbo``).

Couplings (``--models``): per state, interleaved in one process on the same random states (best of
``--repeats``), the whole prepared call on a batch, the compiled kernel alone on that batch as it runs (sixteen
states side by side where the program is tree pairs, else state by state), the kernel state by state for both,
and the plans' flops and steps by opcode.  Local loops (``--loops``: their maps per state run on the numpy path
for now): flops, and the numpy path's time per state on a batch of closed states, both algorithms there.
Ratios: embedded / proxBBO.  Run with ``OPENBLAS_NUM_THREADS=1``.

    python benchmarks/embedding.py [--models geared_chain,belt_chain,mini_cheetah,tello_leg]
        [--loops four_bar,digit_leg,fig4,chain_of_loops,ladder,cassie] [--batch 1024] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
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
    """Flops and the numpy path's time per state, at ``batch`` closed states near the neutral one."""
    rng = np.random.default_rng(0)
    if name == "cassie":  # (its file's pose moved by 0.1 rad at each joint, as examples/simulate_loops.py)
        mech = mechanics.load_sdf(mechanics.pinocchio_io.example_robot_data_dir() / CASSIE)
        moved = lambda: np.concatenate([np.zeros(6), rng.uniform(-0.1, 0.1, mech.nv - 6)])  # noqa: E731
    else:
        mech = mechanics.models.MODELS[name]()
        moved = lambda: 0.3 * rng.normal(size=mech.nv)  # noqa: E731
    Q = np.stack([mech.project(mech.integrate(mech.neutral_configuration(), moved())) for _ in range(batch)])
    V = np.stack([mechanics.closure.project_velocity(mech, q, rng.normal(size=mech.nv)) for q in Q])
    T = rng.normal(size=(batch, mech.nv))
    prepared = {a: mechanics.prepare(mech, a, tol=1e-10, backend="numpy") for a in ALGORITHMS}
    answers = {a: p(Q, V, T) for a, p in prepared.items()}
    rows = {a: {"model": name, "algorithm": a, "numpy": np.inf} for a in ALGORITHMS}
    for _ in range(repeats):
        for a, p in prepared.items():
            rows[a]["numpy"] = min(rows[a]["numpy"], _best(lambda: p(Q, V, T), 1, batch))
    base = answers[ALGORITHMS[0]].qdd
    for a, p in prepared.items():
        rows[a].update(flops=p.plan.flops, iterations=float(np.mean(answers[a].iterations)),
                       deviation=float(np.max(np.abs(answers[a].qdd - base)) / max(1.0, np.max(np.abs(base)))))
    return list(rows.values())


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
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = [r for name in filter(None, args.models.split(",")) for r in measure(name, args.batch, args.repeats)]
    _table(["model", "algorithm", "batch (us/state)", "kernel (us/state)", "kernel state by state (us/state)",
            "lanes", "flops", "steps", "vs proxbbo: batch, state by state, flops", "deviation"], rows,
           lambda r, b: [f"{r['batch']:.2f}", f"{r['kernel']:.2f}", f"{r['states']:.2f}", "yes" if r["lanes"] else "no",
                         f"{r['flops']:.0f}", ", ".join(f"{k} {v}" for k, v in sorted(r["steps"].items())),
                         f"{r['batch'] / b['batch']:.2f}, {r['states'] / b['states']:.2f}, {r['flops'] / b['flops']:.2f}",
                         f"{r['deviation']:.1e}"])
    loops = [r for name in filter(None, args.loops.split(",")) for r in measure_loops(name, 64, args.repeats)]
    print()
    _table(["model (local loops)", "algorithm", "numpy path, batch of 64 (us/state)", "mean iterations", "flops",
            "vs proxbbo: time, flops", "deviation"], loops,
           lambda r, b: [f"{r['numpy']:.1f}", f"{r['iterations']:.1f}", f"{r['flops']:.0f}",
                         f"{r['numpy'] / b['numpy']:.2f}, {r['flops'] / b['flops']:.2f}", f"{r['deviation']:.1e}"])
    if args.json:
        Path(args.json).write_text(json.dumps(rows + loops, indent=1))


if __name__ == "__main__":
    main()
