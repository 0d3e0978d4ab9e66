"""The GPLC factor graph of a mechanism (000 eq. 1, DESIGN.md section 1): layout once, fill per state.

Variables (typed keys, :mod:`mechanics.keys`): link accelerations
:class:`~mechanics.keys.LinkAcceleration` (6-d), joint accelerations
:class:`~mechanics.keys.JointAcceleration` (``nv``-d) and, under the policies
that keep them, multipliers :class:`~mechanics.keys.Multiplier` (role
``max``).  Factors:

* a prior per link, ``1/2 a' H_i a - f_i' a`` (``f_i`` the bias force);
* ``1/2 qdd_i' A_i qdd_i - tau_i' qdd_i`` per joint (``A_i`` its armature, a diagonal; zero mostly);
* the tree joint ``a_i - a_pi - S_i qdd_i = a_b,i`` (hard; ``a_0 = -a_grav``
  moved to the right-hand side for links on the ground);
* per constraint ``K a = k``, what its policy adds (:mod:`mechanics.policies`).

:class:`GPLCLayout` is the structure alone -- variables and factor slots, no
numbers -- for one mechanism and choice of policies: plans are analysed from
it.  :meth:`GPLCLayout.fill` builds the numeric graph of a state, slot by
slot, in the same order.

``mu`` follows the papers: larger is stiffer.  ``lambda`` is the papers'
multiplier; the constraint wrench on the links is ``-K' lambda``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from factorgraph import FactorGraph, FactorStructure, GraphStructure, LinearEquality, Quadratic, Variable

from .checks import check_baumgarte, check_mu, check_multipliers, check_state
from .couplings import embedded_clusters, state_maps
from .keys import ClusterCoordinates, ClusterTorque, JointAcceleration, LinkAcceleration, Prior, Torque, TreeJoint
from .kinematics import Kinematics, constraint_terms, kinematics
from .mechanism import GROUND, Mechanism
from .policies import POLICIES, Slot, resolve_policies


@dataclass
class State:
    """What the slots of a layout are filled from: kinematics, torques, constraint terms, ``mu``, ``lambda^k``,
    and the embedded clusters' maps ``qdd_c = G y + g`` (cluster name -> ``(G, g)`` by joint,
    :func:`mechanics.couplings.state_maps`)."""

    kin: Kinematics
    tau: np.ndarray
    terms: dict
    mu: float
    lam: dict
    maps: dict


@dataclass
class GPLC:
    """A GPLC graph at one state, with what the outer loop needs to update it.

    Attributes
    ----------
    graph : FactorGraph
    terms : dict
        Constraint name -> :class:`~mechanics.kinematics.ConstraintTerms`.
    moving : dict
        Constraint name -> index of the factor carrying ``lambda^k`` (the
        penalty for ``alm``, the proximal prior for ``prox``); absent for
        policies that do not iterate it.
    layout : GPLCLayout
    maps : dict
        The embedded clusters' maps at this state (:class:`State`).
    """

    graph: FactorGraph
    terms: dict
    moving: dict
    layout: "GPLCLayout"
    maps: dict

    def qdd(self, x: dict, batch: tuple) -> np.ndarray:
        """``qdd (*batch, nv)`` from a solution ``x``: each joint's, or an embedded cluster's ``G_j y + g_j``."""
        cluster_of, parts = self.layout.cluster_of, []
        for link in self.layout.mechanism.links:
            if not link.joint.nv:
                continue
            cluster = cluster_of.get(link.name)
            if cluster is None:
                part = x[JointAcceleration(link.name)]
            else:
                G, g, P = (None if m is None else m[link.name] for m in self.maps[cluster.name])
                part = g if not cluster.size else (
                    (x[ClusterCoordinates(cluster.name)][..., None, :] @ np.swapaxes(G, -1, -2))[..., 0, :] + g)
                if P is not None:
                    part = part - (P @ x[LinkAcceleration(cluster.parent)][..., None])[..., 0]
            parts.append(np.broadcast_to(part, batch + part.shape[-1:]))
        return np.concatenate(parts, axis=-1) if parts else np.zeros(batch + (0,))


_EYE6, _MINUS_EYE6 = np.eye(6), -np.eye(6)
_EYE6.flags.writeable = _MINUS_EYE6.flags.writeable = False


def _cluster_slots(mechanism: Mechanism, link, cluster) -> list:
    """Prior and tree joint of ``link``, a joint of an embedded ``cluster`` (003 Sec. IV): the tree joint on
    ``(a_i, a_pi, y)``, ``a_i - a_pi - S_i G_i y = a_b,i + S_i g_i`` (``qdd_i = G_i y + g_i``); where the
    cluster's map moves with its parent's acceleration (``qdd_i = G_i y + g_i - P_i a_p``), on ``a_p`` too
    (``+S_i P_i``, with the ``-I`` of a joint on the parent).  Its torque is in the cluster's
    (:func:`_cluster_torque`)."""
    name, parent, top = link.name, link.parent, cluster.parent
    a, y = LinkAcceleration(name), ClusterCoordinates(cluster.name)
    prior = _link_slots(mechanism, link)[0]
    free = (y,) if cluster.size else ()  # (a cluster with no free motion: qdd_c = g, no y)
    moving = cluster.moving_parent
    keys = (a,) + ((LinkAcceleration(parent),) if parent != GROUND else ())
    units = (1,) + ((0 if moving and parent == top else -1,) if parent != GROUND else ())
    if moving and parent != top:
        keys, units = keys + (LinkAcceleration(top),), units + (0,)
    keys, units = keys + free, units + (0,) * len(free)

    def tree_joint(s: State):
        S, (G, g, P) = s.kin.S[name], (None if m is None else m[name] for m in s.maps[cluster.name])
        rhs = s.kin.bias_acceleration[name] + (S @ g[..., None])[..., 0]
        if parent == GROUND:
            rhs = rhs + s.kin.root_acceleration
        blocks = [_EYE6] + ([] if parent == GROUND else [_MINUS_EYE6])
        if moving:
            on_top = S @ P
            if parent == top:
                blocks[-1] = on_top - np.eye(6)
            else:
                blocks.append(on_top)
        blocks += [-(S @ G)] if free else []
        return LinearEquality.trusted(keys, blocks, rhs, units)

    return [prior, Slot(TreeJoint(name), keys, 6, tree_joint, units=units)]


def _cluster_torque(mechanism: Mechanism, cluster) -> Slot:
    """The torques and armature of an embedded cluster's joints on its ``y``: ``1/2 y' G'AG y - (G' tau - G'A
    g)' y`` (``tau' qdd`` and ``1/2 qdd' A qdd`` with ``qdd = G y + g``, constants dropped); on ``(y, a_p)`` with
    ``[G, -P]`` for ``G`` where the map moves with the parent (``qdd = G y + g - P a_p``; on ``a_p`` alone
    where the cluster has no free motion)."""
    keys = (((ClusterCoordinates(cluster.name),) if cluster.size else ())
            + ((LinkAcceleration(cluster.parent),) if cluster.moving_parent else ()))
    A = np.concatenate([mechanism.link(j).armature for j in cluster.joints])
    columns = np.concatenate([np.arange(mechanism.v_slices[j].start, mechanism.v_slices[j].stop) for j in cluster.joints])

    def stacked(s: State):
        """``(Z, g)``: ``G`` (``[G, -P]`` on a moving parent) and ``g`` of the cluster's joints, stacked."""
        G, g, P = s.maps[cluster.name]
        Z = np.concatenate([G[j] for j in cluster.joints], axis=-2)
        if P is not None:
            Z = np.concatenate([Z, -np.concatenate([P[j] for j in cluster.joints], axis=-2)], axis=-1)
        return Z, np.concatenate([g[j] for j in cluster.joints], axis=-1)

    constant = None
    if cluster.constant:  # (its G'AG made once, shared by every state's factor)
        G = np.concatenate([cluster.G[j] for j in cluster.joints])
        constant = G.T @ (A[:, None] * G)
        constant.flags.writeable = False

    def torque(s: State):
        Z, g = stacked(s)
        H = constant if constant is not None else np.swapaxes(Z, -1, -2) @ (A[:, None] * Z)
        return Quadratic.trusted(keys, H, ((s.tau[..., columns] - A * g)[..., None, :] @ Z)[..., 0, :])

    return Slot(ClusterTorque(cluster.name), keys, 0, torque)


