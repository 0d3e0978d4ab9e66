"""The compiled kernel of a dense front: the ``FRONT`` instruction, and ``PIVOT`` and ``UNIT`` run as ``FRONT``.

A step (:func:`_generic_step`): its factors gathered into a dense front, its
hard rows substituted -- through a declared ``+-I`` block (``T = -+A_S``) or
the rank-revealing SVD of the unit-origin rows (:mod:`elimination.jacobi`: QR
and one-sided Jacobi in the scratch; the bases of repeated or zero singular
values differ from LAPACK's, the projections the rule uses do not), rows left
over passed on or dropped -- and what remains pivoted ``L D L'``
(:mod:`elimination.compiled_pivot`), its conditionals and generated factor
written out; the solve's sweeps of the same step (:func:`_step_forward`,
:func:`_step_backward`).  The arithmetic is the numpy rule's
(:mod:`elimination.gaussian`).  Each is written once on
:mod:`elimination.vectors`' rows, for every width: one state's kernels
(:mod:`elimination.compiled`) run it at width 1, the lanes
(:mod:`elimination.lanes`) at sixteen, the
same operations in the same order, so a batch element's numbers are its
single call's bit for bit.  What only one state's kernel runs -- a general
substitution's SVD, the quasi-definite and indefinite pivots -- the lanes
refuse (their programs never hold it: ``covers``, ``covers_pairs``).  Also the
step table's columns as the integer constants the kernels index it by (numba
freezes module globals).

:mod:`elimination.compiled` dispatches the program's instructions to these
kernels and to :mod:`elimination.compiled_pairs`'; its docstring says why they
read the table by ``(step, column)``, index through ``ix`` and run without
reference counting.
"""
from __future__ import annotations


import numpy as np
from numba import njit
from numba.extending import overload

from .gaussian import RANK_RTOL  # numba freezes module globals: the numpy rule's tolerances
from . import compiled_pivot, jacobi, vectors as v
from .compiled_pivot import DEFINITE, UNCOUNTED, _pivot, _pivot_block, ix  # (DEFINITE, UNCOUNTED, ix: shared by every kernel module)
from .jacobi import load_tall, svd_rows
from .kernel_cache import drop_stale_cache
from .program import F, KEEP_MIRRORED, KEEP_NONE, PIVOTS, START_CARRIED, START_LEFT, START_SPREAD, Op

INDEFINITE = PIVOTS["indefinite"]  # the one pivot whose Linv is not lower triangular (an eigendecomposition's)
NEGATIVE = PIVOTS["negative"]  # (with DEFINITE: the pivots of every width, compiled_pivot._pivot_block)

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


@njit(cache=True, inline="always", error_model="numpy")
def _gathered(steps, st, hs, hd, ss, sd, Fw, H, scale, n, maxn):
    """The step's front ``H`` (``n x n`` at rows ``i * maxn + j``) and its scales from zero: the sum of its
    factors in ``Fw``, before any scale floor; any width (:mod:`elimination.vectors`: ``(entry,)`` one state,
    ``(entry, lane)`` lanes)."""
    for i in range(n):
        for j in range(n):
            v.fill(H, i * maxn + j, 0.0)
        v.fill(scale, i, 0.0)
    _added(steps, st, hs, hd, ss, sd, Fw, H, scale)


@njit(cache=True, inline="always", error_model="numpy")
def _added(steps, st, hs, hd, ss, sd, Fw, H, scale):
    """The step's factors in ``Fw`` added onto its front ``H`` and its scales (any width)."""
    for q in range(steps[st, H0], steps[st, H1]):
        v.add(H, hd[q], Fw, hs[q])
    for q in range(steps[st, S0], steps[st, S1]):
        v.add(scale, sd[q], Fw, ss[q])



# -- the factorization of one step, written once for every width -----------------------------------------------
# Fronts are rows ``i * maxn + j`` of flat arrays (elimination.vectors: ``(entry,)`` one state, ``(entry, lane)``
# sixteen).  What only one state's kernel does -- a general substitution's rank-revealing SVD, the quasi-definite
# and indefinite pivots -- goes through _general_substitution and _one_state_pivot (overloads), which the lanes
# never reach (elimination.lanes.covers_pairs keeps such programs off them).


