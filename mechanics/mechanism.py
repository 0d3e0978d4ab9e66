"""Mechanisms: links on a spanning tree of joints, plus cut joints and contacts.

A :class:`Mechanism` is an immutable description (Pinocchio's *model*): the
links, each attached to its parent link (or the ground) by a tree joint, and
the constraints that close loops -- :class:`Weld` (6-D), :class:`Connect`
(3-D point), :class:`General` (``sum_l K_l a_l = k`` on any number of links),
:class:`Coupling` (``sum_j C_j qdd_j = c`` on joint accelerations: gears, belts,
differentials, mimic joints).
A constraint with ``"ground"`` as a link is a contact.  Graphs are built from
a mechanism by free functions (``gplc_graph``), never stored in it; only the
symbolic plans computed for it are kept (``Mechanism.plans``).

Links are numbered in topological order, ``1..n_b`` (``0`` is the ground), so
``parent < child`` as in 000 Sec. III-B.
"""
from __future__ import annotations

import difflib
import warnings
from collections import Counter, OrderedDict
from dataclasses import dataclass, field, replace
from itertools import accumulate
from typing import Sequence

import numpy as np

from .joints import Joint, integrate, neutral, random_configuration, unit_norm_parts
from .spatial import spatial_inertia

GROUND = "ground"
ANCHOR_RTOL = 1e-9  # two ground constraints on one link disagree beyond this (relative to the distances involved)


class IncompatibleConstraintsWarning(UserWarning):
    """Constraints that hold together at acceleration level but at no configuration: e.g. one link welded to
    the ground, or to another link, at two different places (``Mechanism`` warns when it is built; loops whose
    closure depends on ``q`` are judged by :meth:`Mechanism.project`'s error)."""
_EYE = np.eye(3)
_EYE.flags.writeable = False
_ORTHONORMAL_TOL = 1e-8 + 1e-5 * _EYE  # the test of np.allclose(R R', I, atol=1e-8), without its overhead


@dataclass(frozen=True, eq=False)
class Pose:
    """A frame's rotation and origin in its parent's coordinates."""

    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self):
        R = np.asarray(self.rotation, dtype=float)
        p = np.asarray(self.translation, dtype=float)
        if R.shape != (3, 3) or p.shape != (3,) or not (np.isfinite(R).all() and np.isfinite(p).all()):
            raise ValueError(f"a Pose needs a finite 3x3 rotation and 3-vector translation, got {R.shape}, {p.shape}")
        if not (np.abs(R @ R.T - _EYE) <= _ORTHONORMAL_TOL).all() or np.linalg.det(R) < 0:
            raise ValueError("Pose rotation is not a proper rotation matrix (R R' = I, det R = 1)")
        object.__setattr__(self, "rotation", R)
        object.__setattr__(self, "translation", p)


def at(x: float = 0.0, y: float = 0.0, z: float = 0.0) -> Pose:
    """A pure translation."""
    return Pose(np.eye(3), np.array([x, y, z], dtype=float))


