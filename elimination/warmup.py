"""Compile the engine's kernels ahead of time (``gaussgraph warmup``): containers, cluster images, a first call.

numba compiles a kernel at its first call and keeps it on disk (``__pycache__``
beside the module, or under ``NUMBA_CACHE_DIR`` where that is set -- the place
for a read-only install); a later process loads it in a fraction of a second.
A kernel's cache holds until a source it compiles in changes
(:mod:`elimination.kernel_cache`; a reinstall of the same files keeps it with
numba >= 0.68): run the warm-up once after installing.  Each stage here is a real call on a tiny problem, so it compiles
exactly the signatures the library's calls use.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np


def _graph(batch: tuple = ()):
    """A small graph that takes every kind of front: a prior, a coupling, a hard row, a regularized multiplier."""
    from factorgraph import FactorGraph, LeastSquares, LinearEquality, Quadratic, Variable

    rng = np.random.default_rng(0)
    g = FactorGraph()
    for k in ("a", "b"):
        g.add_variable(Variable(k, 2))
        g.add(LeastSquares([k], [np.eye(2)], rng.normal(size=batch + (2,))))
    g.add_variable(Variable("lam", 1, role="max"))
    g.add(Quadratic(["a", "lam"], [[0, 0, 1.0], [0, 0, 0.5], [1.0, 0.5, -1e-3]], rng.normal(size=batch + (3,))))
    g.add(LinearEquality(["a", "b"], [[[1.0, 0.0]], [[0.0, -1.0]]], rng.normal(size=batch + (1,))))
    return g


def _chain(batch: tuple):
    """A least-squares chain: a program of whole-front pivots, which a batch runs in lanes."""
    from factorgraph import FactorGraph, LeastSquares, Variable

    rng = np.random.default_rng(1)
    g = FactorGraph()
    for k in range(3):
        g.add_variable(Variable(k, 2))
        g.add(LeastSquares([k], [np.eye(2) + 0.1 * rng.normal(size=batch + (2, 2))], rng.normal(size=batch + (2,))))
    g.add(LeastSquares([0, 2], [np.eye(2), -np.eye(2)], np.zeros(2)))
    return g


def _one_by_one() -> None:
    import elimination

    g = _graph()
    plan = elimination.analyze(g, elimination.resolve_ordering(g, "min_fill"))
    elimination.factorize(g, plan, backend="numba").solve()
    elimination.compiled_elimination(g, plan)()


def _in_lanes() -> None:
    import elimination
    from elimination.lanes import LANES

    g = _chain((LANES,))
    plan = elimination.analyze(g, elimination.resolve_ordering(g, "min_fill"))
    elimination.factorize(g, plan, backend="numba").solve()


STAGES = (("elimination kernels, one element at a time", _one_by_one),
          ("elimination kernels, batches in lanes", _in_lanes))
"""``(what, call)``: the engine's warm-up stages (:func:`warmup`)."""


def warmup(stages=STAGES, on_stage: Callable[[str, float], None] | None = None) -> dict:
    """Run each stage (compiling what has no disk cache yet); ``{what: seconds}``, each reported to
    ``on_stage(what, seconds)`` as it ends.

    Examples
    --------
    >>> import elimination
    >>> sorted(elimination.warmup())
    ['elimination kernels, batches in lanes', 'elimination kernels, one element at a time']
    """
    times = {}
    for what, call in stages:
        start = time.perf_counter()
        call()
        times[what] = time.perf_counter() - start
        if on_stage is not None:
            on_stage(what, times[what])
    return times
