"""Inverse dynamics of the spanning tree: the joint forces ``tau`` that give accelerations ``qdd`` at ``(q, v)``.

The recursive Newton-Euler algorithm in the world frame of :mod:`mechanics.kinematics`: forward, each link's
acceleration ``a_i = a_pi + S_i qdd_i + a_b,i`` (``a_0 = -a_grav``); each link's net wrench ``H_i a_i -
f_i`` (``f_i = -v_i x* H_i v_i`` its bias force); backward, each joint carries its subtree's wrench
``F_i`` and its force is ``tau_i = S_i' F_i`` (plus its armature times ``qdd_i``).  So ``tau = M qdd + b(q, v)``,
Pinocchio's ``rnea``; the loop
constraints are not in it (their forces are ``J' lambda``, ``forward_dynamics``' ``forces``).
"""
from __future__ import annotations

import numpy as np

from .checks import batch_shape, check_state, plain_state, state_array
from .kinematics import kinematics
from .mechanism import GROUND, Coupling, Mechanism


BACKENDS = ("auto", "numba", "numpy")


def inverse_dynamics(mechanism: Mechanism, q, v, qdd, backend: str = "auto", independent: bool = False) -> np.ndarray:
    """The joint forces that give ``qdd`` at ``(q, v)`` on the spanning tree (module docstring).

    With ``independent=True`` and joint couplings, the generalized forces of the independent coordinates ``y``
    of :func:`~mechanics.couplings.coupling_map` (``qdd = G y + g``): ``G' tau``, what drives ``y`` while the
    couplings' forces hold the rest (Pinocchio's ``rnea`` of a mimic model).  With local loops too (a
    four-bar knee: :func:`mechanics.clusters.local`), 003's C-RNEA: ``Gamma' tau`` on the coordinates ``z`` of
    :func:`~mechanics.couplings.independent_coordinates` -- each loop cluster's independent joints
    (003 Sec. IV's partition), the joints outside clusters as themselves -- whatever ``forward_dynamics``
    returns for ``tau`` gives back ``Gamma' tau``.  The forces of constraints not in a cluster (contacts, loops
    spanning the tree) stay in the result: ``Gamma' (tau + J' f)`` for those.  ``qdd`` must satisfy the
    couplings and the clusters' loops, and the loops be closed where their rows would have more rank.

    Parameters
    ----------
    mechanism : Mechanism
    q : array_like, shape (..., nq)
    v, qdd : array_like, shape (..., nv)
        Leading batch dimensions broadcast against each other.
    backend : {"auto", "numba", "numpy"}
        Compiled (:mod:`mechanics.compiled_inverse`, the default) or the numpy reference; they agree to round-off.
    independent : bool
        Return ``G' tau`` on the couplings' independent coordinates (``Gamma' tau`` with local loops).

    Returns
    -------
    ndarray, shape (..., nv), or (..., ny) with ``independent`` (``(..., nz)`` with local loops)

    Raises
    ------
    ValueError
        With ``independent``: a ``qdd`` that misses a coupling or a cluster's loops beyond round-off, or loops
        open past their cluster's coordinates -- the constraints named; a singular configuration of a cluster.

    Examples
    --------
    Holding a link still against gravity: a pendulum along x pivoting about y, which gravity turns towards
    ``+y`` (``x`` goes down), needs ``-m g l``.

    >>> import numpy as np
    >>> from mechanics import GROUND, Joint, Link, Mechanism
    >>> arm = Link("arm", GROUND, Joint("revolute", "y"), mass=2.0, com=np.array([0.5, 0.0, 0.0]),
    ...            inertia=np.eye(3) * 1e-3)
    >>> np.round(inverse_dynamics(Mechanism([arm]), [0.0], [0.0], [0.0]), 6)  # -2 * 9.81 * 0.5
    array([-9.81])
    """
    if backend not in BACKENDS:
        raise ValueError(f"inverse_dynamics: backend must be one of {BACKENDS}, got {backend!r}")
    if independent:
        return _on_independent(mechanism, q, v, qdd, backend)
    if backend != "numpy" and plain_state(mechanism, q, v, qdd):  # one state, the common call: no reshapes
        from . import compiled_inverse

        check_state(mechanism, q, v, np.zeros(mechanism.nv))  # (refuses NaN, inf, q far from its unit parts)
        state_array(mechanism, qdd, "qdd", mechanism.nv)  # (the kernel normalises q as a batch's)
        return compiled_inverse.run(mechanism, q[None], v[None], qdd[None])[0]
    given = state_array(mechanism, q, "q", mechanism.nq)
    q, v, _ = check_state(mechanism, given, v, np.zeros(mechanism.nv))  # (refuses q far from unit parts)
    qdd = state_array(mechanism, qdd, "qdd", mechanism.nv)
    batch = batch_shape({"q": q, "v": v, "qdd": qdd})
    if backend != "numpy":  # (q as given: the kernel normalises it, the same bits alone or in a batch)
        from . import compiled_inverse

        rows = [np.ascontiguousarray(np.broadcast_to(a, batch + a.shape[-1:]).reshape(-1, a.shape[-1]))
                for a in (given, v, qdd)]
        return compiled_inverse.run(mechanism, *rows).reshape(batch + (mechanism.nv,))
    return _numpy(mechanism, q, v, qdd, batch)


