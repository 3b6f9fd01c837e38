"""Every intrinsic of `tir.op.INTRINSICS` as LLVM IR.

Float functions use an LLVM intrinsic where one exists (`llvm.exp`, `llvm.sqrt`,
`llvm.floor`, ...: the backend vectorizes or calls libm), the polynomial versions of
`fastmath` for float32 `exp`/`tanh`/`sigmoid`/`erf`, and otherwise libm (`log1pf`,
`atan2`, ...), resolved from the process and called once per lane. float16 math runs in
float32. `round` rounds half away from zero (`llvm.round`), `nearbyint` half to even
(`llvm.roundeven`); `shift_right` is arithmetic on signed types; predicates (`isnan`, ...)
on integers are constants.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from llvmlite import ir

from ..tir import expr as tx
from ..tir.dtypes import element_of, is_bool, is_float, lanes_of, with_lanes
from ..tir.op import TENSOR_PREFIX
from . import fastmath
from .llvm_types import (
    F32,
    FAST_FLAGS,
    I1,
    CodegenError,
    constant,
    declare,
    element,
    intrinsic,
    is_unsigned,
    lanes,
    llvm_type,
)

if TYPE_CHECKING:
    from .llvm_ir import KernelEmitter

Step = Generator[Any, Any, Any]

_LLVM_UNARY = {
    "exp": "llvm.exp", "exp2": "llvm.exp2", "log": "llvm.log", "log2": "llvm.log2",
    "log10": "llvm.log10", "sqrt": "llvm.sqrt", "sin": "llvm.sin", "cos": "llvm.cos",
    "floor": "llvm.floor", "ceil": "llvm.ceil", "round": "llvm.round",
    "nearbyint": "llvm.roundeven", "trunc": "llvm.trunc", "fabs": "llvm.fabs",
}  # fmt: skip
_LIBM_UNARY = frozenset(
    ["exp10", "log1p", "expm1", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
     "asinh", "acosh", "atanh", "erf"]
)  # fmt: skip
_ROUNDING = frozenset(["floor", "ceil", "round", "nearbyint", "trunc"])


def _call_intrinsic(b: ir.IRBuilder, name: str, *args: ir.Value) -> ir.Value:
    ty = args[0].type
    fn = intrinsic(b.module, name, ty, [a.type for a in args], [ty])
    return b.call(fn, list(args))


def _libm(b: ir.IRBuilder, name: str, *args: ir.Value) -> ir.Value:
    """A libm function applied lane by lane (`name` gets an `f` suffix for float32)."""
    ty = args[0].type
    ety = element(ty)
    fname = name + ("f" if isinstance(ety, ir.FloatType) else "")
    fn = declare(b.module, fname, ety, [ety] * len(args))
    if not fn.attributes:
        fn.attributes.add("nounwind")
        fn.attributes.add("readnone")
    if not isinstance(ty, ir.VectorType):
        return b.call(fn, list(args))
    out: ir.Value = ir.Constant(ty, ir.Undefined)
    for k in range(ty.count):
        lane = ir.Constant(ir.IntType(32), k)
        r = b.call(fn, [b.extract_element(a, lane) for a in args])
        out = b.insert_element(out, r, lane)
    return out


def _float_unary(b: ir.IRBuilder, name: str, x: ir.Value, dtype: str) -> ir.Value:
    base = element_of(dtype)
    if base == "float16":
        wide_ty = F32 if lanes(x) == 1 else ir.VectorType(F32, lanes(x))
        r = _float_unary(b, name, b.fpext(x, wide_ty), with_lanes("float32", lanes(x)))
        return b.fptrunc(r, x.type)
    if base == "float32" and name in fastmath.FAST_FUNCTIONS:
        return fastmath.emit_fast(b, name, x)
    if name == "sigmoid":
        one = constant(dtype, 1.0)
        e = _call_intrinsic(b, "llvm.exp", b.fneg(x))
        return b.fdiv(one, b.fadd(one, e, flags=FAST_FLAGS), flags=FAST_FLAGS)
    if name == "rsqrt":
        # A correctly rounded divide: with `arcp`/`afn` LLVM emits an estimate and a Newton
        # step, which makes 1/sqrt(0) nan instead of inf (and `nsz` would lose -inf).
        return b.fdiv(constant(dtype, 1.0), _call_intrinsic(b, "llvm.sqrt", x))
    if name in _LLVM_UNARY:
        return _call_intrinsic(b, _LLVM_UNARY[name], x)
    if name in _LIBM_UNARY:
        return _libm(b, name, x)
    raise CodegenError(f"no float implementation of intrinsic `{name}`")


def _unary(b: ir.IRBuilder, name: str, x: ir.Value, dtype: str) -> ir.Value:
    if is_float(dtype):
        return _float_unary(b, name, x, dtype)
    if name in _ROUNDING:
        return x
    if name == "fabs":
        if is_unsigned(dtype):
            return x
        return b.call(
            intrinsic(b.module, "llvm.abs", x.type, [x.type, I1], [x.type]),
            [x, ir.Constant(I1, 0)],
        )
    if name == "bitwise_not":
        ones = ir.Constant(element(x.type), -1)
        return b.xor(x, ones if lanes(x) == 1 else ir.Constant(x.type, [ones] * lanes(x)))
    if name == "popcount":
        return x if is_bool(dtype) else _call_intrinsic(b, "llvm.ctpop", x)
    raise CodegenError(f"intrinsic `{name}` needs a float argument, got {dtype}")


def _binary(b: ir.IRBuilder, name: str, x: ir.Value, y: ir.Value, dtype: str) -> ir.Value:
    if name in ("pow", "atan2", "fmod", "copysign") and not is_float(dtype):
        raise CodegenError(f"intrinsic `{name}` needs float arguments, got {dtype}")
    if name in ("pow", "atan2") and element_of(dtype) == "float16":
        wide = F32 if lanes(x) == 1 else ir.VectorType(F32, lanes(x))
        r = _binary(b, name, b.fpext(x, wide), b.fpext(y, wide), with_lanes("float32", lanes(x)))
        return b.fptrunc(r, x.type)
    if name == "pow":
        return _call_intrinsic(b, "llvm.pow", x, y)
    if name == "atan2":
        return _libm(b, "atan2", x, y)
    if name == "fmod":
        return b.frem(x, y)
    if name == "copysign":
        return _call_intrinsic(b, "llvm.copysign", x, y)
    if name == "bitwise_and":
        return b.and_(x, y)
    if name == "bitwise_or":
        return b.or_(x, y)
    if name == "bitwise_xor":
        return b.xor(x, y)
    if name == "shift_left":
        return b.shl(x, y)
    if name == "shift_right":
        return b.lshr(x, y) if is_unsigned(dtype) else b.ashr(x, y)
    raise CodegenError(f"unknown binary intrinsic `{name}`")


def _predicate(b: ir.IRBuilder, name: str, x: ir.Value, dtype: str) -> ir.Value:
    n = lanes(x)
    if not is_float(dtype):
        return constant(with_lanes("bool", n), name == "isfinite")
    if name == "isnan":
        return b.fcmp_unordered("uno", x, x)
    inf = constant(with_lanes(element_of(dtype), n), float("inf"))
    a = _call_intrinsic(b, "llvm.fabs", x)
    if name == "isinf":
        return b.fcmp_ordered("==", a, inf)
    return b.fcmp_ordered("!=", a, inf)


_BINARY_NAMES = frozenset(
    ["pow", "atan2", "fmod", "copysign", "bitwise_and", "bitwise_or", "bitwise_xor",
     "shift_left", "shift_right"]
)  # fmt: skip
_PREDICATES = frozenset(["isnan", "isinf", "isfinite"])


def _match_lanes(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> tuple[ir.Value, ir.Value]:
    from .llvm_types import splat

    n = max(lanes(x), lanes(y))
    return (splat(b, x, n), splat(b, y, n)) if n > 1 else (x, y)


def emit_call(em: KernelEmitter, e: tx.Call) -> Step:
    """Emit the intrinsic call `e`; returns its value."""
    name = e.name
    if name == "if_then_else":
        if len(e.args) != 3:
            raise CodegenError("if_then_else takes three arguments")
        return (yield em.if_then_else(e.args[0], e.args[1], e.args[2]))
    if name == "likely":
        return (yield em.expr(e.args[0]))
    if name.startswith(TENSOR_PREFIX):
        from .tensor_intrinsics import emit_tensor_call

        return (yield emit_tensor_call(em, e))
    args = []
    for a in e.args:
        args.append((yield em.expr(a)))
    b = em.builder
    if not e.args:
        raise CodegenError(f"intrinsic `{name}` has no arguments")
    dtype = e.args[0].dtype
    if name == "reinterpret":
        target = llvm_type(e.dtype)
        if lanes_of(e.dtype) != lanes(args[0]):
            raise CodegenError("reinterpret cannot change the number of lanes")
        return b.bitcast(args[0], target)
    if name in _PREDICATES:
        return _predicate(b, name, args[0], dtype)
    if name in _BINARY_NAMES:
        if len(args) != 2:
            raise CodegenError(f"intrinsic `{name}` takes two arguments")
        x, y = _match_lanes(b, args[0], args[1])
        return _binary(b, name, x, y, dtype)
    handler: Callable[[ir.IRBuilder, str, ir.Value, str], ir.Value] = _unary
    if len(args) != 1:
        raise CodegenError(f"intrinsic `{name}` takes one argument")
    return handler(b, name, args[0], dtype)