@dataclass(frozen=True, eq=False)
class Link:
    """A rigid body and the tree joint attaching it to its parent.

    Parameters
    ----------
    name : str
    parent : str
        Name of the parent link, or ``"ground"``.
    joint : Joint
    placement : Pose
        Joint frame on the parent link (the child link's frame at ``q = 0``).
    mass : float
    com : (3,) centre of mass in the link frame
    inertia : (3, 3) rotational inertia about the centre of mass
    armature : (nv,) or float, optional
        Added to the joint-space inertia's diagonal at the joint's velocities (Pinocchio's ``armature``,
        MJCF's joint ``armature``: a motor's reflected rotor inertia, without its gyroscopic terms -- for those,
        model the rotor as a body, :func:`mechanics.with_rotors`).  Default zero.
    """

    name: str
    parent: str
    joint: Joint
    placement: Pose = field(default_factory=Pose)
    mass: float = 1.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.eye(3) * 1e-2)
    armature: np.ndarray | float | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or self.name == GROUND:
            raise ValueError(f"link name must be a non-empty str other than {GROUND!r}, got {self.name!r}")
        if not isinstance(self.joint, Joint):
            raise TypeError(f"link {self.name!r}: joint must be a mechanics.Joint, got {type(self.joint).__name__}")
        com = np.asarray(self.com, dtype=float)
        inertia = np.asarray(self.inertia, dtype=float)
        if not (np.isfinite(self.mass) and self.mass >= 0):
            raise ValueError(f"link {self.name!r}: mass must be finite and >= 0, got {self.mass!r}")
        if com.shape != (3,) or inertia.shape != (3, 3) or not np.isfinite(inertia).all() or not np.isfinite(com).all():
            raise ValueError(f"link {self.name!r}: com must be a finite 3-vector and inertia a finite 3x3 matrix")
        symmetric = (np.abs(inertia - inertia.T) <= 1e-12 + 1e-5 * np.abs(inertia.T)).all()  # np.allclose, inlined
        if not symmetric or np.min(np.linalg.eigvalsh(inertia)) < -1e-12:
            raise ValueError(f"link {self.name!r}: rotational inertia must be symmetric positive semidefinite")
        armature = np.asarray(0.0 if self.armature is None else self.armature, dtype=float)
        armature = np.full(self.joint.nv, float(armature)) if armature.ndim == 0 else armature
        if armature.shape != (self.joint.nv,) or not np.all(np.isfinite(armature)) or np.any(armature < 0):
            raise ValueError(f"link {self.name!r}: armature must be a finite number >= 0 or {self.joint.nv} of them "
                             f"(one per joint velocity), got {self.armature!r}")
        object.__setattr__(self, "com", com)
        object.__setattr__(self, "inertia", inertia)
        object.__setattr__(self, "armature", np.array(armature))

    @property
    def spatial_inertia(self) -> np.ndarray:
        """6x6 spatial inertia about the link frame's origin, ``[omega; v]`` order."""
        return spatial_inertia(self.mass, self.com, self.inertia)


def _axes(axes, full: int, kind: str) -> tuple:
    axes = tuple(range(full)) if axes is None else tuple(int(a) for a in axes)
    if not axes or len(set(axes)) != len(axes) or any(a < 0 or a >= full for a in axes):
        raise ValueError(f"{kind}: axes must be distinct indices in 0..{full - 1}, got {axes}")
    return axes


@dataclass(frozen=True, eq=False)
class _CutJoint:
    """A constraint between a frame on ``link1`` and a frame on ``link2`` (either may be the ground)."""

    link1: str
    link2: str
    placement1: Pose = field(default_factory=Pose)
    placement2: Pose = field(default_factory=Pose)
    axes: tuple | None = None
    name: str | None = None
    FULL = 0  # rows of the unrestricted constraint

    def __post_init__(self):
        object.__setattr__(self, "axes", _axes(self.axes, self.FULL, type(self).__name__))

    @property
    def links(self) -> tuple:
        return (self.link1, self.link2)

    @property
    def dim(self) -> int:
        return len(self.axes)


@dataclass(frozen=True, eq=False)
class Weld(_CutJoint):
    """6-D cut joint: frames ``placement1`` on ``link1`` and ``placement2`` on ``link2`` move together.

    Rows are the relative twist in frame 1, ``[linear; angular]`` (Pinocchio's
    CONTACT_6D, LOCAL), restricted to ``axes``.
    """

    FULL = 6


@dataclass(frozen=True, eq=False)
class Connect(_CutJoint):
    """3-D cut joint (ball joint / point contact): the origins of the two frames coincide.

    Rows are the relative point acceleration in frame 1 (Pinocchio's CONTACT_3D,
    LOCAL), restricted to ``axes`` -- e.g. ``axes=(0, 1)`` for a planar loop.
    """

    FULL = 3


@dataclass(frozen=True, eq=False)
class General:
    """``sum_l K_l a_l = k`` with constant world-frame ``K_l`` (m x 6) -- any number of links (000 Remark 1)."""

    links: tuple
    K: tuple
    k: np.ndarray
    name: str | None = None

    def __post_init__(self):
        links = tuple(self.links)
        K = tuple(np.asarray(block, dtype=float) for block in self.K)
        k = np.asarray(self.k, dtype=float)
        if len(K) != len(links) or not links:
            raise ValueError(f"General constraint: {len(K)} K blocks for {len(links)} links")
        if k.ndim != 1 or any(block.shape != (k.shape[0], 6) for block in K):
            raise ValueError(f"General constraint: each K must be ({k.shape[-1] if k.ndim else '?'}, 6) and k a vector")
        if not all(np.all(np.isfinite(b)) for b in K) or not np.all(np.isfinite(k)):
            raise ValueError("General constraint: K and k must be finite")
        object.__setattr__(self, "links", links)
        object.__setattr__(self, "K", K)
        object.__setattr__(self, "k", k)

    @property
    def dim(self) -> int:
        return self.k.shape[0]


