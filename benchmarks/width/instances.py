"""Issue 40, second experiment: the lane source instantiated per width by generated vector ops (generate.py).

Run from the repository root (it generates the width modules first, generate.py):
      OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/width/instances.py [--no-compile]
Prints a table and writes benchmarks/width/out/result2.json.

Drivers (common.py's: each one @njit call running every REVOLUTE_PAIR of fig4's ABA program, 11 pairs, `reps`
times, 16 states):
  a   per state: elimination.compiled_pairs._revolute_pair (inlined) on 1-D Fw/C rows, state after state
  b   lanes:     elimination.lanes_pairs._revolute_pair (inlined, <16 x double> intrinsics) on (n, 16)
  e   generated width 1:  pairs_w1._revolute_pair over vectors_w1 (<1 x double> intrinsics), state after state on (n, 1)
  f   generated width 16: pairs_w16._revolute_pair over vectors_w16 (<16 x double>), on (n, 16)
  g   generated width 1, scalar ops: pairs_w1s over vectors_w1s (@njit(inline="always") D[k, 0] = ...), state after state
  h   as e, vectors_w1c: row address = data + row * WIDTH (compile-time), not get_item_pointer2's row * shape[1]
      (today's elimination/vectors.py)
  i   as f, vectors_w16c: the same constant-stride row addresses at width 16
(e, f: vectors.py generated with the run-time row stride it had before issue 40's first step.)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (S, bit_report, compile_times, first_and_second, load_inputs, report, save, timed,  # noqa: E402
                    workspaces)
import generate  # noqa: E402

generate.main()

import pairs_w1  # noqa: E402
import pairs_w16  # noqa: E402
import pairs_w1c  # noqa: E402
import pairs_w16c  # noqa: E402
import pairs_w1s  # noqa: E402

LANE_DRIVERS = {"f": pairs_w16.run_lanes, "i": pairs_w16c.run_lanes}
STATE_DRIVERS = {"e": pairs_w1.run_states, "g": pairs_w1s.run_states, "h": pairs_w1c.run_states}
LABEL = {"a": "per state (compiled_pairs)", "b": "lanes W=16 (vectors.py)", "e": "generated W=1 (<1 x double>)",
         "f": "generated W=16 (<16 x double>)", "g": "generated W=1, scalar numba ops",
         "h": "generated W=1, const row stride", "i": "generated W=16, const row stride"}
RATIOS = (("e", "a"), ("f", "b"), ("g", "a"), ("h", "a"), ("i", "b"), ("b", "a"), ("e", "g"))


def compile_child(key: str) -> dict:
    maps, Fw_batch, csize, maxn, _ = load_inputs()
    fn, a, _ = workspaces(maps, Fw_batch, csize, maxn, LANE_DRIVERS, STATE_DRIVERS)[key]
    return first_and_second(fn, a + (1, True))


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
    args = workspaces(maps, Fw_batch, csize, maxn, LANE_DRIVERS, STATE_DRIVERS)
    keys = opts.keys.split(",")
    bits_found = bit_report(args, keys)
    reps, timing, med = timed(args, keys, opts.rounds, opts.target)
    print(f"fig4 ABA: {npairs} REVOLUTE_PAIR steps, {S} states; median of {opts.rounds} interleaved rounds of "
          f"~{opts.target} s; ns per state per program run")
    ratios = report(keys, LABEL, reps, timing, med, RATIOS, bits_found)
    comp = {} if opts.no_compile else compile_times(Path(__file__), keys)
    for name, t in comp.items():
        print(f"  first call {name:14s} {t['first_s']:7.3f} s   (second call {t['second_s'] * 1e3:.3f} ms)")
    save(opts.out, {"pairs": npairs, "states": S, "rounds": opts.rounds, "reps_per_round": reps,
                    "ns_per_state_per_program_run": {k: {"kernel_only": med[k][False], "with_restore": med[k][True],
                                                         "label": LABEL[k]} for k in keys},
                    "ratios": ratios, "bits": bits_found, "compile": comp})


if __name__ == "__main__":
    main()
