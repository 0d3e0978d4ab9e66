"""The model evaluation of the compiled dynamics: the kinematics pass and the constraint terms ``K a = k``
(:mod:`mechanics.kinematics`' arithmetic), written once in the row operations of :mod:`elimination.vectors`:
``KL`` a 1-d array is one state, a ``(rows, 16)`` array sixteen states side by side, and each instance is the
same operations in the same order (no fused multiply-add) -- the same bits at every width.
"""
from __future__ import annotations

import numpy as np
from numba import njit

import elimination.jacobi as jacobi
import elimination.vectors as vectors
from elimination.compiled_front import UNCOUNTED, ix
from elimination.compiled_pivot import COUNTED

from .checks import UNIT_NORM_TOL
from .couplings import SINGULAR_RTOL
from .spatial import LOG_SERIES
from .compiled_tables import (
    drop_stale_kernels, ACC, CDIM, CKIND, COUPLING, GENERAL, GMAP, JOINT, L1, L2, LOOP_C0, LOOP_D0, LOOP_J0, LOOP_M,
    LOOP_NC, LOOP_NCON, LOOP_NJ, LOOP_NY, LOOP_PARENT, LOOP_RANK, NPAIR, NV, PAIR0, PARENT, Q0, ROW0, TERM_LINK,
    TERM_NV, TERM_OF, TERM_ON_GROUND, TERM_PAIR, TERM_PARENT_PAIR, TERM_Q0, TERM_V0, V0, WELD,
)

drop_stale_kernels(__file__)


# -- kinematics -----------------------------------------------------------------------------------------------

@njit(cache=True, inline="always")
def _rotation_about(a0, a1, a2, angle):
    """Rodrigues, as :func:`mechanics.spatial.rotation_about`: ``I + sin K + (1 - cos) K^2``, ``K = [a]x``
    (``K^2 = a a' - I`` for a unit axis), as a row-major 9-tuple."""
    s, c = np.sin(angle), np.cos(angle)
    v = 1.0 - c
    return (1.0 + v * (a0 * a0 - 1.0), -s * a2 + v * a0 * a1, s * a1 + v * a0 * a2,
            s * a2 + v * a0 * a1, 1.0 + v * (a1 * a1 - 1.0), -s * a0 + v * a1 * a2,
            -s * a1 + v * a0 * a2, s * a0 + v * a1 * a2, 1.0 + v * (a2 * a2 - 1.0))


@njit(cache=True, inline="always")
def _quaternion_matrix(x, y, z, w):
    return (1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
            2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
            2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y))


@njit(cache=True, **UNCOUNTED)
def _joint_pose(kind, a0, a1, a2, Q, q0, w):
    """:func:`mechanics.joints.jcalc` for one joint, ``(a0, a1, a2)`` its axis and rows ``q0..`` of ``Q`` in lane
    ``w`` its configuration: ``(R, p)`` of the child frame as a row-major 9-tuple and a 3-tuple (scalars: no
    arrays to count references of in the per-link loop)."""
    R, p = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0)
    q = lambda i: vectors.lane(Q, q0 + i, w)  # (the joint's i-th configuration entry)
    if kind == 1:
        R = _rotation_about(a0, a1, a2, q(0))
    elif kind == 2:
        R = _rotation_about(a0, a1, a2, np.arctan2(q(1), q(0)))
    elif kind == 3:
        p = (q(0) * a0, q(0) * a1, q(0) * a2)
    elif kind == 4:
        R = _quaternion_matrix(q(0), q(1), q(2), q(3))
    elif kind == 5:
        R = _rotation_about(0.0, 0.0, 1.0, np.arctan2(q(3), q(2)))
        p = (q(0), q(1), 0.0)
    elif kind == 6:
        R = _quaternion_matrix(q(3), q(4), q(5), q(6))
        p = (q(0), q(1), q(2))
    return R, p


@njit(cache=True, inline="always")
def normalized_units(qn, unit, valid):
    """One state's ``q`` in ``qn`` with its unit parts (columns ``unit (k, 2)``) normalised in place; ``valid``
    and each part's squared norm within ``UNIT_NORM_TOL`` of 1 (:func:`mechanics.checks.normalized_configuration`)."""
    for u in range(unit.shape[0]):
        norm2 = 0.0
        for i in range(unit[ix(u), 0], unit[ix(u), 1]):
            norm2 += qn[ix(i)] * qn[ix(i)]
        valid = valid and abs(norm2 - 1.0) <= UNIT_NORM_TOL
        norm = np.sqrt(norm2) if valid else 1.0  # (a refused state is not read: no division by a zero norm)
        for i in range(unit[ix(u), 0], unit[ix(u), 1]):
            qn[ix(i)] /= norm
    return valid


# Row k of KL holds entry k of each lane's kinematics (one state's entries where KL is 1-d), in the parts of
# _kinematic_parts; a joint's pose (sines, cosines) is computed lane by lane.
KINEMATIC_TEMPS = 87  # KL's scratch rows (_constraint_terms' 87)


def kinematic_rows(n: int, nq: int, nv: int) -> int:
    """Rows of ``KL`` for ``n`` links, ``nq`` and ``nv`` entries of a state (:func:`_kinematic_parts`)."""
    return int(_kinematic_parts(n, nq, nv)[-1]) + 1


@njit(cache=True, inline="always")
def _kinematic_parts(n, nq, nv):
    """First rows in ``KL`` of ``R (9 per link, row-major; the ground last), p (3), vel (6), S (36: 6 x 6),
    bias (6), Iw (36), fb (6)``, the states' normalised ``q (nq)`` and ``v (nv)``, the scratch, the lanes'
    mask (1.0 where a lane takes a new state) and the largest diagonal magnitude of their link factors."""
    p = 9 * (n + 1)
    vel = p + 3 * (n + 1)
    S = vel + 6 * (n + 1)
    bias = S + 36 * n
    Iw = bias + 6 * n
    fb = Iw + 36 * n
    qn = fb + 6 * n
    v = qn + nq
    t = v + nv
    return 0, p, vel, S, bias, Iw, fb, qn, v, t, t + KINEMATIC_TEMPS, t + KINEMATIC_TEMPS + 1


