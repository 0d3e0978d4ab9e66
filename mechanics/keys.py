"""What the variables and factors of a GPLC graph are, as small typed values.

Variables (000 eq. 1): :class:`LinkAcceleration` ``a_i`` (6-d, spatial, world
frame), :class:`JointAcceleration` ``qdd_i`` (the joint's ``nv``) and
:class:`Multiplier` ``lambda_j`` (role ``max``, under the policies that keep
multipliers).  Factors, by role: :class:`Prior` ``1/2 a_i' H_i a_i - f_i'
a_i``, :class:`Torque` ``-tau_i' qdd_i``, :class:`TreeJoint` ``a_i = a_pi +
S_i qdd_i + a_b,i``, and per constraint :class:`Penalty` (``alm``, ``soft``),
:class:`LoopTerm` ``lambda_j' K_l a_l`` per link (``prox``, ``hard``) and
:class:`ProximalPrior` ``-1/(2 mu)||lambda_j - lambda_j^k||^2`` (``prox``).

Every module reads these -- ``isinstance(key, Multiplier)``, ``key.name``,
``role.kind`` -- instead of parsing tuples.  A variable key is still the tuple
``(tag, name)`` it always was (``LinkAcceleration("3") == ("a", "3")``), so
plans and orderings written with plain tuples keep working.

>>> a = LinkAcceleration("3")
>>> a.name, a.kind, a.label, a == ("a", "3")
('3', 'link', 'a 3', True)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


class GPLCKey(tuple):
    """A GPLC variable: the tuple ``(tag, name)`` with what it is attached.

    ``kind`` is ``"link"``, ``"joint"`` or ``"multiplier"``; ``name`` the link
    or constraint; ``label`` the papers' symbol and the name.
    """

    __slots__ = ()
    tag: ClassVar[str]
    kind: ClassVar[str]
    symbol: ClassVar[str]

    def __new__(cls, name: str):
        return super().__new__(cls, (cls.tag, name))

    def __getnewargs__(self):
        return (self[1],)

    @property
    def name(self) -> str:
        return self[1]

    @property
    def label(self) -> str:
        return f"{self.symbol} {self[1]}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self[1]!r})"


class LinkAcceleration(GPLCKey):
    """``a_i``: spatial acceleration of link ``name`` (6-d, world frame, [omega; v])."""

    __slots__ = ()
    tag, kind, symbol = "a", "link", "a"


class JointAcceleration(GPLCKey):
    """``qdd_i``: acceleration of the tree joint of link ``name`` (its ``nv``)."""

    __slots__ = ()
    tag, kind, symbol = "qdd", "joint", "qdd"


class Multiplier(GPLCKey):
    """``lambda_j``: multiplier of constraint ``name`` (papers' sign; the force is ``-lambda``)."""

    __slots__ = ()
    tag, kind, symbol = "lam", "multiplier", "λ"


class ClusterCoordinates(GPLCKey):
    """``y``: the independent joint accelerations of an embedded cluster named ``name`` (003's ``qdd_c = G y +
    g``; its first joint's name)."""

    __slots__ = ()
    tag, kind, symbol = "y", "cluster", "y"


@dataclass(frozen=True)
class ClusterTorque:
    """``1/2 y' G'AG y - (G' tau - G'A g)' y``: an embedded cluster's joint torques and armature on ``y``."""

    cluster: str
    kind: ClassVar[str] = "torque"


@dataclass(frozen=True)
class Prior:
    """``1/2 a_i' H_i a_i - f_i' a_i``: link ``link``'s inertia and bias force."""

    link: str
    kind: ClassVar[str] = "prior"


@dataclass(frozen=True)
class Torque:
    """``-tau_i' qdd_i``: the joint torque of link ``link``."""

    link: str
    kind: ClassVar[str] = "torque"


@dataclass(frozen=True)
class TreeJoint:
    """``a_i - a_pi - S_i qdd_i = a_b,i`` (hard): the tree joint of link ``link``."""

    link: str
    kind: ClassVar[str] = "tree joint"


@dataclass(frozen=True)
class Penalty:
    """``mu/2 ||K a - k + lambda^k/mu||^2``: constraint ``constraint`` as a penalty (``alm``, ``soft``)."""

    constraint: str
    kind: ClassVar[str] = "penalty"


@dataclass(frozen=True)
class LoopTerm:
    """``lambda_j' K_l a_l``: constraint ``constraint``'s coupling of its multiplier to link ``link``."""

    constraint: str
    link: str
    kind: ClassVar[str] = "loop/contact"


@dataclass(frozen=True)
class ProximalPrior:
    """``-1/(2 mu) ||lambda_j - lambda_j^k||^2``: constraint ``constraint``'s proximal prior (``prox``)."""

    constraint: str
    kind: ClassVar[str] = "multiplier prior"
