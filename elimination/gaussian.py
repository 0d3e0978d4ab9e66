"""The Gaussian elimination rule: one bucket in, one conditional and new factors out.

For a bucket with front ``F`` and separator ``S`` (local dense blocks in the
step's layout), the quadratic part ``1/2 x'Hx - g'x`` and the hard rows
``A_F x_F + A_S x_S = b``:

1. **Substitution** (``m > 0`` hard rows, ``r`` of them used, ``r`` the rank
   the plan assumes): ``x_F = T x_S + W b + N z`` with ``T = -W A_S``.  ``W``
   comes from a rank-``r`` complete orthogonal decomposition (SVD) of the
   block ``diag(1/omega) A_F`` (rows in unit-origin units, below), ``N``
   spans its null space; a block declared ``+-I`` in the structure -- a link
   acceleration through its own tree joint -- skips the decomposition: ``x_F``
   is read from those rows, and eliminated exactly from the bucket's other
   rows (:func:`unit_substitution`; root-to-leaves orders meet a link's
   children's joints there).  Of the ``m - r`` combinations ``E`` of rows left
   over (``E A_F = 0``), the plan passes some on as the hard factor
   ``E A_S x_S = E b`` on the separator and drops the others after checking
   that their right-hand side ``E b`` vanishes (consistency).
2. **Schur complement** on the free part ``z``: with the reduced Hessian
   ``[[H_zz, H_zS], [H_Sz, H_SS]]`` and ``H_zz = L D L'`` (``D = diag(+-1)``;
   Cholesky for definite pivots, block LDL' for quasi-definite ones, an eigen
   decomposition for general indefinite ones), the separator receives
   ``H_SS - Y' D Y`` with ``Y = L^-1 H_zS``, and the conditional is
   ``z = L^-T D (L^-1 g_z - Y x_S)``.

**Scales.**  Cancellation is judged against what a quantity was made of,
never against the block's own size.  Hard rows are compared in *unit-origin*
units: a row of the graph counts with its 2-norm ``omega_i``, and the rows a
step combines are ``E = U_2' diag(1/omega)`` -- orthonormal combinations of
unit rows, which keep unit scale (``omega = 1``) and whose round-off does not
grow from step to step.  A singular value of ``diag(1/omega) A_F`` below
:data:`RANK_RTOL` means the rows are numerically dependent on the front: the
*numerical rank* falls short of the plan's structural one, and the batch
element is marked *deficient* (its values from here on are placeholders;
:mod:`elimination.numeric` re-plans it with its numerical ranks).  Every
diagonal entry of ``H`` carries the magnitude ``scale`` of its contributions,
against which pivots are judged.

The matrix part is computed once (:func:`eliminate_gaussian`); the linear terms
(``g``, ``b``) flow through :meth:`GaussianConditional.forward` and the
back-substitution :meth:`GaussianConditional.back` on every (re-)solve -- the
"reduced two sweeps" of 000 Algorithms 2 and 5.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_triangular

from .errors import SingularProblemError

# Schur pivots are judged relative to the magnitude of their contributions.  A non-positive one (or
# an exactly vanishing eigenvalue) is refused at once, and so is a pivot of multipliers below
# round-off (SINGULAR_RTOL: dependent constraints); ``pivot_rtol`` (default PIVOT_RTOL = 0) refuses
# more.  Otherwise a small ratio alone does not tell a singular problem from a well-posed one: the
# magnitude sums every cancelled contribution (8.5e-13 on LCABA's cycle(1000) at mu = 1e6; ~7e-15
# for prox multipliers of dependent contacts at mu = 1e12, which their 1/mu prior keeps regular;
# 3e-16 for a variable of a random graph of KKT condition 1.4e6 that one refinement step solves
# to 1e-13), while an exact cancellation can leave up to ~1e-13 (seen on a 12-row singular
# Delassus matrix).  So pivots below PIVOT_SUSPECT_RTOL are *suspect*: the solve verifies them by
# iterative refinement, which settles for the former and not for the latter, and reports a
# failure as singular below SINGULAR_RTOL, as ill-conditioned above it
# (elimination.factorization.Factorization.solve).
PIVOT_RTOL = 0.0
SINGULAR_RTOL = 1e-15
PIVOT_SUSPECT_RTOL = 1e-10
# A singular value of a hard block in unit-origin units (module docstring) below this is zero: the
# rows are dependent.  Cancelled rows carry ~1e-16..1e-14; a well-posed problem with condition 1e8
# keeps its hard blocks far above.
RANK_RTOL = 1e-10
# Dropped hard rows must have ``|E b| <= CONSISTENCY_RTOL ||b||`` (both in unit-origin units, ``b``
# the right-hand sides they combine), else they contradict each other.
CONSISTENCY_RTOL = 1e-8


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
    ``N (n_F, n_z)``, ``E (p, m)`` (rows passed on), ``E_drop (d, m)`` (rows
    checked and dropped), ``row_scale (m,)`` (``1 / omega``), ``HF (n_F +
    n_S, n_F)``, ``Linv (n_z, n_z)``, ``D (n_z,)``, ``Y (n_z, n_S)``; ``None``
    where absent.
    """

    frontal_dim: int
    W: np.ndarray | None
    T: np.ndarray | None
    N: np.ndarray | None
    E: np.ndarray | None
    E_drop: np.ndarray | None
    row_scale: np.ndarray | None
    HF: np.ndarray | None
    Linv: np.ndarray | None
    D: np.ndarray | None
    Y: np.ndarray | None
    step: object = None

    def forward(self, g: np.ndarray, b: np.ndarray | None, b_magnitude: np.ndarray | None):
        """Propagate the bucket's linear terms.

        ``b_magnitude`` is, per hard row, the size of the right-hand sides it
        was made of (``|b|`` for the graph's rows).  Returns ``(cache, g_sep,
        b_sep, b_sep_magnitude, dropped)``: what :meth:`back` needs, the linear
        terms of the new quadratic and hard factors on the separator, and
        ``(E_drop b, size)`` -- the right-hand sides of the dropped rows, which
        must vanish, and the size of those they combine -- or ``None``.
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
        b_sep = b_sep_magnitude = dropped = None
        if self.E is not None or self.E_drop is not None:
            unit = self.row_scale * b_magnitude  # in unit-origin units, like E's rows
        if self.E is not None:
            b_sep = mv(self.E, b)
            b_sep_magnitude = np.broadcast_to(np.max(unit, axis=-1)[..., None], b_sep.shape)
        if self.E_drop is not None:
            dropped = mv(self.E_drop, b), np.linalg.norm(unit, axis=-1)[..., None]
        return (t, y), gS, b_sep, b_sep_magnitude, dropped

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


@dataclass
class Eliminated:
    """What one step hands back to the numeric pass.

    ``A_sep`` are the rows passed on (on the plan's equality columns, in
    unit-origin units); ``deficient`` marks the batch elements whose hard
    rows fell short of the plan's rank at this step (``None`` if none);
    ``pivot_ratio`` (batch shape, or ``None`` without a Schur pivot) is the
    smallest pivot relative to the magnitude of its contributions.
    """

    conditional: GaussianConditional
    H_sep: np.ndarray | None
    scale_sep: np.ndarray | None
    A_sep: np.ndarray | None
    deficient: np.ndarray | None
    pivot_ratio: np.ndarray | None = None


def batch_note(mask: np.ndarray | None) -> str:
    """' (batch element(s) [...])' for the flagged elements of a batched mask, else ''."""
    if mask is None or mask.ndim == 0 or mask.size <= 1:
        return ""
    idx = [tuple(int(i) for i in ix) for ix in np.argwhere(mask)[:5]]
    return f" (batch element(s) {idx}{'...' if mask.sum() > 5 else ''})"


def _fail(step, kind: str, detail: str, bad: np.ndarray | None = None) -> SingularProblemError:
    # the batch note before the detail, so that the message ends with the advice's full stop
    message = f"step {step.index}: eliminating {list(step.frontal)}{batch_note(bad)}: {detail}"
    return SingularProblemError(message, step.index, step.frontal, kind=kind)


def row_norms(A: np.ndarray) -> np.ndarray:
    """``omega``: 2-norms of the rows of ``A (..., m, n)``, 1 for all-zero rows (exact zeros)."""
    omega = np.linalg.norm(A, axis=-1)
    return np.where(omega > 0, omega, 1.0)


def numerical_rank(s: np.ndarray) -> np.ndarray:
    """Singular values of a block in unit-origin units above :data:`RANK_RTOL`, per batch element."""
    return np.sum(s > RANK_RTOL, axis=-1)


def substitution(step, AF: np.ndarray, row_scale: np.ndarray, check_rank: bool = True):
    """``W, N, E, deficient`` with ``x_F = W (b - A_S x_S) + N z`` and leftover rows ``E``.

    ``AF (..., m, n_F)`` has rank ``r = step.substituted``; ``row_scale`` is
    ``1 / omega`` of its rows.  With the SVD ``diag(row_scale) AF = U S V'``,
    ``W = V_1 S_1^-1 U_1' diag(row_scale)``, ``N = V_2`` spans the free
    directions and ``E = U_2' diag(row_scale)`` maps the rows the front does not
    use to unit-origin rows.  ``deficient`` (batch shape, or ``None``) marks
    elements whose ``r``-th singular value is below :data:`RANK_RTOL`; their
    block is replaced by a full-rank one so that the pass goes on (their values
    are recomputed by the caller).
    """
    m, nF = AF.shape[-2], AF.shape[-1]
    batch = AF.shape[:-2]
    r = step.substituted
    if step.identity:  # declared +-I (structure): no decomposition
        return (*unit_substitution(step.identity, step.unit_row, AF, row_scale), None)
    unit = row_scale[..., :, None]
    if r == 0:
        E = np.broadcast_to(np.eye(m), batch + (m, m)) * unit
        return np.zeros(batch + (nF, m)), np.broadcast_to(np.eye(nF), batch + (nF, nF)), E, None
    U, s, Vt = np.linalg.svd(unit * AF, full_matrices=True)
    deficient = None
    if check_rank:
        deficient = s[..., r - 1] <= RANK_RTOL
        if np.any(deficient):
            U, s, Vt = np.linalg.svd(np.where(deficient[..., None, None], np.eye(m, nF), unit * AF), full_matrices=True)
        else:
            deficient = None
    scaled = mT(unit)
    W = (mT(Vt[..., :r, :]) / s[..., None, :r]) @ (mT(U[..., :, :r]) * scaled)
    E = mT(U[..., :, r:]) * scaled if m > r else None
    return W, mT(Vt[..., r:, :]), E, deficient


def unit_substitution(sign: int, start: int, AF: np.ndarray, row_scale: np.ndarray) -> tuple:
    """``W, N, E`` of :func:`substitution` where rows ``start : start + nF`` of ``AF (..., m, nF)`` are declared
    ``sign * I``: ``x_F`` is read from them (``W = sign I`` on those rows), nothing is free, and the front is
    eliminated exactly from each other row ``o``: ``E_o = (e_o - sign A_oF [those rows]) / omega_o``, in
    unit-origin units like the decomposition's rows (``None`` where ``m = nF``).

    >>> W, N, E = unit_substitution(1, 0, np.array([[1.0], [-2.0]]), np.array([1.0, 0.5]))
    >>> W, E
    (array([[1., 0.]]), array([[1. , 0.5]]))
    """
    m, nF = AF.shape[-2], AF.shape[-1]
    batch = AF.shape[:-2]
    own = np.arange(start, start + nF)
    W = np.zeros(batch + (nF, m))
    W[..., np.arange(nF), own] = sign
    if m == nF:
        return W, np.zeros(batch + (nF, 0)), None
    others = np.setdiff1d(np.arange(m), own)
    E = np.zeros(batch + (m - nF, m))
    E[..., np.arange(m - nF), others] = 1.0
    E[..., own] = -sign * AF[..., others, :]
    return W, np.zeros(batch + (nF, 0)), E * row_scale[..., others, None]


def split_leftover(step, E: np.ndarray | None, AS: np.ndarray):
    """``(E_keep, E_drop)``: the ``step.passed_rows`` combinations of the leftover
    rows ``E A_S`` the plan passes on, and the ``step.dropped_rows`` others
    (numerically zero on the separator; their right-hand side is checked)."""
    if E is None:
        return None, None
    passed, dropped = step.passed_rows, step.dropped_rows
    if dropped == 0:
        return E, None
    if passed == 0:
        return None, E
    U = np.linalg.svd(E @ AS, full_matrices=True)[0]
    return mT(U[..., :, :passed]) @ E, mT(U[..., :, passed:]) @ E


def _cholesky(step, H: np.ndarray, scale: np.ndarray, kind: str, roles: str, pivot_rtol: float) -> np.ndarray:
    try:
        L = np.linalg.cholesky(H)
    except np.linalg.LinAlgError:
        bad = np.linalg.eigvalsh(H)[..., 0] <= 0 if H.ndim > 2 else None
        raise _fail(step, "singular", f"the pivot is not {kind}: {singular_advice(roles)}", bad) from None
    ratio = np.min(np.diagonal(L, axis1=-2, axis2=-1) ** 2 / np.maximum(scale, np.finfo(float).tiny), axis=-1)
    _judge(step, ratio, pivot_rtol, roles)
    return L, ratio


def _judge(step, ratio: np.ndarray, pivot_rtol: float, roles: str) -> None:
    """Refuse pivots at or below ``pivot_rtol`` of their contributions -- for multipliers, below
    round-off (SINGULAR_RTOL) already: their pivots come from dependent constraints, whose
    multipliers are not unique even when the right-hand side is consistent, which refinement cannot
    see.  Small pivots of ``min`` variables are left to the solve's verification."""
    if roles != "min":
        pivot_rtol = max(pivot_rtol, SINGULAR_RTOL)
    bad = ratio <= pivot_rtol
    if np.any(bad):
        worst = float(np.min(ratio))
        raise _fail(
            step, "singular",
            f"the pivot is numerically singular: it fell to {worst:.1e} of the magnitude of its contributions "
            f"(tolerance {pivot_rtol:g}; condition ~{1 / max(worst, 1e-300):.0e}): {singular_advice(roles)}", bad,
        )


