"""Library orderings: SuiteSparse AMD and METIS nested dissection, plus constrained variants.

The fill-reducing orderings of the field, through maintained bindings, as entries of
:data:`elimination.ORDERINGS` (``"amd"``, ``"metis"``) and as functions taking the
constraints a mechanism needs -- "these keys first / last", as GTSAM's
``Ordering::ColamdConstrainedLast``:

>>> import networkx as nx
>>> from elimination import amd, constrained_last
>>> amd(nx.path_graph(4)).keys()
(3, 2, 0, 1)
>>> constrained_last(nx.path_graph(4), last=[0]).keys()[-1]
0

Bindings (chosen for wheels: no compiler, no system library)

* **AMD: SuiteSparse AMD through CVXOPT** (``cvxopt.amd.order``; ``pip install cvxopt``).
  CVXOPT is maintained, its manylinux wheels bundle SuiteSparse (checked: CPython 3.11,
  x86_64), and ``amd.order`` takes a sparse pattern.  The alternatives: scikit-sparse
  >= 0.5 wraps AMD, CAMD, COLAMD and CCOLAMD but ships source only and needs SuiteSparse's
  headers (``libsuitesparse-dev``) and a C compiler; ``suitesparse-amd`` has wheels but
  takes dense matrices (O(n^2) memory); SciPy's SuperLU computes COLAMD / MMD only inside
  a numeric LU (``splu(..., permc_spec=...).perm_c``); GTSAM is a test dependency only.
* **Nested dissection: METIS through pymetis** (``pymetis.nested_dissection`` is
  ``METIS_NodeND`` with METIS's default options, as GTSAM's ``Ordering::Metis``;
  ``pip install pymetis``, >= 2025.2.2 for vertex weights).

A missing binding raises an :class:`ImportError` saying what to install when the ordering
is called; importing this module never fails.

What is ordered
    The variable-level interaction graph (a node per key, an edge per pair of keys sharing
    a factor), unweighted by default: block AMD on keys, as GTSAM runs COLAMD on keys, and
    the graph whose fill :attr:`Plan.fill_edges <elimination.Plan.fill_edges>` counts.
    ``weighted=True`` weighs keys by dimension: AMD orders the scalar graph (each key
    ``dim`` indistinguishable scalars, kept together by AMD's supervariable detection; a
    key goes where its first scalar goes), METIS gets ``dim`` as vertex weight.  On the
    GPLC graphs of the mechanics models (6-d link accelerations, 1-d joint accelerations,
    multipliers; our plan's flop estimate) weighting lowered AMD's cost on three of seven
    under ``prox`` (worst_case -14%, digit_leg -17%, fig4 -9%) and raised it by at most 3% on
    the others and on all under ``alm``; with multipliers ``last`` it went either way
    (-4% to +14%).  Weighted AMD is also ~20x slower on 6-d keys (the scalar graph has
    ``dim^2`` times the entries), so the default is GTSAM's: unweighted.

Constrained variants (``first=`` / ``last=``, :func:`constrained_first`, :func:`constrained_last`)
    What SuiteSparse's CAMD / CCOLAMD do, with plain AMD / METIS: the keys are ordered
    class by class (``first``, the rest, ``last``).  A class is ordered on the
    *elimination graph* the classes before it leave (keys adjacent when they share a
    factor or touch one connected component of the eliminated keys), together with the
    later classes, which get the edges among them that eliminating the class adds in any
    order; the class is then taken in the library's relative order.  Those edges are fill
    the constrained order makes anyway, so they change none of it, but they make the
    class's degrees count its neighbours in later classes, as CAMD's do, and make later
    keys look as dense as they will be (AMD's dense-row rule is off there, so they stay
    seen).  Measured against GTSAM's CCOLAMD (``ColamdConstrainedLast`` / ``First``) on the
    same graphs, by our plan's flop estimate: multipliers last on the mechanics models
    0.90-1.02x (chain of 100 loops: 1.00x), random graphs with a random third last median
    1.06x (at most 1.19x), first median 1.00x.  Deleting the later classes instead (plain
    AMD on each class alone) was 7x worse on the chain of loops.  ``force_order=True``
    keeps the constrained keys in the order given, as GTSAM's ``forceOrder``.

Not supported: an ``eligible`` predicate (a library sees the whole graph at once; the greedy
heuristics of :mod:`elimination.ordering` take one).  ``blocks`` are honoured: each group is
contracted to one node (dimensions summed) and emitted as one frontal block, or as
consecutive single-key blocks with ``split_blocks=True``.
"""
from __future__ import annotations

