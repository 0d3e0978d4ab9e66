"""Operations on rows of lanes, as LLVM vector instructions: the one source of the kernels at every batch width.

A kernel written with these operations runs one state or sixteen side by side,
as its operands say: row ``k`` of a 2-d array ``A (rows, 16)`` holds entry
``k`` of sixteen states, and each operation loads it as one ``<16 x double>``
(four AVX2 registers), computes and stores; on a 1-d array ``A (rows,)`` --
one state, width 1 -- the same operation is the scalar one.  Numba compiles a
kernel once per operand type, so the per-state executor and the lane executor
are two instances of one function (``vectors`` dispatches on ``ndim`` when the
kernel compiles; nothing is decided at run time).  Written as a loop over the
lanes, numba would unroll sixteen scalar instructions and leave LLVM's SLP
vectorizer off (numba#8852, miscompilations); these intrinsics say the vector
operation outright -- ``fadd``, ``fsub``, ``fmul``, ``fdiv``, ``sqrt``, with no
fast-math flags, so each lane gets exactly the scalar operation's result (no
fused multiply-add, no reassociation): every width gives the same bits.

Rows are addressed ``(array, row)``; every operand must be a float64 array,
1-d (one state; a lane ``A[:, w]`` of a lane array too) or C-contiguous with
:data:`WIDTH` columns (the lane kernels' layout), and the operands of one
operation of one width -- refused when the kernel compiles.  Scalars (``s``) are broadcast to every lane.  What
a kernel does lane by lane (a pivot's test, its ratio) it writes as a loop
``for w in range(width(A))`` over :func:`lane` and :func:`set_lane`.

Row operations go memory to memory; a small block's arithmetic (a pose, an
inertia) is written on row *values* instead -- :func:`get` a row's value (a
float at width 1, a :class:`Row` at width 16), ``+ - * /``, negation and
``abs`` on values, :func:`set` / :func:`set_where` to store -- which stay in
registers (the same instructions, the same bits).

>>> import numpy as np
>>> from numba import njit
>>> @njit
... def f(D, A, B):
...     sub_mul(D, 0, A, 0, B, 1)  # D[0] -= A[0] * B[1]
>>> D, A, B = np.ones((1, 16)), np.full((1, 16), 2.0), np.arange(32.0).reshape(2, 16)
>>> f(D, A, B); D[0, :3].tolist()
[-31.0, -33.0, -35.0]
>>> d = np.ones(1); f(d, np.full(1, 2.0), np.arange(2.0)); d.tolist()  # one state
[-1.0]
"""
from __future__ import annotations

import operator

from llvmlite import ir
from numba import njit
from numba.core import cgutils, types
from numba.extending import intrinsic, models, overload, register_model

WIDTH = 16
"""Lanes per row of a 2-d operand.  Sixteen, not eight: the wider operations give the out-of-order core four
independent registers' work per instruction, and a lane costs less (benchmarks/README.md).  The engine's batches
of graphs run in as many lanes.  The lane kernels compile for this width; nothing else depends on it."""


def _width(array_type) -> int:
    """The lanes of an operand: 1 for a 1-d array (one state, its entries the rows), :data:`WIDTH` for a 2-d
    one; anything but a float64 array of either, the 2-d one C-contiguous, is refused as the kernel compiles."""
    if isinstance(array_type, types.Array) and array_type.dtype == types.float64:
        if array_type.ndim == 1:
            return 1
        if array_type.ndim == 2 and array_type.layout == "C":
            return WIDTH
    raise TypeError("elimination.vectors: an operand must be a float64 array, 1-d (one state) or C-contiguous "
                    f"(rows, {WIDTH}) (lanes), got {array_type}")


def _address(context, builder, array_type, array, at):
    """Pointer to entry ``at`` of a 1-d array: ``at`` doubles on where it is contiguous, ``at`` strides on where
    it may not be (one lane of a lane array, ``A[:, w]``: how a lane kernel hands a state to code that runs one
    state at a time)."""
    a = context.make_array(array_type)(context, builder, array)
    if array_type.layout == "C":
        return builder.gep(a.data, [at], inbounds=True)
    return cgutils.get_item_pointer2(context, builder, data=a.data, shape=cgutils.unpack_tuple(builder, a.shape),
                                     strides=cgutils.unpack_tuple(builder, a.strides), layout=array_type.layout,
                                     inds=[at], wraparound=False)


def _vector(width: int):
    """The LLVM type of a row: ``double`` at width 1, ``<width x double>`` above."""
    return ir.DoubleType() if width == 1 else ir.VectorType(ir.DoubleType(), width)


