"""Issue 40 measurement: one width-generic revolute pair (design A) vs today's per-state and 16-lane kernels.

Run from the repository root:  OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/width/bench.py
      (--no-compile: skip the cold-compile subprocesses; --prod: also cold-compile the production factorize_one /
      factorize_steps for context)
Prints a table and writes benchmarks/width/out/result.json (the generated variants, inputs and cold caches go
to benchmarks/width/out/ too: ignored by git).

Drivers (common.py: each one @njit call running every REVOLUTE_PAIR of fig4's ABA program, 11 pairs, `reps` times,
for 16 states):
  a     per state: elimination.compiled_pairs._revolute_pair (inlined) on 1-D Fw/C rows, state after state
  b     lanes:     elimination.lanes_pairs._revolute_pair (inlined, LLVM <16 x double> intrinsics) on (n, 16)
  c     generic.revolute_pair_w, W = Fw.shape[1] = 16 at run time, on (n, 16)   [design A, W=16]
  d     the same, W = 1, state after state on (n, 1)                              [design A, W=1; same compiled kernel]
  c16B  the same source, W = 16 a literal                                         [variant B]
  d1B   the same source, W = 1 a literal                                          [variant B]
  cI, dI, d1BI: c, d, d1B with the kernel inlined into its driver
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (HERE, FLOOR, S, bit_report, compile_times, first_and_second, load_inputs, report,  # noqa: E402
                    save, timed, with_drivers, workspaces, write)

VARIANTS = {  # module: (width literal or None = read at run time, inlined into its caller)
    "generic_rt": (None, False), "generic_w16": (16, False), "generic_w1": (1, False), "generic_inl": (None, True),
    "generic_w1_inl": (1, True),
}


def make_variants() -> None:
    """generic.py's variants, each with the shared drivers: the width read at run time or a literal (variant B),
    and/or the kernel inlined into its caller instead of called."""
    source = (HERE / "generic.py").read_text()
    runtime, decorator = "    W = Fw.shape[1]\n", '@njit(cache=True, error_model="numpy", **UNCOUNTED)\ndef revolute_pair_w('
    assert source.count(runtime) == 1 and source.count(decorator) == 1
    for module, (width, inline) in VARIANTS.items():
        text = source
        if width is not None:
            text = text.replace(runtime, f"    W = {width}  # variant B: the width a literal\n")
        if inline:
            text = text.replace(decorator, '@njit(cache=True, inline="always", error_model="numpy")\ndef revolute_pair_w(')
        write(f"{module}.py", with_drivers(text, "revolute_pair_w"))


make_variants()

from numba import njit  # noqa: E402

from elimination.compiled_front import UNCOUNTED  # noqa: E402
from elimination.lanes import aligned_zeros  # noqa: E402

import generic_inl  # noqa: E402
import generic_rt  # noqa: E402
import generic_w1  # noqa: E402
import generic_w16  # noqa: E402
import generic_w1_inl  # noqa: E402

LANE_DRIVERS = {"c": generic_rt.run_lanes, "c16B": generic_w16.run_lanes, "cI": generic_inl.run_lanes}
STATE_DRIVERS = {"d": generic_rt.run_states, "d1B": generic_w1.run_states, "dI": generic_inl.run_states,
                 "d1BI": generic_w1_inl.run_states}
LABEL = {"a": "per state (compiled_pairs)", "b": "lanes W=16 (vectors.py intrinsics)",
         "c": "generic, runtime W=16", "d": "generic, runtime W=1", "c16B": "generic, literal W=16",
         "d1B": "generic, literal W=1", "cI": "generic, runtime W=16, inlined", "dI": "generic, runtime W=1, inlined",
         "d1BI": "generic, literal W=1, inlined"}
KEYS = ["a", "b", "c", "d", "c16B", "d1B", "cI", "dI", "d1BI"]
RATIOS = (("c", "b"), ("d", "a"), ("c16B", "b"), ("d1B", "a"), ("cI", "b"), ("dI", "a"), ("d1BI", "a"), ("b", "a"),
          ("c", "a"))


@njit(cache=True, **UNCOUNTED)
def run_copy(Fw0, Fw, reps):
    """A trivial driver (the restore copy alone): the compile-time baseline of a driver without a kernel."""
    for _ in range(reps):
        for s in range(Fw.shape[0]):
            for k in range(Fw.shape[1]):
                Fw[s, k] = Fw0[s, k]
    return Fw[0, 0]


def production_check(maps, Fw_batch, csize, maxn):
    """The production entry points: factorize_one per state and factorize_steps on 16 lanes."""
    from elimination import compiled, lanes
    floats, ints = compiled.factorize_scratch_size(maxn)
    scratch = compiled.factorize_scratch_in(np.zeros(floats), np.zeros(ints, dtype=np.int64), maxn)
    Fw1, C1 = Fw_batch.copy(), np.zeros((S, csize))
    for s in range(S):
        compiled.factorize_one(maps, Fw1[s], C1[s], FLOOR, False, scratch)
    rows = aligned_zeros((lanes.scratch_rows(maxn), 16))
    (pair, front, r, ok), _ = lanes.scratch_in(rows, maxn)
    FwL = aligned_zeros((Fw_batch.shape[1], 16))
    FwL[:] = Fw_batch.T
    CL = aligned_zeros((csize, 16))
    floor = np.full((1, 16), FLOOR)
    ratio, weak, failed = np.zeros(16), np.zeros(16, dtype=np.int64), np.zeros(16, dtype=np.int64)
    compiled.factorize_steps(maps, FwL, CL, floor, np.bool_(False), scratch, pair, front, r, ok, ratio, weak, failed)
    assert (failed == -1).all()
    return {"factorize_one": (C1, Fw1), "factorize_steps": (CL.T, FwL.T)}


# ---------------------------------------------------------------- compile times (child processes)
def compile_child(mode: str) -> dict:
    """First-call times in this (fresh) process; NUMBA_CACHE_DIR set by the parent."""
    maps, Fw_batch, csize, maxn, _ = load_inputs()
    args = workspaces(maps, Fw_batch, csize, maxn, LANE_DRIVERS, STATE_DRIVERS)
    if mode == "copy":
        a = args["a"][1]
        return {"copy driver": first_and_second(run_copy, (a[5], a[6], 1))}
    if mode == "generic":  # the kernel alone, then the two drivers that call it (no recompile of the kernel)
        fn, a, _ = args["c"]
        out = {"generic kernel alone (W=16 arrays)":
               first_and_second(generic_rt.revolute_pair_w, a[:1] + (0,) + a[1:5] + a[6:])}
        out["driver c (calls compiled kernel)"] = first_and_second(fn, a + (1, True))
        fn, a, _ = args["d"]
        out["driver d (calls compiled kernel)"] = first_and_second(fn, a + (1, True))
        out["signatures of generic kernel"] = len(generic_rt.revolute_pair_w.signatures)
        return out
    if mode == "c_cold":  # driver c straight from cold: kernel + driver
        fn, a, _ = args["c"]
        return {"driver c incl. kernel": first_and_second(fn, a + (1, True))}
    if mode == "prod":
        t0 = time.perf_counter()
        production_check(maps, Fw_batch, csize, maxn)
        return {"production factorize_one + factorize_steps (+ scratch helpers)": {"first_s": time.perf_counter() - t0}}
    fn, a, _ = args[mode]
    return {f"driver {mode}": first_and_second(fn, a + (1, True))}


# ---------------------------------------------------------------- main
def main() -> None:
    import json

    parser = argparse.ArgumentParser()
    parser.add_argument("--child")
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--prod", action="store_true")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--target", type=float, default=0.2)
    opts = parser.parse_args()
    if opts.child:
        print(json.dumps(compile_child(opts.child)))
        return
    maps, Fw_batch, csize, maxn, ops = load_inputs()
    npairs = ops.count("REVOLUTE_PAIR")
    args = workspaces(maps, Fw_batch, csize, maxn, LANE_DRIVERS, STATE_DRIVERS)
    bits_found = bit_report(args, KEYS, production_check(maps, Fw_batch, csize, maxn))
    reps, timing, med = timed(args, KEYS, opts.rounds, opts.target)
    print(f"fig4 ABA: {npairs} REVOLUTE_PAIR steps, factor_size {Fw_batch.shape[1]}, conditional_size {csize}, "
          f"{S} states; median of {opts.rounds} rounds; ns per state per program run (all {npairs} pairs)")
    ratios = report(KEYS, LABEL, reps, timing, med, RATIOS, bits_found)
    comp = {} if opts.no_compile else compile_times(Path(__file__), ["copy", "a", "b", "generic", "c_cold", "c16B",
                                                                     "d1B", "cI", "dI", "d1BI"]
                                                    + (["prod"] if opts.prod else []))
    if comp:
        print("first-call times in fresh processes (s); cold = empty NUMBA_CACHE_DIR, cached = same dir again")
        for mode, d in comp.items():
            for name, t in d.items():
                extra = f"  (second call {t['second_s'] * 1e3:.2f} ms)" if isinstance(t, dict) and "second_s" in t else ""
                print(f"  {mode:18s} {name:44s} {t['first_s'] if isinstance(t, dict) else t:8}{extra}")
    save("result.json", {"pairs": npairs, "states": S, "rounds": opts.rounds, "reps_per_round": reps,
                         "ns_per_state_per_program_run": {k: {"kernel_only": med[k][False], "with_restore": med[k][True],
                                                              "label": LABEL[k]} for k in KEYS},
                         "ratios": ratios, "bits": bits_found, "compile": comp})


if __name__ == "__main__":
    main()
