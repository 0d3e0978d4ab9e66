"""The outer iterations of the compiled dynamics, sixteen states side by side: :func:`lanes_kernel`, whose
lanes each run :mod:`mechanics.compiled_iterations`' outer iterations (its :func:`_advance` and
:func:`_refined`, the same functions the per-state kernel runs) while their solves' steps run in lanes; a lane
whose state has its answer takes the next state -- the numbers of
:func:`mechanics.compiled_iterations.dynamics_kernel`, bit for bit.
"""
from __future__ import annotations

import numpy as np
from numba import njit

import elimination.vectors as vectors
from elimination.compiled import factorize_scratch_in, factorize_steps, max_front, solve_one
from elimination.compiled_front import UNCOUNTED, ix
from elimination.numeric import SCALE_FLOOR
from elimination.lanes import LANES, scratch_in, scratch_rows

from .compiled_tables import (
    drop_stale_kernels, BAD_INPUT, CONVERGED, FALLBACK, ITERATES, ITERATIONS, STATUS, _unpacked_tables,
)
from .compiled_kinematics import (
    _constraint_parts, _constraint_residual, _constraint_terms, _kinematic_parts, _kinematics, constraint_rows,
    kinematic_rows,
)
from .compiled_fill import _fill_constraints, _fill_links, _moves, _residual_terms
from .compiled_iterations import (
    DONE, FAILED, FRESH, HEAD, ITERATION_ROWS, ITERS, LANE_ROWS, NEED, PHASE, STATE, VALID, WEAK, _advance,
    _conclude, _copy, _fresh_done, _iterate_numbers, _joint_torques, _load_state, _marked, _refined,
)

drop_stale_kernels(__file__)


REFILL, PATIENCE = 11, 1  # a refill waits until this many lanes (of sixteen) idle, and then one round more (the
# busy lanes may be about to finish: one factorization of the lanes serves them all); a refill's busy lanes get
# no solve.  The measurements that chose them: benchmarks/README.md


def _lane_sizes(program, constraints: tuple, mechanism) -> tuple:
    """Floats of :func:`_lane_parts`' workspace (a float per lane per entry), its integer rows, and the floats
    per lane of each state's own terms (:func:`_own_terms`)."""
    m = mechanism.constraint_dim
    entries = (program.factor_size + program.conditional_size + 3 * program.linear_size + program.cache_size
               + 2 * program.value_size + 4 + scratch_rows(max_front(program))
               + kinematic_rows(len(mechanism.links), mechanism.nq, mechanism.nv)
               + constraint_rows(constraints[2].shape[0], m) + ITERATION_ROWS + mechanism.nv)
    return entries * LANES, (LANE_ROWS, LANES), (LANES, 2 * m + 2)


@njit(cache=True, inline="always")
def _lane_parts(lw, sizes, maxn, kinematic_rows, constraint_rows, iteration_rows):
    """:func:`lanes_kernel`'s lanes, carved from ``lw``: ``Fw, C, Lin, Lmag, cache, X, Lres, corrections
    (entries, LANES)``, the scale floors ``(1, LANES)``, the pivot ratios ``(LANES,)``, the largest
    magnitudes of a correction and its values ``(2, LANES)``, :func:`elimination.compiled.factorize_steps`' and
    the solve's scratch, the kinematics' rows ``KL`` (:func:`~mechanics.compiled_kinematics._kinematic_parts`), the
    constraints' rows ``KC`` (:func:`~mechanics.compiled_kinematics._constraint_parts`) and the outer iterations' ``IT``
    (:data:`ITERATION_ROWS`)."""
    rows = lw.reshape((-1, LANES))
    a = np.int64(sizes[0])  # the ends of the parts, in _lane_sizes' order
    b = a + np.int64(sizes[1])
    c = b + np.int64(sizes[2])
    d = c + np.int64(sizes[2])
    e = d + np.int64(sizes[3])
    f = e + np.int64(sizes[4])
    g = f + np.int64(sizes[2])
    h = g + np.int64(sizes[4])
    k = h + 4 + kinematic_rows
    z = k + constraint_rows
    y = z + iteration_rows
    factorize_scratch, solve_scratch = scratch_in(rows[y:], maxn)
    return (rows[:a], rows[a:b], rows[b:c], rows[c:d], rows[d:e], rows[e:f], rows[f:g], rows[g:h], rows[h:h + 1],
            rows[h + 1], rows[h + 2:h + 4], factorize_scratch, solve_scratch, rows[h + 4:k], rows[k:z], rows[z:y])


