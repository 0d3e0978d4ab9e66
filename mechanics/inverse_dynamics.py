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
from .mechanism import GROUND, Mechanism


BACKENDS = ("auto", "numba", "numpy")


def inverse_dynamics(mechanism: Mechanism, q, v, qdd, backend: str = "auto", independent: bool = False) -> np.ndarray:
    """The joint forces that give ``qdd`` at ``(q, v)`` on the spanning tree (module docstring).

    With ``independent=True`` and joint couplings, the generalized forces of the independent coordinates ``y``
    of :func:`~mechanics.couplings.coupling_map` (``qdd = G y + g``): ``G' tau``, what drives ``y`` while the
    couplings' forces hold the rest (Pinocchio's ``rnea`` of a mimic model).  ``qdd`` must then satisfy the
    couplings.

    Parameters
    ----------
    mechanism : Mechanism
    q : array_like, shape (..., nq)
    v, qdd : array_like, shape (..., nv)
        Leading batch dimensions broadcast against each other.
    backend : {"auto", "numba", "numpy"}
        Compiled (:mod:`mechanics.compiled_inverse`, the default) or the numpy reference; they agree to round-off.
    independent : bool
        Return ``G' tau`` on the couplings' independent coordinates.

    Returns
    -------
    ndarray, shape (..., nv), or (..., ny) with ``independent``

    Raises
    ------
    ValueError
        With ``independent``: a ``qdd`` that misses a coupling beyond round-off, the coupling named.

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
    acceleration = {GROUND: np.broadcast_to(kin.root_acceleration, batch + (6,))}
    wrench = {}
    for link in mechanism.links:  # forward: accelerations, then each link's net wrench
        name = link.name
        joint = (kin.S[name] @ qdd[..., mechanism.v_slices[name], None])[..., 0]
        acceleration[name] = acceleration[link.parent] + joint + kin.bias_acceleration[name]
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


def _on_independent(mechanism: Mechanism, q, v, qdd, backend: str) -> np.ndarray:
    """``G' tau`` of :func:`inverse_dynamics` where ``qdd`` satisfies the couplings ``C qdd = c``."""
    from .couplings import coupling_map, coupling_rows

    qdd = state_array(mechanism, qdd, "qdd", mechanism.nv)
    # the couplings' rows and map are structure: made once per mechanism (an SVD and a column search)
    (C, c, names), couplings = mechanism.derived.get(
        ("independent coordinates",), lambda: (coupling_rows(mechanism), coupling_map(mechanism)))
    missed = np.abs((qdd[..., None, :] @ C.T)[..., 0, :] - c)
    scale = 1.0 + np.max(np.abs(qdd), axis=-1, keepdims=True) * np.max(np.abs(C), initial=0.0)
    if np.any(missed > 1e-9 * scale):
        row = int(np.argmax(np.max((missed / scale).reshape(-1, len(names)), axis=0)))
        raise ValueError(f"inverse_dynamics(independent=True): qdd misses coupling {names[row]!r} by "
                         f"{np.max(missed[..., row]):.1e}; give qdd = G y + g (mechanics.coupling_map)")
    return couplings.reduce(inverse_dynamics(mechanism, q, v, qdd, backend))
