"""Design A of issue 40: ONE width-generic source of the revolute pair (ABA's step of a 6-d link and a revolute joint).

Every array has a trailing lane axis of width ``W``, read at run time from ``Fw.shape[1]``; the innermost loops run
over it (``for w in range(W)``).  Each lane performs exactly the floating-point operations, in the same order, of the
per-state kernel :func:`elimination.compiled_pairs._revolute_pair` (its helpers ``_link_block``, ``_revolute_T``,
``_revolute_pivot``), so a lane's numbers are that kernel's bits.

Shapes: ``Fw (factor_size, W)``, ``C (conditional_size, W)``, ``floor (1, W)``, ``H (36, W)`` (the link block,
row ``i * 6 + j``), ``scale``, ``t6``, ``u6``, ``tmp`` ``(>= 6, W)``, ``r (W,)`` (the pivot ratios out).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from elimination.compiled_front import (
    DS, HF_, IDENTITY, LINV, NS, OUT_H, OUT_S, PB0, PB1, PH0, PH1, PS0, PS1, T_, TN, TQ, TSIG, UNCOUNTED, Y_, ix,
)


@njit(cache=True, inline="always", error_model="numpy")
def _link_block_w(steps, st, pbH, pbs, Fw, H, scale, floor, W):
    """compiled_pairs._link_block (nF = 6) per lane: zero, add the factors whole, raise to the floor."""
    for i in range(6):
        for w in range(W):
            scale[ix(i), ix(w)] = 0.0
        for j in range(6):
            for w in range(W):
                H[ix(i * 6 + j), ix(w)] = 0.0
    for b in range(steps[st, PB0], steps[st, PB1]):
        h, s = pbH[ix(b)], pbs[ix(b)]
        for i in range(6):
            for w in range(W):
                scale[ix(i), ix(w)] += Fw[ix(s + i), ix(w)]
            for j in range(6):
                for w in range(W):
                    H[ix(i * 6 + j), ix(w)] += Fw[ix(h + i * 6 + j), ix(w)]
    for i in range(6):
        for w in range(W):
            scale[ix(i), ix(w)] = max(scale[ix(i), ix(w)], floor[0, ix(w)])


@njit(cache=True, inline="always", error_model="numpy")
def _revolute_T_w(steps, st, Fw, C, t6, m, W):
    """compiled_pairs._revolute_T per lane: ``t = -+D`` into ``t6`` and T's first column in ``C``."""
    sgn = -float(steps[st, IDENTITY])
    tq, tn, ts = steps[st, TQ], steps[st, TN], steps[st, T_]
    for i in range(6):
        for w in range(W):
            t6[ix(i), ix(w)] = sgn * Fw[ix(tq + i * tn), ix(w)]
            C[ix(ts + i * (m + 1)), ix(w)] = t6[ix(i), ix(w)]


@njit(cache=True, inline="always", error_model="numpy")
def _revolute_pivot_w(steps, joint, H, scale, t6, u6, floor, Fw, C, hsrc, h0, h1, ssrc, s0, s1, tmp, r, W):
    """compiled_pairs._revolute_pivot per lane; its scalars ``d``, ``grown``/``sz``, ``Linv`` live in
    ``tmp[0]``, ``tmp[1]``/``tmp[3]``, ``tmp[4]``; the ratio into ``r``."""
    for i in range(6):  # u = H t, each sum from 0.0 a term at a time
        for w in range(W):
            u6[ix(i), ix(w)] = 0.0
        for q in range(6):
            for w in range(W):
                u6[ix(i), ix(w)] += H[ix(i * 6 + q), ix(w)] * t6[ix(q), ix(w)]
    for w in range(W):
        tmp[0, ix(w)] = 0.0  # d
        tmp[1, ix(w)] = 0.0  # grown
    for k in range(6):
        for w in range(W):
            tmp[0, ix(w)] += t6[ix(k), ix(w)] * u6[ix(k), ix(w)]
            tmp[1, ix(w)] += t6[ix(k), ix(w)] * t6[ix(k), ix(w)] * scale[ix(k), ix(w)]
    for w in range(W):
        tmp[3, ix(w)] = floor[0, ix(w)] + tmp[1, ix(w)]  # sz = floor + grown
    for q in range(h0, h1):
        for w in range(W):
            tmp[0, ix(w)] += Fw[ix(hsrc[ix(q)]), ix(w)]
    for q in range(s0, s1):
        for w in range(W):
            tmp[3, ix(w)] += Fw[ix(ssrc[ix(q)]), ix(w)]
    ds, li = steps[joint, DS], steps[joint, LINV]
    for w in range(W):
        d = tmp[0, ix(w)]
        sz = max(tmp[3, ix(w)], floor[0, ix(w)])
        root = np.sqrt(max(d, 0.0))
        tmp[4, ix(w)] = 1.0 / root if d > 0.0 else 0.0
        C[ix(ds), ix(w)] = 1.0
        C[ix(li), ix(w)] = tmp[4, ix(w)]
        r[ix(w)] = root * root / max(sz, 1e-300) if d > 0.0 else -1.0


@njit(cache=True, error_model="numpy", **UNCOUNTED)
def revolute_pair_w(steps, st, pbH, pbs, phs, pss, Fw, C, floor, H, scale, t6, u6, tmp, r):
    """compiled_pairs._revolute_pair on ``W = Fw.shape[1]`` lanes, lane by lane its operations in its order."""
    W = Fw.shape[1]
    joint = st + 1
    _link_block_w(steps, st, pbH, pbs, Fw, H, scale, floor, W)
    sigma, hf, npar = float(steps[st, TSIG]), steps[st, HF_], steps[st, NS] - 1
    _revolute_T_w(steps, st, Fw, C, t6, npar, W)  # T = [t, sigma I]
    for i in range(36):  # HF = [H; 0]
        for w in range(W):
            C[ix(hf + i), ix(w)] = H[ix(i), ix(w)]
    _revolute_pivot_w(steps, joint, H, scale, t6, u6, floor, Fw, C, phs, steps[joint, PH0], steps[joint, PH1], pss,
                      steps[joint, PS0], steps[joint, PS1], tmp, r, W)
    yy, out, outs = steps[joint, Y_], steps[joint, OUT_H], steps[joint, OUT_S]
    for j in range(npar):  # y = Linv (sigma u)
        for w in range(W):
            u6[ix(j), ix(w)] = tmp[4, ix(w)] * (sigma * u6[ix(j), ix(w)])
            C[ix(yy + j), ix(w)] = u6[ix(j), ix(w)]
    for i in range(6 if out >= 0 else 0):  # the parent's H - y y', symmetrized, and its scales
        for w in range(W):
            Fw[ix(outs + i), ix(w)] = scale[ix(i), ix(w)] + floor[0, ix(w)] + u6[ix(i), ix(w)] * u6[ix(i), ix(w)]
        for j in range(i, 6):
            for w in range(W):
                x = 0.5 * (H[ix(i * 6 + j), ix(w)] + H[ix(j * 6 + i), ix(w)]) - u6[ix(i), ix(w)] * u6[ix(j), ix(w)]
                Fw[ix(out + i * 6 + j), ix(w)] = x
                Fw[ix(out + j * 6 + i), ix(w)] = x
