"""URDF and MJCF through Pinocchio; a clear message without it."""
import sys

import numpy as np
import pinocchio as pin
import pytest

import mechanics
from mechanics.pinocchio_io import ROBOTS, example_robot_data_dir, from_pinocchio
from tests.mechanics.pinocchio_oracle import _drift, constraint_jacobian, dense_reference, random_state

MJCF = """<mujoco model="bar"><worldbody>
  <body name="crank"><joint name="j1" type="hinge" axis="0 0 1"/><geom type="capsule" fromto="0 0 0 1 0 0" size="0.05" mass="1"/>
    <body name="rod" pos="1 0 0"><joint name="j2" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 1 0 0" size="0.05" mass="1"/></body></body>
</worldbody><equality><connect body1="rod" anchor="1 0 0"/></equality></mujoco>"""


def test_load_urdf_equals_the_pinocchio_import():
    path = example_robot_data_dir() / ROBOTS["talos"][0]
    mech = mechanics.load_urdf(path, floating_base=True)
    model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    q, v, tau = random_state(model, np.random.default_rng(0))
    expected = pin.aba(model, model.createData(), q, v, tau)
    assert np.allclose(mechanics.forward_dynamics(mech, q, v, tau, algorithm="aba").qdd, expected, rtol=1e-9, atol=1e-9)


def test_load_mjcf_keeps_its_equality_constraints(tmp_path):
    path = tmp_path / "bar.xml"
    path.write_text(MJCF)
    mech = mechanics.load_mjcf(path)
    assert len(mech.constraints) == 1 and mechanics.GROUND in mech.constraints[0].links
    model, cms = pin.buildModelAndLegacyConstraintsFromMJCF(str(path))[:2]
    q, v, tau = np.array([0.3, -0.2]), np.array([0.5, -0.1]), np.array([0.2, 0.1])
    ddq, _ = dense_reference(model, list(cms), q, v, tau)
    # two hinges cannot hold the rod's tip still at these velocities (3 rows, rank 2): the accelerations
    # settle on Pinocchio's least-squares answer and the run says it has not converged
    with pytest.warns(mechanics.ConvergenceWarning, match="inconsistent"):
        result = mechanics.forward_dynamics(mech, q, v, tau, algorithm="proxbbo", tol=1e-12)
    assert np.allclose(result.qdd, ddq, rtol=1e-8, atol=1e-8)
    data = model.createData()
    assert np.linalg.matrix_rank(constraint_jacobian(model, data, list(cms), q)) == 2
    pin.forwardKinematics(model, data, q, v, ddq)  # the tip's acceleration at Pinocchio's answer: what stays
    left = np.max(np.abs(_drift(model, data, cms[0])))
    assert not result.converged and left > 0.1 and np.isclose(result.residual, left, rtol=1e-6)


def test_missing_files_are_named(tmp_path):
    for loader in (mechanics.load_urdf, mechanics.load_mjcf, mechanics.load_sdf):
        with pytest.raises(FileNotFoundError, match="nope"):
            loader(tmp_path / "nope.xml")


def test_without_pinocchio_the_message_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pinocchio", None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install pin example-robot-data .*pip install '\.\[robots\]'") as error:
        mechanics.load_urdf(tmp_path / "robot.urdf")
    assert "gaussgraph[" not in str(error.value)  # a name no package index serves
    with pytest.raises(ImportError, match="pip install"):
        from_pinocchio(object())


def test_unsupported_pinocchio_joints_are_named():
    model = pin.Model()
    model.addJoint(0, pin.JointModelTranslation(), pin.SE3.Identity(), "slider3d")
    with pytest.raises(ValueError, match="'slider3d'.*JointModelTranslation"):
        from_pinocchio(model)


@pytest.mark.parametrize("suffix, text, message", [
    (".xml", "garbage <not xml", r"cannot read this MJCF file: line 1: expected <"),
    (".urdf", "garbage", r"cannot read this URDF file: XML error \(parsing text\) at line 1$"),
])
def test_files_pinocchio_cannot_read_are_one_value_error_naming_them(tmp_path, suffix, text, message):
    path = tmp_path / f"bad{suffix}"
    path.write_text(text)
    loader = mechanics.load_mjcf if suffix == ".xml" else mechanics.load_urdf
    with pytest.raises(ValueError, match=message) as error:
        loader(path)
    assert str(error.value).startswith(str(path))


CHILD_MISSING = """<robot name="arm">
  <link name="base"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="upper_arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""


def test_a_urdf_the_parser_refuses_is_named_with_the_parsers_cause(tmp_path, capfd):
    """urdfdom says why only on file descriptor 2; the error carries it, and it is not printed besides."""
    path = tmp_path / "arm.urdf"
    path.write_text(CHILD_MISSING)
    with pytest.raises(ValueError) as error:
        mechanics.load_urdf(path)
    cause = "Failed to build tree: child link [upper_arm] of joint [shoulder] not found"
    assert str(error.value) == f"{path}: cannot read this URDF file: {cause}"
    assert "upper_arm" not in capfd.readouterr().err


MIMIC_URDF = """<?xml version="1.0"?>
<robot name="gripper">
  <link name="base"/>
  <link name="a"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="c"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <!-- <mimic joint="in a comment"/> -->
  <joint name="j2" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
    <mimic joint="j1" multiplier="-2" offset="0.1"/></joint>
  <joint name="j3" type="fixed"><parent link="b"/><child link="c"/><mimic joint="j1"/></joint>
