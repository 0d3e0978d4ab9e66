"""The model evaluation of the compiled dynamics: the kinematics pass and the constraint terms ``K a = k``
(:mod:`mechanics.kinematics`' arithmetic), for one state and for sixteen states side by side in lanes (the
per-state operations as vector operations, in their order: bit for bit the same numbers).
"""
from __future__ import annotations

import numpy as np
from numba import njit

import elimination.vectors as vectors
from elimination.compiled_front import UNCOUNTED, ix
from elimination.compiled_pairs import cached6, dot6
from elimination.lanes import LANES

from .compiled_tables import drop_stale_kernels, ACC, CDIM, CKIND, GENERAL, JOINT, L1, L2, NPAIR, NV, PAIR0, PARENT, Q0, ROW0, V0, WELD

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
def _joint_pose(kind, a0, a1, a2, q, q0):
    """:func:`mechanics.joints.jcalc` for one joint, ``(a0, a1, a2)`` its axis and ``q[q0:]`` its
    configuration: ``(R, p)`` of the child frame as a row-major 9-tuple and a 3-tuple (scalars: no
    arrays to count references of in the per-link loop)."""
    R, p = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0)
    if kind == 1:
        R = _rotation_about(a0, a1, a2, q[ix(q0)])
    elif kind == 2:
        R = _rotation_about(a0, a1, a2, np.arctan2(q[ix(q0 + 1)], q[ix(q0)]))
    elif kind == 3:
        p = (q[ix(q0)] * a0, q[ix(q0)] * a1, q[ix(q0)] * a2)
    elif kind == 4:
        R = _quaternion_matrix(q[ix(q0)], q[ix(q0 + 1)], q[ix(q0 + 2)], q[ix(q0 + 3)])
    elif kind == 5:
        R = _rotation_about(0.0, 0.0, 1.0, np.arctan2(q[ix(q0 + 3)], q[ix(q0 + 2)]))
        p = (q[ix(q0)], q[ix(q0 + 1)], 0.0)
    elif kind == 6:
        R = _quaternion_matrix(q[ix(q0 + 3)], q[ix(q0 + 4)], q[ix(q0 + 5)], q[ix(q0 + 6)])
        p = (q[ix(q0)], q[ix(q0 + 1)], q[ix(q0 + 2)])
    return R, p


@njit(cache=True, inline="always")
def _link_pose(R, p, l, parent, place_R, place_p, Rj, pj):
    """``(R, p)[l] = (R, p)[parent] (place_R, place_p)[l] (Rj, pj)``: the link's world pose from its
    parent's, its joint's placement and the joint's pose (9-tuple, 3-tuple) (:func:`mechanics.spatial.compose`)."""
    Rp, pp, Rl, pl = R[ix(parent)], p[ix(parent)], R[ix(l)], p[ix(l)]  # (row views: free, uncounted)
    Pr, Pp = place_R[ix(l)], place_p[ix(l)]
    for i in range(3):
        t = pp[i]
        for k in range(3):
            t += Rp[i, k] * Pp[k]
        pl[i] = t
        for j in range(3):
            Rl[i, j] = Rp[i, 0] * Pr[0, j] + Rp[i, 1] * Pr[1, j] + Rp[i, 2] * Pr[2, j]
    for i in range(3):  # then the joint's: p += R pj, R = R Rj, a row at a time in place
        r0, r1, r2 = Rl[i, 0], Rl[i, 1], Rl[i, 2]
        pl[i] += r0 * pj[0] + r1 * pj[1] + r2 * pj[2]
        for j in range(3):
            Rl[i, j] = r0 * Rj[j] + r1 * Rj[3 + j] + r2 * Rj[6 + j]


@njit(cache=True, **UNCOUNTED)
def _compose(R1, p1, R2, p2, R, p):
    """``(R, p) = (R1 R2, p1 + R1 p2)`` (:func:`mechanics.spatial.compose`)."""
    for i in range(3):
        p[i] = p1[i] + R1[i, 0] * p2[0] + R1[i, 1] * p2[1] + R1[i, 2] * p2[2]
        for j in range(3):
            R[i, j] = R1[i, 0] * R2[0, j] + R1[i, 1] * R2[1, j] + R1[i, 2] * R2[2, j]


@njit(cache=True, **UNCOUNTED)
def _inverse_transform(R, p, X):
    """:func:`mechanics.spatial.inverse_motion_transform`: ``[[R', 0], [-R' [p]x, R']]``."""
    for i in range(6):
        for j in range(6):
            X[i, j] = 0.0
    for i in range(3):
        for j in range(3):
            X[i, j] = X[3 + i, 3 + j] = R[j, i]
    for i in range(3):  # -R' [p]x: row i is -(R[:, i] x ...) applied to the unit vectors: -(R' skew(p))
        a0, a1, a2 = R[0, i], R[1, i], R[2, i]
        X[3 + i, 0] = -(a1 * p[2] - a2 * p[1])
        X[3 + i, 1] = -(a2 * p[0] - a0 * p[2])
        X[3 + i, 2] = -(a0 * p[1] - a1 * p[0])


