"""Spatial algebra after Featherstone, in the world frame.

Conventions (used throughout ``mechanics``):

* a motion vector is ``[omega; v]`` (angular first, as in Featherstone and the
  papers), a force vector ``[n; f]``;
* every spatial quantity of a link -- velocity ``v_i``, acceleration ``a_i``,
  motion subspace ``S_i``, inertia ``H_i`` -- is expressed in the **world
  frame** at the world origin, so a tree joint reads ``a_i = a_pi + S_i qdd_i +
  a_b,i`` with identity coefficients;
* a pose is a pair ``(R, p)``: the rotation and origin of a frame, in its
  parent's coordinates.

All functions broadcast over leading batch dimensions.
"""
from __future__ import annotations

import numpy as np


UNIT_AXES = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}


def skew(w: np.ndarray) -> np.ndarray:
    """``[w]x``, the 3x3 cross-product matrix: ``skew(w) @ u == cross(w, u)``."""
    w = np.asarray(w, dtype=float)
    out = np.zeros(w.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2] = -w[..., 2], w[..., 1]
    out[..., 1, 0], out[..., 1, 2] = w[..., 2], -w[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -w[..., 1], w[..., 0]
    return out


def crm(m: np.ndarray) -> np.ndarray:
    """Motion cross product ``m x`` (6x6): ``crm(a) @ b`` is ``a x b``.

    Examples
    --------
    >>> import numpy as np
    >>> a, b = np.arange(6.0), np.ones(6)
    >>> bool(np.allclose(crm(a) @ b, -crm(b) @ a))
    True
    """
    out = np.zeros(m.shape[:-1] + (6, 6))
    w, v = skew(m[..., :3]), skew(m[..., 3:])
    out[..., :3, :3] = w
    out[..., 3:, :3] = v
    out[..., 3:, 3:] = w
    return out


def crf(m: np.ndarray) -> np.ndarray:
    """Force cross product ``m x*`` = ``-crm(m)'``."""
    return -np.swapaxes(crm(m), -1, -2)


def motion_transform(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Plucker transform taking motion vectors from a frame with pose ``(R, p)``
    to its parent's coordinates: ``[[R, 0], [p x R, R]]``."""
    out = np.zeros(np.broadcast_shapes(R.shape[:-2], p.shape[:-1]) + (6, 6))
    out[..., :3, :3] = R
    out[..., 3:, 3:] = R
    out[..., 3:, :3] = skew(p) @ R
    return out


def inverse_motion_transform(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Inverse of :func:`motion_transform`: parent coordinates to the frame's."""
    Rt = np.swapaxes(R, -1, -2)
    out = np.zeros(np.broadcast_shapes(R.shape[:-2], p.shape[:-1]) + (6, 6))
    out[..., :3, :3] = Rt
    out[..., 3:, 3:] = Rt
    out[..., 3:, :3] = -Rt @ skew(p)
    return out


def force_transform(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Transform of force vectors from the frame to its parent: ``X^-T``."""
    return np.swapaxes(inverse_motion_transform(R, p), -1, -2)


def spatial_inertia(mass: float, com, inertia_com) -> np.ndarray:
    """Spatial inertia about a body frame's origin (Featherstone's ``mcI``).

    Parameters
    ----------
    mass : float
    com : (3,) centre of mass in the body frame
    inertia_com : (3, 3) rotational inertia about the centre of mass

    Examples
    --------
    >>> import numpy as np
    >>> spatial_inertia(2.0, np.zeros(3), np.eye(3))[3:, 3:].tolist()
    [[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.0]]
    """
    c = skew(np.asarray(com, dtype=float))
    out = np.zeros((6, 6))
    out[:3, :3] = np.asarray(inertia_com, dtype=float) + mass * c @ c.T
    out[:3, 3:] = mass * c
    out[3:, :3] = mass * c.T
    out[3:, 3:] = mass * np.eye(3)
    return out


def inertia_to_parent(I: np.ndarray, R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Express a spatial inertia of a frame with pose ``(R, p)`` in the parent's coordinates."""
    Xinv = inverse_motion_transform(R, p)
    return np.swapaxes(Xinv, -1, -2) @ I @ Xinv


def compose(R1, p1, R2, p2):
    """Pose of frame 2 in frame 0, given frame 1 in 0 and frame 2 in 1."""
    return R1 @ R2, p1 + (R1 @ p2[..., None])[..., 0]


def rotation_about(axis, angle) -> np.ndarray:
    """Rotation by ``angle`` about the unit ``axis`` (Rodrigues), batched over ``angle``.

    ``axis`` is a unit 3-vector or one of ``"x"``, ``"y"``, ``"z"``.
    """
    axis = np.asarray(UNIT_AXES.get(axis, axis) if isinstance(axis, str) else axis, dtype=float)
    angle = np.asarray(angle, dtype=float)
    K = skew(axis)
    s, c = np.sin(angle)[..., None, None], np.cos(angle)[..., None, None]
    return np.eye(3) + s * K + (1 - c) * (K @ K)


def quaternion_matrix(quat: np.ndarray) -> np.ndarray:
    """Rotation matrix of a unit quaternion ``(x, y, z, w)`` (Pinocchio's order)."""
    x, y, z, w = (quat[..., i] for i in range(4))
    out = np.empty(quat.shape[:-1] + (3, 3))
    out[..., 0, 0] = 1 - 2 * (y * y + z * z)
    out[..., 0, 1] = 2 * (x * y - z * w)
    out[..., 0, 2] = 2 * (x * z + y * w)
    out[..., 1, 0] = 2 * (x * y + z * w)
    out[..., 1, 1] = 1 - 2 * (x * x + z * z)
    out[..., 1, 2] = 2 * (y * z - x * w)
    out[..., 2, 0] = 2 * (x * z - y * w)
    out[..., 2, 1] = 2 * (y * z + x * w)
    out[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return out


def quaternion_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of ``(x, y, z, w)`` quaternions."""
    ax, ay, az, aw = (a[..., i] for i in range(4))
    bx, by, bz, bw = (b[..., i] for i in range(4))
    return np.stack(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ],
        axis=-1,
    )


def quaternion_exp(w: np.ndarray) -> np.ndarray:
    """Unit quaternion of the rotation vector ``w`` (angle ``|w|`` about ``w/|w|``)."""
    angle = np.linalg.norm(w, axis=-1)
    half = 0.5 * angle
    # sin(half)/angle -> 1/2 as angle -> 0
    scale = np.where(angle > 1e-8, np.sin(half) / np.where(angle > 1e-8, angle, 1.0), 0.5 - angle**2 / 48)
    return np.concatenate([w * scale[..., None], np.cos(half)[..., None]], axis=-1)


LOG_SERIES = 1e-2  # below this angle log6's coefficient is its series (the closed form cancels digits there)


def log6(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The twist ``[v; omega]`` whose exponential is the pose ``(R, p)`` (Pinocchio's ``log6``, linear first).

    ``omega`` is the rotation vector of ``R`` (scipy's, angle in ``[0, pi]``) and ``v = V(omega)^-1 p`` with
    ``V^-1 = I - [omega]x / 2 + beta [omega]x^2``, ``beta = 1/t^2 - cot(t/2) / (2t)`` at angle ``t``.

    Parameters
    ----------
    R : (..., 3, 3)
    p : (..., 3)

    Returns
    -------
    ndarray, shape (..., 6)

    Examples
    --------
    >>> import numpy as np
    >>> log6(rotation_about("z", 0.5), np.zeros(3)) + 0.0  # a turn about z: omega alone
    array([0. , 0. , 0. , 0. , 0. , 0.5])
    >>> log6(np.eye(3), np.array([1.0, 2.0, 3.0]))  # a translation: v alone
    array([1., 2., 3., 0., 0., 0.])
    """
    from scipy.spatial.transform import Rotation

    R, p = np.broadcast_arrays(np.asarray(R, dtype=float), np.asarray(p, dtype=float)[..., None])
    batch = R.shape[:-2]
    omega = Rotation.from_matrix(R.reshape(-1, 3, 3)).as_rotvec().reshape(batch + (3,))
    t = np.linalg.norm(omega, axis=-1)
    wide = np.where(t < LOG_SERIES, 1.0, t)  # (the closed form evaluated where it is used)
    beta = np.where(t < LOG_SERIES, 1 / 12 + t**2 / 720 + t**4 / 30240,
                    1 / wide**2 - np.cos(wide / 2) / (2 * wide * np.sin(wide / 2)))
    W = skew(omega)
    v = p[..., 0] - 0.5 * (W @ p)[..., 0] + beta[..., None] * (W @ (W @ p))[..., 0]
    return np.concatenate([v, omega], axis=-1)
