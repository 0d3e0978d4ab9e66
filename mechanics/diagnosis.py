"""Why :func:`mechanics.forward_dynamics` did not converge: a dense check of the state it stopped at.

The constraints in joint space at ``(q, v)`` read ``J qdd = c`` (``J (m, nv)``,
the constraint rows of 000 eq. 1c through the tree's link Jacobians).  The
outer iterations (ALM, proximal point: 000 Algorithms 3 and 6) multiply the
constraint residual along each eigenvector of the Delassus matrix
``D = J M^-1 J'`` with eigenvalue ``d`` by ``1 / (1 + mu d)`` per iteration,
and the ``soft`` policy's correction does the same once.  So a run that stops
short has one of four causes, told apart here in this order:

``"inconsistent"``
    No motion meets the constraints: the least-squares solution of
    ``J qdd = c`` leaves a residual above the tolerance, which no number of
    iterations removes (the residual stagnates).
``"max_iter"``
    The iterations contract quickly (the weakest direction keeps at most
    ``SLOW_CONTRACTION`` of its residual per iteration), and ``max_iter`` cut
    them short.
``"singular configuration"``
    The contraction is slow, and mostly because the constraint rows are
    nearly dependent at this configuration: with ``s`` the relative smallest
    singular value of the (row-scaled) ``J``, the geometry makes ``D``'s
    condition ``~ 1 / s^2``, and that is at least what the inertia makes of
    the rest (``1 / s^4 >= cond(D)``).  Another configuration helps, or
    removing a dependent constraint.
``"ill-conditioned"``
    The contraction is slow while the rows are well apart: the inertia makes
    ``D`` ill-conditioned (or ``mu`` is small for it); more ``max_iter`` or a
    larger ``mu``.
``"open loops"``
    Under constraint embedding (``caba``): an embedded loop's rows have more
    rank at this state than where the loop closes, which is the rank its
    coordinates ``y`` were made for (:func:`mechanics.couplings.state_maps`);
    the extra directions are left out and their residual stays, whatever the
    iterations.  Closing the loops (:meth:`~mechanics.Mechanism.project`, and
    velocities that keep them closed) helps, or holding them with ``prox``.

Where the contraction is fast but the accelerations settled (the run stopped
itself) with the residual above the tolerance, round-off in the solves left a
floor there (about ``eps cond(D)``); the cause is the singular configuration or
the inertia that makes ``D`` ill-conditioned, as above, and a looser ``tol`` helps.

Rows are scaled to unit norm before ranks are judged, so that a weld's
angular and linear rows, or a revolute and a prismatic column, weigh alike.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .checks import normalized_configuration
from .convergence import SOFT_CONTRACTION, residual_tolerance
from .kinematics import Kinematics, constraint_terms, kinematics
from .mechanism import GROUND, Mechanism

INCONSISTENT, SINGULAR, ILL_CONDITIONED, MAX_ITER = "inconsistent", "singular configuration", "ill-conditioned", "max_iter"
OPEN_LOOPS = "open loops"
CAUSES = (INCONSISTENT, SINGULAR, ILL_CONDITIONED, MAX_ITER, OPEN_LOOPS)
RANK_RTOL = 1e-10  # singular values of the row-scaled J below this, relative to the largest, are its null space
REMEDIES = {  # what helps, in a few words (the explanation says it with the numbers)
    INCONSISTENT: "fix the constraints or the velocities", SINGULAR: "move away from this configuration",
    ILL_CONDITIONED: "raise max_iter or mu", MAX_ITER: "raise max_iter",
    OPEN_LOOPS: "close the loops (mechanism.project) or hold them with prox",
}
SLOW_CONTRACTION = SOFT_CONTRACTION  # keeping more of its residual per iteration is slow (a soft correction: not holding)


def joint_space_constraints(mechanism: Mechanism, q: np.ndarray, v: np.ndarray) -> tuple:
    """The constraints as rows on the joint accelerations, and the joint-space inertia.

    Parameters
    ----------
    mechanism : Mechanism
    q : ndarray (..., nq), unit parts normalised
    v : ndarray (..., nv)

    Returns
    -------
    J : ndarray (..., m, nv)
        Constraint rows in constraint order: ``J qdd = c`` is ``K a = k`` of every constraint.
    c : ndarray (..., m)
    M : ndarray (..., nv, nv)
        The joint-space inertia ``sum_i J_i' H_i J_i`` (``J_i`` link ``i``'s world-frame Jacobian).

    Examples
    --------
    >>> import numpy as np
    >>> from mechanics import models
    >>> mech = models.four_bar()
    >>> J, c, M = joint_space_constraints(mech, mech.neutral_configuration(), np.zeros(mech.nv))
    >>> J.shape, c.shape, M.shape
    ((2, 3), (2,), (3, 3))
    """
    kin = kinematics(mechanism, q, v)
    return _joint_space(mechanism, kin, [constraint_terms(kin, c) for c in mechanism.constraints])


def link_jacobians(mechanism: Mechanism, kin: Kinematics) -> dict:
    """Link name (the ground too) -> its world-frame Jacobian ``(..., 6, nv)``: ``v_i = J_i v``."""
    jacobian = {GROUND: np.zeros(kin.batch_shape + (6, mechanism.nv))}
    for link in mechanism.links:
        jacobian[link.name] = jacobian[link.parent].copy()
        jacobian[link.name][..., mechanism.v_slices[link.name]] = kin.S[link.name]
    return jacobian


def _joint_space(mechanism: Mechanism, kin: Kinematics, terms: list, inertia: bool = True) -> tuple:
    """:func:`joint_space_constraints` from the kinematics and each constraint's terms (``M`` None without
    ``inertia``)."""
    batch, nv = kin.batch_shape, mechanism.nv
    jacobian = link_jacobians(mechanism, kin)
    bias = {GROUND: np.broadcast_to(kin.root_acceleration, batch + (6,))}  # link acceleration at qdd = 0
    M = np.zeros(batch + (nv, nv))
    for link in mechanism.links:
        name = link.name
        bias[name] = bias[link.parent] + kin.bias_acceleration[name]
        if inertia:
            M += np.swapaxes(jacobian[name], -1, -2) @ kin.inertia[name] @ jacobian[name]
    M = M + np.diag(np.concatenate([link.armature for link in mechanism.links] or [np.zeros(0)]))  # (the armature)
    J = [sum((K @ jacobian[name] for name, K in t.K.items()), np.zeros(batch + t.k.shape[-1:] + (nv,))) for t in terms]
    c = [t.k - sum((K @ bias[name][..., None])[..., 0] for name, K in t.K.items()) for t in terms]
    return np.concatenate(J, axis=-2), np.concatenate(c, axis=-1), M if inertia else None


@dataclass(frozen=True)
class Diagnosis:
    """What a dense check of one state says about a run that did not converge.

    Attributes
    ----------
    cause : str
        One of :data:`CAUSES` (module docstring).
    rank, rows : int
        Numerical rank of the constraint rows and their number ``m``.
    gap : float
        ``max |J qdd - c|`` of the least-squares ``qdd``: what no motion removes.
    dependence : float
        The smallest singular value of the row-scaled ``J`` on its range, relative to the largest: how far
        the rows are from dependent (1: orthogonal rows; near 0: a singular configuration is near).
    smallest, condition : float
        The smallest eigenvalue of ``D`` on its range, and ``D``'s condition number there.
    contraction : float
        ``1 / (1 + mu smallest)``: what the weakest direction keeps of its residual per iteration.
    constraints : tuple of str
        The constraints the cause lies in: those left with the gap (inconsistent), those the slowest
        direction combines, an opened cluster's loops (open loops).
    embedded : int
        Open loops: the rank the cluster's coordinates were made for (where its loops close); ``rank`` is
        then its rows' rank at this state.  -1 otherwise.
    """

    cause: str
    rank: int
    rows: int
    gap: float
    dependence: float
    smallest: float
    condition: float
    contraction: float
    constraints: tuple
    embedded: int = -1

    def explanation(self, max_iter: int, soft: bool = False) -> str:
        """The cause in words, with the numbers that show it and what helps."""
        names = ", ".join(repr(n) for n in self.constraints)
        if self.cause == OPEN_LOOPS:
            return (f"the embedded loops {names} are open at this state: their rows have rank {self.rank} here and "
                    f"{self.embedded} where they close, the rank their coordinates y were made for, so the extra "
                    f"directions are left out and their residual stays; close the loops (mechanism.project(q), "
                    f"with velocities that keep them closed: mechanics.closure.project_velocity) or hold them "
                    f"with the prox policy")
        rank = f"; the constraint rows have rank {self.rank} of {self.rows} here" if self.rank < self.rows else ""
        if self.cause == INCONSISTENT:
            return (f"the constraints are inconsistent at this state -- no motion meets them all: the closest any "
                    f"motion comes leaves {self.gap:.1e} on {names}{rank}; check the constraints, and that the "
                    f"velocities v satisfy them (at a singular configuration they may not)")
        if self.cause == MAX_ITER:
            return (f"the iterations contract well ({self.contraction:.1e} per iteration) but max_iter={max_iter} "
                    f"cut them short: raise max_iter")
        if self.cause == SINGULAR:
            why = (f"a singular configuration: the rows of {names} are nearly dependent here (a combination of them "
                   f"cancels to {self.dependence:.0e} of its size{rank})")
            remedy = "move away from this configuration, or remove a dependent constraint"
        else:
            why = "ill-conditioned by the inertia (the constraint rows are well apart)"
            remedy = "raise mu (larger is stiffer)" if soft else "raise max_iter, or mu (larger is stiffer)"
        delassus = f"the Delassus matrix has condition {self.condition:.1e} (smallest eigenvalue {self.smallest:.1e})"
        if self.contraction <= SLOW_CONTRACTION:  # fast, yet stopped short: a round-off floor
            return (f"{why}, so {delassus}: the iterations contract fast ({self.contraction:.1e} per iteration) but "
                    f"the accelerations settled with the residual above tol, the round-off floor of this state's "
                    f"solves; loosen tol, or {remedy if self.cause == SINGULAR else 'lower mu'}")
        per = "correction" if soft else "iteration"
        return (f"{why}, so {delassus} and its weakest direction keeps {self.contraction:.3g} of the residual per "
                f"{per}; {remedy}")


def _inverse_sqrt(M: np.ndarray) -> np.ndarray:
    """``M^-1/2`` of a symmetric positive (semi)definite ``M``; directions without inertia are left out."""
    w, Q = np.linalg.eigh(M)
    kept = w > 1e-14 * w[-1]
    return (Q[:, kept] / np.sqrt(w[kept])) @ Q[:, kept].T


def _diagnose_one(J, c, M, mu: float, tolerance: float, capped: bool, names: np.ndarray) -> Diagnosis:
    """:class:`Diagnosis` of one state's ``J qdd = c`` with inertia ``M``."""
    m = J.shape[0]
    scale = np.linalg.norm(J, axis=1)
    scale = np.where(scale > 0.0, scale, 1.0)  # a row no joint moves stays zero: part of the null space
    U, sigma, _ = np.linalg.svd(J / scale[:, None])
    rank = int(np.sum(sigma > RANK_RTOL * sigma[0])) if m and sigma[0] > 0 else 0
    c_hat = c / scale
    gap_rows = scale * (c_hat - U[:, :rank] @ (U[:, :rank].T @ c_hat))
    gap = float(np.max(np.abs(gap_rows), initial=0.0))
    dependence = float(sigma[rank - 1] / sigma[0]) if rank else 0.0
    JW = J @ _inverse_sqrt(M)
    d, V = np.linalg.eigh(JW @ JW.T)  # D = J M^-1 J'
    smallest = float(max(d[m - rank], 0.0)) if rank else 0.0  # the smallest eigenvalue on D's range
    condition = float(d[-1] / smallest) if smallest > 0 else np.inf
    contraction = 1.0 / (1.0 + mu * smallest)
    if gap > tolerance:
        cause, weights = INCONSISTENT, np.where(np.abs(gap_rows) > tolerance, 1.0, 0.0)
    elif contraction <= SLOW_CONTRACTION and capped:
        cause, weights = MAX_ITER, V[:, m - rank]
    elif dependence ** -4 >= condition:  # the rows' near-dependence makes more of D's condition than the inertia
        cause, weights = SINGULAR, U[:, rank - 1]
    else:
        cause, weights = ILL_CONDITIONED, V[:, m - rank]
    rows = np.abs(weights) >= 0.1 * np.max(np.abs(weights), initial=0.0)
    return Diagnosis(cause, rank, m, gap, dependence, smallest, condition, contraction,
                     tuple(dict.fromkeys(names[rows])))