@njit(cache=True, inline="always")
def _iteration_state(lk, w, m):
    """Lane ``w``'s last ``qdd`` step and its verification's last change ``(2,)`` (:func:`_own_terms`' last)."""
    return lk[w, 2 * m:2 * m + 2]


@njit(cache=True, inline="always")
def _own_terms(lk, w, m):
    """Lane ``w``'s state's own terms in ``lk`` (:func:`_lane_sizes`): its ``k (m)`` (a refill's constraint terms
    overwrite the lanes' for every lane), the ``lambda (m)`` it loads its warm start into, and its outer
    iterations' last ``qdd`` step and its verification's last change ``(2,)``."""
    return lk[w, :m], lk[w, m:2 * m], _iteration_state(lk, w, m)


@njit(cache=True, **UNCOUNTED)
def _lanes_concluded(model, KL, kparts, constraints, lk, m, mu, li, X, RES, LAM, IT, tol, nv, out, flags):
    """What :func:`_advance` marked in ``IT`` (:func:`~mechanics.compiled_iterations._marked`), then the answers
    of the lanes whose iterations ended (row ``DONE``): each one's ``lambda``, residual and ``qdd`` out of the
    lanes, then :func:`_conclude` (no soft rows here: :meth:`~mechanics.compiled.CompiledDynamics.run`); the lane
    idles.  With embedded clusters, its joint torques too (:func:`_joint_torques`, from the lane's kinematics,
    which it keeps until it takes its next state)."""
    links = model[0]
    _marked(constraints, links, constraints[6], X, RES, LAM, IT, mu)
    for w in range(LANES):
        if IT[ix(DONE), w] == 0.0:
            continue
        b = li[STATE, w]
        li[STATE, w] = -1
        for i in range(nv):
            out[ix(b), ix(i)] = IT[ix(ITERATION_ROWS + i), w]
        _conclude(b, li[ITERS, w], np.bool_(True), links, constraints, _own_terms(lk, w, m)[0], RES[:, w], LAM[:, w],
                  X[:, w], tol, nv, out, flags)
        if constraints[6].shape[0] > 0:
            _joint_torques(model, KL[:, w], kparts, X[:, w], out[ix(b)], nv, m)


@njit(cache=True, inline="always")
def _lanes_moved(constraints, factors, KC, pairs, m, mu, Lin):
    """The iterating constraints' terms of the lanes whose outer iterations go on (``KC``'s row of moves, then
    cleared), moved for their ``lambda`` (``KC``'s, where the iterations in lanes keep it) in lanes
    (:func:`mechanics.compiled_fill._moves`)."""
    KK, MEAS, Kk, LAM, RES, MOVE, E = _constraint_parts(KC, pairs, m)
    moving = 0
    for w in range(LANES):
        moving += KC[ix(MOVE), w] != 0.0
    if moving == 0:
        return
    _moves(constraints, factors, KK, Kk, LAM, MEAS, E, mu, Lin, KC, MOVE, ITERATES, 1)
    vectors.fill(KC, MOVE, 0.0)


@njit(cache=True, inline="always")
def _lanes_solved(links, factors, scope, constraints, KC, pairs, m, mu, smaps, slane, Fw, Lin, X, C, cache,
                  Lres, D, need, fresh, tops):
    """One solve of the lanes that want one (``need``): a refinement step of ``X`` in place (:func:`_refine_step`
    in lanes: the residuals of every factor in lanes, one solve of the lanes into ``D``, the largest magnitude
    of each lane's correction and of its new values into ``tops``), or where ``fresh`` a solve of the linear
    terms themselves into ``X`` (one solve of ``Lin`` straight into ``X`` where every lane that wants one
    wants that).  Lanes that want none get meaningless numbers, which nothing reads."""
    stepping = 0  # lanes that want a refinement step
    for w in range(LANES):
        stepping += need[w] and not fresh[w]
    if stepping == 0:
        solve_one(smaps, C, Lin, Lin, cache, X, Lin, slane)
        return
    KK, MEAS, _, _, _, _, E = _constraint_parts(KC, pairs, m)  # (MEAS: as filled, or moved in lanes)
    _residual_terms(links, factors, scope, constraints, KK, MEAS, mu, Fw, Lin, X, Lres, E)
    for w in range(LANES):
        if need[w] and fresh[w]:
            _copy(Lin[:, w], Lres[:, w])
    solve_one(smaps, C, Lres, Lres, cache, D, Lres, slane)
    vectors.add_rows(X, D, tops, X.shape[0])
    for w in range(LANES):
        if need[w] and fresh[w]:
            _copy(D[:, w], X[:, w])