def _constant(row_type, value: float):
    """``value`` in every lane of a row of ``row_type``."""
    if isinstance(row_type, ir.VectorType):
        return ir.Constant(row_type, [value] * row_type.count)
    return ir.Constant(row_type, value)


def _void(*arguments):
    """The signature of an operation returning nothing, its array operands checked to share one width."""
    widths = {_width(a) for a in arguments if isinstance(a, types.Array)}
    if len(widths) > 1:
        got = ", ".join(str(a) for a in arguments if isinstance(a, types.Array))
        raise TypeError("elimination.vectors: the operands of one operation must all be 1-d (one state) or all "
                        f"(rows, {WIDTH}) (lanes), got {got}")
    return types.void(*arguments)


def _row_type(signature):
    """The row type of an operation's operands (its first argument's)."""
    return _vector(_width(signature.args[0]))


def _row(context, builder, array_type, array, row):
    """Pointer to row ``row`` of a C-contiguous array of rows, as ``<WIDTH x double>*`` (``double*`` for a 1-d
    array: one state).

    The rows are ``WIDTH`` apart -- the compile-time width, not the array's run-time ``shape[1]``: an address
    is an add, not a multiply by a loaded stride, which is what lets the width-1 instance of a lane kernel run
    at scalar code's speed (benchmarks/README.md)."""
    width = _width(array_type)
    if width == 1:
        return _address(context, builder, array_type, array, row)
    a = context.make_array(array_type)(context, builder, array)
    pointer = builder.gep(a.data, [builder.mul(row, context.get_constant(types.intp, width))], inbounds=True)
    return builder.bitcast(pointer, _vector(width).as_pointer())


class _KeptLoad(ir.instructions.LoadInstr):
    """A volatile load of a row: what an operation keeps in some lanes and replaces in the others.  Left plain,
    LLVM turns ``store(select(mask, new, load(p)), p)`` into a masked store (``vmaskmovpd``), which AMD's
    cores run slowly and which no later load can read from the store buffer: a lane kernel of such stores
    spent 14% of its samples at them (Cassie's LCABA, ``perf``).  Volatile, the row is loaded and blended
    and stored whole -- the same values."""

    def descr(self, buf):
        [pointer] = self.operands
        buf.append(f"load volatile {self.type}, {pointer.type} {pointer.get_reference()}, align 8\n")


def _load(context, builder, signature, args, at: int, kept: bool = False):
    """The row named by arguments ``at`` (the array) and ``at + 1`` (its row); ``kept``: as a
    :class:`_KeptLoad` (lanes only: a scalar has no masked store to avoid)."""
    row = context.cast(builder, args[at + 1], signature.args[at + 1], types.intp)
    pointer = _row(context, builder, signature.args[at], args[at], row)
    if not kept or _width(signature.args[at]) == 1:
        return builder.load(pointer, align=8)
    load = _KeptLoad(builder.block, pointer, typ=pointer.type.pointee)
    builder._insert(load)
    return load


def _broadcast(builder, row_type, value):
    """The double ``value`` in every lane of a row of ``row_type`` (itself at width 1)."""
    if not isinstance(row_type, ir.VectorType):
        return value
    width = row_type.count
    vector = builder.insert_element(ir.Constant(row_type, ir.Undefined), value, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(vector, ir.Constant(row_type, ir.Undefined),
                                  ir.Constant(ir.VectorType(ir.IntType(32), width), [0] * width))


def _splat(context, builder, signature, args, at: int):
    """Scalar argument ``at`` in every lane."""
    value = context.cast(builder, args[at], signature.args[at], types.float64)
    return _broadcast(builder, _row_type(signature), value)


def _store_where(context, builder, signature, args, mask_at: int, value) -> None:
    """``value`` into the row named by the first two arguments, in the lanes where the row named by arguments
    ``mask_at``, ``mask_at + 1`` is not zero (NaN is not zero); the other lanes keep theirs.  One state: a
    branch, not a blend -- no load of the kept entry; lanes: a blend of the whole row (:class:`_KeptLoad`)."""
    mask = _load(context, builder, signature, args, mask_at)
    wanted = builder.fcmp_unordered("!=", mask, _constant(mask.type, 0.0))
    if not isinstance(mask.type, ir.VectorType):
        with builder.if_then(wanted, likely=True):
            _store(context, builder, signature, args, value)
        return
    kept = _load(context, builder, signature, args, 0, kept=True)
    _store(context, builder, signature, args, builder.select(wanted, value, kept))


def _store(context, builder, signature, args, value) -> None:
    """``value`` into the row named by the first two arguments."""
    row = context.cast(builder, args[1], signature.args[1], types.intp)
    builder.store(value, _row(context, builder, signature.args[0], args[0], row), align=8)


def _op(compute, operands: str, kept: bool = False):
    """An intrinsic ``(D, k, *operands)`` storing ``compute(builder, D[k], *values)`` into row ``k`` of ``D``;
    ``operands``: ``r`` for a row (two arguments: array, row), ``s`` for a broadcast scalar; ``kept``: an
    operation that keeps ``D[k]`` in some lanes (loaded as a :class:`_KeptLoad`)."""

    def codegen(context, builder, signature, args):
        values, at = [_load(context, builder, signature, args, 0, kept)], 2
        for kind in operands:
            values.append(_load(context, builder, signature, args, at) if kind == "r"
                          else _splat(context, builder, signature, args, at))
            at += 2 if kind == "r" else 1
        _store(context, builder, signature, args, compute(builder, *values))
        return context.get_dummy_value()

    return codegen


def _math(builder, name: str, value):
    """LLVM's ``llvm.<name>`` of a row (``llvm.sqrt.f64``, ``llvm.sqrt.v16f64``)."""
    row_type = value.type
    suffix = f"v{row_type.count}f64" if isinstance(row_type, ir.VectorType) else "f64"
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(row_type, [row_type]), f"llvm.{name}.{suffix}")
    return builder.call(fn, [value])