def _link_slots(mechanism: Mechanism, link) -> list:
    """Prior, torque and tree joint of ``link`` (000 eq. 1a-b).

    The factors are made with the trusted constructors (no checks, no copies):
    their arrays come fresh from the kinematics of a validated state, in shapes
    fixed here, and the declared ``+-I`` blocks are the constants above.
    """
    name, parent, nv = link.name, link.parent, link.joint.nv
    a, qdd = LinkAcceleration(name), JointAcceleration(name)

    def prior(s: State):
        H = s.kin.inertia[name]
        return Quadratic.trusted((a,), 0.5 * (H + np.swapaxes(H, -1, -2)), s.kin.bias_force[name])

    slots = [Slot(Prior(name), (a,), 0, prior)]
    if nv:
        torque, armature = mechanism.v_slices[name], np.diag(link.armature)
        armature.flags.writeable = False  # shared by every state's factor
        slots.append(Slot(Torque(name), (qdd,), 0, lambda s: Quadratic.trusted((qdd,), armature, s.tau[..., torque])))
    keys = (a,) + ((LinkAcceleration(parent),) if parent != GROUND else ()) + ((qdd,) if nv else ())
    units = (1,) + ((-1,) if parent != GROUND else ()) + ((0,) if nv else ())

    def tree_joint(s: State):
        blocks, rhs = [_EYE6], s.kin.bias_acceleration[name]
        if parent == GROUND:
            rhs = rhs + s.kin.root_acceleration
        else:
            blocks.append(_MINUS_EYE6)
        if nv:
            blocks.append(-s.kin.S[name])
        return LinearEquality.trusted(keys, blocks, rhs, units)

    return slots + [Slot(TreeJoint(name), keys, 6, tree_joint, units=units)]