@njit(cache=True, inline="always")
def _lanes_advanced(li, lk, need, tops, ratio, m, refine, startable, iterating, IT, move, tol, max_iter):
    """Each lane's outer iterations between its solves in lanes (``need``): a fresh solve done, or verified
    from here; a refinement step judged by its change (``tops``: the correction's and the values' sizes);
    then advanced to its next solve (:func:`_advance`), or left to the numpy path (its state -1)."""
    for w in range(LANES):
        if need[w] == 0:
            continue
        step = _iteration_state(lk, w, m)
        if li[FRESH, w]:  # solved: done, or verified from here
            done = _fresh_done(li, w)
        else:
            done = _refined(li, step, w, tops[0, w] / max(tops[1, w], 2.2250738585072014e-308), refine, ratio[w])
        if done == 0:
            continue
        if done == -1:  # left to the numpy path
            need[w], li[STATE, w] = 0, -1
            continue
        need[w] = _advance(w, li, step, ratio[w], refine, startable, iterating, IT, move, tol, max_iter)


@njit(cache=True, **UNCOUNTED)
def lanes_kernel(TI, II, TF, IF, Q, V, TAU, F0, mu, tol, max_iter, refine, iterating, refill, patience, ws, wi, lw, li,
                 lk, out, flags):
    """:func:`dynamics_kernel` for a program of mostly tree and wide pairs (:func:`elimination.lanes.covers_pairs`),
    ``LANES`` states at a time: the new states' kinematics and link factors in lanes, each one's constraint
    terms and their factors into its lane (:func:`_refill`), one factorization of the lanes and their first solve without refinement
    (:func:`elimination.compiled.factorize_steps`, :func:`~elimination.compiled.solve_one` in lanes).  Then,
    where the program iterates, every lane's outer iterations advance to their next solve (:func:`_advance`: a
    refinement step, a fresh solve, a suspect pivot's verification step) and the solves run in lanes
    (:func:`_lanes_solved`); a lane whose state has its answer idles until ``refill`` lanes do and ``patience``
    rounds more have run, and they take the next states (the lanes' factorization again: the busy lanes' own
    conditionals come out as they were).
    A program that does not iterate runs the same way: its iterations end at their first iterate (refined in
    lanes where it asks for refinement).  The numbers of :func:`dynamics_kernel` bit for bit.  ``lw``, ``li``,
    ``lk``: the lanes' workspace, integers and each state's own constraint terms (:func:`_lane_sizes`), zeroed
    once when made."""
    fmaps, smaps, constraints, factors, scope, drops, sizes, unit, o, model, general = _unpacked_tables(TI, II, TF, IF)
    links, maxn = model[0], np.int64(sizes[6])
    m, nv, B, pairs = F0.shape[1], V.shape[1], Q.shape[0], constraints[2].shape[0]
    kparts = _kinematic_parts(links.shape[0], Q.shape[1], nv)
    qn = ws[o[0] + kparts[7]:o[0] + kparts[7] + Q.shape[1]]  # (the per-state kernel's q)
    fscr = factorize_scratch_in(ws[o[10]:o[11]], wi, maxn)
    Fw, C, Lin, Lmag, cache, X, Lres, D, floor, ratio, tops, flane, slane, KL, KC, IT = _lane_parts(
        lw, sizes, maxn, kparts[-1] + 1, constraint_rows(pairs, m), ITERATION_ROWS + nv)
    weak, failed, valid, need = li[WEAK], li[FAILED], li[VALID], li[NEED]
    fpair, ffront, fr, fok = flane
    KK, MEAS, Kk, LAM, RES, MOVE, E = _constraint_parts(KC, pairs, m)
    startable = refine > 0  # each re-solve refined from the last iterate (Factorization.startable), else fresh
    for w in range(LANES):
        li[STATE, w], need[w] = -1, 0
    loaded, waited = 0, 0
    while True:
        idle = 0
        for w in range(LANES):
            idle += li[STATE, w] < 0
        if loaded < B and (idle == LANES or (idle >= refill and waited >= patience)):
            waited = 0
            loaded = _refill(Q, V, TAU, F0, mu, loaded, model, constraints, general, factors, unit, pairs, m, qn, li,
                             lk, Fw, Lin, Lmag, floor, flags, KL, kparts, KC)
            factorize_steps(fmaps, Fw, C, floor, np.bool_(False), fscr, fpair, ffront, fr, fok, ratio, weak, failed)
            whole = idle == LANES  # (every lane new: the first solve straight into X)
            solve_one(smaps, C, Lin, Lin, cache, X if whole else D, Lin, slane)
            for i in range(0 if whole else X.shape[0]):  # the new lanes' first solve (KL's row of them: MASK)
                vectors.put(X, i, D, i, KL, kparts[10])
            _constraint_residual(constraints, KK, Kk, links, X, RES)
            _iterate_numbers(links, constraints[6], X, RES, IT)
            for w in range(LANES):  # each new state's iterations: up to its next solve in lanes, or all in its lane
                b = li[STATE, w]
                if valid[w] == 0:
                    continue
                li[STATE, w] = -1
                if failed[w] != -1:
                    continue
                step = _iteration_state(lk, w, m)
                li[PHASE, w], li[ITERS, w], li[STATE, w], step[0] = HEAD, 1, b, np.inf
                need[w] = _advance(w, li, step, ratio[w], refine, startable, iterating, IT, KC[MOVE], tol, max_iter)
            _lanes_concluded(model, KL, kparts, constraints, lk, m, mu, li, X, RES, LAM, IT, tol, nv, out, flags)
            _lanes_moved(constraints, factors, KC, pairs, m, mu, Lin)
            continue
        if idle == LANES:
            break
        waited += idle >= refill
        _lanes_solved(links, factors, scope, constraints, KC, pairs, m, mu, smaps, slane, Fw, Lin, X, C,
                      cache, Lres, D, need, li[FRESH], tops)
        _constraint_residual(constraints, KK, Kk, links, X, RES)  # (read by the lanes whose solve is done)
        _iterate_numbers(links, constraints[6], X, RES, IT)
        _lanes_advanced(li, lk, need, tops, ratio, m, refine, startable, iterating, IT, KC[MOVE], tol, max_iter)
        _lanes_concluded(model, KL, kparts, constraints, lk, m, mu, li, X, RES, LAM, IT, tol, nv, out, flags)
        _lanes_moved(constraints, factors, KC, pairs, m, mu, Lin)


