"""The numpy reference executor of a program: every step as its ``FRONT``, with the numpy rule's arithmetic.

It runs a program lowered without pairs (``plan.lowered(fuse=False)``: every
instruction means its ``FRONT``, every generated factor written out) on the
same flat workspaces as the compiled executor, a batch at once by
broadcasting: per step, the front gathered through the program's maps, the
numpy rule (:func:`elimination.gaussian.eliminate_gaussian`, the arithmetic
the rule-level path runs) eliminates it, and its outputs go where the program
says -- the generated factors into the factor and linear workspaces, the
values through the scatter maps.  It decides nothing from structure: what it
reads and writes is the program's; what it computes is the rule's.  So it
checks the program's data movement independently of the kernels, and it is
the template of an executor for other hardware (an array library in place
of numpy).  :func:`elimination.factorize_arrays` runs it with
``backend="numpy"``.
"""
from __future__ import annotations

import numpy as np

from .errors import SingularProblemError
from .gaussian import batch_note, eliminate_gaussian
from .program import F


def factorize(program, W: np.ndarray, floor: float) -> tuple:
    """``(conditionals, ratio (B,), weak (B,))``: every step of ``program`` (unfused) on the factor workspace
    ``W (B, factor_size)`` (its generated factors are written there); ``floor`` bounds the diagonal scales
    from below, as the compiled kernels' ``floor``.

    Raises
    ------
    SingularProblemError
        The numpy rule's (a refused pivot, named), or hard rows numerically dependent in some elements
        (re-planned by ``elimination.factorize`` on a ``FactorGraph``, not here)."""
    plan, maps = program.plan, program.maps
    B = W.shape[0]
    conditionals, ratio, weak = [], np.full(B, np.inf), np.full(B, -1, dtype=np.int64)
    for step, row in zip(plan.steps, program.steps):
        n, m = int(row[F["nF"]] + row[F["nS"]]), int(row[F["m"]])
        H = _summed(W, maps["H"], row[F["h0"]], row[F["h1"]], (B, n * n)).reshape(B, n, n)
        scale = np.maximum(_summed(W, maps["scale"], row[F["s0"]], row[F["s1"]], (B, n)), floor)
        A = row_scale = None
        if m:
            A = _placed(W, maps["A"], row[F["a0"]], row[F["a1"]], np.zeros((B, m * n))).reshape(B, m, n)
            row_scale = _placed(W, maps["rs"], row[F["w0"]], row[F["w1"]], np.ones((B, m)))
        out = eliminate_gaussian(step, H, scale, A, row_scale, check_rank=program.check_rank)
        if out.deficient is not None and np.any(out.deficient):
            raise SingularProblemError(
                f"step {step.index}: eliminating {list(step.frontal)}: its hard rows are numerically dependent"
                f"{batch_note(np.asarray(out.deficient))}; elimination.factorize on a FactorGraph of these numbers "
                f"re-plans such elements", step.index, step.frontal, kind="singular", factors=step.hard_factors)
        conditionals.append(out.conditional)
        if out.pivot_ratio is not None:
            weaker = np.broadcast_to(out.pivot_ratio, (B,)) < ratio
            ratio, weak = np.where(weaker, out.pivot_ratio, ratio), np.where(weaker, step.index, weak)
        _write_generated(W, row, out)
    return conditionals, ratio, weak