class GPLCLayout:
    """The structure of a mechanism's GPLC graph under per-constraint policies: variables and factor slots.

    Parameters
    ----------
    mechanism : Mechanism
    policies : dict
        Constraint name -> :class:`~mechanics.policies.ConstraintPolicy`
        (:func:`~mechanics.policies.resolve_policies`).

    Attributes
    ----------
    variables : tuple of factorgraph.Variable
    slots : tuple of Slot
        One per factor, in the graph's factor order.
    moving : dict
        Constraint name -> factor index whose linear term carries ``lambda^k``.

    Examples
    --------
    >>> import mechanics
    >>> mech = mechanics.models.four_bar()
    >>> layout = GPLCLayout(mech, resolve_policies("prox", mech))
    >>> sorted({v.key.kind for v in layout.variables}), len(layout.slots)
    (['joint', 'link', 'multiplier'], 12)
    """

    def __init__(self, mechanism: Mechanism, policies: dict):
        self.mechanism, self.policies = mechanism, policies
        self.clusters = _embedded(mechanism, policies)
        self.cluster_of = cluster_of = {joint: cluster for cluster in self.clusters for joint in cluster.joints}
        variables, slots = [], []
        for link in mechanism.links:
            variables.append(Variable(LinkAcceleration(link.name), 6))
            cluster = cluster_of.get(link.name)
            if cluster is None:
                if link.joint.nv:
                    variables.append(Variable(JointAcceleration(link.name), link.joint.nv))
                slots += _link_slots(mechanism, link)
                continue
            if link.name == cluster.name:  # (its first joint: the cluster's y and torque once)
                if cluster.size:
                    variables.append(Variable(ClusterCoordinates(cluster.name), cluster.size))
                if cluster.size or cluster.moving_parent:
                    slots.append(_cluster_torque(mechanism, cluster))
            slots += _cluster_slots(mechanism, link, cluster)
        self.moving = {}
        for c in mechanism.constraints:
            policy = policies[c.name]
            variables += policy.variables(c)
            for slot in policy.slots(c, tuple(l for l in c.links if l != GROUND)):
                if slot.moving:
                    self.moving[c.name] = len(slots)
                slots.append(slot)
        self.variables, self.slots = tuple(variables), tuple(slots)

    def structure(self) -> GraphStructure:
        """The structure-only graph (roles attached) that plans are analysed from."""
        return GraphStructure(self.variables, tuple(FactorStructure(s.keys, s.rows, s.role, s.units) for s in self.slots))

    def fill(self, kin: Kinematics, tau: np.ndarray, mu: float, lam: dict, baumgarte: dict | None = None) -> GPLC:
        """The numeric graph at a kinematic state; ``lam`` maps constraint name -> ``lambda^k``, ``baumgarte``
        constraint name -> ``(Kp, Kd)`` (:func:`~mechanics.checks.check_baumgarte`)."""
        gains = baumgarte or {}
        terms = {c.name: constraint_terms(kin, c, gains.get(c.name)) for c in self.mechanism.constraints}
        maps = state_maps(self.mechanism, self.clusters, kin, terms) if self.clusters else {}
        state = State(kin, tau, terms, mu, lam, maps)
        graph = FactorGraph()
        for var in self.variables:
            graph.add_variable(var)
        for slot in self.slots:
            graph.add(slot.fill(state), role=slot.role)
        return GPLC(graph, terms, dict(self.moving), self, maps)