@dataclass(frozen=True, eq=False)
class Coupling:
    """A joint coupling: ``sum_j C_j qdd_j = c`` on the accelerations of the joints ``joints`` (each named by its
    child link) -- a rotor geared to its link, a belt, a differential, a mimic joint.

    Parameters
    ----------
    joints : sequence of str
        The coupled joints, by their child links' names.
    C : sequence of array_like, each (m, nv_j)
        One block per joint.
    c : array_like, (m,), optional
        The constant right-hand side (zero: a coupling of velocities ``sum_j C_j v_j = 0``).
    offset : array_like, (m,), optional
        A position level ``sum_j C_j q_j = offset`` where every joint is revolute or prismatic (a mimic
        joint's); without it the coupling has none (a gear's rotor angle is known only up to a turn).
    name : str, optional

    In the GPLC graph it is one more constraint ``K a = k`` on link accelerations: with ``S_j^+ = S_local' X_j^-1``
    (the columns of every joint's local ``S`` are orthonormal), ``qdd_j = S_j^+ (a_j - a_parent - a_b,j)`` on the
    tree joint's hard rows, so ``K`` has ``C_j S_j^+`` on ``a_j`` and its negative on ``a_parent``.  Its force
    ``f`` (Pinocchio's sign) acts on joint ``j`` as the generalized force ``C_j' f``.

    Examples
    --------
    >>> gear = Coupling.gear("rotor", "link", 6.0)  # qdd_rotor = 6 qdd_link
    >>> gear.dim, [block.tolist() for block in gear.C]
    (1, [[[1.0]], [[-6.0]]])
    """

    joints: tuple
    C: tuple
    c: np.ndarray | None = None
    offset: np.ndarray | None = None
    name: str | None = None
    parents: tuple | None = None  # the joints' parent links, filled by the Mechanism

    def __post_init__(self):
        joints = tuple(str(j) for j in self.joints)
        C = tuple(np.atleast_2d(np.asarray(block, dtype=float)) for block in self.C)
        label = self.name or "coupling"
        if not joints or len(C) != len(joints):
            raise ValueError(f"Coupling {label!r}: {len(C)} blocks C for {len(joints)} joints (one per joint)")
        if len(set(joints)) != len(joints):
            raise ValueError(f"Coupling {label!r} names a joint twice: {list(joints)}")
        m = C[0].shape[0]
        c = np.zeros(m) if self.c is None else np.atleast_1d(np.asarray(self.c, dtype=float))
        offset = None if self.offset is None else np.atleast_1d(np.asarray(self.offset, dtype=float))
        if m < 1 or any(block.ndim != 2 or block.shape[0] != m for block in C) or c.shape != (m,) or (
                offset is not None and offset.shape != (m,)):
            raise ValueError(f"Coupling {label!r}: every C_j must have the same rows m >= 1, and c and offset be "
                             f"m-vectors; got C shapes {[b.shape for b in C]}, c {c.shape}"
                             + (f", offset {offset.shape}" if offset is not None else ""))
        if not all(np.all(np.isfinite(b)) for b in C) or not np.all(np.isfinite(c)) or (
                offset is not None and not np.all(np.isfinite(offset))):
            raise ValueError(f"Coupling {label!r}: C, c and offset must be finite")
        object.__setattr__(self, "joints", joints)
        object.__setattr__(self, "C", C)
        object.__setattr__(self, "c", c)
        object.__setattr__(self, "offset", offset)

    @classmethod
    def mimic(cls, joint: str, mimicked: str, multiplier: float = 1.0, offset: float = 0.0, name=None) -> "Coupling":
        """``q_joint = multiplier q_mimicked + offset`` (URDF's ``<mimic>``), hence ``qdd_joint = multiplier qdd_mimicked``."""
        return cls((joint, mimicked), ([[1.0]], [[-float(multiplier)]]), offset=[float(offset)], name=name)

    @classmethod
    def gear(cls, rotor: str, link: str, ratio: float, name=None) -> "Coupling":
        """``qdd_rotor = ratio qdd_link``: a rotor geared to its link's joint (velocity level only)."""
        return cls((rotor, link), ([[1.0]], [[-float(ratio)]]), name=name)

    @property
    def dim(self) -> int:
        return self.C[0].shape[0]

    @property
    def links(self) -> tuple:
        """The links whose accelerations ``K`` reaches: the joints' links, then their parents -- the ground among
        them where a joint is on it (its acceleration is known: a coupling of such a joint closes a loop through
        the ground, as a contact does)."""
        return tuple(dict.fromkeys(self.joints + (self.parents or ())))


