"""The fill of the compiled dynamics: every graph factor's matrix, scales and linear term written into the
program's workspaces (the slots of :class:`mechanics.gplc.GPLCLayout` and the policies' numbers), the terms
that move between outer iterations, and the factors' residuals for refinement -- for one state and in lanes.
"""
from __future__ import annotations

import numpy as np
from numba import njit

import elimination.vectors as vectors
from elimination.compiled_front import UNCOUNTED, ix
from elimination.compiled_pairs import cached6, minus_dot6
from elimination.lanes import LANES

from .policies import INFORMATION
from .compiled_tables import (
    drop_stale_kernels, ACC, CDIM, FIRST, FKIND, FN, ITERATES, JOINT0, JOINT_ONLY, LIN, LOOP, MAT, MOVES, MOVING, NPAIR, NV, PAIR,
    PAIR0, PARENT, PENALTY, PRIOR, PRIOR_F, QDD, ROW0, SC0, SCL, STIFFNESS, TORQUE, TORQUE_F, TREE, TREE_F, V0, WHO,
)
from .compiled_kinematics import PENALTY_ROWS

drop_stale_kernels(__file__)


# -- the graph's numbers ----------------------------------------------------------------------------------------

@njit(cache=True, inline="always")
def _mu(constraints, j, mu):
    """Constraint ``j``'s ``mu_s``: its policy's stiffness times the call's ``mu`` (``PolicyNumbers``)."""
    return constraints[3][ix(j), STIFFNESS] * mu


@njit(cache=True, **UNCOUNTED)
def _penalty_information(factors, f, constraints, Kbuf, mu, e, out):
    """``out = A' (mu_s e)`` for the penalty factor ``f``: ``A = [K_l ...]`` over its links (``LeastSquares.information``)."""
    table = constraints[0]
    j = factors[ix(f), WHO]
    m, pair0 = table[ix(j), CDIM], table[ix(j), PAIR0]
    mu = _mu(constraints, j, mu)
    for q in range(table[ix(j), NPAIR]):
        for c in range(6):
            t = 0.0
            for r in range(m):
                t += Kbuf[ix(pair0 + q), ix(r), ix(c)] * (mu * e[ix(r)])
            out[ix(6 * q + c)] = t


@njit(cache=True, inline="always")
def _prior(factors, f, l, Iw, fb, Fw, Lin):
    """Link ``l``'s prior (factor ``f``): ``H_i`` (symmetrised), its scales, ``g = f_i``; its largest diagonal."""
    mat, scl, lin = factors[ix(f), MAT], factors[ix(f), SCL], factors[ix(f), LIN]
    largest = 0.0
    for i in range(6):
        Lin[ix(lin + i)] = fb[ix(l), ix(i)]
        for j in range(6):
            Fw[ix(mat + i * 6 + j)] = 0.5 * (Iw[ix(l), ix(i), ix(j)] + Iw[ix(l), ix(j), ix(i)])
        Fw[ix(scl + i)] = abs(Fw[ix(mat + i * 7)])
        largest = max(largest, Fw[ix(scl + i)])
    return largest


@njit(cache=True, inline="always")
def _tree(factors, f, l, on_ground, nv, S, bias, root, Fw, Lin, Lmag):
    """Link ``l``'s tree joint (factor ``f``): ``[I, -I, -S] (a_i, a_parent, qdd_i) = a_b,i`` (``+ a_0`` on
    the ground); the identity blocks and row scales only where a generic step gathers them."""
    mat, scl, lin, n = factors[ix(f), MAT], factors[ix(f), SCL], factors[ix(f), LIN], factors[ix(f), FN]
    c0, whole = factors[ix(f), JOINT0], not factors[ix(f), JOINT_ONLY]
    for r in range(6):
        norm2 = 1.0 if on_ground else 2.0
        for j in range(nv):
            s = S[ix(l), ix(r), ix(j)]
            Fw[ix(mat + r * n + c0 + j)] = -s
            norm2 += s * s
        if whole:
            for j in range(c0):
                Fw[ix(mat + r * n + j)] = 0.0
            Fw[ix(mat + r * n + r)] = 1.0
            if not on_ground:
                Fw[ix(mat + r * n + 6 + r)] = -1.0
            Fw[ix(scl + r)] = 1.0 / np.sqrt(norm2)
        b = bias[ix(l), ix(r)] + root[r] if on_ground else bias[ix(l), ix(r)]
        Lin[ix(lin + r)], Lmag[ix(lin + r)] = b, abs(b)


