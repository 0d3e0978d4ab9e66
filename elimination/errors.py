"""Errors raised by the elimination engine; all are ``ValueError`` subclasses."""
from __future__ import annotations

PROX_HINT = (
    "If the variables are constraint multipliers of redundant or singular constraints, use the "
    "proximal policy ('prox'), whose prior -1/(2 mu)||lambda - lambda_k||^2 keeps every pivot regular."
)


class OrderingError(ValueError):
    """The ordering does not fit the graph (unknown, missing or repeated variables)."""


class SingularProblemError(ValueError):
    """The problem has no unique solution, or none at all, as far as the numbers tell.

    Attributes
    ----------
    step : int
        Index of the elimination step (-1 when not tied to one).
    keys : tuple
        Frontal variables of that step.
    kind : str
        ``"singular"`` (a pivot vanishes: undetermined variables or redundant
        multipliers), ``"inconsistent"`` (hard equalities contradict each
        other), ``"undetermined"`` (free directions with no quadratic term),
        ``"ill-conditioned"`` (suspect pivots whose solution refinement could
        not settle), or ``""`` when raised outside the engine.
    factors : tuple of int
        Indices of the graph's factors involved (``FactorGraph.add`` order);
        empty when the cause is a pivot.
    """

    def __init__(self, message: str, step: int = -1, keys: tuple = (), kind: str = "", factors: tuple = ()):
        super().__init__(message)
        self.step = step
        self.keys = keys
        self.kind = kind
        self.factors = factors
