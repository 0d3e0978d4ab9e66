"""Each lane-wide vector operation gives, lane by lane, exactly the scalar operation's bits."""
import numpy as np
from numba import njit

from elimination import vectors as v

W = v.WIDTH  # lanes a row
EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 1e-310, 1e308])


def _edged(rng, M, rows):
    """One of :data:`EDGES` into each lane of ``M``, in a random row below ``rows`` (each edge in W / 8 lanes)."""
    M[rng.integers(0, rows, W), np.arange(W)] = np.resize(EDGES[rng.permutation(EDGES.size)], W)


@njit(error_model="numpy")
def _vector(D, A, B, s):
    """Every operation once, each into its own row of ``D`` (rows of ``A``, ``B``: operands)."""
    v.copy(D, 0, A, 0)
    v.fill(D, 1, s)
    v.add(D, 2, A, 1)
    v.add_mul(D, 3, A, 2, B, 0)
    v.sub_mul(D, 4, A, 3, B, 1)
    v.sub_scaled_mul(D, 5, s, A, 4, B, 2)
    v.scaled(D, 6, s, A, 5)
    v.mul(D, 7, A, 6, B, 3)
    v.div(D, 8, A, 7, B, 4)
    v.inverse(D, 9, A, 8)
    v.sqrt(D, 10, A, 9)
    v.half_sum(D, 11, A, 10, B, 5)
    v.sub_dot6(D, 12, A, 0, 2, B, 0, 1)  # rows 0, 2, ..., 10 of A against rows 0..5 of B
    v.dot6(D, 13, B, 0, 1, A, 1, np.int32(2))  # rows 0..5 of B against rows 1, 3, ..., 11 of A
    v.mul_add(D, 14, A, 0, B, 1, A, 2)
    v.mul_sub(D, 15, A, 3, B, 2, A, 4)
    v.half_sum_sub_mul(D, 16, A, 5, B, 3, A, 6, B, 4)
    v.add_scaled(D, 17, A, 7, s)
    v.add_scalar(D, 18, A, 8, s)
    v.absolute(D, 19, A, 9)
    v.put(D, 20, A, 10, B, 0)  # (where B's row is not zero)
    v.dot(D, 21, A, 11, -2, B, 1, 1, 5)  # rows 11, 9, ..., 3 of A against rows 1..5 of B
    v.dot(D, 22, A, 0, 1, B, 0, 1, 0)  # no terms: zero
    v.add_dot6(D, 23, A, 1, 2, B, 0, 1)  # rows 1, 3, ..., 11 of A against rows 0..5 of B, added to D's row


@njit(error_model="numpy")  # (as the lane kernels: a division by zero gives inf, not an exception)
def _scalar(D, A, B, s):
    """The same, one lane at a time (what the per-element kernels compute)."""
    for w in range(W):
        D[0, w] = A[0, w]
        D[1, w] = s
        D[2, w] = D[2, w] + A[1, w]
        D[3, w] += A[2, w] * B[0, w]
        D[4, w] -= A[3, w] * B[1, w]
        D[5, w] -= (s * A[4, w]) * B[2, w]
        D[6, w] = s * A[5, w]
        D[7, w] = A[6, w] * B[3, w]
        D[8, w] = A[7, w] / B[4, w]
        D[9, w] = 1.0 / A[8, w]
        D[10, w] = np.sqrt(A[9, w])
        D[11, w] = 0.5 * (A[10, w] + B[5, w])
        for q in range(6):
            D[12, w] -= A[2 * q, w] * B[q, w]
        t = 0.0
        for q in range(6):
            t += B[q, w] * A[1 + 2 * q, w]
        D[13, w] = t
        D[14, w] = A[0, w]
        D[14, w] += B[1, w] * A[2, w]
        D[15, w] = A[3, w]
        D[15, w] -= B[2, w] * A[4, w]
        D[16, w] = 0.5 * (A[5, w] + B[3, w])
        D[16, w] -= A[6, w] * B[4, w]
        D[17, w] += A[7, w] * s
        D[18, w] = A[8, w] + s
        D[19, w] = abs(A[9, w])
        if B[0, w] != 0.0:
            D[20, w] = A[10, w]
        t = 0.0
        for q in range(5):
            t += A[11 - 2 * q, w] * B[1 + q, w]
        D[21, w] = t
        D[22, w] = 0.0
        for q in range(6):
            D[23, w] += A[1 + 2 * q, w] * B[q, w]


