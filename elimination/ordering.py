"""Elimination orderings: small pure functions over the interaction graph.

Every heuristic here is one *elimination game* (:func:`greedy`): repeatedly
pick the eligible block of variables with the lowest score, make its
neighbourhood a clique (the fill), remove it.  Heuristics differ only in the
score (:func:`degree_score`, :func:`fill_score`, or none for the natural
order) and in the eligibility predicate, e.g. "leaf links of the spanning tree
only" or "multipliers last" -- a predicate, not a new algorithm.

Ties are broken deterministically by the position of the variables in the
graph (insertion order).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Callable, Hashable, Iterable, Iterator, Sequence

import networkx as nx

from .errors import OrderingError


class Ordering:
    """A sequence of frontal blocks, each a tuple of variable keys.

    Parameters
    ----------
    blocks : iterable of sequences of keys
        The frontal blocks in elimination order; a block with several keys is
        eliminated as one front.

    Examples
    --------
    >>> o = Ordering([("a1", "qdd1"), ("a0",)])
    >>> o.keys(), len(o)
    (('a1', 'qdd1', 'a0'), 2)
    >>> Ordering.from_keys(["x", "y"]).blocks
    (('x',), ('y',))
    """

    def __init__(self, blocks: Iterable[Sequence[Hashable]]):
        checked = []
        for block in blocks:
            if isinstance(block, (str, bytes)) or not isinstance(block, (tuple, list)):
                raise TypeError(
                    f"each block of an Ordering must be a tuple or list of keys, got {block!r}; "
                    f"use Ordering.from_keys for one key per block"
                )
            if not block:
                raise OrderingError("an Ordering block may not be empty")
            checked.append(tuple(block))
        self.blocks = tuple(checked)

    @classmethod
    def from_keys(cls, keys: Iterable[Hashable]) -> "Ordering":
        """One single-variable block per key."""
        return cls((key,) for key in keys)

    # named constructors, as GTSAM's Ordering::Colamd / Natural
    @classmethod
    def natural(cls, graph, **options) -> "Ordering":
        return natural(graph, **options)

    @classmethod
    def min_degree(cls, graph, **options) -> "Ordering":
        return min_degree(graph, **options)

    @classmethod
    def min_fill(cls, graph, **options) -> "Ordering":
        return min_fill(graph, **options)

    def keys(self) -> tuple:
        """All keys, flattened, in elimination order."""
        return tuple(key for block in self.blocks for key in block)

    def __iter__(self) -> Iterator[tuple]:
        return iter(self.blocks)

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, index):
        return self.blocks[index]

    def __eq__(self, other) -> bool:
        return isinstance(other, Ordering) and self.blocks == other.blocks

    def __hash__(self) -> int:
        return hash(self.blocks)

    def __repr__(self) -> str:
        return f"Ordering({list(self.blocks)!r})"


@dataclass
class EliminationState:
    """What an eligibility predicate may look at during the elimination game.

    Attributes
    ----------
    remaining : networkx.Graph
        Interaction graph of the variables not yet eliminated, fill included
        (node attributes ``dim``, ``role``, ``position``).
    eliminated : list
        Keys eliminated so far, in order.
    """

    remaining: nx.Graph
    eliminated: list = field(default_factory=list)

    def is_eliminated(self, key: Hashable) -> bool:
        return key not in self.remaining


Eligible = Callable[[Hashable, EliminationState], bool]
Score = Callable[[nx.Graph, tuple], float]


def interaction_graph_of(graph) -> nx.Graph:
    """The interaction graph of a FactorGraph / GraphStructure, or a networkx graph itself."""
    if isinstance(graph, nx.Graph):
        result = graph.copy()
        for position, node in enumerate(result.nodes):
            result.nodes[node].setdefault("position", position)
            result.nodes[node].setdefault("dim", 1)
            result.nodes[node].setdefault("role", "min")
        return result
    if hasattr(graph, "interaction_graph"):
        return graph.interaction_graph()
    raise TypeError(f"expected a FactorGraph, GraphStructure or networkx.Graph, got {type(graph).__name__}")


def neighbourhood(graph: nx.Graph, block: tuple) -> set:
    """Variables adjacent to ``block`` and outside it: the separator it would get."""
    inside = set(block)
    return {n for key in block for n in graph.adj[key] if n not in inside}


def degree_score(graph: nx.Graph, block: tuple) -> int:
    """Number of neighbouring variables of the block (minimum-degree heuristic)."""
    return len(neighbourhood(graph, block))


def fill_score(graph: nx.Graph, block: tuple) -> int:
    """Number of edges eliminating the block would add (minimum-fill heuristic)."""
    nbrs = list(neighbourhood(graph, block))
    return sum(1 for u, v in combinations(nbrs, 2) if not graph.has_edge(u, v))


def zero_score(graph: nx.Graph, block: tuple) -> int:
    """Constant score: the game then follows insertion order (natural ordering)."""
    return 0


def _groups(graph: nx.Graph, blocks) -> list[tuple]:
    """Partition of the nodes into selection groups, in order of first position."""
    position = nx.get_node_attributes(graph, "position")
    grouped, groups = {}, []
    for block in blocks or ():
        block = tuple(block)
        for key in block:
            if key not in graph:
                raise OrderingError(f"block {block!r} names {key!r}, which is not a variable of the graph")
            if key in grouped:
                raise OrderingError(f"variable {key!r} appears in two blocks: {grouped[key]!r} and {block!r}")
            grouped[key] = block
        groups.append(block)
    groups += [(key,) for key in graph.nodes if key not in grouped]
    return sorted(groups, key=lambda g: min(position[k] for k in g))


def greedy(
    graph,
    score: Score,
    eligible: Eligible | None = None,
    blocks: Iterable[Sequence[Hashable]] | None = None,
    split_blocks: bool = False,
) -> Ordering:
    """Play the elimination game with a greedy heuristic.

    Parameters
    ----------
    graph : FactorGraph, GraphStructure or networkx.Graph
        The graph whose variables are ordered.
    score : callable ``(remaining_graph, block) -> number``
        Lower is eliminated first.  It must depend only on the block's
        neighbourhood and the edges among it (scores are cached and refreshed
        for blocks within distance two of each elimination).
    eligible : callable ``(key, state) -> bool``, optional
        Only blocks whose keys are all eligible may be picked; ``state`` is an
        :class:`EliminationState`.
    blocks : iterable of key sequences, optional
        Groups of variables picked (and eliminated) together; ungrouped
        variables are single blocks.
    split_blocks : bool
        Emit each picked group as consecutive single-key blocks, in the order
        given, instead of one frontal block.

    Returns
    -------
    Ordering
    """
    remaining = interaction_graph_of(graph)
    groups = _groups(remaining, blocks)
    rank = {g: i for i, g in enumerate(groups)}
    group_of = {key: g for g in groups for key in g}
    state = EliminationState(remaining)
    scores = {g: score(remaining, g) for g in groups}
    out = []
    while scores:
        for group in sorted(scores, key=lambda g: (scores[g], rank[g])):
            if eligible is None or all(eligible(key, state) for key in group):
                break
        else:
            stuck = [k for g in sorted(scores, key=rank.get) for k in g]
            raise OrderingError(f"the eligibility predicate admits none of the remaining variables {stuck}")
        nbrs = neighbourhood(remaining, group)
        remaining.add_edges_from(combinations(nbrs, 2))
        remaining.remove_nodes_from(group)
        state.eliminated.extend(group)
        del scores[group]
        touched = set(nbrs).union(*(remaining.adj[n] for n in nbrs))
        for g in {group_of[k] for k in touched}:
            scores[g] = score(remaining, g)
        out.extend((key,) for key in group) if split_blocks else out.append(group)
    return Ordering(out)


def natural(graph, eligible: Eligible | None = None, blocks=None, split_blocks: bool = False) -> Ordering:
    """Insertion order (the first eligible block each time).

    Examples
    --------
    >>> import networkx as nx
    >>> natural(nx.path_graph(3)).keys()
    (0, 1, 2)
    """
    return greedy(graph, zero_score, eligible, blocks, split_blocks)


def min_degree(graph, eligible: Eligible | None = None, blocks=None, split_blocks: bool = False) -> Ordering:
    """Minimum-degree ordering: the eligible block with the fewest neighbours first.

    Examples
    --------
    >>> import networkx as nx
    >>> min_degree(nx.star_graph(3)).keys()   # the hub ties with leaf 3 at the end
    (1, 2, 0, 3)
    """
    return greedy(graph, degree_score, eligible, blocks, split_blocks)


def min_fill(graph, eligible: Eligible | None = None, blocks=None, split_blocks: bool = False) -> Ordering:
    """Minimum-fill ordering: the eligible block adding the fewest fill edges first.

    Examples
    --------
    >>> import networkx as nx
    >>> min_fill(nx.cycle_graph(4)).keys()
    (0, 1, 2, 3)
    """
    return greedy(graph, fill_score, eligible, blocks, split_blocks)


ORDERINGS = {"natural": natural, "min_degree": min_degree, "min_fill": min_fill}


def resolve_ordering(graph, ordering) -> Ordering:
    """An Ordering as given, or computed from a heuristic name in :data:`ORDERINGS`."""
    if isinstance(ordering, Ordering):
        return ordering
    if isinstance(ordering, str):
        try:
            return ORDERINGS[ordering](graph)
        except KeyError:
            raise OrderingError(
                f"unknown ordering {ordering!r}; use one of {sorted(ORDERINGS)} or an Ordering"
            ) from None
    raise TypeError(f"ordering must be an Ordering or one of {sorted(ORDERINGS)}, got {type(ordering).__name__}")
