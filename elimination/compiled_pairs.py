"""The compiled kernels of the pair instructions: ``TREE_PAIR``, ``REVOLUTE_PAIR`` and ``WIDE_REVOLUTE``.

Each runs two steps of the program as one (:mod:`elimination.program`'s
docstring): a link acceleration substituted through its own tree joint and
the joint pivoted -- ABA's step from the link's block alone (:func:`_tree_pair`,
fixed sizes for a revolute joint of a 6-d link: :func:`_revolute_pair`), or on
the link's block of a wider front without the joint's row and column
(:func:`_wide_revolute_pair`) -- and the solve's sweeps of the same pair.  The
numbers are those of the two ``FRONT`` steps they stand for, round-off aside.

The revolute kernels are written once for every batch width in
:mod:`elimination.vectors`' row operations: the per-element executor
(:mod:`elimination.compiled`) runs them on one state's 1-d arrays, the lane
executor (:mod:`elimination.lanes`) on sixteen states' ``(entry, lane)``
arrays -- one function, two instances, the same bits; so are the tree pairs
of more degrees of freedom (:func:`_tree_pair`: a free flyer's, a spherical
or planar joint's).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .compiled_front import (
    B0, B1, DEFINITE, DS, G0, G1, H0, H1, HF_, IDENTITY, LINV, NF, NS, OUT_G, OUT_H, OUT_S, PB0, PB1, PG0, PG1, PH0, PH1, PIVOT,
    PS0, PS1, S0, S1, T_, TC, TN, TP, TQ, TSIG, XF0, XF1, XS0, XS1, Y_, YC, _gathered, _sub_dot,
)
from .compiled_pivot import _pivot_block
from .kernel_cache import drop_stale_cache
from . import compiled_front, compiled_pivot, vectors as v

# (the pairs compile their kernels into themselves)
drop_stale_cache(__file__, compiled_front.__file__, compiled_pivot.__file__, v.__file__)


@njit(cache=True, inline="always")
def _parent_block(steps, st):
    """``(npar, tp)`` of a wide revolute pair's link half ``st``: the parent's size (6, or 0 without a
    parent) and where it starts in the joint's separator (0 without a parent)."""
    return (6, steps[st, TP]) if steps[st, TSIG] != 0 else (0, 0)


@njit(cache=True, inline="always")
def _floored(scale, n, floor):
    """The first ``n`` scales raised to each lane's scale floor (row 0 of ``floor``)."""
    for i in range(n):
        for w in range(v.width(scale)):
            v.set_lane(scale, i, w, max(v.lane(scale, i, w), v.lane(floor, 0, w)))


@njit(cache=True, inline="always", error_model="numpy")
def _revolute_T(steps, st, Fw, C, t6, m):
    """A revolute pair's ``t = -+D`` (the joint's column of its hard factor) into ``t6`` and into the first
    column of ``T = [t, sigma E_p]`` (``6 x (1 + m)``) in ``C``.  The rest of ``T``, the parent's ``sigma I``,
    is structure: the revolute kernels apply ``sigma`` themselves, and no state writes or reads it."""
    sgn, tq, tn, ts = -float(steps[st, IDENTITY]), steps[st, TQ], steps[st, TN], steps[st, T_]
    for i in range(6):
        v.scaled(t6, i, sgn, Fw, tq + i * tn)
        v.copy(C, ts + i * (m + 1), t6, i)


