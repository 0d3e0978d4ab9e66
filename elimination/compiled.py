"""The compiled executor: numba kernels that run a :class:`~elimination.program.Program`.

One kernel factorizes (every step of the program, for every batch element),
one solves (the forward sweep of the linear terms, then back-substitution).
Both interpret the program's integer step table over flat per-state
workspaces, so nothing is compiled per plan: the kernels are compiled once,
announced on stderr the first time, and cached on disk (``@njit(cache=True)``).
They dispatch each step on its instruction (the ``op`` column): a ``FRONT``
(and ``PIVOT``, ``UNIT``) to :mod:`elimination.compiled_front`, a pair to
:mod:`elimination.compiled_pairs` (both pivot through
:mod:`elimination.compiled_pivot`); a program with an instruction neither has
a kernel for is refused (:func:`runnable`).

The arithmetic is the numpy rule's (:mod:`elimination.gaussian`).  Each
element reports its smallest pivot relative to the magnitude of its
contributions; a pivot the numpy rule refuses, or a substitution whose
numerical rank falls short of the plan's, stops it (the caller then takes
the numpy path, which names the variables or re-plans the element).  The
solve reports the dropped rows' right-hand sides, which the caller checks
for consistency.

A batch of at least :data:`~elimination.lanes.LANES` (sixteen) graphs whose
program has no hard rows, pairs or indefinite pivots runs in
:mod:`elimination.lanes` instead: the same operations with that many elements
side by side, bit for bit these kernels' numbers.

:class:`CompiledFactorization` is a :class:`~elimination.factorization.Factorization`
whose sweeps run here; overrides, refinement, verification of suspect pivots
and error messages are shared with the numpy path.

The per-step loops read the step table by ``(step, column)`` and call helpers
with one exit: numba counts references to every array view and to an inlined
helper's arrays with atomic instructions unless it can prove them redundant,
and those counts, not the arithmetic, were most of the time (see
:func:`elimination.compiled_pairs._revolute_pair`).  The per-element kernels (:func:`factorize_one`,
:func:`solve_one`) allocate nothing, so they run without reference counting at
all (``UNCOUNTED``: numba's ``_nrt=False``, a flag of its CPU target since
0.4x; a numba without it refuses the option at compile time, loudly).  They may
call a helper that allocates (``eigh``, of the rare indefinite pivots), which
keeps counting (``COUNTED``) and returns a scalar only, so nothing it makes
outlives it.

The hot loops index through ``ix(k)``, ``k`` as numba's ``uint64``: numba wraps
a negative signed index (a compare and a select at every access, which also
keeps LLVM from folding the address arithmetic into the load); an unsigned one
has no wrap.  ``ix`` is the same bits, so it changes no number (the wrap's cost:
benchmarks/README.md).
The helper around ``eigh`` keeps plain indices: LAPACK's cost there dwarfs
the wrap.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from numba import njit

from . import compiled_front, compiled_pairs, compiled_pivot, jacobi, vectors
from .compiled_front import (
    A0, A1, H0, H1, M, NF, NS, OP, OP_FUSED, OP_REVOLUTE, OP_TREE, OP_WIDE_REVOLUTE, UNCOUNTED, _generic_step,
    _step_backward, _step_forward, one_state_rows,
)
from .kernel_cache import drop_stale_cache
from .compiled_pairs import (
    _revolute_backward, _revolute_forward, _revolute_pair, _tree_forward, _tree_pair, _wide_revolute_backward,
    _wide_revolute_forward, _wide_revolute_pair,
)
from .program import Op

_ANNOUNCED: set = set()  # (module, kernel) pairs announced in this process
drop_stale_cache(__file__, compiled_front.__file__, compiled_pairs.__file__, compiled_pivot.__file__,
                 jacobi.__file__, vectors.__file__)  # (inlined here)


@njit(cache=True)
def started_error(change: float, ratio: float) -> float:
    """The relative error a solve started from given values may have after its last step: the step solved
    for a correction ``change`` times the solution with the digits its pivots lose, ``eps / ratio`` for a
    smallest pivot ratio ``ratio`` (the size of the cancellation at the weakest pivot)."""
    eps = 2.220446049250313e-16
    return change * eps / max(min(ratio, 1.0), eps)


def factorize_scratch_size(maxn: int) -> tuple:
    """Floats and ints of :func:`factorize_scratch_in` for fronts up to ``maxn`` wide."""
    return 14 * maxn * maxn + 6 * maxn + 4, maxn * (maxn + 1) + 2


@njit(cache=True, inline="always")  # (its caller's reference counting, on or off)
def factorize_scratch_in(floats, ints, maxn):
    """The scratch matrices of :func:`factorize_one` for fronts up to ``maxn`` wide, as views of ``floats``
    and ``ints`` (:func:`factorize_scratch_size`): a caller that keeps them allocates nothing per call."""
    a, b = 14 * maxn * maxn, maxn * (maxn + 1)
    m = floats[:a].reshape((14, maxn, maxn))
    v = floats[a: a + 5 * maxn].reshape((5, maxn))
    one = floats[a + 5 * maxn: a + 6 * maxn + 4]  # (the floor, a ratio, a flag, the smallest ratio ...)
    return (m[0], m[1], v[0], v[1], m[2], m[3], m[4], m[5], v[2], m[6], m[7], m[8], m[9], m[10], m[11], m[12], m[13],
            v[3], ints[:b].reshape((maxn, maxn + 1)), v[4], (one, ints[b:b + 2]))


@njit(cache=True, inline="always")
def one_state_lanes(scratch):
    """:func:`factorize_steps`' arguments at one state's width, as views of ``scratch``
    (:func:`factorize_scratch_in`): ``(pair, front, r, ok, floor, ratio, weak, failed)``, the last five ``(1,)``."""
    H, A, scale, unit, L, Lw, Li, X, Dv, T, HFT, Wm, Nm, Ek, Ed, Hz, Hzs, sz, Tnz, rows, (one, ints) = scratch
    f = H.shape[0] * H.shape[0]
    pair = (H.reshape(f), scale, unit, Dv, rows, sz, A.reshape(f), T.reshape(f), HFT.reshape(f), Tnz[0])
    return pair, one_state_rows(scratch), one[1:2], one[2:3], one[0:1], one[3:4], ints[0:1], ints[1:2]


@njit(cache=True, inline="always")  # (a function of its own added seconds to the first compile: benchmarks/README.md)
def factorize_one(maps, Fw, C, floor, check_rank, scratch):
    """:func:`factorize_steps` on one element: its factor workspace ``Fw (factor_size,)``, conditionals into
    ``C (conditional_size,)``, scale floor ``floor``; ``maps`` from :func:`factorize_maps`, ``scratch`` from
    :func:`factorize_scratch_in`.  Returns ``(ratio, weakest, failed)``."""
    pair, front, r, ok, floor_row, ratio, weak, failed = one_state_lanes(scratch)
    floor_row[0] = floor
    factorize_steps(maps, Fw, C, floor_row, check_rank, scratch, pair, front, r, ok, ratio, weak, failed)
    return ratio[0], weak[0], failed[0]


@njit(cache=True, inline="always")
def _record(w, r, fail, at, ratio, weak, failed):
    """Lane ``w``'s step ``at`` with pivot ratio ``r`` (``fail``: -1, or the failure to report) into the lanes'
    smallest ratio, its step and the first failure."""
    if failed[w] == -1:
        if fail != -1:
            failed[w] = fail
        elif r < ratio[w]:
            ratio[w], weak[w] = r, at


# one driver for every width: one state's (factorize_one) and sixteen lanes' (elimination.lanes), each width
# compiled once and shared by the engine and the dynamics
@njit(cache=True, error_model="numpy", **UNCOUNTED)
def factorize_steps(maps, Fw, C, floor, check_rank, scratch, pair, front, r, ok, ratio, weak, failed):
    """Every step of the program on the lanes of ``Fw`` (``(factor_size,)``: one state; ``(factor_size,
    LANES)``: sixteen side by side), conditionals into ``C``, scale floors ``floor (1,)`` or ``(1, LANES)``: the
    pairs' kernels (:mod:`elimination.compiled_pairs`) and the generic step
    (:func:`elimination.compiled_front._generic_step`) at that width.  Per lane the smallest pivot ratio, its
    step and the failed step into ``ratio``, ``weak``, ``failed``: -1, or the step whose pivot the numpy rule
    refuses, or ``-2 - step`` where the numerical rank of a substitution falls short of the plan's (the
    caller then takes the numpy path).  A failed lane goes on with meaningless numbers until every lane
    has failed.

    ``maps``: :func:`factorize_maps`; ``scratch``: :func:`factorize_scratch_in`'s (the generic step's integers,
    a general substitution's and the one-state pivots' matrices); ``pair``: the pairs' front ``H`` (flat,
    rows ``i * maxn + j``), ``scale``, ``t``, ``u``, temporaries, a wide pair's ``y``, a substitution's ``A``,
    ``T``, ``HFT`` and a flag per lane, or None for a program without pairs; ``front``, ``r``, ``ok``: the
    generic step's rows, a pivot ratio and a value per lane (:func:`one_state_lanes` at one state's width,
    :func:`elimination.lanes.scratch_in` at sixteen lanes)."""
    steps, hs, hd, ss, sd = maps[:5]
    pbH, pbs, phs, phd, pss, psd = maps[11:17]
    maxn = scratch[0].shape[0]  # (the front's size: the gathers index H by it)
    lanes = ratio.shape[0]
    for w in range(lanes):
        ratio[w], weak[w], failed[w] = np.inf, -1, -1
    st = np.int64(0)  # (not a literal 0: the generic step would compile once more, for a literal st)
    while st < steps.shape[0]:
        op, paired = steps[st, OP], False
        if pair is not None:  # (numba prunes this for pair None: a program without pairs compiles no pair kernel)
            H, scale, t6, u6, tmp, y, A, T, HFT, flag = pair
            paired = op == OP_REVOLUTE or op == OP_TREE or op == OP_WIDE_REVOLUTE
            if op == OP_REVOLUTE:
                _revolute_pair(steps, st, pbH, pbs, phs, pss, Fw, C, floor, H, scale, t6, u6, tmp, r)
            elif op == OP_TREE:  # a free flyer's, a spherical joint's
                _tree_pair(steps, st, pbH, pbs, phs, phd, pss, psd, Fw, C, floor, H, scale, A, T, HFT, tmp, r, flag)
            elif op == OP_WIDE_REVOLUTE:
                _wide_revolute_pair(steps, st, hs, hd, ss, sd, Fw, C, floor, H, maxn, scale, t6, u6, y, tmp, r)
        if paired:  # both rows: the pair's and OP_FUSED
            for w in range(lanes):
                _record(w, r[w], st + 1 if r[w] < 0.0 else -1, st + 1, ratio, weak, failed)
            st += 2
        else:  # FRONT, and PIVOT and UNIT as FRONT
            fail = _generic_step(maps, st, Fw, C, floor, check_rank, front, scratch[18], scratch, r, ok)
            for w in range(lanes):
                _record(w, r[w], fail if fail != -1 else (st if r[w] < 0.0 else -1), st, ratio, weak, failed)
            st += 1
        left = 0
        for w in range(lanes):
            left += failed[w] == -1
        if left == 0:
            break


@njit(cache=True)
def factorize_kernel(maps, Fw, C, floor, maxn, check_rank, ratio_out, weak_out, fail_out, floats, ints):
    """:func:`factorize_one` for every element of ``Fw (B, factor_size)``, conditionals into ``C (B, n)``;
    its scratch in ``floats``, ``ints`` (:func:`factorize_scratch_size`)."""
    scratch = factorize_scratch_in(floats, ints, maxn)
    for b in range(Fw.shape[0]):
        ratio_out[b], weak_out[b], fail_out[b] = factorize_one(maps, Fw[b], C[b], floor, check_rank, scratch)


SOLVE_SCRATCH = 7  # vectors of maxn floats


@njit(cache=True, inline="always")  # (its caller's reference counting, on or off)
def solve_scratch_in(floats, maxn):
    """The scratch vectors of :func:`solve_one`, as views of ``floats`` (``SOLVE_SCRATCH * maxn``)."""
    v = floats[: SOLVE_SCRATCH * maxn].reshape((SOLVE_SCRATCH, maxn))
    return v[0], v[1], v[2], v[3], v[4], v[5], v[6]


@njit(cache=True)
def solve_scratch(maxn):
    """The scratch vectors of :func:`solve_one`."""
    return solve_scratch_in(np.zeros(SOLVE_SCRATCH * maxn), maxn)


    # statement uses (its IR), one array here rather than the loop's two


KERNELS = frozenset(int(op) for op in (Op.FRONT, Op.PIVOT, Op.UNIT, Op.TREE_PAIR, Op.REVOLUTE_PAIR, Op.WIDE_REVOLUTE,
                                        Op.FUSED))
"""The instructions these kernels run (``PIVOT`` and ``UNIT`` as ``FRONT``)."""


def runnable(program) -> None:
    """Raise ``ValueError`` naming the first step whose instruction these kernels do not run."""
    ops = program.steps[:, OP] if len(program.steps) else np.zeros(0, int)
    unknown = [k for k, op in enumerate(ops) if int(op) not in KERNELS]
    if unknown:
        k = unknown[0]
        raise ValueError(f"step {k} of the program is instruction {int(ops[k])}, which the compiled executor has no "
                         f"kernel for ({len(unknown)} such step(s)); run it with backend='numpy', or add the kernel "
                         "to elimination/compiled.py")


def solve_maps(program) -> tuple:
    """The step table and index maps :func:`solve_one` reads, :func:`narrowed` (made once per program)."""
    if "solve_maps" not in program.derived:
        runnable(program)
        maps = program.maps
        program.derived["solve_maps"] = tuple(narrowed(a) for a in (
            program.steps, *maps["g"], *maps["b"], *maps["xf"], *maps["xs"], *maps["pg"]))
    return program.derived["solve_maps"]


@njit(cache=True, **UNCOUNTED)
def solve_one(maps, C, Lin, Lmag, cache, Xout, dropped, scratch):
    """Forward sweep of one element's linear terms ``Lin (linear_size,)`` (with ``Lmag``, the size of the
    right-hand sides each hard row combines) through its conditionals ``C``, and back-substitution into
    ``Xout (value_size,)``; the dropped rows' residuals and sizes into ``dropped``; ``maps`` from
    :func:`solve_maps`.  Any width (:mod:`elimination.vectors`): sixteen elements side by side, ``(entry,
    lane)``, for the lanes (:mod:`elimination.lanes`), whose programs have no
    dropped rows and pass ``Lin`` for ``Lmag`` and ``dropped``."""
    steps, gs, gd, bs, bd, xfs, xfd, xss, xsd, pgs, pgd = maps
    g, bl, bm, x, xs, gz, rows = scratch
    # the table is read by (step, column), never through a row view: see compiled_pairs._revolute_pair
    for st in range(steps.shape[0]):
        op = steps[st, OP]
        if op == OP_FUSED:  # run by its pair's instruction, just before
            continue
        if op == OP_REVOLUTE:
            _revolute_forward(steps, st, gs, gd, bs, bd, pgs, pgd, C, Lin, cache, g, rows)
            continue
        if op == OP_TREE:
            _tree_forward(steps, st, gs, gd, bs, bd, pgs, pgd, C, Lin, cache, g, rows)
            continue
        if op == OP_WIDE_REVOLUTE:
            _wide_revolute_forward(steps, st, gs, gd, bs, bd, C, Lin, cache, g, rows)
            continue
        _step_forward(steps, st, gs, gd, bs, bd, C, Lin, Lmag, cache, dropped, g, bl, bm, gz)
    st = steps.shape[0]
    while st > 0:
        st -= 1
        if steps[st, OP] == OP_FUSED and steps[st - 1, OP] == OP_REVOLUTE:
            st -= 1
            _revolute_backward(steps, st, xss, xsd, xfs, xfd, C, cache, Xout, x, xs, rows)
            continue
        if steps[st, OP] == OP_FUSED and steps[st - 1, OP] == OP_WIDE_REVOLUTE:
            st -= 1
            _wide_revolute_backward(steps, st, xss, xsd, xfs, xfd, C, cache, Xout, x, xs, rows)
            continue
        _step_backward(steps, st, xss, xsd, xfs, xfd, C, cache, Xout, x, xs, g, gz)


@njit(cache=True)
def solve_kernel(maps, C, Lin, Lmag, cache, Xout, dropped, maxn):
    """:func:`solve_one` for every element of ``Lin (B, linear_size)``.  ``C`` holds the conditionals of
    ``Bc`` elements; element ``b`` uses ``b % Bc`` (unbatched matrices with batched linear terms)."""
    scratch = solve_scratch(maxn)
    Bc = C.shape[0]
    for b in range(Lin.shape[0]):
        solve_one(maps, C[b % Bc], Lin[b], Lmag[b], cache[b], Xout[b], dropped[b], scratch)




def announce_first_compile(module: str = __file__, what: str = "the elimination kernels", kernel: str = "*",
                           takes: str = "about a minute") -> None:
    """Say once per process and module (and ``kernel``, a function's name), on stderr, that ``what`` is being
    compiled and about how long that ``takes`` (only where it has no disk cache yet: numba keeps it in
    ``__pycache__`` beside the module, an index per function, ``<module>.<function>-<line>.<python>.nbi``)."""
    if (module, kernel) in _ANNOUNCED:
        return
    _ANNOUNCED.add((module, kernel))
    path = Path(module)
    if not any((path.parent / "__pycache__").glob(f"{path.stem}.{kernel}-*.nbi")):
        print(f"gaussgraph: compiling {what} (once; cached on disk, {takes})...", file=sys.stderr, flush=True)


def max_front(program) -> int:
    """Largest front or hard-row count of ``program`` (the kernels' scratch size; cached in its maps)."""
    if "maxn" not in program.derived:
        steps = program.steps
        # a tree pair's 6 x 6 blocks, two to a scratch matrix (compiled_pairs._tree_pair), take 72 entries
        pairs = 9 if np.any(steps[:, OP] == OP_TREE) else 1
        fronts = int(max(np.max(steps[:, NF] + steps[:, NS]), np.max(steps[:, M]))) if len(steps) else 1
        program.derived["maxn"] = max(pairs, fronts)
    return program.derived["maxn"]


def factor_workspace(graph, program):
    """``(Fw (Bm, factor_size), batch, largest)``: the graph's matrices and diagonal magnitudes in the
    program's layout, and the largest diagonal magnitude of its quadratic factors.

    The program lays the graph's factors out by shape (:func:`elimination.program.lower`): the
    matrices of one group side by side, then their scales.  So a group is one stacked copy into
    its block of ``Fw`` and one pass for its scales, whatever the number of factors: one
    ``np.array`` call for an unbatched graph, each batched array copied once into place otherwise.
    """
    matrices = _matrices(graph, program)
    batch = _matrix_batch(graph, matrices)
    Fw, largest = _filled(program, matrices, batch, graph.batch_shape == (), slice(None), None)
    return Fw, batch, largest


def _matrices(graph, program) -> list:
    """Per group of the program, its factors' matrices: ``H``, or ``[A_1 ... A_k]`` of a hard group."""
    from factorgraph.factors import concat_last

    factors = graph.factors
    return [[concat_last(factors[i].A, 2) if group.hard else factors[i].H for i in group.members]
            for group in program.groups]


def _matrix_batch(graph, matrices: list) -> tuple:
    """The matrices' batch only: unbatched matrices with batched linear terms factorize once."""
    if graph.batch_shape == ():
        return ()
    return tuple(np.broadcast_shapes(*{m.shape[:-2] for group in matrices for m in group}))


def _filled(program, matrices: list, batch: tuple, unbatched: bool, chosen: slice, out) -> tuple:
    """``(Fw, largest)`` of the elements ``chosen`` of the flattened ``batch`` (:func:`factor_workspace`),
    into ``out (len(chosen), factor_size)`` where given; ``largest`` is theirs."""
    Bm = int(np.prod(batch))
    stacks = [stacked(blocks, 2)[0][None] for blocks in matrices] if unbatched else None  # small: np.array, in C
    Fw = np.empty((len(range(Bm)[chosen]), program.factor_size)) if out is None else out
    largest = 0.0
    for g, (group, blocks) in enumerate(zip(program.groups, matrices)):
        k, rows, n = len(group.members), group.rows, group.n
        block = Fw[:, group.start : group.start + k * rows * n].reshape(Fw.shape[0], k, rows, n)
        if stacks is not None:
            block[...] = stacks[g]
        else:  # large batched arrays: copied once each, straight into place
            np.stack([(m if m.shape[:-2] == batch else np.broadcast_to(m, batch + (rows, n))).reshape(Bm, rows, n)[chosen]
                      for m in blocks], axis=1, out=block)
        largest = max(largest, group_scales(Fw, group, block))
    return Fw, largest


def group_scales(Fw: np.ndarray, group, block: np.ndarray) -> float:
    """Write the scales of a factor group (:class:`elimination.program.FactorGroup`) whose matrices ``block
    (B, k, rows, n)`` sit in ``Fw (B, factor_size)``: ``1 / ||row||`` of hard factors (unit-origin row scales),
    ``|H_ii|`` of quadratic ones; returns the largest ``|H_ii|`` (0 for a hard group)."""
    from .gaussian import row_norms

    scale = Fw[:, group.scales : group.scales + len(group.members) * group.rows].reshape(block.shape[:3])
    if group.hard:
        scale[...] = 1.0 / row_norms(block)
        return 0.0
    np.abs(np.diagonal(block, axis1=-2, axis2=-1), out=scale)
    return float(np.max(scale, initial=0.0))


WORKSPACE_CHUNK = 32 * 2**20  # bytes of factor workspace a batched factorization fills and runs at a time


def factorize_graph(graph, program, floor_rtol: float, C: np.ndarray | None = None) -> tuple:
    """``(C, ratio, weakest, failed, batch)``: :func:`factor_workspace` and :func:`run_factorize` of the
    graph, whose scale floor is ``floor_rtol`` times the largest diagonal magnitude of its quadratic
    factors over the whole batch; the conditionals into ``C`` (zeroed first) where it has their shape.

    A batch is factorized a chunk of elements at a time, through one reused workspace of at most
    ``WORKSPACE_CHUNK`` bytes (at least one element): the factor workspace of a large batch is never
    whole in memory (256 pose graphs of 1400 variables: 630 MB), only the conditionals the solves read.
    A batch of at least :data:`elimination.lanes.LANES` elements whose program the lane kernels cover
    runs there, its elements side by side, and ``C`` is in their layout ``(groups, conditional_size,
    LANES)``.  Each element's numbers are those of one workspace for the whole batch, bit for bit.
    """
    from . import lanes  # (it builds on this module)

    matrices = _matrices(graph, program)
    batch = _matrix_batch(graph, matrices)
    Bm = int(np.prod(batch))
    if batch and Bm >= lanes.LANES and lanes.covers(program):
        C = zeroed(C, (lanes.groups_of(Bm), program.conditional_size, lanes.LANES), allocate=lanes.aligned_zeros)
        return (*lanes.factorize_graph(program, matrices, batch, floor_rtol, C), batch)
    per = max(1, min(Bm, WORKSPACE_CHUNK // (8 * max(1, program.factor_size))))
    out = (zeroed(C, (Bm, program.conditional_size)), np.empty(Bm), np.empty(Bm, dtype=np.int64),
           np.empty(Bm, dtype=np.int64))
    if per == Bm:
        Fw, largest = _filled(program, matrices, batch, graph.batch_shape == (), slice(None), None)
        return (*run_factorize(program, Fw, floor_rtol * largest, out), batch)
    floor = floor_rtol * _largest_diagonal(program, matrices)  # (the whole batch's, as one workspace's)
    Fw = np.empty((per, program.factor_size))
    for b0 in range(0, Bm, per):
        b1 = min(Bm, b0 + per)
        _filled(program, matrices, batch, False, slice(b0, b1), Fw[: b1 - b0])
        run_factorize(program, Fw[: b1 - b0], floor, tuple(x[b0:b1] for x in out))
    return (*out, batch)


def zeroed(C: np.ndarray | None, shape: tuple, allocate=np.zeros) -> np.ndarray:
    """Zeros of ``shape``: ``C``'s memory, zeroed, where it has that shape (the kernels write only the
    blocks they use, and read the others as zeros), else fresh from ``allocate(shape)``."""
    if C is None or C.shape != shape:
        return allocate(shape)
    C.fill(0.0)
    return C


def _largest_diagonal(program, matrices: list) -> float:
    """The largest diagonal magnitude of the quadratic factors' matrices (:func:`_matrices`), whole batch."""
    return max((float(np.max(np.abs(np.diagonal(H, axis1=-2, axis2=-1)), initial=0.0))
                for group, blocks in zip(program.groups, matrices) if not group.hard for H in blocks), default=0.0)


def stacked(arrays: list, core: int) -> tuple:
    """``(stack, batch)``: ``arrays`` (each ``(*batch_i, *core_shape)``, ``core`` trailing axes) as one array
    ``(*batch, k, *core_shape)``, ``batch`` their broadcast batch shape.

    Arrays of one shape -- the common case, a graph's factors of one kind -- are copied by one
    ``np.array`` call in C; mixed batch shapes are broadcast one by one.
    """
    try:
        stack = np.array(arrays)  # (k, *batch, *core); numpy refuses arrays of different shapes
    except ValueError:
        stack = None
    if stack is not None and stack.dtype != object and stack.ndim == arrays[0].ndim + 1:
        nb = stack.ndim - 1 - core
        return np.moveaxis(stack, 0, nb), stack.shape[1 : 1 + nb]
    shapes = {a.shape for a in arrays}
    batch = tuple(np.broadcast_shapes(*(s[: len(s) - core] for s in shapes)))
    return np.stack([np.broadcast_to(a, batch + a.shape[a.ndim - core:]) for a in arrays], axis=len(batch)), batch


def scratch_maps(program) -> tuple:
    """The ``H`` and ``A`` gather maps with destinations in the kernel's ``maxn``-wide scratch matrices.

    The program's maps address a step's ``n``-wide front (``i * n + j``); the kernel's
    scratch rows are ``maxn`` wide.  Re-addressed once per program (cached in its maps),
    so that a gather is one store, without a division by ``n`` to find the row.
    """
    maxn = max_front(program)
    key = f"H,A@{maxn}"
    if key not in program.derived:
        steps = program.steps
        re_addressed = []
        for name, (lo, hi) in (("H", (H0, H1)), ("A", (A0, A1))):
            src, dst = program.maps[name]
            n = np.repeat(steps[:, NF] + steps[:, NS], steps[:, hi] - steps[:, lo])  # ranges are in step order
            re_addressed.append((src, (dst // n) * maxn + dst % n))
        program.derived[key] = tuple(re_addressed)
    return program.derived[key]


def packed(arrays) -> tuple:
    """``(flat, index)``: ``arrays`` (one kind, up to 4-D) end to end in ``flat`` (integers :func:`narrowed`),
    and ``index (k, 5)`` of rows ``(start, *shape)`` (shape padded with ones).

    A kernel that takes the two instead of ``k`` arrays is cheaper to call: numba's dispatch costs ~50 ns
    per array argument, most of a one-state call's overhead.  It views them back with ``unpacked1`` ...
    ``unpacked4`` (free where it runs :data:`UNCOUNTED`).

    >>> flat, index = packed([np.arange(6).reshape(2, 3), np.arange(2)])
    >>> flat.tolist(), index[:, :3].tolist()
    ([0, 1, 2, 3, 4, 5, 0, 1], [[0, 2, 3], [6, 2, 1]])
    """
    arrays = [np.ascontiguousarray(a) for a in arrays]
    index = np.ones((len(arrays), 5), dtype=np.int64)
    starts = np.cumsum([0] + [a.size for a in arrays])
    for k, a in enumerate(arrays):
        index[k, 0] = starts[k]
        index[k, 1:1 + a.ndim] = a.shape
    flat = np.concatenate([a.ravel() for a in arrays]) if arrays else np.zeros(0)
    return narrowed(flat), index


@njit(cache=True, inline="always")
def unpacked1(flat, index, k):
    return flat[index[k, 0]:index[k, 0] + index[k, 1]]


@njit(cache=True, inline="always")
def unpacked2(flat, index, k):
    s, a, b = index[k, 0], index[k, 1], index[k, 2]
    return flat[s:s + a * b].reshape((a, b))


@njit(cache=True, inline="always")
def unpacked3(flat, index, k):
    s, a, b, c = index[k, 0], index[k, 1], index[k, 2], index[k, 3]
    return flat[s:s + a * b * c].reshape((a, b, c))


@njit(cache=True, inline="always")
def unpacked4(flat, index, k):
    s, a, b, c, d = index[k, 0], index[k, 1], index[k, 2], index[k, 3], index[k, 4]
    return flat[s:s + a * b * c * d].reshape((a, b, c, d))


FACTORIZE_MAPS = 17  # arrays of factorize_maps (the step table first); solve_maps: the table and SOLVE_MAPS more
SOLVE_MAPS = 10


@njit(cache=True, inline="always")
def factorize_maps_in(flat, index):
    """:func:`factorize_maps` from :func:`packed` ``(flat, index)``, whose first ``FACTORIZE_MAPS`` rows
    they are."""
    return (unpacked2(flat, index, 0), unpacked1(flat, index, 1), unpacked1(flat, index, 2),
            unpacked1(flat, index, 3), unpacked1(flat, index, 4), unpacked1(flat, index, 5),
            unpacked1(flat, index, 6), unpacked1(flat, index, 7), unpacked1(flat, index, 8),
            unpacked1(flat, index, 9), unpacked1(flat, index, 10), unpacked1(flat, index, 11),
            unpacked1(flat, index, 12), unpacked1(flat, index, 13), unpacked1(flat, index, 14),
            unpacked1(flat, index, 15), unpacked1(flat, index, 16))


@njit(cache=True, inline="always")
def solve_maps_in(flat, index, k):
    """:func:`solve_maps` from :func:`packed` ``(flat, index)``: the step table at row 0 (shared with
    :func:`factorize_maps_in`), its ``SOLVE_MAPS`` index maps from row ``k``."""
    return (unpacked2(flat, index, 0), unpacked1(flat, index, k), unpacked1(flat, index, k + 1),
            unpacked1(flat, index, k + 2), unpacked1(flat, index, k + 3), unpacked1(flat, index, k + 4),
            unpacked1(flat, index, k + 5), unpacked1(flat, index, k + 6), unpacked1(flat, index, k + 7),
            unpacked1(flat, index, k + 8), unpacked1(flat, index, k + 9))


def narrowed(a: np.ndarray) -> np.ndarray:
    """An integer table as the kernels read it: ``int32`` where every entry fits, else as it is.

    Half the bytes of ``int64``: the step table and maps are most of what a one-state call reads
    (200 KB for Talos), and a call between other work finds them out of the caches.  Offsets past
    ``2**31`` would need a workspace of 16 GB per element.
    """
    a = np.ascontiguousarray(a)
    if a.dtype.kind in "iu" and (a.size == 0 or (a.min() >= -2**31 and a.max() < 2**31)):
        return a.astype(np.int32)
    return a


def factorize_maps(program) -> tuple:
    """The step table and index maps :func:`factorize_one` reads (gathers re-addressed by
    :func:`scratch_maps`), :func:`narrowed` (made once per program)."""
    if "factorize_maps" not in program.derived:
        runnable(program)
        (hs, hd), (as_, ad) = scratch_maps(program)
        maps = program.maps
        program.derived["factorize_maps"] = tuple(narrowed(a) for a in (
            program.steps, hs, hd, *maps["scale"], as_, ad, *maps["rs"], *maps["eq"], *maps["pb"], *maps["pH"],
            *maps["ps"]))
    return program.derived["factorize_maps"]


@njit(cache=True)
def eliminate_kernel(flat, index, Fw, C, floor, maxn, check_rank, floats, ints, Lin, Lmag, L, M, cache, X, dropped,
                     solve_floats):
    """One trip into compiled code for :func:`elimination.compiled_elimination`: :func:`factorize_one` of
    every element of ``Fw (B, factor_size)`` into ``C (B, n)``, then, where none failed (else False),
    :func:`solve_one` of every element from copies ``L``, ``M`` of its linear terms and right-hand side
    sizes ``Lin``, ``Lmag (B, linear_size)`` (the solve writes the generated factors' among them).
    ``(flat, index)``: :func:`eliminate_tables`; the rest made once by the caller."""
    maps, smaps = factorize_maps_in(flat, index), solve_maps_in(flat, index, FACTORIZE_MAPS)
    scratch, sscratch = factorize_scratch_in(floats, ints, maxn), solve_scratch_in(solve_floats, maxn)
    for b in range(Fw.shape[0]):
        if factorize_one(maps, Fw[b], C[b], floor, check_rank, scratch)[2] != -1:
            return False
    for b in range(Fw.shape[0]):
        for i in range(Lin.shape[1]):
            L[b, i], M[b, i] = Lin[b, i], Lmag[b, i]
        solve_one(smaps, C[b], L[b], M[b], cache[b], X[b], dropped[b], sscratch)
    return True


def eliminate_tables(program) -> tuple:
    """The factorize and solve maps of ``program`` packed for :func:`eliminate_kernel` (cached)."""
    if "eliminate" not in program.derived:
        program.derived["eliminate"] = packed([*factorize_maps(program), *solve_maps(program)[1:]])
    return program.derived["eliminate"]


def run_factorize(program, Fw: np.ndarray, floor: float, out: tuple | None = None):
    """``(C, ratio, weakest, failed)`` per element (``failed``: step of a pivot not of its sign, -1: none),
    into ``out`` where given (``C`` zeros: the kernel writes only the blocks it uses)."""
    Bm, maxn = Fw.shape[0], max_front(program)
    C, ratio, weak, fail = out if out is not None else (
        np.zeros((Bm, program.conditional_size)), np.empty(Bm), np.empty(Bm, dtype=np.int64),
        np.empty(Bm, dtype=np.int64))
    floats, ints = factorize_scratch_size(maxn)
    announce_first_compile()
    factorize_kernel(factorize_maps(program), Fw, C, floor, maxn, program.check_rank, ratio, weak, fail,
                     np.zeros(floats), np.zeros(ints, dtype=np.int64))
    return C, ratio, weak, fail


def run_solve(program, C: np.ndarray, Lin: np.ndarray, Lmag: np.ndarray | None):
    """``(X (B, value_size), dropped (B, dropped_size))`` for the linear terms ``Lin (B, linear_size)`` and
    the sizes ``Lmag`` of the hard rows' right-hand sides (``None`` for a program without hard rows), which
    are read, not written; ``C`` has ``Bc`` rows and element ``b`` uses row ``b % Bc``.

    The kernel writes the generated factors' terms among the linear terms: it runs on a copy of a chunk
    of elements at a time (at most ``WORKSPACE_CHUNK`` bytes, whole multiples of ``Bc`` where ``C`` is
    shared), so a large batch's solve makes no copy of its terms (256 pose graphs: 170 MB)."""
    B, Bc = Lin.shape[0], C.shape[0]
    X = np.zeros((B, program.value_size))
    dropped = np.zeros((B, program.dropped_size))
    per = max(1, min(B, WORKSPACE_CHUNK // (8 * (2 * program.linear_size + program.cache_size + 1))))
    if Bc not in (1, B):  # C repeats every Bc elements: chunks start at a multiple of Bc
        per = max(Bc, per - per % Bc)
    L, M, cache = (np.empty((per, program.linear_size)), np.zeros((per, program.linear_size)),
                   np.zeros((per, program.cache_size)))
    maps, maxn = solve_maps(program), max_front(program)
    for b0 in range(0, B, per):
        b1 = min(B, b0 + per)
        n = b1 - b0
        L[:n] = Lin[b0:b1]
        if Lmag is not None:
            M[:n] = Lmag[b0:b1]
        solve_kernel(maps, C[b0:b1] if Bc == B else C, L[:n], M[:n], cache[:n], X[b0:b1], dropped[b0:b1], maxn)
    return X, dropped
