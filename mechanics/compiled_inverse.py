"""The compiled inverse dynamics (:func:`mechanics.inverse_dynamics`): the tree's recursive Newton-Euler pass
on the compiled kinematics (:func:`~mechanics.compiled_kinematics._kinematics`: world-frame ``S``, bias
accelerations, inertias and bias forces), state by state."""
from __future__ import annotations

import numpy as np
from numba import njit

from elimination.compiled import announce_first_compile
from elimination.compiled_front import UNCOUNTED, ix

from .compiled_kinematics import _kinematic_parts, _kinematics, kinematic_rows, normalized_units
from .compiled_tables import ARMATURE, NV, PARENT, V0, drop_stale_kernels, model_tables, unit_columns

drop_stale_kernels(__file__)


@njit(cache=True, inline="always")
def net_wrench(KL, parts, l, A, a, W, w):
    """Link ``l``'s net wrench ``Iw_l a_l - f_b,l`` (its acceleration at ``A[a:a + 6]``) into ``W[w:w + 6]``."""
    IW, FB = parts[5], parts[6]
    for i in range(6):
        t = -KL[ix(FB + 6 * l + i)]
        for k in range(6):
            t += KL[ix(IW + 36 * l + 6 * i + k)] * A[ix(a + k)]
        W[ix(w + 6 * l + i)] = t


@njit(cache=True, inline="always")
def subtree_torques(links, body, KL, parts, W, w, qdd, q0, tau, t0):
    """RNEA's backward pass: each link's subtree wrench (``W[w:]``, the links' net wrenches, summed in place) on
    its joint's ``S``, the armature's ``qdd`` (``qdd[q0:]``) added, into ``tau[t0:]``."""
    S, n = parts[3], links.shape[0]
    for l in range(n - 1, -1, -1):  # (topological order: a link's children come after it)
        parent, v0, nv = links[ix(l), PARENT], links[ix(l), V0], links[ix(l), NV]
        for c in range(nv):
            t = 0.0
            for i in range(6):
                t += KL[ix(S + 36 * l + 6 * i + c)] * W[ix(w + 6 * l + i)]
            tau[ix(t0 + v0 + c)] = t + body[ix(l), ARMATURE + c] * qdd[ix(q0 + v0 + c)]
        if parent < n:
            for i in range(6):
                W[ix(w + 6 * parent + i)] += W[ix(w + 6 * l + i)]


@njit(cache=True, **UNCOUNTED)
def inverse_kernel(model, unit, Q, V, QDD, KL, AW, tau):
    """``tau[b] = M qdd + b(q, v)`` (``M`` with the armature on its diagonal) of every state ``Q (B, nq)`` (checked; its unit parts, columns ``unit (k,
    2)``, normalised here as the dynamics kernel does), ``V``, ``QDD (B, nv)``; ``KL``: the kinematics' rows
    (:func:`~mechanics.compiled_kinematics.kinematic_rows`), ``AW``: ``12 (n + 1)`` rows for the links'
    accelerations (the ground's last) and their subtrees' wrenches."""
    links, body, root = model[0], model[4], model[6]
    n = links.shape[0]
    parts = _kinematic_parts(n, Q.shape[1], V.shape[1])
    S, BIAS, QN, VV = parts[3], parts[4], parts[7], parts[8]
    A, W = AW[:6 * (n + 1)], AW[6 * (n + 1):]
    for i in range(6):
        A[ix(6 * n + i)] = root[ix(i)]
    for b in range(Q.shape[0]):
        for i in range(Q.shape[1]):
            KL[ix(QN + i)] = Q[ix(b), ix(i)]
        normalized_units(KL[QN:QN + Q.shape[1]], unit, True)  # (checked in Python: valid)
        for i in range(V.shape[1]):
            KL[ix(VV + i)] = V[ix(b), ix(i)]
        _kinematics(model, KL, parts)
        for l in range(n):  # a_l = a_parent + S_l qdd_l + a_b,l, then the link's net wrench H_l a_l - f_l
            parent, v0, nv = links[ix(l), PARENT], links[ix(l), V0], links[ix(l), NV]
            for i in range(6):
                acc = A[ix(6 * parent + i)] + KL[ix(BIAS + 6 * l + i)]
                for c in range(nv):
                    acc += KL[ix(S + 36 * l + 6 * i + c)] * QDD[ix(b), ix(v0 + c)]
                A[ix(6 * l + i)] = acc
            net_wrench(KL, parts, l, A, 6 * l, W, 0)
        subtree_torques(links, body, KL, parts, W, 0, QDD[ix(b)], 0, tau[ix(b)], 0)


def run(mechanism, q: np.ndarray, v: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    """:func:`inverse_kernel` on checked ``(B, n)`` rows (``q`` as given: normalised in the kernel, the same
    bits for a state alone or in a batch): ``tau (B, nv)``.  The tables and the workspace are kept with the
    mechanism (numba holds the GIL: no two calls share the workspace at once)."""
    announce_first_compile(__file__, "the inverse dynamics kernel", "inverse_kernel", "a few seconds")
    model, unit, KL, AW = mechanism.derived.get(("inverse dynamics",), lambda: _tables(mechanism))
    tau = np.empty((q.shape[0], mechanism.nv))
    inverse_kernel(model, unit, q, v, qdd, KL, AW, tau)
    return tau


def _tables(mechanism) -> tuple:
    """``(model, unit, KL, AW)``: the kinematics' tables, ``q``'s unit parts and the kernel's workspace."""
    n = len(mechanism.links)
    return (model_tables(mechanism), unit_columns(mechanism), np.zeros(kinematic_rows(n, mechanism.nq, mechanism.nv)),
            np.zeros(12 * (n + 1)))
