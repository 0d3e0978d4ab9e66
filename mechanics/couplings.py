"""A mechanism's joint couplings as an explicit map: ``qdd = G y + g`` with ``y`` the independent joints'
accelerations (003 Sec. IV's explicit constraint map, for the couplings alone: their ``C`` is constant, so
``G`` is too).

The couplings' rows are ``C qdd = c`` (:class:`~mechanics.Coupling`, stacked in constraint order).  Their
independent rows ``C_r`` (``C`` itself, or an orthonormal basis of its row space where rows are dependent) are
split by columns into ``C_r = [C_d, C_i]`` with ``C_d`` square and invertible: ``qdd_d = C_d^-1 (c_r - C_i
qdd_i)``.  The dependent
columns are chosen greedily, each coupling's first joint first -- a mimic joint, a gear's rotor -- so that
a mimic's ``y`` are Pinocchio's reduced coordinates.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .mechanism import GROUND, Coupling, Mechanism, Weld

RANK_RTOL = 1e-10  # singular values of the stacked C below this, relative to the largest, are dependence


@dataclass(frozen=True)
class CouplingMap:
    """``qdd = G y + g`` on the couplings' solutions.

    Attributes
    ----------
    G : ndarray, shape (nv, ny)
        Identity on the independent columns.
    g : ndarray, shape (nv,)
        Zero unless a coupling has a constant right-hand side ``c``.
    independent, dependent : ndarray of int
        The columns of ``v`` that ``y`` are, and the others.
    """

    G: np.ndarray
    g: np.ndarray
    independent: np.ndarray
    dependent: np.ndarray

    def reduce(self, tau: np.ndarray) -> np.ndarray:
        """``G' tau (..., nv) -> (..., ny)``: generalized forces on the independent coordinates."""
        return (np.asarray(tau)[..., None, :] @ self.G)[..., 0, :]


def coupling_rows(mechanism: Mechanism, only=None) -> tuple:
    """``(C (m_c, nv), c (m_c,), names)``: the couplings' rows stacked in constraint order (those named in
    ``only`` where given), and each row's coupling."""
    rows, rhs, names = [np.zeros((0, mechanism.nv))], [np.zeros(0)], []
    for c in mechanism.constraints:
        if isinstance(c, Coupling) and (only is None or c.name in only):
            C = np.zeros((c.dim, mechanism.nv))
            for joint, block in zip(c.joints, c.C):
                C[:, mechanism.v_slices[joint]] += block
            rows.append(C)
            rhs.append(c.c)
            names += [c.name] * c.dim
    return np.vstack(rows), np.concatenate(rhs), names


def coupling_map(mechanism: Mechanism, only=None) -> CouplingMap:
    """The explicit map ``qdd = G y + g`` of ``mechanism``'s couplings (those named in ``only`` where given;
    module docstring); its loops (Welds, Connects, General constraints) are not in it.

    Raises
    ------
    ValueError
        Couplings that contradict each other (``c`` outside ``C``'s range), the couplings named.

    Examples
    --------
    >>> import numpy as np
    >>> from mechanics import GROUND, Coupling, Joint, Link, Mechanism
    >>> links = [Link(name, GROUND, Joint("revolute", "z")) for name in ("a", "b")]
    >>> mimic = coupling_map(Mechanism(links, [Coupling.mimic("b", "a", 2.0)]))
    >>> mimic.G.tolist(), mimic.independent.tolist()
    ([[1.0], [2.0]], [0])
    """
    C, c, names = coupling_rows(mechanism, only)
    nv = mechanism.nv
    U, sv, Vt = np.linalg.svd(C, full_matrices=False)
    rank = int(np.sum(sv > RANK_RTOL * sv[0])) if sv.size else 0
    left = c - U[:, :rank] @ (U[:, :rank].T @ c)
    if np.max(np.abs(left), initial=0.0) > RANK_RTOL * max(1.0, np.max(np.abs(c), initial=0.0)):
        contradicting = sorted({names[r] for r in np.flatnonzero(np.abs(left) > RANK_RTOL)})
        raise ValueError(f"the couplings {contradicting} of {mechanism.name!r} contradict each other: no qdd meets "
                         f"them all (their rows are dependent, their right-hand sides c are not)")
    if rank == C.shape[0]:  # independent rows: C itself (a mimic's G is its multiplier, exactly)
        rows, rhs = C, c
    else:  # C_r qdd = c_r on an orthonormal basis of C's rows
        rows, rhs = Vt[:rank], (U[:, :rank].T @ c) / sv[:rank]
    dependent = _dependent_columns(mechanism, rows, rank, only)
    independent = np.setdiff1d(np.arange(nv), dependent)
    G, g = np.zeros((nv, independent.size)), np.zeros(nv)
    G[independent, np.arange(independent.size)] = 1.0
    if rank:
        solved = np.linalg.solve(rows[:, dependent], np.column_stack([rows[:, independent], rhs]))
        G[dependent], g[dependent] = -solved[:, :-1], solved[:, -1]
    return CouplingMap(G, g, independent, dependent)