def test_every_operation_equals_the_scalar_one_bit_for_bit():
    """Random rows at magnitudes far apart (where a fused multiply-add or a reordering would change the last
    bits), and the edges: signed zeros, infinities, NaN, a negative square root, division by zero."""
    rng = np.random.default_rng(0)
    for trial in range(200):
        A = rng.normal(size=(12, W)) * 10.0 ** rng.integers(-8, 9, size=(12, W))
        B = rng.normal(size=(6, W)) * 10.0 ** rng.integers(-8, 9, size=(6, W))
        D = rng.normal(size=(24, W))
        if trial % 4 == 0:  # edges in random places
            _edged(rng, A, 11)
            _edged(rng, B, 6)
        if trial % 4 == 1:  # a sum that overflows before it is halved
            A[10, :4] = B[5, :4] = 1.5e308
        if trial % 4 == 2:  # a mask with zeros of both signs
            B[0, :3] = [0.0, -0.0, 0.0]
        s = float(rng.normal() * 10.0 ** rng.integers(-4, 5))
        got, want = D.copy(), D.copy()
        with np.errstate(all="ignore"):
            _vector(got, A, B, s)
            _scalar(want, A, B, s)
        nan = np.isnan(want)  # (a NaN's payload is the hardware's)
        assert np.array_equal(np.isnan(got), nan)
        assert np.array_equal(got[~nan].view(np.int64), want[~nan].view(np.int64))  # bits: -0.0 is not 0.0


def test_rows_are_addressed_in_arrays_of_any_row_count_and_views():
    """Rows of views (a lane group of a 3-d array) and row indices of any integer type."""
    C = np.zeros((3, 5, W))
    A = np.arange(2.0 * W).reshape(2, W)

    @njit
    def put(C, A):
        Ck = C[1]
        v.copy(Ck, np.int32(4), A, np.int64(1))
        v.add_mul(Ck, 2, A, 0, A, 1)

    put(C, A)
    assert np.array_equal(C[1, 4], A[1]) and np.array_equal(C[1, 2], A[0] * A[1])
    assert not C[0].any() and not C[2].any() and not C[1, [0, 1, 3]].any()


@njit
def _rows_added(D, A, T, rows):
    v.add_rows(D, A, T, rows)


@njit
def _rows_added_one_by_one(D, A, T, rows):
    """:func:`vectors.add_rows` as the per-element kernels write it (``x += d``, then ``_largest`` of each)."""
    for w in range(W):
        for i in range(rows):
            D[i, w] += A[i, w]
        top_a = top_d = 0.0
        for i in range(rows):
            top_a = max(top_a, abs(A[i, w]))
        for i in range(rows):
            top_d = max(top_d, abs(D[i, w]))
        T[0, w], T[1, w] = top_a, top_d


def test_rows_added_with_their_largest_magnitudes_equal_the_scalar_loops_bit_for_bit():
    """The sums, and the largest magnitudes with NaN passed over wherever it stands, infinities, signed zeros;
    rows past ``rows`` untouched; no rows at all leaves zeros."""
    rng = np.random.default_rng(1)
    for trial in range(100):
        rows = int(rng.integers(0, 12))
        A = rng.normal(size=(12, W)) * 10.0 ** rng.integers(-8, 9, size=(12, W))
        D = rng.normal(size=(12, W)) * 10.0 ** rng.integers(-8, 9, size=(12, W))
        if trial % 3 == 0:
            _edged(rng, A, 12)
            _edged(rng, D, 12)
        got_D, want_D = D.copy(), D.copy()
        got_T, want_T = np.full((2, W), 7.0), np.full((2, W), 7.0)
        with np.errstate(all="ignore"):
            _rows_added(got_D, A, got_T, np.int64(rows))
            _rows_added_one_by_one(want_D, A, want_T, rows)
        for got, want in ((got_D, want_D), (got_T, want_T)):
            nan = np.isnan(want)
            assert np.array_equal(np.isnan(got), nan)
            assert np.array_equal(got[~nan].view(np.int64), want[~nan].view(np.int64))
        assert np.array_equal(got_D[rows:], D[rows:], equal_nan=True)


