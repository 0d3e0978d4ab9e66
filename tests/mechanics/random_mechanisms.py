"""Random mechanisms for property tests: random trees, joints, inertias (an armature on some joints) and
constraints."""
from __future__ import annotations

import warnings

import numpy as np
from hypothesis import strategies as st

from mechanics import GROUND, Connect, IncompatibleConstraintsWarning, Joint, Link, Mechanism, Pose, Weld
from mechanics.spatial import quaternion_matrix

KINDS = ["revolute", "revolute", "prismatic", "spherical", "revolute_unbounded", "planar", "free"]


def _rotation(rng) -> np.ndarray:
    quat = rng.normal(size=4)
    return quaternion_matrix(quat / np.linalg.norm(quat))


def _pose(rng) -> Pose:
    return Pose(_rotation(rng), rng.uniform(-0.3, 0.3, 3))


@st.composite
def mechanisms(draw, max_links: int = 7, max_constraints: int = 3, full_axes: bool = True, min_constraints: int = 0):
    """A random mechanism (numbers from a drawn seed)."""
    n = draw(st.integers(1, max_links))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    links = []
    for i in range(n):
        parent = draw(st.sampled_from([GROUND] + [f"l{j}" for j in range(i)]))
        kind = draw(st.sampled_from(KINDS))
        axis = None
        if kind in ("revolute", "prismatic", "revolute_unbounded"):
            # Pinocchio's Python bindings cannot build an unbounded joint on an arbitrary axis
            axis = draw(st.sampled_from(["x", "y", "z"] + (["random"] if kind != "revolute_unbounded" else [])))
            axis = tuple(rng.normal(size=3)) if axis == "random" else axis
        M = rng.normal(size=(3, 3))
        joint = Joint(kind, axis)
        armature = rng.uniform(0.0, 0.05, joint.nv) if rng.uniform() < 0.3 else None  # (a motor's, Pinocchio's)
        links.append(Link(f"l{i}", parent, joint, _pose(rng), rng.uniform(0.2, 2.0),
                          rng.uniform(-0.1, 0.1, 3), M @ M.T * 0.01 + 0.01 * np.eye(3), armature))
    links = _depth_first(links)
    constraints = []
    names = [l.name for l in links]
    for j in range(draw(st.integers(min_constraints, max_constraints))):
        a = draw(st.sampled_from(names))
        b = draw(st.sampled_from([GROUND] + [x for x in names if x != a]))
        cls = draw(st.sampled_from([Connect, Weld]))
        axes = None if full_axes else draw(st.sampled_from([None, (0,), (0, 2)]))
        constraints.append(cls(a, b, _pose(rng), _pose(rng), axes, f"c{j}"))
    with warnings.catch_warnings():  # (frames drawn anywhere: two to the ground on one link rarely agree in position;
        warnings.simplefilter("ignore", IncompatibleConstraintsWarning)  # the tests here are at acceleration level)
        return Mechanism(links, constraints, name="random")


def _depth_first(links: list) -> list:
    """Depth-first order: Pinocchio's crba and constraintDynamics assume contiguous subtrees in v
    (with a sibling between a parent and its child, crba silently drops their coupling)."""
    children = {}
    for link in links:
        children.setdefault(link.parent, []).append(link)
    ordered, stack = [], list(reversed(children.get(GROUND, [])))
    while stack:
        link = stack.pop()
        ordered.append(link)
        stack.extend(reversed(children.get(link.name, [])))
    return ordered


def random_state(mech: Mechanism, rng: np.random.Generator, batch: tuple = ()):
    return mech.random_configuration(rng, batch), rng.normal(size=batch + (mech.nv,)), rng.normal(size=batch + (mech.nv,))


@st.composite
def closed_loops(draw, max_links: int = 6, max_loops: int = 2):
    """``(mechanism, q)``: a random tree (every joint kind) with one to ``max_loops`` Welds / Connects between two
    of its links, each closed at the random configuration ``q`` by construction (both ends at one world frame
    drawn near them) -- local loops, redundant and rigid ones among them; optionally a loop twice."""
    base = draw(mechanisms(max_links=max_links, max_constraints=0))
    names = [l.name for l in base.links]
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    q = base.random_configuration(rng)
    from mechanics.kinematics import kinematics

    kin = kinematics(base, q, np.zeros(base.nv))
    loops = []
    for j in range(draw(st.integers(1, max_loops))):
        a, b = draw(st.permutations(names))[:2] if len(names) > 1 else (names[0], GROUND)
        R, p = _rotation(rng), kin.position[a] + rng.uniform(-0.3, 0.3, 3)  # the frame both ends meet at
        ends = []
        for link in (a, b):
            Rl, pl = (np.eye(3), np.zeros(3)) if link == GROUND else (kin.rotation[link], kin.position[link])
            ends.append(Pose(Rl.T @ R, Rl.T @ (p - pl)))
        loops.append(draw(st.sampled_from([Connect, Weld]))(a, b, ends[0], ends[1], None, f"c{j}"))
    if draw(st.booleans()):
        first = loops[0]
        loops.append(type(first)(first.link1, first.link2, first.placement1, first.placement2, None, "c_again"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IncompatibleConstraintsWarning)
        return Mechanism(list(base.links), loops, name="random"), q
