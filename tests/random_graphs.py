"""Random well-posed Gaussian factor graphs for property tests.

Hypothesis draws the *structure* (dimensions, scopes, row counts, which
multipliers are regularized); a seeded numpy generator draws the numbers, so
matrices are generic and the problem is well posed by construction:

* every primal variable ``("x", i)`` has a positive-definite prior, extra
  factors are positive semidefinite;
* every row of a hard equality or of an unregularized multiplier is matched
  to its own scalar primal dimension within its scope, so with generic
  coefficients the hard rows are independent; an equality with as many rows
  as one of its variables has dimensions may declare its block on it ``+-I``
  (``LinearEquality(units=...)``: a link's tree joint, a dynamics step), which
  the elimination substitutes without a decomposition;
* multipliers ``("lam", j)`` (role ``max``) enter through a bilinear factor
  ``lam'(K x - k)``, with the proximal prior ``-1/(2 mu)||lam - lam0||^2`` when
  regularized.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from factorgraph import FactorGraph, LinearEquality, Quadratic, Variable


@dataclass(frozen=True)
class GraphSpec:
    dims: tuple  # primal variable dimensions
    couplings: tuple  # scopes (tuples of primal indices) of extra PSD factors
    equalities: tuple  # (scope, rows)
    multipliers: tuple  # (dim, scope, regularized)
    seed: int
    units: tuple = ()  # (equality, position in its scope, sign): a block declared sign * I


def x(i: int):
    return ("x", i)


def lam(j: int):
    return ("lam", j)


def _scope(draw, n: int, max_size: int = 3) -> tuple:
    return tuple(draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=min(max_size, n), unique=True)))


@st.composite
def graph_specs(draw, max_vars: int = 7, multipliers: bool = True, hard_multipliers: bool = False, equalities: bool = True):
    n = draw(st.integers(1, max_vars))
    dims = tuple(draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)))
    couplings = tuple(_scope(draw, n) for _ in range(draw(st.integers(0, n + 2))))
    free = list(dims)  # scalar dimensions not yet matched to a hard row

    def claim(scope, rows):  # match rows to free dimensions of the scope (Hall's condition)
        if rows > sum(free[i] for i in scope):
            return False
        for i in scope:
            taken = min(rows, free[i])
            free[i] -= taken
            rows -= taken
        return True

    eqs, units = [], []
    for _ in range(draw(st.integers(0, 3)) if equalities else 0):
        scope, rows = _scope(draw, n), draw(st.integers(1, 3))
        if claim(scope, rows):
            square = [p for p, i in enumerate(scope) if dims[i] == rows]
            if square and draw(st.booleans()):
                units.append((len(eqs), draw(st.sampled_from(square)), draw(st.sampled_from((1, -1)))))
            eqs.append((scope, rows))
    mults = []
    for _ in range(draw(st.integers(0, 3)) if multipliers else 0):
        dim, scope = draw(st.integers(1, 2)), _scope(draw, n)
        regularized = not (hard_multipliers and draw(st.booleans()) and claim(scope, dim))
        mults.append((dim, scope, regularized))
    seed = draw(st.integers(0, 2**31 - 1))
    return GraphSpec(dims, couplings, tuple(eqs), tuple(mults), seed, tuple(units))


def _spd(rng, n: int, batch: tuple) -> np.ndarray:
    M = rng.normal(size=batch + (n, n))
    return M @ np.swapaxes(M, -1, -2) / n + np.eye(n)


def _psd(rng, n: int, batch: tuple) -> np.ndarray:
    M = rng.normal(size=batch + (n, max(1, n - 1)))
    return M @ np.swapaxes(M, -1, -2) / n


def build_graph(spec: GraphSpec, batch: tuple = (), mu: float = 1e3) -> FactorGraph:
    """The factor graph of ``spec``; numbers carry ``batch`` leading dimensions."""
    rng = np.random.default_rng(spec.seed)
    g = FactorGraph()
    for i, d in enumerate(spec.dims):
        g.add_variable(Variable(x(i), d))
    for j, (d, _, _) in enumerate(spec.multipliers):
        g.add_variable(Variable(lam(j), d, "max"))
    for i, d in enumerate(spec.dims):
        g.add(Quadratic([x(i)], _spd(rng, d, batch), rng.normal(size=batch + (d,))))
    for scope in spec.couplings:
        n = sum(spec.dims[i] for i in scope)
        g.add(Quadratic([x(i) for i in scope], _psd(rng, n, batch), rng.normal(size=batch + (n,))))
    declared = {e: (p, sign) for e, p, sign in spec.units}
    for e, (scope, rows) in enumerate(spec.equalities):
        blocks = [rng.normal(size=batch + (rows, spec.dims[i])) for i in scope]
        units = None
        if e in declared:
            p, sign = declared[e]
            blocks[p] = sign * np.broadcast_to(np.eye(rows), blocks[p].shape)
            units = [sign if q == p else 0 for q in range(len(scope))]
        g.add(LinearEquality([x(i) for i in scope], blocks, rng.normal(size=batch + (rows,)), units))
    for j, (d, scope, regularized) in enumerate(spec.multipliers):
        n = sum(spec.dims[i] for i in scope)
        K = rng.normal(size=batch + (d, n))
        H = np.zeros(batch + (d + n, d + n))
        H[..., :d, d:] = K
        H[..., d:, :d] = np.swapaxes(K, -1, -2)
        g.add(Quadratic([lam(j)] + [x(i) for i in scope], H, np.concatenate(
            [rng.normal(size=batch + (d,)), np.zeros(batch + (n,))], axis=-1)))
        if regularized:
            g.add(Quadratic([lam(j)], -np.eye(d) / mu * np.ones(batch + (1, 1)), rng.normal(size=batch + (d,)) / mu))
    return g


MAX_CONDITION = 1e6  # forward errors of backward-stable solvers stay below 1e-9


def well_conditioned(graph: FactorGraph) -> bool:
    """KKT condition number below :data:`MAX_CONDITION`, so that a 1e-9 relative
    agreement is a fair demand on both the dense solve and the elimination."""
    return bool(np.all(np.linalg.cond(graph.to_dense().K) < MAX_CONDITION))


def max_relative_error(values: dict, reference: dict) -> float:
    """``max |x - x_ref| / (1 + max |x_ref|)`` over all keys."""
    scale = 1.0 + max(np.max(np.abs(v)) for v in reference.values())
    return max(np.max(np.abs(values[k] - reference[k])) for k in reference) / scale


def take(graph: FactorGraph, index) -> FactorGraph:
    """The graph of one batch element: every batched array indexed by ``index``."""
    from factorgraph import LeastSquares  # noqa: F401  (LeastSquares is a Quadratic)

    def pick(array, core):
        return array[index] if array.ndim > core else array

    out = FactorGraph()
    for var in graph.variables:
        out.add_variable(var)
    for f in graph.factors:
        if isinstance(f, LinearEquality):
            out.add(LinearEquality(f.keys, [pick(a, 2) for a in f.A], pick(f.b, 1), f.units or None))
        else:
            out.add(Quadratic(f.keys, pick(f.H, 2), pick(f.g, 1)))
    return out


def with_linear_terms(graph: FactorGraph, g: dict, b: dict) -> FactorGraph:
    """A copy of ``graph`` whose factor ``i`` has information vector ``g[i]`` / right-hand side ``b[i]``."""
    out = FactorGraph()
    for var in graph.variables:
        out.add_variable(var)
    for i, f in enumerate(graph.factors):
        if isinstance(f, LinearEquality):
            out.add(LinearEquality(f.keys, list(f.A), b.get(i, f.b), f.units or None))
        else:
            out.add(Quadratic(f.keys, f.H, g.get(i, f.g)))
    return out
