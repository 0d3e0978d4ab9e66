"""The compiled pivots of a dense block, ``H = L D L'`` with ``Linv = L^-1``: the numpy rule's
(:func:`elimination.gaussian.pivot_factor`) for one element (:func:`_pivot`: Cholesky, of ``-H`` for
multipliers, block LDL' for quasi-definite blocks, an eigendecomposition for indefinite ones) and the
definite and negative block pivots for any width (:func:`_pivot_block`, on :mod:`elimination.vectors`' rows).

The front kernel (:mod:`elimination.compiled_front`), the pair kernels (:mod:`elimination.compiled_pairs`)
and the lanes (:mod:`elimination.lanes`) pivot through these; :mod:`elimination.compiled`'s docstring says
why they index through ``ix`` and run without reference counting.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba import uint64 as ix  # an index as unsigned: no negative-index wrap (elimination.compiled's docstring)

from .gaussian import SINGULAR_RTOL  # numba freezes module globals: the numpy rule's tolerance
from . import vectors as v
from .kernel_cache import drop_stale_cache
from .program import PIVOTS

DEFINITE = PIVOTS["definite"]  # (the block pivots of _pivot_block: definite, else negative)
COUNTED, UNCOUNTED = {"_nrt": True}, {"_nrt": False}  # numba's reference counting on / off (compiled's docstring)


@njit(cache=True, **UNCOUNTED)
def _cholesky(A, n, L):
    """Lower Cholesky factor of the leading ``n x n`` of ``A`` into ``L``; False if a pivot is not positive."""
    for j in range(n):
        s = A[ix(j), ix(j)]
        for k in range(j):
            s -= L[ix(j), ix(k)] * L[ix(j), ix(k)]
        if not s > 0.0:
            return False
        d = np.sqrt(s)
        L[ix(j), ix(j)] = d
        for i in range(j + 1, n):
            t = A[ix(i), ix(j)]
            for k in range(j):
                t -= L[ix(i), ix(k)] * L[ix(j), ix(k)]
            L[ix(i), ix(j)] = t / d
        for i in range(j):
            L[ix(i), ix(j)] = 0.0
    return True


@njit(cache=True, **UNCOUNTED)
def _lower_inverse(L, n, out):
    """``out = L^-1`` for lower-triangular ``L`` (``n x n``)."""
    for j in range(n):
        for i in range(n):
            out[ix(i), ix(j)] = 0.0
        out[ix(j), ix(j)] = 1.0 / L[ix(j), ix(j)]
        for i in range(j + 1, n):
            s = 0.0
            for k in range(j, i):
                s -= L[ix(i), ix(k)] * out[ix(k), ix(j)]
            out[ix(i), ix(j)] = s / L[ix(i), ix(i)]


@njit(cache=True, **COUNTED)
def _indefinite_pivot(Hz, scale, nz, Li, D):
    """:func:`_pivot` of an indefinite block (mixed roles after a substitution): a symmetric
    eigendecomposition (``eigh`` allocates: this helper counts references and returns a scalar)."""
    ratio = np.inf
    w, V = np.linalg.eigh(Hz[:nz, :nz])
    top = 0.0
    for i in range(nz):
        top = max(top, scale[i])
    for i in range(nz):
        ratio = min(ratio, abs(w[i]) / max(top, 1e-300))
    if not ratio > SINGULAR_RTOL:
        return -1.0
    for i in range(nz):
        D[i] = 1.0 if w[i] > 0 else -1.0
        root = np.sqrt(abs(w[i]))
        for j in range(nz):
            Li[i, j] = V[j, i] / root
    return ratio


@njit(cache=True, inline="always", error_model="numpy")
def _cholesky_rows(H, sgn, nz, maxn, L, ok, T):
    """Lower Cholesky factor of ``sgn H[:nz, :nz]`` (rows ``i * maxn + j``) into ``L``, any width (the
    operations of :func:`_cholesky` on ``sgn H``, each lane going on past a failed pivot); ``ok[w]`` False
    where lane ``w``'s pivot is not positive.  ``T``: a scratch row."""
    for j in range(nz):
        v.scaled(T, 0, sgn, H, j * maxn + j)
        for k in range(j):
            v.sub_mul(T, 0, L, j * maxn + k, L, j * maxn + k)
        for w in range(v.width(T)):
            if not v.lane(T, 0, w) > 0.0:
                ok[w] = False
        v.sqrt(L, j * maxn + j, T, 0)
        for i in range(j + 1, nz):
            v.scaled(T, 0, sgn, H, i * maxn + j)
            for k in range(j):
                v.sub_mul(T, 0, L, i * maxn + k, L, j * maxn + k)
            v.div(L, i * maxn + j, T, 0, L, j * maxn + j)



@njit(cache=True, inline="always", error_model="numpy")
def _lower_inverse_rows(L, nz, maxn, Li, T):
    """``Li = L^-1`` (rows ``i * maxn + j``), any width (:func:`_lower_inverse`'s operations)."""
    for j in range(nz):
        for i in range(nz):
            v.fill(Li, i * maxn + j, 0.0)
        v.inverse(Li, j * maxn + j, L, j * maxn + j)
        for i in range(j + 1, nz):
            v.fill(T, 0, 0.0)
            for k in range(j, i):
                v.sub_mul(T, 0, L, i * maxn + k, Li, k * maxn + j)
            v.div(Li, i * maxn + j, T, 0, L, i * maxn + i)



