"""The outer iterations of the compiled dynamics (000 Algorithms 3 and 6, as :class:`mechanics.outer.PolicyIterations`
under :func:`elimination.drive` with ``defer``), written once for one state and for sixteen side by side:
:func:`_advance` decides, from an iterate's numbers, what it does next and which solve follows (a started solve's
refinement, a verification of suspect pivots, a fresh re-solve); :func:`_refined` judges each refinement step;
:func:`_iterate_numbers` and :func:`_marked` are the numbers it reads and the updates it marks, at the width of
their operands (:mod:`elimination.vectors`).  Here they run one state at a time -- :func:`dynamics_kernel`, one
call's whole trip, each solve run to its end by :func:`_steps` -- and in :mod:`mechanics.compiled_lanes` sixteen
lanes whose solves run side by side; the two differ only in how a solve's steps are executed.
"""
from __future__ import annotations

import numpy as np
from numba import njit

import elimination.vectors as vectors
from elimination.compiled import (
    SOLVE_SCRATCH, factorize_one, factorize_scratch_in, factorize_scratch_size, max_front, solve_one, solve_scratch_in,
    started_error,
)
from elimination.compiled_front import UNCOUNTED, ix
from elimination.gaussian import CONSISTENCY_RTOL, PIVOT_SUSPECT_RTOL
from elimination.factorization import FINISHING_REFINE, SETTLED_RTOL, SUSPECT_REFINE, VERIFY_RTOL, WARM_RTOL
from elimination.numeric import SCALE_FLOOR

from .convergence import RESIDUAL_RTOL, SOFT_CONTRACTION
from .policies import EXACT, HOLDS, RESIDUAL
from .compiled_tables import (
    drop_stale_kernels, ACC, BAD_INPUT, CDIM, CLUSTER_TOP, CONVERGED, FALLBACK, GMAP, ITERATES, ITERATIONS, KEEP, MULT, NV, NY, OK,
    PUSH, QDD, ROW0, STATUS, TAKE, TEST, V0, _unpacked_tables,
)
from .compiled_kinematics import (
    PENALTY_ROWS, _constraint_parts, _constraint_residual, _constraint_terms, _kinematic_parts, _kinematics, _loop_maps,
    constraint_rows, kinematic_rows, normalized_units,
)
from .compiled_fill import _fill_constraints, _fill_links, _moves, _mu, _residual_terms
from .compiled_inverse import net_wrench, subtree_torques

drop_stale_kernels(__file__)


@njit(cache=True, **UNCOUNTED)
def _copy(src, dst):
    """``dst[:] = src``, element by element (numba's slice assignment needs reference counting)."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@njit(cache=True, **UNCOUNTED)
def _largest(a):
    top = 0.0
    for i in range(a.shape[0]):
        top = max(top, abs(a[ix(i)]))
    return top


@njit(cache=True, **UNCOUNTED)
def _refine_step(solve_maps, sscr, work, C, Lmag, x):
    """One step of iterative refinement of ``x`` in place; the size of the correction relative to ``x``."""
    links, factors, scope, constraints, Kbuf, meas, mu, Fw, Lin, Lres, e, corr, cache, dropped = work
    _residual_terms(links, factors, scope, constraints, Kbuf, meas, mu, Fw, Lin, x, Lres, e)
    solve_one(solve_maps, C, Lres, Lmag, cache, corr, dropped, sscr)
    for i in range(x.shape[0]):
        x[ix(i)] += corr[i]
    return _largest(corr) / max(_largest(x), 2.2250738585072014e-308)


# -- the outer iterations' decisions, one source for one state and for sixteen in lanes ---------------------------
# Integer rows, a column per state (one column here, sixteen in mechanics.compiled_lanes): the lanes'
# factorization's weakest and failed step and whether a state was loaded into a lane (WEAK, FAILED, VALID: the
# lanes' own), where the state's outer iterations stand (PHASE: at their HEAD, its first iterate REFINED, an
# iterate RESOLVED), its refinement steps so far in this solve, its iterations, the solve's MODE (0: a started
# solve's steps, 1: PLAIN steps, then a verification with SMALL changes in a row so far, 2: a verification of a
# factorization an earlier solve verified, 3: PLAIN steps alone), whether it wants a solve, the STATE it holds
# (-1: idle), whether its solve is FRESH (of its linear terms, not a step)
WEAK, FAILED, VALID, PHASE, COUNT, ITERS, MODE, NEED, STATE, PLAIN, SMALL, FRESH = range(12)
LANE_ROWS = 12
HEAD, REFINED, RESOLVED, FINISHED = range(4)  # (FINISHED: a re-solve's one more step taken where it may be the answer)
QDD_STEP, RES_TOP, SET_QDD, UPDATE, DONE, IT_T = range(6)  # float rows IT (:func:`_advance`'s numbers and marks)
ITERATION_ROWS = 6  # then the qdd the iterations kept (nv rows)


@njit(cache=True, inline="always")
def _settles(change, previous, ratio, verified):
    """Whether a suspect factorization's refinement step that changed the solution by ``change`` (relative;
    the step before by ``previous``) ends its verification: a contraction seen (by this step, or ``verified``
    by an earlier solve) and an error left below ``WARM_RTOL`` (:func:`elimination.factorization._error_left`)."""
    rate = max(started_error(1.0, ratio), change / max(previous, 2.2250738585072014e-308))
    return (verified or change <= 0.5 * previous < np.inf) and change * rate <= WARM_RTOL


@njit(cache=True, inline="always")
def _solving(li, state, w, mode, plain, fresh):
    """State ``w`` starts a solve (:meth:`elimination.Factorization.solve`): of its linear terms (``fresh``) or
    from its values, then (``mode`` 0) a started solve's refinement steps, (1) ``plain`` refinement steps and a
    verification's, (2) those of a factorization an earlier solve verified, or (3) ``plain`` steps alone."""
    li[MODE, w], li[PLAIN, w], li[COUNT, w], li[SMALL, w], li[FRESH, w], state[1] = mode, plain, 0, 0, fresh, np.inf
    return True