def _dependent_columns(mechanism: Mechanism, rows: np.ndarray, rank: int, only=None) -> np.ndarray:
    """``rank`` columns of ``rows`` that are independent, each coupling's first joint's columns preferred."""
    first = [mechanism.v_slices[c.joints[0]] for c in mechanism.constraints
             if isinstance(c, Coupling) and (only is None or c.name in only)]
    preferred = [i for s in first for i in range(s.start, s.stop)]
    order = list(dict.fromkeys(preferred + list(range(mechanism.nv))))
    chosen = []
    for column in order:
        if len(chosen) == rank:
            break
        trial = rows[:, chosen + [column]]
        if np.linalg.svd(trial, compute_uv=False)[-1] > 1e-8 * np.linalg.norm(rows, 2):  # (a well-conditioned pick)
            chosen.append(column)
    if len(chosen) < rank:  # (not met on any coupling tried: a guard, not a path)
        raise ValueError(f"{mechanism.name!r}: no {rank} joint columns of its couplings are independent")
    return np.array(sorted(chosen), dtype=np.int64)


@dataclass(frozen=True)
class EmbeddedCluster:
    """Joints whose accelerations are written through independent coordinates, ``qdd_j = G_j y + g_j``: the joints
    of constraints embedded together (:class:`~mechanics.policies.Embed`; a coupling's joints, a local loop's
    :meth:`~mechanics.Mechanism.loop_joints`), those sharing a joint in one cluster.

    Attributes
    ----------
    name : str
        Its first joint's (topological order).
    joints : tuple of str
        In the mechanism's order.
    G : dict or None
        Joint -> ``G_j (nv_j, ny)``: couplings alone have a constant map (:func:`coupling_map`; ``y`` are their
        independent joints' accelerations).  ``None`` where a loop is in the cluster: its map depends on the
        state (:func:`state_maps`).
    g : dict or None
        Joint -> ``g_j (nv_j,)``, as ``G``.
    constraints : tuple of str
        The constraints embedded in it.
    ny : int
        ``y``'s size: the cluster's velocities less the (generic) rank of its rows.
    parent : str
        The link it hangs from (or ``"ground"``): its joints' parents are its joints or it.
    moving_parent : bool
        Whether its map moves with the parent's acceleration, ``qdd_c = G y + g - P a_parent``: a Connect's or
        General constraint's rows do where the loop is not closed (its two ends' points apart), a Weld's and a
        coupling's never; none on the ground (``a_0`` is known: folded into ``g``).
    dependent : tuple of int
        The cluster's velocity columns (over ``joints``' velocities, in order) solved for, 003 Sec. IV's
        ``qdd_d``: a loop's from :func:`loop_partition`, couplings' from :func:`coupling_map`; ``y`` are the
        others' accelerations, :attr:`independent`.
    """

    name: str
    joints: tuple
    G: dict | None
    g: dict | None
    constraints: tuple = ()
    ny: int = -1
    parent: str = GROUND
    moving_parent: bool = False
    dependent: tuple = ()

    @property
    def size(self) -> int:
        """``ny``: the cluster's independent coordinates."""
        return self.ny if self.G is None else next(iter(self.G.values())).shape[1]

    @property
    def constant(self) -> bool:
        """Whether its map is constant (couplings alone)."""
        return self.G is not None

    @property
    def independent(self) -> tuple:
        """The velocity columns of the cluster (over ``joints``' velocities) whose accelerations are ``y``, in
        order."""
        width = self.ny + len(self.dependent)
        return tuple(k for k in range(width) if k not in self.dependent)