@njit(cache=True, inline="always")
def _joint_poses(links, axis, KL, l, q0, qn, RJ):
    """Link ``l``'s joint pose (:func:`_joint_pose`) in each lane, into rows ``RJ`` (9) and ``RJ + 9`` (3)."""
    kind, a0, a1, a2 = links[ix(l), JOINT], axis[ix(l), 0], axis[ix(l), 1], axis[ix(l), 2]
    for w in range(vectors.width(KL)):
        Rj, pj = _joint_pose(kind, a0, a1, a2, KL, qn + q0, w)
        for k in range(9):
            vectors.set_lane(KL, RJ + k, w, Rj[k])
        for k in range(3):
            vectors.set_lane(KL, RJ + 9 + k, w, pj[k])


@njit(cache=True, inline="always")
def _compose(KL, R1, p1, R2, p2, R, p):
    """``(R, p) = (R1 R2, p1 + R1 p2)`` (:func:`mechanics.spatial.compose`) of rows ``R1`` (9, row-major),
    ``p1`` (3) and a constant ``R2 (3, 3)``, ``p2 (3,)``, into rows ``R``, ``p`` (apart from ``R1``, ``p1``)."""
    g = lambda k: vectors.get(KL, k)
    for i in range(3):
        a0, a1, a2 = g(R1 + 3 * i), g(R1 + 3 * i + 1), g(R1 + 3 * i + 2)
        vectors.set(KL, p + i, g(p1 + i) + a0 * p2[0] + a1 * p2[1] + a2 * p2[2])
        for j in range(3):
            vectors.set(KL, R + 3 * i + j, a0 * R2[0, j] + a1 * R2[1, j] + a2 * R2[2, j])


@njit(cache=True, inline="always")
def _link_pose(KL, R, P, l, parent, Pr, Pp, RJ):
    """``(R, p)[l] = (R, p)[parent] (Pr, Pp) (Rj, pj)``: link ``l``'s world pose from its parent's, its joint's
    placement ``Pr (3, 3), Pp (3,)`` and the joint's pose in rows ``RJ`` (:func:`_joint_poses`)."""
    Rl, pl = R + 9 * l, P + 3 * l
    _compose(KL, R + 9 * parent, P + 3 * parent, Pr, Pp, Rl, pl)  # the parent's pose and the placement
    g = lambda k: vectors.get(KL, k)
    for i in range(3):  # then the joint's: p += R pj, R = R Rj, a row at a time in place
        r0, r1, r2 = g(Rl + 3 * i), g(Rl + 3 * i + 1), g(Rl + 3 * i + 2)
        vectors.set(KL, pl + i, g(pl + i) + (r0 * g(RJ + 9) + r1 * g(RJ + 10) + r2 * g(RJ + 11)))
        for j in range(3):
            vectors.set(KL, Rl + 3 * i + j, r0 * g(RJ + j) + r1 * g(RJ + 3 + j) + r2 * g(RJ + 6 + j))


@njit(cache=True, inline="always")
def _cross_motion(KL, D, M, X):
    """Rows ``D..D+5`` = ``m x x`` (:func:`mechanics.spatial.crm`) of the rows ``M``, ``X`` (motion ``[omega; v]``;
    ``D`` apart from both)."""
    g = lambda k: vectors.get(KL, k)
    for i in range(3):
        i1, i2 = (i + 1) % 3, (i + 2) % 3
        vectors.set(KL, D + i, g(M + i1) * g(X + i2) - g(M + i2) * g(X + i1))
        vectors.set(KL, D + 3 + i, g(M + 3 + i1) * g(X + i2) - g(M + 3 + i2) * g(X + i1) + g(M + i1) * g(X + 3 + i2)
                    - g(M + i2) * g(X + 3 + i1))


@njit(cache=True, inline="always")
def _world_inertia(KL, R, P, IW, l, b):
    """The spatial inertia of link ``l`` (pose in rows ``R``, ``P``) at the world origin into rows ``IW + 36 l``
    (``X' I X`` of :func:`mechanics.spatial.inertia_to_parent`), from ``b = (mass, com (3), inertia about the com
    (3x3, row-major))`` in the link frame: Featherstone's ``[[I_c + m [c]x [c]x', m [c]x], [m [c]x', m 1]]`` with
    the com ``c = p + R com`` and ``I_c = R I_com R'`` in world coordinates (a quarter of the flops)."""
    Rl, pl, I = R + 9 * l, P + 3 * l, IW + 36 * l
    g = lambda k: vectors.get(KL, k)
    m = b[0]
    c = (g(pl) + g(Rl) * b[1] + g(Rl + 1) * b[2] + g(Rl + 2) * b[3],
         g(pl + 1) + g(Rl + 3) * b[1] + g(Rl + 4) * b[2] + g(Rl + 5) * b[3],
         g(pl + 2) + g(Rl + 6) * b[1] + g(Rl + 7) * b[2] + g(Rl + 8) * b[3])
    cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2]
    for i in range(3):  # R I_com R' + m (|c|^2 I - c c'), a row of R I_com at a time
        a0, a1, a2 = g(Rl + 3 * i), g(Rl + 3 * i + 1), g(Rl + 3 * i + 2)
        r0 = a0 * b[4] + a1 * b[7] + a2 * b[10]
        r1 = a0 * b[5] + a1 * b[8] + a2 * b[11]
        r2 = a0 * b[6] + a1 * b[9] + a2 * b[12]
        for j in range(3):
            d = cc - c[i] * c[j] if i == j else 0.0 - c[i] * c[j]
            vectors.set(KL, I + 6 * i + j, r0 * g(Rl + 3 * j) + r1 * g(Rl + 3 * j + 1) + r2 * g(Rl + 3 * j + 2) + d * m)
            vectors.set(KL, I + 6 * (3 + i) + 3 + j, m if i == j else 0.0)
    for i in range(3):  # m [c]x, and its transpose below
        i1, i2 = (i + 1) % 3, (i + 2) % 3
        vectors.set(KL, I + 6 * i + 3 + i, 0.0)
        vectors.set(KL, I + 6 * i + 3 + i1, -m * c[i2])
        vectors.set(KL, I + 6 * i + 3 + i2, m * c[i1])
    for i in range(3):
        for j in range(3):
            vectors.copy(KL, I + 6 * (3 + i) + j, KL, I + 6 * j + 3 + i)


