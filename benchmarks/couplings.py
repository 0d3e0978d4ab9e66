"""Forward dynamics with joint couplings (rotors, belts, differentials) against the null-space method on Pinocchio.

Pinocchio has no forward dynamics for coupled joints (4.1's ``aba`` and ``lcaba`` refuse mimic models); what a
user writes with it is the null-space method of its mimic models: ``M = crba``, ``b = nonLinearEffects`` of the
tree, then ``(G' M G) y_dd = G' (tau - b)`` and ``qdd = G y_dd`` (``G``: :func:`mechanics.coupling_map`).  Timed
per state, interleaved in one process on the same random states: ours (a prepared call, compiled; batch: one
call / B), Pinocchio's ``crba`` + ``nonLinearEffects`` alone (C++: a lower bound of the method), and the whole
method (those and numpy's Cholesky of ``G' M G``, Python per state).  Best of ``--repeats`` rounds; ratios: ours /
theirs.  Run with ``OPENBLAS_NUM_THREADS=1``.

    python benchmarks/couplings.py [--models geared_chain,belt_chain,mini_cheetah,tello_leg] [--batch 512]
        [--algorithms proxbbo,pv] [--json out.json]
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
from tests.mechanics.pinocchio_oracle import pinocchio_model_of  # noqa: E402


def _null_space(model, data, G, q, v, tau):
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    b = pin.nonLinearEffects(model, data, q, v)
    return G @ np.linalg.solve(G.T @ M @ G, G.T @ (tau - b))


def measure(name: str, algorithm: str, batch: int, repeats: int, singles: int = 100) -> dict:
    mech = mechanics.models.MODELS[name]()
    model, _ = pinocchio_model_of(mech.without_constraints())
    data, G = model.createData(), mechanics.coupling_map(mech).G
    rng = np.random.default_rng(0)
    Q = mech.random_configuration(rng, (batch,))
    V, T = rng.normal(size=(batch, mech.nv)), rng.normal(size=(batch, mech.nv))
    V = V @ G @ np.linalg.pinv(G)  # (velocities that meet the couplings)
    prepared = mechanics.prepare(mech, algorithm, tol=1e-10)
    ours = prepared(Q, V, T).qdd  # (compiled here, and checked)
    theirs = np.array([_null_space(model, data, G, Q[i], V[i], T[i]) for i in range(batch)])
    best = {"batch": np.inf, "single": np.inf, "crba_nle": np.inf, "null_space": np.inf}
    for _ in range(repeats):
        t = time.perf_counter()
        prepared(Q, V, T)
        best["batch"] = min(best["batch"], (time.perf_counter() - t) / batch)
        t = time.perf_counter()
        for i in range(singles):
            prepared(Q[i], V[i], T[i])
        best["single"] = min(best["single"], (time.perf_counter() - t) / singles)
        t = time.perf_counter()
        for i in range(batch):
            pin.crba(model, data, Q[i])
            pin.nonLinearEffects(model, data, Q[i], V[i])
        best["crba_nle"] = min(best["crba_nle"], (time.perf_counter() - t) / batch)
        t = time.perf_counter()
        for i in range(batch):
            _null_space(model, data, G, Q[i], V[i], T[i])
        best["null_space"] = min(best["null_space"], (time.perf_counter() - t) / batch)
    deviation = float(np.max(np.abs(ours - theirs)) / max(1.0, np.max(np.abs(theirs))))
    return {"model": name, "algorithm": algorithm, "nv": mech.nv, "m": mech.constraint_dim,
            **{k: v * 1e6 for k, v in best.items()}, "deviation": deviation}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="geared_chain,belt_chain,mini_cheetah,tello_leg")
    parser.add_argument("--algorithms", default="proxbbo,pv")
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = [measure(name, algorithm, args.batch, args.repeats)
            for name in args.models.split(",") for algorithm in args.algorithms.split(",")]
    print("| model | algorithm | nv | m | ours, batch (us/state) | ours, one call (us) | crba + nle (us) | "
          "null space (us) | batch / crba+nle | batch / null space | deviation |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['model']} | {r['algorithm']} | {r['nv']} | {r['m']} | {r['batch']:.2f} | {r['single']:.1f} | "
              f"{r['crba_nle']:.2f} | {r['null_space']:.1f} | {r['batch'] / r['crba_nle']:.2f} | "
              f"{r['batch'] / r['null_space']:.2f} | {r['deviation']:.1e} |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
