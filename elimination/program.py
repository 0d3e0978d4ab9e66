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

The instruction set covers every front of a complete plan: no hard rows, a
substitution through a declared ``+-I`` block (a link acceleration through its
own tree joint) or through a general block (rank-revealing SVD, rows left
over passed on or dropped), and definite, negative, quasi-definite or
indefinite pivots.  A partial plan lowers to a program that says it cannot
run (:attr:`Program.unsupported`); :func:`elimination.factorize` then runs it
on numpy.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .symbolic import Plan

FIELDS = (
    "nF", "nS", "identity", "pivot", "n_min", "m", "r", "p", "d", "nz",
    "h0", "h1", "s0", "s1", "a0", "a1", "w0", "w1",  # gather maps of H, scale, A, row scales (ranges into the maps)
    "out_H", "out_s", "out_A", "e0", "e1",           # the new quadratic factor; the new hard factor and its columns
    "T", "HF", "Linv", "Y", "D", "W", "N", "E", "Ed", "RS",  # offsets of the conditional's arrays (-1: none)
    "g0", "g1", "b0", "b1", "out_g", "out_b",        # gather maps of the linear terms; the new factors' terms
    "t", "y", "drop",                                # per-solve caches; offset of the dropped rows' residuals
    "xf0", "xf1", "xs0", "xs1",                      # scatter of the front's values, gather of the separator's
)
"""Columns of :attr:`Program.steps`."""
F = {name: i for i, name in enumerate(FIELDS)}
PIVOTS = {"none": 0, "definite": 1, "negative": 2, "quasidefinite": 3, "indefinite": 4}


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
        Name -> ``(src, dst)`` int64 index arrays: ``H``, ``scale``, ``A``,
        ``rs`` (row scales ``1 / omega``) (factor workspace -> front), ``eq``
        (the front's separator columns -> the new hard factor's), ``g``, ``b``
        (linear workspace -> front), ``xf`` (front -> values), ``xs`` (values ->
        separator).
    factor_size, conditional_size, linear_size, cache_size, value_size, dropped_size : int
        Floats per batch element of each workspace (``dropped_size``: rows whose
        right-hand sides the solve checks for consistency).
    check_rank : bool
        Whether substitutions compare their numerical rank with the plan's
        (not for plans re-made with numerical ranks).
    H_offset, scale_offset, A_offset, rs_offset, g_offset, b_offset : dict
        Working factor index -> offset of its numbers in the workspaces.
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
    dropped_size: int
    check_rank: bool
    H_offset: dict
    scale_offset: dict
    A_offset: dict
    rs_offset: dict
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
            "general_substitutions": int(np.sum((rows[:, F["m"]] > 0) & (rows[:, F["identity"]] == 0))) if len(rows) else 0,
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
    if not plan.complete:
        return "the plan is partial"
    for step in plan.steps:
        if step.pivot not in PIVOTS:
            return f"step {step.index} has an {step.pivot} pivot"
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
    {'definite': 1, 'negative': 0, 'quasidefinite': 0, 'indefinite': 0}
    """
    structure = plan.structure
    dims = {v.key: v.dim for v in structure.variables}
    factors = plan.factors
    size = {i: sum(dims[k] for k in f.keys) for i, f in enumerate(factors)}

    offsets = {"H": {}, "scale": {}, "A": {}, "rs": {}, "g": {}, "b": {}}
    cursor = {"F": 0, "L": 0}

    def take(space: str, n: int) -> int:
        start = cursor[space]
        cursor[space] += n
        return start

    for i, f in enumerate(factors):  # the graph's factors, then every generated one
        n = size[i]
        if f.hard:
            offsets["A"][i], offsets["rs"][i] = take("F", f.rows * n), take("F", f.rows)
            offsets["b"][i] = take("L", f.rows)
        else:
            offsets["H"][i], offsets["scale"][i], offsets["g"][i] = take("F", n * n), take("F", n), take("L", n)
    value_offset, start = {}, 0
    for var in structure.variables:
        value_offset[var.key], start = start, start + var.dim

    maps = {name: _Maps() for name in ("H", "scale", "A", "rs", "eq", "g", "b", "xf", "xs")}
    rows, sizes = [], {"C": 0, "K": 0, "drop": 0}

    def claim(space: str, n: int) -> int:
        start = sizes[space]
        sizes[space] += n
        return start

    for step in plan.steps:
        rows.append(_step_row(step, factors, size, offsets, value_offset, dims, maps, claim))
    return Program(
        plan=plan,
        steps=np.asarray(rows, dtype=np.int64).reshape(len(rows), len(FIELDS)),
        maps={name: m.arrays() for name, m in maps.items()},
        factor_size=cursor["F"], conditional_size=sizes["C"], linear_size=cursor["L"], cache_size=sizes["K"],
        value_size=start, dropped_size=sizes["drop"], check_rank=not plan.numeric_ranks,
        H_offset=offsets["H"], scale_offset=offsets["scale"], A_offset=offsets["A"], rs_offset=offsets["rs"],
        g_offset=offsets["g"], b_offset=offsets["b"], value_offset=value_offset, unsupported=_unsupported(plan),
    )


def _step_row(step, factors, size, offsets, value_offset, dims, maps, claim) -> list:
    """One row of the step table: sizes, kinds, gather ranges and workspace offsets."""
    nF, nS, m, r = step.frontal_dim, step.separator_dim, step.hard_rows, step.substituted
    n, nz, p, d = nF + nS, step.pivot_dim, step.passed_rows, step.dropped_rows
    row = dict.fromkeys(FIELDS, -1)
    row.update(nF=nF, nS=nS, identity=step.identity, pivot=PIVOTS.get(step.pivot, -1), n_min=step.frontal_min_dim,
               m=m, r=r, p=p, d=d, nz=nz)
    parts = {name: [] for name in ("H", "scale", "A", "rs", "g", "b")}
    row_start = 0
    for i, pos in zip(step.factors, step.positions):
        if factors[i].hard:
            r_i, n_i = factors[i].rows, size[i]
            rr, cc = np.meshgrid(np.arange(r_i), np.arange(n_i), indexing="ij")
            parts["A"].append((offsets["A"][i] + (rr * n_i + cc).ravel(), ((row_start + rr) * n + pos[cc]).ravel()))
            parts["rs"].append((offsets["rs"][i] + np.arange(r_i), row_start + np.arange(r_i)))
            parts["b"].append((offsets["b"][i] + np.arange(r_i), row_start + np.arange(r_i)))
            row_start += r_i
        else:
            parts["H"].append(_square(offsets["H"][i], len(pos), pos, n))
            parts["scale"].append((offsets["scale"][i] + np.arange(len(pos)), pos))
            parts["g"].append((offsets["g"][i] + np.arange(len(pos)), pos))
    for name, key in (("H", "h"), ("scale", "s"), ("A", "a"), ("rs", "w"), ("g", "g"), ("b", "b")):
        chunks = parts[name]
        src = np.concatenate([c[0] for c in chunks]) if chunks else np.zeros(0, int)
        dst = np.concatenate([c[1] for c in chunks]) if chunks else np.zeros(0, int)
        row[key + "0"], row[key + "1"] = maps[name].add(src, dst)
    if step.new_quadratic is not None:
        q = step.new_quadratic
        row["out_H"], row["out_s"], row["out_g"] = offsets["H"][q], offsets["scale"][q], offsets["g"][q]
    if step.new_equality is not None:
        e = step.new_equality
        row["out_A"], row["out_b"] = offsets["A"][e], offsets["b"][e]
        row["e0"], row["e1"] = maps["eq"].add(step.equality_columns, np.arange(len(step.equality_columns)))
    else:
        row["e0"] = row["e1"] = maps["eq"].add([], [])[0]
    if m:
        row["T"], row["HF"], row["t"] = claim("C", nF * nS), claim("C", n * nF), claim("K", nF)
        if not step.identity:
            row["W"], row["N"], row["RS"] = claim("C", nF * m), claim("C", nF * nz), claim("C", m)
            row["E"], row["Ed"] = claim("C", p * m), claim("C", d * m)
            if d:
                row["drop"] = claim("drop", d + 1)  # d residuals and the size of the right-hand sides they combine
    if nz:
        row["Linv"], row["Y"], row["D"], row["y"] = claim("C", nz * nz), claim("C", nz * nS), claim("C", nz), claim("K", nz)
    front = np.concatenate([np.arange(value_offset[k], value_offset[k] + dims[k]) for k in step.layout[: len(step.frontal)]])
    row["xf0"], row["xf1"] = maps["xf"].add(front, np.arange(nF))
    sep = (np.concatenate([np.arange(value_offset[k], value_offset[k] + dims[k]) for k in step.separator])
           if nS else np.zeros(0, int))
    row["xs0"], row["xs1"] = maps["xs"].add(sep, np.arange(nS))
    return [row[name] for name in FIELDS]
