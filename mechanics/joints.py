"""Joint models as data, with one expander :func:`jcalc` (spatial_v2's habit).

A joint moves its child link's frame relative to a frame fixed on the parent
link.  Configuration and velocity layouts follow Pinocchio, so states of
imported models are used as they are:

==================== ==== ==== =======================================================
kind                  nq   nv   q / v
==================== ==== ==== =======================================================
revolute              1    1    angle / rate about ``axis``
revolute_unbounded    2    1    (cos, sin) / rate about ``axis``
prismatic             1    1    offset / rate along ``axis``
spherical             4    3    quaternion (x, y, z, w) / angular velocity, child frame
planar                4    3    (x, y, cos, sin) / (vx, vy, wz), child frame
free                  7    6    (position, quaternion) / (linear, angular), child frame
fixed                 0    0    --
==================== ==== ==== =======================================================

Every motion subspace ``S`` is constant in the child frame, so in the world
frame ``dS/dt = v_i x S`` and the bias acceleration is ``a_b = v_i x S nu``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .spatial import UNIT_AXES, compose, quaternion_exp, quaternion_matrix, quaternion_multiply, rotation_about, skew

KINDS = {
    "revolute": (1, 1),
    "revolute_unbounded": (2, 1),
    "prismatic": (1, 1),
    "spherical": (4, 3),
    "planar": (4, 3),
    "free": (7, 6),
    "fixed": (0, 0),
}


@dataclass(frozen=True)
class Joint:
    """A joint model.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    axis : sequence of 3 floats or "x" / "y" / "z", optional
        Unit axis for revolute and prismatic joints (normalized here).

    Examples
    --------
    >>> Joint("revolute", "z").nv, Joint("free").nq
    (1, 7)
    """

    kind: str
    axis: tuple | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown joint kind {self.kind!r}; use one of {sorted(KINDS)}")
        needs_axis = self.kind in ("revolute", "revolute_unbounded", "prismatic")
        if needs_axis:
            axis = UNIT_AXES.get(self.axis, self.axis) if isinstance(self.axis, str) else self.axis
            if axis is None:
                raise ValueError(f"a {self.kind} joint needs an axis, e.g. Joint({self.kind!r}, 'z')")
            axis = np.asarray(axis, dtype=float)
            norm = np.linalg.norm(axis) if axis.shape == (3,) else 0.0
            if not np.isfinite(norm) or norm < 1e-12:
                raise ValueError(f"{self.kind} joint axis must be a nonzero 3-vector, got {self.axis!r}")
            object.__setattr__(self, "axis", tuple(float(a) for a in axis / norm))
        elif self.axis is not None:
            raise ValueError(f"a {self.kind} joint takes no axis")

    @property
    def nq(self) -> int:
        return KINDS[self.kind][0]

    @property
    def nv(self) -> int:
        return KINDS[self.kind][1]


UNIT_NORM_PARTS = {
    "spherical": ((slice(0, 4), "quaternion (x, y, z, w)"),),
    "free": ((slice(3, 7), "quaternion (x, y, z, w)"),),
    "revolute_unbounded": ((slice(0, 2), "(cos, sin) pair"),),
    "planar": ((slice(2, 4), "(cos, sin) pair"),),
}


def unit_norm_parts(joint: Joint) -> tuple:
    """``(slice of the joint's q, description)`` for each part of its configuration that must have unit norm.

    >>> unit_norm_parts(Joint("free"))
    ((slice(3, 7, None), 'quaternion (x, y, z, w)'),)
    """
    return UNIT_NORM_PARTS.get(joint.kind, ())


def motion_subspace(joint: Joint) -> np.ndarray:
    """``S`` (6, nv) in the child frame, ``[omega; v]`` rows."""
    S = np.zeros((6, joint.nv))
    if joint.kind in ("revolute", "revolute_unbounded"):
        S[:3, 0] = joint.axis
    elif joint.kind == "prismatic":
        S[3:, 0] = joint.axis
    elif joint.kind == "spherical":
        S[:3, :] = np.eye(3)
    elif joint.kind == "planar":
        S[3, 0] = S[4, 1] = S[2, 2] = 1.0
    elif joint.kind == "free":  # v = (linear, angular) as Pinocchio
        S[3:, :3] = np.eye(3)
        S[:3, 3:] = np.eye(3)
    return S


def jcalc(joint: Joint, q: np.ndarray):
    """Pose ``(R, p)`` of the child frame relative to the joint's parent-side frame.

    ``q`` has shape ``(..., nq)``.
    """
    batch = q.shape[:-1]
    if joint.kind == "revolute":
        return rotation_about(joint.axis, q[..., 0]), np.zeros(batch + (3,))
    if joint.kind == "revolute_unbounded":
        return rotation_about(joint.axis, np.arctan2(q[..., 1], q[..., 0])), np.zeros(batch + (3,))
    if joint.kind == "prismatic":
        return np.broadcast_to(np.eye(3), batch + (3, 3)), q[..., :1] * np.asarray(joint.axis)
    if joint.kind == "spherical":
        return quaternion_matrix(q), np.zeros(batch + (3,))
    if joint.kind == "planar":
        p = np.concatenate([q[..., :2], np.zeros(batch + (1,))], axis=-1)
        return rotation_about((0.0, 0.0, 1.0), np.arctan2(q[..., 3], q[..., 2])), p
    if joint.kind == "free":
        return quaternion_matrix(q[..., 3:7]), q[..., :3]
    return np.broadcast_to(np.eye(3), batch + (3, 3)), np.zeros(batch + (3,))


def neutral(joint: Joint) -> np.ndarray:
    """The neutral configuration (zero angle, identity rotation)."""
    return {
        "revolute_unbounded": np.array([1.0, 0.0]),
        "spherical": np.array([0.0, 0.0, 0.0, 1.0]),
        "planar": np.array([0.0, 0.0, 1.0, 0.0]),
        "free": np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]),
    }.get(joint.kind, np.zeros(joint.nq))


def _random_quaternion(rng, batch):
    quat = rng.normal(size=batch + (4,))
    return quat / np.linalg.norm(quat, axis=-1, keepdims=True)


def random_configuration(joint: Joint, rng: np.random.Generator, batch: tuple = ()) -> np.ndarray:
    """A random configuration: angles in [-pi, pi], offsets and positions in [-1, 1]."""
    if joint.kind == "revolute":
        return rng.uniform(-np.pi, np.pi, batch + (1,))
    if joint.kind in ("revolute_unbounded", "planar"):
        angle = rng.uniform(-np.pi, np.pi, batch)
        head = rng.uniform(-1, 1, batch + (2,)) if joint.kind == "planar" else np.zeros(batch + (0,))
        return np.concatenate([head, np.cos(angle)[..., None], np.sin(angle)[..., None]], axis=-1)
    if joint.kind == "prismatic":
        return rng.uniform(-1, 1, batch + (1,))
    if joint.kind == "spherical":
        return _random_quaternion(rng, batch)
    if joint.kind == "free":
        return np.concatenate([rng.uniform(-1, 1, batch + (3,)), _random_quaternion(rng, batch)], axis=-1)
    return np.zeros(batch + (0,))


def _so3_left_jacobian(w: np.ndarray) -> np.ndarray:
    angle = np.linalg.norm(w, axis=-1)[..., None, None]
    small = angle < 1e-6
    safe = np.where(small, 1.0, angle)
    a = np.where(small, 0.5, (1 - np.cos(safe)) / safe**2)
    b = np.where(small, 1.0 / 6.0, (safe - np.sin(safe)) / safe**3)
    K = skew(w)
    return np.eye(3) + a * K + b * (K @ K)


def integrate(joint: Joint, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
    """``q (+) dq`` on the joint's configuration manifold (Pinocchio's ``integrate``).

    ``dq`` is a velocity times a duration, in the joint's velocity layout.
    """
    if joint.kind in ("revolute", "prismatic"):
        return q + dq
    if joint.kind == "revolute_unbounded":
        c, s = np.cos(dq[..., 0]), np.sin(dq[..., 0])
        return np.stack([c * q[..., 0] - s * q[..., 1], s * q[..., 0] + c * q[..., 1]], axis=-1)
    if joint.kind == "spherical":
        return quaternion_multiply(q, quaternion_exp(dq))
    if joint.kind == "planar":
        R, p = jcalc(joint, q)
        w = np.concatenate([np.zeros(dq.shape[:-1] + (2,)), dq[..., 2:3]], axis=-1)
        v = np.concatenate([dq[..., :2], np.zeros(dq.shape[:-1] + (1,))], axis=-1)
        R_new, p_new = compose(R, p, rotation_about((0.0, 0.0, 1.0), dq[..., 2]), (_so3_left_jacobian(w) @ v[..., None])[..., 0])
        angle = np.arctan2(R_new[..., 1, 0], R_new[..., 0, 0])
        return np.stack([p_new[..., 0], p_new[..., 1], np.cos(angle), np.sin(angle)], axis=-1)
    if joint.kind == "free":
        R = quaternion_matrix(q[..., 3:7])
        v, w = dq[..., :3], dq[..., 3:]
        p = q[..., :3] + (R @ (_so3_left_jacobian(w) @ v[..., None]))[..., 0]
        return np.concatenate([p, quaternion_multiply(q[..., 3:7], quaternion_exp(w))], axis=-1)
    return q
