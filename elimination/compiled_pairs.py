"""The compiled kernels of the pair instructions: ``TREE_PAIR``, ``REVOLUTE_PAIR`` and ``WIDE_REVOLUTE``.

Each runs two steps of the program as one (:mod:`elimination.program`'s
docstring): a link acceleration substituted through its own tree joint and
the joint pivoted -- ABA's step from the link's block alone (:func:`_tree_pair`,
fixed sizes for a revolute joint of a 6-d link: :func:`_revolute_pair`), or on
the link's block of a wider front without the joint's row and column
(:func:`_wide_revolute_pair`) -- and the solve's sweeps of the same pair.  The
numbers are those of the two ``FRONT`` steps they stand for, round-off aside;
:mod:`elimination.lanes` runs the same operations sixteen elements side by side.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .compiled_front import (
    B0, B1, DS, G0, G1, H0, H1, HF_, IDENTITY, LINV, NF, NMIN, NS, OUT_G, OUT_H, OUT_S, PB0, PB1, PG0, PG1, PH0, PH1, PIVOT, PS0, PS1, S0,
    S1, T_, TC, TN, TP, TQ, TSIG, XF0, XF1, XS0, XS1, Y_, YC, _pivot, drop_stale_cache, ix,
)
from . import compiled_front

drop_stale_cache(__file__, compiled_front.__file__)  # (the pairs compile its kernels into themselves)


@njit(cache=True, inline="always")
def _link_block(steps, st, pbH, pbs, Fw, H, scale, nF, floor):
    """The link half's ``H (nF x nF)`` and its floored scales (link half at step ``st``): the sum of its
    quadratic factors, whole blocks."""
    for i in range(nF):
        scale[ix(i)] = 0.0
        for j in range(nF):
            H[ix(i), ix(j)] = 0.0
    for b in range(steps[st, PB0], steps[st, PB1]):
        h, s = pbH[ix(b)], pbs[ix(b)]
        for i in range(nF):
            scale[ix(i)] += Fw[ix(s + i)]
            for j in range(nF):
                H[ix(i), ix(j)] += Fw[ix(h + i * nF + j)]
    for i in range(nF):
        scale[ix(i)] = max(scale[ix(i)], floor)


@njit(cache=True, inline="always")
def _tree_pair(steps, st, pbH, pbs, phs, phd, pss, psd, Fw, C, floor, scratch):
    """Both steps of a tree pair (:func:`elimination.program._tree_pair`) on one element, from the link's
    block ``H (nF x nF)`` alone: ``U = H T_q``, the pivot block ``T_q' U`` (+ the joint's own factors),
    ``Y = Linv (sigma U)'`` and the parent's ``H - Y' D Y``.  The numbers of the two generic steps (their
    conditionals, scales and generated factor, round-off aside), without the dense front of the two
    or the factor between them.  ``C``'s zero blocks (``H_SF`` of ``HF``) are left as the caller made them:
    zeros.  Returns the pivot ratio, or -1 where the numpy rule refuses the pivot."""
    row, following = steps[st], steps[st + 1]  # (views: this generic pair is the rare one, see _revolute_pair)
    nF, nS, nq = row[NF], row[NS], following[NF]
    H, A, scale, unit, L, Lw, Li, X, Dv, T, U, Wm, Nm, Ek, Ed, Hz, Hzs, sz, Tnz = scratch
    npar = nS - nq
    _link_block(steps, st, pbH, pbs, Fw, H, scale, nF, floor)
    sgn, sigma, tq, tn = -float(row[IDENTITY]), float(row[TSIG]), row[TQ], row[TN]
    ts, hf = row[T_], row[HF_]
    for i in range(nF):
        for c in range(nq):  # T_q = -+D, straight from the hard factor
            T[ix(i), ix(c)] = sgn * Fw[ix(tq + i * tn + c)]
            C[ix(ts + i * nS + c)] = T[ix(i), ix(c)]
        for c in range(npar):
            C[ix(ts + i * nS + nq + c)] = sigma if i == c else 0.0
        for j in range(nF):  # HF = [H; 0]: no quadratic reaches the separator
            C[ix(hf + i * nF + j)] = H[ix(i), ix(j)]
    for i in range(nF):  # U = H T_q
        for c in range(nq):
            t = 0.0
            for q in range(nF):
                t += H[ix(i), ix(q)] * T[ix(q), ix(c)]
            U[ix(i), ix(c)] = t
    for a in range(nq):  # the pivot block T_q' U, its scales, and sigma U' towards the parent
        for b in range(a, nq):
            t = 0.0
            for r in range(nF):
                t += T[ix(r), ix(a)] * U[ix(r), ix(b)]
            Hz[ix(a), ix(b)] = Hz[ix(b), ix(a)] = t
        grown = 0.0
        for r in range(nF):
            grown += T[ix(r), ix(a)] * T[ix(r), ix(a)] * scale[ix(r)]
        sz[ix(a)] = floor + grown
        for j in range(npar):
            Hzs[ix(a), ix(j)] = sigma * U[ix(j), ix(a)]
    for q in range(following[PH0], following[PH1]):  # the joint's own factors (the torque's, a damping)
        Hz[ix(phd[ix(q)] // nq), ix(phd[ix(q)] % nq)] += Fw[ix(phs[ix(q)])]
    for q in range(following[PS0], following[PS1]):
        sz[ix(psd[ix(q)])] += Fw[ix(pss[ix(q)])]
    for a in range(nq):
        sz[ix(a)] = max(sz[ix(a)], floor)
    r = _pivot(Hz, sz, nq, following[NMIN], following[PIVOT], Li, Dv, L, Lw, X)
    if r < 0.0:
        return r
    li, ds, yy, out, outs = following[LINV], following[DS], following[Y_], following[OUT_H], following[OUT_S]
    for i in range(nq):
        C[ix(ds + i)] = Dv[ix(i)]
        for j in range(nq):
            C[ix(li + i * nq + j)] = Li[ix(i), ix(j)]
    for i in range(nq):  # Y = Linv sigma U'
        for j in range(npar):
            t = 0.0
            for q in range(nq):
                t += Li[ix(i), ix(q)] * Hzs[ix(q), ix(j)]
            X[ix(i), ix(j)] = t
            C[ix(yy + i * npar + j)] = t
    if out >= 0:  # the parent's H - Y' D Y, and its scales: the substitution's floor + H's, then Y's
        for i in range(npar):
            grown = 0.0
            for q in range(nq):
                grown += X[ix(q), ix(i)] * X[ix(q), ix(i)]
            Fw[ix(outs + i)] = scale[ix(i)] + floor + grown
            for j in range(i, npar):
                t = 0.0
                for q in range(nq):
                    t += X[ix(q), ix(i)] * Dv[ix(q)] * X[ix(q), ix(j)]
                Fw[ix(out + i * npar + j)] = Fw[ix(out + j * npar + i)] = 0.5 * (H[ix(i), ix(j)] + H[ix(j), ix(i)]) - t
    return r


@njit(cache=True, inline="always")
def _revolute_T(steps, st, Fw, C, t6, m):
    """A revolute pair's ``t = -+D`` (the joint's column of its hard factor) into ``t6`` and into the first
    column of ``T = [t, sigma E_p]`` (``6 x (1 + m)``) in ``C``.  The rest of ``T``, the parent's ``sigma I``,
    is structure: the revolute kernels apply ``sigma`` themselves, and no state writes or reads it."""
    sgn = -float(steps[st, IDENTITY])
    tq, tn, ts = steps[st, TQ], steps[st, TN], steps[st, T_]
    for i in range(6):
        t6[ix(i)] = sgn * Fw[ix(tq + i * tn)]
        C[ix(ts + i * (m + 1))] = t6[ix(i)]


@njit(cache=True, inline="always")
def _revolute_pivot(steps, joint, H, scale, t6, u6, floor, Fw, C, hsrc, h0, h1, ssrc, s0, s1):
    """The pivot of a one-dimensional joint (step ``joint``) after its 6-d link's substitution through ``t``
    (``t6``; the link's block ``H[:6, :6]``, ``scale[:6]``): ``u = H_aa t`` into ``u6``, ``d = t'u`` plus the
    joint's own factors (``Fw[hsrc[h0:h1]]``, their scales ``Fw[ssrc[s0:s1]]``), ``D = 1`` and ``Linv =
    1 / sqrt(d)`` into ``C``.  Returns ``(Linv, ratio)``, the ratio -1 where the numpy rule refuses the pivot."""
    d, grown = 0.0, 0.0
    for i in range(6):
        t = 0.0
        for q in range(6):
            t += H[ix(i), ix(q)] * t6[ix(q)]
        u6[ix(i)] = t
    for r in range(6):
        d += t6[ix(r)] * u6[ix(r)]
        grown += t6[ix(r)] * t6[ix(r)] * scale[ix(r)]
    sz = floor + grown
    for q in range(h0, h1):
        d += Fw[ix(hsrc[ix(q)])]
    for q in range(s0, s1):
        sz += Fw[ix(ssrc[ix(q)])]
    sz = max(sz, floor)
    root = np.sqrt(max(d, 0.0))
    li = 1.0 / root if d > 0.0 else 0.0
    C[steps[joint, DS]], C[steps[joint, LINV]] = 1.0, li
    return li, (root * root / max(sz, 1e-300) if d > 0.0 else -1.0)


@njit(cache=True, inline="always")
def _revolute_pair(steps, st, pbH, pbs, phs, pss, Fw, C, floor, H, scale, t6, u6):
    """:func:`_tree_pair` for a one-dimensional joint of a 6-dimensional link, link half at step ``st``
    (sizes known to the compiler, so the loops unroll): ``u = H t``, ``d = t' u``, ``y = sigma u / sqrt(d)``,
    ``H_parent = H - y y'``.

    It reads the step table by ``(step, column)`` and has one exit: numba then proves the reference
    counts of its array arguments redundant and drops them.  A row view (``steps[st]``) or an early
    return keeps them, and their atomic increments cost more than the arithmetic (perf on Talos:
    70% of the factorization was ``NRT_incref`` / ``NRT_decref`` with them)."""
    joint = st + 1
    _link_block(steps, st, pbH, pbs, Fw, H, scale, 6, floor)
    sigma, hf, npar = float(steps[st, TSIG]), steps[st, HF_], steps[st, NS] - 1
    _revolute_T(steps, st, Fw, C, t6, npar)  # T = [t, sigma I]
    for i in range(6):  # HF = [H; 0]
        for j in range(6):
            C[ix(hf + i * 6 + j)] = H[ix(i), ix(j)]
    li, ratio = _revolute_pivot(steps, joint, H, scale, t6, u6, floor, Fw, C, phs, steps[joint, PH0],
                                steps[joint, PH1], pss, steps[joint, PS0], steps[joint, PS1])
    yy, out, outs = steps[joint, Y_], steps[joint, OUT_H], steps[joint, OUT_S]
    for j in range(npar):
        u6[ix(j)] = li * (sigma * u6[ix(j)])
        C[ix(yy + j)] = u6[ix(j)]
    for i in range(6 if out >= 0 else 0):  # a loop, not an if: Fw's last use stays on the one path
        Fw[ix(outs + i)] = scale[ix(i)] + floor + u6[ix(i)] * u6[ix(i)]
        for j in range(i, 6):
            Fw[ix(out + i * 6 + j)] = Fw[ix(out + j * 6 + i)] = (
                0.5 * (H[ix(i), ix(j)] + H[ix(j), ix(i)]) - u6[ix(i)] * u6[ix(j)])
    return ratio


@njit(cache=True, inline="always")
def _parent_block(steps, st):
    """``(npar, tp)`` of a wide revolute pair's link half ``st``: the parent's size (6, or 0 without a
    parent) and where it starts in the joint's separator (0 without a parent)."""
    return (6, steps[st, TP]) if steps[st, TSIG] != 0 else (0, 0)


@njit(cache=True, inline="always")
def _wide_revolute_pair(steps, st, hs, hd, ss, sd, Fw, C, floor, H, Hf, scale, t6, u6, y):
    """Both steps of a wide pair with a revolute joint (:func:`elimination.program._wide_revolute`), link half
    at step ``st``, on the front ``[a, q, S]`` without the joint's row and column, which no factor of the
    link reaches: ``S`` is the joint's separator (the parent ``p`` somewhere in it, a subtree's multipliers,
    a loop's other link) and ``T = [t, sigma E_p]``, so the joint's pivot is ``d = t'u`` with ``u = H_aa t``
    (+ the joint's own factors), its row ``y = (t'H_aS + sigma E_p' u) / sqrt(d)`` and the generated factor
    ``H_SS`` with ``a`` folded into ``p`` (rows ``+= sigma H_aS``, columns ``+= sigma H_Sa``, ``H_aa`` on
    ``p x p``) less ``y y'``.  The numbers of the two generic steps, round-off aside, without the dense
    substitution or the factor between them.  Returns the pivot ratio, or -1 where the numpy rule refuses
    the pivot.

    The front is ``H (maxn, maxn)`` (``Hf`` its flat view, the gathers' destinations) and ``scale (maxn,)``,
    rows ``[a (6), q (1), S (m)]``; ``t6``, ``u6``, ``y`` are scratch vectors of ``maxn`` (``t``, ``u = H_aa t``,
    the joint's row of ``Y``)."""
    joint = st + 1
    m = steps[st, NS] - 1  # the joint's separator
    n = 7 + m
    sigma = float(steps[st, TSIG])
    npar, tp = _parent_block(steps, st)
    p0 = 7 + tp  # the parent's first row of the front
    for i in range(n):  # every row and column but the joint's (the gathers reach nothing else)
        scale[ix(i)] = 0.0
        for j in range(6):
            H[ix(i), ix(j)] = 0.0
        for j in range(7, n):
            H[ix(i), ix(j)] = 0.0
    for q in range(steps[st, H0], steps[st, H1]):
        Hf[ix(hd[ix(q)])] += Fw[ix(hs[ix(q)])]
    for q in range(steps[st, S0], steps[st, S1]):
        scale[ix(sd[ix(q)])] += Fw[ix(ss[ix(q)])]
    for i in range(n):
        scale[ix(i)] = max(scale[ix(i)], floor)
    _revolute_T(steps, st, Fw, C, t6, m)  # T = [t, sigma E_p]
    hf = steps[st, HF_]
    for i in range(n):  # HF = [H_aa; 0; H_Sa]
        for j in range(6):
            C[ix(hf + i * 6 + j)] = H[ix(i), ix(j)] if i != 6 else 0.0
    li, ratio = _revolute_pivot(steps, joint, H, scale, t6, u6, floor, Fw, C, hs, steps[joint, H0],
                                steps[joint, H1], ss, steps[joint, S0], steps[joint, S1])  # (the joint's factors: on q)
    for j in range(m):  # y = (t'H_aS + sigma E_p' u) / sqrt(d)
        y[ix(j)] = 0.0
    for q in range(6):
        for j in range(m):
            y[ix(j)] += t6[ix(q)] * H[ix(q), ix(7 + j)]
    for i in range(npar):
        y[ix(tp + i)] += sigma * u6[ix(i)]
    yy = steps[joint, Y_]
    for j in range(m):
        y[ix(j)] *= li
        C[ix(yy + j)] = y[ix(j)]
    for i in range(npar):  # a folded into p: rows, columns, then H_aa; scales
        for j in range(7, n):
            H[ix(p0 + i), ix(j)] += sigma * H[ix(i), ix(j)]
        for j in range(7, n):
            H[ix(j), ix(p0 + i)] += sigma * H[ix(j), ix(i)]
        for j in range(6):
            H[ix(p0 + i), ix(p0 + j)] += H[ix(i), ix(j)]
        scale[ix(p0 + i)] += scale[ix(i)]
    out, outs = steps[joint, OUT_H], steps[joint, OUT_S]
    for i in range(m if out >= 0 else 0):  # the generated factor: H_SS - y y', symmetrized
        Fw[ix(outs + i)] = scale[ix(7 + i)] + y[ix(i)] * y[ix(i)]
        for j in range(i, m):
            Fw[ix(out + i * m + j)] = Fw[ix(out + j * m + i)] = (
                0.5 * (H[ix(7 + i), ix(7 + j)] + H[ix(7 + j), ix(7 + i)]) - y[ix(i)] * y[ix(j)])
    return ratio


@njit(cache=True, inline="always")
def _link_terms(steps, st, gs, gd, bs, bd, Lin, cache, g, n):
    """The forward sweep's start for a pair's link half ``st``: ``g[:n]`` zeroed and gathered from the link's
    linear terms, and ``t = W b`` (``W = sign I``) of its joint row into the cache.  Returns the offsets
    ``(tc, hf, ts)`` of ``t``, ``HF`` and ``T``."""
    for i in range(n):
        g[ix(i)] = 0.0
    for q in range(steps[st, G0], steps[st, G1]):
        g[ix(gd[ix(q)])] += Lin[ix(gs[ix(q)])]
    tc, ident = steps[st, TC], float(steps[st, IDENTITY])
    for q in range(steps[st, B0], steps[st, B1]):
        cache[ix(tc + bd[ix(q)])] = ident * Lin[ix(bs[ix(q)])]
    return tc, steps[st, HF_], steps[st, T_]


@njit(cache=True, inline="always")
def cached6(cache, tc):
    """``t = cache[tc:tc + 6]`` as a 6-tuple: read once, held in registers across the stores of a sweep (which
    the compiler cannot tell apart from the cache's entries)."""
    return (cache[ix(tc)], cache[ix(tc + 1)], cache[ix(tc + 2)], cache[ix(tc + 3)], cache[ix(tc + 4)],
            cache[ix(tc + 5)])


@njit(cache=True, inline="always")
def minus_dot6(start, C, at, t6):
    """``start - C[at:at + 6] . t6``, a term at a time from ``start`` (the order of the loops it replaces)."""
    t = start - C[ix(at)] * t6[0]
    t -= C[ix(at + 1)] * t6[1]
    t -= C[ix(at + 2)] * t6[2]
    t -= C[ix(at + 3)] * t6[3]
    t -= C[ix(at + 4)] * t6[4]
    return t - C[ix(at + 5)] * t6[5]


@njit(cache=True, inline="always")
def dot6(C, at, t6):
    """``C[at:at + 6] . t6``, summed from zero a term at a time (the order of the loops it replaces)."""
    t = 0.0 + C[ix(at)] * t6[0]
    t += C[ix(at + 1)] * t6[1]
    t += C[ix(at + 2)] * t6[2]
    t += C[ix(at + 3)] * t6[3]
    t += C[ix(at + 4)] * t6[4]
    return t + C[ix(at + 5)] * t6[5]


@njit(cache=True, inline="always")
def _link_values(cache, tc, C, ts, stride, qdd, sigma, xs, p0, npar, x):
    """A revolute pair's link values ``x = t + t_q qdd + sigma a_parent`` (``t_q``: every ``stride``-th entry
    of ``C`` from ``ts``; the parent's ``npar`` (6 or 0) values at ``xs[p0:]``), a row at a time."""
    if npar == 6:
        for i in range(6):
            x[ix(i)] = (cache[ix(tc + i)] + C[ix(ts + i * stride)] * qdd) + sigma * xs[ix(p0 + i)]
    else:
        for i in range(6):
            x[ix(i)] = cache[ix(tc + i)] + C[ix(ts + i * stride)] * qdd
        for i in range(npar):
            x[ix(i)] += sigma * xs[ix(p0 + i)]


@njit(cache=True, inline="always")
def _tree_pair_forward(steps, st, gs, gd, bs, bd, pgs, pgd, C, Lin, cache, g):
    """The forward sweep of a tree pair (:func:`_tree_pair`): the link's ``g_F - H t`` carried through
    ``T`` straight into the joint's pivot and the parent's term, with no linear term written between."""
    nF, nS, nq = steps[st, NF], steps[st, NS], steps[st + 1, NF]
    npar = nS - nq
    tc, hf, ts = _link_terms(steps, st, gs, gd, bs, bd, Lin, cache, g, nF + nS)
    for i in range(nF):  # g_F -= H t (HF's other rows are zero)
        t = 0.0
        for j in range(nF):
            t += C[hf + i * nF + j] * cache[tc + j]
        g[i] -= t
    for i in range(nF):  # g_S += T' g_F
        gi = g[i]
        for j in range(nS):
            g[nF + j] += C[ts + i * nS + j] * gi
    for q in range(steps[st + 1, PG0], steps[st + 1, PG1]):  # the joint's own terms
        g[nF + pgd[q]] += Lin[pgs[q]]
    li, yy, ds, yc = steps[st + 1, LINV], steps[st + 1, Y_], steps[st + 1, DS], steps[st + 1, YC]
    for i in range(nq):  # y = Linv g_q
        t = 0.0
        for q in range(nq):
            t += C[li + i * nq + q] * g[nF + q]
        cache[yc + i] = t
    for i in range(nq):  # g_parent -= Y' D y
        a = C[ds + i] * cache[yc + i]
        for j in range(npar):
            g[nF + nq + j] -= C[yy + i * npar + j] * a
    out = steps[st + 1, OUT_G]
    for j in range(npar if out >= 0 else 0):  # one path to the end (_revolute_pair)
        Lin[out + j] = g[nF + nq + j]


@njit(cache=True, inline="always")
def _revolute_pair_forward(steps, st, gs, gd, bs, bd, pgs, pgd, C, Lin, cache, g):
    """:func:`_tree_pair_forward` for a one-dimensional joint of a 6-dimensional link, with its ``T`` read
    as what it is, ``[t, sigma I]`` (:func:`_revolute_pair`): ``g_q += t' g_F``, ``g_parent += sigma g_F``."""
    joint, npar = st + 1, steps[st, NS] - 1
    # g over [link (6), joint (1), parent (npar: 6, or 0 below the ground)]
    tc, hf, ts = _link_terms(steps, st, gs, gd, bs, bd, Lin, cache, g, 7 + npar)
    sigma, gq = float(steps[st, TSIG]), g[6]
    t6 = cached6(cache, tc)
    for i in range(6):  # g_F -= H t, then carried into the joint and the parent
        g[ix(i)] = t = minus_dot6(g[ix(i)], C, hf + i * 6, t6)
        gq += C[ix(ts + i * (npar + 1))] * t
    g[6] = gq
    for i in range(npar):
        g[ix(7 + i)] += sigma * g[ix(i)]
    for q in range(steps[joint, PG0], steps[joint, PG1]):  # the joint's own terms
        g[ix(6 + pgd[ix(q)])] += Lin[ix(pgs[ix(q)])]
    y = C[steps[joint, LINV]] * g[6]
    a, yy, out = C[steps[joint, DS]] * y, steps[joint, Y_], steps[joint, OUT_G]
    for j in range(npar if out >= 0 else 0):  # g_parent -= Y' D y, passed on
        Lin[ix(out + j)] = g[ix(7 + j)] - C[ix(yy + j)] * a
    cache[steps[joint, YC]] = y  # last: numba keeps counting the references of the arrays the helper's last


@njit(cache=True, inline="always")
def _revolute_pair_backward(steps, st, xss, xsd, xfs, xfd, C, cache, Xout, x, xs):
    """Back-substitution of a revolute pair (link half at ``st``): the joint's ``qdd = Linv' D (y - Y
    a_parent)``, then the link's ``a = t + t qdd + sigma a_parent``."""
    joint, npar = st + 1, steps[st, NS] - 1
    for q in range(steps[joint, XS0], steps[joint, XS1]):
        xs[ix(1 + xsd[ix(q)])] = Xout[ix(xss[ix(q)])]
    t, yy = cache[steps[joint, YC]], steps[joint, Y_]
    for j in range(npar):
        t -= C[ix(yy + j)] * xs[ix(1 + j)]
    xs[0] = C[steps[joint, LINV]] * (C[steps[joint, DS]] * t)  # the link's separator: [joint, parent]
    for q in range(steps[joint, XF0], steps[joint, XF1]):
        Xout[ix(xfs[ix(q)])] = xs[0]
    tc, ts, sigma = steps[st, TC], steps[st, T_], float(steps[st, TSIG])
    _link_values(cache, tc, C, ts, npar + 1, xs[0], sigma, xs, 1, npar, x)
    for q in range(steps[st, XF0], steps[st, XF1]):
        Xout[ix(xfs[ix(q)])] = x[ix(xfd[ix(q)])]


@njit(cache=True, inline="always")
def _wide_revolute_forward(steps, st, gs, gd, bs, bd, C, Lin, cache, g):
    """The forward sweep of a wide revolute pair (:func:`_wide_revolute_pair`, link half at ``st``): the
    link's ``g - HF t`` over ``[a, q, S]``, carried into the joint (``+= t' g_a``) and the parent
    (``+= sigma g_a``), the joint's own terms, then ``y = Linv g_q`` and ``g_S - Y' D y`` passed on."""
    joint, m = st + 1, steps[st, NS] - 1
    n = 7 + m
    npar, tp = _parent_block(steps, st)
    p0 = 7 + tp  # the parent's first entry of g
    tc, hf, ts = _link_terms(steps, st, gs, gd, bs, bd, Lin, cache, g, n)
    t6 = cached6(cache, tc)
    for i in range(n):  # g -= HF t (the joint's row of HF is zero)
        if i != 6:
            g[ix(i)] -= dot6(C, hf + i * 6, t6)
    t = 0.0
    for i in range(6):  # g_q += t' g_a, g_parent += sigma g_a
        t += C[ix(ts + i * (m + 1))] * g[ix(i)]
    g[6] += t
    sigma = float(steps[st, TSIG])
    for i in range(npar):
        g[ix(p0 + i)] += sigma * g[ix(i)]
    for q in range(steps[joint, G0], steps[joint, G1]):  # the joint's own terms, on its front [q, S]
        g[ix(6 + gd[ix(q)])] += Lin[ix(gs[ix(q)])]
    y = C[steps[joint, LINV]] * g[6]
    a, yy, out = C[steps[joint, DS]] * y, steps[joint, Y_], steps[joint, OUT_G]
    for j in range(m if out >= 0 else 0):
        Lin[ix(out + j)] = g[ix(7 + j)] - C[ix(yy + j)] * a
    cache[steps[joint, YC]] = y


@njit(cache=True, inline="always")
def _wide_revolute_backward(steps, st, xss, xsd, xfs, xfd, C, cache, Xout, x, xs):
    """Back-substitution of a wide revolute pair (link half at ``st``): the joint's ``qdd = Linv D (y - Y
    x_S)``, then the link's ``a = t + t qdd + sigma a_parent``, the parent read from the joint's ``x_S``."""
    joint, m = st + 1, steps[st, NS] - 1
    npar, p0 = _parent_block(steps, st)  # p0: the parent's first entry of the joint's separator
    for q in range(steps[joint, XS0], steps[joint, XS1]):
        xs[ix(xsd[ix(q)])] = Xout[ix(xss[ix(q)])]
    t, yy = cache[steps[joint, YC]], steps[joint, Y_]
    for j in range(m):
        t -= C[ix(yy + j)] * xs[ix(j)]
    qdd = C[steps[joint, LINV]] * (C[steps[joint, DS]] * t)
    for q in range(steps[joint, XF0], steps[joint, XF1]):
        Xout[ix(xfs[ix(q)])] = qdd
    tc, ts, sigma = steps[st, TC], steps[st, T_], float(steps[st, TSIG])
    _link_values(cache, tc, C, ts, m + 1, qdd, sigma, xs, p0, npar, x)
    for q in range(steps[st, XF0], steps[st, XF1]):
        Xout[ix(xfs[ix(q)])] = x[ix(xfd[ix(q)])]