@njit(cache=True, inline="always", error_model="numpy")
def _revolute_pivot(steps, joint, H, stride, scale, t6, u6, floor, Fw, C, hsrc, h0, h1, ssrc, s0, s1, tmp, r):
    """The pivot of a one-dimensional joint (step ``joint``) after its 6-d link's substitution through ``t``
    (``t6``; the link's block ``H[:6, :6]`` at rows ``i * stride + j``, ``scale[:6]``): ``u = H_aa t`` into
    ``u6``, ``d = t'u`` plus the joint's own factors (``Fw[hsrc[h0:h1]]``, their scales ``Fw[ssrc[s0:s1]]``),
    ``D = 1`` and ``Linv = 1 / sqrt(d)`` into ``C`` and ``tmp[4]``; each lane's pivot ratio into ``r``, -1
    where the numpy rule refuses the pivot."""
    v.dots6(u6, 0, H, 0, stride, 1, t6, 0, 6)
    v.dot6(tmp, 0, t6, 0, 1, u6, 0, 1)  # d
    v.fill(tmp, 1, 0.0)
    for k in range(6):
        v.mul(tmp, 2, t6, k, t6, k)
        v.add_mul(tmp, 1, tmp, 2, scale, k)  # grown
    v.copy(tmp, 3, floor, 0)
    v.add(tmp, 3, tmp, 1)  # sz
    for q in range(h0, h1):  # the joint's own factors
        v.add(tmp, 0, Fw, hsrc[q])
    for q in range(s0, s1):
        v.add(tmp, 3, Fw, ssrc[q])
    ds, li = steps[joint, DS], steps[joint, LINV]
    for w in range(v.width(tmp)):
        d, sz = v.lane(tmp, 0, w), max(v.lane(tmp, 3, w), v.lane(floor, 0, w))
        root = np.sqrt(max(d, 0.0))
        v.set_lane(tmp, 4, w, 1.0 / root if d > 0.0 else 0.0)
        v.set_lane(C, ds, w, 1.0)
        v.set_lane(C, li, w, v.lane(tmp, 4, w))
        r[w] = root * root / max(sz, 1e-300) if d > 0.0 else -1.0


@njit(cache=True, inline="always", error_model="numpy")
def _wide_revolute_pair(steps, st, hs, hd, ss, sd, Fw, C, floor, H, maxn, scale, t6, u6, y, tmp, r):
    """Both steps of a wide pair with a revolute joint (:func:`elimination.program._wide_revolute`), link half
    at step ``st``, on the front ``[a, q, S]`` without the joint's row and column, which no factor of the
    link reaches: ``S`` is the joint's separator (the parent ``p`` somewhere in it, a subtree's multipliers,
    a loop's other link) and ``T = [t, sigma E_p]``, so the joint's pivot is ``d = t'u`` with ``u = H_aa t``
    (+ the joint's own factors), its row ``y = (t'H_aS + sigma E_p' u) / sqrt(d)`` and the generated factor
    ``H_SS`` with ``a`` folded into ``p`` (rows ``+= sigma H_aS``, columns ``+= sigma H_Sa``, ``H_aa`` on
    ``p x p``) less ``y y'``.  The numbers of the two generic steps, round-off aside, without the dense
    substitution or the factor between them; each lane's pivot ratio into ``r`` (-1: refused).

    The front is ``H`` at rows ``i * maxn + j`` and ``scale``, rows ``[a (6), q (1), S (m)]``; ``t6``, ``u6``,
    ``y`` hold ``t``, ``u = H_aa t`` and the joint's row of ``Y``."""
    joint, m = st + 1, steps[st, NS] - 1
    n = 7 + m
    npar, tp = _parent_block(steps, st)
    p0 = 7 + tp
    _gathered(steps, st, hs, hd, ss, sd, Fw, H, scale, n, maxn)  # (the joint's row and column zero, unread)
    _floored(scale, n, floor)
    _revolute_T(steps, st, Fw, C, t6, m)  # T = [t, sigma E_p]
    hf = steps[st, HF_]
    for i in range(n):  # HF = [H_aa; 0; H_Sa]
        for j in range(6):
            if i != 6:
                v.copy(C, hf + i * 6 + j, H, i * maxn + j)
            else:
                v.fill(C, hf + i * 6 + j, 0.0)
    _revolute_pivot(steps, joint, H, maxn, scale, t6, u6, floor, Fw, C, hs, steps[joint, H0], steps[joint, H1], ss,
                    steps[joint, S0], steps[joint, S1], tmp, r)
    sigma = float(steps[st, TSIG])
    v.dots6(y, 0, H, 7, 1, maxn, t6, 0, m)  # y = (t'H_aS + sigma E_p' u) / sqrt(d)
    for i in range(npar):
        v.add_scaled(y, tp + i, u6, i, sigma)
    yy = steps[joint, Y_]
    for j in range(m):
        v.mul(y, j, y, j, tmp, 4)
        v.copy(C, yy + j, y, j)
    for i in range(npar):  # a folded into p: rows, columns, then H_aa; scales
        for j in range(7, n):
            v.add_scaled(H, (p0 + i) * maxn + j, H, i * maxn + j, sigma)
        for j in range(7, n):
            v.add_scaled(H, j * maxn + p0 + i, H, j * maxn + i, sigma)
        for j in range(6):
            v.add(H, (p0 + i) * maxn + p0 + j, H, i * maxn + j)
        v.add(scale, p0 + i, scale, i)
    out, outs = steps[joint, OUT_H], steps[joint, OUT_S]
    for i in range(m if out >= 0 else 0):  # the generated factor: H_SS - y y', symmetrized
        v.copy(Fw, outs + i, scale, 7 + i)
        v.add_mul(Fw, outs + i, y, i, y, i)
        for j in range(i, m):
            v.half_sum_sub_mul(Fw, out + i * m + j, H, (7 + i) * maxn + 7 + j, H, (7 + j) * maxn + 7 + i, y, i, y, j)
            v.copy(Fw, out + j * m + i, Fw, out + i * m + j)


