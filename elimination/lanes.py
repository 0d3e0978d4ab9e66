"""Batches side by side: a batch of same-structure graphs factorized and solved with its elements innermost.

:func:`elimination.compiled.factorize_one` runs the step table for one
element at a time: every entry of every front is a scalar load or store
through an index map, and on a graph of small blocks (a pose graph of 6-d
variables: fronts of 12 to 18) that bookkeeping costs more than the
arithmetic.  Here :data:`LANES` elements share one pass over the table: the
workspaces are laid out ``(entry, lane)``, so each index read, loop bound and
decision of a step serves every lane, and the innermost loop, over the lanes,
is one vector instruction (:mod:`elimination.vectors`: sixteen doubles, four
AVX2 registers).  On the engine benchmark's graphs (64 of them, hot): the
factorization with its fill 2.8x, the solve 2.3x faster than one element at a
time.

The layout is lanes from end to end, since moving a batch between layouts
costs what the lanes save: the factor workspace is filled in lanes inside the
kernel, straight from the graph's matrices (:func:`_fill_group`: scalar, one
source per lane), the conditionals stay in lanes ``(group, entry, lane)`` for
the solves, and the solve reads each element's linear terms and writes its
values where they are.

The kernels cover the programs of least-squares and quadratic graphs -- no hard
rows, a definite or negative pivot of the whole frontal block, no tree or wide
pairs (:func:`covers`) -- and run the per-element kernels' own steps at the
lanes' width (:func:`elimination.compiled_front._generic_step` and the solve,
:func:`elimination.compiled.solve_one`: one source for every width): each
element's conditionals, pivot ratio, failed step and values are those of the
per-element kernels, bit for bit, so a graph gets the same numbers alone or in
a batch.  Other programs, and batches of fewer than :data:`LANES` elements,
keep the per-element kernels.

The programs of a mechanism's dynamics in a spanning-tree order
(:func:`covers_pairs`: ABA's, LCABA's, proxBBO's, C-ABA's steps) are mostly
pair instructions -- ``REVOLUTE_PAIR``, ``WIDE_REVOLUTE`` (a loop's link and
joint, the separator the loop's multipliers and other links) and
``TREE_PAIR`` (a free-flyer, spherical or planar joint) -- and steps alone (a
free body's link, a contact's or a loop root's multipliers, an embedded
cluster's links and ``y``): the same driver
(:func:`elimination.compiled.factorize_steps`) runs them at sixteen lanes, on
a workspace the caller fills (:func:`mechanics.compiled_lanes.lanes_kernel`:
the states' kinematics and constraints in lanes too), with the pairs' kernels
of :mod:`elimination.compiled_pairs` written once for every width.  On Talos's
tree a batch of eight took the pairs' factorization 1.7x and their solve 2.1x
faster than eight states one at a time (eight lanes then).
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba.typed import List

from .compiled import (announce_first_compile, factorize_maps, factorize_scratch_in, factorize_scratch_size,
                       factorize_steps, max_front, solve_maps, solve_one)
from .compiled_front import (
    D_, DEFINITE, IDENTITY, M, NEGATIVE, NZ, OP, OP_FUSED, OP_PIVOT, OP_REVOLUTE, OP_TREE, OP_WIDE_REVOLUTE, P, PIVOT,
)
from .kernel_cache import drop_stale_cache
from . import compiled, compiled_front, compiled_pairs, compiled_pivot, vectors as v

LANES = v.WIDTH
"""Elements per pass: the vector operations' width.  (Written as loops over the lanes, numba unrolls them
into scalar instructions, 1.4x slower here: LLVM's SLP vectorizer would fuse them and numba leaves it off;
with the lanes an array's length, LLVM's loop vectorizer takes them behind run-time overlap checks, 1.6x
slower.)"""
PAIRS = (OP_REVOLUTE, OP_TREE, OP_WIDE_REVOLUTE, OP_FUSED)  # (a pair's two rows: its kernels, not the generic step)
drop_stale_cache(__file__, compiled.__file__, compiled_front.__file__, compiled_pairs.__file__, compiled_pivot.__file__,
                 v.__file__)  # (inlined or linked in)


def aligned_zeros(shape) -> np.ndarray:
    """``np.zeros(shape)`` starting on a ``8 * LANES``-byte boundary: a row of ``LANES`` doubles then fills whole
    cache lines.

    (numpy's large arrays start 16 bytes past a page boundary: every row would straddle two cache
    lines, and each vector load and store of a lane kernel split in two -- Talos's LCABA batch took 15%
    longer.)

    >>> aligned_zeros((3, LANES)).ctypes.data % 64
    0
    """
    size = int(np.prod(shape))
    buffer = np.zeros(size + LANES)
    start = (-buffer.ctypes.data % (8 * LANES)) // 8
    return buffer[start:start + size].reshape(shape)


def covers(program) -> bool:
    """Whether the lane kernels run every step of ``program``: every instruction a ``PIVOT`` (no hard rows, a
    definite or negative pivot of the whole frontal block: a program of quadratic and least-squares
    factors).  They ignore the ``start`` and ``keep`` marks (module docstring of :mod:`elimination.program`)."""
    steps = program.steps
    return bool(len(steps)) and not program.unsupported and bool(np.all(steps[:, OP] == OP_PIVOT))


def covers_pairs(program) -> bool:
    """Whether the lanes run ``program`` of a mechanism's dynamics in a spanning-tree order (ABA's, LCABA's,
    proxBBO's, C-ABA's): mostly tree pairs (:func:`elimination.program._tree_pair`) and wide pairs (``_wide_pair``),
    and steps alone (``FRONT``, ``PIVOT``, ``UNIT``: a loop root's multipliers, a free body's link, an embedded
    cluster's links and ``y``) that the generic step runs at the lanes' width
    (:func:`elimination.compiled_front._generic_step`): none with a general substitution (hard rows other than
    declared ``+-I`` ones) or a quasi-definite or indefinite pivot, and none with rows left over (the lanes pass
    no sizes of right-hand sides and check no dropped rows)."""
    steps = program.steps
    op = steps[:, OP]
    general = (steps[:, M] > 0) & (steps[:, IDENTITY] == 0) & ~np.isin(op, PAIRS)
    one_state_pivot = (steps[:, NZ] > 0) & ~np.isin(steps[:, PIVOT], (DEFINITE, NEGATIVE)) & ~np.isin(op, PAIRS)
    passed_on = (steps[:, P] > 0) | (steps[:, D_] > 0)  # (rows left over whose sizes or drops a solve keeps)
    return (bool(len(steps)) and not program.unsupported and bool(np.all(np.isin(op, tuple(compiled.KERNELS))))
            and not bool(np.any(general | one_state_pivot | passed_on)))


def groups_of(elements: int) -> int:
    """Lane groups holding ``elements`` (the last one padded with copies of the last element)."""
    return -(-elements // LANES)


# ---------------------------------------------------------------------------------------------------------
# factorization


def scratch_rows(maxn: int) -> int:
    """Rows of ``LANES`` that :func:`scratch_in` carves for fronts up to ``maxn`` wide."""
    n = max(maxn, 6)
    return 10 * n * n + 3 * n + 8 + 7 * n + 18


@njit(cache=True, inline="always")
def scratch_in(rows, maxn):
    """The lanes' scratch, carved from ``rows (scratch_rows(maxn), LANES)``: a caller that keeps it allocates
    nothing per call.  ``(pair, front, r, ok)``, :func:`elimination.compiled.factorize_steps`' at sixteen lanes --
    the generic step's rows (``H``, ``A``, ``scale``, ``unit``, ``L``, ``Li``, ``X``, ``D``, ``T``, ``HFT``,
    ``E_keep``, ``E_drop``, ``H_zS`` and six temporaries), a pivot ratio and a value per lane, and the pairs',
    which share the front ``H`` (``maxn * maxn``, row-major), scales, temporaries and a substitution's ``A``,
    ``T`` and ``HFT`` and add ``t``, ``u`` and a wide pair's ``y`` -- and the solve's
    (:func:`elimination.compiled.solve_one` in lanes: ``g``, a step's right-hand sides and their sizes, ``x``,
    ``x_S``, ``g_z``, temporaries)."""
    n = max(maxn, 6)
    a = n * n
    m = rows[:10 * a].reshape((10, a, LANES))
    e = rows[10 * a:10 * a + 3 * n].reshape((3, n, LANES))
    f = 10 * a + 3 * n
    tmp = rows[f:f + 6]
    front = (m[0], m[1], e[0], e[1], m[2], m[3], m[4], e[2], m[5], m[6], m[7], m[8], m[9], tmp)
    r, ok = rows[f + 6], rows[f + 7]
    vectors = rows[f + 8:f + 8 + 7 * n].reshape((7, n, LANES))
    y, g, x, xs, gz, bl, bm = vectors[0], vectors[1], vectors[2], vectors[3], vectors[4], vectors[5], vectors[6]
    b = f + 8 + 7 * n
    t6, u6, stmp = rows[b:b + 6], rows[b + 6:b + 12], rows[b + 12:b + 18]
    H, A, scale, T, HFT = front[0], front[1], front[2], front[8], front[9]
    pair = (H, scale, t6, u6, tmp, y, A, T, HFT, tmp[5].view(np.bool_))  # (the tree pair's flag: a float row)
    return (pair, front, r, ok), (g, bl, bm, x, xs, gz, stmp)


@njit(cache=True, error_model="numpy")  # (counted: a typed list's items are)
def _fill_group(sources, members, first, elements, Fw):
    """The factor workspace ``Fw (factor_size, LANES)`` of the elements ``first ..`` (lanes past the batch
    repeat its last element): each member's matrix copied into place and its diagonal magnitudes."""
    for k in range(members.shape[0]):
        src = sources[k]
        start, scales, rows, n, stride = members[k, 0], members[k, 1], members[k, 2], members[k, 3], members[k, 4]
        for w in range(LANES):
            base = min(first + w, elements - 1) * stride
            for e in range(rows * n):
                Fw[start + e, w] = src[base + e]
            for i in range(rows):
                Fw[scales + i, w] = abs(src[base + i * n + i])