@njit(cache=True, inline="always")
def _cross_motion(m, x):
    """``m x x`` (:func:`mechanics.spatial.crm`) of motion 6-tuples ``[omega; v]``, as a 6-tuple."""
    w0, w1, w2, v0, v1, v2 = m
    return (w1 * x[2] - w2 * x[1], w2 * x[0] - w0 * x[2], w0 * x[1] - w1 * x[0],
            v1 * x[2] - v2 * x[1] + w1 * x[5] - w2 * x[4], v2 * x[0] - v0 * x[2] + w2 * x[3] - w0 * x[5],
            v0 * x[1] - v1 * x[0] + w0 * x[4] - w1 * x[3])


@njit(cache=True, inline="always")
def _row6(a, i):
    return cached6(a[ix(i)], 0)


@njit(cache=True, inline="always")
def _world_inertia(body, R, p, l, out):
    """The spatial inertia of link ``l`` with pose ``(R, p)[l]`` at the world origin (``X' I X`` of
    :func:`mechanics.spatial.inertia_to_parent`), from ``body = (mass, com (3), inertia about the com
    (3x3, row-major))`` in the link frame: Featherstone's ``[[I_c + m [c]x [c]x', m [c]x], [m [c]x', m 1]]``
    with the com ``c = p + R com`` and ``I_c = R I_com R'`` in world coordinates (a quarter of the flops)."""
    Rl, pl, b, I = R[ix(l)], p[ix(l)], body[ix(l)], out[ix(l)]  # (row views: free in the uncounted kinematics)
    m = b[0]
    c0 = pl[0] + Rl[0, 0] * b[1] + Rl[0, 1] * b[2] + Rl[0, 2] * b[3]
    c1 = pl[1] + Rl[1, 0] * b[1] + Rl[1, 1] * b[2] + Rl[1, 2] * b[3]
    c2 = pl[2] + Rl[2, 0] * b[1] + Rl[2, 1] * b[2] + Rl[2, 2] * b[3]
    for i in range(3):  # R I_com R', a row of R I_com at a time (held in registers)
        r0 = Rl[i, 0] * b[4] + Rl[i, 1] * b[7] + Rl[i, 2] * b[10]
        r1 = Rl[i, 0] * b[5] + Rl[i, 1] * b[8] + Rl[i, 2] * b[11]
        r2 = Rl[i, 0] * b[6] + Rl[i, 1] * b[9] + Rl[i, 2] * b[12]
        for j in range(3):
            I[i, j] = r0 * Rl[j, 0] + r1 * Rl[j, 1] + r2 * Rl[j, 2]
    for i in range(3):
        for j in range(3):
            I[3 + i, 3 + j] = m if i == j else 0.0
    # m [c]x [c]x' = m (|c|^2 I - c c')
    cc = c0 * c0 + c1 * c1 + c2 * c2
    c = (c0, c1, c2)
    for i in range(3):
        for j in range(3):
            I[i, j] += m * ((cc if i == j else 0.0) - c[i] * c[j])
    I[0, 3], I[0, 4], I[0, 5] = 0.0, -m * c2, m * c1  # m [c]x
    I[1, 3], I[1, 4], I[1, 5] = m * c2, 0.0, -m * c0
    I[2, 3], I[2, 4], I[2, 5] = -m * c1, m * c0, 0.0
    for i in range(3):
        for j in range(3):
            I[3 + i, j] = I[j, 3 + i]  # m [c]x'


