"""The outer iterations of the compiled dynamics, one state at a time: solves with refinement and
verification (:mod:`elimination.numeric`'s), the policies' updates, the convergence status, and
:func:`dynamics_kernel`, one call's whole trip (000 Algorithms 3 and 6, as :class:`mechanics.outer.PolicyIterations`
under :func:`elimination.drive` with ``defer``).
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
    drop_stale_kernels, ACC, BAD_INPUT, CDIM, CONVERGED, FALLBACK, GMAP, ITERATES, ITERATIONS, KEEP, MULT, NV, NY, OK,
    PUSH, QDD, ROW0, STATUS, TAKE, TEST, V0, _unpacked_tables,
)
from .compiled_kinematics import (
    PENALTY_ROWS, _constraint_parts, _constraint_residual, _constraint_terms, _kinematic_parts, _kinematics,
    constraint_rows, kinematic_rows, normalized_units,
)
from .compiled_fill import _fill_constraints, _fill_links, _moves, _mu, _residual_terms

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


@njit(cache=True, inline="always")
def _refine_steps(solve_maps, sscr, work, C, Lmag, x, steps):
    """``steps`` refinement steps of ``x`` in place; the last one's change (0 without a step)."""
    change = 0.0
    for _ in range(steps):
        change = _refine_step(solve_maps, sscr, work, C, Lmag, x)
    return change


@njit(cache=True, inline="always")
def _started_solve(solve_maps, sscr, work, C, Lmag, x, refine, ratio):
    """:meth:`elimination.Factorization.solve` from the values ``x`` (its ``start``), in place: ``refine``
    refinement steps, and one more where the last may leave an error above ``WARM_RTOL``."""
    if started_error(_refine_steps(solve_maps, sscr, work, C, Lmag, x, refine), ratio) > WARM_RTOL:
        _refine_step(solve_maps, sscr, work, C, Lmag, x)  # a change too large for one step


@njit(cache=True, **UNCOUNTED)
def _solve(solve_maps, drops, sscr, work, C, Lmag, x, ratio, refine):
    """:meth:`elimination.Factorization.solve` for the linear terms in ``work``: the sweeps, the dropped
    rows' consistency, ``refine`` steps, and the verification of a suspect factorization.  False where the
    numpy path must answer (inconsistent dropped rows, refinement that does not settle).  One exit, no
    early return: numba then drops the reference counting of its arrays (elimination.compiled_pairs._revolute_pair)."""
    Lin, cache, dropped = work[8], work[12], work[13]
    solve_one(solve_maps, C, Lin, Lmag, cache, x, dropped, sscr)
    consistent = True
    for q in range(drops.shape[0]):
        off, d = drops[q, 0], drops[q, 1]
        for i in range(d):
            consistent = consistent and not abs(dropped[ix(off + i)]) > CONSISTENCY_RTOL * dropped[ix(off + d)]
    change = np.inf  # the last plain step's, where the verification goes on from it
    for _ in range(refine if consistent else 0):
        change = _refine_step(solve_maps, sscr, work, C, Lmag, x)
    suspect = ratio < PIVOT_SUSPECT_RTOL
    solved = consistent
    if solved and suspect:  # its refinement must settle
        solved = _verified(solve_maps, sscr, work, C, Lmag, x, ratio, np.bool_(False), change)
    return solved


@njit(cache=True, inline="always")
def _settles(change, previous, ratio, verified):
    """Whether a suspect factorization's refinement step that changed the solution by ``change`` (relative;
    the step before by ``previous``) ends its verification: a contraction seen (by this step, or ``verified``
    by an earlier solve) and an error left below ``WARM_RTOL`` (:func:`elimination.factorization._error_left`)."""
    rate = max(started_error(1.0, ratio), change / max(previous, 2.2250738585072014e-308))
    return (verified or change <= 0.5 * previous < np.inf) and change * rate <= WARM_RTOL


@njit(cache=True, inline="always")
def _may_be_answer(links, maps, x, qdd, res, iterations, tol, max_iter):
    """Whether the iterate ``x`` (its residual ``res``; the last iterate's ``qdd``) may be the answer: it meets
    the tolerance, or ``iterations`` reach ``max_iter``.  A re-solve's one more step where its change is large
    (:func:`_started_solve`'s) waits for this (:func:`elimination.drive`'s ``defer``)."""
    return iterations >= max_iter or min(_qdd_step(links, maps, x, qdd, False), _largest(res)) < tol