def embedded_clusters(mechanism: Mechanism, names, independent: dict | None = None) -> list:
    """The :class:`EmbeddedCluster` of the constraints ``names`` (couplings and local loops, embedded together
    where they share a joint); ``independent``: constraint -> the joints whose accelerations its cluster's ``y``
    are (:class:`~mechanics.policies.Embed`; by default :func:`loop_partition` chooses)."""
    constraints = [mechanism.constraint(name) for name in names]
    fixed = sorted(n for n in (independent or {}) if isinstance(mechanism.constraint(n), Coupling))
    if fixed:
        raise ValueError(f"Embed(independent=...) chooses a loop's coordinates; {fixed} are couplings, whose y "
                         f"are the joints their map leaves free -- give the loop's policy the joints instead")
    group = {}
    for c in constraints:  # (union of joint sets: a few constraints, a few joints each)
        own = _joints_of(mechanism, c)
        joined = own.union(*(group[j] for j in own if j in group))
        for joint in joined:
            group[joint] = joined
    couplings = {c.name for c in constraints if isinstance(c, Coupling)}
    cmap = coupling_map(mechanism, couplings) if couplings else None
    clusters, seen = [], set()
    for link in mechanism.links:
        if link.name not in group or link.name in seen:
            continue
        joints = tuple(l.name for l in mechanism.links if l.name in group[link.name])
        seen |= set(joints)
        inside = tuple(c.name for c in constraints if _joints_of(mechanism, c) <= set(joints))
        if set(inside) <= couplings:
            columns, free = _columns(mechanism, joints).tolist(), set(cmap.independent.tolist())
            ys = [k for k, column in enumerate(cmap.independent) if column in set(columns)]
            dependent = tuple(k for k, column in enumerate(columns) if column not in free)
            clusters.append(EmbeddedCluster(joints[0], joints, {j: cmap.G[mechanism.v_slices[j]][:, ys] for j in joints},
                                            {j: cmap.g[mechanism.v_slices[j]] for j in joints}, inside, len(ys),
                                            dependent=dependent))
        else:  # (closed under the tree: one parent, which its map may move with)
            from .clusters import _closed_under_tree

            joints = tuple(l.name for l in mechanism.links if l.name in _closed_under_tree(mechanism, set(joints)))
            seen |= set(joints)
            parent = _hanging_from(mechanism, joints)
            moving = parent != GROUND and any(not isinstance(mechanism.constraint(n), (Coupling, Weld)) for n in inside)
            chosen = tuple(sorted({j for n in inside for j in (independent or {}).get(n, ())}))
            dependent = mechanism.derived.get(("loop partition", inside, joints, chosen),  # (projections: once)
                                              lambda: loop_partition(mechanism, inside, joints, chosen))
            ny = _columns(mechanism, joints).size - len(dependent)
            clusters.append(EmbeddedCluster(joints[0], joints, None, None, inside, ny, parent, moving, dependent))
    return clusters


def _joints_of(mechanism: Mechanism, c) -> set:
    """The joints constraint ``c``'s rows move: a coupling's own, a loop's :meth:`~mechanics.Mechanism.loop_joints`."""
    return set(c.joints) if isinstance(c, Coupling) else mechanism.loop_joints(c.name)


def _hanging_from(mechanism: Mechanism, joints) -> str:
    """The link (or the ground) that ``joints``, closed under the tree, hang from."""
    return next(mechanism.parent(j) for j in joints if mechanism.parent(j) not in joints)


def _columns(mechanism: Mechanism, joints) -> np.ndarray:
    """The velocity columns of ``joints``, in their order."""
    return np.concatenate([np.arange(mechanism.v_slices[j].start, mechanism.v_slices[j].stop) for j in joints])