@njit(cache=True, error_model="numpy")
def _largest_diagonal(sources, members, elements):
    """The largest diagonal magnitude of every member's matrix over the batch: what
    :func:`elimination.compiled._largest_diagonal` takes from the same matrices, in one compiled pass over the
    typed list the fill reads (numpy's took most of a batch's fill: benchmarks/README.md)."""
    top = 0.0
    for k in range(members.shape[0]):
        src, rows, n, stride = sources[k], members[k, 2], members[k, 3], members[k, 4]
        for b in range(elements if stride else 1):
            for i in range(rows):
                top = max(top, abs(src[b * stride + i * n + i]))
    return top


@njit(cache=True, error_model="numpy")
def factorize_kernel(maps, sources, members, elements, factor_size, C, floor, maxn, rows, floats, ints, ratio, weak,
                     failed):
    """For every lane group of ``C (groups, conditional_size, LANES)``: its factor workspace filled from the
    members' matrices (:func:`_members`), then :func:`elimination.compiled.factorize_steps` at sixteen lanes; per
    lane results into ``ratio``, ``weak``, ``failed`` ``(groups * LANES,)``.  One workspace serves every group;
    ``rows``: the lanes' scratch (:func:`scratch_rows`), ``floats``, ``ints``: the one-state scratch
    (:func:`elimination.compiled.factorize_scratch_size`)."""
    (_, front, r, ok), _ = scratch_in(rows, maxn)  # (no pairs here: covers)
    scratch = factorize_scratch_in(floats, ints, maxn)
    floors = np.full((1, LANES), floor)
    Fw = np.zeros((factor_size, LANES))
    for k in range(C.shape[0]):
        lo, hi = k * LANES, (k + 1) * LANES
        _fill_group(sources, members, lo, elements, Fw)
        factorize_steps(maps, Fw, C[k], floors, np.bool_(False), scratch, None, front, r, ok, ratio[lo:hi],
                        weak[lo:hi], failed[lo:hi])  # (np.bool_, as one state's: a literal would compile anew)