@njit(cache=True, inline="always")
def _refill(Q, V, TAU, F0, mu, loaded, model, constraints, general, factors, unit, pairs, m, qn, li, lk, Fw, Lin,
            Lmag, floor, flags, KL, kparts, KC):
    """The next states, from ``loaded`` on, into the idle lanes (``li[STATE] < 0``), all in lanes: their
    kinematics, their links' factors, their constraint terms and the constraints' factors
    (:func:`~mechanics.compiled_kinematics._kinematics`, :func:`~mechanics.compiled_fill._fill_links`,
    :func:`~mechanics.compiled_kinematics._constraint_terms`, :func:`~mechanics.compiled_fill._fill_constraints`:
    ``KC``'s rows, :func:`~mechanics.compiled_kinematics._constraint_parts`), then each one's own
    constraint terms copied to its lane's ``lk`` for its iterations (``li[VALID]``: 1 where a state was loaded
    and the checks pass, its lane then holding it).  Returns how many states are loaded now."""
    n = model[0].shape[0]
    QN, VV, MASK, TOP = kparts[7], kparts[8], kparts[10], kparts[11]
    for w in range(LANES):
        li[VALID, w], KL[ix(MASK), w] = 0, 0.0
        if li[STATE, w] >= 0 or loaded >= Q.shape[0]:
            continue
        b = loaded
        loaded += 1
        flags[ix(b), STATUS], flags[ix(b), ITERATIONS], flags[ix(b), CONVERGED] = BAD_INPUT, 0, 0
        lam = _own_terms(lk, w, m)[1]
        if not _load_state(Q, V, TAU, F0, b, unit, qn, lam):
            continue
        flags[ix(b), STATUS], li[VALID, w], li[STATE, w], KL[ix(MASK), w] = FALLBACK, 1, b, 1.0
        for i in range(Q.shape[1]):
            KL[ix(QN + i), w] = qn[ix(i)]
        for i in range(V.shape[1]):
            KL[ix(VV + i), w] = V[ix(b), ix(i)]
    _kinematics(model, KL, kparts)
    _fill_links(model, constraints[6], factors, KL, kparts, TAU, li[STATE], Fw, Lin, Lmag)
    KK, MEAS, Kk, LAM, _, _, E = _constraint_parts(KC, pairs, m)
    _constraint_terms(constraints, general, model[6], n, KL, kparts, KK, Kk)
    for w in range(LANES):
        if li[VALID, w] != 0:
            _copy(_own_terms(lk, w, m)[1], LAM[:, w])
    _fill_constraints(constraints, factors, KK, MEAS, Kk, LAM, E, mu, Fw, Lin, KL, MASK, TOP)
    for w in range(LANES):  # each new state's k, kept for its answer
        if li[VALID, w] != 0:
            _copy(Kk[:, w], _own_terms(lk, w, m)[0])
            floor[0, w] = SCALE_FLOOR * KL[ix(TOP), w]
    return loaded
