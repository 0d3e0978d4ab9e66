"""Batches side by side: a batch of same-structure graphs factorized and solved with its elements innermost.

:func:`elimination.compiled.factorize_one` runs the step table for one
element at a time: every entry of every front is a scalar load or store
through an index map, and on a graph of small blocks (a pose graph of 6-d
variables: fronts of 12 to 18) that bookkeeping costs more than the
arithmetic.  Here :data:`LANES` elements share one pass over the table: the
workspaces are laid out ``(entry, lane)``, so each index read, loop bound and
decision of a step serves every lane, and the innermost loop, over the lanes,
is contiguous and of a length known at compile time (unrolled by the
compiler).  On the engine benchmark's graphs (64 of them, hot): factorization
1.9x and solve 1.2x faster than one element at a time.  The unrolled lanes are
scalar instructions: LLVM's SLP vectorizer would make them vector ones, and
numba leaves it off (numba#8852, miscompilations).

The layout is lanes from end to end, since moving a batch between layouts
costs what the lanes save: the factor workspace is filled in lanes inside the
kernel, straight from the graph's matrices (:func:`_fill_group`), the
conditionals stay in lanes ``(group, entry, lane)`` for the solves, and the
solve reads each element's linear terms and writes its values where they are.

The kernels cover the programs of least-squares and quadratic graphs -- no hard
rows, a definite or negative pivot of the whole frontal block, no tree or wide
pairs (:func:`covers`) -- and repeat :func:`~elimination.compiled.factorize_one`'s
and :func:`~elimination.compiled.solve_one`'s arithmetic operation for
operation: each element's conditionals, pivot ratio, failed step and values are
those of the per-element kernels, bit for bit, so a graph gets the same numbers
alone or in a batch.  Other programs, and batches of fewer than :data:`LANES`
elements, keep the per-element kernels.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba.typed import List

from .compiled import (DS, G0, G1, H0, H1, IDENTITY, LINV, M, NF, NS, NZ, OUT_G, OUT_H, OUT_S, PAIR, PIVOT, S0, S1,
                       SINGULAR_RTOL, UNCOUNTED, XF0, XF1, XS0, XS1, Y_, YC,
                       announce_first_compile, factorize_maps, max_front, solve_maps)
from .program import PIVOTS

LANES = 8
"""Elements per pass (a constant: numba freezes it, and the loops over lanes unroll).  With the lanes an
array's length instead, LLVM's loop vectorizer takes them, behind run-time overlap checks that cost more
than they save (A/B on the engine graphs: 1.13x slower); 16 and 32 lanes were no faster than 8 in a first
prototype (the scratch fronts leave L1)."""
DEFINITE, NEGATIVE = PIVOTS["definite"], PIVOTS["negative"]


def covers(program) -> bool:
    """Whether the lane kernels run every step of ``program``: no hard rows, a definite or negative pivot of
    the whole frontal block, no pairs (a program of quadratic and least-squares factors)."""
    steps = program.steps
    return bool(len(steps)) and not program.unsupported and bool(np.all(
        (steps[:, M] == 0) & (steps[:, IDENTITY] == 0) & (steps[:, PAIR] == 0) & (steps[:, NZ] == steps[:, NF])
        & ((steps[:, PIVOT] == DEFINITE) | (steps[:, PIVOT] == NEGATIVE))))


def groups_of(elements: int) -> int:
    """Lane groups holding ``elements`` (the last one padded with copies of the last element)."""
    return -(-elements // LANES)


# ---------------------------------------------------------------------------------------------------------
# factorization


@njit(cache=True, inline="always", error_model="numpy")
def _gather(steps, st, hs, hd, ss, sd, Fw, H, scale, n, maxn, floor):
    """The step's front ``H`` and its scales from zero: the sum of its factors in ``Fw (entry, lane)``."""
    for i in range(n):
        for j in range(n):
            for w in range(LANES):
                H[i * maxn + j, w] = 0.0
        for w in range(LANES):
            scale[i, w] = 0.0
    for q in range(steps[st, H0], steps[st, H1]):
        d, s = hd[q], hs[q]
        for w in range(LANES):
            H[d, w] += Fw[s, w]
    for q in range(steps[st, S0], steps[st, S1]):
        d, s = sd[q], ss[q]
        for w in range(LANES):
            scale[d, w] += Fw[s, w]
    for i in range(n):
        for w in range(LANES):
            scale[i, w] = max(scale[i, w], floor)