from typing import Hashable, Iterable, Sequence

import networkx as nx
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .errors import OrderingError
from .ordering import ORDERINGS, Ordering

__all__ = ["amd", "metis", "constrained_first", "constrained_last", "LIBRARY_ORDERINGS"]

_CVXOPT_HINT = (
    "the 'amd' ordering runs SuiteSparse AMD through CVXOPT, which is not installed: "
    "pip install 'cvxopt>=1.3' (wheels bundle SuiteSparse; or install gaussgraph's test extra)"
)
_PYMETIS_HINT = (
    "the 'metis' ordering runs METIS through pymetis, which is not installed or too old: "
    "pip install 'pymetis>=2025.2.2' (wheels bundle METIS; or install gaussgraph's test extra)"
)


# -- the pattern ----------------------------------------------------------------------------------
class _Pattern:
    """Keys, dimensions and the symmetric adjacency (CSR, no diagonal) of a graph's variables."""

    def __init__(self, keys: list, dims: np.ndarray, adj: sp.csr_matrix):
        self.keys, self.dims, self.adj = keys, dims, adj
        self.index = {key: i for i, key in enumerate(keys)}

    @classmethod
    def of(cls, graph) -> "_Pattern":
        if isinstance(graph, nx.Graph):
            keys = list(graph.nodes)
            dims = [graph.nodes[k].get("dim", 1) for k in keys]
            index = {key: i for i, key in enumerate(keys)}
            flat = [index[k] for edge in graph.edges for k in edge]
            scopes = {2: np.asarray(flat, dtype=np.int64).reshape(-1, 2)}
        elif callable(getattr(graph, "structure", None)):
            # FactorGraph and GraphStructure both list variables and factors (with .keys)
            source = graph if hasattr(graph, "variables") and hasattr(graph, "factors") else graph.structure()
            variables, factors = tuple(source.variables), tuple(source.factors)
            keys = [v.key for v in variables]
            dims = [v.dim for v in variables]
            index = {key: i for i, key in enumerate(keys)}
            sizes = np.fromiter((len(f.keys) for f in factors), dtype=np.int64, count=len(factors))
            flat = np.fromiter(
                map(index.__getitem__, (k for f in factors for k in f.keys)), dtype=np.int64, count=int(sizes.sum())
            )
            start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            scopes = {
                int(size): flat[start[sizes == size, None] + np.arange(size)] for size in np.unique(sizes) if size > 1
            }
        elif callable(getattr(graph, "interaction_graph", None)):
            return cls.of(graph.interaction_graph())
        else:
            raise TypeError(f"expected a FactorGraph, GraphStructure or networkx.Graph, got {type(graph).__name__}")
        n = len(keys)
        rows, cols = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
        for size, scope in scopes.items():  # every ordered pair of a scope
            a, b = np.nonzero(~np.eye(size, dtype=bool))
            rows.append(scope[:, a].ravel())
            cols.append(scope[:, b].ravel())
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        keep = rows != cols
        adj = sp.csr_matrix((np.ones(int(keep.sum()), dtype=np.int8), (rows[keep], cols[keep])), shape=(n, n))
        adj.sum_duplicates()
        adj.data[:] = 1
        return cls(keys, np.maximum(np.asarray(dims, dtype=np.int64).reshape(n), 1), adj)

    def positions(self, keys, what: str) -> list[int]:
        if isinstance(keys, (str, bytes)) or not isinstance(keys, Iterable):
            raise TypeError(f"{what} must be a sequence of variable keys, got {keys!r}")
        out = []
        for key in keys:
            if key not in self.index:
                raise OrderingError(f"{what} names {key!r}, which is not a variable of the graph")
            out.append(self.index[key])
        return out