@njit(cache=True, **UNCOUNTED)
def _kinematics(model, q, v, R, p, S, vel, bias, Iw, fb, jv):
    """:func:`mechanics.kinematics.kinematics` for one state; the ground is the last row of ``R, p, vel``
    (``jv``: scratch of 6)."""
    links, axis, place_R, place_p, body, S_local, root = model
    n = links.shape[0]
    for i in range(3):
        p[ix(n), ix(i)] = 0.0
        for j in range(3):
            R[ix(n), ix(i), ix(j)] = 1.0 if i == j else 0.0
    vel[n, :] = 0.0
    for l in range(n):  # (row views cost nothing here, uncounted: see elimination.compiled_pairs._revolute_pair)
        parent, q0, v0, nv = links[ix(l), PARENT], links[ix(l), Q0], links[ix(l), V0], links[ix(l), NV]
        Rj, pj = _joint_pose(links[ix(l), JOINT], axis[ix(l), 0], axis[ix(l), 1], axis[ix(l), 2], q, q0)
        _link_pose(R, p, l, parent, place_R, place_p, Rj, pj)
        Rl, pl, Sl, S0 = R[ix(l)], p[ix(l)], S[ix(l)], S_local[ix(l)]  # (row views: free, uncounted)
        for c in range(nv):  # S = [[R, 0], [p x R, R]] S_local
            for i in range(3):
                w, u = 0.0, 0.0
                for k in range(3):
                    w += Rl[i, k] * S0[k, ix(c)]
                    u += Rl[i, k] * S0[3 + k, ix(c)]
                Sl[i, ix(c)], Sl[3 + i, ix(c)] = w, u
            for i in range(3):
                i1, i2 = (i + 1) % 3, (i + 2) % 3
                Sl[3 + i, ix(c)] += pl[i1] * Sl[i2, ix(c)] - pl[i2] * Sl[i1, ix(c)]
        for i in range(6):
            t = 0.0
            for c in range(nv):
                t += S[ix(l), ix(i), ix(c)] * v[ix(v0 + c)]
            jv[ix(i)] = t
            vel[ix(l), ix(i)] = vel[ix(parent), ix(i)] + t
        bias_l = _cross_motion(_row6(vel, l), (jv[0], jv[1], jv[2], jv[3], jv[4], jv[5]))
        for i in range(6):
            bias[ix(l), ix(i)] = bias_l[i]
        _world_inertia(body, R, p, l, Iw)
        vl = _row6(vel, l)
        w0, w1, w2, u0, u1, u2 = vl
        Il = Iw[ix(l)]  # momentum h = H v, a row at a time
        h0, h1, h2 = dot6(Il[0], 0, vl), dot6(Il[1], 0, vl), dot6(Il[2], 0, vl)
        h3, h4, h5 = dot6(Il[3], 0, vl), dot6(Il[4], 0, vl), dot6(Il[5], 0, vl)
        # f = -v x* h = crm(v)' h: [-(w x n) - (u x f); -(w x f)]
        fb[ix(l), 0] = -(w1 * h2 - w2 * h1) - (u1 * h5 - u2 * h4)
        fb[ix(l), 1] = -(w2 * h0 - w0 * h2) - (u2 * h3 - u0 * h5)
        fb[ix(l), 2] = -(w0 * h1 - w1 * h0) - (u0 * h4 - u1 * h3)
        fb[ix(l), 3] = -(w1 * h5 - w2 * h4)
        fb[ix(l), 4] = -(w2 * h3 - w0 * h5)
        fb[ix(l), 5] = -(w0 * h4 - w1 * h3)


@njit(cache=True, **UNCOUNTED)
def _constraint_terms(constraints, general, root, R, p, vel, Kbuf, k, scratch):
    """:func:`mechanics.kinematics.constraint_terms` of every constraint: ``K`` per pair into ``Kbuf`` (rows
    ``0..m``), ``k`` (ground terms folded in, as there) stacked in constraint order (``scratch``:
    ``TERMS_SCRATCH`` floats)."""
    table, axes = constraints[0], constraints[1]
    place_R, place_p, K_const, k_const = general
    ground = R.shape[0] - 1
    R1, p1, R2, p2 = scratch[:9].reshape((3, 3)), scratch[9:12], scratch[12:21].reshape((3, 3)), scratch[21:24]
    X, Kl = scratch[24:60].reshape((6, 6)), scratch[60:96].reshape((6, 6))
    for j in range(table.shape[0]):
        kind, m, r0, pair = table[ix(j), CKIND], table[ix(j), CDIM], table[ix(j), ROW0], table[ix(j), PAIR0]
        if kind == GENERAL:
            for q in range(table[ix(j), NPAIR]):
                for r in range(6):
                    for c in range(6):
                        Kbuf[ix(pair + q), ix(r), ix(c)] = K_const[pair + q, r, c]
            for r in range(m):
                k[ix(r0 + r)] = k_const[ix(r0 + r)]
            continue
        a, b = table[ix(j), L1], table[ix(j), L2]
        _compose(R[ix(a)], p[ix(a)], place_R[ix(j), 0], place_p[ix(j), 0], R1, p1)
        if kind == WELD:
            _inverse_transform(R1, p1, X)
        for r in range(m):
            k[ix(r0 + r)] = 0.0
        for side in range(2):
            link, sign = (a, 1.0) if side == 0 else (b, -1.0)
            if kind == WELD:  # C (a_1 - a_2) = -C (v_1 x v_2), C the rows of X^-1(R1, p1) in [linear; angular]
                for r in range(m):
                    row = (axes[ix(j), ix(r)] + 3) % 6  # kinematics.LINEAR_FIRST: [linear; angular] rows
                    for c in range(6):
                        Kl[ix(r), ix(c)] = sign * X[ix(row), ix(c)]
                if side == 0:
                    drift = _cross_motion(_row6(vel, a), _row6(vel, b))
                    for r in range(m):
                        t = 0.0
                        for c in range(6):
                            t += Kl[ix(r), ix(c)] * drift[c]
                        k[ix(r0 + r)] -= t
            else:  # Connect: K = sign R1' [-p x, I], drift sign * w x (J v)
                if side == 1:
                    _compose(R[ix(b)], p[ix(b)], place_R[ix(j), 1], place_p[ix(j), 1], R2, p2)
                point = p1 if side == 0 else p2
                vl = vel[ix(link)]
                Jv0 = vl[3] + vl[1] * point[2] - vl[2] * point[1]
                Jv1 = vl[4] + vl[2] * point[0] - vl[0] * point[2]
                Jv2 = vl[5] + vl[0] * point[1] - vl[1] * point[0]
                d0 = vl[1] * Jv2 - vl[2] * Jv1
                d1 = vl[2] * Jv0 - vl[0] * Jv2
                d2 = vl[0] * Jv1 - vl[1] * Jv0
                for r in range(m):
                    ax = axes[ix(j), ix(r)]
                    e0, e1, e2 = R1[0, ix(ax)], R1[1, ix(ax)], R1[2, ix(ax)]  # row ax of R1'
                    Kl[ix(r), 0] = -sign * (e1 * point[2] - e2 * point[1])  # e' (-[p]x) = -(e x p)'
                    Kl[ix(r), 1] = -sign * (e2 * point[0] - e0 * point[2])
                    Kl[ix(r), 2] = -sign * (e0 * point[1] - e1 * point[0])
                    Kl[ix(r), 3], Kl[ix(r), 4], Kl[ix(r), 5] = sign * e0, sign * e1, sign * e2
                    k[ix(r0 + r)] -= sign * (e0 * d0 + e1 * d1 + e2 * d2)
            if link == ground:  # the ground's known acceleration to the right-hand side
                for r in range(m):
                    t = 0.0
                    for c in range(6):
                        t += Kl[ix(r), ix(c)] * root[c]
                    k[ix(r0 + r)] -= t
            else:
                for r in range(m):
                    for c in range(6):
                        Kbuf[ix(pair), ix(r), ix(c)] = Kl[ix(r), ix(c)]
                pair += 1


