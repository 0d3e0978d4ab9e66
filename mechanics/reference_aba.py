"""A reference Articulated-Body Algorithm, on one page in Featherstone's symbols.

Written after spatial_v2's ``ABA.m`` and Featherstone, *Rigid Body Dynamics
Algorithms* (2008), Table 7.1.  Kept as documentation and as a test oracle; the
production path is the GPLC graph eliminated leaves to root
(``mechanics.forward_dynamics(..., algorithm="aba")``), which
``tests/mechanics/test_reference_aba.py`` checks against this function.
"""
from __future__ import annotations

import numpy as np

from .joints import jcalc, motion_subspace
from .mechanism import GROUND, Mechanism
from .spatial import compose, crf, crm, inverse_motion_transform


def aba(mechanism: Mechanism, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
    r"""Forward dynamics ``qdd`` of a kinematic tree by the Articulated-Body Algorithm.

    Coordinates are **link-local**, as in spatial_v2: every quantity of link
    ``i`` is in link ``i``'s frame, ``Xup_i`` takes motion vectors from the
    parent's frame (the world for a link on the ground) to link ``i``'s, and
    ``Xup_i'`` takes forces back.  ``S_i`` (6 x nv_i) is the joint's motion
    subspace, constant in the child frame; ``I_i`` the link's spatial inertia;
    ``a_0 = -a_grav`` (gravity as a fictitious ground acceleration); ``A_i`` the joint's armature (a diagonal,
    Pinocchio's ``armature``)::

        1. root to leaves     v_i  = Xup_i v_p + S_i qd_i            (v_0 = 0)
                              c_i  = v_i x S_i qd_i                   velocity-product acceleration
                              IA_i = I_i,  pA_i = v_i x* I_i v_i       articulated inertia, bias force
        2. leaves to root     U_i = IA_i S_i,  D_i = S_i' U_i + A_i,  u_i = tau_i - S_i' pA_i
                              Ia  = IA_i - U_i D_i^-1 U_i'
                              pa  = pA_i + Ia c_i + U_i D_i^-1 u_i
                              IA_p += Xup_i' Ia Xup_i,  pA_p += Xup_i' pa
        3. root to leaves     a'_i  = Xup_i a_p + c_i
                              qdd_i = D_i^-1 (u_i - U_i' a'_i),   a_i = a'_i + S_i qdd_i

    ``p`` is the parent of ``i``.  Step 2 is the elimination of ``(qdd_i,
    a_i)`` from GPLC's quadratic ``1/2 a_i' H_i a_i - f_i' a_i - tau_i' qdd_i``
    (000 eqs. 28-30) with ``H_i = IA_i``, ``f_i = -pA_i``, ``a_b,i = c_i``,
    there expressed in the world frame (``H_i = X_i' IA_i X_i``, ``X_i`` the
    world-to-link motion transform); step 3 is its back-substitution, eq. 29.

    Parameters
    ----------
    mechanism : Mechanism
        A kinematic tree: no constraints.
    q : ndarray, shape (nq,)
        Configuration, Pinocchio's layout (unit quaternions and (cos, sin) pairs).
    v : ndarray, shape (nv,)
        Joint velocities (spatial_v2's ``qd``; ``v_i`` above are link velocities).
    tau : ndarray, shape (nv,)
        Joint forces.

    Returns
    -------
    qdd : ndarray, shape (nv,)

    References
    ----------
    R. Featherstone, *Rigid Body Dynamics Algorithms*, Springer 2008, Sec. 7.3.

    Examples
    --------
    >>> import numpy as np
    >>> from mechanics import Joint, Link, Mechanism
    >>> slider = Mechanism([Link("block", "ground", Joint("prismatic", "z"))])
    >>> aba(slider, np.zeros(1), np.zeros(1), np.zeros(1)).round(2).tolist()
    [-9.81]
    """
    if mechanism.constraints:
        raise ValueError(
            f"reference ABA handles kinematic trees only; mechanism {mechanism.name!r} has constraints "
            f"{[c.name for c in mechanism.constraints]}: use mechanics.forward_dynamics for closed loops"
        )
    q, qd, tau = (np.asarray(x, dtype=float) for x in (q, v, tau))
    if q.shape != (mechanism.nq,) or qd.shape != (mechanism.nv,) or tau.shape != (mechanism.nv,):
        raise ValueError(f"{mechanism.name!r}: expected q ({mechanism.nq},), v and tau ({mechanism.nv},), "
                         f"got {q.shape}, {qd.shape}, {tau.shape}")
    S, Xup, c, IA, pA, U, D, u = {}, {}, {}, {}, {}, {}, {}, {}
    v = {GROUND: np.zeros(6)}  # link velocities from here on; the joint rates are qd
    a = {GROUND: np.concatenate([np.zeros(3), -mechanism.gravity])}
    qs, vs = mechanism.q_slices, mechanism.v_slices

    # 1. root to leaves: transforms, velocities, velocity-product accelerations, bias forces
    for link in mechanism.links:
        i, p = link.name, link.parent
        R, pos = compose(link.placement.rotation, link.placement.translation, *jcalc(link.joint, q[qs[i]]))
        Xup[i], S[i] = inverse_motion_transform(R, pos), motion_subspace(link.joint)
        vJ = S[i] @ qd[vs[i]]
        v[i] = Xup[i] @ v[p] + vJ
        c[i] = crm(v[i]) @ vJ
        IA[i] = link.spatial_inertia
        pA[i] = crf(v[i]) @ IA[i] @ v[i]

    # 2. leaves to root: articulated inertias IA and bias forces pA, handed to the parent
    for link in reversed(mechanism.links):
        i, p = link.name, link.parent
        U[i] = IA[i] @ S[i]
        D[i] = S[i].T @ U[i] + np.diag(link.armature)
        u[i] = tau[vs[i]] - S[i].T @ pA[i]
        if p != GROUND:
            Ia = IA[i] - U[i] @ np.linalg.solve(D[i], U[i].T)
            pa = pA[i] + Ia @ c[i] + U[i] @ np.linalg.solve(D[i], u[i])
            IA[p] = IA[p] + Xup[i].T @ Ia @ Xup[i]
            pA[p] = pA[p] + Xup[i].T @ pa

    # 3. root to leaves: joint and link accelerations
    qdd = np.zeros(mechanism.nv)
    for link in mechanism.links:
        i, p = link.name, link.parent
        a[i] = Xup[i] @ a[p] + c[i]
        qdd[vs[i]] = np.linalg.solve(D[i], u[i] - U[i].T @ a[i])
        a[i] = a[i] + S[i] @ qdd[vs[i]]
    return qdd
