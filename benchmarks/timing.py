"""Per-call time of our algorithms against Pinocchio, measured in the same run.

For each scene: Pinocchio's ``aba`` (tree) or ``constraintDynamics`` and
``lcaba`` (proximal settings mu_pin = 1/mu), then ``mechanics.forward_dynamics``
per algorithm, single state and batched (per-state time of a batch of
``--batch`` states through one plan).  Medians over ``--repeat`` calls; ratios
are ours / Pinocchio's fastest.  Pinocchio 4.1's ``lcaba`` reads stale
``data.oa`` with CONTACT_6D, so ``data.oa`` is reset before each call.

Run from the repository root (needs the test extra)::

    python benchmarks/timing.py --json timing.json
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pinocchio as pin

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import mechanics  # noqa: E402
from mechanics.pinocchio_io import from_pinocchio  # noqa: E402
from tests.mechanics.pinocchio_oracle import hands_and_cube, random_state, scenario, std_vectors  # noqa: E402

SCENES = ["ur5", "talos", "solo12", "ur5_6d", "talos_feet", "solo12_feet", "four_bar", "two_hands_cube"]
TREE = ["aba"]
CONSTRAINED = ["pv", "proxbbo", "lcaba", "proxltl", "min_fill", "pv_soft"]
MU = 1e6


def median_time(call, repeat: int) -> float:
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def pinocchio_times(model, cms, q, v, tau, repeat: int) -> dict:
    data = model.createData()
    if not cms:
        return {"pin.aba": median_time(lambda: pin.aba(model, data, q, v, tau), repeat)}
    models, datas = std_vectors(cms)
    settings = pin.ProximalSettings(1e-10, 1.0 / MU, 10)
    pin.initConstraintDynamics(model, data, models, datas)
    out = {"pin.constraintDynamics": median_time(
        lambda: pin.constraintDynamics(model, data, q, v, tau, models, datas, settings), repeat)}
    lc_data = model.createData()
    pin.computeJointMinimalOrdering(model, lc_data, models)

    def lcaba():
        for i in range(model.njoints):
            lc_data.oa[i] = pin.Motion.Zero()
        pin.lcaba(model, lc_data, q, v, tau, models, datas, settings)

    out["pin.lcaba"] = median_time(lcaba, repeat)
    return out


def scene(name: str, rng):
    if name == "two_hands_cube":
        model, cms, q = hands_and_cube(2, rng)
    else:
        model, cms, q = scenario(name, rng=rng)
    return model, list(cms), q


def measure(name: str, repeat: int, batch: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    model, cms, q = scene(name, rng)
    _, v, tau = random_state(model, rng)
    mech = from_pinocchio(model, cms)
    row = {"scene": name, "nv": mech.nv, "m": mech.constraint_dim, **pinocchio_times(model, cms, q, v, tau, repeat)}
    reference = min(value for key, value in row.items() if key.startswith("pin."))
    Q = np.broadcast_to(q, (batch, q.size))
    V, T = rng.normal(size=(batch, mech.nv)), rng.normal(size=(batch, mech.nv))
    for algorithm in (CONSTRAINED if cms else TREE):
        single = median_time(lambda: mechanics.forward_dynamics(mech, q, v, tau, algorithm=algorithm, mu=MU), repeat)
        batched = median_time(lambda: mechanics.forward_dynamics(mech, Q, V, T, algorithm=algorithm, mu=MU), max(3, repeat // 10))
        iterations = mechanics.forward_dynamics(mech, q, v, tau, algorithm=algorithm, mu=MU).iterations
        row[algorithm] = {"single_s": single, "batched_per_state_s": batched / batch, "iterations": iterations,
                          "ratio_single": single / reference, "ratio_batched": batched / batch / reference}
    return row


def print_table(rows: list) -> None:
    print(f"{'scene':<16}{'nv':>4}{'m':>4}  {'pinocchio (us)':<34}{'ours: single ms / batched us per state (ratio)'}")
    for row in rows:
        pins = ", ".join(f"{k[4:]} {v * 1e6:.1f}" for k, v in row.items() if k.startswith("pin."))
        ours = "; ".join(
            f"{a} {r['single_s'] * 1e3:.1f}/{r['batched_per_state_s'] * 1e6:.0f} ({r['ratio_batched']:.0f}x)"
            for a, r in row.items() if isinstance(r, dict)
        )
        print(f"{row['scene']:<16}{row['nv']:>4}{row['m']:>4}  {pins:<34}{ours}")
    print("ratio: our batched per-state time / Pinocchio's fastest per-call time, same machine, same run")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", default=",".join(SCENES), help=f"comma list of {SCENES}")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = [measure(name, args.repeat, args.batch, args.seed) for name in args.scenes.split(",")]
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps({"machine": platform.platform(), "python": platform.python_version(),
                                         "pinocchio": pin.__version__, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