# -- kinematics and fill in lanes ---------------------------------------------------------------------------------
# lanes_kernel's LANES states side by side: row k of KL (rows, LANES) holds one entry of each lane's kinematics,
# in the parts of _lane_kinematic_parts.  Each operation below is the scalar kinematics' (_kinematics, _fill_links)
# on the lanes, in its order (elimination.vectors: no fused multiply-add), so every lane gets the per-state
# kernel's bits; the joint's pose (sines, cosines) is computed lane by lane.
LANE_TEMPS = 75  # KL's scratch rows (_lane_constraint_terms' 75)


def lane_kinematic_rows(n: int, nq: int, nv: int) -> int:
    """Rows of ``KL`` for ``n`` links, ``nq`` and ``nv`` entries of a state (:func:`_lane_kinematic_parts`)."""
    return int(_lane_kinematic_parts(n, nq, nv)[-1]) + 1


@njit(cache=True, inline="always")
def _lane_kinematic_parts(n, nq, nv):
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
    return 0, p, vel, S, bias, Iw, fb, qn, v, t, t + LANE_TEMPS, t + LANE_TEMPS + 1


@njit(cache=True, inline="always")
def _lane_joint_poses(links, axis, KL, l, q0, qn, RJ):
    """Link ``l``'s joint pose (:func:`_joint_pose`) in each lane, into rows ``RJ`` (9) and ``RJ + 9`` (3)."""
    kind, a0, a1, a2 = links[ix(l), JOINT], axis[ix(l), 0], axis[ix(l), 1], axis[ix(l), 2]
    for w in range(LANES):
        Rj, pj = _joint_pose(kind, a0, a1, a2, KL[qn:, w], q0)
        for k in range(9):
            KL[ix(RJ + k), w] = Rj[k]
        for k in range(3):
            KL[ix(RJ + 9 + k), w] = pj[k]


@njit(cache=True, inline="always")
def _lane_compose(KL, R1, p1, R2, p2, R, p):
    """:func:`_compose` of lane rows ``R1`` (9, row-major), ``p1`` (3) with a constant ``R2 (3, 3)``, ``p2 (3,)``
    into rows ``R``, ``p``: its operations, in its order."""
    for i in range(3):
        vectors.copy(KL, p + i, KL, p1 + i)
        for k in range(3):
            vectors.add_scaled(KL, p + i, KL, R1 + 3 * i + k, p2[k])
        for j in range(3):
            vectors.scaled(KL, R + 3 * i + j, R2[0, j], KL, R1 + 3 * i)
            vectors.add_scaled(KL, R + 3 * i + j, KL, R1 + 3 * i + 1, R2[1, j])
            vectors.add_scaled(KL, R + 3 * i + j, KL, R1 + 3 * i + 2, R2[2, j])


