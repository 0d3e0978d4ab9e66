"""The Gaussian elimination rule: one bucket in, one conditional and new factors out.

For a bucket with front ``F`` and separator ``S`` (local dense blocks in the
step's layout), the quadratic part ``1/2 x'Hx - g'x`` and the hard rows
``A_F x_F + A_S x_S = b``:

1. **Substitution** (``m > 0`` hard rows, ``r = min(m, n_F)`` used):
   ``x_F = T x_S + W b + N z`` with ``T = -W A_S``.  ``W`` comes from a
   rank-``r`` complete orthogonal decomposition (SVD) of ``A_F``, ``N`` spans
   its null space; an identity block ``A_F = +-I`` -- a link acceleration
   through its own tree joint -- skips the decomposition.  The ``m - r`` rows left over become the hard factor
   ``E A_S x_S = E b`` on the separator.
2. **Schur complement** on the free part ``z``: with the reduced Hessian
   ``[[H_zz, H_zS], [H_Sz, H_SS]]`` and ``H_zz = L D L'`` (``D = diag(+-1)``;
   Cholesky for definite pivots, block LDL' for quasi-definite ones, an eigen
   decomposition for general indefinite ones), the separator receives
   ``H_SS - Y' D Y`` with ``Y = L^-1 H_zS``, and the conditional is
   ``z = L^-T D (L^-1 g_z - Y x_S)``.

The matrix part is computed once (:func:`eliminate_gaussian`); the linear terms
(``g``, ``b``) flow through :meth:`GaussianConditional.forward` and the
back-substitution :meth:`GaussianConditional.back` on every (re-)solve -- the
"reduced two sweeps" of 000 Algorithms 2 and 5.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_triangular

from .errors import PROX_HINT, SingularProblemError

# A pivot below this fraction of the magnitude of its contributions counts as singular.  Round-off
# left by an exact cancellation grows with the front and the work done (7e-14 seen on a 12-row
# singular Delassus matrix), so the tolerance is ~5000 eps.
PIVOT_RTOL = 1e-12
CONSISTENCY_RTOL = 1e-8  # dropped hard rows must vanish to this relative tolerance


def mT(matrix: np.ndarray) -> np.ndarray:
    """Transpose of the last two axes."""
    return np.swapaxes(matrix, -1, -2)


def mv(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Batched matrix-vector product ``(..., p, q) x (..., q) -> (..., p)``."""
    return (matrix @ vector[..., None])[..., 0]


@dataclass
class GaussianConditional:
    """``x_F`` as an affine function of ``x_S`` (and of the bucket's linear terms).

    Shapes (leading batch dimensions omitted): ``W (n_F, m)``, ``T (n_F, n_S)``,
    ``N (n_F, n_z)``, ``E (m - r, m)``, ``HF (n_F + n_S, n_F)``,
    ``Linv (n_z, n_z)``, ``D (n_z,)``, ``Y (n_z, n_S)``; ``None`` where absent.
    """

    frontal_dim: int
    W: np.ndarray | None
    T: np.ndarray | None
    N: np.ndarray | None
    E: np.ndarray | None
    HF: np.ndarray | None
    Linv: np.ndarray | None
    D: np.ndarray | None
    Y: np.ndarray | None
    step: object = None

    def forward(self, g: np.ndarray, b: np.ndarray | None):
        """Propagate the bucket's linear terms.

        Returns ``(cache, g_sep, b_sep)``: what :meth:`back` needs, and the
        linear terms of the new quadratic and hard factors on the separator.
        """
        nF = self.frontal_dim
        t = None
        if self.W is not None:
            t = mv(self.W, b)
            g = g - mv(self.HF, t)
        gF, gS = g[..., :nF], g[..., nF:]
        if self.W is not None:
            gz = mv(mT(self.N), gF)
            gS = gS + mv(mT(self.T), gF)
        else:
            gz = gF
        y = None
        if self.Linv is not None:
            y = mv(self.Linv, gz)
            gS = gS - mv(mT(self.Y), self.D * y)
        b_sep = None
        if self.E is not None:
            b_sep = mv(self.E, b)
            if self.step is not None and self.step.new_equality is None:
                self._check_consistent(b_sep, b)
                b_sep = None
        return (t, y), gS, b_sep

    def back(self, cache, x_sep: np.ndarray) -> np.ndarray:
        """Back-substitution: ``x_F`` from the separator's values."""
        t, y = cache
        z = None
        if self.Linv is not None:
            z = mv(mT(self.Linv), self.D * (y - mv(self.Y, x_sep)))
        if self.W is None:
            return z
        x = t + mv(self.T, x_sep)
        return x if z is None else x + mv(self.N, z)

    def _check_consistent(self, residual: np.ndarray, b: np.ndarray) -> None:
        scale = 1.0 + np.max(np.abs(b), initial=0.0)
        worst = np.max(np.abs(residual), initial=0.0)
        if worst > CONSISTENCY_RTOL * scale:
            keys = self.step.frontal if self.step is not None else ()
            raise SingularProblemError(
                f"the hard equalities eliminated with {list(keys)} are inconsistent "
                f"(redundant rows disagree by {worst:.3g}); they have no solution",
                getattr(self.step, "index", -1), keys,
            )