@njit(cache=True, **UNCOUNTED)
def _fill(model, constraints, factors, S, bias, Iw, fb, Kbuf, k, tau, lam, mu, Fw, Lin, Lmag, meas):
    """Every graph factor's matrix, scales and linear term into the program's workspaces, as the slots of
    :class:`mechanics.gplc.GPLCLayout` and the policies build them; returns the largest diagonal magnitude
    of the quadratic factors (the scale floor's reference).  A link's own factors are written link by link,
    at their fixed sizes (:func:`_fill_links`); the constraints' factor by factor (:func:`_fill_constraints`).
    Every entry a step may read is written, its zeros too: nothing reads what no state wrote (a workspace
    poisoned between calls answers the same)."""
    largest = _fill_links(model, factors, S, bias, Iw, fb, tau, Fw, Lin, Lmag)
    return _fill_constraints(constraints, factors, Kbuf, k, lam, mu, Fw, Lin, meas, largest)


@njit(cache=True, inline="always")
def _fill_links(model, factors, S, bias, Iw, fb, tau, Fw, Lin, Lmag):
    """:func:`_fill` of the links' own factors (prior, tree joint, torque); their largest diagonal magnitude."""
    links, root = model[0], model[6]
    ground = links.shape[0]
    largest = 0.0
    for l in range(links.shape[0]):
        largest = max(largest, _prior(factors, links[ix(l), PRIOR_F], l, Iw, fb, Fw, Lin))
        nv, f = links[ix(l), NV], links[ix(l), TORQUE_F]
        _tree(factors, links[ix(l), TREE_F], l, links[ix(l), PARENT] == ground, nv, S, bias, root, Fw, Lin, Lmag)
        if f >= 0:  # tau_i, on a zero matrix (zero scales): the torque's term is linear
            mat, scl, lin, v0 = factors[ix(f), MAT], factors[ix(f), SCL], factors[ix(f), LIN], links[ix(l), V0]
            for i in range(nv):
                Lin[ix(lin + i)] = tau[ix(v0 + i)]
                Fw[ix(scl + i)] = 0.0
                for j in range(nv):
                    Fw[ix(mat + i * nv + j)] = 0.0
    return largest


