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

from .mechanism import Coupling, Mechanism

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
        ``y``'s size: the cluster's velocities less the generic rank of its rows.
    """

    name: str
    joints: tuple
    G: dict | None
    g: dict | None
    constraints: tuple = ()
    ny: int = -1

    @property
    def size(self) -> int:
        """``ny``: the cluster's independent coordinates."""
        return self.ny if self.G is None else next(iter(self.G.values())).shape[1]

    @property
    def constant(self) -> bool:
        """Whether its map is constant (couplings alone)."""
        return self.G is not None


def embedded_clusters(mechanism: Mechanism, names) -> list:
    """The :class:`EmbeddedCluster` of the constraints ``names`` (couplings and local loops, embedded together
    where they share a joint)."""
    constraints = [mechanism.constraint(name) for name in names]
    group = {}
    for c in constraints:  # (union of joint sets: a few constraints, a few joints each)
        own = set(c.joints) if isinstance(c, Coupling) else mechanism.loop_joints(c.name)
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
            columns = set(_columns(mechanism, joints).tolist())
            ys = [k for k, column in enumerate(cmap.independent) if column in columns]
            clusters.append(EmbeddedCluster(joints[0], joints, {j: cmap.G[mechanism.v_slices[j]][:, ys] for j in joints},
                                            {j: cmap.g[mechanism.v_slices[j]] for j in joints}, inside))
        else:
            columns = _columns(mechanism, joints)
            clusters.append(EmbeddedCluster(joints[0], joints, None, None, inside,
                                            columns.size - _generic_rank(mechanism, inside, columns)))
    return clusters


def _joints_of(mechanism: Mechanism, c) -> set:
    return set(c.joints) if isinstance(c, Coupling) else mechanism.loop_joints(c.name)


def _columns(mechanism: Mechanism, joints) -> np.ndarray:
    """The velocity columns of ``joints``, in their order."""
    return np.concatenate([np.arange(mechanism.v_slices[j].start, mechanism.v_slices[j].stop) for j in joints])


def _generic_rank(mechanism: Mechanism, names: tuple, columns: np.ndarray) -> int:
    """The rank of constraints ``names``' joint-space rows on ``columns``, their loops closed: a structural
    property (a planar four-bar's Connect has rank 2 anywhere but at its singular configurations), read off the
    neutral configuration and three random ones (seeded), each closed (:meth:`~mechanics.Mechanism.project`)
    where it can be -- the largest, as a singular configuration has less.  Where none closes, the open ones'
    (an open loop's rows may have more: the states then say so, :func:`state_maps`)."""
    from .kinematics import kinematics

    loops = [mechanism.constraint(n) for n in names if not isinstance(mechanism.constraint(n), Coupling)]
    own = mechanism.with_constraints(loops)
    rng = np.random.default_rng(0)
    closed, open_ = [], []
    for q in [mechanism.neutral_configuration()] + [mechanism.random_configuration(rng) for _ in range(3)]:
        try:
            q, ranks = (own.project(q) if loops else q), closed
        except ValueError:  # (this one does not close: another may)
            ranks = open_
        J = _cluster_rows(mechanism, kinematics(mechanism, q, rng.normal(size=mechanism.nv)), names)[0][:, columns]
        sv = np.linalg.svd(J, compute_uv=False)
        ranks.append(int(np.sum(sv > RANK_RTOL * sv[0])) if sv.size and sv[0] > 0 else 0)
    return max(closed or open_)


def _cluster_rows(mechanism: Mechanism, kin, names: tuple, terms: dict | None = None) -> tuple:
    """``(J (..., m, nv), c (..., m))``: constraints ``names``' rows on the joint accelerations (a coupling's
    ``C``, ``c``; a loop's from its terms ``K a = k``, :func:`mechanics.diagnosis.joint_space_constraints`)."""
    from .diagnosis import _joint_space
    from .kinematics import constraint_terms

    constraints = [mechanism.constraint(name) for name in names]
    terms = terms or {}
    J, c, _ = _joint_space(mechanism, kin, [terms.get(x.name) or constraint_terms(kin, x) for x in constraints],
                           inertia=False)
    return J, c