@njit(cache=True, inline="always", error_model="numpy")
def _revolute_block(steps, st, pbH, pbs, Fw, H, scale, floor):
    """The block ``H`` of a 6-dimensional link (36 rows, row-major) at a revolute pair's link half ``st``: its
    factors summed whole, and its scales raised to each lane's floor (row 0 of ``floor``).  The
    first factor is added to zero as it is loaded (``+ 0.0``: the scalar sum's signed zeros), without a zeroed
    block to load back."""
    b0, b1 = steps[st, PB0], steps[st, PB1]
    for i in range(6 if b0 < b1 else 0):
        v.add_scalar(scale, i, Fw, pbs[b0] + i, 0.0)
        for j in range(6):
            v.add_scalar(H, i * 6 + j, Fw, pbH[b0] + i * 6 + j, 0.0)
    for i in range(36 if b0 == b1 else 0):  # (no factor: a zero block)
        v.fill(H, i, 0.0)
    for i in range(6 if b0 == b1 else 0):
        v.fill(scale, i, 0.0)
    for b in range(b0 + 1, b1):
        h, s = pbH[b], pbs[b]
        for i in range(6):
            v.add(scale, i, Fw, s + i)
            for j in range(6):
                v.add(H, i * 6 + j, Fw, h + i * 6 + j)
    _floored(scale, 6, floor)


