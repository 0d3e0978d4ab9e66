"""Constrained forward dynamics in one trip into compiled code: kinematics, fill, elimination, outer loop.

The stages live in modules of their own: the model data -- tables, their columns
-- in :mod:`mechanics.compiled_tables`; the model evaluation (kinematics,
constraint terms) in :mod:`mechanics.compiled_kinematics`; the fill of the
program's workspaces in :mod:`mechanics.compiled_fill`; the outer iterations one
state at a time in :mod:`mechanics.compiled_iterations` and sixteen states side by
side in :mod:`mechanics.compiled_lanes`.  This module holds their user,
:class:`CompiledDynamics`.

:class:`CompiledDynamics` is made once per prepared call
(:func:`mechanics.prepare` with a compiled backend).  It lays the mechanism,
its constraints and the GPLC graph's factor slots out as integer and float
tables -- what :mod:`mechanics.kinematics`, :mod:`mechanics.gplc` and
:mod:`mechanics.policies` compute, as data -- next to the plan's lowered
program (:mod:`elimination.program`).  One numba kernel then runs, per state:

1. the kinematics pass (world-frame poses, motion subspaces ``S_i``,
   velocities, bias accelerations ``a_b,i``, inertias ``H_i``, bias forces
   ``f_i``) and the constraint terms ``K a = k`` (Weld, Connect, General, Coupling);
2. the fill: every factor's matrix and linear term written straight into the
   program's workspaces (no factor objects);
3. the factorization and the solves of :mod:`elimination.compiled`
   (:func:`~elimination.compiled.factorize_one`, :func:`~elimination.compiled.solve_one`),
   with the numpy path's refinement, verification of suspect pivots and
   consistency check of dropped rows;
4. the outer iterations of :class:`mechanics.outer.PolicyIterations` under :func:`elimination.drive` (000
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
computed in lanes too (the per-state kernel's own kinematics and fill,
:mod:`mechanics.compiled_kinematics`, :mod:`mechanics.compiled_fill`, on
sixteen states per instruction),
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

from elimination.compiled import (
    announce_first_compile, factorize_maps, factorize_scratch_size, max_front, packed, solve_maps,
)
from elimination.lanes import LANES, aligned_zeros, covers_pairs
from elimination.program import F

from .policies import EXACT, HOLDS
from .compiled_tables import (
    _cluster_maps, _constraint_tables, _factor_tables, _loop_tables, _model_tables, _output_columns, _own_factors, _unsupported,
    link_index, unit_columns,
)
from . import compiled_iterations, compiled_lanes
from .compiled_iterations import LANE_ROWS, _workspace_parts, dynamics_kernel
from .compiled_lanes import PATIENCE, REFILL, _lane_sizes, lanes_kernel


class CompiledDynamics:
    """A mechanism's GPLC graph under one plan, as tables for :func:`dynamics_kernel`.

    Parameters
    ----------
    mechanism : Mechanism
    layout : mechanics.gplc.GPLCLayout
    plan : elimination.Plan
        Complete plan of ``layout.structure()``.
    baumgarte : dict, optional
        ``{constraint name: (Kp, Kd)}`` (:func:`~mechanics.checks.check_baumgarte`): model data, as in
        Pinocchio's constraint models.

    Attributes
    ----------
    unsupported : str
        Why the kernel cannot run this mechanism / policy choice ("" when it can).
    states_run : dict
        States run since it was made: ``"lanes"`` (:data:`~elimination.lanes.LANES` at a time,
        :func:`~mechanics.compiled_lanes.lanes_kernel`) and ``"one_by_one"`` (:func:`dynamics_kernel`), batched or
        single calls; a call the kernel refuses counts as run.
    """

    def __init__(self, mechanism, layout, plan, baumgarte: dict | None = None):
        self.mechanism, self.layout, self.plan = mechanism, layout, plan
        self.program = program = plan.lowered()
        self.unsupported = program.unsupported or _unsupported(mechanism, layout)
        if self.unsupported:
            return
        index = link_index(mechanism)
        self.model = _model_tables(mechanism, index, program)
        constraints, pairs, self.general = _constraint_tables(mechanism, layout, index, program, baumgarte or {})
        # (the embedded couplings' maps with the constraints: the fill and qdd(x) read them)
        self.constraints = (*constraints, _cluster_maps(self.model[0], index, program, layout.clusters),
                            *_loop_tables(mechanism, index, layout.clusters))
        self.factors, self.scope = _factor_tables(layout, program, self.constraints, pairs, mechanism, index,
                                                  self.model[0])
        _own_factors(self.model[0], self.factors, layout.clusters, index)
        steps = program.steps
        self.factorize_maps = factorize_maps(program)
        self.solve_maps = solve_maps(program)
        self.drops = np.ascontiguousarray(steps[steps[:, F["d"]] > 0][:, [F["drop"], F["d"]]], dtype=np.int64)
        self.sizes = np.array([program.factor_size, program.conditional_size, program.linear_size, program.cache_size,
                               program.value_size, program.dropped_size, max_front(program), int(program.check_rank)],
                              dtype=np.int64)
        numbers = [layout.policies[c.name].numbers for c in mechanism.constraints]
        self.iterating = any(n.iterates for n in numbers)
        self.soft = any(n.test == HOLDS for n in numbers)
        # a batch of a program of tree pairs runs LANES states at a time (lanes_kernel), bit for bit as one by
        # one, embedded couplings' clusters too (no dropped rows: the lanes check none after a fresh solve)
        self.lanes = covers_pairs(program) and not len(self.drops) and not len(self.constraints[7])
        # (a loop cluster's map is made state by state: its lanes are not written yet)
        self.refill, self.patience = REFILL, PATIENCE
        hard = np.concatenate([np.full(c.dim, n.test == EXACT) for c, n in zip(mechanism.constraints, numbers)]
                              or [np.zeros(0, bool)])
        self.hard_rows = hard if hard.any() else None  # constraint rows under the hard policy (None: no such rows)
        self.unit = unit_columns(mechanism)
        self.columns = _output_columns(mechanism)
        # one state's warm start, never written (not flagged read-only: numba would compile the kernel again)
        self.no_forces = np.zeros((1, mechanism.constraint_dim))
        # (the joint torques' columns only where embedded clusters' forces want them: _joint_torques)
        self.width = self.columns["wrenches"].stop if layout.clusters else self.columns["hard_k"] + 1
        self.link_count = len(mechanism.links)
        self.parts = _workspace_parts(mechanism, self.constraints, program)
        # every table in two flat arrays (the order dynamics_kernel unpacks them in): two arguments, not 48
        self.tables = (*packed([*self.factorize_maps, *self.solve_maps[1:], self.model[0], *self.constraints[:3],
                                self.factors, self.scope, self.drops, self.sizes, self.unit, self.parts,
                                self.constraints[4], *self.constraints[7:]]),
                       *packed([*self.model[1:], *self.general, self.constraints[3], self.constraints[5],
                                self.constraints[6]]))
        # the kernel's workspaces, kept: numba holds the GIL, so no two calls share them at once
        self.data = self.make_data()

    def make_data(self) -> "DynamicsData":
        """Fresh workspaces for :meth:`run` (:class:`DynamicsData`; one per thread or process that runs
        this model at once)."""
        return DynamicsData(self)

    @property
    def states_run(self) -> dict:
        """The default workspaces' :attr:`DynamicsData.states_run`."""
        return self.data.states_run

    def run(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray, forces0: np.ndarray, mu: float, tol: float,
            max_iter: int, refine: int, data: "DynamicsData | None" = None) -> tuple:
        """Every state of ``q (B, nq)``, ``v, tau (B, nv)``, warm start ``forces0 (B, m)`` (Pinocchio's sign),
        as they come: the kernel checks them (finite, unit parts of ``q``) and normalises ``q``'s unit parts.

        Returns ``out (B, width)`` -- its parts at :attr:`columns`: ``qdd (nv)``, ``forces (m)``, link
        ``accelerations (n_links * 6)`` in ``[linear; angular]`` order, ``residual (m)``, ``k (m)``, ``worst``
        (``max |residual|``), ``hard_worst`` and ``hard_k`` (``max |residual|`` and ``max |k|`` over the rows
        under the ``hard`` policy, 0 without) -- and ``flags (B, 3)``: iterations, converged, status (``OK``;
        ``FALLBACK`` where the numpy path must answer; ``BAD_INPUT`` where :func:`mechanics.checks.check_state`
        refuses).  ``data``: the workspaces to run in (:meth:`make_data`; default: :attr:`data`).
        """
        B, mech, data = q.shape[0], self.mechanism, self.data if data is None else data
        if not (v.shape[0] == tau.shape[0] == forces0.shape[0] == B and q.shape[1] == mech.nq
                and v.shape[1] == tau.shape[1] == mech.nv and forces0.shape[1] == mech.constraint_dim):
            raise ValueError(f"CompiledDynamics.run: shapes q {q.shape}, v {v.shape}, tau {tau.shape}, forces0 "
                             f"{forces0.shape} do not fit ({mech.nq}, {mech.nv}, {mech.constraint_dim}) per state")
        if self.lanes and B >= LANES and not self.soft and (refine == 0 or self.iterating):
            # (soft rows' one correction runs state by state, and so do refined first solves without re-solves:
            # benchmarks/README.md)
            return self._run_lanes(q, v, tau, forces0, mu, tol, max_iter, refine, data)
        return self._run_states(q, v, tau, forces0, mu, tol, max_iter, refine, data)

    def _run_lanes(self, q, v, tau, forces0, mu, tol, max_iter, refine, data) -> tuple:
        """:meth:`run` of a program of tree pairs ``LANES`` states at a time (:func:`lanes_kernel`); not of soft
        rows, whose one ALM correction the per-state kernel checks (:meth:`run` sends them state by state)."""
        if self.soft:
            raise ValueError(f"{self.mechanism.name!r}: soft rows run state by state, not in lanes "
                             "(CompiledDynamics.run chooses)")
        # (the longest compile: sixteen lanes of every kernel it inlines; benchmarks/README.md, cold start)
        announce_first_compile(compiled_lanes.__file__, "the dynamics kernel for batches side by side", "lanes_kernel",
                               "two or three minutes")
        lane_floats, lane_ints, lane_own = data.lanes(self)
        out, flags = np.empty((q.shape[0], self.width)), np.empty((q.shape[0], 3), dtype=np.int64)
        data.states_run["lanes"] += q.shape[0]
        lanes_kernel(*self.tables, q, v, tau, forces0, float(mu), float(tol), int(max_iter), int(refine), self.iterating,
                     self.refill, self.patience, data.floats, data.ints, lane_floats, lane_ints, lane_own, out, flags)
        return out, flags

    def _run_states(self, q, v, tau, forces0, mu, tol, max_iter, refine, data) -> tuple:
        """:meth:`run` state by state (:func:`dynamics_kernel`)."""
        announce_first_compile(compiled_iterations.__file__, "the dynamics kernel", "dynamics_kernel",
                               "a minute or two")
        out, flags = np.empty((q.shape[0], self.width)), np.empty((q.shape[0], 3), dtype=np.int64)
        data.states_run["one_by_one"] += q.shape[0]
        dynamics_kernel(*self.tables, q, v, tau, forces0, float(mu), float(tol), int(max_iter), int(refine),
                        self.iterating, data.floats, data.ints, out, flags)
        return out, flags

    def run_one(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray, mu: float, tol: float, max_iter: int,
                refine: int) -> tuple:
        """:meth:`run` of one state whose shapes and types the caller checked (:func:`mechanics.checks.plain_state`),
        with no warm start.  Returns its row of ``out`` and of ``flags``: a prepared call's whole trip, without
        the checks and reshapes of a batch (they were a third of a small robot's call)."""
        out, flags = np.empty((1, self.width)), np.empty((1, 3), dtype=np.int64)
        announce_first_compile(compiled_iterations.__file__, "the dynamics kernel", "dynamics_kernel",
                               "a minute or two")
        data = self.data
        data.states_run["one_by_one"] += 1
        # the settings' types fixed here: an int mu would make numba compile the kernel once more
        dynamics_kernel(*self.tables, q[None], v[None], tau[None], self.no_forces, float(mu), float(tol),
                        int(max_iter), int(refine), self.iterating, data.floats, data.ints, out, flags)
        return out[0], flags[0]


