"""Constraints on named frames (a URDF's bodies and fixed joints), and robots loaded by name."""
import numpy as np
import pinocchio as pin
import pytest

import mechanics
from mechanics import GROUND, Connect, Pose, Weld
from mechanics.pinocchio_io import load_pinocchio_robot
from tests.mechanics.pinocchio_oracle import constraint_dynamics, dense_reference, random_state, scenario


def relative(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


def _world(model, q, frame: str):
    data = model.createData()
    pin.forwardKinematics(model, data, q)
    pin.updateFramePlacements(model, data)
    placement = data.oMf[model.getFrameId(frame)]
    return Pose(np.array(placement.rotation), np.array(placement.translation))


@pytest.mark.parametrize("backend", ["auto", "numpy"])
def test_talos_welded_at_its_soles_by_frame_name_moves_as_pinocchio_welded_at_its_ankles(backend):
    """The soles are fixed on the ankle links: welding them (frame placements composed with the welds')
    gives the motion of Pinocchio's own weld of the ankle joints at the same state."""
    model, cms, q = scenario("talos_feet", rng=np.random.default_rng(3))
    _, v, tau = random_state(model, np.random.default_rng(4))
    soles = [Weld(f"{side}_sole_link", GROUND, placement2=_world(model, q, f"{side}_sole_link"), name=side)
             for side in ("left", "right")]
    talos = mechanics.load_robot("talos", soles)
    assert [c.link1 for c in talos.constraints] == ["leg_left_6_joint", "leg_right_6_joint"]
    result = mechanics.forward_dynamics(talos, q, v, tau, algorithm="proxbbo", tol=1e-12, backend=backend)
    ddq, _ = dense_reference(model, cms, q, v, tau)
    assert result.converged and relative(result.qdd, ddq) < 1e-8
    assert list(result.constraint_forces) == ["left", "right"]
    assert np.array_equal(result.constraint_forces["right"], result.forces[6:12])


def test_talos_on_its_soles_equals_pinocchio_constraint_dynamics_on_the_same_frames():
    """The issue's command through the Python API, against pinocchio.constraintDynamics with its
    RigidConstraintModels built from Pinocchio's own frames (parent joint and placement)."""
    model = load_pinocchio_robot("talos")
    q, v, tau = random_state(model, np.random.default_rng(9))
    data = model.createData()
    pin.forwardKinematics(model, data, q)
    pin.updateFramePlacements(model, data)
    cms = []
    for side in ("left", "right"):
        frame = model.frames[model.getFrameId(f"{side}_sole_link")]
        cms.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_6D, model, frame.parentJoint, frame.placement, 0,
                                            data.oMf[model.getFrameId(f"{side}_sole_link")], pin.ReferenceFrame.LOCAL))
    ddq_pin, forces_pin, _ = constraint_dynamics(model, cms, q, v, tau, mu_pin=1e-8, accuracy=1e-13, max_iter=200)
    talos = mechanics.load_robot("talos", [Weld("left_sole_link", GROUND), Weld("right_sole_link", GROUND)])
    result = mechanics.forward_dynamics(talos, q, v, tau, algorithm="proxbbo", mu=1e8, tol=1e-13, max_iter=200)
    assert relative(result.qdd, ddq_pin) < 1e-8 and relative(result.forces, forces_pin) < 1e-8


def test_solo12_feet_as_point_contacts_on_frames_equal_pinocchios():
    model, cms, q = scenario("solo12_feet", rng=np.random.default_rng(5))
    _, v, tau = random_state(model, np.random.default_rng(6))
    feet = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
    solo = mechanics.load_robot("solo12", [Connect(f, GROUND, placement2=_world(model, q, f)) for f in feet])
    result = mechanics.forward_dynamics(solo, q, v, tau, algorithm="lcaba", mu=1e8, tol=1e-12, max_iter=200)
    ddq, forces = dense_reference(model, cms, q, v, tau)
    assert relative(result.qdd, ddq) < 1e-7 and relative(result.forces, forces) < 1e-6


def test_a_frame_placement_composes_with_the_constraints_own():
    mech = mechanics.models.four_bar()
    tip = Pose(np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]), np.array([0.5, 0.0, 0.0]))
    framed = mechanics.Mechanism(mech.links, (), mech.gravity, frames={"tip": (mech.links[0].name, tip)})
    weld = framed.with_constraints([Weld("tip", GROUND, placement1=mechanics.at(0.0, 0.25))]).constraints[0]
    assert weld.link1 == mech.links[0].name
    # the weld's offset (0, 0.25, 0) is in the frame's axes, turned 90 degrees about z: (-0.25, 0, 0) on the link
    assert np.allclose(weld.placement1.translation, [0.25, 0.0, 0.0]) and np.allclose(weld.placement1.rotation, tip.rotation)


def test_unknown_names_say_what_exists():
    talos = mechanics.load_robot("talos")
    with pytest.raises(ValueError, match=r"'left_sol'.*did you mean 'left_sole_link'"):
        talos.with_constraints([Weld("left_sol", GROUND)])
    with pytest.raises(ValueError, match=r"unknown robot 'taloss' \(did you mean 'talos'\?\); load_robot knows .*cassie"):
        mechanics.load_robot("taloss")


def test_every_robot_name_loads():
    for name in mechanics.robot_names():
        robot = mechanics.load_robot(name)
        assert robot.nv > 0 and robot.name == name or name == "cassie"
    assert mechanics.load_robot("cassie").constraint_dim == 12  # its four closed loops
