"""Constrained forward dynamics in one trip into compiled code: kinematics, fill, elimination, outer loop.

:class:`CompiledDynamics` is made once per prepared call
(:func:`mechanics.prepare` with a compiled backend).  It lays the mechanism,
its constraints and the GPLC graph's factor slots out as integer and float
tables -- what :mod:`mechanics.kinematics`, :mod:`mechanics.gplc` and
:mod:`mechanics.policies` compute, as data -- next to the plan's lowered
program (:mod:`elimination.program`).  One numba kernel then runs, per state:

1. the kinematics pass (world-frame poses, motion subspaces ``S_i``,
   velocities, bias accelerations ``a_b,i``, inertias ``H_i``, bias forces
   ``f_i``) and the constraint terms ``K a = k`` (Weld, Connect, General);
2. the fill: every factor's matrix and linear term written straight into the
   program's workspaces (no factor objects);
3. the factorization and the solves of :mod:`elimination.compiled`
   (:func:`~elimination.compiled.factorize_one`, :func:`~elimination.compiled.solve_one`),
   with the numpy path's refinement, verification of suspect pivots and
   consistency check of dropped rows;
4. the outer iterations of :func:`mechanics.dynamics.outer_iterations` (000
   Algorithms 3 and 6) and the convergence status of
   :mod:`mechanics.convergence`, per state.

It is the numpy path's arithmetic, not a new one: the tests compare the two on
every algorithm.  Two differences of scope: the scale floor of a variable with
no information is taken per state here (``SCALE_FLOOR`` times the state's
largest diagonal magnitude), over the whole batch on the numpy path; and the
outer iterations decide per state here, per batch there: the first solve's
refinement waits until the iterate may be the answer unless a pivot is suspect
(the state's, any element's), and a re-solve's one more step where its change
is large (a suspect factorization's steps until they settle) waits the same way,
the finishing steps per state here, per batch there; that change is the last refinement step's correction here, the
change from the last iterate there (the same where ``refine`` is 1).  Only states of
such batches can see either, at round-off.  Where the kernel meets
what only the numpy path can report or repair -- a pivot it refuses, hard rows
found dependent (re-planned there), a suspect factorization whose refinement
does not settle, dropped rows that contradict each other -- it says so per
state and the caller runs the numpy path, which names the variables.

Constraint policies enter as their numbers (:class:`mechanics.policies.PolicyNumbers`,
a row of the constraint tables each): any policy whose arithmetic is its
numbers' runs here; one with an ``update`` or ``moving_term`` of its own runs on
the numpy path (:attr:`CompiledDynamics.unsupported` says why).

A program of mostly tree and wide pairs (:func:`elimination.lanes.covers_pairs`:
ABA's, LCABA's, proxBBO's on the benchmark robots) runs sixteen states at a time
in :func:`lanes_kernel`: the new states' kinematics and their links' factors
computed in lanes too (:func:`_lane_kinematics`, :func:`_lane_fill_links`:
the per-state operations as vector operations, sixteen states per instruction),
each one's constraint terms into its lane, the lanes' factorization and first
solve (:mod:`elimination.lanes`); then each
lane's outer iterations run to its next solve -- a refinement step, a fresh
solve, a verification's step -- the solves of all lanes run as one residual
and one solve in lanes, and so on, a lane whose state has its answer taking
the next state -- the numbers of :func:`dynamics_kernel`, bit for bit.  A soft
row's iterations would run on a lane's strided columns (measured slower than
state by state): those batches run state by state.
"""
from __future__ import annotations

import numpy as np
from numba import njit

import elimination.compiled as elimination_compiled
import elimination.lanes as lanes
import elimination.vectors as vectors
from elimination.compiled import (
    FACTORIZE_MAPS, SOLVE_MAPS, SOLVE_SCRATCH, UNCOUNTED, announce_first_compile, cached6, dot6, drop_stale_cache,
    factorize_maps, factorize_one, factorize_scratch_in, factorize_scratch_size,
    factorize_maps_in, max_front, minus_dot6, packed, solve_maps, solve_maps_in, solve_one, solve_scratch_in,
    started_error, ix, unpacked1, unpacked2, unpacked3, unpacked4,
)
from elimination.gaussian import CONSISTENCY_RTOL, PIVOT_SUSPECT_RTOL
from elimination.numeric import FINISHING_REFINE, SCALE_FLOOR, SETTLED_RTOL, SUSPECT_REFINE, VERIFY_RTOL, WARM_RTOL
from elimination.lanes import LANES
from elimination.program import F, LINK_HALF, WIDE_LINK

from .checks import UNIT_NORM_TOL
from .convergence import RESIDUAL_RTOL, SOFT_CONTRACTION
from .keys import JointAcceleration, LinkAcceleration, LoopTerm, Multiplier, Penalty, Prior, ProximalPrior, Torque, TreeJoint
from .mechanism import GROUND, Connect, Weld
from .policies import EXACT, HOLDS, INFORMATION

JOINTS = {"fixed": 0, "revolute": 1, "revolute_unbounded": 2, "prismatic": 3, "spherical": 4, "planar": 5, "free": 6}
PRIOR, TORQUE, TREE, PENALTY, LOOP, PROXIMAL = range(6)  # factor kinds
WELD, CONNECT, GENERAL = range(3)  # constraint kinds
ROLES = {Prior: PRIOR, Torque: TORQUE, TreeJoint: TREE, Penalty: PENALTY, LoopTerm: LOOP, ProximalPrior: PROXIMAL}

# columns of the link table (PRIOR_F, TORQUE_F, TREE_F: the link's own factors' rows of the factor table, -1: none)
PARENT, JOINT, Q0, V0, NV, ACC, QDD, PRIOR_F, TORQUE_F, TREE_F = range(10)
# columns of the constraint table (MOVES, ITERATES, TEST: its policy's PolicyNumbers), and of its float table
CKIND, L1, L2, CDIM, ROW0, PAIR0, NPAIR, MULT, MOVING, MOVES, ITERATES, TEST = range(12)
STIFFNESS, KEEP, PUSH, TAKE = range(4)
# columns of the factor table (JOINT0: a tree factor's first joint column; JOINT_ONLY: 1 where only a tree
# pair's kernel reads it, through its joint columns -- the rest of [I, -I, -S] and the row scales go unwritten)
FKIND, WHO, PAIR, FIRST, MAT, SCL, LIN, SC0, SC1, FN, JOINT0, JOINT_ONLY = range(12)

OK, FALLBACK, BAD_INPUT = 0, 1, 2  # per-state status: the kernel's answer, the numpy path's to take, or a
# state the checks of mechanics.checks refuse (NaN / inf, a quaternion far from unit norm): they name it
ITERATIONS, CONVERGED, STATUS = range(3)  # columns of the kernel's integer output
# rows of lanes_kernel's integers, a column per lane: the factorization's weakest and failed step, whether a
# state was loaded into it, where its outer iterations stand (PHASE: at their HEAD, its first iterate REFINED,
# an iterate RESOLVED), its refinement steps so far in this solve, its iterations, the solve's MODE (0: a
# started solve's steps, 1: PLAIN steps, then a verification with SMALL changes in a row so far, 2: a
# verification of a factorization an earlier solve verified, 3: a re-solve's PLAIN steps alone), whether it
# wants a solve, the STATE it holds (-1: idle), whether its solve is FRESH (of its linear terms, not a step)
WEAK, FAILED, VALID, PHASE, COUNT, ITERS, MODE, NEED, STATE, PLAIN, SMALL, FRESH = range(12)
LANE_ROWS = 12
HEAD, REFINED, RESOLVED, FINISHED = range(4)  # (FINISHED: a re-solve's one more step taken, _may_be_answer)
REFILL, PATIENCE = 11, 1  # a refill waits until this many lanes (of sixteen) idle, and then one round more (the
# busy lanes may be about to finish: one factorization of the lanes serves them all).  B = 1024, us a state, the
# minimum of five calls: Cassie LCABA (9..12, 1) 22.8-23.3, (8, 1) 23.8, (14, 0) 25.4 (its states take 3-50
# iterations: a round's wait is a round of idle lanes); Solo12 LCABA (11, 1) 5.7, (10, 1) 5.9 (its states finish
# within a round of each other); Talos, two hands within noise of each other from (8, 1) to (12, 1).  (With eight
# lanes: (5, 1); a group at a time cost Cassie 1.35x.)  A refill's busy lanes get no solve: running their steps
# beside the new lanes' first solve (bit for bit the same) took 4% fewer rounds and cost Cassie 5% more.


