"""Compile the dynamics kernels ahead of time (``gaussgraph warmup``): see :mod:`elimination.warmup`."""
from __future__ import annotations

from typing import Callable

import numpy as np


def _states(batch: tuple):
    from . import models

    mech = models.fig4()
    rng = np.random.default_rng(0)
    return mech, mech.random_configuration(rng, batch), rng.normal(size=batch + (mech.nv,)), rng.normal(
        size=batch + (mech.nv,))


def _one_by_one() -> None:
    from .dynamics import prepare

    mech, q, v, tau = _states(())
    prepare(mech, "lcaba", backend="numba")(q, v, tau)


def _in_lanes() -> None:
    from elimination.lanes import LANES

    from .dynamics import prepare

    mech, q, v, tau = _states((LANES,))
    prepare(mech, "lcaba", backend="numba")(q, v, tau)


def _inverse() -> None:
    from .inverse_dynamics import inverse_dynamics

    mech, q, v, qdd = _states(())
    inverse_dynamics(mech, q, v, qdd)


STAGES = (("dynamics kernel, one state at a time", _one_by_one),
          ("dynamics kernel, batches of states in lanes", _in_lanes),
          ("inverse dynamics kernel", _inverse))
"""``(what, call)``: the dynamics' warm-up stages (:func:`warmup`)."""


def warmup(on_stage: Callable[[str, float], None] | None = None) -> dict:
    """The engine's stages (:func:`elimination.warmup`), then the dynamics kernels'; ``{what: seconds}``.

    Examples
    --------
    >>> import mechanics
    >>> len(mechanics.warmup())
    5
    """
    from elimination.warmup import STAGES as ENGINE, warmup as run

    return run(ENGINE + STAGES, on_stage)