def loop_partition(mechanism: Mechanism, names: tuple, joints: tuple, independent: tuple = ()) -> tuple:
    """The velocity columns of a loop cluster (over ``joints``' velocities) solved for, ``qdd_d``, in 003 Sec.
    IV's explicit map ``qdd_d = B_d^-1 (c - B_i qdd_i)``: as many as the generic rank of constraints ``names``'
    rows on ``joints`` (:func:`_relative_rows`), chosen where those rows' square block ``B_d`` is best
    conditioned at a closed configuration.

    The rank is a structural property (a planar four-bar's Connect has rank 2 anywhere but at its singular
    configurations), read off the neutral configuration and three random ones (seeded), each closed
    (:meth:`~mechanics.Mechanism.project`) where it can be -- the largest, as a singular configuration has
    less; where none closes, the open ones' (an open loop's rows may have more: the states then say so,
    :func:`state_maps`).  The columns are chosen on the first configuration of that rank: among all sets of
    that many columns (the most independent by pivoted QR where there are more than :data:`PARTITIONS` sets)
    the first whose ``B_d`` on an orthonormal basis of the rows has a smallest singular value within
    :data:`PREFERENCE` of the best set's, taking a coupling's first joint (a gear's rotor) and the joints
    farthest from the cluster's parent as dependent first -- so a four-bar's crank, the joint next to the
    parent, stays independent where the geometry allows, and a geared joint's rotor follows its joint.
    ``independent`` (joint names, :class:`~mechanics.policies.Embed`'s) chooses instead: ``y`` is their
    accelerations, every other column solved for -- refused, naming them, where that is not as many as the rows
    fix or their block is singular there.

    Examples
    --------
    >>> from mechanics import models
    >>> mech = models.four_bar()
    >>> loop_partition(mech, ("loop",), ("crank", "coupler", "rocker"))  # y: the crank's acceleration
    (1, 2)
    """
    from .kinematics import kinematics

    loops = [mechanism.constraint(n) for n in names if not isinstance(mechanism.constraint(n), Coupling)]
    own = mechanism.with_constraints(loops)
    rng = np.random.default_rng(0)
    closed, open_ = [], []
    for q in [mechanism.neutral_configuration()] + [mechanism.random_configuration(rng) for _ in range(3)]:
        try:
            q, found = (own.project(q) if loops else q), closed
        except ValueError:  # (this one does not close: another may)
            found = open_
        kin = kinematics(mechanism, q, rng.normal(size=mechanism.nv))
        U, sv, Vt, rank = rows_rank(_relative_rows(mechanism, joints, names, kin, {})[0])
        found.append((int(rank), Vt[:rank]))
    rank, B = max(closed or open_, key=lambda r: r[0])
    if independent:
        return _chosen_columns(mechanism, names, joints, independent, B, rank)
    return _best_conditioned_columns(B, rank, _solved_first(mechanism, names, joints))


def _chosen_columns(mechanism: Mechanism, names: tuple, joints: tuple, independent: tuple, B: np.ndarray,
                    rank: int) -> tuple:
    """The columns a loop cluster solves for when ``independent`` joints are its ``y`` (:func:`loop_partition`)."""
    outside = sorted(set(independent) - set(joints))
    loops = ", ".join(repr(n) for n in names)
    if outside:
        raise ValueError(f"Embed(independent=...) names {outside}, which the cluster of {loops} does not move; "
                         f"its joints are {list(joints)}")
    chosen = set(_columns(mechanism, [j for j in joints if j in set(independent)]).tolist())
    dependent = tuple(k for k, column in enumerate(_columns(mechanism, joints).tolist()) if column not in chosen)
    if len(dependent) != rank:
        raise ValueError(f"Embed(independent={tuple(independent)}): the loops {loops} fix {rank} of their cluster's "
                         f"{B.shape[1]} joint velocities, so y takes {B.shape[1] - rank} of them, not {len(chosen)}; "
                         f"name joints with that many velocities among {list(joints)}")
    smallest = np.linalg.svd(B[:, dependent], compute_uv=False)[-1] if rank else 1.0
    if smallest <= SINGULAR_RTOL:  # (B's rows are orthonormal: its largest singular value is 1)
        raise ValueError(f"Embed(independent={tuple(independent)}): the other joints of the loops {loops} do not "
                         f"follow from these where the loops close (their block's singular value ratio "
                         f"{smallest:.1e}); choose joints that drive the loop")
    return dependent


PARTITIONS = 5000
"""The most column sets :func:`loop_partition` compares one by one; a larger cluster takes pivoted QR's."""
PREFERENCE = 10.0
"""How much worse conditioned than the best a partition may be and still be taken for keeping the joints nearest
the cluster's parent independent (:func:`loop_partition`): within a decade ``y`` stays on the joints a designer
drives (a four-bar's crank, 003's actuated coordinates)."""


def _solved_first(mechanism: Mechanism, names: tuple, joints: tuple) -> list:
    """A cluster's velocity columns (over ``joints``' velocities) in the order :func:`loop_partition` prefers
    them solved for: a coupling's first joint's (a gear's rotor), then the joints farthest from the cluster's
    parent, the later ones first."""
    first = {mechanism.constraint(n).joints[0] for n in names if isinstance(mechanism.constraint(n), Coupling)}
    inside, depth, key = set(joints), {}, {}
    edges = np.cumsum([0] + [mechanism.link(j).joint.nv for j in joints])
    for j, a, b in zip(joints, edges, edges[1:]):
        up = mechanism.parent(j)
        depth[j] = depth[up] + 1 if up in inside else 1
        for column in range(a, b):
            key[column] = (j not in first, -depth[j], -column)
    return sorted(key, key=key.get)


