"""The factor graph container and its structure-only view.

A :class:`FactorGraph` stores variables and factors and stands for the
linear-quadratic saddle-point problem

    min over "min" variables, max over "max" variables of
        sum_f  1/2 x_f' H_f x_f - g_f' x_f
    subject to  sum_k A_k x_k = b  for every LinearEquality,

whose stationarity (KKT) conditions are the linear system of
:func:`factorgraph.dense.to_dense`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import combinations
from typing import Hashable, Iterable

import networkx as nx
import numpy as np

from .dense import dense_solve, to_dense
from .factors import FactorStructure, LinearEquality, Quadratic
from .variable import Variable


@dataclass(frozen=True)
class FactorNode:
    """Node standing for factor number ``index`` in the bipartite factor graph."""

    index: int

    def __repr__(self) -> str:
        return f"f{self.index}"


def _interaction_graph(variables: Iterable[Variable], scopes: Iterable[tuple]) -> nx.Graph:
    graph = nx.Graph()
    for position, var in enumerate(variables):
        graph.add_node(var.key, dim=var.dim, role=var.role, position=position)
    for scope in scopes:
        graph.add_edges_from(combinations(scope, 2))
    return graph


@dataclass(frozen=True)
class GraphStructure:
    """Structure of a factor graph: variables and factor scopes, no numbers.

    Everything the symbolic analysis (orderings, fill, cliques, cost) needs.
    Two graphs with equal structures share one elimination plan.

    Examples
    --------
    >>> import networkx as nx
    >>> s = GraphStructure.from_networkx(nx.path_graph(3))
    >>> [f.keys for f in s.factors]
    [(0,), (1,), (2,), (0, 1), (1, 2)]
    """

    variables: tuple  # of Variable, in insertion order
    factors: tuple  # of FactorStructure, in insertion order

    @classmethod
    def from_networkx(cls, graph: nx.Graph, dim: int = 1) -> "GraphStructure":
        """Structure with one ``dim``-dimensional variable per node, a prior
        factor per node and a pairwise factor per edge (a sparsity pattern)."""
        variables = tuple(Variable(node, dim) for node in graph.nodes)
        factors = tuple(FactorStructure((node,)) for node in graph.nodes) + tuple(
            FactorStructure(tuple(edge)) for edge in graph.edges
        )
        return cls(variables, factors)

    def structure(self) -> "GraphStructure":
        return self

    def interaction_graph(self) -> nx.Graph:
        """Variables as nodes (attributes ``dim``, ``role``, ``position``), an
        edge between every two variables that share a factor."""
        return _interaction_graph(self.variables, (f.keys for f in self.factors))


class FactorGraph:
    """A Gaussian factor graph: variables plus quadratic and hard linear factors.

    Examples
    --------
    >>> import numpy as np
    >>> from factorgraph import Variable, Quadratic, LinearEquality
    >>> g = FactorGraph()
    >>> g.add_variable(Variable("x", 1))
    >>> g.add_variable(Variable("y", 1))
    >>> g.add(Quadratic(["x", "y"], np.eye(2), [1.0, 3.0]))
    0
    >>> g.add(LinearEquality(["x", "y"], [[[1.0]], [[1.0]]], [2.0]))   # x + y = 2
    1
    >>> {k: v.round(6).tolist() for k, v in g.dense_solve().items()}
    {'x': [0.0], 'y': [2.0]}
    """

    def __init__(self):
        self._variables: dict[Hashable, Variable] = {}
        self._factors: list = []
        self._roles: list = []
        self._batch_shape: tuple = ()
        self._structure: GraphStructure | None = None  # made on demand, forgotten when the graph grows

    # -- building -------------------------------------------------------------------
    def add_variable(self, variable: Variable) -> None:
        """Add a variable; its key must be new to the graph."""
        if not isinstance(variable, Variable):
            raise TypeError(f"add_variable expects a factorgraph.Variable, got {type(variable).__name__}")
        if variable.key in self._variables:
            raise ValueError(f"variable {variable.key!r} is already in the graph")
        self._variables[variable.key] = variable
        self._structure = None

    def add(self, factor: Quadratic | LinearEquality, role=None) -> int:
        """Add a factor over variables already in the graph; return its index.

        The index identifies the factor later, e.g. to change its linear term
        in :meth:`elimination.Factorization.solve`.  ``role`` says what the
        factor stands for in the model that builds the graph (any value; the
        mechanics package uses small typed values such as a link's prior);
        pictures and tables read it back with :meth:`role`.
        """
        if not isinstance(factor, (Quadratic, LinearEquality)):
            raise TypeError(
                f"add expects a Quadratic, LeastSquares or LinearEquality factor, got {type(factor).__name__}"
            )
        unknown = [key for key in factor.keys if key not in self._variables]
        if unknown:
            raise ValueError(
                f"{type(factor).__name__} on {factor.keys}: unknown variable(s) {unknown}; "
                f"add them with add_variable first"
            )
        factor.check_dims([self._variables[key].dim for key in factor.keys])
        try:
            batch = np.broadcast_shapes(self._batch_shape, factor.batch_shape)
        except ValueError:
            raise ValueError(
                f"{type(factor).__name__} on {factor.keys}: batch shape {factor.batch_shape} does not "
                f"broadcast with the graph's batch shape {self.batch_shape}"
            ) from None
        self._factors.append(factor)
        self._roles.append(role)
        self._batch_shape = batch
        self._structure = None
        return len(self._factors) - 1

    # -- queries --------------------------------------------------------------------
    @property
    def variables(self) -> tuple:
        """Variables in insertion order."""
        return tuple(self._variables.values())

    @property
    def keys(self) -> tuple:
        return tuple(self._variables)

    @property
    def factors(self) -> tuple:
        """Factors in insertion order (the position is the factor's index)."""
        return tuple(self._factors)

    def variable(self, key: Hashable) -> Variable:
        try:
            return self._variables[key]
        except KeyError:
            raise KeyError(f"no variable {key!r} in the graph") from None

    def factor(self, index: int):
        try:
            return self._factors[index]
        except (IndexError, TypeError):
            raise KeyError(f"no factor with index {index!r} (the graph has {len(self._factors)})") from None

    def role(self, index: int):
        """What factor ``index`` stands for (``None`` unless given to :meth:`add`)."""
        self.factor(index)
        return self._roles[index]

    def factors_of(self, key: Hashable) -> list[int]:
        """Indices of the factors whose scope contains ``key``."""
        self.variable(key)
        return [i for i, f in enumerate(self._factors) if key in f.keys]

    @property
    def batch_shape(self) -> tuple:
        """Broadcast of the leading (batch) dimensions of every factor array."""
        return self._batch_shape

    def __len__(self) -> int:
        return len(self._factors)

    def __repr__(self) -> str:
        return f"FactorGraph({len(self._variables)} variables, {len(self._factors)} factors)"

    # -- structure ------------------------------------------------------------------
    def structure(self) -> GraphStructure:
        """The structure-only view used by the symbolic analysis (kept until the graph changes)."""
        if self._structure is None:
            self._structure = GraphStructure(
                self.variables,
                tuple(replace(f.structure(), role=role) for f, role in zip(self._factors, self._roles)),
            )
        return self._structure

    def interaction_graph(self) -> nx.Graph:
        """Variable interaction (Markov) graph: an edge per pair sharing a factor.

        Node attributes: ``dim``, ``role``, ``position`` (insertion order).
        """
        return _interaction_graph(self._variables.values(), (f.keys for f in self._factors))

    def factor_graph(self) -> nx.Graph:
        """Bipartite factor graph: variable nodes (``bipartite=0``, attributes
        ``dim``, ``role``) and :class:`FactorNode` nodes (``bipartite=1``,
        attributes ``factor`` -- the object --, ``kind``: the class name, and ``role``)."""
        graph = nx.Graph()
        for var in self._variables.values():
            graph.add_node(var.key, bipartite=0, dim=var.dim, role=var.role)
        for index, factor in enumerate(self._factors):
            node = FactorNode(index)
            graph.add_node(node, bipartite=1, factor=factor, kind=type(factor).__name__, role=self._roles[index])
            graph.add_edges_from((node, key) for key in factor.keys)
        return graph

    # -- dense reference --------------------------------------------------------------
    def to_dense(self):
        """Dense KKT system; see :func:`factorgraph.dense.to_dense`."""
        return to_dense(self)

    def dense_solve(self, multipliers: bool = False):
        """Solution by a dense KKT solve; see :func:`factorgraph.dense.dense_solve`."""
        return dense_solve(self, multipliers)