@njit(cache=True, inline="always")
def _fill_constraints(constraints, factors, Kbuf, k, lam, mu, Fw, Lin, meas, largest):
    """:func:`_fill` of the constraints' factors; the largest of ``largest`` and their diagonal magnitudes."""
    table = constraints[0]
    for f in range(factors.shape[0]):
        kind, who, n = factors[ix(f), FKIND], factors[ix(f), WHO], factors[ix(f), FN]
        if kind == PRIOR or kind == TORQUE or kind == TREE:  # (above)
            continue
        mat, scl, lin = factors[ix(f), MAT], factors[ix(f), SCL], factors[ix(f), LIN]
        for i in range(n):
            for j in range(0 if kind == PENALTY else n):  # (the penalty writes every entry)
                Fw[ix(mat + i * n + j)] = 0.0
            Lin[ix(lin + i)] = 0.0
        mu_s = _mu(constraints, who, mu)
        if kind == PENALTY:  # LeastSquares: H = A' (mu_s A), g = A' (mu_s b), b = k - lambda / mu_s
            m, r0, pair0 = table[ix(who), CDIM], table[ix(who), ROW0], table[ix(who), PAIR0]
            for r in range(m):
                meas[ix(r0 + r)] = k[ix(r0 + r)] - lam[ix(r0 + r)] / mu_s
            for a in range(n):
                qa, ca = a // 6, a % 6
                for c in range(n):
                    qc, cc = c // 6, c % 6
                    t = 0.0
                    for r in range(m):
                        t += Kbuf[ix(pair0 + qa), ix(r), ix(ca)] * (mu_s * Kbuf[ix(pair0 + qc), ix(r), ix(cc)])
                    Fw[ix(mat + a * n + c)] = t
            _penalty_information(factors, f, constraints, Kbuf, mu, meas[r0:], Lin[lin:])
        elif kind == LOOP:  # [[0, K], [K', 0]] on (lambda, a_l); -lambda' k carried by the first link's
            m, r0, pair = table[ix(who), CDIM], table[ix(who), ROW0], factors[ix(f), PAIR]
            for r in range(m):
                for c in range(6):
                    Fw[ix(mat + r * n + m + c)] = Fw[ix(mat + (m + c) * n + r)] = Kbuf[ix(pair), ix(r), ix(c)]
                if factors[ix(f), FIRST]:
                    Lin[ix(lin + r)] = k[ix(r0 + r)]
        else:  # PROXIMAL: -I / mu_s, g = -lambda / mu_s
            r0 = table[ix(who), ROW0]
            for i in range(n):
                Fw[ix(mat + i * n + i)] = -1.0 / mu_s
                Lin[ix(lin + i)] = -lam[ix(r0 + i)] / mu_s
        for i in range(n):
            Fw[ix(scl + i)] = abs(Fw[ix(mat + i * n + i)])
            largest = max(largest, Fw[ix(scl + i)])
    return largest


@njit(cache=True, **UNCOUNTED)
def _move(constraints, factors, Kbuf, k, lam, mu, j, Lin, meas):
    """Constraint ``j``'s moving term for ``lambda`` (:meth:`~mechanics.policies.ConstraintPolicy.moving_term`):
    the proximal prior's ``-lambda / mu_s`` (``INFORMATION``) or the penalty's target ``k - lambda / mu_s``."""
    table = constraints[0]
    f, m, r0, mu_s = table[ix(j), MOVING], table[ix(j), CDIM], table[ix(j), ROW0], _mu(constraints, j, mu)
    if table[ix(j), MOVES] == INFORMATION:
        for r in range(m):
            Lin[ix(factors[ix(f), LIN] + r)] = -lam[ix(r0 + r)] / mu_s
    else:
        for r in range(m):
            meas[ix(r0 + r)] = k[ix(r0 + r)] - lam[ix(r0 + r)] / mu_s
        _penalty_information(factors, f, constraints, Kbuf, mu, meas[r0:], Lin[factors[ix(f), LIN]:])


