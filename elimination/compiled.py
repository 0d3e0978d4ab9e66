"""The compiled executor: numba kernels that run a :class:`~elimination.program.Program`.

One kernel factorizes (every step of the program, for every batch element),
one solves (the forward sweep of the linear terms, then back-substitution).
Both interpret the program's integer step table over flat per-state
workspaces, so nothing is compiled per plan: the kernels are compiled once,
announced on stderr the first time, and cached on disk (``@njit(cache=True)``).

The arithmetic is the numpy rule's (:mod:`elimination.gaussian`): a declared
``+-I`` substitution gives ``T = -+A_S``, a general one the rank-revealing
SVD of the unit-origin rows (:mod:`elimination.jacobi`: QR and one-sided
Jacobi in the scratch, three times faster than LAPACK's at these sizes; the
bases of repeated or zero singular values differ from LAPACK's, the
projections the rule uses do not) with the rows left over passed on or dropped; the
pivot block is factorized ``L D L'`` (Cholesky, of ``-H`` for multipliers,
block LDL' for quasi-definite fronts, an eigendecomposition for indefinite
ones) with ``Y = L^-1 H_zS`` and ``H_SS - Y' D Y``.  Each element reports its
smallest pivot relative to the magnitude of its contributions; a pivot the
numpy rule refuses, or a substitution whose numerical rank falls short of the
plan's, stops it (the caller then takes the numpy path, which names the
variables or re-plans the element).  The solve reports the dropped rows'
right-hand sides, which the caller checks for consistency.

A batch of at least :data:`~elimination.lanes.LANES` (sixteen) graphs whose
program has no hard rows, pairs or indefinite pivots runs in
:mod:`elimination.lanes` instead: the same operations with that many elements
side by side, bit for bit these kernels' numbers.

:class:`CompiledFactorization` is a :class:`~elimination.numeric.Factorization`
whose sweeps run here; overrides, refinement, verification of suspect pivots
and error messages are shared with the numpy path.

The per-step loops read the step table by ``(step, column)`` and call helpers
with one exit: numba counts references to every array view and to an inlined
helper's arrays with atomic instructions unless it can prove them redundant,
and those counts, not the arithmetic, were most of the time (see
:func:`_revolute_pair`).  The per-element kernels (:func:`factorize_one`,
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
from numba import uint64 as ix  # an index as unsigned: no negative-index wrap (module docstring)

from .gaussian import RANK_RTOL, SINGULAR_RTOL  # numba freezes module globals: the numpy rule's tolerances
from . import jacobi
from .jacobi import load_tall, svd_rows
from .program import (F, KEEP_MIRRORED, KEEP_NONE, PIVOTS, START_CARRIED, START_LEFT, START_SPREAD, Op)

INDEFINITE = PIVOTS["indefinite"]  # the one pivot whose Linv is not lower triangular (an eigendecomposition's)
_ANNOUNCED: set = set()  # (module, kernel) pairs announced in this process
COUNTED, UNCOUNTED = {"_nrt": True}, {"_nrt": False}  # numba's reference counting on / off (module docstring)

NF, NS, IDENTITY, PIVOT, NMIN, M, R, P, D_, NZ = (F[k] for k in ("nF", "nS", "identity", "pivot", "n_min", "m", "r", "p", "d", "nz"))
H0, H1, S0, S1, A0, A1, W0, W1 = (F[k] for k in ("h0", "h1", "s0", "s1", "a0", "a1", "w0", "w1"))
OUT_H, OUT_S, OUT_A, E0, E1 = (F[k] for k in ("out_H", "out_s", "out_A", "e0", "e1"))
T_, HF_, LINV, Y_, DS, WW, NN, EE, ED, RS = (F[k] for k in ("T", "HF", "Linv", "Y", "D", "W", "N", "E", "Ed", "RS"))
G0, G1, B0, B1, OUT_G, OUT_B = (F[k] for k in ("g0", "g1", "b0", "b1", "out_g", "out_b"))
TC, YC, DROP = (F[k] for k in ("t", "y", "drop"))
XF0, XF1, XS0, XS1 = (F[k] for k in ("xf0", "xf1", "xs0", "xs1"))
OP, START, KEEP, UROW = F["op"], F["start"], F["keep"], F["unit_row"]
TQ, TN, TSIG, TP, PB0, PB1, PH0, PH1, PS0, PS1, PG0, PG1 = (
    F[k] for k in ("tq", "tn", "tsig", "tp", "pb0", "pb1", "ph0", "ph1", "ps0", "ps1", "pg0", "pg1"))
OP_FRONT, OP_PIVOT, OP_UNIT, OP_TREE, OP_REVOLUTE, OP_WIDE_REVOLUTE, OP_FUSED = (  # (as ints: numba freezes them)
    int(op) for op in (Op.FRONT, Op.PIVOT, Op.UNIT, Op.TREE_PAIR, Op.REVOLUTE_PAIR, Op.WIDE_REVOLUTE, Op.FUSED))


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


@njit(cache=True, inline="always")
def _nonzero_columns(T, nF, nS, Tnz):
    """``Tnz[ix(q)] = (count, columns...)`` of the nonzero entries of row ``q`` of ``T (nF x nS)``.  A
    substitution's ``T`` is mostly zeros (a tree joint's ``[-+D, sigma I]``: two entries a row, zero columns
    for the separator's other variables): the products below run over these entries only, each one an
    update of a whole row or column, so that the inner loops have the separator's length."""
    for q in range(nF):
        k = 0
        for j in range(nS):
            if T[ix(q), ix(j)] != 0.0:
                k += 1
                Tnz[ix(q), ix(k)] = j
        Tnz[ix(q), 0] = k


