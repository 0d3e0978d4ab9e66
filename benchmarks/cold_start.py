"""Cold start: what a first use compiles, each part in a new process with an empty numba cache.

    OPENBLAS_NUM_THREADS=1 python benchmarks/cold_start.py [--parts entries,main,batch] [--json out.json]

``entries``: one process compiling the engine's and the dynamics' entry kernels in turn (the engine's
factorization and solve, the one-trip elimination, fig4's LCABA single call), seconds each; ``main``: the README's
main job (``python -m viz.cli``) with an empty cache, then again with the cache it left (the second process);
``batch``: a new process that imports, prepares fig4's LCABA and makes a first batched call of 64 states.  Each
part runs with its own empty ``NUMBA_CACHE_DIR``; the tree measured is the one this script sits in.  Minutes on
these machines (issue 40's targets: main job <= 45 s, first batched call <= 60 s, a second process < 2 s).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ENTRIES = '''
import time
import numpy as np
t0 = time.perf_counter()
import elimination, mechanics
from elimination.warmup import _graph
print(f"import {time.perf_counter() - t0:.1f}", flush=True)
g = _graph()
plan = elimination.analyze(g, elimination.resolve_ordering(g, "min_fill"))
fig4 = mechanics.models.fig4()
steps = {
    "factorize": lambda: elimination.factorize(g, plan, backend="numba"),
    "solve": lambda: elimination.factorize(g, plan, backend="numba").solve(refine=0),
    "eliminate": lambda: elimination.compiled_elimination(g, plan)(),
    "dynamics": lambda: mechanics.prepare(fig4, "lcaba", backend="numba")(
        fig4.neutral_configuration(), np.zeros(fig4.nv), np.zeros(fig4.nv)),
}
for name, call in steps.items():
    s = time.perf_counter()
    call()
    print(f"{name} {time.perf_counter() - s:.1f}", flush=True)
'''

BATCH = '''
import time
t0 = time.perf_counter()
import numpy as np, mechanics
m = mechanics.models.fig4()
call = mechanics.prepare(m, "lcaba")
rng = np.random.default_rng(0)
call(rng.normal(size=(64, m.nq)), rng.normal(size=(64, m.nv)), rng.normal(size=(64, m.nv)))
print(f"batch {time.perf_counter() - t0:.1f}", flush=True)
'''


def _run(args: list, cache: str) -> tuple:
    """``(seconds, stdout)`` of ``python args`` with the numba cache in ``cache``."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, done.stdout


def _seconds(stdout: str) -> dict:
    """The ``name seconds`` lines a child printed."""
    return {name: float(value) for name, value in (line.split() for line in stdout.splitlines() if line.strip())}


def measure(parts: list) -> dict:
    out = {}
    for part in parts:
        with tempfile.TemporaryDirectory() as cache:
            if part == "entries":
                out["entries"] = _seconds(_run(["-c", ENTRIES], cache)[1])
            elif part == "main":
                out["main"] = {"cold": _run(["-m", "viz.cli"], cache)[0], "second": _run(["-m", "viz.cli"], cache)[0]}
            elif part == "batch":
                out["batch"] = _seconds(_run(["-c", BATCH], cache)[1])["batch"]
            else:
                raise SystemExit(f"cold_start.py: unknown part {part!r} (entries, main, batch)")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", default="entries,main,batch")
    parser.add_argument("--json")
    args = parser.parse_args()
    out = measure(args.parts.split(","))
    for name, seconds in out.get("entries", {}).items():
        print(f"{'entry ' + name:<28} {seconds:8.1f} s")
    if "main" in out:
        print(f"{'main job, empty cache':<28} {out['main']['cold']:8.1f} s")
        print(f"{'main job, second process':<28} {out['main']['second']:8.1f} s")
    if "batch" in out:
        print(f"{'first batched call':<28} {out['batch']:8.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