@njit(cache=True, inline="always")
def _lane_link_pose(KL, R, P, l, parent, Pr, Pp, RJ, T):
    """:func:`_link_pose` on the lanes (``T``: three scratch rows)."""
    Rl, pl = R + 9 * l, P + 3 * l
    _lane_compose(KL, R + 9 * parent, P + 3 * parent, Pr, Pp, Rl, pl)  # the parent's pose and the placement
    for i in range(3):  # then the joint's: p += R pj, R = R Rj
        for k in range(3):
            vectors.copy(KL, T + k, KL, Rl + 3 * i + k)
        vectors.mul(KL, T + 3, KL, T, KL, RJ + 9)
        vectors.add_mul(KL, T + 3, KL, T + 1, KL, RJ + 10)
        vectors.add_mul(KL, T + 3, KL, T + 2, KL, RJ + 11)
        vectors.add(KL, pl + i, KL, T + 3)
        for j in range(3):
            vectors.mul(KL, Rl + 3 * i + j, KL, T, KL, RJ + j)
            vectors.add_mul(KL, Rl + 3 * i + j, KL, T + 1, KL, RJ + 3 + j)
            vectors.add_mul(KL, Rl + 3 * i + j, KL, T + 2, KL, RJ + 6 + j)


@njit(cache=True, inline="always")
def _lane_cross_motion(KL, D, M, X):
    """Rows ``D..D+5`` = ``m x x`` (:func:`_cross_motion`) of the rows ``M``, ``X`` (motion ``[omega; v]``)."""
    for i in range(3):
        i1, i2 = (i + 1) % 3, (i + 2) % 3
        vectors.mul(KL, D + i, KL, M + i1, KL, X + i2)  # w_i1 x_i2 - w_i2 x_i1
        vectors.sub_mul(KL, D + i, KL, M + i2, KL, X + i1)
        vectors.mul(KL, D + 3 + i, KL, M + 3 + i1, KL, X + i2)  # v_i1 x_i2 - v_i2 x_i1 + w_i1 x_i2+3 - w_i2 x_i1+3
        vectors.sub_mul(KL, D + 3 + i, KL, M + 3 + i2, KL, X + i1)
        vectors.add_mul(KL, D + 3 + i, KL, M + i1, KL, X + 3 + i2)
        vectors.sub_mul(KL, D + 3 + i, KL, M + i2, KL, X + 3 + i1)


@njit(cache=True, inline="always")
def _lane_world_inertia(KL, R, P, IW, l, b, T):
    """:func:`_world_inertia` on the lanes (``b``: the link's body row; ``T``: seven scratch rows)."""
    Rl, pl, I, c = R + 9 * l, P + 3 * l, IW + 36 * l, T + 3
    m = b[0]
    for i in range(3):  # the com c = p + R com
        vectors.copy(KL, c + i, KL, pl + i)
        for k in range(3):
            vectors.add_scaled(KL, c + i, KL, Rl + 3 * i + k, b[1 + k])
    for i in range(3):  # R I_com R'
        for k in range(3):
            vectors.scaled(KL, T + k, b[4 + k], KL, Rl + 3 * i)
            vectors.add_scaled(KL, T + k, KL, Rl + 3 * i + 1, b[7 + k])
            vectors.add_scaled(KL, T + k, KL, Rl + 3 * i + 2, b[10 + k])
        for j in range(3):
            vectors.mul(KL, I + 6 * i + j, KL, T, KL, Rl + 3 * j)
            vectors.add_mul(KL, I + 6 * i + j, KL, T + 1, KL, Rl + 3 * j + 1)
            vectors.add_mul(KL, I + 6 * i + j, KL, T + 2, KL, Rl + 3 * j + 2)
    for i in range(3):
        for j in range(3):
            vectors.fill(KL, I + 6 * (3 + i) + 3 + j, m if i == j else 0.0)
    cc = T + 6
    vectors.mul(KL, cc, KL, c, KL, c)
    vectors.add_mul(KL, cc, KL, c + 1, KL, c + 1)
    vectors.add_mul(KL, cc, KL, c + 2, KL, c + 2)
    for i in range(3):  # m (|c|^2 I - c c')
        for j in range(3):
            if i == j:
                vectors.copy(KL, T, KL, cc)
            else:
                vectors.fill(KL, T, 0.0)
            vectors.sub_mul(KL, T, KL, c + i, KL, c + j)
            vectors.add_scaled(KL, I + 6 * i + j, KL, T, m)
    for i in range(3):  # m [c]x
        i1, i2 = (i + 1) % 3, (i + 2) % 3
        vectors.fill(KL, I + 6 * i + 3 + i, 0.0)
        vectors.scaled(KL, I + 6 * i + 3 + i1, -m, KL, c + i2)
        vectors.scaled(KL, I + 6 * i + 3 + i2, m, KL, c + i1)
    for i in range(3):
        for j in range(3):
            vectors.copy(KL, I + 6 * (3 + i) + j, KL, I + 6 * j + 3 + i)  # m [c]x'