@njit(error_model="numpy")
def _matrix_rows(D, A, M, X, rows, p, nv):
    """The row-after-row operations: ``X``'s rows read once for all the rows (in place where D is A)."""
    v.sub_matvec6(D, 0, A, 0, M, 0, 6, X, 0, rows)  # M's rows 0..6 rows - 1, six a row, against X's 0..5
    v.sub_dots6(D, 8, D, 8, M, 1, 7, X, 1, rows)  # in place: rows 1, 8, ... of M (seven apart), X's 1..6
    v.dots6(D, 16, M, 2, 1, 9, X, 0, rows)  # M's columns: rows 2 + r + 9 q
    v.joint_rows(D, 24, A, 2, X, 0, p, M, 3, 7, 6, nv)


@njit(error_model="numpy")
def _matrix_rows_one_by_one(D, A, M, X, rows, p, nv):
    """The same with the operations they replace (sub_dot6, dot6 then sub, dot6, copy sub add sub_mul)."""
    for r in range(rows):
        v.copy(D, r, A, r)
        v.sub_dot6(D, r, M, 6 * r, 1, X, 0, 1)
    for r in range(rows):
        v.dot6(D, 30, M, 1 + 7 * r, 1, X, 1, 1)
        v.sub(D, 8 + r, D, 30)
    for r in range(rows):
        v.dot6(D, 16 + r, M, 2 + r, 9, X, 0, 1)
    for r in range(6):
        v.copy(D, 24 + r, A, 2 + r)
        v.sub(D, 24 + r, X, r)
        if p >= 0:
            v.add(D, 24 + r, X, p + r)
        for j in range(nv):
            v.sub_mul(D, 24 + r, M, 3 + 7 * r + j, X, 6 + j)


def test_matrix_rows_equal_the_row_operations_they_fuse_bit_for_bit():
    """:func:`vectors.sub_matvec6`, ``sub_dots6``, ``dots6`` (any number of rows, none included, in place) and
    ``joint_rows`` (with and without a parent, zero to six joint columns): the operations they replace, in
    their order, with their values in registers between them."""
    rng = np.random.default_rng(2)
    for trial in range(120):
        rows, nv = int(rng.integers(0, 7)), int(rng.integers(0, 7))
        p = int(rng.choice([-1, 6]))
        A = rng.normal(size=(8, W)) * 10.0 ** rng.integers(-8, 9, size=(8, W))
        M = rng.normal(size=(64, W)) * 10.0 ** rng.integers(-8, 9, size=(64, W))
        X = rng.normal(size=(12, W)) * 10.0 ** rng.integers(-8, 9, size=(12, W))
        D = rng.normal(size=(31, W))
        if trial % 3 == 0:
            _edged(rng, M, 64)
            _edged(rng, X, 12)
        got, want = D.copy(), D.copy()
        with np.errstate(all="ignore"):
            _matrix_rows(got, A, M, X, np.int64(rows), np.int64(p), np.int64(nv))
            _matrix_rows_one_by_one(want, A, M, X, rows, p, nv)
        got[30], want[30] = 0.0, 0.0  # (the one-by-one version's scratch row)
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan)
        assert np.array_equal(got[~nan].view(np.int64), want[~nan].view(np.int64))


def _same_bits(got, want):
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.int64), want[~nan].view(np.int64))


