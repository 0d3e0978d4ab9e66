"""Import of Pinocchio models (optional extra ``robots``: ``pip install ".[robots]"`` in a checkout).

:func:`from_pinocchio` maps every Pinocchio joint to a :class:`Link` (same
names, same ``q`` / ``v`` layout, same inertias) and every
``RigidConstraintModel`` (CONTACT_3D / CONTACT_6D, LOCAL) to a
:class:`Connect` / :class:`Weld`, so ``q``, ``v``, ``tau`` and the constraint
forces read exactly as Pinocchio's.
"""
from __future__ import annotations

import contextlib
import difflib
import glob
import os
import re
import sys
import tempfile
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from .couplings import Rotor, with_rotors
from .joints import Joint
from .mechanism import GROUND, Connect, Coupling, Link, Mechanism, Pose, Weld

INSTALL_HINT = ("install Pinocchio and example-robot-data: pip install pin example-robot-data (or, in a checkout of "
                "gaussgraph, its robots extra: pip install '.[robots]')")

_AXIS_JOINTS = {
    "RX": ("revolute", "x"), "RY": ("revolute", "y"), "RZ": ("revolute", "z"),
    "RUBX": ("revolute_unbounded", "x"), "RUBY": ("revolute_unbounded", "y"), "RUBZ": ("revolute_unbounded", "z"),
    "PX": ("prismatic", "x"), "PY": ("prismatic", "y"), "PZ": ("prismatic", "z"),
}
_UNALIGNED = {
    "RevoluteUnaligned": "revolute", "RevoluteUnboundedUnaligned": "revolute_unbounded", "PrismaticUnaligned": "prismatic",
}
_FREE = {"FreeFlyer": "free", "Spherical": "spherical", "Planar": "planar"}


def pinocchio():
    """The ``pinocchio`` module, or an ImportError saying how to install it."""
    try:
        import pinocchio as pin
    except ImportError:
        raise ImportError(f"this needs Pinocchio; {INSTALL_HINT}") from None
    return pin


def _joint(model, index: int) -> Joint:
    jmodel = model.joints[index]
    kind = jmodel.shortname().removeprefix("JointModel")
    if kind in _AXIS_JOINTS:
        return Joint(*_AXIS_JOINTS[kind])
    if kind in _UNALIGNED:
        return Joint(_UNALIGNED[kind], tuple(np.asarray(jmodel.extract().axis, dtype=float)))
    if kind in _FREE:
        return Joint(_FREE[kind])
    raise ValueError(
        f"joint {model.names[index]!r} is a Pinocchio {jmodel.shortname()}, which gaussgraph does not model; "
        f"supported: {sorted(_AXIS_JOINTS) + sorted(_UNALIGNED) + sorted(_FREE)}"
    )


def _pose(se3) -> Pose:
    return Pose(np.array(se3.rotation), np.array(se3.translation))


def _constraint(pin, model, cm, index: int):
    label = cm.name or f"c{index}"
    if cm.reference_frame != pin.ReferenceFrame.LOCAL:
        raise ValueError(f"constraint {label!r}: only LOCAL reference frames are supported, got {cm.reference_frame}")
    if np.any(np.asarray(cm.desired_contact_acceleration.vector) != 0):
        raise ValueError(f"constraint {label!r}: a nonzero desired_contact_acceleration is not supported")
    baumgarte = cm.m_baumgarte_parameters if hasattr(cm, "m_baumgarte_parameters") else None
    if baumgarte is not None and (np.any(np.asarray(baumgarte.Kp) != 0) or np.any(np.asarray(baumgarte.Kd) != 0)):
        gains = {label: (float(np.max(baumgarte.Kp)), float(np.max(baumgarte.Kd)))}
        raise ValueError(f"constraint {label!r}: Baumgarte gains are the call's in gaussgraph, not the model's: set "
                         f"them to zero here and pass forward_dynamics(..., baumgarte={gains}) (or prepare's)")
    links = [model.names[j] if j != 0 else GROUND for j in (cm.joint1_id, cm.joint2_id)]
    args = (links[0], links[1], _pose(cm.joint1_placement), _pose(cm.joint2_placement))
    if cm.type == pin.ContactType.CONTACT_3D:
        return Connect(*args, name=label)
    if cm.type == pin.ContactType.CONTACT_6D:
        return Weld(*args, name=label)
    raise ValueError(f"constraint {label!r}: unsupported contact type {cm.type}")