@njit(cache=True, inline="always")
def _nonzero_columns(T, nF, nS, maxn, Tnz):
    """``Tnz[ix(q)] = (count, columns...)`` of the nonzero entries of row ``q`` of ``T (nF x nS)`` (nonzero in
    some lane: :func:`elimination.vectors.nonzero`).  A substitution's ``T`` is mostly zeros (a tree joint's
    ``[-+D, sigma I]``: two entries a row, zero columns for the separator's other variables): the products below
    run over these entries only, each one an update of a whole row or column, so that the inner loops have the
    separator's length.  Where a lane's entry is zero and another's is not, that lane adds zero products: the
    same values."""
    for q in range(nF):
        k = 0
        for j in range(nS):
            if v.nonzero(T, q * maxn + j):
                k += 1
                Tnz[ix(q), ix(k)] = j
        Tnz[ix(q), 0] = k


@njit(cache=True, inline="always")
def _front_times_T(H, T, Tnz, HFT, nF, nS, maxn):
    """``HFT = H_FF T + H_FS``: the front's rows of the Hessian after the substitution ``x_F = T x_S + ...``."""
    for i in range(nF):
        for j in range(nS):
            v.copy(HFT, i * maxn + j, H, i * maxn + nF + j)
        for q in range(nF):
            for a in range(1, Tnz[ix(q), 0] + 1):
                j = Tnz[ix(q), ix(a)]
                v.add_mul(HFT, i * maxn + j, H, i * maxn + q, T, q * maxn + j)


@njit(cache=True, inline="always")
def _substituted_separator(H, T, Tnz, HFT, scale, nF, nS, maxn):
    """``H_SS += T' HFT + H_SF T`` (``= T' H_FF T + T' H_FS + H_SF T``, symmetric) in its upper triangle (all
    that is read of ``H_SS``: :func:`_generic_step`), and ``scale_S += (T^2)' scale_F``.  Row ``i`` of the
    update is ``T[q, i] HFT[q, :] + H_FS[q, i] T[q, :]`` summed over the front's rows ``q``: contiguous rows,
    half the products of the full square."""
    for q in range(nF):
        for i in range(nS):
            if not (v.nonzero(T, q * maxn + i) or v.nonzero(H, q * maxn + nF + i)):
                continue
            a, b = v.get(T, q * maxn + i), v.get(H, q * maxn + nF + i)
            for j in range(i, nS):
                k = (nF + i) * maxn + nF + j
                v.set(H, k, v.get(H, k) + (a * v.get(HFT, q * maxn + j) + b * v.get(T, q * maxn + j)))
        for a in range(1, Tnz[ix(q), 0] + 1):
            i = Tnz[ix(q), ix(a)]
            t = v.get(T, q * maxn + i)
            v.set(scale, nF + i, v.get(scale, nF + i) + t * t * v.get(scale, q))


@njit(cache=True, inline="always")
def _front_mirrored(H, nF, n, maxn):
    """The front's columns of ``H`` (``n x nF``: its block and ``H_SF``, which a substitution keeps as ``HF``)
    made from its rows: a carried front (:func:`_generic_step`) brings only the upper triangle of the block
    the step before left, and nothing reads the lower one of ``H_SS``."""
    for i in range(n):
        for j in range(min(i, nF)):
            v.copy(H, i * maxn + j, H, j * maxn + i)


@njit(cache=True, inline="always")
def _unit_leftover(A, unit, r0, nF, m, sgn, E, maxn):
    """``E`` of a ``+-I`` substitution through rows ``r0 : r0 + nF`` of ``A`` (sign ``sgn``) with rows left over
    (:func:`elimination.gaussian.unit_substitution`): row ``o`` with the front eliminated, in unit-origin units."""
    k = 0
    for o in range(m):
        if o < r0 or o >= r0 + nF:
            for j in range(m):
                v.fill(E, k * maxn + j, 0.0)
            v.copy(E, k * maxn + o, unit, o)
            for j in range(nF):
                v.set(E, k * maxn + r0 + j, (-sgn * v.get(A, o * maxn + j)) * v.get(unit, o))
            k += 1


@njit(cache=True, inline="always")
def _singular_vectors(G, m, n, work, s, tau, nzv):
    """The full SVD of ``G[:m, :n]`` (:mod:`elimination.jacobi`) in the scratch ``work = (Bt, Rt, Ut,
    Vt)``: returns ``(converged, U_rows, V_rows)``, the scratch blocks whose row ``c`` is the ``c``-th left
    (length ``m``) and right (length ``n``) singular vector, ``s`` descending.  ``tau``, ``nzv`` are
    scratch."""
    Bt, Rt, Ut, Vt = work
    load_tall(G, m, n, Bt)
    if not svd_rows(Bt, np.int64(max(m, n)), np.int64(min(m, n)), Rt, Ut, Vt, s, tau, nzv):  # (one signature)
        return False, Ut, Vt
    if m >= n:
        return True, Ut, Vt
    return True, Vt, Ut  # the SVD of G' = U S V' is G = V S U'