def solve(program, conditionals: list, L: np.ndarray, magnitude: np.ndarray | None, Bc: int) -> tuple:
    """``(X (B, value_size), dropped (B, dropped_size))`` for the linear terms ``L (B, linear_size)`` and the
    sizes ``magnitude`` of the hard rows' right-hand sides, as :func:`elimination.compiled.run_solve`: ``B``
    a multiple of the conditionals' batch ``Bc``, row ``b`` solved with element ``b % Bc`` (right-hand sides
    beyond the matrices' batch broadcast against the conditionals' arrays)."""
    maps = program.maps
    lead = (L.shape[0] // Bc, Bc)
    L = L.reshape(lead + L.shape[1:]).copy()  # the generated factors' terms are written among them
    M = np.abs(L) if magnitude is None else magnitude.reshape(L.shape).copy()
    X, dropped = np.zeros(lead + (program.value_size,)), np.zeros(lead + (program.dropped_size,))
    caches = []
    for row, conditional in zip(program.steps, conditionals):
        n, m = int(row[F["nF"]] + row[F["nS"]]), int(row[F["m"]])
        g = _summed(L, maps["g"], row[F["g0"]], row[F["g1"]], lead + (n,))
        b = _placed(L, maps["b"], row[F["b0"]], row[F["b1"]], np.zeros(lead + (m,))) if m else None
        size = _placed(M, maps["b"], row[F["b0"]], row[F["b1"]], np.zeros(lead + (m,))) if m else None
        cache, g_sep, b_sep, b_size, residual = conditional.forward(g, b, size)
        caches.append(cache)
        if row[F["out_g"]] >= 0:
            L[..., row[F["out_g"]] : row[F["out_g"]] + g_sep.shape[-1]] = g_sep
        if row[F["out_b"]] >= 0:
            p = int(row[F["p"]])
            L[..., row[F["out_b"]] : row[F["out_b"]] + p], M[..., row[F["out_b"]] : row[F["out_b"]] + p] = b_sep, b_size
        if residual is not None:
            d, at = int(row[F["d"]]), int(row[F["drop"]])
            dropped[..., at : at + d], dropped[..., at + d] = residual[0], residual[1][..., 0]
    for row, conditional, cache in zip(program.steps[::-1], conditionals[::-1], caches[::-1]):
        src, dst = _map(maps["xs"], row[F["xs0"]], row[F["xs1"]])
        x_sep = np.zeros(lead + (int(row[F["nS"]]),))
        x_sep[..., dst] = X[..., src]
        src, dst = _map(maps["xf"], row[F["xf0"]], row[F["xf1"]])
        X[..., src] = conditional.back(cache, x_sep)[..., dst]
    rows = lead[0] * lead[1]
    return X.reshape(rows, program.value_size), dropped.reshape(rows, program.dropped_size)


def _map(pair: tuple, lo, hi) -> tuple:
    return pair[0][lo:hi], pair[1][lo:hi]


def _summed(source: np.ndarray, pair: tuple, lo, hi, shape: tuple) -> np.ndarray:
    """A front gathered from ``source (..., size)``: entries several factors share are summed."""
    src, dst = _map(pair, lo, hi)
    out = np.zeros(shape)
    np.add.at(out, (Ellipsis, dst), source[..., src])
    return out


def _placed(source: np.ndarray, pair: tuple, lo, hi, out: np.ndarray) -> np.ndarray:
    """Rows gathered from ``source (..., size)`` into ``out`` (each entry from one factor)."""
    src, dst = _map(pair, lo, hi)
    out[..., dst] = source[..., src]
    return out


def _write_generated(W: np.ndarray, row: np.ndarray, out) -> None:
    """A step's generated factors where the program placed them: ``H`` then its scales; ``A`` on the
    equality columns then its row scales (1: generated rows are unit already)."""
    if row[F["out_H"]] >= 0 and out.H_sep is not None:
        k = out.H_sep.shape[-1]
        W[:, row[F["out_H"]] : row[F["out_H"]] + k * k] = out.H_sep.reshape(W.shape[0], -1)
        W[:, row[F["out_s"]] : row[F["out_s"]] + k] = out.scale_sep
    if row[F["out_A"]] >= 0 and out.A_sep is not None:
        size = out.A_sep.shape[-2] * out.A_sep.shape[-1]
        W[:, row[F["out_A"]] : row[F["out_A"]] + size] = out.A_sep.reshape(W.shape[0], -1)
        W[:, row[F["out_A"]] + size : row[F["out_A"]] + size + out.A_sep.shape[-2]] = 1.0