@njit(cache=True, inline="always")
def _front_times_T(H, T, Tnz, HFT, nF, nS):
    """``HFT = H_FF T + H_FS``: the front's rows of the Hessian after the substitution ``x_F = T x_S + ...``."""
    for i in range(nF):
        for j in range(nS):
            HFT[ix(i), ix(j)] = H[ix(i), ix(nF + j)]
        for q in range(nF):
            h = H[ix(i), ix(q)]
            for a in range(1, Tnz[ix(q), 0] + 1):
                j = Tnz[ix(q), ix(a)]
                HFT[ix(i), ix(j)] += h * T[ix(q), ix(j)]


@njit(cache=True, inline="always")
def _substituted_separator(H, T, Tnz, HFT, scale, nF, nS):
    """``H_SS += T' HFT + H_SF T`` (``= T' H_FF T + T' H_FS + H_SF T``, symmetric) in its upper triangle (all
    that is read of ``H_SS``: :func:`_generic_step`), and ``scale_S += (T^2)' scale_F``.  Row ``i`` of the
    update is ``T[q, i] HFT[q, :] + H_FS[q, i] T[q, :]`` summed over the front's rows ``q``: contiguous rows,
    half the products of the full square."""
    for q in range(nF):
        for i in range(nS):
            a, b = T[ix(q), ix(i)], H[ix(q), ix(nF + i)]
            if a == 0.0 and b == 0.0:
                continue
            for j in range(i, nS):
                H[ix(nF + i), ix(nF + j)] += a * HFT[ix(q), ix(j)] + b * T[ix(q), ix(j)]
        for a in range(1, Tnz[ix(q), 0] + 1):
            i = Tnz[ix(q), ix(a)]
            scale[ix(nF + i)] += T[ix(q), ix(i)] * T[ix(q), ix(i)] * scale[ix(q)]


@njit(cache=True, inline="always")
def _front_mirrored(H, nF, n):
    """The front's columns of ``H`` (``n x nF``: its block and ``H_SF``, which a substitution keeps as ``HF``)
    made from its rows: a carried front (:func:`_generic_step`) brings only the upper triangle of the block
    the step before left, and nothing reads the lower one of ``H_SS``."""
    for i in range(n):
        for j in range(min(i, nF)):
            H[ix(i), ix(j)] = H[ix(j), ix(i)]


@njit(cache=True, inline="always")
def _singular_vectors(G, m, n, work, s, tau, nzv):
    """The full SVD of ``G[:m, :n]`` (:mod:`elimination.jacobi`) in the scratch ``work = (Bt, Rt, Ut,
    Vt)``: returns ``(converged, U_rows, V_rows)``, the scratch blocks whose row ``c`` is the ``c``-th left
    (length ``m``) and right (length ``n``) singular vector, ``s`` descending.  ``tau``, ``nzv`` are
    scratch."""
    Bt, Rt, Ut, Vt = work
    load_tall(G, m, n, Bt)
    if not svd_rows(Bt, max(m, n), min(m, n), Rt, Ut, Vt, s, tau, nzv):
        return False, Ut, Vt
    if m >= n:
        return True, Ut, Vt
    return True, Vt, Ut  # the SVD of G' = U S V' is G = V S U'


@njit(cache=True, inline="always")
def _unit_leftover(A, unit, r0, nF, m, sgn, E):
    """``E`` of a ``+-I`` substitution through rows ``r0 : r0 + nF`` of ``A`` (sign ``sgn``) with rows left over
    (:func:`elimination.gaussian.unit_substitution`): row ``o`` with the front eliminated, in unit-origin units."""
    k = 0
    for o in range(m):
        if o < r0 or o >= r0 + nF:
            for j in range(m):
                E[ix(k), ix(j)] = 0.0
            E[ix(k), ix(o)] = unit[ix(o)]
            for j in range(nF):
                E[ix(k), ix(r0 + j)] = (-sgn * A[ix(o), ix(j)]) * unit[ix(o)]
            k += 1


