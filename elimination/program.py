"""Lowering: a :class:`~elimination.symbolic.Plan` as a program of instructions that executors run.

Everything the numeric pass decides from structure is decided here, once:
which instruction runs each step (:class:`Op`), where every factor's numbers
sit in one flat per-state workspace, which entries each step gathers into its
dense front and where its outputs go (as ``(source, destination)`` index
maps), the kind of substitution (declared ``+-I`` blocks,
:attr:`Step.identity`) and of pivot.  The numbers themselves never enter: one
program serves every state and every batch element.

A :class:`Program` is plain data -- an integer step table (one row per step:
its instruction, then its operands, the columns :data:`FIELDS`) and index
maps, numpy arrays that pickle -- and an inspectable value: instruction
counts, workspace sizes, flops.  :mod:`elimination.compiled` runs it one
element at a time, :mod:`elimination.lanes` sixteen side by side; each
dispatches on the ``op`` column and decides nothing from structure itself.
:mod:`elimination.reference`, the numpy reference, runs the program lowered
without pairs (``fuse=False``), every step as its ``FRONT``, a batch at once.

The instructions (:class:`Op`): every step of a complete plan lowers to a
``FRONT`` (gather, substitute the hard rows through a declared ``+-I`` block
or a rank-revealing SVD, rows left over passed on or dropped, pivot the rest
definite, negative, quasi-definite or indefinite), or to a shorter road to
the same numbers where its structure allows: a ``PIVOT`` of a whole front
with no hard rows (a block of multipliers, a least-squares variable), a
``UNIT`` substitution (a link acceleration through its own tree joint).  Two
steps lower to one instruction where they make one of the papers' steps:

- a *tree pair* (``TREE_PAIR``, ``REVOLUTE_PAIR`` for a 6-d link and a 1-d
  joint; :func:`_tree_pair`): a link acceleration substituted through its own
  tree joint and, next, the joint acceleration pivoted -- ABA's step, ``U = H
  S``, ``D = S' H S``, ``H_parent += H - U D^-1 U'`` (Featherstone's
  articulated-body inertia), with no dense front of the two together and no
  generated factor between them; its conditionals are those of the two steps,
  and the solve's forward sweep runs the two as one;
- a *wide revolute pair* (``WIDE_REVOLUTE``; :func:`_wide_revolute`): a wide
  pair (below) of a 6-d link and a 1-d joint whose factors stay off the joint
  (proxBBO's and PV's links, loops to the parent or a partner), run on the
  link's block without the joint's row and column, the link folded into its
  parent.

The second step of such a pair is ``FUSED``: run by the instruction before it.
Other steps that continue the front the step before left are marked by the
operands ``start`` and ``keep`` (:data:`START_GATHERED` ...,
:data:`KEEP_NONE` ...): a *wide pair* (:func:`_wide_pair`: a ``UNIT`` and the
pivot of its joint on one front, the factor between them never written or
gathered), and a *carried* front (:func:`_carried`; the chains of a
joint-space order), which a kernel may start from the block the step before
left.  A carried factor is still laid out and gathered first, so a kernel
that ignores the mark (:mod:`elimination.lanes`) sums in the same order.

A new instruction is a rule (:data:`STEP_RULES` for one step, :func:`_pairs`
for two) and a kernel in each executor that takes it; an executor without
the kernel does not cover the program.  A partial plan lowers to a program
that says it cannot run (:attr:`Program.unsupported`); :func:`elimination.factorize`
then runs it on numpy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Hashable, NamedTuple

import numpy as np

from .symbolic import Plan

FIELDS = (
    "op", "start", "keep",                           # the instruction (Op), where its front starts, what it leaves
    "nF", "nS", "identity", "pivot", "n_min", "m", "r", "p", "d", "nz",
    "h0", "h1", "s0", "s1", "a0", "a1", "w0", "w1",  # gather maps of H, scale, A, row scales (ranges into the maps)
    "out_H", "out_s", "out_A", "e0", "e1",           # the new quadratic factor; the new hard factor and its columns
    "T", "HF", "Linv", "Y", "D", "W", "N", "E", "Ed", "RS",  # offsets of the conditional's arrays (-1: none)
    "g0", "g1", "b0", "b1", "out_g", "out_b",        # gather maps of the linear terms; the new factors' terms
    "t", "y", "drop",                                # per-solve caches; offset of the dropped rows' residuals
    "xf0", "xf1", "xs0", "xs1",                      # scatter of the front's values, gather of the separator's
    "tq", "tn", "tsig", "tp",                        # a pair's joint (_joint_substitution)
    "pb0", "pb1", "ph0", "ph1", "ps0", "ps1", "pg0", "pg1",  # a tree pair's gathers (_mark_pair)
    "unit_row",                                      # where a +-I substitution's rows start (Step.unit_row)
)
"""Columns of :attr:`Program.steps`: the instruction and its operands (:class:`Op` says which each reads)."""
F = {name: i for i, name in enumerate(FIELDS)}
PIVOTS = {"none": 0, "definite": 1, "negative": 2, "quasidefinite": 3, "indefinite": 4}


class Op(IntEnum):
    """The instruction of a step (column ``op`` of :attr:`Program.steps`): what it computes, and so which
    kernel of an executor runs it.

    Every instruction means what :attr:`FRONT` computes on its step (or on its two steps, for a pair): the
    others are the same numbers by a shorter road, which an executor may take or not (the per-state kernels
    run ``PIVOT`` and ``UNIT`` as ``FRONT``).  An executor runs the programs whose instructions it has
    kernels for (:func:`elimination.lanes.covers`, :func:`~elimination.lanes.covers_pairs`).

    FRONT
        A dense front: its factors gathered, its hard rows substituted (a rank-revealing SVD, or a declared
        ``+-I`` block with rows left over, passed on or dropped), what remains pivoted (any :data:`PIVOTS`
        kind).  Reads every column but a pair's (``tq`` ... ``pg1``).
    PIVOT
        A front with no hard rows whose whole frontal block pivots definite or negative (Cholesky of ``H``
        or ``-H``): a least-squares variable, a block of multipliers (:func:`_pivot_op`).
    UNIT
        A substitution through a declared ``+-I`` block (:attr:`Step.identity`) that fixes the whole front,
        with no rows left over and no pivot: a link acceleration through its tree joint (:func:`_unit_op`).
    TREE_PAIR
        ABA's step, on two steps: a link substituted through its tree joint and the joint pivoted, from the
        link's block alone (``U = H S``, ``D = S' U``, ``H_parent += H - U D^-1 U'``: :func:`_tree_pair`);
        reads ``tq``, ``tn``, ``tsig`` and the gathers ``pb``, ``ph``, ``ps``, ``pg``.
    REVOLUTE_PAIR
        A ``TREE_PAIR`` of a 6-dimensional link and a one-dimensional joint (fixed sizes).
    WIDE_REVOLUTE
        A wide pair (:func:`_wide_pair`: a ``UNIT`` whose separator block the joint's pivot starts from) of a
        6-dimensional link and a one-dimensional joint, the link's factors off the joint: run on the link's
        block without the joint's row and column (:func:`_wide_revolute`); reads ``tq``, ``tn``, ``tsig``,
        ``tp``.
    FUSED
        The second step of a pair: run by the instruction before it.

    Values from :attr:`USER` on are free for instructions defined outside this module (an executor that
    lacks a kernel for one does not cover the program).
    """

    FRONT = 1
    PIVOT = 2
    UNIT = 3
    TREE_PAIR = 4
    REVOLUTE_PAIR = 5
    WIDE_REVOLUTE = 6
    FUSED = 7
    USER = 64


START_GATHERED, START_CARRIED, START_SPREAD, START_LEFT = 0, 1, 2, 3
"""Values of the ``start`` column, where a step's front starts: zeros and its factors gathered; the
generated factor the step before left in its front, moved up and left (:func:`_carried`, kind 1) or spread
onto its positions in a wider front (kind 2); the separator block a wide pair's link half left (its joint
half: :func:`_wide_pair`)."""
KEEP_NONE, KEEP_UPPER, KEEP_MIRRORED = 0, 1, 2
"""Values of the ``keep`` column, what a step leaves for the next: its generated factor written out; its
separator block in the front's upper triangle (the next starts ``START_CARRIED`` or ``START_SPREAD``), not
written; that block with its lower triangle mirrored (a wide pair's link half)."""
_TREE_LINK, _TREE_JOINT, _WIDE_LINK, _WIDE_JOINT = 1, 2, 3, 4  # the halves of the pairs (_pairs)


@dataclass
class _Maps:
    """Growing (source, destination) index maps of one kind, kept as chunks (joined once, by :meth:`arrays`)."""

    src: list = field(default_factory=list)
    dst: list = field(default_factory=list)
    length: int = 0

    def add(self, src, dst) -> tuple:
        """Append a chunk; its ``(start, stop)`` range in the joined maps."""
        src, dst = np.asarray(src, dtype=np.int64).ravel(), np.asarray(dst, dtype=np.int64).ravel()
        start = self.length
        self.src.append(src)
        self.dst.append(dst)
        self.length += len(src)
        return start, self.length

    def arrays(self):
        join = lambda chunks: np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)  # noqa: E731
        return join(self.src), join(self.dst)