def _best_conditioned_columns(B: np.ndarray, rank: int, order: list) -> tuple:
    """``rank`` columns of ``B (rank, n)`` whose square block is best conditioned, the first in ``order`` among
    those within :data:`PREFERENCE` of the best (:func:`loop_partition`)."""
    from itertools import combinations
    from math import comb

    n = B.shape[1]
    if rank == 0:
        return ()
    if comb(n, rank) > PARTITIONS:
        import scipy.linalg

        return tuple(sorted(int(c) for c in scipy.linalg.qr(B, pivoting=True, mode="r")[1][:rank]))
    sets = list(combinations(order, rank))  # (the preferred columns' first)
    smallest = [np.linalg.svd(B[:, columns], compute_uv=False)[-1] for columns in sets]
    good = max(smallest) / PREFERENCE
    return tuple(sorted(next(columns for columns, s in zip(sets, smallest) if s >= good)))


def rows_rank(A: np.ndarray) -> tuple:
    """``(U, sv, Vt, rank)``: the thin SVD of a cluster's rows ``A (..., m, n)`` (:func:`_relative_rows`) and
    their numerical rank per state (:data:`LOOP_RANK_RTOL`; zero rows: 0) -- what a loop cluster's rank is read
    with, where it is chosen (:func:`loop_partition`) and where a state is checked against it."""
    U, sv, Vt = np.linalg.svd(A, full_matrices=False)
    top = sv[..., :1] if sv.shape[-1] else np.zeros(sv.shape[:-1] + (1,))
    return U, sv, Vt, np.sum((sv > LOOP_RANK_RTOL * top) & (top > 0), axis=-1)


def _relative_rows(mechanism: Mechanism, joints: tuple, names: tuple, kin, terms: dict) -> tuple:
    """``(A (..., m, n_c), c (..., m), K_p (..., m, 6))``: constraints ``names``' rows ``K a = k`` written on the
    cluster's joints ``joints`` and its parent's acceleration, ``A qdd_c + K_p a_p = c`` -- each link of the
    cluster ``a_l = a_p + sum_j S_j qdd_j + b_l`` over its joints from the parent (world-frame spatial
    accelerations add along a branch), ``K_p`` the blocks on the parent and its cluster's summed."""
    from .kinematics import constraint_terms

    inside, batch = set(joints), kin.batch_shape
    edges = np.cumsum([0] + [mechanism.link(j).joint.nv for j in joints])  # (joint j's columns: edges[i]:edges[i+1])
    columns = {j: slice(a, b) for j, a, b in zip(joints, edges, edges[1:])}
    path, bias = {}, {}
    for j in joints:  # (topological order: a joint's parent in the cluster comes first)
        up = mechanism.parent(j)
        path[j] = (path[up] if up in inside else []) + [j]
        bias[j] = (bias[up] if up in inside else 0.0) + kin.bias_acceleration[j]
    parent = _hanging_from(mechanism, joints)
    A, c, Kp = [], [], []
    for name in names:
        t = terms.get(name) or constraint_terms(kin, mechanism.constraint(name))
        m = t.k.shape[-1]
        rows, k, on_parent = np.zeros(batch + (m, edges[-1])), t.k, 0.0
        for link, K in t.K.items():
            on_parent = on_parent + K
            if link == parent:
                continue
            for j in path[link]:
                rows[..., columns[j]] += K @ kin.S[j]
            k = k - (K @ bias[link][..., None])[..., 0]
        A.append(rows)
        c.append(np.broadcast_to(k, batch + (m,)))
        Kp.append(np.broadcast_to(on_parent, batch + (m, 6)))
    return np.concatenate(A, axis=-2), np.concatenate(c, axis=-1), np.concatenate(Kp, axis=-2)


LOOP_RANK_RTOL = 1e-5
"""A loop's rows' singular values below this, relative to the largest, are dependence when a cluster's rank is
read: rows dependent where a loop closes exactly keep singular values of the order of the square root of the
closure's error (fig4's two loops: 1e-6 at 1e-10 m), which a tighter threshold would count as constraints."""
SINGULAR_RTOL = 1e-8
"""A cluster's rows whose ``ny``-th smallest kept singular value falls below this, relative to the largest, are a
singular configuration of it (a four-bar folded flat): its map is refused there."""