@njit(cache=True, inline="always", error_model="numpy")
def _revolute_pair(steps, st, pbH, pbs, phs, pss, Fw, C, floor, H, scale, t6, u6, tmp, r):
    """Both steps of a tree pair (:func:`elimination.program._tree_pair`) for a one-dimensional joint of a
    6-dimensional link, link half at step ``st``, from the link's block alone (sizes known to the compiler, so
    the loops unroll): ``u = H t``, ``d = t' u``, ``y = sigma u / sqrt(d)``, ``H_parent = H - y y'`` -- the numbers
    of the two generic steps, round-off aside.  Each lane's scale floor is row 0 of ``floor``, its pivot ratio
    goes into ``r`` (-1 where the numpy rule refuses the pivot).

    It reads the step table by ``(step, column)``: numba then proves the reference counts of its array
    arguments redundant and drops them.  A row view (``steps[st]``) keeps them, and their atomic increments
    cost more than the arithmetic (perf on Talos: 70% of the factorization was ``NRT_incref`` /
    ``NRT_decref`` with them)."""
    joint = st + 1
    _revolute_block(steps, st, pbH, pbs, Fw, H, scale, floor)
    sigma, hf, npar = float(steps[st, TSIG]), steps[st, HF_], steps[st, NS] - 1
    _revolute_T(steps, st, Fw, C, t6, npar)  # T = [t, sigma I], HF = [H; 0]
    for i in range(36):
        v.copy(C, hf + i, H, i)
    _revolute_pivot(steps, joint, H, 6, scale, t6, u6, floor, Fw, C, phs, steps[joint, PH0], steps[joint, PH1],
                    pss, steps[joint, PS0], steps[joint, PS1], tmp, r)
    yy, out, outs = steps[joint, Y_], steps[joint, OUT_H], steps[joint, OUT_S]
    for j in range(npar):  # y = sigma u / sqrt(d)
        v.scaled(u6, j, sigma, u6, j)
        v.mul(u6, j, tmp, 4, u6, j)
        v.copy(C, yy + j, u6, j)
    for i in range(6 if out >= 0 else 0):  # the parent's H - y y', symmetrized, and its scales
        v.copy(Fw, outs + i, scale, i)
        v.add(Fw, outs + i, floor, 0)
        v.add_mul(Fw, outs + i, u6, i, u6, i)
        for j in range(i, 6):
            v.half_sum_sub_mul(Fw, out + i * 6 + j, H, i * 6 + j, H, j * 6 + i, u6, i, u6, j)
            v.copy(Fw, out + j * 6 + i, Fw, out + i * 6 + j)


@njit(cache=True, inline="always", error_model="numpy")
def _pair_terms(steps, st, gs, gd, bs, bd, Lin, cache, g, n):
    """The forward sweep's start for a pair's link half ``st``: ``g[:n]`` from zero, gathered from the link's
    linear terms, and ``t = W b`` (``W = sign I``) of its joint row into the cache.  Returns the offset of
    ``t``."""
    for i in range(n):
        v.fill(g, i, 0.0)
    for q in range(steps[st, G0], steps[st, G1]):
        v.add(g, gd[q], Lin, gs[q])
    tc, ident = steps[st, TC], float(steps[st, IDENTITY])
    for q in range(steps[st, B0], steps[st, B1]):
        v.scaled(cache, tc + bd[q], ident, Lin, bs[q])
    return tc


@njit(cache=True, inline="always", error_model="numpy")
def _link_values(steps, st, stride, Q, q, xs, p0, npar, C, cache, x, xfs, xfd, Xout):
    """A revolute pair's link values, then scattered into ``Xout``:
    ``x = t + t_q qdd + sigma a_parent`` (``qdd``: row ``q`` of ``Q``; ``t_q``: every ``stride``-th row of ``C``
    from the pair's ``T``; the parent's ``npar`` values from row ``p0`` of ``xs``)."""
    tc, ts = steps[st, TC], steps[st, T_]
    for i in range(6):
        v.mul_add(x, i, cache, tc + i, C, ts + i * stride, Q, q)
    sigma = float(steps[st, TSIG])
    for i in range(npar):
        v.add_scaled(x, i, xs, p0 + i, sigma)
    for e in range(steps[st, XF0], steps[st, XF1]):
        v.copy(Xout, xfs[e], x, xfd[e])