def _opened(mechanism: Mechanism, clusters, kin: Kinematics, terms: dict) -> list:
    """Per state, ``(constraints, rank here, rank embedded)`` of the first of the embedded ``clusters`` whose
    rows have more rank at that state than their coordinates were made for (None where none has)."""
    from .couplings import _relative_rows, rows_rank

    found = [None] * kin.batch_shape[0]
    for cluster in clusters:
        ranks = rows_rank(_relative_rows(mechanism, cluster.joints, cluster.constraints, kin, terms)[0])[3]
        embedded = len(cluster.dependent)
        for i in np.flatnonzero(ranks > embedded):
            found[i] = found[i] or (cluster.constraints, int(ranks[i]), embedded)
    return found


def diagnose(mechanism: Mechanism, q: np.ndarray, v: np.ndarray, mu: float, tol: float, capped=None,
             baumgarte: dict | None = None, clusters=()) -> list:
    """Why the runs at these states did not converge: a :class:`Diagnosis` each.

    Parameters
    ----------
    mechanism : Mechanism
    q : ndarray (n, nq)
    v : ndarray (n, nv)
    mu, tol : float
        The run's settings; a residual within ``max(tol, RESIDUAL_RTOL (1 + max |k|))`` is met
        (:mod:`mechanics.convergence`).
    capped : ndarray of bool (n,), optional
        Where the run stopped at ``max_iter`` (default: everywhere); elsewhere it stopped itself, its
        accelerations settled (or, ``soft``, after its one correction).
    baumgarte : dict, optional
        The run's Baumgarte gains, ``{constraint name: (Kp, Kd)}`` (they move ``k``).
    clusters : sequence of mechanics.couplings.EmbeddedCluster, optional
        The run's embedded clusters whose maps depend on the state (local loops under ``embed``): a state
        where one is open past its coordinates is diagnosed ``"open loops"``.

    Returns
    -------
    list of Diagnosis, one per state.

    Examples
    --------
    >>> import numpy as np
    >>> from mechanics import models
    >>> mech = models.four_bar()
    >>> [d.cause for d in diagnose(mech, mech.neutral_configuration()[None], np.zeros((1, mech.nv)), 1e6, 1e-10)]
    ['max_iter']
    """
    q = normalized_configuration(mechanism, np.array(q, dtype=float))
    kin = kinematics(mechanism, q, v)
    gains = baumgarte or {}
    terms = {c.name: constraint_terms(kin, c, gains.get(c.name)) for c in mechanism.constraints}
    tolerance = residual_tolerance(tol, terms, kin.batch_shape)
    J, c, M = _joint_space(mechanism, kin, list(terms.values()))
    names = np.array([c.name for c in mechanism.constraints for _ in range(c.dim)], dtype=object)
    capped = np.ones(len(q), dtype=bool) if capped is None else capped
    found = [_diagnose_one(J[i], c[i], M[i], mu, float(tolerance[i]), bool(capped[i]), names) for i in range(len(q))]
    for i, opened in enumerate(_opened(mechanism, clusters, kin, terms)):
        if opened is not None:
            found[i] = dataclasses.replace(found[i], cause=OPEN_LOOPS, constraints=opened[0], rank=opened[1],
                                           embedded=opened[2])
    return found
