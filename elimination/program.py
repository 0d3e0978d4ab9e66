"""Lowering: a :class:`~elimination.symbolic.Plan` as a flat program that a compiled executor runs.

Everything the numeric pass decides from structure is decided here, once:
where every factor's numbers sit in one flat per-state workspace, which
entries each step gathers into its dense front and where its outputs go (as
``(source, destination)`` index maps), the kind of substitution (declared
``+-I`` blocks, :attr:`Step.identity`) and of pivot.  The numbers themselves
never enter: one program serves every state and every batch element.

A :class:`Program` is an inspectable value -- instruction counts, workspace
sizes, flops -- and :mod:`elimination.compiled` runs it.  Its step table is
open-ended (one row of integer fields per step, named in :data:`FIELDS`), so
that cluster blocks and a refill at new linearisation points can be added as
new step kinds.

Today's instruction set covers the fronts the recursive algorithms of the
papers need -- no hard rows, or a substitution through a declared ``+-I``
block (a link acceleration through its own tree joint), and definite,
negative or quasi-definite pivots.  A plan with other fronts (general
substitutions, indefinite pivots) lowers to a program that says so
(:attr:`Program.unsupported`); :func:`elimination.factorize` then runs it on
numpy.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .symbolic import Plan

FIELDS = (
    "nF", "nS", "identity", "pivot", "n_min", "m",
    "h0", "h1", "s0", "s1", "a0", "a1",          # gather maps of H, scale, A (ranges into the map arrays)
    "out_H", "out_s",                            # workspace offsets of the new quadratic factor (-1: none)
    "T", "HF", "Linv", "Y",                      # offsets of the conditional's matrices (-1: none)
    "g0", "g1", "b0", "b1", "out_g",             # gather maps of the linear terms; the new factor's g
    "t", "y",                                    # per-solve caches of the forward sweep
    "xf0", "xf1", "xs0", "xs1",                  # scatter of the front's values, gather of the separator's
)
"""Columns of :attr:`Program.steps`."""
F = {name: i for i, name in enumerate(FIELDS)}
PIVOTS = {"none": 0, "definite": 1, "negative": 2, "quasidefinite": 3}


@dataclass
class _Maps:
    """Growing (source, destination) index maps of one kind."""

    src: list = field(default_factory=list)
    dst: list = field(default_factory=list)

    def add(self, src, dst) -> tuple:
        start = len(self.src)
        self.src.extend(int(s) for s in src)
        self.dst.extend(int(d) for d in dst)
        return start, len(self.src)

    def arrays(self):
        return np.asarray(self.src, dtype=np.int64), np.asarray(self.dst, dtype=np.int64)


@dataclass(frozen=True)
class Program:
    """A lowered plan.

    Attributes
    ----------
    plan : Plan
    steps : ndarray of int64, shape (n_steps, len(FIELDS))
        One row per step (columns :data:`FIELDS`).
    maps : dict
        Name -> ``(src, dst)`` int64 index arrays: ``H``, ``scale``, ``A`` (factor
        workspace -> front), ``g``, ``b`` (linear workspace -> front), ``xf``
        (front -> values), ``xs`` (values -> separator).
    factor_size, conditional_size, linear_size, cache_size, value_size : int
        Floats per batch element of each workspace.
    H_offset, scale_offset, A_offset, g_offset, b_offset : dict
        Graph factor index -> offset of its numbers in the workspaces.
    value_offset : dict
        Variable key -> offset of its value.
    unsupported : str
        Why the compiled executor cannot run this plan ("" when it can).
    """

    plan: Plan
    steps: np.ndarray
    maps: dict
    factor_size: int
    conditional_size: int
    linear_size: int
    cache_size: int
    value_size: int
    H_offset: dict
    scale_offset: dict
    A_offset: dict
    g_offset: dict
    b_offset: dict
    value_offset: dict
    unsupported: str = ""

    def summary(self) -> dict:
        """Instruction counts, workspace sizes (floats per state) and the plan's flops."""
        rows = self.steps
        return {
            "steps": len(rows),
            "identity_substitutions": int(np.sum(rows[:, F["identity"]] != 0)) if len(rows) else 0,
            "pivots": {kind: int(np.sum(rows[:, F["pivot"]] == code)) for kind, code in PIVOTS.items() if code} if len(rows) else {},
            "gathers": int(sum(len(src) for src, _ in self.maps.values())),
            "factor_workspace": self.factor_size,
            "conditional_workspace": self.conditional_size,
            "linear_workspace": self.linear_size + self.cache_size + self.value_size,
            "flops": self.plan.flops,
            "unsupported": self.unsupported,
        }

    def __repr__(self) -> str:
        s = self.summary()
        what = f", unsupported: {self.unsupported}" if self.unsupported else ""
        return f"Program({s['steps']} steps, {s['factor_workspace'] + s['conditional_workspace']} floats{what})"


def _unsupported(plan: Plan) -> str:
    for step in plan.steps:
        if step.hard_rows and not step.identity:
            return f"step {step.index} substitutes {list(step.frontal)} through a general hard block"
        if step.pivot not in PIVOTS:
            return f"step {step.index} has an {step.pivot} pivot"
    if not plan.complete:
        return "the plan is partial"
    return ""