def _members(program, matrices: list, batch: tuple) -> tuple:
    """``(sources, members)``: every factor's matrix, flat (a typed list: one argument for thousands of
    arrays), and per factor ``(start, scales, rows, n, stride)`` -- where its matrix and its
    diagonal magnitudes go in the factor workspace, and the distance between its elements (0: one matrix
    for the whole batch)."""
    sources, members = List(), []
    for group, blocks in zip(program.groups, matrices):
        rows, n = group.rows, group.n
        for i, m in enumerate(blocks):
            unbatched = m.ndim == 2
            if not unbatched and m.shape[:-2] != batch:
                m = np.broadcast_to(m, batch + (rows, n))
            sources.append(np.ascontiguousarray(m).reshape(-1))
            members.append((group.start + i * rows * n, group.scales + i * rows, rows, n, 0 if unbatched else rows * n))
    return sources, np.array(members, dtype=np.int64).reshape(-1, 5)


def factorize_graph(program, matrices: list, batch: tuple, floor_rtol: float, C: np.ndarray) -> tuple:
    """``(C, ratio, weakest, failed)`` of the batch whose matrices :func:`elimination.compiled._matrices`
    listed, with the scale floor ``floor_rtol`` times the batch's largest diagonal magnitude: the
    conditionals into the zeros ``C (groups_of(Bm), conditional_size, LANES)``, the others ``(Bm,)``.

    Each lane group's factor workspace is filled from the graph's matrices inside the kernel, into one
    workspace that serves every group: the batch's workspace is never whole in memory."""
    Bm = int(np.prod(batch))
    groups = groups_of(Bm)
    size = groups * LANES
    ratio, weak, failed = np.empty(size), np.empty(size, np.int64), np.empty(size, np.int64)
    announce_first_compile(__file__, "the lane kernels")
    sources, members = _members(program, matrices, batch)
    floor = floor_rtol * _largest_diagonal(sources, members, Bm)
    maxn = max_front(program)
    floats, ints = factorize_scratch_size(maxn)
    factorize_kernel(factorize_maps(program), sources, members, Bm, program.factor_size, C, floor, maxn,
                     aligned_zeros((scratch_rows(maxn), LANES)), np.zeros(floats), np.zeros(ints, np.int64), ratio,
                     weak, failed)
    return C, ratio[:Bm], weak[:Bm], failed[:Bm]


