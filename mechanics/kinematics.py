"""The kinematics pass: everything the GPLC graph needs at a state ``(q, v)``.

World-frame quantities per link (see :mod:`mechanics.spatial`): pose, motion
subspace ``S_i``, velocity ``v_i = v_pi + S_i nu_i``, bias acceleration
``a_b,i = v_i x S_i nu_i``, inertia ``H_i`` and bias force
``f_i = -v_i x* H_i v_i``; gravity enters as the ground acceleration
``a_0 = -a_grav`` (000 eq. 1d).

Constraint terms ``sum_l K_l a_l = k`` (000 eq. 1c), with the conventions of
Pinocchio's LOCAL constraints so that imported models agree with it:

* :class:`Weld`: ``C (a_1 - a_2) = -C (v_1 x v_2)`` with ``C`` the motion
  transform into frame 1 -- the time derivative of the relative twist
  ``C (v_1 - v_2)`` seen in frame 1; rows ``[linear; angular]``;
* :class:`Connect`: ``R_1' (p1'' - p2'') = 0``, the classical relative
  acceleration of the two points in frame 1, with ``p'' = [-p x, I] a +
  omega x p'``.

Ground terms are folded into ``k`` using ``a_0``.  Everything broadcasts over
leading batch dimensions of ``q`` and ``v``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .joints import jcalc, motion_subspace
from .mechanism import GROUND, Connect, Coupling, General, Mechanism, Weld
from .spatial import compose, crf, crm, inertia_to_parent, inverse_motion_transform, log6, motion_transform, skew

LINEAR_FIRST = [3, 4, 5, 0, 1, 2]  # rows of a motion transform in Pinocchio's [linear; angular] order


@dataclass
class Kinematics:
    """World-frame kinematic and inertial quantities of every link at one (batched) state."""

    mechanism: Mechanism
    rotation: dict
    position: dict
    S: dict
    velocity: dict
    bias_acceleration: dict
    inertia: dict
    bias_force: dict
    root_acceleration: np.ndarray
    batch_shape: tuple
    q: np.ndarray | None = None  # the state it was computed at (a coupling's errors read them)
    v: np.ndarray | None = None


def kinematics(mechanism: Mechanism, q: np.ndarray, v: np.ndarray) -> Kinematics:
    """Run the forward kinematics pass.

    Parameters
    ----------
    mechanism : Mechanism
    q : ndarray, shape (..., nq)
    v : ndarray, shape (..., nv)
    """
    batch = np.broadcast_shapes(q.shape[:-1], v.shape[:-1])
    rotation = {GROUND: np.broadcast_to(np.eye(3), batch + (3, 3))}
    position = {GROUND: np.zeros(batch + (3,))}
    velocity = {GROUND: np.zeros(batch + (6,))}
    S, bias_acc, inertia, bias_force = {}, {}, {}, {}
    for link in mechanism.links:
        name, parent = link.name, link.parent
        R_joint, p_joint = jcalc(link.joint, q[..., mechanism.q_slices[name]])
        R_frame, p_frame = compose(rotation[parent], position[parent], link.placement.rotation, link.placement.translation)
        R, p = compose(R_frame, p_frame, R_joint, p_joint)
        rotation[name], position[name] = R, p
        X = motion_transform(R, p)
        S[name] = X @ motion_subspace(link.joint)
        joint_velocity = (S[name] @ v[..., mechanism.v_slices[name], None])[..., 0]
        velocity[name] = velocity[parent] + joint_velocity
        bias_acc[name] = (crm(velocity[name]) @ joint_velocity[..., None])[..., 0]
        inertia[name] = inertia_to_parent(link.spatial_inertia, R, p)
        momentum = (inertia[name] @ velocity[name][..., None])[..., 0]
        bias_force[name] = -(crf(velocity[name]) @ momentum[..., None])[..., 0]
    root = np.concatenate([np.zeros(3), -mechanism.gravity])
    return Kinematics(mechanism, rotation, position, S, velocity, bias_acc, inertia, bias_force, root, batch, q, v)


@dataclass
class ConstraintTerms:
    """``sum_l K[l] a_l = k`` over the constraint's non-ground links.

    ``K`` maps link name -> (..., m, 6); ``k`` is (..., m) with the ground's
    known acceleration already moved to the right-hand side.
    """

    K: dict
    k: np.ndarray

    @property
    def links(self) -> tuple:
        return tuple(self.K)

    def residual(self, accelerations: dict) -> np.ndarray:
        """``sum_l K_l a_l - k`` for link accelerations ``{name: (..., 6)}``."""
        total = -self.k
        for name, K in self.K.items():
            total = total + (K @ accelerations[name][..., None])[..., 0]
        return total


def _frame(kin: Kinematics, link: str, placement):
    """World pose of a frame attached to ``link`` (the ground included)."""
    return compose(kin.rotation[link], kin.position[link], placement.rotation, placement.translation)


def _weld(kin: Kinematics, c: Weld):
    R1, p1 = _frame(kin, c.link1, c.placement1)
    C = inverse_motion_transform(R1, p1)[..., LINEAR_FIRST, :][..., list(c.axes), :]
    drift = (crm(kin.velocity[c.link1]) @ kin.velocity[c.link2][..., None])[..., 0]
    return {c.link1: C, c.link2: -C}, -(C @ drift[..., None])[..., 0]


def _point_jacobian(p: np.ndarray) -> np.ndarray:
    """``[-p x, I]``: spatial acceleration -> acceleration of the point ``p``."""
    out = np.zeros(p.shape[:-1] + (3, 6))
    out[..., :, :3] = -skew(p)
    out[..., :, 3:] = np.eye(3)
    return out


def _connect(kin: Kinematics, c: Connect):
    R1, p1 = _frame(kin, c.link1, c.placement1)
    _, p2 = _frame(kin, c.link2, c.placement2)
    R1t = np.swapaxes(R1, -1, -2)[..., list(c.axes), :]
    K, drift = {}, 0.0
    for link, point, sign in ((c.link1, p1, 1.0), (c.link2, p2, -1.0)):
        J = _point_jacobian(point)
        K[link] = sign * (R1t @ J)
        vel = kin.velocity[link]
        drift = drift + sign * np.cross(vel[..., :3], (J @ vel[..., None])[..., 0])
    return K, -(R1t @ drift[..., None])[..., 0]


def coupling_weights(mechanism: Mechanism, c: Coupling) -> list:
    """``C_j S_local,j'`` per joint of a coupling, ``(m, 6)`` each: its rows on the joint's local relative
    acceleration (``S_local' S_local = I``: every joint's local ``S`` has orthonormal columns)."""
    return [C @ motion_subspace(mechanism.link(joint).joint).T for joint, C in zip(c.joints, c.C)]


def _coupling(kin: Kinematics, c: Coupling):
    """``sum_j C_j S_j^+ (a_j - a_parent) = c + sum_j C_j S_j^+ a_b,j`` with ``S_j^+ = S_local' X_j^-1``."""
    K, k = {}, np.broadcast_to(c.c, kin.batch_shape + c.c.shape)
    for joint, parent, W in zip(c.joints, c.parents, coupling_weights(kin.mechanism, c)):
        Kj = W @ inverse_motion_transform(kin.rotation[joint], kin.position[joint])
        K[joint] = K.get(joint, 0.0) + Kj
        K[parent] = K.get(parent, 0.0) - Kj
        k = k + (Kj @ kin.bias_acceleration[joint][..., None])[..., 0]
    return K, k