@njit(cache=True, inline="always", error_model="numpy")
def _revolute_forward(steps, st, gs, gd, bs, bd, pgs, pgd, C, Lin, cache, g, tmp):
    """The forward sweep of a revolute pair (:func:`_revolute_pair`), its ``T`` read as what it is, ``[t, sigma
    I]``: the link's ``g_F - H t`` carried into the joint (``g_q += t' g_F``) and the parent (``g_parent +=
    sigma g_F``), the joint's own terms, ``y = Linv g_q`` and ``g_parent - Y' D y`` passed on."""
    joint, npar = st + 1, steps[st, NS] - 1
    tc = _pair_terms(steps, st, gs, gd, bs, bd, Lin, cache, g, 7 + npar)
    hf, ts, sigma = steps[st, HF_], steps[st, T_], float(steps[st, TSIG])
    v.sub_matvec6(g, 0, g, 0, C, hf, 6, cache, tc, 6)  # g_F -= H t, then carried into the joint and the parent
    v.add_dot6(g, 6, C, ts, npar + 1, g, 0, 1)  # (its running sum in registers, not through memory)
    for i in range(npar):
        v.add_scaled(g, 7 + i, g, i, sigma)
    for q in range(steps[joint, PG0], steps[joint, PG1]):  # the joint's own terms
        v.add(g, 6 + pgd[q], Lin, pgs[q])
    v.mul(tmp, 3, C, steps[joint, LINV], g, 6)  # y
    v.mul(tmp, 4, C, steps[joint, DS], tmp, 3)
    yy, out = steps[joint, Y_], steps[joint, OUT_G]
    for j in range(npar if out >= 0 else 0):  # g_parent -= Y' D y, passed on
        v.mul_sub(Lin, out + j, g, 7 + j, C, yy + j, tmp, 4)
    v.copy(cache, steps[joint, YC], tmp, 3)


@njit(cache=True, inline="always", error_model="numpy")
def _revolute_backward(steps, st, xss, xsd, xfs, xfd, C, cache, Xout, x, xs, tmp):
    """Back-substitution of a revolute pair (link half at ``st``): the joint's ``qdd = Linv' D (y - Y
    a_parent)``, then the link's ``a = t + t qdd + sigma a_parent``."""
    joint, npar = st + 1, steps[st, NS] - 1
    for q in range(steps[joint, XS0], steps[joint, XS1]):
        v.copy(xs, 1 + xsd[q], Xout, xss[q])
    v.copy(tmp, 0, cache, steps[joint, YC])
    _sub_dot(tmp, 0, C, steps[joint, Y_], xs, 1, npar)
    v.mul(tmp, 1, C, steps[joint, DS], tmp, 0)
    v.mul(xs, 0, C, steps[joint, LINV], tmp, 1)  # qdd
    for q in range(steps[joint, XF0], steps[joint, XF1]):
        v.copy(Xout, xfs[q], xs, 0)
    _link_values(steps, st, npar + 1, xs, 0, xs, 1, npar, C, cache, x, xfs, xfd, Xout)


@njit(cache=True, inline="always", error_model="numpy")
def _wide_revolute_forward(steps, st, gs, gd, bs, bd, C, Lin, cache, g, tmp):
    """The forward sweep of a wide revolute pair (:func:`_wide_revolute_pair`, link half at ``st``): the
    link's ``g - HF t`` over ``[a, q, S]``, carried into the joint (``+= t' g_a``) and the parent (``+= sigma
    g_a``), the joint's own terms, then ``y = Linv g_q`` and ``g_S - Y' D y`` passed on."""
    joint, m = st + 1, steps[st, NS] - 1
    n = 7 + m
    npar, tp = _parent_block(steps, st)
    p0 = 7 + tp
    tc = _pair_terms(steps, st, gs, gd, bs, bd, Lin, cache, g, n)
    hf, ts = steps[st, HF_], steps[st, T_]
    v.sub_dots6(g, 0, g, 0, C, hf, 6, cache, tc, 6)  # g -= HF t (the joint's row of HF is zero)
    v.sub_dots6(g, 7, g, 7, C, hf + 7 * 6, 6, cache, tc, n - 7)
    v.dot6(tmp, 0, C, ts, m + 1, g, 0, 1)  # g_q += t' g_a, g_parent += sigma g_a
    v.add(g, 6, tmp, 0)
    sigma = float(steps[st, TSIG])
    for i in range(npar):
        v.add_scaled(g, p0 + i, g, i, sigma)
    for q in range(steps[joint, G0], steps[joint, G1]):  # the joint's own terms, on its front [q, S]
        v.add(g, 6 + gd[q], Lin, gs[q])
    v.mul(tmp, 2, C, steps[joint, LINV], g, 6)  # y
    v.mul(tmp, 3, C, steps[joint, DS], tmp, 2)
    yy, out = steps[joint, Y_], steps[joint, OUT_G]
    for j in range(m if out >= 0 else 0):
        v.mul_sub(Lin, out + j, g, 7 + j, C, yy + j, tmp, 3)
    v.copy(cache, steps[joint, YC], tmp, 2)