@njit(cache=True, **UNCOUNTED)
def _kinematics(model, KL, parts):
    """:func:`mechanics.kinematics.kinematics` of every lane's state (its normalised ``q`` and ``v`` in ``KL``'s
    rows, :func:`_kinematic_parts`; the ground the last link of ``R, p, vel``)."""
    links, axis, place_R, place_p, body, S_local, root = model
    n = links.shape[0]
    R, P, VEL, S, BIAS, IW, FB, QN, V, T = parts[:10]
    RJ, JV, H = T, T + 12, T + 18  # joint pose (12), joint velocity, momentum
    g = lambda k: vectors.get(KL, k)
    for i in range(3):
        vectors.fill(KL, P + 3 * n + i, 0.0)
        for j in range(3):
            vectors.fill(KL, R + 9 * n + 3 * i + j, 1.0 if i == j else 0.0)
    for i in range(6):
        vectors.fill(KL, VEL + 6 * n + i, 0.0)
    for l in range(n):
        parent, q0, v0, nv = links[ix(l), PARENT], links[ix(l), Q0], links[ix(l), V0], links[ix(l), NV]
        _joint_poses(links, axis, KL, l, q0, QN, RJ)
        _link_pose(KL, R, P, l, parent, place_R[ix(l)], place_p[ix(l)], RJ)
        Rl, pl, Sl, S0 = R + 9 * l, P + 3 * l, S + 36 * l, S_local[ix(l)]
        for c in range(nv):  # S = [[R, 0], [p x R, R]] S_local
            for i in range(3):
                a0, a1, a2 = g(Rl + 3 * i), g(Rl + 3 * i + 1), g(Rl + 3 * i + 2)
                vectors.set(KL, Sl + 6 * i + c, 0.0 + a0 * S0[0, ix(c)] + a1 * S0[1, ix(c)] + a2 * S0[2, ix(c)])
                vectors.set(KL, Sl + 6 * (3 + i) + c, 0.0 + a0 * S0[3, ix(c)] + a1 * S0[4, ix(c)] + a2 * S0[5, ix(c)])
            for i in range(3):
                i1, i2 = (i + 1) % 3, (i + 2) % 3
                u = Sl + 6 * (3 + i) + c
                vectors.set(KL, u, g(u) + (g(pl + i1) * g(Sl + 6 * i2 + c) - g(pl + i2) * g(Sl + 6 * i1 + c)))
        vl = VEL + 6 * l
        for i in range(6):
            vectors.fill(KL, JV + i, 0.0)
            for c in range(nv):
                vectors.add_mul(KL, JV + i, KL, Sl + 6 * i + c, KL, V + v0 + c)
            vectors.copy(KL, vl + i, KL, VEL + 6 * parent + i)
            vectors.add(KL, vl + i, KL, JV + i)
        _cross_motion(KL, BIAS + 6 * l, vl, JV)
        _world_inertia(KL, R, P, IW, l, body[ix(l)])
        Il = IW + 36 * l
        for i in range(6):  # momentum h = H v
            vectors.dot6(KL, H + i, KL, Il + 6 * i, 1, KL, vl, 1)
        f = FB + 6 * l
        for i in range(3):  # f = [-(w x n) - (u x f); -(w x f)]
            i1, i2 = (i + 1) % 3, (i + 2) % 3
            vectors.set(KL, f + i, -(g(vl + i1) * g(H + i2) - g(vl + i2) * g(H + i1))
                        - (g(vl + 3 + i1) * g(H + 3 + i2) - g(vl + 3 + i2) * g(H + 3 + i1)))
            vectors.set(KL, f + 3 + i, -(g(vl + i1) * g(H + 3 + i2) - g(vl + i2) * g(H + 3 + i1)))


PENALTY_ROWS = 6  # the most rows of one penalty factor (a weld's)


@njit(cache=True, inline="always")
def constraint_rows(pairs, m):
    """Rows that :func:`_constraint_parts` carves for ``pairs`` link pairs, ``m`` rows."""
    return 36 * pairs + 4 * m + 1 + 36 * pairs + PENALTY_ROWS + 3


@njit(cache=True, inline="always")
def _constraint_parts(KC, pairs, m):
    """The constraints' rows in lanes, carved from ``KC``: each lane's ``Kbuf`` (row ``36 pair + 6 r + c`` its
    ``Kbuf[pair, r, c]``), its measurements, ``k``, ``lambda`` and residual ``K a - k`` (``m`` rows each), the
    mask of the lanes whose terms move (1), and the scratch of :func:`_fill_constraints` and
    :func:`_factor_residuals` (``36 pairs + PENALTY_ROWS + 3``)."""
    K = 36 * pairs
    return (KC[:K], KC[K:K + m], KC[K + m:K + 2 * m], KC[K + 2 * m:K + 3 * m], KC[K + 3 * m:K + 4 * m],
            K + 4 * m, KC[K + 4 * m + 1:])