@njit(cache=True, **UNCOUNTED)
def _lane_kinematics(model, KL, parts):
    """:func:`_kinematics` of every lane's state (its ``q`` and ``v`` in ``KL``'s rows, :func:`_lane_kinematic_parts`)."""
    links, axis, place_R, place_p, body, S_local, root = model
    n = links.shape[0]
    R, P, VEL, S, BIAS, IW, FB, QN, V, T = parts[:10]
    RJ, JV, H, TT = T, T + 12, T + 18, T + 24  # joint pose (12), joint velocity, momentum, temporaries (8)
    for i in range(3):
        vectors.fill(KL, P + 3 * n + i, 0.0)
        for j in range(3):
            vectors.fill(KL, R + 9 * n + 3 * i + j, 1.0 if i == j else 0.0)
    for i in range(6):
        vectors.fill(KL, VEL + 6 * n + i, 0.0)
    for l in range(n):
        parent, q0, v0, nv = links[ix(l), PARENT], links[ix(l), Q0], links[ix(l), V0], links[ix(l), NV]
        _lane_joint_poses(links, axis, KL, l, q0, QN, RJ)
        _lane_link_pose(KL, R, P, l, parent, place_R[ix(l)], place_p[ix(l)], RJ, TT)
        Rl, pl, Sl, S0 = R + 9 * l, P + 3 * l, S + 36 * l, S_local[ix(l)]
        for c in range(nv):  # S = [[R, 0], [p x R, R]] S_local
            for i in range(3):
                vectors.fill(KL, Sl + 6 * i + c, 0.0)
                vectors.fill(KL, Sl + 6 * (3 + i) + c, 0.0)
                for k in range(3):
                    vectors.add_scaled(KL, Sl + 6 * i + c, KL, Rl + 3 * i + k, S0[k, ix(c)])
                    vectors.add_scaled(KL, Sl + 6 * (3 + i) + c, KL, Rl + 3 * i + k, S0[3 + k, ix(c)])
            for i in range(3):
                i1, i2 = (i + 1) % 3, (i + 2) % 3
                vectors.mul(KL, TT, KL, pl + i1, KL, Sl + 6 * i2 + c)
                vectors.sub_mul(KL, TT, KL, pl + i2, KL, Sl + 6 * i1 + c)
                vectors.add(KL, Sl + 6 * (3 + i) + c, KL, TT)
        vl = VEL + 6 * l
        for i in range(6):
            vectors.fill(KL, JV + i, 0.0)
            for c in range(nv):
                vectors.add_mul(KL, JV + i, KL, Sl + 6 * i + c, KL, V + v0 + c)
            vectors.copy(KL, vl + i, KL, VEL + 6 * parent + i)
            vectors.add(KL, vl + i, KL, JV + i)
        _lane_cross_motion(KL, BIAS + 6 * l, vl, JV)
        _lane_world_inertia(KL, R, P, IW, l, body[ix(l)], TT)
        Il = IW + 36 * l
        for i in range(6):  # momentum h = H v
            vectors.dot6(KL, H + i, KL, Il + 6 * i, 1, KL, vl, 1)
        f = FB + 6 * l
        for i in range(3):  # f = [-(w x n) - (u x f); -(w x f)]
            i1, i2 = (i + 1) % 3, (i + 2) % 3
            vectors.mul(KL, f + i, KL, vl + i1, KL, H + i2)
            vectors.sub_mul(KL, f + i, KL, vl + i2, KL, H + i1)
            vectors.scaled(KL, f + i, -1.0, KL, f + i)
            vectors.mul(KL, TT, KL, vl + 3 + i1, KL, H + 3 + i2)
            vectors.sub_mul(KL, TT, KL, vl + 3 + i2, KL, H + 3 + i1)
            vectors.sub(KL, f + i, KL, TT)
            vectors.mul(KL, f + 3 + i, KL, vl + i1, KL, H + 3 + i2)
            vectors.sub_mul(KL, f + 3 + i, KL, vl + i2, KL, H + 3 + i1)
            vectors.scaled(KL, f + 3 + i, -1.0, KL, f + 3 + i)


PENALTY_ROWS = 6  # the most rows of one penalty factor (a weld's)


@njit(cache=True, inline="always")
def lane_constraint_rows(pairs, m):
    """Rows of ``LANES`` that :func:`_lane_constraint_parts` carves for ``pairs`` link pairs, ``m`` rows."""
    return 36 * pairs + 4 * m + 1 + 36 * pairs + PENALTY_ROWS + 3


