"""The fill of the compiled dynamics: every graph factor's matrix, scales and linear term written into the
program's workspaces (the slots of :class:`mechanics.gplc.GPLCLayout` and the policies' numbers), the terms
that move between outer iterations, and the factors' residuals for refinement.  Written once in the row
operations of :mod:`elimination.vectors`: the per-state kernel runs them on 1-d arrays (width 1), the lane
kernel on ``(rows, 16)`` ones, the same operations in the same order.
"""
from __future__ import annotations

from numba import njit

import elimination.vectors as vectors
from elimination.compiled_front import UNCOUNTED, ix

from .policies import INFORMATION
from .compiled_tables import (
    drop_stale_kernels, ACC, ARMATURE, CDIM, CLUSTER_TORQUE, FIRST, FKIND, FN, GMAP, JOINT0, JOINT_ONLY, LIN, LOOP, MAT,
    MOVES, MOVING, NPAIR, NV, NY, PAIR, PAIR0, PARENT, PENALTY, PRIOR, PRIOR_F, QDD, ROW0, SC0, SCL, STIFFNESS, TORQUE,
    CLUSTER_TOP, TORQUE_F, TREE, TREE_F, V0, WHO,
)
from .compiled_kinematics import PENALTY_ROWS

drop_stale_kernels(__file__)


# -- the graph's numbers ----------------------------------------------------------------------------------------

@njit(cache=True, inline="always")
def _mu(constraints, j, mu):
    """Constraint ``j``'s ``mu_s``: its policy's stiffness times the call's ``mu`` (``PolicyNumbers``)."""
    return constraints[3][ix(j), STIFFNESS] * mu


