"""Symbolic analysis: what eliminating a graph in a given order will do.

:func:`analyze` runs bucket elimination on the *structure* of a graph (scopes,
dimensions, hard row counts) and records, per step, the frontal block, its
separator, the fill edges it adds, the sizes and a flop estimate, plus the
bookkeeping the numeric pass replays (which factors fall in which bucket, and
where their entries go).  No numbers are involved, so one :class:`Plan` serves
every numeric instance of the structure -- every state of a mechanism, every
element of a batch.

Rank is structural: a bucket holding ``m`` hard rows over a front of ``n_F``
dimensions uses ``r`` of them to substitute the front, where ``r`` is the
generic rank of the front's hard block, ``min(m, n_F)`` when a single hard
factor touches the whole front and a maximum matching in general
(:class:`HardRows`).  The other ``m - r`` rows are passed on as a
new hard factor (or, when they involve no separator variable, checked for
consistency and dropped), and the ``n_F - r`` dimensions left free are
eliminated by a Schur complement.

The hard-row bookkeeping is pluggable: numbers can make the rank of a block
smaller than its generic rank (redundant rows, special coefficients), and
:mod:`elimination.numeric` then re-plans that graph with
:class:`elimination.numeric_rank.NumericHardRows`, which reads the ranks off
the graph's numbers.  Fronts, separators and fill do not change -- only the
hard-row counts of the steps.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from factorgraph import FactorStructure

from .errors import OrderingError, SingularProblemError
from .ordering import Ordering

PIVOTS = ("none", "definite", "negative", "quasidefinite", "indefinite")


@dataclass(frozen=True)
class Step:
    """One elimination step (one bucket).

    Attributes
    ----------
    index : int
    frontal : tuple
        Keys eliminated, as in the ordering.
    separator : tuple
        Keys the resulting conditional depends on, in elimination order.
    fill_edges : tuple of (key, key)
        Edges this step adds to the interaction graph.
    frontal_dim, separator_dim : int
        Scalar sizes of the front and its separator.
    frontal_min_dim : int
        Scalar size of the front's ``min`` variables (they lead the layout).
    hard_rows : int
        Hard equality rows in the bucket (``m``).
    substituted : int
        Front dimensions fixed by substitution: the structural rank ``r`` of
        the front's hard block.
    passed_rows, dropped_rows : int
        Of the ``m - r`` rows left over, those passed on to the separator as
        the new hard factor, and those that involve no separator variable:
        their right-hand sides are checked for consistency and dropped.
    hard_factors : tuple of int
        The graph's hard factors whose rows the bucket's hard rows combine
        (to name them when they are inconsistent).
    pivot : str
        Kind of the Schur-complement pivot on the remaining
        ``frontal_dim - substituted`` dimensions: ``"none"``, ``"definite"``
        (all ``min``: Cholesky), ``"negative"`` (all ``max``), ``"quasidefinite"``
        (both roles, no substitution: block LDL' with ``D = diag(I, -I)``) or
        ``"indefinite"`` (both roles after a substitution: symmetric eigen
        decomposition).
    flops : float
        Estimated floating-point operations of the dense kernels.
    factors : tuple of int
        Working factors in the bucket (indices; generated factors continue the
        graph's numbering).
    new_quadratic, new_equality : int or None
        Indices of the factors this step creates: a quadratic on the
        separator, and a hard factor with the leftover rows on the separator
        variables that share a hard factor with the front.
    equality_columns : ndarray
        Scalar positions, within the separator, of the new hard factor's scope.
    layout : tuple
        Local order of the keys in the bucket's dense block: the front with
        ``min`` keys first, then the separator.
    positions : tuple of ndarray
        For each factor of ``factors``, the local scalar positions of its scope.
    identity : int
        ``1`` / ``-1`` when the substitution is through one graph factor whose
        block on the (single) front is declared ``+I`` / ``-I``
        (``FactorStructure.units``): no decomposition; ``0`` otherwise.  The
        bucket may hold other hard rows (a link substituted root to leaves
        meets its children's joints): its front is then eliminated from them
        exactly, ``E = diag(1/omega) [-+A_oF, I]``, and they are passed on or
        dropped as the plan says.
    unit_row : int
        Where that factor's rows start among the bucket's hard rows (in
        ``factors`` order); 0 without one.
    """

    index: int
    frontal: tuple
    separator: tuple
    frontal_dim: int
    separator_dim: int
    frontal_min_dim: int
    hard_rows: int
    substituted: int
    passed_rows: int
    dropped_rows: int
    hard_factors: tuple
    pivot: str
    flops: float
    factors: tuple
    new_quadratic: int | None
    new_equality: int | None
    equality_columns: np.ndarray
    layout: tuple
    positions: tuple
    identity: int = 0
    unit_row: int = 0
    _fill: "_Fill | None" = field(default=None, compare=False, repr=False)

    @property
    def fill_edges(self) -> tuple:
        """Edges this step adds to the interaction graph, in ``combinations(separator, 2)`` order.

        A diagnostic (pictures, tables): the numeric pass never reads it, so it
        is worked out for the whole plan at the first request, not by ``analyze``.
        """
        return self._fill.of(self.index) if self._fill is not None else ()

    @property
    def front_size(self) -> int:
        """Scalar size of the dense front, ``frontal_dim + separator_dim``."""
        return self.frontal_dim + self.separator_dim

    @property
    def pivot_dim(self) -> int:
        """Dimensions eliminated by the Schur complement."""
        return self.frontal_dim - self.substituted


def step_flops(nF: int, nS: int, m: int, passed: int = 0, columns: int = 0) -> float:
    """Flop estimate of one dense elimination step.

    QR of the ``m x nF`` hard block, ``T = -W A_S`` and the change of variables
    of the ``(nF + nS)``-square Hessian when ``m > 0``, and the ``passed`` rows
    handed on to the separator, ``E A_S`` (``passed x m`` times ``m x columns``,
    ``columns`` the separator's scalar columns they touch); Cholesky of the
    ``nz``-square pivot, the triangular solve against the ``nz x nS`` coupling
    and the symmetric Schur update otherwise.

    Examples
    --------
    >>> step_flops(6, 12, 0)  # a link's 6-dim pivot on a 12-dim separator
    1368.0
    >>> step_flops(6, 24, 24, passed=18, columns=24) - step_flops(6, 24, 24)  # 18 rows passed on
    20736.0
    """
    r = min(m, nF)
    nz = nF - r
    substitution = 2.0 * m * nF * nF + 2.0 * nF * m * nS + 2.0 * (nF + nS) ** 2 * nF if m else 0.0
    passing = 2.0 * passed * m * columns
    return substitution + passing + nz**3 / 3.0 + nz * nz * nS + nz * nS * nS


@dataclass(frozen=True)
class Plan:
    """Result of :func:`analyze`: the steps, the elimination tree and totals.

    Attributes
    ----------
    structure : factorgraph.GraphStructure
        The structure analysed; :func:`elimination.factorize` checks the graph
        it is given against it.
    ordering : Ordering
    steps : tuple of Step
    factors : tuple of FactorStructure
        Every working factor: the graph's, then the generated ones.
    remaining : tuple
        Keys not eliminated (empty for a complete plan).
    remaining_factors : tuple of int
        Working factors still alive after the last step.
    numeric_ranks : bool
        The hard-row ranks were read from one graph's numbers
        (:class:`~elimination.numeric_rank.NumericHardRows`) rather than from
        its structure: the plan fits that graph only.
    """

    structure: object
    ordering: Ordering
    steps: tuple
    factors: tuple
    remaining: tuple
    remaining_factors: tuple
    numeric_ranks: bool = False
    programs: dict = field(default_factory=dict, compare=False, repr=False)

    def lowered(self, fuse: bool = True):
        """This plan's :class:`~elimination.program.Program` (lowered once, then kept here); ``fuse=False``:
        every step alone (:func:`~elimination.program.lower`)."""
        name = "program" if fuse else "unfused program"
        if name not in self.programs:
            from .program import lower

            self.programs[name] = lower(self, fuse)
        return self.programs[name]

    def layout(self):
        """Where a graph's numbers sit in this plan's workspaces: its :class:`~elimination.layout.Layout`
        (made once, then kept here).  A complete plan only."""
        if "layout" not in self.programs:
            from .layout import Layout

            self.programs["layout"] = Layout.of(self)
        return self.programs["layout"]

    @property
    def complete(self) -> bool:
        return not self.remaining

    @property
    def flops(self) -> float:
        """Total estimated flops of the numeric factorization."""
        return float(sum(s.flops for s in self.steps))

    @property
    def fill_edges(self) -> tuple:
        return tuple(e for s in self.steps for e in s.fill_edges)

    @property
    def max_front(self) -> int:
        """Largest scalar front size (``frontal_dim + separator_dim``)."""
        return max((s.front_size for s in self.steps), default=0)

    @property
    def max_separator(self) -> int:
        """Most separator variables of any step (the induced width of the order)."""
        return max((len(s.separator) for s in self.steps), default=0)

    def step_of(self, key) -> Step:
        """The step that eliminates ``key``."""
        for s in self.steps:
            if key in s.frontal:
                return s
        raise KeyError(f"variable {key!r} is not eliminated by this plan")

    def parent(self, step: Step) -> Step | None:
        """The step eliminating the first separator variable (Liu's elimination tree)."""
        eliminated = [k for k in step.separator if k not in self.remaining]
        return self.step_of(eliminated[0]) if eliminated else None

    def tree(self) -> nx.DiGraph:
        """Elimination (clique) tree: a node per step, edges parent -> child.

        Node attributes: ``frontal``, ``separator``, ``frontal_dim``,
        ``separator_dim``, ``flops``.  A forest when the graph is disconnected.
        """
        tree = nx.DiGraph()
        for s in self.steps:
            tree.add_node(
                s.index, frontal=s.frontal, separator=s.separator, frontal_dim=s.frontal_dim,
                separator_dim=s.separator_dim, flops=s.flops,
            )
        for s in self.steps:
            parent = self.parent(s)
            if parent is not None:
                tree.add_edge(parent.index, s.index)
        return tree

    def summary(self) -> dict:
        """Totals as a plain dict (for tables and JSON)."""
        return {
            "steps": len(self.steps),
            "flops": self.flops,
            "fill_edges": len(self.fill_edges),
            "max_front": self.max_front,
            "max_separator": self.max_separator,
        }


@dataclass(frozen=True)
class HardStep:
    """What the hard rows of one bucket do (from a hard-row bookkeeping).

    ``substituted`` front dimensions are fixed by substitution; of the rows
    left over, ``passed`` go on to ``scope`` (separator keys, elimination
    order) as a new hard factor and ``dropped`` are checked and discarded;
    ``group`` is the set of the graph's hard factors the rows combine.
    """

    substituted: int
    passed: int
    dropped: int
    scope: tuple
    group: frozenset


class _Flow:
    """A maximum flow from a group's hard factors (capacity: rows) to a set of columns (capacity: dimension).

    ``into[k][i]`` is the flow from factor ``i`` to column ``k``; ``out`` and
    ``load`` are its sums per factor and per column, ``free`` the factors with
    rows to spare and ``short`` the columns not yet saturated.
    """

    __slots__ = ("group", "cols", "into", "out", "load", "value", "free", "short")

    def __init__(self):
        self.group, self.cols = set(), set()
        self.into, self.out, self.load = {}, {}, {}
        self.value = 0
        self.free, self.short = set(), set()

    def absorb(self, other: "_Flow") -> None:
        """Add a flow on disjoint factors and columns (their union is a flow)."""
        self.group |= other.group
        self.cols |= other.cols
        self.into.update(other.into)
        self.out.update(other.out)
        self.load.update(other.load)
        self.value += other.value
        self.free |= other.free
        self.short |= other.short


class HardRows:
    """Generic-rank bookkeeping of the hard rows during symbolic elimination.

    The rows of a working hard factor are the original rows of a *group* of
    the graph's hard factors, with the columns of the variables *eliminated*
    along the way reduced out.  For generic coefficients the rank of a set of
    columns ``X`` in a group ``G`` is ``rho_G(X)``, a maximum flow from the
    group's factors (capacity: rows) to the variables of ``X`` they touch
    (capacity: dimension) -- a maximum bipartite matching of row copies to
    column copies.  Column reduction then gives

    * the substitution rank of a front ``F``: ``rho_G(C + F) - rho_G(C)``;
    * the support of the leftover rows: the ``y`` with
      ``rho_G(C + F + y) > rho_G(C + F)`` -- a union of scopes would be too
      wide, since eliminating a column can cancel a factor out of a row
      combination exactly.

    No flow is computed per candidate: given a maximum flow for ``C + F``,
    adding ``y`` raises the rank exactly when ``y`` is touched by a factor
    reachable from a factor with rows to spare in the residual network
    (an augmenting path ends at ``y``; Dulmage-Mendelsohn), so one search
    gives the whole support.  The flow of a working factor is kept and
    grown: the groups and columns of the factors a bucket combines are
    disjoint, so their flows add up to a flow of the union, which a few
    augmenting paths make maximum again.

    The interface :meth:`eliminate` / :meth:`record` is what :func:`analyze`
    asks of any bookkeeping (see :class:`elimination.numeric_rank.NumericHardRows`).

    Examples
    --------
    >>> from factorgraph import FactorStructure
    >>> rows = HardRows({0: FactorStructure(("x", "z"), 2)}, {"x": 1, "y": 1, "z": 1})
    >>> rows.rank(frozenset({0}), frozenset({"x", "y"}))
    1
    """

    def __init__(self, originals: dict, dims: dict):
        self.originals = originals
        self.dims = dims
        self.provenance = {i: (frozenset({i}), frozenset()) for i in originals}
        self._keys = {i: f.keys for i, f in originals.items()}
        self._rows = {i: f.rows for i, f in originals.items()}
        self._flows: dict = {}  # working factor -> its maximum flow, until a bucket consumes it
        self._pending = None

    def rank(self, group: frozenset, columns: frozenset) -> int:
        """``rho_G(X)``: generic rank of the columns ``X`` in the rows of group ``G``."""
        flow = _Flow()
        self._add(flow, group, columns)
        self._maximize(flow)
        return flow.value

    def _add(self, flow: _Flow, group, columns) -> None:
        """Factors and columns with no flow yet (already present ones are left as they are)."""
        rows, dims = self._rows, self.dims
        for i in group:
            if i not in flow.group:
                flow.group.add(i)
                if rows[i] > 0:
                    flow.free.add(i)
        for k in columns:
            if k not in flow.cols:
                flow.cols.add(k)
                if dims[k] > 0:
                    flow.short.add(k)

    def _search(self, flow: _Flow, stop: bool):
        """Breadth-first search of the residual network from the factors with rows to spare.

        With ``stop``, returns the first augmenting path found as
        ``(column, came_from, via)``; otherwise (or when there is none)
        ``via``, whose keys are the reachable factors.
        """
        keys, cols, into, short = self._keys, flow.cols, flow.into, flow.short
        via = dict.fromkeys(flow.free)  # factor -> the column it was reached from (None: a source)
        came_from = {}  # column -> the factor it was reached from
        queue = list(flow.free)
        for i in queue:  # grows while iterating: breadth first
            for k in keys[i]:
                if k in cols and k not in came_from:
                    came_from[k] = i
                    if stop and k in short:
                        return k, came_from, via
                    for j in into.get(k, ()):
                        if j not in via:
                            via[j] = k
                            queue.append(j)
        return via

    def _augment(self, flow: _Flow, end, came_from: dict, via: dict) -> None:
        """Push the bottleneck along the path ending at the unsaturated column ``end``."""
        into, rows, dims = flow.into, self._rows, self.dims
        path = []  # (factor, column it sends more to)
        k = end
        while True:
            i = came_from[k]
            path.append((i, k))
            k = via[i]
            if k is None:
                break
        source = path[-1][0]
        amount = min(rows[source] - flow.out.get(source, 0), dims[end] - flow.load.get(end, 0))
        for i, _ in path[:-1]:  # i gives back what it sent to via[i]
            amount = min(amount, into[via[i]][i])
        for i, k in path:
            sent = into.setdefault(k, {})
            sent[i] = sent.get(i, 0) + amount
            back = via[i]
            if back is not None:
                left = into[back][i] - amount
                if left:
                    into[back][i] = left
                else:
                    del into[back][i]
        flow.out[source] = flow.out.get(source, 0) + amount
        if flow.out[source] == rows[source]:
            flow.free.discard(source)
        flow.load[end] = flow.load.get(end, 0) + amount
        if flow.load[end] == dims[end]:
            flow.short.discard(end)
        flow.value += amount

    def _maximize(self, flow: _Flow):
        """Augment ``flow`` to a maximum; the reachable factors if the last search saw them all, else None."""
        while flow.short and flow.free:
            found = self._search(flow, stop=True)
            if not isinstance(found, tuple):
                return found
            self._augment(flow, *found)
        return None

    def eliminate(self, hard: list, m: int, frontal: tuple, order_position: dict) -> HardStep:
        """What the bucket's hard factors ``hard`` (working indices, ``m`` rows in all) do to ``frontal``."""
        flows = [self._flows.pop(i, None) for i in hard]  # a bucket consumes its factors
        live = [f for f in flows if f is not None]
        flow = max(live, key=lambda f: len(f.group)) if live else _Flow()
        for i, other in zip(hard, flows):
            if other is flow:
                continue
            if other is not None and flow.group.isdisjoint(other.group) and flow.cols.isdisjoint(other.cols):
                flow.absorb(other)
            else:  # an original factor, or (never in analyze) overlapping histories: no flow is a flow
                self._add(flow, *self.provenance[i])
        group = frozenset(flow.group)
        self._maximize(flow)
        base = flow.value
        self._add(flow, (), frontal)
        reached = self._maximize(flow)
        if reached is None:
            reached = self._search(flow, stop=False) if flow.free else ()
        substituted = flow.value - base
        cols, keys, dims = flow.cols, self._keys, self.dims
        support = {y for i in reached for y in keys[i] if y not in cols and dims[y] > 0}
        support = tuple(sorted(support, key=order_position.get))
        passed = m - substituted if support else 0
        self._pending = (group, flow, None)
        return HardStep(substituted, passed, m - substituted - passed, support, group)

    def record(self, index: int) -> None:
        """The rows passed on by the last :meth:`eliminate` become working factor ``index``."""
        group, flow, after = self._pending
        if after is None:
            after = frozenset(flow.cols)
        self.provenance[index] = (group, after)
        if flow is not None:
            self._flows[index] = flow
        self._pending = (group, None, after)  # recorded twice (never in analyze): the flow is not shared


def _check_ordering(structure, ordering: Ordering, complete: bool) -> None:
    known = {v.key for v in structure.variables}
    seen = set()
    for key in ordering.keys():
        if key not in known:
            raise OrderingError(f"the ordering names {key!r}, which is not a variable of the graph")
        if key in seen:
            raise OrderingError(f"the ordering eliminates {key!r} twice")
        seen.add(key)
    missing = [v.key for v in structure.variables if v.key not in seen]
    if complete and missing:
        raise OrderingError(f"the ordering omits {missing}; every variable must be eliminated once")


def _starts(layout: tuple, dims: dict) -> dict:
    """Key -> offset of its first scalar in a front laid out as ``layout``."""
    offset, start = 0, {}
    for key in layout:
        start[key] = offset
        offset += dims[key]
    return start


def _positions(layout, dims: dict, keys: tuple) -> np.ndarray:
    """Scalar positions of ``keys`` in the front ``layout`` (a tuple of keys, or its :func:`_starts`)."""
    start = layout if isinstance(layout, dict) else _starts(layout, dims)
    if len(keys) == 1:
        return np.arange(start[keys[0]], start[keys[0]] + dims[keys[0]])
    size = np.fromiter((dims[k] for k in keys), np.int64, len(keys))
    first = np.fromiter((start[k] for k in keys), np.int64, len(keys))
    ends = np.cumsum(size)
    return np.repeat(first - (ends - size), size) + np.arange(ends[-1])  # each key's run, without a loop


def _variable_index(factors: list, dims: dict) -> dict:
    """Key -> the factors on it (GTSAM's VariableIndex); a variable in no factor is refused."""
    factors_of = {key: set() for key in dims}
    for i, f in enumerate(factors):
        for key in f.keys:
            factors_of[key].add(i)
    orphans = [key for key, fs in factors_of.items() if not fs]
    if orphans:
        raise ValueError(f"variable(s) {orphans} appear in no factor: their values are undetermined")
    return factors_of


def _generated(factors: list, factors_of: dict, separator: tuple, rows, hard_rows) -> tuple:
    """``(new_quadratic, new_equality)``: the factors a step generates -- a quadratic on its separator, the hard
    rows it passes on (``rows``: its :class:`HardStep`) -- appended to ``factors`` and indexed in
    ``factors_of`` (None where it generates none)."""
    new_quadratic = new_equality = None
    if separator:
        new_quadratic = len(factors)
        factors.append(FactorStructure(separator, 0))
    if rows.passed:
        new_equality = len(factors)
        factors.append(FactorStructure(rows.scope, rows.passed))
        hard_rows.record(new_equality)
    for i in (new_quadratic, new_equality):
        if i is not None:
            for key in factors[i].keys:
                factors_of[key].add(i)
    return new_quadratic, new_equality


def _identity(factors: list, hard: list, frontal: tuple, nF: int, rows) -> tuple:
    """``(sign, row)``: the declared sign of a ``+-I`` substitution block (:attr:`Step.identity`) and where its
    rows start among the bucket's hard rows (:attr:`Step.unit_row`), or ``(0, 0)``.

    The block is one graph factor's with exactly ``nF`` rows on the single frontal key; of several, a ``+I``
    one first (a link's own tree joint, ``a_i = a_parent + S qdd``, rather than a child's), then the first.
    Where the rows left over are both passed on and dropped, their split needs a decomposition anyway: none.
    """
    if len(frontal) != 1 or (rows.passed and rows.dropped):
        return 0, 0
    candidates, start = [], 0
    for i in hard:
        f = factors[i]
        unit = f.units[f.keys.index(frontal[0])] if f.units and f.rows == nF and frontal[0] in f.keys else 0
        if unit:
            candidates.append((-unit, start))
        start += f.rows
    if not candidates:
        return 0, 0
    sign, row = min(candidates)
    return -sign, row


def _pivot_kind(roles: list, nz: int, substituted: int) -> str:
    if nz == 0:
        return "none"
    if all(r == "min" for r in roles):
        return "definite"
    if all(r == "max" for r in roles):
        return "negative"
    return "indefinite" if substituted else "quasidefinite"


class _Fill:
    """The fill edges of every step of one analysis, worked out together at the first request.

    Replays the elimination game on the interaction graph along the steps
    (:func:`_fill_edges`, :func:`_eliminate`); ``analyze`` itself needs only
    the separators, which the buckets give.
    """

    def __init__(self, structure, factors: list, steps: list):
        self._structure, self._factors, self._steps = structure, factors, steps
        self._edges = None

    def of(self, index: int) -> tuple:
        if self._edges is None:
            adjacency, edges = _adjacency(self._structure.interaction_graph()), []
            for step in self._steps:
                clique = _largest_scope(step.factors, self._factors, set(step.frontal))
                edges.append(_fill_edges(step.separator, adjacency, clique))
                _eliminate(adjacency, step.frontal, edges[-1])
            self._edges = edges
        return self._edges[index]


def _adjacency(graph) -> dict:
    """Key -> set of neighbour keys: the elimination graph analyze keeps (sets: the fill test is a set difference)."""
    return {key: set(graph.adj[key]) for key in graph.nodes}


def _fill_edges(separator: tuple, adjacency: dict, clique: frozenset = frozenset()) -> tuple:
    """Pairs of ``separator`` not yet adjacent, in ``combinations(separator, 2)`` order.

    ``clique``: keys of the separator known to be pairwise adjacent already --
    the scope of one factor of the bucket (every scope is a clique of the
    elimination graph: a graph factor's by definition, a generated factor's
    since the step that made it).  Only pairs with a key outside it are
    tested, one set difference per key, so a step costs about
    ``|separator| * |separator - clique|``: along a chain, where each
    separator is mostly the one before it, that is linear in the separator.

    >>> _fill_edges(("a", "b", "c"), {"a": {"b"}, "b": {"a"}, "c": set()})
    (('a', 'c'), ('b', 'c'))
    >>> _fill_edges(("a", "b", "c"), {"a": {"b"}, "b": {"a"}, "c": set()}, frozenset("ab"))
    (('a', 'c'), ('b', 'c'))
    """
    rank = {key: i for i, key in enumerate(separator)}
    outside = [key for key in separator if key not in clique]
    outside_ranks = [rank[key] for key in outside]
    fill = []
    last = outside_ranks[-1] if outside_ranks else -1  # past it, every pair lies inside the clique
    for i, u in enumerate(separator[: min(last + 1, len(separator) - 1)]):
        if u in clique:  # only the later keys outside the clique can be missing
            neighbours = adjacency[u]
            missing = [v for v in outside[bisect_right(outside_ranks, i):] if v not in neighbours]
        else:
            missing = sorted(set(separator[i + 1:]).difference(adjacency[u]), key=rank.__getitem__)
        fill += [(u, v) for v in missing]
    return tuple(fill)


def _largest_scope(bucket, factors, inside: set) -> frozenset:
    """The largest scope among the bucket's factors, less the frontal keys: a clique of the separator."""
    best = max((factors[i].keys for i in bucket), key=len, default=())
    return frozenset(best).difference(inside)


def _eliminate(adjacency: dict, frontal, fill: tuple) -> None:
    """Add the fill, then remove the frontal keys from the elimination graph."""
    for u, v in fill:
        adjacency[u].add(v)
        adjacency[v].add(u)
    for key in frontal:
        for neighbour in adjacency.pop(key):
            if neighbour in adjacency:
                adjacency[neighbour].discard(key)


def analyze(graph, ordering: Ordering, complete: bool = True, hard_rows=None) -> Plan:
    """Symbolic elimination of ``graph`` in ``ordering``.

    Parameters
    ----------
    graph : FactorGraph or GraphStructure
        Only its structure is read.
    ordering : Ordering
    complete : bool
        Require every variable to be eliminated; with ``False`` a prefix
        ordering gives a partial plan (see ``Factorization.remaining``).
    hard_rows : optional
        Hard-row bookkeeping with the interface of :class:`HardRows`
        (``eliminate``, ``record``); the default reads ranks from the
        structure.  :class:`elimination.numeric_rank.NumericHardRows` reads
        them from one graph's numbers (the plan is then marked
        ``numeric_ranks``).

    Returns
    -------
    Plan

    Raises
    ------
    TypeError
        ``graph`` is not a graph, or ``ordering`` not an :class:`Ordering`.
    OrderingError
        Unknown, repeated or (when ``complete``) missing variables.
    ValueError
        A variable in no factor.
    SingularProblemError
        A front whose bucket has no quadratic term for its free dimensions
        (undetermined variables).

    Examples
    --------
    >>> import networkx as nx
    >>> from factorgraph import GraphStructure
    >>> plan = analyze(GraphStructure.from_networkx(nx.cycle_graph(4)), Ordering.from_keys([0, 1, 2, 3]))
    >>> plan.fill_edges
    ((1, 3),)
    """
    if not callable(getattr(graph, "structure", None)):
        raise TypeError(f"analyze: graph must be a FactorGraph or GraphStructure, got {type(graph).__name__}")
    if not isinstance(ordering, Ordering):
        raise TypeError(
            f"analyze: ordering must be an Ordering, got {type(ordering).__name__}; "
            "use elimination.resolve_ordering(graph, name) for a named heuristic"
        )
    structure = graph.structure()
    _check_ordering(structure, ordering, complete)
    dims = {v.key: v.dim for v in structure.variables}
    roles = {v.key: v.role for v in structure.variables}
    factors = list(structure.factors)
    numeric = hard_rows is not None
    if hard_rows is None:
        hard_rows = HardRows({i: f for i, f in enumerate(factors) if f.hard}, dims)
    factors_of = _variable_index(factors, dims)

    eliminated = ordering.keys()
    order_position = {key: i for i, key in enumerate(eliminated)}
    for i, var in enumerate(structure.variables):
        order_position.setdefault(var.key, len(eliminated) + i)
    steps = []
    fill = _Fill(structure, factors, steps)
    for index, frontal in enumerate(ordering):
        bucket = sorted(set().union(*(factors_of[key] for key in frontal)))
        for i in bucket:
            for key in factors[i].keys:
                factors_of[key].discard(i)
        inside = set(frontal)
        separator = tuple(sorted({k for i in bucket for k in factors[i].keys} - inside, key=order_position.get))

        nF = sum(dims[k] for k in frontal)
        nS = sum(dims[k] for k in separator)
        m = sum(factors[i].rows for i in bucket)
        hard = [i for i in bucket if factors[i].hard]
        rows = hard_rows.eliminate(hard, m, frontal, order_position) if hard else HardStep(0, 0, 0, (), frozenset())
        nz = nF - rows.substituted
        if nz and not any(not factors[i].hard for i in bucket):
            raise SingularProblemError(
                f"step {index}: variables {list(frontal)} are undetermined: their bucket holds {m} hard "
                f"row(s) of rank {rows.substituted} for {nF} dimension(s) and no quadratic term.",
                index, tuple(frontal), kind="undetermined", factors=tuple(sorted(rows.group)),
            )
        new_quadratic, new_equality = _generated(factors, factors_of, separator, rows, hard_rows)
        identity, unit_row = _identity(factors, hard, frontal, nF, rows)
        layout = tuple(sorted(frontal, key=lambda k: roles[k] != "min")) + separator
        columns = _positions(separator, dims, rows.scope) if rows.passed else np.zeros(0, int)  # E A_S's
        starts = _starts(layout, dims)
        steps.append(
            Step(
                index=index, frontal=tuple(frontal), separator=separator, _fill=fill,
                frontal_dim=nF, separator_dim=nS,
                frontal_min_dim=sum(dims[k] for k in frontal if roles[k] == "min"), hard_rows=m,
                substituted=rows.substituted, passed_rows=rows.passed, dropped_rows=rows.dropped,
                hard_factors=tuple(sorted(rows.group)),
                pivot=_pivot_kind([roles[k] for k in frontal], nz, rows.substituted),
                flops=step_flops(nF, nS, m, rows.passed, len(columns)), factors=tuple(bucket),
                new_quadratic=new_quadratic, new_equality=new_equality,
                equality_columns=columns,
                layout=layout,
                positions=tuple(_positions(starts, dims, factors[i].keys) for i in bucket),
                identity=identity, unit_row=unit_row,
            )
        )
    done = set(eliminated)
    remaining = tuple(v.key for v in structure.variables if v.key not in done)
    alive = tuple(sorted(set().union(*(factors_of[k] for k in remaining)))) if remaining else ()
    return Plan(structure, ordering, tuple(steps), tuple(factors), remaining, alive, numeric)