@njit(cache=True, **UNCOUNTED)
def _substitute(row, H, A, unit, scale, check_rank, Wm, Nm, Ek, Ed, T, Tnz, HFT, Hz, sz, Hzs, work, sv):
    """A general substitution (elimination.gaussian.substitution and split_leftover) on the front in
    ``H``, ``A``; fills ``W, N, E_keep, E_drop, T``, the reduced pivot block ``Hz``, ``Hzs`` and its scales,
    and updates the separator block of ``H`` and ``scale``.  False when the numerical rank falls short
    (or, never seen, Jacobi did not converge: the numpy path then decides).

    The SVDs run in ``work`` (four free scratch blocks) and ``sv``; ``Hz`` holds the unit-origin rows,
    then the rows left over, ``sz`` the reflectors' factors and ``Tnz`` their nonzero entries, until
    they are written last."""
    nF, nS, m, r, p, d = row[NF], row[NS], row[M], row[R], row[P], row[D_]
    nz = nF - r
    E = Ek if d == 0 else (Ed if p == 0 else Hz)  # (split: E in Hz, then its kept and dropped parts)
    if r == 0:  # nothing to substitute: the front keeps its coordinates (a quasi-definite split needs them)
        for i in range(nF):
            for j in range(m):
                Wm[ix(i), ix(j)] = 0.0
            for j in range(nz):
                Nm[ix(i), ix(j)] = 1.0 if i == j else 0.0
        for i in range(m):
            for j in range(m):
                E[ix(i), ix(j)] = unit[ix(i)] if i == j else 0.0
    else:
        for i in range(m):  # the unit-origin rows
            for j in range(nF):
                Hz[ix(i), ix(j)] = unit[ix(i)] * A[ix(i), ix(j)]
        ok, Ur, Vr = _singular_vectors(Hz, m, nF, work, sv, sz, Tnz)
        if not ok or (check_rank and not sv[r - 1] > RANK_RTOL):
            return False
        for i in range(nF):  # W = V_r S_r^-1 U_r' (unit), N = V[:, r:], E = U[:, r:]' (unit)
            for j in range(m):
                Wm[ix(i), ix(j)] = 0.0
            for q in range(r):  # (a row of U' at a time: they are mostly zeros for structured rows)
                c = Vr[ix(q), ix(i)] / sv[ix(q)]
                if c != 0.0:
                    for j in range(m):
                        Wm[ix(i), ix(j)] += c * Ur[ix(q), ix(j)]
            for j in range(m):
                Wm[ix(i), ix(j)] *= unit[ix(j)]
            for j in range(nz):
                Nm[ix(i), ix(j)] = Vr[ix(r + j), ix(i)]
        for i in range(m - r):
            for j in range(m):
                E[ix(i), ix(j)] = Ur[ix(r + i), ix(j)] * unit[ix(j)]
    if d != 0 and p != 0:  # the left-over rows split by the rank of what they leave on the separator
        for i in range(m - r):  # E A_S, into Hzs (written last)
            for j in range(nS):
                t = 0.0
                for a in range(m):
                    t += E[ix(i), ix(a)] * A[ix(a), ix(nF + j)]
                Hzs[ix(i), ix(j)] = t
        ok, UL, _ = _singular_vectors(Hzs, m - r, nS, work, sv, sz, Tnz)
        if not ok:
            return False
        for i in range(m - r):
            for j in range(m):
                t = 0.0
                for a in range(m - r):
                    t += UL[ix(i), ix(a)] * E[ix(a), ix(j)]
                if i < p:
                    Ek[ix(i), ix(j)] = t
                else:
                    Ed[ix(i - p), ix(j)] = t
    for i in range(nF):  # T = -W A_S, a row of A_S at a time (W of structured rows is mostly zeros)
        for j in range(nS):
            T[ix(i), ix(j)] = 0.0
        for q in range(m):
            w = Wm[ix(i), ix(q)]
            if w != 0.0:
                for j in range(nS):
                    T[ix(i), ix(j)] -= w * A[ix(q), ix(nF + j)]
    _nonzero_columns(T, nF, nS, Tnz)
    _front_times_T(H, T, Tnz, HFT, nF, nS)
    for i in range(nz):  # Hz = N' H_FF N, Hzs = N' HFT, sz = (N^2)' scale_F
        for j in range(nz):
            t = 0.0
            for a in range(nF):
                for b in range(nF):
                    t += Nm[ix(a), ix(i)] * H[ix(a), ix(b)] * Nm[ix(b), ix(j)]
            Hz[ix(i), ix(j)] = t
        for j in range(nS):
            t = 0.0
            for a in range(nF):
                t += Nm[ix(a), ix(i)] * HFT[ix(a), ix(j)]
            Hzs[ix(i), ix(j)] = t
        t = 0.0
        for a in range(nF):
            t += Nm[ix(a), ix(i)] * Nm[ix(a), ix(i)] * scale[ix(a)]
        sz[ix(i)] = t
    _substituted_separator(H, T, Tnz, HFT, scale, nF, nS)
    return True