def _contract(adj: sp.csr_matrix, dims: np.ndarray, group: np.ndarray, ngroups: int):
    """Adjacency and dimensions of the graph with node ``i`` merged into group ``group[i]``."""
    n = len(group)
    P = sp.csr_matrix((np.ones(n, dtype=np.int64), (group, np.arange(n))), shape=(ngroups, n))
    merged = (P @ adj.astype(np.int64) @ P.T).tocsr()
    merged.setdiag(0)
    merged.eliminate_zeros()
    merged.data[:] = 1
    return merged, np.bincount(group, weights=dims, minlength=ngroups).astype(np.int64)


def _eliminated_graph(adj: sp.csr_matrix, eliminated: np.ndarray, members: np.ndarray) -> sp.csr_matrix:
    """Pattern among ``members`` once the nodes flagged ``eliminated`` are gone (their fill added).

    Two members are adjacent when adjacent in ``adj`` or when both touch one connected
    component of the eliminated nodes: the elimination graph, independent of the order in
    which the eliminated nodes went.
    """
    sub = adj[members][:, members]
    done = np.flatnonzero(eliminated)
    if len(done) == 0 or len(members) == 0:
        return sub.tocsr()
    ncomp, label = connected_components(adj[done][:, done], directed=False)
    touch = adj[done][:, members].tocoo()  # eliminated node -> member
    B = sp.csr_matrix((np.ones(touch.nnz, dtype=np.int64), (label[touch.row], touch.col)), shape=(ncomp, len(members)))
    B.data[:] = 1
    filled = (sub.astype(np.int64) + B.T @ B).tocsr()
    filled.setdiag(0)
    filled.eliminate_zeros()
    filled.data[:] = 1
    return filled


def _class_order(adj, dims, eliminated, todo, later, method) -> np.ndarray:
    """Order the nodes ``todo`` after those flagged ``eliminated`` and before ``later``.

    The library orders the elimination graph left by ``eliminated`` on ``todo`` and
    ``later``, with the edges among ``later`` that eliminating ``todo`` will add in any
    order; ``todo`` is then taken in the library's relative order.  The added edges are
    fill the constrained order makes anyway (its fill is unchanged); they make the degrees
    of ``todo`` count their neighbours in ``later`` and ``later`` look as dense as it will
    be, and AMD's dense-row rule, which would hide such keys from those degrees, is off.
    """
    if len(later) == 0:
        sub = _eliminated_graph(adj, eliminated, todo) if eliminated.any() else adj[todo][:, todo].tocsr()
        return todo[method(sub, dims[todo], True)]
    live = np.concatenate([todo, later])
    sub = _eliminated_graph(adj, eliminated, live) if eliminated.any() else adj[live][:, live].tocsr()
    after = eliminated.copy()
    after[todo] = True
    tail = _eliminated_graph(adj, after, later).tocoo()
    shift = len(todo)
    tail = sp.csr_matrix((tail.data, (tail.row + shift, tail.col + shift)), shape=sub.shape)
    sub = (sub + tail).tocsr()
    sub.data[:] = 1
    perm = method(sub, dims[live], False)
    return live[perm[perm < shift]]


# -- the libraries --------------------------------------------------------------------------------
def _cvxopt_amd():
    try:
        import cvxopt
        import cvxopt.amd
    except ImportError as exc:
        raise ImportError(_CVXOPT_HINT) from exc
    return cvxopt


def _pymetis():
    try:
        import pymetis
    except ImportError as exc:
        raise ImportError(_PYMETIS_HINT) from exc
    if not hasattr(pymetis, "CSRAdjacency"):
        raise ImportError(_PYMETIS_HINT)
    return pymetis