@njit(cache=True, inline="always", error_model="numpy")
def _cholesky(H, sgn, nz, maxn, L, ok, t):
    """Lower Cholesky factor of ``sgn H[:nz, :nz]`` per lane into ``L`` (the operations of
    :func:`elimination.compiled._cholesky` on ``sgn H``); ``ok[w]`` False where a pivot is not positive."""
    for j in range(nz):
        for w in range(LANES):
            t[w] = sgn * H[j * maxn + j, w]
        for k in range(j):
            for w in range(LANES):
                t[w] -= L[j * maxn + k, w] * L[j * maxn + k, w]
        for w in range(LANES):
            ok[w] = ok[w] and t[w] > 0.0
            L[j * maxn + j, w] = np.sqrt(t[w])
        for i in range(j + 1, nz):
            for w in range(LANES):
                t[w] = sgn * H[i * maxn + j, w]
            for k in range(j):
                for w in range(LANES):
                    t[w] -= L[i * maxn + k, w] * L[j * maxn + k, w]
            for w in range(LANES):
                L[i * maxn + j, w] = t[w] / L[j * maxn + j, w]


@njit(cache=True, inline="always", error_model="numpy")
def _lower_inverse(L, nz, maxn, Li, t):
    """``Li = L^-1`` per lane (:func:`elimination.compiled._lower_inverse`'s operations)."""
    for j in range(nz):
        for i in range(nz):
            for w in range(LANES):
                Li[i * maxn + j, w] = 0.0
        for w in range(LANES):
            Li[j * maxn + j, w] = 1.0 / L[j * maxn + j, w]
        for i in range(j + 1, nz):
            for w in range(LANES):
                t[w] = 0.0
            for k in range(j, i):
                for w in range(LANES):
                    t[w] -= L[i * maxn + k, w] * Li[k * maxn + j, w]
            for w in range(LANES):
                Li[i * maxn + j, w] = t[w] / L[i * maxn + i, w]


@njit(cache=True, inline="always", error_model="numpy")
def _step_ratio(L, scale, nz, maxn, sgn, r):
    """The step's smallest pivot ratio per lane into ``r``, -1 where a multiplier's falls below round-off
    (:func:`elimination.compiled._pivot`)."""
    for w in range(LANES):
        r[w] = np.inf
    for i in range(nz):
        for w in range(LANES):
            r[w] = min(r[w], L[i * maxn + i, w] * L[i * maxn + i, w] / max(scale[i, w], 1e-300))
    if sgn < 0.0:
        for w in range(LANES):
            if not r[w] > SINGULAR_RTOL:
                r[w] = -1.0


@njit(cache=True, inline="always", error_model="numpy")
def _eliminate(steps, st, H, scale, Li, X, C, Fw, sgn, nF, nS, maxn):
    """``D``, ``Linv`` and ``Y = Linv H_FS`` into ``C``; ``H_SS - Y' D Y`` and its scales into the generated
    factor (:func:`elimination.compiled.factorize_one`'s operations)."""
    ds, li, yy = steps[st, DS], steps[st, LINV], steps[st, Y_]
    for i in range(nF):
        for w in range(LANES):
            C[ds + i, w] = sgn
        for j in range(nF):
            for w in range(LANES):
                C[li + i * nF + j, w] = Li[i * maxn + j, w]
    for i in range(nF):  # Y = Linv H_FS
        for j in range(nS):
            for w in range(LANES):
                X[i * maxn + j, w] = 0.0
        for q in range(i + 1):  # (Linv is lower triangular)
            for j in range(nS):
                for w in range(LANES):
                    X[i * maxn + j, w] += Li[i * maxn + q, w] * H[q * maxn + nF + j, w]
        for j in range(nS):
            for w in range(LANES):
                C[yy + i * nS + j, w] = X[i * maxn + j, w]
    for i in range(nS):  # (H_SS + H_SS') / 2 in the upper triangle (compiled._symmetric_separator)
        for j in range(i + 1, nS):
            upper, lower = (nF + i) * maxn + nF + j, (nF + j) * maxn + nF + i
            for w in range(LANES):
                H[upper, w] = 0.5 * (H[upper, w] + H[lower, w])
    for q in range(nF):  # H_SS -= Y' D Y in the upper triangle ; scale_S += sum Y^2
        for i in range(nS):
            for j in range(i, nS):
                for w in range(LANES):
                    H[(nF + i) * maxn + nF + j, w] -= (sgn * X[q * maxn + i, w]) * X[q * maxn + j, w]
            for w in range(LANES):
                scale[nF + i, w] += X[q * maxn + i, w] * X[q * maxn + i, w]
    out, outs = steps[st, OUT_H], steps[st, OUT_S]
    for i in range(nS if out >= 0 else 0):
        for w in range(LANES):
            Fw[outs + i, w] = scale[nF + i, w]
        for j in range(i, nS):
            for w in range(LANES):
                Fw[out + i * nS + j, w] = Fw[out + j * nS + i, w] = H[(nF + i) * maxn + nF + j, w]


