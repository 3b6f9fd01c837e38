"""Arithmetic, comparisons and casts on LLVM values, with the loop IR's semantics.

* Float arithmetic carries `FAST_FLAGS` (fast-math without nnan/ninf).
* Signed `int64` add/sub/mul are `nsw` (index arithmetic never wraps); narrower integers
  wrap, as the reference evaluator does.
* `Div`/`Mod` on integers truncate; `FloorDiv`/`FloorMod` floor (a positive power-of-two
  constant divisor becomes a shift and a mask). Under a vector mask (the lanes of a lazily
  evaluated `if_then_else` side), inactive lanes divide by 1, so they cannot trap.
* `Min`/`Max` on floats propagate NaN (`llvm.minimum`/`llvm.maximum`, like numpy).
* Casts: float→int truncates (narrow integers go through i64 and wrap, as numpy does on x86;
  values outside i64 are undefined, as in C); anything→bool is `!= 0` (NaN is true);
  bool→number is 0/1; float64→float16 rounds once, correctly (via round-to-odd float32).
"""

from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from ..tir import expr as tx
from ..tir.dtypes import bits_of, element_of, is_bool, is_float, lanes_of
from .llvm_types import (
    ACCUMULATE_FLAGS,
    FAST_FLAGS,
    I64,
    CodegenError,
    constant,
    element,
    intrinsic,
    is_unsigned,
    lanes,
    llvm_type,
    splat,
)


def const_int(value: ir.Value) -> int | None:
    """The integer a constant (or a splat vector constant) holds, else None."""
    if not isinstance(value, ir.Constant):
        return None
    c = value.constant
    if isinstance(c, list):
        items = [x.constant if isinstance(x, ir.Constant) else x for x in c]
        if items and all(isinstance(x, int) and x == items[0] for x in items):
            return int(items[0])
        return None
    return c if isinstance(c, int) and not isinstance(value.type, ir.PointerType) else None