def _numpy(mechanism: Mechanism, q, v, qdd, batch: tuple) -> np.ndarray:
    """The reference: :func:`inverse_dynamics` on :func:`~mechanics.kinematics.kinematics`' arrays."""
    kin = kinematics(mechanism, q, v)
    acceleration = link_accelerations(mechanism, kin, qdd, batch)
    wrench = {}
    for link in mechanism.links:  # forward: accelerations, then each link's net wrench
        name = link.name
        wrench[name] = (kin.inertia[name] @ acceleration[name][..., None])[..., 0] - kin.bias_force[name]
    tau = np.zeros(batch + (mechanism.nv,))
    for link in reversed(mechanism.links):  # backward: subtrees' wrenches, projected on the joints
        name = link.name
        columns = mechanism.v_slices[name]
        tau[..., columns] = ((np.swapaxes(kin.S[name], -1, -2) @ wrench[name][..., None])[..., 0]
                             + link.armature * qdd[..., columns])
        if link.parent != GROUND:
            wrench[link.parent] = wrench[link.parent] + wrench[name]
    return tau


def link_accelerations(mechanism: Mechanism, kin, qdd: np.ndarray, batch: tuple) -> dict:
    """Link (and ``"ground"``) -> its world-frame spatial acceleration ``(..., 6)`` for ``qdd``:
    ``a_i = a_pi + S_i qdd_i + a_b,i`` from ``a_0 = -a_grav``."""
    acceleration = {GROUND: np.broadcast_to(kin.root_acceleration, batch + (6,))}
    for link in mechanism.links:
        name = link.name
        joint = (kin.S[name] @ qdd[..., mechanism.v_slices[name], None])[..., 0]
        acceleration[name] = acceleration[link.parent] + joint + kin.bias_acceleration[name]
    return acceleration


def _on_independent(mechanism: Mechanism, q, v, qdd, backend: str) -> np.ndarray:
    """``G' tau`` of :func:`inverse_dynamics` where ``qdd`` satisfies the couplings ``C qdd = c``; with local
    loops, ``Gamma' tau`` (:func:`_on_clusters`)."""
    from .clusters import local
    from .couplings import coupling_map, coupling_rows

    qdd = state_array(mechanism, qdd, "qdd", mechanism.nv)
    loops = tuple(c.name for c in mechanism.constraints if not isinstance(c, Coupling) and local(mechanism, c.name))
    if loops:
        return _on_clusters(mechanism, q, v, qdd, backend)
    # the couplings' rows and map are structure: made once per mechanism (an SVD and a column search)
    (C, c, names), couplings = mechanism.derived.get(
        ("independent coordinates",), lambda: (coupling_rows(mechanism), coupling_map(mechanism)))
    _check_couplings(mechanism, qdd, C, c, names)
    return couplings.reduce(inverse_dynamics(mechanism, q, v, qdd, backend))