def _sqrt(builder, value):
    return _math(builder, "sqrt", value)


@intrinsic
def copy(typingctx, D, k, A, i):
    """``D[k] = A[i]``."""
    return _void(D, k, A, i), _op(lambda b, d, a: a, "r")


@intrinsic
def fill(typingctx, D, k, s):
    """``D[k] = s``."""
    return _void(D, k, s), _op(lambda b, d, s: s, "s")


@intrinsic
def add(typingctx, D, k, A, i):
    """``D[k] = D[k] + A[i]``."""
    return _void(D, k, A, i), _op(lambda b, d, a: b.fadd(d, a), "r")


@intrinsic
def sub(typingctx, D, k, A, i):
    """``D[k] = D[k] - A[i]``."""
    return _void(D, k, A, i), _op(lambda b, d, a: b.fsub(d, a), "r")


@intrinsic
def add_mul(typingctx, D, k, A, i, B, j):
    """``D[k] = D[k] + A[i] * B[j]``."""
    return _void(D, k, A, i, B, j), _op(lambda b, d, a, x: b.fadd(d, b.fmul(a, x)), "rr")


@intrinsic
def sub_mul(typingctx, D, k, A, i, B, j):
    """``D[k] = D[k] - A[i] * B[j]``."""
    return _void(D, k, A, i, B, j), _op(lambda b, d, a, x: b.fsub(d, b.fmul(a, x)), "rr")


@intrinsic
def sub_scaled_mul(typingctx, D, k, s, A, i, B, j):
    """``D[k] = D[k] - (s * A[i]) * B[j]``."""
    return _void(D, k, s, A, i, B, j), _op(lambda b, d, s, a, x: b.fsub(d, b.fmul(b.fmul(s, a), x)), "srr")


@intrinsic
def scaled(typingctx, D, k, s, A, i):
    """``D[k] = s * A[i]``."""
    return _void(D, k, s, A, i), _op(lambda b, d, s, a: b.fmul(s, a), "sr")


@intrinsic
def add_scaled(typingctx, D, k, A, i, s):
    """``D[k] = D[k] + A[i] * s``."""
    return _void(D, k, A, i, s), _op(lambda b, d, a, s: b.fadd(d, b.fmul(a, s)), "rs")


@intrinsic
def add_scalar(typingctx, D, k, A, i, s):
    """``D[k] = A[i] + s``."""
    return _void(D, k, A, i, s), _op(lambda b, d, a, s: b.fadd(a, s), "rs")


@intrinsic
def mul(typingctx, D, k, A, i, B, j):
    """``D[k] = A[i] * B[j]``."""
    return _void(D, k, A, i, B, j), _op(lambda b, d, a, x: b.fmul(a, x), "rr")


@intrinsic
def div(typingctx, D, k, A, i, B, j):
    """``D[k] = A[i] / B[j]``."""
    return _void(D, k, A, i, B, j), _op(lambda b, d, a, x: b.fdiv(a, x), "rr")


@intrinsic
def inverse(typingctx, D, k, A, i):
    """``D[k] = 1 / A[i]``."""
    return _void(D, k, A, i), _op(lambda b, d, a: b.fdiv(_constant(a.type, 1.0), a), "r")


@intrinsic
def sqrt(typingctx, D, k, A, i):
    """``D[k] = sqrt(A[i])`` (IEEE: correctly rounded, as ``np.sqrt``)."""
    return _void(D, k, A, i), _op(lambda b, d, a: _sqrt(b, a), "r")