@njit(cache=True)
def started_error(change: float, ratio: float) -> float:
    """The relative error a solve started from given values may have after its last step: the step solved
    for a correction ``change`` times the solution with the digits its pivots lose, ``eps / ratio`` for a
    smallest pivot ratio ``ratio`` (the size of the cancellation at the weakest pivot)."""
    eps = 2.220446049250313e-16
    return change * eps / max(min(ratio, 1.0), eps)


def factorize_scratch_size(maxn: int) -> tuple:
    """Floats and ints of :func:`factorize_scratch_in` for fronts up to ``maxn`` wide."""
    return 14 * maxn * maxn + 4 * maxn, maxn * (maxn + 1)


@njit(cache=True, inline="always")  # (its caller's reference counting, on or off)
def factorize_scratch_in(floats, ints, maxn):
    """The scratch matrices of :func:`factorize_one` for fronts up to ``maxn`` wide, as views of ``floats``
    and ``ints`` (:func:`factorize_scratch_size`): a caller that keeps them allocates nothing per call."""
    m = floats[: 14 * maxn * maxn].reshape((14, maxn, maxn))
    v = floats[14 * maxn * maxn: 14 * maxn * maxn + 4 * maxn].reshape((4, maxn))
    return (m[0], m[1], v[0], v[1], m[2], m[3], m[4], m[5], v[2], m[6], m[7], m[8], m[9], m[10], m[11], m[12], m[13],
            v[3], ints[: maxn * (maxn + 1)].reshape((maxn, maxn + 1)))


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
def _generic_step(maps, st, Fw, C, floor, check_rank, scratch, Hf, Af):
    """One generic step ``st`` of :func:`factorize_one` (a wide pair's halves among them: the joint half
    starts from the front its link half left in ``H``): its front gathered, substituted and pivoted, its
    conditionals into ``C``, its generated factor into ``Fw``.  Returns ``(ratio, failed)``: its pivot ratio
    (inf without a pivot) and -1, or the failure :func:`factorize_one` reports (``st``: a refused pivot,
    ``-2 - st``: a substitution's rank short of the plan's)."""
    steps, hs, hd, ss, sd, as_, ad, ws, wd, es, ed = maps[:11]
    H, A, scale, unit, L, Lw, Li, X, Dv, T, HFT, Wm, Nm, Ek, Ed, Hz, Hzs, sz, Tnz = scratch
    start, step_ratio = steps[st, START], np.inf
    row = steps[st]
    nF, nS, m, nz = row[NF], row[NS], row[M], row[NZ]
    n = nF + nS
    carried = 0  # the front's rows that the step before left: their factor is not gathered (program._carried)
    if start == START_LEFT:  # the front is the separator block the link half left (program._wide_pair)
        o = steps[st - 1, NF]
        for i in range(n):  # (moved up and left, row by row: nothing is read after it is written)
            scale[ix(i)] = scale[ix(o + i)]
            for j in range(n):
                H[ix(i), ix(j)] = H[ix(o + i), ix(o + j)]
    elif start == START_CARRIED:  # the front is the generated factor the step before left in its upper triangle
        o, carried = steps[st - 1, NF], n
        for i in range(n):  # (moved up and left: no entry is read after it is written)
            scale[ix(i)] = scale[ix(o + i)]
            for j in range(i, n):
                H[ix(i), ix(j)] = H[ix(o + i), ix(o + j)]
        _front_mirrored(H, nF, n)
    elif start == START_SPREAD:  # that factor spread onto its positions in a wider front (its scale gather's)
        o, carried = steps[st - 1, NF], steps[st - 1, NS]
        for i in range(carried):  # (through X, Dv: the positions may lie on either side of the block)
            Dv[ix(i)] = scale[ix(o + i)]
            for j in range(i, carried):
                X[ix(i), ix(j)] = H[ix(o + i), ix(o + j)]
        for i in range(n):
            scale[ix(i)] = 0.0
            for j in range(i, n):
                H[ix(i), ix(j)] = 0.0
        for i in range(carried):
            pi = sd[ix(row[S0] + i)]
            scale[ix(pi)] = Dv[ix(i)]
            for j in range(i, carried):
                H[ix(pi), ix(sd[ix(row[S0] + j)])] = X[ix(i), ix(j)]
        _front_mirrored(H, nF, n)
    else:
        for i in range(n):
            scale[ix(i)] = 0.0
            for j in range(n):
                H[ix(i), ix(j)] = 0.0
    for q in range(row[H0] + carried * carried, row[H1]):  # (the carried factor's entries lead)
        Hf[ix(hd[ix(q)])] += Fw[ix(hs[ix(q)])]
    for q in range(row[S0] + carried, row[S1]):
        scale[ix(sd[ix(q)])] += Fw[ix(ss[ix(q)])]
    for i in range(n):
        scale[ix(i)] = max(scale[ix(i)], floor)
    if m:
        for i in range(m):
            for j in range(n):
                A[ix(i), ix(j)] = 0.0
        for q in range(row[A0], row[A1]):
            Af[ix(ad[ix(q)])] = Fw[ix(as_[ix(q)])]
        for q in range(row[W0], row[W1]):
            unit[ix(wd[ix(q)])] = Fw[ix(ws[ix(q)])]
        for i in range(n):  # HF, kept for the forward sweep's g - HF t
            for j in range(nF):
                C[ix(row[HF_] + i * nF + j)] = H[ix(i), ix(j)]
    if row[IDENTITY] != 0:
        sgn, r0 = float(row[IDENTITY]), row[UROW]
        for i in range(nF):  # T = -W A_S with W = sign I on the declared rows
            for j in range(nS):
                T[ix(i), ix(j)] = -sgn * A[ix(r0 + i), ix(nF + j)]
        _nonzero_columns(T, nF, nS, Tnz)
        _front_times_T(H, T, Tnz, HFT, nF, nS)
        _substituted_separator(H, T, Tnz, HFT, scale, nF, nS)
        if m > nF:  # the rows left over, all passed on or all dropped (symbolic._identity)
            _unit_leftover(A, unit, r0, nF, m, sgn, Ek if row[D_] == 0 else Ed)
    elif m:
        if not _substitute(row, H, A, unit, scale, check_rank, Wm, Nm, Ek, Ed, T, Tnz, HFT, Hz, sz, Hzs,
                           (Lw, X, L, Li), Dv):
            return np.inf, -2 - st
        for i in range(nF):
            for j in range(m):
                C[ix(row[WW] + i * m + j)] = Wm[ix(i), ix(j)]
            for j in range(nz):
                C[ix(row[NN] + i * nz + j)] = Nm[ix(i), ix(j)]
    if row[RS] >= 0:  # rows left over (program._step_row): their combinations, those passed on
        for i in range(m):
            C[ix(row[RS] + i)] = unit[ix(i)]
        for i in range(row[P]):
            for j in range(m):
                C[ix(row[EE] + i * m + j)] = Ek[ix(i), ix(j)]
        for i in range(row[D_]):
            for j in range(m):
                C[ix(row[ED] + i * m + j)] = Ed[ix(i), ix(j)]
        if row[OUT_A] >= 0:  # the rows passed on, on the plan's equality columns; unit rows
            k = row[E1] - row[E0]
            for i in range(row[P]):  # E_keep A_S a row of A_S at a time (E of structured rows is mostly zeros)
                Fw[ix(row[OUT_A] + row[P] * k + i)] = 1.0  # their row scales (right after the block)
                out = row[OUT_A] + i * k
                for q in range(row[E0], row[E1]):
                    Fw[ix(out + ed[ix(q)])] = 0.0
                for a in range(m):
                    e = Ek[ix(i), ix(a)]
                    if e != 0.0:
                        for q in range(row[E0], row[E1]):
                            Fw[ix(out + ed[ix(q)])] += e * A[ix(a), ix(nF + es[ix(q)])]
    if m:
        for i in range(nF):
            for j in range(nS):
                C[ix(row[T_] + i * nS + j)] = T[ix(i), ix(j)]
    if nz:
        if m:  # the reduced block after the substitution
            r = _pivot(Hz, sz, nz, row[NMIN], row[PIVOT], Li, Dv, L, Lw, X)
        else:
            for i in range(nz):
                for j in range(nS):
                    Hzs[ix(i), ix(j)] = H[ix(i), ix(nF + j)]
            r = _pivot(H, scale, nz, row[NMIN], row[PIVOT], Li, Dv, L, Lw, X)
        if r < 0.0:
            return r, st
        step_ratio = r
        for i in range(nz):
            C[ix(row[DS] + i)] = Dv[ix(i)]
            for j in range(nz):
                C[ix(row[LINV] + i * nz + j)] = Li[ix(i), ix(j)]
        # the loops run along rows (j innermost), so that large fronts stream through memory
        for i in range(nz):  # Y = Linv H_zS, Linv lower triangular except for indefinite pivots
            for j in range(nS):
                X[ix(i), ix(j)] = 0.0
            for q in range(nz if row[PIVOT] == INDEFINITE else i + 1):
                a = Li[ix(i), ix(q)]
                for j in range(nS):
                    X[ix(i), ix(j)] += a * Hzs[ix(q), ix(j)]
            for j in range(nS):
                C[ix(row[Y_] + i * nS + j)] = X[ix(i), ix(j)]
    if nz:  # H_SS -= Y' D Y in its upper triangle; scale_S += sum Y^2, a row of Y at a time
        for q in range(nz):
            d = Dv[ix(q)]
            for i in range(nS):
                a = d * X[ix(q), ix(i)]
                H[ix(nF + i), ix(nF + i)] -= a * X[ix(q), ix(i)]
                for j in range(i + 1, nS):
                    H[ix(nF + i), ix(nF + j)] -= a * X[ix(q), ix(j)]
                scale[ix(nF + i)] += X[ix(q), ix(i)] * X[ix(q), ix(i)]
    keep = row[KEEP]  # (what the next step starts from)
    if row[OUT_H] >= 0 and keep == KEEP_NONE:
        for i in range(nS):
            Fw[ix(row[OUT_S] + i)] = scale[ix(nF + i)]
            for j in range(i, nS):
                Fw[ix(row[OUT_H] + i * nS + j)] = Fw[ix(row[OUT_H] + j * nS + i)] = H[ix(nF + i), ix(nF + j)]
    elif keep == KEEP_MIRRORED:  # what the generated factor would hold, left in the front
        for i in range(nS):
            for j in range(i + 1, nS):
                H[ix(nF + j), ix(nF + i)] = H[ix(nF + i), ix(nF + j)]
    return step_ratio, -1


