"""Compute definitions of the elementwise and broadcasting operators (`lang/opdefs/tensor.py`),
and the small helpers the other compute modules share.

Semantics follow the reference implementations (`backend/runtime/op_impls/elementwise.py`):
results keep the input dtype, integer `divide`/`mod` truncate, `floor_*` floor, float functions
of integer tensors are computed in float64 and cast back, `round` rounds half away from zero,
`maximum(a, b)` is `a > b ? a : b`, `clip` bounds are truncated (and saturated) into the dtype.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ....lang.attrs import Attrs
from ....lang.dtype import numpy_dtype
from ....lang.optable import OpTable
from ....lang.types import AnyDim, TensorType, TupleType, Type
from ...te.tensor import Tensor, compute
from ...tir import op as tir_op
from ...tir.dtypes import INDEX_DTYPE, is_bool, is_float, is_uint
from ...tir.expr import (
    And,
    Not,
    Or,
    PrimExpr,
    cast,
    const,
    eq,
    ne,
    select,
    truncdiv,
    truncmod,
)
from ..symbolic import dim_expr
from . import ComputeFn

COMPUTES: OpTable[ComputeFn] = OpTable("compute definition")
"""The compute definitions of this family (`computes.COMPUTES` joins the families)."""

ELEMWISE = "elemwise"
BROADCAST = "broadcast"
INJECTIVE = "injective"
COMM_REDUCE = "comm_reduce"

# ------------------------------------------------------------------------- shared helpers


def out_tensor_types(out_type: Type) -> list[TensorType]:
    """The tensor types of a call's result (one, or the fields of a tuple)."""
    if isinstance(out_type, TupleType):
        fields = list(out_type.fields)
    else:
        fields = [out_type]
    for f in fields:
        if not isinstance(f, TensorType) or any(isinstance(d, AnyDim) for d in f.shape):
            raise TypeError(f"compute definitions need static tensor types, got {f}")
    return fields  # type: ignore[return-value]


def out_shape(out_type: Type, k: int = 0) -> tuple[int, ...]:
    """The static shape of output `k`."""
    # a dynamic-shape kernel's symbolic dimensions come through as loop-IR variables
    return tuple(dim_expr(d) for d in out_tensor_types(out_type)[k].shape)  # type: ignore[misc]


def out_dtype(out_type: Type, k: int = 0) -> str:
    """The dtype of output `k`."""
    return out_tensor_types(out_type)[k].dtype


def flat_inputs(inputs: Sequence[Any]) -> list[Tensor]:
    """The input tensors with tuple arguments flattened (an operator over a tuple, such as
    `concatenate`, may be given the tuple's fields or the tuple itself)."""
    out: list[Tensor] = []
    stack = [list(inputs)]
    while stack:
        items = stack.pop()
        if not items:
            continue
        head, rest = items[0], items[1:]
        stack.append(rest)
        if isinstance(head, (list, tuple)):
            stack.append(list(head))
        else:
            out.append(head)
    return out


def static_dims(t: Tensor) -> tuple[int, ...]:
    """The static integer shape of a tensor (in a dynamic-shape kernel, a symbolic
    dimension stays its loop-IR variable)."""
    from ...tir.expr import IntImm, Var

    dims: list[Any] = []
    for d in t.shape:
        if isinstance(d, IntImm):
            dims.append(d.value)
        elif isinstance(d, Var):
            dims.append(d)
        else:
            raise TypeError(f"tensor {t.name} has a non-constant dimension")
    return tuple(dims)


def scalar_const(value: float | int | bool, dtype: str) -> PrimExpr:
    """A Python number as a `dtype` constant the way TVM casts an attribute: truncated for
    integers and saturated to their range, `!= 0` for bool."""
    if is_bool(dtype):
        return const(bool(value != 0), dtype)
    if is_float(dtype):
        return const(float(np.asarray(value, dtype=numpy_dtype(dtype))), dtype)
    info = np.iinfo(numpy_dtype(dtype))
    number = float(np.trunc(np.float64(value)))
    return const(int(min(max(number, info.min), info.max)), dtype)