def from_pinocchio(model, constraint_models=(), name: str | None = None) -> Mechanism:
    """Convert a Pinocchio model and its rigid constraint models into a :class:`Mechanism`.

    Parameters
    ----------
    model : pinocchio.Model
    constraint_models : sequence of pinocchio.RigidConstraintModel
        CONTACT_3D (-> :class:`Connect`) or CONTACT_6D (-> :class:`Weld`), LOCAL
        reference frame, one or two joints (joint 0 is the ground).
    name : str, optional

    Returns
    -------
    Mechanism
        Links named after Pinocchio's joints; ``q``, ``v``, ``tau`` use
        Pinocchio's layout (``nq``, ``nv``) -- but where the model has rotors
        (``rotorInertia``, ``rotorGearRatio``), each is a link ``"<joint>_rotor"``
        geared to its joint (:func:`mechanics.with_rotors`), with its own
        ``q`` and ``v``.  The joints keep the model's ``armature``
        (:attr:`Link.armature <mechanics.Link>`).
    """
    pin = pinocchio()
    links = []
    for i in range(1, model.njoints):
        parent = model.parents[i]
        inertia = model.inertias[i]
        joint = model.joints[i]
        links.append(
            Link(
                model.names[i], model.names[parent] if parent != 0 else GROUND, _joint(model, i),
                _pose(model.jointPlacements[i]), float(inertia.mass), np.array(inertia.lever), np.array(inertia.inertia),
                np.array(model.armature[joint.idx_v:joint.idx_v + joint.nv]),
            )
        )
    constraints = [_constraint(pin, model, cm, j) for j, cm in enumerate(constraint_models)]
    mech = Mechanism(links, constraints, np.array(model.gravity.linear), name or model.name or "pinocchio_model",
                     frames=_frames(pin, model))
    for i, link in enumerate(mech.links, start=1):
        jmodel = model.joints[model.getJointId(link.name)]
        if (mech.q_slices[link.name].start, mech.v_slices[link.name].start) != (jmodel.idx_q, jmodel.idx_v):
            raise ValueError(f"joint {link.name!r}: Pinocchio's q/v layout is not in joint order; cannot map states")
    rotors = _rotors(model, mech)
    return with_rotors(mech, rotors) if rotors else mech


def _rotors(model, mech: Mechanism) -> dict:
    """``{joint: Rotor}`` from the model's ``rotorInertia`` (about the spin axis) and ``rotorGearRatio``."""
    inertia, ratio = np.asarray(model.rotorInertia, dtype=float), np.asarray(model.rotorGearRatio, dtype=float)
    rotors = {}
    for link in mech.links:
        columns = mech.v_slices[link.name]
        if link.joint.nv and np.any(inertia[columns] != 0):
            if link.joint.kind not in ("revolute", "revolute_unbounded"):
                raise ValueError(f"joint {link.name!r} ({link.joint.kind}) has a rotorInertia: rotors are modelled on "
                                 f"revolute joints only")
            rotors[link.name] = Rotor(float(ratio[columns][0]), float(inertia[columns][0]))
    return rotors


def _frames(pin, model) -> dict:
    """The model's operational, body and fixed-joint frames: name -> (link of its parent joint, placement)."""
    kinds = (pin.FrameType.OP_FRAME, pin.FrameType.BODY, pin.FrameType.FIXED_JOINT)
    frames = {}
    for frame in model.frames:
        if frame.type in kinds and frame.name not in frames:
            link = model.names[frame.parentJoint] if frame.parentJoint != 0 else GROUND
            frames[frame.name] = (link, _pose(frame.placement))
    return frames


def example_robot_data_dir() -> Path:
    """The ``robots`` folder of the installed example-robot-data package."""
    candidates = []
    for base in sys.path + [sys.prefix]:
        candidates += glob.glob(os.path.join(base, "cmeel.prefix", "share", "example-robot-data", "robots"))
        candidates += glob.glob(os.path.join(base, "lib", "python*", "site-packages", "cmeel.prefix", "share", "example-robot-data", "robots"))
    for path in candidates:
        if os.path.isdir(path):
            return Path(path)
    raise FileNotFoundError(f"example-robot-data's robots folder was not found; {INSTALL_HINT}")