@njit(cache=True, error_model="numpy", **UNCOUNTED)
def factorize_group(maps, Fw, C, floor, maxn, scratch, ratio, weak, failed):
    """Every step on the lanes of ``Fw (factor_size, LANES)``, conditionals into ``C (conditional_size,
    LANES)``; per lane the smallest pivot ratio, its step and the failed step (-1: none) into ``ratio``,
    ``weak``, ``failed`` (``(LANES,)``), as :func:`elimination.compiled.factorize_one` returns them.  A lane
    that fails goes on with meaningless numbers (the caller then takes the numpy path for the batch)."""
    steps, hs, hd, ss, sd = maps[0], maps[1], maps[2], maps[3], maps[4]
    H, L, Li, X, scale, r, t, ok = scratch
    for w in range(LANES):
        ratio[w], weak[w], failed[w] = np.inf, -1, -1
    for st in range(steps.shape[0]):
        nF, nS = steps[st, NF], steps[st, NS]
        sgn = 1.0 if steps[st, PIVOT] == DEFINITE else -1.0
        _gather(steps, st, hs, hd, ss, sd, Fw, H, scale, nF + nS, maxn, floor)
        for w in range(LANES):
            ok[w] = True
        _cholesky(H, sgn, nF, maxn, L, ok, t)
        _step_ratio(L, scale, nF, maxn, sgn, r)
        for w in range(LANES):
            if failed[w] == -1:
                if not ok[w] or r[w] < 0.0:
                    failed[w] = st
                elif r[w] < ratio[w]:
                    ratio[w], weak[w] = r[w], st
        _lower_inverse(L, nF, maxn, Li, t)
        _eliminate(steps, st, H, scale, Li, X, C, Fw, sgn, nF, nS, maxn)


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
    """The largest diagonal magnitude of every member's matrix over the batch."""
    top = 0.0
    for k in range(members.shape[0]):
        src, rows, n, stride = sources[k], members[k, 2], members[k, 3], members[k, 4]
        for b in range(elements if stride else 1):
            for i in range(rows):
                top = max(top, abs(src[b * stride + i * n + i]))
    return top


@njit(cache=True, error_model="numpy")
def factorize_kernel(maps, sources, members, elements, factor_size, C, floor, maxn, ratio, weak, failed):
    """For every lane group of ``C (groups, conditional_size, LANES)``: its factor workspace filled from the
    members' matrices (:func:`_members`), then :func:`factorize_group`; per lane results into ``ratio``,
    ``weak``, ``failed`` ``(groups * LANES,)``.  One workspace serves every group."""
    fronts = maxn * maxn
    scratch = (np.zeros((fronts, LANES)), np.zeros((fronts, LANES)), np.zeros((fronts, LANES)),
               np.zeros((fronts, LANES)), np.zeros((maxn, LANES)), np.zeros(LANES), np.zeros(LANES),
               np.zeros(LANES, dtype=np.bool_))
    Fw = np.zeros((factor_size, LANES))
    for k in range(C.shape[0]):
        lo, hi = k * LANES, (k + 1) * LANES
        _fill_group(sources, members, lo, elements, Fw)
        factorize_group(maps, Fw, C[k], floor, maxn, scratch, ratio[lo:hi], weak[lo:hi], failed[lo:hi])


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


def factorize_graph(program, matrices: list, batch: tuple, floor_rtol: float) -> tuple:
    """``(C, ratio, weakest, failed)`` of the batch whose matrices :func:`elimination.compiled._matrices`
    listed, with the scale floor ``floor_rtol`` times the batch's largest diagonal magnitude:
    ``C (groups_of(Bm), conditional_size, LANES)``, the others ``(Bm,)``.

    Each lane group's factor workspace is filled from the graph's matrices inside the kernel, into one
    workspace that serves every group: the batch's workspace is never whole in memory."""
    Bm = int(np.prod(batch))
    groups = groups_of(Bm)
    C = np.zeros((groups, program.conditional_size, LANES))
    size = groups * LANES
    ratio, weak, failed = np.empty(size), np.empty(size, np.int64), np.empty(size, np.int64)
    announce_first_compile(__file__, "the lane kernels")
    sources, members = _members(program, matrices, batch)
    floor = floor_rtol * _largest_diagonal(sources, members, Bm)
    factorize_kernel(factorize_maps(program)[:5], sources, members, Bm, program.factor_size, C, floor,
                     max_front(program), ratio, weak, failed)
    return C, ratio[:Bm], weak[:Bm], failed[:Bm]