@njit(cache=True, inline="always")
def _fresh_done(li, w):
    """Whether state ``w``'s solve ends with its fresh solve (no refinement step follows: mode 0)."""
    li[FRESH, w] = 0
    return 0 if li[MODE, w] else 1


@njit(cache=True, inline="always")
def _refined(li, state, w, change, refine, ratio):
    """State ``w``'s solve after a refinement step that changed its values by ``change`` (relative): 0 where it
    wants another step, 1 where it is done, -1 where its verification did not settle (the numpy path then
    answers): a started solve's ``refine`` steps and one more where the error left may exceed ``WARM_RTOL``,
    or the plain steps then the verification of a suspect factorization
    (:meth:`elimination.Factorization._verified`, from the last plain step's change, kept in ``state[1]``)."""
    li[COUNT, w] += 1
    c = li[COUNT, w]
    if li[MODE, w] == 0:  # a started solve: refine steps, and one more where the change is large
        return 0 if c < refine or (c == refine and started_error(change, ratio) > WARM_RTOL) else 1
    if li[MODE, w] == 3:  # PLAIN steps alone, the last one's change kept (_advance reads it)
        state[1] = change
        return 0 if c < li[PLAIN, w] else 1
    if c <= li[PLAIN, w]:  # the plain steps, then at least one of the verification's
        state[1] = change
        return 0
    if _settles(change, state[1], ratio, li[MODE, w] == 2):
        return 1
    contracting = change > SETTLED_RTOL and change <= 0.5 * state[1]
    if change > VERIFY_RTOL and not contracting:
        return -1
    li[SMALL, w] = li[SMALL, w] + 1 if change <= VERIFY_RTOL else 0
    if not contracting or li[SMALL, w] > FINISHING_REFINE:
        return 1
    state[1] = change
    if c - li[PLAIN, w] < SUSPECT_REFINE:
        return 0
    return -1 if change > VERIFY_RTOL else 1  # the steps ran out: the last one's verdict