def singular_advice(roles: str) -> str:
    """What a singular pivot means for a front of ``roles`` (``"min"``, ``"max"`` or ``"mixed"``): whole
    sentences, ending with a full stop, so that callers may append their own."""
    if roles == "min":
        return ("these variables are undetermined: no quadratic term fixes some direction of them (a variable "
                "without prior, a rank-deficient measurement), or the problem is not convex in them.")
    if roles == "max":
        return ("these multipliers are not unique: their constraints are linearly dependent (redundant, or "
                "contradictory where their right-hand sides disagree), so the dual Hessian (Delassus matrix) is "
                "singular. Regularize them with a proximal prior -1/(2 mu)||lambda - lambda_k||^2 (the 'prox' "
                "policy), or remove the dependent constraints.")
    return ("the saddle-point block is singular: a variable is undetermined or the multipliers' constraints are "
            "dependent. Regularized multipliers ('prox' policy, prior -1/(2 mu)||lambda - lambda_k||^2) keep every "
            "pivot regular; multipliers without prior must be eliminated after the variables they constrain.")


def _triangular_inverse(L: np.ndarray) -> np.ndarray:
    return solve_triangular(L, np.broadcast_to(np.eye(L.shape[-1]), L.shape), lower=True)


def _neutral_pivot(step, Hzz: np.ndarray, scale: np.ndarray, ignore: np.ndarray | None):
    """``Hzz, scale`` with the ignored (deficient) batch elements replaced by a unit block of the right signs."""
    if ignore is None or not np.any(ignore):
        return Hzz, scale
    n_min, nz = step.frontal_min_dim, Hzz.shape[-1]
    signs = np.ones(nz) if step.pivot == "indefinite" else np.where(np.arange(nz) < n_min, 1.0, -1.0)
    if step.pivot == "negative":
        signs = -np.ones(nz)
    return np.where(ignore[..., None, None], np.diag(signs), Hzz), np.where(ignore[..., None], 1.0, scale)


