"""Issue 40, second experiment: the lane source instantiated per width by generated vector ops (generate.py).

Run from the repository root, after bench.py has made out/inputs.npz:
      python benchmarks/width/generate.py
      OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/width/instances.py [--no-compile]
Prints a table and writes benchmarks/width/out/result2.json.

Drivers (each one @njit call running every REVOLUTE_PAIR of fig4's ABA program, 11 pairs, `reps` times, 16 states):
  a   per state: elimination.compiled_pairs._revolute_pair (inlined) on 1-D Fw/C rows, state after state
  b   lanes:     elimination.lanes_pairs._revolute_pair (inlined, <16 x double> intrinsics) on (n, 16)
  e   generated width 1:  pairs_w1._revolute_pair over vectors_w1 (<1 x double> intrinsics), state after state on (n, 1)
  f   generated width 16: pairs_w16._revolute_pair over vectors_w16 (<16 x double>), on (n, 16)
  g   generated width 1, scalar ops: pairs_w1s over vectors_w1s (@njit(inline="always") D[k, 0] = ...), state after state
  h   as e, vectors_w1c: row address = data + row * WIDTH (compile-time), not get_item_pointer2's row * shape[1]
  i   as f, vectors_w16c: the same constant-stride row addresses at width 16
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"  # generate.py's modules, bench.py's inputs, cold caches, results (ignored by git)
sys.path.insert(0, str(OUT))

from numba import njit  # noqa: E402

from elimination import compiled_pairs, lanes_pairs  # noqa: E402
from elimination.compiled_front import OP, OP_REVOLUTE, UNCOUNTED  # noqa: E402
from elimination.lanes import aligned_zeros  # noqa: E402

import pairs_w1  # noqa: E402
import pairs_w16  # noqa: E402
import pairs_w1s  # noqa: E402
import pairs_w1c  # noqa: E402
import pairs_w16c  # noqa: E402

pair_w1, pair_w16, pair_w1s = pairs_w1._revolute_pair, pairs_w16._revolute_pair, pairs_w1s._revolute_pair
pair_w1c, pair_w16c = pairs_w1c._revolute_pair, pairs_w16c._revolute_pair

S = 16
FLOOR = 1e-12
INPUTS = OUT / "inputs.npz"  # (made by bench.py: fig4 ABA program maps + 16 states' Fw)
MAP_NAMES = ("steps", "hs", "hd", "ss", "sd", "as_", "ad", "ws", "wd", "es", "ed", "pbH", "pbs", "phs", "phd", "pss",
             "psd")


# ---------------------------------------------------------------- drivers
@njit(cache=True, **UNCOUNTED)  # as elimination.compiled.factorize_one
def run_state(steps, pbH, pbs, phs, pss, Fw0, Fw, C, floor, H, scale, unit, Dv, reps, restore):
    """(a) Fw0, Fw (S, n), C (S, m), floor (S,)."""
    acc = 0.0
    for _ in range(reps):
        if restore:
            for s in range(Fw.shape[0]):
                for k in range(Fw.shape[1]):
                    Fw[s, k] = Fw0[s, k]
        for s in range(Fw.shape[0]):
            Fs, Cs, fl = Fw[s], C[s], floor[s]
            for st in range(steps.shape[0]):
                if steps[st, OP] == OP_REVOLUTE:
                    acc += compiled_pairs._revolute_pair(steps, st, pbH, pbs, phs, pss, Fs, Cs, fl, H, scale, unit, Dv)
    return acc


@njit(cache=True, error_model="numpy", **UNCOUNTED)  # as elimination.lanes_pairs.factorize_pairs
def run_lanes(steps, pbH, pbs, phs, pss, Fw0, Fw, C, floor, H, scale, t6, u6, tmp, r, reps, restore):
    """(b) Fw0, Fw (n, 16), C (m, 16), floor (1, 16)."""
    acc = 0.0
    for _ in range(reps):
        if restore:
            for k in range(Fw.shape[0]):
                for w in range(Fw.shape[1]):
                    Fw[k, w] = Fw0[k, w]
        for st in range(steps.shape[0]):
            if steps[st, OP] == OP_REVOLUTE:
                lanes_pairs._revolute_pair(steps, st, pbH, pbs, phs, pss, Fw, C, floor, H, scale, t6, u6, tmp, r)
                acc += r[0]
    return acc


@njit(cache=True, error_model="numpy", **UNCOUNTED)
def run_w16(steps, pbH, pbs, phs, pss, Fw0, Fw, C, floor, H, scale, t6, u6, tmp, r, reps, restore):
    """(f) as run_lanes through the generated width-16 instance."""
    acc = 0.0
    for _ in range(reps):
        if restore:
            for k in range(Fw.shape[0]):
                for w in range(Fw.shape[1]):
                    Fw[k, w] = Fw0[k, w]
        for st in range(steps.shape[0]):
            if steps[st, OP] == OP_REVOLUTE:
                pair_w16(steps, st, pbH, pbs, phs, pss, Fw, C, floor, H, scale, t6, u6, tmp, r)
                acc += r[0]
    return acc


@njit(cache=True, error_model="numpy", **UNCOUNTED)
def run_w1(steps, pbH, pbs, phs, pss, Fw0, Fw, C, floor, H, scale, t6, u6, tmp, r, reps, restore):
    """(e) Fw0, Fw (S, n, 1), C (S, m, 1), floor (S, 1, 1), scratch (rows, 1), r (1,): state after state at width 1."""
    acc = 0.0
    for _ in range(reps):
        if restore:
            for s in range(Fw.shape[0]):
                for k in range(Fw.shape[1]):
                    Fw[s, k, 0] = Fw0[s, k, 0]
        for s in range(Fw.shape[0]):
            Fs, Cs, fl = Fw[s], C[s], floor[s]
            for st in range(steps.shape[0]):
                if steps[st, OP] == OP_REVOLUTE:
                    pair_w1(steps, st, pbH, pbs, phs, pss, Fs, Cs, fl, H, scale, t6, u6, tmp, r)
                    acc += r[0]
    return acc


@njit(cache=True, error_model="numpy", **UNCOUNTED)
def run_w1s(steps, pbH, pbs, phs, pss, Fw0, Fw, C, floor, H, scale, t6, u6, tmp, r, reps, restore):
    """(g) as run_w1 through the width-1 instance over scalar numba ops."""
    acc = 0.0
    for _ in range(reps):
        if restore:
            for s in range(Fw.shape[0]):
                for k in range(Fw.shape[1]):
                    Fw[s, k, 0] = Fw0[s, k, 0]
        for s in range(Fw.shape[0]):
            Fs, Cs, fl = Fw[s], C[s], floor[s]
            for st in range(steps.shape[0]):
                if steps[st, OP] == OP_REVOLUTE:
                    pair_w1s(steps, st, pbH, pbs, phs, pss, Fs, Cs, fl, H, scale, t6, u6, tmp, r)
                    acc += r[0]
    return acc


@njit(cache=True, error_model="numpy", **UNCOUNTED)
def run_w1c(steps, pbH, pbs, phs, pss, Fw0, Fw, C, floor, H, scale, t6, u6, tmp, r, reps, restore):
    """(h) as (e) with constant row strides; Fw0, Fw (S, n, 1), C (S, m, 1), floor (S, 1, 1), scratch (rows, 1), r (1,): state after state at width 1."""
    acc = 0.0
    for _ in range(reps):
        if restore:
            for s in range(Fw.shape[0]):
                for k in range(Fw.shape[1]):
                    Fw[s, k, 0] = Fw0[s, k, 0]
        for s in range(Fw.shape[0]):
            Fs, Cs, fl = Fw[s], C[s], floor[s]
            for st in range(steps.shape[0]):
                if steps[st, OP] == OP_REVOLUTE:
                    pair_w1c(steps, st, pbH, pbs, phs, pss, Fs, Cs, fl, H, scale, t6, u6, tmp, r)
                    acc += r[0]
    return acc


@njit(cache=True, error_model="numpy", **UNCOUNTED)
def run_w16c(steps, pbH, pbs, phs, pss, Fw0, Fw, C, floor, H, scale, t6, u6, tmp, r, reps, restore):
    """(i) constant row strides; as run_lanes through the generated width-16 instance."""
    acc = 0.0
    for _ in range(reps):
        if restore:
            for k in range(Fw.shape[0]):
                for w in range(Fw.shape[1]):
                    Fw[k, w] = Fw0[k, w]
        for st in range(steps.shape[0]):
            if steps[st, OP] == OP_REVOLUTE:
                pair_w16c(steps, st, pbH, pbs, phs, pss, Fw, C, floor, H, scale, t6, u6, tmp, r)
                acc += r[0]
    return acc


DRIVERS = {"a": run_state, "b": run_lanes, "e": run_w1, "f": run_w16, "g": run_w1s, "h": run_w1c, "i": run_w16c}
LABEL = {"a": "per state (compiled_pairs)", "b": "lanes W=16 (vectors.py)", "e": "generated W=1 (<1 x double>)",
         "f": "generated W=16 (<16 x double>)", "g": "generated W=1, scalar numba ops",
         "h": "generated W=1, const row stride", "i": "generated W=16, const row stride"}


# ---------------------------------------------------------------- inputs
def load_inputs():
    z = np.load(INPUTS)
    maps = tuple(z[f"map_{k}"] for k in MAP_NAMES)
    return maps, z["Fw"], int(z["conditional_size"]), int(z["maxn"]), [str(o) for o in z["ops"]]


def workspaces(maps, Fw_batch, csize, maxn):
    """Per driver: (function, arguments without reps/restore, getter of (C (S, m), Fw (S, n)))."""
    steps, pbH, pbs, phs, pss = maps[0], maps[11], maps[12], maps[13], maps[15]
    head = (steps, pbH, pbs, phs, pss)
    n = Fw_batch.shape[1]
    args = {}
    Fw0a, Fwa, Ca = Fw_batch.copy(), Fw_batch.copy(), np.zeros((S, csize))
    args["a"] = (run_state, head + (Fw0a, Fwa, Ca, np.full(S, FLOOR), np.zeros((maxn, maxn)), np.zeros(maxn),
                                    np.zeros(maxn), np.zeros(maxn)), lambda: (Ca, Fwa))

    def lane_set(W=16):
        Fw0 = aligned_zeros((n, W))
        Fw0[:] = Fw_batch.T
        Fw, C = aligned_zeros((n, W)), aligned_zeros((csize, W))
        Fw[:] = Fw0
        floor = aligned_zeros((1, W))
        floor[:] = FLOOR
        scratch = tuple(aligned_zeros((rows, W)) for rows in (36, 6, 6, 6, 6))
        return (Fw0, Fw, C, floor) + scratch + (np.zeros(W),), (lambda: (C.T, Fw.T))

    for key in ("b", "f", "i"):
        rest, get = lane_set()
        args[key] = (DRIVERS[key], head + rest, get)

    def state1_set():  # (rows, 1) per state; 8-byte rows are always aligned to their size
        Fw0 = Fw_batch.reshape(S, n, 1).copy()
        Fw, C = Fw0.copy(), np.zeros((S, csize, 1))
        floor = np.full((S, 1, 1), FLOOR)
        scratch = tuple(np.zeros((rows, 1)) for rows in (36, 6, 6, 6, 6)) + (np.zeros(1),)
        return (Fw0, Fw, C, floor) + scratch, (lambda: (C[:, :, 0], Fw[:, :, 0]))

    for key in ("e", "g", "h"):
        rest, get = state1_set()
        args[key] = (DRIVERS[key], head + rest, get)
    return args


def bits(a):
    return np.ascontiguousarray(a).view(np.int64)


# ---------------------------------------------------------------- compile times (child processes)
def compile_child(key: str) -> dict:
    maps, Fw_batch, csize, maxn, _ = load_inputs()
    fn, a, _ = workspaces(maps, Fw_batch, csize, maxn)[key]
    t0 = time.perf_counter()
    fn(*a, 1, True)
    t1 = time.perf_counter()
    fn(*a, 1, True)
    t2 = time.perf_counter()
    return {"first_s": t1 - t0, "second_s": t2 - t1}


def compile_times(keys) -> dict:
    """First call of each driver in a fresh process with an empty NUMBA_CACHE_DIR (cold: driver + inlined kernel +
    its intrinsics), then again with that directory filled (cached)."""
    result = {}
    for key in keys:
        cache = Path(tempfile.mkdtemp(prefix=f"cache_{key}_", dir=OUT))
        env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
        for temperature in ("cold", "cached"):
            proc = subprocess.run([sys.executable, str(HERE / "instances.py"), "--child", key], env=env,
                                  capture_output=True, text=True)
            if proc.returncode:
                raise RuntimeError(proc.stderr)
            result[f"{key} ({temperature})"] = json.loads(proc.stdout.strip().splitlines()[-1])
        shutil.rmtree(cache)
    return result


# ---------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--target", type=float, default=0.2)
    parser.add_argument("--keys", default="a,b,e,f,g,h,i")
    parser.add_argument("--out", default="result2.json")
    opts = parser.parse_args()
    if opts.child:
        print(json.dumps(compile_child(opts.child)))
        return
    maps, Fw_batch, csize, maxn, ops = load_inputs()
    npairs = ops.count("REVOLUTE_PAIR")
    args = workspaces(maps, Fw_batch, csize, maxn)
    keys = opts.keys.split(",")

    results = {}
    for k in keys:
        fn, a, get = args[k]
        fn(*a, 1, True)
        C, Fw = (x.copy() for x in get())
        fn(*a, 1, False)
        C2, Fw2 = get()
        results[k] = (C, Fw, bool(np.array_equal(bits(C), bits(C2)) and np.array_equal(bits(Fw), bits(Fw2))))
    ref_C, ref_Fw = results["a"][0], results["a"][1]
    bit_report = {}
    for k, (C, Fw, idem) in results.items():
        per_state = [bool(np.array_equal(bits(C[s]), bits(ref_C[s])) and np.array_equal(bits(Fw[s]), bits(ref_Fw[s])))
                     for s in range(S)]
        bit_report[k] = {"identical_to_a_all_states": all(per_state),
                         "states_differing": [s for s in range(S) if not per_state[s]],
                         "max_abs_diff_C": float(np.max(np.abs(C - ref_C))), "rerun_idempotent": idem}

    reps = {}
    for k in keys:
        fn, a, _ = args[k]
        fn(*a, 3, False)
        t0 = time.perf_counter()
        fn(*a, 20, False)
        reps[k] = max(1, int(opts.target / ((time.perf_counter() - t0) / 20)))
    timing = {k: {False: [], True: []} for k in keys}
    for _ in range(opts.rounds):
        for k in keys:
            fn, a, _ = args[k]
            for restore in (False, True):
                t0 = time.perf_counter()
                fn(*a, reps[k], restore)
                timing[k][restore].append((time.perf_counter() - t0) / (reps[k] * S) * 1e9)
    med = {k: {r: float(np.median(v)) for r, v in d.items()} for k, d in timing.items()}

    print(f"fig4 ABA: {npairs} REVOLUTE_PAIR steps, {S} states; median of {opts.rounds} interleaved rounds of "
          f"~{opts.target} s; ns per state per program run")
    print(f"{'version':40s} {'reps':>7s} {'kernel only':>12s} {'with restore':>13s} {'min..max (kernel)':>20s}")
    for k in keys:
        v = timing[k][False]
        print(f"({k}) {LABEL[k]:36s} {reps[k]:7d} {med[k][False]:12.1f} {med[k][True]:13.1f} "
              f"{min(v):9.1f}..{max(v):8.1f}")
    ratios = {}
    for num, den in (("e", "a"), ("f", "b"), ("g", "a"), ("h", "a"), ("i", "b"), ("b", "a"), ("e", "g")):
        if num in med and den in med:
            ratios[f"{num}/{den}"] = {"kernel_only": med[num][False] / med[den][False],
                                      "with_restore": med[num][True] / med[den][True]}
    print("ratios (kernel only / with restore): " + ", ".join(
        f"{k} {v['kernel_only']:.2f}/{v['with_restore']:.2f}" for k, v in ratios.items()))
    print("bits vs (a), C and final Fw, every state:")
    for k, v in bit_report.items():
        print(f"  ({k}) identical={v['identical_to_a_all_states']}  differing states={v['states_differing']}  "
              f"max|dC|={v['max_abs_diff_C']:.3g}  rerun idempotent={v['rerun_idempotent']}")

    comp = {} if opts.no_compile else compile_times(keys)
    for name, t in comp.items():
        print(f"  first call {name:14s} {t['first_s']:7.3f} s   (second call {t['second_s'] * 1e3:.3f} ms)")

    import numba
    out = {"numba": numba.__version__,
           "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), ""),
           "pairs": npairs, "states": S, "rounds": opts.rounds, "reps_per_round": reps,
           "ns_per_state_per_program_run": {k: {"kernel_only": med[k][False], "with_restore": med[k][True],
                                                "all_rounds_kernel_only": timing[k][False],
                                                "all_rounds_with_restore": timing[k][True], "label": LABEL[k]}
                                            for k in keys},
           "ratios": ratios, "bits": bit_report, "compile": comp}
    (OUT / opts.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {OUT / opts.out}")


if __name__ == "__main__":
    main()
