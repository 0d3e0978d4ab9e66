"""A Digit-like leg with three closed loops (achilles, knee and toe rods).

Prints the ordering comparison of every algorithm on the leg (the table of
`gaussgraph compare digit_leg`), then the three loops embedded (003's C-ABA:
each loop's joints written through independent coordinates, no multiplier)
beside proxBBO's multipliers at a closed state, and writes the pictures of the
LCABA elimination when a folder is given.

    python examples/digit_legs.py [pictures/]
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

import mechanics
from mechanics.closure import project_velocity
from viz import compare as cmp
from viz.gallery import render_gallery


def main(out_dir: str | None = None) -> dict:
    leg = mechanics.models.digit_leg()
    for c in leg.constraints:
        print(f"loop {c.name!r}: supporting links {leg.supporting_links(c.name)}, root {leg.loop_root(c.name)!r}")
    rows = cmp.compare(leg, repeat=3)
    print(cmp.format_table(rows, repr(leg)))
    print("deviation: max |qdd - qdd_dense| / max |qdd_dense|, against the dense KKT solve (the reference)")
    embedded = embedded_beside_multipliers(leg)
    if out_dir:
        render_gallery(leg, "lcaba", out_dir)
    return {"mechanism": leg, "rows": rows, **embedded}


def embedded_beside_multipliers(leg: mechanics.Mechanism) -> dict:
    """The leg's loops embedded and as proxBBO's multipliers at one closed state, against the dense KKT."""
    rng = np.random.default_rng(7)
    q = leg.project(leg.integrate(leg.neutral_configuration(), 0.3 * rng.normal(size=leg.nv)))  # (loops closed)
    v, tau = project_velocity(leg, q, rng.normal(size=leg.nv)), rng.normal(size=leg.nv)
    dense = mechanics.gplc_graph(leg, q, v, tau, policy="hard").dense_solve()
    reference = np.concatenate([dense[mechanics.JointAcceleration(l.name)] for l in leg.links if l.joint.nv])
    deviation = {}
    for name in ("proxbbo", "embed/clusters"):
        with warnings.catch_warnings():  # (a loop's map per state runs on the numpy path for now: it says so)
            warnings.simplefilter("ignore", mechanics.NumpyPathWarning)
            result = mechanics.forward_dynamics(leg, q, v, tau, name, tol=1e-12)
        flops = mechanics.algorithm_plan(leg, name)[1].flops
        deviation[name] = float(np.max(np.abs(result.qdd - reference)) / max(1.0, np.max(np.abs(reference))))
        print(f"{name:15s} {result.iterations} solve(s), {flops:7.0f} flops, deviation {deviation[name]:.1e} "
              f"against the dense KKT solve")
    return {"embedded_deviation": deviation}


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
