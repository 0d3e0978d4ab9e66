"""Factors of a Gaussian factor graph.

Two kinds of factors carry all the information of a linear-quadratic problem:

* :class:`Quadratic` -- ``1/2 x' H x - g' x`` over the stacked scope variables
  (information form; ``H`` may be indefinite where the scope holds ``max``
  variables);
* :class:`LinearEquality` -- ``sum_k A_k x_k = b``, a hard constraint.

:class:`LeastSquares` -- ``1/2 ||A x - b||^2_W``, the form estimation users
write -- is a :class:`Quadratic` built from its Jacobian.

Every array may carry leading batch dimensions (``H`` of shape ``(..., n, n)``);
factors of one graph broadcast against each other.  A factor does not know the
dimensions of its variables: :meth:`factorgraph.FactorGraph.add` checks the
blocks against them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Sequence

import numpy as np

SYMMETRY_RTOL = 1e-9


@dataclass(frozen=True)
class FactorStructure:
    """What the symbolic analysis sees of a factor: its scope and hard rows.

    ``rows`` is the number of hard equality rows (0 for a soft, quadratic
    factor).  No numbers are involved, so a plan built from structures serves
    every numeric instance of the graph.  ``role`` is what the factor stands
    for in the model that built it (``FactorGraph.add(factor, role=...)``),
    for pictures and tables; it is not part of the structure (not compared).
    """

    keys: tuple
    rows: int = 0
    role: object = field(default=None, compare=False)
    units: tuple = ()

    @property
    def hard(self) -> bool:
        return self.rows > 0


def real_array(value, what: str) -> np.ndarray:
    """A float64 copy of ``value``; ``TypeError`` naming ``what`` unless it is real and numeric.

    Complex input is refused rather than cast (numpy would drop the imaginary
    part with a warning), and so are strings.  The copy means later edits of
    the caller's array do not reach the library.

    Examples
    --------
    >>> a = np.ones(2)
    >>> b = real_array(a, "x")
    >>> a[0] = 5.0
    >>> b.tolist()
    [1.0, 1.0]
    """
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):  # ragged nesting
        array = None
    if value is None or array is None:
        raise TypeError(f"{what} must be a numeric array, got {type(value).__name__}")
    if np.iscomplexobj(array):
        raise TypeError(f"{what} is complex; only real arrays are accepted "
                        f"(pass its real part, np.real(...), if the imaginary part is meant to be zero)")
    if array.dtype.kind not in "biufO":
        raise TypeError(f"{what} must be a numeric array, got dtype {array.dtype} ({type(value).__name__})")
    try:
        return array.astype(float, copy=True)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a real numeric array, got {type(value).__name__}") from None


def as_float_array(value, what: str, min_ndim: int) -> np.ndarray:
    """A finite float64 copy of ``value`` with at least ``min_ndim`` dims (see :func:`real_array`)."""
    array = real_array(value, what)
    if array.ndim < min_ndim:
        raise ValueError(f"{what} must have at least {min_ndim} dimension(s), got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{what} contains NaN or inf")
    return array


def _check_keys(keys, kind: str) -> tuple:
    if isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence):
        raise TypeError(f"{kind}: keys must be a list of variable keys, got {keys!r}")
    keys = tuple(keys)
    if not keys:
        raise ValueError(f"{kind}: a factor needs at least one variable key")
    seen = set()
    for key in keys:
        if key in seen:
            raise ValueError(f"{kind}: variable {key!r} appears twice in the scope {keys!r}")
        seen.add(key)
    return keys


def concat_last(arrays: Sequence[np.ndarray], core_ndim: int) -> np.ndarray:
    """Concatenate along the last axis, broadcasting only the batch dimensions.

    ``core_ndim`` is the number of trailing non-batch axes (1 for vectors, 2
    for matrices).
    """
    if len(arrays) == 1:
        return arrays[0]
    batches = [a.shape[: a.ndim - core_ndim] for a in arrays]
    if all(b == batches[0] for b in batches):
        return np.concatenate(arrays, axis=-1)
    batch = np.broadcast_shapes(*batches)
    return np.concatenate([np.broadcast_to(a, batch + a.shape[a.ndim - core_ndim :]) for a in arrays], axis=-1)


def _unit(block: np.ndarray) -> int:
    """``1`` / ``-1`` when the square block is exactly ``+I`` / ``-I`` (every batch element), else ``0``."""
    if block.shape[-1] != block.shape[-2]:
        return 0
    eye = np.eye(block.shape[-1])
    for sign in (1, -1):
        if np.array_equal(block, np.broadcast_to(sign * eye, block.shape)):
            return sign
    return 0


def check_block_columns(factor, blocks, dims) -> None:
    for key, block, dim in zip(factor.keys, blocks, dims):
        if block.shape[-1] != dim:
            raise ValueError(
                f"{type(factor).__name__} on {factor.keys}: block A for {key!r} has "
                f"{block.shape[-1]} columns but variable {key!r} has dimension {dim}"
            )


def _batch_shape(*arrays_with_core_ndim) -> tuple:
    return np.broadcast_shapes(*(a.shape[: a.ndim - core] for a, core in arrays_with_core_ndim))


class Quadratic:
    """Quadratic factor ``E(x) = 1/2 x' H x - g' x`` over the stacked scope.

    Parameters
    ----------
    keys : sequence of hashable
        Scope; ``x`` stacks these variables in this order.
    H : array_like, shape (..., n, n)
        Symmetric Hessian (information matrix) with ``n`` the sum of the scope
        dimensions, dense over the scope.
    g : array_like, shape (..., n), optional
        Information vector; zero when omitted.

    Examples
    --------
    >>> import numpy as np
    >>> f = Quadratic(["x"], 2 * np.eye(2), [2.0, 4.0])   # minimum at x = (1, 2)
    >>> f.size, f.batch_shape
    (2, ())
    """

    def __init__(self, keys: Sequence[Hashable], H, g=None):
        self.keys = _check_keys(keys, type(self).__name__)
        H = as_float_array(H, f"{type(self).__name__} on {self.keys}: H", 2)
        if H.shape[-1] != H.shape[-2]:
            raise ValueError(f"{type(self).__name__} on {self.keys}: H must be square, got shape {H.shape}")
        asymmetry = np.max(np.abs(H - np.swapaxes(H, -1, -2)), initial=0.0)
        if asymmetry > SYMMETRY_RTOL * max(1.0, np.max(np.abs(H), initial=0.0)):
            raise ValueError(
                f"{type(self).__name__} on {self.keys}: H is not symmetric "
                f"(max |H - H'| = {asymmetry:.3g}); pass (H + H') / 2"
            )
        n = H.shape[-1]
        if g is None:
            g = np.zeros(n)
        g = as_float_array(g, f"{type(self).__name__} on {self.keys}: g", 1)
        if g.shape[-1] != n:
            raise ValueError(
                f"{type(self).__name__} on {self.keys}: g has length {g.shape[-1]} but H is {n}x{n}"
            )
        self.H = 0.5 * (H + np.swapaxes(H, -1, -2))
        self.g = g
        self.batch_shape = _batch_shape((self.H, 2), (self.g, 1))

    @classmethod
    def trusted(cls, keys: tuple, H: np.ndarray, g: np.ndarray) -> "Quadratic":
        """A factor from arrays its builder made itself: float64, ``H`` symmetric ``(..., n, n)``, ``g``
        ``(..., n)``, ``keys`` a tuple of distinct keys -- not checked, not copied.

        For builders that fill the same factors for every state from validated
        input (the GPLC layout, from kinematics); anything else should use the
        constructor, which checks and copies.
        """
        factor = cls.__new__(cls)
        factor.keys, factor.H, factor.g = keys, H, g
        factor.batch_shape = _batch_shape((H, 2), (g, 1))
        return factor

    @property
    def size(self) -> int:
        """Total dimension ``n`` of the scope."""
        return self.H.shape[-1]

    def check_dims(self, dims: Sequence[int]) -> None:
        """Raise ``ValueError`` unless ``H`` matches variables of dimensions ``dims``."""
        if self.size != sum(dims):
            raise ValueError(
                f"{type(self).__name__} on {self.keys}: H is {self.size}x{self.size} but the scope "
                f"variables have dimensions {tuple(dims)} (total {sum(dims)})"
            )

    def structure(self) -> FactorStructure:
        return FactorStructure(self.keys, 0)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(keys={list(self.keys)!r}, n={self.size}, batch={self.batch_shape})"


class LinearEquality:
    """Hard linear constraint ``sum_k A_k x_k = b``.

    Parameters
    ----------
    keys : sequence of hashable
        Scope.
    A : sequence of array_like, one per key, each of shape (..., m, d_k)
        Coefficient blocks.
    b : array_like, shape (..., m)
        Right-hand side.
    units : sequence of {1, -1, 0}, optional
        Declares, per key, a block that is exactly ``+I`` (``1``) or ``-I``
        (``-1``) for every value the graph will take -- part of the structure,
        so a plan substitutes such a variable without a decomposition (a link
        acceleration through its own tree joint).  Checked against ``A``.

    Examples
    --------
    >>> import numpy as np
    >>> c = LinearEquality(["x", "y"], [np.eye(2), -np.eye(2)], np.zeros(2), units=(1, -1))  # x = y
    >>> c.rows, c.structure().units
    (2, (1, -1))
    """

    def __init__(self, keys: Sequence[Hashable], A: Sequence, b, units: Sequence[int] | None = None):
        self.keys = _check_keys(keys, "LinearEquality")
        if isinstance(A, np.ndarray) or not isinstance(A, Sequence):
            raise TypeError(
                f"LinearEquality on {self.keys}: A must be a list with one block per key "
                f"(got {type(A).__name__}); e.g. [A0, A1] for keys [k0, k1]"
            )
        if len(A) != len(self.keys):
            raise ValueError(
                f"LinearEquality on {self.keys}: {len(A)} coefficient blocks for {len(self.keys)} keys"
            )
        self.A = tuple(
            as_float_array(block, f"LinearEquality on {self.keys}: block A for {key!r}", 2)
            for key, block in zip(self.keys, A)
        )
        self.b = as_float_array(b, f"LinearEquality on {self.keys}: b", 1)
        m = self.b.shape[-1]
        for key, block in zip(self.keys, self.A):
            if block.shape[-2] != m:
                raise ValueError(
                    f"LinearEquality on {self.keys}: block A for {key!r} has {block.shape[-2]} rows "
                    f"but b has {m}"
                )
        self.batch_shape = _batch_shape(*((a, 2) for a in self.A), (self.b, 1))
        self.units = self._checked_units(units)

    @classmethod
    def trusted(cls, keys: tuple, A: tuple, b: np.ndarray, units: tuple = ()) -> "LinearEquality":
        """A constraint from arrays its builder made itself (see :meth:`Quadratic.trusted`): float64 blocks
        ``(..., m, d_k)`` one per key, ``b (..., m)``, and ``units`` declaring blocks the builder made
        exactly ``+-I`` -- not checked, not copied."""
        factor = cls.__new__(cls)
        factor.keys, factor.A, factor.b, factor.units = keys, tuple(A), b, tuple(units)
        factor.batch_shape = _batch_shape(*((a, 2) for a in factor.A), (b, 1))
        return factor

    def _checked_units(self, units) -> tuple:
        if units is None:
            return ()
        units = tuple(units)
        if len(units) != len(self.keys) or any(u not in (-1, 0, 1) for u in units):
            raise ValueError(f"LinearEquality on {self.keys}: units must give 1, -1 or 0 per key, got {units!r}")
        for key, block, unit in zip(self.keys, self.A, units):
            if unit and _unit(block) != unit:
                raise ValueError(
                    f"LinearEquality on {self.keys}: units declare the block of {key!r} {'+' if unit > 0 else '-'}I, "
                    f"but it is not exactly that (shape {block.shape})"
                )
        return units

    @property
    def rows(self) -> int:
        """Number of scalar equations ``m``."""
        return self.b.shape[-1]

    def check_dims(self, dims: Sequence[int]) -> None:
        """Raise ``ValueError`` unless each block has its variable's column count."""
        check_block_columns(self, self.A, dims)

    def structure(self) -> FactorStructure:
        return FactorStructure(self.keys, self.rows, units=self.units)

    def __repr__(self) -> str:
        return f"LinearEquality(keys={list(self.keys)!r}, rows={self.rows}, batch={self.batch_shape})"