@njit(cache=True, inline="always")
def _cross(KL, D, A, a, B, b):
    """``KL[D] = KL[A] * KL[a] - KL[B] * KL[b]``: an entry of a cross product, as the scalar code writes it."""
    vectors.mul(KL, D, KL, A, KL, a)
    vectors.sub_mul(KL, D, KL, B, KL, b)


@njit(cache=True, inline="always")
def _weld_row(KL, Kr, row, sign, R1, p1, t):
    """Row ``row`` of ``X^-1(R1, p1)`` (:func:`mechanics.spatial.inverse_motion_transform`: ``[[R', 0], [-R' [p]x, R']]``) times
    ``sign`` into rows ``Kr..Kr+5`` (``t``: three scratch rows)."""
    if row < 3:  # [R', 0]
        for c in range(3):
            vectors.scaled(KL, Kr + c, sign, KL, R1 + 3 * c + row)
            vectors.fill(KL, Kr + 3 + c, 0.0)
            vectors.scaled(KL, Kr + 3 + c, sign, KL, Kr + 3 + c)  # (sign * 0.0: -0.0 on the second side)
        return
    i = row - 3  # [-R' [p]x, R']
    _cross(KL, t, R1 + 3 + i, p1 + 2, R1 + 6 + i, p1 + 1)
    _cross(KL, t + 1, R1 + 6 + i, p1, R1 + i, p1 + 2)
    _cross(KL, t + 2, R1 + i, p1 + 1, R1 + 3 + i, p1)
    for c in range(3):
        vectors.scaled(KL, t + c, -1.0, KL, t + c)
        vectors.scaled(KL, Kr + c, sign, KL, t + c)
        vectors.scaled(KL, Kr + 3 + c, sign, KL, R1 + 3 * c + i)


@njit(cache=True, inline="always")
def _axis_near_pi(R, c):
    """The unit axis of a rotation by ``t`` near ``pi`` (``cos t = c``): from the diagonal ``R_ii = c + (1 - c)
    a_i^2`` its largest entry, the others from ``R_ij + R_ji = 2 (1 - c) a_i a_j`` (the sign: the caller's)."""
    d = 1.0 - c
    a0, a1, a2 = (np.sqrt(max((R[0] - c) / d, 0.0)), np.sqrt(max((R[4] - c) / d, 0.0)),
                  np.sqrt(max((R[8] - c) / d, 0.0)))
    if a0 >= a1 and a0 >= a2:
        return a0, (R[1] + R[3]) / (2.0 * d * a0), (R[2] + R[6]) / (2.0 * d * a0)
    if a1 >= a2:
        return (R[1] + R[3]) / (2.0 * d * a1), a1, (R[5] + R[7]) / (2.0 * d * a1)
    return (R[2] + R[6]) / (2.0 * d * a2), (R[5] + R[7]) / (2.0 * d * a2), a2


@njit(cache=True, inline="always")
def _log6(R, p):
    """:func:`mechanics.spatial.log6` of one pose (``R`` a row-major 9-tuple, ``p`` a 3-tuple): ``[v; omega]``.
    The rotation vector from ``(R - R')/2 = sin(t) [a]x`` and ``cos t = (tr R - 1)/2``, its axis from the
    diagonal near ``t = pi`` (:func:`_axis_near_pi`), where the sine's axis loses its digits."""
    c = min(max(0.5 * (R[0] + R[4] + R[8] - 1.0), -1.0), 1.0)
    s0, s1, s2 = 0.5 * (R[7] - R[5]), 0.5 * (R[2] - R[6]), 0.5 * (R[3] - R[1])
    s = np.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
    t = np.arctan2(s, c)
    if c > -0.5:
        f = 1.0 + t * t / 6.0 if t < LOG_SERIES else t / s  # t / sin t
        w0, w1, w2 = f * s0, f * s1, f * s2
    else:
        a0, a1, a2 = _axis_near_pi(R, c)
        f = -t if a0 * s0 + a1 * s1 + a2 * s2 < 0.0 else t
        w0, w1, w2 = f * a0, f * a1, f * a2
    beta = (1.0 / 12.0 + t * t / 720.0 + t ** 4 / 30240.0 if t < LOG_SERIES
            else 1.0 / (t * t) - np.cos(t / 2.0) / (2.0 * t * np.sin(t / 2.0)))
    u0, u1, u2 = w1 * p[2] - w2 * p[1], w2 * p[0] - w0 * p[2], w0 * p[1] - w1 * p[0]  # w x p
    z0, z1, z2 = w1 * u2 - w2 * u1, w2 * u0 - w0 * u2, w0 * u1 - w1 * u0  # w x (w x p)
    return (p[0] - 0.5 * u0 + beta * z0, p[1] - 0.5 * u1 + beta * z1, p[2] - 0.5 * u2 + beta * z2, w0, w1, w2)


@njit(cache=True, inline="always")
def _weld_error(KL, R1, p1, R2, p2, E, axes, j, m):
    """A weld's position error ``-log6(c1Mc2)`` in its rows into ``E..`` (:func:`mechanics.kinematics.constraint_errors`),
    lane by lane, from frame 1's pose in rows ``R1``, ``p1`` and frame 2's in ``R2``, ``p2``."""
    for w in range(vectors.width(KL)):
        g = lambda k: vectors.lane(KL, k, w)
        r = lambda i, k: g(R1 + i) * g(R2 + k) + g(R1 + 3 + i) * g(R2 + 3 + k) + g(R1 + 6 + i) * g(R2 + 6 + k)
        d0, d1, d2 = g(p2) - g(p1), g(p2 + 1) - g(p1 + 1), g(p2 + 2) - g(p1 + 2)
        log = _log6((r(0, 0), r(0, 1), r(0, 2), r(1, 0), r(1, 1), r(1, 2), r(2, 0), r(2, 1), r(2, 2)),
                    (g(R1) * d0 + g(R1 + 3) * d1 + g(R1 + 6) * d2, g(R1 + 1) * d0 + g(R1 + 4) * d1 + g(R1 + 7) * d2,
                     g(R1 + 2) * d0 + g(R1 + 5) * d1 + g(R1 + 8) * d2))
        for q in range(m):
            vectors.set_lane(KL, E + q, w, -log[axes[ix(j), ix(q)]])