def _fail(step, kind: str, detail: str, bad: np.ndarray | None = None) -> SingularProblemError:
    where = ""
    if bad is not None and bad.ndim > 0 and bad.size > 1:
        idx = [tuple(int(i) for i in ix) for ix in np.argwhere(bad)[:5]]
        where = f" (batch element(s) {idx}{'...' if bad.sum() > 5 else ''})"
    message = f"step {step.index}: eliminating {list(step.frontal)}: {kind}{where}: {detail}. {PROX_HINT}"
    return SingularProblemError(message, step.index, step.frontal)


def _identity_sign(AF: np.ndarray) -> float | None:
    """+1 or -1 when the square block is exactly +-I for every batch element."""
    if AF.shape[-1] != AF.shape[-2]:
        return None
    eye = np.eye(AF.shape[-1])
    if np.array_equal(AF, np.broadcast_to(eye, AF.shape)):
        return 1.0
    if np.array_equal(AF, np.broadcast_to(-eye, AF.shape)):
        return -1.0
    return None


def substitution(step, AF: np.ndarray, pivot_rtol: float):
    """``W, N, E`` with ``x_F = W (b - A_S x_S) + N z`` and leftover rows ``E``.

    ``AF`` has shape ``(..., m, n_F)`` and structural rank ``r =
    step.substituted``.  With the SVD ``AF = U S V'`` (a complete orthogonal
    decomposition), ``W = V_1 S_1^-1 U_1'``, ``N = V_2`` spans the free
    directions and ``E = U_2'`` maps the rows the front does not use.
    """
    m, nF = AF.shape[-2], AF.shape[-1]
    batch = AF.shape[:-2]
    sign = _identity_sign(AF)
    if sign is not None:
        return np.broadcast_to(sign * np.eye(nF), batch + (nF, nF)), np.zeros(batch + (nF, 0)), None
    r = step.substituted
    U, s, Vt = np.linalg.svd(AF, full_matrices=True)
    bad = s[..., r - 1] <= 1e2 * pivot_rtol * s[..., 0]
    if np.any(bad):
        raise _fail(
            step, "the hard equalities are numerically dependent on these variables",
            f"their coefficient block has structural (generic) rank {r} but its singular values fall to "
            f"{np.min(s[..., r - 1] / np.maximum(s[..., 0], np.finfo(float).tiny)):.2e} of the largest. "
            "Either the equalities are redundant, or their coefficients are special (e.g. parallel axes) "
            "and this order meets an exact cancellation: eliminate these variables together with those "
            "their equalities determine (one block), or in another order", bad,
        )
    W = mT(Vt[..., :r, :]) @ (mT(U[..., :, :r]) / s[..., :r, None])
    E = mT(U[..., :, r:]) if m > r else None
    return W, mT(Vt[..., r:, :]), E


def _cholesky(step, H: np.ndarray, scale: np.ndarray, kind: str, pivot_rtol: float) -> np.ndarray:
    try:
        L = np.linalg.cholesky(H)
    except np.linalg.LinAlgError:
        bad = np.linalg.eigvalsh(H)[..., 0] <= 0 if H.ndim > 2 else None
        raise _fail(
            step, f"the pivot is not {kind}",
            "the problem is not well posed in these variables (not convex, undetermined, or "
            "constrained by redundant constraints)", bad,
        ) from None
    ratio = np.diagonal(L, axis1=-2, axis2=-1) ** 2 / np.maximum(scale, np.finfo(float).tiny)
    bad = np.any(ratio < pivot_rtol, axis=-1)
    if np.any(bad):
        raise _fail(
            step, "the pivot is numerically singular",
            f"a pivot fell to {np.min(ratio):.2e} of the magnitude of its contributions (tolerance "
            f"{pivot_rtol:g}); the variables are undetermined or their constraints redundant", bad,
        )
    return L


def _triangular_inverse(L: np.ndarray) -> np.ndarray:
    return solve_triangular(L, np.broadcast_to(np.eye(L.shape[-1]), L.shape), lower=True)


