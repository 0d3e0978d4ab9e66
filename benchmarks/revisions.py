"""Two source trees of gaussgraph against each other: prepared single calls and batches, interleaved.

A change that should move no time (a refactor, a new dispatch) is checked by timing the tree before it and
the tree after it, process by process in alternation (``--rounds``), each process importing one tree
(``PYTHONPATH``): the minimum over ``--single-rounds`` rounds of ``--calls`` prepared single calls and over
three batches of ``--batch`` states, in microseconds a state, per scene and algorithm.  Run it from either
tree, with warm numba caches in both (a first run compiles)::

    git worktree add /tmp/before <commit>
    OPENBLAS_NUM_THREADS=1 python benchmarks/revisions.py /tmp/before . --json revisions.json

The table gives each round's numbers and ``after / before`` of the better round of each.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ALGORITHMS = ("aba", "lcaba", "proxbbo", "proxltl")


def measure(tree: str, scenes: list, algorithms: list, batch: int, calls: int, rounds: int) -> dict:
    """``{"scene/algorithm": [single us, batch us a state]}`` of the tree this process imports."""
    import warnings

    import numpy as np

    sys.path.insert(0, str(Path(tree) / "benchmarks"))
    import dynamics as scenes_of  # noqa: E402  (the benchmark robots: dynamics.build_scene)
    import mechanics  # noqa: E402

    warnings.simplefilter("ignore")
    rng, out = np.random.default_rng(0), {}
    for scene in scenes:
        built = scenes_of.build_scene(scene, rng)
        Q, V, T = built.sample(batch, rng)
        for algorithm in algorithms:
            mech = built.mech.without_constraints() if algorithm == "aba" else built.mech
            call = mechanics.prepare(mech, algorithm, mu=1e6, tol=1e-10, max_iter=50)
            q, v, tau = Q[0].copy(), V[0].copy(), T[0].copy()
            call(q, v, tau), call(Q, V, T)
            single = min(_timed(lambda: call(q, v, tau), calls) for _ in range(rounds))
            batched = min(_timed(lambda: call(Q, V, T), 1) / batch for _ in range(3))
            out[f"{scene}/{algorithm}"] = [1e6 * single, 1e6 * batched]
    return out


def _timed(call, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        call()
    return (time.perf_counter() - start) / n


def _run(tree: str, args) -> dict:
    env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()), OPENBLAS_NUM_THREADS="1")
    command = [sys.executable, __file__, "--measure", tree, "--scenes", args.scenes, "--algorithms", args.algorithms,
               "--batch", str(args.batch), "--calls", str(args.calls), "--single-rounds", str(args.single_rounds)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", nargs="?")
    parser.add_argument("after", nargs="?")
    parser.add_argument("--scenes", default="talos_feet,cassie,solo12_feet")
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS))
    parser.add_argument("--rounds", type=int, default=2, help="processes per tree, alternating")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--single-rounds", type=int, default=7)
    parser.add_argument("--json")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.scenes.split(","), args.algorithms.split(","), args.batch,
                                 args.calls, args.single_rounds)))
        return
    runs = {"before": [], "after": []}
    for _ in range(args.rounds):
        for side in ("before", "after"):
            runs[side].append(_run(getattr(args, side), args))
    print(f"us a state: prepared single calls (min of {args.single_rounds} x {args.calls}), batches of {args.batch} "
          f"(min of 3); rounds separated by /; ratio: after / before, better round of each")
    print(f"{'scene/algorithm':28s} {'single before':>20s} {'single after':>20s} {'ratio':>6s} "
          f"{'batch before':>20s} {'batch after':>20s} {'ratio':>6s}")
    for key in runs["before"][0]:
        cells = []
        for column in (0, 1):
            before = [r[key][column] for r in runs["before"]]
            after = [r[key][column] for r in runs["after"]]
            cells += [" / ".join(f"{x:.2f}" for x in before), " / ".join(f"{x:.2f}" for x in after),
                      f"{min(after) / min(before):.2f}"]
        print(f"{key:28s} {cells[0]:>20s} {cells[1]:>20s} {cells[2]:>6s} {cells[3]:>20s} {cells[4]:>20s} {cells[5]:>6s}")
    if args.json:
        Path(args.json).write_text(json.dumps({"before": args.before, "after": args.after, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