def pivot_factor(step, Hzz: np.ndarray, scale: np.ndarray, pivot_rtol: float, ignore: np.ndarray | None = None):
    """``Linv, D, ratio`` with ``Hzz = L D L'``, ``D = diag(+-1)``.

    ``scale`` (..., n_z) is the magnitude of the uncancelled contributions to
    each diagonal entry; a pivot at or below ``pivot_rtol`` times it is singular.
    ``ratio`` (batch shape) is the smallest pivot relative to its scale.
    Batch elements in ``ignore`` (already deficient) are not judged.
    """
    Hzz, scale = _neutral_pivot(step, Hzz, scale, ignore)
    nz = Hzz.shape[-1]
    kind, n_min = step.pivot, step.frontal_min_dim
    if kind == "definite":
        L, ratio = _cholesky(step, Hzz, scale, "positive definite", "min", pivot_rtol)
        return _triangular_inverse(L), np.ones(nz), ratio
    if kind == "negative":
        L, ratio = _cholesky(step, -Hzz, scale, "negative definite", "max", pivot_rtol)
        return _triangular_inverse(L), -np.ones(nz), ratio
    if kind == "quasidefinite":
        # [[A, B], [B', C]] = [[L1, 0], [X', L2]] diag(I, -I) [[L1', X], [0, L2']]
        L1, ratio1 = _cholesky(step, Hzz[..., :n_min, :n_min], scale[..., :n_min],
                               "positive definite on its min variables", "min", pivot_rtol)
        X = solve_triangular(L1, Hzz[..., :n_min, n_min:], lower=True)
        L2, ratio2 = _cholesky(step, mT(X) @ X - Hzz[..., n_min:, n_min:],
                               scale[..., n_min:] + np.sum(X**2, axis=-2), "quasi-definite", "max", pivot_rtol)
        L = np.zeros(Hzz.shape[:-2] + (nz, nz))
        L[..., :n_min, :n_min] = L1
        L[..., n_min:, :n_min] = mT(X)
        L[..., n_min:, n_min:] = L2
        return _triangular_inverse(L), np.concatenate([np.ones(n_min), -np.ones(nz - n_min)]), np.minimum(ratio1, ratio2)
    if kind == "indefinite":
        w, V = np.linalg.eigh(Hzz)
        magnitude = np.abs(w)
        ratio = np.min(magnitude, axis=-1) / np.maximum(np.max(scale, axis=-1), np.finfo(float).tiny)
        _judge(step, ratio, pivot_rtol, "mixed")
        return mT(V) / np.sqrt(magnitude)[..., :, None], np.sign(w), ratio
    raise ValueError(f"unknown pivot kind {kind!r}")