@njit(cache=True, inline="always")
def _corrected(KL, k, E, ED, gains, j, m):
    """``k += -Kp e - Kd e_dot`` in a constraint's rows (Pinocchio's Baumgarte corrector; ``E``, ``ED``: the
    position and velocity errors)."""
    for r in range(m):
        vectors.scaled(KL, E + r, -gains[ix(j), 0], KL, E + r)
        vectors.add_scaled(KL, E + r, KL, ED + r, -gains[ix(j), 1])
        vectors.add(KL, k + r, KL, E + r)


@njit(cache=True, inline="always")
def _coupling_row(KL, D, Rl, pl, w, t):
    """Rows ``D..D+5`` = ``w X^-1`` of a constant row ``w (6,)`` and the link pose in rows ``Rl`` (9), ``pl`` (3):
    as a column ``[R w_omega + p x u; u]``, ``u = R w_v`` (``t``: three scratch rows)."""
    for i in range(3):
        vectors.fill(KL, D + i, 0.0)
        vectors.fill(KL, D + 3 + i, 0.0)
        for c in range(3):
            vectors.add_scaled(KL, D + i, KL, Rl + 3 * i + c, w[c])
            vectors.add_scaled(KL, D + 3 + i, KL, Rl + 3 * i + c, w[3 + c])
    for i in range(3):
        i1, i2 = (i + 1) % 3, (i + 2) % 3
        _cross(KL, t + i, pl + i1, D + 3 + i2, pl + i2, D + 3 + i1)
    for i in range(3):
        vectors.add(KL, D + i, KL, t + i)


@njit(cache=True, inline="always")
def _coupling_terms(constraints, general, root, KL, parts, KK, Kk, j, m, r0, pair, npair, corrected):
    """:func:`mechanics.kinematics._coupling` of coupling ``j``: each of its pairs' ``K`` the sum of its terms'
    ``+-C_t S_t^+`` (``+`` on the joint's link, ``-`` on its parent), ``k = c + sum_t C_t S_t^+ (a_b + a_0 on the
    ground)``, and where it is corrected ``e = sum_t C_t q_t - offset``, ``e_dot = sum_t C_t v_t``."""
    terms, weights, k_const, gains = constraints[4], constraints[5], general[3], general[4]
    R, P, BIAS, QN, V, T, MASK = parts[0], parts[1], parts[4], parts[7], parts[8], parts[9], parts[10]
    KLr, D, k, t, E, ED = T + 24, T + 60, T + 66, T + 72, T + 75, T + 81
    for r in range(m):
        vectors.fill(KL, k + r, k_const[0, ix(r0 + r)])
        vectors.fill(KL, E + r, -k_const[1, ix(r0 + r)])
        vectors.fill(KL, ED + r, 0.0)
    for q in range(npair):
        for rc in range(6 * m):
            vectors.fill(KL, KLr + rc, 0.0)
        for u in range(terms.shape[0]):
            at_link, at_parent = terms[ix(u), TERM_PAIR] == pair + q, terms[ix(u), TERM_PARENT_PAIR] == pair + q
            if terms[ix(u), TERM_OF] != j or not (at_link or at_parent):
                continue
            l = terms[ix(u), TERM_LINK]
            for r in range(m):
                _coupling_row(KL, D, R + 9 * l, P + 3 * l, weights[ix(u), 0, ix(r)], t)
                for c in range(6):
                    vectors.add_scaled(KL, KLr + 6 * r + c, KL, D + c, 1.0 if at_link else -1.0)
        for r in range(m):
            for c in range(6):
                vectors.put(KK, 36 * (pair + q) + 6 * r + c, KL, KLr + 6 * r + c, KL, MASK)
    for u in range(terms.shape[0]):
        if terms[ix(u), TERM_OF] != j:
            continue
        l, q0, v0 = terms[ix(u), TERM_LINK], terms[ix(u), TERM_Q0], terms[ix(u), TERM_V0]
        for r in range(m):
            _coupling_row(KL, D, R + 9 * l, P + 3 * l, weights[ix(u), 0, ix(r)], t)
            vectors.dot6(KL, t, KL, D, 1, KL, BIAS + 6 * l, 1)
            vectors.add(KL, k + r, KL, t)
            if terms[ix(u), TERM_ON_GROUND]:
                vectors.fill(KL, t, 0.0)
                for c in range(6):
                    vectors.add_scaled(KL, t, KL, D + c, root[c])
                vectors.add(KL, k + r, KL, t)
            if corrected:
                for c in range(terms[ix(u), TERM_NV]):
                    vectors.add_scaled(KL, ED + r, KL, V + v0 + c, weights[ix(u), 1, ix(r), ix(c)])
                    vectors.add_scaled(KL, E + r, KL, QN + q0 + c, weights[ix(u), 1, ix(r), ix(c)])
    if corrected:
        _corrected(KL, k, E, ED, gains, j, m)
    for r in range(m):
        vectors.put(Kk, r0 + r, KL, k + r, KL, MASK)


