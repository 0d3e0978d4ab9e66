"""The compiled executor: numba kernels that run a :class:`~elimination.program.Program`.

One kernel factorizes (every step of the program, for every batch element),
one solves (the forward sweep of the linear terms, then back-substitution).
Both interpret the program's integer step table over flat per-state
workspaces, so nothing is compiled per plan: the kernels are compiled once,
announced on stderr the first time, and cached on disk (``@njit(cache=True)``).

The arithmetic is the numpy rule's (:mod:`elimination.gaussian`) for the
fronts a program supports: a declared ``+-I`` substitution gives ``T = -+A_S``
and ``H_SS + T'(H_FF T + H_FS) + H_FS' T``; a pivot block is factorized
``L D L'`` (Cholesky, of ``-H`` for multipliers, block LDL' for quasi-definite
fronts) with ``Y = L^-1 H_zS`` and ``H_SS - Y' D Y``.  Each element reports
its smallest pivot relative to the magnitude of its contributions, and a
non-positive pivot stops it with the failing step (the caller then takes the
numpy path, which names the variables).

:class:`CompiledFactorization` is a :class:`~elimination.numeric.Factorization`
whose sweeps run here; overrides, refinement, verification of suspect pivots
and error messages are shared with the numpy path.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from numba import njit

from .program import F

_ANNOUNCED = [False]

NF, NS, IDENTITY, PIVOT, NMIN, M = (F[k] for k in ("nF", "nS", "identity", "pivot", "n_min", "m"))
H0, H1, S0, S1, A0, A1 = (F[k] for k in ("h0", "h1", "s0", "s1", "a0", "a1"))
OUT_H, OUT_S, T_, HF_, LINV, Y_ = (F[k] for k in ("out_H", "out_s", "T", "HF", "Linv", "Y"))
G0, G1, B0, B1, OUT_G, TC, YC = (F[k] for k in ("g0", "g1", "b0", "b1", "out_g", "t", "y"))
XF0, XF1, XS0, XS1 = (F[k] for k in ("xf0", "xf1", "xs0", "xs1"))


@njit(cache=True)
def _cholesky(A, n, L):
    """Lower Cholesky factor of the leading ``n x n`` of ``A`` into ``L``; False if a pivot is not positive."""
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return False
        d = np.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, n):
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / d
        for i in range(j):
            L[i, j] = 0.0
    return True


@njit(cache=True)
def _lower_inverse(L, n, out):
    """``out = L^-1`` for lower-triangular ``L`` (``n x n``)."""
    for j in range(n):
        for i in range(n):
            out[i, j] = 0.0
        out[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, n):
            s = 0.0
            for k in range(j, i):
                s -= L[i, k] * out[k, j]
            out[i, j] = s / L[i, i]


@njit(cache=True)
def _pivot(H, scale, nF, n_min, kind, L, Lw, X, sign):
    """``Hzz = L D L'`` of the front's pivot block (``nF x nF`` of ``H``); returns the smallest pivot ratio,
    or -1 when a pivot is not of its sign."""
    ratio = np.inf
    if kind == 1 or kind == 2:
        s = 1.0 if kind == 1 else -1.0
        for i in range(nF):
            sign[i] = s
            for j in range(nF):
                Lw[i, j] = s * H[i, j]
        if not _cholesky(Lw, nF, L):
            return -1.0
        for i in range(nF):
            ratio = min(ratio, L[i, i] * L[i, i] / max(scale[i], 1e-300))
        return ratio
    # quasi-definite: [[A, B], [B', C]] = [[L1, 0], [X', L2]] diag(I, -I) [[L1', X], [0, L2']]
    k = nF - n_min
    for i in range(n_min):
        for j in range(n_min):
            Lw[i, j] = H[i, j]
    if not _cholesky(Lw, n_min, L):
        return -1.0
    for c in range(k):  # X = L1^-1 B
        for i in range(n_min):
            t = H[i, n_min + c]
            for p in range(i):
                t -= L[i, p] * X[p, c]
            X[i, c] = t / L[i, i]
    for i in range(n_min):
        sign[i] = 1.0
        ratio = min(ratio, L[i, i] * L[i, i] / max(scale[i], 1e-300))
    for i in range(k):
        sign[n_min + i] = -1.0
        for j in range(k):
            t = -H[n_min + i, n_min + j]
            for p in range(n_min):
                t += X[p, i] * X[p, j]
            Lw[n_min + i, n_min + j] = t
    L2 = L[n_min:nF, n_min:nF]
    if not _cholesky(Lw[n_min:nF, n_min:nF], k, L2):
        return -1.0
    for i in range(k):
        grown = scale[n_min + i]
        for p in range(n_min):
            grown += X[p, i] * X[p, i]
        ratio = min(ratio, L2[i, i] * L2[i, i] / max(grown, 1e-300))
        for p in range(n_min):
            L[n_min + i, p] = X[p, i]
    for i in range(n_min):
        for j in range(n_min, nF):
            L[i, j] = 0.0
    return ratio


@njit(cache=True)
def factorize_kernel(steps, hs, hd, ss, sd, as_, ad, Fw, C, floor, maxn, ratio_out, weak_out, fail_out):
    """Every step of the program for every element of ``Fw (B, factor_size)``; conditionals into ``C``.

    Per element: ``ratio_out`` the smallest pivot ratio and ``weak_out`` its step; ``fail_out`` the step
    whose pivot is not of its sign (-1: none).
    """
    H = np.zeros((maxn, maxn))
    A = np.zeros((maxn, maxn))
    scale = np.zeros(maxn)
    L = np.zeros((maxn, maxn))
    Lw = np.zeros((maxn, maxn))
    Li = np.zeros((maxn, maxn))
    X = np.zeros((maxn, maxn))
    sign = np.zeros(maxn)
    T = np.zeros((maxn, maxn))
    HFT = np.zeros((maxn, maxn))
    for b in range(Fw.shape[0]):
        ratio_out[b] = np.inf
        weak_out[b] = -1
        fail_out[b] = -1
        for st in range(steps.shape[0]):
            row = steps[st]
            nF, nS = row[NF], row[NS]
            n = nF + nS
            for i in range(n):
                scale[i] = 0.0
                for j in range(n):
                    H[i, j] = 0.0
            for q in range(row[H0], row[H1]):
                H[hd[q] // n, hd[q] % n] += Fw[b, hs[q]]
            for q in range(row[S0], row[S1]):
                scale[sd[q]] += Fw[b, ss[q]]
            for i in range(n):
                scale[i] = max(scale[i], floor)
            if row[IDENTITY] != 0:
                s = float(row[IDENTITY])
                for i in range(row[M]):
                    for j in range(n):
                        A[i, j] = 0.0
                for q in range(row[A0], row[A1]):
                    A[ad[q] // n, ad[q] % n] = Fw[b, as_[q]]
                for i in range(nF):  # T = -W A_S with W = sign I
                    for j in range(nS):
                        T[i, j] = -s * A[i, nF + j]
                        C[b, row[T_] + i * nS + j] = T[i, j]
                for i in range(n):  # HF, kept for the forward sweep's g - HF t
                    for j in range(nF):
                        C[b, row[HF_] + i * nF + j] = H[i, j]
                for i in range(nF):  # HFT = H_FF T + H_FS
                    for j in range(nS):
                        t = H[i, nF + j]
                        for p in range(nF):
                            t += H[i, p] * T[p, j]
                        HFT[i, j] = t
                for i in range(nS):  # H_SS += T' HFT + H_FS' T ; scale_S += (T^2)' scale_F
                    for j in range(nS):
                        t = 0.0
                        for p in range(nF):
                            t += T[p, i] * HFT[p, j] + H[p, nF + i] * T[p, j]
                        H[nF + i, nF + j] += t
                    grown = 0.0
                    for p in range(nF):
                        grown += T[p, i] * T[p, i] * scale[p]
                    scale[nF + i] += grown
            elif row[PIVOT] > 0:
                r = _pivot(H, scale, nF, row[NMIN], row[PIVOT], L, Lw, X, sign)
                if r < 0.0:
                    fail_out[b] = st
                    break
                if r < ratio_out[b]:
                    ratio_out[b], weak_out[b] = r, st
                _lower_inverse(L, nF, Li)
                for i in range(nF):
                    for j in range(nF):
                        C[b, row[LINV] + i * nF + j] = Li[i, j]
                for i in range(nF):  # Y = Linv H_zS
                    for j in range(nS):
                        t = 0.0
                        for p in range(i + 1):
                            t += Li[i, p] * H[p, nF + j]
                        X[i, j] = t
                        C[b, row[Y_] + i * nS + j] = t
                for i in range(nS):  # H_SS -= Y' D Y ; scale_S += sum Y^2
                    for j in range(nS):
                        t = 0.0
                        for p in range(nF):
                            t += X[p, i] * sign[p] * X[p, j]
                        H[nF + i, nF + j] -= t
                    grown = 0.0
                    for p in range(nF):
                        grown += X[p, i] * X[p, i]
                    scale[nF + i] += grown
            if row[OUT_H] >= 0:
                for i in range(nS):
                    Fw[b, row[OUT_S] + i] = scale[nF + i]
                    for j in range(nS):
                        Fw[b, row[OUT_H] + i * nS + j] = 0.5 * (H[nF + i, nF + j] + H[nF + j, nF + i])


@njit(cache=True)
def solve_kernel(steps, gs, gd, bs, bd, xfs, xfd, xss, xsd, C, Lin, cache, Xout, maxn):
    """Forward sweep of the linear terms ``Lin (B, linear_size)`` and back-substitution into ``Xout``.

    ``C`` holds the conditionals of ``Bc`` elements; element ``b`` uses ``b % Bc``
    (unbatched matrices with batched linear terms).
    """
    g = np.zeros(maxn)
    bl = np.zeros(maxn)
    x = np.zeros(maxn)
    xs = np.zeros(maxn)
    Bc = C.shape[0]
    for b in range(Lin.shape[0]):
        c = b % Bc
        for st in range(steps.shape[0]):
            row = steps[st]
            nF, nS = row[NF], row[NS]
            n = nF + nS
            for i in range(n):
                g[i] = 0.0
            for q in range(row[G0], row[G1]):
                g[gd[q]] += Lin[b, gs[q]]
            if row[IDENTITY] != 0:
                s = float(row[IDENTITY])
                for q in range(row[B0], row[B1]):
                    bl[bd[q]] = Lin[b, bs[q]]
                for i in range(nF):
                    cache[b, row[TC] + i] = s * bl[i]
                for i in range(n):  # g -= HF t
                    t = 0.0
                    for j in range(nF):
                        t += C[c, row[HF_] + i * nF + j] * cache[b, row[TC] + j]
                    g[i] -= t
                for j in range(nS):  # g_S += T' g_F
                    t = 0.0
                    for i in range(nF):
                        t += C[c, row[T_] + i * nS + j] * g[i]
                    g[nF + j] += t
            elif row[PIVOT] > 0:
                nmin, kind = row[NMIN], row[PIVOT]
                for i in range(nF):  # y = Linv g_z
                    t = 0.0
                    for p in range(i + 1):
                        t += C[c, row[LINV] + i * nF + p] * g[p]
                    cache[b, row[YC] + i] = t
                for j in range(nS):  # g_S -= Y' D y
                    t = 0.0
                    for i in range(nF):
                        d = 1.0 if (kind == 1 or (kind == 3 and i < nmin)) else -1.0
                        t += C[c, row[Y_] + i * nS + j] * d * cache[b, row[YC] + i]
                    g[nF + j] -= t
            if row[OUT_G] >= 0:
                for j in range(nS):
                    Lin[b, row[OUT_G] + j] = g[nF + j]
        for st in range(steps.shape[0] - 1, -1, -1):
            row = steps[st]
            nF, nS = row[NF], row[NS]
            for q in range(row[XS0], row[XS1]):
                xs[xsd[q]] = Xout[b, xss[q]]
            if row[IDENTITY] != 0:  # x = t + T x_S
                for i in range(nF):
                    t = cache[b, row[TC] + i]
                    for j in range(nS):
                        t += C[c, row[T_] + i * nS + j] * xs[j]
                    x[i] = t
            else:  # x = Linv' D (y - Y x_S)
                nmin, kind = row[NMIN], row[PIVOT]
                for i in range(nF):
                    t = cache[b, row[YC] + i]
                    for j in range(nS):
                        t -= C[c, row[Y_] + i * nS + j] * xs[j]
                    d = 1.0 if (kind == 1 or (kind == 3 and i < nmin)) else -1.0
                    g[i] = d * t
                for i in range(nF):
                    t = 0.0
                    for p in range(i, nF):
                        t += C[c, row[LINV] + p * nF + i] * g[p]
                    x[i] = t
            for q in range(row[XF0], row[XF1]):
                Xout[b, xfs[q]] = x[xfd[q]]


def announce_first_compile() -> None:
    """Say once per process, on stderr, that the kernels are being compiled (only when no disk cache exists)."""
    if _ANNOUNCED[0]:
        return
    _ANNOUNCED[0] = True
    cache = Path(__file__).parent / "__pycache__"
    if not any(cache.glob("compiled.*.nbi")):
        print("gaussgraph: compiling the elimination kernels (once; cached on disk)...", file=sys.stderr, flush=True)


def max_front(program) -> int:
    """Largest front of ``program`` (the kernels' scratch size)."""
    steps = program.steps
    return int(max(1, np.max(steps[:, NF] + steps[:, NS]))) if len(steps) else 1


def factor_workspace(graph, program):
    """``(Fw (Bm, factor_size), batch)``: the graph's matrices and diagonal magnitudes in the program's layout."""
    from factorgraph.factors import concat_last

    blocks = {i: (f.H if i in program.H_offset else concat_last(f.A, 2))
              for i, f in enumerate(graph.factors) if i in program.H_offset or i in program.A_offset}
    batch = tuple(np.broadcast_shapes(*(m.shape[:-2] for m in blocks.values()))) if blocks else ()
    Bm = int(np.prod(batch))
    Fw = np.zeros((Bm, program.factor_size))
    for i, block in blocks.items():
        block = np.broadcast_to(block, batch + block.shape[-2:])
        if i in program.H_offset:
            off, soff, n = program.H_offset[i], program.scale_offset[i], block.shape[-1]
            Fw[:, off : off + n * n] = block.reshape(Bm, -1)
            Fw[:, soff : soff + n] = np.abs(np.diagonal(block, axis1=-2, axis2=-1)).reshape(Bm, -1)
        else:
            off = program.A_offset[i]
            Fw[:, off : off + block.shape[-2] * block.shape[-1]] = block.reshape(Bm, -1)
    return Fw, batch


def run_factorize(program, Fw: np.ndarray, floor: float):
    """``(C, ratio, weakest, failed)`` per element (``failed``: step of a pivot not of its sign, -1: none)."""
    Bm = Fw.shape[0]
    C = np.zeros((Bm, program.conditional_size))
    ratio, weak, fail = np.empty(Bm), np.empty(Bm, dtype=np.int64), np.empty(Bm, dtype=np.int64)
    announce_first_compile()
    factorize_kernel(program.steps, *program.maps["H"], *program.maps["scale"], *program.maps["A"], Fw, C, floor,
                     max_front(program), ratio, weak, fail)
    return C, ratio, weak, fail


def run_solve(program, C: np.ndarray, Lin: np.ndarray) -> np.ndarray:
    """Values ``X (B, value_size)`` for the linear terms ``Lin (B, linear_size)`` (filled in place with
    the generated factors' terms); ``C`` has ``Bc`` rows and element ``b`` uses row ``b % Bc``."""
    B = Lin.shape[0]
    X = np.zeros((B, program.value_size))
    solve_kernel(program.steps, *program.maps["g"], *program.maps["b"], *program.maps["xf"], *program.maps["xs"],
                 C, Lin, np.zeros((B, program.cache_size)), X, max_front(program))
    return X