@intrinsic
def mul_add(typingctx, D, k, A, i, B, j, E, l):
    """``D[k] = A[i] + B[j] * E[l]`` (``copy`` then ``add_mul``, with one store)."""
    return _void(D, k, A, i, B, j, E, l), _op(lambda b, d, a, x, e: b.fadd(a, b.fmul(x, e)), "rrr")


@intrinsic
def mul_sub(typingctx, D, k, A, i, B, j, E, l):
    """``D[k] = A[i] - B[j] * E[l]`` (``copy`` then ``sub_mul``, with one store)."""
    return _void(D, k, A, i, B, j, E, l), _op(lambda b, d, a, x, e: b.fsub(a, b.fmul(x, e)), "rrr")


@intrinsic
def half_sum_sub_mul(typingctx, D, k, A, i, B, j, E, l, F, m):
    """``D[k] = 0.5 * (A[i] + B[j]) - E[l] * F[m]`` (``half_sum`` then ``sub_mul``, with one store)."""
    return (_void(D, k, A, i, B, j, E, l, F, m),
            _op(lambda b, d, a, x, e, f: b.fsub(b.fmul(_constant(a.type, 0.5), b.fadd(a, x)), b.fmul(e, f)), "rrrr"))


def _largest(builder, d, a):
    size = _fabs(builder, a)
    return builder.select(builder.fcmp_ordered(">", size, d), size, d)


def _fabs(builder, a):
    return _math(builder, "fabs", a)


@intrinsic
def absolute(typingctx, D, k, A, i):
    """``D[k] = |A[i]|`` (``abs``: the sign bit cleared)."""
    return _void(D, k, A, i), _op(lambda b, d, a: _fabs(b, a), "r")


@intrinsic
def put(typingctx, D, k, A, i, M, j):
    """``D[k] = A[i]`` in the lanes where ``M[j]`` is not zero; the other lanes of ``D[k]`` keep their values."""

    def codegen(context, builder, signature, args):
        _store_where(context, builder, signature, args, 4, _load(context, builder, signature, args, 2))
        return context.get_dummy_value()

    return _void(D, k, A, i, M, j), codegen


@intrinsic
def largest(typingctx, D, k, A, i):
    """``D[k] = |A[i]| if |A[i]| > D[k] else D[k]``: numba's ``max(D[k], abs(A[i]))`` (a NaN is passed over)."""
    return _void(D, k, A, i), _op(_largest, "r", kept=True)


@intrinsic
def half_sum(typingctx, D, k, A, i, B, j):
    """``D[k] = 0.5 * (A[i] + B[j])``."""
    return _void(D, k, A, i, B, j), _op(lambda b, d, a, x: b.fmul(_constant(a.type, 0.5), b.fadd(a, x)), "rr")


def _dot6(subtract: bool, from_zero: bool):
    """An intrinsic ``(D, k, A, i, sa, B, j, sb)`` storing into row ``k`` of ``D`` six products
    ``A[i + q sa] * B[j + q sb]`` (``q = 0..5``) subtracted from ``D[k]`` or added to zero, one at a time in
    that order: the scalar loop's operations, its running value held in registers rather than stored and
    loaded back between them (each row operation loads and stores whole rows: a lane kernel is bound by
    its loads and stores, a fused one makes fewer)."""

    def codegen(context, builder, signature, args):
        intp = lambda at: context.cast(builder, args[at], signature.args[at], types.intp)
        k, i, sa, j, sb = intp(1), intp(3), intp(4), intp(6), intp(7)
        value = (_constant(_row_type(signature), 0.0) if from_zero
                 else builder.load(_row(context, builder, signature.args[0], args[0], k), align=8))
        for q in range(6):
            step = context.get_constant(types.intp, q)
            a = builder.load(_row(context, builder, signature.args[2], args[2], builder.add(i, builder.mul(step, sa))),
                             align=8)
            x = builder.load(_row(context, builder, signature.args[5], args[5], builder.add(j, builder.mul(step, sb))),
                             align=8)
            product = builder.fmul(a, x)
            value = builder.fsub(value, product) if subtract else builder.fadd(value, product)
        builder.store(value, _row(context, builder, signature.args[0], args[0], k), align=8)
        return context.get_dummy_value()

    return codegen


@intrinsic
def sub_dot6(typingctx, D, k, A, i, sa, B, j, sb):
    """``D[k] = D[k] - A[i] * B[j] - A[i + sa] * B[j + sb] - ...`` (six products, subtracted in that order)."""
    return _void(D, k, A, i, sa, B, j, sb), _dot6(subtract=True, from_zero=False)