ROBOTS = {
    # name: (path under example-robot-data/robots, floating base)
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "talos": ("talos_data/robots/talos_reduced.urdf", True),
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "anymal": ("anymal_b_simple_description/robots/anymal.urdf", True),
    "allegro": ("allegro_hand_description/urdf/allegro_right_hand.urdf", False),
    "allegro_left": ("allegro_hand_description/urdf/allegro_left_hand.urdf", False),
    "anymal_c": ("anymal_c_simple_description/urdf/anymal.urdf", True),
    "go1": ("go1_description/urdf/go1.urdf", True),
    "go2": ("go2_description/urdf/go2.urdf", True),
    "a1": ("a1_description/urdf/a1.urdf", True),
    "g1": ("g1_description/urdf/g1_29dof_rev_1_0.urdf", True),
    "panda": ("panda_description/urdf/panda.urdf", False),
    "z1": ("z1_description/urdf/z1.urdf", False),
}
"""example-robot-data's URDF robots by name: (path under its ``robots`` folder, floating base)."""

SDF_ROBOTS = {"cassie": "cassie_description/robots/cassie_v2.sdf"}
"""example-robot-data's SDF robots by name (their closed loops read as constraints by :func:`mechanics.load_sdf`)."""


def robot_names() -> list:
    """The names :func:`load_robot` knows."""
    return sorted(ROBOTS) + sorted(SDF_ROBOTS)