@njit(cache=True, **UNCOUNTED)
def factorize_one(maps, Fw, C, floor, check_rank, scratch):
    """Every step of the program on one element: its factor workspace ``Fw (factor_size,)``, conditionals
    into ``C (conditional_size,)``; ``maps`` from :func:`factorize_maps`, ``scratch`` from
    :func:`factorize_scratch_in`.

    Returns ``(ratio, weakest, failed)``: the smallest pivot ratio and its step; ``failed`` -1, or the
    step whose pivot the numpy rule refuses, or ``-2 - step`` where the numerical rank of a
    substitution falls short of the plan's (the caller then takes the numpy path).
    """
    steps, hs, hd, ss, sd, as_, ad, ws, wd, es, ed, pbH, pbs, phs, phd, pss, psd = maps
    H, A, scale, unit, L, Lw, Li, X, Dv, T, HFT, Wm, Nm, Ek, Ed, Hz, Hzs, sz, Tnz = scratch
    maxn = H.shape[0]
    Hf, Af = H.reshape(maxn * maxn), A.reshape(maxn * maxn)  # flat views: the gathers' destinations
    ratio, weak, failed = np.inf, -1, -1  # (one exit, no early return: see _revolute_pair)
    for st in range(steps.shape[0]):
        op = steps[st, OP]
        if op == OP_FUSED:  # run by its pair's instruction, just before
            continue
        if op == OP_REVOLUTE or op == OP_TREE or op == OP_WIDE_REVOLUTE:
            if op == OP_REVOLUTE:
                r = _revolute_pair(steps, st, pbH, pbs, phs, pss, Fw, C, floor, H, scale, unit, Dv)
            elif op == OP_TREE:
                r = _tree_pair(steps, st, pbH, pbs, phs, phd, pss, psd, Fw, C, floor, scratch)
            else:
                r = _wide_revolute_pair(steps, st, hs, hd, ss, sd, Fw, C, floor, H, Hf, scale, unit, sz, Dv)
            if r < 0.0:
                failed = st + 1
                break
            if r < ratio:
                ratio, weak = r, st + 1
            continue
        # FRONT, and PIVOT and UNIT as FRONT: the shorter roads are the lane kernels'
        r, fail = _generic_step(maps, st, Fw, C, floor, check_rank, scratch, Hf, Af)
        if fail != -1:
            failed = fail
            break
        if r < ratio:
            ratio, weak = r, st

    return ratio, weak, failed