def state_maps(mechanism: Mechanism, clusters, kin, terms: dict) -> dict:
    """Cluster name -> ``(G, g, P)`` (joint -> ``(..., nv_j, ny)``, ``(..., nv_j)``, ``(..., nv_j, 6)``) at the
    state of ``kin``: ``qdd_c = G y + g - P a_parent``.  The constant map of couplings (``P`` None), or from a
    cluster's rows ``A qdd_c + K_p a_p = c`` (:func:`_relative_rows`) 003 Sec. IV's explicit map: on an
    orthonormal basis of the rows' numerical row space, ``B qdd_c + K_r a_p = c_r``, split by the cluster's
    columns into ``B = [B_d, B_i]`` (:attr:`EmbeddedCluster.dependent`, :func:`loop_partition`), ``y = qdd_i``
    and ``qdd_d = B_d^-1 (c_r - B_i y - K_r a_p)``: ``G = [-B_d^-1 B_i; I]``, ``g = [B_d^-1 c_r; 0]``, ``P =
    [B_d^-1 K_r; 0]`` (``P`` None where the cluster's parent does not move it:
    :attr:`EmbeddedCluster.moving_parent`, its ``a_0`` folded into ``g`` on the ground).

    The rows' directions past the rank read at closed configurations are left out, least squares: rows
    dependent where the loop closes, which a drifted-open loop may make hold the parent or ask the impossible;
    where that is more than round-off the constraint residual says so (the result does not converge, as
    proximal multipliers do not there).

    Raises
    ------
    ValueError
        A singular configuration of a cluster: its rows lose rank, or its dependent columns' block ``B_d`` does
        (the chosen coordinates ``y`` no longer fix the others) -- the cluster and its constraints named.
    """
    maps = {}
    for cluster in clusters:
        if cluster.constant:
            maps[cluster.name] = (cluster.G, cluster.g, None)
            continue
        A, c, Kp = _relative_rows(mechanism, cluster.joints, cluster.constraints, kin, terms)
        G, g, P = _explicit_map(cluster, A, c, Kp)
        if cluster.parent == GROUND:
            g = g - (P @ kin.root_acceleration[..., None])[..., 0]
        maps[cluster.name] = (_by_joint(mechanism, cluster.joints, G, rows=True), _by_joint(mechanism, cluster.joints, g),
                              _by_joint(mechanism, cluster.joints, P, rows=True) if cluster.moving_parent else None)
    return maps


def _explicit_map(cluster: EmbeddedCluster, A: np.ndarray, c: np.ndarray, Kp: np.ndarray) -> tuple:
    """``(G (..., n_c, ny), g (..., n_c), P (..., n_c, 6))`` of a loop cluster from its rows (:func:`state_maps`)."""
    U, sv, Vt = np.linalg.svd(A, full_matrices=False)
    dependent, independent = list(cluster.dependent), list(cluster.independent)
    rank, n = len(dependent), A.shape[-1]
    batch = A.shape[:-2]
    G = np.zeros(batch + (n, len(independent)))
    G[..., independent, range(len(independent))] = 1.0
    g, P = np.zeros(batch + (n,)), np.zeros(batch + (n, 6))
    if not rank:
        return G, g, P
    named = f"cluster {cluster.name!r} ({', '.join(cluster.constraints)})"
    if np.any(sv[..., rank - 1] <= SINGULAR_RTOL * sv[..., 0]):
        worst = float(np.min(sv[..., rank - 1] / sv[..., 0]))
        raise ValueError(f"{named} is at a singular configuration: its rows lose rank there (singular value "
                         f"ratio {worst:.1e}), so no map qdd = G y + g is well defined; move away from it, or "
                         f"hold the cluster's loops with the prox policy")
    Ur = U[..., :, :rank]
    B = sv[..., :rank, None] * Vt[..., :rank, :]  # (= Ur' A: the rows on an orthonormal basis of their range)
    Bd = B[..., :, dependent]
    smallest = np.linalg.svd(Bd, compute_uv=False)[..., -1]
    if np.any(smallest <= SINGULAR_RTOL * sv[..., 0]):
        worst = float(np.min(smallest / sv[..., 0]))
        raise ValueError(f"{named} is at a singular configuration of its coordinates: its dependent velocity "
                         f"columns {tuple(dependent)} no longer follow from y there (their block's singular value "
                         f"ratio {worst:.1e}); move away from it, or hold the cluster's loops with the prox policy")
    right = np.concatenate([B[..., :, independent], (np.swapaxes(Ur, -1, -2) @ c[..., None]),
                            np.swapaxes(Ur, -1, -2) @ Kp], axis=-1)
    X = np.linalg.solve(Bd, right)
    G[..., dependent, :] = -X[..., :, :len(independent)]
    g[..., dependent] = X[..., :, len(independent)]
    P[..., dependent, :] = X[..., :, len(independent) + 1:]
    return G, g, P