def pivot_factor(step, Hzz: np.ndarray, scale: np.ndarray, pivot_rtol: float):
    """``Linv, D`` with ``Hzz = L D L'``, ``D = diag(+-1)``.

    ``scale`` (..., n_z) is the magnitude of the uncancelled contributions to
    each diagonal entry; a pivot below ``pivot_rtol`` times it is singular.
    """
    nz = Hzz.shape[-1]
    kind, n_min = step.pivot, step.frontal_min_dim
    if kind == "definite":
        return _triangular_inverse(_cholesky(step, Hzz, scale, "positive definite", pivot_rtol)), np.ones(nz)
    if kind == "negative":
        return _triangular_inverse(_cholesky(step, -Hzz, scale, "negative definite", pivot_rtol)), -np.ones(nz)
    if kind == "quasidefinite":
        # [[A, B], [B', C]] = [[L1, 0], [X', L2]] diag(I, -I) [[L1', X], [0, L2']]
        L1 = _cholesky(step, Hzz[..., :n_min, :n_min], scale[..., :n_min],
                       "positive definite on its min variables", pivot_rtol)
        X = solve_triangular(L1, Hzz[..., :n_min, n_min:], lower=True)
        L2 = _cholesky(step, mT(X) @ X - Hzz[..., n_min:, n_min:],
                       scale[..., n_min:] + np.sum(X**2, axis=-2), "quasi-definite", pivot_rtol)
        L = np.zeros(Hzz.shape[:-2] + (nz, nz))
        L[..., :n_min, :n_min] = L1
        L[..., n_min:, :n_min] = mT(X)
        L[..., n_min:, n_min:] = L2
        return _triangular_inverse(L), np.concatenate([np.ones(n_min), -np.ones(nz - n_min)])
    if kind == "indefinite":
        w, V = np.linalg.eigh(Hzz)
        magnitude = np.abs(w)
        bad = np.min(magnitude, axis=-1) <= pivot_rtol * np.max(scale, axis=-1)
        if np.any(bad):
            raise _fail(step, "the indefinite pivot is numerically singular", "an eigenvalue vanishes", bad)
        return mT(V) / np.sqrt(magnitude)[..., :, None], np.sign(w)
    raise ValueError(f"unknown pivot kind {kind!r}")


def eliminate_gaussian(step, H: np.ndarray, A: np.ndarray | None, scale: np.ndarray, pivot_rtol: float = PIVOT_RTOL):
    """Eliminate one bucket.

    Parameters
    ----------
    step : elimination.symbolic.Step
        The symbolic step (sizes, pivot kind, names for error messages).
    H : ndarray, shape (..., n, n)
        Sum of the bucket's quadratic factors in the step's layout.
    A : ndarray, shape (..., m, n), or None
        The bucket's hard rows in the same layout.
    scale : ndarray, shape (..., n)
        Magnitude of the contributions to each diagonal entry of ``H`` before
        any cancellation (``|diag H_f|`` summed over the graph's factors,
        grown by every Schur update); pivots are judged against it, so a
        cancellation in an earlier step is caught where it bites.
    pivot_rtol : float
        Relative size below which a pivot counts as singular.

    Returns
    -------
    conditional : GaussianConditional
    H_sep : ndarray (..., n_S, n_S) or None
        Hessian of the new quadratic factor on the separator.
    A_sep : ndarray (..., m - r, n_S) or None
        Coefficients of the new hard factor on the separator.
    scale_sep : ndarray (..., n_S) or None
        Diagonal scale of ``H_sep``.
    """
    nF = step.frontal_dim
    HFF, HFS, HSS = H[..., :nF, :nF], H[..., :nF, nF:], H[..., nF:, nF:]
    scale_F, scale_S = scale[..., :nF], scale[..., nF:]
    W = T = N = E = HF = A_sep = None
    if A is not None:
        AS = A[..., :, nF:]
        W, N, E = substitution(step, A[..., :, :nF], pivot_rtol)
        T = -(W @ AS)
        HFT = HFF @ T + HFS
        Hzz, HzS = mT(N) @ HFF @ N, mT(N) @ HFT
        HSS = HSS + mT(T) @ HFT + mT(HFS) @ T
        HF = H[..., :, :nF]
        scale_z, scale_S = mv(mT(N**2), scale_F), scale_S + mv(mT(T**2), scale_F)
        if step.new_equality is not None:
            A_sep = (E @ AS)[..., step.equality_columns]
    else:
        Hzz, HzS, scale_z = HFF, HFS, scale_F
    Linv = D = Y = None
    if step.pivot_dim:
        Linv, D = pivot_factor(step, Hzz, scale_z, pivot_rtol)
        Y = Linv @ HzS
        HSS = HSS - mT(Y) @ (D[..., :, None] * Y)
        scale_S = scale_S + np.sum(Y**2, axis=-2)
    H_sep = scale_sep = None
    if step.separator_dim:
        H_sep, scale_sep = 0.5 * (HSS + mT(HSS)), scale_S
    conditional = GaussianConditional(nF, W, T, N, E, HF, Linv, D, Y, step)
    return conditional, H_sep, A_sep, scale_sep
