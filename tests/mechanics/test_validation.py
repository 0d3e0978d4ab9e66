"""Validation at the boundary: bad input raises a TypeError / ValueError that names the argument.

Expected values come from Pinocchio (``aba`` on a normalised quaternion) or from
the same call with well-formed input (numpy scalars must change nothing).
"""
import numpy as np
import pinocchio as pin
import pytest

import elimination
import mechanics
from mechanics import GROUND, Joint, Link, Mechanism, models
from tests.mechanics.pinocchio_oracle import pinocchio_model_of
from tests.mechanics.random_mechanisms import random_state


def floating_arm():
    """A free-flying base with a spherical shoulder and an unbounded elbow: every unit-norm part of q."""
    links = [Link("base", GROUND, Joint("free")),
             Link("shoulder", "base", Joint("spherical"), mechanics.at(0.2)),
             Link("elbow", "shoulder", Joint("revolute_unbounded", "y"), mechanics.at(0.4))]
    return Mechanism(links, name="floating_arm")


def state(mech, seed=0):
    rng = np.random.default_rng(seed)
    return mech.random_configuration(rng), rng.normal(size=mech.nv), rng.normal(size=mech.nv)


# -- unit-norm parts of q ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "columns, link, scale",
    [
        (slice(3, 7), "base", 2.0),  # free-flyer quaternion of norm 2
        (slice(3, 7), "base", 0.0),  # norm 0: no rotation at all
        (slice(7, 11), "shoulder", 0.5),  # spherical joint
        (slice(11, 13), "elbow", 0.0),  # (cos, sin) pair
    ],
)
def test_a_unit_part_of_q_far_from_unit_norm_is_refused_naming_the_link(columns, link, scale):
    mech = floating_arm()
    q, v, tau = state(mech)
    q[columns] *= scale
    with pytest.raises(ValueError, match=rf"link '{link}'.*has norm {scale:g}\b.*unit norm"):
        mechanics.forward_dynamics(mech, q, v, tau, algorithm="aba")
    with pytest.raises(ValueError, match=rf"link '{link}'.*has norm {scale:g}\b.*unit norm"):
        mechanics.prepare(mech, "aba")(q, v, tau)  # one state straight to the kernel, which refuses it
    with pytest.raises(ValueError, match=f"link '{link}'"):
        mechanics.gplc_graph(mech, q, v, tau)


def test_a_bad_quaternion_in_a_batch_is_located():
    mech = floating_arm()
    Q, V, T = random_state(mech, np.random.default_rng(1), (3,))
    Q[2, 3:7] *= 3.0
    with pytest.raises(ValueError, match=r"link 'base'.*norm 3 at batch index \(2,\)"):
        mechanics.forward_dynamics(mech, Q, V, T, algorithm="aba")
    with pytest.raises(ValueError, match="link 'base'"):
        mechanics.delassus(mech, Q)


def test_a_nearly_unit_quaternion_is_normalised_as_pinocchio_expects():
    """Within |norm^2 - 1| <= 1e-4 the part is normalised: the result is Pinocchio's aba on the unit quaternion."""
    mech = floating_arm()
    q, v, tau = state(mech, 2)
    model, _ = pinocchio_model_of(mech)
    expected = pin.aba(model, model.createData(), q, v, tau)
    drifted = q.copy()
    drifted[3:7] *= 1.0 + 4e-5
    drifted[7:11] *= 1.0 - 4e-5
    drifted[11:13] *= 1.0 + 4e-5
    result = mechanics.forward_dynamics(mech, drifted, v, tau, algorithm="aba")
    assert np.allclose(result.qdd, expected, rtol=1e-10, atol=1e-10)
    assert np.isclose(np.linalg.norm(drifted[3:7]), 1.0 + 4e-5)  # the caller's array is not touched


def test_a_drifted_quaternion_gives_the_same_bits_alone_and_in_a_batch():
    """One state and a batch are normalised in one place: a batch element equals its unbatched call bit for
    bit, and both backends agree to round-off."""
    mech = floating_arm()
    Q, V, T = random_state(mech, np.random.default_rng(6), (3,))
    Q[:, 3:7] *= 1.0 + np.array([4e-5, -3e-5, 1e-6])[:, None]
    Q[:, 11:13] *= 1.0 - 2e-5
    prepared = mechanics.prepare(mech, "aba")
    batched = prepared(Q, V, T)
    reference = mechanics.prepare(mech, "aba", backend="numpy")(Q, V, T)
    assert np.allclose(batched.qdd, reference.qdd, rtol=1e-12, atol=1e-12)
    for i in range(3):
        assert np.array_equal(prepared(Q[i], V[i], T[i]).qdd, batched.qdd[i])
        assert np.array_equal(mechanics.forward_dynamics(mech, Q[i], V[i], T[i], algorithm="aba").qdd, batched.qdd[i])


