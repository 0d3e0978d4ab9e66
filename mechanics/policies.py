"""Constraint policies: how a loop or contact constraint ``K a = k`` enters the GPLC graph.

A policy says what it adds to the graph (:meth:`ConstraintPolicy.slots`),
which linear term moves between outer iterations and to what
(:meth:`~ConstraintPolicy.moving_term`), how the multiplier is updated after a
solve (:meth:`~ConstraintPolicy.update`), whether it iterates, its default
refinement and what to try when a problem is singular.  Policies are chosen
per constraint (:func:`resolve_policies`): one for all, or a mapping such as
``{"knee": "alm", "default": "prox"}``.

=====  ===========================================================  ================
name   adds (000 eq.)                                               moves / update
=====  ===========================================================  ================
alm    ``mu/2 ||K a - k + lambda^k/mu||^2`` (20-25)                 ``b``; eq. 33
prox   ``lambda' (K a - k) - 1/(2 mu)||lambda - lambda^k||^2`` (37-42)  ``g``; eq. 42
hard   ``lambda' (K a - k)`` (PV, 001)                              --, one solve
soft   ``mu/2 ||K a - k||^2`` (MuJoCo's soft Gauss, 001 eq. 52)     --, one solve
=====  ===========================================================  ================

Adding a policy is one subclass here: its slots, its moving term and its
update (see ``tests/mechanics/test_policies.py`` for a small one written in a test).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np

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


def alm_update(lam: np.ndarray, residual: np.ndarray, mu: float) -> np.ndarray:
    """000 eq. 33: ``lambda^(k+1) = lambda^k + mu (K a^(k+1) - k)``."""
    return lam + mu * residual


def proximal_update(multiplier: np.ndarray) -> np.ndarray:
    """000 eq. 42: ``lambda^(k+1)`` is the multiplier the proximal subproblem returns."""
    return multiplier


class ConstraintPolicy:
    """Base class: a policy is a small stateless object (compare by name)."""

    name: ClassVar[str]
    description: ClassVar[str]
    iterates: ClassVar[bool]  # outer iterations move lambda^k (000 Algorithms 3 and 6)
    refine: ClassVar[int]  # default steps of iterative refinement per solve
    advice: ClassVar[str]  # what to try when the problem is singular: whole sentences
    fix: ClassVar[str]  # the same remedy as one clause, for one-line notes ("use proxpv or ...")

    def variables(self, constraint) -> list:
        """Variables the policy adds for ``constraint`` (a multiplier, or none)."""
        return []

    def slots(self, constraint, links: tuple) -> list:
        """The factors added for ``constraint`` on its non-ground ``links``, as :class:`Slot`."""
        raise NotImplementedError

    def moving_term(self, terms, mu: float, lam: np.ndarray):
        """``("g" | "b", value)``: the new linear term of the moving slot for ``lambda^k``."""
        raise NotImplementedError

    def update(self, lam: np.ndarray, x: dict, residual: np.ndarray, mu: float, constraint: str) -> np.ndarray:
        """``lambda`` after a solve with solution ``x`` and constraint residual ``K a - k``."""
        raise NotImplementedError

    def __eq__(self, other) -> bool:
        return isinstance(other, ConstraintPolicy) and type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return self.name


def _a(links: tuple) -> tuple:
    return tuple(LinkAcceleration(link) for link in links)


class ALM(ConstraintPolicy):
    """Augmented Lagrangian (LCABA, constrainedABA): a penalty factor coupling the links; no multiplier variable."""

    name, iterates, refine = "alm", True, 1
    description = "augmented-Lagrangian penalty factor; outer iterations move lambda (LCABA, constrainedABA)"
    advice = "With the alm policy mu K'K enters the link pivots: lower mu, or use a prox algorithm (proxbbo, proxpv)."
    fix = "lower mu, or use a prox algorithm (proxbbo, proxpv)"

    def slots(self, constraint, links: tuple) -> list:
        name = constraint.name

        def penalty(state):
            terms = state.terms[name]
            target = self.moving_term(terms, state.mu, state.lam[name])[1]
            return LeastSquares(_a(links), [terms.K[l] for l in links], target, weight=state.mu)

        return [Slot(Penalty(name), _a(links), 0, penalty, moving=True)]

    def moving_term(self, terms, mu: float, lam: np.ndarray):
        """``b = k - lambda^k / mu``: the penalty's target, so that ``g = K'(mu k - lambda^k)`` (000 eq. 25)."""
        return "b", terms.k - lam / mu

    def update(self, lam, x, residual, mu, constraint):
        return alm_update(lam, residual, mu)


class Soft(ALM):
    """MuJoCo's soft Gauss (PV-soft, 001 Sec. VI): the penalty with ``lambda = 0``, solved once.

    Its force is the penalty's, ``mu (K a - k)``.  The ALM moving term stays:
    one ALM correction tells whether the soft constraints hold
    (:mod:`mechanics.convergence`).
    """

    name, iterates, refine = "soft", False, 1
    description = "fixed quadratic penalty mu/2||Ka - k||^2, no iterations (PV-soft, MuJoCo's soft Gauss)"
    advice = "Lower mu, or check the mechanism's inertias."
    fix = "lower mu, or check the mechanism's inertias"

    def update(self, lam, x, residual, mu, constraint):
        return mu * residual


class Hard(ConstraintPolicy):
    """Exact multipliers (PV, 001): ``lambda' (K a - k)``, one bilinear factor per link; needs independent constraints."""

    name, iterates, refine = "hard", False, 0
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

    def update(self, lam, x, residual, mu, constraint):
        return proximal_update(x[Multiplier(constraint)])