@njit(cache=True, **UNCOUNTED)
def _substitute(row, C, rows, Tnz, scratch, check_rank):
    """A general substitution (elimination.gaussian.substitution and split_leftover) of one state's front
    (``rows``: flat views of the matrices of ``scratch``): ``W, N`` into ``C``, ``E_keep, E_drop, T``, the
    reduced pivot block ``Hz``, ``Hzs`` and its scales, and the separator block of ``H`` and ``scale``
    updated.  False when the numerical rank falls short (or, never seen, Jacobi did not converge: the numpy
    path then decides).

    The SVDs run in four free scratch blocks and ``Dv``; ``Hz`` holds the unit-origin rows, then the rows left
    over, ``sz`` the reflectors' factors and ``Tnz`` their nonzero entries, until they are written last."""
    H, A, scale, unit, L, Lw, Li, X, sv, T, HFT, Wm, Nm, Ek, Ed, Hz, Hzs, sz = scratch[:18]
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
        ok, Ur, Vr = _singular_vectors(Hz, m, nF, (Lw, X, L, Li), sv, sz, Tnz)
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
    if d != 0 and p != 0 and not _split_leftover(A, E, Ek, Ed, Hzs, (Lw, X, L, Li), sv, sz, Tnz, nF, nS, m, r, p):
        return False
    for i in range(nF):  # T = -W A_S, a row of A_S at a time (W of structured rows is mostly zeros)
        for j in range(nS):
            T[ix(i), ix(j)] = 0.0
        for q in range(m):
            w = Wm[ix(i), ix(q)]
            if w != 0.0:
                for j in range(nS):
                    T[ix(i), ix(j)] -= w * A[ix(q), ix(nF + j)]
    maxn, Hf, Tf, HFTf = H.shape[0], rows[0], rows[8], rows[9]  # (the flat views of H, T, HFT)
    _nonzero_columns(Tf, nF, nS, maxn, Tnz)
    _front_times_T(Hf, Tf, Tnz, HFTf, nF, nS, maxn)
    _reduced_block(H, Nm, HFT, scale, Hz, Hzs, sz, nF, nS, nz)
    _substituted_separator(Hf, Tf, Tnz, HFTf, scale, nF, nS, maxn)
    for i in range(nF):
        for j in range(m):
            C[ix(row[WW] + i * m + j)] = Wm[ix(i), ix(j)]
        for j in range(nz):
            C[ix(row[NN] + i * nz + j)] = Nm[ix(i), ix(j)]
    return True


@njit(cache=True, inline="always")
def _split_leftover(A, E, Ek, Ed, Hzs, work, sv, sz, Tnz, nF, nS, m, r, p):
    """The ``m - r`` rows left over by a general substitution (their combinations ``E``), split by the rank of
    what they leave on the separator, ``E A_S`` (into ``Hzs``): the first ``p`` passed on (``Ek``), the rest
    dropped (``Ed``).  False where the SVD did not converge (never seen: the numpy path then decides)."""
    for i in range(m - r):
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
    return True


@njit(cache=True, inline="always")
def _reduced_block(H, Nm, HFT, scale, Hz, Hzs, sz, nF, nS, nz):
    """The pivot block left after a general substitution, in the null space ``N`` of its rows: ``Hz = N' H_FF
    N``, ``Hzs = N' HFT`` (``HFT = H_FF T + H_FS``) and its scales ``sz = (N^2)' scale_F``."""
    for i in range(nz):
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


def _general_substitution(row, C, rows, Tnz, scratch, check_rank):
    """:func:`_substitute` at one state's width; at the lanes' a refusal (``False``, as a rank short of the
    plan's: the caller then takes the numpy path), which :func:`elimination.lanes.covers_pairs` keeps
    them from meeting."""


@overload(_general_substitution, inline="always")
def _general_substitution_at(row, C, rows, Tnz, scratch, check_rank):
    if C.ndim == 1:
        return lambda row, C, rows, Tnz, scratch, check_rank: _substitute(row, C, rows, Tnz, scratch, check_rank)
    return lambda row, C, rows, Tnz, scratch, check_rank: False


def _one_state_pivot(H, Hs, ss, nz, n_min, kind, scratch, ratio):
    """``ratio[0]`` of :func:`elimination.compiled_pivot._pivot` of ``Hs`` (``nz x nz``, scales ``ss``) at one
    state's width; at the lanes' a refusal (-1 in every lane, as a pivot the numpy rule refuses), so that the
    lanes do not compile the quasi-definite and indefinite pivots they never run."""