def _same_lanes(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> tuple[ir.Value, ir.Value]:
    n = max(lanes(x), lanes(y))
    if n > 1:
        return splat(b, x, n), splat(b, y, n)
    return x, y


def _int_flags(dtype: str) -> tuple[str, ...]:
    return ("nsw",) if element_of(dtype) == "int64" else ()


def _minmax(name: str) -> Callable[[ir.IRBuilder, ir.Value, ir.Value, str], ir.Value]:
    def emit(b: ir.IRBuilder, x: ir.Value, y: ir.Value, dtype: str) -> ir.Value:
        if is_bool(dtype):
            return b.and_(x, y) if name == "min" else b.or_(x, y)
        if is_float(dtype):
            fn = "llvm.minimum" if name == "min" else "llvm.maximum"
        else:
            fn = f"llvm.{'u' if is_unsigned(dtype) else 's'}{name}"
        f = intrinsic(b.module, fn, x.type, [x.type, x.type], [x.type])
        return b.call(f, [x, y])

    return emit


def _safe_divisor(b: ir.IRBuilder, y: ir.Value, mask: ir.Value | None) -> ir.Value:
    if mask is None or lanes(mask) != lanes(y) or const_int(y) not in (None, 0):
        return y
    return b.select(mask, y, _splat_int(b, y, 1))


def _int_div(
    b: ir.IRBuilder, x: ir.Value, y: ir.Value, dtype: str, floor: bool, mod: bool
) -> ir.Value:
    unsigned = is_unsigned(dtype)
    c = const_int(y)
    if unsigned:
        if c is not None and c > 0 and c & (c - 1) == 0:
            if mod:
                return b.and_(x, _splat_int(b, y, c - 1))
            return b.lshr(x, _splat_int(b, y, c.bit_length() - 1))
        return b.urem(x, y) if mod else b.udiv(x, y)
    if floor and c is not None and c > 0 and c & (c - 1) == 0:
        if mod:
            return b.and_(x, _splat_int(b, y, c - 1))
        return b.ashr(x, _splat_int(b, y, c.bit_length() - 1))
    if not floor:
        return b.srem(x, y) if mod else b.sdiv(x, y)
    q = b.sdiv(x, y)
    r = b.srem(x, y)
    zero = _splat_int(b, y, 0)
    if c is not None and c > 0:
        need = b.icmp_signed("<", r, zero)
    else:
        need = b.and_(b.icmp_signed("!=", r, zero), b.icmp_signed("<", b.xor(r, y), zero))
    if mod:
        return b.select(need, b.add(r, y), r)
    return b.add(q, b.sext(need, q.type))


def _splat_int(b: ir.IRBuilder, like: ir.Value, value: int) -> ir.Value:
    ty = element(like.type)
    c = ir.Constant(ty, value)
    return c if lanes(like) == 1 else splat(b, c, lanes(like))


def _floor(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    return b.call(intrinsic(b.module, "llvm.floor", x.type, [x.type], [x.type]), [x])


def accumulate(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """`x + y` on floats as a reduction's update: reassociation allowed (`ACCUMULATE_FLAGS`)."""
    x, y = _same_lanes(b, x, y)
    return b.fadd(x, y, flags=ACCUMULATE_FLAGS)


def binary(
    b: ir.IRBuilder, op: type, x: ir.Value, y: ir.Value, dtype: str, mask: ir.Value | None = None
) -> ir.Value:
    """`x op y` for a `BinaryOp` node class `op`, operands of `dtype`."""
    x, y = _same_lanes(b, x, y)
    fl = is_float(dtype)
    if op is tx.Add:
        return b.fadd(x, y, flags=FAST_FLAGS) if fl else b.add(x, y, flags=_int_flags(dtype))
    if op is tx.Sub:
        return b.fsub(x, y, flags=FAST_FLAGS) if fl else b.sub(x, y, flags=_int_flags(dtype))
    if op is tx.Mul:
        return b.fmul(x, y, flags=FAST_FLAGS) if fl else b.mul(x, y, flags=_int_flags(dtype))
    if op is tx.Min or op is tx.Max:
        return _minmax("min" if op is tx.Min else "max")(b, x, y, dtype)
    if fl:
        if op is tx.Div:
            return b.fdiv(x, y, flags=FAST_FLAGS)
        if op is tx.Mod:
            return b.frem(x, y, flags=FAST_FLAGS)
        if op is tx.FloorDiv:
            return _floor(b, b.fdiv(x, y, flags=FAST_FLAGS))
        if op is tx.FloorMod:
            q = _floor(b, b.fdiv(x, y, flags=FAST_FLAGS))
            return b.fsub(x, b.fmul(q, y, flags=FAST_FLAGS), flags=FAST_FLAGS)
    elif op in (tx.Div, tx.Mod, tx.FloorDiv, tx.FloorMod):
        y = _safe_divisor(b, y, mask)
        floor = op in (tx.FloorDiv, tx.FloorMod)
        return _int_div(b, x, y, dtype, floor=floor, mod=op in (tx.Mod, tx.FloorMod))
    raise CodegenError(f"the code generator has no rule for `{op.__name__}` on {dtype}")


_INT_CMP: dict[type, str] = {
    tx.EQ: "==",
    tx.NE: "!=",
    tx.LT: "<",
    tx.LE: "<=",
    tx.GT: ">",
    tx.GE: ">=",
}


def compare(b: ir.IRBuilder, op: type, x: ir.Value, y: ir.Value, dtype: str) -> ir.Value:
    """The comparison `op` (a `CmpOp` class) of two values of `dtype`, as i1 (vector)."""
    x, y = _same_lanes(b, x, y)
    sym = _INT_CMP[op]
    if is_float(dtype):
        if op is tx.NE:
            return b.fcmp_unordered("!=", x, y)
        return b.fcmp_ordered(sym, x, y)
    if is_unsigned(dtype) or element_of(dtype) == "handle":
        return b.icmp_unsigned(sym, x, y)
    return b.icmp_signed(sym, x, y)


def cast(b: ir.IRBuilder, value: ir.Value, src: str, dst: str) -> ir.Value:
    """`value` of dtype `src` converted to dtype `dst` (lanes broadcast when needed)."""
    n = lanes_of(dst)
    if lanes(value) != n and lanes(value) == 1 and n > 1:
        scalar = cast(b, value, element_of(src), element_of(dst))
        return splat(b, scalar, n)
    if lanes(value) != n:
        raise CodegenError(f"cannot cast {src} to {dst}: lane counts differ")
    s, d = element_of(src), element_of(dst)
    ty = llvm_type(dst)
    if s == d:
        return value
    if s == "handle" or d == "handle":
        if s == "handle" and d == "handle":
            return value
        return b.ptrtoint(value, ty) if s == "handle" else b.inttoptr(value, ty)
    if is_bool(d):
        zero = constant(src if lanes(value) == 1 else f"{s}x{n}", 0)
        if is_float(s):
            return b.fcmp_unordered("!=", value, zero)
        return b.icmp_unsigned("!=", value, zero)
    if is_float(s) and is_float(d):
        if bits_of(d) > bits_of(s):
            return b.fpext(value, ty)
        if s == "float64" and d == "float16":  # no native instruction; LLVM would call libgcc
            value = _to_f32_round_to_odd(b, value)
        return b.fptrunc(value, ty)
    if is_float(d):
        return b.uitofp(value, ty) if is_unsigned(s) else b.sitofp(value, ty)
    if is_float(s):
        if bits_of(d) < 64:
            wide = I64 if n == 1 else ir.VectorType(I64, n)
            return b.trunc(b.fptosi(value, wide), ty)
        return b.fptoui(value, ty) if is_unsigned(d) else b.fptosi(value, ty)
    sb, db = element(value.type).width, element(ty).width
    if sb == db:
        return value
    if db < sb:
        return b.trunc(value, ty)
    return b.zext(value, ty) if is_unsigned(s) else b.sext(value, ty)


def _to_f32_round_to_odd(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """float64 → float32 rounded to odd (truncate, then set the last bit if inexact): a
    second rounding to float16 is then correctly rounded, as a direct conversion would be."""
    n = lanes(x)
    f32 = ir.FloatType() if n == 1 else ir.VectorType(ir.FloatType(), n)
    i32 = ir.IntType(32) if n == 1 else ir.VectorType(ir.IntType(32), n)
    t = b.fptrunc(x, f32)
    back = b.fpext(t, x.type)
    fabs = intrinsic(b.module, "llvm.fabs", x.type, [x.type], [x.type])
    too_big = b.fcmp_ordered(">", b.call(fabs, [back]), b.call(fabs, [x]))
    bits = b.bitcast(t, i32)
    bits = b.select(too_big, b.sub(bits, _splat_int(b, bits, 1)), bits)
    odd = b.or_(bits, _splat_int(b, bits, 1))
    bits = b.select(b.fcmp_ordered("==", back, x), bits, odd)
    return b.bitcast(bits, f32)


def to_bool_memory(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """An i1 (vector) value widened to the i8 bytes bool buffers store."""
    ty = ir.IntType(8) if lanes(value) == 1 else ir.VectorType(ir.IntType(8), lanes(value))
    return b.zext(value, ty)


def from_bool_memory(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """Bytes loaded from a bool buffer as i1 (vector): nonzero is true."""
    zero = ir.Constant(value.type, None)
    return b.icmp_unsigned("!=", value, zero)


def logical(b: ir.IRBuilder, op: type, x: ir.Value, y: ir.Value | None = None) -> ir.Value:
    """`And`/`Or`/`Not` on i1 values."""
    if op is tx.Not:
        return b.xor(x, _splat_int(b, x, -1))
    if y is None:
        raise CodegenError(f"`{op.__name__}` needs two operands")
    x, y = _same_lanes(b, x, y)
    return b.and_(x, y) if op is tx.And else b.or_(x, y)
