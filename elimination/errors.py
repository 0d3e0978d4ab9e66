"""Errors raised by the elimination engine; all are ``ValueError`` subclasses."""
from __future__ import annotations

PROX_HINT = (
    "If the variables are constraint multipliers of redundant or singular constraints, use the "
    "proximal policy ('prox'), whose prior -1/(2 mu)||lambda - lambda_k||^2 keeps every pivot regular."
)


class OrderingError(ValueError):
    """The ordering does not fit the graph (unknown, missing or repeated variables)."""


class SingularProblemError(ValueError):
    """A pivot of the elimination is numerically singular or has the wrong sign.

    Attributes
    ----------
    step : int
        Index of the elimination step.
    keys : tuple
        Frontal variables of that step.
    """

    def __init__(self, message: str, step: int, keys: tuple):
        super().__init__(message)
        self.step = step
        self.keys = keys
