"""A small SDF reader for mechanisms with closed loops (no Pinocchio needed).

Pinocchio's registry wheel is built without SDF support, and SDF is the format
that carries closed loops (e.g. Cassie's ``cassie_v2.sdf``).  The reader keeps
what dynamics needs: links (mass, centre of mass, inertia), revolute /
prismatic / fixed / ball joints.  Ball joints are cut joints by default and
become 3-D :class:`Connect` constraints; the remaining joints must form a
spanning tree.  A link without a parent joint (the pelvis) gets a free-flyer.

SDF conventions used (1.4-1.7): a link's ``<pose>`` is its frame in the model
frame at the initial configuration; a joint's ``<pose>`` is in its child
link's frame; the ``<axis><xyz>`` is in the joint frame; an ``<inertial>``
``<pose>`` places the centre of mass and the principal frame of the given
inertia.  Each link of the mechanism has the frame of its parent joint, so
``q = 0`` is the file's initial configuration.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from .joints import Joint
from .mechanism import GROUND, Connect, Link, Mechanism, Pose
from .spatial import rotation_about

TREE_JOINTS = {"revolute": "revolute", "continuous": "revolute", "prismatic": "prismatic", "fixed": "fixed"}


def _floats(element, default: str, count: int, where: str) -> np.ndarray:
    """The ``count`` numbers of an element's text (``default`` where it is absent); ``where`` names it in errors."""
    text = element.text if element is not None and element.text and element.text.strip() else default
    try:
        values = np.array([float(x) for x in text.split()])
    except ValueError:
        values = None
    if values is None or values.shape != (count,):
        raise ValueError(f"{where}: expected {count} numbers separated by spaces, got {text.strip()!r}")
    return values


def _pose(element, where: str) -> tuple:
    """``(R, p)`` of an SDF ``<pose>x y z roll pitch yaw</pose>`` (fixed-axis XYZ rotations, radians)."""
    if element is not None and element.get("relative_to"):
        raise ValueError(f"{where}: <pose relative_to={element.get('relative_to')!r}> (SDF 1.7 frame semantics) is "
                         f"not supported; give the pose in the model frame (drop relative_to)")
    if element is not None and element.get("degrees", "false").strip().lower() == "true":
        raise ValueError(f"{where}: <pose degrees='true'> is not supported; give the angles in radians")
    x, y, z, roll, pitch, yaw = _floats(element, "0 0 0 0 0 0", 6, f"{where}: <pose>")
    R = rotation_about("z", yaw) @ rotation_about("y", pitch) @ rotation_about("x", roll)
    return R, np.array([x, y, z])


def _compose(a, b):
    return a[0] @ b[0], a[1] + a[0] @ b[1]


def _inverse(a):
    return a[0].T, -a[0].T @ a[1]