@njit(cache=True, **UNCOUNTED)
def _fill_links(model, maps, factors, KL, parts, TAU, states, Fw, Lin, Lmag):
    """The links' own factors (prior, tree joint, torque), as the slots of :class:`mechanics.gplc.GPLCLayout`
    build them (an embedded cluster's joints through their ``maps``: :func:`mechanics.compiled_tables._cluster_maps`),
    from the kinematics in ``KL`` (:func:`mechanics.compiled_kinematics._kinematic_parts`), for
    the lanes that take a new state (``KL``'s mask; ``states``: each lane's state, its ``tau`` a row of
    ``TAU``), into their columns of ``Fw``, ``Lin``, ``Lmag``; the other lanes' columns keep their values.
    Each lane's largest diagonal magnitude (the scale floor's reference) into ``KL``'s row for it.  Every
    entry a step may read is written, its zeros too: nothing reads what no state wrote."""
    links, body, root = model[0], model[4], model[6]
    ground = links.shape[0]
    S, BIAS, IW, FB, T, MASK, TOP = parts[3], parts[4], parts[5], parts[6], parts[9], parts[10], parts[11]
    g = lambda k: vectors.get(KL, k)
    vectors.fill(KL, TOP, 0.0)
    for l in range(links.shape[0]):
        f = links[ix(l), PRIOR_F]
        mat, scl, lin, I = factors[ix(f), MAT], factors[ix(f), SCL], factors[ix(f), LIN], IW + 36 * l
        for i in range(6):  # the prior: H_i symmetrised, its scales, g = f_i
            vectors.put(Lin, lin + i, KL, FB + 6 * l + i, KL, MASK)
            for j in range(6):
                h = 0.5 * (g(I + 6 * i + j) + g(I + 6 * j + i))
                vectors.set_where(Fw, mat + i * 6 + j, h, KL, MASK)
                if i == j:
                    vectors.set(KL, T, abs(h))
            vectors.put(Fw, scl + i, KL, T, KL, MASK)
            vectors.largest(KL, TOP, KL, T)
        nv, f, on_ground = links[ix(l), NV], links[ix(l), TREE_F], links[ix(l), PARENT] == ground
        mat, scl, lin, n = factors[ix(f), MAT], factors[ix(f), SCL], factors[ix(f), LIN], factors[ix(f), FN]
        c0, whole, at, ny = factors[ix(f), JOINT0], not factors[ix(f), JOINT_ONLY], links[ix(l), GMAP], links[ix(l), NY]
        for r in range(6):  # the tree joint: [I, -I, -S] (a_i, a_parent, qdd_i) = a_b,i (+ a_0 on the ground)
            vectors.fill(KL, T, 1.0 if on_ground else 2.0)  # the row's squared norm
            norm2 = g(T)
            for j in range(ny):  # (in an embedded cluster: -S_i G_i on y, a_b,i + S_i g_i)
                s = g(S + 36 * l + 6 * r + j) if at < 0 else _mapped(KL, S + 36 * l + 6 * r, maps, at, nv, ny, j)
                vectors.set_where(Fw, mat + r * n + c0 + j, -1.0 * s, KL, MASK)
                norm2 = norm2 + s * s
            if whole:  # the identity blocks and row scales only where a generic step gathers them
                for j in range(c0):
                    vectors.set_where(Fw, mat + r * n + j, 0.0, KL, MASK)
                vectors.set_where(Fw, mat + r * n + r, 1.0, KL, MASK)
                if not on_ground:
                    vectors.set_where(Fw, mat + r * n + 6 + r, -1.0, KL, MASK)
                _row_scale(norm2, KL, T, Fw, scl + r, KL, MASK)
            if links[ix(l), CLUSTER_TOP] >= 0:  # (its map moves with the cluster's parent: + S_i P_i on a_p)
                _moving_map_row(links, maps, factors, f, l, r, KL, S, T, Fw, KL, MASK)
            b = g(BIAS + 6 * l + r)
            if at >= 0:
                b = b + _mapped(KL, S + 36 * l + 6 * r, maps, at + nv * ny, nv, 1, 0)
            if on_ground:
                b = b + root[r]
            vectors.set_where(Lin, lin + r, b, KL, MASK)
            vectors.set_where(Lmag, lin + r, abs(b), KL, MASK)
        f = links[ix(l), TORQUE_F]
        if f >= 0 and at >= 0:
            _cluster_torque(links, body, maps, factors, l, TAU, states, Fw, Lin, KL, MASK)
        elif f >= 0:  # tau_i, on the armature's diagonal (its scales)
            mat, scl, lin, v0 = factors[ix(f), MAT], factors[ix(f), SCL], factors[ix(f), LIN], links[ix(l), V0]
            for i in range(nv):
                a = body[ix(l), ARMATURE + i]
                vectors.set_where(Fw, scl + i, a, KL, MASK)
                for j in range(nv):
                    vectors.set_where(Fw, mat + i * nv + j, a if i == j else 0.0, KL, MASK)
                vectors.fill(KL, T, a)
                vectors.largest(KL, TOP, KL, T)
                for w in range(vectors.width(KL)):
                    if vectors.lane(KL, MASK, w) != 0.0:
                        vectors.set_lane(Lin, lin + i, w, TAU[ix(states[w]), ix(v0 + i)])


@njit(cache=True, inline="always")
def _mapped(KL, row0, maps, at, nv, ny, j):
    """``sum_k KL[row0 + k] maps[at + k ny + j]`` over ``k < nv``: row ``r`` of ``S_i`` times column ``j`` of an
    embedded joint's ``G_i`` (``G_i (nv, ny)`` row-major at ``at``; ``g_i`` as its one column after it)."""
    s = vectors.get(KL, row0) * maps[ix(at + j)]
    for k in range(1, nv):
        s = s + vectors.get(KL, row0 + k) * maps[ix(at + k * ny + j)]
    return s