@njit(cache=True, inline="always")
def _advance(w, li, state, ratio, refine, startable, iterating, IT, moves, tol, max_iter):
    """State ``w``'s outer iterations (:func:`elimination.drive`'s loop with ``defer``) from where its last solve
    left them (``li[PHASE, w]``) to its next solve (:func:`_solving`), whose steps the kernel runs (one state:
    :func:`_steps`; in lanes: ``mechanics.compiled_lanes``): whether it wants one (False: its iterations
    ended).  The first solve's refinement waits until its iterate may be the answer where the re-solves start
    from the iterate (``startable``: :meth:`elimination.Factorization.startable`) and the pivots are not suspect
    (``ratio``); otherwise it is refined (and, suspect, verified) first.  A started re-solve's one more step
    where its change is large -- on a suspect factorization its steps until they settle -- waits the same way;
    a re-solve that is not started is fresh, refined and verified as the first.  ``state``: the last ``qdd``
    step and the solve's last change.

    The numbers are the iterate's ``qdd`` step and its residual's largest magnitude in ``IT``'s rows
    ``QDD_STEP``, ``RES_TOP``; what the iterate then does is marked there -- its ``qdd`` kept (``SET_QDD``),
    ``lambda`` updated (``UPDATE``), its answer (``DONE``) -- and in ``moves[w]``: its terms moved for the
    re-solve."""
    phase, suspect = li[PHASE, w], ratio < PIVOT_SUSPECT_RTOL
    deferred = startable and iterating and not suspect
    step, top = vectors.lane(IT, QDD_STEP, w), vectors.lane(IT, RES_TOP, w)
    if (startable and phase == RESOLVED and li[MODE, w] == 3 and started_error(state[1], ratio) > WARM_RTOL
            and (li[ITERS, w] + 1 >= max_iter or min(step, top) < tol)):  # a started solve's one more step, or
        li[PHASE, w] = FINISHED  # a suspect factorization's steps until they settle, where it may be the answer
        return _solving(li, state, w, 2, 0, 0) if suspect else _solving(li, state, w, 3, 1, 0)
    if phase == RESOLVED or phase == FINISHED:  # a re-solve, refined: the next iterate
        state[0] = step
        li[ITERS, w] += 1
        vectors.set_lane(IT, SET_QDD, w, 1.0)
    elif phase == REFINED:  # the first iterate, refined
        vectors.set_lane(IT, SET_QDD, w, 1.0)
    elif suspect:  # (HEAD) the first solve's refinement and verification
        li[PHASE, w] = REFINED
        return _solving(li, state, w, 1, refine, 0)
    elif refine > 0 and not deferred:  # (HEAD) the first solve's refinement, none to wait for
        li[PHASE, w] = REFINED
        return _solving(li, state, w, 3, refine, 0)
    else:  # (HEAD) the first iterate: refined now where it may be the answer
        vectors.set_lane(IT, SET_QDD, w, 1.0)
        if deferred and (top < tol or li[ITERS, w] >= max_iter):
            li[PHASE, w] = REFINED
            return _solving(li, state, w, 0, 0, 0)
    vectors.set_lane(IT, UPDATE, w, 1.0)  # (_update)
    if not iterating or min(state[0], top) < tol or li[ITERS, w] >= max_iter:
        vectors.set_lane(IT, DONE, w, 1.0)
        return False
    moves[w] = 1.0  # alm's and prox's terms (_moves)
    li[PHASE, w] = RESOLVED
    if not startable:  # a fresh solve, refined and verified as the first
        return _solving(li, state, w, 1 if suspect else (3 if refine > 0 else 0), refine, 1)
    # started: the steps alone (then _advance), a suspect factorization's too (the first solve verified it)
    return _solving(li, state, w, 3, refine, 0)


@njit(cache=True, **UNCOUNTED)
def _fresh(solve_maps, drops, sscr, work, C, Lmag, x):
    """The solve of the linear terms in ``work`` into ``x`` (the sweeps), and whether the dropped rows are
    consistent (False: the numpy path must answer)."""
    Lin, cache, dropped = work[8], work[12], work[13]
    solve_one(solve_maps, C, Lin, Lmag, cache, x, dropped, sscr)
    consistent = True
    for q in range(drops.shape[0]):
        off, d = drops[q, 0], drops[q, 1]
        for i in range(d):
            consistent = consistent and not abs(dropped[ix(off + i)]) > CONSISTENCY_RTOL * dropped[ix(off + d)]
    return consistent


@njit(cache=True, **UNCOUNTED)
def _steps(li, state, ratio, refine, solve_maps, drops, sscr, work, C, Lmag, x):
    """The solve :func:`_solving` set up for the one state, run to its end in ``x``: 1, or -1 where its dropped
    rows are inconsistent or its verification does not settle (the numpy path then answers)."""
    done = 0
    if li[FRESH, 0]:
        done = _fresh_done(li, 0) if _fresh(solve_maps, drops, sscr, work, C, Lmag, x) else -1
    while done == 0:
        done = _refined(li, state, 0, _refine_step(solve_maps, sscr, work, C, Lmag, x), refine, ratio)
    return done


@njit(cache=True, inline="always")
def _term(T, t, have, s, A, row):
    """One term ``s A[row]`` of :func:`_update`'s sum into row ``t`` of ``T``: its first term where ``have`` is
    False, added after the others; none where ``s`` is 0 (its row may not exist).  Whether the sum has a term
    now."""
    if s == 0.0:
        return have
    if have:
        vectors.add_scaled(T, t, A, row, s)
    else:
        vectors.scaled(T, t, s, A, row)
    return True