@njit(cache=True, inline="always")
def _general_terms(KL, KK, Kk, K_const, k_const, pair, npair, r0, m, t, MASK):
    """A General constraint's constant ``K`` blocks into ``KK`` and ``k`` into ``Kk`` (the new lanes: ``MASK``)."""
    for q in range(npair):
        for r in range(6):
            for c in range(6):
                vectors.fill(KL, t, K_const[pair + q, r, c])
                vectors.put(KK, 36 * (pair + q) + 6 * r + c, KL, t, KL, MASK)
    for r in range(m):
        vectors.fill(KL, t, k_const[0, ix(r0 + r)])
        vectors.put(Kk, r0 + r, KL, t, KL, MASK)


@njit(cache=True, inline="always")
def _weld_drift(KL, v1, v2, KLr, D, k, t, m):
    """A Weld's drift ``K (v_1 x v_2)`` taken from its ``m`` rows of ``k``."""
    _cross_motion(KL, D, v1, v2)
    for r in range(m):
        vectors.dot6(KL, t, KL, KLr + 6 * r, 1, KL, D, 1)
        vectors.sub(KL, k + r, KL, t)


@njit(cache=True, inline="always")
def _weld_velocity_error(KL, v1, v2, KLr, ED, t, m):
    """A Weld's velocity error ``e_dot = K (v_1 - v_2)`` into its ``m`` rows at ``ED``."""
    for r in range(m):
        vectors.dot6(KL, ED + r, KL, KLr + 6 * r, 1, KL, v1, 1)
        vectors.dot6(KL, t, KL, KLr + 6 * r, 1, KL, v2, 1)
        vectors.sub(KL, ED + r, KL, t)


@njit(cache=True, inline="always")
def _connect_side(KL, axes, j, m, side, sign, pt, vl, R1, p1, p2, KLr, D, k, t, E, ED, corrected):
    """One side of a Connect (``sign`` +1 the first link, -1 the second, its point ``pt`` and velocity ``vl``):
    its rows ``K = sign R1' [-p x, I]`` at ``KLr``, its drift ``sign R1' (w x J v)`` taken from ``k``; where
    ``corrected``, ``sign R1' J v`` added to ``e_dot`` and at the second side ``e = R1' (p1 - p2)``."""
    for i in range(3):  # Jv = v + w x point, in D + 3 ..
        i1, i2 = (i + 1) % 3, (i + 2) % 3
        vectors.mul_add(KL, D + 3 + i, KL, vl + 3 + i, KL, vl + i1, KL, pt + i2)
        vectors.sub_mul(KL, D + 3 + i, KL, vl + i2, KL, pt + i1)
    for i in range(3):  # d = w x Jv, in D ..
        i1, i2 = (i + 1) % 3, (i + 2) % 3
        _cross(KL, D + i, vl + i1, D + 3 + i2, vl + i2, D + 3 + i1)
    for r in range(m):
        e = R1 + axes[ix(j), ix(r)]  # row ax of R1': R1's column, rows three apart
        Kr = KLr + 6 * r
        for i in range(3):
            i1, i2 = (i + 1) % 3, (i + 2) % 3
            _cross(KL, t, e + 3 * i1, pt + i2, e + 3 * i2, pt + i1)
            vectors.scaled(KL, Kr + i, -sign, KL, t)
            vectors.scaled(KL, Kr + 3 + i, sign, KL, e + 3 * i)
        vectors.mul(KL, t, KL, e, KL, D)
        vectors.add_mul(KL, t, KL, e + 3, KL, D + 1)
        vectors.add_mul(KL, t, KL, e + 6, KL, D + 2)
        vectors.scaled(KL, t, sign, KL, t)
        vectors.sub(KL, k + r, KL, t)
        if corrected:
            vectors.mul(KL, t, KL, e, KL, D + 3)
            vectors.add_mul(KL, t, KL, e + 3, KL, D + 4)
            vectors.add_mul(KL, t, KL, e + 6, KL, D + 5)
            vectors.add_scaled(KL, ED + r, KL, t, sign)
            if side == 1:
                vectors.fill(KL, E + r, 0.0)
                for i in range(3):
                    vectors.copy(KL, t, KL, p1 + i)
                    vectors.sub(KL, t, KL, p2 + i)
                    vectors.add_mul(KL, E + r, KL, e + 3 * i, KL, t)


