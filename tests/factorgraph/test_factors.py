"""Factor construction and validation."""
import numpy as np
import pytest

from factorgraph import LeastSquares, LinearEquality, Quadratic, Variable


def test_least_squares_is_the_normal_equations_of_its_jacobian():
    rng = np.random.default_rng(0)
    A0, A1, b = rng.normal(size=(4, 2)), rng.normal(size=(4, 3)), rng.normal(size=4)
    M = rng.normal(size=(4, 4))
    W = M @ M.T
    f = LeastSquares(["a", "c"], [A0, A1], b, weight=W)
    A = np.hstack([A0, A1])
    assert np.allclose(f.H, A.T @ W @ A) and np.allclose(f.g, A.T @ W @ b)
    assert isinstance(f, Quadratic) and f.keys == ("a", "c")
    scalar = LeastSquares(["a"], [A0], b, weight=2.0)
    assert np.allclose(scalar.H, 2 * A0.T @ A0)


def test_batched_least_squares_broadcasts_blocks():
    A0 = np.ones((5, 2, 1))  # batch of 5
    A1 = np.eye(2)  # shared
    f = LeastSquares(["x", "y"], [A0, A1], np.zeros(2))
    assert f.H.shape == (5, 3, 3) and f.batch_shape == (5,)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Quadratic(["x", "x"], np.eye(2)), "appears twice"),
        (lambda: Quadratic(["x"], np.ones((2, 3))), "square"),
        (lambda: Quadratic(["x"], [[1.0, 2.0], [0.0, 1.0]]), "not symmetric"),
        (lambda: Quadratic(["x"], np.eye(2), [1.0, 2.0, 3.0]), "length 3"),
        (lambda: Quadratic(["x"], [[np.nan]]), "NaN"),
        (lambda: Quadratic(["x"], [[1.0]], [np.inf]), "NaN or inf"),
        (lambda: Quadratic([], np.eye(2)), "at least one"),
        (lambda: Quadratic("xy", np.eye(2)), "list of variable keys"),
        (lambda: LinearEquality(["x", "y"], [np.eye(2)], np.zeros(2)), "2 keys"),
        (lambda: LinearEquality(["x"], np.eye(2), np.zeros(2)), "one block per key"),
        (lambda: LinearEquality(["x", "y"], [np.eye(2), np.ones((3, 2))], np.zeros(2)), "3 rows"),
        (lambda: LinearEquality(["x"], [np.eye(2)], [0.0, np.nan]), "NaN"),
        (lambda: LeastSquares(["x"], [np.eye(2)], np.zeros(2), weight=np.ones(3)), "information matrix"),
        (lambda: Variable("x", 0), "positive int"),
        (lambda: Variable("x", 2, "dual"), "'min' or 'max'"),
        (lambda: Variable(["x"], 2), "not hashable"),
    ],
)
def test_bad_factor_input_is_refused_with_a_clear_message(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make()


def test_structure_holds_no_numbers():
    f = LinearEquality(["x", "y"], [np.eye(2), -np.eye(2)], np.zeros(2))
    assert f.structure().keys == ("x", "y") and f.structure().rows == 2 and f.structure().hard
    assert not Quadratic(["x"], np.eye(2)).structure().hard