def independent_coordinates(mechanism: Mechanism, q) -> tuple:
    """The coordinates ``z`` of :func:`mechanics.inverse_dynamics` with ``independent=True``: ``(Gamma (..., nv,
    nz), columns (nz,))``, ``qdd = Gamma z + gamma`` on the couplings' and local loops' solutions at ``q``
    (:func:`independent_map`), ``z`` the accelerations of the velocity columns ``columns`` -- every joint
    outside a cluster, each coupling's independent joints (:func:`coupling_map`), each local loop's
    (:func:`loop_partition`: a four-bar's crank).  Other constraints (contacts, loops spanning the tree) are not
    in it.

    Examples
    --------
    >>> from mechanics import models
    >>> mech = models.four_bar()
    >>> Gamma, columns = independent_coordinates(mech, mech.neutral_configuration())
    >>> columns.tolist(), Gamma.shape  # y: the crank's acceleration
    ([0], (3, 1))
    """
    from .checks import check_state
    from .kinematics import kinematics

    zeros = np.zeros(mechanism.nv)
    q, v, _ = check_state(mechanism, np.asarray(q, dtype=float), zeros, zeros)
    return independent_map(mechanism, coordinate_clusters(mechanism), kinematics(mechanism, q, v), {})


def coordinate_clusters(mechanism: Mechanism) -> list:
    """The clusters of :func:`independent_coordinates`: the couplings' and local loops' (made once per
    mechanism)."""
    from .clusters import local

    names = tuple(c.name for c in mechanism.constraints if local(mechanism, c.name))
    return mechanism.derived.get(("independent clusters",), lambda: embedded_clusters(mechanism, names))


def independent_map(mechanism: Mechanism, clusters, kin, terms: dict) -> tuple:
    """``(Gamma (..., nv, nz), columns (nz,))``: every joint's ``qdd`` through the coordinates ``z`` -- the
    joints outside ``clusters`` as themselves, each cluster's through its ``y`` (:func:`state_maps`; ``columns``:
    the velocity column each coordinate is, in order) -- ``qdd = Gamma z + gamma`` at the state of ``kin``.
    A cluster whose map moves with its parent's acceleration gets the parent's path through its rows, ``-P S_j
    Gamma_j`` for each joint ``j`` above it: so ``J Gamma = 0`` for every embedded constraint's rows ``J``,
    open loops too (on the rows' numerical range), and ``Gamma' tau`` are the forces on ``z`` (003's C-RNEA
    output).  ``gamma`` is not formed."""
    maps = state_maps(mechanism, clusters, kin, terms)
    of = {j: cluster for cluster in clusters for j in cluster.joints}
    columns = []
    for link in mechanism.links:
        own = mechanism.v_slices[link.name]
        if link.name not in of:
            columns += range(own.start, own.stop)
        elif link.name == of[link.name].name:
            cluster = of[link.name]
            first = _columns(mechanism, cluster.joints)
            columns += [int(first[k]) for k in cluster.independent]
    columns = np.array(columns, dtype=np.int64)
    where = {int(column): k for k, column in enumerate(columns)}
    Gamma = np.zeros(kin.batch_shape + (mechanism.nv, columns.size))
    done = set()
    for link in mechanism.links:  # (topological order: whatever moves a cluster comes before it)
        name = link.name
        if name not in of:
            for column in range(mechanism.v_slices[name].start, mechanism.v_slices[name].stop):
                Gamma[..., column, where[column]] = 1.0
            continue
        cluster = of[name]
        if cluster.name in done:
            continue
        done.add(cluster.name)
        G, _, P = maps[cluster.name]
        ys = [where[int(c)] for c in _columns(mechanism, cluster.joints)[list(cluster.independent)]]  # (its z)
        moved = 0.0 if P is None else _path_rows(mechanism, cluster.parent, kin, Gamma)  # (..., 6, nz): a_p's
        for joint in cluster.joints:
            rows = mechanism.v_slices[joint]
            Gamma[..., rows, ys] = Gamma[..., rows, ys] + G[joint]
            if P is not None:
                Gamma[..., rows, :] = Gamma[..., rows, :] - P[joint] @ moved
    return Gamma, columns


