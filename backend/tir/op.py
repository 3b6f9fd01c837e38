"""Intrinsic calls of the loop IR: math functions and a few special forms.

`INTRINSICS` maps each name to how its result dtype follows from its arguments. The code
generator implements every one of them; the TIR evaluator too.

Special forms:
* `if_then_else(cond, t, f)` evaluates only the taken side (guards out-of-bounds reads),
* `likely(cond)` marks a condition that is usually true (a hint for loop partitioning),
* `reinterpret(x)` re-reads the bits of `x` as the call's dtype.
"""

from __future__ import annotations

from .expr import Call, ExprLike, PrimExpr, convert

_FLOAT_UNARY = (
    "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
    "acosh", "atanh", "erf", "sigmoid", "floor", "ceil", "round", "nearbyint", "trunc",
)  # fmt: skip
_SAME_UNARY = ("fabs", "bitwise_not", "popcount")
_SAME_BINARY = ("pow", "atan2", "fmod", "copysign", "bitwise_and", "bitwise_or", "bitwise_xor",
                "shift_left", "shift_right")  # fmt: skip
_PREDICATES = ("isnan", "isinf", "isfinite")

INTRINSICS: frozenset[str] = frozenset(
    _FLOAT_UNARY
    + _SAME_UNARY
    + _SAME_BINARY
    + _PREDICATES
    + ("if_then_else", "likely", "reinterpret")
)
"""Every intrinsic name a `Call` may use. `round` rounds half away from zero,
`nearbyint` half to even; `shift_right` is arithmetic for signed types."""

TENSOR_PREFIX = "tensor."
"""Calls named `tensor.<body>` are tensorized regions (`te.tensorize`): their arguments are
vectors (the accumulator, then each operand region), the body an LLVM emitter of
`codegen.tensor_intrinsics`."""


def is_intrinsic(name: str) -> bool:
    """Whether a `Call` may use `name`: an entry of `INTRINSICS` or a tensor intrinsic."""
    return name in INTRINSICS or name.startswith(TENSOR_PREFIX)


def call(name: str, *args: ExprLike) -> PrimExpr:
    """An intrinsic call whose dtype follows from its arguments."""
    if name not in INTRINSICS:
        raise ValueError(f"unknown intrinsic `{name}`")
    exprs = [convert(a) for a in args]
    if name in _SAME_BINARY and len(exprs) == 2:
        exprs[1] = convert(args[1], exprs[0])
        exprs[0] = convert(args[0], exprs[1])
    if name in _PREDICATES:
        from .dtypes import lanes_of, with_lanes

        return Call(with_lanes("bool", lanes_of(exprs[0].dtype)), name, exprs)
    if name == "if_then_else":
        return if_then_else(*args)
    return Call(exprs[0].dtype, name, exprs)


def if_then_else(condition: ExprLike, true_value: ExprLike, false_value: ExprLike) -> PrimExpr:
    """`condition ? true_value : false_value`, evaluating only the taken side."""
    cond = convert(condition)
    if isinstance(true_value, PrimExpr):
        t, f = true_value, convert(false_value, true_value)
    else:
        f = convert(false_value)
        t = convert(true_value, f)
    if t.dtype != f.dtype:
        raise TypeError(f"if_then_else: branches have dtypes {t.dtype} and {f.dtype}")
    return Call(t.dtype, "if_then_else", (cond, t, f))


def likely(condition: PrimExpr) -> PrimExpr:
    """`condition`, marked as usually true."""
    return Call(condition.dtype, "likely", (condition,))


def reinterpret(dtype: str, value: PrimExpr) -> PrimExpr:
    """The bits of `value` read as `dtype` (same width)."""
    return Call(dtype, "reinterpret", (value,))


def _unary(name: str):  # type: ignore[no-untyped-def]
    def make(x: ExprLike) -> PrimExpr:
        return call(name, x)

    make.__name__ = name
    make.__doc__ = f"The `{name}` intrinsic."
    return make


exp = _unary("exp")
log = _unary("log")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
erf = _unary("erf")
fabs = _unary("fabs")
floor = _unary("floor")
ceil = _unary("ceil")
round_ = _unary("round")
trunc = _unary("trunc")
isnan = _unary("isnan")


def pow_(x: ExprLike, y: ExprLike) -> PrimExpr:
    """`x ** y`."""
    return call("pow", x, y)