@njit(cache=True, inline="always")
def _finished(solve_maps, sscr, work, C, Lmag, x, ratio):
    """A re-solve's finishing steps of ``x`` in place, taken where its iterate may be the answer
    (:func:`elimination.drive`'s ``"finish"`` solve): :func:`_started_solve`'s one more step, or on a suspect factorization
    the steps until they settle (the first solve verified that they contract).  False where those do not."""
    settled = True
    if ratio < PIVOT_SUSPECT_RTOL:
        settled = _verified(solve_maps, sscr, work, C, Lmag, x, ratio, np.bool_(True), np.inf)
    else:
        _refine_step(solve_maps, sscr, work, C, Lmag, x)
    return settled


@njit(cache=True, **UNCOUNTED)
def _verified(solve_maps, sscr, work, C, Lmag, x, ratio, verified, previous):
    """Refinement steps of ``x`` in place until they settle (:meth:`elimination.Factorization._verified`, from
    a step that changed it by ``previous``; ``verified``: by an earlier solve): False where they do not (the
    numpy path then refuses the factorization)."""
    settled, small = True, 0
    for _ in range(SUSPECT_REFINE):
        change = _refine_step(solve_maps, sscr, work, C, Lmag, x)
        if _settles(change, previous, ratio, verified):
            settled = True
            break
        contracting = change > SETTLED_RTOL and change <= 0.5 * previous
        settled = not change > VERIFY_RTOL  # the last step's verdict, if the steps run out
        if change > VERIFY_RTOL and not contracting:
            settled = False
            break
        small = small + 1 if change <= VERIFY_RTOL else 0
        if not contracting or small > FINISHING_REFINE:
            settled = True
            break
        previous = change
    return settled


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


@njit(cache=True, **UNCOUNTED)
def _qdd_step(links, maps, x, qdd, set_qdd):
    """``max |qdd(x) - qdd|``; with ``set_qdd`` also ``qdd = qdd(x)``: each joint's value, or its embedded
    cluster's ``G_j y + g_j`` (``maps``: :func:`mechanics.compiled_tables._cluster_maps`)."""
    step = 0.0
    for l in range(links.shape[0]):
        v0, off, at = links[ix(l), V0], links[ix(l), QDD], links[ix(l), GMAP]
        nv, ny = links[ix(l), NV], links[ix(l), NY]
        for i in range(nv):
            if at < 0:
                value = x[ix(off + i)]
            else:
                value = 0.0
                for j in range(ny):
                    value += maps[ix(at + i * ny + j)] * x[ix(off + j)]
                value += maps[ix(at + nv * ny + i)]
            step = max(step, abs(value - qdd[ix(v0 + i)]))
            if set_qdd:
                qdd[ix(v0 + i)] = value
    return step


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
def _answer(b, ratio, solved, solve_maps, drops, sscr, work, C, Lmag, Lin0, rows, x, xn, refine, iterating, has_soft, tol,
            max_iter, nv, out, flags):
    """State ``b`` after its factorization (smallest pivot ratio ``ratio``): the first solve (unless ``solved``:
    its solve without refinement is in ``x`` already, where that is the first solve), the outer iterations,
    the convergence status, ``out[b]`` and ``flags[b]`` (``OK``; left ``FALLBACK`` where the numpy path
    must answer).  ``work``: the state's arrays (:func:`_refine_step`); ``rows``: its constraint rows ``k,
    meas, meas0, res, lam, corrected``."""
    links, constraints, Kbuf, mu, e = work[0], work[3], work[4], work[6], work[10]
    k, res, lam = rows[0], rows[3], rows[4]
    qdd = out[ix(b)]
    suspect = ratio < PIVOT_SUSPECT_RTOL
    startable = refine > 0 and drops.shape[0] == 0  # Factorization.startable
    deferred = startable and iterating and not suspect  # the first iterate's refinement (drive's defer)
    # a solve without refinement made already (the lanes') is the first solve where it has no refinement to do
    presolved = solved and not suspect and (deferred or refine == 0) and drops.shape[0] == 0
    if not presolved and not _solve(solve_maps, drops, sscr, work, C, Lmag, x, ratio, 0 if deferred else refine):
        return
    _qdd_step(links, constraints[6], x, qdd, True)
    _constraint_residual(constraints, Kbuf, k, links, x, res)
    iterations, step, ok = np.int64(1), np.inf, True  # (not a literal: one compiled _conclude)
    while True:  # elimination.drive's loop with defer, for one element
        if deferred and (_largest(res) < tol or iterations >= max_iter):  # it may be the answer: refined
            _started_solve(solve_maps, sscr, work, C, Lmag, x, refine, ratio)
            _qdd_step(links, constraints[6], x, qdd, True)
            _constraint_residual(constraints, Kbuf, k, links, x, res)
        deferred = False
        _update(constraints, x, res, lam, mu, e, 0, e, _mask_row(e))
        if min(step, _largest(res)) < tol or not iterating or iterations >= max_iter:
            break
        _moved(work, k, lam, ITERATES, 1)
        if startable:  # from the last iterate (Factorization.solve)
            _copy(x, xn)
            if started_error(_refine_steps(solve_maps, sscr, work, C, Lmag, xn, refine), ratio) > WARM_RTOL:
                _constraint_residual(constraints, Kbuf, k, links, xn, res)
                if _may_be_answer(links, constraints[6], xn, qdd, res, iterations + 1, tol, max_iter):
                    ok = _finished(solve_maps, sscr, work, C, Lmag, xn, ratio)
        elif not _solve(solve_maps, drops, sscr, work, C, Lmag, xn, ratio, refine):
            ok = False
        if not ok:  # the numpy path answers, or refuses
            break
        step = _qdd_step(links, constraints[6], xn, qdd, True)
        iterations += 1
        _copy(xn, x)
        _constraint_residual(constraints, Kbuf, k, links, x, res)
    if ok:
        _conclude(b, iterations, ratio, solve_maps, drops, sscr, work, C, Lmag, Lin0, rows, x, xn, refine, has_soft,
                  tol, nv, out, flags)