@njit(cache=True)
def factorize_kernel(maps, Fw, C, floor, maxn, check_rank, ratio_out, weak_out, fail_out, floats, ints):
    """:func:`factorize_one` for every element of ``Fw (B, factor_size)``, conditionals into ``C (B, n)``;
    its scratch in ``floats``, ``ints`` (:func:`factorize_scratch_size`)."""
    scratch = factorize_scratch_in(floats, ints, maxn)
    for b in range(Fw.shape[0]):
        ratio_out[b], weak_out[b], fail_out[b] = factorize_one(maps, Fw[b], C[b], floor, check_rank, scratch)


SOLVE_SCRATCH = 6  # vectors of maxn floats


@njit(cache=True, inline="always")  # (its caller's reference counting, on or off)
def solve_scratch_in(floats, maxn):
    """The scratch vectors of :func:`solve_one`, as views of ``floats`` (``SOLVE_SCRATCH * maxn``)."""
    v = floats[: SOLVE_SCRATCH * maxn].reshape((SOLVE_SCRATCH, maxn))
    return v[0], v[1], v[2], v[3], v[4], v[5]


@njit(cache=True)
def solve_scratch(maxn):
    """The scratch vectors of :func:`solve_one`."""
    return solve_scratch_in(np.zeros(SOLVE_SCRATCH * maxn), maxn)


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
    # statement uses (its IR), one array here rather than the loop's two


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