@njit(cache=True, inline="always")
def _update(constraints, X, RES, LAM, mu, T, t, M, mask):
    """Every constraint's ``lambda`` after a solve, in the lanes where row ``mask`` of ``M`` is set: its
    policy's ``push mu_s residual + keep lambda + take lambda_x`` (``PolicyNumbers``: 000 eq. 33, eq. 42, the
    penalty force), the absent terms left out -- so each built-in policy's arithmetic is its equation's, bit for
    bit (``T``'s row ``t``: the sum)."""
    table, numbers = constraints[0], constraints[3]
    for j in range(table.shape[0]):
        m, r0, mult = table[ix(j), CDIM], table[ix(j), ROW0], table[ix(j), MULT]
        keep, push, take = numbers[ix(j), KEEP], numbers[ix(j), PUSH], numbers[ix(j), TAKE]
        mu_s = _mu(constraints, j, mu)
        for r in range(m):
            have = _term(T, t, False, push * mu_s, RES, r0 + r)
            have = _term(T, t, have, keep, LAM, r0 + r)
            if not _term(T, t, have, take, X, mult + r):
                vectors.fill(T, t, 0.0)
            vectors.put(LAM, r0 + r, T, t, M, mask)


@njit(cache=True, inline="always")
def _joint_qdd(maps, X, off, at, nv, ny, top, i):
    """A joint's ``i``-th ``qdd`` in the values ``X`` (the joint's columns of the link table: ``off``, ``at``,
    ``nv``, ``ny``, ``top``), as a value (:func:`elimination.vectors.get`) -- its entry, or its embedded
    cluster's ``G_j y + g_j`` (``maps``: :func:`mechanics.compiled_tables._cluster_maps`), ``- P_j a_p`` where
    the map moves with the cluster's parent (its acceleration's values at ``top``)."""
    if at < 0:
        return vectors.get(X, off + i)
    t = vectors.zero(X)
    for j in range(ny):
        t = t + vectors.get(X, off + j) * maps[ix(at + i * ny + j)]
    t = t + maps[ix(at + nv * ny + i)]
    if top >= 0:
        for c in range(6):
            t = t - maps[ix(at + nv * ny + nv + 6 * i + c)] * vectors.get(X, top + c)
    return t


@njit(cache=True, inline="always")
def _iterate_numbers(links, maps, X, RES, IT):
    """The numbers :func:`_advance` reads of the iterate ``X``: its ``qdd`` step ``max |qdd(X) - qdd|`` from the
    ``qdd`` the iterations kept (``IT``'s rows from ``ITERATION_ROWS``) and its residual's ``max |RES|`` into
    ``IT``'s rows ``QDD_STEP``, ``RES_TOP``; the marks cleared.  The maxima are held as values (registers), a
    NaN passed over (``max``'s rule, :func:`elimination.vectors.largest`'s)."""
    top = vectors.zero(IT)
    for l in range(links.shape[0]):  # (each link's columns read once: stores to IT may alias them for LLVM)
        v0, off, at = links[ix(l), V0], links[ix(l), QDD], links[ix(l), GMAP]
        nv, ny = links[ix(l), NV], links[ix(l), NY]
        for i in range(nv):
            top = max(top, abs(_joint_qdd(maps, X, off, at, nv, ny, links[ix(l), CLUSTER_TOP], i) - vectors.get(IT, ITERATION_ROWS + v0 + i)))
    vectors.set(IT, QDD_STEP, top)
    top = vectors.zero(IT)
    for r in range(RES.shape[0]):
        top = max(top, abs(vectors.get(RES, r)))
    vectors.set(IT, RES_TOP, top)
    for row in (SET_QDD, UPDATE, DONE):
        vectors.fill(IT, row, 0.0)


@njit(cache=True, inline="always")
def _marked(constraints, links, maps, X, RES, LAM, IT, mu):
    """What :func:`_advance` marked: ``qdd = qdd(X)`` kept where ``SET_QDD``, ``lambda`` updated from ``RES``
    where ``UPDATE`` (:func:`_update`); the others keep theirs."""
    for l in range(links.shape[0]):
        v0, off, at = links[ix(l), V0], links[ix(l), QDD], links[ix(l), GMAP]
        nv, ny = links[ix(l), NV], links[ix(l), NY]
        for i in range(nv):
            vectors.set_where(IT, ITERATION_ROWS + v0 + i, _joint_qdd(maps, X, off, at, nv, ny, links[ix(l), CLUSTER_TOP], i), IT, SET_QDD)
    _update(constraints, X, RES, LAM, mu, IT, IT_T, IT, UPDATE)