# -- complex and non-numeric input ------------------------------------------------------------------------
@pytest.mark.parametrize("argument", ["q", "v", "tau", "forces0"])
def test_complex_input_is_refused_naming_the_argument(argument):
    mech = models.four_bar()
    q, v, tau = state(mech)
    kwargs = {"q": q, "v": v, "tau": tau, "forces0": np.zeros(mech.constraint_dim)}
    kwargs[argument] = kwargs[argument] + 0j  # even a zero imaginary part: numpy's cast would hide a real one
    with pytest.raises(TypeError, match=f"^{argument} is complex"):
        mechanics.forward_dynamics(mech, algorithm="proxbbo", **kwargs)


def test_complex_multipliers_of_gplc_graph_are_refused():
    mech = models.four_bar()
    with pytest.raises(TypeError, match="^lam is complex"):
        mechanics.gplc_graph(mech, *state(mech), lam=np.zeros(mech.constraint_dim) * 1j)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mu": "big"}, r"^mu must be a real number.*got str 'big'"),
        ({"mu": True}, r"^mu must be a real number"),
        ({"mu": None}, r"^mu must be a real number"),
        ({"tol": "1e-10"}, r"^tol must be a real number"),
        ({"max_iter": 2.5}, r"^max_iter must be an int.*got float 2.5"),
        ({"max_iter": np.float64(50)}, r"^max_iter must be an int"),
        ({"algorithm": 3}, r"^algorithm must be a name"),
        ({"q": None}, r"^q must be a numeric array"),
        ({"v": "fast"}, r"^v must be a numeric array"),
        ({"forces0": "none"}, r"^forces0 must be a numeric array"),
    ],
)
def test_wrong_argument_types_are_type_errors_naming_the_argument(kwargs, message):
    mech = models.four_bar()
    q, v, tau = state(mech)
    call = {"q": q, "v": v, "tau": tau, **kwargs}
    with pytest.raises(TypeError, match=message):
        mechanics.forward_dynamics(mech, call.pop("q"), call.pop("v"), call.pop("tau"), **call)


def test_a_mechanism_that_is_not_one_is_named():
    with pytest.raises(TypeError, match="^mechanism must be a mechanics.Mechanism, got dict"):
        mechanics.forward_dynamics({"links": []}, np.zeros(1), np.zeros(1), np.zeros(1))
    with pytest.raises(TypeError, match="^mechanism must be"):
        mechanics.algorithm_plan("fig4", "lcaba")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"mu": 0.0}, r"^mu must be a finite number > 0"),
        ({"mu": np.float32("nan")}, r"^mu must be a finite number > 0"),
        ({"tol": -1e-10}, r"^tol must be a finite number > 0"),
        ({"max_iter": 0}, r"^max_iter must be an int >= 1"),
    ],
)
def test_wrong_values_are_value_errors(kwargs, message):
    mech = models.four_bar()
    with pytest.raises(ValueError, match=message):
        mechanics.forward_dynamics(mech, *state(mech), **kwargs)


def test_the_state_is_named_before_the_settings():
    mech = models.four_bar()
    q, v, tau = state(mech)
    v[1] = np.nan
    with pytest.raises(ValueError, match=r"^v contains NaN or inf at index \(1,\)"):
        mechanics.forward_dynamics(mech, q, v, tau, mu=0.0)
    with pytest.raises(ValueError, match=r"^v contains NaN or inf at index \(1,\)"):
        mechanics.prepare(mech)(q, v, tau)
    with pytest.raises(TypeError, match=r"^q is complex"):
        mechanics.forward_dynamics(mech, q.astype(complex), v, tau, algorithm=3)


# -- numpy scalars -----------------------------------------------------------------------------------------
def test_numpy_scalars_are_accepted_for_mu_tol_and_max_iter():
    mech = models.fig4()
    q, v, tau = state(mech, 3)
    for algorithm in ("proxbbo", "lcaba"):
        plain = mechanics.forward_dynamics(mech, q, v, tau, algorithm=algorithm, mu=1e6, tol=1e-10, max_iter=50)
        numpy = mechanics.forward_dynamics(mech, q, v, tau, algorithm=algorithm, mu=np.float32(1e6),
                                           tol=np.float64(1e-10), max_iter=np.int64(50))
        # float32(1e6) is exactly 1e6, so the run is the same one
        assert np.array_equal(plain.qdd, numpy.qdd) and plain.iterations == numpy.iterations
        assert mechanics.gplc_graph(mech, q, v, tau, mu=np.int32(1000)) is not None


