"""Batches side by side, the pair instructions: a mechanism's dynamics in a spanning-tree order, sixteen states at once.

The programs of a mechanism's dynamics in a spanning-tree order
(:func:`covers_pairs`: ABA's, LCABA's, proxBBO's steps) are mostly pair
instructions: :func:`factorize_pairs` and :func:`solve_pairs` run the
``REVOLUTE_PAIR``, ``WIDE_REVOLUTE`` (a loop's link and joint, the separator
the loop's multipliers and other links) and ``TREE_PAIR`` (a free-flyer,
spherical or planar joint: a floating base under ABA or LCABA) kernels of
:mod:`elimination.compiled_pairs`, and every back-substitution
(:func:`elimination.compiled_front._step_backward`), written once for every
width (:mod:`elimination.vectors`), here at sixteen lanes.  Still written for
the lanes only: a free body's wide pair (a ``UNIT`` that leaves its front -- a
floating base or a grasped object whose link reads itself from its joint's
``+-I`` rows -- then the joint's pivot: :func:`_wide_unit_link`) and a
``PIVOT`` (the contacts' multipliers: :func:`_pivot_step`).  The other steps
run lane by lane through the per-element kernels
(:mod:`elimination.compiled_front`), on the lanes of a workspace the caller
fills (:func:`mechanics.compiled_lanes.lanes_kernel`: the states' kinematics
and constraints in lanes too).  Bit for bit the per-element kernels' numbers,
as :mod:`elimination.lanes`'; on Talos's tree a batch of eight took the pairs'
factorization 1.7x and their solve 2.1x faster than eight states one at a time
(eight lanes then; :data:`~elimination.lanes.LANES` now).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .compiled_front import (
    A0, A1, HF_, IDENTITY, KEEP, M, NF, NS, NZ, OP, OP_FRONT, OP_FUSED, OP_PIVOT, OP_REVOLUTE, OP_TREE, OP_UNIT,
    OP_WIDE_REVOLUTE, OUT_H, OUT_S, P, RS, START, T_, UNCOUNTED, UROW, D_,
)
from .kernel_cache import drop_stale_cache
from .compiled_front import _generic_step as generic_step, _step_backward as step_backward, _step_forward as step_forward
from .compiled_front import _added, _gathered
from .compiled_pairs import (
    _floored, _revolute_backward, _revolute_forward, _revolute_pair, _tree_forward, _tree_pair,
    _wide_revolute_backward, _wide_revolute_forward, _wide_revolute_pair,
)
from .lanes import LANES, _pivoted, _record
from . import compiled, compiled_front, compiled_pairs, compiled_pivot, jacobi, lanes, vectors as v
from .program import KEEP_MIRRORED, KEEP_NONE, START_GATHERED, START_LEFT

drop_stale_cache(__file__, compiled_front.__file__, compiled_pairs.__file__, compiled_pivot.__file__,
                 jacobi.__file__, lanes.__file__, v.__file__)  # (inlined or linked in)


def covers_pairs(program) -> bool:
    """Whether :func:`factorize_pairs` and :func:`solve_pairs` run ``program`` and it pays: the programs of a
    mechanism's dynamics in a spanning-tree order (ABA's, LCABA's, proxBBO's, C-ABA's), mostly tree pairs
    (:func:`elimination.program._tree_pair`) and wide pairs (``_wide_pair``).  A revolute pair runs in lanes; any
    other pair (a free-flyer or spherical joint) and the steps alone (``FRONT``, ``PIVOT``, ``UNIT``: a loop
    root's multipliers, a free body's link, an embedded cluster's links and ``y``) in lanes or lane by lane
    through the per-element kernels -- those lane by lane (:func:`lane_by_lane`) at most a quarter of the steps,
    and no ``FRONT`` with hard rows (the lanes pass no sizes of right-hand sides and check no dropped rows)."""
    steps = program.steps
    op = steps[:, OP]
    passed_on = (steps[:, P] > 0) | (steps[:, D_] > 0)  # (rows left over whose sizes or drops a solve keeps)
    return (bool(len(steps)) and not program.unsupported and bool(np.all(np.isin(op, tuple(compiled.KERNELS))))
            and not bool(np.any((op == OP_FRONT) & (steps[:, M] > 0))) and not bool(np.any(passed_on))
            and 4 * lane_by_lane(steps) <= len(steps))


def lane_by_lane(steps: np.ndarray) -> int:
    """How many of ``steps`` :func:`factorize_pairs` runs lane by lane through the per-element kernels: the steps
    alone but a whole pivot, an embedded cluster's link (:func:`_unit_out`) and a wide pair's link read from its
    joint with its joint's pivot (:func:`_unit_link`), each alone in its run (:func:`_run_end`)."""
    count, st, n = 0, 0, len(steps)
    while st < n:
        if steps[st, OP] in (OP_REVOLUTE, OP_TREE, OP_WIDE_REVOLUTE):
            st += 2
            continue
        end = _run_end(steps, st)
        alone = end == st + 1
        if (alone and (_whole_pivot(steps, st, START_GATHERED) or _unit_out(steps, st))) or (
                end == st + 2 and _unit_link(steps, st) and _whole_pivot(steps, st + 1, START_LEFT)):
            st = end
            continue
        count += end - st - int(bool(_unit_link(steps, st)))
        st = end
    return count


@njit(cache=True, inline="always")
def _whole_pivot(steps, st, start):
    """Whether step ``st`` is a ``PIVOT`` (a step of the programs :func:`covers`: :func:`factorize_group`'s
    operations) whose front starts as ``start`` says (gathered, or left by a wide pair's link half)."""
    return steps[st, OP] == OP_PIVOT and steps[st, START] == start


@njit(cache=True, inline="always", error_model="numpy")
def _pivot_step(maps, st, Fw, C, floor, H, scale, L, Li, X, maxn, tmp, r, ratio, weak, failed):
    """A :func:`_whole_pivot` step on the lanes, as :func:`factorize_group` runs it (each lane with its own
    scale floor ``floor (1, LANES)``), its pivot ratios and failure recorded per lane; a wide pair's joint half
    starts from the separator block its link half left in ``H`` (:func:`_wide_unit_link`), moved up and left,
    as :func:`elimination.compiled_front._generic_step` does.  ``L``, ``Li``, ``X``: front-sized scratch, ``tmp``:
    six scratch rows."""
    steps, hs, hd, ss, sd = maps[0], maps[1], maps[2], maps[3], maps[4]
    n = steps[st, NF] + steps[st, NS]
    if steps[st, START] == START_LEFT:
        o = steps[st - 1, NF]
        for i in range(n):  # (up and left, row by row: nothing is read after it is written)
            v.copy(scale, i, scale, o + i)
            for j in range(n):
                v.copy(H, i * maxn + j, H, (o + i) * maxn + o + j)
        for i in range(n):  # (the link half updated the block's upper triangle: the lower one is its mirror)
            for j in range(i):
                v.copy(H, i * maxn + j, H, j * maxn + i)
        _added(steps, st, hs, hd, ss, sd, Fw, H, scale)
    else:
        _gathered(steps, st, hs, hd, ss, sd, Fw, H, scale, n, maxn)
    _floored(scale, n, floor)
    ok = tmp[5].view(np.bool_)  # (a row of the float scratch: the kernel allocates nothing)
    _pivoted(steps, st, H, scale, L, Li, X, C, Fw, maxn, ok, tmp, r, ratio, weak, failed)


@njit(cache=True, inline="always")
def _unit_link(steps, st):
    """Whether step ``st`` is a ``UNIT`` that leaves its front to a wide pair's joint half (a free flyer's, a
    spherical joint's: :func:`_wide_unit_link`)."""
    return steps[st, OP] == OP_UNIT and steps[st, START] == START_GATHERED and steps[st, KEEP] == KEEP_MIRRORED


@njit(cache=True, inline="always")
def _unit_out(steps, st):
    """Whether step ``st`` is a ``UNIT`` that substitutes its front whole through its ``+-I`` rows and writes
    its separator block out as the generated factor (an embedded cluster's link: ``a_i`` on ``(a_parent, y)``;
    :func:`_wide_unit_link`): gathered, no rows left over, nothing to pivot."""
    return (steps[st, OP] == OP_UNIT and steps[st, START] == START_GATHERED and steps[st, KEEP] == KEEP_NONE
            and steps[st, M] == steps[st, NF] and steps[st, RS] < 0 and steps[st, NZ] == 0)


@njit(cache=True, inline="always", error_model="numpy")
def _wide_unit_link(maps, st, Fw, C, floor, H, scale, A, T, HFT, maxn, tmp):
    """:func:`elimination.compiled_front._generic_step` of a :func:`_unit_link` step on the lanes, its operations lane
    by lane: the front gathered, ``HF`` and ``T = -sign A_S`` into ``C``, the substitution ``x_F = T x_S + ..``
    into the separator block (``H_SS += T' (H_FF T + H_FS) + H_SF T``, its scales), left in ``H`` for the
    joint half.  Where the per-element kernel skips a zero of ``T`` (or of ``T`` and ``H_FS``) in its lane, the
    lanes skip it where it is zero in every lane, else add its zero products: the same values."""
    steps, hs, hd, ss, sd, as_, ad = maps[0], maps[1], maps[2], maps[3], maps[4], maps[5], maps[6]
    nF, nS, m = steps[st, NF], steps[st, NS], steps[st, M]
    n = nF + nS
    _gathered(steps, st, hs, hd, ss, sd, Fw, H, scale, n, maxn)
    _floored(scale, n, floor)
    for i in range(m):
        for j in range(n):
            v.fill(A, i * maxn + j, 0.0)
    for q in range(steps[st, A0], steps[st, A1]):
        v.copy(A, ad[q], Fw, as_[q])
    hf = steps[st, HF_]
    for i in range(n):  # HF, kept for the forward sweep's g - HF t
        for j in range(nF):
            v.copy(C, hf + i * nF + j, H, i * maxn + j)
    sgn, r0, ts = -float(steps[st, IDENTITY]), steps[st, UROW], steps[st, T_]
    for i in range(nF):  # T = -W A_S, W = sign I on the declared rows
        for j in range(nS):
            v.scaled(T, i * nS + j, sgn, A, (r0 + i) * maxn + nF + j)
            v.copy(C, ts + i * nS + j, T, i * nS + j)
    for i in range(nF):  # HFT = H_FF T + H_FS
        for j in range(nS):
            v.copy(HFT, i * nS + j, H, i * maxn + nF + j)
        for q in range(nF):
            for j in range(nS):
                if _nonzero(T, q * nS + j):
                    v.add_mul(HFT, i * nS + j, H, i * maxn + q, T, q * nS + j)
    for q in range(nF):  # H_SS += T' HFT + H_SF T in its upper triangle; scale_S += (T^2)' scale_F
        for i in range(nS):
            if not (_nonzero(T, q * nS + i) or _nonzero(H, q * maxn + nF + i)):
                continue
            for j in range(i, nS):
                v.mul(tmp, 0, T, q * nS + i, HFT, q * nS + j)
                v.add_mul(tmp, 0, H, q * maxn + nF + i, T, q * nS + j)
                v.add(H, (nF + i) * maxn + nF + j, tmp, 0)
        for i in range(nS):
            if _nonzero(T, q * nS + i):
                v.mul(tmp, 0, T, q * nS + i, T, q * nS + i)
                v.add_mul(scale, nF + i, tmp, 0, scale, q)
    out, outs = steps[st, OUT_H], steps[st, OUT_S]
    for i in range(nS if steps[st, KEEP] == KEEP_NONE and out >= 0 else 0):  # written out (_left_front's)
        v.copy(Fw, outs + i, scale, nF + i)
        for j in range(i, nS):
            v.copy(Fw, out + i * nS + j, H, (nF + i) * maxn + nF + j)
            v.copy(Fw, out + j * nS + i, H, (nF + i) * maxn + nF + j)


@njit(cache=True, inline="always")
def _nonzero(X, k):
    """Whether row ``k`` of ``X`` is nonzero in some lane."""
    for w in range(LANES):
        if X[k, w] != 0.0:
            return True
    return False


@njit(cache=True, inline="always")
def _front_of_lane(steps, st, H, scale, maxn, w, He, scale_e):
    """The separator block and scales that step ``st`` (:func:`_wide_unit_link`) left in lane ``w`` of ``H``,
    into the per-element front ``He``, ``scale_e`` where :func:`elimination.compiled_front._generic_step` leaves
    them for the joint half (its lower triangle the upper's mirror)."""
    nF, nS = steps[st, NF], steps[st, NS]
    for i in range(nF, nF + nS):
        scale_e[i] = scale[i, w]
        for j in range(i, nF + nS):
            He[i, j] = He[j, i] = H[i * maxn + j, w]


@njit(cache=True, inline="always")
def _run_end(steps, st):
    """The step after the run of generic steps from ``st`` that share the per-element kernels' scratch: a wide
    pair's joint half after its link half, a step that starts from the front the step before left."""
    end = st + 1
    while end < steps.shape[0] and steps[end, START] != START_GATHERED:
        end += 1
    return end


@njit(cache=True, error_model="numpy", **UNCOUNTED)
def factorize_pairs(maps, Fw, C, floor, scratch, lane_scratch, ratio, weak, failed):
    """Every pair of a :func:`covers_pairs` program on the lanes of ``Fw (factor_size, LANES)``, conditionals
    into ``C (conditional_size, LANES)``, scale floors ``floor (1, LANES)``; per lane the smallest pivot ratio,
    its step and the failed step (-1: none) into ``ratio``, ``weak``, ``failed`` (``(LANES,)``), as
    :func:`elimination.compiled.factorize_one` returns them (a failed lane goes on with meaningless numbers).
    ``scratch``: :func:`elimination.compiled.factorize_scratch_in`'s, for the pairs run lane by lane."""
    steps, hs, hd, ss, sd = maps[0], maps[1], maps[2], maps[3], maps[4]
    pbH, pbs, phs, phd, pss, psd = maps[11], maps[12], maps[13], maps[14], maps[15], maps[16]
    H, scale, t6, u6, tmp, r, y, A, T, HFT = lane_scratch
    maxn = scratch[0].shape[0]  # (the per-element front's size: the wide pairs' gathers index H by it)
    Hf, Af = scratch[0].reshape(maxn * maxn), scratch[1].reshape(maxn * maxn)
    for w in range(LANES):
        ratio[w], weak[w], failed[w] = np.inf, -1, -1
    st = 0
    while st < steps.shape[0]:
        op = steps[st, OP]
        if op == OP_WIDE_REVOLUTE:
            _wide_revolute_pair(steps, st, hs, hd, ss, sd, Fw, C, floor, H, maxn, scale, t6, u6, y, tmp, r)
        elif op != OP_REVOLUTE and op != OP_TREE:  # steps alone, lane by lane (each lane's run of them at once)
            end, first = _run_end(steps, st), st
            if end == st + 1 and _whole_pivot(steps, st, START_GATHERED):  # a contact's multipliers, say: in lanes
                _pivot_step(maps, st, Fw, C, floor, H, scale, A, T, HFT, maxn, tmp, r, ratio, weak, failed)
                st = end
                continue
            if end == st + 1 and _unit_out(steps, st):  # an embedded cluster's link: in lanes
                _wide_unit_link(maps, st, Fw, C, floor, H, scale, A, T, HFT, maxn, tmp)
                st = end
                continue
            if _unit_link(steps, st):  # but a wide pair's link half read from its joint: in lanes
                _wide_unit_link(maps, st, Fw, C, floor, H, scale, A, T, HFT, maxn, tmp)
                first = st + 1
                if end == st + 2 and _whole_pivot(steps, st + 1, START_LEFT):  # and its joint's pivot
                    _pivot_step(maps, st + 1, Fw, C, floor, H, scale, A, T, HFT, maxn, tmp, r, ratio, weak, failed)
                    st = end
                    continue
            for w in range(LANES):
                if first > st:  # the front it left, for the joint half
                    _front_of_lane(steps, st, H, scale, maxn, w, scratch[0], scratch[2])
                for s in range(first, end):
                    # (np.bool_, as the per-state kernel's: a literal False would compile the step once more)
                    rs, fail = generic_step(maps, s, Fw[:, w], C[:, w], floor[0, w], np.bool_(False), scratch, Hf, Af)
                    _record(w, rs, fail, s, ratio, weak, failed)
            st = end
            continue
        elif op == OP_REVOLUTE:
            _revolute_pair(steps, st, pbH, pbs, phs, pss, Fw, C, floor, H, scale, t6, u6, tmp, r)
        else:  # a free flyer's, a spherical joint's
            _tree_pair(steps, st, pbH, pbs, phs, phd, pss, psd, Fw, C, floor, H, scale, A, T, HFT, tmp, r,
                       tmp[5].view(np.bool_))  # (ok: a row of the float scratch, the kernel allocates nothing)
        for w in range(LANES):
            _record(w, r[w], st + 1 if r[w] < 0.0 else -1, st + 1, ratio, weak, failed)
        st += 2


def pairs_scratch_rows(maxn: int) -> int:
    """Rows of ``LANES`` that :func:`pairs_scratch_in` carves for fronts up to ``maxn`` wide."""
    maxn = max(maxn, 6)
    return 4 * maxn * maxn + 2 * maxn + 19 + 6 * maxn + 6


@njit(cache=True, inline="always")
def pairs_scratch_in(rows, maxn):
    """The lane scratch of :func:`factorize_pairs` (the front ``H`` (``maxn * maxn``, row-major), scales,
    ``t``, ``u``, temporaries, a pair's ratios, a wide pair's ``y``, a substitution's ``A``, ``T`` and ``HFT``
    (``maxn * maxn`` each)) and of :func:`solve_pairs` (``g``, ``x``, ``x_S``, temporaries, ``g_z``, a step's
    right-hand sides and their sizes), carved from
    ``rows (pairs_scratch_rows(maxn), LANES)``: a caller that keeps them allocates nothing per call."""
    n = max(maxn, 6)
    a = n * n
    b = a + n
    s = b + 19 + n
    t = s + 3 * n + 6
    return ((rows[:a], rows[a:b], rows[b:b + 6], rows[b + 6:b + 12], rows[b + 12:b + 18], rows[b + 18],
             rows[b + 19:s], rows[t:t + a], rows[t + a:t + 2 * a], rows[t + 2 * a:t + 3 * a]),
            (rows[s:s + n], rows[s + n:s + 2 * n], rows[s + 2 * n:s + 3 * n], rows[s + 3 * n:s + 3 * n + 6],
             rows[t + 3 * a:t + 3 * a + n], rows[t + 3 * a + n:t + 3 * a + 2 * n],
             rows[t + 3 * a + 2 * n:t + 3 * a + 3 * n]))


@njit(cache=True, error_model="numpy", **UNCOUNTED)
def solve_pairs(maps, C, Lin, cache, Xout, lane_scratch, scratch):
    """Forward sweep of the lanes' linear terms ``Lin (linear_size, LANES)`` through the conditionals ``C`` of
    :func:`factorize_pairs` and back-substitution into ``Xout (value_size, LANES)``: the operations of
    :func:`elimination.compiled.solve_one`, all in lanes -- the pairs', and every step alone through the sweeps
    written once for every width (:func:`elimination.compiled_front._step_forward`, ``_step_backward``); a
    tree's pairs have no dropped rows and no size of right-hand sides to pass on (:func:`covers_pairs`), so
    ``Lin`` stands in for them.  ``scratch``: unused, kept for the caller's one signature of both kernels."""
    steps, gs, gd, bs, bd, xfs, xfd, xss, xsd, pgs, pgd = maps
    g, x, xs, tmp, gz, bl, bm = lane_scratch
    st = 0
    while st < steps.shape[0]:
        op = steps[st, OP]
        if op == OP_WIDE_REVOLUTE:
            _wide_revolute_forward(steps, st, gs, gd, bs, bd, C, Lin, cache, g, tmp)
        elif op != OP_REVOLUTE and op != OP_TREE:  # a step alone
            step_forward(steps, st, gs, gd, bs, bd, C, Lin, Lin, cache, Lin, g, bl, bm, gz)
            st += 1
            continue
        elif op == OP_REVOLUTE:
            _revolute_forward(steps, st, gs, gd, bs, bd, pgs, pgd, C, Lin, cache, g, tmp)
        else:
            _tree_forward(steps, st, gs, gd, bs, bd, pgs, pgd, C, Lin, cache, g, tmp)
        st += 2
    st = steps.shape[0]
    while st > 0:
        st -= 1
        if steps[st, OP] == OP_FUSED and steps[st - 1, OP] == OP_REVOLUTE:
            st -= 1
            _revolute_backward(steps, st, xss, xsd, xfs, xfd, C, cache, Xout, x, xs, tmp)
        elif steps[st, OP] == OP_FUSED and steps[st - 1, OP] == OP_WIDE_REVOLUTE:
            st -= 1
            _wide_revolute_backward(steps, st, xss, xsd, xfs, xfd, C, cache, Xout, x, xs, tmp)
        else:
            step_backward(steps, st, xss, xsd, xfs, xfd, C, cache, Xout, x, xs, g, gz)