def constraint_errors(kin: Kinematics, c) -> tuple:
    """``(e, e_dot)``, shapes ``(..., m)``: the position and velocity errors of a Weld, Connect or Coupling in its rows,
    as Pinocchio's ``contact_placement_error`` and ``contact_velocity_error`` (frame 1's coordinates).

    With ``c1Mc2`` frame 2's pose in frame 1: a Weld's ``e = -log6(c1Mc2)`` and ``e_dot = C (v_1 - v_2)``
    (its rows' twist, ``[linear; angular]``); a Connect's ``e = R_1' (p_1 - p_2)`` and ``e_dot = R_1' (p_1' -
    p_2')``, ``p'`` the velocity of the frame's origin.  Both restricted to the constraint's axes.  A Coupling's
    ``e = sum_j C_j q_j - offset`` (``None`` where it has no offset) and ``e_dot = sum_j C_j v_j``.
    """
    if isinstance(c, Coupling):
        mech, blocks = kin.mechanism, tuple(zip(c.joints, c.C))
        e_dot = sum((C @ kin.v[..., mech.v_slices[j], None])[..., 0] for j, C in blocks)
        if c.offset is None:
            return None, e_dot
        return sum((C @ kin.q[..., mech.q_slices[j], None])[..., 0] for j, C in blocks) - c.offset, e_dot
    R1, p1 = _frame(kin, c.link1, c.placement1)
    R2, p2 = _frame(kin, c.link2, c.placement2)
    R1t, axes = np.swapaxes(R1, -1, -2), list(c.axes)
    if isinstance(c, Weld):
        e = -log6(R1t @ R2, (R1t @ (p2 - p1)[..., None])[..., 0])
        C = inverse_motion_transform(R1, p1)[..., LINEAR_FIRST, :]
        e_dot = (C @ (kin.velocity[c.link1] - kin.velocity[c.link2])[..., None])[..., 0]
        return e[..., axes], e_dot[..., axes]
    if isinstance(c, Connect):
        rate = [(_point_jacobian(p) @ kin.velocity[link][..., None])[..., 0] for link, p in ((c.link1, p1), (c.link2, p2))]
        e, e_dot = (R1t @ (p1 - p2)[..., None])[..., 0], (R1t @ (rate[0] - rate[1])[..., None])[..., 0]
        return e[..., axes], e_dot[..., axes]
    raise TypeError(f"constraint {c.name!r} ({type(c).__name__}) has no position level: only Weld, Connect and "
                    f"Coupling do")


def constraint_terms(kin: Kinematics, constraint, baumgarte: tuple | None = None) -> ConstraintTerms:
    """The ``K`` blocks and right-hand side ``k`` of a constraint at this state.

    ``baumgarte = (Kp, Kd)``: the acceleration target ``-Kp e - Kd e_dot`` added to ``k`` (Pinocchio's
    Baumgarte corrector; :func:`constraint_errors`).
    """
    if isinstance(constraint, Weld):
        K, k = _weld(kin, constraint)
    elif isinstance(constraint, Connect):
        K, k = _connect(kin, constraint)
    elif isinstance(constraint, Coupling):
        K, k = _coupling(kin, constraint)
    elif isinstance(constraint, General):
        K = dict(zip(constraint.links, constraint.K))
        k = np.broadcast_to(constraint.k, kin.batch_shape + constraint.k.shape)
    else:
        raise TypeError(f"unknown constraint type {type(constraint).__name__}")
    if GROUND in K:
        k = k - (K.pop(GROUND) @ kin.root_acceleration)
    if baumgarte is not None and any(baumgarte):
        e, e_dot = constraint_errors(kin, constraint)
        k = k + (-(baumgarte[0] * (0.0 if e is None else e)) - baumgarte[1] * e_dot)
    return ConstraintTerms({name: np.broadcast_to(block, kin.batch_shape + block.shape[-2:]) for name, block in K.items()}, k)