def _amd_perm(adj: sp.csr_matrix, dims: np.ndarray, weighted: bool, dense: bool = True) -> np.ndarray:
    """SuiteSparse AMD permutation of the nodes of ``adj``.

    ``dense=False`` turns off AMD's dense-row rule (rows of more than ``10 sqrt(n)``
    entries ordered last, unseen by the others' degrees).
    """
    cvxopt = _cvxopt_amd()
    n = adj.shape[0]
    if n <= 1:
        return np.arange(n)
    expand = weighted and np.any(dims > 1)
    if expand:  # scalar graph: each node a clique of dims[i] scalars, P (A + I) P'
        owner = np.repeat(np.arange(n), dims)
        P = sp.csr_matrix((np.ones(len(owner), dtype=np.int64), (np.arange(len(owner)), owner)), shape=(len(owner), n))
        pattern = (P @ (adj.astype(np.int64) + sp.identity(n, dtype=np.int64, format="csr")) @ P.T).tocsr()
    else:
        pattern = adj
    lower = sp.tril(pattern, k=-1).tocoo()
    A = cvxopt.spmatrix(
        1.0, cvxopt.matrix(lower.row.astype(np.int64)), cvxopt.matrix(lower.col.astype(np.int64)), pattern.shape
    ) if lower.nnz else cvxopt.spmatrix([], [], [], pattern.shape)
    saved = dict(cvxopt.amd.options)  # CVXOPT reads its controls from this module-level dict
    if not dense:
        cvxopt.amd.options["AMD_DENSE"] = -1.0
    try:
        perm = np.asarray(cvxopt.amd.order(A), dtype=np.int64).ravel()
    finally:
        cvxopt.amd.options.clear()
        cvxopt.amd.options.update(saved)
    if not expand:
        return perm
    position = np.empty(len(perm), dtype=np.int64)
    position[perm] = np.arange(len(perm))
    first = np.minimum.reduceat(position, np.concatenate([[0], np.cumsum(dims)[:-1]]))
    return np.argsort(first, kind="stable")


def _metis_perm(adj: sp.csr_matrix, dims: np.ndarray, weighted: bool, options: dict) -> np.ndarray:
    """METIS_NodeND permutation of the nodes of ``adj``."""
    pymetis = _pymetis()
    n = adj.shape[0]
    if n <= 1:  # METIS divides by zero on an empty graph
        return np.arange(n)
    adj = adj.tocsr()
    adj.sort_indices()
    kwargs = {"vweights": dims.astype(np.int64)} if weighted else {}
    perm, _ = pymetis.nested_dissection(
        pymetis.CSRAdjacency(adj.indptr.astype(np.int64), adj.indices.astype(np.int64)),
        options=pymetis.Options(**options), **kwargs,
    )
    return np.asarray(perm, dtype=np.int64)


# -- the game ---------------------------------------------------------------------------------
def _library_ordering(graph, method, eligible, blocks, split_blocks, first, last, force_order, name) -> Ordering:
    if eligible is not None:
        raise OrderingError(
            f"{name} is a library ordering and cannot follow an eligibility predicate; pass first=/last= "
            f"key sets, or use elimination.min_degree(graph, eligible=...) for a predicate"
        )
    pattern = _Pattern.of(graph)
    n = len(pattern.keys)
    group, members = _groups(pattern, blocks)
    ngroups = n if members is None else len(members)
    adj, dims = (pattern.adj, pattern.dims) if members is None else _contract(pattern.adj, pattern.dims, group, ngroups)

    # constraint classes: 0 first, 1 the rest, 2 last; a group takes its keys' class
    key_cls = np.ones(n, dtype=np.int64)
    given: dict = {0: [], 2: []}
    for c, keys, what in ((0, first, "first"), (2, last, "last")):
        if keys is None:
            continue
        seen = set()
        for i in pattern.positions(keys, what):
            if key_cls[i] == 2 - c:
                raise OrderingError(f"{pattern.keys[i]!r} is in both first and last")
            key_cls[i] = c
            if group[i] not in seen:
                seen.add(group[i])
                given[c].append(int(group[i]))
    if members is None:
        cls = key_cls
    else:
        cls = np.empty(ngroups, dtype=np.int64)
        for g, keys in enumerate(members):
            classes = set(key_cls[keys].tolist())
            if len(classes) > 1:
                raise OrderingError(
                    f"block {tuple(pattern.keys[i] for i in keys)!r} mixes keys of first, last and the rest; "
                    f"a block must lie within one of them"
                )
            cls[g] = classes.pop()

    eliminated = np.zeros(ngroups, dtype=bool)
    out_groups = []
    for c in (0, 1, 2):
        todo = np.flatnonzero(cls == c)
        if len(todo) == 0:
            continue
        if c != 1 and force_order:
            out_groups.append(np.asarray(given[c], dtype=np.int64))
        else:
            out_groups.append(_class_order(adj, dims, eliminated, todo, np.flatnonzero(cls > c), method))
        eliminated[todo] = True
    order = np.concatenate(out_groups).tolist() if out_groups else []
    keys = pattern.keys
    if members is None:
        return Ordering([(keys[i],) for i in order])
    out = []
    for g in order:
        block = tuple(keys[i] for i in members[g])
        out.extend((key,) for key in block) if split_blocks else out.append(block)
    return Ordering(out)


