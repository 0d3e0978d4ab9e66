"""Geared motors as rotor bodies: a Mini-Cheetah-like quadruped standing on its feet, its rotors coupled to
the joints -- as multipliers (proxBBO), embedded (003's C-ABA), and against the armature approximation.

Each joint is driven by a motor whose rotor spins ``N`` times faster on the parent link (6:1 at the hip and
ab/ad, 9.33:1 at the knee).  The usual shortcut adds the rotor's reflected inertia ``N^2 I`` to the joint
(Pinocchio's and MuJoCo's ``armature``); modelled as bodies (``mechanics.with_rotors``) the rotors also feel
the legs' rotation -- gyroscopic terms the shortcut leaves out.  The answers are checked against inverse
dynamics (the recursive Newton-Euler pass, a different algorithm): ``M qdd + b = tau + C' f``.

    python examples/geared_robots.py
"""
from __future__ import annotations

import dataclasses

import numpy as np

import mechanics
from mechanics import Coupling
from mechanics.diagnosis import joint_space_constraints

SEED = 3


def standing_state(mech, rng):
    """A random leg configuration, the body at rest, joint velocities that meet the rotors' gears."""
    q = mech.neutral_configuration()
    G = mechanics.coupling_map(mech).G
    v = G @ rng.normal(scale=2.0, size=G.shape[1])
    v[:6] = 0.0
    tau = np.zeros(mech.nv)
    for c in mech.constraints:  # the motors' torques act on their rotors
        if isinstance(c, Coupling):
            tau[mech.v_slices[c.joints[0]]] = rng.normal(scale=0.3)
    return q, v, tau


def armature_model(mech):
    """The same robot without rotor bodies: each geared joint's armature ``N^2 I_spin`` instead (no contacts)."""
    reflected = {}
    for c in mech.constraints:
        if isinstance(c, Coupling):  # Coupling.gear(rotor, joint, N): C = ([[1]], [[-N]])
            rotor, joint, ratio = c.joints[0], c.joints[1], -c.C[1][0, 0]
            axis = np.asarray(mech.link(joint).joint.axis)
            reflected[joint] = ratio**2 * float(axis @ mech.link(rotor).inertia @ axis)
    links = [dataclasses.replace(link, armature=reflected.get(link.name, link.armature)) for link in mech.links
             if not link.name.endswith("_rotor")]
    return mechanics.Mechanism(links, [], mech.gravity, "armature approximation", mech.frames)


def main() -> None:
    mech = mechanics.models.mini_cheetah(contacts=True)
    q, v, tau = standing_state(mech, np.random.default_rng(SEED))
    print(mech, f"({len(mech.clusters())} clusters: each rotor with its joint)")

    prox = mechanics.forward_dynamics(mech, q, v, tau, "proxbbo", tol=1e-12)
    embedded = mechanics.forward_dynamics(mech, q, v, tau, "embed/clusters", tol=1e-12)
    print(f"proxBBO: {prox.iterations} solves; embedded: {embedded.iterations} solves (the couplings have no "
          f"multipliers, the feet keep theirs); qdd max difference {np.abs(prox.qdd - embedded.qdd).max():.1e}")

    J, _, _ = joint_space_constraints(mech, q, v)
    generalized = J.T @ prox.forces  # the gears' and the feet's forces on the joints
    rnea = mechanics.inverse_dynamics(mech, q, v, prox.qdd)
    print(f"inverse dynamics of the answer against tau + J' f: max difference {np.abs(rnea - tau - generalized).max():.1e}")
    gears = {c.name: float(prox.constraint_forces[c.name][0]) for c in mech.constraints if isinstance(c, Coupling)}
    print("the front-right gears' forces f (N m on the rotor, -N f on the joint):",
          {k: round(f, 3) for k, f in gears.items() if k.startswith("FR")})

    legs = [l.name for l in mech.links if not l.name.endswith("_rotor") and l.name != "body"]
    floating = armature_model(mech)
    keep = np.concatenate([np.arange(6)] + [np.arange(mech.v_slices[l].start, mech.v_slices[l].stop) for l in legs])
    q_tree = np.concatenate([q[:7]] + [q[mech.q_slices[l]] for l in legs])
    tree = mech.with_constraints([c for c in mech.constraints if isinstance(c, Coupling)])  # (in the air: no feet)
    bodies = mechanics.forward_dynamics(tree, q, v, tau, "proxbbo", tol=1e-12).qdd[keep]
    motors = {c.joints[1]: float(tau[mech.v_slices[c.joints[0]]][0]) * -c.C[1][0, 0] for c in tree.constraints}
    shortcut = mechanics.forward_dynamics(floating, q_tree, v[keep],
                                          np.concatenate([np.zeros(6), [motors[l] for l in legs]]), "aba").qdd
    change = np.abs(bodies - shortcut).max() / np.abs(bodies).max()
    print(f"in the air, the armature approximation moves the joint accelerations by {100 * change:.2f}% of their "
          f"largest (the rotors' gyroscopic terms, and their mass it leaves out)")


if __name__ == "__main__":
    main()