def _square(offset: int, n: int, pos: np.ndarray, size: int):
    """(src, dst) of an ``n x n`` block at ``offset`` scattered to ``pos x pos`` of a ``size``-square front."""
    rows, cols = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return offset + (rows * n + cols).ravel(), (pos[rows] * size + pos[cols]).ravel()


def lower(plan: Plan) -> Program:
    """Lower ``plan`` to a :class:`Program` (structure only: call once per plan).

    Examples
    --------
    >>> import numpy as np
    >>> from factorgraph import FactorGraph, Variable, Quadratic
    >>> from elimination import analyze, natural
    >>> g = FactorGraph(); g.add_variable(Variable("x", 2))
    >>> _ = g.add(Quadratic(["x"], np.eye(2)))
    >>> lower(analyze(g, natural(g))).summary()["pivots"]
    {'definite': 1, 'negative': 0, 'quasidefinite': 0}
    """
    structure = plan.structure
    dims = {v.key: v.dim for v in structure.variables}
    factors = plan.factors
    size = {i: sum(dims[k] for k in f.keys) for i, f in enumerate(factors)}
    n_graph = len(structure.factors)

    offsets = {"H": {}, "scale": {}, "A": {}, "g": {}, "b": {}}
    cursor = {"F": 0, "L": 0}

    def take(space: str, n: int) -> int:
        start = cursor[space]
        cursor[space] += n
        return start

    for i, f in enumerate(factors):  # the graph's factors, then every generated one
        n = size[i]
        if f.hard:
            if i < n_graph:
                offsets["A"][i], offsets["b"][i] = take("F", f.rows * n), take("L", f.rows)
        else:
            offsets["H"][i], offsets["scale"][i], offsets["g"][i] = take("F", n * n), take("F", n), take("L", n)
    value_offset, start = {}, 0
    for var in structure.variables:
        value_offset[var.key], start = start, start + var.dim

    maps = {name: _Maps() for name in ("H", "scale", "A", "g", "b", "xf", "xs")}
    rows, c_size, k_size = [], 0, 0
    for step in plan.steps:
        nF, nS = step.frontal_dim, step.separator_dim
        n, nz = nF + nS, step.pivot_dim
        row = dict.fromkeys(FIELDS, -1)
        row.update(nF=nF, nS=nS, identity=step.identity, pivot=PIVOTS.get(step.pivot, -1), n_min=step.frontal_min_dim,
                   m=step.hard_rows)
        h, s, a, g, b = ([] for _ in range(5))
        row_start = 0
        for i, pos in zip(step.factors, step.positions):
            if factors[i].hard:
                if i in offsets["A"]:  # rows of the graph's factor, row-major, into the front's m x n block
                    r_i, n_i = factors[i].rows, size[i]
                    rr, cc = np.meshgrid(np.arange(r_i), np.arange(n_i), indexing="ij")
                    a.append((offsets["A"][i] + (rr * n_i + cc).ravel(), ((row_start + rr) * n + pos[cc]).ravel()))
                    b.append((offsets["b"][i] + np.arange(r_i), row_start + np.arange(r_i)))
                row_start += factors[i].rows
            else:
                h.append(_square(offsets["H"][i], len(pos), pos, n))
                s.append((offsets["scale"][i] + np.arange(len(pos)), pos))
                g.append((offsets["g"][i] + np.arange(len(pos)), pos))
        for name, parts in (("H", h), ("scale", s), ("A", a), ("g", g), ("b", b)):
            src = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, int)
            dst = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, int)
            key = {"H": "h", "scale": "s", "A": "a", "g": "g", "b": "b"}[name]
            row[key + "0"], row[key + "1"] = maps[name].add(src, dst)
        if step.new_quadratic is not None:
            row["out_H"], row["out_s"] = offsets["H"][step.new_quadratic], offsets["scale"][step.new_quadratic]
            row["out_g"] = offsets["g"][step.new_quadratic]
        if step.identity:
            row["T"], row["HF"] = c_size, c_size + nF * nS
            c_size += nF * nS + n * nF
            row["t"], k_size = k_size, k_size + nF
        if nz:
            row["Linv"], row["Y"] = c_size, c_size + nz * nz
            c_size += nz * nz + nz * nS
            row["y"], k_size = k_size, k_size + nz
        front = np.concatenate([np.arange(value_offset[k], value_offset[k] + dims[k]) for k in step.layout[: len(step.frontal)]])
        row["xf0"], row["xf1"] = maps["xf"].add(front, np.arange(nF))
        if nS:
            sep = np.concatenate([np.arange(value_offset[k], value_offset[k] + dims[k]) for k in step.separator])
            row["xs0"], row["xs1"] = maps["xs"].add(sep, np.arange(nS))
        else:
            row["xs0"] = row["xs1"] = maps["xs"].add([], [])[0]
        rows.append([row[name] for name in FIELDS])
    return Program(
        plan=plan,
        steps=np.asarray(rows, dtype=np.int64).reshape(len(rows), len(FIELDS)),
        maps={name: m.arrays() for name, m in maps.items()},
        factor_size=cursor["F"], conditional_size=c_size, linear_size=cursor["L"], cache_size=k_size,
        value_size=start, H_offset=offsets["H"], scale_offset=offsets["scale"], A_offset=offsets["A"],
        g_offset=offsets["g"], b_offset=offsets["b"], value_offset=value_offset, unsupported=_unsupported(plan),
    )