@njit(cache=True, **UNCOUNTED)  # (compiled once and called: each caller's compile is shorter)
def _constraint_terms(constraints, general, root, ground, KL, parts, KK, Kk):
    """:func:`mechanics.kinematics.constraint_terms` of every constraint (couplings: :func:`_coupling_terms`), in
    the lanes that take a new state
    (``KL``'s mask), from their poses and velocities in ``KL`` (:func:`_kinematic_parts`): ``K`` per pair into
    ``KK``, ``k`` (ground terms folded in, and the Baumgarte target where a constraint's gains are not zero)
    into ``Kk`` (:func:`_constraint_parts`); the other lanes' rows keep their values.  87 of ``KL``'s scratch
    rows: the frames, ``K``'s rows, the drift, ``k``, the position and velocity errors."""
    table, axes = constraints[0], constraints[1]
    place_R, place_p, K_const, k_const, gains = general
    R, P, VEL, T, MASK = parts[0], parts[1], parts[2], parts[9], parts[10]
    R1, p1, R2, p2, KLr, D, k, t = T, T + 9, T + 12, T + 21, T + 24, T + 60, T + 66, T + 72
    E, ED = T + 75, T + 81
    for j in range(table.shape[0]):
        kind, m, r0, pair = table[ix(j), CKIND], table[ix(j), CDIM], table[ix(j), ROW0], table[ix(j), PAIR0]
        corrected = gains[ix(j), 0] != 0.0 or gains[ix(j), 1] != 0.0
        if kind == COUPLING:
            _coupling_terms(constraints, general, root, KL, parts, KK, Kk, j, m, r0, pair, table[ix(j), NPAIR],
                            corrected)
            continue
        if kind == GENERAL:
            _general_terms(KL, KK, Kk, K_const, k_const, pair, table[ix(j), NPAIR], r0, m, t, MASK)
            continue
        a, b = table[ix(j), L1], table[ix(j), L2]
        _compose(KL, R + 9 * a, P + 3 * a, place_R[ix(j), 0], place_p[ix(j), 0], R1, p1)
        for r in range(m):
            vectors.fill(KL, k + r, 0.0)
            if corrected:
                vectors.fill(KL, ED + r, 0.0)
        for side in range(2):
            link, sign = (a, 1.0) if side == 0 else (b, -1.0)
            if kind == WELD:
                for r in range(m):
                    _weld_row(KL, KLr + 6 * r, (axes[ix(j), ix(r)] + 3) % 6, sign, R1, p1, t)
                if side == 0:  # the drift: v_1 x v_2
                    _weld_drift(KL, VEL + 6 * a, VEL + 6 * b, KLr, D, k, t, m)
                    if corrected:  # e_dot = C (v_1 - v_2), e = -log6(c1Mc2)
                        _weld_velocity_error(KL, VEL + 6 * a, VEL + 6 * b, KLr, ED, t, m)
                        _compose(KL, R + 9 * b, P + 3 * b, place_R[ix(j), 1], place_p[ix(j), 1], R2, p2)
                        _weld_error(KL, R1, p1, R2, p2, E, axes, j, m)
            else:  # Connect: K = sign R1' [-p x, I], drift sign * w x (J v)
                if side == 1:
                    _compose(KL, R + 9 * b, P + 3 * b, place_R[ix(j), 1], place_p[ix(j), 1], R2, p2)
                _connect_side(KL, axes, j, m, side, sign, (p1 if side == 0 else p2), VEL + 6 * link, R1, p1, p2,
                              KLr, D, k, t, E, ED, corrected)
            if link == ground:  # the ground's known acceleration to the right-hand side
                for r in range(m):
                    vectors.fill(KL, t, 0.0)
                    for c in range(6):
                        vectors.add_scaled(KL, t, KL, KLr + 6 * r + c, root[c])
                    vectors.sub(KL, k + r, KL, t)
            else:
                for r in range(m):
                    for c in range(6):
                        vectors.put(KK, 36 * pair + 6 * r + c, KL, KLr + 6 * r + c, KL, MASK)
                pair += 1
        if corrected:
            _corrected(KL, k, E, ED, gains, j, m)
        for r in range(m):
            vectors.put(Kk, r0 + r, KL, k + r, KL, MASK)


@njit(cache=True, **UNCOUNTED)  # (compiled once and called: each caller's compile is shorter)
def _constraint_residual(constraints, KK, Kk, links, X, RES):
    """``K a - k`` of every constraint row at the solution ``X`` into ``RES`` (``KK``, ``Kk``: each lane's
    ``Kbuf`` and ``k``, :func:`_constraint_parts`)."""
    table, pairs = constraints[0], constraints[2]
    for j in range(table.shape[0]):
        m, r0, pair0 = table[ix(j), CDIM], table[ix(j), ROW0], table[ix(j), PAIR0]
        for r in range(m):
            vectors.scaled(RES, r0 + r, -1.0, Kk, r0 + r)
            for q in range(table[ix(j), NPAIR]):
                acc = links[ix(pairs[pair0 + q, 1]), ACC]
                vectors.add_dot6(RES, r0 + r, KK, 36 * (pair0 + q) + 6 * r, 1, X, acc, 1)


# -- a loop cluster's map qdd_c = G y + g - P a_p ------------------------------------------------------------