@overload(_one_state_pivot, inline="always")
def _one_state_pivot_at(H, Hs, ss, nz, n_min, kind, scratch, ratio):
    if H.ndim == 1:
        def pivoted(H, Hs, ss, nz, n_min, kind, scratch, ratio):
            ratio[0] = _pivot(Hs, ss, nz, n_min, kind, scratch[6], scratch[8], scratch[4], scratch[5], scratch[7])
        return pivoted

    def refused(H, Hs, ss, nz, n_min, kind, scratch, ratio):
        for w in range(v.width(H)):
            ratio[w] = -1.0
    return refused


@njit(cache=True, inline="always")
def _started_front(steps, st, sd, H, scale, X, Dv, n, maxn):
    """The front ``H``, ``scale`` of step ``st`` before its gathers, as its ``start`` column says (zeros, or what
    the step before left in it); returns how many of its rows the step before left (``carried``: their
    factor's entries lead the step's gathers and are not gathered, :func:`elimination.program._carried`)."""
    start, nF, carried = steps[st, START], steps[st, NF], 0
    if start == START_LEFT:  # the front is the separator block the link half left (program._wide_pair)
        o = steps[st - 1, NF]
        for i in range(n):  # (moved up and left, row by row: nothing is read after it is written)
            v.copy(scale, i, scale, o + i)
            for j in range(n):
                v.copy(H, i * maxn + j, H, (o + i) * maxn + o + j)
    elif start == START_CARRIED:  # the front is the generated factor the step before left in its upper triangle
        o, carried = steps[st - 1, NF], n
        for i in range(n):  # (moved up and left: no entry is read after it is written)
            v.copy(scale, i, scale, o + i)
            for j in range(i, n):
                v.copy(H, i * maxn + j, H, (o + i) * maxn + o + j)
        _front_mirrored(H, nF, n, maxn)
    elif start == START_SPREAD:  # that factor spread onto its positions in a wider front (its scale gather's)
        o, carried, s0 = steps[st - 1, NF], steps[st - 1, NS], steps[st, S0]
        for i in range(carried):  # (through X, Dv: the positions may lie on either side of the block)
            v.copy(Dv, i, scale, o + i)
            for j in range(i, carried):
                v.copy(X, i * maxn + j, H, (o + i) * maxn + o + j)
        for i in range(n):
            v.fill(scale, i, 0.0)
            for j in range(i, n):
                v.fill(H, i * maxn + j, 0.0)
        for i in range(carried):
            pi = sd[ix(s0 + i)]
            v.copy(scale, pi, Dv, i)
            for j in range(i, carried):
                v.copy(H, pi * maxn + sd[ix(s0 + j)], X, i * maxn + j)
        _front_mirrored(H, nF, n, maxn)
    else:
        for i in range(n):
            v.fill(scale, i, 0.0)
            for j in range(n):
                v.fill(H, i * maxn + j, 0.0)
    return carried


@njit(cache=True, inline="always")
def _gathered_front(steps, st, hs, hd, ss, sd, Fw, H, scale, carried, n, floor):
    """Step ``st``'s quadratic factors added into its front ``H`` and scales, past the ``carried`` factor's
    entries; the scales floored at ``floor`` (a row: each lane's floor)."""
    for q in range(steps[st, H0] + carried * carried, steps[st, H1]):  # (the carried factor's entries lead)
        v.add(H, hd[ix(q)], Fw, hs[ix(q)])
    for q in range(steps[st, S0] + carried, steps[st, S1]):
        v.add(scale, sd[ix(q)], Fw, ss[ix(q)])
    for i in range(n):
        v.set(scale, i, max(v.get(scale, i), v.get(floor, 0)))


@njit(cache=True, inline="always")
def _hard_rows(steps, st, as_, ad, ws, wd, Fw, C, H, A, unit, nF, m, n, maxn):
    """Step ``st``'s ``m`` hard rows gathered into ``A`` and their row scales into ``unit``; the front's first
    ``nF`` columns ``HF`` into ``C``, for the forward sweep's ``g - HF t``."""
    for i in range(m):
        for j in range(n):
            v.fill(A, i * maxn + j, 0.0)
    for q in range(steps[st, A0], steps[st, A1]):
        v.copy(A, ad[ix(q)], Fw, as_[ix(q)])
    for q in range(steps[st, W0], steps[st, W1]):
        v.copy(unit, wd[ix(q)], Fw, ws[ix(q)])
    hf = steps[st, HF_]
    for i in range(n):
        for j in range(nF):
            v.copy(C, hf + i * nF + j, H, i * maxn + j)


