"""The SDF reader, on Cassie's closed loops (cassie_v2.sdf) and on bad files."""
import numpy as np
import pinocchio as pin
import pytest
import scipy.linalg

import elimination
import mechanics
from mechanics.pinocchio_io import example_robot_data_dir
from mechanics.sdf import load_sdf
from tests.mechanics.pinocchio_oracle import ALM_MU, constraint_dynamics, constraint_jacobian, dense_reference, pinocchio_model_of

CASSIE = example_robot_data_dir() / "cassie_description/robots/cassie_v2.sdf"


def relative(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


@pytest.fixture(scope="module")
def cassie():
    mech = load_sdf(CASSIE)
    model, cms = pinocchio_model_of(mech)
    q = mech.neutral_configuration()  # the file's pose: every loop closed
    J = constraint_jacobian(model, model.createData(), cms, q)
    N = scipy.linalg.null_space(J, rcond=1e-9)
    v = N @ np.random.default_rng(0).normal(size=N.shape[1])
    tau = np.random.default_rng(1).normal(size=mech.nv)
    return mech, model, cms, q, v, tau, J


def test_cassie_structure(cassie):
    mech, model, cms, q, v, tau, J = cassie
    assert (len(mech.links), mech.nv, len(mech.constraints)) == (23, 28, 4)
    assert {c.name for c in mech.constraints} == {"left-pitch-rod-joint", "right-pitch-rod-joint",
                                                  "left-plantar-foot-joint", "right-plantar-foot-joint"}
    assert np.linalg.matrix_rank(J, tol=1e-9) == 10  # two rows are vacuous at the closed pose: redundant
    assert np.max(np.abs(J @ v)) < 1e-12


def test_cassie_tree_equals_pinocchio_aba(cassie):
    mech, model, cms, q, v, tau, J = cassie
    expected = pin.aba(model, model.createData(), q, v, tau)
    assert relative(mechanics.forward_dynamics(mech.without_constraints(), q, v, tau, algorithm="aba").qdd, expected) < 1e-9


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_cassie_inverse_dynamics_equals_pinocchio_rnea(cassie, backend):
    """Inverse dynamics of Cassie's tree (read from SDF: the loops' links and the rods' joints as the file states
    them) against Pinocchio's ``rnea`` of the same model, at its closed pose and at random ones, one state and a
    batch."""
    mech, model, *_ = cassie
    rng = np.random.default_rng(5)
    q = np.concatenate([mech.neutral_configuration()[None], mech.random_configuration(rng, (3,))])
    v, qdd = rng.normal(size=(4, mech.nv)), rng.normal(size=(4, mech.nv))
    expected = np.stack([pin.rnea(model, model.createData(), *state) for state in zip(q, v, qdd)])
    batch = mechanics.inverse_dynamics(mech, q, v, qdd, backend=backend)
    assert relative(batch, expected) < 1e-12
    assert relative(mechanics.inverse_dynamics(mech, q[2], v[2], qdd[2], backend=backend), expected[2]) < 1e-12


@pytest.mark.parametrize("algorithm", ["proxpv", "proxbbo", "lcaba", "proxltl", "min_degree", "min_fill"])
def test_cassie_closed_loops_equal_the_pinocchio_reference(cassie, algorithm):
    mech, model, cms, q, v, tau, J = cassie
    ddq, forces = dense_reference(model, cms, q, v, tau)
    ddq_pin, _, _ = constraint_dynamics(model, cms, q, v, tau)
    assert relative(ddq, ddq_pin) < 1e-10  # the oracle agrees with Pinocchio's own solver here
    # ALM's forces are lambda + mu (K a - k): their round-off grows with mu (000 Fig. 11; J'forces off
    # by 1.5e-8 at mu=1e6, 3e-10 at 1e4), so the penalty policy runs at the mu of the Pinocchio tests.
    mu = ALM_MU if algorithm == "lcaba" else 1e6
    result = mechanics.forward_dynamics(mech, q, v, tau, algorithm=algorithm, mu=mu, tol=1e-12, max_iter=100)
    assert relative(result.qdd, ddq) < 1e-9
    assert relative(J.T @ result.forces, J.T @ forces) < 1e-8


def test_cassie_hard_policy_refuses_the_redundant_loops(cassie):
    mech, model, cms, q, v, tau, J = cassie
    with pytest.raises(elimination.SingularProblemError, match="prox"):
        mechanics.forward_dynamics(mech, q, v, tau, algorithm="pv")


FOUR_BAR = """<sdf version="1.6"><model name="bar">
  <link name="crank"><pose>0 0 0 0 0 0</pose><inertial><mass>1</mass><inertia><ixx>0.01</ixx><iyy>0.01</iyy><izz>0.01</izz></inertia></inertial></link>
  <link name="rod"><pose>1 0 0 0 0 0</pose><inertial><pose>0.5 0 0 0 0 0</pose><mass>1</mass><inertia><ixx>0.01</ixx><iyy>0.1</iyy><izz>0.1</izz></inertia></inertial></link>
  <joint name="j1" type="revolute"><parent>world</parent><child>crank</child><axis><xyz>0 0 1</xyz></axis></joint>
  <joint name="j2" type="{kind}"><parent>crank</parent><child>rod</child><axis><xyz>0 1 0</xyz></axis></joint>
  <joint name="loop" type="ball"><pose>1 0 0 0 0 0</pose><parent>{parent}</parent><child>rod</child></joint>
</model></sdf>"""


def test_a_small_sdf_reads_as_the_same_mechanism_built_by_hand(tmp_path):
    path = tmp_path / "bar.sdf"
    path.write_text(FOUR_BAR.format(kind="revolute", parent="world"))
    mech = load_sdf(path)
    assert [l.name for l in mech.links] == ["crank", "rod"] and mech.parent("rod") == "crank"
    assert mech.link("rod").joint.axis == (0.0, 1.0, 0.0)
    assert np.allclose(mech.link("rod").placement.translation, [1, 0, 0]) and np.allclose(mech.link("rod").com, [0.5, 0, 0])
    loop = mech.constraints[0]
    assert (loop.link1, loop.link2) == ("rod", mechanics.GROUND)
    assert np.allclose(loop.placement2.translation, [2, 0, 0])  # the ball joint's world position


@pytest.mark.parametrize(
    "kind, parent, message",
    [("screw", "world", "unsupported type 'screw'"), ("revolute", "nowhere", "unknown link 'nowhere'")],
)
def test_bad_sdf_files_are_refused(tmp_path, kind, parent, message):
    path = tmp_path / "bad.sdf"
    path.write_text(FOUR_BAR.format(kind=kind, parent=parent))
    with pytest.raises(ValueError, match=message):
        load_sdf(path)
    with pytest.raises(FileNotFoundError, match="no such SDF"):
        load_sdf(tmp_path / "missing.sdf")


def _edited(old: str, new: str, kind="revolute", parent="world") -> str:
    text = FOUR_BAR.format(kind=kind, parent=parent)
    assert old in text
    return text.replace(old, new)


@pytest.mark.parametrize(
    "text, message",
    [
        (FOUR_BAR.format(kind="revolute", parent="world").replace("</link>", "</lnk>", 1),
         r"bad\.sdf: not well-formed XML \(mismatched tag: line 2"),
        (_edited("<xyz>0 1 0</xyz>", "<xyz>0 1 w</xyz>"), r"joint 'j2' <axis><xyz>: expected 3 numbers .*'0 1 w'"),
        (_edited("<xyz>0 1 0</xyz>", "<xyz>0 0 0</xyz>"), r"joint 'j2' <axis><xyz>: revolute joint axis must be a nonzero"),
        (_edited("<pose>1 0 0 0 0 0</pose><inertial>", '<pose relative_to="crank">1 0 0 0 0 0</pose><inertial>'),
         r"link 'rod': <pose relative_to='crank'> \(SDF 1.7 frame semantics\) is not supported"),
        (_edited("<mass>1</mass>", "<mass>one</mass>"), r"link 'crank' <inertial><mass>: expected 1 numbers"),
        (_edited("</model>", '<include><uri>model://foot</uri></include></model>'), r"<include> inside <model>.*inline"),
        (_edited("<parent>world</parent><child>crank</child>", "<parent>rod</parent><child>crank</child>"),
         r"the tree joints between links \['crank', 'rod'\] form a closed loop.*cut joint"),
    ],
)
def test_sdf_errors_name_the_file_the_element_and_the_fix(tmp_path, text, message):
    """What used to be a traceback, a silently misplaced link or an empty mechanism."""
    path = tmp_path / "bad.sdf"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as error:
        load_sdf(path)
    assert str(path) in str(error.value)


@pytest.mark.parametrize("seed", [0, 19])
def test_cassies_suspect_re_solves_are_verified_only_where_the_iterate_may_be_the_answer(cassie, seed):
    """Cassie under LCABA (mu = 1e6) at a random base pose: its pivots lose ten digits (pivot ratio < 1e-10,
    suspect), so the first solve is verified at once; each re-solve takes its one refinement step from the last
    iterate, and its verification (steps until they settle) waits until the iterate may be the answer -- at
    most once a call, where every re-solve used to verify.  Read on the numpy path's record of its solves
    (``PreparedDynamics.last_run``); the compiled kernel takes the same iterations, and both answer as the
    dense KKT solve."""
    mech, model, cms, q0, *_ = cassie
    rng = np.random.default_rng(seed)
    q = q0.copy()
    q[:3], quaternion = rng.uniform(-1.0, 1.0, 3), rng.normal(size=4)
    q[3:7] = quaternion / np.linalg.norm(quaternion)
    q[7:] += rng.normal(scale=0.1, size=q.size - 7)
    v, tau = rng.normal(size=mech.nv), rng.normal(size=mech.nv)
    prepared = mechanics.prepare(mech, "lcaba", backend="numpy")
    ref = prepared(q, v, tau)
    assert ref.converged and ref.iterations >= 3
    solves = prepared.last_run.solves
    verifying = [purpose for purpose, work in solves if work.verifications]
    assert solves[0][0] == "first" and solves[0][1].verifications  # the first solve verified at once
    assert verifying[1:] in ([], ["finish"])  # then at most once, where the iterate may be the answer
    assert all(work.refinements == 1 for purpose, work in solves if purpose == "re-solve")  # (its steps alone)
    got = mechanics.forward_dynamics(mech, q, v, tau, algorithm="lcaba", backend="numba")
    assert got.iterations == ref.iterations and relative(got.qdd, ref.qdd) < 1e-11
    ddq, _ = dense_reference(model, cms, q, v, tau)
    assert relative(ref.qdd, ddq) < 1e-10 and relative(got.qdd, ddq) < 1e-10