# -- batch shapes -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "batches, message",
    [
        (((2,), (3,), (3,)), r"^q has batch shape \(2,\) but v has \(3,\): the leading \(batch\) dimensions of q, v, tau"),
        (((), (4,), (2,)), r"^v has batch shape \(4,\) but tau has \(2,\)"),
        (((2, 3), (3,), (2, 1)), None),  # broadcasts: accepted
    ],
)
def test_batch_mismatches_between_q_v_and_tau_are_named(batches, message):
    mech = models.four_bar()
    rng = np.random.default_rng(4)
    q = mech.random_configuration(rng, batches[0])
    v, tau = rng.normal(size=batches[1] + (mech.nv,)), rng.normal(size=batches[2] + (mech.nv,))
    if message is None:
        result = mechanics.forward_dynamics(mech, q, v, tau, algorithm="proxbbo")
        assert result.qdd.shape == (2, 3, mech.nv) and result.converged.shape == (2, 3)
        return
    with pytest.raises(ValueError, match=message):
        mechanics.forward_dynamics(mech, q, v, tau, algorithm="proxbbo")


def test_a_warm_start_whose_batch_does_not_fit_is_named():
    mech = models.four_bar()
    rng = np.random.default_rng(5)
    q, v, tau = mech.random_configuration(rng, (2,)), rng.normal(size=(2, mech.nv)), rng.normal(size=mech.nv)
    with pytest.raises(ValueError, match=r"^q has batch shape \(2,\) but forces0 has \(3,\)"):
        mechanics.forward_dynamics(mech, q, v, tau, forces0=np.zeros((3, mech.constraint_dim)))
    with pytest.raises(ValueError, match=rf"^forces0 must be a finite array of shape \(\.\.\., {mech.constraint_dim}\)"):
        mechanics.forward_dynamics(mech, q, v, tau, forces0=np.zeros(mech.constraint_dim + 1))


def test_the_state_arrays_are_not_modified():
    mech = floating_arm()
    q, v, tau = state(mech, 6)
    q[3:7] *= 1.0 + 3e-5
    copies = [a.copy() for a in (q, v, tau)]
    mechanics.forward_dynamics(mech, q, v, tau, algorithm="aba")
    assert all(np.array_equal(a, b) for a, b in zip((q, v, tau), copies))


# -- dependent constraints under the hard policy: redundant or contradictory ---------------------------------
def _four_bar_with_the_crank_held_twice(k_first: float, k_second: float):
    """The four-bar plus two General rows on the crank's angular acceleration about z: ``a_z = k``, twice."""
    mech = models.four_bar()
    K = np.zeros((1, 6))
    K[0, 2] = 1.0
    held = [mechanics.General(("crank",), (K,), [k_first], name="first"),
            mechanics.General(("crank",), (K,), [k_second], name="second")]
    return mech.with_constraints(list(mech.constraints) + held)


@pytest.mark.parametrize("backend", ["auto", "numpy"])
def test_contradictory_general_rows_are_inconsistent_not_redundant(backend):
    """Two rows that hold one acceleration at 0 and at 1: no motion meets both, and the error says so."""
    mech = _four_bar_with_the_crank_held_twice(0.0, 1.0)
    q, v, tau = state(mech)
    with pytest.raises(elimination.SingularProblemError) as error:
        mechanics.forward_dynamics(mech, q, v, tau, algorithm="pv", backend=backend)
    assert error.value.kind == "inconsistent"
    assert "contradict each other" in str(error.value) and "redundant" not in str(error.value)
    assert "[Multiplier('first'), Multiplier('second')]" in str(error.value)  # the loop is not involved


@pytest.mark.parametrize("backend", ["auto", "numpy"])
def test_the_same_general_row_twice_is_redundant_and_points_to_prox(backend):
    mech = _four_bar_with_the_crank_held_twice(0.5, 0.5)
    q, v, tau = state(mech)
    with pytest.raises(elimination.SingularProblemError) as error:
        mechanics.forward_dynamics(mech, q, v, tau, algorithm="pv", backend=backend)
    assert error.value.kind == "singular" and "linearly dependent" in str(error.value)
    assert "contradict each other" not in str(error.value) and "use a prox algorithm" in str(error.value)
    message = str(error.value)
    assert ". The hard policy" in message and "constraints The" not in message  # sentences joined by full stops


# -- sizes of the built-in models ----------------------------------------------------------------------------
@pytest.mark.parametrize("length", ["crank", "coupler", "rocker", "base"])
@pytest.mark.parametrize("value", [-1.0, 0.0, float("nan")])
def test_a_length_of_the_four_bar_that_is_not_positive_is_refused_naming_it(length, value):
    with pytest.raises(ValueError, match=rf"four_bar: {length} must be a finite number > 0, got {value!r}"):
        models.four_bar(**{length: value})