@njit(cache=True, inline="always")
def _unit_substitution(steps, st, H, A, unit, scale, T, Tnz, HFT, Ek, Ed, nF, nS, m, maxn):
    """A substitution through step ``st``'s declared ``+-I`` rows: ``T = -W A_S`` with ``W = sign I``, the
    separator block ``H_SS + T' H_FF T + ...`` and its scales; the rows left over combined into ``Ek`` (all
    passed on) or ``Ed`` (all dropped: :func:`elimination.symbolic._identity`)."""
    sgn, r0 = float(steps[st, IDENTITY]), steps[st, UROW]
    for i in range(nF):
        for j in range(nS):
            v.scaled(T, i * maxn + j, -sgn, A, (r0 + i) * maxn + nF + j)
    _nonzero_columns(T, nF, nS, maxn, Tnz)
    _front_times_T(H, T, Tnz, HFT, nF, nS, maxn)
    _substituted_separator(H, T, Tnz, HFT, scale, nF, nS, maxn)
    if m > nF:
        _unit_leftover(A, unit, r0, nF, m, sgn, Ek if steps[st, D_] == 0 else Ed, maxn)


@njit(cache=True, inline="always")
def _rows_left_over(steps, st, es, ed, Fw, C, A, unit, Ek, Ed, nF, m, maxn):
    """Step ``st``'s rows left over (:func:`elimination.program._step_row`): their row scales and combinations
    (passed on ``Ek``, dropped ``Ed``) into ``C``, and the rows passed on, on the plan's equality columns, as
    the generated hard factor (unit row scales)."""
    p = steps[st, P]
    for i in range(m):
        v.copy(C, steps[st, RS] + i, unit, i)
    for i in range(p):
        for j in range(m):
            v.copy(C, steps[st, EE] + i * m + j, Ek, i * maxn + j)
    for i in range(steps[st, D_]):
        for j in range(m):
            v.copy(C, steps[st, ED] + i * m + j, Ed, i * maxn + j)
    out_A, e0, e1 = steps[st, OUT_A], steps[st, E0], steps[st, E1]
    if out_A >= 0:
        k = e1 - e0
        for i in range(p):  # E_keep A_S a row of A_S at a time (E of structured rows is mostly zeros)
            v.fill(Fw, out_A + p * k + i, 1.0)  # their row scales (right after the block)
            out = out_A + i * k
            for q in range(e0, e1):
                v.fill(Fw, out + ed[ix(q)], 0.0)
            for a in range(m):
                if v.nonzero(Ek, i * maxn + a):
                    for q in range(e0, e1):
                        v.add_mul(Fw, out + ed[ix(q)], Ek, i * maxn + a, A, a * maxn + nF + es[ix(q)])


@njit(cache=True, inline="always")
def _pivoted_front(steps, st, C, H, scale, L, Li, X, Dv, Hzs, tmp, nF, nS, m, nz, maxn, scratch, ratio, ok):
    """The pivot of step ``st``'s ``nz`` remaining dimensions -- the reduced block ``Hz`` after a substitution,
    else the front's leading block -- its ``D``, ``Linv`` and ``Y = Linv H_zS`` into ``C`` and the Schur
    complement ``H_SS -= Y' D Y`` (upper triangle) with its scales; each lane's pivot ratio into ``ratio``, -1
    where the numpy rule refuses the pivot (the rest then meaningless).  A definite or negative pivot of the
    leading block runs at every width (:func:`elimination.compiled_pivot._pivot_block`); the others at one
    state's (:func:`_one_state_pivot` on ``scratch``, the same matrices as the rows), refused in the lanes."""
    kind = steps[st, PIVOT]
    if not m:
        for i in range(nz):
            for j in range(nS):
                v.copy(Hzs, i * maxn + j, H, i * maxn + nF + j)
    if not m and (kind == DEFINITE or kind == NEGATIVE):
        sgn = 1.0 if kind == DEFINITE else -1.0
        _pivot_block(H, sgn, nz, maxn, scale, L, Li, ok, tmp, ratio)
        for i in range(nz):
            v.fill(Dv, i, sgn)
        for w in range(v.width(H)):
            if not ok[w]:
                ratio[w] = -1.0
    else:
        Hs, ss = (scratch[15], scratch[17]) if m else (scratch[0], scratch[2])
        _one_state_pivot(H, Hs, ss, nz, steps[st, NMIN], kind, scratch, ratio)
    ds, li, yy = steps[st, DS], steps[st, LINV], steps[st, Y_]
    for i in range(nz):
        v.copy(C, ds + i, Dv, i)
        for j in range(nz):
            v.copy(C, li + i * nz + j, Li, i * maxn + j)
    # the loops run along rows (j innermost), so that large fronts stream through memory
    for i in range(nz):  # Y = Linv H_zS, Linv lower triangular except for indefinite pivots
        for j in range(nS):
            v.fill(X, i * maxn + j, 0.0)
        for q in range(nz if kind == INDEFINITE else i + 1):
            for j in range(nS):
                v.add_mul(X, i * maxn + j, Li, i * maxn + q, Hzs, q * maxn + j)
        for j in range(nS):
            v.copy(C, yy + i * nS + j, X, i * maxn + j)
    for q in range(nz):  # H_SS -= Y' D Y in its upper triangle; scale_S += sum Y^2, a row of Y at a time
        d = v.get(Dv, q)
        for i in range(nS):
            x = v.get(X, q * maxn + i)
            a = d * x
            for j in range(i, nS):
                k = (nF + i) * maxn + nF + j
                v.set(H, k, v.get(H, k) - a * v.get(X, q * maxn + j))
            v.set(scale, nF + i, v.get(scale, nF + i) + x * x)