def test_one_state_is_width_one_of_the_same_operations_bit_for_bit():
    """Every operation on 1-d arrays (one state: an entry a row) gives, state by state, the bits of the same
    operation on sixteen lanes: the per-state executor is the width-1 instance of the lane source."""
    rng = np.random.default_rng(3)
    for trial in range(40):
        A = rng.normal(size=(12, W)) * 10.0 ** rng.integers(-8, 9, size=(12, W))
        B = rng.normal(size=(6, W)) * 10.0 ** rng.integers(-8, 9, size=(6, W))
        B[0, :3] = [0.0, -0.0, 0.0]
        if trial % 2 == 0:
            _edged(rng, A, 11)
            _edged(rng, B, 6)
        M = rng.normal(size=(64, W))
        D = rng.normal(size=(31, W))
        s = float(rng.normal())
        lanes, rows = D.copy(), D.copy()
        with np.errstate(all="ignore"):
            _vector(lanes, A, B, s)
            _matrix_rows(lanes, A, M, A, np.int64(5), np.int64(6), np.int64(3))
            for w in range(W):
                one = np.ascontiguousarray(rows[:, w])
                _vector(one, np.ascontiguousarray(A[:, w]), np.ascontiguousarray(B[:, w]), s)
                _matrix_rows(one, np.ascontiguousarray(A[:, w]), np.ascontiguousarray(M[:, w]),
                             np.ascontiguousarray(A[:, w]), np.int64(5), np.int64(6), np.int64(3))
                rows[:, w] = one
        _same_bits(rows, lanes)


@njit
def _lanes_doubled(A):
    """Each lane's row 1 set to twice its row 0, lane by lane."""
    for w in range(v.width(A)):
        v.set_lane(A, 1, w, 2.0 * v.lane(A, 0, w))
    return v.width(A)


def test_lane_by_lane_access_at_either_width():
    A, a = np.arange(2.0 * W).reshape(2, W), np.array([3.0, 0.0])
    assert _lanes_doubled(A) == W and np.array_equal(A[1], 2.0 * A[0])
    assert _lanes_doubled(a) == 1 and a.tolist() == [3.0, 6.0]


def test_a_lane_of_a_lane_array_is_one_state():
    """``A[:, w]`` (strided: how a lane kernel hands one state to code that runs one at a time) is addressed
    by its stride, read and written in place."""
    D, A = np.zeros((3, W)), np.arange(3.0 * W).reshape(3, W)

    @njit
    def added(D, A, w):
        v.add_mul(D[:, w], 2, A[:, w], 1, A[:, w], 0)
        v.set_lane(D[:, w], 0, 0, v.lane(A[:, w], 2, 0))

    added(D, A, 5)
    assert D[2, 5] == A[1, 5] * A[0, 5] and D[0, 5] == A[2, 5]
    assert np.count_nonzero(D) == 2


def test_operands_of_another_layout_or_mixed_widths_are_refused_when_compiling():
    """A 2-d operand that is not C-contiguous, or a 1-d and a 2-d operand in one operation: a TypeError
    naming what an operand must be, not wrong rows."""
    import pytest

    @njit
    def copy(D, A):
        v.copy(D, 0, A, 0)

    with pytest.raises(TypeError, match="C-contiguous"):
        copy(np.zeros((2, 2 * W))[:, ::2], np.zeros((2, W)))
    with pytest.raises(TypeError, match="all be 1-d"):
        copy(np.zeros(2), np.zeros((2, W)))


@njit(error_model="numpy")
def _values(D, A, s):
    """Rows held as values (:func:`elimination.vectors.get`): every arithmetic form once, into rows of ``D``."""
    x, y, z = v.get(A, 0), v.get(A, 1), v.get(A, 2)
    v.set(D, 0, x + y)
    v.set(D, 1, x - s)
    v.set(D, 2, s * y)
    v.set(D, 3, x / z)
    v.set(D, 4, s / x)
    v.set(D, 5, -(x * y - z) - (y - s * z) / x)
    v.set(D, 6, 0.0 - x * y)
    v.set(D, 7, s)
    v.set(D, 8, 2 * x + 1)
    v.set(D, 9, abs(x - y))
    v.set_where(D, 10, x * z, A, 1)  # where y is not zero (NaN is not zero)
    v.set(D, 11, max(x, y))
    v.set(D, 12, max(0.0, x))
    v.set(D, 13, v.dotted(A, 0, 1, A, 1, 1, 2))  # 0 + x y + y z