@njit(cache=True, inline="always")
def _moving_map_row(links, maps, factors, f, l, r, KL, S, T, Fw, M, mask):
    """Row ``r`` of link ``l``'s tree factor ``f`` where its embedded cluster's map moves with the cluster's
    parent (``qdd_i = G_i y + g_i - P_i a_p``: :func:`mechanics.gplc._cluster_slots`): ``S_i P_i`` on ``a_p``
    (``S_i P_i - I`` where ``a_p`` is the joint's parent's), and the row's scale from all its entries."""
    nv, ny, at = links[ix(l), NV], links[ix(l), NY], links[ix(l), GMAP]
    mat, scl, n = factors[ix(f), MAT], factors[ix(f), SCL], factors[ix(f), FN]
    first = 6 if links[ix(links[ix(l), PARENT]), ACC] == links[ix(l), CLUSTER_TOP] else 12
    for c in range(6):
        s = _mapped(KL, S + 36 * l + 6 * r, maps, at + nv * ny + nv, nv, 6, c)
        vectors.set_where(Fw, mat + r * n + first + c, s - 1.0 if first == 6 and c == r else s, M, mask)
    norm2 = vectors.zero(KL)
    for c in range(n):
        e = vectors.get(Fw, mat + r * n + c)
        norm2 = norm2 + e * e
    _row_scale(norm2, KL, T, Fw, scl + r, M, mask)


@njit(cache=True, inline="always")
def _row_scale(norm2, KL, T, Fw, at, M, mask):
    """A hard row's scale ``1 / sqrt(norm2)`` (its squared norm, a value) into ``Fw``'s row ``at``, in the
    lanes where row ``mask`` of ``M`` is not zero (``KL``'s row ``T``: scratch)."""
    vectors.set(KL, T, norm2)
    vectors.sqrt(KL, T, KL, T)
    vectors.inverse(KL, T, KL, T)
    vectors.put(Fw, at, KL, T, M, mask)


@njit(cache=True, inline="always")
def _z(maps, at, nv, ny, k, i):
    """Entry ``(k, i)`` of an embedded joint's ``Z = [G_i, -P_i]`` (``P_i`` where its map moves with the
    cluster's parent; ``i < ny``: ``G_i``'s)."""
    return maps[ix(at + k * ny + i)] if i < ny else -maps[ix(at + nv * ny + nv + 6 * k + i - ny)]


@njit(cache=True, inline="always")
def _cluster_torque(links, body, maps, factors, l, TAU, states, Fw, Lin, KL, MASK):
    """Link ``l``'s share of its embedded cluster's torque factor ``1/2 z' Z'AZ z - (Z' tau - Z'A g)' z``
    (:func:`mechanics.gplc._cluster_torque`; ``z = y``, ``Z = G``, or ``z = (y, a_p)``, ``Z = [G, -P]`` where
    its map moves with the cluster's parent), added joint by joint, the factor zeroed at its first link; its
    scales are written with the constraints' (:func:`_fill_constraints`), after every link's share."""
    f, nv, ny, at, v0 = links[ix(l), TORQUE_F], links[ix(l), NV], links[ix(l), NY], links[ix(l), GMAP], links[ix(l), V0]
    mat, lin, nz = factors[ix(f), MAT], factors[ix(f), LIN], factors[ix(f), FN]
    if factors[ix(f), WHO] == l:
        for i in range(nz):
            vectors.set_where(Lin, lin + i, 0.0, KL, MASK)
            for j in range(nz):
                vectors.set_where(Fw, mat + i * nz + j, 0.0, KL, MASK)
    for k in range(nv):
        a, gk = body[ix(l), ARMATURE + k], maps[ix(at + nv * ny + k)]
        for i in range(nz):
            Z_ki = _z(maps, at, nv, ny, k, i)
            for j in range(nz):
                h = vectors.get(Fw, mat + i * nz + j) + Z_ki * a * _z(maps, at, nv, ny, k, j)
                vectors.set_where(Fw, mat + i * nz + j, h, KL, MASK)
            for w in range(vectors.width(KL)):
                if vectors.lane(KL, MASK, w) != 0.0:
                    t = vectors.lane(Lin, lin + i, w) + Z_ki * (TAU[ix(states[w]), ix(v0 + k)] - a * gk)
                    vectors.set_lane(Lin, lin + i, w, t)


