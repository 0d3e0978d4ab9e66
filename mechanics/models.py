"""Built-in mechanisms of the papers, each a function with size parameters.

Loops are closed at the neutral configuration: the second frame of every cut
joint is placed where the first one is at ``q = 0``, so positions and
(zero) velocities are consistent there.  Geometry and inertias are simple
rods; the topologies are the papers'.  Rotors, belts and differentials (:func:`geared_chain`,
:func:`belt_chain`, :func:`mini_cheetah`, :func:`tello_leg`) are joint couplings (:class:`~mechanics.Coupling`).
"""
from __future__ import annotations

import numpy as np

from .joints import Joint
from .couplings import Rotor, with_rotors
from .mechanism import GROUND, Connect, Coupling, Link, Mechanism, Pose, Weld, at
from .spatial import compose, rotation_about

AXIS_CYCLE = ("z", "y", "x")
_REVOLUTE = {axis: Joint("revolute", axis) for axis in AXIS_CYCLE}  # joints are immutable values: shared


def rod(name: str, parent: str, joint: Joint, placement: Pose, length: float = 0.3, mass: float | None = None,
        direction: int = 0) -> Link:
    """A uniform rod of radius ``length / 10`` along local axis ``direction``, starting at the link frame."""
    mass = abs(length) if mass is None else mass
    com = np.zeros(3)
    com[direction] = length / 2
    radius = abs(length) / 10
    inertia = np.full(3, mass * (length**2 / 12 + radius**2 / 4))
    inertia[direction] = mass * radius**2 / 2
    return Link(name, parent, joint, placement, mass, com, np.diag(inertia))


def _tip(length: float, direction: int = 0) -> Pose:
    p = np.zeros(3)
    p[direction] = length
    return Pose(np.eye(3), p)


def _neutral_poses(tree: Mechanism) -> tuple:
    """World rotation and position of every link at the neutral configuration, where every joint
    transform is the identity (:func:`mechanics.joints.neutral`): each link's frame is its placement
    on its parent's.  The arithmetic of :func:`mechanics.kinematics.kinematics`, less the products by I."""
    rotation, position = {GROUND: np.eye(3)}, {GROUND: np.zeros(3)}
    for link in tree.links:
        R, p = rotation[link.parent], position[link.parent]
        rotation[link.name], position[link.name] = compose(R, p, link.placement.rotation, link.placement.translation)
    return rotation, position


def _closed(links, constraints, name: str, gravity=(0.0, 0.0, -9.81)) -> Mechanism:
    """Mechanism whose constraints' second frames coincide with the first at q = 0."""
    tree = Mechanism(links, (), gravity, name)
    rotation, position = _neutral_poses(tree)
    closed = []
    for c in constraints:
        R1, p1 = rotation[c.link1], position[c.link1]
        Rc, pc = R1 @ c.placement1.rotation, p1 + R1 @ c.placement1.translation
        R2, p2 = rotation[c.link2], position[c.link2]
        placement2 = Pose(R2.T @ Rc, R2.T @ (pc - p2)) if isinstance(c, Weld) else Pose(np.eye(3), R2.T @ (pc - p2))
        closed.append(type(c)(c.link1, c.link2, c.placement1, placement2, c.axes, c.name))
    return Mechanism(tree.links, closed, gravity, name)


