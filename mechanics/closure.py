"""The loops at position and velocity level: constraint errors, and constraints to the ground anchored at a
configuration (the :class:`~mechanics.Mechanism` methods of the same names).

``forward_dynamics`` asks for zero relative acceleration across each constraint; integrated, the loops drift
apart.  What drifted is measured here in each constraint's own rows and frame, as Pinocchio's
``RigidConstraintData.contact_placement_error`` and ``contact_velocity_error``
(:func:`mechanics.kinematics.constraint_errors`): the Baumgarte correction (``forward_dynamics(...,
baumgarte=(Kp, Kd))``) asks for ``-Kp e - Kd e_dot`` instead.  A General constraint has no position level
and is left out.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .checks import check_state
from .kinematics import _frame, constraint_errors, kinematics
from .mechanism import GROUND, Connect, Mechanism, Pose, Weld


def _positional(mechanism: Mechanism) -> list:
    return [c for c in mechanism.constraints if isinstance(c, (Weld, Connect))]


def constraint_error(mechanism: Mechanism, q) -> dict:
    """Each Weld's and Connect's position error at ``q``: ``{name: e (..., m)}`` (module docstring)."""
    zeros = np.zeros(mechanism.nv)
    q, v, _ = check_state(mechanism, q, zeros, zeros)
    kin = kinematics(mechanism, q, v)
    return {c.name: constraint_errors(kin, c)[0] for c in _positional(mechanism)}


def constraint_velocity(mechanism: Mechanism, q, v) -> dict:
    """Each Weld's and Connect's velocity error at ``(q, v)``: ``{name: e_dot (..., m)}`` (module docstring)."""
    q, v, _ = check_state(mechanism, q, v, np.zeros(mechanism.nv))
    kin = kinematics(mechanism, q, v)
    return {c.name: constraint_errors(kin, c)[1] for c in _positional(mechanism)}


def anchored(mechanism: Mechanism, q) -> Mechanism:
    """``mechanism`` with its Welds and Connects to the ground anchored where their other frames are at ``q``.

    The ground-side frame moves to the other frame's world pose (a Connect's keeps its orientation: only its
    origin counts, and it sets the rows' frame where the ground is the first end), so each of them holds
    exactly at ``q``; the rest is unchanged.  ``q`` is one configuration (a mechanism has one anchor).
    """
    zeros = np.zeros(mechanism.nv)
    q, v, _ = check_state(mechanism, q, zeros, zeros)
    if q.ndim != 1:
        raise ValueError(f"anchored: q must be one configuration of shape ({mechanism.nq},), got {q.shape}: "
                         f"a mechanism has one anchor per constraint")
    kin = kinematics(mechanism, q, v)
    return mechanism.with_constraints([_anchored(kin, c) for c in mechanism.constraints])


def _anchored(kin, c):
    if not isinstance(c, (Weld, Connect)) or GROUND not in c.links or c.link1 == c.link2:
        return c
    ground_first = c.link1 == GROUND
    link, placement = (c.link2, c.placement2) if ground_first else (c.link1, c.placement1)
    R, p = _frame(kin, link, placement)
    ground = c.placement1 if ground_first else c.placement2
    pose = Pose(R if isinstance(c, Weld) else ground.rotation, p)
    return dataclasses.replace(c, **{"placement1" if ground_first else "placement2": pose})