def _path_rows(mechanism: Mechanism, link: str, kin, Gamma: np.ndarray) -> np.ndarray | float:
    """``(..., 6, nz)``: how link ``link``'s acceleration moves with ``z`` -- ``sum_j S_j Gamma_j`` over the joints
    from the ground to it (world-frame spatial accelerations add along a branch)."""
    moved = 0.0
    while link != GROUND:
        moved = moved + kin.S[link] @ Gamma[..., mechanism.v_slices[link], :]
        link = mechanism.parent(link)
    return moved


def _by_joint(mechanism: Mechanism, joints: tuple, X: np.ndarray, rows: bool = False) -> dict:
    """Joint -> its part of ``X`` stacked over ``joints``' velocities on the last axis (``(..., n_c)``), or on the
    one before with ``rows`` (``(..., n_c, k)``)."""
    edges = np.cumsum([0] + [mechanism.link(j).joint.nv for j in joints])
    return {j: X[..., a:b, :] if rows else X[..., a:b] for j, a, b in zip(joints, edges, edges[1:])}


@dataclass(frozen=True)
class Rotor:
    """A motor's rotor, a body on a joint's parent link spinning about the joint's axis and geared to it:
    ``qdd_rotor = ratio qdd_joint`` (003 Sec. II's geared-rotor model).

    Parameters
    ----------
    ratio : float
        The gear ratio (rotor turns per joint turn).
    inertia : float
        About its spin axis, kg m^2.
    mass : float
    transverse : float, optional
        About the axes normal to the spin axis (default: half of ``inertia``, a thin disc).
    """

    ratio: float
    inertia: float
    mass: float = 0.0
    transverse: float | None = None

    def rotational_inertia(self, axis) -> np.ndarray:
        """``(3, 3)`` about its centre, ``axis`` its spin axis."""
        a = np.asarray(axis, dtype=float)
        transverse = 0.5 * self.inertia if self.transverse is None else self.transverse
        return transverse * np.eye(3) + (self.inertia - transverse) * np.outer(a, a)


def with_rotors(mechanism: Mechanism, rotors: dict, name: str | None = None) -> Mechanism:
    """``mechanism`` with a :class:`Rotor` on each joint of ``rotors`` (``{joint: Rotor}``, revolute joints):
    a link ``"<joint>_rotor"`` on the joint's parent, coaxial with the joint (its placement), right before the
    joint's link (its ``v`` beside the joint's), and a :meth:`Coupling.gear <mechanics.Coupling.gear>` named
    ``"<joint>:gear"``.

    Examples
    --------
    >>> from mechanics import models
    >>> arm = with_rotors(models.serial_chain(3).without_constraints(), {"link1": Rotor(6.0, 3e-5, 0.07)})
    >>> arm.link_names, [c.name for c in arm.constraints], arm.parent("link1_rotor")
    (('link1_rotor', 'link1', 'link2', 'link3'), ['link1:gear'], 'ground')
    """
    from .mechanism import Link

    links, gears = [], []
    for link in mechanism.links:  # (each rotor right before its joint's link: its v beside the joint's)
        rotor = rotors.get(link.name)
        if rotor is not None:
            if link.joint.kind not in ("revolute", "revolute_unbounded"):
                raise ValueError(f"with_rotors: joint {link.name!r} is {link.joint.kind}; a rotor drives a revolute "
                                 f"joint")
            links.append(Link(f"{link.name}_rotor", link.parent, link.joint, link.placement, rotor.mass, np.zeros(3),
                              rotor.rotational_inertia(link.joint.axis)))
            gears.append(Coupling.gear(f"{link.name}_rotor", link.name, rotor.ratio, name=f"{link.name}:gear"))
        links.append(link)
    for joint in rotors:
        mechanism.link(joint)  # (a joint that is not one: KeyError naming it)
    return Mechanism(links, list(mechanism.constraints) + gears, mechanism.gravity, name or mechanism.name,
                     mechanism.frames)
