"""The compiled dynamics' model data: a mechanism, its constraints and its GPLC graph's factor slots as integer
and float tables (what :mod:`mechanics.kinematics`, :mod:`mechanics.gplc` and :mod:`mechanics.policies`
compute, as data), their columns, and the kernels' view of them (:func:`_unpacked_tables`).

Made once per (mechanism, policies, ordering) by :class:`mechanics.compiled.CompiledDynamics`; read, never
written, by the kernels of :mod:`mechanics.compiled_kinematics`, :mod:`mechanics.compiled_fill`,
:mod:`mechanics.compiled_iterations` and :mod:`mechanics.compiled_lanes`.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit

import elimination.compiled as elimination_compiled
import elimination.compiled_front as compiled_front
import elimination.compiled_pairs as compiled_pairs
import elimination.compiled_pivot as compiled_pivot
import elimination.jacobi as jacobi
import elimination.lanes as lanes
import elimination.vectors as vectors

from elimination.compiled import (
    FACTORIZE_MAPS, SOLVE_MAPS, factorize_maps_in, solve_maps_in,
    unpacked1, unpacked2, unpacked3, unpacked4,
)
from elimination.kernel_cache import drop_stale_cache
from elimination.program import F, Op

from .kinematics import coupling_weights
from .keys import (
    ClusterCoordinates, ClusterTorque, JointAcceleration, LinkAcceleration, LoopTerm, Multiplier, Penalty, Prior,
    ProximalPrior, Torque, TreeJoint,
)
from .mechanism import GROUND, Connect, Coupling, Weld


KERNEL_MODULES = ("compiled_tables", "compiled_kinematics", "compiled_fill", "compiled_iterations", "compiled_lanes")


def drop_stale_kernels(module: str) -> None:
    """Drop ``module``'s numba cache where a kernel source it may compile in changed: these modules' or the
    engine's (:func:`elimination.kernel_cache.drop_stale_cache`)."""
    here = Path(__file__).parent
    drop_stale_cache(module, *(here / f"{name}.py" for name in KERNEL_MODULES), elimination_compiled.__file__,
                     compiled_front.__file__, compiled_pairs.__file__, compiled_pivot.__file__, jacobi.__file__,
                     lanes.__file__, vectors.__file__)


drop_stale_kernels(__file__)

JOINTS = {"fixed": 0, "revolute": 1, "revolute_unbounded": 2, "prismatic": 3, "spherical": 4, "planar": 5, "free": 6}
PRIOR, TORQUE, TREE, PENALTY, LOOP, PROXIMAL, CLUSTER_TORQUE = range(7)  # factor kinds
WELD, CONNECT, GENERAL, COUPLING = range(4)  # constraint kinds
ROLES = {Prior: PRIOR, Torque: TORQUE, TreeJoint: TREE, Penalty: PENALTY, LoopTerm: LOOP, ProximalPrior: PROXIMAL,
         ClusterTorque: CLUSTER_TORQUE}

ARMATURE = 13  # the first column of a link's armature in its row of the body table (mass, com, inertia first)
# columns of the link table (PRIOR_F, TORQUE_F, TREE_F: the link's own factors' rows of the factor table, -1: none;
# TORQUE_F of a link in an embedded cluster: its cluster's torque factor).  QDD, NY: where the joint columns of its
# tree factor are among the values and how many -- its qdd (nv), or its embedded cluster's y (ny), the joint's map
# qdd = G y + g then at GMAP in the maps table (G (nv, ny) row-major, g (nv); a loop cluster's P (nv, 6) row-major
# after them, written per state: compiled_kinematics._loop_maps); GMAP -1: no map.  CLUSTER_TOP: the values of the
# acceleration of a cluster's parent where its map moves with it (qdd = G y + g - P a_p), -1: it does not
PARENT, JOINT, Q0, V0, NV, ACC, QDD, PRIOR_F, TORQUE_F, TREE_F, NY, GMAP, CLUSTER_TOP = range(13)
# columns of the loop clusters' table (compiled_kinematics._loop_maps), a row per cluster whose map is made per
# state: its parent's link row, its velocity columns, ny, the rank of its rows (its dependent columns), its rows,
# and where in the items its joints' links (NJ of them), its constraints (NCON) and its columns (dependent first,
# then y's) are
LOOP_PARENT, LOOP_NC, LOOP_NY, LOOP_RANK, LOOP_M, LOOP_J0, LOOP_NJ, LOOP_C0, LOOP_NCON, LOOP_D0 = range(10)
# columns of the constraint table (MOVES, ITERATES, TEST: its policy's PolicyNumbers), and of its float table
CKIND, L1, L2, CDIM, ROW0, PAIR0, NPAIR, MULT, MOVING, MOVES, ITERATES, TEST = range(12)
STIFFNESS, KEEP, PUSH, TAKE = range(4)
# columns of the coupling terms' table, a row per (coupling, joint): the joint's link, the pairs of the link and of
# its parent (-1: the ground), whether the parent is the ground, and the joint's q and v columns and nv
TERM_OF, TERM_LINK, TERM_PAIR, TERM_PARENT_PAIR, TERM_ON_GROUND, TERM_Q0, TERM_V0, TERM_NV = range(8)
# columns of the factor table (JOINT0: a tree factor's first joint column; JOINT_ONLY: 1 where only a tree
# pair's kernel reads it, through its joint columns -- the rest of [I, -I, -S] and the row scales go unwritten)
FKIND, WHO, PAIR, FIRST, MAT, SCL, LIN, SC0, SC1, FN, JOINT0, JOINT_ONLY = range(12)