@njit(cache=True, inline="always")
def _step_backward(steps, st, xss, xsd, xfs, xfd, C, cache, Xout, x, xs, g, gz):
    """Back-substitution of one generic step ``st``: ``x_F = t + T x_S + N z`` with ``z = D (y - Y x_S)``
    (``Linv' z`` where nothing is substituted), from the separator's values in ``Xout`` into the front's."""
    nF, nS, m, nz = steps[st, NF], steps[st, NS], steps[st, M], steps[st, NZ]
    for q in range(steps[st, XS0], steps[st, XS1]):
        xs[ix(xsd[ix(q)])] = Xout[ix(xss[ix(q)])]
    if nz:
        li, yy, ds, yc = steps[st, LINV], steps[st, Y_], steps[st, DS], steps[st, YC]
        for i in range(nz):  # z = D (y - Y x_S)
            t = cache[ix(yc + i)]
            for j in range(nS):
                t -= C[ix(yy + i * nS + j)] * xs[ix(j)]
            gz[ix(i)] = C[ix(ds + i)] * t
        for i in range(nz):  # Linv' z, along the rows of Linv
            g[ix(i)] = 0.0
        full = steps[st, PIVOT] == INDEFINITE
        for q in range(nz):
            zq = gz[ix(q)]
            for i in range(nz if full else q + 1):
                g[ix(i)] += C[ix(li + q * nz + i)] * zq
    if m:  # x = t + T x_S + N z
        tc, ts, nn = steps[st, TC], steps[st, T_], steps[st, NN]
        for i in range(nF):
            t = cache[ix(tc + i)]
            for j in range(nS):
                t += C[ix(ts + i * nS + j)] * xs[ix(j)]
            if steps[st, IDENTITY] == 0:
                for j in range(nz):
                    t += C[ix(nn + i * nz + j)] * g[ix(j)]
            x[ix(i)] = t
    else:
        for i in range(nF):
            x[ix(i)] = g[ix(i)]
    for q in range(steps[st, XF0], steps[st, XF1]):
        Xout[ix(xfs[ix(q)])] = x[ix(xfd[ix(q)])]


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


@njit(cache=True, inline="always")
def _step_forward(steps, st, gs, gd, bs, bd, C, Lin, Lmag, cache, dropped, g, bl, bm, gz):
    """The forward sweep of one generic step ``st`` (a wide pair's halves among them, the joint half starting
    from the separator terms its link half left in ``g``): ``g`` gathered, ``t = W b`` and ``g -= HF t``, the
    hard rows' passed-on and dropped terms, ``y = Linv g_z``, ``g_S - Y' D y`` into the generated linear term."""
    nF, nS, m, nz, ident = steps[st, NF], steps[st, NS], steps[st, M], steps[st, NZ], steps[st, IDENTITY]
    n = nF + nS
    if steps[st, START] == START_LEFT:  # the link half's separator terms, where it left them
        o = steps[st - 1, NF]
        for i in range(n):
            g[ix(i)] = g[ix(o + i)]
    else:
        for i in range(n):
            g[ix(i)] = 0.0
    for q in range(steps[st, G0], steps[st, G1]):
        g[ix(gd[ix(q)])] += Lin[ix(gs[ix(q)])]
    if m:
        tc, hf, ts = steps[st, TC], steps[st, HF_], steps[st, T_]
        for q in range(steps[st, B0], steps[st, B1]):
            bl[ix(bd[ix(q)])] = Lin[ix(bs[ix(q)])]
            bm[ix(bd[ix(q)])] = Lmag[ix(bs[ix(q)])]
        if ident != 0:  # t = W b with W = sign I on the declared rows
            r0 = steps[st, UROW]
            for i in range(nF):
                cache[ix(tc + i)] = ident * bl[ix(r0 + i)]
        else:
            w = steps[st, WW]
            for i in range(nF):
                t = 0.0
                for j in range(m):
                    t += C[ix(w + i * m + j)] * bl[ix(j)]
                cache[ix(tc + i)] = t
        for i in range(n):  # g -= HF t
            t = 0.0
            for j in range(nF):
                t += C[ix(hf + i * nF + j)] * cache[ix(tc + j)]
            g[ix(i)] -= t
        if nz:  # g_z = N' g_F
            nn = steps[st, NN]
            for j in range(nz):
                gz[ix(j)] = 0.0
            for i in range(nF):
                gi = g[ix(i)]
                for j in range(nz):
                    gz[ix(j)] += C[ix(nn + i * nz + j)] * gi
        for i in range(nF):  # g_S += T' g_F, along the rows of T
            gi = g[ix(i)]
            for j in range(nS):
                g[ix(nF + j)] += C[ix(ts + i * nS + j)] * gi
        if steps[st, P] or steps[st, D_]:
            top, total = 0.0, 0.0
            for j in range(m):
                u = C[ix(steps[st, RS] + j)] * bm[ix(j)]
                top = max(top, u)
                total += u * u
            for i in range(steps[st, P]):  # b_sep = E b, and the size it is made of
                t = 0.0
                for j in range(m):
                    t += C[ix(steps[st, EE] + i * m + j)] * bl[ix(j)]
                Lin[ix(steps[st, OUT_B] + i)] = t
                Lmag[ix(steps[st, OUT_B] + i)] = top
            for i in range(steps[st, D_]):  # dropped rows: E_drop b must vanish
                t = 0.0
                for j in range(m):
                    t += C[ix(steps[st, ED] + i * m + j)] * bl[ix(j)]
                dropped[ix(steps[st, DROP] + i)] = t
            if steps[st, D_]:
                dropped[ix(steps[st, DROP] + steps[st, D_])] = np.sqrt(total)
    else:
        for j in range(nz):
            gz[ix(j)] = g[ix(j)]
    if nz:
        li, yy, ds, yc = steps[st, LINV], steps[st, Y_], steps[st, DS], steps[st, YC]
        full = steps[st, PIVOT] == INDEFINITE  # (otherwise Linv is lower triangular)
        for i in range(nz):  # y = Linv g_z
            t = 0.0
            for q in range(nz if full else i + 1):
                t += C[ix(li + i * nz + q)] * gz[ix(q)]
            cache[ix(yc + i)] = t
        for i in range(nz):  # g_S -= Y' D y, along the rows of Y
            a = C[ix(ds + i)] * cache[ix(yc + i)]
            for j in range(nS):
                g[ix(nF + j)] -= C[ix(yy + i * nS + j)] * a
    out = steps[st, OUT_G]
    if out >= 0:
        for j in range(nS):
            Lin[ix(out + j)] = g[ix(nF + j)]

