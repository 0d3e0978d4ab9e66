"""Issue 40 measurement: one width-generic revolute pair (design A) vs today's per-state and 16-lane kernels.

Run from the repository root:  OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/width/bench.py
      (--no-compile: skip the cold-compile subprocesses; --prod: also cold-compile the production factorize_one /
      factorize_pairs for context)
Prints a table and writes benchmarks/width/out/result.json (the generated variants, inputs and cold caches go
to benchmarks/width/out/ too: ignored by git).

Drivers (each one @njit call running every REVOLUTE_PAIR of fig4's ABA program, 11 pairs, `reps` times, for 16 states):
  a     per state: elimination.compiled_pairs._revolute_pair (inlined) on 1-D Fw/C rows, state after state
  b     lanes:     elimination.lanes_pairs._revolute_pair (inlined, LLVM <16 x double> intrinsics) on (n, 16)
  c     generic.revolute_pair_w, W = Fw.shape[1] = 16 at run time, on (n, 16)   [design A, W=16]
  d     generic.revolute_pair_w, W = 1, state after state on (n, 1)              [design A, W=1; same compiled code as c]
  c16B  generic_w16.revolute_pair_w: the same source, W = 16 a literal           [variant B]
  d1B   generic_w1.revolute_pair_w:  the same source, W = 1 a literal            [variant B]
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
OUT = HERE / "out"  # generated variant modules, inputs, cold caches, results
OUT.mkdir(exist_ok=True)
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(OUT))


VARIANTS = {  # module: (width literal or None = read at run time, inlined into its caller)
    "generic_w16": (16, False), "generic_w1": (1, False), "generic_inl": (None, True), "generic_w1_inl": (1, True),
}


def make_variants() -> None:
    """generic.py's variants (written only when changed: numba's cache is keyed on the file's timestamp): the width
    a literal (variant B), and/or the kernel inlined into its caller instead of called."""
    source = (HERE / "generic.py").read_text()
    runtime, decorator = "    W = Fw.shape[1]\n", '@njit(cache=True, error_model="numpy", **UNCOUNTED)\ndef revolute_pair_w('
    assert source.count(runtime) == 1 and source.count(decorator) == 1
    for module, (width, inline) in VARIANTS.items():
        text = source
        if width is not None:
            text = text.replace(runtime, f"    W = {width}  # variant B: the width a literal\n")
        if inline:
            text = text.replace(decorator, '@njit(cache=True, inline="always", error_model="numpy")\ndef revolute_pair_w(')
        path = OUT / f"{module}.py"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


make_variants()

from numba import njit  # noqa: E402

from elimination import compiled_pairs, lanes_pairs  # noqa: E402
from elimination.compiled_front import OP, OP_REVOLUTE, UNCOUNTED  # noqa: E402
from elimination.lanes import aligned_zeros  # noqa: E402

import generic  # noqa: E402
import generic_w1  # noqa: E402
import generic_w16  # noqa: E402
import generic_inl  # noqa: E402
import generic_w1_inl  # noqa: E402

revolute_pair_w = generic.revolute_pair_w
revolute_pair_w16 = generic_w16.revolute_pair_w
revolute_pair_w1 = generic_w1.revolute_pair_w
revolute_pair_inl = generic_inl.revolute_pair_w
revolute_pair_w1_inl = generic_w1_inl.revolute_pair_w

S = 16  # states
FLOOR = 1e-12  # every state's scale floor, in all versions
INPUTS = OUT / "inputs.npz"
MAP_NAMES = ("steps", "hs", "hd", "ss", "sd", "as_", "ad", "ws", "wd", "es", "ed", "pbH", "pbs", "phs", "phd", "pss",
             "psd")


# ---------------------------------------------------------------- drivers
@njit(cache=True, **UNCOUNTED)
def run_copy(Fw0, Fw, reps):
    """A trivial driver (the restore copy alone): the compile-time baseline of a driver without a kernel."""
    for _ in range(reps):
        for s in range(Fw.shape[0]):
            for k in range(Fw.shape[1]):
                Fw[s, k] = Fw0[s, k]
    return Fw[0, 0]


@njit(cache=True, **UNCOUNTED)  # as elimination.compiled.factorize_one
def run_state(steps, pbH, pbs, phs, pss, Fw0, Fw, C, floor, H, scale, unit, Dv, reps, restore):
    """(a) Fw0, Fw (S, n), C (S, m), floor (S,); H (maxn, maxn), scale/unit/Dv (maxn,)."""
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
    """(b) Fw0, Fw (n, 16), C (m, 16), floor (1, 16), H (36, 16), scale/t6/u6/tmp (6, 16), r (16,)."""
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
def run_generic(steps, pbH, pbs, phs, pss, Fw0, Fw, C, floor, H, scale, t6, u6, tmp, r, reps, restore):
    """(c) as run_lanes, through generic.revolute_pair_w (W read from Fw.shape[1])."""
    acc = 0.0
    for _ in range(reps):
        if restore:
            for k in range(Fw.shape[0]):
                for w in range(Fw.shape[1]):
                    Fw[k, w] = Fw0[k, w]
        for st in range(steps.shape[0]):
            if steps[st, OP] == OP_REVOLUTE:
                revolute_pair_w(steps, st, pbH, pbs, phs, pss, Fw, C, floor, H, scale, t6, u6, tmp, r)
                acc += r[0]
    return acc


@njit(cache=True, error_model="numpy", **UNCOUNTED)
def run_generic_states(steps, pbH, pbs, phs, pss, Fw0, Fw, C, floor, H, scale, t6, u6, tmp, r, reps, restore):
    """(d) Fw0, Fw (S, n, 1), C (S, m, 1), floor (S, 1, 1), H (36, 1), ... r (1,): state after state at W = 1."""
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
                    revolute_pair_w(steps, st, pbH, pbs, phs, pss, Fs, Cs, fl, H, scale, t6, u6, tmp, r)
                    acc += r[0]
    return acc


@njit(cache=True, error_model="numpy", **UNCOUNTED)
def run_generic_inl(steps, pbH, pbs, phs, pss, Fw0, Fw, C, floor, H, scale, t6, u6, tmp, r, reps, restore):
    """(cI) run_generic through generic_inl (runtime W, kernel inlined)."""
    acc = 0.0
    for _ in range(reps):
        if restore:
            for k in range(Fw.shape[0]):
                for w in range(Fw.shape[1]):
                    Fw[k, w] = Fw0[k, w]
        for st in range(steps.shape[0]):
            if steps[st, OP] == OP_REVOLUTE:
                revolute_pair_inl(steps, st, pbH, pbs, phs, pss, Fw, C, floor, H, scale, t6, u6, tmp, r)
                acc += r[0]
    return acc


@njit(cache=True, error_model="numpy", **UNCOUNTED)
def run_generic_inl_states(steps, pbH, pbs, phs, pss, Fw0, Fw, C, floor, H, scale, t6, u6, tmp, r, reps, restore):
    """(dI) run_generic_states through generic_inl (runtime W, kernel inlined)."""
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
                    revolute_pair_inl(steps, st, pbH, pbs, phs, pss, Fs, Cs, fl, H, scale, t6, u6, tmp, r)
                    acc += r[0]
    return acc


@njit(cache=True, error_model="numpy", **UNCOUNTED)
def run_generic1_inl_states(steps, pbH, pbs, phs, pss, Fw0, Fw, C, floor, H, scale, t6, u6, tmp, r, reps, restore):
    """(d1BI) run_generic_states through generic_w1_inl (W = 1 literal, kernel inlined)."""
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
                    revolute_pair_w1_inl(steps, st, pbH, pbs, phs, pss, Fs, Cs, fl, H, scale, t6, u6, tmp, r)
                    acc += r[0]
    return acc


@njit(cache=True, error_model="numpy", **UNCOUNTED)
def run_generic16(steps, pbH, pbs, phs, pss, Fw0, Fw, C, floor, H, scale, t6, u6, tmp, r, reps, restore):
    """(c16B) run_generic through generic_w16 (W = 16 literal)."""
    acc = 0.0
    for _ in range(reps):
        if restore:
            for k in range(Fw.shape[0]):
                for w in range(Fw.shape[1]):
                    Fw[k, w] = Fw0[k, w]
        for st in range(steps.shape[0]):
            if steps[st, OP] == OP_REVOLUTE:
                revolute_pair_w16(steps, st, pbH, pbs, phs, pss, Fw, C, floor, H, scale, t6, u6, tmp, r)
                acc += r[0]
    return acc


@njit(cache=True, error_model="numpy", **UNCOUNTED)
def run_generic1_states(steps, pbH, pbs, phs, pss, Fw0, Fw, C, floor, H, scale, t6, u6, tmp, r, reps, restore):
    """(d1B) run_generic_states through generic_w1 (W = 1 literal)."""
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
                    revolute_pair_w1(steps, st, pbH, pbs, phs, pss, Fs, Cs, fl, H, scale, t6, u6, tmp, r)
                    acc += r[0]
    return acc


# ---------------------------------------------------------------- inputs
def build_inputs() -> None:
    """fig4's ABA program and 16 random states' factor workspaces, saved to inputs.npz (the compile children read it
    without importing mechanics)."""
    import elimination
    import mechanics
    from elimination.program import F, Op
    from mechanics.gplc import gplc_graph

    mech = mechanics.models.fig4().without_constraints()
    _, plan = mechanics.algorithm_plan(mech, "aba")
    program = plan.lowered()
    rng = np.random.default_rng(0)
    q = mech.random_configuration(rng, (S,))
    v = rng.normal(size=(S, mech.nv))
    tau = rng.normal(size=(S, mech.nv))
    graph = gplc_graph(mech, q, v, tau, policy="prox")
    Fw, _ = plan.layout().fill(graph)
    maps = elimination.compiled.factorize_maps(program)
    ops = [Op(o).name for o in program.steps[:, F["op"]]]
    np.savez(INPUTS, Fw=np.ascontiguousarray(Fw, dtype=np.float64), conditional_size=program.conditional_size,
             maxn=elimination.compiled.max_front(program), ops=np.array(ops),
             **{f"map_{k}": a for k, a in zip(MAP_NAMES, maps)})


def load_inputs():
    z = np.load(INPUTS)
    maps = tuple(z[f"map_{k}"] for k in MAP_NAMES)
    return maps, z["Fw"], int(z["conditional_size"]), int(z["maxn"]), [str(o) for o in z["ops"]]


def workspaces(maps, Fw_batch, csize, maxn):
    """Per driver: its argument tuple (without reps, restore) and a function returning (C, Fw, ratio-acc) per state
    as (S, m), (S, n) arrays."""
    steps, pbH, pbs, phs, pss = maps[0], maps[11], maps[12], maps[13], maps[15]
    head = (steps, pbH, pbs, phs, pss)
    n = Fw_batch.shape[1]
    W = 16

    # (a) per state
    Fw0a = Fw_batch.copy()
    Fwa, Ca = Fw_batch.copy(), np.zeros((S, csize))
    floora = np.full(S, FLOOR)
    sa = (np.zeros((maxn, maxn)), np.zeros(maxn), np.zeros(maxn), np.zeros(maxn))
    args = {"a": (run_state, head + (Fw0a, Fwa, Ca, floora) + sa, lambda: (Ca, Fwa))}

    # (b), (c), (c16B): (n, 16) lanes, aligned as lanes_pairs' scratch
    def lane_set():
        Fw0 = aligned_zeros((n, W))
        Fw0[:] = Fw_batch.T
        Fw, C = aligned_zeros((n, W)), aligned_zeros((csize, W))
        Fw[:] = Fw0
        floor = aligned_zeros((1, W))
        floor[:] = FLOOR
        H, scale, t6, u6, tmp = (aligned_zeros((36, W)), aligned_zeros((6, W)), aligned_zeros((6, W)),
                                 aligned_zeros((6, W)), aligned_zeros((6, W)))
        r = np.zeros(W)
        return (Fw0, Fw, C, floor, H, scale, t6, u6, tmp, r), (lambda: (C.T, Fw.T))

    for key, fn in (("b", run_lanes), ("c", run_generic), ("c16B", run_generic16), ("cI", run_generic_inl)):
        rest, get = lane_set()
        args[key] = (fn, head + rest, get)

    # (d), (d1B): state after state at W = 1, (S, n, 1)
    def state1_set():
        Fw0 = Fw_batch.reshape(S, n, 1).copy()
        Fw, C = Fw0.copy(), np.zeros((S, csize, 1))
        floor = np.full((S, 1, 1), FLOOR)
        scratch = (np.zeros((36, 1)), np.zeros((6, 1)), np.zeros((6, 1)), np.zeros((6, 1)), np.zeros((6, 1)),
                   np.zeros(1))
        return (Fw0, Fw, C, floor) + scratch, (lambda: (C[:, :, 0], Fw[:, :, 0]))

    for key, fn in (("d", run_generic_states), ("d1B", run_generic1_states), ("dI", run_generic_inl_states),
                    ("d1BI", run_generic1_inl_states)):
        rest, get = state1_set()
        args[key] = (fn, head + rest, get)
    return args


# ---------------------------------------------------------------- checks
def bits(a):
    return np.ascontiguousarray(a).view(np.int64)


def production_check(maps, Fw_batch, csize, maxn):
    """The production entry points (cached in /work/main): factorize_one per state and factorize_pairs on 16 lanes."""
    from elimination import compiled
    floats, ints = compiled.factorize_scratch_size(maxn)
    scratch = compiled.factorize_scratch_in(np.zeros(floats), np.zeros(ints, dtype=np.int64), maxn)
    Fw1, C1 = Fw_batch.copy(), np.zeros((S, csize))
    for s in range(S):
        compiled.factorize_one(maps, Fw1[s], C1[s], FLOOR, False, scratch)
    rows = aligned_zeros((lanes_pairs.pairs_scratch_rows(maxn), 16))
    lane_scratch, _ = lanes_pairs.pairs_scratch_in(rows, maxn)
    FwL = aligned_zeros((Fw_batch.shape[1], 16))
    FwL[:] = Fw_batch.T
    CL = aligned_zeros((csize, 16))
    floor = np.full((1, 16), FLOOR)
    ratio, weak, failed = np.zeros(16), np.zeros(16, dtype=np.int64), np.zeros(16, dtype=np.int64)
    lanes_pairs.factorize_pairs(maps, FwL, CL, floor, scratch, lane_scratch, ratio, weak, failed)
    assert (failed == -1).all()
    return {"factorize_one": (C1, Fw1), "factorize_pairs": (CL.T, FwL.T)}


# ---------------------------------------------------------------- compile times (child processes)
def compile_child(mode: str) -> dict:
    """First-call times in this (fresh) process; NUMBA_CACHE_DIR set by the parent."""
    maps, Fw_batch, csize, maxn, _ = load_inputs()
    args = workspaces(maps, Fw_batch, csize, maxn)
    out = {}

    def first_and_second(name, fn, a):
        t0 = time.perf_counter()
        fn(*a)
        t1 = time.perf_counter()
        fn(*a)
        t2 = time.perf_counter()
        out[name] = {"first_s": t1 - t0, "second_s": t2 - t1}

    if mode == "copy":
        fn, a, _ = args["a"]
        first_and_second("copy driver", run_copy, (a[5], a[6], 1))
    elif mode in ("a", "b", "c16B", "d1B", "cI", "dI", "d1BI"):
        fn, a, _ = args[mode]
        first_and_second(f"driver {mode}", fn, a + (1, True))
    elif mode == "generic":  # the kernel alone, then the two drivers that call it (no recompile of the kernel)
        fn, a, _ = args["c"]
        first_and_second("generic kernel alone (W=16 arrays)", revolute_pair_w, a[:1] + (0,) + a[1:5] + a[6:])
        first_and_second("driver c (calls compiled kernel)", fn, a + (1, True))
        fn, a, _ = args["d"]
        first_and_second("driver d (calls compiled kernel)", fn, a + (1, True))
        out["signatures of generic kernel"] = len(revolute_pair_w.signatures)
    elif mode == "c_cold":  # driver c straight from cold: kernel + driver
        fn, a, _ = args["c"]
        first_and_second("driver c incl. kernel", fn, a + (1, True))
    elif mode == "prod":
        from elimination import compiled
        t0 = time.perf_counter()
        production_check(maps, Fw_batch, csize, maxn)
        out["production factorize_one + factorize_pairs (+ scratch helpers)"] = {"first_s": time.perf_counter() - t0}
    return out


def compile_times(prod: bool) -> dict:
    modes = ["copy", "a", "b", "generic", "c_cold", "c16B", "d1B", "cI", "dI", "d1BI"] + (["prod"] if prod else [])
    result = {}
    for mode in modes:
        for temperature in ("cold", "cached"):
            if temperature == "cold":
                cache = Path(tempfile.mkdtemp(prefix=f"cache_{mode}_", dir=OUT))
            env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
            proc = subprocess.run([sys.executable, str(HERE / "bench.py"), "--child", mode], env=env,
                                  capture_output=True, text=True)
            if proc.returncode:
                raise RuntimeError(proc.stderr)
            result[f"{mode} ({temperature})"] = json.loads(proc.stdout.strip().splitlines()[-1])
        shutil.rmtree(cache)
    return result


# ---------------------------------------------------------------- main
def main() -> None:
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
    if not INPUTS.exists():
        build_inputs()
    maps, Fw_batch, csize, maxn, ops = load_inputs()
    npairs = ops.count("REVOLUTE_PAIR")
    args = workspaces(maps, Fw_batch, csize, maxn)
    keys = ["a", "b", "c", "d", "c16B", "d1B", "cI", "dI", "d1BI"]
    label = {"a": "per state (compiled_pairs)", "b": "lanes W=16 (vectors.py intrinsics)",
             "c": "generic, runtime W=16", "d": "generic, runtime W=1", "c16B": "generic, literal W=16",
             "d1B": "generic, literal W=1", "cI": "generic, runtime W=16, inlined", "dI": "generic, runtime W=1, inlined",
             "d1BI": "generic, literal W=1, inlined"}

    # bits: one run from the original workspaces (fresh C), then a second run without restoring (idempotent?)
    results = {}
    for k in keys:
        fn, a, get = args[k]
        fn(*a, 1, True)
        C, Fw = (x.copy() for x in get())
        fn(*a, 1, False)
        C2, Fw2 = get()
        results[k] = (C, Fw, bool(np.array_equal(bits(C), bits(C2)) and np.array_equal(bits(Fw), bits(Fw2))))
    prod = production_check(maps, Fw_batch, csize, maxn)
    ref_C, ref_Fw = results["a"][0], results["a"][1]
    bit_report = {}
    for k, (C, Fw, idem) in list(results.items()) + [(p, (C, Fw, None)) for p, (C, Fw) in prod.items()]:
        per_state = [bool(np.array_equal(bits(C[s]), bits(ref_C[s])) and np.array_equal(bits(Fw[s]), bits(ref_Fw[s])))
                     for s in range(S)]
        bit_report[k] = {"identical_to_a_all_states": all(per_state), "states_differing": [s for s in range(S) if not per_state[s]],
                         "max_abs_diff_C": float(np.max(np.abs(C - ref_C))), "rerun_idempotent": idem}
    written = float(np.abs(ref_C).sum())

    # timing: per driver, reps per round for ~target s, rounds interleaved, median
    reps = {}
    for k in keys:
        fn, a, _ = args[k]
        for restore in (False, True):
            fn(*a, 3, restore)
        t0 = time.perf_counter()
        fn(*a, 20, False)
        per = (time.perf_counter() - t0) / 20
        reps[k] = max(1, int(opts.target / per))
    timing = {k: {False: [], True: []} for k in keys}
    for _ in range(opts.rounds):
        for k in keys:
            fn, a, _ = args[k]
            for restore in (False, True):
                t0 = time.perf_counter()
                fn(*a, reps[k], restore)
                timing[k][restore].append((time.perf_counter() - t0) / (reps[k] * S) * 1e9)
    med = {k: {r: float(np.median(v)) for r, v in d.items()} for k, d in timing.items()}

    print(f"fig4 ABA: {npairs} REVOLUTE_PAIR steps, factor_size {Fw_batch.shape[1]}, conditional_size {csize}, "
          f"{S} states; median of {opts.rounds} rounds; ns per state per program run (all {npairs} pairs)")
    print(f"{'version':38s} {'reps/round':>10s} {'kernel only':>12s} {'with restore':>13s} {'min..max (kernel)':>20s}")
    for k in keys:
        v = timing[k][False]
        print(f"({k:4s}) {label[k]:31s} {reps[k]:10d} {med[k][False]:12.1f} {med[k][True]:13.1f} "
              f"{min(v):9.1f}..{max(v):8.1f}")
    ratios = {}
    for num, den in (("c", "b"), ("d", "a"), ("c16B", "b"), ("d1B", "a"), ("cI", "b"), ("dI", "a"), ("d1BI", "a"),
                     ("b", "a"), ("c", "a")):
        ratios[f"{num}/{den}"] = {"kernel_only": med[num][False] / med[den][False],
                                  "with_restore": med[num][True] / med[den][True]}
    print("ratios (kernel only / with restore): " + ", ".join(
        f"{k} {v['kernel_only']:.2f}/{v['with_restore']:.2f}" for k, v in ratios.items()))
    print("bits vs (a), C and final Fw, every state:")
    for k, v in bit_report.items():
        print(f"  {k:16s} identical={v['identical_to_a_all_states']}  differing states={v['states_differing']}  "
              f"max|dC|={v['max_abs_diff_C']:.3g}  rerun idempotent={v['rerun_idempotent']}")
    print(f"  (sum |C| of (a): {written:.6g}, nonzero entries per state: {int(np.count_nonzero(ref_C[0]))})")

    comp = {} if opts.no_compile else compile_times(opts.prod)
    if comp:
        print("first-call times in fresh processes (s); cold = empty NUMBA_CACHE_DIR, cached = same dir again;"
              " second_s = the run itself")
        for mode, d in comp.items():
            for name, t in d.items():
                if isinstance(t, dict):
                    extra = f"  (second call {t['second_s']*1e3:.2f} ms)" if "second_s" in t else ""
                    print(f"  {mode:18s} {name:44s} {t['first_s']:8.3f}{extra}")
                else:
                    print(f"  {mode:18s} {name:44s} {t}")

    import numba
    import platform
    out = {"machine": platform.processor() or platform.machine(), "numba": numba.__version__,
           "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), ""),
           "pairs": npairs, "states": S, "rounds": opts.rounds, "reps_per_round": reps,
           "ns_per_state_per_program_run": {k: {"kernel_only": med[k][False], "with_restore": med[k][True],
                                                "all_rounds_kernel_only": timing[k][False],
                                                "all_rounds_with_restore": timing[k][True], "label": label[k]}
                                            for k in keys},
"ratios": ratios, "bits": bit_report, "compile": comp}
    (OUT / "result.json").write_text(json.dumps(out, indent=1))
    print(f"wrote {OUT / 'result.json'}")


if __name__ == "__main__":
    main()