@njit(cache=True, **UNCOUNTED)
def _rows_max(table, values, column, value):
    """``max |values|`` over the rows of the constraints whose ``column`` of the constraint table reads
    ``value`` (``TEST, RESIDUAL``: the ones judged by their residual; ``TEST, EXACT``: the hard ones; 0 if none)."""
    top = 0.0
    for j in range(table.shape[0]):
        if table[ix(j), column] == value:
            for r in range(table[ix(j), ROW0], table[ix(j), ROW0] + table[ix(j), CDIM]):
                top = max(top, abs(values[ix(r)]))
    return top


@njit(cache=True, **UNCOUNTED)
def _soft_norm(table, res):
    total = 0.0
    for j in range(table.shape[0]):
        if table[ix(j), TEST] == HOLDS:
            for r in range(table[ix(j), ROW0], table[ix(j), ROW0] + table[ix(j), CDIM]):
                total += res[ix(r)] * res[ix(r)]
    return np.sqrt(total)


@njit(cache=True, **UNCOUNTED)
def _load_state(Q, V, TAU, F0, b, unit, qn, lam):
    """State ``b``'s ``q`` into ``qn`` with its unit parts normalised, ``lam = -forces0``; False where
    :func:`mechanics.checks.check_state` refuses it (NaN / inf, a unit part beyond ``UNIT_NORM_TOL``)."""
    total = 0.0  # a sum is finite only if every term is
    for i in range(Q.shape[1]):
        qn[ix(i)] = Q[ix(b), ix(i)]
        total += Q[ix(b), ix(i)]
    for i in range(V.shape[1]):
        total += V[ix(b), ix(i)] + TAU[ix(b), ix(i)]
    for i in range(F0.shape[1]):
        lam[ix(i)] = -F0[ix(b), ix(i)]
        total += F0[ix(b), ix(i)]
    return normalized_units(qn, unit, np.isfinite(total))


@njit(cache=True, inline="always")
def _accelerations_out(links, x, row, c_acc):
    """The links' accelerations of the solution ``x`` into ``row[c_acc:]``, ``[angular; linear]`` as Pinocchio's
    ``[linear; angular]``."""
    for l in range(links.shape[0]):
        for c in range(3):
            row[ix(c_acc + 6 * l + c)] = x[ix(links[ix(l), ACC] + 3 + c)]
            row[ix(c_acc + 6 * l + 3 + c)] = x[ix(links[ix(l), ACC] + c)]


@njit(cache=True, inline="always")
def _has_soft(table):
    """Whether any constraint's policy is judged by one correction (``HOLDS``: ``soft``)."""
    soft = np.bool_(False)  # (np.bool_, not a literal: numba compiles a callee once per literal argument)
    for j in range(table.shape[0]):
        soft = soft or table[ix(j), TEST] == HOLDS
    return soft


@njit(cache=True, inline="always")
def _mask_row(e):
    """``e``'s last row set to 1: the one state's mask for the lane functions (:func:`_update`, :func:`_moved`)."""
    ones = e.shape[0] - 1
    vectors.fill(e, ones, 1.0)
    return ones


@njit(cache=True, inline="always")
def _moved(work, k, lam, column, value):
    """The moving terms of the constraints whose ``column`` of the table is ``value``, for one state's
    ``lambda`` (:func:`mechanics.compiled_fill._moves`)."""
    factors, constraints, Kbuf, meas, mu, Lin, e = work[1], work[3], work[4], work[5], work[6], work[8], work[10]
    _moves(constraints, factors, Kbuf, k, lam, meas, e, mu, Lin, e, _mask_row(e), column, value)