class Prox(Hard):
    """Proximally regularized multipliers (proxBBO, proxPV, proxLTL): the hard factors plus a proximal prior."""

    name, iterates, refine = "prox", True, 0
    description = "multiplier variable with a proximal prior; outer iterations move its centre (proxBBO, proxPV, proxLTL)"
    advice = ("With the prox policy 1/mu regularizes the multipliers; where constraints are dependent it must stay "
              "above round-off: lower mu (1e5-1e10). Otherwise check the mechanism's inertias and joints (a massless "
              "link or a dependent joint makes it singular).")
    fix = "lower mu (1e5-1e10), or check the mechanism's inertias and joints"

    def slots(self, constraint, links: tuple) -> list:
        name, m, lam = constraint.name, constraint.dim, Multiplier(constraint.name)

        def prior(state):
            g = self.moving_term(state.terms[name], state.mu, state.lam[name])[1]
            return Quadratic([lam], -np.eye(m) / state.mu, np.broadcast_to(g, state.terms[name].k.shape[:-1] + (m,)))

        return super().slots(constraint, links) + [Slot(ProximalPrior(name), (lam,), 0, prior, moving=True)]

    def moving_term(self, terms, mu: float, lam: np.ndarray):
        """``g = -lambda^k / mu``: the proximal prior's information (000 eq. 42c)."""
        return "g", -lam / mu


POLICIES = {policy.name: policy for policy in (ALM(), Prox(), Hard(), Soft())}
"""The papers' constraint policies by name."""


def policy(value) -> ConstraintPolicy:
    """A :class:`ConstraintPolicy` from itself or its name."""
    if isinstance(value, ConstraintPolicy):
        return value
    if isinstance(value, str) and value in POLICIES:
        return POLICIES[value]
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
        one = policy(spec)
        return {name: one for name in names}
    unknown = sorted(set(spec) - set(names) - {"default"})
    if unknown:
        raise ValueError(f"policies name constraint(s) {unknown} that {mechanism.name!r} does not have (it has {names})")
    missing = [name for name in names if name not in spec and "default" not in spec]
    if missing:
        raise ValueError(f"no policy for constraint(s) {missing}: name them, or give a 'default' entry")
    return {name: policy(spec.get(name, spec.get("default"))) for name in names}


def policy_label(spec) -> str:
    """Short name of a policy choice for tables: ``"prox"``, or ``"alm+prox"`` for a mixture."""
    if not isinstance(spec, dict):
        return policy(spec).name
    return "+".join(sorted({policy(p).name for p in spec.values()}))