@intrinsic
def add_dot6(typingctx, D, k, A, i, sa, B, j, sb):
    """``D[k] = D[k] + A[i] * B[j] + A[i + sa] * B[j + sb] + ...`` (six products, added in that order)."""
    return _void(D, k, A, i, sa, B, j, sb), _dot6(subtract=False, from_zero=False)


@intrinsic
def dot6(typingctx, D, k, A, i, sa, B, j, sb):
    """``D[k] = 0 + A[i] * B[j] + A[i + sa] * B[j + sb] + ...`` (six products, added to zero in that order)."""
    return _void(D, k, A, i, sa, B, j, sb), _dot6(subtract=False, from_zero=True)


def _six_rows(context, builder, signature, args, at: int, first):
    """The six rows ``first .. first + 5`` of the array at argument ``at``, loaded once (held in registers)."""
    return [builder.load(_row(context, builder, signature.args[at], args[at],
                              builder.add(first, context.get_constant(types.intp, q))), align=8) for q in range(6)]


def _products6(context, builder, signature, args, at: int, first, stride, xs, value, subtract: bool):
    """``value`` with the six products ``M[first + q stride] * xs[q]`` (``M``: the array at argument ``at``)
    added, or subtracted, one at a time in that order."""
    for q in range(6):
        row = builder.add(first, builder.mul(context.get_constant(types.intp, q), stride))
        product = builder.fmul(builder.load(_row(context, builder, signature.args[at], args[at], row), align=8), xs[q])
        value = builder.fsub(value, product) if subtract else builder.fadd(value, product)
    return value


def _matrix_rows(x_at: int, rows_at: int, row_value):
    """An intrinsic's code storing ``row_value(context, builder, signature, args, intp, r, xs)`` into row
    ``k + r`` of ``D`` (arguments 0, 1) for each ``r <`` argument ``rows_at``, ``xs`` the six rows of ``X``
    from row ``x`` (arguments ``x_at``, ``x_at + 1``), loaded once for all the rows."""

    def codegen(context, builder, signature, args):
        intp = lambda at: context.cast(builder, args[at], signature.args[at], types.intp)
        xs = _six_rows(context, builder, signature, args, x_at, intp(x_at + 1))
        with cgutils.for_range(builder, intp(rows_at)) as loop:
            value = row_value(context, builder, signature, args, intp, loop.index, xs)
            builder.store(value, _row(context, builder, signature.args[0], args[0], builder.add(intp(1), loop.index)),
                          align=8)
        return context.get_dummy_value()

    return codegen


def _matvec6(from_zero: bool):
    """The code of an intrinsic ``(D, k, A, i, M, j, sm, X, x, rows)`` storing, for each ``r < rows``, into row
    ``k + r`` of ``D`` six products ``M[j + r sm + q] * X[x + q]`` (``q = 0..5``) subtracted from ``A[i + r]``
    one at a time in that order, or (``from_zero``) summed from zero and the sum subtracted: :func:`sub_dot6`
    row after row, its six rows of ``X`` loaded once for every row."""

    def row_value(context, builder, signature, args, intp, r, xs):
        start = builder.load(_row(context, builder, signature.args[2], args[2], builder.add(intp(3), r)), align=8)
        value = _products6(context, builder, signature, args, 4, builder.add(intp(5), builder.mul(r, intp(6))),
                           context.get_constant(types.intp, 1), xs,
                           _constant(_row_type(signature), 0.0) if from_zero else start, subtract=not from_zero)
        return builder.fsub(start, value) if from_zero else value

    return _matrix_rows(7, 9, row_value)


@intrinsic
def sub_matvec6(typingctx, D, k, A, i, M, j, sm, X, x, rows):
    """``D[k + r] = A[i + r] - M[j + r sm] * X[x] - ... - M[j + r sm + 5] * X[x + 5]`` for ``r < rows`` (six
    products subtracted in that order: :func:`sub_dot6` from ``A``'s row), ``X``'s rows read once.  ``D`` may
    be ``A``."""
    return _void(D, k, A, i, M, j, sm, X, x, rows), _matvec6(from_zero=False)


@intrinsic
def sub_dots6(typingctx, D, k, A, i, M, j, sm, X, x, rows):
    """``D[k + r] = A[i + r] - (0 + M[j + r sm] * X[x] + ... + M[j + r sm + 5] * X[x + 5])`` for ``r < rows``
    (:func:`dot6` then :func:`sub`, with one store), ``X``'s rows read once.  ``D`` may be ``A``."""
    return _void(D, k, A, i, M, j, sm, X, x, rows), _matvec6(from_zero=True)


