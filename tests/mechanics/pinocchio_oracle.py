"""Pinocchio as the oracle: robots, constraint scenarios and a dense reference.

The dense reference uses only Pinocchio's quantities: ``crba`` (upper triangle,
symmetrized), ``nonLinearEffects``, the constraint Jacobians, and the drift
``gamma`` -- the constraint acceleration at ``ddq = 0`` from Pinocchio's own
kinematics (classical point accelerations for CONTACT_3D, the derivative of the
LOCAL relative twist for CONTACT_6D).  It solves

    [ M  J' ] [ ddq    ]   [ tau - nle ]
    [ J  0  ] [ -force ] = [ -gamma    ]

with Pinocchio's sign for the forces.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from mechanics.pinocchio_io import allegro_grasp as hands_and_cube  # noqa: F401  (the scene lives in the library)
from mechanics.pinocchio_io import load_pinocchio_robot


ALM_MU = 1e4  # ALM folds mu K'K into link pivots: accuracy ~ eps mu / lambda_min(H) (000 Fig. 11)


def random_state(model, rng: np.random.Generator):
    """Random (q, v, tau); free-flyer position limits made finite first (else NaN)."""
    model = model.copy()
    if model.joints[1].shortname() == "JointModelFreeFlyer":
        model.lowerPositionLimit[:7] = -1.0
        model.upperPositionLimit[:7] = 1.0
    pin.seed(int(rng.integers(2**31)))  # Pinocchio's own generator: numpy's seed does not reach it
    q = pin.randomConfiguration(model)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def _drift(model, data, cm) -> np.ndarray:
    """Constraint acceleration at ddq = 0 (data holds forwardKinematics(q, v, 0))."""
    placements, velocities, accelerations = [], [], []
    for joint, placement in ((cm.joint1_id, cm.joint1_placement), (cm.joint2_id, cm.joint2_placement)):
        placements.append(data.oMi[joint] * placement)
        velocities.append(placement.actInv(data.v[joint]))
        accelerations.append(placement.actInv(data.a[joint]))
    c1Mc2 = placements[0].actInv(placements[1])
    if cm.type == pin.ContactType.CONTACT_3D:
        classical = [a.linear + np.cross(v.angular, v.linear) for a, v in zip(accelerations, velocities)]
        return classical[0] - c1Mc2.rotation @ classical[1]
    v2_in_1 = c1Mc2.act(velocities[1])
    relative = velocities[0] - v2_in_1
    return (accelerations[0] - c1Mc2.act(accelerations[1]) + relative.cross(v2_in_1)).vector


def constraint_jacobian(model, data, cms, q) -> np.ndarray:
    pin.computeJointJacobians(model, data, q)
    pin.forwardKinematics(model, data, q)
    cdatas = [cm.createData() for cm in cms]
    for cm, cd in zip(cms, cdatas):
        cm.calc(model, data, cd)
    # eigenpy hands a one-column (or one-row) matrix back as a vector
    return np.asarray(pin.getConstraintsJacobian(model, data, cms, cdatas)).reshape(-1, model.nv)


def dense_reference(model, cms, q, v, tau):
    """(ddq, forces) from a dense KKT solve of Pinocchio's quantities (lstsq when singular)."""
    data = model.createData()
    M = pin.crba(model, data, q)
    M = np.triu(M) + np.triu(M, 1).T
    nle = pin.nonLinearEffects(model, data, q, v)
    J = constraint_jacobian(model, data, cms, q)
    pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))
    gamma = np.concatenate([_drift(model, data, cm) for cm in cms]) if cms else np.zeros(0)
    n, m = model.nv, J.shape[0]
    K = np.block([[M, J.T], [J, np.zeros((m, m))]])
    z = np.linalg.lstsq(K, np.concatenate([tau - nle, -gamma]), rcond=None)[0]
    return z[:n], -z[n:]


def std_vectors(cms):
    """Pinocchio's vectors of constraint models and fresh datas."""
    models, datas = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for cm in cms:
        models.append(cm)
        datas.append(cm.createData())
    return models, datas


def constraint_dynamics(model, cms, q, v, tau, mu_pin: float = 1e-4, accuracy: float = 1e-12, max_iter: int = 100):
    """``pinocchio.constraintDynamics`` (proximal, mu_pin = Pinocchio's regularization = 1/our mu)."""
    data = model.createData()
    models, datas = std_vectors(cms)
    pin.initConstraintDynamics(model, data, models, datas)
    settings = pin.ProximalSettings(accuracy, mu_pin, max_iter)
    ddq = pin.constraintDynamics(model, data, q, v, tau, models, datas, settings)
    return np.array(ddq), np.array(data.lambda_c), settings.iter


def _weld_to_ground(model, data, joint_name):
    j = model.getJointId(joint_name)
    return pin.RigidConstraintModel(pin.ContactType.CONTACT_6D, model, j, pin.SE3.Identity(), 0, data.oMi[j], pin.ReferenceFrame.LOCAL)


def _point_to_ground(model, data, frame_name):
    f = model.getFrameId(frame_name)
    frame = model.frames[f]
    world = data.oMi[frame.parentJoint] * frame.placement
    return pin.RigidConstraintModel(
        pin.ContactType.CONTACT_3D, model, frame.parentJoint, frame.placement, 0, world, pin.ReferenceFrame.LOCAL
    )


