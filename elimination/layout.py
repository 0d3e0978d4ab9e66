"""Arrays in and out: where a graph's numbers sit in the flat workspaces of its plan's program.

A :class:`Layout` is structure only, made once per plan (:meth:`Layout.of`,
or :meth:`elimination.Plan.layout`): per factor of the graph, the offset of
its matrix (``H``, or ``[A_1 ... A_k]`` of a hard factor, row-major) in the
*factor workspace* and of its linear term (``g``, or ``b``) in the *linear
workspace*; per variable, the offset of its value in the *values*.  It
hands out named views into those arrays, so a model that computes its
numbers per state (kinematics, residuals and Jacobians of a Gauss-Newton
step) writes them in place, with no factor objects in between, and reads
its solution back the same way.  :class:`~factorgraph.FactorGraph` fills the
same arrays (:meth:`Layout.fill`): it is the convenient front door.

Every workspace carries leading batch dimensions: the factor workspace
``(*batch, factor_size)``, the linear one ``(*rhs, *batch, linear_size)``
(right-hand sides beyond the matrices' batch solve on one factorization),
the values ``(*rhs, *batch, value_size)``.  :func:`elimination.factorize_arrays`
and :meth:`~elimination.arrays.ArrayFactorization.solve` run on them.

>>> import numpy as np
>>> from factorgraph import FactorGraph, Quadratic, Variable
>>> import elimination
>>> g = FactorGraph(); g.add_variable(Variable("x", 2))
>>> i = g.add(Quadratic(["x"], np.eye(2)))
>>> layout = elimination.analyze(g, elimination.natural(g)).layout()
>>> Fw, Lin = layout.factor_workspace(), layout.linear_workspace()
>>> layout.matrix(Fw, i)[...] = 2 * np.eye(2); layout.linear(Lin, i)[...] = [2.0, 4.0]
>>> X = elimination.factorize_arrays(layout, Fw).solve(Lin)
>>> layout.value(X, "x")
array([1., 2.])
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable

import numpy as np


@dataclass(frozen=True)
class FactorSlot:
    """Where one factor of the graph sits in the workspaces (:class:`Layout`).

    Attributes
    ----------
    index : int
        The factor's index in the graph (``FactorGraph.add``'s return value).
    keys : tuple
        Its variables, in the order of its matrix's columns.
    hard : bool
        A hard factor (``A x = b``) rather than a quadratic one (``1/2 x'Hx - g'x``).
    rows, n : int
        Its matrix is ``(rows, n)``: ``n`` columns (its variables' dimensions summed), ``rows = n`` for a
        quadratic factor.
    matrix : int
        Offset of its matrix, row-major, in the factor workspace.
    linear : int
        Offset of its ``g`` (``n``) or ``b`` (``rows``) in the linear workspace.
    scales : int
        Offset of its ``rows`` scales in the factor workspace (``|H_ii|``, or ``1 / ||A_i||`` of a hard
        factor's rows): :func:`~elimination.arrays.factorize_arrays` computes them; only a kernel that
        factorizes in place writes them itself.
    """

    index: int
    keys: tuple
    hard: bool
    rows: int
    n: int
    matrix: int
    linear: int
    scales: int


@dataclass(frozen=True)
class Layout:
    """Named places of a graph's numbers in its plan's workspaces (module docstring).  Structure only:
    picklable, one per plan.

    Attributes
    ----------
    program : elimination.program.Program
        The lowered plan the workspaces belong to.
    factors : tuple of FactorSlot
        One per factor of the graph, by index.
    variables : dict
        Variable key -> ``(offset, dim)`` of its value.
    factor_size, linear_size, value_size : int
        Floats per batch element of each workspace (the factor workspace also holds the factors the
        elimination generates, above the graph's).
    """

    program: object
    factors: tuple
    variables: dict

    @classmethod
    def of(cls, plan) -> "Layout":
        """The layout of a complete ``plan``'s program (kept with the plan: :meth:`elimination.Plan.layout`)."""
        program = plan.lowered()
        if program.unsupported:
            raise ValueError(f"Layout: {program.unsupported}; only a complete plan's program has workspaces")
        dims = {v.key: v.dim for v in plan.structure.variables}
        slots = []
        for i, f in enumerate(plan.structure.factors):
            n = sum(dims[k] for k in f.keys)
            slots.append(FactorSlot(i, tuple(f.keys), f.hard, f.rows if f.hard else n, n,
                                    (program.A_offset if f.hard else program.H_offset)[i],
                                    (program.b_offset if f.hard else program.g_offset)[i],
                                    (program.rs_offset if f.hard else program.scale_offset)[i]))
        variables = {key: (off, dims[key]) for key, off in program.value_offset.items()}
        return cls(program, tuple(slots), variables)

    @property
    def factor_size(self) -> int:
        return self.program.factor_size

    @property
    def linear_size(self) -> int:
        return self.program.linear_size

    @property
    def value_size(self) -> int:
        return self.program.value_size

    def factor_workspace(self, batch: tuple = ()) -> np.ndarray:
        """Zeros ``(*batch, factor_size)``: the factor workspace of a batch of graphs of this structure."""
        return np.zeros(tuple(batch) + (self.factor_size,))

    def linear_workspace(self, batch: tuple = ()) -> np.ndarray:
        """Zeros ``(*batch, linear_size)`` (``batch`` may lead with right-hand sides: module docstring)."""
        return np.zeros(tuple(batch) + (self.linear_size,))

    def matrix(self, Fw: np.ndarray, i: int) -> np.ndarray:
        """View ``(*batch, rows, n)`` of factor ``i``'s matrix in the factor workspace ``Fw (*batch, factor_size)``."""
        s = self._slot(i)
        return _view(Fw, s.matrix, (s.rows, s.n), self.factor_size, "factor")

    def linear(self, Lin: np.ndarray, i: int) -> np.ndarray:
        """View ``(..., rows)`` of factor ``i``'s ``g`` or ``b`` in the linear workspace ``Lin (..., linear_size)``."""
        s = self._slot(i)
        return _view(Lin, s.linear, (s.rows,), self.linear_size, "linear")

    def value(self, X: np.ndarray, key: Hashable) -> np.ndarray:
        """View ``(..., dim)`` of variable ``key``'s value in the values ``X (..., value_size)``."""
        if key not in self.variables:
            raise KeyError(f"Layout.value: no variable {key!r} in this layout")
        offset, dim = self.variables[key]
        return _view(X, offset, (dim,), self.value_size, "value")

    def values(self, X: np.ndarray) -> dict:
        """Variable key -> its value ``(..., dim)`` (views into ``X``), in the graph's key order."""
        return {key: self.value(X, key) for key in self.variables}

    def set_matrices(self, Fw: np.ndarray, indices, M: np.ndarray) -> None:
        """Write the matrices ``M (*batch, k, rows, n)`` of the ``k`` factors ``indices`` (one shape) into ``Fw``:
        a factor type's numbers evaluated together, written in one store (a slice where the factors sit side by
        side, as factors of one shape added together do)."""
        places, shape = self._places(indices, "matrix")
        Fw[..., places] = _flat(M, shape, "set_matrices")

    def set_linear(self, Lin: np.ndarray, indices, v: np.ndarray) -> None:
        """Write the linear terms ``v (..., k, rows)`` of the ``k`` factors ``indices`` (one shape) into ``Lin``."""
        places, shape = self._places(indices, "linear")
        Lin[..., places] = _flat(v, shape, "set_linear")

    def _places(self, indices, what: str) -> tuple:
        """``(places, shape)``: the floats of the factors ``indices``' matrices or linear terms, in order (a
        slice where they are side by side, else an index array), and the shape of what goes there."""
        slots = [self._slot(int(i)) for i in np.asarray(indices).ravel()]
        shapes = {(s.hard, s.rows, s.n) for s in slots}
        if len(shapes) != 1:
            raise ValueError(f"Layout: the factors written together must have one shape (hard, rows, n), got "
                             f"{sorted(shapes)}")
        rows, n = slots[0].rows, slots[0].n
        shape = (len(slots), rows, n) if what == "matrix" else (len(slots), rows)
        size = int(np.prod(shape[1:]))
        starts = np.array([getattr(s, what) for s in slots], dtype=np.int64)
        if np.all(np.diff(starts) == size):
            return slice(int(starts[0]), int(starts[0]) + size * len(starts)), shape
        return (starts[:, None] + np.arange(size)).ravel(), shape

    def group_columns(self) -> list:
        """Per factor group of the program (:attr:`~elimination.program.Program.groups`), ``(k, n)`` indices into
        the values of each member's columns, its keys in order (kept with the program): what a group's residual
        ``g - H x`` or ``b - A x`` gathers."""
        program = self.program
        if "group columns" not in program.derived:
            where = {key: np.arange(off, off + dim) for key, (off, dim) in self.variables.items()}
            program.derived["group columns"] = [
                np.array([np.concatenate([where[key] for key in self.factors[i].keys]) for i in group.members])
                for group in program.groups]
        return program.derived["group columns"]

    def fill(self, graph) -> tuple:
        """``(Fw, Lin)``: a :class:`~factorgraph.FactorGraph` of this structure in the workspaces,
        ``Fw (*batch, factor_size)`` over its matrices' batch, ``Lin (*batch', linear_size)`` over the batch
        of all its numbers (least-squares factors as their ``H = A'WA``, ``g = A'Wb``)."""
        from .compiled import factor_workspace
        from .compiled_factorization import _laid_out, _own_linear_terms

        if graph.structure() != self.program.plan.structure:
            raise ValueError("Layout.fill: the graph's structure (variables, scopes, hard rows) differs from the "
                             "one this layout was made for; analyze the graph and take its plan's layout")
        Fw, batch, _ = factor_workspace(graph, self.program)
        Lin, _, full = _laid_out(self.program, _own_linear_terms(graph.factors, self.program), graph.batch_shape)
        return Fw.reshape(batch + (self.factor_size,)), Lin.reshape(full + (self.linear_size,))

    def _slot(self, i: int) -> FactorSlot:
        if not isinstance(i, (int, np.integer)) or not 0 <= i < len(self.factors):
            raise IndexError(f"Layout: no factor {i!r}; the graph has factors 0 .. {len(self.factors) - 1}")
        return self.factors[i]

    def __repr__(self) -> str:
        return (f"Layout({len(self.factors)} factors, {len(self.variables)} variables; floats per element: "
                f"factor {self.factor_size}, linear {self.linear_size}, values {self.value_size})")


def _flat(a: np.ndarray, shape: tuple, what: str) -> np.ndarray:
    """``a (..., *shape)`` with its trailing ``shape`` flattened; a clear error where it has another shape."""
    a = np.asarray(a, dtype=float)
    if a.shape[a.ndim - len(shape):] != shape:
        raise ValueError(f"Layout.{what}: expected an array (..., {', '.join(map(str, shape))}), got {a.shape}")
    return a.reshape(a.shape[: a.ndim - len(shape)] + (-1,))


def _view(a: np.ndarray, offset: int, shape: tuple, size: int, what: str) -> np.ndarray:
    """The view ``(..., *shape)`` of the floats ``offset ..`` of every element of ``a (..., size)``."""
    if not isinstance(a, np.ndarray) or a.ndim < 1 or a.shape[-1] != size:
        got = a.shape if isinstance(a, np.ndarray) else type(a).__name__
        raise ValueError(f"Layout: the {what} workspace must be an array (..., {size}), got {got}")
    return a[..., offset : offset + int(np.prod(shape))].reshape(a.shape[:-1] + shape)  # (splits one axis: a view)