def broadcast_load(t: Tensor, indices: Sequence[PrimExpr]) -> PrimExpr:
    """`t` read at output `indices` with numpy broadcasting (right-aligned; size-1
    dimensions read index 0)."""
    lead = len(indices) - t.ndim
    dims = static_dims(t)
    mapped = [const(0) if d == 1 else indices[lead + k] for k, d in enumerate(dims)]
    return t[tuple(mapped)]


def elementwise(shape: Sequence[int], fn: Callable[..., PrimExpr], name: str, tag: str) -> Tensor:
    """`compute(shape, fn, name, tag)` with `fn` taking the index tuple."""
    return compute(tuple(shape), lambda *i: fn(i), name=name, tag=tag)  # type: ignore[no-any-return]


def as_bool(x: PrimExpr) -> PrimExpr:
    """`x != 0` as a bool (itself when it is a bool)."""
    return x if is_bool(x.dtype) else ne(x, const(0, x.dtype))


# -------------------------------------------------------------------------------- unary

UnaryBody = Callable[[PrimExpr], PrimExpr]


def _unary(name: str, body: UnaryBody, to_bool: bool = False) -> None:
    def fn(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
        (x,) = flat_inputs(inputs)
        shape = static_dims(x)
        return [elementwise(shape, lambda i: body(x[i]), name, ELEMWISE)]

    fn.__name__ = name
    fn.__doc__ = f"The compute of `{name}`."
    COMPUTES.register(name)(fn)


def _float_fn(intrinsic: str) -> UnaryBody:
    """The intrinsic on floats in their dtype, on integers and bools in float64."""

    def body(x: PrimExpr) -> PrimExpr:
        if is_float(x.dtype):
            return tir_op.call(intrinsic, x)
        return cast(x.dtype, tir_op.call(intrinsic, cast("float64", x)))

    return body


def _rounding(intrinsic: str) -> UnaryBody:
    return lambda x: tir_op.call(intrinsic, x) if is_float(x.dtype) else x


def _sign(x: PrimExpr) -> PrimExpr:
    one, zero = const(1, x.dtype), const(0, x.dtype)
    if is_bool(x.dtype):
        return x
    if is_uint(x.dtype):
        return select(x > zero, one, zero)
    return select(x > zero, one, select(x < zero, const(-1, x.dtype), zero))


def _abs(x: PrimExpr) -> PrimExpr:
    if is_float(x.dtype):
        return tir_op.fabs(x)
    if is_bool(x.dtype) or is_uint(x.dtype):
        return x
    return select(x < const(0, x.dtype), -x, x)


def _negative(x: PrimExpr) -> PrimExpr:
    return x if is_bool(x.dtype) else const(0, x.dtype) - x


def _logical_not(x: PrimExpr) -> PrimExpr:
    return Not(x) if is_bool(x.dtype) else cast(x.dtype, eq(x, const(0, x.dtype)))


def _bitwise_not(x: PrimExpr) -> PrimExpr:
    return Not(x) if is_bool(x.dtype) else tir_op.call("bitwise_not", x)


def _predicate(intrinsic: str, for_non_float: bool) -> UnaryBody:
    return lambda x: (
        tir_op.call(intrinsic, x) if is_float(x.dtype) else const(for_non_float, "bool")
    )


_FLOAT_FUNCTIONS = {
    "exp": "exp",
    "fast_exp": "exp",
    "log": "log",
    "log2": "log2",
    "log10": "log10",
    "sqrt": "sqrt",
    "rsqrt": "rsqrt",
    "sigmoid": "sigmoid",
    "tanh": "tanh",
    "fast_tanh": "tanh",
    "erf": "erf",
    "fast_erf": "erf",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "asin": "asin",
    "acos": "acos",
    "atan": "atan",
    "sinh": "sinh",
    "cosh": "cosh",
    "asinh": "asinh",
    "acosh": "acosh",
    "atanh": "atanh",
}
for _name, _intrinsic in _FLOAT_FUNCTIONS.items():
    _unary(_name, _float_fn(_intrinsic))

for _name, _intrinsic in [("floor", "floor"), ("ceil", "ceil"), ("trunc", "trunc")]:
    _unary(_name, _rounding(_intrinsic))
_unary("round", _rounding("round"))
_unary("sign", _sign)
_unary("negative", _negative)
_unary("abs", _abs)
_unary("logical_not", _logical_not)
_unary("bitwise_not", _bitwise_not)
_unary("copy", lambda x: x)
_unary("zeros_like", lambda x: const(0, x.dtype))
_unary("ones_like", lambda x: const(1, x.dtype))
_unary("isnan", _predicate("isnan", False))
_unary("isinf", _predicate("isinf", False))
_unary("isfinite", _predicate("isfinite", True))


# ------------------------------------------------------------------------------- binary

BinaryBody = Callable[[PrimExpr, PrimExpr], PrimExpr]


def _binary(name: str, body: BinaryBody) -> None:
    def fn(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
        lhs, rhs = flat_inputs(inputs)
        shape = out_shape(out_type)
        return [
            elementwise(
                shape,
                lambda i: body(broadcast_load(lhs, i), broadcast_load(rhs, i)),
                name,
                BROADCAST,
            )
        ]

    fn.__name__ = name
    fn.__doc__ = f"The compute of `{name}` (numpy broadcasting)."
    COMPUTES.register(name)(fn)


def _by_kind(
    for_float: BinaryBody, for_int: BinaryBody, for_bool: BinaryBody | None = None
) -> BinaryBody:
    def body(a: PrimExpr, b: PrimExpr) -> PrimExpr:
        if is_float(a.dtype):
            return for_float(a, b)
        if is_bool(a.dtype) and for_bool is not None:
            return for_bool(a, b)
        return for_int(a, b)

    return body


def _trunc_div_float(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return tir_op.trunc(a / b)


def _logical(combine: BinaryBody) -> BinaryBody:
    def body(a: PrimExpr, b: PrimExpr) -> PrimExpr:
        result = combine(as_bool(a), as_bool(b))
        return result if is_bool(a.dtype) else cast(a.dtype, result)

    return body


def _bitwise(intrinsic: str, for_bool: BinaryBody) -> BinaryBody:
    return lambda a, b: for_bool(a, b) if is_bool(a.dtype) else tir_op.call(intrinsic, a, b)


_binary("add", _by_kind(lambda a, b: a + b, lambda a, b: a + b, Or))
_binary("subtract", lambda a, b: a - b)
_binary("multiply", _by_kind(lambda a, b: a * b, lambda a, b: a * b, And))
_binary("divide", _by_kind(lambda a, b: a / b, truncdiv))
_binary("power", tir_op.pow_)
_binary("maximum", lambda a, b: select(a > b, a, b))
_binary("minimum", lambda a, b: select(a < b, a, b))
_binary("floor_divide", _by_kind(lambda a, b: tir_op.floor(a / b), lambda a, b: a // b))
_binary("floor_mod", _by_kind(lambda a, b: a - tir_op.floor(a / b) * b, lambda a, b: a % b))
_binary("mod", _by_kind(lambda a, b: tir_op.call("fmod", a, b), truncmod))
_binary("trunc_divide", _by_kind(_trunc_div_float, truncdiv))
_binary("trunc_mod", _by_kind(lambda a, b: a - _trunc_div_float(a, b) * b, truncmod))
_binary("equal", eq)
_binary("not_equal", ne)
_binary("less", lambda a, b: a < b)
_binary("less_equal", lambda a, b: a <= b)
_binary("greater", lambda a, b: a > b)
_binary("greater_equal", lambda a, b: a >= b)
_binary("logical_and", _logical(And))
_binary("logical_or", _logical(Or))
_binary("logical_xor", _logical(ne))
_binary("bitwise_and", _bitwise("bitwise_and", And))
_binary("bitwise_or", _bitwise("bitwise_or", Or))
_binary("bitwise_xor", _bitwise("bitwise_xor", ne))
_binary("left_shift", lambda a, b: tir_op.call("shift_left", a, b))
_binary("right_shift", lambda a, b: tir_op.call("shift_right", a, b))


# ---------------------------------------------------------- with attributes or 3 args


@COMPUTES.register("clip")
def clip(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`max(min(x, a_max), a_min)` with the bounds cast into the dtype of x."""
    (x,) = flat_inputs(inputs)
    assert attrs is not None
    hi = scalar_const(attrs.a_max, x.dtype)
    lo = scalar_const(attrs.a_min, x.dtype)

    def body(i: tuple[PrimExpr, ...]) -> PrimExpr:
        v = x[i]
        upper = select(v < hi, v, hi)
        return select(upper > lo, upper, lo)

    return [elementwise(static_dims(x), body, "clip", ELEMWISE)]


@COMPUTES.register("cast")
def cast_(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Each element converted to `dtype` (float to int truncates, to bool is `!= 0`)."""
    (x,) = flat_inputs(inputs)
    dtype = out_dtype(out_type)
    return [elementwise(static_dims(x), lambda i: cast(dtype, x[i]), "cast", ELEMWISE)]


@COMPUTES.register("cast_like")
def cast_like(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`cast(data, dtype of dtype_like)`."""
    x, like = flat_inputs(inputs)
    return [elementwise(static_dims(x), lambda i: cast(like.dtype, x[i]), "cast", ELEMWISE)]


@COMPUTES.register("reinterpret")
def reinterpret(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The bits of each element read as `dtype`."""
    (x,) = flat_inputs(inputs)
    dtype = out_dtype(out_type)
    return [
        elementwise(
            static_dims(x), lambda i: tir_op.reinterpret(dtype, x[i]), "reinterpret", ELEMWISE
        )
    ]


@COMPUTES.register("where")
def where(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`condition ? x : y`, all three broadcast; the condition is true where nonzero."""
    cond, x, y = flat_inputs(inputs)

    def body(i: tuple[PrimExpr, ...]) -> PrimExpr:
        c = as_bool(broadcast_load(cond, i))
        return select(c, broadcast_load(x, i), broadcast_load(y, i))

    return [elementwise(out_shape(out_type), body, "where", BROADCAST)]


@COMPUTES.register("full_like")
def full_like(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The shape and dtype of `data`, every element `fill_value`."""
    data, fill = flat_inputs(inputs)
    return [
        elementwise(
            static_dims(data),
            lambda i: cast(data.dtype, fill[()]),
            "full_like",
            ELEMWISE,
        )
    ]


def _filled(value: Callable[[str], PrimExpr], name: str) -> Callable[..., list[Tensor]]:
    def fn(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
        dtype = out_dtype(out_type)
        return [elementwise(out_shape(out_type), lambda i: value(dtype), name, ELEMWISE)]

    fn.__name__ = name
    fn.__doc__ = f"The compute of `{name}`: a constant tensor of the call's type."
    return fn


COMPUTES.register("zeros")(_filled(lambda t: const(0, t), "zeros"))
COMPUTES.register("ones")(_filled(lambda t: const(1, t), "ones"))


@COMPUTES.register("full")
def full(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """A tensor of the call's type, every element `fill_value` cast to its dtype."""
    (fill,) = flat_inputs(inputs)
    dtype = out_dtype(out_type)
    return [elementwise(out_shape(out_type), lambda i: cast(dtype, fill[()]), "full", ELEMWISE)]


@COMPUTES.register("arange")
def arange(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`start + i * step`, computed in the inputs' dtype (int64 for integers), cast to
    `dtype`; the length comes from the call's (static) type."""
    start, _stop, step = flat_inputs(inputs)
    dtype = out_dtype(out_type)

    def body(i: tuple[PrimExpr, ...]) -> PrimExpr:
        (k,) = i
        if is_float(start.dtype):
            value = start[()] + step[()] * cast(start.dtype, k)
        else:
            value = cast(INDEX_DTYPE, start[()]) + cast(INDEX_DTYPE, step[()]) * k
        return cast(dtype, value)

    return [elementwise(out_shape(out_type), body, "arange", INJECTIVE)]