@njit(cache=True, inline="always")
def _left_front(steps, st, Fw, H, scale, nF, nS, maxn):
    """What step ``st`` leaves, as its ``keep`` column says: its separator block written out as the generated
    factor, or left in the front for the next step (mirrored for a wide pair's joint half)."""
    keep, out, outs = steps[st, KEEP], steps[st, OUT_H], steps[st, OUT_S]
    if out >= 0 and keep == KEEP_NONE:
        for i in range(nS):
            v.copy(Fw, outs + i, scale, nF + i)
            for j in range(i, nS):
                v.copy(Fw, out + i * nS + j, H, (nF + i) * maxn + nF + j)
                v.copy(Fw, out + j * nS + i, H, (nF + i) * maxn + nF + j)
    elif keep == KEEP_MIRRORED:  # what the generated factor would hold, left in the front
        for i in range(nS):
            for j in range(i + 1, nS):
                v.copy(H, (nF + j) * maxn + nF + i, H, (nF + i) * maxn + nF + j)


@njit(cache=True, inline="always")
def one_state_rows(scratch):
    """The flat rows of :func:`_generic_step` at one state's width: views of the matrices of ``scratch``
    (:func:`elimination.compiled.factorize_scratch_in`), which the one-state parts of the step use as matrices."""
    H, A, scale, unit, L, _, Li, X, Dv, T, HFT, _, _, Ek, Ed, _, Hzs, _, _, tmp, _ = scratch
    f = H.shape[0] * H.shape[0]
    return (H.reshape(f), A.reshape(f), scale, unit, L.reshape(f), Li.reshape(f), X.reshape(f), Dv, T.reshape(f),
            HFT.reshape(f), Ek.reshape(f), Ed.reshape(f), Hzs.reshape(f), tmp)


# not inlined: compiled once per width and called by every executor (inlined, it was compiled into each caller
# anew and made the first call's compile much longer: benchmarks/README.md); a call a step costs nothing measurable
@njit(cache=True, **UNCOUNTED)
def _generic_step(maps, st, Fw, C, floor, check_rank, rows, Tnz, scratch, ratio, ok):
    """One ``FRONT`` step ``st`` (``PIVOT`` and ``UNIT`` steps too, and a wide pair's halves: the joint half starts
    from the front its link half left in ``H``) at any width (:mod:`elimination.vectors`: ``Fw``, ``C`` and the
    front's flat matrices ``rows`` one state's, or sixteen states' lanes): its front started and gathered, its
    hard rows substituted, the rest pivoted, its conditionals into ``C``, its generated factor into ``Fw`` or
    left in the front.  Each lane's pivot ratio into ``ratio`` (inf without a pivot, -1 for a pivot the numpy
    rule refuses: the step failed there); returns -1, or ``-2 - st`` where a substitution's rank falls short of
    the plan's.

    ``rows``: ``(H, A, scale, unit, L, Li, X, Dv, T, HFT, Ek, Ed, Hzs, tmp)``, fronts ``maxn`` wide (``maxn`` =
    ``scratch[0].shape[0]``); ``scratch``: :func:`elimination.compiled.factorize_scratch_in`'s one-state matrices,
    which a general substitution and the one-state pivots use (at one state's width ``rows`` are their flat
    views); ``Tnz``: its integers; ``floor (1,)`` or ``(1, LANES)``: the scale floors; ``ok``: a value per lane."""
    steps, hs, hd, ss, sd, as_, ad, ws, wd, es, ed = maps[:11]
    H, A, scale, unit, L, Li, X, Dv, T, HFT, Ek, Ed, Hzs, tmp = rows
    maxn = scratch[0].shape[0]
    row = steps[st]
    nF, nS, m, nz = row[NF], row[NS], row[M], row[NZ]
    n = nF + nS
    for w in range(v.width(H)):
        ratio[w] = np.inf
    carried = _started_front(steps, st, sd, H, scale, X, Dv, n, maxn)
    _gathered_front(steps, st, hs, hd, ss, sd, Fw, H, scale, carried, n, floor)
    if m:
        _hard_rows(steps, st, as_, ad, ws, wd, Fw, C, H, A, unit, nF, m, n, maxn)
    if row[IDENTITY] != 0:
        _unit_substitution(steps, st, H, A, unit, scale, T, Tnz, HFT, Ek, Ed, nF, nS, m, maxn)
    elif m and not _general_substitution(row, C, rows, Tnz, scratch, check_rank):
        return -2 - st
    if row[RS] >= 0:
        _rows_left_over(steps, st, es, ed, Fw, C, A, unit, Ek, Ed, nF, m, maxn)
    if m:
        for i in range(nF):
            for j in range(nS):
                v.copy(C, row[T_] + i * nS + j, T, i * maxn + j)
    if nz:
        _pivoted_front(steps, st, C, H, scale, L, Li, X, Dv, Hzs, tmp, nF, nS, m, nz, maxn, scratch, ratio, ok)
    _left_front(steps, st, Fw, H, scale, nF, nS, maxn)
    return -1


