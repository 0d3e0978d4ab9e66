"""The GPLC factor graph of a mechanism (000 eq. 1, DESIGN.md section 1).

Variables: link accelerations ``("a", link)`` (6-d), joint accelerations
``("qdd", link)`` (``nv``-d) and, for the ``prox`` and ``hard`` policies,
multipliers ``("lam", constraint)`` (role ``max``).  Factors:

* a prior per link, ``1/2 a' H_i a - f_i' a`` (``f_i`` the bias force);
* ``-tau_i' qdd_i`` per joint;
* the tree joint ``a_i - a_pi - S_i qdd_i = a_b,i`` (hard; ``a_0 = -a_grav``
  moved to the right-hand side for links on the ground);
* per constraint ``K a = k``, depending on the constraint policy:

  ``alm``  ``mu/2 ||K a - k + lambda^k/mu||^2``, i.e. ``H = mu K'K``,
           ``g = K'(mu k - lambda^k)`` (000 eq. 25), kept as a
           :class:`~factorgraph.LeastSquares` factor so that its residual is
           taken in Jacobian form;
  ``prox`` ``lambda'(K a - k) - 1/(2 mu)||lambda - lambda^k||^2`` (000 eqs. 37-42),
           one bilinear factor ``lambda' K_l a_l`` per link so the links are
           coupled only through ``lambda``;
  ``hard`` ``lambda'(K a - k)`` (PV, 001);
  ``soft`` ``mu/2 ||K a - k||^2``, MuJoCo's soft Gauss with ``R^-1 = mu I`` (001 eq. 52).

``mu`` follows the papers: larger is stiffer.  ``lambda`` is the papers'
multiplier; the constraint wrench on the links is ``-K' lambda``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from factorgraph import FactorGraph, LeastSquares, LinearEquality, Quadratic, Variable

from .checks import check_mu, check_multipliers, check_state
from .kinematics import ConstraintTerms, Kinematics, constraint_terms, kinematics
from .mechanism import GROUND, Mechanism

POLICIES = {
    "alm": "augmented-Lagrangian penalty factor; outer iterations move lambda (LCABA, constrainedABA)",
    "prox": "multiplier variable with a proximal prior; outer iterations move its centre (proxBBO, proxPV, proxLTL)",
    "hard": "multiplier variable without prior; needs full-rank constraints (PV)",
    "soft": "fixed quadratic penalty mu/2||Ka - k||^2, no iterations (PV-soft, MuJoCo's soft Gauss)",
}


def a_key(link: str) -> tuple:
    return ("a", link)


def qdd_key(link: str) -> tuple:
    return ("qdd", link)


def lam_key(constraint: str) -> tuple:
    return ("lam", constraint)


@dataclass
class GPLC:
    """A GPLC graph with what the outer loop needs to update it.

    Attributes
    ----------
    graph : FactorGraph
    terms : dict
        Constraint name -> :class:`~mechanics.kinematics.ConstraintTerms`.
    moving : dict
        Constraint name -> index of the factor carrying ``lambda^k``: the
        penalty for ``alm`` (its ``b``), the prior for ``prox`` (its ``g``).
    """

    graph: FactorGraph
    terms: dict
    moving: dict


def penalty_target(terms: ConstraintTerms, mu: float, lam: np.ndarray) -> np.ndarray:
    """Right-hand side ``k - lambda / mu`` of the ALM penalty ``mu/2 ||K a - (k - lambda/mu)||^2``.

    Its information vector is ``K'(mu k - lambda)``, 000 eq. 25.
    """
    return terms.k - lam / mu


def prior_information(mu: float, lam: np.ndarray) -> np.ndarray:
    """``g = -lambda^k / mu`` of the proximal prior (000 eq. 42c)."""
    return -lam / mu


def _add_link_factors(graph: FactorGraph, mechanism: Mechanism, kin: Kinematics, tau: np.ndarray) -> None:
    for link in mechanism.links:
        name, nv = link.name, link.joint.nv
        graph.add(Quadratic([a_key(name)], kin.inertia[name], kin.bias_force[name]))
        scope, blocks = [a_key(name)], [np.eye(6)]
        rhs = kin.bias_acceleration[name]
        if link.parent == GROUND:
            rhs = rhs + kin.root_acceleration
        else:
            scope.append(a_key(link.parent))
            blocks.append(-np.eye(6))
        if nv:
            graph.add(Quadratic([qdd_key(name)], np.zeros((nv, nv)), tau[..., mechanism.v_slices[name]]))
            scope.append(qdd_key(name))
            blocks.append(-kin.S[name])
        graph.add(LinearEquality(scope, blocks, rhs))


def _add_constraint_factors(graph: FactorGraph, c, terms: ConstraintTerms, policy: str, mu: float, lam: np.ndarray):
    scope = [a_key(link) for link in terms.links]
    if policy in ("alm", "soft"):
        return graph.add(LeastSquares(scope, list(terms.K.values()), penalty_target(terms, mu, lam), weight=mu))
    m = c.dim
    lam_var = lam_key(c.name)
    graph.add_variable(Variable(lam_var, m, "max"))
    # one bilinear factor lambda' K_l a_l per link: a single factor over all the links would
    # declare them coupled to each other, which their (zero) Hessian blocks are not
    for i, (link, K) in enumerate(terms.K.items()):
        H = np.zeros(K.shape[:-2] + (m + 6, m + 6))
        H[..., :m, m:] = K
        H[..., m:, :m] = np.swapaxes(K, -1, -2)
        k = terms.k if i == 0 else np.zeros_like(terms.k)  # -lambda' k, carried once
        graph.add(Quadratic([lam_var, a_key(link)], H, np.concatenate([k, np.zeros(k.shape[:-1] + (6,))], axis=-1)))
    if policy == "prox":
        prior = -np.eye(m) / mu
        return graph.add(Quadratic([lam_var], prior, np.broadcast_to(prior_information(mu, lam), terms.k.shape[:-1] + (m,))))
    return None


def build_gplc(mechanism: Mechanism, kin: Kinematics, tau: np.ndarray, policy: str, mu: float, lam: dict) -> GPLC:
    """The GPLC graph at a kinematic state; ``lam`` maps constraint name -> ``lambda^k``."""
    graph = FactorGraph()
    for link in mechanism.links:
        graph.add_variable(Variable(a_key(link.name), 6))
        if link.joint.nv:
            graph.add_variable(Variable(qdd_key(link.name), link.joint.nv))
    _add_link_factors(graph, mechanism, kin, tau)
    terms, moving = {}, {}
    for c in mechanism.constraints:
        terms[c.name] = constraint_terms(kin, c)
        moving[c.name] = _add_constraint_factors(graph, c, terms[c.name], policy, mu, lam[c.name])
    return GPLC(graph, terms, moving)


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


def check_policy(policy: str) -> str:
    if not isinstance(policy, str) or policy not in POLICIES:
        raise ValueError(f"unknown constraint policy {policy!r}; use one of {sorted(POLICIES)}")
    return policy


def gplc_graph(mechanism: Mechanism, q, v, tau, policy: str = "prox", mu: float = 1e6, lam=None) -> FactorGraph:
    """The GPLC factor graph of ``mechanism`` at state ``(q, v, tau)``.

    Parameters
    ----------
    mechanism : Mechanism
    q : array_like, shape (..., nq)
    v, tau : array_like, shape (..., nv)
    policy : {"alm", "prox", "hard", "soft"}
        How constraints enter the graph (module docstring).
    mu : float
        Penalty / proximal parameter, larger is stiffer.
    lam : array_like, shape (..., m), optional
        Current multiplier estimate ``lambda^k`` (papers' sign), stacked in
        constraint order; zero by default.

    Returns
    -------
    factorgraph.FactorGraph

    Examples
    --------
    >>> import numpy as np, mechanics
    >>> mech = mechanics.models.four_bar()
    >>> g = gplc_graph(mech, mech.neutral_configuration(), np.zeros(mech.nv), np.zeros(mech.nv))
    >>> sorted({k[0] for k in g.keys})
    ['a', 'lam', 'qdd']
    """
    q, v, tau = check_state(mechanism, q, v, tau)
    policy, mu = check_policy(policy), check_mu(mu)
    if lam is not None:
        lam = check_multipliers(mechanism, lam, "lam", {"q": q, "v": v, "tau": tau})
    kin = kinematics(mechanism, q, v)
    lam = split_multipliers(mechanism, lam, kin.batch_shape)
    return build_gplc(mechanism, kin, tau, policy, mu, lam).graph