def four_bar(crank: float = 1.0, coupler: float = 2.0, rocker: float = 1.5, base: float = 2.0, angle: float = 1.0) -> Mechanism:
    """Planar four-bar linkage in the vertical xy-plane: crank and rocker on the ground, coupler closing on the rocker.

    The loop is a :class:`Connect` restricted to the plane (``axes=(0, 1)``),
    so its two rows are independent.  ``angle`` is the crank angle at ``q = 0``;
    gravity points along -y.
    """
    for name, length in (("crank", crank), ("coupler", coupler), ("rocker", rocker), ("base", base)):
        _check_length("four_bar", **{name: length})
    _check_length("four_bar", positive=False, angle=angle)
    A, D = np.zeros(2), np.array([base, 0.0])
    B = A + crank * np.array([np.cos(angle), np.sin(angle)])
    d = np.linalg.norm(D - B)
    if not abs(coupler - rocker) < d < coupler + rocker:
        raise ValueError(f"four_bar: links of lengths {crank}, {coupler}, {rocker}, {base} do not close at angle {angle}")
    along = (coupler**2 - rocker**2 + d**2) / (2 * d)
    height = np.sqrt(coupler**2 - along**2)
    u = (D - B) / d
    C = B + along * u + height * np.array([-u[1], u[0]])
    coupler_angle = np.arctan2(*(C - B)[::-1]) - angle
    rocker_angle = np.arctan2(*(C - D)[::-1])
    z = Joint("revolute", "z")
    links = [
        rod("crank", GROUND, z, Pose(rotation_about("z", angle), np.zeros(3)), crank),
        rod("coupler", "crank", z, Pose(rotation_about("z", coupler_angle), np.array([crank, 0.0, 0.0])), coupler),
        rod("rocker", GROUND, z, Pose(rotation_about("z", rocker_angle), np.array([base, 0.0, 0.0])), rocker),
    ]
    loop = Connect("coupler", "rocker", _tip(coupler), Pose(), axes=(0, 1), name="loop")
    return _closed(links, [loop], "four_bar", gravity=(0.0, -9.81, 0.0))


def fig4() -> Mechanism:
    """The 11-link, two-cut-joint mechanism of 000 Fig. 4.

    Tree: 1-2-3, then branches 3-4-5-6, 3-7-8, 3-9-10-11; cut joints ``"12"``
    (links 6 & 8) and ``"13"`` (links 8 & 11), both 3-D.  Links are named by
    their numbers in the paper.
    """
    parents = {1: GROUND, 2: 1, 3: 2, 4: 3, 5: 4, 6: 5, 7: 3, 8: 7, 9: 3, 10: 9, 11: 10}
    offsets = {1: (0, 0, 0.2), 2: (0, 0, 0.3), 3: (0, 0, 0.3), 4: (0.2, 0, 0.1), 5: (0.3, 0, 0), 6: (0.3, 0, 0),
               7: (0, 0.2, 0.1), 8: (0.3, 0, 0), 9: (-0.2, 0, 0.1), 10: (0.3, 0, 0), 11: (0.3, 0, 0)}
    links = [
        rod(str(i), str(parents[i]) if parents[i] != GROUND else GROUND, Joint("revolute", AXIS_CYCLE[i % 3]), at(*offsets[i]))
        for i in range(1, 12)
    ]
    cuts = [Connect("6", "8", _tip(0.3), name="12"), Connect("8", "11", _tip(0.3), name="13")]
    return _closed(links, cuts, "fig4")


def _chain(prefix: str, parent: str, count: int, start: int = 0, length: float = 0.3, turn: float = 0.0,
           twist: float = 0.0, first: Pose | None = None) -> list:
    """``count`` rods in series, joint axes cycling z, y, x.

    Each rod starts at its predecessor's tip, its frame turned by ``turn`` about
    z and twisted by ``twist`` about x, so a chain bends into a non-planar
    polygon (generic loops; straight chains make welded loops singular).
    """
    bend = rotation_about("z", turn) @ rotation_about("x", twist)
    links, previous = [], parent
    for k in range(count):
        name = f"{prefix}{k + 1}"
        placement = (first or at(0, 0, length)) if k == 0 else Pose(bend, np.array([length, 0.0, 0.0]))
        links.append(rod(name, previous, _REVOLUTE[AXIS_CYCLE[(start + k) % 3]], placement, length))
        previous = name
    return links


def _heading(angle: float, height: float = 0.3) -> Pose:
    return Pose(rotation_about("z", angle), np.array([0.0, 0.0, height]))


def cycle(n: int = 8) -> Mechanism:
    """A single loop of ``n`` links closed by a weld from link ``n`` to link 1 (000 Fig. 6).

    The loop has ``n - 1`` joints; ``n >= 7`` makes the weld's six rows independent.
    """
    _check_size("cycle", n=n, minimum=2)
    links = _chain("link", GROUND, n, turn=2 * np.pi / n, twist=0.3)
    return _closed(links, [Weld(f"link{n}", "link1", _tip(0.3), name="weld")], f"cycle_{n}")