@njit(cache=True, **UNCOUNTED)
def _conclude(b, iterations, ratio, solve_maps, drops, sscr, work, C, Lmag, Lin0, rows, x, xn, refine, has_soft, tol,
              nv, out, flags):
    """State ``b``'s answer after ``iterations`` outer iterations ended at ``x`` (:func:`_answer`): the
    convergence status (a soft row's halving checked by one ALM correction, solved into ``xn``), ``out[b]`` and
    ``flags[b]`` (left ``FALLBACK`` where that solve needs the numpy path)."""
    links, constraints, Kbuf, meas, Lin = work[0], work[3], work[4], work[5], work[8]
    k, meas0, res, lam, corrected = rows[0], rows[2], rows[3], rows[4], rows[5]
    table, m, n = constraints[0], lam.shape[0], links.shape[0]
    c_forces, c_acc, c_res, c_k = nv, nv + m, nv + m + 6 * n, nv + 2 * m + 6 * n
    c_worst = nv + 3 * m + 6 * n  # then the hard rows' largest residual and largest |k| (_output_columns)
    tolerance = max(tol, RESIDUAL_RTOL * (1.0 + _largest(k)))
    converged = _rows_max(table, res, TEST, RESIDUAL) <= tolerance
    if has_soft and not _rows_max(table, res, TEST, HOLDS) <= tolerance:  # does one ALM correction halve it?
        _copy(Lin0, Lin)
        _copy(meas0, meas)
        _moved(work, k, lam, TEST, HOLDS)
        if not _solve(solve_maps, drops, sscr, work, C, Lmag, xn, ratio, refine):
            return
        _constraint_residual(constraints, Kbuf, k, links, xn, corrected)
        converged = converged and _soft_norm(table, corrected) <= SOFT_CONTRACTION * _soft_norm(table, res)
    for r in range(m):
        out[ix(b), ix(c_forces + r)], out[ix(b), ix(c_res + r)] = -lam[ix(r)], res[ix(r)]
        out[ix(b), ix(c_k + r)] = k[ix(r)]
    out[ix(b), ix(c_worst)] = _largest(res)
    out[ix(b), ix(c_worst + 1)] = _rows_max(table, res, TEST, EXACT)  # the hard rows'
    out[ix(b), ix(c_worst + 2)] = _rows_max(table, k, TEST, EXACT)
    _accelerations_out(links, x, out[ix(b)], c_acc)
    flags[ix(b), CONVERGED], flags[ix(b), ITERATIONS], flags[ix(b), STATUS] = converged, iterations, OK


