"""Reference implementations of elementwise and broadcasting operators, with TVM semantics.

What differs from plain numpy, and why (TVM's topi `broadcast.h` / `elemwise.h` and its
LLVM code generator):

* Results keep the input dtype: int8 + int8 wraps around in int8, float16 stays float16;
  comparisons give bool. Operands of a binary operator must have the same dtype.
* Integer `divide`, `trunc_divide` round toward zero and `mod`, `trunc_mod` take the sign
  of the dividend (C's `/` and `%`); `floor_divide`, `floor_mod` round toward minus
  infinity. Integer division by zero is an `EvalError` (it is undefined in C).
* Float `mod` is C's `fmod`; float `floor_mod` is `a - floor(a / b) * b` and `trunc_mod`
  is `a - trunc(a / b) * b`, computed in the input dtype, as TVM does.
* `round` rounds half away from zero (LLVM's `llvm.round`), not half to even.
* `maximum(a, b)` is `a > b ? a : b` and `minimum(a, b)` is `a < b ? a : b` (a NaN in `a`
  gives `b`), and `clip(x, lo, hi)` is `max(min(x, hi), lo)` with `lo`, `hi` first cast to
  the dtype of `x`; `nn.relu` is `max(x, 0)`; `sign` gives 0 for NaN.
* Float functions of integer tensors are computed in float64 and cast back.
* `fast_exp`, `fast_tanh`, `fast_erf` are computed exactly (TVM approximates them).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ....lang.attrs import Attrs
from ....lang.dtype import numpy_dtype
from ....lang.optable import OpTable
from ..values import EvalError, Value
from . import Impl

IMPLS: OpTable[Impl] = OpTable("reference implementation")
"""The reference implementations of this family (`op_impls.IMPLS` joins them)."""

Array = np.ndarray


def _tensor(result: object, dtype: np.dtype) -> Array:
    """`result` as an array (rank 0 included) of exactly `dtype`."""
    return np.asarray(result).astype(dtype, copy=False)


def _is_int(dtype: np.dtype) -> bool:
    return dtype.kind in "iu"


def _is_float(dtype: np.dtype) -> bool:
    return dtype.kind == "f"


def _operands(name: str, args: list[Value]) -> tuple[Array, Array]:
    lhs, rhs = args
    if not isinstance(lhs, np.ndarray) or not isinstance(rhs, np.ndarray):
        raise EvalError(f"operator `{name}` expects two tensors")
    if lhs.dtype != rhs.dtype:
        raise EvalError(
            f"operator `{name}` expects operands of one dtype, got {lhs.dtype} and {rhs.dtype}"
        )
    return lhs, rhs


def _check_nonzero(name: str, rhs: Array) -> None:
    if _is_int(rhs.dtype) and np.any(rhs == 0):
        raise EvalError(f"integer division by zero in `{name}`")


# ------------------------------------------------------------------------------- binary

BinaryFn = Callable[[Array, Array], object]


def _binary(names: tuple[str, ...], fn: BinaryFn, *, to_bool: bool = False) -> None:
    """Register `fn(lhs, rhs)` for `names`; the result is cast to bool or the input dtype."""

    def impl(args: list[Value], attrs: Attrs | None) -> Array:
        lhs, rhs = _operands(names[0], args)
        return _tensor(fn(lhs, rhs), np.dtype(np.bool_) if to_bool else lhs.dtype)

    impl.__name__ = names[0]
    IMPLS.register(*names)(impl)


def _trunc_div(a: Array, b: Array) -> object:
    if _is_int(a.dtype):
        # a - fmod(a, b) is an exact multiple of b, so floor division of it truncates
        return np.floor_divide(a - np.fmod(a, b), b)
    return np.trunc(a / b)


def _trunc_mod(a: Array, b: Array) -> object:
    if _is_int(a.dtype):
        return np.fmod(a, b)
    return a - np.trunc(a / b) * b


def _floor_div(a: Array, b: Array) -> object:
    if _is_int(a.dtype):
        return np.floor_divide(a, b)
    return np.floor(a / b)


def _floor_mod(a: Array, b: Array) -> object:
    if _is_int(a.dtype):
        return np.mod(a, b)
    return a - np.floor(a / b) * b


def _divide(a: Array, b: Array) -> object:
    return _trunc_div(a, b) if _is_int(a.dtype) else np.true_divide(a, b)


def _mod(a: Array, b: Array) -> object:
    return np.fmod(a, b)


def _power(a: Array, b: Array) -> object:
    if _is_int(a.dtype) and np.any(b < 0):
        raise EvalError("`power` of integers with a negative exponent")
    return np.power(a, b)


def _checked(name: str, fn: BinaryFn) -> BinaryFn:
    def run(a: Array, b: Array) -> object:
        _check_nonzero(name, b)
        return fn(a, b)

    return run


for _names, _fn in [
    (("divide",), _divide),
    (("trunc_divide",), _trunc_div),
    (("floor_divide",), _floor_div),
    (("mod",), _mod),
    (("trunc_mod",), _trunc_mod),
    (("floor_mod",), _floor_mod),
]:
    _binary(_names, _checked(_names[0], _fn))

_binary(("add",), np.add)
_binary(("subtract",), np.subtract)
_binary(("multiply",), np.multiply)
_binary(("power",), _power)
_binary(("maximum",), lambda a, b: np.where(a > b, a, b))
_binary(("minimum",), lambda a, b: np.where(a < b, a, b))
_binary(("bitwise_and",), np.bitwise_and)
_binary(("bitwise_or",), np.bitwise_or)
_binary(("bitwise_xor",), np.bitwise_xor)
_binary(("left_shift",), np.left_shift)
_binary(("right_shift",), np.right_shift)
# TVM's logical operators keep the operand dtype (bool for bool operands).
_binary(("logical_and",), np.logical_and)
_binary(("logical_or",), np.logical_or)
_binary(("logical_xor",), np.logical_xor)
_binary(("equal",), np.equal, to_bool=True)
_binary(("not_equal",), np.not_equal, to_bool=True)
_binary(("less",), np.less, to_bool=True)
_binary(("less_equal",), np.less_equal, to_bool=True)
_binary(("greater",), np.greater, to_bool=True)
_binary(("greater_equal",), np.greater_equal, to_bool=True)


# -------------------------------------------------------------------------------- unary

UnaryFn = Callable[[Array], object]


def _operand(name: str, args: list[Value]) -> Array:
    (x,) = args
    if not isinstance(x, np.ndarray):
        raise EvalError(f"operator `{name}` expects a tensor")
    return x


def _unary(names: tuple[str, ...], fn: UnaryFn, *, to_bool: bool = False) -> None:
    """Register `fn(x)` for `names`; the result is cast to bool or the input dtype."""

    def impl(args: list[Value], attrs: Attrs | None) -> Array:
        x = _operand(names[0], args)
        return _tensor(fn(x), np.dtype(np.bool_) if to_bool else x.dtype)

    impl.__name__ = names[0]
    IMPLS.register(*names)(impl)


def _float_fn(fn: UnaryFn) -> UnaryFn:
    """`fn` on floats in their own dtype; on integers and bools in float64."""

    def run(x: Array) -> object:
        return fn(x if _is_float(x.dtype) else x.astype(np.float64))

    return run


def _round_half_away(x: Array) -> object:
    if not _is_float(x.dtype):
        return x
    whole = np.trunc(x)
    frac = x - whole  # exact in floating point
    return whole + np.where(np.abs(frac) >= 0.5, np.sign(x), 0).astype(x.dtype)


def _rounding(fn: UnaryFn) -> UnaryFn:
    return lambda x: fn(x) if _is_float(x.dtype) else x


def _sign(x: Array) -> object:
    one = np.ones((), x.dtype)
    zero = np.zeros((), x.dtype)
    if x.dtype.kind == "u" or x.dtype == np.bool_:
        return np.where(x > zero, one, zero)
    return np.where(x > zero, one, np.where(x < zero, -one, zero))


_erf = np.frompyfunc(math.erf, 1, 1)


def _erf_fn(x: Array) -> object:
    return np.asarray(_erf(x.astype(np.float64)), dtype=np.float64)


def _sigmoid(x: Array) -> object:
    one = np.ones((), x.dtype)
    return one / (one + np.exp(-x))


def _rsqrt(x: Array) -> object:
    return np.ones((), x.dtype) / np.sqrt(x)


def _bitwise_not(x: Array) -> object:
    if not (_is_int(x.dtype) or x.dtype == np.bool_):
        raise EvalError("`bitwise_not` expects an integer tensor")
    return np.invert(x)


_FLOAT_FUNCTIONS: list[tuple[tuple[str, ...], UnaryFn]] = [
    (("exp", "fast_exp"), np.exp),
    (("log",), np.log),
    (("log2",), np.log2),
    (("log10",), np.log10),
    (("sqrt",), np.sqrt),
    (("rsqrt",), _rsqrt),
    (("sigmoid",), _sigmoid),
    (("tanh", "fast_tanh"), np.tanh),
    (("erf", "fast_erf"), _erf_fn),
    (("sin",), np.sin),
    (("cos",), np.cos),
    (("tan",), np.tan),
    (("asin",), np.arcsin),
    (("acos",), np.arccos),
    (("atan",), np.arctan),
    (("sinh",), np.sinh),
    (("cosh",), np.cosh),
    (("asinh",), np.arcsinh),
    (("acosh",), np.arccosh),
    (("atanh",), np.arctanh),
]
for _unames, _ufn in _FLOAT_FUNCTIONS:
    _unary(_unames, _float_fn(_ufn))

_unary(("floor",), _rounding(np.floor))
_unary(("ceil",), _rounding(np.ceil))
_unary(("trunc",), _rounding(np.trunc))
_unary(("round",), _round_half_away)
_unary(("sign",), _sign)
_unary(("negative",), np.negative)
_unary(("abs",), np.abs)
_unary(("logical_not",), np.logical_not)
_unary(("bitwise_not",), _bitwise_not)
_unary(("copy",), np.copy)
_unary(("zeros_like",), np.zeros_like)
_unary(("ones_like",), np.ones_like)
_unary(("isnan",), np.isnan, to_bool=True)
_unary(("isinf",), np.isinf, to_bool=True)
_unary(("isfinite",), np.isfinite, to_bool=True)
_unary(("nn.relu",), lambda x: np.where(x > np.zeros((), x.dtype), x, np.zeros((), x.dtype)))


# ------------------------------------------------------------- with attributes or 3 args


def _attrs(name: str, attrs: Attrs | None) -> Attrs:
    if attrs is None:
        raise EvalError(f"operator `{name}` needs attributes")
    return attrs


def _scalar_in(value: float, dtype: np.dtype) -> Array:
    """A Python number converted like TVM's `cast(dtype, const)`: truncated for integers
    (and, where C leaves it undefined, saturated to the integer type's range)."""
    if dtype == np.bool_:
        return np.asarray(value != 0)
    number = np.float64(value)
    if _is_int(dtype):
        info = np.iinfo(dtype)
        number = np.clip(np.trunc(number), info.min, info.max)
    return np.asarray(number).astype(dtype)


@IMPLS.register("clip")
def clip(args: list[Value], attrs: Attrs | None) -> Array:
    """`max(min(x, a_max), a_min)`, bounds cast to the dtype of x."""
    x = _operand("clip", args)
    a = _attrs("clip", attrs)
    hi = _scalar_in(a.a_max, x.dtype)
    lo = _scalar_in(a.a_min, x.dtype)
    upper = np.where(x < hi, x, hi)
    return _tensor(np.where(upper > lo, upper, lo), x.dtype)


@IMPLS.register("nn.leaky_relu")
def leaky_relu(args: list[Value], attrs: Attrs | None) -> Array:
    """`x > 0 ? x : x * alpha`."""
    x = _operand("nn.leaky_relu", args)
    alpha = _scalar_in(_attrs("nn.leaky_relu", attrs).alpha, x.dtype)
    return _tensor(np.where(x > np.zeros((), x.dtype), x, x * alpha), x.dtype)


@IMPLS.register("cast")
def cast(args: list[Value], attrs: Attrs | None) -> Array:
    """Elementwise conversion to `dtype` (floats to integers truncate; to bool is `!= 0`)."""
    x = _operand("cast", args)
    target = numpy_dtype(_attrs("cast", attrs).dtype)
    return _tensor(x.astype(target), target)


@IMPLS.register("cast_like")
def cast_like(args: list[Value], attrs: Attrs | None) -> Array:
    """`cast(data, dtype of dtype_like)`."""
    x, like = args
    if not isinstance(x, np.ndarray) or not isinstance(like, np.ndarray):
        raise EvalError("operator `cast_like` expects two tensors")
    return _tensor(x.astype(like.dtype), like.dtype)


@IMPLS.register("reinterpret")
def reinterpret(args: list[Value], attrs: Attrs | None) -> Array:
    """The bits of each element read as `dtype` (same bit width)."""
    x = _operand("reinterpret", args)
    target = numpy_dtype(_attrs("reinterpret", attrs).dtype)
    if target.itemsize != x.dtype.itemsize:
        raise EvalError(f"`reinterpret` from {x.dtype} to {target} changes the bit width")
    return np.ascontiguousarray(x).view(target).reshape(x.shape)


@IMPLS.register("where")
def where(args: list[Value], attrs: Attrs | None) -> Array:
    """`condition ? x : y`, broadcasting all three; the condition is true where nonzero."""
    cond, x, y = args
    if not all(isinstance(v, np.ndarray) for v in args):
        raise EvalError("operator `where` expects three tensors")
    if x.dtype != y.dtype:
        raise EvalError(f"operator `where` expects x and y of one dtype, got {x.dtype}, {y.dtype}")
    return _tensor(np.where(cond.astype(np.bool_, copy=False), x, y), x.dtype)


# Not in IMPLS: `fixed_point_multiply` is not a declared operator yet (quantization will
# declare it); tests call the function directly.
def fixed_point_multiply(args: list[Value], attrs: Attrs | None) -> Array:
    """`round(x * multiplier * 2**(shift - 31))` on int32, as TVM's `q_multiply_shift`:
    shifted left by `max(shift, 0)`, multiplied in int64, plus `2**(r - 1)` and shifted
    right arithmetically by `r = 31 + max(-shift, 0)`."""
    x = _operand("fixed_point_multiply", args)
    a = _attrs("fixed_point_multiply", attrs)
    shift = int(a.shift)
    wide = x.astype(np.int64) << max(shift, 0)
    wide = wide * np.int64(a.multiplier)
    total = 31 + max(-shift, 0)
    wide = (wide + (np.int64(1) << (total - 1))) >> total
    return _tensor(wide, np.dtype(np.int32))