@njit(cache=True, inline="always", error_model="numpy")
def _step_ratio(L, scale, nz, maxn, sgn, r):
    """The step's smallest pivot ratio per lane into ``r``, -1 where a multiplier's falls below round-off
    (:func:`_pivot`'s rule)."""
    for w in range(v.width(L)):
        r[w] = np.inf
    for i in range(nz):
        for w in range(v.width(L)):
            d = v.lane(L, i * maxn + i, w)
            r[w] = min(r[w], d * d / max(v.lane(scale, i, w), 1e-300))
    if sgn < 0.0:
        for w in range(v.width(L)):
            if not r[w] > SINGULAR_RTOL:
                r[w] = -1.0



@njit(cache=True, inline="always", error_model="numpy")
def _pivot_block(H, sgn, nz, maxn, scale, L, Li, ok, T, r):
    """``sgn H[:nz, :nz] = L L'`` (rows ``i * maxn + j``), ``Linv`` into ``Li``, the pivot ratios against
    ``scale`` into ``r`` (:func:`_step_ratio`); ``ok[w]`` False where lane ``w``'s pivot is not positive
    (:func:`_pivot`'s definite and negative pivots, any width: :mod:`elimination.vectors`).  ``T``: a scratch
    row; ``r``, ``ok``: a value per lane."""
    for w in range(v.width(T)):
        ok[w] = True
    _cholesky_rows(H, sgn, nz, maxn, L, ok, T)
    _step_ratio(L, scale, nz, maxn, sgn, r)
    _lower_inverse_rows(L, nz, maxn, Li, T)



@njit(cache=True, **UNCOUNTED)
def _pivot(Hz, scale, nz, n_min, kind, Li, D, L, Lw, X):
    """``Hz = L D L'`` (``nz x nz``) into ``Li = L^-1`` and ``D``; the smallest pivot ratio, or -1 when a
    pivot is not of its sign or a multiplier's falls below round-off (the numpy rule refuses those).
    Arithmetic only, so it runs uncounted; an indefinite block goes to :func:`_indefinite_pivot`."""
    ratio = np.inf
    if kind == 4:
        return _indefinite_pivot(Hz, scale, nz, Li, D)
    if kind == 1 or kind == 2:
        sgn = 1.0 if kind == 1 else -1.0
        for i in range(nz):
            D[ix(i)] = sgn
            for j in range(nz):
                Lw[ix(i), ix(j)] = sgn * Hz[ix(i), ix(j)]
        if not _cholesky(Lw, nz, L):
            return -1.0
        for i in range(nz):
            ratio = min(ratio, L[ix(i), ix(i)] * L[ix(i), ix(i)] / max(scale[ix(i)], 1e-300))
        if kind == 2 and not ratio > SINGULAR_RTOL:
            return -1.0
        _lower_inverse(L, nz, Li)
        return ratio
    # quasi-definite: [[A, B], [B', C]] = [[L1, 0], [X', L2]] diag(I, -I) [[L1', X], [0, L2']]
    k = nz - n_min
    for i in range(n_min):
        for j in range(n_min):
            Lw[ix(i), ix(j)] = Hz[ix(i), ix(j)]
    if not _cholesky(Lw, n_min, L):
        return -1.0
    for c in range(k):  # X = L1^-1 B
        for i in range(n_min):
            t = Hz[ix(i), ix(n_min + c)]
            for q in range(i):
                t -= L[ix(i), ix(q)] * X[ix(q), ix(c)]
            X[ix(i), ix(c)] = t / L[ix(i), ix(i)]
    for i in range(n_min):
        D[ix(i)] = 1.0
        ratio = min(ratio, L[ix(i), ix(i)] * L[ix(i), ix(i)] / max(scale[ix(i)], 1e-300))
    for i in range(k):
        D[ix(n_min + i)] = -1.0
        for j in range(k):
            t = -Hz[ix(n_min + i), ix(n_min + j)]
            for q in range(n_min):
                t += X[ix(q), ix(i)] * X[ix(q), ix(j)]
            Lw[ix(n_min + i), ix(n_min + j)] = t
    L2 = L[n_min:nz, n_min:nz]
    if not _cholesky(Lw[n_min:nz, n_min:nz], k, L2):
        return -1.0
    ratio2 = np.inf
    for i in range(k):
        grown = scale[ix(n_min + i)]
        for q in range(n_min):
            grown += X[ix(q), ix(i)] * X[ix(q), ix(i)]
        ratio2 = min(ratio2, L2[i, i] * L2[i, i] / max(grown, 1e-300))
        for q in range(n_min):
            L[ix(n_min + i), ix(q)] = X[ix(q), ix(i)]
    if not ratio2 > SINGULAR_RTOL:
        return -1.0
    for i in range(n_min):
        for j in range(n_min, nz):
            L[ix(i), ix(j)] = 0.0
    _lower_inverse(L, nz, Li)
    return min(ratio, ratio2)


drop_stale_cache(__file__, v.__file__)
