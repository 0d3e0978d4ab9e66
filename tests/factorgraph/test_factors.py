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


@pytest.mark.parametrize(
    "make",
    [
        lambda: Quadratic(["x"], np.eye(2) + 1e-3j * np.eye(2)),
        lambda: Quadratic(["x"], np.eye(2), np.array([1.0, 2.0 + 1j])),
        lambda: LinearEquality(["x"], [np.eye(2, dtype=complex)], np.zeros(2)),
        lambda: LinearEquality(["x"], [np.eye(2)], [0.0, 1j]),
        lambda: LeastSquares(["x"], [np.eye(2)], np.zeros(2), weight=np.eye(2) * (1 + 0j)),
        lambda: LeastSquares(["x"], [np.eye(2)], np.zeros(2), weight=2j),
    ],
)
def test_complex_input_is_refused_not_cast(make):
    """numpy's float cast would drop the imaginary part (even a zero one is refused: say np.real)."""
    with pytest.raises(TypeError, match="complex"):
        make()


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Quadratic(["x"], "1 0; 0 1"), "H must be a numeric array"),
        (lambda: Quadratic(["x"], None), "H must be a numeric array"),
        (lambda: LinearEquality(["x"], [[[1.0, 0.0], [0.0]]], [0.0, 0.0]), "block A for 'x' must be a numeric array"),
        (lambda: Variable("x", 2.0), "dim must be a positive int"),
    ],
)
def test_non_numeric_input_is_a_type_error_naming_the_argument(make, message):
    with pytest.raises(TypeError, match=message):
        make()


def test_numpy_scalars_are_accepted():
    assert Variable("x", np.int64(3)).dim == 3 and type(Variable("x", np.int32(3)).dim) is int
    f = LeastSquares(["x"], [np.eye(2)], np.ones(2), weight=np.float32(4.0))
    assert np.allclose(f.H, 4 * np.eye(2)) and np.allclose(f.g, [4.0, 4.0])


def _solutions(graph):
    """The same graph solved by the dense KKT solve and by elimination."""
    import elimination

    plan = elimination.analyze(graph, elimination.min_fill(graph))
    return graph.dense_solve(), elimination.factorize(graph, plan).solve()


def test_factors_copy_the_callers_arrays():
    """Editing an array after building a factor and adding it changes nothing.

    The graph: minimize 1/2 x'Hx - g'x + 1/2 ||y - c||^2_W subject to x - y = b.
    """
    from factorgraph import FactorGraph

    H, g = 2.0 * np.eye(2), np.array([2.0, 4.0])
    A, c, W = [np.eye(2)], np.array([1.0, 1.0]), 2.0 * np.eye(2)
    Ax, Ay, b = np.eye(2), -np.eye(2), np.array([0.0, 1.0])
    graph = FactorGraph()
    graph.add_variable(Variable("x", 2))
    graph.add_variable(Variable("y", 2))
    graph.add(Quadratic(["x"], H, g))
    graph.add(LeastSquares(["y"], A, c, weight=W))
    graph.add(LinearEquality(["x", "y"], [Ax, Ay], b))
    # closed form: y = x - b; minimize x'x - g'x + ||x - b - c||^2  ->  4x = g + 2 (b + c)
    x = (g + 2.0 * (b + c)) / 4.0
    expected = {"x": x, "y": x - b}
    for array in (H, g, A[0], c, W, Ax, Ay, b):
        array *= 7.0  # the caller reuses its buffers
    for solution in _solutions(graph):
        for key, value in expected.items():
            assert np.allclose(solution[key], value, atol=1e-12), key


def test_trusted_factors_hold_their_builders_arrays_as_given():
    """The unchecked constructors keep the arrays (no copy) and answer as the checked ones do."""
    H, g = np.array([[2.0, 1.0], [1.0, 3.0]]), np.array([1.0, -1.0])
    fast, checked = Quadratic.trusted(("x",), H, g), Quadratic(["x"], H, g)
    assert fast.H is H and fast.g is g and fast.keys == checked.keys and fast.batch_shape == checked.batch_shape
    A, b = (np.eye(2), -np.ones((2, 1))), np.zeros((3, 2))
    fast, checked = LinearEquality.trusted(("x", "y"), A, b, (1, 0)), LinearEquality(["x", "y"], list(A), b, units=(1, 0))
    assert fast.A[0] is A[0] and fast.structure() == checked.structure() and fast.batch_shape == checked.batch_shape == (3,)
