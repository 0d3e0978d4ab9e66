"""The allocation-free SVD of the compiled substitutions against LAPACK's (numpy), on the ugly classes too."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from elimination.jacobi import load_tall, svd_rows

MAX = 12


@njit
def _svd(G, Bt, Rt, Ut, Vt, s, tau, nzv):
    m, n = G.shape
    load_tall(G, m, n, Bt)
    return svd_rows(Bt, max(m, n), min(m, n), Rt, Ut, Vt, s, tau, nzv)


def full_svd(G):
    """``U (m, m), s (k,), V (n, n)`` of ``G``, the scratch poisoned with NaN (nothing may be read unwritten)."""
    m, n = G.shape
    p, k = max(m, n), min(m, n)
    Bt, Rt, Ut, Vt = (np.full((MAX, MAX), np.nan) for _ in range(4))
    s, tau, nzv = np.full(MAX, np.nan), np.full(MAX, np.nan), np.full((MAX, MAX + 1), -1, dtype=np.int64)
    assert _svd(G, Bt, Rt, Ut, Vt, s, tau, nzv)
    left, right = Ut[:p, :p].T, Vt[:k, :k].T  # columns: the tall one's singular vectors
    return (left, s[:k], right) if m >= n else (right, s[:k], left)


def blocks(kind, m, n, rng):
    """A block of one of the classes a substitution meets."""
    G = rng.normal(size=(m, n))
    k = min(m, n)
    if kind == "low rank":  # exactly dependent rows and columns (redundant constraints)
        r = int(rng.integers(0, k))
        G = rng.normal(size=(m, r)) @ rng.normal(size=(r, n))
    elif kind == "repeated rows":
        G[rng.integers(0, m, size=m // 2)] = G[0]
        G[:, rng.integers(0, n)] = 0.0
    elif kind == "graded":  # ill-conditioned: singular values down to 1e-14
        G = G * np.logspace(0, -14, n)
    elif kind == "repeated values":  # orthonormal columns (a rigid transform's rows): every value 2
        Q = np.linalg.qr(rng.normal(size=(max(m, n), max(m, n))))[0]
        G = 2.0 * (Q[:m, :n] if m >= n else Q[:n, :m].T)
    elif kind == "zero":
        G = np.zeros((m, n))
    elif kind == "scaled identities":  # a link's hard rows: one nonzero each, every reflector sparse
        G = np.zeros((m, n))
        columns = rng.integers(0, n, size=m)
        columns[: min(m, n)] = rng.permutation(n)[: min(m, n)]
        G[np.arange(m), columns] = rng.choice([-1.0, 1.0], size=m) / np.sqrt(rng.integers(1, 4, size=m))
    return G


KINDS = ["generic", "low rank", "repeated rows", "graded", "repeated values", "zero", "scaled identities"]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, MAX), st.integers(1, MAX), st.sampled_from(KINDS), st.integers(0, 2**31 - 1))
def test_the_svd_reconstructs_the_block_with_lapacks_singular_values_and_orthogonal_bases(m, n, kind, seed):
    G = blocks(kind, m, n, np.random.default_rng(seed))
    U, s, V = full_svd(G)
    k = min(m, n)
    scale = max(1.0, np.abs(G).max())
    assert np.all(np.diff(s) <= 0.0)
    assert np.abs(s - np.linalg.svd(G, compute_uv=False)).max() <= 1e-13 * scale
    assert np.abs(U.T @ U - np.eye(m)).max() <= 1e-13
    assert np.abs(V.T @ V - np.eye(n)).max() <= 1e-13
    assert np.abs((U[:, :k] * s) @ V[:, :k].T - G).max() <= 1e-13 * scale


def test_the_bases_of_a_rank_deficient_block_span_its_range_and_null_spaces():
    """What a substitution reads: the left null space (the rows passed on) and the right one (the free
    directions) of a rank-2 block, both exact to round-off, with the pseudo-inverse LAPACK's."""
    rng = np.random.default_rng(3)
    for m, n in ((7, 4), (3, 6), (5, 5)):
        G = rng.normal(size=(m, 2)) @ rng.normal(size=(2, n))
        U, s, V = full_svd(G)
        assert np.abs(U[:, 2:].T @ G).max() <= 1e-13 and np.abs(G @ V[:, 2:]).max() <= 1e-13
        pinv = (V[:, :2] / s[:2]) @ U[:, :2].T
        assert np.allclose(pinv, np.linalg.pinv(G, rcond=1e-10), rtol=0, atol=1e-12)