OK, FALLBACK, BAD_INPUT = 0, 1, 2  # per-state status: the kernel's answer, the numpy path's to take, or a
# state the checks of mechanics.checks refuse (NaN / inf, a quaternion far from unit norm): they name it
ITERATIONS, CONVERGED, STATUS = range(3)  # columns of the kernel's integer output


def _output_columns(mechanism) -> dict:
    """Name -> first column (``slice`` of columns for arrays) of :meth:`CompiledDynamics.run`'s ``out``: with
    embedded clusters, ``inverse`` holds ``M qdd + b`` (:func:`~mechanics.compiled_iterations._joint_torques`;
    ``wrenches`` its scratch), else nothing written there."""
    nv, m, n = mechanism.nv, mechanism.constraint_dim, len(mechanism.links)
    starts = np.cumsum([0, nv, m, 6 * n, m, m])
    names = ("qdd", "forces", "accelerations", "residual", "k")
    end = int(starts[-1])
    return {**{name: slice(int(a), int(b)) for name, a, b in zip(names, starts, starts[1:])}, "worst": end,
            "hard_worst": end + 1, "hard_k": end + 2, "inverse": slice(end + 3, end + 3 + nv),
            "wrenches": slice(end + 3 + nv, end + 3 + nv + 6 * n)}


def _unsupported(mechanism, layout) -> str:
    for name, policy in layout.policies.items():
        if policy.lowered():
            return f"constraint {name!r} has the policy {policy!r}, whose numbers do not say it all: {policy.lowered()}"
    for c in mechanism.constraints:
        links = [l for l in c.links if l != GROUND]
        if len(set(links)) != len(links):
            return f"constraint {c.name!r} names a link twice"
        if c.dim > 6:
            return f"constraint {c.name!r} has {c.dim} rows (the compiled kernels take at most 6 per constraint)"
    for slot in layout.slots:
        if type(slot.role) not in ROLES:
            return f"factor role {slot.role!r} runs on the numpy path only"
    return ""


def link_index(mechanism) -> dict:
    """Link name -> its row in the tables: the links in order, the ground last."""
    index = {link.name: i for i, link in enumerate(mechanism.links)}
    index[GROUND] = len(mechanism.links)
    return index


def unit_columns(mechanism) -> np.ndarray:
    """``(k, 2)``: the ``(start, stop)`` columns of ``q``'s unit parts (quaternions, (cos, sin) pairs)."""
    return np.array([(cols.start, cols.stop) for _, cols, _ in mechanism.unit_norm_columns], dtype=np.int64).reshape(-1, 2)


def model_tables(mechanism, program=None) -> tuple:
    """:func:`_model_tables` indexed by :func:`link_index` (the kinematics' own tables: without ``program`` the
    links' value columns ``ACC``, ``QDD`` are -1)."""
    return _model_tables(mechanism, link_index(mechanism), program)