drop_stale_cache(__file__, elimination_compiled.__file__, lanes.__file__, vectors.__file__)


class CompiledDynamics:
    """A mechanism's GPLC graph under one plan, as tables for :func:`dynamics_kernel`.

    Parameters
    ----------
    mechanism : Mechanism
    layout : mechanics.gplc.GPLCLayout
    plan : elimination.Plan
        Complete plan of ``layout.structure()``.

    Attributes
    ----------
    unsupported : str
        Why the kernel cannot run this mechanism / policy choice ("" when it can).
    """

    def __init__(self, mechanism, layout, plan):
        self.mechanism, self.layout, self.plan = mechanism, layout, plan
        self.program = program = plan.lowered()
        self.unsupported = program.unsupported or _unsupported(mechanism, layout)
        if self.unsupported:
            return
        index = {link.name: i for i, link in enumerate(mechanism.links)}
        index[GROUND] = len(mechanism.links)
        self.model = _model_tables(mechanism, index, program)
        self.constraints, pairs, self.general = _constraint_tables(mechanism, layout, index, program)
        self.factors, self.scope = _factor_tables(layout, program, self.constraints, pairs, mechanism, index)
        _own_factors(self.model[0], self.factors)
        steps = program.steps
        self.factorize_maps = factorize_maps(program)
        self.solve_maps = solve_maps(program)
        self.drops = np.ascontiguousarray(steps[steps[:, F["d"]] > 0][:, [F["drop"], F["d"]]], dtype=np.int64)
        self.sizes = np.array([program.factor_size, program.conditional_size, program.linear_size, program.cache_size,
                               program.value_size, program.dropped_size, max_front(program), int(program.check_rank)],
                              dtype=np.int64)
        self.iterating = any(p.iterates for p in layout.policies.values())
        self.soft = any(p.numbers.test == HOLDS for p in layout.policies.values())
        # a batch of a program of tree pairs runs LANES states at a time (lanes_kernel), bit for bit as one by one
        self.lanes = lanes.covers_pairs(program)
        self.lane_floats = self.lane_ints = self.lane_own = None
        self.refill, self.patience = REFILL, PATIENCE
        hard = np.concatenate([np.full(c.dim, layout.policies[c.name].numbers.test == EXACT)
                               for c in mechanism.constraints] or [np.zeros(0, bool)])
        self.hard_rows = hard if hard.any() else None  # constraint rows under the hard policy (None: no such rows)
        self.unit = np.array([(cols.start, cols.stop) for _, cols, _ in mechanism.unit_norm_columns],
                             dtype=np.int64).reshape(-1, 2)
        self.columns = _output_columns(mechanism)
        # one state's warm start, never written (not flagged read-only: numba would compile the kernel again)
        self.no_forces = np.zeros((1, mechanism.constraint_dim))
        self.width = self.columns["hard_k"] + 1
        self.link_count = len(mechanism.links)
        # the kernel's workspace, kept: numba holds the GIL, so no two calls share it at once
        self.parts = _workspace_parts(mechanism, self.constraints, program)
        self.floats = np.zeros(self.parts[-1])
        self.ints = np.zeros(factorize_scratch_size(int(self.sizes[6]))[1], dtype=np.int64)
        # every table in two flat arrays (the order dynamics_kernel unpacks them in): two arguments, not 48
        self.tables = (*packed([*self.factorize_maps, *self.solve_maps[1:], self.model[0], *self.constraints[:3],
                                self.factors, self.scope, self.drops, self.sizes, self.unit, self.parts]),
                       *packed([*self.model[1:], *self.general, self.constraints[3]]))

    def run(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray, forces0: np.ndarray, mu: float, tol: float,
            max_iter: int, refine: int) -> tuple:
        """Every state of ``q (B, nq)``, ``v, tau (B, nv)``, warm start ``forces0 (B, m)`` (Pinocchio's sign),
        as they come: the kernel checks them (finite, unit parts of ``q``) and normalises ``q``'s unit parts.

        Returns ``out (B, width)`` -- its parts at :attr:`columns`: ``qdd (nv)``, ``forces (m)``, link
        ``accelerations (n_links * 6)`` in ``[linear; angular]`` order, ``residual (m)``, ``k (m)``, ``worst``
        (``max |residual|``), ``hard_worst`` and ``hard_k`` (``max |residual|`` and ``max |k|`` over the rows
        under the ``hard`` policy, 0 without) -- and ``flags (B, 3)``: iterations, converged, status (``OK``;
        ``FALLBACK`` where the numpy path must answer; ``BAD_INPUT`` where :func:`mechanics.checks.check_state`
        refuses).
        """
        B, mech = q.shape[0], self.mechanism
        if not (v.shape[0] == tau.shape[0] == forces0.shape[0] == B and q.shape[1] == mech.nq
                and v.shape[1] == tau.shape[1] == mech.nv and forces0.shape[1] == mech.constraint_dim):
            raise ValueError(f"CompiledDynamics.run: shapes q {q.shape}, v {v.shape}, tau {tau.shape}, forces0 "
                             f"{forces0.shape} do not fit ({mech.nq}, {mech.nv}, {mech.constraint_dim}) per state")
        if self.lanes and B >= LANES and (refine == 0 and not self.iterating or self.iterating and not self.soft):
            # (where the iterations would run on a lane's columns, strided -- soft rows' iterations, or refined
            # first solves without re-solves -- state by state was measured faster: Talos LCABA 31.0 -> 34.0 us
            # a state before its re-solves ran in lanes)
            return self._run_lanes(q, v, tau, forces0, mu, tol, max_iter, refine)
        return self._run_states(q, v, tau, forces0, mu, tol, max_iter, refine)

    def _run_lanes(self, q, v, tau, forces0, mu, tol, max_iter, refine) -> tuple:
        """:meth:`run` of a program of tree pairs ``LANES`` states at a time (:func:`lanes_kernel`)."""
        # (3-5 minutes on a 2-core machine: sixteen lanes of every kernel it inlines)
        announce_first_compile(__file__, "the dynamics kernel for batches side by side", "lanes_kernel",
                               "a few minutes")
        if self.lane_floats is None:  # made at the first batch: zeroed once, as the state's workspace
            floats, ints, own = _lane_sizes(self.program, self.constraints, self.mechanism)
            self.lane_floats = lanes.aligned_zeros(floats)
            self.lane_ints, self.lane_own = np.zeros(ints, np.int64), np.zeros(own)
        out, flags = np.empty((q.shape[0], self.width)), np.empty((q.shape[0], 3), dtype=np.int64)
        lanes_kernel(*self.tables, q, v, tau, forces0, float(mu), float(tol), int(max_iter), int(refine), self.iterating,
                     self.refill, self.patience, self.floats, self.ints, self.lane_floats, self.lane_ints,
                     self.lane_own, out, flags)
        return out, flags

    def _run_states(self, q, v, tau, forces0, mu, tol, max_iter, refine) -> tuple:
        """:meth:`run` state by state (:func:`dynamics_kernel`)."""
        announce_first_compile(__file__, "the dynamics kernel", "dynamics_kernel")
        out, flags = np.empty((q.shape[0], self.width)), np.empty((q.shape[0], 3), dtype=np.int64)
        dynamics_kernel(*self.tables, q, v, tau, forces0, float(mu), float(tol), int(max_iter), int(refine),
                        self.iterating, self.floats, self.ints, out, flags)
        return out, flags

    def run_one(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray, mu: float, tol: float, max_iter: int,
                refine: int) -> tuple:
        """:meth:`run` of one state whose shapes and types the caller checked (:func:`mechanics.checks.plain_state`),
        with no warm start.  Returns its row of ``out`` and of ``flags``: a prepared call's whole trip, without
        the checks and reshapes of a batch (they were a third of a small robot's call)."""
        out, flags = np.empty((1, self.width)), np.empty((1, 3), dtype=np.int64)
        announce_first_compile(__file__, "the dynamics kernel", "dynamics_kernel")
        # the settings' types fixed here: an int mu would make numba compile the kernel once more
        dynamics_kernel(*self.tables, q[None], v[None], tau[None], self.no_forces, float(mu), float(tol),
                        int(max_iter), int(refine), self.iterating, self.floats, self.ints, out, flags)
        return out[0], flags[0]