@njit(cache=True, inline="always")
def _link_residuals(links, factors, scope, l, Fw, Lin, X, Lres):
    """``g - H x`` of link ``l``'s prior and torque, ``b - A x`` of its tree joint (``[I, -I, -S]`` read as what
    it is: the joint columns from ``Fw``; every column where an embedded cluster's map moves with its parent), at
    ``X`` into ``Lres``."""
    ground, acc, nv = links.shape[0], links[ix(l), ACC], links[ix(l), NV]
    f = links[ix(l), PRIOR_F]
    mat, lin = factors[ix(f), MAT], factors[ix(f), LIN]
    vectors.sub_matvec6(Lres, lin, Lin, lin, Fw, mat, 6, X, acc, 6)
    f = links[ix(l), TORQUE_F]
    for i in range(nv if f >= 0 and links[ix(l), GMAP] < 0 else 0):  # tau - A qdd, A diagonal (a cluster's: generic)
        vectors.copy(Lres, factors[ix(f), LIN] + i, Lin, factors[ix(f), LIN] + i)
        vectors.sub_mul(Lres, factors[ix(f), LIN] + i, Fw, factors[ix(f), MAT] + i * (nv + 1), X, links[ix(l), QDD] + i)
    f, parent = links[ix(l), TREE_F], links[ix(l), PARENT]
    mat, lin, n, c0, qdd = factors[ix(f), MAT], factors[ix(f), LIN], factors[ix(f), FN], factors[ix(f), JOINT0], links[ix(l), QDD]
    parent_acc = links[ix(parent), ACC] if parent != ground else -1
    if links[ix(l), CLUSTER_TOP] >= 0:
        _rows_residual(Lres, Lin, lin, Fw, mat, 6, n, scope, factors[ix(f), SC0], X)
        return
    vectors.joint_rows(Lres, lin, Lin, lin, X, acc, parent_acc, Fw, mat + c0, n, qdd, links[ix(l), NY])


@njit(cache=True, **UNCOUNTED)
def _residual_terms(links, factors, scope, constraints, KK, MEAS, mu, Fw, Lin, X, Lres, E):
    """``g - H x`` and ``b - A x`` per graph factor (``A' mu (b - A x)`` for penalties), as
    :meth:`elimination.Factorization._residual_terms`: refinement's right-hand sides.  A link's own factors
    link by link (:func:`_link_residuals`), the constraints' factor by factor (:func:`_factor_residuals`)."""
    for l in range(links.shape[0]):
        _link_residuals(links, factors, scope, l, Fw, Lin, X, Lres)
    _factor_residuals(factors, scope, constraints, KK, MEAS, mu, Fw, Lin, X, Lres, E)


@njit(cache=True, inline="always")
def _moving_term(table, j, lin, KK, Kk, LAM, MEAS, E, mu, Lin, M, mask):
    """Constraint ``j``'s term that moves with ``lambda`` (:meth:`~mechanics.policies.ConstraintPolicy.moving_term`;
    the fill's own, as it writes them),
    written at ``Lin``'s row ``lin`` in the lanes where row ``mask`` of ``M`` is not zero: the proximal
    prior's ``-lambda / mu``, or the penalty's measurements ``k - lambda / mu`` (into ``MEAS``) and their
    ``A' (mu e)`` (:func:`_penalty_information`), ``mu`` the constraint's ``mu_s`` (:func:`_mu`).  ``E``'s
    rows: a value, ``mu``, ``mu`` times the measurements."""
    T, MU, ME = 0, 1, 2
    m, r0 = table[ix(j), CDIM], table[ix(j), ROW0]
    vectors.fill(E, MU, mu)
    if table[ix(j), MOVES] == INFORMATION:
        for r in range(m):
            vectors.scaled(E, T, -1.0, LAM, r0 + r)
            vectors.div(E, T, E, T, E, MU)
            vectors.put(Lin, lin + r, E, T, M, mask)
        return
    for r in range(m):
        vectors.div(E, T, LAM, r0 + r, E, MU)
        vectors.copy(E, ME + r, Kk, r0 + r)
        vectors.sub(E, ME + r, E, T)
        vectors.put(MEAS, r0 + r, E, ME + r, M, mask)
        vectors.scaled(E, ME + r, mu, E, ME + r)
    pair0 = table[ix(j), PAIR0]
    for q in range(table[ix(j), NPAIR]):
        for c in range(6):
            vectors.dot(E, T, KK, 36 * (pair0 + q) + c, 6, E, ME, 1, m)
            vectors.put(Lin, lin + 6 * q + c, E, T, M, mask)