def chain_of_loops(loops: int = 3, links_per_loop: int = 7) -> Mechanism:
    """A chain of welded loops (000 Fig. 7); ``loops`` sets their number, ``links_per_loop`` their size.

    Loop ``k`` hangs two branches from its root link and welds their tips; the
    next loop's root is the tip of the first branch.
    """
    _check_size("chain_of_loops", loops=loops, minimum=1)
    _check_size("chain_of_loops", links_per_loop=links_per_loop, minimum=3)
    links = [rod("root1", GROUND, Joint("revolute", "z"), Pose(), 0.3)]
    cuts, root = [], "root1"
    first = (links_per_loop - 1) // 2
    turn = 2 * np.pi / links_per_loop
    for k in range(1, loops + 1):
        a = _chain(f"l{k}a", root, first, start=1, turn=turn, twist=0.3, first=Pose(rotation_about("z", -turn), np.array([0.3, 0, 0])))
        b = _chain(f"l{k}b", root, links_per_loop - 1 - first, start=2, turn=-turn, twist=-0.3,
                   first=Pose(rotation_about("z", turn), np.array([0.3, 0, 0])))
        links += a + b
        cuts.append(Weld(a[-1].name, b[-1].name, _tip(0.3), name=f"weld{k}"))
        root = a[-1].name
    return _closed(links, cuts, f"chain_of_loops_{loops}x{links_per_loop}")


def worst_case(loops: int = 4, chain: int = 6) -> Mechanism:
    """Every loop couples with every other (000 Fig. 8): two-link branches at
    the tip of a serial chain, each closed onto the chain's first link by a 3-D
    cut joint, so all loops share the chain's joints.  The sizes: ``loops``
    branches, a chain of ``chain`` links."""
    _check_size("worst_case", loops=loops, minimum=1)
    _check_size("worst_case", chain=chain, minimum=2)
    links = _chain("c", GROUND, chain, turn=0.4, twist=0.3)
    cuts = []
    for k in range(1, loops + 1):
        branch = _chain(f"b{k}_", f"c{chain}", 2, start=k, turn=0.5, twist=0.2,
                        first=Pose(rotation_about("z", 2 * np.pi * k / loops), np.array([0.3, 0, 0])))
        links += branch
        cuts.append(Connect(branch[-1].name, "c1", _tip(0.3), name=f"loop{k}"))
    return _closed(links, cuts, f"worst_case_{loops}")


def branching(branches: int = 4, length: int = 6) -> Mechanism:
    """Branches from a single hub link, consecutive tips welded (000 Fig. 9).

    ``branches - 1`` welds (6 rows each) act on ``branches * length`` joints:
    they are independent only when ``length >= 6 (branches - 1) / branches``.
    """
    _check_size("branching", branches=branches, minimum=2)
    _check_size("branching", length=length, minimum=1)
    links = [rod("hub", GROUND, Joint("revolute", "z"), Pose(), 0.3)]
    tips = []
    for k in range(1, branches + 1):
        branch = _chain(f"br{k}_", "hub", length, start=k, turn=0.5, twist=0.3, first=_heading(2 * np.pi * k / branches))
        links += branch
        tips.append(branch[-1].name)
    cuts = [Weld(tips[k], tips[k + 1], _tip(0.3), name=f"weld{k + 1}") for k in range(branches - 1)]
    return _closed(links, cuts, f"branching_{branches}x{length}")


def serial_chain(n: int = 12) -> Mechanism:
    """A serial chain whose end effector is welded to the ground (001 Fig. 4a); ``n >= 6`` for independence."""
    _check_size("serial_chain", n=n, minimum=1)
    links = _chain("link", GROUND, n, turn=0.4, twist=0.3)
    return _closed(links, [Weld(f"link{n}", GROUND, _tip(0.3), name="end_effector")], f"serial_chain_{n}")