def scenario(name: str, q=None, rng=None):
    """(model, constraint models, q): the constraint placements are consistent at q."""
    rng = rng or np.random.default_rng(0)
    if name == "four_bar":
        model = four_bar_model()
    else:
        model = load_pinocchio_robot({"talos_feet": "talos", "solo12_feet": "solo12", "ur5_6d": "ur5"}.get(name, name))
    if q is None:
        q = random_state(model, rng)[0]
    data = model.createData()
    pin.forwardKinematics(model, data, q)
    pin.updateFramePlacements(model, data)
    if name == "talos_feet":
        cms = [_weld_to_ground(model, data, "leg_left_6_joint"), _weld_to_ground(model, data, "leg_right_6_joint")]
    elif name == "solo12_feet":
        cms = [_point_to_ground(model, data, f) for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")]
    elif name == "ur5_6d":
        cms = [_weld_to_ground(model, data, "wrist_3_joint")]
    elif name == "four_bar":
        cms = [four_bar_constraint(model, data)]
    else:
        cms = []
    return model, cms, q


def four_bar_model():
    """A spatial four-bar in Pinocchio: crank (RZ), coupler (RY then RX) on the crank, rocker (RX) on the ground."""
    model = pin.Model()
    inertia = pin.Inertia(0.5, np.array([0.15, 0.0, 0.0]), np.diag([1e-3, 4e-3, 4e-3]))
    crank = model.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "crank")
    model.appendBodyToJoint(crank, inertia, pin.SE3.Identity())
    c1 = model.addJoint(crank, pin.JointModelRY(), pin.SE3(np.eye(3), np.array([0.3, 0.0, 0.0])), "coupler_pitch")
    model.appendBodyToJoint(c1, inertia, pin.SE3.Identity())
    c2 = model.addJoint(c1, pin.JointModelRX(), pin.SE3(np.eye(3), np.array([0.3, 0.0, 0.0])), "coupler_roll")
    model.appendBodyToJoint(c2, inertia, pin.SE3.Identity())
    rocker = model.addJoint(0, pin.JointModelRX(), pin.SE3(np.eye(3), np.array([0.6, 0.2, 0.0])), "rocker")
    model.appendBodyToJoint(rocker, inertia, pin.SE3.Identity())
    model.name = "four_bar"
    model.lowerPositionLimit[:] = -np.pi  # default limits are infinite: randomConfiguration would give NaN
    model.upperPositionLimit[:] = np.pi
    return model


def four_bar_constraint(model, data):
    """Ball joint between the coupler's tip and the rocker, placed where the coupler's tip is."""
    coupler, rocker = model.getJointId("coupler_roll"), model.getJointId("rocker")
    tip = pin.SE3(np.eye(3), np.array([0.3, 0.0, 0.0]))
    world = data.oMi[coupler] * tip
    return pin.RigidConstraintModel(
        pin.ContactType.CONTACT_3D, model, coupler, tip, rocker, data.oMi[rocker].actInv(world), pin.ReferenceFrame.LOCAL
    )


def pinocchio_model_of(mech):
    """The same mechanism built in Pinocchio (an independent kinematics and dynamics oracle).

    Returns ``(model, constraint models)``; constraints must use all their axes.
    """
    axes = {(1.0, 0.0, 0.0): "X", (0.0, 1.0, 0.0): "Y", (0.0, 0.0, 1.0): "Z"}
    model = pin.Model()
    ids = {"ground": 0}
    for link in mech.links:
        kind, axis = link.joint.kind, link.joint.axis
        if kind in ("revolute", "prismatic", "revolute_unbounded"):
            letter = {"revolute": "R", "prismatic": "P", "revolute_unbounded": "RUB"}[kind]
            if axis in axes:
                joint = getattr(pin, f"JointModel{letter}{axes[axis]}")()
            else:
                unaligned = {"revolute": "RevoluteUnaligned", "prismatic": "PrismaticUnaligned",
                             "revolute_unbounded": "RevoluteUnboundedUnaligned"}[kind]
                joint = getattr(pin, f"JointModel{unaligned}")(np.array(axis))
        else:
            joint = {"spherical": pin.JointModelSpherical, "free": pin.JointModelFreeFlyer, "planar": pin.JointModelPlanar}[kind]()
        placement = pin.SE3(link.placement.rotation, link.placement.translation)
        ids[link.name] = model.addJoint(ids[link.parent], joint, placement, link.name)
        model.appendBodyToJoint(ids[link.name], pin.Inertia(link.mass, link.com, link.inertia), pin.SE3.Identity())
        start = model.joints[ids[link.name]].idx_v
        model.armature[start:start + link.joint.nv] = link.armature
    model.gravity = pin.Motion(mech.gravity, np.zeros(3))
    cms = []
    for c in mech.constraints:
        kind = pin.ContactType.CONTACT_3D if type(c).__name__ == "Connect" else pin.ContactType.CONTACT_6D
        assert c.dim == (3 if kind == pin.ContactType.CONTACT_3D else 6), "Pinocchio needs full-axis constraints"
        cms.append(pin.RigidConstraintModel(
            kind, model, ids[c.link1], pin.SE3(c.placement1.rotation, c.placement1.translation),
            ids[c.link2], pin.SE3(c.placement2.rotation, c.placement2.translation), pin.ReferenceFrame.LOCAL,
        ))
    return model, cms
