"""A Digit-like leg with three closed loops (achilles, knee and toe rods).

Prints the ordering comparison of every algorithm on the leg (the table of
`gaussgraph compare digit_leg`) and writes the pictures of the LCABA
elimination when a folder is given.

    python examples/digit_legs.py [pictures/]
"""
from __future__ import annotations

import sys

import mechanics
from viz import compare as cmp
from viz.gallery import render_gallery


def main(out_dir: str | None = None) -> dict:
    leg = mechanics.models.digit_leg()
    for c in leg.constraints:
        print(f"loop {c.name!r}: supporting links {leg.supporting_links(c.name)}, root {leg.loop_root(c.name)!r}")
    rows = cmp.compare(leg, repeat=3)
    print(cmp.format_table(rows, repr(leg)))
    print("deviation: max |qdd - qdd_dense| / max |qdd_dense|, against the dense KKT solve (the reference)")
    if out_dir:
        render_gallery(leg, "lcaba", out_dir)
    return {"mechanism": leg, "rows": rows}


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