@intrinsic
def dots6(typingctx, D, k, M, j, sr, sq, X, x, rows):
    """``D[k + r] = 0 + M[j + r sr] * X[x] + M[j + r sr + sq] * X[x + 1] + ... + M[j + r sr + 5 sq] * X[x + 5]``
    for ``r < rows`` (:func:`dot6` row after row, the products added to zero in that order), ``X``'s six rows
    read once."""

    def row_value(context, builder, signature, args, intp, r, xs):
        return _products6(context, builder, signature, args, 2, builder.add(intp(3), builder.mul(r, intp(4))),
                          intp(5), xs, _constant(_row_type(signature), 0.0), subtract=False)

    return _void(D, k, M, j, sr, sq, X, x, rows), _matrix_rows(6, 8, row_value)


@intrinsic
def joint_rows(typingctx, D, k, A, i, X, a, p, M, j, n, q, nv):
    """A tree joint's residual rows ``[I, -I, -S] (a, a_parent, qdd) = A``: for ``r < 6``, ``D[k + r] =
    (A[i + r] - X[a + r]) + X[p + r]`` (the parent's term only where ``p >= 0``) ``- M[j + r n] * X[q] - ...
    - M[j + r n + nv - 1] * X[q + nv - 1]``, in that order (``copy``, ``sub``, ``add``, ``sub_mul``s, with one
    store a row)."""

    def codegen(context, builder, signature, args):
        intp = lambda at: context.cast(builder, args[at], signature.args[at], types.intp)
        k, i, a, p, j, n, q, nv = intp(1), intp(3), intp(5), intp(6), intp(8), intp(9), intp(10), intp(11)
        has_parent = builder.icmp_signed(">=", p, context.get_constant(types.intp, 0))
        value = cgutils.alloca_once(builder, _row_type(signature))
        for r in range(6):
            row = context.get_constant(types.intp, r)
            load = lambda at, first: builder.load(_row(context, builder, signature.args[at], args[at],
                                                       builder.add(first, row)), align=8)
            builder.store(builder.fsub(load(2, i), load(4, a)), value)
            with builder.if_then(has_parent):
                builder.store(builder.fadd(builder.load(value), load(4, p)), value)
            base = builder.add(j, builder.mul(row, n))
            with cgutils.for_range(builder, nv) as loop:
                m = builder.load(_row(context, builder, signature.args[7], args[7], builder.add(base, loop.index)),
                                 align=8)
                xq = builder.load(_row(context, builder, signature.args[4], args[4], builder.add(q, loop.index)),
                                  align=8)
                builder.store(builder.fsub(builder.load(value), builder.fmul(m, xq)), value)
            builder.store(builder.load(value), _row(context, builder, signature.args[0], args[0], builder.add(k, row)),
                          align=8)
        return context.get_dummy_value()

    return _void(D, k, A, i, X, a, p, M, j, n, q, nv), codegen


@intrinsic
def add_rows(typingctx, D, A, T, rows):
    """``D[i] = D[i] + A[i]`` for ``i < rows``, then ``T[0] = max_i |A[i]|`` and ``T[1] = max_i |D[i]|`` (the
    sums), each from zero, a NaN passed over (:func:`largest`): the loop of ``add`` and two ``largest`` into
    ``T``, with the running maxima in registers instead of stored and loaded back row after row."""

    def codegen(context, builder, signature, args):
        tops = [cgutils.alloca_once_value(builder, _constant(_row_type(signature), 0.0)) for _ in range(2)]
        count = context.cast(builder, args[3], signature.args[3], types.intp)
        with cgutils.for_range(builder, count) as loop:
            d_row = _row(context, builder, signature.args[0], args[0], loop.index)
            a = builder.load(_row(context, builder, signature.args[1], args[1], loop.index), align=8)
            d = builder.fadd(builder.load(d_row, align=8), a)
            builder.store(d, d_row, align=8)
            for top, value in zip(tops, (a, d)):
                builder.store(_largest(builder, builder.load(top), value), top)
        for row, top in enumerate(tops):
            t_row = _row(context, builder, signature.args[2], args[2], context.get_constant(types.intp, row))
            builder.store(builder.load(top), t_row, align=8)
        return context.get_dummy_value()

    return _void(D, A, T, rows), codegen