@njit(cache=True, inline="always")
def _lane_constraint_parts(KC, pairs, m):
    """The constraints' rows in lanes, carved from ``KC``: each lane's ``Kbuf`` (row ``36 pair + 6 r + c`` its
    ``Kbuf[pair, r, c]``), its measurements, ``k``, ``lambda`` and residual ``K a - k`` (``m`` rows each), the
    mask of the lanes whose terms move (1), and the scratch of :func:`_lane_fill_constraints` and
    :func:`_lane_factor_residuals` (``36 pairs + PENALTY_ROWS + 3``)."""
    K = 36 * pairs
    return (KC[:K], KC[K:K + m], KC[K + m:K + 2 * m], KC[K + 2 * m:K + 3 * m], KC[K + 3 * m:K + 4 * m],
            K + 4 * m, KC[K + 4 * m + 1:])


@njit(cache=True, inline="always")
def _lane_cross(KL, D, A, a, B, b):
    """``KL[D] = KL[A] * KL[a] - KL[B] * KL[b]``: an entry of a cross product, as the scalar code writes it."""
    vectors.mul(KL, D, KL, A, KL, a)
    vectors.sub_mul(KL, D, KL, B, KL, b)


@njit(cache=True, inline="always")
def _lane_weld_row(KL, Kr, row, sign, R1, p1, t):
    """Row ``row`` of ``X^-1(R1, p1)`` (:func:`_inverse_transform`: ``[[R', 0], [-R' [p]x, R']]``) times
    ``sign`` into rows ``Kr..Kr+5`` (``t``: three scratch rows)."""
    if row < 3:  # [R', 0]
        for c in range(3):
            vectors.scaled(KL, Kr + c, sign, KL, R1 + 3 * c + row)
            vectors.fill(KL, Kr + 3 + c, 0.0)
            vectors.scaled(KL, Kr + 3 + c, sign, KL, Kr + 3 + c)  # (sign * 0.0: -0.0 on the second side)
        return
    i = row - 3  # [-R' [p]x, R']
    _lane_cross(KL, t, R1 + 3 + i, p1 + 2, R1 + 6 + i, p1 + 1)
    _lane_cross(KL, t + 1, R1 + 6 + i, p1, R1 + i, p1 + 2)
    _lane_cross(KL, t + 2, R1 + i, p1 + 1, R1 + 3 + i, p1)
    for c in range(3):
        vectors.scaled(KL, t + c, -1.0, KL, t + c)
        vectors.scaled(KL, Kr + c, sign, KL, t + c)
        vectors.scaled(KL, Kr + 3 + c, sign, KL, R1 + 3 * c + i)


