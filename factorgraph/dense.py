"""The dense reference: assemble the whole KKT system and solve it with numpy.

Every elimination order is tested against this.  With ``H`` the sum of the
quadratic factors and ``A x = b`` the stacked hard equalities (multipliers
``nu``, Lagrangian ``E(x) + nu'(A x - b)``), the stationarity conditions are

    [ H  A' ] [ x  ]   [ g ]
    [ A  0  ] [ nu ] = [ b ].
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .factors import LinearEquality


@dataclass(frozen=True)
class DenseSystem:
    """Dense KKT system of a factor graph.

    Attributes
    ----------
    K : ndarray, shape (..., n + m, n + m)
        KKT matrix; the first ``n`` rows/columns are the variables stacked in
        insertion order, the last ``m`` the hard equality rows.
    rhs : ndarray, shape (..., n + m)
    index : dict
        Variable key -> slice of its entries in the first ``n``.
    rows : dict
        Equality factor index -> slice of its rows in the last ``m`` (offset by ``n``).
    """

    K: np.ndarray
    rhs: np.ndarray
    index: dict
    rows: dict

    @property
    def n(self) -> int:
        return sum(s.stop - s.start for s in self.index.values())


def _scope_indices(index: dict, keys) -> np.ndarray:
    return np.concatenate([np.arange(index[k].start, index[k].stop) for k in keys])


def to_dense(graph) -> DenseSystem:
    """Assemble the dense KKT system of ``graph``.

    Examples
    --------
    >>> import numpy as np
    >>> from factorgraph import FactorGraph, Variable, Quadratic
    >>> g = FactorGraph(); g.add_variable(Variable("x", 2))
    >>> _ = g.add(Quadratic(["x"], np.eye(2), [1.0, 2.0]))
    >>> to_dense(g).K.tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    index, offset = {}, 0
    for var in graph.variables:
        index[var.key] = slice(offset, offset + var.dim)
        offset += var.dim
    n = offset
    rows, m = {}, 0
    for i, factor in enumerate(graph.factors):
        if isinstance(factor, LinearEquality):
            rows[i] = slice(n + m, n + m + factor.rows)
            m += factor.rows
    K = np.zeros(graph.batch_shape + (n + m, n + m))
    rhs = np.zeros(graph.batch_shape + (n + m,))
    for i, factor in enumerate(graph.factors):
        if isinstance(factor, LinearEquality):
            r = rows[i]
            for key, block in zip(factor.keys, factor.A):
                K[..., r, index[key]] = block
                K[..., index[key], r] = np.swapaxes(block, -1, -2)
            rhs[..., r] = factor.b
        else:
            ix = _scope_indices(index, factor.keys)
            K[..., ix[:, None], ix[None, :]] += factor.H
            rhs[..., ix] += factor.g
    return DenseSystem(K, rhs, index, rows)


def dense_solve(graph, multipliers: bool = False):
    """Solve the graph's problem by one dense KKT solve (``numpy.linalg.solve``).

    Parameters
    ----------
    graph : FactorGraph
    multipliers : bool
        Also return the multipliers ``nu`` of the hard equalities, keyed by
        factor index (sign convention of the module docstring).

    Returns
    -------
    dict
        Variable key -> value of shape ``batch_shape + (dim,)``; with
        ``multipliers=True`` a pair ``(values, {factor index: nu})``.

    Raises
    ------
    ValueError
        If the KKT matrix is singular (an undetermined variable or dependent
        hard equalities).
    """
    system = to_dense(graph)
    try:
        z = np.linalg.solve(system.K, system.rhs[..., None])[..., 0]
    except np.linalg.LinAlgError:
        raise ValueError(
            "the KKT matrix of the graph is singular: some variable is undetermined or the hard "
            "equalities are linearly dependent"
        ) from None
    values = {key: z[..., s] for key, s in system.index.items()}
    if multipliers:
        return values, {i: z[..., s] for i, s in system.rows.items()}
    return values