def _model_tables(mechanism, index: dict, program) -> tuple:
    """Links (``PARENT ... GMAP`` columns; their own factors' columns left -1 for :func:`_own_factors`, their
    joints' maps none: :func:`_cluster_maps`) and their constant geometry, inertia and armature (``body``: mass,
    com, inertia, armature from ``ARMATURE``)."""
    n = len(mechanism.links)
    table = np.full((n, 13), -1, dtype=np.int64)
    axis, place_R, place_p = np.zeros((n, 3)), np.zeros((n, 3, 3)), np.zeros((n, 3))
    body, S_local = np.zeros((n, 19)), np.zeros((n, 6, 6))
    from .joints import motion_subspace

    value = {key: offset for key, (offset, _) in program.plan.layout().variables.items()} if program else {}
    for i, link in enumerate(mechanism.links):
        joint = link.joint
        qdd = value.get(JointAcceleration(link.name), -1)
        table[i, :QDD + 1] = (index[link.parent], JOINTS[joint.kind], mechanism.q_slices[link.name].start,
                              mechanism.v_slices[link.name].start, joint.nv, value.get(LinkAcceleration(link.name), -1),
                              qdd)
        if joint.axis is not None:
            axis[i] = joint.axis
        place_R[i], place_p[i] = link.placement.rotation, link.placement.translation
        body[i, :13] = (link.mass, *link.com, *np.asarray(link.inertia).ravel())
        body[i, ARMATURE:ARMATURE + joint.nv] = link.armature
        S_local[i, :, : joint.nv] = motion_subspace(joint)
    table[:, NY] = table[:, NV]
    root = np.concatenate([np.zeros(3), -np.asarray(mechanism.gravity, dtype=float)])
    return table, axis, place_R, place_p, body, S_local, root


def _cluster_maps(links: np.ndarray, index: dict, program, clusters) -> np.ndarray:
    """The embedded ``clusters``' joint maps ``qdd_j = G_j y + g_j`` (:class:`~mechanics.couplings.EmbeddedCluster`),
    flat (``G_j`` row-major, then ``g_j``; a loop cluster's zeros and room for ``P_j``, made per state), their
    joints' ``QDD`` (``y``'s values), ``NY``, ``GMAP`` and ``CLUSTER_TOP`` into ``links``."""
    value = {key: offset for key, (offset, _) in program.plan.layout().variables.items()}
    maps = [np.zeros(0)]
    for cluster in clusters:
        top = links[index[cluster.parent], ACC] if cluster.moving_parent else -1
        for joint in cluster.joints:
            i, nv = index[joint], links[index[joint], NV]
            links[i, QDD], links[i, NY] = value.get(ClusterCoordinates(cluster.name), -1), cluster.size
            links[i, GMAP], links[i, CLUSTER_TOP] = sum(m.size for m in maps), top
            maps += ([cluster.G[joint].ravel(), cluster.g[joint]] if cluster.constant
                     else [np.zeros(nv * cluster.size + nv + 6 * nv)])
    return np.concatenate(maps)


def _loop_tables(mechanism, index: dict, clusters) -> tuple:
    """The clusters whose map is made per state (a local loop's), for
    :func:`~mechanics.compiled_kinematics._loop_maps`: a row each (columns ``LOOP_PARENT ... LOOP_D0``) and the
    integers its row points at -- its joints' links, its constraints, its columns (over its joints' velocities:
    :attr:`~mechanics.couplings.EmbeddedCluster.dependent`, then :attr:`~mechanics.couplings.EmbeddedCluster.independent`)."""
    cidx = {c.name: j for j, c in enumerate(mechanism.constraints)}
    rows, items = [], []
    for cluster in (c for c in clusters if not c.constant):
        nc = sum(mechanism.link(j).joint.nv for j in cluster.joints)
        m = sum(mechanism.constraint(n).dim for n in cluster.constraints)
        start = len(items)
        items += [index[j] for j in cluster.joints] + [cidx[n] for n in cluster.constraints]
        items += list(cluster.dependent) + list(cluster.independent)
        rows.append((index[cluster.parent], nc, cluster.size, len(cluster.dependent), m, start, len(cluster.joints),
                     start + len(cluster.joints), len(cluster.constraints),
                     start + len(cluster.joints) + len(cluster.constraints)))
    return (np.asarray(rows, dtype=np.int64).reshape(len(rows), 10),
            np.asarray(items or [0], dtype=np.int64))