def _groups(pattern: _Pattern, blocks):
    """Group of every node and the nodes of every group, groups in order of first position.

    ``(arange(n), None)`` without blocks (every node its own group).
    """
    n = len(pattern.keys)
    if not blocks:
        return np.arange(n), None
    group = np.full(n, -1, dtype=np.int64)
    members: list[list[int]] = []
    for block in blocks:
        if isinstance(block, (str, bytes)) or not isinstance(block, (tuple, list)):
            raise TypeError(f"each block must be a tuple or list of keys, got {block!r}")
        if not block:
            raise OrderingError("a block may not be empty")
        positions = pattern.positions(block, f"block {tuple(block)!r}")
        for i in positions:
            if group[i] >= 0:
                raise OrderingError(f"variable {pattern.keys[i]!r} appears in two blocks")
            group[i] = len(members)
        members.append(positions)
    for i in np.flatnonzero(group < 0):
        group[i] = len(members)
        members.append([int(i)])
    order = sorted(range(len(members)), key=lambda g: min(members[g]))
    relabel = np.empty(len(members), dtype=np.int64)
    relabel[order] = np.arange(len(members))
    return relabel[group], [members[g] for g in order]


# -- public ---------------------------------------------------------------------------------------
def amd(
    graph,
    eligible=None,
    blocks: Iterable[Sequence[Hashable]] | None = None,
    split_blocks: bool = False,
    *,
    first: Iterable[Hashable] | None = None,
    last: Iterable[Hashable] | None = None,
    force_order: bool = False,
    weighted: bool = False,
) -> Ordering:
    """SuiteSparse's approximate minimum degree (AMD) ordering, through CVXOPT.

    Parameters
    ----------
    graph : FactorGraph, GraphStructure or networkx.Graph
        The graph whose variables are ordered (node attribute ``dim`` for a networkx graph).
    eligible : None
        Not supported by a library ordering (raises :class:`OrderingError`); use ``first`` /
        ``last``.
    blocks : iterable of key sequences, optional
        Groups of variables ordered (and eliminated) together as one frontal block.
    split_blocks : bool
        Emit each group as consecutive single-key blocks instead.
    first, last : iterable of keys, optional
        Keys eliminated before all others / after all others (e.g. the multipliers last,
        as PV).  See the module docstring for how the classes are ordered.
    force_order : bool
        Keep ``first`` and ``last`` in the order given instead of ordering them by AMD.
    weighted : bool
        Order the scalar graph (every key ``dim`` scalars) instead of the key graph.

    Returns
    -------
    Ordering
        One block per key (or per group of ``blocks``).

    Raises
    ------
    ImportError
        CVXOPT is not installed (the message says what to install).
    OrderingError
        An unknown key in ``first``, ``last`` or ``blocks``, a key in both, or an ``eligible``.

    Examples
    --------
    >>> import networkx as nx
    >>> amd(nx.star_graph(3)).keys()             # leaves first, the hub last
    (3, 2, 1, 0)
    >>> amd(nx.path_graph(4), last=[1]).keys()   # 1 after all others
    (3, 2, 0, 1)
    """
    method = lambda adj, dims, dense: _amd_perm(adj, dims, weighted, dense)  # noqa: E731
    return _library_ordering(graph, method, eligible, blocks, split_blocks, first, last, force_order, "amd")


