"""The full SVD of a small block, allocation-free, for the compiled kernels.

A general substitution (:func:`elimination.gaussian.substitution`) needs the
rank-revealing SVD of the front's hard rows -- an ``18 x 6`` block in a
joint-space order of a loop mechanism -- with the complete left basis: its
last columns span the rows passed on.  ``np.linalg.svd`` in numba allocates
its outputs and calls LAPACK, whose set-up dominates at this size (six times the
arithmetic for ``18 x 6``: benchmarks/README.md).  Here, in place in the
caller's scratch:

1. Householder QR of the tall one of ``G`` and ``G'`` (``p x k``, ``p >= k``),
   its columns kept as rows (``Bt``), so every loop runs along contiguous memory;
2. one-sided Jacobi (Hestenes) on ``R`` (``k x k``): plane rotations of pairs of
   its columns until every pair is orthogonal to round-off, accumulated in ``V``;
   the columns' norms are the singular values, the columns themselves ``U S``.
   One-sided Jacobi after QR gives small singular values to high relative
   accuracy (Demmel & Veselic 1992), better than the bidiagonal QR of LAPACK;
3. ``U`` completed to ``p x p``: the reflectors applied to ``diag(U_R, I)``, over
   their nonzero entries (a link's rows are scaled identities: a few per reflector).

The singular vectors of a repeated or zero singular value are a basis of
their subspace, not LAPACK's: the callers use only projections that do not
depend on the basis (the pseudo-inverse, the null spaces).

Example
-------
>>> import numpy as np
>>> G = np.random.default_rng(0).normal(size=(5, 3))
>>> k, p = 3, 5
>>> Bt, Ut, Vt, Rt = np.zeros((k, p)), np.zeros((p, p)), np.zeros((k, k)), np.zeros((k, k))
>>> s, tau, nzv = np.zeros(k), np.zeros(k), np.zeros((k, p + 1), dtype=np.int64)
>>> load_tall(G, 5, 3, Bt)
>>> svd_rows(Bt, p, k, Rt, Ut, Vt, s, tau, nzv)
True
>>> bool(np.allclose(s, np.linalg.svd(G, compute_uv=False)))
True
>>> bool(np.allclose((Ut[:k].T * s) @ Vt, G))
True
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba import uint64 as ix  # unsigned indices: no negative-index wrap (elimination.compiled)

SWEEPS = 60  # Jacobi sweeps before giving up (6 x 6 blocks converge in 5 to 7)
EPS = 2.220446049250313e-16


@njit(cache=True, inline="always")
def load_tall(G, m, n, Bt):
    """``Bt``'s rows = the columns of the tall one of ``G[:m, :n]`` and its transpose: ``G``'s columns
    when ``m >= n`` (``Bt: (n, m)``), else its rows (``Bt: (m, n)``)."""
    if m >= n:
        for i in range(m):
            for j in range(n):
                Bt[ix(j), ix(i)] = G[ix(i), ix(j)]
    else:
        for i in range(m):
            for j in range(n):
                Bt[ix(i), ix(j)] = G[ix(i), ix(j)]


@njit(cache=True, inline="always")
def _householder(Bt, p, k, tau):
    """QR of ``B (p x k)`` stored by columns in ``Bt``: ``R`` on and above the diagonal (``R[a, b] =
    Bt[b, a]``), reflector ``j``'s ``v`` (``v_j = 1``) in ``Bt[j, j+1:]`` and ``tau[j]`` (LAPACK's
    ``dgeqrf`` convention: ``H_j = I - tau v v'``)."""
    for j in range(k):
        x0 = Bt[ix(j), ix(j)]
        tail = 0.0
        for i in range(j + 1, p):
            tail += Bt[ix(j), ix(i)] * Bt[ix(j), ix(i)]
        if tail == 0.0:  # nothing below the diagonal: no reflection
            tau[ix(j)] = 0.0
            continue
        beta = -np.copysign(np.sqrt(x0 * x0 + tail), x0)
        tau[ix(j)] = (beta - x0) / beta
        inv = 1.0 / (x0 - beta)
        for i in range(j + 1, p):
            Bt[ix(j), ix(i)] *= inv
        Bt[ix(j), ix(j)] = beta
        for c in range(j + 1, k):  # H_j on the columns to the right
            w = Bt[ix(c), ix(j)]
            for i in range(j + 1, p):
                w += Bt[ix(j), ix(i)] * Bt[ix(c), ix(i)]
            w *= tau[ix(j)]
            if w != 0.0:  # (structured rows: most columns miss most reflectors)
                Bt[ix(c), ix(j)] -= w
                for i in range(j + 1, p):
                    Bt[ix(c), ix(i)] -= w * Bt[ix(j), ix(i)]


