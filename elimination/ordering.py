"""Elimination orderings: small pure functions over the interaction graph.

Every heuristic here is one *elimination game* (:func:`greedy`): repeatedly
pick the eligible block of variables with the lowest score, make its
neighbourhood a clique (the fill), remove it.  Heuristics differ only in the
score (:func:`degree_score`, :func:`fill_score`, or none for the natural
order) and in the eligibility rule, e.g. "leaf links of the spanning tree
only" or "multipliers last" -- a rule, not a new algorithm.

Ties are broken deterministically by the position of the variables in the
graph (insertion order): among the eligible blocks, the lowest
``(score, rank)``, ``rank`` being the block's place when blocks are sorted by
their first variable's position.

The game is incremental, so that a step costs about the size of the
neighbourhood it touches, not the size of the graph:

* scores live in a heap of ``(score, rank)`` entries; an elimination rescores
  only the blocks whose score it can change (for the degree, the blocks next
  to the eliminated one; for the fill, also the common neighbours of each new
  fill edge, from triangle counts kept per variable), and stale heap entries
  are skipped when popped;
* an :class:`Eligibility` object (e.g. :class:`Precedence`) says which keys'
  eligibility an elimination may change, so only those are asked again.  A
  plain predicate ``eligible(key, state)`` still works: it is asked, down the
  heap, at every step, as before.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from itertools import combinations
from typing import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence

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
    def _of_checked(cls, blocks: list) -> "Ordering":
        """An Ordering of blocks known to be non-empty tuples of keys (the game's output): no checks."""
        ordering = cls.__new__(cls)
        ordering.blocks = tuple(blocks)
        return ordering

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
    """The interaction graph of a FactorGraph / GraphStructure, or a networkx graph itself (a copy)."""
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


# -- eligibility kept incrementally ----------------------------------------------------------------
class Eligibility:
    """An eligibility rule that keeps its own answers up to date.

    A plain predicate ``eligible(key, state)`` is asked again at every step and
    usually scans ``state.remaining`` to answer.  An ``Eligibility`` is a small
    stateful object instead (as networkx's treewidth heuristics are).  The game
    calls

    * ``start(keys)`` once, with the variables of the graph (a collection of
      keys in insertion order: ``key in keys`` is fast);
    * ``eligible(key)`` once per key;
    * ``eliminated(key)`` after each eliminated key: it updates the object's
      bookkeeping and returns the keys whose answer may have changed -- only
      those are asked again.

    ``__call__(key, state)`` is the same rule as a plain predicate, answered
    from the state alone, so the object also works where a predicate is
    expected.  One object serves one game at a time (``start`` resets it).
    """

    def start(self, keys: Collection[Hashable]) -> None:
        """Reset the bookkeeping for a game over the variables ``keys``."""

    def eligible(self, key: Hashable) -> bool:
        """May ``key`` be eliminated now?"""
        raise NotImplementedError

    def eliminated(self, key: Hashable) -> Iterable[Hashable]:
        """Record that ``key`` was eliminated; the keys whose answer may have changed."""
        return ()

    def __call__(self, key: Hashable, state: EliminationState) -> bool:
        raise NotImplementedError(f"{type(self).__name__} answers only inside the elimination game")


class Precedence(Eligibility):
    """Eligibility as data: a key waits until every key of each of its *gates* is eliminated.

    "Multipliers after every primal variable" is one gate (the primal keys)
    that every multiplier waits on; "a link once its children are eliminated"
    is one gate per link (its children's accelerations) that the link's
    variables wait on.

    Bookkeeping: per gate, how many of its keys are still in the graph; per
    key, how many of its gates are still closed.  Eliminating a key decrements
    its gates, and a gate that empties decrements the keys waiting on it -- a
    whole game costs O(sum of gate sizes + sum of waits).

    Parameters
    ----------
    gates : mapping gate name -> iterable of keys
        Keys of a gate that are not variables of the graph count as eliminated.
    waits : mapping key -> iterable of gate names
        Keys absent here wait on nothing.

    Examples
    --------
    On the path 0 - 1 - 2, minimum degree would take 0, 1, 2; with node 1
    waiting for both ends:

    >>> import networkx as nx
    >>> ends_first = Precedence({"ends": [0, 2]}, {1: ["ends"]})
    >>> min_degree(nx.path_graph(3), eligible=ends_first).keys()
    (0, 2, 1)
    """

    def __init__(self, gates: Mapping[Hashable, Iterable[Hashable]], waits: Mapping[Hashable, Iterable[Hashable]]):
        # (a key repeated in a gate, or a gate repeated in a wait, is counted as often on both sides)
        self.gates = {name: tuple(keys) for name, keys in gates.items()}
        self.waits = {key: tuple(names) for key, names in waits.items()}
        unknown = [name for names in self.waits.values() for name in names if name not in self.gates]
        if unknown:
            raise OrderingError(f"keys wait on gates {unknown[:5]} that are not in gates; name them there")
        self._waiting = {}  # gate -> keys waiting on it
        for key, names in self.waits.items():
            for name in names:
                self._waiting.setdefault(name, []).append(key)
        self._gates_of = {}  # key -> gates holding it
        for name, keys in self.gates.items():
            for key in keys:
                self._gates_of.setdefault(key, []).append(name)
        self._left, self._closed = {}, {}

    def start(self, keys: Collection[Hashable]) -> None:
        self._left = {name: sum(1 for key in held if key in keys) for name, held in self.gates.items()}
        self._closed = {key: sum(1 for name in names if self._left[name]) for key, names in self.waits.items()}

    def eligible(self, key: Hashable) -> bool:
        return not self._closed.get(key, 0)

    def eliminated(self, key: Hashable) -> list:
        opened = []
        for name in self._gates_of.get(key, ()):
            self._left[name] -= 1
            if not self._left[name]:
                waiting = self._waiting.get(name, ())
                for waiter in waiting:
                    self._closed[waiter] -= 1
                opened.extend(waiting)
        return opened

    def __call__(self, key: Hashable, state: EliminationState) -> bool:
        return all(k not in state.remaining for name in self.waits.get(key, ()) for k in self.gates[name])


# -- scores kept incrementally ---------------------------------------------------------------------
# Inside the game, node i is the i-th variable of the graph, group r the group of rank r (the
# tie-break), adj[i] the set of i's remaining neighbours (fill included; None once eliminated),
# members[r] the nodes of group r and group_of[i] the group of node i.
class _Scores:
    """Exact scores of the groups, kept up to date around each elimination.

    ``eliminate(r)`` removes group ``r`` from the graph, joins its
    neighbourhood into a clique (the fill) and returns the groups whose score
    may have changed; ``score(r)`` is group ``r``'s current score.
    """

    def __init__(self, adj: list, members: list, group_of: list):
        self.adj, self.members, self.group_of = adj, members, group_of

    def neighbours(self, r: int) -> set:
        """N(group r): the nodes adjacent to the group, outside it."""
        members, adj = self.members[r], self.adj
        if len(members) == 1:
            return set(adj[members[0]])
        out = adj[members[0]].union(*[adj[i] for i in members[1:]])
        out.difference_update(members)
        return out

    def eliminate(self, r: int) -> Iterable[int]:
        nbrs = self.neighbours(r)
        adj = self.adj
        for x in self.members[r]:
            for v in adj[x]:
                adj[v].discard(x)
            adj[x] = None
        for v in nbrs:  # the fill: the neighbourhood becomes a clique
            adj[v] |= nbrs
            adj[v].discard(v)
        return self.changed(nbrs)

    def changed(self, nbrs: set) -> set:
        """Groups holding a node of ``nbrs``: the only ones whose neighbourhood changed."""
        group_of = self.group_of
        return {group_of[v] for v in nbrs}


class _ZeroScores(_Scores):
    """The constant 0 (natural order): no score ever changes, so the graph need not be updated."""

    def score(self, r: int) -> int:
        return 0

    def eliminate(self, r: int) -> tuple:
        return ()


class _DegreeScores(_Scores):
    """|N(g)|: an elimination changes the degree of the groups next to the eliminated one only."""

    def score(self, r: int) -> int:
        members = self.members[r]
        return len(self.adj[members[0]]) if len(members) == 1 else len(self.neighbours(r))


class _FillScores(_Scores):
    """Fill of a single node v: C(deg v, 2) - tri[v], tri[v] the number of edges among v's neighbours.

    tri is kept per node, one graph change at a time: removing x takes from
    each neighbour v the edges x-w with w next to v (their common neighbours);
    a fill edge a-b adds |N(a) & N(b)| to a and to b, and 1 to each common
    neighbour w -- the only nodes outside the eliminated block's neighbourhood
    whose fill changes.  A group of several nodes is rescored from scratch
    when one of its members is within distance two of the eliminated block
    (its neighbourhood, or the edges among it, may have changed).
    """

    def __init__(self, adj: list, members: list, group_of: list):
        super().__init__(adj, members, group_of)
        self.tri = [sum(len(adj[u] & nbrs) for u in nbrs) // 2 for nbrs in adj]
        self.grouped = [len(m) > 1 for m in members]
        self.any_grouped = any(self.grouped)

    def score(self, r: int) -> int:
        members = self.members[r]
        if len(members) == 1:
            degree = len(self.adj[members[0]])
            return degree * (degree - 1) // 2 - self.tri[members[0]]
        nbrs, adj = self.neighbours(r), self.adj
        inner = sum(len(adj[u] & nbrs) for u in nbrs) // 2  # edges already among the neighbourhood
        return len(nbrs) * (len(nbrs) - 1) // 2 - inner

    def eliminate(self, r: int) -> set:
        adj, tri = self.adj, self.tri
        nbrs = self.neighbours(r)
        for x in self.members[r]:
            for v in adj[x]:
                tri[v] -= len(adj[v] & adj[x])  # edges x-w among v's neighbours go with x
                adj[v].discard(x)
            adj[x] = None
        changed = set(nbrs)
        for a in nbrs:
            missing = nbrs - adj[a]  # a's fill edges (set arithmetic: the clique may be large)
            missing.discard(a)
            for b in missing:
                common = adj[a] & adj[b]
                tri[a] += len(common)
                tri[b] += len(common)
                for w in common:
                    tri[w] += 1
                changed |= common
                adj[a].add(b)
                adj[b].add(a)
        groups = self.changed(changed)
        if self.any_grouped:
            grouped, group_of = self.grouped, self.group_of
            groups.update(group_of[w] for v in nbrs for w in adj[v] if grouped[group_of[w]])
        return groups


class _CallableScores(_Scores):
    """Any ``score(graph, block)``, rescored on the game's networkx graph for the groups within
    distance two of the eliminated block (the contract :func:`greedy` states)."""

    def __init__(self, adj: list, members: list, group_of: list, function: Callable, graph: nx.Graph, blocks: list):
        super().__init__(adj, members, group_of)
        self.function, self.graph, self.blocks = function, graph, blocks

    def score(self, r: int):
        return self.function(self.graph, self.blocks[r])

    def changed(self, nbrs: set) -> set:
        touched = set(nbrs)
        for v in nbrs:
            touched |= self.adj[v]
        return super().changed(touched)


_KEEPERS = {zero_score: _ZeroScores, degree_score: _DegreeScores, fill_score: _FillScores}
"""The scores kept incrementally; any other score function is rescored by :class:`_CallableScores`."""


# -- the game --------------------------------------------------------------------------------------
def _interaction(graph) -> tuple[list, dict, list]:
    """``(keys, position, adj)`` of the interaction graph: the variables in insertion order, their
    positions (the tie-break) and, for variable ``i``, the set of indices of its neighbours.

    Read straight from the factor scopes of a FactorGraph / GraphStructure (or from a networkx
    graph): building a networkx graph would cost more than the whole game.

    >>> _interaction(nx.path_graph(3))[2]
    [{1}, {0, 2}, {1}]
    """
    if isinstance(graph, nx.Graph):
        keys = list(graph.nodes)
        index = {key: i for i, key in enumerate(keys)}
        position = {key: data.get("position", i) for i, (key, data) in enumerate(graph.nodes(data=True))}
        adj = [{index[n] for n in graph.adj[key]} for key in keys]
    elif hasattr(graph, "variables") and hasattr(graph, "factors"):
        keys = [var.key for var in graph.variables]
        index = position = {key: i for i, key in enumerate(keys)}
        adj = [set() for _ in keys]
        for factor in graph.factors:
            scope = [index[key] for key in factor.keys]
            for i in scope:
                adj[i].update(scope)
    else:
        return _interaction(interaction_graph_of(graph))
    for i, nbrs in enumerate(adj):
        nbrs.discard(i)  # no self-loops
    return keys, position, adj


def _groups(keys: list, position: dict, blocks) -> list[tuple]:
    """Partition of the variables into selection groups, in order of first position."""
    grouped, groups = {}, []
    for block in blocks or ():
        block = tuple(block)
        for key in block:
            if key not in position:
                raise OrderingError(f"block {block!r} names {key!r}, which is not a variable of the graph")
            if key in grouped:
                raise OrderingError(f"variable {key!r} appears in two blocks: {grouped[key]!r} and {block!r}")
            grouped[key] = block
        groups.append(block)
    groups += [(key,) for key in keys if key not in grouped]
    return sorted(groups, key=lambda g: min(position[k] for k in g))


class _Game:
    """One elimination game: a heap of ``(score, rank)`` over the eligible groups.

    A heap entry is current while its group is alive, eligible and still has
    that score; anything else is skipped when popped (lazy deletion), so an
    update is one push.  With a plain predicate eligibility is unknown until
    asked: entries it refuses are held aside and pushed back after the pick.
    """

    def __init__(self, graph, score: Score, eligible, blocks):
        self.predicate = eligible if eligible is not None and not isinstance(eligible, Eligibility) else None
        self.eligibility = eligible if isinstance(eligible, Eligibility) else None
        keeper = _KEEPERS.get(score)
        # a networkx graph kept in step with the game, only for those who read it
        mirrored = self.predicate is not None or keeper is None
        self.state = EliminationState(interaction_graph_of(graph)) if mirrored else None
        keys, position, adj = _interaction(self.state.remaining if mirrored else graph)
        self.index = {key: i for i, key in enumerate(keys)}
        self.blocks = _groups(keys, position, blocks)
        members = [tuple(self.index[k] for k in block) for block in self.blocks]
        self.group_of = [0] * len(keys)
        for r, nodes in enumerate(members):
            for i in nodes:
                self.group_of[i] = r
        if keeper is None:
            self.scores = _CallableScores(adj, members, self.group_of, score, self.state.remaining, self.blocks)
        else:
            self.scores = keeper(adj, members, self.group_of)

        self.score = [self.scores.score(r) for r in range(len(self.blocks))]
        self.alive = [True] * len(self.blocks)
        if self.eligibility is not None:
            self.eligibility.start(self.index)
            self.ok = [all(map(self.eligibility.eligible, block)) for block in self.blocks]
        else:
            self.ok = [True] * len(self.blocks)
        self.heap = [(s, r) for r, s in enumerate(self.score) if self.ok[r]]
        heapq.heapify(self.heap)

    def pick(self) -> int:
        """The rank of the eligible group with the lowest ``(score, rank)``."""
        heap, held = self.heap, {}
        while heap:
            s, r = heapq.heappop(heap)
            if not self.alive[r] or s != self.score[r] or not self.ok[r] or r in held:
                continue  # stale (eliminated, rescored, no longer eligible) or a duplicate
            if self.predicate is not None and not all(self.predicate(k, self.state) for k in self.blocks[r]):
                held[r] = s
                continue
            for q, t in held.items():
                heapq.heappush(heap, (t, q))
            return r
        stuck = [k for r, block in enumerate(self.blocks) if self.alive[r] for k in block]
        raise OrderingError(f"the eligibility predicate admits none of the remaining variables {stuck}")

    def eliminate(self, r: int) -> tuple:
        """Eliminate group ``r``; rescore and re-ask only where that can change an answer."""
        block = self.blocks[r]
        self.alive[r] = False
        if self.state is not None:
            remaining = self.state.remaining
            nbrs = neighbourhood(remaining, block)
            remaining.add_edges_from(combinations(nbrs, 2))
            remaining.remove_nodes_from(block)
            self.state.eliminated.extend(block)
        for g in self.scores.eliminate(r):
            s = self.scores.score(g)
            if s != self.score[g]:
                self.score[g] = s
                if self.ok[g]:
                    heapq.heappush(self.heap, (s, g))
        if self.eligibility is not None:
            self._update_eligibility(block)
        return block

    def _update_eligibility(self, block: tuple) -> None:
        index, group_of = self.index, self.group_of
        for key in block:
            for k in self.eligibility.eliminated(key):
                g = group_of[index[k]] if k in index else None
                if g is None or not self.alive[g]:
                    continue
                ok = all(map(self.eligibility.eligible, self.blocks[g]))
                if ok and not self.ok[g]:
                    heapq.heappush(self.heap, (self.score[g], g))
                self.ok[g] = ok


def greedy(
    graph,
    score: Score,
    eligible: Eligible | Eligibility | None = None,
    blocks: Iterable[Sequence[Hashable]] | None = None,
    split_blocks: bool = False,
) -> Ordering:
    """Play the elimination game with a greedy heuristic.

    Parameters
    ----------
    graph : FactorGraph, GraphStructure or networkx.Graph
        The graph whose variables are ordered.
    score : callable ``(remaining_graph, block) -> number``
        Lower is eliminated first; ties go to the block of lower rank (first
        position).  :func:`degree_score`, :func:`fill_score` and
        :func:`zero_score` are kept incrementally; any other function must
        depend only on the block's neighbourhood and the edges among it
        (scores are cached and refreshed for blocks within distance two of
        each elimination).
    eligible : callable ``(key, state) -> bool`` or :class:`Eligibility`, optional
        Only blocks whose keys are all eligible may be picked.  A plain
        predicate gets an :class:`EliminationState` and is asked at every
        step; an :class:`Eligibility` (e.g. :class:`Precedence`) is asked
        again only for the keys it names after each elimination.
    blocks : iterable of key sequences, optional
        Groups of variables picked (and eliminated) together; ungrouped
        variables are single blocks.
    split_blocks : bool
        Emit each picked group as consecutive single-key blocks, in the order
        given, instead of one frontal block.

    Returns
    -------
    Ordering

    Examples
    --------
    >>> import networkx as nx
    >>> greedy(nx.star_graph(3), degree_score, blocks=[(0, 3)]).blocks   # the hub with leaf 3
    ((1,), (0, 3), (2,))

    After leaf 1, the block ``(0, 3)`` (neighbour: 2) ties with leaf 2 and wins on rank.
    """
    game = _Game(graph, score, eligible, blocks)
    out = []
    for _ in range(len(game.blocks)):
        group = game.eliminate(game.pick())
        out.extend((key,) for key in group) if split_blocks else out.append(group)
    return Ordering._of_checked(out)


def natural(graph, eligible: Eligible | Eligibility | None = None, blocks=None, split_blocks: bool = False) -> Ordering:
    """Insertion order (the first eligible block each time).

    Examples
    --------
    >>> import networkx as nx
    >>> natural(nx.path_graph(3)).keys()
    (0, 1, 2)
    """
    return greedy(graph, zero_score, eligible, blocks, split_blocks)


def min_degree(graph, eligible: Eligible | Eligibility | None = None, blocks=None, split_blocks: bool = False) -> Ordering:
    """Minimum-degree ordering: the eligible block with the fewest neighbours first.

    Examples
    --------
    >>> import networkx as nx
    >>> min_degree(nx.star_graph(3)).keys()   # the hub ties with leaf 3 at the end
    (1, 2, 0, 3)
    """
    return greedy(graph, degree_score, eligible, blocks, split_blocks)


def min_fill(graph, eligible: Eligible | Eligibility | None = None, blocks=None, split_blocks: bool = False) -> Ordering:
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
