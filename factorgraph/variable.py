"""Variables of a Gaussian factor graph."""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Hashable

import numpy as np

ROLES = ("min", "max")


@dataclass(frozen=True)
class Variable:
    """A vector variable of the graph.

    Parameters
    ----------
    key : hashable
        Name of the variable, unique in its graph (``"a3"``, ``("lam", 12)``...).
    dim : int
        Dimension, at least 1.
    role : {"min", "max"}
        ``"min"`` for a primal variable (the objective is minimized over it),
        ``"max"`` for a dual variable such as a Lagrange multiplier (the
        objective is maximized over it; its own Hessian block is negative
        semidefinite).

    Examples
    --------
    >>> Variable("lam", 3, "max")
    Variable(key='lam', dim=3, role='max')
    """

    key: Hashable
    dim: int
    role: str = "min"

    def __post_init__(self):
        try:
            hash(self.key)
        except TypeError:
            raise TypeError(f"variable key {self.key!r} is not hashable; use a str, int or tuple") from None
        if isinstance(self.dim, (bool, np.bool_)) or not isinstance(self.dim, numbers.Integral):
            raise TypeError(
                f"variable {self.key!r}: dim must be a positive int, got {type(self.dim).__name__} {self.dim!r}"
            )
        if self.dim < 1:
            raise ValueError(f"variable {self.key!r}: dim must be a positive int, got {self.dim!r}")
        object.__setattr__(self, "dim", int(self.dim))  # numpy integers accepted, stored as int
        if self.role not in ROLES:
            raise ValueError(f"variable {self.key!r}: role must be 'min' or 'max', got {self.role!r}")
