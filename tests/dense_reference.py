"""An independent dense reference for Gaussian factor graphs, redundant and inconsistent rows included.

Written for the tests and ``benchmarks/reliability.py``; it uses nothing from
the library but the factors' arrays (``Quadratic.H/.g``; ``LeastSquares``
rebuilt from its ``A``, ``b``, ``weight``; ``LinearEquality.A/.b``) and the
variables' keys and dimensions.

The problem of a graph is the saddle point of ``1/2 x'Hx - g'x`` subject to
``A x = b`` (``H`` holds every quadratic factor, the ``max`` variables' blocks
and the bilinear multiplier factors included); its stationarity conditions are
the KKT system

    K = [[H, A'], [A, 0]],   K [x; nu] = [g; b].

Per batch element, :func:`reference_solve`

1. decides ``r = rank A`` from the singular values of ``A`` with its rows
   scaled to unit norm (so the decision does not depend on how a row is
   scaled): ``s_i > RANK_RTOL * s_1``, ``RANK_RTOL = 1e-10``.  Dependent rows
   formed in floating point sit at ~1e-16, near-dependent independent rows of
   the generators at >= 1e-7;
2. takes the SVD of ``K`` (size ``n + m``) and keeps its ``k = n + r`` largest
   singular values: the ``m - r`` dropped ones are the redundant rows'
   directions ``(0, c)`` with ``A'c = 0``.  **kkt_condition** is
   ``s_1(K) / s_k(K)``: the 2-norm condition number of the raw KKT matrix when
   the hard rows are independent (``np.linalg.cond(K)``), and otherwise that of
   the KKT matrix with the redundant rows removed orthogonally (``A``
   replaced by ``S_r V_r'`` from its SVD; the nonzero singular values of ``K``
   are exactly those of that reduced matrix);
3. solves ``K z = rhs`` by the truncated (rank-``k``) pseudo-inverse and
   refines it three times with residuals in ``numpy.longdouble`` (80-bit on
   x86), so the reference is accurate to ~eps even at condition 1e10;
4. classifies: ``"non_unique"`` when ``s_k / s_1 <= SINGULAR_RTOL`` (1e-14) or
   a dropped direction moves the variables (``||V_drop[:n]|| > 1e-6``);
   ``"infeasible"`` when the hard rows are inconsistent -- the part of the
   row-scaled ``b`` outside the range of the row-scaled ``A`` exceeds
   ``FEASIBILITY_RTOL * (||b|| + ||A|| ||x||)``, ``x`` the rows' own
   minimum-norm solution (1e-9; a badly scaled row would hide in a KKT
   residual, whose multipliers can be large, and the KKT point of
   inconsistent rows runs off along ``H``'s weak directions) -- or when
   the normwise backward error of the truncated solution,
   ``||K z - rhs|| / (||K|| ||z|| + ||rhs||)``, exceeds ``FEASIBILITY_RTOL``
   (no stationary point for another reason); otherwise ``"unique"``.

A batch is ``"infeasible"`` if any element is, else ``"non_unique"`` if any
element is; ``kkt_condition`` is the largest over the elements.

``method="nullspace"`` computes the same solution by the null-space method
instead (``x = x_p + N z`` with ``A x_p = b`` by the pseudo-inverse of the
row-scaled ``A`` and ``N`` its null space; ``N'HN z = N'(g - H x_p)`` solved by
SVD) -- the cross-check of the first.

Examples
--------
>>> import numpy as np
>>> from factorgraph import FactorGraph, Variable, Quadratic, LinearEquality
>>> g = FactorGraph(); g.add_variable(Variable("x", 1)); g.add_variable(Variable("y", 1))
>>> _ = g.add(Quadratic(["x"], [[1.0]], [0.3]))
>>> _ = g.add(LinearEquality(["x", "y"], [[[1.0]], [[2.0]]], [1.0]))
>>> _ = g.add(LinearEquality(["x", "y"], [[[2.5]], [[5.0]]], [2.5]))   # the same row, scaled
>>> status, values, cond = reference_solve(g)
>>> status, round(float(values["x"][0]), 12), round(float(values["y"][0]), 12)
('unique', 0.3, 0.35)
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

RANK_RTOL = 1e-10
SINGULAR_RTOL = 1e-14
FEASIBILITY_RTOL = 1e-9
UNIQUENESS_ATOL = 1e-6
REFINEMENTS = 3


class Reference(NamedTuple):
    status: str  # "unique", "infeasible" or "non_unique"
    values: dict  # key -> batch + (dim,); for "infeasible"/"non_unique" the least-squares / minimum-norm point
    kkt_condition: float


def _batch_of(arrays_with_core) -> tuple:
    return np.broadcast_shapes(*(a.shape[: a.ndim - core] for a, core in arrays_with_core))


def _terms(graph):
    """Per factor: ("quad", keys, H, g) or ("eq", keys, [A_k], b), as plain arrays."""
    terms = []
    for f in graph.factors:
        if hasattr(f, "H") and hasattr(f, "weight") and hasattr(f, "A"):  # LeastSquares: rebuild A'WA, A'Wb
            shape = _batch_of([(a, 2) for a in f.A] + [(np.asarray(f.b), 1)])
            J = np.concatenate([np.broadcast_to(a, shape + a.shape[-2:]) for a in f.A], axis=-1)
            bb = np.broadcast_to(np.asarray(f.b, dtype=float), shape + f.b.shape[-1:])
            W = f.weight
            if W is None:
                WJ, Wb = J, bb
            else:
                W = np.asarray(W, dtype=float)
                WJ = W * J if W.ndim == 0 else W @ J
                Wb = W * bb if W.ndim == 0 else (W @ bb[..., None])[..., 0]
            Jt = np.swapaxes(J, -1, -2)
            terms.append(("quad", tuple(f.keys), Jt @ WJ, (Jt @ Wb[..., None])[..., 0]))
        elif hasattr(f, "H"):
            terms.append(("quad", tuple(f.keys), np.asarray(f.H, dtype=float), np.asarray(f.g, dtype=float)))
        else:
            terms.append(("eq", tuple(f.keys), [np.asarray(a, dtype=float) for a in f.A], np.asarray(f.b, dtype=float)))
    return terms


def assemble(graph):
    """Dense ``H (..., n, n)``, ``g (..., n)``, ``A (..., m, n)``, ``b (..., m)`` and the key -> slice index."""
    index, offset = {}, 0
    for var in graph.variables:
        index[var.key] = slice(offset, offset + var.dim)
        offset += var.dim
    n = offset
    terms = _terms(graph)
    cores = []
    for kind, _, M, v in terms:
        cores += [(a, 2) for a in M] if kind == "eq" else [(M, 2)]
        cores.append((v, 1))
    batch = _batch_of(cores) if cores else ()
    m = sum(v.shape[-1] for kind, _, _, v in terms if kind == "eq")
    H, g = np.zeros(batch + (n, n)), np.zeros(batch + (n,))
    A, b = np.zeros(batch + (m, n)), np.zeros(batch + (m,))
    row = 0
    for kind, keys, M, v in terms:
        if kind == "eq":
            rows = slice(row, row + v.shape[-1])
            for key, block in zip(keys, M):
                A[..., rows, index[key]] = block
            b[..., rows] = v
            row = rows.stop
        else:
            ix = np.concatenate([np.arange(index[k].start, index[k].stop) for k in keys])
            H[..., ix[:, None], ix[None, :]] += M
            g[..., ix] += v
    return H, g, A, b, index


def _row_scaled(A, b):
    norms = np.linalg.norm(A, axis=-1)
    safe = np.where(norms > 0, norms, 1.0)
    return A / safe[:, None], b / safe


def _rank(An) -> int:
    if An.shape[0] == 0:
        return 0
    s = np.linalg.svd(An, compute_uv=False)
    return int(np.sum(s > RANK_RTOL * s[0])) if s[0] > 0 else 0


def _rows(An, bn) -> tuple:
    """The row-scaled hard rows alone, from one SVD (rank by ``RANK_RTOL``): their minimum-norm least-squares
    solution ``xp``, a basis ``N`` of their null space, and whether they are inconsistent -- the part of ``bn``
    outside the range of ``An`` against ``bn`` and ``An xp``."""
    n = An.shape[1]
    if An.shape[0] == 0:
        return np.zeros(n), np.eye(n), False
    U, s, Vt = np.linalg.svd(An)
    r = int(np.sum(s > RANK_RTOL * s[0])) if s[0] > 0 else 0
    xp = Vt[:r].T @ ((U[:, :r].T @ bn) / s[:r])
    outside = np.linalg.norm(U[:, r:].T @ bn)
    return xp, Vt[r:].T, outside > FEASIBILITY_RTOL * (np.linalg.norm(bn) + s[0] * np.linalg.norm(xp) + 1e-300)


def _kkt_one(H, g, A, b):
    n, m = H.shape[0], A.shape[0]
    An, bn = _row_scaled(A, b)
    r = _rank(An)
    K = np.zeros((n + m, n + m))
    K[:n, :n], K[:n, n:], K[n:, :n] = H, A.T, A
    rhs = np.concatenate([g, b])
    U, s, Vt = np.linalg.svd(K)
    k = n + r
    if s[0] == 0:
        return "non_unique", np.zeros(n), np.inf
    cond = s[0] / s[k - 1] if s[k - 1] > 0 else np.inf
    status = "unique"
    if s[k - 1] <= SINGULAR_RTOL * s[0] or np.linalg.norm(Vt[k:, :n]) > UNIQUENESS_ATOL:
        status, cond = "non_unique", np.inf
        k = int(np.sum(s > SINGULAR_RTOL * s[0]))
    Uk, sk, Vk = U[:, :k], s[:k], Vt[:k].T

    def pinv(v):
        return Vk @ ((Uk.T @ v) / sk)

    z = pinv(rhs)
    K_ld, rhs_ld = K.astype(np.longdouble), rhs.astype(np.longdouble)
    for _ in range(REFINEMENTS):
        residual = rhs_ld - K_ld @ z.astype(np.longdouble)
        z = z + pinv(residual.astype(float))
    residual = rhs_ld - K_ld @ z.astype(np.longdouble)
    eta = float(np.linalg.norm(residual.astype(float))) / (s[0] * np.linalg.norm(z) + np.linalg.norm(rhs) + 1e-300)
    # the rows judged against their own solution: the KKT point of inconsistent rows runs off along H's weak
    # directions (|x| 1e9 at condition 4e10), and its size would excuse them
    if status == "unique" and (eta > FEASIBILITY_RTOL or _rows(An, bn)[2]):
        status = "infeasible"
    return status, z[:n], cond


def _nullspace_one(H, g, A, b):
    xp, N, infeasible = _rows(*_row_scaled(A, b))
    M = N.T @ H @ N
    rhs = N.T @ (g - H @ xp)
    if M.shape[0] == 0:
        return ("infeasible" if infeasible else "unique"), xp, 1.0
    Um, sm, Vmt = np.linalg.svd(M)
    if sm[0] == 0 or sm[-1] <= SINGULAR_RTOL * sm[0]:
        k = int(np.sum(sm > SINGULAR_RTOL * sm[0])) if sm[0] > 0 else 0
        z = Vmt[:k].T @ ((Um[:, :k].T @ rhs) / sm[:k])
        return ("infeasible" if infeasible else "non_unique"), xp + N @ z, np.inf
    z = Vmt.T @ ((Um.T @ rhs) / sm)
    return ("infeasible" if infeasible else "unique"), xp + N @ z, sm[0] / sm[-1]


def reference_solve(graph, method: str = "kkt") -> Reference:
    """Solve ``graph`` densely; see the module docstring.

    Parameters
    ----------
    graph : factorgraph.FactorGraph
    method : {"kkt", "nullspace"}
        Truncated-SVD solve of the KKT system (with ``kkt_condition``) or the
        null-space method (whose third entry is then the condition number of
        the reduced Hessian ``N'HN``, not of the KKT matrix).

    Returns
    -------
    Reference
        ``(status, values, kkt_condition)``.
    """
    one = {"kkt": _kkt_one, "nullspace": _nullspace_one}[method]
    H, g, A, b, index = assemble(graph)
    batch = H.shape[:-2]
    statuses, conds = [], []
    z = np.zeros(batch + (H.shape[-1],))
    for e in np.ndindex(*batch):
        status, ze, cond = one(H[e], g[e], A[e], b[e])
        statuses.append(status)
        conds.append(cond)
        z[e] = ze
    status = "infeasible" if "infeasible" in statuses else "non_unique" if "non_unique" in statuses else "unique"
    values = {key: z[..., s] for key, s in index.items()}
    return Reference(status, values, float(max(conds)))


def relative_error(values: dict, reference: dict) -> float:
    """Normwise relative error ``||x - x_ref||_inf / ||x_ref||_inf`` over all keys, worst batch element.

    ``nan`` when ``values`` holds a non-finite entry (a silent wrong answer), ``inf``
    when a key is missing.
    """
    worst = 0.0
    keys = list(reference)
    if any(k not in values for k in keys):
        return float("inf")
    ref = np.concatenate([np.asarray(reference[k]) for k in keys], axis=-1)
    got = np.concatenate([np.broadcast_to(values[k], np.shape(reference[k])) for k in keys], axis=-1)
    if not np.all(np.isfinite(got)):
        return float("nan")
    ref2, got2 = ref.reshape(-1, ref.shape[-1]), got.reshape(-1, got.shape[-1])
    for r, v in zip(ref2, got2):
        scale = np.max(np.abs(r), initial=0.0)
        err = np.max(np.abs(v - r), initial=0.0)
        worst = max(worst, err / scale if scale > 0 else err)
    return float(worst)