@njit(cache=True, inline="always")
def _answer(b, ratio, solve_maps, drops, sscr, work, C, Lmag, Lin0, rows, x, xn, refine, iterating, has_soft, tol,
            max_iter, nv, machine, out, flags):
    """State ``b`` after its factorization (smallest pivot ratio ``ratio``): the first solve, the outer
    iterations (:func:`_advance`, each solve run by :func:`_steps`), the soft rows' check (:func:`_soft_held`),
    ``out[b]`` and ``flags[b]`` (``OK``; left ``FALLBACK`` where the numpy path must answer).  ``work``: the
    state's arrays (:func:`_refine_step`); ``rows``: its constraint rows ``k, meas, meas0, res, lam, corrected``;
    ``machine``: its integers and ``IT``, ``moves``, ``state`` (:func:`_advance`'s, one column)."""
    links, constraints, Kbuf, mu = work[0], work[3], work[4], work[6]
    k, res, lam = rows[0], rows[3], rows[4]
    li, IT, moves, state = machine
    maps = constraints[6]
    startable = refine > 0 and drops.shape[0] == 0  # Factorization.startable
    if _fresh(solve_maps, drops, sscr, work, C, Lmag, x):
        li[PHASE, 0], li[ITERS, 0], state[0], wants = HEAD, 1, np.inf, 1
        while wants == 1:  # elimination.drive's loop with defer, for one state
            _constraint_residual(constraints, Kbuf, k, links, x, res)
            _iterate_numbers(links, maps, x, res, IT)
            moves[0] = 0.0
            wants = 1 if _advance(0, li, state, ratio, refine, startable, iterating, IT, moves, tol, max_iter) else 0
            _marked(constraints, links, maps, x, res, lam, IT, mu)
            if wants:
                if moves[0] != 0.0:
                    _moved(work, k, lam, ITERATES, 1)
                wants = _steps(li, state, ratio, refine, solve_maps, drops, sscr, work, C, Lmag, x)
        held, solved = True, wants == 0  # (wants -1: a solve the numpy path must answer)
        if solved and has_soft:
            held, solved = _soft_held(ratio, solve_maps, drops, sscr, work, C, Lmag, Lin0, rows, xn, refine, tol,
                                      machine)
        if solved:
            for i in range(nv):
                out[ix(b), ix(i)] = IT[ix(ITERATION_ROWS + i)]
            _conclude(b, li[ITERS, 0], held, links, constraints, k, res, lam, x, tol, nv, out, flags)


@njit(cache=True, inline="always")
def _tolerance(k, tol):
    """The residual a converged state reaches: ``tol``, or round-off of ``k`` where that is larger
    (:mod:`mechanics.convergence`)."""
    return max(tol, RESIDUAL_RTOL * (1.0 + _largest(k)))


@njit(cache=True, **UNCOUNTED)
def _soft_held(ratio, solve_maps, drops, sscr, work, C, Lmag, Lin0, rows, xn, refine, tol, machine):
    """Whether the soft rows hold (:data:`mechanics.policies.HOLDS`): their residual within the tolerance, or
    halved by one ALM correction (solved into ``xn`` as a fresh re-solve); and whether that solve was made (False:
    the numpy path must answer).  The per-state kernel's alone: the lanes run no soft rows."""
    links, constraints, Kbuf, meas, Lin = work[0], work[3], work[4], work[5], work[8]
    k, meas0, res, lam, corrected = rows[0], rows[2], rows[3], rows[4], rows[5]
    li, state, table = machine[0], machine[3], constraints[0]
    held, solved = True, True
    if not _rows_max(table, res, TEST, HOLDS) <= _tolerance(k, tol):  # does one ALM correction halve it?
        _copy(Lin0, Lin)
        _copy(meas0, meas)
        _moved(work, k, lam, TEST, HOLDS)
        suspect = ratio < PIVOT_SUSPECT_RTOL
        _solving(li, state, 0, 1 if suspect else (3 if refine > 0 else 0), refine, 1)
        solved = _steps(li, state, ratio, refine, solve_maps, drops, sscr, work, C, Lmag, xn) == 1
        _constraint_residual(constraints, Kbuf, k, links, xn, corrected)
        held = _soft_norm(table, corrected) <= SOFT_CONTRACTION * _soft_norm(table, res)
    return held, solved