class PlanCache:
    """Symbolic plans of one mechanism (:func:`mechanics.algorithms.plan_of`), most recent first.

    Keys are what a plan depends on: each constraint's policy name and the
    ordering policy (the function itself, so an ordering written inline is a
    new key each time -- hence the bound of ``size`` plans).
    """

    def __init__(self, size: int = 32):
        self.size = size
        self._plans: OrderedDict = OrderedDict()

    def get(self, key, make):
        """The plan under ``key``, made by ``make()`` the first time."""
        plans = self._plans
        try:
            plans.move_to_end(key)  # (one lookup: a kept one is the common case, every call of forward_dynamics)
        except KeyError:
            plans[key] = make()
            if len(plans) > self.size:
                plans.popitem(last=False)
        return plans[key]

    def __len__(self) -> int:
        return len(self._plans)

    def __repr__(self) -> str:
        return f"PlanCache({len(self._plans)} of {self.size} plans)"


class Mechanism:
    """Links on a spanning tree plus loop-closing constraints.

    Parameters
    ----------
    links : sequence of Link
        In any order; they are sorted topologically (stable).
    constraints : sequence of Weld, Connect, General or Coupling
        A Weld or Connect may name a frame (``frames``) instead of a link at
        either end: it is restated on the frame's link, its placement composed
        with the frame's (``Weld("left_sole_link", "ground", ...)`` on a URDF robot).
    gravity : (3,) gravitational acceleration in the world frame
    name : str
    frames : dict, optional
        Frame name -> ``(link, Pose)``: named frames fixed on links (a URDF's
        bodies and fixed joints, an end effector, a sole), as
        :func:`~mechanics.from_pinocchio` reads them.

    Attributes
    ----------
    plans : PlanCache
        The symbolic plans computed for this mechanism so far.
    frames : dict
        Frame name -> ``(link, Pose)`` (names that are links are left out).

    Examples
    --------
    >>> from mechanics import Joint, Link, Mechanism, Weld, at
    >>> links = [Link("l1", "ground", Joint("revolute", "z")), Link("l2", "l1", Joint("revolute", "z"), at(1.0))]
    >>> m = Mechanism(links, frames={"tip": ("l2", at(1.0))})
    >>> m.nv, m.parent("l2"), m.children("l1")
    (2, 'l1', ('l2',))
    >>> m.with_constraints([Weld("tip", "ground", placement2=at(2.0))]).constraints[0].link1
    'l2'
    """

    def __init__(self, links: Sequence[Link], constraints: Sequence = (), gravity=(0.0, 0.0, -9.81), name: str = "mechanism",
                 frames: dict | None = None):
        self.name = name
        self.links = _topological(links)
        self.index = {link.name: i + 1 for i, link in enumerate(self.links)}
        self.frames = self._checked_frames(frames or {})
        self.gravity = np.asarray(gravity, dtype=float)
        if self.gravity.shape != (3,) or not np.all(np.isfinite(self.gravity)):
            raise ValueError(f"gravity must be a finite 3-vector, got {gravity!r}")
        self.constraints = tuple(self._checked(j, c) for j, c in enumerate(constraints))
        names = [c.name for c in self.constraints]
        if len(set(names)) != len(names):
            raise ValueError(f"constraint names must be unique, got {names}")
        self._constraint_index = {c.name: c for c in self.constraints}
        _warn_incompatible_anchors(self.name, self.constraints)
        self._constraint_dim = sum(c.dim for c in self.constraints)
        children = {link.name: [] for link in self.links}
        for link in self.links:  # topological order, so each tuple is too
            if link.parent != GROUND:
                children[link.parent].append(link.name)
        self._children = {name: tuple(kids) for name, kids in children.items()}
        self._loops: dict = {}  # constraint name -> (SL(j), lowest common ancestor or None), filled on demand
        self._supported: dict | None = None  # link name -> LS(i), filled on first use
        self.plans = PlanCache()
        self.derived = PlanCache()  # GPLC layouts and compiled tables: structure derived once per choice of policies
        offsets_q = list(accumulate((link.joint.nq for link in self.links), initial=0))
        offsets_v = list(accumulate((link.joint.nv for link in self.links), initial=0))
        self.q_slices = {l.name: slice(a, b) for l, a, b in zip(self.links, offsets_q, offsets_q[1:])}
        self.v_slices = {l.name: slice(a, b) for l, a, b in zip(self.links, offsets_v, offsets_v[1:])}
        self.nq, self.nv = offsets_q[-1], offsets_v[-1]
        self.unit_norm_columns = tuple(  # (link, columns of q, what): the parts of q that have unit norm
            (link, slice(self.q_slices[link.name].start + part.start, self.q_slices[link.name].start + part.stop), what)
            for link in self.links for part, what in unit_norm_parts(link.joint))

    def _checked_frames(self, frames: dict) -> dict:
        """``{name: (link, Pose)}``: each frame on a link of this mechanism (or the ground); link names win."""
        out = {}
        for name, (link, pose) in frames.items():
            if link != GROUND and link not in self.index:
                raise ValueError(f"frame {name!r} is attached to {link!r}, which is not a link of the mechanism")
            if not isinstance(pose, Pose):
                raise TypeError(f"frame {name!r}: its placement must be a Pose, got {type(pose).__name__}")
            if name not in self.index and name != GROUND:
                out[name] = (link, pose)
        return out

    def _coupled(self, c: "Coupling", label: str) -> "Coupling":
        """A Coupling whose joints are joints of this mechanism, with blocks of their widths and a position
        level only on revolute and prismatic joints; its parents filled in."""
        for joint, block in zip(c.joints, c.C):
            if joint not in self.index:
                close = difflib.get_close_matches(joint, list(self.index), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(f"coupling {label!r} names joint {joint!r}, which is not a joint of the mechanism"
                                 f"{hint}: name a joint by its child link (links: {_listed(self.index)})")
            kind, nv = self.link(joint).joint.kind, self.link(joint).joint.nv
            if nv == 0:
                raise ValueError(f"coupling {label!r}: joint {joint!r} is fixed; it has no velocity to couple")
            if block.shape[1] != nv:
                raise ValueError(f"coupling {label!r}: the block of joint {joint!r} has {block.shape[1]} columns, but "
                                 f"the joint ({kind}) has nv = {nv}")
            if c.offset is not None and kind not in ("revolute", "prismatic"):
                raise ValueError(f"coupling {label!r}: a position level (offset) needs revolute or prismatic joints; "
                                 f"joint {joint!r} is {kind} (give offset=None to couple velocities only)")
        return replace(c, parents=tuple(self.link(joint).parent for joint in c.joints))

    def _on_links(self, c, label: str):
        """A Weld / Connect whose ends name frames, restated on the frames' links (placements composed)."""
        if isinstance(c, (General, Coupling)) or all(end in self.index or end == GROUND for end in c.links):
            return c
        ends = {}
        for side, (end, placement) in enumerate(((c.link1, c.placement1), (c.link2, c.placement2)), start=1):
            if end in self.frames:
                link, pose = self.frames[end]
                R, p = pose.rotation @ placement.rotation, pose.translation + pose.rotation @ placement.translation
                end, placement = link, Pose(R, p)
            ends[f"link{side}"], ends[f"placement{side}"] = end, placement
        return replace(c, **ends)

    def _checked(self, j: int, c):
        if not isinstance(c, (Weld, Connect, General, Coupling)):
            raise TypeError(f"constraint {j}: expected Weld, Connect, General or Coupling, got {type(c).__name__}")
        label = c.name if c.name is not None else f"c{j}"
        if isinstance(c, Coupling):
            c = self._coupled(c, label)
        c = self._on_links(c, label)
        for link in c.links:
            if link != GROUND and link not in self.index:
                close = difflib.get_close_matches(link, [*self.index, *self.frames], n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                frames = f"; frames: {_listed(self.frames)}" if self.frames else ""
                raise ValueError(
                    f"constraint {label!r} names {link!r}, which is not a link or frame of the mechanism{hint} "
                    f"(links: {_listed(self.index)}{frames}; use {GROUND!r} for the ground)"
                )
        if all(link == GROUND for link in c.links):
            raise ValueError(f"constraint {label!r} involves only the ground")
        if len(set(c.links)) != len(c.links):
            raise ValueError(f"constraint {label!r} joins link {c.links[0]!r} to itself; a cut joint needs two different links")
        # a named copy: the caller's (frozen) constraint object is never changed
        return c if c.name is not None else replace(c, name=label)

    # -- tree topology ---------------------------------------------------------------
    @property
    def link_names(self) -> tuple:
        return tuple(link.name for link in self.links)

    def link(self, name: str) -> Link:
        try:
            return self.links[self.index[name] - 1]
        except KeyError:
            raise KeyError(f"no link {name!r} in mechanism {self.name!r}") from None

    def parent(self, name: str) -> str:
        """Parent link name (``"ground"`` for links on the ground)."""
        return self.link(name).parent

    def children(self, name: str) -> tuple:
        self.link(name)
        return self._children[name]

    def ancestors(self, name: str) -> list:
        """Links from ``name`` up to the ground, ``name`` first, ground excluded."""
        path = []
        while name != GROUND:
            path.append(name)
            name = self.parent(name)
        return path

    # -- loops (000 Sec. III-B) --------------------------------------------------------
    def constraint(self, name: str):
        try:
            return self._constraint_index[name]
        except (KeyError, TypeError):
            raise KeyError(f"no constraint {name!r}; constraints: {[c.name for c in self.constraints]}") from None

    def _loop(self, name: str) -> tuple:
        """``(SL(j), lca)`` of constraint ``name``, computed once: lca is the constrained links'
        lowest common ancestor, ``None`` when the loop passes through the ground."""
        if name not in self._loops:
            links = self.constraint(name).links
            lca = None if GROUND in links else self._common_ancestor(links)
            members = set()
            for link in links:  # each tree path up to the lca (exclusive), or to the ground
                while link != GROUND and link != lca:
                    members.add(link)
                    link = self.links[self.index[link] - 1].parent
            if lca is not None:
                members.add(lca)
            self._loops[name] = (tuple(sorted(members, key=self.index.__getitem__)), lca)
        return self._loops[name]

    def _common_ancestor(self, links) -> str | None:
        """Lowest common ancestor (a link, itself included) of ``links``, or ``None`` if only the ground is."""
        common = links[0]
        for other in links[1:]:
            while common != other:  # parent < child: climb from the higher index
                if common == GROUND or other == GROUND:
                    return None
                if self.index[common] > self.index[other]:
                    common = self.links[self.index[common] - 1].parent
                else:
                    other = self.links[self.index[other] - 1].parent
            if common == GROUND:
                return None
        return common

    def supporting_links(self, name: str) -> tuple:
        """SL(j): links of the loop closed by constraint ``name``, in topological order.

        The tree paths from each constrained link up to their lowest common
        ancestor, that ancestor included (unless it is the ground).
        """
        return self._loop(name)[0]

    def loop_root(self, name: str) -> str:
        """r_j = min SL(j): the loop's lowest-index link, or ``"ground"`` for loops through the ground."""
        sl, lca = self._loop(name)
        return GROUND if lca is None or not sl else sl[0]

    def loops_supported(self, link: str) -> tuple:
        """LS(i): constraints whose loop link ``link`` supports."""
        self.link(link)
        if self._supported is None:
            supported = {l.name: [] for l in self.links}
            for c in self.constraints:
                for member in self.supporting_links(c.name):
                    supported[member].append(c.name)
            self._supported = {l: tuple(names) for l, names in supported.items()}
        return self._supported[link]

    def loop_joints(self, name: str) -> set:
        """Tree joints (named by their child link) in the loop of constraint ``name``."""
        root = self.loop_root(name)
        return {l for l in self.supporting_links(name) if l != root}

    def coupled(self, a: str, b: str) -> bool:
        """Two loops are coupled when they share a tree joint."""
        return bool(self.loop_joints(a) & self.loop_joints(b))

    def clusters(self, max_joints: int | None = None) -> tuple:
        """The groups of links closed by local loops, each hanging from one parent (003's clusters, what
        constraint embedding eliminates as one block): :func:`mechanics.clusters.find_clusters`; couplings
        always, loops off the ground of at most ``max_joints`` joints (default
        :data:`~mechanics.clusters.LOCAL_JOINTS`).

        >>> from mechanics import models
        >>> [(c.links, c.parent, c.constraints) for c in models.tello_leg().clusters()][1]
        (('hip_rotor_a', 'hip_rotor_b', 'hip_roll', 'hip_pitch'), 'hip_yaw', ('hip:differential',))
        """
        from .clusters import LOCAL_JOINTS, find_clusters

        return find_clusters(self, LOCAL_JOINTS if max_joints is None else max_joints)

    @property
    def constraint_dim(self) -> int:
        """Rows of all the constraints, ``m``."""
        return self._constraint_dim

    # -- states -------------------------------------------------------------------------
    def neutral_configuration(self) -> np.ndarray:
        return np.concatenate([neutral(l.joint) for l in self.links]) if self.links else np.zeros(0)

    def random_configuration(self, rng: np.random.Generator, batch: tuple = ()) -> np.ndarray:
        return np.concatenate([random_configuration(l.joint, rng, batch) for l in self.links], axis=-1)

    def integrate(self, q: np.ndarray, dq: np.ndarray) -> np.ndarray:
        """``q (+) dq`` joint by joint on the configuration manifold."""
        return np.concatenate(
            [integrate(l.joint, q[..., self.q_slices[l.name]], dq[..., self.v_slices[l.name]]) for l in self.links], axis=-1
        )

    # -- the loops at position and velocity level (mechanics.closure) -----------------------
    def constraint_error(self, q) -> dict:
        """Each Weld's and Connect's position error at ``q (..., nq)``: ``{name: (..., m)}``, in the constraint's
        rows and frame 1's coordinates, as Pinocchio's ``contact_placement_error`` (a Weld's ``-log6(c1Mc2)``, a
        Connect's ``R_1' (p_1 - p_2)``; :mod:`mechanics.closure`).

        >>> import numpy as np
        >>> from mechanics import models
        >>> mech = models.four_bar()
        >>> error = mech.constraint_error(mech.neutral_configuration())
        >>> list(error), bool(np.abs(error["loop"]).max() < 1e-12)
        (['loop'], True)
        """
        from .closure import constraint_error

        return constraint_error(self, q)

    def constraint_velocity(self, q, v) -> dict:
        """Each Weld's and Connect's velocity error at ``(q, v)``: ``{name: (..., m)}``, as Pinocchio's
        ``contact_velocity_error`` (the relative velocity of frame 1 and frame 2, in frame 1's coordinates)."""
        from .closure import constraint_velocity

        return constraint_velocity(self, q, v)

    def anchored(self, q) -> "Mechanism":
        """This mechanism with its Welds and Connects to the ground anchored where their other frames are at
        ``q (nq,)`` (:func:`mechanics.closure.anchored`): what a Baumgarte correction draws them back to."""
        from .closure import anchored

        return anchored(self, q)

    def project(self, q, tol: float = 1e-10, max_iter: int = 50) -> np.ndarray:
        """A configuration near ``q (..., nq)`` that closes the Welds and Connects to ``tol`` (metres and radians)
        (:func:`mechanics.closure.project`: least-norm Gauss-Newton steps on the manifold)."""
        from .closure import project

        return project(self, q, tol, max_iter)

    def project_velocity(self, q, v, metric: str = "identity") -> np.ndarray:
        """``v (..., nv)`` with the constraints' velocity removed, nearest in ``metric`` (``"identity"`` or
        ``"mass"``; :func:`mechanics.closure.project_velocity`)."""
        from .closure import project_velocity

        return project_velocity(self, q, v, metric)

    def without_constraints(self) -> "Mechanism":
        return Mechanism(self.links, (), self.gravity, self.name + " (tree)", self.frames)

    def with_constraints(self, constraints: Sequence) -> "Mechanism":
        """The same links and frames with ``constraints`` (whose ends may name frames)."""
        return Mechanism(self.links, constraints, self.gravity, self.name, self.frames)

    def __repr__(self) -> str:
        return (
            f"Mechanism({self.name!r}: {len(self.links)} links, nq={self.nq}, nv={self.nv}, "
            f"{len(self.constraints)} constraints, m={self.constraint_dim})"
        )


def ground_ends(c) -> tuple | None:
    """``(link, its placement, the ground's placement, the ground's field name)`` of a Weld or Connect to the
    ground (either end); None for the other constraints."""
    if not isinstance(c, (Weld, Connect)) or GROUND not in c.links:
        return None
    if c.link2 == GROUND:
        return c.link1, c.placement1, c.placement2, "placement2"
    return c.link2, c.placement2, c.placement1, "placement1"


def _relative_holds(c) -> tuple | None:
    """``((reference, link), point or None, pose)`` a Weld or Connect asks of ``link`` in ``reference``'s frame
    (the ground, else the first by name): a Weld ``link``'s pose there (``point`` None), a Connect the position
    there of a point fixed on ``link``; None for the other constraints.  What a pair of links asks does not
    depend on ``q``."""
    if not isinstance(c, (Weld, Connect)):
        return None
    (reference, there), (link, own) = sorted(((c.link1, c.placement1), (c.link2, c.placement2)),
                                             key=lambda end: (end[0] != GROUND, end[0]))
    if isinstance(c, Connect):
        return (reference, link), own.translation, there.translation
    R = there.rotation @ own.rotation.T  # the link's pose that puts its frame on the reference's
    return (reference, link), None, (R, there.translation - R @ own.translation)


def _warn_incompatible_anchors(name: str, constraints) -> None:
    """An :class:`IncompatibleConstraintsWarning` for two Welds or Connects between the same two links (or a
    link and the ground) that ask for relative placements no configuration gives both (two poses; two points
    whose distance differs; a point off a pose)."""
    holds = [(c.name, h) for c in constraints if (h := _relative_holds(c)) is not None]
    for i, (a, (pair, pa, Xa)) in enumerate(holds):
        for b, (other, pb, Xb) in holds[i + 1:]:
            if other != pair:
                continue
            if pa is None and pb is None:
                gap = max(np.max(np.abs(Xa[0] - Xb[0])), np.max(np.abs(Xa[1] - Xb[1])) / max(1.0, np.abs(Xa[1]).max()))
            elif pa is None or pb is None:
                (R, p), point, world = (Xa, pb, Xb) if pa is None else (Xb, pa, Xa)
                gap = np.max(np.abs(R @ point + p - world)) / max(1.0, np.abs(world).max())
            else:
                gap = abs(np.linalg.norm(pa - pb) - np.linalg.norm(Xa - Xb)) / max(1.0, np.linalg.norm(Xa - Xb))
            if gap > ANCHOR_RTOL:
                where = "to the ground" if pair[0] == GROUND else f"to link {pair[0]!r}"
                warnings.warn(f"{name!r}: constraints {a!r} and {b!r} fix link {pair[1]!r} {where} at placements "
                              f"no configuration gives both (apart by {gap:.1e}): they hold at acceleration level, "
                              f"but not in position (project fails, a Baumgarte correction pulls both ways); "
                              f"remove one or place them consistently", IncompatibleConstraintsWarning, stacklevel=4)


def _listed(names, shown: int = 12) -> str:
    """The first ``shown`` names, and how many more."""
    names = list(names)
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(map(repr, names[:shown])) + more


def _topological(links: Sequence[Link]) -> tuple:
    """Links sorted so that parents come first, as repeated passes over the given order would place them.

    A pass places, in the given order, every link whose parent is already placed
    (earlier in this pass included): a link lands in its parent's pass if it comes
    after its parent in the input, else in the next one.  So an input that is
    already topological is kept as is.  Linear time up to the final sort.
    """
    links = list(links)
    names = [l.name for l in links]
    counts = Counter(names)
    duplicates = {n for n, k in counts.items() if k > 1}
    if duplicates:
        raise ValueError(f"link names must be unique; repeated: {sorted(duplicates)}")
    position = {name: i for i, name in enumerate(names)}
    for link in links:
        if not isinstance(link, Link):
            raise TypeError(f"links must be mechanics.Link, got {type(link).__name__}")
        if link.parent != GROUND and link.parent not in position:
            raise ValueError(f"link {link.name!r}: parent {link.parent!r} is not a link (use {GROUND!r} for the ground)")
    children = {}
    for i, link in enumerate(links):
        children.setdefault(link.parent, []).append(i)
    passes = {}  # input position -> pass in which it is placed
    stack = [(i, 1) for i in children.get(GROUND, ())]
    while stack:
        i, p = stack.pop()
        passes[i] = p
        stack += [(j, p if j > i else p + 1) for j in children.get(names[i], ())]
    if len(passes) < len(links):
        left = [link.name for i, link in enumerate(links) if i not in passes]
        raise ValueError(
            f"the tree joints of links {left} form a cycle; a spanning tree "
            f"cannot close a loop -- make one of these joints a cut joint (Weld or Connect constraint)"
        )
    return tuple(links[i] for i in sorted(passes, key=lambda i: (passes[i], i)))