def ladder(n: int = 8, spacing: int = 2) -> Mechanism:
    """Two rails of ``n`` links joined by a 3-D rung every ``spacing`` links (001 Fig. 4b, m ~ n)."""
    _check_size("ladder", n=n, minimum=1)
    _check_size("ladder", spacing=spacing, minimum=1)
    up = rotation_about("y", -np.pi / 2)  # rails rise along world z
    left = _chain("left", GROUND, n, turn=0.15, twist=0.2, first=Pose(up, np.zeros(3)))
    right = _chain("right", GROUND, n, start=1, turn=-0.15, twist=-0.2, first=Pose(up, np.array([0.0, 0.5, 0.0])))
    rungs = [Connect(f"left{k}", f"right{k}", _tip(0.3), name=f"rung{k}") for k in range(spacing, n + 1, spacing)]
    return _closed(left + right, rungs, f"ladder_{n}")


def digit_leg() -> Mechanism:
    """A Digit-like leg in the sagittal plane with three closed loops (four-bar rods).

    Hip, thigh, shin, tarsus and toe in series; an achilles rod from the hip
    closing on the tarsus, a knee rod from the thigh closing on the shin and a
    toe rod from the tarsus closing on the toe.  Loops are planar
    (``axes=(0, 2)``).
    """
    y = Joint("revolute", "y")
    down = 2  # rods hang along -z: use local z with negative lengths via placements

    def segment(name, parent, placement, length):
        return rod(name, parent, y, placement, length, direction=down)

    links = [
        rod("hip", GROUND, Joint("revolute", "x"), Pose(), 0.1, mass=2.0),
        segment("thigh", "hip", at(0, 0, -0.1), -0.4),
        segment("shin", "thigh", at(0, 0, -0.4), -0.4),
        segment("tarsus", "shin", at(0, 0, -0.4), -0.4),
        segment("toe", "tarsus", at(0, 0, -0.4), -0.15),
        segment("achilles_rod", "hip", at(0.06, 0, -0.1), -0.75),
        segment("knee_rod", "thigh", at(-0.05, 0, -0.05), -0.38),
        segment("toe_rod", "tarsus", at(0.05, 0, -0.05), -0.4),
    ]
    rows = (0, 2)
    cuts = [
        Connect("achilles_rod", "tarsus", at(0, 0, -0.75), axes=rows, name="achilles"),
        Connect("knee_rod", "shin", at(0, 0, -0.38), axes=rows, name="knee"),
        Connect("toe_rod", "toe", at(0, 0, -0.4), axes=rows, name="toe"),
    ]
    return _closed(links, cuts, "digit_leg")


ROTOR = Rotor(ratio=6.0, inertia=3.3e-5, mass=0.07)
"""A small geared motor's rotor: 6:1, about Mini Cheetah's (plausible values, not a datasheet's)."""


def geared_chain(n: int = 12, ratio: float = 6.0) -> Mechanism:
    """A serial chain of ``n`` rods with a geared rotor on every joint (003's serial chain with rotors): each
    rotor on its joint's parent, coaxial, ``qdd_rotor = ratio qdd_joint`` (:func:`mechanics.with_rotors`,
    :data:`ROTOR`'s inertia); ``2 n`` joints, ``n`` couplings."""
    _check_size("geared_chain", n=n, minimum=1)
    _check_length("geared_chain", ratio=ratio)
    tree = Mechanism(_chain("link", GROUND, n, turn=0.4, twist=0.3), name=f"geared_chain_{n}")
    rotor = Rotor(float(ratio), ROTOR.inertia, ROTOR.mass)
    return with_rotors(tree, {link.name: rotor for link in tree.links})


