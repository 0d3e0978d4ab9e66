"""Bucket (variable) elimination on Gaussian factor graphs.

Orderings are pure functions of the interaction graph; :func:`analyze` is the
symbolic pass (no numbers), :func:`factorize` the numeric one, and
:meth:`Factorization.solve` re-solves for new linear terms.  Depends on
``factorgraph`` only.

>>> import numpy as np
>>> from factorgraph import FactorGraph, Variable, Quadratic
>>> import elimination
>>> g = FactorGraph(); g.add_variable(Variable("x", 2))
>>> _ = g.add(Quadratic(["x"], 2 * np.eye(2), [2.0, 4.0]))
>>> elimination.solve(g)["x"]
array([1., 2.])
"""
from __future__ import annotations

from .errors import OrderingError, SingularProblemError
from factorgraph import __version__
from .gaussian import CONSISTENCY_RTOL, PIVOT_RTOL, RANK_RTOL, Eliminated, GaussianConditional, eliminate_gaussian
from .factorization import Factorization, SolveWork
from .numeric import element_graph, factorize
from .compiled_factorization import compiled_elimination
from .layout import FactorSlot, Layout
from .arrays import ArrayFactorization, factorize_arrays
from .driver import (Advance, AugmentedLagrangian, Driven, Driver, GaussNewton, GraphFactorization, MultiplierRule,
                     NotConvergedWarning, Overrides, drive)
from .numeric_rank import NumericHardRows
from .ordering import (
    ORDERINGS,
    EliminationState,
    Ordering,
    degree_score,
    fill_score,
    greedy,
    min_degree,
    min_fill,
    natural,
    resolve_ordering,
)
from .symbolic import Plan, Step, analyze
from .library import amd, constrained_first, constrained_last, metis  # registers "amd", "metis" in ORDERINGS
from .warmup import warmup


def solve(graph, ordering="min_fill", refine: int = 1, backend: str = "auto") -> dict:
    """Analyze, factorize and solve in one call.

    Parameters
    ----------
    graph : factorgraph.FactorGraph
    ordering : Ordering or str
        An :class:`Ordering`, or the name of a heuristic in :data:`ORDERINGS`
        (``"natural"``, ``"min_degree"``, ``"min_fill"``).
    refine : int
        Steps of iterative refinement (see :meth:`Factorization.solve`).
    backend : {"auto", "numba", "numpy"}
        Executor (:func:`factorize`).

    Returns
    -------
    dict
        Variable key -> value.
    """
    plan = analyze(graph, resolve_ordering(graph, ordering))
    return factorize(graph, plan, backend=backend).solve(refine=refine)


__all__ = [
    "__version__",
    "CONSISTENCY_RTOL",
    "ORDERINGS",
    "PIVOT_RTOL",
    "RANK_RTOL",
    "Eliminated",
    "EliminationState",
    "Advance",
    "ArrayFactorization",
    "AugmentedLagrangian",
    "Driven",
    "GraphFactorization",
    "Overrides",
    "Driver",
    "GaussNewton",
    "MultiplierRule",
    "NotConvergedWarning",
    "FactorSlot",
    "Factorization",
    "Layout",
    "SolveWork",
    "GaussianConditional",
    "NumericHardRows",
    "Ordering",
    "OrderingError",
    "Plan",
    "SingularProblemError",
    "Step",
    "amd",
    "analyze",
    "compiled_elimination",
    "constrained_first",
    "constrained_last",
    "degree_score",
    "drive",
    "element_graph",
    "eliminate_gaussian",
    "factorize",
    "factorize_arrays",
    "fill_score",
    "greedy",
    "metis",
    "min_degree",
    "min_fill",
    "natural",
    "resolve_ordering",
    "solve",
    "warmup",
]
