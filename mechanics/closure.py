"""The loops at position and velocity level: constraint errors, constraints to the ground anchored at a
configuration, and projections of a configuration and a velocity onto the loops (the
:class:`~mechanics.Mechanism` methods of the same names).

``forward_dynamics`` asks for zero relative acceleration across each constraint; integrated, the loops drift
apart.  What drifted is measured here in each constraint's own rows and frame, as Pinocchio's
``RigidConstraintData.contact_placement_error`` and ``contact_velocity_error``
(:func:`mechanics.kinematics.constraint_errors`): the Baumgarte correction (``forward_dynamics(...,
baumgarte=(Kp, Kd))``) asks for ``-Kp e - Kd e_dot`` instead.  A Coupling's errors are ``sum_j C_j q_j -
offset`` and ``sum_j C_j v_j`` (one without an offset has a velocity level only).  A General constraint has
neither and is left out.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .checks import check_real, check_state
from .diagnosis import joint_space_constraints, link_jacobians
from .kinematics import LINEAR_FIRST, _frame, _point_jacobian, constraint_errors, kinematics
from .mechanism import Connect, Coupling, Mechanism, Pose, Weld, ground_ends
from .spatial import inverse_motion_transform, log6, rotation_about, skew

PROJECT_TOL = 1e-10
""":func:`project`'s default: the largest position error (m, rad) it leaves."""
LM_START, LM_FACTOR, LM_GIVE_UP = 1e-3, 10.0, 1e12  # Levenberg-Marquardt's damping: first, its moves, its ceiling
GROWTH, GROWN, NEAR = 4.0, 3, 1e-6  # within NEAR of closing, a Gauss-Newton step may grow the error GROWTH times, GROWN
# times in a row
RANK_RTOL = 1e-13  # singular values of de/dq below this, relative to the largest, are round-off: no step along them
LOG_STEP = 1e-5  # the twist of log6's central differences (error ~1e-10: Gauss-Newton's steps, not its answer)


def _positional(mechanism: Mechanism) -> list:
    """The constraints with a position level: Welds, Connects, Couplings with an offset."""
    return [c for c in _with_velocity(mechanism) if not isinstance(c, Coupling) or c.offset is not None]


def _with_velocity(mechanism: Mechanism) -> list:
    return [c for c in mechanism.constraints if isinstance(c, (Weld, Connect, Coupling))]


def constraint_error(mechanism: Mechanism, q) -> dict:
    """Each Weld's, Connect's and Coupling's (with an offset) position error at ``q``: ``{name: e (..., m)}``
    (module docstring)."""
    zeros = np.zeros(mechanism.nv)
    q, v, _ = check_state(mechanism, q, zeros, zeros)
    kin = kinematics(mechanism, q, v)
    return {c.name: constraint_errors(kin, c)[0] for c in _positional(mechanism)}


def constraint_velocity(mechanism: Mechanism, q, v) -> dict:
    """Each Weld's, Connect's and Coupling's velocity error at ``(q, v)``: ``{name: e_dot (..., m)}`` (module
    docstring)."""
    q, v, _ = check_state(mechanism, q, v, np.zeros(mechanism.nv))
    kin = kinematics(mechanism, q, v)
    return {c.name: constraint_errors(kin, c)[1] for c in _with_velocity(mechanism)}


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
    ends = ground_ends(c)
    if ends is None:
        return c
    link, placement, ground, field = ends
    R, p = _frame(kin, link, placement)
    return dataclasses.replace(c, **{field: Pose(R if isinstance(c, Weld) else ground.rotation, p)})


def _errors_and_rows(mechanism: Mechanism, q: np.ndarray) -> tuple:
    """``(e (m,), de/dq (m, nv))`` of the Welds and Connects at one ``q``, the derivative along the tangent
    space (``q (+) dq``): a Connect's ``d(R_1'(p_1 - p_2)) = R_1' (dp_1 - dp_2 + (p_1 - p_2) x omega_1)``, a
    Weld's ``d(-log6(c1Mc2)) = -Jlog6 nu`` with ``nu`` the body twist of ``c1Mc2``."""
    kin = kinematics(mechanism, q, np.zeros(mechanism.nv))
    jacobian = link_jacobians(mechanism, kin)
    errors, rows = [np.zeros(0)], [np.zeros((0, mechanism.nv))]
    for c in _positional(mechanism):
        if isinstance(c, Coupling):  # d(sum_j C_j q_j) = sum_j C_j dq_j (revolute and prismatic joints)
            row = np.zeros((c.dim, mechanism.nv))
            for joint, C in zip(c.joints, c.C):
                row[:, mechanism.v_slices[joint]] += C
            errors.append(constraint_errors(kin, c)[0])
            rows.append(row)
            continue
        (R1, p1), (R2, p2) = _frame(kin, c.link1, c.placement1), _frame(kin, c.link2, c.placement2)
        J1, J2 = jacobian[c.link1], jacobian[c.link2]
        if isinstance(c, Connect):
            d = p1 - p2
            row = R1.T @ (_point_jacobian(p1) @ J1 - _point_jacobian(p2) @ J2 + skew(d) @ J1[:3])
        else:
            twist = (inverse_motion_transform(R2, p2) @ (J2 - J1))[LINEAR_FIRST]  # nu, [linear; angular]
            row = -_log_jacobian(R1.T @ R2, R1.T @ (p2 - p1)) @ twist
        errors.append(constraint_errors(kin, c)[0])
        rows.append(row[list(c.axes)])
    return np.concatenate(errors), np.concatenate(rows)