def belt_chain(n: int = 12, ratio: float = 6.0) -> Mechanism:
    """A planar chain of ``n`` rods (joints about y) whose rotors all sit at the base and drive the links
    through belts (003's belt-driven chain): a belt turns link ``k``'s absolute angle, so rotor ``k`` couples
    to every joint below it, ``qdd_rotor_k = ratio (qdd_1 + ... + qdd_k)`` -- one coupling of ``k + 1``
    joints each."""
    _check_size("belt_chain", n=n, minimum=1)
    _check_length("belt_chain", ratio=ratio)
    y = Joint("revolute", "y")
    links = [rod(f"link{k + 1}", f"link{k}" if k else GROUND, y, at(0.3 if k else 0.0), 0.3) for k in range(n)]
    inertia = Rotor(float(ratio), ROTOR.inertia).rotational_inertia((0.0, 1.0, 0.0))
    rotors = [Link(f"rotor{k + 1}", GROUND, y, at(0.0, -0.05 * (k + 1), 0.0), ROTOR.mass, np.zeros(3), inertia)
              for k in range(n)]
    belts = [Coupling((f"rotor{k + 1}", *(f"link{j + 1}" for j in range(k + 1))),
                      ([[1.0]],) + tuple([[-float(ratio)]] for _ in range(k + 1)), name=f"belt{k + 1}")
             for k in range(n)]
    return Mechanism(links + rotors, belts, name=f"belt_chain_{n}")


def mini_cheetah(contacts: bool = False) -> Mechanism:
    """A Mini-Cheetah-like quadruped (003's): a free-floating body and four legs of ab/ad (x), hip (y) and knee
    (y) joints, a geared rotor on every joint (:func:`mechanics.with_rotors`: 6:1 at ab/ad and hip, 9.33:1 at
    the knee, 6:1 and a 1.55:1 belt); feet as frames ``"FR_foot"`` ...; with ``contacts``, each foot held to the
    ground by a point contact where it stands at ``q = 0``.  Masses, lengths and inertias of the order of Mini
    Cheetah's (Katz et al. 2019): plausible values, not a datasheet's."""
    x, y = Joint("revolute", "x"), Joint("revolute", "y")
    links = [Link("body", GROUND, Joint("free"), Pose(), 3.3, np.zeros(3), np.diag([0.0113, 0.0362, 0.0427]))]
    frames, rotors = {}, {}
    for leg, (sx, sy) in {"FR": (1, -1), "FL": (1, 1), "HR": (-1, -1), "HL": (-1, 1)}.items():
        links += [Link(f"{leg}_abad", "body", x, at(0.19 * sx, 0.049 * sy, 0.0), 0.54, (0.0, 0.036 * sy, 0.0),
                       np.diag([3.8e-4, 5.6e-4, 4.4e-4])),
                  Link(f"{leg}_hip", f"{leg}_abad", y, at(0.0, 0.062 * sy, 0.0), 0.634, (0.0, 0.016 * sy, -0.02),
                       np.diag([2.0e-3, 2.1e-3, 4.1e-4])),
                  Link(f"{leg}_knee", f"{leg}_hip", y, at(0.0, 0.0, -0.209), 0.064, (0.0, 0.0, -0.061),
                       np.diag([2.5e-4, 2.5e-4, 6e-6]))]
        frames[f"{leg}_foot"] = (f"{leg}_knee", at(0.0, 0.0, -0.195))
        for joint, ratio in (("abad", 6.0), ("hip", 6.0), ("knee", 9.33)):
            rotors[f"{leg}_{joint}"] = Rotor(ratio, 3.3e-5, 0.055, 1.8e-5)
    mech = with_rotors(Mechanism(links, name="mini_cheetah", frames=frames), rotors)
    if not contacts:
        return mech
    feet = [Connect(f"{leg}_foot", GROUND, name=f"{leg}_foot") for leg in ("FR", "FL", "HR", "HL")]
    return mech.with_constraints(list(mech.constraints) + feet).anchored(mech.neutral_configuration())