def _embedded(mechanism: Mechanism, policies: dict) -> list:
    """The embedded clusters of the couplings whose policy embeds them (:mod:`mechanics.couplings`)."""
    names = [c.name for c in mechanism.constraints if policies[c.name].embeds(c)]
    if not names:
        return []
    chosen = {n: policies[n].independent for n in names if getattr(policies[n], "independent", ())}
    return embedded_clusters(mechanism, names, chosen)


def split_multipliers(mechanism: Mechanism, lam, batch: tuple) -> dict:
    """Validated ``(..., m)`` stacked multipliers (constraint order) -> {constraint name: (..., m_j)}.

    ``None`` gives zeros of batch shape ``batch``.
    """
    if lam is None:
        lam = np.zeros(batch + (mechanism.constraint_dim,))
    out, start = {}, 0
    for c in mechanism.constraints:
        out[c.name] = lam[..., start : start + c.dim]
        start += c.dim
    return out


def gplc_graph(mechanism: Mechanism, q, v, tau, policy="prox", mu: float = 1e6, lam=None, baumgarte=None) -> FactorGraph:
    """The GPLC factor graph of ``mechanism`` at state ``(q, v, tau)``.

    Parameters
    ----------
    mechanism : Mechanism
    q : array_like, shape (..., nq)
    v, tau : array_like, shape (..., nv)
    policy : str, ConstraintPolicy or dict
        How constraints enter the graph: one of :data:`mechanics.POLICIES`
        for all, or per constraint (:func:`mechanics.policies.resolve_policies`).
    mu : float
        Penalty / proximal parameter, larger is stiffer.
    lam : array_like, shape (..., m), optional
        Current multiplier estimate ``lambda^k`` (papers' sign), stacked in
        constraint order; zero by default.
    baumgarte : (Kp, Kd) or dict, optional
        Baumgarte's correction in the constraints' right-hand sides (:func:`~mechanics.forward_dynamics`'s).

    Returns
    -------
    factorgraph.FactorGraph
        Variables keyed by :mod:`mechanics.keys`; ``graph.role(i)`` says what
        factor ``i`` is.

    Examples
    --------
    >>> import numpy as np, mechanics
    >>> mech = mechanics.models.four_bar()
    >>> g = gplc_graph(mech, mech.neutral_configuration(), np.zeros(mech.nv), np.zeros(mech.nv))
    >>> sorted({k.kind for k in g.keys}), g.role(0)
    (['joint', 'link', 'multiplier'], Prior(link='crank'))
    """
    q, v, tau = check_state(mechanism, q, v, tau)
    policies, mu, gains = resolve_policies(policy, mechanism), check_mu(mu), check_baumgarte(mechanism, baumgarte)
    if lam is not None:
        lam = check_multipliers(mechanism, lam, "lam", {"q": q, "v": v, "tau": tau})
    kin = kinematics(mechanism, q, v)
    lam = split_multipliers(mechanism, lam, kin.batch_shape)
    return GPLCLayout(mechanism, policies).fill(kin, tau, mu, lam, gains).graph


__all__ = ["GPLC", "GPLCLayout", "POLICIES", "State", "gplc_graph", "split_multipliers"]