@njit(cache=True, **COUNTED)  # (its blocks allocated: it counts references and returns a bool)
def _loop_maps(model, constraints, KL, parts, KK, Kk, maps):
    """:func:`mechanics.couplings.state_maps` of the loop clusters (``constraints[7]``, ``[8]``:
    :func:`~mechanics.compiled_tables._loop_tables`) at one state: each cluster's rows ``A qdd_c + K_p a_p = c``
    (:func:`mechanics.couplings._relative_rows`) from its constraints' ``K`` and ``k`` in ``KK``, ``Kk`` and its
    links' ``S`` and bias in ``KL``; on the orthonormal basis ``U_r`` of their ``rank`` leading left singular
    vectors, ``B = U_r' A`` split by the cluster's columns into ``[B_d, B_i]``, and ``G = [-B_d^-1 B_i; I]``,
    ``g = [B_d^-1 U_r' c; 0]``, ``P = [B_d^-1 U_r' K_p; 0]`` (``g - P a_0`` on the ground) into each joint's
    place in ``maps`` (``GMAP``).  False at a singular configuration of a cluster (the rows lose rank, or
    ``B_d`` does: :data:`mechanics.couplings.SINGULAR_RTOL`), or where an SVD did not converge: the numpy path
    then answers, and names the cluster."""
    links, root = model[0], model[6]
    table, pairs, loops, items = constraints[0], constraints[2], constraints[7], constraints[8]
    S, BIAS, ground = parts[3], parts[4], links.shape[0]
    column = np.full(ground + 1, -1, dtype=np.int64)  # a cluster link's first velocity column in the cluster
    for c in range(loops.shape[0]):
        top, nc, ny, r, m = (loops[ix(c), LOOP_PARENT], loops[ix(c), LOOP_NC], loops[ix(c), LOOP_NY],
                             loops[ix(c), LOOP_RANK], loops[ix(c), LOOP_M])
        j0, c0, d0 = loops[ix(c), LOOP_J0], loops[ix(c), LOOP_C0], loops[ix(c), LOOP_D0]
        at = 0
        for i in range(loops[ix(c), LOOP_NJ]):
            l = items[ix(j0 + i)]
            column[ix(l)] = at
            at += links[ix(l), NV]
        A, k, Kp = np.zeros((m, nc)), np.zeros(m), np.zeros((m, 6))
        row = 0
        for i in range(loops[ix(c), LOOP_NCON]):
            j = items[ix(c0 + i)]
            dim, r0 = table[ix(j), CDIM], table[ix(j), ROW0]
            for a in range(dim):
                k[ix(row + a)] = Kk[ix(r0 + a)]
            for p in range(table[ix(j), PAIR0], table[ix(j), PAIR0] + table[ix(j), NPAIR]):
                K = 36 * p
                for a in range(dim):
                    for b in range(6):
                        Kp[ix(row + a), ix(b)] += KK[ix(K + 6 * a + b)]
                l = pairs[ix(p), 1]
                while l != top:  # (the link's path up to the cluster's parent: a_l = a_p + sum S_j qdd_j + b_j)
                    for a in range(dim):
                        for q in range(links[ix(l), NV]):
                            t = 0.0
                            for b in range(6):
                                t += KK[ix(K + 6 * a + b)] * KL[ix(S + 36 * l + 6 * b + q)]
                            A[ix(row + a), ix(column[ix(l)] + q)] += t
                        t = 0.0
                        for b in range(6):
                            t += KK[ix(K + 6 * a + b)] * KL[ix(BIAS + 6 * l + b)]
                        k[ix(row + a)] -= t
                    l = links[ix(l), PARENT]
            row += dim
        X = np.zeros((r, ny + 7))
        if r and not _explicit_map(A, k, Kp, items[d0:d0 + nc], m, nc, r, ny, X):
            return False
        for i in range(loops[ix(c), LOOP_NJ]):  # (G = [-X_y; I], g = [X_c; 0], P = [X_p; 0] by joint)
            l = items[ix(j0 + i)]
            nv, at = links[ix(l), NV], links[ix(l), GMAP]
            for e in range(nv * ny + 7 * nv):
                maps[ix(at + e)] = 0.0
            for s in range(nc):
                col = items[ix(d0 + s)]
                q = col - column[ix(l)]
                if q < 0 or q >= nv:
                    continue
                if s >= r:
                    maps[ix(at + q * ny + s - r)] = 1.0
                    continue
                for b in range(ny):
                    maps[ix(at + q * ny + b)] = -X[ix(s), ix(b)]
                g = X[ix(s), ny]
                for b in range(6):
                    maps[ix(at + nv * ny + nv + 6 * q + b)] = X[ix(s), ix(ny + 1 + b)]
                    if top == ground:
                        g -= X[ix(s), ix(ny + 1 + b)] * root[ix(b)]
                maps[ix(at + nv * ny + q)] = g
    return True


@njit(cache=True, inline="always")
def _explicit_map(A, k, Kp, columns, m, nc, r, ny, X):
    """``X = B_d^-1 U_r' [A_i, c, K_p]`` (``(r, ny + 7)``) of a loop cluster's rows (:func:`_loop_maps`;
    ``columns``: its dependent columns, then the independent): :func:`mechanics.couplings._explicit_map`'s
    arithmetic, by :func:`elimination.jacobi.svd_rows`.  False where :func:`_loop_maps` says."""
    p, q = max(m, nc), min(m, nc)
    Bt, Rt, Ut, Vt = np.zeros((q, p)), np.zeros((q, q)), np.zeros((p, p)), np.zeros((q, q))
    s, tau, nzv = np.zeros(q), np.zeros(q), np.zeros((q, p + 1), dtype=np.int64)
    if not _svd(A, m, nc, Bt, Rt, Ut, Vt, s, tau, nzv):
        return False
    left = Ut if m >= nc else Vt  # (A's left singular vectors as rows: U's of A, or V's of A')
    if s[ix(r - 1)] <= SINGULAR_RTOL * s[0]:
        return False
    right = np.zeros((r, ny + 7))  # U_r' [A_i, c, K_p]
    Bd = np.zeros((r, r))  # U_r' A_d
    for a in range(r):
        for i in range(m):
            u = left[ix(a), ix(i)]
            for b in range(r):
                Bd[ix(a), ix(b)] += u * A[ix(i), ix(columns[ix(b)])]
            for b in range(ny):
                right[ix(a), ix(b)] += u * A[ix(i), ix(columns[ix(r + b)])]
            right[ix(a), ix(ny)] += u * k[ix(i)]
            for b in range(6):
                right[ix(a), ix(ny + 1 + b)] += u * Kp[ix(i), ix(b)]
    Bt, Rt, Ut, Vt = np.zeros((r, r)), np.zeros((r, r)), np.zeros((r, r)), np.zeros((r, r))
    sd, tau, nzv = np.zeros(r), np.zeros(r), np.zeros((r, r + 1), dtype=np.int64)
    if not _svd(Bd, r, r, Bt, Rt, Ut, Vt, sd, tau, nzv):
        return False
    if sd[ix(r - 1)] <= SINGULAR_RTOL * s[0]:
        return False
    for a in range(r):  # B_d^-1 = V diag(1 / sd) U'
        for e in range(ny + 7):
            t = 0.0
            for i in range(r):
                t += Ut[ix(a), ix(i)] * right[ix(i), ix(e)]
            t = t / sd[ix(a)]
            for i in range(r):
                X[ix(i), ix(e)] += Vt[ix(a), ix(i)] * t
    return True


@njit(cache=True, **UNCOUNTED)  # (called, not inlined: :func:`_explicit_map`'s two SVDs compile once)
def _svd(A, m, n, Bt, Rt, Ut, Vt, s, tau, nzv):
    """:func:`elimination.jacobi.svd_rows` of ``A[:m, :n]``, loaded by :func:`elimination.jacobi.load_tall`."""
    jacobi.load_tall(A, m, n, Bt)
    return jacobi.svd_rows(Bt, np.int64(max(m, n)), np.int64(min(m, n)), Rt, Ut, Vt, s, tau, nzv)  # (the front's types)
