"""Gaussian factor graphs: variables, quadratic and hard linear factors.

Knows nothing of robots or of elimination orders.

>>> from factorgraph import FactorGraph, Variable, Quadratic, LinearEquality, LeastSquares
"""
from .dense import DenseSystem, dense_solve, to_dense
from .factors import FactorStructure, LeastSquares, LinearEquality, Quadratic
from .graph import FactorGraph, FactorNode, GraphStructure
from .variable import Variable

__all__ = [
    "DenseSystem",
    "FactorGraph",
    "FactorNode",
    "FactorStructure",
    "GraphStructure",
    "LeastSquares",
    "LinearEquality",
    "Quadratic",
    "Variable",
    "dense_solve",
    "to_dense",
]