@njit(cache=True, inline="always")
def _leftover_forward(steps, st, C, Lin, Lmag, dropped, bl, bm, m):
    """The forward sweep of step ``st``'s rows left over, right-hand sides ``bl`` (their sizes ``bm``): the rows
    passed on, ``E_keep b``, and the size they are made of into the generated hard factor's terms; the
    dropped rows' ``E_drop b``, which must vanish, and the size of what they combine into ``dropped``.  Any
    width (:mod:`elimination.vectors`), as :func:`_step_forward`."""
    u = v.get(C, steps[st, RS]) * v.get(bm, 0)  # (m >= 1: a step with rows left over has rows)
    top, total = max(0.0, u), 0.0 + u * u
    for j in range(1, m):
        u = v.get(C, steps[st, RS] + j) * v.get(bm, j)
        top, total = max(top, u), total + u * u
    for i in range(steps[st, P]):
        v.dot(Lin, steps[st, OUT_B] + i, C, steps[st, EE] + i * m, 1, bl, 0, 1, m)
        v.set(Lmag, steps[st, OUT_B] + i, top)
    for i in range(steps[st, D_]):
        v.dot(dropped, steps[st, DROP] + i, C, steps[st, ED] + i * m, 1, bl, 0, 1, m)
    if steps[st, D_]:
        k = steps[st, DROP] + steps[st, D_]
        v.set(dropped, k, total)
        v.sqrt(dropped, k, dropped, k)