class LeastSquares(Quadratic):
    """Least-squares factor ``1/2 ||A x - b||^2_W``, stored as a :class:`Quadratic`.

    ``H = A' W A`` and ``g = A' W b`` (the constant ``1/2 b' W b`` is dropped).

    Parameters
    ----------
    keys : sequence of hashable
        Scope.
    A : sequence of array_like, one per key, each of shape (..., m, d_k)
        Jacobian blocks.
    b : array_like, shape (..., m)
        Measurement (right-hand side).
    weight : None, float, or array_like of shape (..., m, m)
        Information matrix ``W`` (symmetric positive semidefinite); ``None``
        means identity, a float means ``weight * I``.  For a diagonal noise
        model with standard deviations ``s`` pass ``np.diag(1 / s**2)``.

    Examples
    --------
    >>> import numpy as np
    >>> f = LeastSquares(["x"], [np.eye(2)], [1.0, 2.0], weight=4.0)
    >>> f.H.tolist(), f.g.tolist()
    ([[4.0, 0.0], [0.0, 4.0]], [4.0, 8.0])
    """

    def __init__(self, keys: Sequence[Hashable], A: Sequence, b, weight=None):
        jacobian = LinearEquality(keys, A, b)  # reuses the block validation
        m = jacobian.rows
        self.A, self.b, self.weight = jacobian.A, jacobian.b, weight
        self.jacobian = concat_last(jacobian.A, 2)
        if weight is not None:
            W = as_float_array(weight, f"LeastSquares on {jacobian.keys}: weight", 0)
            if W.ndim != 0 and not (W.ndim >= 2 and W.shape[-2:] == (m, m)):
                raise ValueError(
                    f"LeastSquares on {jacobian.keys}: weight must be a scalar or an (..., {m}, {m}) "
                    f"information matrix, got shape {W.shape}"
                )
            self.weight = W
        At = np.swapaxes(self.jacobian, -1, -2)
        super().__init__(jacobian.keys, At @ self._weighted(self.jacobian), self.information(self.b))

    def _weighted(self, M: np.ndarray) -> np.ndarray:
        """``W M`` for a matrix ``M`` (..., m, k)."""
        if self.weight is None:
            return M
        return self.weight * M if self.weight.ndim == 0 else self.weight @ M

    def information(self, b: np.ndarray) -> np.ndarray:
        """``g = A' W b`` for a right-hand side ``b`` (..., m)."""
        return (np.swapaxes(self.jacobian, -1, -2) @ self._weighted(b[..., None]))[..., 0]

    def residual_information(self, x: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``A' W (b - A x)``, i.e. ``g - H x`` computed without the cancellation of ``g`` against ``H x``."""
        return self.information(b - (self.jacobian @ x[..., None])[..., 0])

    def check_dims(self, dims: Sequence[int]) -> None:
        check_block_columns(self, self.A, dims)