def _constraint_tables(mechanism, layout, index: dict, program, baumgarte: dict) -> tuple:
    """Constraints (columns ``CKIND ... TEST``, and their policies' float numbers ``STIFFNESS ... TAKE``),
    their pairs ``(constraint, link)`` in the order of the policies' slots, the couplings' terms (columns
    ``TERM_OF ... TERM_NV``) and the float tables: axes, frame placements, General's constant ``K``, the constant
    ``k`` (General's, a Coupling's ``c``) and a Coupling's ``offset`` as two rows, the Baumgarte gains ``(Kp, Kd)``
    (zero: none), and each coupling term's ``C_j S_local'`` and ``C_j`` (padded to 6 x 6)."""
    constraints = mechanism.constraints
    nc = len(constraints)
    table = np.full((max(nc, 1), 12), -1, dtype=np.int64)[:nc]
    numbers = np.zeros((max(nc, 1), 4))[:nc]
    axes = np.zeros((max(nc, 1), 6), dtype=np.int64)
    place_R, place_p = np.zeros((max(nc, 1), 2, 3, 3)), np.zeros((max(nc, 1), 2, 3))
    gains = np.array([baumgarte.get(c.name, (0.0, 0.0)) for c in constraints] or [(0.0, 0.0)], dtype=float)
    pairs, K_const, k_const, row = [], [], np.zeros((2, mechanism.constraint_dim)), 0
    terms, weights = [], []
    root = np.concatenate([np.zeros(3), -np.asarray(mechanism.gravity, dtype=float)])
    for j, c in enumerate(constraints):
        policy = layout.policies[c.name]
        links = [l for l in c.links if l != GROUND]
        kind = {Weld: WELD, Connect: CONNECT, Coupling: COUPLING}.get(type(c), GENERAL)
        mult = program.plan.layout().variables.get(Multiplier(c.name), (-1,))[0]
        l1, l2 = (index[c.link1], index[c.link2]) if kind in (WELD, CONNECT) else (-1, -1)
        codes, numbers[j] = policy.numbers.row()
        table[j] = (kind, l1, l2, c.dim, row, len(pairs), len(links), mult, layout.moving.get(c.name, -1), *codes)
        blocks = dict(zip(c.links, c.K)) if kind == GENERAL else {}
        pair_of = {link: len(pairs) + q for q, link in enumerate(links)}
        for link in links:
            pairs.append((j, index[link]))
            K_const.append(np.pad(blocks[link], ((0, 6 - c.dim), (0, 0))) if kind == GENERAL else np.zeros((6, 6)))
        if kind == GENERAL:
            k = c.k - (blocks[GROUND] @ root if GROUND in blocks else 0.0)
            k_const[0, row : row + c.dim] = k
        elif kind == COUPLING:
            k_const[0, row : row + c.dim] = c.c
            k_const[1, row : row + c.dim] = 0.0 if c.offset is None else c.offset
            for joint, parent, W, C in zip(c.joints, c.parents, coupling_weights(mechanism, c), c.C):
                terms.append((j, index[joint], pair_of[joint], pair_of.get(parent, -1), int(parent == GROUND),
                              mechanism.q_slices[joint].start, mechanism.v_slices[joint].start, C.shape[1]))
                weights.append((np.pad(W, ((0, 6 - c.dim), (0, 0))), np.pad(C, ((0, 6 - c.dim), (0, 6 - C.shape[1])))))
        else:
            axes[j, : c.dim] = c.axes
            place_R[j] = (c.placement1.rotation, c.placement2.rotation)
            place_p[j] = (c.placement1.translation, c.placement2.translation)
        row += c.dim
    pair_table = np.asarray(pairs, dtype=np.int64).reshape(len(pairs), 2)
    K_const = np.asarray(K_const, dtype=float).reshape(len(pairs), 6, 6)
    terms = np.asarray(terms, dtype=np.int64).reshape(len(terms), 8)
    weights = np.asarray(weights, dtype=float).reshape(len(terms), 2, 6, 6)
    return ((table, axes, pair_table, numbers, terms, weights), pair_table,
            (place_R, place_p, K_const, k_const, gains))


