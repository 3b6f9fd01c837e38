"""Call generators of the elementwise and broadcast operators (unary, binary, comparisons,
logical and bitwise operators, casts, `where`, the constant fills, `arange`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...lang.dtype import numpy_dtype
from ...lang.op import Op
from ...lang.optable import OpTable
from ...lang.types import TensorType
from .core import ArgSpec, Generator, Nonzero, OpCall, Tape, _call, _input, _shape, kind

GENERATORS: OpTable[Generator] = OpTable("test generator")
"""The call generators of this family (`typed_ops.GENERATORS` joins the families)."""


FLOAT_UNARY = (
    "exp", "fast_exp", "log", "log2", "log10", "sqrt", "rsqrt", "sigmoid", "tanh",
    "fast_tanh", "erf", "fast_erf", "floor", "ceil", "round", "trunc", "sin", "cos", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
)  # fmt: skip
NUMERIC_UNARY = ("negative", "abs", "sign")
ANY_UNARY = ("copy", "zeros_like", "ones_like", "annotation.stop_fusion", "annotation.checkpoint")
INT_DIVISION = ("divide", "floor_divide", "floor_mod", "mod", "trunc_divide", "trunc_mod")
NUMERIC_BINARY = ("add", "subtract", "multiply", "maximum", "minimum", *INT_DIVISION)
COMPARISON = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
LOGICAL = ("logical_and", "logical_or", "logical_xor")
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor")
SHIFTS = ("left_shift", "right_shift")


@GENERATORS.register(*FLOAT_UNARY, "isnan", "isinf", "isfinite")
def _float_unary(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="f")
    return None if x is None else _call(op, [x])


@GENERATORS.register(*NUMERIC_UNARY)
def _numeric_unary(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="fi")
    return None if x is None else _call(op, [x])


@GENERATORS.register(*ANY_UNARY)
def _any_unary(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x)
    return None if x is None else _call(op, [x])


@GENERATORS.register("logical_not")
def _logical_not(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="b")
    return None if x is None else _call(op, [x])


@GENERATORS.register("bitwise_not")
def _bitwise_not(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="ib")
    return None if x is None else _call(op, [x])


def broadcast_partner(t: Tape, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with `shape` (the same, a suffix, with 1s, a scalar, ...)."""
    form = t.choose(0, 5)
    if form == 0:
        return shape
    if form == 1:
        return shape[t.choose(0, len(shape)) :]
    if form == 2:
        return tuple(1 if t.maybe(5) else d for d in shape)
    if form == 3:
        return ()
    if form == 4:
        return (*t.dims(t.choose(1, 2), 1, 3), *shape)
    return tuple(t.choose(1, 3) if d == 1 else d for d in shape)


def _binary(t: Tape, op: Op, x: TensorType, rhs: Callable[[TensorType], ArgSpec]) -> OpCall:
    other = TensorType(broadcast_partner(t, _shape(x)), x.dtype)
    if t.maybe(3):
        return _call(op, [other, x], primary=1)
    return _call(op, [x, rhs(other)])


@GENERATORS.register(*NUMERIC_BINARY)
def _numeric_binary(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="fi")
    if x is None:
        return None
    if op.name in INT_DIVISION and kind(x.dtype) == "i":  # x is always the dividend
        return _call(op, [x, Nonzero(TensorType(broadcast_partner(t, _shape(x)), x.dtype))])
    return _binary(t, op, x, lambda o: o)


@GENERATORS.register("power")
def _power(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="f")
    return None if x is None else _binary(t, op, x, lambda o: o)


@GENERATORS.register(*COMPARISON)
def _comparison(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x)
    return None if x is None else _binary(t, op, x, lambda o: o)


@GENERATORS.register(*LOGICAL)
def _logical(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="b")
    return None if x is None else _binary(t, op, x, lambda o: o)


@GENERATORS.register(*BITWISE)
def _bitwise(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="ib")
    return None if x is None else _binary(t, op, x, lambda o: o)


@GENERATORS.register(*SHIFTS)
def _shift(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="i")
    if x is None:
        return None
    amounts = np.asarray(t.choose(0, 3), dtype=x.dtype)  # a shift by the width is undefined
    return _call(op, [x, amounts])


@GENERATORS.register("clip")
def _clip(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="fi")
    if x is None:
        return None
    lo = float(t.choose(-4, 1)) / 2
    return _call(op, [x], a_min=lo, a_max=lo + t.choose(0, 6) / 2)


@GENERATORS.register("cast")
def _cast(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x)
    return None if x is None else _call(op, [x], dtype=t.pick((x.dtype, *t.dtypes)))


@GENERATORS.register("reinterpret")
def _reinterpret(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, kinds="fi")
    if x is None:
        return None
    size = numpy_dtype(x.dtype).itemsize
    same = [d for d in t.dtypes if kind(d) != "b" and numpy_dtype(d).itemsize == size]
    return _call(op, [x], dtype=t.pick((x.dtype, *same)))


@GENERATORS.register("cast_like")
def _cast_like(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x)
    if x is None:
        return None
    like = TensorType(t.dims(t.choose(0, 2)), t.pick((x.dtype, *t.dtypes)))
    return _call(op, [x, like])


@GENERATORS.register("where")
def _where(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x)
    if x is None:
        return None
    first = broadcast_partner(t, _shape(x))
    second = broadcast_partner(t, np.broadcast_shapes(_shape(x), first))
    if kind(x.dtype) == "b" and t.maybe(5):  # x is the condition
        dtype = t.pick(t.dtypes)
        return _call(op, [x, TensorType(first, dtype), TensorType(second, dtype)])
    cond = TensorType(first, "bool")
    other = TensorType(second, x.dtype)
    if t.maybe(5):
        return _call(op, [cond, other, x], primary=2)
    return _call(op, [cond, x, other], primary=1)


@GENERATORS.register("full_like")
def _full_like(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x)
    return None if x is None else _call(op, [x, TensorType((), x.dtype)])


@GENERATORS.register("full")
def _full(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(0,))
    if x is None:
        return None
    dtype = t.pick(("", *t.dtypes))
    return _call(op, [x], shape=t.dims(t.choose(0, 3)), dtype=dtype)


@GENERATORS.register("zeros", "ones")
def _init(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    return _call(op, [], primary=None, shape=t.dims(t.choose(0, 3)), dtype=t.pick(t.dtypes))


@GENERATORS.register("arange")
def _arange(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    dtype = t.dtype("fi")
    if dtype is None:
        return None
    count = t.choose(1, 6)
    unsigned = numpy_dtype(dtype).kind == "u"
    start: float = t.choose(0 if unsigned else -3, 3)
    step: float = t.pick((1, 2, 3) if unsigned else (1, 2, -1, 3))
    if unsigned and step < 0:
        start += count
    if kind(dtype) == "f" and t.maybe(3):
        start, step = start / 2, step / 2
    stop = start + count * step
    if kind(dtype) == "f":
        start, stop, step = float(start), float(stop), float(step)
    values = [np.asarray(v, dtype=dtype) for v in (start, stop, step)]
    return _call(op, values, primary=None, start=start, stop=stop, step=step, dtype=dtype)