@njit(cache=True, inline="always")
def _step_forward(steps, st, gs, gd, bs, bd, C, Lin, Lmag, cache, dropped, g, bl, bm, gz):
    """The forward sweep of one generic step ``st`` (a wide pair's halves among them, the joint half starting
    from the separator terms its link half left in ``g``): ``g`` gathered, ``t = W b`` and ``g -= HF t``, the
    hard rows' passed-on and dropped terms, ``y = Linv g_z``, ``g_S - Y' D y`` into the generated linear term.
    Written once for every width (:mod:`elimination.vectors`: one state's 1-d arrays, or sixteen states'
    lanes), with no decision on the numbers: the per-element solve and the lanes run it alike."""
    nF, nS, m, nz, ident = steps[st, NF], steps[st, NS], steps[st, M], steps[st, NZ], steps[st, IDENTITY]
    n = nF + nS
    if steps[st, START] == START_LEFT:  # the link half's separator terms, where it left them
        o = steps[st - 1, NF]
        for i in range(n):
            v.copy(g, i, g, o + i)
    else:
        for i in range(n):
            v.fill(g, i, 0.0)
    for q in range(steps[st, G0], steps[st, G1]):
        v.add(g, gd[ix(q)], Lin, gs[ix(q)])
    if m:
        tc, hf, ts = steps[st, TC], steps[st, HF_], steps[st, T_]
        for q in range(steps[st, B0], steps[st, B1]):
            v.copy(bl, bd[ix(q)], Lin, bs[ix(q)])
            v.copy(bm, bd[ix(q)], Lmag, bs[ix(q)])
        if ident != 0:  # t = W b with W = sign I on the declared rows
            r0 = steps[st, UROW]
            for i in range(nF):
                v.scaled(cache, tc + i, float(ident), bl, r0 + i)
        else:
            w = steps[st, WW]
            for i in range(nF):
                v.dot(cache, tc + i, C, w + i * m, 1, bl, 0, 1, m)
        for i in range(n):  # g -= HF t
            v.set(g, i, v.get(g, i) - v.dotted(C, hf + i * nF, 1, cache, tc, 1, nF))
        if nz:  # g_z = N' g_F
            nn = steps[st, NN]
            for j in range(nz):
                v.fill(gz, j, 0.0)
            for i in range(nF):
                for j in range(nz):
                    v.add_mul(gz, j, C, nn + i * nz + j, g, i)
        for i in range(nF):  # g_S += T' g_F, along the rows of T
            for j in range(nS):
                v.add_mul(g, nF + j, C, ts + i * nS + j, g, i)
        if steps[st, P] or steps[st, D_]:
            _leftover_forward(steps, st, C, Lin, Lmag, dropped, bl, bm, m)
    else:
        for j in range(nz):
            v.copy(gz, j, g, j)
    if nz:
        li, yy, ds, yc = steps[st, LINV], steps[st, Y_], steps[st, DS], steps[st, YC]
        full = steps[st, PIVOT] == INDEFINITE  # (otherwise Linv is lower triangular)
        for i in range(nz):  # y = Linv g_z
            v.dot(cache, yc + i, C, li + i * nz, 1, gz, 0, 1, nz if full else i + 1)
        for i in range(nz):  # g_S -= Y' D y, along the rows of Y
            a = v.get(C, ds + i) * v.get(cache, yc + i)
            for j in range(nS):
                v.set(g, nF + j, v.get(g, nF + j) - v.get(C, yy + i * nS + j) * a)
    out = steps[st, OUT_G]
    if out >= 0:
        for j in range(nS):
            v.copy(Lin, out + j, g, nF + j)


@njit(cache=True, inline="always")
def _sub_dot(D, k, A, i, B, j, n):
    """``D[k] -= A[i + q] * B[j + q]`` for ``q = 0..n-1``, one product at a time in that order (six at a time in
    registers: :func:`elimination.vectors.sub_dot6`)."""
    q = 0
    while q + 6 <= n:
        v.sub_dot6(D, k, A, i + q, 1, B, j + q, 1)
        q += 6
    while q < n:
        v.sub_mul(D, k, A, i + q, B, j + q)
        q += 1



@njit(cache=True, inline="always", error_model="numpy")
def _step_backward(steps, st, xss, xsd, xfs, xfd, C, cache, Xout, x, xs, g, gz):
    """Back-substitution of one generic step ``st``: ``x_F = t + T x_S + N z`` with ``z = D (y - Y x_S)``
    (``Linv' z`` where nothing is substituted), from the separator's values in ``Xout`` into the front's; any
    width (:mod:`elimination.vectors`), ``g`` and ``gz`` scratch rows for the step's pivots."""
    nF, nS, m, nz = steps[st, NF], steps[st, NS], steps[st, M], steps[st, NZ]
    for q in range(steps[st, XS0], steps[st, XS1]):
        v.copy(xs, xsd[q], Xout, xss[q])
    if nz:
        li, yy, ds, yc = steps[st, LINV], steps[st, Y_], steps[st, DS], steps[st, YC]
        for i in range(nz):  # z = D (y - Y x_S)
            v.copy(gz, i, cache, yc + i)
            _sub_dot(gz, i, C, yy + i * nS, xs, 0, nS)
            v.mul(gz, i, C, ds + i, gz, i)
        for i in range(nz):  # Linv' z, along the rows of Linv
            v.fill(g, i, 0.0)
        full = steps[st, PIVOT] == INDEFINITE
        for q in range(nz):
            for i in range(nz if full else q + 1):
                v.add_mul(g, i, C, li + q * nz + i, gz, q)
    if m:  # x = t + T x_S + N z
        tc, ts, nn = steps[st, TC], steps[st, T_], steps[st, NN]
        for i in range(nF):
            v.copy(x, i, cache, tc + i)
            for j in range(nS):
                v.add_mul(x, i, C, ts + i * nS + j, xs, j)
            if steps[st, IDENTITY] == 0:
                for j in range(nz):
                    v.add_mul(x, i, C, nn + i * nz + j, g, j)
    else:
        for i in range(nF):
            v.copy(x, i, g, i)
    for q in range(steps[st, XF0], steps[st, XF1]):
        v.copy(Xout, xfs[q], x, xfd[q])



drop_stale_cache(__file__, compiled_pivot.__file__, jacobi.__file__, v.__file__)