def _factor_tables(layout, program, constraints: tuple, pairs: np.ndarray, mechanism, index: dict,
                   links: np.ndarray) -> tuple:
    """One row per graph factor (columns ``FKIND ... JOINT_ONLY``) and the values each one's scope reads
    (``links``: the link table, its ``NY`` written by :func:`_cluster_maps`)."""
    table, cidx = constraints[0], {c.name: j for j, c in enumerate(mechanism.constraints)}
    places = program.plan.layout()  # where the engine keeps each factor's and variable's numbers
    steps = program.steps
    paired = np.isin(steps[:, F["op"]], (Op.TREE_PAIR, Op.REVOLUTE_PAIR, Op.WIDE_REVOLUTE))
    joint_columns = steps[paired, F["tq"]]  # where the pair kernels read their tree factors (elimination.compiled)
    rows, scope, start = [], [], 0
    for f, slot in enumerate(layout.slots):
        kind, role = ROLES[type(slot.role)], slot.role
        who = (index[role.link] if kind in (PRIOR, TORQUE, TREE) else index[role.cluster] if kind == CLUSTER_TORQUE
               else cidx[role.constraint])
        pair, first = -1, 0
        if kind == LOOP:
            j = cidx[role.constraint]
            local = [p for p in range(table[j, PAIR0], table[j, PAIR0] + table[j, NPAIR])]
            pair = next(p for p in local if pairs[p, 1] == index[role.link])
            first = int(pair == local[0])
        values = np.concatenate([np.arange(start_k, start_k + dim) for start_k, dim in map(places.variables.get, slot.keys)])
        scope.append(values)
        mat, scl, lin = places.factors[f].matrix, places.factors[f].scales, places.factors[f].linear
        n = len(values)
        joint0 = n - links[who, NY] if kind == TREE else -1  # (its joint columns: qdd's, or its cluster's y)
        joint_only = kind == TREE and bool(np.any((joint_columns >= mat) & (joint_columns < mat + 6 * n)))
        rows.append((kind, who, pair, first, mat, scl, lin, start, start + n, n, joint0, int(joint_only)))
        start += n
    return np.asarray(rows, dtype=np.int64).reshape(len(rows), 12), np.concatenate(scope).astype(np.int64)


def _own_factors(links: np.ndarray, factors: np.ndarray, clusters=(), index=None) -> None:
    """Each link's prior, torque and tree factor (their rows of ``factors``) into its columns of ``links``; a
    link of an embedded cluster's torque factor is its cluster's (``clusters``, links by ``index``)."""
    column = {PRIOR: PRIOR_F, TORQUE: TORQUE_F, TREE: TREE_F}
    for f, (kind, who) in enumerate(factors[:, [FKIND, WHO]]):
        if kind in column:
            links[who, column[kind]] = f
    for cluster in (c for c in clusters if c.size or c.moving_parent):  # (nor on y nor a_p: no torque factor)
        f = next(f for f, (kind, who) in enumerate(factors[:, [FKIND, WHO]])
                 if kind == CLUSTER_TORQUE and who == index[cluster.name])
        for joint in cluster.joints:
            links[index[joint], TORQUE_F] = f


@njit(cache=True, inline="always")
def _unpacked_tables(TI, II, TF, IF):
    """The tables of :attr:`CompiledDynamics.tables`, unpacked: ``(factorize_maps, solve_maps, constraints,
    factors, scope, drops, sizes, unit, parts, model, general)``."""
    k0 = FACTORIZE_MAPS + SOLVE_MAPS
    constraints = (unpacked2(TI, II, k0 + 1), unpacked2(TI, II, k0 + 2), unpacked2(TI, II, k0 + 3),
                   unpacked2(TF, IF, 11), unpacked2(TI, II, k0 + 10), unpacked4(TF, IF, 12), unpacked1(TF, IF, 13),
                   unpacked2(TI, II, k0 + 11), unpacked1(TI, II, k0 + 12))
    model = (unpacked2(TI, II, k0), unpacked2(TF, IF, 0), unpacked3(TF, IF, 1), unpacked2(TF, IF, 2),
             unpacked2(TF, IF, 3), unpacked3(TF, IF, 4), unpacked1(TF, IF, 5))
    general = (unpacked4(TF, IF, 6), unpacked3(TF, IF, 7), unpacked3(TF, IF, 8), unpacked2(TF, IF, 9),
               unpacked2(TF, IF, 10))
    return (factorize_maps_in(TI, II), solve_maps_in(TI, II, FACTORIZE_MAPS), constraints, unpacked2(TI, II, k0 + 4),
            unpacked1(TI, II, k0 + 5), unpacked2(TI, II, k0 + 6), unpacked1(TI, II, k0 + 7), unpacked2(TI, II, k0 + 8),
            unpacked1(TI, II, k0 + 9), model, general)