@njit(cache=True, **UNCOUNTED)
def _conclude(b, iterations, held, links, constraints, k, res, lam, x, tol, nv, out, flags):
    """State ``b``'s answer after ``iterations`` outer iterations ended at ``x`` (:func:`_answer`): its
    convergence status (its residual-judged rows within the tolerance, and ``held``: its soft rows',
    :func:`_soft_held`), ``out[b]`` and ``flags[b]``, from its ``k``, residual ``res`` and ``lam (m)``."""
    table, m, n = constraints[0], lam.shape[0], links.shape[0]
    c_forces, c_acc, c_res, c_k = nv, nv + m, nv + m + 6 * n, nv + 2 * m + 6 * n
    c_worst = nv + 3 * m + 6 * n  # then the hard rows' largest residual and largest |k| (_output_columns)
    converged = held and _rows_max(table, res, TEST, RESIDUAL) <= _tolerance(k, tol)
    for r in range(m):
        out[ix(b), ix(c_forces + r)], out[ix(b), ix(c_res + r)] = -lam[ix(r)], res[ix(r)]
        out[ix(b), ix(c_k + r)] = k[ix(r)]
    out[ix(b), ix(c_worst)] = _largest(res)
    out[ix(b), ix(c_worst + 1)] = _rows_max(table, res, TEST, EXACT)  # the hard rows'
    out[ix(b), ix(c_worst + 2)] = _rows_max(table, k, TEST, EXACT)
    _accelerations_out(links, x, out[ix(b)], c_acc)
    flags[ix(b), CONVERGED], flags[ix(b), ITERATIONS], flags[ix(b), STATUS] = converged, iterations, OK


@njit(cache=True, inline="always")
def _joint_torques(model, KL, parts, x, row, nv, m):
    """``M qdd + b`` of the answer in ``row`` (its ``qdd`` first, :func:`_conclude`'s columns), from its links'
    accelerations in the solution ``x`` and the state's kinematics in ``KL`` (``parts``: its rows): each link's
    net wrench ``Iw_l a_l - f_b,l`` summed over its subtree, on its joint's ``S_l``, the armature's ``qdd``
    added -- :func:`mechanics.compiled_inverse.inverse_kernel`'s backward pass, on the accelerations the
    elimination already has.  Into ``row``'s ``inverse`` columns, the subtrees' wrenches through its
    ``wrenches`` ones (:func:`mechanics.compiled_tables._output_columns`): what an embedded cluster's forces
    are recovered from."""
    links, body, n = model[0], model[4], model[0].shape[0]
    c_tau = nv + 3 * m + 6 * n + 3
    c_w = c_tau + nv
    for l in range(n):
        net_wrench(KL, parts, l, x, links[ix(l), ACC], row, c_w)
    subtree_torques(links, body, KL, parts, row, c_w, row, 0, row, c_tau)


@njit(cache=True, inline="always")
def _machine(part, wi):
    """One state's integers of :func:`_advance` ``(LANE_ROWS, 1)`` (``wi``'s before its last entry, the state's
    index), and its ``moves (1,)``, ``state (2,)`` and ``IT (ITERATION_ROWS + nv,)`` from ``part``."""
    end = wi.shape[0] - 1
    return wi[end - LANE_ROWS:end].reshape((LANE_ROWS, 1)), part[3:], part[:1], part[1:3]


def _workspace_parts(mechanism, constraints: tuple, program) -> np.ndarray:
    """Offsets of the kernel's float workspace parts (the order :func:`dynamics_kernel` carves them in): the
    kinematics' and the constraints' rows at width 1 (``KL``, ``KC``), ``meas0`` and ``corrected`` (``m``
    each), four rows of linear terms, three of values, a scratch row of ``E`` (``2 PENALTY_ROWS + 1``), the
    program's factor, conditional, cache and dropped workspaces, the factorization's and the solve's scratch,
    the outer iterations' ``IT``, ``moves`` and ``state`` (:func:`_advance`'s, one column), and the embedded
    clusters' maps (:func:`mechanics.compiled_tables._cluster_maps`; a loop cluster's made per state)."""
    n, m, maxn = len(mechanism.links), mechanism.constraint_dim, max_front(program)
    sizes = (kinematic_rows(n, mechanism.nq, mechanism.nv), constraint_rows(constraints[2].shape[0], m), 2 * m,
             4 * program.linear_size, 3 * program.value_size, 2 * PENALTY_ROWS + 1, program.factor_size,
             program.conditional_size, program.cache_size, program.dropped_size, factorize_scratch_size(maxn)[0],
             SOLVE_SCRATCH * maxn, ITERATION_ROWS + mechanism.nv + 3, constraints[6].size)
    return np.cumsum((0,) + sizes).astype(np.int64)


