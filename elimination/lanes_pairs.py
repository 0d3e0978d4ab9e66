"""Batches side by side, the pair instructions: a mechanism's dynamics in a spanning-tree order, sixteen states at once.

The programs of a mechanism's dynamics in a spanning-tree order
(:func:`covers_pairs`: ABA's, LCABA's, proxBBO's, C-ABA's steps) are mostly
pair instructions: :func:`factorize_pairs` and the solve
(:func:`elimination.compiled.solve_one` at sixteen lanes) run the
``REVOLUTE_PAIR``, ``WIDE_REVOLUTE`` (a loop's link and joint, the separator
the loop's multipliers and other links) and ``TREE_PAIR`` (a free-flyer,
spherical or planar joint: a floating base under ABA or LCABA) kernels of
:mod:`elimination.compiled_pairs`, and every step alone -- a free body's link
read from its joint's ``+-I`` rows, a contact's or a loop root's multipliers,
an embedded cluster's links and ``y`` -- through the generic step, its forward
sweep and its back-substitution (:mod:`elimination.compiled_front`), each
written once for every width (:mod:`elimination.vectors`), here at sixteen
lanes, on a workspace the caller fills
(:func:`mechanics.compiled_lanes.lanes_kernel`: the states' kinematics and
constraints in lanes too).  Bit for bit the per-element kernels' numbers, as
:mod:`elimination.lanes`'; on Talos's tree a batch of eight took the pairs'
factorization 1.7x and their solve 2.1x faster than eight states one at a time
(eight lanes then; :data:`~elimination.lanes.LANES` now).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .compiled_front import (
    D_, DEFINITE, IDENTITY, M, NEGATIVE, NZ, OP, OP_FUSED, OP_REVOLUTE, OP_TREE, OP_WIDE_REVOLUTE, P, PIVOT, UNCOUNTED,
)
from .kernel_cache import drop_stale_cache
from .compiled_pairs import (
    _revolute_pair, _tree_pair, _wide_revolute_pair,
)
from .lanes import LANES, _record, front_rows, front_rows_in, step_in_lanes
from . import compiled, compiled_front, compiled_pairs, compiled_pivot, jacobi, lanes, vectors as v

PAIRS = (OP_REVOLUTE, OP_TREE, OP_WIDE_REVOLUTE, OP_FUSED)  # (a pair's two rows: its kernels, not the generic step)
drop_stale_cache(__file__, compiled.__file__, compiled_front.__file__, compiled_pairs.__file__, compiled_pivot.__file__,
                 jacobi.__file__, lanes.__file__, v.__file__)  # (inlined or linked in)


def covers_pairs(program) -> bool:
    """Whether :func:`factorize_pairs` and :func:`~elimination.compiled.solve_one` in lanes run ``program``: the
    programs of a mechanism's dynamics in a spanning-tree order (ABA's, LCABA's, proxBBO's, C-ABA's), mostly tree pairs
    (:func:`elimination.program._tree_pair`) and wide pairs (``_wide_pair``), and steps alone (``FRONT``,
    ``PIVOT``, ``UNIT``: a loop root's multipliers, a free body's link, an embedded cluster's links and ``y``)
    that the generic step runs at the lanes' width (:func:`elimination.compiled_front._generic_step`): none with
    a general substitution (hard rows other than declared ``+-I`` ones) or a quasi-definite or indefinite pivot,
    and none with rows left over (the lanes pass no sizes of right-hand sides and check no dropped rows)."""
    steps = program.steps
    op = steps[:, OP]
    general = (steps[:, M] > 0) & (steps[:, IDENTITY] == 0) & ~np.isin(op, PAIRS)
    one_state_pivot = (steps[:, NZ] > 0) & ~np.isin(steps[:, PIVOT], (DEFINITE, NEGATIVE)) & ~np.isin(op, PAIRS)
    passed_on = (steps[:, P] > 0) | (steps[:, D_] > 0)  # (rows left over whose sizes or drops a solve keeps)
    return (bool(len(steps)) and not program.unsupported and bool(np.all(np.isin(op, tuple(compiled.KERNELS))))
            and not bool(np.any(general | one_state_pivot | passed_on)))


@njit(cache=True, error_model="numpy", **UNCOUNTED)
def factorize_pairs(maps, Fw, C, floor, scratch, lane_scratch, ratio, weak, failed):
    """Every step of a :func:`covers_pairs` program on the lanes of ``Fw (factor_size, LANES)``, conditionals
    into ``C (conditional_size, LANES)``, scale floors ``floor (1, LANES)``; per lane the smallest pivot ratio,
    its step and the failed step (-1: none) into ``ratio``, ``weak``, ``failed`` (``(LANES,)``), as
    :func:`elimination.compiled.factorize_one` returns them (a failed lane goes on with meaningless numbers).
    ``scratch``: :func:`elimination.compiled.factorize_scratch_in`'s (the generic step's integers and sizes)."""
    steps, hs, hd, ss, sd = maps[0], maps[1], maps[2], maps[3], maps[4]
    pbH, pbs, phs, phd, pss, psd = maps[11], maps[12], maps[13], maps[14], maps[15], maps[16]
    H, scale, t6, u6, tmp, r, y, A, T, HFT, front, ok = lane_scratch
    maxn = scratch[0].shape[0]  # (the per-element front's size: the gathers index H by it)
    for w in range(LANES):
        ratio[w], weak[w], failed[w] = np.inf, -1, -1
    st = np.int64(0)  # (not a literal 0: the generic step would compile once more, for a literal st)
    while st < steps.shape[0]:
        op = steps[st, OP]
        if op == OP_WIDE_REVOLUTE:
            _wide_revolute_pair(steps, st, hs, hd, ss, sd, Fw, C, floor, H, maxn, scale, t6, u6, y, tmp, r)
        elif op != OP_REVOLUTE and op != OP_TREE:  # a step alone
            step_in_lanes(maps, st, Fw, C, floor, front, scratch, r, ok, ratio, weak, failed)
            st += 1
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
    return front_rows(maxn) + 7 * maxn + 18


@njit(cache=True, inline="always")
def pairs_scratch_in(rows, maxn):
    """The lane scratch of :func:`factorize_pairs` -- the generic step's rows (:func:`elimination.lanes.front_rows_in`),
    whose front ``H`` (``maxn * maxn``, row-major), scales, temporaries and a substitution's ``A``, ``T`` and
    ``HFT`` the pairs use too, ``t``, ``u``, a pair's ratios, a wide pair's ``y`` and a flag per lane -- and of
    :func:`elimination.compiled.solve_one` in lanes (``g``, a step's right-hand sides and their sizes, ``x``, ``x_S``,
    ``g_z``, temporaries),
    carved from ``rows (pairs_scratch_rows(maxn), LANES)``: a caller that keeps them allocates nothing per call."""
    n = max(maxn, 6)
    f = front_rows(n)
    front, r, ok = front_rows_in(rows[:f], n)
    vectors = rows[f:f + 7 * n].reshape((7, n, LANES))
    y, g, x, xs, gz, bl, bm = vectors[0], vectors[1], vectors[2], vectors[3], vectors[4], vectors[5], vectors[6]
    b = f + 7 * n
    t6, u6, stmp = rows[b:b + 6], rows[b + 6:b + 12], rows[b + 12:b + 18]
    H, A, scale, T, HFT, tmp = front[0], front[1], front[2], front[8], front[9], front[13]
    return (H, scale, t6, u6, tmp, r, y, A, T, HFT, front, ok), (g, bl, bm, x, xs, gz, stmp)