@njit(cache=True, inline="always")
def _rotate(X, a, b, c, s, n):
    """Rows ``a, b`` of ``X`` to ``c x_a - s x_b`` and ``s x_a + c x_b``."""
    for i in range(n):
        xa, xb = X[ix(a), ix(i)], X[ix(b), ix(i)]
        X[ix(a), ix(i)] = c * xa - s * xb
        X[ix(b), ix(i)] = s * xa + c * xb


@njit(cache=True, inline="always")
def _jacobi(Rt, Vt, k, small):
    """One-sided Jacobi on the columns of ``R`` (rows of ``Rt``, ``k x k``), the rotations accumulated in
    ``Vt`` (``V``'s columns as rows, from ``I``).  A column of norm ``small`` or less is round-off of a
    zero one, its direction noise: it is not rotated (it could never be made orthogonal to round-off
    relative to its own length) and is completed afterwards.  False if a pair is still not orthogonal
    after :data:`SWEEPS` sweeps."""
    for i in range(k):
        for j in range(k):
            Vt[ix(i), ix(j)] = 1.0 if i == j else 0.0
    for _ in range(SWEEPS):
        rotated = False
        for a in range(k - 1):
            for b in range(a + 1, k):
                alpha, beta, gamma = 0.0, 0.0, 0.0
                for i in range(k):
                    alpha += Rt[ix(a), ix(i)] * Rt[ix(a), ix(i)]
                    beta += Rt[ix(b), ix(i)] * Rt[ix(b), ix(i)]
                    gamma += Rt[ix(a), ix(i)] * Rt[ix(b), ix(i)]
                if not abs(gamma) > EPS * np.sqrt(alpha) * np.sqrt(beta) or min(alpha, beta) <= small * small:
                    continue  # orthogonal to round-off, or a zero column
                rotated = True
                zeta = (beta - alpha) / (2.0 * gamma)
                if abs(zeta) > 1e150:  # (1 + zeta^2 would overflow)
                    t = 0.5 / zeta
                else:
                    t = np.copysign(1.0, zeta) / (abs(zeta) + np.sqrt(1.0 + zeta * zeta))
                c = 1.0 / np.sqrt(1.0 + t * t)
                _rotate(Rt, a, b, c, c * t, k)
                _rotate(Vt, a, b, c, c * t, k)
        if not rotated:
            return True
    return False


@njit(cache=True, inline="always")
def _swap_rows(X, a, b, n):
    for i in range(n):
        X[ix(a), ix(i)], X[ix(b), ix(i)] = X[ix(b), ix(i)], X[ix(a), ix(i)]


@njit(cache=True, inline="always")
def _normalize_or_complete(Rt, s, k, small):
    """The rows of ``Rt`` (``U S``'s columns, sorted by ``s``) to unit length; those of a singular value
    ``small`` or less (round-off of zero) replaced by unit vectors orthogonal to all others (Gram-Schmidt,
    twice, of the coordinate vector that keeps most of its length)."""
    for a in range(k):
        if s[ix(a)] > small:
            for i in range(k):
                Rt[ix(a), ix(i)] /= s[ix(a)]
    for a in range(k):
        if s[ix(a)] > small:
            continue
        best, best_norm = 0, -1.0
        for e in range(k):  # the coordinate vector least in the span of the rows kept so far
            left = 1.0
            for b in range(k):
                if b != a and (s[ix(b)] > small or b < a):
                    left -= Rt[ix(b), ix(e)] * Rt[ix(b), ix(e)]
            if left > best_norm:
                best, best_norm = e, left
        for i in range(k):
            Rt[ix(a), ix(i)] = 1.0 if i == best else 0.0
        for _ in range(2):
            for b in range(k):
                if b != a and (s[ix(b)] > small or b < a):
                    d = 0.0
                    for i in range(k):
                        d += Rt[ix(a), ix(i)] * Rt[ix(b), ix(i)]
                    for i in range(k):
                        Rt[ix(a), ix(i)] -= d * Rt[ix(b), ix(i)]
            norm = 0.0
            for i in range(k):
                norm += Rt[ix(a), ix(i)] * Rt[ix(a), ix(i)]
            norm = np.sqrt(norm)
            for i in range(k):
                Rt[ix(a), ix(i)] /= norm