def tello_leg(ratio: float = 6.0) -> Mechanism:
    """A Tello-like humanoid leg (003/004's): hip yaw (z), hip roll (x), hip pitch (y), knee (y), ankle pitch
    (y) and ankle roll (x), each link named by its joint; geared rotors on the hip yaw and the knee, and two
    differentials of two rotors each: the hip's on the hip-yaw link, ``qdd_a = N (qdd_pitch + qdd_roll)``,
    ``qdd_b = N (qdd_pitch - qdd_roll)``, the ankle's on the shin likewise.  Plausible masses and lengths (a
    0.9 m leg), not Tello's."""
    _check_length("tello_leg", ratio=ratio)
    x, y, z = (Joint("revolute", axis) for axis in "xyz")
    N = float(ratio)
    spin = Rotor(N, ROTOR.inertia, ROTOR.mass).rotational_inertia

    def rotor(name, parent, axis, placement):
        joint = Joint("revolute", axis)
        return Link(name, parent, joint, placement, ROTOR.mass, np.zeros(3), spin(joint.axis))

    links = [
        rotor("hip_yaw_rotor", GROUND, "z", at(0.0, 0.0, 0.05)),
        rod("hip_yaw", GROUND, z, Pose(), -0.06, mass=1.0, direction=2),
        rotor("hip_rotor_a", "hip_yaw", "y", at(0.0, 0.06, -0.06)),
        rotor("hip_rotor_b", "hip_yaw", "y", at(0.0, -0.06, -0.06)),
        rod("hip_roll", "hip_yaw", x, at(0.0, 0.0, -0.06), -0.06, mass=0.5, direction=2),
        rod("hip_pitch", "hip_roll", y, at(0.0, 0.0, -0.06), -0.4, mass=2.0, direction=2),
        rotor("knee_rotor", "hip_pitch", "y", at(0.0, 0.05, -0.1)),
        rod("knee", "hip_pitch", y, at(0.0, 0.0, -0.4), -0.4, mass=1.0, direction=2),
        rotor("ankle_rotor_a", "knee", "y", at(0.0, 0.05, -0.05)),
        rotor("ankle_rotor_b", "knee", "y", at(0.0, -0.05, -0.05)),
        rod("ankle_pitch", "knee", y, at(0.0, 0.0, -0.4), -0.03, mass=0.1, direction=2),
        rod("ankle_roll", "ankle_pitch", x, at(0.0, 0.0, -0.03), -0.05, mass=0.4, direction=2),
    ]

    def differential(a, b, roll, pitch, name):
        return Coupling((a, b, roll, pitch), ([[1.0], [0.0]], [[0.0], [1.0]], [[-N], [N]], [[-N], [-N]]), name=name)

    couplings = [Coupling.gear("hip_yaw_rotor", "hip_yaw", N, name="hip_yaw:gear"),
                 differential("hip_rotor_a", "hip_rotor_b", "hip_roll", "hip_pitch", "hip:differential"),
                 Coupling.gear("knee_rotor", "knee", N, name="knee:gear"),
                 differential("ankle_rotor_a", "ankle_rotor_b", "ankle_roll", "ankle_pitch", "ankle:differential")]
    return Mechanism(links, couplings, name="tello_leg", frames={"sole": ("ankle_roll", at(0.0, 0.0, -0.05))})


def humanoid_leg(ratio: float = 6.0) -> Mechanism:
    """An MIT-Humanoid-like leg (003's belt-driven leg): hip yaw (z), hip roll (x), hip pitch (y), knee (y) and
    ankle (y) below a fixed pelvis, each link named by its joint; geared rotors on the three hip joints
    (:func:`mechanics.with_rotors`), and the knee's and ankle's rotors on the thigh, near the hip, driving
    their joints through belts: the knee's turns the shin, ``qdd_knee_rotor = N qdd_knee``, the ankle's runs
    over the knee and turns the foot's angle, ``qdd_ankle_rotor = N (qdd_knee + qdd_ankle)`` -- one cluster of
    the four (003 Fig. 2's).  ``N = ratio``; plausible masses and lengths (a 0.55 m leg), not the MIT
    Humanoid's."""
    _check_length("humanoid_leg", ratio=ratio)
    x, y, z = (Joint("revolute", axis) for axis in "xyz")
    N = float(ratio)
    spin = Rotor(N, ROTOR.inertia, ROTOR.mass).rotational_inertia((0.0, 1.0, 0.0))
    links = [
        rod("hip_yaw", GROUND, z, Pose(), -0.05, mass=0.8, direction=2),
        rod("hip_roll", "hip_yaw", x, at(0.0, 0.0, -0.05), -0.05, mass=0.9, direction=2),
        rod("hip_pitch", "hip_roll", y, at(0.0, 0.0, -0.05), -0.26, mass=1.6, direction=2),
        Link("knee_rotor", "hip_pitch", y, at(0.0, 0.06, -0.03), ROTOR.mass, np.zeros(3), spin),
        Link("ankle_rotor", "hip_pitch", y, at(0.0, -0.06, -0.03), ROTOR.mass, np.zeros(3), spin),
        rod("knee", "hip_pitch", y, at(0.0, 0.0, -0.26), -0.26, mass=0.5, direction=2),
        rod("ankle", "knee", y, at(0.0, 0.0, -0.26), 0.1, mass=0.3),
    ]
    belts = [Coupling(("knee_rotor", "knee"), ([[1.0]], [[-N]]), name="knee:belt"),
             Coupling(("ankle_rotor", "knee", "ankle"), ([[1.0]], [[-N]], [[-N]]), name="ankle:belt")]
    leg = Mechanism(links, belts, name="humanoid_leg", frames={"sole": ("ankle", at(0.05, 0.0, -0.02))})
    rotor = Rotor(N, ROTOR.inertia, ROTOR.mass)
    return with_rotors(leg, {"hip_yaw": rotor, "hip_roll": rotor, "hip_pitch": rotor}, name="humanoid_leg")