@njit(cache=True, inline="always", error_model="numpy")
def _wide_revolute_backward(steps, st, xss, xsd, xfs, xfd, C, cache, Xout, x, xs, tmp):
    """Back-substitution of a wide revolute pair (link half at ``st``): the joint's ``qdd = Linv D (y - Y
    x_S)``, then the link's ``a = t + t qdd + sigma a_parent``, the parent read from the joint's ``x_S``."""
    joint, m = st + 1, steps[st, NS] - 1
    npar, p0 = _parent_block(steps, st)
    for q in range(steps[joint, XS0], steps[joint, XS1]):
        v.copy(xs, xsd[q], Xout, xss[q])
    yy = steps[joint, Y_]
    v.copy(tmp, 0, cache, steps[joint, YC])
    _sub_dot(tmp, 0, C, yy, xs, 0, m)
    v.mul(tmp, 1, C, steps[joint, DS], tmp, 0)
    v.mul(tmp, 2, C, steps[joint, LINV], tmp, 1)  # qdd
    for q in range(steps[joint, XF0], steps[joint, XF1]):
        v.copy(Xout, xfs[q], tmp, 2)
    _link_values(steps, st, m + 1, tmp, 2, xs, p0, npar, C, cache, x, xfs, xfd, Xout)



@njit(cache=True, inline="always", error_model="numpy")
def _tree_pair(steps, st, pbH, pbs, phs, phd, pss, psd, Fw, C, floor, H, scale, A, T, HFT, tmp, r, ok):
    """Both steps of a tree pair (:func:`elimination.program._tree_pair`: a 6-d link, a joint of up to six
    degrees of freedom pivoted definite or negative, a parent of up to six) from the link's block alone, any
    width: ``U = H T_q``, the pivot block ``T_q' U`` (+ the joint's own factors), its Cholesky factor, ``Y =
    Linv (sigma U)'`` and the parent's ``H - Y' D Y`` -- the numbers of the two generic steps (their
    conditionals, scales and generated factor, round-off aside), without the dense front of the two or the
    factor between them.  ``C``'s zero blocks (``H_SF`` of ``HF``) are left as the caller made them: zeros.
    Each lane's pivot ratio into ``r`` (-1 where the numpy rule refuses the pivot; the lane goes on with
    meaningless numbers), ``ok``: a value per lane, scratch.  Its blocks at rows ``i * 6 + j`` of the scratch
    ``H`` (the link's, then ``U``), ``A`` (the pivot block, then ``sigma U'``), ``T`` (``T_q``, then ``L``) and
    ``HFT`` (``Linv``, then ``Y``), 72 rows each; the pivot's scales in ``scale[6:]``."""
    U, Hz, Hzs, Tq, L, Li, Y, sz = H[36:72], A[:36], A[36:72], T[:36], T[36:72], HFT[:36], HFT[36:72], scale[6:]
    _revolute_block(steps, st, pbH, pbs, Fw, H, scale, floor)
    _tree_pivot_block(steps, st, phs, phd, pss, psd, Fw, C, floor, H, scale, Tq, U, Hz, Hzs, sz, tmp)
    _tree_pivot(steps, st, C, Hz, Hzs, sz, L, Li, Y, tmp, r, ok)
    _tree_parent(steps, st, Fw, C, floor, H, scale, Y, tmp)