@njit(error_model="numpy")
def _rows(D, A, s):
    """Rows 0-3 and 7 of :func:`_values` in the row operations (memory to memory)."""
    v.copy(D, 0, A, 0)
    v.add(D, 0, A, 1)
    v.add_scalar(D, 1, A, 0, -s)  # x - s == x + (-s)
    v.scaled(D, 2, s, A, 1)
    v.div(D, 3, A, 0, A, 2)
    v.fill(D, 7, s)


def test_values_held_in_registers_are_the_scalar_arithmetic_at_every_width():
    """``get`` / ``set`` / ``set_where``, ``+ - * /``, negation, ``abs``, ``max`` (numba's rule: the second where it is
    larger, so a NaN there is passed over) and ``dotted`` on row values: at width 16 each lane is the scalar
    expression's bits (numpy on the lane's floats, the same operations in the same order), and width 1 is the
    scalar arithmetic itself."""
    rng = np.random.default_rng(11)
    for trial in range(20):
        A = rng.normal(size=(3, W)) * 10.0 ** rng.integers(-8, 9, size=(3, W))
        if trial % 2 == 0:
            _edged(rng, A, 3)
        s = float(rng.normal())
        A[1, :3] = [0.0, -0.0, np.nan]
        D = np.zeros((14, W))
        with np.errstate(all="ignore"):
            _values(D, A, s)
            x, y, z = A
            want = np.stack([x + y, x - s, s * y, x / z, s / x, -(x * y - z) - (y - s * z) / x, 0.0 - x * y,
                             np.full(W, s), 2 * x + 1, np.abs(x - y), np.where(y != 0.0, x * z, 0.0),
                             np.where(y > x, y, x), np.where(x > 0.0, x, 0.0), 0.0 + x * y + y * z])
            _same_bits(D, want)
            for w in range(W):
                one = np.zeros(14)
                _values(one, np.ascontiguousarray(A[:, w]), s)
                _same_bits(one, D[:, w])
            R = np.zeros((11, W))
            _rows(R, A, s)
        _same_bits(R[[0, 1, 2, 3, 7]], D[[0, 1, 2, 3, 7]])


def test_a_lane_value_into_one_state_is_refused_when_compiling():
    import pytest

    @njit
    def stored(d, A):
        v.set(d, 0, v.get(A, 0))

    with pytest.raises(Exception, match="Row value into a one-state"):
        stored(np.zeros(1), np.zeros((1, W)))


@njit
def _largest_from_zero(A, D):
    """``max |A[r]|`` over the rows from :func:`vectors.zero`, and which rows are nonzero in some lane."""
    top = v.zero(A)
    for r in range(A.shape[0]):
        top = max(top, abs(v.get(A, r)))
    v.set(D, 0, top)
    return [v.nonzero(A, r) for r in range(A.shape[0])]


def test_a_sum_from_zero_and_the_nonzero_test_at_either_width():
    """``zero`` starts a maximum (or a sum) of values at either width, as ``fill(D, k, 0.0)`` does; ``nonzero``
    is True where any lane is nonzero, a NaN included (the test by which a kernel skips all-zero work)."""
    A = np.zeros((4, W))
    A[1, 3], A[2, 0], A[3, W - 1] = -2.5, np.nan, 1.0
    D = np.full((1, W), 7.0)
    assert _largest_from_zero(A, D) == [False, True, True, True]
    want = np.zeros(W)
    for r in range(4):  # numba's max: the new value where it is larger, a NaN passed over
        want = np.where(np.abs(A[r]) > want, np.abs(A[r]), want)
    assert np.array_equal(D[0], want) and D[0, 3] == 2.5 and D[0, 0] == 0.0
    for w in (0, 3, W - 1):  # one state: its lane alone
        d = np.full(1, 7.0)
        assert _largest_from_zero(np.ascontiguousarray(A[:, w]), d) == [False, w == 3, w == 0, w == W - 1]
        assert d[0] == want[w]