def _workspace_parts(mechanism, constraints: tuple, program) -> np.ndarray:
    """Offsets of the kernel's float workspace parts (the order :func:`dynamics_kernel` carves them in): the
    kinematics' and the constraints' rows at width 1 (``KL``, ``KC``), ``meas0`` and ``corrected`` (``m``
    each), four rows of linear terms, three of values, a scratch row of ``E`` (``2 PENALTY_ROWS + 1``), the
    program's factor, conditional, cache and dropped workspaces, the factorization's and the solve's scratch."""
    n, m, maxn = len(mechanism.links), mechanism.constraint_dim, max_front(program)
    sizes = (kinematic_rows(n, mechanism.nq, mechanism.nv), constraint_rows(constraints[2].shape[0], m), 2 * m,
             4 * program.linear_size, 3 * program.value_size, 2 * PENALTY_ROWS + 1, program.factor_size,
             program.conditional_size, program.cache_size, program.dropped_size, factorize_scratch_size(maxn)[0],
             SOLVE_SCRATCH * maxn)
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
    Kbuf, meas, k, lam, res, _, E = _constraint_parts(ws[o[1]:o[2]], pairs, m)
    rows_m, rows_L = ws[o[2]:o[3]].reshape((2, m)), ws[o[3]:o[4]].reshape((4, linear_size))
    rows_x, e = ws[o[4]:o[5]].reshape((3, value_size)), ws[o[5]:o[6]]
    Fw, C, cache, dropped = ws[o[6]:o[7]], ws[o[7]:o[8]], ws[o[8]:o[9]], ws[o[9]:o[10]]
    fscr, sscr = factorize_scratch_in(ws[o[10]:o[11]], wi, maxn), solve_scratch_in(ws[o[11]:o[12]], maxn)
    meas0, corrected = rows_m[0], rows_m[1]
    Lin, Lin0, Lmag, Lres = rows_L[0], rows_L[1], rows_L[2], rows_L[3]
    x, xn, corr = rows_x[0], rows_x[1], rows_x[2]
    work = (links, factors, scope, constraints, Kbuf, meas, mu, Fw, Lin, Lres, e, corr, cache, dropped)
    rows = (k, meas, meas0, res, lam, corrected)
    has_soft, state = _has_soft(table), wi[wi.shape[0] - 1:]  # (the one lane's state: _fill_links reads its tau)
    vectors.fill(KL, MASK, 1.0)  # (the one lane takes each state)
    for b in range(Q.shape[0]):
        flags[ix(b), STATUS], flags[ix(b), ITERATIONS], flags[ix(b), CONVERGED] = BAD_INPUT, 0, 0
        if not _load_state(Q, V, TAU, F0, b, unit, KL[QN:QN + Q.shape[1]], lam):
            continue
        flags[ix(b), STATUS], state[0] = FALLBACK, b
        for i in range(nv):
            KL[ix(VV + i)] = V[ix(b), ix(i)]
        _kinematics(model, KL, kparts)
        _fill_links(model, constraints[6], factors, KL, kparts, TAU, state, Fw, Lin, Lmag)
        _constraint_terms(constraints, general, model[6], n, KL, kparts, Kbuf, k)
        _fill_constraints(constraints, factors, Kbuf, meas, k, lam, E, mu, Fw, Lin, KL, MASK, TOP)
        _copy(Lin, Lin0)
        _copy(meas, meas0)
        ratio, weak, failed = factorize_one(factorize_maps, Fw, C, SCALE_FLOOR * KL[ix(TOP)], check_rank != 0, fscr)
        if failed != -1:
            continue
        _answer(b, ratio, False, solve_maps, drops, sscr, work, C, Lmag, Lin0, rows, x, xn, refine, iterating, has_soft,
                tol, max_iter, nv, out, flags)