@njit(cache=True, **UNCOUNTED)
def _lane_fill_links(model, factors, KL, parts, TAU, states, Fw, Lin, Lmag):
    """:func:`_fill_links` of the lanes that take a new state (``KL``'s mask; ``states``: each lane's state, its
    ``tau`` a row of ``TAU``) into their columns of ``Fw``, ``Lin``, ``Lmag``; the other lanes' columns keep
    their values.  Each lane's largest diagonal magnitude into ``KL``'s row for it."""
    links, root = model[0], model[6]
    ground = links.shape[0]
    S, BIAS, IW, FB, T, MASK, TOP = parts[3], parts[4], parts[5], parts[6], parts[9], parts[10], parts[11]
    vectors.fill(KL, TOP, 0.0)
    for l in range(links.shape[0]):
        f = links[ix(l), PRIOR_F]
        mat, scl, lin, I = factors[ix(f), MAT], factors[ix(f), SCL], factors[ix(f), LIN], IW + 36 * l
        for i in range(6):  # the prior (_prior)
            vectors.put(Lin, lin + i, KL, FB + 6 * l + i, KL, MASK)
            for j in range(6):
                vectors.half_sum(KL, T, KL, I + 6 * i + j, KL, I + 6 * j + i)
                vectors.put(Fw, mat + i * 6 + j, KL, T, KL, MASK)
                if i == j:
                    vectors.absolute(KL, T + 1, KL, T)
            vectors.put(Fw, scl + i, KL, T + 1, KL, MASK)
            vectors.largest(KL, TOP, KL, T + 1)
        nv, f, on_ground = links[ix(l), NV], links[ix(l), TREE_F], links[ix(l), PARENT] == ground
        mat, scl, lin, n = factors[ix(f), MAT], factors[ix(f), SCL], factors[ix(f), LIN], factors[ix(f), FN]
        c0, whole = factors[ix(f), JOINT0], not factors[ix(f), JOINT_ONLY]
        for r in range(6):  # the tree joint (_tree)
            vectors.fill(KL, T, 1.0 if on_ground else 2.0)  # the row's squared norm
            for j in range(nv):
                s = S + 36 * l + 6 * r + j
                vectors.scaled(KL, T + 1, -1.0, KL, s)
                vectors.put(Fw, mat + r * n + c0 + j, KL, T + 1, KL, MASK)
                vectors.add_mul(KL, T, KL, s, KL, s)
            if whole:
                vectors.fill(KL, T + 1, 0.0)
                for j in range(c0):
                    vectors.put(Fw, mat + r * n + j, KL, T + 1, KL, MASK)
                vectors.fill(KL, T + 1, 1.0)
                vectors.put(Fw, mat + r * n + r, KL, T + 1, KL, MASK)
                if not on_ground:
                    vectors.fill(KL, T + 1, -1.0)
                    vectors.put(Fw, mat + r * n + 6 + r, KL, T + 1, KL, MASK)
                vectors.sqrt(KL, T, KL, T)
                vectors.inverse(KL, T, KL, T)
                vectors.put(Fw, scl + r, KL, T, KL, MASK)
            if on_ground:
                vectors.add_scalar(KL, T + 1, KL, BIAS + 6 * l + r, root[r])
            else:
                vectors.copy(KL, T + 1, KL, BIAS + 6 * l + r)
            vectors.put(Lin, lin + r, KL, T + 1, KL, MASK)
            vectors.absolute(KL, T + 2, KL, T + 1)
            vectors.put(Lmag, lin + r, KL, T + 2, KL, MASK)
        f = links[ix(l), TORQUE_F]
        if f >= 0:  # tau_i, on a zero matrix (zero scales)
            mat, scl, lin, v0 = factors[ix(f), MAT], factors[ix(f), SCL], factors[ix(f), LIN], links[ix(l), V0]
            vectors.fill(KL, T, 0.0)
            for i in range(nv):
                vectors.put(Fw, scl + i, KL, T, KL, MASK)
                for j in range(nv):
                    vectors.put(Fw, mat + i * nv + j, KL, T, KL, MASK)
                for w in range(LANES):
                    if KL[ix(MASK), w] != 0.0:
                        Lin[ix(lin + i), w] = TAU[ix(states[w]), ix(v0 + i)]