SINGULAR_RTOL = 1e-8
"""A cluster's rows whose ``ny``-th smallest kept singular value falls below this, relative to the largest, are a
singular configuration of it (a four-bar folded flat): its map is refused there."""
CLOSED_RTOL = 1e-8
"""A loop embedded in its cluster must not move with joints outside it: rows there below this, relative to the
largest, else its ends are apart (the loop is not closed at this configuration)."""


def state_maps(mechanism: Mechanism, clusters, kin, terms: dict) -> dict:
    """Cluster name -> ``(G, g)`` (joint -> ``(..., nv_j, ny)``, ``(..., nv_j)``) at the state of ``kin``: the
    constant map of couplings, or the null space of a cluster's rows ``A qdd_c = c`` (``G``: an orthonormal
    basis of it, from the SVD -- any basis embeds; ``g = A^+ c``, the least-norm solution).

    Raises
    ------
    ValueError
        A loop not closed at this configuration (its rows move joints outside its cluster), or a singular
        configuration of a cluster (its rows lose rank), the cluster and its constraints named.
    """
    maps = {}
    for cluster in clusters:
        if cluster.constant:
            maps[cluster.name] = (cluster.G, cluster.g)
            continue
        J, c = _cluster_rows(mechanism, kin, cluster.constraints, terms)
        columns = _columns(mechanism, cluster.joints)
        A, outside = J[..., columns], np.delete(J, columns, axis=-1)
        top = np.max(np.abs(A), initial=0.0)
        gap = np.max(np.abs(outside), initial=0.0)
        if gap > CLOSED_RTOL * max(1.0, top):
            raise ValueError(f"cluster {cluster.name!r} ({', '.join(cluster.constraints)}): its loop is not closed "
                             f"at this configuration -- its rows move joints outside the cluster ({gap:.1e}): "
                             f"embedding writes the loop through the cluster's joints alone; close it first "
                             f"(mechanism.project(q)) or hold it with the prox policy")
        U, sv, Vt = np.linalg.svd(A)
        rank = columns.size - cluster.ny
        if rank < sv.shape[-1] and np.any(sv[..., rank] > SINGULAR_RTOL * sv[..., 0]):
            extra = float(np.max(sv[..., rank] / sv[..., 0]))
            raise ValueError(f"cluster {cluster.name!r} ({', '.join(cluster.constraints)}): its rows have rank "
                             f"above {rank} here (the next singular value ratio {extra:.1e}) -- the rank embedding "
                             f"read at closed configurations is lower (a singular one, or a loop that does not close "
                             f"here); close the loops here (mechanism.project(q)), or hold them with the prox policy")
        if rank and np.any(sv[..., rank - 1] <= SINGULAR_RTOL * sv[..., 0]):
            worst = float(np.min(sv[..., rank - 1] / sv[..., 0]))
            raise ValueError(f"cluster {cluster.name!r} ({', '.join(cluster.constraints)}) is at a singular "
                             f"configuration: its rows lose rank there (singular value ratio {worst:.1e}), so no "
                             f"map qdd = G y + g is well defined; move away from it, or hold the cluster's loops "
                             f"with the prox policy")
        G = np.swapaxes(Vt[..., rank:, :], -1, -2)
        g = (np.swapaxes(Vt[..., :rank, :], -1, -2) @ ((np.swapaxes(U[..., :, :rank], -1, -2) @ c[..., None])
                                                        / sv[..., :rank, None]))[..., 0]
        bounds = np.cumsum([0] + [mechanism.link(j).joint.nv for j in cluster.joints])
        maps[cluster.name] = ({j: G[..., a:b, :] for j, a, b in zip(cluster.joints, bounds, bounds[1:])},
                              {j: g[..., a:b] for j, a, b in zip(cluster.joints, bounds, bounds[1:])})
    return maps


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