def four_bar_arm(upper: float = 0.3, fore: float = 0.25, crank: float = 0.06) -> Mechanism:
    """A planar arm (joints about y, gravity along -z) whose elbow is driven from the shoulder through a
    parallelogram four-bar (004's four-bar-driven arm): the shoulder turns the upper arm; a crank on the
    shoulder's axis, turned by its own geared motor there, drives a coupler rod parallel to the upper arm that
    closes on the forearm ``crank`` above the elbow -- a loop of four joints off the ground, embedded as one
    cluster with the crank's rotor (``y``: the shoulder and the crank).  Plausible masses and lengths."""
    for name, length in (("upper", upper), ("fore", fore), ("crank", crank)):
        _check_length("four_bar_arm", **{name: length})
    y = Joint("revolute", "y")
    up = rotation_about("y", -np.pi / 2)  # (a rod's x turned to +z)
    links = [
        rod("upper_arm", GROUND, y, Pose(), upper, mass=1.2),
        rod("forearm", "upper_arm", y, at(upper, 0.0, 0.0), fore, mass=0.8),
        rod("crank", GROUND, y, Pose(up, np.zeros(3)), crank, mass=0.1),
        rod("coupler", "crank", y, Pose(up.T, np.array([crank, 0.0, 0.0])), upper, mass=0.15),
    ]
    loop = Connect("coupler", "forearm", _tip(upper), axes=(0, 2), name="elbow_drive")
    arm = _closed(links, [loop], "four_bar_arm")
    return with_rotors(arm, {"crank": ROTOR, "upper_arm": ROTOR}, name="four_bar_arm")


def _check_size(model: str, minimum: int, **size) -> None:
    (name, value), = size.items()
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{model}: {name} must be an int >= {minimum}, got {value!r}")


def _check_length(model: str, positive: bool = True, **size) -> None:
    """A length must be a finite number, above zero where ``positive`` (an angle may have any sign)."""
    (name, value), = size.items()
    real = not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
    if not real or not np.isfinite(value) or (positive and value <= 0):
        allowed = "a finite number > 0" if positive else "a finite number"
        raise ValueError(f"{model}: {name} must be {allowed}, got {value!r}")


MODELS = {
    "fig4": fig4,
    "four_bar": four_bar,
    "cycle": cycle,
    "chain_of_loops": chain_of_loops,
    "worst_case": worst_case,
    "branching": branching,
    "serial_chain": serial_chain,
    "ladder": ladder,
    "digit_leg": digit_leg,
    "geared_chain": geared_chain,
    "belt_chain": belt_chain,
    "mini_cheetah": mini_cheetah,
    "tello_leg": tello_leg,
    "humanoid_leg": humanoid_leg,
    "four_bar_arm": four_bar_arm,
}