def _output_columns(mechanism) -> dict:
    """Name -> first column (``slice`` of columns for arrays) of :meth:`CompiledDynamics.run`'s ``out``."""
    nv, m, n = mechanism.nv, mechanism.constraint_dim, len(mechanism.links)
    starts = np.cumsum([0, nv, m, 6 * n, m, m])
    names = ("qdd", "forces", "accelerations", "residual", "k")
    return {**{name: slice(int(a), int(b)) for name, a, b in zip(names, starts, starts[1:])}, "worst": int(starts[-1]),
            "hard_worst": int(starts[-1]) + 1, "hard_k": int(starts[-1]) + 2}


def _workspace_parts(mechanism, constraints: tuple, program) -> np.ndarray:
    """Offsets of the kernel's float workspace parts (the order :func:`dynamics_kernel` carves them in)."""
    n, m, nq = len(mechanism.links), mechanism.constraint_dim, mechanism.nq
    maxn = max_front(program)
    sizes = (9 * (n + 1), 3 * (n + 1), 6 * (n + 1), 36 * n, 6 * n, 36 * n, 6 * n,  # R p vel S bias Iw fb
             36 * max(constraints[2].shape[0], 1), 6 * m, 4 * program.linear_size, 3 * program.value_size,  # Kbuf rows
             max(6, maxn), program.factor_size, program.conditional_size, program.cache_size,  # e Fw C cache
             program.dropped_size, nq, factorize_scratch_size(maxn)[0], SOLVE_SCRATCH * maxn,  # dropped qn scratch
             6 + TERMS_SCRATCH)  # the kinematics' scratch
    return np.cumsum((0,) + sizes).astype(np.int64)


def _unsupported(mechanism, layout) -> str:
    for name, policy in layout.policies.items():
        if policy.lowered():
            return f"constraint {name!r} has the policy {policy!r}, whose numbers do not say it all: {policy.lowered()}"
    for c in mechanism.constraints:
        links = [l for l in c.links if l != GROUND]
        if len(set(links)) != len(links):
            return f"constraint {c.name!r} names a link twice"
    for slot in layout.slots:
        if type(slot.role) not in ROLES:
            return f"factor role {slot.role!r} runs on the numpy path only"
    return ""


def _model_tables(mechanism, index: dict, program) -> tuple:
    """Links (``PARENT ... QDD`` columns; their own factors' columns left -1 for :func:`_own_factors`) and
    their constant geometry and inertia."""
    n = len(mechanism.links)
    table = np.full((n, 10), -1, dtype=np.int64)
    axis, place_R, place_p = np.zeros((n, 3)), np.zeros((n, 3, 3)), np.zeros((n, 3))
    body, S_local = np.zeros((n, 13)), np.zeros((n, 6, 6))
    from .joints import motion_subspace

    for i, link in enumerate(mechanism.links):
        joint = link.joint
        qdd = program.value_offset[JointAcceleration(link.name)] if joint.nv else -1
        table[i, :QDD + 1] = (index[link.parent], JOINTS[joint.kind], mechanism.q_slices[link.name].start,
                    mechanism.v_slices[link.name].start, joint.nv, program.value_offset[LinkAcceleration(link.name)], qdd)
        if joint.axis is not None:
            axis[i] = joint.axis
        place_R[i], place_p[i] = link.placement.rotation, link.placement.translation
        body[i] = (link.mass, *link.com, *np.asarray(link.inertia).ravel())
        S_local[i, :, : joint.nv] = motion_subspace(joint)
    root = np.concatenate([np.zeros(3), -np.asarray(mechanism.gravity, dtype=float)])
    return table, axis, place_R, place_p, body, S_local, root


def _constraint_tables(mechanism, layout, index: dict, program) -> tuple:
    """Constraints (columns ``CKIND ... TEST``, and their policies' float numbers ``STIFFNESS ... TAKE``),
    their pairs ``(constraint, link)`` in the order of the policies' slots, and the float tables: axes,
    frame placements, General's constant ``K`` and ``k``."""
    constraints = mechanism.constraints
    nc = len(constraints)
    table = np.full((max(nc, 1), 12), -1, dtype=np.int64)[:nc]
    numbers = np.zeros((max(nc, 1), 4))[:nc]
    axes = np.zeros((max(nc, 1), 6), dtype=np.int64)
    place_R, place_p = np.zeros((max(nc, 1), 2, 3, 3)), np.zeros((max(nc, 1), 2, 3))
    pairs, K_const, k_const, row = [], [], np.zeros(mechanism.constraint_dim), 0
    root = np.concatenate([np.zeros(3), -np.asarray(mechanism.gravity, dtype=float)])
    for j, c in enumerate(constraints):
        policy = layout.policies[c.name]
        links = [l for l in c.links if l != GROUND]
        kind = WELD if isinstance(c, Weld) else CONNECT if isinstance(c, Connect) else GENERAL
        mult = program.value_offset.get(Multiplier(c.name), -1)
        l1, l2 = (index[c.link1], index[c.link2]) if kind != GENERAL else (-1, -1)
        codes, numbers[j] = policy.numbers.row()
        table[j] = (kind, l1, l2, c.dim, row, len(pairs), len(links), mult, layout.moving.get(c.name, -1), *codes)
        blocks = dict(zip(c.links, c.K)) if kind == GENERAL else {}
        for link in links:
            pairs.append((j, index[link]))
            K_const.append(np.pad(blocks[link], ((0, 6 - c.dim), (0, 0))) if kind == GENERAL else np.zeros((6, 6)))
        if kind == GENERAL:
            k = c.k - (blocks[GROUND] @ root if GROUND in blocks else 0.0)
            k_const[row : row + c.dim] = k
        else:
            axes[j, : c.dim] = c.axes
            place_R[j] = (c.placement1.rotation, c.placement2.rotation)
            place_p[j] = (c.placement1.translation, c.placement2.translation)
        row += c.dim
    pair_table = np.asarray(pairs, dtype=np.int64).reshape(len(pairs), 2)
    K_const = np.asarray(K_const, dtype=float).reshape(len(pairs), 6, 6)
    return (table, axes, pair_table, numbers), pair_table, (place_R, place_p, K_const, k_const)


def _factor_tables(layout, program, constraints: tuple, pairs: np.ndarray, mechanism, index: dict) -> tuple:
    """One row per graph factor (columns ``FKIND ... JOINT_ONLY``) and the values each one's scope reads."""
    table, cidx = constraints[0], {c.name: j for j, c in enumerate(mechanism.constraints)}
    dims = {v.key: v.dim for v in layout.variables}
    steps = program.steps
    paired = (steps[:, F["pair"]] == LINK_HALF) | ((steps[:, F["pair"]] == WIDE_LINK) & (steps[:, F["tq"]] >= 0))
    joint_columns = steps[paired, F["tq"]]  # where the pair kernels read their tree factors (elimination.compiled)
    rows, scope, start = [], [], 0
    for f, slot in enumerate(layout.slots):
        kind, role = ROLES[type(slot.role)], slot.role
        hard = slot.rows > 0
        who = index[role.link] if kind in (PRIOR, TORQUE, TREE) else cidx[role.constraint]
        pair, first = -1, 0
        if kind == LOOP:
            j = cidx[role.constraint]
            local = [p for p in range(table[j, PAIR0], table[j, PAIR0] + table[j, NPAIR])]
            pair = next(p for p in local if pairs[p, 1] == index[role.link])
            first = int(pair == local[0])
        values = np.concatenate([np.arange(program.value_offset[k], program.value_offset[k] + dims[k]) for k in slot.keys])
        scope.append(values)
        mat = program.A_offset[f] if hard else program.H_offset[f]
        scl = program.rs_offset[f] if hard else program.scale_offset[f]
        lin = program.b_offset[f] if hard else program.g_offset[f]
        n = len(values)
        joint0 = n - mechanism.links[who].joint.nv if kind == TREE else -1
        joint_only = kind == TREE and bool(np.any((joint_columns >= mat) & (joint_columns < mat + 6 * n)))
        rows.append((kind, who, pair, first, mat, scl, lin, start, start + n, n, joint0, int(joint_only)))
        start += n
    return np.asarray(rows, dtype=np.int64).reshape(len(rows), 12), np.concatenate(scope).astype(np.int64)


