"""Loop-IR dtypes as LLVM types, constants, and small value helpers shared by the emitter.

A `bool` is `i1` in registers and `i8` in memory (one byte per element, 0 or 1); `float16` is
LLVM `half`; `handle` is an opaque `ptr`. Vector dtypes (`float32x16`) are LLVM fixed vectors.
"""

from __future__ import annotations

from llvmlite import ir

from ...lang.diagnostics import Error
from ..tir.dtypes import bits_of, element_of, is_bool, is_float, is_uint, lanes_of

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()

FAST_FLAGS = ("nsz", "arcp", "contract", "afn")
"""Fast-math flags on float arithmetic: LLVM's `fast` without `nnan`, `ninf` and `reassoc`, so
NaN and infinity still behave as IEEE says (`isnan` is not folded away, `x * 0` is not 0 for
inf, `x*s + (x - x*s)` is not folded to `x` when `s` is NaN), while contraction (FMA) and
reciprocal tricks are on. `nsz` lets LLVM ignore the sign of zero."""

ACCUMULATE_FLAGS = (*FAST_FLAGS, "reassoc")
"""`FAST_FLAGS` plus reassociation, on the add of an accumulation (`acc[i] = acc[i] + x`) only:
what lets LLVM vectorize and interleave a reduction."""


class FunctionPointerType(ir.PointerType):
    """An opaque `ptr` that remembers the function type it points to, so llvmlite can emit
    an indirect call through it (llvmlite needs the callee's type; LLVM pointers have none)."""

    def __init__(self, function_type: ir.FunctionType) -> None:
        super().__init__()
        self.pointee = function_type


class CodegenError(Error):
    """The loop IR handed to the code generator is not in the form it accepts."""


def scalar_type(dtype: str, memory: bool = False) -> ir.Type:
    """The LLVM type of one element of `dtype` (`memory`: as stored, so bool is `i8`)."""
    base = element_of(dtype)
    if base == "handle":
        return PTR
    if is_bool(base):
        return I8 if memory else I1
    if is_float(base):
        bits = bits_of(base)
        if base == "float16":
            return ir.HalfType()
        if bits == 32:
            return F32
        if bits == 64:
            return F64
        raise CodegenError(f"dtype `{dtype}` is not supported by the code generator")
    return ir.IntType(bits_of(base))


def llvm_type(dtype: str, memory: bool = False) -> ir.Type:
    """The LLVM type of a (possibly vector) `dtype`."""
    elem = scalar_type(dtype, memory)
    lanes = lanes_of(dtype)
    return elem if lanes == 1 else ir.VectorType(elem, lanes)


def elem_bytes(dtype: str) -> int:
    """Bytes one element of `dtype` takes in memory (bool: 1)."""
    return 1 if is_bool(dtype) else max(1, bits_of(dtype) // 8)


def _int_value(value: int, bits: int) -> int:
    """`value` wrapped to a signed `bits`-bit integer (how LLVM spells the constant)."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if bits > 1 and value >= 1 << (bits - 1) else value


def scalar_constant(dtype: str, value: float | int | bool) -> ir.Constant:
    """An LLVM constant of scalar dtype `dtype`."""
    ty = scalar_type(dtype)
    if isinstance(ty, ir.IntType):
        if ty.width == 1:
            return ir.Constant(ty, 1 if value else 0)
        return ir.Constant(ty, _int_value(int(value), ty.width))
    return ir.Constant(ty, float(value))


def constant(dtype: str, value: float | int | bool) -> ir.Constant:
    """An LLVM constant of `dtype` (a splat for vector dtypes). Equal constants are one
    object (constants are immutable), which lets code generation compare them by identity."""
    key = (dtype, type(value), repr(value))
    c = _CONSTANTS.get(key)
    if c is None:
        c = scalar_constant(element_of(dtype), value)
        lanes = lanes_of(dtype)
        if lanes > 1:
            c = ir.Constant(ir.VectorType(c.type, lanes), [c] * lanes)
        if len(_CONSTANTS) >= _MAX_CONSTANTS:
            _CONSTANTS.clear()
        _CONSTANTS[key] = c
    return c


_CONSTANTS: dict[tuple[str, type, str], ir.Constant] = {}
_MAX_CONSTANTS = 1 << 16


def splat(builder: ir.IRBuilder, value: ir.Value, lanes: int) -> ir.Value:
    """`value` (a scalar) repeated in `lanes` lanes; vectors pass through."""
    if isinstance(value.type, ir.VectorType):
        return value
    if isinstance(value, ir.Constant):
        return ir.Constant(ir.VectorType(value.type, lanes), [value] * lanes)
    vty = ir.VectorType(value.type, lanes)
    one = builder.insert_element(ir.Constant(vty, ir.Undefined), value, ir.Constant(I32, 0))
    mask = ir.Constant(ir.VectorType(I32, lanes), [0] * lanes)
    return builder.shuffle_vector(one, ir.Constant(vty, ir.Undefined), mask)


def gep(b: ir.IRBuilder, ptr: ir.Value, indices: list[ir.Value], etype: ir.Type) -> ir.Value:
    """`getelementptr inbounds etype, ptr, indices...` typed as an opaque `ptr` (or a vector of
    them for a vector index), whatever llvmlite infers."""
    instr = b.gep(ptr, indices, inbounds=True, source_etype=etype)
    last = indices[-1].type
    instr.type = ir.VectorType(PTR, last.count) if isinstance(last, ir.VectorType) else PTR
    return instr


def lanes(value: ir.Value) -> int:
    """Number of lanes of an LLVM value (1 for scalars)."""
    return value.type.count if isinstance(value.type, ir.VectorType) else 1


def element(ty: ir.Type) -> ir.Type:
    """The element type of a vector type, or the type itself."""
    return ty.element if isinstance(ty, ir.VectorType) else ty


def is_unsigned(dtype: str) -> bool:
    """Whether integer values of `dtype` are unsigned (uint types and bool)."""
    return is_uint(dtype) or is_bool(dtype)


def mangle(ty: ir.Type) -> str:
    """The suffix LLVM uses for `ty` in overloaded intrinsic names (`v16f32`, `i64`, `p0`)."""
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{mangle(ty.element)}"
    if isinstance(ty, ir.PointerType):
        return "p0"
    if isinstance(ty, ir.IntType):
        return f"i{ty.width}"
    if isinstance(ty, ir.HalfType):
        return "f16"
    if isinstance(ty, ir.FloatType):
        return "f32"
    if isinstance(ty, ir.DoubleType):
        return "f64"
    raise CodegenError(f"no intrinsic name suffix for LLVM type {ty}")


def declare(
    module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type], **kw: bool
) -> ir.Function:
    """The function `name` of `module`, declared with this signature if it is not there yet."""
    existing = module.globals.get(name)
    if isinstance(existing, ir.Function):
        if getattr(existing, "relay_kernel", False):
            raise CodegenError(f"a kernel is named `{name}`, which the generated code needs")
        return existing
    return ir.Function(module, ir.FunctionType(ret, args, var_arg=kw.get("var_arg", False)), name)


def intrinsic(
    module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type], overload: list[ir.Type]
) -> ir.Function:
    """The LLVM intrinsic `name` overloaded on `overload` types (`llvm.fabs.v16f32`)."""
    full = ".".join([name, *(mangle(t) for t in overload)])
    return declare(module, full, ret, args)