# ---------------------------------------------------------------------------------------------------------
# solve


@njit(cache=True, error_model="numpy", **UNCOUNTED)
def solve_group(maps, C, Lin, cache, Xout, scratch):
    """Forward sweep of the lanes' linear terms ``Lin (linear_size, LANES)`` through their conditionals ``C``
    and back-substitution into ``Xout (value_size, LANES)`` (:func:`elimination.compiled.solve_one`'s
    operations for steps without hard rows); ``Lin`` holds the generated factors' terms after it."""
    steps, gs, gd, xfs, xfd, xss, xsd = maps[0], maps[1], maps[2], maps[5], maps[6], maps[7], maps[8]
    g, xs, gz, t, a = scratch
    for st in range(steps.shape[0]):
        nF, nS, nz = steps[st, NF], steps[st, NS], steps[st, NZ]
        li, yy, ds, yc = steps[st, LINV], steps[st, Y_], steps[st, DS], steps[st, YC]
        for i in range(nF + nS):
            for w in range(LANES):
                g[i, w] = 0.0
        for q in range(steps[st, G0], steps[st, G1]):
            d, s = gd[q], gs[q]
            for w in range(LANES):
                g[d, w] += Lin[s, w]
        for j in range(nz):
            for w in range(LANES):
                gz[j, w] = g[j, w]
        for i in range(nz):  # y = Linv g_z (Linv lower triangular)
            for w in range(LANES):
                t[w] = 0.0
            for q in range(i + 1):
                for w in range(LANES):
                    t[w] += C[li + i * nz + q, w] * gz[q, w]
            for w in range(LANES):
                cache[yc + i, w] = t[w]
        for i in range(nz):  # g_S -= Y' D y
            for w in range(LANES):
                a[w] = C[ds + i, w] * cache[yc + i, w]
            for j in range(nS):
                for w in range(LANES):
                    g[nF + j, w] -= C[yy + i * nS + j, w] * a[w]
        out = steps[st, OUT_G]
        if out >= 0:
            for j in range(nS):
                for w in range(LANES):
                    Lin[out + j, w] = g[nF + j, w]
    for st in range(steps.shape[0] - 1, -1, -1):
        nF, nS, nz = steps[st, NF], steps[st, NS], steps[st, NZ]
        li, yy, ds, yc = steps[st, LINV], steps[st, Y_], steps[st, DS], steps[st, YC]
        for q in range(steps[st, XS0], steps[st, XS1]):
            d, s = xsd[q], xss[q]
            for w in range(LANES):
                xs[d, w] = Xout[s, w]
        for i in range(nz):  # z = D (y - Y x_S)
            for w in range(LANES):
                t[w] = cache[yc + i, w]
            for j in range(nS):
                for w in range(LANES):
                    t[w] -= C[yy + i * nS + j, w] * xs[j, w]
            for w in range(LANES):
                gz[i, w] = C[ds + i, w] * t[w]
        for i in range(nz):  # x = Linv' z
            for w in range(LANES):
                g[i, w] = 0.0
        for q in range(nz):
            for i in range(q + 1):
                for w in range(LANES):
                    g[i, w] += C[li + q * nz + i, w] * gz[q, w]
        for q in range(steps[st, XF0], steps[st, XF1]):
            d, s = xfs[q], xfd[q]
            for w in range(LANES):
                Xout[d, w] = g[s, w]


@njit(cache=True, error_model="numpy")
def solve_kernel(maps, C, Lin, X, cache_size, maxn):
    """:func:`solve_group` for every element of ``Lin (B, linear_size)``, values into ``X (B, value_size)``;
    ``C (groups_of(B), conditional_size, LANES)``.  Each group's terms are copied into lanes (the sweep writes
    the generated factors' terms among them) and its values out of them; padding lanes repeat the last
    element and are not written out."""
    B = Lin.shape[0]
    Ll, cache, Xl = np.zeros((Lin.shape[1], LANES)), np.zeros((cache_size, LANES)), np.zeros((X.shape[1], LANES))
    scratch = (np.zeros((maxn, LANES)), np.zeros((maxn, LANES)), np.zeros((maxn, LANES)), np.zeros(LANES),
               np.zeros(LANES))
    for k in range(C.shape[0]):
        for i in range(Lin.shape[1]):
            for w in range(LANES):
                Ll[i, w] = Lin[min(k * LANES + w, B - 1), i]
        solve_group(maps, C[k], Ll, cache, Xl, scratch)
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