@njit(cache=True, **UNCOUNTED)
def dynamics_kernel(TI, II, TF, IF, Q, V, TAU, F0, mu, tol, max_iter, refine, iterating, ws, wi, out, flags):
    """Forward dynamics of every state ``Q (B, nq), V, TAU (B, nv)``, warm start ``F0 (B, m)``, into ``out``
    and ``flags`` (:meth:`CompiledDynamics.run`).  ``TI, II``, ``TF, IF``: the integer and float tables,
    packed (:attr:`CompiledDynamics.tables`); ``ws``, ``wi``: the workspace, carved at ``parts``."""
    (factorize_maps, solve_maps, constraints, factors, scope, drops, sizes, unit, parts, model,
     general) = _unpacked_tables(TI, II, TF, IF)
    linear_size, value_size, maxn, check_rank = np.int64(sizes[2]), np.int64(sizes[4]), np.int64(sizes[6]), sizes[7]
    links, table = model[0], constraints[0]
    n, m, nv, pairs = links.shape[0], F0.shape[1], V.shape[1], constraints[2].shape[0]
    o = parts  # the workspace's parts, in _workspace_parts' order: zeroed once when made; every state writes
    # what it reads, and what no state writes stays zero (as it did between the states of one batch)
    KL, kparts = ws[o[0]:o[1]], _kinematic_parts(n, Q.shape[1], nv)  # one state: the lanes' rows at width 1
    QN, VV, MASK, TOP = kparts[7], kparts[8], kparts[10], kparts[11]
    maps, loops = ws[o[13]:o[14]], constraints[7].shape[0] > 0  # (the maps, a loop cluster's made per state)
    _copy(constraints[6], maps)
    constraints = (*constraints[:6], maps, *constraints[7:])
    Kbuf, meas, k, lam, res, _, E = _constraint_parts(ws[o[1]:o[2]], pairs, m)
    rows_m, rows_L = ws[o[2]:o[3]].reshape((2, m)), ws[o[3]:o[4]].reshape((4, linear_size))
    rows_x, e = ws[o[4]:o[5]].reshape((3, value_size)), ws[o[5]:o[6]]
    Fw, C, cache, dropped = ws[o[6]:o[7]], ws[o[7]:o[8]], ws[o[8]:o[9]], ws[o[9]:o[10]]
    fscr, sscr = factorize_scratch_in(ws[o[10]:o[11]], wi, maxn), solve_scratch_in(ws[o[11]:o[12]], maxn)
    machine = _machine(ws[o[12]:o[13]], wi)
    meas0, corrected = rows_m[0], rows_m[1]
    Lin, Lin0, Lmag, Lres = rows_L[0], rows_L[1], rows_L[2], rows_L[3]
    x, xn, corr = rows_x[0], rows_x[1], rows_x[2]
    work = (links, factors, scope, constraints, Kbuf, meas, mu, Fw, Lin, Lres, e, corr, cache, dropped)
    rows = (k, meas, meas0, res, lam, corrected)
    has_soft, state = _has_soft(table), wi[wi.shape[0] - 1:]  # (the one lane's state: _fill_links reads its tau)
    embedded = constraints[6].shape[0] > 0  # (embedded clusters' maps: their forces want the joint torques)
    vectors.fill(KL, MASK, 1.0)  # (the one lane takes each state)
    for b in range(Q.shape[0]):
        flags[ix(b), STATUS], flags[ix(b), ITERATIONS], flags[ix(b), CONVERGED] = BAD_INPUT, 0, 0
        if not _load_state(Q, V, TAU, F0, b, unit, KL[QN:QN + Q.shape[1]], lam):
            continue
        flags[ix(b), STATUS], state[0] = FALLBACK, b
        for i in range(nv):
            KL[ix(VV + i)] = V[ix(b), ix(i)]
        _kinematics(model, KL, kparts)
        _constraint_terms(constraints, general, model[6], n, KL, kparts, Kbuf, k)
        if loops and not _loop_maps(model, constraints, KL, kparts, Kbuf, k, maps):
            continue
        _fill_links(model, maps, factors, KL, kparts, TAU, state, Fw, Lin, Lmag)
        _fill_constraints(constraints, factors, Kbuf, meas, k, lam, E, mu, Fw, Lin, KL, MASK, TOP)
        _copy(Lin, Lin0)
        _copy(meas, meas0)
        ratio, weak, failed = factorize_one(factorize_maps, Fw, C, SCALE_FLOOR * KL[ix(TOP)], check_rank != 0, fscr)
        if failed != -1:
            continue
        _answer(b, ratio, solve_maps, drops, sscr, work, C, Lmag, Lin0, rows, x, xn, refine, iterating, has_soft,
                tol, max_iter, nv, machine, out, flags)
        if embedded and flags[ix(b), STATUS] == OK:  # (an embedded cluster's forces are recovered from these)
            _joint_torques(model, KL, kparts, x, out[ix(b)], nv, F0.shape[1])