def _check_couplings(mechanism: Mechanism, qdd: np.ndarray, C: np.ndarray, c: np.ndarray, names: list) -> None:
    """Refuse a ``qdd`` that misses a coupling ``C qdd = c`` beyond round-off, the coupling named."""
    missed = np.abs((qdd[..., None, :] @ C.T)[..., 0, :] - c)
    scale = 1.0 + np.max(np.abs(qdd), axis=-1, keepdims=True) * np.max(np.abs(C), initial=0.0)
    if np.any(missed > 1e-9 * scale):
        row = int(np.argmax(np.max((missed / scale).reshape(-1, len(names)), axis=0)))
        raise ValueError(f"inverse_dynamics(independent=True): qdd misses coupling {names[row]!r} by "
                         f"{np.max(missed[..., row]):.1e}; give qdd = G y + g (mechanics.coupling_map)")


def _on_clusters(mechanism: Mechanism, q, v, qdd, backend: str) -> np.ndarray:
    """``Gamma' tau`` of :func:`inverse_dynamics` on the coordinates of the couplings' and local loops' clusters
    (:func:`mechanics.couplings.independent_coordinates`), where ``qdd`` is on every cluster's map and the
    maps span their rows' solutions at this state."""
    from .couplings import coordinate_clusters, coupling_rows, independent_map

    couplings = tuple(c.name for c in mechanism.constraints if isinstance(c, Coupling))
    clusters = coordinate_clusters(mechanism)
    given = state_array(mechanism, q, "q", mechanism.nq)
    q, v, _ = check_state(mechanism, given, v, np.zeros(mechanism.nv))
    batch = batch_shape({"q": q, "v": v, "qdd": qdd})
    q, v, qdd = (np.broadcast_to(a, batch + a.shape[-1:]) for a in (q, v, qdd))
    kin = kinematics(mechanism, q, v)
    Gamma, _ = independent_map(mechanism, clusters, kin, {})
    if couplings:
        _check_couplings(mechanism, qdd, *coupling_rows(mechanism))
    acceleration = link_accelerations(mechanism, kin, qdd, batch)
    for cluster in clusters:
        if not cluster.constant:
            _check_on_map(mechanism, cluster, kin, qdd, acceleration)
    tau = inverse_dynamics(mechanism, given, v, qdd, backend)
    return (tau[..., None, :] @ Gamma)[..., 0, :]


def _check_on_map(mechanism: Mechanism, cluster, kin, qdd: np.ndarray, acceleration: dict) -> None:
    """Refuse, naming the cluster's loops, a state where their rows have more rank than its coordinates were
    made for (open past them: the map would leave some of their forces in ``Gamma' tau``), or a ``qdd`` that
    misses their rows ``A qdd_c + K_p a_p = c`` on the rows' numerical range beyond round-off."""
    from .couplings import _columns, _relative_rows, rows_rank

    A, c, Kp = _relative_rows(mechanism, cluster.joints, cluster.constraints, kin, {})
    U, sv, _, ranks = rows_rank(A)
    rank, named = len(cluster.dependent), ", ".join(repr(n) for n in cluster.constraints)
    if np.any(ranks > rank):
        raise ValueError(f"inverse_dynamics(independent=True): the loops {named} are open at this state past the "
                         f"coordinates of their cluster {cluster.name!r} (their rows have more rank here than "
                         f"{rank}, where they close), so their forces would stay in the result; close them first "
                         f"(mechanism.project(q), mechanics.closure.project_velocity)")
    qdd_c = qdd[..., _columns(mechanism, cluster.joints)]
    done = (A @ qdd_c[..., None])[..., 0] + (Kp @ acceleration[cluster.parent][..., None])[..., 0]
    missed = np.abs((np.swapaxes(U[..., :rank], -1, -2) @ (done - c)[..., None])[..., 0])
    scale = 1.0 + sv[..., :1] * np.max(np.abs(qdd_c), axis=-1, keepdims=True) + np.max(np.abs(c), axis=-1, keepdims=True)
    if np.any(missed > 1e-9 * scale):
        raise ValueError(f"inverse_dynamics(independent=True): qdd misses the loops {named} by "
                         f"{np.max(missed):.1e}; give qdd = G y + g on their cluster {cluster.name!r}'s "
                         f"coordinates (or one that forward_dynamics returns)")