def metis(
    graph,
    eligible=None,
    blocks: Iterable[Sequence[Hashable]] | None = None,
    split_blocks: bool = False,
    *,
    first: Iterable[Hashable] | None = None,
    last: Iterable[Hashable] | None = None,
    force_order: bool = False,
    weighted: bool = False,
    **options: int,
) -> Ordering:
    """METIS multilevel nested dissection (``METIS_NodeND``), through pymetis.

    Parameters
    ----------
    graph, eligible, blocks, split_blocks, first, last, force_order
        As :func:`amd`.
    weighted : bool
        Give METIS each key's ``dim`` as vertex weight.
    **options : int
        METIS options by name (:class:`pymetis.Options`: ``seed``, ``nseps``, ``ufactor``,
        ``pfactor``, ...); METIS's defaults otherwise, as GTSAM's ``Ordering::Metis``.
        ``pfactor=x`` orders vertices of degree above ``0.1 x`` times the mean last.

    Returns
    -------
    Ordering

    Raises
    ------
    ImportError
        pymetis (>= 2025.2.2) is not installed (the message says what to install).
    OrderingError
        As :func:`amd`.

    Examples
    --------
    >>> import networkx as nx
    >>> order = metis(nx.path_graph(7))
    >>> sorted(order.keys()) == list(range(7)), order.keys()[-1]   # a middle separator last
    (True, 3)
    """
    method = lambda adj, dims, dense: _metis_perm(adj, dims, weighted, options)  # noqa: E731
    return _library_ordering(graph, method, eligible, blocks, split_blocks, first, last, force_order, "metis")


_METHODS = {"amd": amd, "metis": metis}


def constrained_last(
    graph, last: Iterable[Hashable], method: str = "amd", force_order: bool = False, **options
) -> Ordering:
    """All keys but ``last`` by the library ordering ``method``, then ``last`` (GTSAM's ``ColamdConstrainedLast``).

    Parameters
    ----------
    graph : FactorGraph, GraphStructure or networkx.Graph
    last : iterable of keys
        Eliminated after every other key, e.g. the multipliers (PV's dense dual Hessian
        at the root).
    method : {"amd", "metis"}
    force_order : bool
        Keep ``last`` in the order given.
    **options
        Passed to :func:`amd` / :func:`metis` (``weighted``, ``blocks``, METIS options).

    Returns
    -------
    Ordering

    Examples
    --------
    >>> import networkx as nx
    >>> constrained_last(nx.path_graph(5), last=[4, 2], force_order=True).keys()[-2:]
    (4, 2)
    """
    return _method(method)(graph, last=last, force_order=force_order, **options)


def constrained_first(
    graph, first: Iterable[Hashable], method: str = "amd", force_order: bool = False, **options
) -> Ordering:
    """``first`` before every other key, then the rest by ``method`` (GTSAM's ``ColamdConstrainedFirst``).

    Parameters are those of :func:`constrained_last`, with ``first`` for ``last``.

    Examples
    --------
    >>> import networkx as nx
    >>> constrained_first(nx.path_graph(5), first=[2]).keys()[0]
    2
    """
    return _method(method)(graph, first=first, force_order=force_order, **options)


def _method(name: str):
    try:
        return _METHODS[name]
    except KeyError:
        raise OrderingError(f"unknown library ordering {name!r}; use one of {sorted(_METHODS)}") from None


LIBRARY_ORDERINGS = {"amd": amd, "metis": metis}
ORDERINGS.update(LIBRARY_ORDERINGS)