@njit(cache=True, inline="always")
def _reflector_entries(Bt, p, k, nzv):
    """``nzv[j] = (count, i...)``: the rows ``i > j`` where reflector ``j``'s vector is nonzero (structured
    rows -- a link's scaled identities -- give each reflector a few of them)."""
    for j in range(k):
        count = 0
        for i in range(j + 1, p):
            if Bt[ix(j), ix(i)] != 0.0:
                count += 1
                nzv[ix(j), ix(count)] = i
        nzv[ix(j), 0] = count


@njit(cache=True, inline="always")
def _complete_left(Bt, tau, Rt, Ut, p, k, nzv):
    """``U = Q diag(U_R, I)`` (``p x p``) by its columns as rows of ``Ut``: each row the reflectors applied,
    last to first, to the column it starts from, over the reflectors' nonzero entries ``nzv`` only (the
    same sums, their zero terms left out)."""
    _reflector_entries(Bt, p, k, nzv)
    for c in range(p):
        for i in range(p):
            Ut[ix(c), ix(i)] = 0.0
        if c < k:
            for i in range(k):
                Ut[ix(c), ix(i)] = Rt[ix(c), ix(i)]
        else:
            Ut[ix(c), ix(c)] = 1.0
        for j in range(k - 1, -1, -1):
            w = Ut[ix(c), ix(j)]
            for a in range(1, nzv[ix(j), 0] + 1):
                i = nzv[ix(j), ix(a)]
                w += Bt[ix(j), ix(i)] * Ut[ix(c), ix(i)]
            w *= tau[ix(j)]
            if w != 0.0:
                Ut[ix(c), ix(j)] -= w
                for a in range(1, nzv[ix(j), 0] + 1):
                    i = nzv[ix(j), ix(a)]
                    Ut[ix(c), ix(i)] -= w * Bt[ix(j), ix(i)]


@njit(cache=True, _nrt=False)  # called: inlined, numba's inliner copied it to three places of a substitution
def svd_rows(Bt, p, k, Rt, Ut, Vt, s, tau, nzv):
    """The full SVD ``B = U diag(s) V'`` of ``B (p x k, p >= k)`` given by its columns as the rows of
    ``Bt (k, p)`` (overwritten): ``Ut (p, p)`` and ``Vt (k, k)`` hold ``U``'s and ``V``'s columns as rows,
    ``s (k,)`` descends; ``Rt (k, k)``, ``tau (k,)`` and the integers ``nzv (k, p + 1)`` are scratch.
    False when Jacobi did not converge (the caller takes LAPACK's path).  See the module text;
    :func:`load_tall` fills ``Bt``."""
    _householder(Bt, p, k, tau)
    norm = 0.0
    for a in range(k):  # R's columns as rows
        for i in range(k):
            Rt[ix(a), ix(i)] = Bt[ix(a), ix(i)] if i <= a else 0.0
            norm += Rt[ix(a), ix(i)] * Rt[ix(a), ix(i)]
    small = k * EPS * np.sqrt(norm)  # LAPACK's absolute accuracy of singular values, eps |B|
    if not _jacobi(Rt, Vt, k, small):
        return False
    for a in range(k):
        t = 0.0
        for i in range(k):
            t += Rt[ix(a), ix(i)] * Rt[ix(a), ix(i)]
        s[ix(a)] = np.sqrt(t)
    for a in range(k):  # descending (selection: k is small)
        top = a
        for b in range(a + 1, k):
            if s[ix(b)] > s[ix(top)]:
                top = b
        if top != a:
            s[ix(a)], s[ix(top)] = s[ix(top)], s[ix(a)]
            _swap_rows(Rt, a, top, k)
            _swap_rows(Vt, a, top, k)
    _normalize_or_complete(Rt, s, k, small)
    _complete_left(Bt, tau, Rt, Ut, p, k, nzv)
    return True