def load_robot(name: str, constraints=()) -> Mechanism:
    """An example-robot-data robot by name, with its frames, optionally with ``constraints``.

    Parameters
    ----------
    name : str
        One of :func:`robot_names` (``talos``, ``solo12``, ``anymal``, ``go1``, ``ur5``, ``cassie``, ...);
        legged robots and humanoids get a free-flyer root joint.
    constraints : sequence of Weld / Connect / General / Coupling
        Their ends may name the robot's frames (a URDF's bodies and fixed joints): e.g.
        ``Weld("left_sole_link", "ground")``.  Added to the robot's own (Cassie's loops, the couplings of its
        URDF's ``<mimic>`` joints: :func:`load_urdf`).

    Examples
    --------
    >>> from mechanics import GROUND, Weld, load_robot
    >>> talos = load_robot("talos", [Weld("left_sole_link", GROUND), Weld("right_sole_link", GROUND)])
    >>> talos.nv, talos.constraint_dim, talos.constraints[0].link1
    (38, 12, 'leg_left_6_joint')
    """
    if name in SDF_ROBOTS:
        from .sdf import load_sdf

        mech = load_sdf(example_robot_data_dir() / SDF_ROBOTS[name])
        return mech.with_constraints(list(mech.constraints) + list(constraints)) if constraints else mech
    if name not in ROBOTS:
        close = difflib.get_close_matches(name, robot_names(), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown robot {name!r}{hint}; load_robot knows {', '.join(robot_names())}")
    model, path = _robot_model(name)
    mech = from_pinocchio(model, name=name)
    return mech.with_constraints(_mimic_couplings(path, mech) + list(constraints))


def load_pinocchio_robot(name: str):
    """``pinocchio.Model`` of a robot of example-robot-data listed in :data:`ROBOTS`, as Pinocchio builds it by
    default: a ``<mimic>`` joint moves independently (:class:`CouplingNotModelledWarning`)."""
    model, path = _robot_model(name)
    _warn_mimics(path)
    return model


def _robot_model(name: str) -> tuple:
    """``(pinocchio.Model, path of its URDF)`` of a robot of :data:`ROBOTS`."""
    if name not in ROBOTS:
        raise ValueError(f"unknown robot {name!r}; use one of {sorted(ROBOTS)}")
    pin = pinocchio()
    path, floating = ROBOTS[name]
    full = str(example_robot_data_dir() / path)
    model = pin.buildModelFromUrdf(full, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(full)
    return model, full


class CouplingNotModelledWarning(UserWarning):
    """A URDF joint that mimics another was loaded as an independent joint (``load_urdf(..., couplings=False)``,
    or a robot of :func:`load_robot`): the loaded mechanism moves more freely than the file says."""


def _mimics(path: str) -> list:
    """``(joint, mimicked, multiplier, offset, line)`` of each movable joint's ``<mimic>`` in a URDF file (its
    line in the file); a malformed one refused with its element and line named.  Pinocchio's parser, as we
    call it, drops the element (on a fixed joint it means nothing)."""
    try:
        text = Path(path).read_text(errors="replace")
        joints = ET.fromstring(text).iter("joint")
    except (OSError, ET.ParseError):  # (the parser says what is wrong with the file)
        return []
    live = re.sub(r"<!--.*?-->", lambda m: "\n" * m[0].count("\n"), text, flags=re.S)  # (no comments' mimics)
    lines = [live.count("\n", 0, m.start()) + 1 for m in re.finditer(r"<mimic\b", live)]
    found = []
    for (joint, mimic), line in zip([(j, j.find("mimic")) for j in joints if j.find("mimic") is not None], lines):
        if joint.get("type") in ("fixed", None):
            continue
        where = f"{path} line {line}: the <mimic> of joint {joint.get('name')!r}"
        if not mimic.get("joint"):
            raise ValueError(f"{where} names no joint (give joint=\"...\": the joint it follows)")
        try:
            ratio, offset = float(mimic.get("multiplier", "1")), float(mimic.get("offset", "0"))
        except ValueError:
            raise ValueError(f"{where}: multiplier {mimic.get('multiplier')!r} and offset {mimic.get('offset')!r} "
                             f"must be numbers") from None
        found.append((joint.get("name"), mimic.get("joint"), ratio, offset, line))
    return found


def _warn_mimics(path: str) -> None:
    """A :class:`CouplingNotModelledWarning` per movable joint with a ``<mimic>`` (its file line named)."""
    for joint, mimicked, ratio, offset, line in _mimics(path):
        warnings.warn(f"{path} line {line}: joint {joint!r} mimics {mimicked!r} (multiplier {ratio:g}, offset "
                      f"{offset:g}) but is loaded as an independent joint here; load the file with "
                      f"mechanics.load_urdf (couplings=True) to keep the coupling", CouplingNotModelledWarning,
                      stacklevel=3)


def _mimic_couplings(path: str, mech: Mechanism, mimics: list | None = None) -> list:
    """A :meth:`Coupling.mimic <mechanics.Coupling.mimic>` per ``<mimic>`` (named ``"<joint>:mimic"``); a
    continuous joint's has a velocity level only (its ``q`` is ``(cos, sin)``)."""
    couplings = []
    for joint, mimicked, ratio, offset, line in _mimics(path) if mimics is None else mimics:
        for name in (joint, mimicked):
            if name not in mech.index or not mech.link(name).joint.nv:
                raise ValueError(f"{path} line {line}: the <mimic> of joint {joint!r} follows {mimicked!r}, which is "
                                 f"not a movable joint of the model")
        positional = all(mech.link(name).joint.kind in ("revolute", "prismatic") for name in (joint, mimicked))
        couplings.append(Coupling((joint, mimicked), ([[1.0]], [[-ratio]]), offset=[offset] if positional else None,
                                  name=f"{joint}:mimic"))
    return couplings


def load_urdf(path, floating_base: bool = False, couplings: bool = True) -> Mechanism:
    """A URDF file through Pinocchio (a free-flyer root joint if ``floating_base``).

    Each ``<mimic joint="..." multiplier="r" offset="o">`` of a movable joint becomes a :class:`~mechanics.Coupling`
    (``q = r q_mimicked + o``, named ``"<joint>:mimic"``); the joint keeps its coordinates, so ``q``, ``v`` and
    ``tau`` have the file's every joint, and the coupling's force is the torque that holds it to its model.
    With ``couplings=False`` it is loaded as an independent joint, with a :class:`CouplingNotModelledWarning`.

    Examples
    --------
    >>> import mechanics, pathlib, tempfile
    >>> link = '<link name="{0}"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
    >>> joint = ('<joint name="{0}" type="revolute"><parent link="{1}"/><child link="{2}"/><axis xyz="0 0 1"/>'
    ...          '<limit lower="-1" upper="1" effort="1" velocity="1"/>{3}</joint>')
    >>> text = ('<robot name="r"><link name="base"/>' + link.format("a") + link.format("b") + joint.format("j1", "base", "a", "")
    ...         + joint.format("j2", "a", "b", '<mimic joint="j1" multiplier="2"/>') + '</robot>')
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.urdf"
    >>> _ = path.write_text(text)
    >>> mech = mechanics.load_urdf(path)
    >>> mech.nv, [c.name for c in mech.constraints]
    (2, ['j2:mimic'])
    """
    pin = pinocchio()
    path = _existing(path)
    mimics = _mimics(path)  # (first: a malformed <mimic> named with its line, before urdfdom refuses it without)
    if not couplings:
        _warn_mimics(path)
    with _read_by_pinocchio(path, "URDF"):
        model = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating_base else pin.buildModelFromUrdf(path)
        mech = from_pinocchio(model, name=Path(path).stem)
    return mech.with_constraints(_mimic_couplings(path, mech, mimics)) if couplings and mimics else mech


def load_mjcf(path) -> Mechanism:
    """An MJCF file with its equality constraints, through Pinocchio: its ``connect`` and ``weld`` ones as
    cut joints, its ``<joint joint1 joint2 polycoef>`` ones as :class:`~mechanics.Coupling` (``q1 = p0 + p1
    q2``; named by their ``name``, else ``"<joint1>:equality"``; without ``joint2`` the joint is held at
    ``p0``).  A higher-order polynomial is refused, its element and line named."""
    pin = pinocchio()
    path = _existing(path)
    equalities = _joint_equalities(path)
    with _read_by_pinocchio(path, "MJCF"):
        model, constraints = pin.buildModelAndLegacyConstraintsFromMJCF(path)[:2]
        mech = from_pinocchio(model, list(constraints), name=Path(path).stem)
    if not equalities:
        return mech
    return mech.with_constraints(list(mech.constraints) + [_equality_coupling(path, mech, *e) for e in equalities])


def _joint_equalities(path: str) -> list:
    """``(attributes, line, refs)`` of each active ``<joint>`` inside an MJCF ``<equality>`` (comments left
    out); ``refs``: the file's joints' ``ref`` attributes by name."""
    text = Path(path).read_text(errors="replace")
    live = re.sub(r"<!--.*?-->", lambda m: "\n" * m[0].count("\n"), text, flags=re.S)
    refs = {}  # (MuJoCo's polycoef is relative to the joints' reference positions)
    for tag in re.finditer(r"<joint\b[^>]*\bname=\"([^\"]*)\"[^>]*\bref=\"([^\"]*)\"", live):
        refs[tag[1]] = tag[2]
    found = []
    for block in re.finditer(r"<equality\b.*?</equality>", live, flags=re.S):
        for tag in re.finditer(r"<joint\b[^>]*?/?>", block[0]):
            try:
                attributes = ET.fromstring(tag[0] if tag[0].endswith("/>") else tag[0][:-1] + "/>").attrib
            except ET.ParseError:  # (Pinocchio's parser names what is wrong with the file)
                continue
            if attributes.get("active", "true") != "false":
                found.append((attributes, live.count("\n", 0, block.start() + tag.start()) + 1, refs))
    return found


def _equality_coupling(path: str, mech: Mechanism, attributes: dict, line: int, refs: dict) -> Coupling:
    where = f"{path} line {line}: <equality><joint joint1={attributes.get('joint1')!r}>"
    try:
        coefficients = [float(x) for x in attributes.get("polycoef", "0 1 0 0 0").split()]
    except ValueError:
        raise ValueError(f"{where}: polycoef {attributes.get('polycoef')!r} must be numbers") from None
    coefficients += [0.0] * (5 - len(coefficients))
    if any(coefficients[2:]):
        raise ValueError(f"{where}: polycoef {attributes['polycoef']!r} is a polynomial of order above 1; only "
                         f"linear couplings (p0 + p1 q2) are modelled: set the higher coefficients to 0")
    joints = [attributes.get("joint1"), attributes.get("joint2")]
    for joint in [j for j in joints if j is not None]:
        if joint not in mech.index or mech.link(joint).joint.kind not in ("revolute", "prismatic"):
            raise ValueError(f"{where}: {joint!r} is not a hinge or slide joint of the model")
        if float(refs.get(joint, "0") or 0) != 0.0:
            raise ValueError(f"{where}: joint {joint!r} has ref={refs[joint]!r}; the polynomial is relative to the "
                             f"joints' reference positions, which are not read here: give the joint ref=\"0\" and "
                             f"fold its ref into polycoef")
    name = attributes.get("name") or f"{joints[0]}:equality"
    if joints[1] is None:
        return Coupling((joints[0],), ([[1.0]],), offset=[coefficients[0]], name=name)
    return Coupling.mimic(joints[0], joints[1], coefficients[1], coefficients[0], name=name)


@contextlib.contextmanager
def _read_by_pinocchio(path: str, kind: str):
    """Pinocchio's parse errors (RuntimeError, C++ locations) and ours, as one ValueError naming the file.

    The URDF parser says the cause ("child link [arm] of joint [j] not found")
    only on file descriptor 2, and Pinocchio's exception only that the file is
    not a valid model: the cause is read from there into the message.
    """
    with _stderr_of_native_code() as said:
        try:
            yield
        except (RuntimeError, ValueError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            first = re.sub(r"^\((\d+)\):", r"line \1:", first.removeprefix(path).lstrip(": "))  # Pinocchio's "file(12):"
            causes = _parser_errors(said())
            raise ValueError(f"{path}: cannot read this {kind} file: {'; '.join(causes) or first}") from None


@contextlib.contextmanager
def _stderr_of_native_code():
    """File descriptor 2 into a temporary file meanwhile; yields a function that returns what was written
    there so far.  What is not an error line of the parser goes on to stderr afterwards (warnings, another
    thread's output)."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no descriptor 2 to read from: nothing to add
        yield lambda: ""
        return
    with tempfile.TemporaryFile("w+", errors="replace") as sink:
        os.dup2(sink.fileno(), 2)

        def said() -> str:
            sink.seek(0)  # native code moved the descriptor's offset, not the Python file's
            return sink.read()

        try:
            yield said
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sys.stderr.write("".join(line for line in said().splitlines(keepends=True) if not _parser_line(line)))


def _parser_line(line: str) -> bool:
    """An error line of urdfdom (``Error:   ...``) or the source location under it (``  at line 262 in ...``)."""
    return line.startswith("Error:") or re.match(r"\s+at line \d+ in ", line) is not None


def _parser_errors(text: str) -> list:
    """The causes urdfdom printed (``Error:   Failed to build tree: ...``), without their source locations;
    TinyXML's codes in words (``XML error (parsing text) at line 1``)."""
    causes = [" ".join(line.removeprefix("Error:").split()) for line in text.splitlines() if line.startswith("Error:")]
    return [re.sub(r"Error=XML_ERROR_(\w+) ErrorID=\d+ \(0x\w+\) Line number=(\d+)",
                   lambda m: f"XML error ({m[1].lower().replace('_', ' ')}) at line {m[2]}", cause) for cause in causes]


def _existing(path) -> str:
    path = str(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no such file: {path}")
    return path


def _renamed(model, prefix: str):
    """A copy of ``model`` whose joint and frame names start with ``prefix``."""
    model = model.copy()
    for i in range(1, model.njoints):
        model.names[i] = prefix + model.names[i]
    for frame in model.frames:
        if frame.name != "universe":
            frame.name = prefix + frame.name
    return model


def allegro_grasp(hands: int = 2, rng=None):
    """000 Table II cases 1-2: Allegro hand(s) holding a free cube with their four fingertips.

    Builds a Pinocchio model (a free-flyer cube, then the hand(s) on fixed mounts) at a random
    finger configuration and places a 3-D contact (CONTACT_3D, LOCAL) at each fingertip, on the
    cube where the fingertip is.

    Returns
    -------
    (pinocchio.Model, list of RigidConstraintModel, q)
    """
    pin = pinocchio()
    rng = rng or np.random.default_rng(0)
    if hands not in (1, 2):
        raise ValueError(f"allegro_grasp: hands must be 1 or 2, got {hands!r}")
    model = pin.Model()
    cube = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "cube")
    side = 0.06
    model.appendBodyToJoint(cube, pin.Inertia.FromBox(0.2, side, side, side), pin.SE3.Identity())
    model.lowerPositionLimit[:7], model.upperPositionLimit[:7] = -1.0, 1.0
    mounts = [pin.SE3(pin.rpy.rpyToMatrix(0, -np.pi / 2, 0), np.array([0.08, 0.0, 0.0])),
              pin.SE3(pin.rpy.rpyToMatrix(0, np.pi / 2, 0), np.array([-0.08, 0.0, 0.0]))]
    for h in range(hands):
        hand = _renamed(load_pinocchio_robot("allegro" if h == 0 else "allegro_left"), f"h{h}_")
        model = pin.appendModel(model, hand, 0, mounts[h])
    pin.seed(int(rng.integers(2**31)))  # Pinocchio's own generator: numpy's seed does not reach it
    q = pin.randomConfiguration(model)
    q[:3] = 0.0
    model.name = "allegro_grasp" if hands == 1 else "two_allegro_grasp"
    data = model.createData()
    pin.forwardKinematics(model, data, q)
    pin.updateFramePlacements(model, data)
    cms = []
    for h in range(hands):
        for tip in ("link_3.0_tip", "link_7.0_tip", "link_11.0_tip", "link_15.0_tip"):
            frame = model.frames[model.getFrameId(f"h{h}_{tip}")]
            world = data.oMi[frame.parentJoint] * frame.placement
            cms.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, model, frame.parentJoint, frame.placement,
                                                cube, data.oMi[cube].actInv(world), pin.ReferenceFrame.LOCAL))
    return model, cms, q