def _log_jacobian(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``d log6((R, p) exp(nu)) / d nu`` at 0 (``nu = [v; omega]``), by central differences of :func:`log6`."""
    out = np.empty((6, 6))
    for j in range(6):
        ends = []
        for h in (LOG_STEP, -LOG_STEP):
            axis = np.eye(3)[j % 3]
            if j < 3:  # a translation h along axis, in the pose's frame
                ends.append(log6(R, p + h * (R @ axis)))
            else:  # a rotation h about axis (exp6 of a pure rotation leaves the origin)
                ends.append(log6(R @ rotation_about(axis, h), p))
        out[:, j] = (ends[0] - ends[1]) / (2 * LOG_STEP)
    return out


def _rows(mechanism: Mechanism, q: np.ndarray, v=None) -> tuple:
    """``(J, M)``: the Welds', Connects' and Couplings' rows of ``J`` (``e_dot = J v``) and the joint-space
    inertia (:func:`~mechanics.diagnosis.joint_space_constraints`)."""
    J, _, M = joint_space_constraints(mechanism, q, np.zeros(mechanism.nv) if v is None else v)
    keep = np.concatenate([np.full(c.dim, isinstance(c, (Weld, Connect, Coupling))) for c in mechanism.constraints] or
                          [np.zeros(0, bool)])
    return J[..., keep, :], M


def project(mechanism: Mechanism, q, tol: float = PROJECT_TOL, max_iter: int = 50) -> np.ndarray:
    """A configuration near ``q`` that closes every Weld and Connect (position errors ``<= tol``).

    Gauss-Newton on the stacked errors ``e(q)`` with their exact derivative ``J`` along the tangent space,
    least-norm steps ``dq = -J^+ e``, safeguarded by Levenberg-Marquardt's ``-J' (J J' + damping I)^-1 e``
    where a step would grow the error, taken on the configuration manifold (:meth:`Mechanism.integrate`:
    free-flyer and spherical joints step in their tangent space) -- so the closure found is near ``q`` in
    the metric of the joint velocities, not the exact nearest point.  Redundant constraints are fine.

    Parameters
    ----------
    mechanism : Mechanism
    q : array_like, shape (..., nq)
    tol : float
        The largest error left, per batch element (metres and radians).
    max_iter : int

    Returns
    -------
    ndarray, shape (..., nq)

    Raises
    ------
    ValueError
        An element whose loops do not close from ``q``, the errors left named: a local minimum of the errors
        (incompatible constraints, a loop near a dead point or far from closing), or ``max_iter`` reached.

    Examples
    --------
    >>> import numpy as np
    >>> from mechanics import models
    >>> mech = models.fig4()
    >>> q = mech.project(mech.random_configuration(np.random.default_rng(0)))
    >>> bool(max(np.abs(e).max() for e in mech.constraint_error(q).values()) <= 1e-10)
    True
    """
    zeros = np.zeros(mechanism.nv)
    q = check_state(mechanism, q, zeros, zeros)[0]
    tol = check_real(tol, "tol", "the largest position error left, e.g. 1e-10")
    if q.ndim > 1:
        return np.stack([project(mechanism, row, tol, max_iter) for row in q.reshape(-1, q.shape[-1])]).reshape(q.shape)
    error, rows = _errors_and_rows(mechanism, q)
    damping, grown = LM_START * np.max(np.sum(rows * rows, axis=1), initial=0.0), 0
    for _ in range(max_iter):
        if not error.size or np.max(np.abs(error)) <= tol:
            return q
        q, (error, rows), damping, grown = _step(mechanism, q, error, rows, damping, grown)
    if np.max(np.abs(error)) <= tol:
        return q
    raise ValueError(_not_closing(mechanism, error, f"not within tol={tol:g} after {max_iter} steps (raise max_iter "
                                  f"or tol)"))


def _step(mechanism: Mechanism, q: np.ndarray, error: np.ndarray, rows: np.ndarray, damping: float, grown: int):
    """The Gauss-Newton step where it shrinks the error -- or, within ``NEAR`` of closing, grows it at most
    ``GROWTH`` times (``GROWN`` times in a row) -- else a Levenberg-Marquardt one; ``(q', (e, de/dq) at q',
    damping', grown')``.

    Rows that are dependent where the loops close (a planar loop's third row) make the error quadratic along
    a direction: the Gauss-Newton step halves the distance there and may first grow the error a little
    (a method that takes only decreasing steps stalls there); Levenberg-Marquardt keeps it safe far away."""
    U, sv, Vt = np.linalg.svd(rows, full_matrices=False)
    kept = sv > RANK_RTOL * sv[0] if sv.size else sv > 0  # (redundant rows: their round-off directions left out)
    U, sv, Vt = U[:, kept], sv[kept], Vt[kept]
    along, norm = U.T @ error, np.linalg.norm(error)
    if grown < GROWN:
        new_q = mechanism.integrate(q, -Vt.T @ (along / sv))
        new = _errors_and_rows(mechanism, new_q)  # (a step is mostly taken: its rows are the next step's)
        new_norm = np.linalg.norm(new[0])
        if new_norm < norm or (norm < NEAR and new_norm <= GROWTH * norm):
            return new_q, new, damping, grown + 1 if new_norm >= norm else 0
    top = sv[0] ** 2 if sv.size else 0.0
    while damping <= LM_GIVE_UP * (1.0 + top):
        new_q = mechanism.integrate(q, -Vt.T @ (sv / (sv * sv + damping) * along))
        new = _errors_and_rows(mechanism, new_q)
        if np.linalg.norm(new[0]) < norm:
            return new_q, new, damping / LM_FACTOR, 0
        damping = max(LM_FACTOR * damping, np.finfo(float).eps * top)
    raise ValueError(_not_closing(mechanism, error, "no step shrinks the error, a local minimum of it: the constraints "
                                  "ask for incompatible placements, or a loop is near a dead point or far from closing "
                                  "here; start nearer a closed configuration"))


def _not_closing(mechanism: Mechanism, error: np.ndarray, why: str) -> str:
    worst, start = [], 0
    for c in _positional(mechanism):
        worst.append((float(np.max(np.abs(error[start:start + c.dim]))), c.name))
        start += c.dim
    named = ", ".join(f"{name!r} {size:.1e}" for size, name in sorted(worst, reverse=True) if size > 0)
    return f"project: the loops of {mechanism.name!r} do not close from this q -- {why}; errors left: {named}"


METRICS = ("identity", "mass")


def project_velocity(mechanism: Mechanism, q, v, metric: str = "identity") -> np.ndarray:
    """``v`` with its constraint velocity removed: the nearest ``v'`` with ``e_dot(q, v') = J v' = 0``.

    ``metric="identity"``: nearest in ``|v' - v|`` (``v' = v - J^+ J v``); ``"mass"``: in the kinetic
    energy ``(v' - v)' M (v' - v)`` (``v' = v - M^-1 J' (J M^-1 J')^+ J v``: the velocity an impulse on the
    constraints leaves, as after a plastic impact).  Redundant constraints are fine.

    Parameters
    ----------
    mechanism : Mechanism
    q : array_like, shape (..., nq)
    v : array_like, shape (..., nv)
    metric : {"identity", "mass"}

    Returns
    -------
    ndarray, shape (..., nv)
    """
    if metric not in METRICS:
        raise ValueError(f"project_velocity: metric must be one of {METRICS}, got {metric!r}")
    q, v, _ = check_state(mechanism, q, v, np.zeros(mechanism.nv))
    batch = np.broadcast_shapes(q.shape[:-1], v.shape[:-1])
    q, v = np.broadcast_to(q, batch + q.shape[-1:]), np.broadcast_to(v, batch + v.shape[-1:])
    J, M = _rows(mechanism, q, v)
    rate = (J @ v[..., None])[..., 0]
    if metric == "identity":
        return v - (np.linalg.pinv(J) @ rate[..., None])[..., 0]
    MinvJt = np.linalg.solve(M, np.swapaxes(J, -1, -2))
    return v - (MinvJt @ (np.linalg.pinv(J @ MinvJt) @ rate[..., None]))[..., 0]