@njit(cache=True, inline="always")
def _link_residuals(links, factors, l, Fw, Lin, x, Lres):
    """``g - H x`` of link ``l``'s prior and torque, ``b - A x`` of its tree joint, in the operations of
    :func:`_residual_terms`' generic rows (the link's values contiguous at its ``ACC``, ``QDD`` columns)."""
    ground, acc, nv = links.shape[0], links[ix(l), ACC], links[ix(l), NV]
    f = links[ix(l), PRIOR_F]
    mat, lin, a = factors[ix(f), MAT], factors[ix(f), LIN], cached6(x, acc)  # (read once, across the stores)
    for i in range(6):
        Lres[ix(lin + i)] = minus_dot6(Lin[ix(lin + i)], Fw, mat + i * 6, a)
    f = links[ix(l), TORQUE_F]
    for i in range(nv if f >= 0 else 0):  # on a zero matrix (written by _fill): g itself
        Lres[ix(factors[ix(f), LIN] + i)] = Lin[ix(factors[ix(f), LIN] + i)]
    f, parent = links[ix(l), TREE_F], links[ix(l), PARENT]
    mat, lin, n, c0, qdd = factors[ix(f), MAT], factors[ix(f), LIN], factors[ix(f), FN], factors[ix(f), JOINT0], links[ix(l), QDD]
    for r in range(6):  # [I, -I, -S] read as what it is (the joint columns from Fw)
        t = Lin[ix(lin + r)] - a[r]
        if parent != ground:
            t += x[ix(links[ix(parent), ACC] + r)]
        for j in range(nv):
            t -= Fw[ix(mat + r * n + c0 + j)] * x[ix(qdd + j)]
        Lres[ix(lin + r)] = t


@njit(cache=True, inline="always")
def _lane_link_residuals(links, factors, l, Fw, Lin, X, Lres):
    """:func:`_link_residuals` on the lanes of ``Fw``, ``Lin``, ``X``, ``Lres`` (``(entries, LANES)``): its
    operations, in its order, lane by lane."""
    ground, acc, nv = links.shape[0], links[ix(l), ACC], links[ix(l), NV]
    f = links[ix(l), PRIOR_F]
    mat, lin = factors[ix(f), MAT], factors[ix(f), LIN]
    vectors.sub_matvec6(Lres, lin, Lin, lin, Fw, mat, 6, X, acc, 6)
    f = links[ix(l), TORQUE_F]
    for i in range(nv if f >= 0 else 0):
        vectors.copy(Lres, factors[ix(f), LIN] + i, Lin, factors[ix(f), LIN] + i)
    f, parent = links[ix(l), TREE_F], links[ix(l), PARENT]
    mat, lin, n, c0, qdd = factors[ix(f), MAT], factors[ix(f), LIN], factors[ix(f), FN], factors[ix(f), JOINT0], links[ix(l), QDD]
    parent_acc = links[ix(parent), ACC] if parent != ground else -1
    vectors.joint_rows(Lres, lin, Lin, lin, X, acc, parent_acc, Fw, mat + c0, n, qdd, nv)


@njit(cache=True, **UNCOUNTED)
def _residual_terms(links, factors, scope, constraints, Kbuf, meas, mu, Fw, Lin, x, Lres, e):
    """``g - H x`` and ``b - A x`` per graph factor (``A' mu (b - A x)`` for penalties), as
    :meth:`elimination.Factorization._residual_terms`: refinement's right-hand sides.  A link's own factors
    link by link (:func:`_link_residuals`), the constraints' factor by factor."""
    for l in range(links.shape[0]):
        _link_residuals(links, factors, l, Fw, Lin, x, Lres)
    _factor_residuals(factors, scope, constraints, Kbuf, meas, mu, Fw, Lin, x, Lres, e)