class DynamicsData:
    """The per-call workspaces of a :class:`CompiledDynamics` (its model data: the tables, never written), as
    Pinocchio's ``Data`` beside its ``Model``: the kernels' float and integer workspaces (the parts
    :func:`~mechanics.compiled_iterations._workspace_parts` lists: kinematics, the program's factor workspace,
    conditionals, linear terms ...), the lane kernel's made at the first batch that runs in lanes.

    Attributes
    ----------
    floats, ints : ndarray
        The per-state kernel's workspaces (``parts[i] : parts[i + 1]`` of ``floats``: part ``i``).
    states_run : dict
        States run in these workspaces: ``"lanes"`` and ``"one_by_one"`` (:class:`CompiledDynamics`).
    """

    def __init__(self, model: CompiledDynamics):
        self.floats = np.zeros(model.parts[-1])
        # (+ the outer iterations' integers and a state's index: compiled_iterations._machine)
        self.ints = np.zeros(factorize_scratch_size(int(model.sizes[6]))[1] + LANE_ROWS + 1, dtype=np.int64)
        self.states_run = {"lanes": 0, "one_by_one": 0}
        self._lanes = None

    def lanes(self, model: CompiledDynamics) -> tuple:
        """``(floats, ints, own)``: the lane kernel's workspaces, made (zeroed) at the first call."""
        if self._lanes is None:
            floats, ints, own = _lane_sizes(model.program, model.constraints, model.mechanism)
            self._lanes = (aligned_zeros(floats), np.zeros(ints, np.int64), np.zeros(own))
        return self._lanes
