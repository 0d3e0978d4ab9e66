"""Gaussian factor graphs: variables, quadratic and hard linear factors.

Knows nothing of robots or of elimination orders.

>>> from factorgraph import FactorGraph, Variable, Quadratic, LinearEquality, LeastSquares
"""
from importlib.metadata import PackageNotFoundError, version

from .dense import DenseSystem, dense_solve, to_dense
from .factors import FactorStructure, LeastSquares, LinearEquality, Quadratic
from .graph import FactorGraph, FactorNode, GraphStructure
from .variable import Variable

try:
    __version__ = version("gaussgraph")  # the distribution's (the four packages ship together)
except PackageNotFoundError:  # a source tree on sys.path, not installed
    __version__ = "unknown"

__all__ = [
    "__version__",
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