</robot>
"""


def test_a_mimic_joint_is_a_coupling_or_said_to_move_independently(tmp_path):
    """A movable joint's <mimic> is a Coupling (its position level too); loaded without couplings it is named
    with its line, a fixed joint's and a comment's are not."""
    path = tmp_path / "gripper.urdf"
    path.write_text(MIMIC_URDF)
    mech = mechanics.load_urdf(path)
    (mimic,) = mech.constraints
    assert (mimic.name, mimic.joints, mimic.offset.tolist()) == ("j2:mimic", ("j2", "j1"), [0.1])
    assert [C.tolist() for C in mimic.C] == [[[1.0]], [[2.0]]]
    with pytest.warns(mechanics.pinocchio_io.CouplingNotModelledWarning) as caught:
        mech = mechanics.load_urdf(path, couplings=False)
    assert mech.nv == 2 and not mech.constraints
    assert [str(w.message).split(": joint")[0].rsplit(" ", 2)[-2:] for w in caught] == [["line", "12"]]
    assert "joint 'j2' mimics 'j1' (multiplier -2, offset 0.1)" in str(caught[0].message)


def test_a_malformed_mimic_is_refused_with_its_line(tmp_path):
    path = tmp_path / "bad.urdf"
    path.write_text(MIMIC_URDF.replace('multiplier="-2"', 'multiplier="two"'))
    with pytest.raises(ValueError, match=r"bad.urdf line 12: the <mimic> of joint 'j2'.*must be numbers"):
        mechanics.load_urdf(path)
    path.write_text(MIMIC_URDF.replace('<mimic joint="j1" multiplier', '<mimic joint="j9" multiplier'))
    with pytest.raises(ValueError, match=r"line 12: the <mimic> of joint 'j2' follows 'j9', which is not a movable"):
        mechanics.load_urdf(path)
    path.write_text(MIMIC_URDF.replace('<mimic joint="j1" multiplier', '<mimic multiplier'))
    with pytest.raises(ValueError, match=r"line 12: the <mimic> of joint 'j2' names no joint \(give joint="):
        mechanics.load_urdf(path)


COUPLED_MJCF = """<mujoco model="coupled">
  <worldbody>
    <body name="a"><joint name="ja" type="hinge" axis="0 0 1"/>
      <geom type="capsule" size="0.05" fromto="0 0 0 0.3 0 0" mass="1"/>
      <body name="b" pos="0.3 0 0"><joint name="jb" type="hinge" axis="0 1 0"/>
        <geom type="capsule" size="0.05" fromto="0 0 0 0.3 0 0" mass="1"/></body></body>
  </worldbody>
  <equality>
    <!-- <joint joint1="ja" polycoef="9"/> -->
    <joint joint1="jb" joint2="ja" polycoef="0.1 -0.5 0 0 0"/>
  </equality>
</mujoco>
"""


def test_an_mjcf_joint_equality_is_a_coupling_and_a_quadratic_one_is_refused_with_its_line(tmp_path):
    """Pinocchio's MJCF parser drops ``<equality><joint>``: read here as ``jb = 0.1 - 0.5 ja`` (a Coupling whose
    accelerations hold in the dynamics); a polycoef of order 2 is refused, naming the element and line."""
    path = tmp_path / "coupled.xml"
    path.write_text(COUPLED_MJCF)
    mech = mechanics.load_mjcf(path)
    (coupling,) = mech.constraints
    assert (coupling.name, coupling.joints, coupling.offset.tolist()) == ("jb:equality", ("jb", "ja"), [0.1])
    result = mechanics.forward_dynamics(mech, np.array([0.3, -0.05]), np.zeros(2), np.ones(2), "proxbbo")
    assert abs(result.qdd[1] + 0.5 * result.qdd[0]) < 1e-12 * np.abs(result.qdd).max()
    path.write_text(COUPLED_MJCF.replace('polycoef="0.1 -0.5 0 0 0"', 'polycoef="0.1 -0.5 0.2 0 0"'))
    with pytest.raises(ValueError, match=r"coupled.xml line 10: <equality><joint joint1='jb'>: polycoef .* order "
                                         r"above 1"):
        mechanics.load_mjcf(path)
    refused = {'polycoef="0.1 -0.5 0 0 0"': ('polycoef="0.1 half 0 0 0"', r"polycoef '0.1 half 0 0 0' must be numbers"),
               'type="hinge" axis="0 1 0"': ('type="ball"', r"'jb' is not a hinge or slide joint of the model"),
               'name="jb" type="hinge"': ('name="jb" ref="0.2" type="hinge"', r"joint 'jb' has ref='0.2'.*give the "
                                                                              r"joint ref=\"0\"")}
    for before, (after, message) in refused.items():
        path.write_text(COUPLED_MJCF.replace(before, after))
        with pytest.raises(ValueError, match=r"coupled.xml line 10: <equality><joint joint1='jb'>: " + message):
            mechanics.load_mjcf(path)


def test_an_mjcf_joints_armature_is_kept_as_pinocchio_reads_it(tmp_path):
    """MJCF's joint ``armature`` (what MuJoCo models of geared motors carry): the link's armature, and the
    dynamics Pinocchio's ``aba`` with it."""
    path = tmp_path / "armed.xml"
    path.write_text(COUPLED_MJCF.replace('axis="0 0 1"/>', 'axis="0 0 1" armature="0.01"/>'))
    mech = mechanics.load_mjcf(path)
    assert mech.link("ja").armature.tolist() == [0.01] and mech.link("jb").armature.tolist() == [0.0]
    model = pin.buildModelAndLegacyConstraintsFromMJCF(str(path))[0]
    q, v, tau = np.array([0.3, -0.2]), np.array([0.5, 1.0]), np.array([0.2, -0.1])
    tree = mech.without_constraints()
    expected = pin.aba(model, model.createData(), q, v, tau)
    assert np.abs(mechanics.forward_dynamics(tree, q, v, tau, "aba").qdd - expected).max() < 1e-12 * np.abs(expected).max()