@njit(cache=True, **UNCOUNTED)
def solve_one(maps, C, Lin, Lmag, cache, Xout, dropped, scratch):
    """Forward sweep of one element's linear terms ``Lin (linear_size,)`` (with ``Lmag``, the size of the
    right-hand sides each hard row combines) through its conditionals ``C``, and back-substitution into
    ``Xout (value_size,)``; the dropped rows' residuals and sizes into ``dropped``; ``maps`` from
    :func:`solve_maps`."""
    steps, gs, gd, bs, bd, xfs, xfd, xss, xsd, pgs, pgd = maps
    g, bl, bm, x, xs, gz = scratch
    # the table is read by (step, column), never through a row view: see _revolute_pair
    for st in range(steps.shape[0]):
        op = steps[st, OP]
        if op == OP_FUSED:  # run by its pair's instruction, just before
            continue
        if op == OP_REVOLUTE:
            _revolute_pair_forward(steps, st, gs, gd, bs, bd, pgs, pgd, C, Lin, cache, g)
            continue
        if op == OP_TREE:
            _tree_pair_forward(steps, st, gs, gd, bs, bd, pgs, pgd, C, Lin, cache, g)
            continue
        if op == OP_WIDE_REVOLUTE:
            _wide_revolute_forward(steps, st, gs, gd, bs, bd, C, Lin, cache, g)
            continue
        _step_forward(steps, st, gs, gd, bs, bd, C, Lin, Lmag, cache, dropped, g, bl, bm, gz)
    st = steps.shape[0]
    while st > 0:
        st -= 1
        if steps[st, OP] == OP_FUSED and steps[st - 1, OP] == OP_REVOLUTE:
            st -= 1
            _revolute_pair_backward(steps, st, xss, xsd, xfs, xfd, C, cache, Xout, x, xs)
            continue
        if steps[st, OP] == OP_FUSED and steps[st - 1, OP] == OP_WIDE_REVOLUTE:
            st -= 1
            _wide_revolute_backward(steps, st, xss, xsd, xfs, xfd, C, cache, Xout, x, xs)
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


def drop_stale_cache(module: str, *dependencies: str) -> None:
    """Delete ``module``'s numba cache where it is older than any of the files ``dependencies``.

    numba keys a cached function on its own file's timestamp only; a kernel that compiles another
    module's kernels into itself would otherwise keep running them as they were when it was cached.
    """
    here = Path(module)
    try:
        changed = max(Path(d).stat().st_mtime for d in dependencies)
        for cached in (here.parent / "__pycache__").glob(f"{here.stem}.*.nb[ic]"):
            if cached.stat().st_mtime < changed:
                cached.unlink(missing_ok=True)
    except OSError:  # a read-only install: numba then compiles in memory (or into NUMBA_CACHE_DIR)
        pass


drop_stale_cache(__file__, jacobi.__file__)


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
        program.derived["maxn"] = int(max(1, np.max(steps[:, NF] + steps[:, NS]), np.max(steps[:, M]))) if len(steps) else 1
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
    from .gaussian import row_norms

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
        scale = Fw[:, group.scales : group.scales + k * rows].reshape(Fw.shape[0], k, rows)
        if group.hard:  # unit-origin row scales
            scale[...] = 1.0 / row_norms(block)
        else:
            np.abs(np.diagonal(block, axis1=-2, axis2=-1), out=scale)
            largest = max(largest, float(np.max(scale, initial=0.0)))
    return Fw, largest


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