@dataclass(frozen=True)
class FactorGroup:
    """The graph's factors of one shape, laid out together in the factor workspace.

    ``members`` (factor indices) have ``rows x n`` matrices (``rows = n`` for
    quadratic factors) stored side by side from offset ``start``, and their
    ``rows`` scales each side by side from ``scales``; their linear terms
    (``g``, or ``b`` for hard factors) side by side from ``linear`` in the
    linear workspace.
    """

    hard: bool
    members: tuple
    start: int
    scales: int
    rows: int
    n: int
    linear: int


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
    groups : tuple of FactorGroup
        The graph's factors by shape, as laid out in the factor workspace.
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
    groups: tuple = ()
    derived: dict = field(default_factory=dict, compare=False, repr=False)
    """What an executor derives from the program once and keeps with it (e.g. maps re-addressed for its
    scratch space); not part of the program's meaning."""

    def instructions(self) -> dict:
        """How many steps each instruction (:class:`Op`) runs, by name, in the order of :class:`Op`;
        ``fused`` counts the second steps of pairs."""
        ops = self.steps[:, F["op"]] if len(self.steps) else np.zeros(0, int)
        counts = {op.name.lower(): int(np.sum(ops == op)) for op in Op}
        return {name: n for name, n in counts.items() if n}

    def summary(self) -> dict:
        """Instruction counts, workspace sizes (floats per state) and the plan's flops."""
        rows = self.steps
        return {
            "steps": len(rows),
            "instructions": self.instructions(),
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


def lower(plan: Plan, fuse: bool = True) -> Program:
    """Lower ``plan`` to a :class:`Program` (structure only: call once per plan).

    ``fuse=False`` lowers every step alone (no pair instructions, every generated factor written out): the
    program of an executor without pair kernels that ignores the ``start`` / ``keep`` marks, the numpy
    reference (:mod:`elimination.reference`).

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
    n_graph = len(structure.factors)
    groups, cursor = _graph_layout(factors, n_graph, size, offsets)
    arena = _Arena(cursor["F"])  # generated matrices: live from the step making them to the step using them
    value_offset, start = {}, 0
    for var in structure.variables:
        value_offset[var.key], start = start, start + var.dim

    maps = {name: _Maps() for name in ("H", "scale", "A", "rs", "eq", "g", "b", "xf", "xs", "pb", "pH", "ps", "pg")}
    rows, sizes = [], {"C": 0, "K": 0, "drop": 0}

    def claim(space: str, n: int) -> int:
        start = sizes[space]
        sizes[space] += n
        return start

    kinds, trees = _pairs(plan.steps, factors, n_graph, dims) if fuse else ([0] * len(plan.steps), [None] * len(plan.steps))
    for k, step in enumerate(plan.steps):
        # a wide pair's joint half starts from the front its link half left: their factor never exists
        between = plan.steps[k - 1].new_quadratic if kinds[k] == _WIDE_JOINT else None
        for i in step.factors:  # gathered at the start of this step: their space is free for its outputs
            if i >= n_graph and i != between:
                arena.give(offsets["A" if factors[i].hard else "H"][i], _matrix_size(factors[i], size[i]))
        for i in (step.new_quadratic, step.new_equality):
            if i is not None and kinds[k] != _WIDE_LINK:
                _place(i, factors[i], size[i], arena.take(_matrix_size(factors[i], size[i])), offsets)
        carried = _carried(plan.steps[k - 1], step) if k and not kinds[k - 1] and not kinds[k] else (None, 0)
        rows.append(_step_row(step, factors, size, offsets, value_offset, dims, maps, claim, between, carried))
    _mark_instructions(plan.steps, rows, kinds, trees, offsets, size, maps)
    return Program(
        plan=plan,
        steps=np.asarray(rows, dtype=np.int64).reshape(len(rows), len(FIELDS)),
        maps={name: m.arrays() for name, m in maps.items()},
        factor_size=arena.peak, conditional_size=sizes["C"], linear_size=cursor["L"], cache_size=sizes["K"],
        value_size=start, dropped_size=sizes["drop"], check_rank=not plan.numeric_ranks,
        H_offset=offsets["H"], scale_offset=offsets["scale"], A_offset=offsets["A"], rs_offset=offsets["rs"],
        g_offset=offsets["g"], b_offset=offsets["b"], value_offset=value_offset, unsupported=_unsupported(plan),
        groups=tuple(groups),
    )


def _graph_layout(factors, n_graph: int, size: dict, offsets: dict) -> tuple:
    """``(groups, cursor)``: the graph's factors (the first ``n_graph``) laid out by shape in the factor and
    linear workspaces -- a group side by side: its matrices, its scales, its linear terms -- then the
    generated factors' linear terms; their offsets into ``offsets``; ``cursor``: where each workspace's
    next free float is (``"F"``, ``"L"``)."""
    cursor = {"F": 0, "L": 0}

    def take(space: str, n: int) -> int:
        start = cursor[space]
        cursor[space] += n
        return start

    groups = []
    for (hard, rows, n), members in _groups(factors[:n_graph], size).items():  # the graph's, filled before the run
        matrices, scales = take("F", len(members) * rows * n), take("F", len(members) * rows)
        linear = take("L", len(members) * rows)
        for j, i in enumerate(members):
            offsets["A" if hard else "H"][i] = matrices + j * rows * n
            offsets["rs" if hard else "scale"][i] = scales + j * rows
            offsets["b" if hard else "g"][i] = linear + j * rows
        groups.append(FactorGroup(hard, tuple(members), matrices, scales, rows, n, linear))
    for i, f in enumerate(factors[n_graph:], start=n_graph):
        offsets["b" if f.hard else "g"][i] = take("L", f.rows if f.hard else size[i])
    return groups, cursor


def _mark_instructions(steps, rows: list, kinds: list, trees: list, offsets: dict, size: dict, maps: dict) -> None:
    """Each row's instruction (:func:`_instruction`) and a pair's operands (:func:`_mark_pair`,
    :func:`_mark_substitution`; empty gather ranges where no pair's half gathers), then the fronts that
    continue the one before (:func:`_mark_fronts`)."""
    for k, step in enumerate(steps):
        if kinds[k] == _TREE_LINK:
            _mark_pair(rows[k], rows[k + 1], step, steps[k + 1], trees[k], offsets, size, maps)
        elif trees[k] is not None:  # a wide pair the kernel runs on the link's block (_wide_revolute)
            _mark_substitution(rows[k], trees[k], offsets, size)
        for name, key in (("pb", "pb"), ("pH", "ph"), ("ps", "ps"), ("pg", "pg")):
            if rows[k][F[key + "0"]] < 0:
                rows[k][F[key + "0"]] = rows[k][F[key + "1"]] = maps[name].add([], [])[0]
        rows[k][F["op"]] = _instruction(steps, k, kinds, trees)
    _mark_fronts(rows, kinds, trees)


def _groups(factors, size: dict) -> dict:
    """The graph's factors by the shape of their matrices: ``(hard, rows, n) -> [factor index]``, ``rows = n``
    for quadratic factors; in order of first appearance (see :attr:`Program.groups`)."""
    groups = {}
    for i, f in enumerate(factors):
        groups.setdefault((f.hard, f.rows if f.hard else size[i], size[i]), []).append(i)
    return groups


def _matrix_size(factor, n: int) -> int:
    """Floats of a factor's matrices: ``A`` and its row scales (hard), or ``H`` and its diagonal magnitudes."""
    return factor.rows * (n + 1) if factor.hard else n * (n + 1)


def _place(i: int, factor, n: int, start: int, offsets: dict) -> None:
    """Factor ``i``'s matrices at ``start``: ``A`` then its row scales, or ``H`` then its scales (contiguous:
    the kernels write a generated factor's row scales right after its block)."""
    if factor.hard:
        offsets["A"][i], offsets["rs"][i] = start, start + factor.rows * n
    else:
        offsets["H"][i], offsets["scale"][i] = start, start + n * n


class _Arena:
    """First-fit allocation of the generated factors' matrices above ``base``, with freed ranges merged.

    A generated factor is written once, whole, by the step that makes it and
    read by the step that eliminates it, so its range is free again from then
    on: the workspace holds the live factors only, not every factor the
    elimination ever makes (``peak``: its high-water mark).
    """

    def __init__(self, base: int):
        self.top, self.peak, self.free = base, base, []  # free: sorted, disjoint [start, stop) ranges below top

    def take(self, n: int) -> int:
        for k, (start, stop) in enumerate(self.free):
            if stop - start >= n:
                self.free[k:k + 1] = [(start + n, stop)] if stop - start > n else []
                return start
        start, self.top = self.top, self.top + n
        self.peak = max(self.peak, self.top)
        return start

    def give(self, start: int, n: int) -> None:
        ranges = sorted(self.free + [(start, start + n)])
        merged = [ranges[0]]
        for lo, hi in ranges[1:]:
            if lo <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
            else:
                merged.append((lo, hi))
        if merged[-1][1] == self.top:  # the topmost range returns to the unallocated space
            self.top = merged.pop()[0]
        self.free = merged


def _joined(chunks: list) -> tuple:
    """``(src, dst)``: a list of ``(src, dst)`` index chunks joined (empty arrays for no chunks)."""
    if not chunks:
        return np.zeros(0, int), np.zeros(0, int)
    return np.concatenate([c[0] for c in chunks]), np.concatenate([c[1] for c in chunks])


def _step_row(step, factors, size, offsets, value_offset, dims, maps, claim, between=None, carried=(None, 0)) -> list:
    """One row of the step table: sizes, kinds, gather ranges and workspace offsets (factor ``between``
    not gathered: a wide pair's, :func:`_wide_pair`; ``carried``: the factor gathered first and the kind of
    carry, :func:`_carried`)."""
    carried_factor, carry = carried
    nF, nS, m, r = step.frontal_dim, step.separator_dim, step.hard_rows, step.substituted
    n, nz, p, d = nF + nS, step.pivot_dim, step.passed_rows, step.dropped_rows
    row = dict.fromkeys(FIELDS, -1)
    row.update(nF=nF, nS=nS, identity=step.identity, pivot=PIVOTS.get(step.pivot, -1), n_min=step.frontal_min_dim,
               m=m, r=r, p=p, d=d, nz=nz, unit_row=step.unit_row)
    parts = {name: [] for name in ("H", "scale", "A", "rs", "g", "b")}
    row_start = 0
    for i, pos in zip(step.factors, step.positions):
        if i == between:
            continue
        if factors[i].hard:
            r_i, n_i = factors[i].rows, size[i]
            rr, cc = np.meshgrid(np.arange(r_i), np.arange(n_i), indexing="ij")
            parts["A"].append((offsets["A"][i] + (rr * n_i + cc).ravel(), ((row_start + rr) * n + pos[cc]).ravel()))
            parts["rs"].append((offsets["rs"][i] + np.arange(r_i), row_start + np.arange(r_i)))
            parts["b"].append((offsets["b"][i] + np.arange(r_i), row_start + np.arange(r_i)))
            row_start += r_i
        else:
            first = 0 if i == carried_factor else len(parts["H"])  # (the carried factor's entries lead its gathers)
            parts["H"].insert(first, _square(offsets["H"][i], len(pos), pos, n))
            parts["scale"].insert(first, (offsets["scale"][i] + np.arange(len(pos)), pos))
            parts["g"].append((offsets["g"][i] + np.arange(len(pos)), pos))
    for name, key in (("H", "h"), ("scale", "s"), ("A", "a"), ("rs", "w"), ("g", "g"), ("b", "b")):
        row[key + "0"], row[key + "1"] = maps[name].add(*_joined(parts[name]))
    if step.new_quadratic in offsets["H"]:  # (not placed: a wide pair's link half, which keeps it in its front)
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
            row["W"], row["N"] = claim("C", nF * m), claim("C", nF * nz)
        if m > nF or not step.identity:  # (a +-I substitution with rows left over: W is read from the rows)
            row["RS"], row["E"], row["Ed"] = claim("C", m), claim("C", p * m), claim("C", d * m)
            if d:
                row["drop"] = claim("drop", d + 1)  # d residuals and the size of the right-hand sides they combine
    if nz:
        row["Linv"], row["Y"], row["D"], row["y"] = claim("C", nz * nz), claim("C", nz * nS), claim("C", nz), claim("K", nz)
    front = np.concatenate([np.arange(value_offset[k], value_offset[k] + dims[k]) for k in step.layout[: len(step.frontal)]])
    row["xf0"], row["xf1"] = maps["xf"].add(front, np.arange(nF))
    sep = (np.concatenate([np.arange(value_offset[k], value_offset[k] + dims[k]) for k in step.separator])
           if nS else np.zeros(0, int))
    row["xs0"], row["xs1"] = maps["xs"].add(sep, np.arange(nS))
    row["start"] = (START_GATHERED, START_CARRIED, START_SPREAD)[carry]
    return [row[name] for name in FIELDS]


def _carried(step, following) -> tuple:
    """``(factor, kind)``: the factor ``step`` generates when ``following`` (both generic steps) gathers it in
    the front's order -- onto its whole front (kind 1) or onto some of its rows and columns (kind 2) -- else
    ``(None, 0)``.

    Then the generated factor is the separator block ``step`` leaves in its front, and ``following``'s
    front before its other factors: a kernel may start ``following`` from that block, moved up and left
    (kind 1) or spread onto its positions in a wider front (kind 2), rather than write the factor out,
    zero the front and gather it back (``carry``, the kind in ``following``'s row; its entries lead the
    step's ``H`` and ``scale`` gathers, so that the sums are the same either way, and its scale gather
    gives its positions).  The long chains of a joint-space order (proxLTL, min_degree) are such steps, one
    after another: their fronts grow by the keys each step brings in (kind 2) or not at all (kind 1).
    """
    q = step.new_quadratic
    if q is None or q not in following.factors:
        return None, 0
    position = following.positions[list(following.factors).index(q)]
    n = following.frontal_dim + following.separator_dim
    if len(position) == n and np.array_equal(position, np.arange(n)):
        return q, 1
    return (q, 2) if np.all(np.diff(position) > 0) else (None, 0)


def _instruction(steps, k: int, kinds: list, trees: list) -> Op:
    """The instruction of step ``k`` (:class:`Op`): its pair's (``kinds``, ``trees``: :func:`_pairs`), else the
    first of :data:`STEP_RULES` that takes the step alone, else ``FRONT``."""
    kind, step = kinds[k], steps[k]
    if kind == _TREE_LINK:
        return Op.REVOLUTE_PAIR if step.frontal_dim == 6 and steps[k + 1].frontal_dim == 1 else Op.TREE_PAIR
    if kind == _WIDE_LINK and trees[k] is not None:
        return Op.WIDE_REVOLUTE
    if kind == _TREE_JOINT or (kind == _WIDE_JOINT and trees[k - 1] is not None):
        return Op.FUSED
    for rule in STEP_RULES:
        op = rule(step)
        if op:
            return op
    return Op.FRONT


def _unit_op(step) -> Op | None:
    """``UNIT`` where ``step`` substitutes its whole front through a declared ``+-I`` block, no rows left over."""
    if step.identity and step.hard_rows == step.frontal_dim and step.pivot_dim == 0:
        return Op.UNIT
    return None


def _pivot_op(step) -> Op | None:
    """``PIVOT`` where ``step`` has no hard rows and pivots its whole front definite or negative."""
    if not step.hard_rows and step.pivot_dim == step.frontal_dim and step.pivot in ("definite", "negative"):
        return Op.PIVOT
    return None


STEP_RULES = (_unit_op, _pivot_op)
"""The lowering rules of the instructions a step takes alone: each returns its :class:`Op` or None."""


def _mark_fronts(rows: list, kinds: list, trees: list) -> None:
    """The ``start`` and ``keep`` columns of a front that continues the one before it: a wide pair's joint
    half starts from the separator block its link half left, mirrored (a revolute one's is ``FUSED``); a step
    whose successor is carried (:func:`_carried`, already marked ``start``) leaves its upper triangle."""
    for k, row in enumerate(rows):
        if kinds[k] == _WIDE_LINK and trees[k] is None:
            row[F["keep"]], rows[k + 1][F["start"]] = KEEP_MIRRORED, START_LEFT
        elif k + 1 < len(rows) and rows[k + 1][F["start"]] in (START_CARRIED, START_SPREAD):
            row[F["keep"]] = KEEP_UPPER
        else:
            row[F["keep"]] = KEEP_NONE


def _pairs(steps, factors, n_graph: int, dims: dict) -> tuple:
    """``(kinds, trees)`` per step: which half of which pair it is (``_TREE_LINK`` ... ``_WIDE_JOINT``, 0: none)
    and, at the link half of a tree pair or of a wide pair with a revolute joint, what
    :func:`_joint_substitution` says of it."""
    kinds, trees = [0] * len(steps), [None] * len(steps)
    for k in range(len(steps) - 1):
        if kinds[k]:  # the joint half of the pair before
            continue
        joint = _joint_substitution(steps[k], steps[k + 1], factors, n_graph, dims)
        if _tree_pair(steps[k], steps[k + 1], factors, joint):
            kinds[k], kinds[k + 1], trees[k] = _TREE_LINK, _TREE_JOINT, joint
        elif _wide_pair(steps[k], steps[k + 1]):
            kinds[k], kinds[k + 1] = _WIDE_LINK, _WIDE_JOINT
            trees[k] = joint if _wide_revolute(steps[k], steps[k + 1], factors, joint) else None
    return kinds, trees


def _wide_pair(step, following) -> bool:
    """Whether ``step`` substitutes its one frontal key through a declared ``+-I`` block (a link through its
    tree joint) and ``following`` pivots what leads its separator (the joint), with no hard rows, on the
    same front less the substituted key (its layout is ``step``'s from the second key on), the factor
    ``step`` generates spanning that front.

    Then the two run on one dense front: the substitution's ``H_SS + T' H_FF T + ...`` is the following
    pivot's front before its other factors are added, so the generated factor need not be written and
    gathered again.  Unlike a tree pair (:func:`_tree_pair`) nothing is asked of the factors: proxBBO's
    and PV's links, whose separators carry their subtree's multipliers, and loops that reach a link's
    parent or partner, are wide pairs.
    """
    if (not step.identity or len(step.frontal) != 1 or step.hard_rows != step.frontal_dim
            or step.new_equality is not None or step.new_quadratic is None):
        return False
    if following.hard_rows or following.pivot not in PIVOTS or following.pivot == "none":
        return False
    if tuple(following.layout) != tuple(step.layout[1:]) or step.new_quadratic not in following.factors:
        return False
    position = following.positions[list(following.factors).index(step.new_quadratic)]
    return np.array_equal(position, np.arange(step.separator_dim))


class JointSubstitution(NamedTuple):
    """How a pair's link half substitutes its link through its tree joint (:func:`_joint_substitution`)."""

    hard: int  # the joint's hard factor
    column: int  # of the joint's key in it
    sigma: int  # sign of the parent's block in ``T`` (0: no parent)
    parent: Hashable  # the parent link's key, or None
    parent_at: int  # where the parent starts in the joint's separator (-1: no parent)


def _joint_substitution(step, following, factors, n_graph: int, dims: dict) -> JointSubstitution | None:
    """A :class:`JointSubstitution` when a wide pair (:func:`_wide_pair`) substitutes its link ``a`` through
    one graph factor ``[+-I, D, u I]`` on ``(a, q, parent)`` -- the tree joint ``a = a_parent + S qdd + c``,
    ``D`` on the joint's key ``q``, ``u I`` on the parent, or no parent -- and eliminates ``q`` alone by a
    definite pivot, its other factors on ``q`` alone; else None.

    Then ``T = [T_q, sigma I, 0]`` (in the separator's order) with ``T_q = -+D`` and ``sigma = -+u``: read as
    such from the hard factor, not gathered and searched (:func:`_tree_pair`, :func:`_wide_revolute`).
    """
    if not _wide_pair(step, following) or following.pivot != "definite" or len(following.frontal) != 1:
        return None
    hard = [i for i in step.factors if factors[i].hard]
    if len(hard) != 1 or hard[0] >= n_graph:
        return None
    h = hard[0]
    keys, units = factors[h].keys, factors[h].units
    link, q = step.frontal[0], following.frontal[0]
    if link not in keys or q not in keys or units[keys.index(q)] != 0:
        return None
    others = [k for k in keys if k not in (link, q)]
    parent = others[0] if len(others) == 1 else None
    if len(others) > 1 or (parent is not None and (not units[keys.index(parent)] or dims[parent] != step.frontal_dim)):
        return None
    for i, pos in zip(following.factors, following.positions):
        if i != step.new_quadratic and np.any(pos >= following.frontal_dim):
            return None
    column = sum(dims[k] for k in keys[: keys.index(q)])
    if parent is None:
        return JointSubstitution(h, column, 0, None, -1)
    separator = list(following.separator)
    parent_at = sum(dims[k] for k in separator[: separator.index(parent)])
    return JointSubstitution(h, column, -step.identity * units[keys.index(parent)], parent, parent_at)


def _tree_pair(step, following, factors, joint: JointSubstitution | None) -> bool:
    """Whether ``step`` and ``following``, whose :func:`_joint_substitution` is ``joint``, form a tree pair.

    A tree pair: ``step`` substitutes its single frontal key (a link acceleration ``a``) through a declared
    ``+-I`` block of one graph factor (:func:`_joint_substitution`), its quadratic factors involve ``a``
    only, and the quadratic it generates on ``(q, parent)`` -- nothing else -- goes to ``following``.  Then
    the generated factor is ``T' H T`` and its pivot ``T_q' H T_q``: computed straight from ``H`` (ABA's
    ``U = H S``, ``D = S' U``), without the dense front.
    """
    if joint is None or tuple(following.separator) != ((joint.parent,) if joint.parent is not None else ()):
        return False
    if not _pair_kernel_takes(step, following):
        return False
    return all(factors[i].hard or np.array_equal(pos, np.arange(step.frontal_dim))  # else H_FS != 0
               for i, pos in zip(step.factors, step.positions))


def _pair_kernel_takes(step, following) -> bool:
    """Whether the tree-pair kernel (``compiled_pairs._tree_pair``, one source for every batch width) takes
    the pair: a 6-dimensional link, a joint of up to six degrees of freedom pivoted definite or negative, a
    parent of up to six; another pair runs as its two steps."""
    return (step.frontal_dim == 6 and following.frontal_dim <= 6 and following.separator_dim <= 6
            and following.pivot in ("definite", "negative"))


def _wide_revolute(step, following, factors, joint: JointSubstitution | None) -> bool:
    """Whether a wide pair whose :func:`_joint_substitution` is ``joint`` has a 6-dimensional link, a
    one-dimensional joint, and the link's quadratic factors off the joint (proxBBO's links, with their
    subtree's multipliers; a loop to the parent or to another link).  The compiled kernel then runs the
    pair without the joint's row and column of the front (``compiled_pairs._wide_revolute_pair``)."""
    if joint is None or step.frontal_dim != 6 or following.frontal_dim != 1:
        return False
    return not any(not factors[i].hard and np.any(pos == step.frontal_dim)  # a factor on the joint
                   for i, pos in zip(step.factors, step.positions))


def _mark_substitution(row: list, pair: JointSubstitution, offsets: dict, size: dict) -> None:
    """Mark where a pair's link half reads its joint: the pivot key's block of the hard factor in the factor
    workspace (``tq``, row stride ``tn``), the parent block's sign (``tsig``, 0 for no parent) and where the
    parent starts in the joint's separator (``tp``)."""
    row[F["tq"]], row[F["tn"]] = offsets["A"][pair.hard] + pair.column, size[pair.hard]
    row[F["tsig"]], row[F["tp"]] = pair.sigma, pair.parent_at


def _mark_pair(row: list, following_row: list, step, following, pair: JointSubstitution, offsets: dict, size: dict,
               maps: dict) -> None:
    """Mark the two rows of a tree pair: where the pivot key's block of the hard factor lies in the factor
    workspace (``tq``, row stride ``tn``), the parent block's sign, the link's quadratic factors (map
    ``pb``: each one's whole ``nF x nF`` block and its scales, ``(H offset, scale offset)``), and the gathers
    of the pivot half's factors other than the generated one (onto its ``nq x nq`` block, ``i * nq + j``; their
    linear terms, map ``pg``, for the solve's forward sweep)."""
    _mark_substitution(row, pair, offsets, size)
    link = [i for i in step.factors if i in offsets["H"]]  # the quadratic ones (the hard one is in offsets["A"])
    row[F["pb0"]], row[F["pb1"]] = maps["pb"].add([offsets["H"][i] for i in link], [offsets["scale"][i] for i in link])
    nq = following.frontal_dim
    H, scale, g = [], [], []
    for i, pos in zip(following.factors, following.positions):
        if i != step.new_quadratic:
            H.append(_square(offsets["H"][i], len(pos), pos, nq))
            scale.append((offsets["scale"][i] + np.arange(len(pos)), pos))
            g.append((offsets["g"][i] + np.arange(len(pos)), pos))
    for name, key, chunks in (("pH", "ph", H), ("ps", "ps", scale), ("pg", "pg", g)):
        following_row[F[key + "0"]], following_row[F[key + "1"]] = maps[name].add(*_joined(chunks))