def _inertial(link_element, where: str):
    inertial = link_element.find("inertial")
    if inertial is None:
        return 0.0, (np.eye(3), np.zeros(3)), np.zeros((3, 3))
    mass = _floats(inertial.find("mass"), "0", 1, f"{where} <inertial><mass>")[0]
    i = {k: _floats(inertial.find(f"inertia/{k}"), "0", 1, f"{where} <inertia><{k}>")[0]
         for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")}
    tensor = np.array([[i["ixx"], i["ixy"], i["ixz"]], [i["ixy"], i["iyy"], i["iyz"]], [i["ixz"], i["iyz"], i["izz"]]])
    return mass, _pose(inertial.find("pose"), f"{where} <inertial>"), tensor


def load_sdf(path, cut_joints=("ball",), name: str | None = None) -> Mechanism:
    """Read an SDF model into a :class:`Mechanism`.

    Parameters
    ----------
    path : str or Path
    cut_joints : tuple of str
        SDF joint types that become cut joints (3-D constraints for ``ball``).
    name : str, optional

    Examples
    --------
    With the ``robots`` extra installed::

        from mechanics.pinocchio_io import example_robot_data_dir
        load_sdf(example_robot_data_dir() / "cassie_description/robots/cassie_v2.sdf")
        # Mechanism('cassie': 23 links, nq=29, nv=28, 4 constraints, m=12)
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such SDF file: {path}")
    try:
        model = ET.parse(path).getroot().find("model")
    except ET.ParseError as error:
        raise ValueError(f"{path}: not well-formed XML ({error}); fix the file, e.g. an unclosed or misspelt tag") from None
    if model is None:
        raise ValueError(f"{path}: no <model> element (an SDF file holds <sdf><model>...</model></sdf>)")
    _refuse_unsupported(path, model)
    world = {l.get("name"): _pose(l.find("pose"), f"{path}: link {l.get('name')!r}") for l in model.findall("link")}
    elements = {l.get("name"): l for l in model.findall("link")}
    tree, cuts = {}, []
    for joint in model.findall("joint"):
        kind, child, parent = joint.get("type"), joint.findtext("child"), joint.findtext("parent")
        for link in (child, parent):
            if link not in world and link != "world":
                raise ValueError(f"{path}: joint {joint.get('name')!r} names unknown link {link!r}")
        if kind in cut_joints:
            cuts.append(joint)
        elif kind in TREE_JOINTS:
            if child in tree:
                raise ValueError(f"{path}: link {child!r} is the child of two tree joints; cut one of them")
            tree[child] = joint
        else:
            raise ValueError(f"{path}: joint {joint.get('name')!r} has unsupported type {kind!r}")
    frame = {"world": (np.eye(3), np.zeros(3))}  # our link frames (= their parent joints' frames) at q = 0
    for child, joint in tree.items():
        frame[child] = _compose(world[child], _pose(joint.find("pose"), f"{path}: joint {joint.get('name')!r}"))
    roots = [l for l in world if l not in tree]
    for root in roots:
        frame[root] = world[root]
    order = _depth_first(roots, tree)
    if len(order) < len(world):
        cycle = sorted(set(world) - set(order))
        raise ValueError(f"{path}: the tree joints between links {cycle} form a closed loop, so they are no tree; "
                         f"make one joint of the loop a cut joint (type 'ball', or list its type in cut_joints)")
    links = []
    for link_name in order:
        joint = tree.get(link_name)
        if joint is None:
            parent, kind_joint, placement = GROUND, Joint("free"), world[link_name]
            placement = (np.eye(3), np.zeros(3))  # the free-flyer's q carries the base pose
        else:
            parent = joint.findtext("parent")
            parent = GROUND if parent == "world" else parent
            kind = TREE_JOINTS[joint.get("type")]
            where = f"{path}: joint {joint.get('name')!r} <axis><xyz>"
            axis = tuple(_floats(joint.find("axis/xyz"), "1 0 0", 3, where)) if kind != "fixed" else None
            try:
                kind_joint = Joint(kind, axis)
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
            parent_frame = frame[parent] if parent != GROUND else (np.eye(3), np.zeros(3))
            placement = _compose(_inverse(parent_frame), frame[link_name])
        mass, inertial_pose, tensor = _inertial(elements[link_name], f"{path}: link {link_name!r}")
        body = _compose(_inverse(frame[link_name]), world[link_name])  # SDF link frame in ours
        com_frame = _compose(body, inertial_pose)
        links.append(Link(link_name, parent, kind_joint, Pose(*placement), mass, com_frame[1],
                          com_frame[0] @ tensor @ com_frame[0].T))
    constraints = []
    for joint in cuts:
        child, parent = joint.findtext("child"), joint.findtext("parent")
        centre = _compose(world[child], _pose(joint.find("pose"), f"{path}: joint {joint.get('name')!r}"))
        on_child = _compose(_inverse(frame[child]), centre)
        on_parent = _compose(_inverse(frame[parent]), centre)
        parent = GROUND if parent == "world" else parent
        constraints.append(Connect(child, parent, Pose(*on_child), Pose(*on_parent), name=joint.get("name")))
    return Mechanism(links, constraints, name=name or model.get("name") or path.stem)


def _refuse_unsupported(path: Path, model) -> None:
    """SDF features this reader would otherwise ignore (and so misplace links): refused, with the fix."""
    for tag, fix in (("include", "inline the included model's links and joints"),
                     ("model", "flatten the nested model into the top one"),
                     ("frame", "give poses in the model frame, without named frames")):
        element = model.find(tag)
        if element is not None:
            raise ValueError(f"{path}: <{tag}> inside <model> (name {element.get('name')!r}) is not supported; {fix}")


def _depth_first(roots, tree) -> list:
    children = {}
    for child, joint in tree.items():
        children.setdefault(joint.findtext("parent"), []).append(child)
    order, stack = [], list(reversed(roots)) + list(reversed(children.get("world", [])))
    while stack:
        link = stack.pop()
        order.append(link)
        stack.extend(reversed(children.get(link, [])))
    return order
