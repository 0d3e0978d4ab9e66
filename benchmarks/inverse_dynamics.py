"""``mechanics.inverse_dynamics`` against Pinocchio's ``rnea``: per state in a batch, and one call.

Run with ``OPENBLAS_NUM_THREADS=1``.  Both sides are timed interleaved in one process on the same random
states (Pinocchio's ``randomConfiguration``); Pinocchio's batch is a Python loop over the states (its
per-state time: the loop's / B), ours one call / B; the best of ``--repeats`` rounds; ratio: ours / theirs.

    python benchmarks/inverse_dynamics.py [--robots talos,solo12,anymal] [--batch 1024] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pinocchio as pin  # noqa: E402

import mechanics  # noqa: E402
from mechanics.pinocchio_io import from_pinocchio, load_pinocchio_robot  # noqa: E402
from tests.mechanics.pinocchio_oracle import random_state  # noqa: E402


def measure(robot: str, batch: int, repeats: int, singles: int = 100) -> dict:
    model = load_pinocchio_robot(robot)
    mech, data, rng = from_pinocchio(model), model.createData(), np.random.default_rng(0)
    states = [random_state(model, rng) for _ in range(batch)]
    Q, V, A = (np.array([s[i] for s in states]) for i in range(3))
    ours = mechanics.inverse_dynamics(mech, Q, V, A)  # (compiled here, and checked)
    theirs = np.array([pin.rnea(model, data, Q[i], V[i], A[i]) for i in range(batch)])
    best = {"batch": np.inf, "single": np.inf, "rnea": np.inf}
    for _ in range(repeats):
        t = time.perf_counter()
        mechanics.inverse_dynamics(mech, Q, V, A)
        best["batch"] = min(best["batch"], (time.perf_counter() - t) / batch)
        t = time.perf_counter()
        for i in range(singles):
            mechanics.inverse_dynamics(mech, Q[i], V[i], A[i])
        best["single"] = min(best["single"], (time.perf_counter() - t) / singles)
        t = time.perf_counter()
        for i in range(batch):
            pin.rnea(model, data, Q[i], V[i], A[i])
        best["rnea"] = min(best["rnea"], (time.perf_counter() - t) / batch)
    deviation = float(np.max(np.abs(ours - theirs)) / max(1.0, np.max(np.abs(theirs))))
    return {"robot": robot, "nv": mech.nv, **{k: v * 1e6 for k, v in best.items()}, "deviation": deviation}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", default="talos,solo12,anymal")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = [measure(robot, args.batch, args.repeats) for robot in args.robots.split(",")]
    print("| robot | nv | ours, batch (us/state) | ours, one call (us) | rnea (us) | batch ratio | one-call ratio | deviation |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['robot']} | {r['nv']} | {r['batch']:.2f} | {r['single']:.1f} | {r['rnea']:.2f} | "
              f"{r['batch'] / r['rnea']:.2f} | {r['single'] / r['rnea']:.1f} | {r['deviation']:.1e} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