def _dot_value(context, builder, signature, args, at: int):
    """``0 + A[i] * B[j] + A[i + sa] * B[j + sb] + ...`` of the arguments ``A, i, sa, B, j, sb, count`` from
    ``at`` on, its running value in a register: a row of ``A``'s width."""
    intp = lambda k: context.cast(builder, args[k], signature.args[k], types.intp)
    i, sa, j, sb, n = intp(at + 1), intp(at + 2), intp(at + 4), intp(at + 5), intp(at + 6)
    value = cgutils.alloca_once_value(builder, _constant(_vector(_width(signature.args[at])), 0.0))
    with cgutils.for_range(builder, n) as loop:
        q = loop.index
        a = builder.load(_row(context, builder, signature.args[at], args[at], builder.add(i, builder.mul(q, sa))),
                         align=8)
        x = builder.load(_row(context, builder, signature.args[at + 3], args[at + 3],
                              builder.add(j, builder.mul(q, sb))), align=8)
        builder.store(builder.fadd(builder.load(value), builder.fmul(a, x)), value)
    return builder.load(value)


@intrinsic
def dot(typingctx, D, k, A, i, sa, B, j, sb, count):
    """``D[k] = 0 + A[i] * B[j] + A[i + sa] * B[j + sb] + ...`` (``count`` products, added to zero in that
    order): :func:`dot6` for any number of terms, its running value in a register."""

    def codegen(context, builder, signature, args):
        k = context.cast(builder, args[1], signature.args[1], types.intp)
        value = _dot_value(context, builder, signature, args, 2)
        builder.store(value, _row(context, builder, signature.args[0], args[0], k), align=8)
        return context.get_dummy_value()

    return _void(D, k, A, i, sa, B, j, sb, count), codegen


@intrinsic
def dotted(typingctx, A, i, sa, B, j, sb, count):
    """:func:`dot`'s value, ``0 + A[i] * B[j] + A[i + sa] * B[j + sb] + ...``, as a value of :func:`get`'s
    kind (a float of one state, a :class:`Row` of lanes), for arithmetic on values."""
    if _width(A) != _width(B):
        raise TypeError("elimination.vectors.dotted: operands of one width")
    value_type = types.float64 if _width(A) == 1 else ROW
    return value_type(A, i, sa, B, j, sb, count), lambda context, builder, signature, args: _dot_value(
        context, builder, signature, args, 0)


@intrinsic
def width(typingctx, A):
    """The lanes of ``A``'s rows, a compile-time constant (loops over it unroll): 1 for a 1-d array (one
    state), :data:`WIDTH` for a ``(rows, WIDTH)`` one."""
    lanes = _width(A)
    return types.intp(A), lambda context, builder, signature, args: context.get_constant(types.intp, lanes)


def _entry(context, builder, signature, args):
    """Pointer to lane ``args[2]`` of row ``args[1]`` of the array ``args[0]``."""
    intp = lambda at: context.cast(builder, args[at], signature.args[at], types.intp)
    row = _row(context, builder, signature.args[0], args[0], intp(1))  # (one state: the lane is 0)
    return builder.gep(builder.bitcast(row, ir.DoubleType().as_pointer()), [intp(2)], inbounds=True)


@intrinsic
def lane(typingctx, A, k, w):
    """Row ``k`` of ``A`` in lane ``w``: ``A[k, w]`` of lanes, ``A[k]`` of one state (``w`` is 0 there)."""
    _width(A)
    return types.float64(A, k, w), lambda context, builder, signature, args: builder.load(
        _entry(context, builder, signature, args), align=8)


@intrinsic
def set_lane(typingctx, A, k, w, value):
    """Row ``k`` of ``A`` in lane ``w`` set to ``value`` (:func:`lane`'s entry)."""
    _width(A)

    def codegen(context, builder, signature, args):
        x = context.cast(builder, args[3], signature.args[3], types.float64)
        builder.store(x, _entry(context, builder, signature, args), align=8)
        return context.get_dummy_value()

    return types.void(A, k, w, value), codegen


@njit(cache=True, inline="always")
def nonzero(A, k):
    """Whether row ``k`` of ``A`` is nonzero in some lane (a NaN is not zero): one state's ``A[k] != 0``, the
    test by which a kernel skips work that every lane would do on zeros."""
    for w in range(width(A)):
        if lane(A, k, w) != 0.0:
            return True
    return False


# -- rows held in registers ------------------------------------------------------------------------------------
# ``x = get(A, i)`` is row ``i``'s value: a float at width 1, a :class:`Row` (``<16 x double>``) at width 16;
# ``+ - * /`` between rows and floats are the vector instructions, and ``set(D, k, x)`` stores one.  A chain of
# operations on values stays in registers where the row operations above go through memory (LLVM cannot tell
# rows of one array apart, so each operation loads and stores): the arithmetic of a small block (a pose, an
# inertia) is written on values, once for every width.

class Row(types.Type):
    """The value of a row of :data:`WIDTH` lanes, held in registers (:func:`get`)."""

    def __init__(self):
        super().__init__(name=f"Row{WIDTH}")