@njit(cache=True, inline="always")
def _lane_constraint_terms(constraints, general, root, ground, KL, parts, KK, Kk):
    """:func:`_constraint_terms` of the lanes that take a new state (``KL``'s mask), from their poses and
    velocities in ``KL`` (:func:`_lane_kinematic_parts`), into their rows of ``KK``, ``Kk``
    (:func:`_lane_constraint_parts`); the other lanes' rows keep their values.  Its operations, in its order,
    lane by lane (75 of ``KL``'s scratch rows: the frames, ``K``'s rows, the drift, ``k``)."""
    table, axes = constraints[0], constraints[1]
    place_R, place_p, K_const, k_const = general
    R, P, VEL, T, MASK = parts[0], parts[1], parts[2], parts[9], parts[10]
    R1, p1, R2, p2, KLr, D, k, t = T, T + 9, T + 12, T + 21, T + 24, T + 60, T + 66, T + 72
    for j in range(table.shape[0]):
        kind, m, r0, pair = table[ix(j), CKIND], table[ix(j), CDIM], table[ix(j), ROW0], table[ix(j), PAIR0]
        if kind == GENERAL:
            for q in range(table[ix(j), NPAIR]):
                for r in range(6):
                    for c in range(6):
                        vectors.fill(KL, t, K_const[pair + q, r, c])
                        vectors.put(KK, 36 * (pair + q) + 6 * r + c, KL, t, KL, MASK)
            for r in range(m):
                vectors.fill(KL, t, k_const[ix(r0 + r)])
                vectors.put(Kk, r0 + r, KL, t, KL, MASK)
            continue
        a, b = table[ix(j), L1], table[ix(j), L2]
        _lane_compose(KL, R + 9 * a, P + 3 * a, place_R[ix(j), 0], place_p[ix(j), 0], R1, p1)
        for r in range(m):
            vectors.fill(KL, k + r, 0.0)
        for side in range(2):
            link, sign = (a, 1.0) if side == 0 else (b, -1.0)
            if kind == WELD:
                for r in range(m):
                    _lane_weld_row(KL, KLr + 6 * r, (axes[ix(j), ix(r)] + 3) % 6, sign, R1, p1, t)
                if side == 0:  # the drift: v_1 x v_2
                    _lane_cross_motion(KL, D, VEL + 6 * a, VEL + 6 * b)
                    for r in range(m):
                        vectors.dot6(KL, t, KL, KLr + 6 * r, 1, KL, D, 1)
                        vectors.sub(KL, k + r, KL, t)
            else:  # Connect: K = sign R1' [-p x, I], drift sign * w x (J v)
                if side == 1:
                    _lane_compose(KL, R + 9 * b, P + 3 * b, place_R[ix(j), 1], place_p[ix(j), 1], R2, p2)
                pt, vl = (p1 if side == 0 else p2), VEL + 6 * link
                for i in range(3):  # Jv = v + w x point, in D + 3 ..
                    i1, i2 = (i + 1) % 3, (i + 2) % 3
                    vectors.mul_add(KL, D + 3 + i, KL, vl + 3 + i, KL, vl + i1, KL, pt + i2)
                    vectors.sub_mul(KL, D + 3 + i, KL, vl + i2, KL, pt + i1)
                for i in range(3):  # d = w x Jv, in D ..
                    i1, i2 = (i + 1) % 3, (i + 2) % 3
                    _lane_cross(KL, D + i, vl + i1, D + 3 + i2, vl + i2, D + 3 + i1)
                for r in range(m):
                    e = R1 + axes[ix(j), ix(r)]  # row ax of R1': R1's column, rows three apart
                    Kr = KLr + 6 * r
                    for i in range(3):
                        i1, i2 = (i + 1) % 3, (i + 2) % 3
                        _lane_cross(KL, t, e + 3 * i1, pt + i2, e + 3 * i2, pt + i1)
                        vectors.scaled(KL, Kr + i, -sign, KL, t)
                        vectors.scaled(KL, Kr + 3 + i, sign, KL, e + 3 * i)
                    vectors.mul(KL, t, KL, e, KL, D)
                    vectors.add_mul(KL, t, KL, e + 3, KL, D + 1)
                    vectors.add_mul(KL, t, KL, e + 6, KL, D + 2)
                    vectors.scaled(KL, t, sign, KL, t)
                    vectors.sub(KL, k + r, KL, t)
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
        for r in range(m):
            vectors.put(Kk, r0 + r, KL, k + r, KL, MASK)


@njit(cache=True, inline="always")
def _lane_constraint_residual(constraints, KK, Kk, links, X, RES):
    """:func:`_constraint_residual` on the lanes (``KK``, ``Kk``: each lane's ``Kbuf`` and ``k``, into ``RES``):
    its operations, in its order, lane by lane."""
    table, pairs = constraints[0], constraints[2]
    for j in range(table.shape[0]):
        m, r0, pair0 = table[ix(j), CDIM], table[ix(j), ROW0], table[ix(j), PAIR0]
        for r in range(m):
            vectors.scaled(RES, r0 + r, -1.0, Kk, r0 + r)
            for q in range(table[ix(j), NPAIR]):
                acc = links[ix(pairs[pair0 + q, 1]), ACC]
                vectors.add_dot6(RES, r0 + r, KK, 36 * (pair0 + q) + 6 * r, 1, X, acc, 1)


# -- the outer loop ---------------------------------------------------------------------------------------------

@njit(cache=True, **UNCOUNTED)
def _constraint_residual(constraints, Kbuf, k, links, x, res):
    """``K a - k`` of every constraint row at the solution ``x``."""
    table, pairs = constraints[0], constraints[2]
    for j in range(table.shape[0]):
        m, r0, pair0 = table[ix(j), CDIM], table[ix(j), ROW0], table[ix(j), PAIR0]
        for r in range(m):
            t = -k[ix(r0 + r)]
            for q in range(table[ix(j), NPAIR]):
                acc = links[ix(pairs[pair0 + q, 1]), ACC]
                for c in range(6):
                    t += Kbuf[ix(pair0 + q), ix(r), ix(c)] * x[ix(acc + c)]
            res[ix(r0 + r)] = t


@njit(cache=True, inline="always")
def _kinematic_parts(ws, o, n):
    """The kinematics' parts of the workspace ``ws`` (carved at ``o``, :func:`_workspace_parts`): ``R, p, vel,
    S, bias, Iw, fb``."""
    return (ws[o[0]:o[1]].reshape((n + 1, 3, 3)), ws[o[1]:o[2]].reshape((n + 1, 3)), ws[o[2]:o[3]].reshape((n + 1, 6)),
            ws[o[3]:o[4]].reshape((n, 6, 6)), ws[o[4]:o[5]].reshape((n, 6)), ws[o[5]:o[6]].reshape((n, 6, 6)),
            ws[o[6]:o[7]].reshape((n, 6)))
