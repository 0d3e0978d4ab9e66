"""Constraint policies: how a loop or contact constraint ``K a = k`` enters the GPLC graph.

A policy says what it adds to the graph (:meth:`ConstraintPolicy.slots`:
structure) and, as numbers (:class:`PolicyNumbers`), everything the outer
iterations do with it: its stiffness, which linear term moves between outer
iterations (:meth:`~ConstraintPolicy.moving_term`), how the multiplier is
updated after a solve (:meth:`~ConstraintPolicy.update`), whether it iterates
and how its convergence is judged.  Every executor reads those numbers -- the
numpy path through the two methods, the compiled kernels from a table -- and
nothing outside this module asks a policy its name.  Policies are chosen per
constraint (:func:`resolve_policies`): one for all, or a mapping such as
``{"knee": "alm", "default": "prox"}``.

=====  ===========================================================  ================
name   adds (000 eq.)                                               moves / update
=====  ===========================================================  ================
alm    ``mu/2 ||K a - k + lambda^k/mu||^2`` (20-25)                 ``b``; eq. 33
prox   ``lambda' (K a - k) - 1/(2 mu)||lambda - lambda^k||^2`` (37-42)  ``g``; eq. 42
hard   ``lambda' (K a - k)`` (PV, 001)                              --, one solve
soft   ``mu/2 ||K a - k||^2`` (MuJoCo's soft Gauss, 001 eq. 52)     --, one solve
=====  ===========================================================  ================

Adding a policy is one subclass: its slots and its numbers.  A subclass that
changes only the numbers runs compiled (``tests/mechanics/test_policies.py``
writes a stiffer ``prox`` in a few lines); one that overrides
:meth:`~ConstraintPolicy.update` or :meth:`~ConstraintPolicy.moving_term` with
other arithmetic runs on the numpy path, and :func:`mechanics.prepare` says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np

from elimination.driver import MultiplierRule
from factorgraph import LeastSquares, Quadratic, Variable

from .keys import LinkAcceleration, LoopTerm, Multiplier, Penalty, ProximalPrior


@dataclass(frozen=True)
class Slot:
    """One factor of the GPLC layout: what it is, its scope and hard rows, and how to fill it.

    ``fill(state)`` builds the factor from a :class:`~mechanics.gplc.State`
    (kinematics, constraint terms, ``mu``, ``lambda^k``); ``moving`` marks the
    factor whose linear term the outer iterations change; ``units`` declares
    the hard blocks that are exactly ``+-I`` (:class:`factorgraph.FactorStructure`).
    """

    role: object
    keys: tuple
    rows: int
    fill: Callable
    moving: bool = False
    units: tuple = ()


NONE, TARGET, INFORMATION = range(3)  # PolicyNumbers.moves: no term, a penalty's target b, a prior's g
RESIDUAL, HOLDS, EXACT = range(3)  # PolicyNumbers.test: within tol, one correction halves it, a hard solve's


@dataclass(frozen=True)
class PolicyNumbers:
    """A constraint policy as the numbers every executor reads (000 eqs. 25, 33, 42).

    With ``mu_s = stiffness * mu`` (the policy's own stiffness; 0: ``mu`` plays no part):

    ``moves``
        The linear term that moves with ``lambda^k`` between outer iterations: ``NONE``; ``TARGET``, a
        penalty's target ``b = k - lambda^k / mu_s`` (eq. 25); ``INFORMATION``, a proximal prior's
        ``g = -lambda^k / mu_s`` (eq. 42c).
    ``keep, push, take``
        The update after a solve: ``lambda' = keep lambda + push mu_s (K a - k) + take lambda_x``, with
        ``lambda_x`` the solution's multiplier (eq. 33: ``1, 1, 0``; eq. 42: ``0, 0, 1``).
    ``iterates``
        Whether outer iterations move ``lambda^k`` (000 Algorithms 3 and 6), or one solve answers.
    ``test``
        How a run is judged converged: ``RESIDUAL`` (``max |K a - k|`` within ``tol``), ``HOLDS`` (one
        correction of the ``TARGET`` halves it: a soft penalty, :mod:`mechanics.convergence`), ``EXACT``
        (a hard solve: round-off, else the problem is refused).

    >>> POLICIES["alm"].numbers
    PolicyNumbers(stiffness=1.0, moves=1, keep=1.0, push=1.0, take=0.0, iterates=True, test=0)
    """

    stiffness: float
    moves: int
    keep: float
    push: float
    take: float
    iterates: bool
    test: int

    def row(self) -> tuple:
        """``(integers, floats)``: the compiled kernels' table rows, ``(moves, iterates, test)`` and
        ``(stiffness, keep, push, take)``."""
        return (self.moves, int(self.iterates), self.test), (self.stiffness, self.keep, self.push, self.take)


class ConstraintPolicy:
    """Base class: a policy is a small stateless object, its structure (:meth:`slots`) and its
    :class:`PolicyNumbers`; two compare equal when both agree (same class, same numbers)."""

    name: ClassVar[str]
    description: ClassVar[str]
    numbers: PolicyNumbers
    refine: ClassVar[int]  # default steps of iterative refinement per solve
    advice: ClassVar[str]  # what to try when the problem is singular: whole sentences
    fix: ClassVar[str]  # the same remedy as one clause, for one-line notes ("use proxpv or ...")

    @property
    def iterates(self) -> bool:
        """Outer iterations move ``lambda^k`` (000 Algorithms 3 and 6)."""
        return self.numbers.iterates

    def stiffness(self, mu: float) -> float:
        """``mu_s``: this policy's share of the call's ``mu``."""
        return self.numbers.stiffness * mu

    def variables(self, constraint) -> list:
        """Variables the policy adds for ``constraint`` (a multiplier, or none)."""
        return []

    def embeds(self, constraint) -> bool:
        """Whether ``constraint`` is embedded (:class:`Embed`): written into its cluster's tree factors."""
        return False

    def slots(self, constraint, links: tuple) -> list:
        """The factors added for ``constraint`` on its non-ground ``links``, as :class:`Slot`."""
        raise NotImplementedError

    def moving_term(self, terms, mu: float, lam: np.ndarray):
        """``("g" | "b", value)``: the new linear term of the moving slot for ``lambda^k`` (``moves``)."""
        mu_s = self.stiffness(mu)
        if self.numbers.moves == TARGET:
            return "b", terms.k - lam / mu_s
        if self.numbers.moves == INFORMATION:
            return "g", -lam / mu_s
        raise ValueError(f"the {self.name} policy has no moving term")

    def update(self, lam: np.ndarray, x: dict, residual: np.ndarray, mu: float, constraint: str) -> np.ndarray:
        """``lambda`` after a solve with solution ``x`` and constraint residual ``K a - k``:
        ``keep lambda + push mu_s residual + take lambda_x`` (the terms whose coefficient is 0 left out)."""
        n = self.numbers
        lam_x = x[Multiplier(constraint)] if n.take else None
        return MultiplierRule(n.keep, n.push, n.take).updated(lam, residual, self.stiffness(mu), lam_x)

    def lowered(self) -> str:
        """Why the compiled kernels cannot run this policy from its numbers ("" when they can): its
        :meth:`update` or :meth:`moving_term` is arithmetic of its own."""
        own = [m for m in ("update", "moving_term") if getattr(type(self), m) is not getattr(ConstraintPolicy, m)]
        return f"its {' and '.join(own)} {'is' if len(own) == 1 else 'are'} Python of its own" if own else ""

    def __eq__(self, other) -> bool:
        return isinstance(other, ConstraintPolicy) and type(other) is type(self) and other.numbers == self.numbers

    def __hash__(self) -> int:
        return hash((type(self), self.numbers))

    def __repr__(self) -> str:
        return self.name


def _a(links: tuple) -> tuple:
    return tuple(LinkAcceleration(link) for link in links)


class ALM(ConstraintPolicy):
    """Augmented Lagrangian (LCABA, constrainedABA): a penalty factor coupling the links; no multiplier variable."""

    name, refine = "alm", 1
    numbers = PolicyNumbers(1.0, TARGET, 1.0, 1.0, 0.0, True, RESIDUAL)
    description = "augmented-Lagrangian penalty factor; outer iterations move lambda (LCABA, constrainedABA)"
    advice = "With the alm policy mu K'K enters the link pivots: lower mu, or use a prox algorithm (proxbbo, proxpv)."
    fix = "lower mu, or use a prox algorithm (proxbbo, proxpv)"

    def slots(self, constraint, links: tuple) -> list:
        name = constraint.name

        def penalty(state):
            terms = state.terms[name]
            target = self.moving_term(terms, state.mu, state.lam[name])[1]
            return LeastSquares(_a(links), [terms.K[l] for l in links], target, weight=self.stiffness(state.mu))

        return [Slot(Penalty(name), _a(links), 0, penalty, moving=True)]


class Soft(ALM):
    """MuJoCo's soft Gauss (PV-soft, 001 Sec. VI): the penalty with ``lambda = 0``, solved once.

    Its force is the penalty's, ``mu (K a - k)``.  The ALM moving term stays:
    one ALM correction tells whether the soft constraints hold
    (:mod:`mechanics.convergence`).
    """

    name, refine = "soft", 1
    numbers = PolicyNumbers(1.0, TARGET, 0.0, 1.0, 0.0, False, HOLDS)
    description = "fixed quadratic penalty mu/2||Ka - k||^2, no iterations (PV-soft, MuJoCo's soft Gauss)"
    advice = "Lower mu, or check the mechanism's inertias."
    fix = "lower mu, or check the mechanism's inertias"


class Hard(ConstraintPolicy):
    """Exact multipliers (PV, 001): ``lambda' (K a - k)``, one bilinear factor per link; needs independent constraints."""

    name, refine = "hard", 0
    numbers = PolicyNumbers(0.0, NONE, 0.0, 0.0, 1.0, False, EXACT)
    description = "multiplier variable without prior; needs full-rank constraints (PV)"
    advice = ("The hard policy needs independent constraints: where they are dependent but consistent, use a prox "
              "algorithm (proxbbo, proxpv, proxltl).")
    fix = "use proxpv or another prox algorithm (proxbbo, proxltl)"

    def variables(self, constraint) -> list:
        return [Variable(Multiplier(constraint.name), constraint.dim, "max")]

    def slots(self, constraint, links: tuple) -> list:
        # one bilinear factor lambda' K_l a_l per link: a single factor over all the links would
        # declare them coupled to each other, which their (zero) Hessian blocks are not
        return [self._bilinear(constraint, link, first=i == 0) for i, link in enumerate(links)]

    @staticmethod
    def _bilinear(constraint, link: str, first: bool) -> Slot:
        name, m, lam = constraint.name, constraint.dim, Multiplier(constraint.name)

        def bilinear(state):
            terms = state.terms[name]
            K = terms.K[link]
            H = np.zeros(K.shape[:-2] + (m + 6, m + 6))
            H[..., :m, m:] = K
            H[..., m:, :m] = np.swapaxes(K, -1, -2)
            k = terms.k if first else np.zeros_like(terms.k)  # -lambda' k, carried once
            return Quadratic([lam, LinkAcceleration(link)], H, np.concatenate([k, np.zeros(k.shape[:-1] + (6,))], axis=-1))

        return Slot(LoopTerm(name, link), (lam, LinkAcceleration(link)), 0, bilinear)


class Prox(Hard):
    """Proximally regularized multipliers (proxBBO, proxPV, proxLTL): the hard factors plus a proximal prior."""

    name, refine = "prox", 0
    numbers = PolicyNumbers(1.0, INFORMATION, 0.0, 0.0, 1.0, True, RESIDUAL)
    description = "multiplier variable with a proximal prior; outer iterations move its centre (proxBBO, proxPV, proxLTL)"
    advice = ("With the prox policy 1/mu regularizes the multipliers; where constraints are dependent it must stay "
              "above round-off: lower mu (1e5-1e10). Otherwise check the mechanism's inertias and joints (a massless "
              "link or a dependent joint makes it singular).")
    fix = "lower mu (1e5-1e10), or check the mechanism's inertias and joints"

    def slots(self, constraint, links: tuple) -> list:
        name, m, lam = constraint.name, constraint.dim, Multiplier(constraint.name)

        def prior(state):
            g = self.moving_term(state.terms[name], state.mu, state.lam[name])[1]
            mu_s = self.stiffness(state.mu)
            batch = np.broadcast_shapes(g.shape[:-1], state.terms[name].k.shape[:-1])  # (lambda^k batched alone too)
            return Quadratic([lam], -np.eye(m) / mu_s, np.broadcast_to(g, batch + (m,)))

        return super().slots(constraint, links) + [Slot(ProximalPrior(name), (lam,), 0, prior, moving=True)]


class Embed(Prox):
    """Constraint embedding (003's C-ABA): the joints of couplings and local loops written through independent
    coordinates, ``qdd_c = G y + g`` (:func:`mechanics.couplings.embedded_clusters`), in their cluster's tree
    factors -- no multiplier, no iterations for them.  ``"embed"`` for every constraint embeds the local ones
    (:func:`mechanics.clusters.local`) and keeps proximal multipliers (``prox``) for the others in the same
    elimination (004 Sec. VII's mixed algorithm; :func:`resolve_policies`).  Couplings' maps are constant, a loop's
    made per state; both run on both executors.

    Parameters
    ----------
    independent : tuple of str, optional
        For a loop: the joints whose accelerations are its cluster's ``y`` -- 003's actuated coordinates, e.g. a
        four-bar knee's motor joint -- instead of the best-conditioned choice
        (:func:`mechanics.couplings.loop_partition`); refused, naming them, where they are not as many as the
        loop leaves free or do not drive it.

    >>> from mechanics import models, forward_dynamics
    >>> from mechanics.algorithms import cluster_order
    >>> bar = models.four_bar()
    >>> by_rocker = ({"loop": Embed(independent=("rocker",))}, cluster_order)
    >>> q = bar.project(bar.neutral_configuration())
    >>> float(abs(forward_dynamics(bar, q, [0, 0, 0], [1, 0, 0], by_rocker).qdd
    ...           - forward_dynamics(bar, q, [0, 0, 0], [1, 0, 0], "caba").qdd).max()) < 1e-12
    True
    """

    name = "embed"
    description = "couplings and local loops embedded (qdd = G y + g in their clusters' tree factors), others as prox"
    # nothing moves, lambda kept as it came (no multiplier: the force is recovered after the solve), no outer
    # iterations; the residual judged as an iterating policy's (rows a cluster's map leaves out show there)
    numbers = PolicyNumbers(0.0, NONE, 1.0, 0.0, 0.0, False, RESIDUAL)

    def __init__(self, independent: tuple = ()):
        self.independent = tuple(independent)

    def __eq__(self, other) -> bool:
        return super().__eq__(other) and other.independent == self.independent

    def __hash__(self) -> int:
        return hash((type(self), self.numbers, self.independent))

    def __repr__(self) -> str:
        return f"embed(independent={self.independent})" if self.independent else self.name

    def embeds(self, constraint) -> bool:
        return True

    def variables(self, constraint) -> list:
        return []

    def slots(self, constraint, links: tuple) -> list:
        return []


POLICIES = {policy.name: policy for policy in (ALM(), Prox(), Hard(), Soft())}
"""The papers' constraint policies by name."""

EMBED = Embed()
"""Constraint embedding (:class:`Embed`): ``policy("embed")``, ``"embed/clusters"`` (``caba``); not one of the
papers' multiplier policies in :data:`POLICIES`."""


def policy(value) -> ConstraintPolicy:
    """A :class:`ConstraintPolicy` from itself or its name."""
    if isinstance(value, ConstraintPolicy):
        return value
    if isinstance(value, str) and value in POLICIES:
        return POLICIES[value]
    if value == EMBED.name:
        return EMBED
    raise ValueError(f"unknown constraint policy {value!r}; use one of {sorted(POLICIES)} or a ConstraintPolicy")


def resolve_policies(spec, mechanism) -> dict:
    """Constraint name -> :class:`ConstraintPolicy` for every constraint of ``mechanism``.

    ``spec`` is one policy for all (a name or an object), or a mapping from
    constraint names to policies whose ``"default"`` entry covers the others.

    Examples
    --------
    >>> import mechanics
    >>> mech = mechanics.models.fig4()
    >>> chosen = resolve_policies({"12": "alm", "default": "prox"}, mech)
    >>> [(name, p.name) for name, p in chosen.items()]
    [('12', 'alm'), ('13', 'prox')]
    """
    names = [c.name for c in mechanism.constraints]
    if not isinstance(spec, dict):
        return _embeddable({name: policy(spec) for name in names}, mechanism, ())
    unknown = sorted(set(spec) - set(names) - {"default"})
    if unknown:
        raise ValueError(f"policies name constraint(s) {unknown} that {mechanism.name!r} does not have (it has {names})")
    missing = [name for name in names if name not in spec and "default" not in spec]
    if missing:
        raise ValueError(f"no policy for constraint(s) {missing}: name them, or give a 'default' entry")
    return _embeddable({name: policy(spec.get(name, spec.get("default"))) for name in names}, mechanism, spec)


def _embeddable(chosen: dict, mechanism, named) -> dict:
    """``chosen`` with ``embed`` kept where a constraint closes a local loop (:func:`mechanics.clusters.local`)
    and ``prox`` where ``embed`` came as everyone's policy; ``embed`` named for a loop that is not local is
    refused."""
    from .clusters import local

    for name, chosen_policy in chosen.items():
        if isinstance(chosen_policy, Embed) and not local(mechanism, name):
            if name in named:
                raise ValueError(f"constraint {name!r} of {mechanism.name!r} does not close a local loop (it spans "
                                 f"the ground, a free joint or more than a few joints): embedding needs one; give it "
                                 f"'prox' (the 'embed' policy for every constraint does so by itself)")
            chosen[name] = POLICIES["prox"]
    return chosen


def policy_label(spec) -> str:
    """Short name of a policy choice for tables: ``"prox"``, or ``"alm+prox"`` for a mixture."""
    if not isinstance(spec, dict):
        return policy(spec).name
    return "+".join(sorted({policy(p).name for p in spec.values()}))