def _own_factors(links: np.ndarray, factors: np.ndarray) -> None:
    """Each link's prior, torque and tree factor (their rows of ``factors``) into its columns of ``links``."""
    column = {PRIOR: PRIOR_F, TORQUE: TORQUE_F, TREE: TREE_F}
    for f, (kind, who) in enumerate(factors[:, [FKIND, WHO]]):
        if kind in column:
            links[who, column[kind]] = f


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
    for l in range(n):  # (row views cost nothing here, uncounted: see elimination.compiled._revolute_pair)
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


TERMS_SCRATCH = 96  # floats of _constraint_terms' scratch


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


@njit(cache=True, **UNCOUNTED)
def _refine_steps(solve_maps, sscr, work, C, Lmag, x, steps):
    """``steps`` refinement steps of ``x`` in place; the last one's change (0 without a step)."""
    change = 0.0
    for _ in range(steps):
        change = _refine_step(solve_maps, sscr, work, C, Lmag, x)
    return change


@njit(cache=True, **UNCOUNTED)
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
    early return: numba then drops the reference counting of its arrays (elimination.compiled._revolute_pair)."""
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
    return consistent and (_verified(solve_maps, sscr, work, C, Lmag, x, ratio, False, change) if suspect else True)


@njit(cache=True, inline="always")
def _settles(change, previous, ratio, verified):
    """Whether a suspect factorization's refinement step that changed the solution by ``change`` (relative;
    the step before by ``previous``) ends its verification: a contraction seen (by this step, or ``verified``
    by an earlier solve) and an error left below ``WARM_RTOL`` (:func:`elimination.numeric._error_left`)."""
    rate = max(started_error(1.0, ratio), change / max(previous, 2.2250738585072014e-308))
    return (verified or change <= 0.5 * previous < np.inf) and change * rate <= WARM_RTOL


@njit(cache=True, inline="always")
def _may_be_answer(links, x, qdd, res, iterations, tol, max_iter):
    """Whether the iterate ``x`` (its residual ``res``; the last iterate's ``qdd``) may be the answer: it meets
    the tolerance, or ``iterations`` reach ``max_iter``.  A re-solve's one more step where its change is large
    (:func:`_started_solve`'s) waits for this (:func:`mechanics.dynamics.outer_iterations`)."""
    return iterations >= max_iter or min(_qdd_step(links, x, qdd, False), _largest(res)) < tol


@njit(cache=True, **UNCOUNTED)
def _finished(solve_maps, sscr, work, C, Lmag, x, ratio):
    """A re-solve's finishing steps of ``x`` in place, taken where its iterate may be the answer
    (:func:`mechanics.dynamics._finished`): :func:`_started_solve`'s one more step, or on a suspect factorization
    the steps until they settle (the first solve verified that they contract).  False where those do not."""
    settled = True
    if ratio < PIVOT_SUSPECT_RTOL:
        settled = _verified(solve_maps, sscr, work, C, Lmag, x, ratio, True, np.inf)
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


@njit(cache=True, **UNCOUNTED)
def _update(constraints, x, res, mu, lam):
    """Every constraint's ``lambda`` after a solve: its policy's ``push mu_s residual + keep lambda + take
    lambda_x`` (``PolicyNumbers``: 000 eq. 33, eq. 42, the penalty force), the absent terms left out -- so
    each built-in policy's arithmetic is its equation's, bit for bit."""
    table, numbers = constraints[0], constraints[3]
    for j in range(table.shape[0]):
        m, r0, mult = table[ix(j), CDIM], table[ix(j), ROW0], table[ix(j), MULT]
        keep, push, take = numbers[ix(j), KEEP], numbers[ix(j), PUSH], numbers[ix(j), TAKE]
        mu_s = _mu(constraints, j, mu)
        for r in range(m):
            t, have = 0.0, False
            if push != 0.0:
                t, have = (push * mu_s) * res[ix(r0 + r)], True
            if keep != 0.0:
                t, have = (t + lam[ix(r0 + r)] * keep if have else lam[ix(r0 + r)] * keep), True
            if take != 0.0:
                t = t + x[ix(mult + r)] * take if have else x[ix(mult + r)] * take
            lam[ix(r0 + r)] = t


@njit(cache=True, **UNCOUNTED)
def _qdd_step(links, x, qdd, set_qdd):
    """``max |qdd(x) - qdd|``; with ``set_qdd`` also ``qdd = qdd(x)``."""
    step = 0.0
    for l in range(links.shape[0]):
        v0, off = links[ix(l), V0], links[ix(l), QDD]
        for i in range(links[ix(l), NV]):
            step = max(step, abs(x[ix(off + i)] - qdd[ix(v0 + i)]))
            if set_qdd:
                qdd[ix(v0 + i)] = x[ix(off + i)]
    return step


@njit(cache=True, **UNCOUNTED)
def _rows_max(table, values, column, value):
    """``max |values|`` over the rows of the constraints whose ``column`` of the constraint table reads
    ``value`` (``ITERATES, 1``: the iterating ones; ``TEST, EXACT``: the hard ones; 0 if none)."""
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
    valid = np.isfinite(total)
    for u in range(unit.shape[0]):
        norm2 = 0.0
        for i in range(unit[ix(u), 0], unit[ix(u), 1]):
            norm2 += qn[ix(i)] * qn[ix(i)]
        valid = valid and abs(norm2 - 1.0) <= UNIT_NORM_TOL
        norm = np.sqrt(norm2) if valid else 1.0  # (a refused state is not read: no division by a zero norm)
        for i in range(unit[ix(u), 0], unit[ix(u), 1]):
            qn[ix(i)] /= norm
    return valid


@njit(cache=True, inline="always")
def _accelerations_out(links, x, row, c_acc):
    """The links' accelerations of the solution ``x`` into ``row[c_acc:]``, ``[angular; linear]`` as Pinocchio's
    ``[linear; angular]``."""
    for l in range(links.shape[0]):
        for c in range(3):
            row[ix(c_acc + 6 * l + c)] = x[ix(links[ix(l), ACC] + 3 + c)]
            row[ix(c_acc + 6 * l + 3 + c)] = x[ix(links[ix(l), ACC] + c)]


@njit(cache=True, inline="always")
def _unpacked_tables(TI, II, TF, IF):
    """The tables of :attr:`CompiledDynamics.tables`, unpacked: ``(factorize_maps, solve_maps, constraints,
    factors, scope, drops, sizes, unit, parts, model, general)``."""
    k0 = FACTORIZE_MAPS + SOLVE_MAPS
    constraints = (unpacked2(TI, II, k0 + 1), unpacked2(TI, II, k0 + 2), unpacked2(TI, II, k0 + 3),
                   unpacked2(TF, IF, 10))
    model = (unpacked2(TI, II, k0), unpacked2(TF, IF, 0), unpacked3(TF, IF, 1), unpacked2(TF, IF, 2),
             unpacked2(TF, IF, 3), unpacked3(TF, IF, 4), unpacked1(TF, IF, 5))
    general = (unpacked4(TF, IF, 6), unpacked3(TF, IF, 7), unpacked3(TF, IF, 8), unpacked1(TF, IF, 9))
    return (factorize_maps_in(TI, II), solve_maps_in(TI, II, FACTORIZE_MAPS), constraints, unpacked2(TI, II, k0 + 4),
            unpacked1(TI, II, k0 + 5), unpacked2(TI, II, k0 + 6), unpacked1(TI, II, k0 + 7), unpacked2(TI, II, k0 + 8),
            unpacked1(TI, II, k0 + 9), model, general)


@njit(cache=True, inline="always")
def _kinematic_parts(ws, o, n):
    """The kinematics' parts of the workspace ``ws`` (carved at ``o``, :func:`_workspace_parts`): ``R, p, vel,
    S, bias, Iw, fb``."""
    return (ws[o[0]:o[1]].reshape((n + 1, 3, 3)), ws[o[1]:o[2]].reshape((n + 1, 3)), ws[o[2]:o[3]].reshape((n + 1, 6)),
            ws[o[3]:o[4]].reshape((n, 6, 6)), ws[o[4]:o[5]].reshape((n, 6)), ws[o[5]:o[6]].reshape((n, 6, 6)),
            ws[o[6]:o[7]].reshape((n, 6)))


@njit(cache=True, inline="always")
def _has_soft(table):
    """Whether any constraint's policy is judged by one correction (``HOLDS``: ``soft``)."""
    soft = False
    for j in range(table.shape[0]):
        soft = soft or table[ix(j), TEST] == HOLDS
    return soft


@njit(cache=True, inline="always")
def _answer(b, ratio, solved, solve_maps, drops, sscr, work, C, Lmag, Lin0, rows, x, xn, refine, iterating, has_soft, tol,
            max_iter, nv, out, flags):
    """State ``b`` after its factorization (smallest pivot ratio ``ratio``): the first solve (unless ``solved``:
    its solve without refinement is in ``x`` already, where that is the first solve), the outer iterations,
    the convergence status, ``out[b]`` and ``flags[b]`` (``OK``; left ``FALLBACK`` where the numpy path
    must answer).  ``work``: the state's arrays (:func:`_refine_step`); ``rows``: its constraint rows ``k,
    meas, meas0, res, lam, corrected``."""
    links, factors, constraints, Kbuf, meas, mu, Lin = work[0], work[1], work[3], work[4], work[5], work[6], work[8]
    k, res, lam = rows[0], rows[3], rows[4]
    table = constraints[0]
    qdd = out[ix(b)]
    suspect = ratio < PIVOT_SUSPECT_RTOL
    startable = refine > 0 and drops.shape[0] == 0  # Factorization.startable
    deferred = startable and iterating and not suspect  # the first iterate's refinement (outer_iterations)
    # a solve without refinement made already (the lanes') is the first solve where it has no refinement to do
    presolved = solved and not suspect and (deferred or refine == 0) and drops.shape[0] == 0
    if not presolved and not _solve(solve_maps, drops, sscr, work, C, Lmag, x, ratio, 0 if deferred else refine):
        return
    _qdd_step(links, x, qdd, True)
    _constraint_residual(constraints, Kbuf, k, links, x, res)
    iterations, step, ok = 1, np.inf, True
    while True:  # outer_iterations, for one element
        if deferred and (_largest(res) < tol or iterations >= max_iter):  # it may be the answer: refined
            _started_solve(solve_maps, sscr, work, C, Lmag, x, refine, ratio)
            _qdd_step(links, x, qdd, True)
            _constraint_residual(constraints, Kbuf, k, links, x, res)
        deferred = False
        _update(constraints, x, res, mu, lam)
        if min(step, _largest(res)) < tol or not iterating or iterations >= max_iter:
            break
        for j in range(table.shape[0]):
            if table[ix(j), ITERATES]:
                _move(constraints, factors, Kbuf, k, lam, mu, j, Lin, meas)
        if startable:  # from the last iterate (Factorization.solve)
            _copy(x, xn)
            if started_error(_refine_steps(solve_maps, sscr, work, C, Lmag, xn, refine), ratio) > WARM_RTOL:
                _constraint_residual(constraints, Kbuf, k, links, xn, res)
                if _may_be_answer(links, xn, qdd, res, iterations + 1, tol, max_iter):
                    ok = _finished(solve_maps, sscr, work, C, Lmag, xn, ratio)
        elif not _solve(solve_maps, drops, sscr, work, C, Lmag, xn, ratio, refine):
            ok = False
        if not ok:  # the numpy path answers, or refuses
            break
        step = _qdd_step(links, xn, qdd, True)
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
    links, factors, constraints, Kbuf, meas, mu, Lin = work[0], work[1], work[3], work[4], work[5], work[6], work[8]
    k, meas0, res, lam, corrected = rows[0], rows[2], rows[3], rows[4], rows[5]
    table, m, n = constraints[0], lam.shape[0], links.shape[0]
    c_forces, c_acc, c_res, c_k = nv, nv + m, nv + m + 6 * n, nv + 2 * m + 6 * n
    c_worst = nv + 3 * m + 6 * n  # then the hard rows' largest residual and largest |k| (_output_columns)
    tolerance = max(tol, RESIDUAL_RTOL * (1.0 + _largest(k)))
    converged = _rows_max(table, res, ITERATES, 1) <= tolerance
    if has_soft and not _rows_max(table, res, TEST, HOLDS) <= tolerance:  # does one ALM correction halve it?
        _copy(Lin0, Lin)
        _copy(meas0, meas)
        for j in range(table.shape[0]):
            if table[ix(j), TEST] == HOLDS:
                _move(constraints, factors, Kbuf, k, lam, mu, j, Lin, meas)
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


@njit(cache=True, **UNCOUNTED)
def dynamics_kernel(TI, II, TF, IF, Q, V, TAU, F0, mu, tol, max_iter, refine, iterating, ws, wi, out, flags):
    """Forward dynamics of every state ``Q (B, nq), V, TAU (B, nv)``, warm start ``F0 (B, m)``, into ``out``
    and ``flags`` (:meth:`CompiledDynamics.run`).  ``TI, II``, ``TF, IF``: the integer and float tables,
    packed (:attr:`CompiledDynamics.tables`); ``ws``, ``wi``: the workspace, carved at ``parts``."""
    (factorize_maps, solve_maps, constraints, factors, scope, drops, sizes, unit, parts, model,
     general) = _unpacked_tables(TI, II, TF, IF)
    linear_size, value_size, maxn, check_rank = np.int64(sizes[2]), np.int64(sizes[4]), np.int64(sizes[6]), sizes[7]
    links, table = model[0], constraints[0]
    n, m, nv = links.shape[0], F0.shape[1], V.shape[1]
    o = parts  # the workspace's parts, in _workspace_parts' order: zeroed once when made; every state writes
    # what it reads, and what no state writes stays zero (as it did between the states of one batch)
    R, p, vel, S, bias, Iw, fb = _kinematic_parts(ws, o, n)
    Kbuf = ws[o[7]:o[8]].reshape((-1, 6, 6))
    rows_m, rows_L = ws[o[8]:o[9]].reshape((6, m)), ws[o[9]:o[10]].reshape((4, linear_size))
    rows_x, e = ws[o[10]:o[11]].reshape((3, value_size)), ws[o[11]:o[12]]
    Fw, C, cache, dropped = ws[o[12]:o[13]], ws[o[13]:o[14]], ws[o[14]:o[15]], ws[o[15]:o[16]]
    qn = ws[o[16]:o[17]]
    fscr, sscr = factorize_scratch_in(ws[o[17]:o[18]], wi, maxn), solve_scratch_in(ws[o[18]:o[19]], maxn)
    jv, terms_scratch = ws[o[19]:o[19] + 6], ws[o[19] + 6:o[20]]
    k, meas, meas0, res, lam, corrected = rows_m[0], rows_m[1], rows_m[2], rows_m[3], rows_m[4], rows_m[5]
    Lin, Lin0, Lmag, Lres = rows_L[0], rows_L[1], rows_L[2], rows_L[3]
    x, xn, corr = rows_x[0], rows_x[1], rows_x[2]
    work = (links, factors, scope, constraints, Kbuf, meas, mu, Fw, Lin, Lres, e, corr, cache, dropped)
    rows = (k, meas, meas0, res, lam, corrected)
    has_soft = _has_soft(table)
    for b in range(Q.shape[0]):
        flags[ix(b), STATUS], flags[ix(b), ITERATIONS], flags[ix(b), CONVERGED] = BAD_INPUT, 0, 0
        if not _load_state(Q, V, TAU, F0, b, unit, qn, lam):
            continue
        flags[ix(b), STATUS] = FALLBACK
        _kinematics(model, qn, V[ix(b)], R, p, S, vel, bias, Iw, fb, jv)
        _constraint_terms(constraints, general, model[6], R, p, vel, Kbuf, k, terms_scratch)
        largest = _fill(model, constraints, factors, S, bias, Iw, fb, Kbuf, k, TAU[ix(b)], lam, mu, Fw, Lin, Lmag, meas)
        _copy(Lin, Lin0)
        _copy(meas, meas0)
        ratio, weak, failed = factorize_one(factorize_maps, Fw, C, SCALE_FLOOR * largest, check_rank != 0, fscr)
        if failed != -1:
            continue
        _answer(b, ratio, False, solve_maps, drops, sscr, work, C, Lmag, Lin0, rows, x, xn, refine, iterating, has_soft,
                tol, max_iter, nv, out, flags)


def _lane_sizes(program, constraints: tuple, mechanism) -> tuple:
    """Floats of :func:`_lane_parts`' workspace (a float per lane per entry), its integer rows, and the floats
    per lane of each state's own constraint terms (``Kbuf``, ``k``, the measurements, ``lambda``)."""
    m = mechanism.constraint_dim
    entries = (program.factor_size + program.conditional_size + 3 * program.linear_size + program.cache_size
               + 2 * program.value_size + 4 + lanes.pairs_scratch_rows(max_front(program))
               + lane_kinematic_rows(len(mechanism.links), mechanism.nq, mechanism.nv)
               + lane_constraint_rows(constraints[2].shape[0], m) + ITERATION_ROWS + mechanism.nv)
    return entries * LANES, (LANE_ROWS, LANES), (LANES, 36 * constraints[2].shape[0] + 4 * m + 2)


@njit(cache=True, inline="always")
def _lane_parts(lw, sizes, maxn, kinematic_rows, constraint_rows, iteration_rows):
    """:func:`lanes_kernel`'s lanes, carved from ``lw``: ``Fw, C, Lin, Lmag, cache, X, Lres, corrections
    (entries, LANES)``, the scale floors ``(1, LANES)``, the pivot ratios ``(LANES,)``, the largest
    magnitudes of a correction and its values ``(2, LANES)``, :func:`elimination.lanes.factorize_pairs`' and
    ``solve_pairs``' scratch, the kinematics' rows ``KL`` (:func:`_lane_kinematic_parts`), the
    constraints' rows ``KC`` (:func:`_lane_constraint_parts`) and the outer iterations' ``IT``
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
    factorize_scratch, solve_scratch = lanes.pairs_scratch_in(rows[y:], maxn)
    return (rows[:a], rows[a:b], rows[b:c], rows[c:d], rows[d:e], rows[e:f], rows[f:g], rows[g:h], rows[h:h + 1],
            rows[h + 1], rows[h + 2:h + 4], factorize_scratch, solve_scratch, rows[h + 4:k], rows[k:z], rows[z:y])


@njit(cache=True, inline="always")
def _iteration_state(lk, w, pairs, m):
    """Lane ``w``'s last ``qdd`` step and its verification's last change ``(2,)`` (:func:`_own_terms`' last)."""
    K = 36 * pairs + 4 * m
    return lk[w, K:K + 2]


@njit(cache=True, inline="always")
def _own_terms(lk, w, pairs, m):
    """Lane ``w``'s state's own constraint terms in ``lk`` (:func:`_lane_sizes`): ``Kbuf (pairs, 6, 6), k,
    meas, lam, res (m)``, and its outer iterations' last ``qdd`` step and its verification's last change
    ``(2,)``."""
    K = 36 * pairs
    return (lk[w, :K].reshape((pairs, 6, 6)), lk[w, K:K + m], lk[w, K + m:K + 2 * m], lk[w, K + 2 * m:K + 3 * m],
            lk[w, K + 3 * m:K + 4 * m], _iteration_state(lk, w, pairs, m))


@njit(cache=True, **UNCOUNTED)
def _lanes_concluded(links, factors, scope, constraints, lk, pairs, m, mu, li, ratio, smaps, drops, sscr, Fw, Lin, C,
                     Lmag, cache, X, RES, LAM, IT, Lin0, Lres1, e, corr, dropped, meas0, corrected, xn, refine,
                     has_soft, tol, nv, out, flags):
    """What :func:`_advance` marked in ``IT`` (:func:`_lanes_updated`), then the answers of the lanes whose
    iterations ended (row ``DONE``): each one's ``lambda``, residual and ``qdd`` out of the lanes, then
    :func:`_conclude`; the lane idles."""
    _lanes_updated(constraints, links, X, RES, LAM, IT, mu)
    for w in range(LANES):
        if IT[ix(DONE), w] == 0.0:
            continue
        b = li[STATE, w]
        li[STATE, w] = -1
        Kbuf, k, meas, lam, res, step = _own_terms(lk, w, pairs, m)
        _copy(LAM[:, w], lam)
        _copy(RES[:, w], res)
        for i in range(nv):
            out[ix(b), ix(i)] = IT[ix(ITERATION_ROWS + i), w]
        work = (links, factors, scope, constraints, Kbuf, meas, mu, Fw[:, w], Lin[:, w], Lres1, e, corr, cache[:, w],
                dropped)
        _conclude(b, li[ITERS, w], ratio[w], smaps, drops, sscr, work, C[:, w], Lmag[:, w], Lin0,
                  (k, meas, meas0, res, lam, corrected), X[:, w], xn, refine, has_soft, tol, nv, out, flags)


@njit(cache=True, inline="always")
def _solving(li, state, w, verify, plain, fresh):
    """Lane ``w`` starts a solve: of its linear terms (``fresh``) or from its values, then ``_started_solve``'s
    refinement steps, or (``verify`` 1) ``plain`` refinement steps and :func:`_verified`'s, or (2) those of a
    factorization an earlier solve verified."""
    li[MODE, w], li[PLAIN, w], li[COUNT, w], li[SMALL, w], li[FRESH, w], state[1] = verify, plain, 0, 0, fresh, np.inf
    return True


@njit(cache=True, inline="always")
def _refined(li, state, w, change, refine, ratio):
    """Lane ``w``'s solve after a refinement step that changed its values by ``change`` (relative): 0 where it
    wants another step, 1 where it is done, -1 where its verification did not settle (the numpy path then
    answers).  The decisions of :func:`_started_solve`, and of ``refine`` plain steps then :func:`_verified`
    (from the last plain step's change)."""
    li[COUNT, w] += 1
    c = li[COUNT, w]
    if li[MODE, w] == 0:  # _started_solve: refine steps, and one more where the change is large
        return 0 if c < refine or (c == refine and started_error(change, ratio) > WARM_RTOL) else 1
    if li[MODE, w] == 3:  # a re-solve's PLAIN steps alone, the last one's change kept (_advance reads it)
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
def _advance(w, li, state, ratio, refine, IT, moves, tol, max_iter):
    """Lane ``w``'s outer iterations (:func:`_answer`'s loop, where each re-solve starts from the last iterate)
    from where its last refined solve left them (``li[PHASE, w]``) to its next refined solve (:func:`_solving`),
    whose steps :func:`lanes_kernel` runs in lanes: whether it wants one (False: its iterations ended).  The
    first solve's refinement waits until its iterate may be the answer, unless the pivots are suspect
    (``ratio``): then it is refined and verified first; a re-solve's one more step where its change is large --
    on a suspect factorization its steps until they settle -- waits the same way (:func:`_may_be_answer`).  A
    re-solve refines the iterate in place: the per-state kernel refines a copy and copies it back, the same
    numbers.  ``state``: the lane's last ``qdd`` step and its verification's (or re-solve's) last change.

    The numbers are the lanes' (:func:`_lane_steps`: the iterate's ``qdd`` step and its residual's largest
    magnitude in ``IT``); what the iterate then does, in lanes, is marked in ``IT`` for
    :func:`_lanes_updated` -- its ``qdd`` kept (``SET_QDD``), ``lambda`` updated (``UPDATE``) -- its answer
    for :func:`_lanes_concluded` (``DONE``), and in ``moves[w]`` for :func:`_lanes_moved`: its terms moved
    for the re-solve."""
    phase, suspect = li[PHASE, w], ratio < PIVOT_SUSPECT_RTOL
    step, top = IT[ix(QDD_STEP), w], IT[ix(RES_TOP), w]
    if (phase == RESOLVED and li[MODE, w] == 3 and started_error(state[1], ratio) > WARM_RTOL
            and (li[ITERS, w] + 1 >= max_iter or min(step, top) < tol)):  # _started_solve's one more step, or
        li[PHASE, w] = FINISHED  # a suspect factorization's steps until they settle (_may_be_answer)
        return _solving(li, state, w, 2, 0, 0) if suspect else _solving(li, state, w, 3, 1, 0)
    if phase == RESOLVED or phase == FINISHED:  # a re-solve, refined: the next iterate
        state[0] = step
        li[ITERS, w] += 1
        IT[ix(SET_QDD), w] = 1.0
    elif phase == REFINED:  # the first iterate, refined
        IT[ix(SET_QDD), w] = 1.0
    elif suspect:  # (HEAD) the first solve's refinement and verification (_solve)
        li[PHASE, w] = REFINED
        return _solving(li, state, w, 1, refine, 0)
    else:  # (HEAD) the first iterate: refined now where it may be the answer (refined solves only)
        IT[ix(SET_QDD), w] = 1.0
        if refine > 0 and (top < tol or li[ITERS, w] >= max_iter):
            li[PHASE, w] = REFINED
            return _solving(li, state, w, 0, 0, 0)
    IT[ix(UPDATE), w] = 1.0  # (_update)
    if min(state[0], top) < tol or li[ITERS, w] >= max_iter:
        IT[ix(DONE), w] = 1.0  # (_lanes_concluded)
        return False
    moves[w] = 1.0  # alm's and prox's terms (_move)
    li[PHASE, w] = RESOLVED  # from the last iterate where the solves are refined (Factorization.startable)
    if refine == 0:  # a fresh solve (verified where suspect)
        return _solving(li, state, w, 1 if suspect else 0, 0, 1)
    # started: the steps alone (then _advance), a suspect factorization's too (the first solve verified it)
    return _solving(li, state, w, 3, refine, 0)


@njit(cache=True, inline="always")
def _lanes_moved(constraints, factors, KC, pairs, m, mu, Lin):
    """The iterating constraints' terms of the lanes whose outer iterations go on (``KC``'s row of moves, then
    cleared), moved for their ``lambda`` (``KC``'s, where the iterations in lanes keep it) in lanes
    (:func:`_lane_move`)."""
    KK, MEAS, Kk, LAM, RES, MOVE, E = _lane_constraint_parts(KC, pairs, m)
    moving = 0
    for w in range(LANES):
        moving += KC[ix(MOVE), w] != 0.0
    if moving == 0:
        return
    _lane_move(constraints, factors, KK, Kk, LAM, MEAS, E, mu, Lin, KC, MOVE)
    vectors.fill(KC, MOVE, 0.0)


QDD_STEP, RES_TOP, SET_QDD, UPDATE, DONE, IT_T = range(6)  # IT's rows (:func:`_lane_steps`, _advance's marks)
ITERATION_ROWS = 6  # then the qdd each lane's iterations kept (nv rows): IT's rows, ITERATION_ROWS + nv


@njit(cache=True, inline="always")
def _lane_steps(links, X, RES, IT):
    """Every lane's iterate ``X``: its ``qdd`` step ``max |qdd(X) - qdd|`` from the ``qdd`` its iterations kept
    (``IT``'s rows from ``ITERATION_ROWS``; :func:`_qdd_step`'s operations) and its residual's ``max |RES|``
    (:func:`_largest`'s) into ``IT``'s rows ``QDD_STEP``, ``RES_TOP``; :func:`_advance`'s marks cleared.
    Lanes that advance none get numbers nothing reads."""
    vectors.fill(IT, QDD_STEP, 0.0)
    for l in range(links.shape[0]):
        v0, off = links[ix(l), V0], links[ix(l), QDD]
        for i in range(links[ix(l), NV]):
            vectors.copy(IT, IT_T, X, off + i)
            vectors.sub(IT, IT_T, IT, ITERATION_ROWS + v0 + i)
            vectors.largest(IT, QDD_STEP, IT, IT_T)
    vectors.fill(IT, RES_TOP, 0.0)
    for r in range(RES.shape[0]):
        vectors.largest(IT, RES_TOP, RES, r)
    for row in (SET_QDD, UPDATE, DONE):
        vectors.fill(IT, row, 0.0)


@njit(cache=True, inline="always")
def _lanes_updated(constraints, links, X, RES, LAM, IT, mu):
    """What :func:`_advance` marked, in lanes: ``qdd = qdd(X)`` kept where ``SET_QDD``, and ``lambda`` updated
    from ``RES`` where ``UPDATE`` (:func:`_update`'s operations); the other lanes keep theirs."""
    table, numbers = constraints[0], constraints[3]
    for l in range(links.shape[0]):
        v0, off = links[ix(l), V0], links[ix(l), QDD]
        for i in range(links[ix(l), NV]):
            vectors.put(IT, ITERATION_ROWS + v0 + i, X, off + i, IT, SET_QDD)
    for j in range(table.shape[0]):
        m, r0, mult = table[ix(j), CDIM], table[ix(j), ROW0], table[ix(j), MULT]
        keep, push, take = numbers[ix(j), KEEP], numbers[ix(j), PUSH], numbers[ix(j), TAKE]
        mu_s = _mu(constraints, j, mu)
        for r in range(m):  # _update's terms in its order
            have = False
            if push != 0.0:
                vectors.scaled(IT, IT_T, push * mu_s, RES, r0 + r)
                have = True
            if keep != 0.0:
                if have:
                    vectors.add_scaled(IT, IT_T, LAM, r0 + r, keep)
                else:
                    vectors.scaled(IT, IT_T, keep, LAM, r0 + r)
                have = True
            if take != 0.0:
                if have:
                    vectors.add_scaled(IT, IT_T, X, mult + r, take)
                else:
                    vectors.scaled(IT, IT_T, take, X, mult + r)
            vectors.put(LAM, r0 + r, IT, IT_T, IT, UPDATE)


@njit(cache=True, inline="always")
def _lanes_solved(links, factors, scope, constraints, KC, pairs, m, mu, smaps, sscr, slane, Fw, Lin, X, C, cache,
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
        lanes.solve_pairs(smaps, C, Lin, cache, X, slane, sscr)
        return
    KK, MEAS, _, _, _, _, E = _lane_constraint_parts(KC, pairs, m)  # (MEAS: as filled, or moved in lanes)
    for l in range(links.shape[0]):
        _lane_link_residuals(links, factors, l, Fw, Lin, X, Lres)
    _lane_factor_residuals(factors, scope, constraints, KK, MEAS, mu, Fw, Lin, X, Lres, E)
    for w in range(LANES):
        if need[w] and fresh[w]:
            _copy(Lin[:, w], Lres[:, w])
    lanes.solve_pairs(smaps, C, Lres, cache, D, slane, sscr)
    vectors.add_rows(X, D, tops, X.shape[0])
    for w in range(LANES):
        if need[w] and fresh[w]:
            _copy(D[:, w], X[:, w])


@njit(cache=True, **UNCOUNTED)
def lanes_kernel(TI, II, TF, IF, Q, V, TAU, F0, mu, tol, max_iter, refine, iterating, refill, patience, ws, wi, lw, li,
                 lk, out, flags):
    """:func:`dynamics_kernel` for a program of mostly tree and wide pairs (:func:`elimination.lanes.covers_pairs`),
    ``LANES`` states at a time: the new states' kinematics and link factors in lanes, each one's constraint
    terms and their factors into its lane (:func:`_refill`), one factorization of the lanes and their first solve without refinement
    (:func:`elimination.lanes.factorize_pairs`, :func:`~elimination.lanes.solve_pairs`).  Then, where the
    program iterates, every lane's outer iterations advance to their next solve (:func:`_advance`: a
    refinement step, a fresh solve, a suspect pivot's verification step) and the solves run in lanes
    (:func:`_lanes_solved`); a lane whose state has its answer idles until ``refill`` lanes do and ``patience``
    rounds more have run, and they take the next states (the lanes' factorization again: the busy lanes' own
    conditionals come out as they were).
    Where the program does not iterate, or has soft rows, each state runs :func:`_answer` on its lane's
    columns after the first solve.  The numbers of :func:`dynamics_kernel` bit for bit.  ``lw``, ``li``,
    ``lk``: the lanes' workspace, integers and each state's own constraint terms (:func:`_lane_sizes`), zeroed
    once when made."""
    fmaps, smaps, constraints, factors, scope, drops, sizes, unit, o, model, general = _unpacked_tables(TI, II, TF, IF)
    links, table, maxn = model[0], constraints[0], np.int64(sizes[6])
    m, nv, B, pairs = F0.shape[1], V.shape[1], Q.shape[0], constraints[2].shape[0]
    rows_m, rows_L = ws[o[8]:o[9]].reshape((6, m)), ws[o[9]:o[10]].reshape((4, np.int64(sizes[2])))
    rows_x, e = ws[o[10]:o[11]].reshape((3, np.int64(sizes[4]))), ws[o[11]:o[12]]
    dropped, qn = ws[o[15]:o[16]], ws[o[16]:o[17]]
    fscr, sscr = factorize_scratch_in(ws[o[17]:o[18]], wi, maxn), solve_scratch_in(ws[o[18]:o[19]], maxn)
    meas0, corrected, Lin0, Lres1, xn, corr = rows_m[2], rows_m[5], rows_L[1], rows_L[3], rows_x[1], rows_x[2]
    kparts = _lane_kinematic_parts(links.shape[0], Q.shape[1], nv)
    Fw, C, Lin, Lmag, cache, X, Lres, D, floor, ratio, tops, flane, slane, KL, KC, IT = _lane_parts(
        lw, sizes, maxn, kparts[-1] + 1, lane_constraint_rows(pairs, m), ITERATION_ROWS + nv)
    weak, failed, valid, need = li[WEAK], li[FAILED], li[VALID], li[NEED]
    KK, MEAS, Kk, LAM, RES, MOVE, E = _lane_constraint_parts(KC, pairs, m)
    has_soft = _has_soft(table)
    # the outer iterations in lanes: each re-solve refined from the last iterate (Factorization.startable) or a
    # fresh solve (refine == 0), the first solve's refinement deferred (_answer), a suspect pivot's verification
    in_lanes = iterating and drops.shape[0] == 0 and not has_soft
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
                             lk, Fw, Lin, Lmag, floor, flags, KL, kparts, KC, in_lanes)
            lanes.factorize_pairs(fmaps, Fw, C, floor, fscr, flane, ratio, weak, failed)
            whole = idle == LANES  # (every lane new: the first solve straight into X)
            lanes.solve_pairs(smaps, C, Lin, cache, X if whole else D, slane, sscr)
            for i in range(0 if whole else X.shape[0]):  # the new lanes' first solve (KL's row of them: MASK)
                vectors.put(X, i, D, i, KL, kparts[10])
            _lane_constraint_residual(constraints, KK, Kk, links, X, RES)
            _lane_steps(links, X, RES, IT)
            for w in range(LANES):  # each new state's iterations: up to its next solve in lanes, or all in its lane
                b = li[STATE, w]
                if valid[w] == 0:
                    continue
                li[STATE, w] = -1
                if failed[w] != -1:
                    continue
                if in_lanes:
                    step = _iteration_state(lk, w, pairs, m)
                    li[PHASE, w], li[ITERS, w], li[STATE, w], step[0] = HEAD, 1, b, np.inf
                    need[w] = _advance(w, li, step, ratio[w], refine, IT, KC[MOVE], tol, max_iter)
                    continue
                Kbuf, k, meas, lam, res, step = _own_terms(lk, w, pairs, m)
                work = (links, factors, scope, constraints, Kbuf, meas, mu, Fw[:, w], Lin[:, w], Lres1, e, corr,
                        cache[:, w], dropped)
                _copy(Lin[:, w], Lin0)
                _copy(meas, meas0)
                _answer(b, ratio[w], True, smaps, drops, sscr, work, C[:, w], Lmag[:, w], Lin0,
                        (k, meas, meas0, res, lam, corrected), X[:, w], xn, refine, iterating, has_soft, tol, max_iter,
                        nv, out, flags)
            if in_lanes:
                _lanes_concluded(links, factors, scope, constraints, lk, pairs, m, mu, li, ratio, smaps, drops, sscr,
                                 Fw, Lin, C, Lmag, cache, X, RES, LAM, IT, Lin0, Lres1, e, corr, dropped, meas0,
                                 corrected, xn, refine, has_soft, tol, nv, out, flags)
            _lanes_moved(constraints, factors, KC, pairs, m, mu, Lin)
            continue
        if idle == LANES:
            break
        waited += idle >= refill
        _lanes_solved(links, factors, scope, constraints, KC, pairs, m, mu, smaps, sscr, slane, Fw, Lin, X, C,
                      cache, Lres, D, need, li[FRESH], tops)
        _lane_constraint_residual(constraints, KK, Kk, links, X, RES)  # (read by the lanes whose solve is done)
        _lane_steps(links, X, RES, IT)
        for w in range(LANES):  # each lane's iterations between its solves
            if need[w] == 0:
                continue
            step = _iteration_state(lk, w, pairs, m)
            if li[FRESH, w]:  # solved: done, or verified from here
                li[FRESH, w] = 0
                done = 0 if li[MODE, w] else 1
            else:
                done = _refined(li, step, w, tops[0, w] / max(tops[1, w], 2.2250738585072014e-308), refine, ratio[w])
            if done == 0:
                continue
            if done == -1:  # left to the numpy path
                need[w], li[STATE, w] = 0, -1
                continue
            need[w] = _advance(w, li, step, ratio[w], refine, IT, KC[MOVE], tol, max_iter)
        _lanes_concluded(links, factors, scope, constraints, lk, pairs, m, mu, li, ratio, smaps, drops, sscr, Fw, Lin,
                         C, Lmag, cache, X, RES, LAM, IT, Lin0, Lres1, e, corr, dropped, meas0, corrected, xn, refine,
                         has_soft, tol, nv, out, flags)
        _lanes_moved(constraints, factors, KC, pairs, m, mu, Lin)


@njit(cache=True, inline="always")
def _refill(Q, V, TAU, F0, mu, loaded, model, constraints, general, factors, unit, pairs, m, qn, li, lk, Fw, Lin,
            Lmag, floor, flags, KL, kparts, KC, in_lanes):
    """The next states, from ``loaded`` on, into the idle lanes (``li[STATE] < 0``), all in lanes: their
    kinematics, their links' factors, their constraint terms and the constraints' factors
    (:func:`_lane_kinematics`, :func:`_lane_fill_links`, :func:`_lane_constraint_terms`,
    :func:`_lane_fill_constraints`: ``KC``'s rows, :func:`_lane_constraint_parts`), then each one's own
    constraint terms copied to its lane's ``lk`` for its iterations (``li[VALID]``: 1 where a state was loaded
    and the checks pass, its lane then holding it) -- its ``K`` only where they run lane by lane (not
    ``in_lanes``).  Returns how many states are loaded now."""
    n = model[0].shape[0]
    QN, VV, MASK, TOP = kparts[7], kparts[8], kparts[10], kparts[11]
    for w in range(LANES):
        li[VALID, w], KL[ix(MASK), w] = 0, 0.0
        if li[STATE, w] >= 0 or loaded >= Q.shape[0]:
            continue
        b = loaded
        loaded += 1
        flags[ix(b), STATUS], flags[ix(b), ITERATIONS], flags[ix(b), CONVERGED] = BAD_INPUT, 0, 0
        Kbuf, k, meas, lam, res, step = _own_terms(lk, w, pairs, m)
        if not _load_state(Q, V, TAU, F0, b, unit, qn, lam):
            continue
        flags[ix(b), STATUS], li[VALID, w], li[STATE, w], KL[ix(MASK), w] = FALLBACK, 1, b, 1.0
        for i in range(Q.shape[1]):
            KL[ix(QN + i), w] = qn[ix(i)]
        for i in range(V.shape[1]):
            KL[ix(VV + i), w] = V[ix(b), ix(i)]
    _lane_kinematics(model, KL, kparts)
    _lane_fill_links(model, factors, KL, kparts, TAU, li[STATE], Fw, Lin, Lmag)
    KK, MEAS, Kk, LAM, _, _, E = _lane_constraint_parts(KC, pairs, m)
    _lane_constraint_terms(constraints, general, model[6], n, KL, kparts, KK, Kk)
    for w in range(LANES):
        if li[VALID, w] != 0:
            _copy(_own_terms(lk, w, pairs, m)[3], LAM[:, w])
    _lane_fill_constraints(constraints, factors, KK, MEAS, Kk, LAM, E, mu, Fw, Lin, KL, MASK, TOP)
    for w in range(LANES):  # each new state's own terms, for its iterations lane by lane
        if li[VALID, w] != 0:
            Kbuf, k, meas, lam, res, step = _own_terms(lk, w, pairs, m)
            if not in_lanes:  # (the iterations in lanes read the lanes' K; its answer, k)
                _copy(KK[:, w], lk[w, :36 * pairs])
            _copy(Kk[:, w], k)
            _copy(MEAS[:, w], meas)
            floor[0, w] = SCALE_FLOOR * KL[ix(TOP), w]
    return loaded