@njit(cache=True, inline="always")
def _factor_residuals(factors, scope, constraints, Kbuf, meas, mu, Fw, Lin, x, Lres, e):
    """:func:`_residual_terms` of the factors that are not a link's own (its prior, torque, tree joint): the
    constraints', factor by factor."""
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
                t = meas[ix(r0 + r)]
                for c in range(n):
                    t -= Kbuf[ix(pair0 + c // 6), ix(r), ix(c % 6)] * x[ix(scope[ix(s0 + c)])]
                e[ix(r)] = t
            _penalty_information(factors, f, constraints, Kbuf, mu, e, Lres[lin:])
            continue
        for c in range(n):  # the factor's values, gathered once for its rows
            e[ix(c)] = x[ix(scope[ix(s0 + c)])]
        for i in range(n):
            t = Lin[ix(lin + i)]
            for c in range(n):
                t -= Fw[ix(mat + i * n + c)] * e[ix(c)]
            Lres[ix(lin + i)] = t


@njit(cache=True, inline="always")
def _lane_moving_term(table, j, lin, KK, Kk, LAM, MEAS, E, mu, Lin, M, mask):
    """Constraint ``j``'s term that moves with ``lambda`` (:func:`_move`; the fill's own, as it writes them),
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


@njit(cache=True, inline="always")
def _lane_fill_constraints(constraints, factors, KK, MEAS, Kk, LAM, E, mu, Fw, Lin, KL, MASK, TOP):
    """:func:`_fill_constraints` of the lanes that take a new state (``KL``'s row ``MASK``), from their
    ``Kbuf``, ``k`` and ``lambda`` in ``KK``, ``Kk``, ``LAM``: its operations, in its order, lane by lane, into
    their columns of ``Fw``, ``Lin`` and their measurements ``MEAS``; the other lanes' columns keep their
    values.  Each lane's largest diagonal magnitude into ``KL``'s row ``TOP`` (the links' there already).
    ``E``'s rows: a value, :func:`_lane_moving_term`'s (``1 + PENALTY_ROWS``), ``mu K`` of a penalty's
    columns (:func:`_lane_constraint_parts`)."""
    table = constraints[0]
    T, MK = 0, 2 + PENALTY_ROWS  # (rows 1.. are _lane_moving_term's)
    for f in range(factors.shape[0]):
        kind, who, n = factors[ix(f), FKIND], factors[ix(f), WHO], factors[ix(f), FN]
        if kind == PRIOR or kind == TORQUE or kind == TREE:  # (_lane_fill_links)
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
            _lane_moving_term(table, who, lin, KK, Kk, LAM, MEAS, E, mu_s, Lin, KL, MASK)
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
            _lane_moving_term(table, who, lin, KK, Kk, LAM, MEAS, E, mu_s, Lin, KL, MASK)
        for i in range(n):
            vectors.absolute(E, T, Fw, mat + i * n + i)
            vectors.put(Fw, scl + i, E, T, KL, MASK)
            vectors.largest(KL, TOP, E, T)


@njit(cache=True, inline="always")
def _lane_move(constraints, factors, KK, Kk, LAM, MEAS, E, mu, Lin, KC, MOVE):
    """:func:`_move` of every iterating constraint in the lanes whose row ``MOVE`` of ``KC`` is not zero, from
    their ``lambda`` in ``LAM`` (:func:`_lane_moving_term`); the other lanes keep theirs."""
    table = constraints[0]
    for j in range(table.shape[0]):
        if table[ix(j), ITERATES]:
            lin = factors[ix(table[ix(j), MOVING]), LIN]
            _lane_moving_term(table, j, lin, KK, Kk, LAM, MEAS, E, _mu(constraints, j, mu), Lin, KC, MOVE)


@njit(cache=True, inline="always")
def _lane_factor_residuals(factors, scope, constraints, KK, MEAS, mu, Fw, Lin, X, Lres, E):
    """:func:`_factor_residuals` on the lanes of ``Fw``, ``Lin``, ``X``, ``Lres``, each lane's ``Kbuf`` and
    measurements in ``KK``, ``MEAS`` (:func:`_lane_constraint_parts`): its operations, in its order, lane by
    lane (a penalty's ``A' (mu e)`` as :func:`_penalty_information`'s sums, from zero)."""
    table = constraints[0]
    for f in range(factors.shape[0]):
        kind, n, s0 = factors[ix(f), FKIND], factors[ix(f), FN], factors[ix(f), SC0]
        mat, lin = factors[ix(f), MAT], factors[ix(f), LIN]
        if kind == PRIOR or kind == TORQUE or kind == TREE:  # (_lane_link_residuals)
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
        for i in range(n):
            vectors.copy(Lres, lin + i, Lin, lin + i)
            for c in range(n):
                vectors.sub_mul(Lres, lin + i, Fw, mat + i * n + c, X, scope[ix(s0 + c)])