ROW = Row()


@register_model(Row)
class _RowModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _vector(WIDTH))


def _value(context, builder, value_type, value, width: int = WIDTH):
    """A row value, or a float broadcast, as a row of ``width`` lanes (a ``double`` at width 1)."""
    if isinstance(value_type, Row):
        return value
    return _broadcast(builder, _vector(width), context.cast(builder, value, value_type, types.float64))


def _storable(name: str, D, x) -> int:
    """The width of ``D``, which a value ``x`` may be stored into: a :class:`Row` into a 1-d array is refused."""
    width = _width(D)
    if width == 1 and isinstance(x, Row):
        raise TypeError(f"elimination.vectors.{name}: a Row value into a one-state (1-d) array")
    return width


@intrinsic
def get(typingctx, A, i):
    """Row ``i`` of ``A`` as a value: a float of one state, a :class:`Row` of lanes."""
    value_type = types.float64 if _width(A) == 1 else ROW
    return value_type(A, i), lambda context, builder, signature, args: _load(context, builder, signature, args, 0)


@intrinsic
def zero(typingctx, A):
    """A zero value of ``A``'s width (a float of one state, a :class:`Row` of lanes): where a sum of values starts,
    as a row operation's ``fill(D, k, 0.0)``."""
    width = _width(A)
    return (types.float64 if width == 1 else ROW)(A), lambda context, builder, signature, args: _constant(
        _vector(width), 0.0)


@intrinsic
def set(typingctx, D, k, x):  # noqa: A001  (the store of get's values; the module's operations are its namespace)
    """Row ``k`` of ``D`` = ``x`` (a value of :func:`get`'s width, or a float in every lane)."""
    width = _storable("set", D, x)

    def codegen(context, builder, signature, args):
        _store(context, builder, signature, args, _value(context, builder, signature.args[2], args[2], width))
        return context.get_dummy_value()

    return types.void(D, k, x), codegen


@intrinsic
def set_where(typingctx, D, k, x, M, j):
    """Row ``k`` of ``D`` = ``x`` (a value, or a float in every lane) in the lanes where ``M[j]`` is not zero
    (:func:`put`'s rule); the other lanes keep their values."""
    width = _storable("set_where", D, x)

    def codegen(context, builder, signature, args):
        _store_where(context, builder, signature, args, 3, _value(context, builder, signature.args[2], args[2], width))
        return context.get_dummy_value()

    return _void(D, k, x, M, j), codegen


@intrinsic
def _magnitude(typingctx, a):
    return ROW(a), lambda context, builder, signature, args: _fabs(builder, args[0])


@overload(abs, inline="always")
def _absolute(a):
    if isinstance(a, Row):
        return lambda a: _magnitude(a)


def _arithmetic(instruction: str, operation):
    """``operation`` (``operator.add`` ...) between a :class:`Row` and a row or a float: the vector instruction."""

    @intrinsic
    def compute(typingctx, a, b):
        def codegen(context, builder, signature, args):
            x, y = (_value(context, builder, t, v) for t, v in zip(signature.args, args))
            return getattr(builder, instruction)(x, y)

        return ROW(a, b), codegen

    @overload(operation, inline="always")
    def _operation(a, b):
        if (isinstance(a, Row) or isinstance(b, Row)) and all(isinstance(t, (Row, types.Float, types.Integer))
                                                             for t in (a, b)):
            return lambda a, b: compute(a, b)


for _instruction, _operation in (("fadd", operator.add), ("fsub", operator.sub), ("fmul", operator.mul),
                                 ("fdiv", operator.truediv)):
    _arithmetic(_instruction, _operation)


@intrinsic
def _larger(typingctx, a, b):
    def codegen(context, builder, signature, args):
        x, y = (_value(context, builder, t, v) for t, v in zip(signature.args, args))
        return builder.select(builder.fcmp_ordered(">", y, x), y, x)

    return ROW(a, b), codegen


@overload(max, inline="always")
def _maximum(a, b):
    """``max(a, b)`` lane by lane, numba's rule for floats: ``b`` where ``b > a``, else ``a`` (a NaN ``b`` is
    passed over)."""
    if (isinstance(a, Row) or isinstance(b, Row)) and all(isinstance(t, (Row, types.Float, types.Integer))
                                                         for t in (a, b)):
        return lambda a, b: _larger(a, b)


@intrinsic
def _negated(typingctx, a):
    return ROW(a), lambda context, builder, signature, args: builder.fneg(args[0])


@overload(operator.neg, inline="always")
def _negation(a):
    if isinstance(a, Row):
        return lambda a: _negated(a)