# ---------------------------------------------------------------------------------------------------------
# solve


@njit(cache=True, error_model="numpy")
def solve_kernel(maps, C, Lin, X, cache_size, maxn):
    """:func:`elimination.compiled.solve_one` in lanes for every element of ``Lin (B, linear_size)``, values into
    ``X (B, value_size)``; ``C (groups_of(B), conditional_size, LANES)``.  Each group's terms are copied into
    lanes (the sweep writes the generated factors' terms among them) and its values out of them; padding lanes
    repeat the last element and are not written out.  (No hard rows here: ``Lin`` stands in for the rows'
    sizes and dropped residuals, which are never read, and ``T`` for their right-hand sides.)"""
    B = Lin.shape[0]
    Ll, cache, Xl = np.zeros((Lin.shape[1], LANES)), np.zeros((cache_size, LANES)), np.zeros((X.shape[1], LANES))
    g, x, xs, gz, T = (np.zeros((maxn, LANES)), np.zeros((maxn, LANES)), np.zeros((maxn, LANES)),
                       np.zeros((maxn, LANES)), np.zeros((2, LANES)))
    for k in range(C.shape[0]):
        for i in range(Lin.shape[1]):
            for w in range(LANES):
                Ll[i, w] = Lin[min(k * LANES + w, B - 1), i]
        solve_one(maps, C[k], Ll, Ll, cache, Xl, Ll, (g, T, T, x, xs, gz, T))
        for w in range(min(LANES, B - k * LANES)):
            for i in range(X.shape[1]):
                X[k * LANES + w, i] = Xl[i, w]


def run_solve(program, C: np.ndarray, Lin: np.ndarray) -> np.ndarray:
    """``X (B, value_size)`` for the linear terms ``Lin (B, linear_size)`` (read, not written) of the ``B``
    elements whose conditionals :func:`factorize_graph` laid out in ``C``."""
    X = np.empty((Lin.shape[0], program.value_size))
    solve_kernel(solve_maps(program), C, Lin, X, program.cache_size, max_front(program))
    return X


def elements(C: np.ndarray, B: int) -> np.ndarray:
    """The conditionals ``C (groups, conditional_size, LANES)`` of ``B`` elements, one row each ``(B,
    conditional_size)`` (for the per-element solve of linear terms batched beyond the matrices)."""
    return np.ascontiguousarray(np.moveaxis(C, 2, 1).reshape(-1, C.shape[1])[:B])