def eliminate_gaussian(
    step, H: np.ndarray, scale: np.ndarray, A: np.ndarray | None = None, row_scale: np.ndarray | None = None,
    pivot_rtol: float = PIVOT_RTOL, check_rank: bool = True, ignore: np.ndarray | None = None,
) -> Eliminated:
    """Eliminate one bucket.

    Parameters
    ----------
    step : elimination.symbolic.Step
        The symbolic step (sizes, ranks, pivot kind, names for error messages).
    H : ndarray, shape (..., n, n)
        Sum of the bucket's quadratic factors in the step's layout.
    scale : ndarray, shape (..., n)
        Magnitude of the contributions to each diagonal entry of ``H`` before
        any cancellation (``|diag H_f|`` summed over the graph's factors,
        grown by every Schur update); pivots are judged against it, so a
        cancellation in an earlier step is caught where it bites.
    A : ndarray, shape (..., m, n), or None
        The bucket's hard rows in the same layout.
    row_scale : ndarray, shape (..., m), or None
        ``1 / omega`` of those rows: the inverse 2-norm of a graph's row, 1
        for rows a step generated (module docstring).
    pivot_rtol : float
        Relative size at or below which a pivot is refused at once (default 0:
        only non-positive pivots; small ones are verified by the solve).
    check_rank : bool
        Compare the numerical rank of the front's hard block with the plan's
        (off for plans whose ranks were read from these numbers).
    ignore : ndarray of bool (batch shape), optional
        Elements already found deficient: their pivots are not judged.

    Returns
    -------
    Eliminated
    """
    nF = step.frontal_dim
    HFF, HFS, HSS = H[..., :nF, :nF], H[..., :nF, nF:], H[..., nF:, nF:]
    scale_F, scale_S = scale[..., :nF], scale[..., nF:]
    W = T = N = E = E_drop = HF = A_sep = deficient = None
    if A is not None:
        AS = A[..., :, nF:]
        W, N, E, deficient = substitution(step, A[..., :, :nF], row_scale, check_rank)
        if deficient is not None:
            ignore = deficient if ignore is None else ignore | deficient
        E, E_drop = split_leftover(step, E, AS)
        T = -(W @ AS)
        HFT = HFF @ T + HFS
        Hzz, HzS = mT(N) @ HFF @ N, mT(N) @ HFT
        HSS = HSS + mT(T) @ HFT + mT(HFS) @ T
        HF = H[..., :, :nF]
        scale_z, scale_S = mv(mT(N**2), scale_F), scale_S + mv(mT(T**2), scale_F)
        if step.new_equality is not None:
            columns = step.equality_columns
            A_sep = (E @ AS)[..., columns]
    else:
        Hzz, HzS, scale_z = HFF, HFS, scale_F
    Linv = D = Y = ratio = None
    if step.pivot_dim:
        Linv, D, ratio = pivot_factor(step, Hzz, scale_z, pivot_rtol, ignore)
        Y = Linv @ HzS
        HSS = HSS - mT(Y) @ (D[..., :, None] * Y)
        scale_S = scale_S + np.sum(Y**2, axis=-2)
    H_sep = scale_sep = None
    if step.separator_dim:
        H_sep, scale_sep = 0.5 * (HSS + mT(HSS)), scale_S
    conditional = GaussianConditional(nF, W, T, N, E, E_drop, row_scale if A is not None else None, HF, Linv, D, Y, step)
    return Eliminated(conditional, H_sep, scale_sep, A_sep, deficient, ratio)