@njit(cache=True, inline="always", error_model="numpy")
def _tree_pivot_block(steps, st, phs, phd, pss, psd, Fw, C, floor, H, scale, Tq, U, Hz, Hzs, sz, tmp):
    """:func:`_tree_pair`'s ``T_q`` and ``HF = [H; 0]`` into ``C``, ``U = H T_q``, the pivot block
    ``Hz = T_q' U`` with the joint's own factors, its floored scales ``sz``, and ``Hzs = sigma U'``."""
    joint = st + 1
    nS, nq = steps[st, NS], steps[joint, NF]
    npar = nS - nq
    sgn, sigma, tq, tn = -float(steps[st, IDENTITY]), float(steps[st, TSIG]), steps[st, TQ], steps[st, TN]
    ts, hf = steps[st, T_], steps[st, HF_]
    for i in range(6):
        for c in range(nq):  # T_q = -+D, straight from the hard factor
            v.scaled(Tq, i * 6 + c, sgn, Fw, tq + i * tn + c)
            v.copy(C, ts + i * nS + c, Tq, i * 6 + c)
        for c in range(npar):
            v.fill(C, ts + i * nS + nq + c, sigma if i == c else 0.0)
        for j in range(6):  # HF = [H; 0]
            v.copy(C, hf + i * 6 + j, H, i * 6 + j)
    for i in range(6):  # U = H T_q
        for c in range(nq):
            v.fill(U, i * 6 + c, 0.0)
            for q in range(6):
                v.add_mul(U, i * 6 + c, H, i * 6 + q, Tq, q * 6 + c)
    v.fill(tmp, 2, sigma)
    for a in range(nq):  # the pivot block T_q' U, its scales, and sigma U' towards the parent
        for b in range(a, nq):
            v.fill(Hz, a * 6 + b, 0.0)
            for q in range(6):
                v.add_mul(Hz, a * 6 + b, Tq, q * 6 + a, U, q * 6 + b)
            v.copy(Hz, b * 6 + a, Hz, a * 6 + b)
        v.fill(tmp, 0, 0.0)  # grown
        for q in range(6):
            v.mul(tmp, 1, Tq, q * 6 + a, Tq, q * 6 + a)
            v.add_mul(tmp, 0, tmp, 1, scale, q)
        v.copy(sz, a, floor, 0)
        v.add(sz, a, tmp, 0)
        for j in range(npar):
            v.mul(Hzs, a * 6 + j, tmp, 2, U, j * 6 + a)
    for q in range(steps[joint, PH0], steps[joint, PH1]):  # the joint's own factors (the torque's, a damping)
        v.add(Hz, (phd[q] // nq) * 6 + phd[q] % nq, Fw, phs[q])
    for q in range(steps[joint, PS0], steps[joint, PS1]):
        v.add(sz, psd[q], Fw, pss[q])
    _floored(sz, nq, floor)



@njit(cache=True, inline="always", error_model="numpy")
def _tree_pivot(steps, st, C, Hz, Hzs, sz, L, Li, Y, tmp, r, ok):
    """:func:`_tree_pair`'s pivot (its joint half, after step ``st``): ``Hz = L D L'`` (``D = +-I``) per lane,
    the pivot ratios into ``r`` (-1 where a pivot is not of its sign, or a negative one's ratio falls below
    round-off), ``D`` and ``Linv`` into ``C``, and ``Y = Linv Hzs`` into ``Y`` and ``C``."""
    joint = st + 1
    nq = steps[joint, NF]
    npar = steps[st, NS] - nq
    d = 1.0 if steps[joint, PIVOT] == DEFINITE else -1.0
    _pivot_block(Hz, d, nq, 6, sz, L, Li, ok, tmp, r)
    for w in range(v.width(tmp)):
        if not ok[w]:
            r[w] = -1.0
    li, ds, yy = steps[joint, LINV], steps[joint, DS], steps[joint, Y_]
    for i in range(nq):
        v.fill(C, ds + i, d)
        for j in range(nq):
            v.copy(C, li + i * nq + j, Li, i * 6 + j)
    for i in range(nq):  # Y = Linv sigma U' (every column of Linv, its zeros too: the per-element sum's terms)
        for j in range(npar):
            v.fill(Y, i * 6 + j, 0.0)
            for q in range(nq):
                v.add_mul(Y, i * 6 + j, Li, i * 6 + q, Hzs, q * 6 + j)
            v.copy(C, yy + i * npar + j, Y, i * 6 + j)



@njit(cache=True, inline="always", error_model="numpy")
def _tree_parent(steps, st, Fw, C, floor, H, scale, Y, tmp):
    """:func:`_tree_pair`'s generated factor on the parent (where the plan keeps one): ``H - Y' D Y``,
    symmetrized, and its scales, the link's floored ones plus the floor, then ``Y``'s."""
    joint = st + 1
    nq = steps[joint, NF]
    npar, ds, out, outs = steps[st, NS] - nq, steps[joint, DS], steps[joint, OUT_H], steps[joint, OUT_S]
    for i in range(npar if out >= 0 else 0):
        v.fill(tmp, 0, 0.0)
        for q in range(nq):
            v.add_mul(tmp, 0, Y, q * 6 + i, Y, q * 6 + i)
        v.copy(Fw, outs + i, scale, i)
        v.add(Fw, outs + i, floor, 0)
        v.add(Fw, outs + i, tmp, 0)
        for j in range(i, npar):
            v.fill(tmp, 0, 0.0)
            for q in range(nq):
                v.mul(tmp, 1, Y, q * 6 + i, C, ds + q)
                v.add_mul(tmp, 0, tmp, 1, Y, q * 6 + j)
            v.half_sum(tmp, 3, H, i * 6 + j, H, j * 6 + i)
            v.sub(tmp, 3, tmp, 0)
            v.copy(Fw, out + i * npar + j, tmp, 3)
            v.copy(Fw, out + j * npar + i, tmp, 3)



@njit(cache=True, inline="always", error_model="numpy")
def _tree_forward(steps, st, gs, gd, bs, bd, pgs, pgd, C, Lin, cache, g, tmp):
    """The forward sweep of a tree pair (:func:`_tree_pair`; a joint not one-dimensional: a free flyer's, a
    spherical one), any width: the link's ``g_F - H t`` carried through ``T`` straight into the joint's pivot
    and the parent's term, with no linear term written between."""
    nF, nS, nq = steps[st, NF], steps[st, NS], steps[st + 1, NF]
    npar = nS - nq
    tc = _pair_terms(steps, st, gs, gd, bs, bd, Lin, cache, g, nF + nS)
    hf, ts = steps[st, HF_], steps[st, T_]
    for i in range(nF):  # g_F -= H t
        v.dot(tmp, 0, C, hf + i * nF, 1, cache, tc, 1, nF)
        v.sub(g, i, tmp, 0)
    for i in range(nF):  # g_S += T' g_F
        for j in range(nS):
            v.add_mul(g, nF + j, C, ts + i * nS + j, g, i)
    for q in range(steps[st + 1, PG0], steps[st + 1, PG1]):  # the joint's own terms
        v.add(g, nF + pgd[q], Lin, pgs[q])
    li, yy, ds, yc = steps[st + 1, LINV], steps[st + 1, Y_], steps[st + 1, DS], steps[st + 1, YC]
    for i in range(nq):  # y = Linv g_q
        v.dot(cache, yc + i, C, li + i * nq, 1, g, nF, 1, nq)
    for i in range(nq):  # g_parent -= Y' D y
        v.mul(tmp, 0, C, ds + i, cache, yc + i)
        for j in range(npar):
            v.sub_mul(g, nF + nq + j, C, yy + i * npar + j, tmp, 0)
    out = steps[st + 1, OUT_G]
    for j in range(npar if out >= 0 else 0):
        v.copy(Lin, out + j, g, nF + nq + j)


