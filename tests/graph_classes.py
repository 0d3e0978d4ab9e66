"""Random Gaussian factor graphs in the classes of issue 7 ("No silent wrong answers").

One generator, :func:`make_graph`, driven by a numpy ``Generator`` (so a plain
numpy benchmark and hypothesis tests draw the same graphs), plus hypothesis
strategies (:func:`generated_graphs`) that draw a seed and the sizes and call it.

Classes (``kind``)
------------------
``"well_posed"``
    Primal variables ``("x", i)`` (dims ``1..max_dim``) with quadratic priors
    (``Quadratic`` SPD or full-column-rank ``LeastSquares``, sometimes weighted),
    coupling factors on 1-3 variables (PSD ``Quadratic`` or ``LeastSquares``),
    hard ``LinearEquality`` factors whose rows are Hall-matched to their own
    scalar primal dimensions (so with generic coefficients they are
    independent), multipliers ``("lam", j)`` (role ``"max"``) entering through a
    bilinear factor ``lam'(K x - k)`` with the proximal prior
    ``-1/(2 mu)||lam - lam0||^2`` (``mu`` in ``10^[0, 3]``), and -- when
    ``hard_multipliers`` -- unregularized multipliers whose rows are matched too.
    A primal variable all of whose dimensions are matched to ``LinearEquality``
    rows may have no prior at all (it is fixed by the constraints).  Not one
    matched to an unregularized multiplier: with no quadratic term it could
    not be eliminated before that multiplier, and multipliers-last orders are
    the only ones expected to work with such multipliers.  The primal solution and
    every multiplier variable are unique by construction.
``"ill_conditioned"``
    The well-posed construction, then, with ``e`` drawn in ``[0.5, 2]``: every
    scalar of every primal variable scaled by ``10^U(-e/2, e/2)`` (multipliers
    by ``10^U(-e/4, e/4)``), every hard row by ``10^U(-e/2, e/2)``, prior
    eigenvalues spread over ``10^[-e, 0.5]``, ``mu`` in ``10^[2, 6]``, and 0-2
    near-dependent but independent hard rows (a combination of an existing
    factor's rows plus ``delta`` times a generic row, ``delta`` in
    ``10^[-3, -1]``; Hall-matched like the others).  On 12 variables of dims
    1-4 the KKT condition number has percentiles 10/50/90 at about
    ``5e2 / 5e5 / 3e8`` (max ~1e13); about 0.3% exceed 1e14 and are then
    reported ``"non_unique"`` by the reference.
``"redundant"``
    A well-posed graph (with at least one hard factor) plus 1-3 hard factors
    whose rows are linear combinations of the existing ``LinearEquality`` rows
    (variants: ``duplicate`` -- an exact copy of some rows, keys permuted;
    ``scaled`` -- rows times a scalar such as 2.5 or a per-row scale;
    ``combination`` -- random combinations of the rows of 1-3 factors over the
    union of their scopes; ``cancel`` -- a combination of rows of factors
    sharing a variable chosen so that variable's columns cancel, the result
    dropped from the scope (``x = y, y = z`` gives ``x = z``); ``self`` -- a
    factor holding some rows of another factor *and* combinations of them).
    Right-hand sides are the same combinations of the right-hand sides, so the
    rows are consistent and the solution is unchanged (and unique).  Rows are
    dependent up to the round-off of forming them (duplicates and power-of-two
    scalings exactly).  Unregularized multipliers' rows never enter a
    combination, so every multiplier variable stays unique.
``"inconsistent"``
    As ``"redundant"``, but one row of the first redundant factor has its
    right-hand side moved by ``+-U(0.5, 2) * ||row||`` (``x = y`` and
    ``x - y = 1``): no solution exists.

``batch``: with probability 0.2 (``batch=None``) a graph carries a leading batch
dimension of 2 or 3; each factor array is then batched with probability 0.75
and otherwise broadcast.  Redundant rows are formed per batch element.

Variables are added primal first, multipliers last, so the ``natural``
ordering eliminates multipliers last; the factors are added in random order.

Examples
--------
>>> import numpy as np
>>> gen = make_graph("redundant", np.random.default_rng(3), 4)
>>> gen.kind, len(gen.additions) >= 1
('redundant', True)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

try:  # the strategies need hypothesis; make_graph does not (benchmarks/reliability.py)
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    st = None

from factorgraph import FactorGraph, LeastSquares, LinearEquality, Quadratic, Variable

KINDS = ("well_posed", "ill_conditioned", "redundant", "inconsistent")
VARIANTS = ("duplicate", "scaled", "combination", "cancel", "self")


def x(i: int):
    return ("x", i)


def lam(j: int):
    return ("lam", j)


@dataclass
class Generated:
    """A generated graph and what the generator knows about it.

    Attributes
    ----------
    graph : FactorGraph
    kind : str
        One of :data:`KINDS`.
    hard_multipliers : tuple
        Keys of the multipliers with no prior (only multipliers-last orders
        are expected to eliminate them).
    multiplier_scopes : dict
        Multiplier key -> primal keys of its bilinear factor.
    batch : tuple
        Leading batch shape of the graph.
    additions : list of (factor index, variant, description)
        The redundant (or, first one, inconsistent) hard factors added.
    repro : str
        A Python expression that rebuilds this graph.
    """

    graph: FactorGraph
    kind: str
    hard_multipliers: tuple = ()
    multiplier_scopes: dict = field(default_factory=dict)
    batch: tuple = ()
    additions: list = field(default_factory=list)
    repro: str = ""

    def __repr__(self) -> str:  # what hypothesis prints for a falsifying example
        return f"Generated({self.repro or self.kind}: {self.graph!r}, batch={self.batch}, additions={self.additions})"


class _Builder:
    """Factor data kept as plain arrays until the end, so scalings apply to everything."""

    def __init__(self, rng: np.random.Generator, batch: tuple):
        self.rng = rng
        self.batch = batch
        self.dims: list[int] = []
        self.free: list[int] = []  # scalar dims per primal variable not yet matched to a hard row
        self.multiplier_matched: set = set()  # primal variables with a dim matched to an unregularized multiplier
        self.factors: list[dict] = []  # {"type": "quad"|"ls"|"eq", "keys", ...}
        self.mult_dims: list[int] = []
        self.mult_scopes: dict = {}
        self.hard: list = []

    # -- random numbers ----------------------------------------------------------------
    def shape(self, *core) -> tuple:
        if self.batch and self.rng.random() < 0.75:
            return self.batch + tuple(core)
        return tuple(core)

    def normal(self, *core) -> np.ndarray:
        return self.rng.normal(size=self.shape(*core))

    def dim(self, key) -> int:
        return self.dims[key[1]] if key[0] == "x" else self.mult_dims[key[1]]

    def claim(self, scope: list, rows: int, multiplier: bool = False) -> bool:
        """Match ``rows`` hard rows to free scalar dims of ``scope`` (Hall's condition)."""
        if rows > sum(self.free[i] for i in scope):
            return False
        for i in self.rng.permutation(scope):
            taken = min(rows, self.free[i])
            self.free[i] -= taken
            rows -= taken
            if multiplier and taken:
                self.multiplier_matched.add(int(i))
        return True

    def scope(self, n: int, max_size: int = 3) -> list:
        size = int(self.rng.integers(1, min(max_size, n) + 1))
        return [int(i) for i in self.rng.choice(n, size=size, replace=False)]


def _spd(rng, n: int, shape: tuple, spread: float = 0.0) -> np.ndarray:
    """Symmetric positive definite; eigenvalues in [1, ~3] or, with ``spread``, over 10^[-spread, 0.5]."""
    if spread <= 0:
        M = rng.normal(size=shape + (n, n))
        return M @ np.swapaxes(M, -1, -2) / n + np.eye(n)
    Q, _ = np.linalg.qr(rng.normal(size=shape + (n, n)))
    w = 10.0 ** rng.uniform(-spread, 0.5, size=shape + (n,))
    S = (Q * w[..., None, :]) @ np.swapaxes(Q, -1, -2)
    return 0.5 * (S + np.swapaxes(S, -1, -2))


def _psd(rng, n: int, shape: tuple) -> np.ndarray:
    M = rng.normal(size=shape + (n, max(1, n - 1)))
    return M @ np.swapaxes(M, -1, -2) / n


def _weight(b: _Builder, m: int):
    choice = b.rng.integers(3)
    if choice == 0:
        return None
    if choice == 1:
        return float(b.rng.uniform(0.5, 2.0))
    return _spd(b.rng, m, b.shape())


def _add_prior(b: _Builder, i: int, spread: float) -> None:
    d = b.dims[i]
    if b.rng.random() < 0.5:
        b.factors.append({"type": "quad", "keys": [x(i)], "H": _spd(b.rng, d, b.shape(), spread), "g": b.normal(d)})
    else:
        m = d + int(b.rng.integers(0, 3))
        A = b.normal(m, d)
        if spread > 0:  # spread the prior's singular values too
            A = A @ np.diag(10.0 ** b.rng.uniform(-spread / 2, 0.25, size=d))
        b.factors.append({"type": "ls", "keys": [x(i)], "A": [A], "b": b.normal(m), "W": _weight(b, m)})


def _add_coupling(b: _Builder, n: int) -> None:
    scope = b.scope(n)
    keys = [x(i) for i in scope]
    size = sum(b.dims[i] for i in scope)
    if b.rng.random() < 0.5:
        b.factors.append({"type": "quad", "keys": keys, "H": _psd(b.rng, size, b.shape()), "g": b.normal(size)})
    else:
        m = int(b.rng.integers(1, 5))
        b.factors.append({"type": "ls", "keys": keys, "A": [b.normal(m, b.dims[i]) for i in scope],
                          "b": b.normal(m), "W": _weight(b, m)})


def _add_equality(b: _Builder, n: int, force: bool = False) -> bool:
    for _ in range(20 if force else 1):
        scope, rows = b.scope(n), int(b.rng.integers(1, 4))
        if not b.claim(scope, rows):
            if force:  # fall back to one row on the variable with the most free dims
                rows = 1
                if not b.claim(scope, rows):
                    continue
            else:
                return False
        b.factors.append({"type": "eq", "keys": [x(i) for i in scope],
                          "A": [b.normal(rows, b.dims[i]) for i in scope], "b": b.normal(rows)})
        return True
    return False


def _add_multiplier(b: _Builder, n: int, allow_hard: bool, log_mu: tuple) -> None:
    j = len(b.mult_dims)
    d, scope = int(b.rng.integers(1, 4)), b.scope(n)
    hard = allow_hard and b.rng.random() < 0.5 and b.claim(scope, d, multiplier=True)
    b.mult_dims.append(d)
    key = lam(j)
    b.mult_scopes[key] = tuple(x(i) for i in scope)
    size = sum(b.dims[i] for i in scope)
    K, k = b.normal(d, size), b.normal(d)
    shape = np.broadcast_shapes(K.shape[:-2], k.shape[:-1])
    H = np.zeros(shape + (d + size, d + size))
    H[..., :d, d:] = K
    H[..., d:, :d] = np.swapaxes(K, -1, -2)
    g = np.concatenate([np.broadcast_to(k, shape + (d,)), np.zeros(shape + (size,))], axis=-1)
    b.factors.append({"type": "quad", "keys": [key] + [x(i) for i in scope], "H": H, "g": g})
    if hard:
        b.hard.append(key)
    else:
        mu = 10.0 ** b.rng.uniform(*log_mu)
        b.factors.append({"type": "quad", "keys": [key], "H": -np.eye(d) / mu * np.ones(b.shape(1, 1)),
                          "g": b.normal(d) / mu})


def _key_slices(b: _Builder, keys) -> list:
    out, offset = [], 0
    for k in keys:
        out.append(slice(offset, offset + b.dim(k)))
        offset += b.dim(k)
    return out


def _scale_everything(b: _Builder, e: float) -> None:
    """Scale every primal scalar by 10^U(-e/2, e/2) (multipliers e/4) and every hard row by 10^U(-e/2, e/2)."""
    col = {x(i): 10.0 ** b.rng.uniform(-e / 2, e / 2, size=d) for i, d in enumerate(b.dims)}
    col.update({lam(j): 10.0 ** b.rng.uniform(-e / 4, e / 4, size=d) for j, d in enumerate(b.mult_dims)})
    for f in b.factors:
        c = np.concatenate([col[k] for k in f["keys"]])
        if f["type"] == "quad":
            f["H"] = f["H"] * c[:, None] * c[None, :]
            f["g"] = f["g"] * c
        else:
            f["A"] = [A * col[k] for A, k in zip(f["A"], f["keys"])]
            if f["type"] == "eq":
                r = 10.0 ** b.rng.uniform(-e / 2, e / 2, size=f["b"].shape[-1])
                f["A"] = [A * r[:, None] for A in f["A"]]
                f["b"] = f["b"] * r


def _equalities(b: _Builder) -> list:
    return [f for f in b.factors if f["type"] == "eq"]


def _stack(b: _Builder, factors: list, scope: list):
    """Rows of ``factors`` over ``scope`` (keys): ``M`` (..., m, n_scope) and ``rhs`` (..., m)."""
    slices = dict(zip(scope, _key_slices(b, scope)))
    n = sum(b.dim(k) for k in scope)
    shapes = [f["b"].shape[:-1] for f in factors] + [A.shape[:-2] for f in factors for A in f["A"]]
    shape = np.broadcast_shapes(*shapes)
    blocks, rhs = [], []
    for f in factors:
        m = f["b"].shape[-1]
        M = np.zeros(shape + (m, n))
        for A, k in zip(f["A"], f["keys"]):
            M[..., slices[k]] = A
        blocks.append(M)
        rhs.append(np.broadcast_to(f["b"], shape + (m,)))
    return np.concatenate(blocks, axis=-2), np.concatenate(rhs, axis=-1)


def _split(b: _Builder, M: np.ndarray, scope: list) -> list:
    return [M[..., s] for s in _key_slices(b, scope)]


def _near_dependent_row(b: _Builder, n: int) -> None:
    """An independent hard row that is a combination of an existing factor's rows plus delta * generic."""
    eqs = _equalities(b)
    if not eqs:
        return
    f = eqs[int(b.rng.integers(len(eqs)))]
    scope = list(f["keys"])
    extra = [x(i) for i in range(n) if x(i) not in scope and b.free[i] > 0]
    if extra and b.rng.random() < 0.5:
        scope.append(extra[int(b.rng.integers(len(extra)))])
    if not b.claim([k[1] for k in scope], 1):
        return
    M, rhs = _stack(b, [f], scope)
    w = b.rng.normal(size=M.shape[:-2] + (M.shape[-2],))
    delta = 10.0 ** b.rng.uniform(-3, -1)
    row = np.einsum("...m,...mn->...n", w, M)
    size = np.linalg.norm(row, axis=-1, keepdims=True) + 1.0
    noise = b.rng.normal(size=row.shape)
    row = row + delta * size * noise / np.linalg.norm(noise, axis=-1, keepdims=True)
    value = np.einsum("...m,...m->...", w, rhs) + delta * b.rng.normal(size=row.shape[:-1])
    b.factors.append({"type": "eq", "keys": scope, "A": [a[..., None, :] for a in _split(b, row, scope)],
                      "b": value[..., None]})


def _redundant_factor(b: _Builder, n: int, variant: str):
    """Rows dependent on the existing LinearEquality rows (consistent); returns (factor, variant, description).

    ``cancel`` falls back to ``combination`` when no variable can be cancelled.
    """
    rng = b.rng
    eqs = _equalities(b)
    originals = [f for f in eqs if not f.get("redundant")]
    if variant == "cancel":  # prefer a factor sharing a variable with another one
        sharing = [f for f in originals if any(g is not f and set(g["keys"]) & set(f["keys"]) for g in originals)]
        originals_for_f = sharing or originals
    else:
        originals_for_f = originals
    f = originals_for_f[int(rng.integers(len(originals_for_f)))]
    m = f["b"].shape[-1]
    if variant in ("duplicate", "scaled"):
        rows = np.sort(rng.choice(m, size=int(rng.integers(1, m + 1)), replace=False))
        order = rng.permutation(len(f["keys"]))
        keys = [f["keys"][o] for o in order]
        A = [f["A"][o][..., rows, :] for o in order]
        rhs = f["b"][..., rows]
        if variant == "duplicate":
            return {"type": "eq", "keys": keys, "A": A, "b": rhs}, variant, f"duplicate of rows {rows.tolist()} of {f['keys']}"
        if rng.random() < 0.5:
            c = np.array([2.5, -1.0, 0.5, 4.0, -0.3, 1e-3, 7e2])[int(rng.integers(7))] * np.ones(len(rows))
        else:
            c = rng.choice([-1, 1], size=len(rows)) * 10.0 ** rng.uniform(-2, 2, size=len(rows))
        return ({"type": "eq", "keys": keys, "A": [a * c[:, None] for a in A], "b": rhs * c}, variant,
                f"rows {rows.tolist()} of {f['keys']} scaled by {np.round(c, 4).tolist()}")
    if variant == "self":
        scope = list(f["keys"])
        M, rhs = _stack(b, [f], scope)
        k = int(rng.integers(1, 3))
        W = rng.normal(size=M.shape[:-2] + (k, m))
        M2 = np.concatenate([M, W @ M], axis=-2)
        r2 = np.concatenate([rhs, np.einsum("...km,...m->...k", W, rhs)], axis=-1)
        return ({"type": "eq", "keys": scope, "A": _split(b, M2, scope), "b": r2}, variant,
                f"rows of {f['keys']} and {k} combination(s) of them in one factor")
    # combinations over several factors
    pool = [f]
    if variant == "cancel":
        shared = [g for g in originals if g is not f and set(g["keys"]) & set(f["keys"])]
        if shared:
            pool.append(shared[int(rng.integers(len(shared)))])
    else:
        for g in rng.permutation(len(originals))[: int(rng.integers(0, 3))]:
            if originals[g] is not f:
                pool.append(originals[g])
    scope = list(dict.fromkeys(k for g in pool for k in g["keys"]))
    M, rhs = _stack(b, pool, scope)
    total = M.shape[-2]
    if variant == "cancel":
        common = [k for k in pool[0]["keys"] if all(k in g["keys"] for g in pool)]
        target = common[int(rng.integers(len(common)))]
        cols = _key_slices(b, scope)[scope.index(target)]
        _, s, Vt = np.linalg.svd(np.swapaxes(M[..., cols], -1, -2), full_matrices=True)
        rank = int(np.sum(s[..., :] > 1e-12 * s[..., :1], axis=-1).max()) if s.size else 0
        left = Vt[..., rank:, :]  # left null space of the target's columns
        if left.shape[-2] > 0 and len(scope) > 1:
            w = np.einsum("...k,...km->...m", rng.normal(size=left.shape[:-1]), left)
            row = np.einsum("...m,...mn->...n", w, M)
            keep = [k for k in scope if k != target]
            kept_cols = np.concatenate([np.arange(s_.start, s_.stop) for k, s_ in zip(scope, _key_slices(b, scope))
                                        if k != target])
            row = row[..., kept_cols]
            value = np.einsum("...m,...m->...", w, rhs)
            return ({"type": "eq", "keys": keep, "A": [a[..., None, :] for a in _split(b, row, keep)],
                     "b": value[..., None]}, variant,
                    f"combination of {[g['keys'] for g in pool]} cancelling {target}")
    k = int(rng.integers(1, 3))
    W = rng.normal(size=M.shape[:-2] + (k, total))
    return ({"type": "eq", "keys": scope, "A": _split(b, W @ M, scope), "b": np.einsum("...km,...m->...k", W, rhs)},
            "combination", f"{k} combination(s) of the rows of {[g['keys'] for g in pool]}")


def make_graph(
    kind: str,
    rng: np.random.Generator,
    n_vars: int | None = None,
    max_dim: int = 6,
    batch: tuple | None = None,
    hard_multipliers: bool | None = None,
    max_vars: int = 60,
) -> Generated:
    """Draw one graph of class ``kind`` (see the module docstring).

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    rng : numpy.random.Generator
        Every number (and every size left ``None``) is drawn from it.
    n_vars : int, optional
        Number of primal variables; drawn in ``[2, max_vars]`` when ``None``.
    max_dim : int
        Variable dimensions are drawn in ``[1, max_dim]``.
    batch : tuple, optional
        Leading batch shape; ``None`` draws ``()`` (80%) or ``(2,)``/``(3,)``.
    hard_multipliers : bool, optional
        Allow unregularized multipliers; ``None`` draws it (30% yes).

    Returns
    -------
    Generated
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; use one of {KINDS}")
    if n_vars is None:
        n_vars = int(rng.integers(2, max_vars + 1))
    if batch is None:
        batch = (int(rng.integers(2, 4)),) if rng.random() < 0.2 else ()
    if hard_multipliers is None:
        hard_multipliers = bool(rng.random() < 0.3)
    ill = kind == "ill_conditioned"
    e = float(rng.uniform(0.5, 2.0)) if ill else 0.0
    b = _Builder(rng, tuple(batch))
    b.dims = [int(d) for d in rng.integers(1, max_dim + 1, size=n_vars)]
    b.free = list(b.dims)
    n = n_vars

    for _ in range(int(rng.integers(0, n // 2 + 2))):
        _add_equality(b, n)
    if kind in ("redundant", "inconsistent") and not _equalities(b):
        _add_equality(b, n, force=True)
    for _ in range(int(rng.integers(0, n // 3 + 2))):
        _add_multiplier(b, n, hard_multipliers, (2.0, 6.0) if ill else (0.0, 3.0))
    if ill:
        for _ in range(int(rng.integers(0, 3))):
            _near_dependent_row(b, n)
    for _ in range(int(rng.integers(0, n + 2))):
        _add_coupling(b, n)
    for i in range(n):  # a variable fixed by its matched LinearEquality rows may go without a prior
        if b.free[i] > 0 or i in b.multiplier_matched or rng.random() < 0.6:
            _add_prior(b, i, e)
    if ill:
        _scale_everything(b, e)

    additions = []
    if kind in ("redundant", "inconsistent"):
        for count in range(int(rng.integers(1, 4))):
            variant = VARIANTS[int(rng.integers(len(VARIANTS)))]
            factor, variant, what = _redundant_factor(b, n, variant)
            if kind == "inconsistent" and count == 0:
                M, rhs = _stack(b, [factor], list(factor["keys"]))
                i = int(rng.integers(rhs.shape[-1]))
                norm = np.linalg.norm(M[..., i, :], axis=-1)
                shift = rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 2.0, size=norm.shape) * norm
                rhs = rhs.copy()
                rhs[..., i] += shift
                factor["b"] = rhs
                factor["A"] = _split(b, M, list(factor["keys"]))
                what += f"; row {i} moved by {np.round(np.atleast_1d(shift), 3).tolist()} (inconsistent)"
            factor["redundant"] = True
            b.factors.append(factor)
            additions.append((factor, variant, what))

    graph = FactorGraph()
    for i, d in enumerate(b.dims):
        graph.add_variable(Variable(x(i), d))
    for j, d in enumerate(b.mult_dims):
        graph.add_variable(Variable(lam(j), d, "max"))
    order = rng.permutation(len(b.factors))
    index = {}
    for position in order:
        f = b.factors[position]
        if f["type"] == "quad":
            obj = Quadratic(f["keys"], f["H"], f["g"])
        elif f["type"] == "ls":
            obj = LeastSquares(f["keys"], f["A"], f["b"], weight=f["W"])
        else:
            obj = LinearEquality(f["keys"], list(f["A"]), f["b"])
        index[id(f)] = graph.add(obj)
    return Generated(
        graph=graph,
        kind=kind,
        hard_multipliers=tuple(b.hard),
        multiplier_scopes=dict(b.mult_scopes),
        batch=graph.batch_shape,
        additions=[(index[id(f)], variant, what) for f, variant, what in additions],
    )


def make_seeded(kind: str, seed: int, **options) -> Generated:
    """:func:`make_graph` with ``numpy.random.default_rng(seed)``, recording a repro expression."""
    gen = make_graph(kind, np.random.default_rng(seed), **options)
    args = "".join(f", {k}={v!r}" for k, v in options.items())
    gen.repro = f"make_seeded({kind!r}, {seed}{args})"
    return gen


def _generated_graphs(draw, kind: str, max_vars: int = 6, max_dim: int = 3, batches: bool = True,
                      hard_multipliers: bool | None = None) -> Generated:
    """Hypothesis strategy: a seed and a size, then :func:`make_seeded`.

    Shrinking acts on the number of variables and the seed; the printed
    example carries the ``make_seeded(...)`` call that rebuilds it.
    """
    seed = draw(st.integers(0, 2**32 - 1))
    n_vars = draw(st.integers(2 if kind in ("redundant", "inconsistent") else 1, max_vars))
    options = {"n_vars": n_vars, "max_dim": max_dim}
    if not batches:
        options["batch"] = ()
    if hard_multipliers is not None:
        options["hard_multipliers"] = hard_multipliers
    return make_seeded(kind, seed, **options)


generated_graphs = st.composite(_generated_graphs) if st is not None else None


def multipliers_last(key, state) -> bool:
    """Eligibility predicate: a ``max`` variable only once no ``min`` variable remains."""
    primal_left = any(state.remaining.nodes[k]["role"] == "min" for k in state.remaining)
    return state.remaining.nodes[key]["role"] == "min" or not primal_left