@njit(cache=True, **UNCOUNTED)  # (compiled once and called: each caller's compile is shorter)
def _fill_constraints(constraints, factors, KK, MEAS, Kk, LAM, E, mu, Fw, Lin, KL, MASK, TOP):
    """The constraints' factors (penalty, loop, proximal prior), as the slots of
    :class:`mechanics.gplc.GPLCLayout` and the policies build them, for the lanes that take a new state (``KL``'s
    row ``MASK``), from their ``Kbuf``, ``k`` and ``lambda`` in ``KK``, ``Kk``, ``LAM``, into their columns of
    ``Fw``, ``Lin`` and their measurements ``MEAS``; the other lanes' columns keep their values.  Each lane's largest diagonal magnitude into ``KL``'s row ``TOP`` (the links' there already).
    ``E``'s rows: a value, :func:`_moving_term`'s (``1 + PENALTY_ROWS``), ``mu K`` of a penalty's
    columns (:func:`mechanics.compiled_kinematics._constraint_parts`)."""
    table = constraints[0]
    T, MK = 0, 2 + PENALTY_ROWS  # (rows 1.. are _moving_term's)
    for f in range(factors.shape[0]):
        kind, who, n = factors[ix(f), FKIND], factors[ix(f), WHO], factors[ix(f), FN]
        if kind == PRIOR or kind == TORQUE or kind == TREE:  # (_fill_links)
            continue
        if kind == CLUSTER_TORQUE:  # (filled by _fill_links: its scales, now that every link's share is in)
            _diagonal_scales(Fw, factors[ix(f), MAT], factors[ix(f), SCL], n, E, T, KL, MASK, TOP)
            continue
        mat, scl, lin, mu_s = factors[ix(f), MAT], factors[ix(f), SCL], factors[ix(f), LIN], _mu(constraints, who, mu)
        vectors.fill(E, T, 0.0)
        for i in range(n):
            for j in range(0 if kind == PENALTY else n):
                vectors.put(Fw, mat + i * n + j, E, T, KL, MASK)
            vectors.put(Lin, lin + i, E, T, KL, MASK)
        if kind == PENALTY:  # H = A' (mu A), g = A' (mu b), b = k - lambda / mu
            m, pair0 = table[ix(who), CDIM], table[ix(who), PAIR0]
            for r in range(m):
                for c in range(n):
                    vectors.scaled(E, MK + c * m + r, mu_s, KK, 36 * (pair0 + c // 6) + 6 * r + c % 6)
            for a in range(n):  # (the sums over the rows r: K's rows six apart)
                row_a = 36 * (pair0 + a // 6) + a % 6
                for c in range(n):
                    vectors.dot(E, T, KK, row_a, 6, E, MK + c * m, 1, m)
                    vectors.put(Fw, mat + a * n + c, E, T, KL, MASK)
            _moving_term(table, who, lin, KK, Kk, LAM, MEAS, E, mu_s, Lin, KL, MASK)
        elif kind == LOOP:  # [[0, K], [K', 0]] on (lambda, a_l); -lambda' k carried by the first link's
            m, r0, pair = table[ix(who), CDIM], table[ix(who), ROW0], factors[ix(f), PAIR]
            for r in range(m):
                for c in range(6):
                    vectors.put(Fw, mat + r * n + m + c, KK, 36 * pair + 6 * r + c, KL, MASK)
                    vectors.put(Fw, mat + (m + c) * n + r, KK, 36 * pair + 6 * r + c, KL, MASK)
                if factors[ix(f), FIRST]:
                    vectors.put(Lin, lin + r, Kk, r0 + r, KL, MASK)
        else:  # PROXIMAL: -I / mu_s, g = -lambda / mu_s
            vectors.fill(E, T, -1.0 / mu_s)
            for i in range(n):
                vectors.put(Fw, mat + i * n + i, E, T, KL, MASK)
            _moving_term(table, who, lin, KK, Kk, LAM, MEAS, E, mu_s, Lin, KL, MASK)
        _diagonal_scales(Fw, mat, scl, n, E, T, KL, MASK, TOP)


@njit(cache=True, inline="always")
def _diagonal_scales(Fw, mat, scl, n, E, T, KL, MASK, TOP):
    """A factor's scales, ``|H_ii|`` of its ``(n, n)`` matrix at ``mat``, into ``scl`` in the lanes of ``KL``'s
    row ``MASK``, and each lane's largest into ``KL``'s row ``TOP`` (``E``'s row ``T``: scratch)."""
    for i in range(n):
        vectors.absolute(E, T, Fw, mat + i * n + i)
        vectors.put(Fw, scl + i, E, T, KL, MASK)
        vectors.largest(KL, TOP, E, T)


@njit(cache=True, **UNCOUNTED)  # (compiled once and called: each caller's compile is shorter)
def _moves(constraints, factors, KK, Kk, LAM, MEAS, E, mu, Lin, M, mask, column, value):
    """The moving terms (:func:`_moving_term`) of the constraints whose ``column`` of the table is ``value``
    (``ITERATES``, 1: the iterating ones), for their ``lambda`` in ``LAM``, in the lanes where row ``mask`` of
    ``M`` is not zero; the other lanes keep theirs."""
    table = constraints[0]
    for j in range(table.shape[0]):
        if table[ix(j), column] == value:
            lin = factors[ix(table[ix(j), MOVING]), LIN]
            _moving_term(table, j, lin, KK, Kk, LAM, MEAS, E, _mu(constraints, j, mu), Lin, M, mask)


@njit(cache=True, inline="always")
def _factor_residuals(factors, scope, constraints, KK, MEAS, mu, Fw, Lin, X, Lres, E):
    """:func:`_residual_terms` of the factors that are not a link's own: ``g - H x`` factor by factor, and a
    penalty's ``A' mu (b - A x)`` (``A' (mu e)``, sums from zero), each lane's ``Kbuf`` and measurements in
    ``KK``, ``MEAS`` (:func:`mechanics.compiled_kinematics._constraint_parts`); ``E``: ``2 PENALTY_ROWS``
    scratch rows."""
    table = constraints[0]
    for f in range(factors.shape[0]):
        kind, n, s0 = factors[ix(f), FKIND], factors[ix(f), FN], factors[ix(f), SC0]
        mat, lin = factors[ix(f), MAT], factors[ix(f), LIN]
        if kind == PRIOR or kind == TORQUE or kind == TREE:  # (_link_residuals)
            continue
        if kind == PENALTY:
            j = factors[ix(f), WHO]
            m, r0, pair0 = table[ix(j), CDIM], table[ix(j), ROW0], table[ix(j), PAIR0]
            for r in range(m):
                vectors.copy(E, r, MEAS, r0 + r)
                for c in range(n):
                    vectors.sub_mul(E, r, KK, 36 * (pair0 + c // 6) + 6 * r + c % 6, X, scope[ix(s0 + c)])
                vectors.scaled(E, PENALTY_ROWS + r, _mu(constraints, j, mu), E, r)
            for q in range(table[ix(j), NPAIR]):
                for c in range(6):
                    vectors.dot(Lres, lin + 6 * q + c, KK, 36 * (pair0 + q) + c, 6, E, PENALTY_ROWS, 1, m)
            continue
        _rows_residual(Lres, Lin, lin, Fw, mat, n, n, scope, s0, X)


@njit(cache=True, inline="always")
def _rows_residual(Lres, Lin, lin, Fw, mat, rows, n, scope, s0, X):
    """``b - A x`` (``g - H x``) of a factor's ``(rows, n)`` matrix at ``mat`` of ``Fw`` and its linear term at
    ``lin``, on the values ``X`` its scope reads (``scope``'s entries from ``s0``), into ``Lres``."""
    for i in range(rows):
        vectors.copy(Lres, lin + i, Lin, lin + i)
        for c in range(n):
            vectors.sub_mul(Lres, lin + i, Fw, mat + i * n + c, X, scope[ix(s0 + c)])
