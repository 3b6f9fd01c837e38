"""LLVM bodies of tensor intrinsics: what a tensorized region (`te.tensorize`) becomes.

A tensorized loop nest is one loop-IR call `tensor.<body>(acc, a, b)` whose arguments are
vectors: the accumulator region (int32 lanes), then each operand region flattened row-major.
`BODIES` maps each body name to its emitter; every body computes exactly what the
intrinsic's declared compute says (`te.intrinsics_x86`), a dot product per output lane:

    out[j] = acc[j] + sum_g a[g] * b[j*G + g]          (j < L lanes, g < G)

* `x86.pmaddwd.{256,512}` (AVX2, AVX-512BW): int16 operands, L=8 or 16, G=2: `vpmaddwd`
  multiplies int16 pairs and adds each pair into an int32 lane; it is exact for operands
  that are sign-extended int8 (only -32768 * -32768 * 2 overflows), then `vpaddd`
  accumulates.
* `x86.vpdpbusd.{512,256}.{au8,bu8}` (AVX-512 VNNI / AVX-VNNI): L=16 or 8, G=4, one operand
  uint8 and the other int8 (`au8`: the broadcast operand `a` is the unsigned one, `bu8`: the
  lane operand `b`); `vpdpbusd` adds the four u8*s8 products of each lane to it, without
  saturation (the `vpdpbusds` form saturates; it is not used).
* `dot.{L}x{G}`: any L, G and integer dtypes in plain LLVM vector operations (extend, multiply,
  add the G products of each lane): exact everywhere, for hosts without the instruction and
  for testing a schedule made for one on a machine that lacks it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from llvmlite import ir

from ..tir import expr as tx
from ..tir.dtypes import element_of
from ..tir.op import TENSOR_PREFIX
from .llvm_types import CodegenError, declare

if TYPE_CHECKING:
    from .llvm_ir import KernelEmitter

Step = Generator[Any, Any, Any]
Body = Callable[[ir.IRBuilder, list[ir.Value], list[str]], ir.Value]
"""(builder, argument values, argument dtypes) -> the result vector."""

I32 = ir.IntType(32)
I16 = ir.IntType(16)


def _vec(t: ir.Type, n: int) -> ir.VectorType:
    return ir.VectorType(t, n)


def _splat_i32(b: ir.IRBuilder, word: ir.Value, n: int) -> ir.Value:
    """`word` (an i32) in each of `n` lanes."""
    undef = ir.Constant(_vec(I32, 1), ir.Undefined)
    one = b.insert_element(undef, word, ir.Constant(I32, 0))
    return b.shuffle_vector(one, undef, ir.Constant(_vec(I32, n), [0] * n))


def _check(args: list[ir.Value], widths: list[tuple[int, int]], body: str) -> None:
    """Each argument must be a vector of `lanes` elements of `bits` bits."""
    if len(args) != len(widths):
        raise CodegenError(f"tensor intrinsic `{body}` takes {len(widths)} arguments")
    for k, (arg, (lanes, bits)) in enumerate(zip(args, widths)):
        ty = arg.type
        if (
            not isinstance(ty, ir.VectorType)
            or ty.count != lanes
            or not isinstance(ty.element, ir.IntType)
            or ty.element.width != bits
        ):
            raise CodegenError(
                f"tensor intrinsic `{body}`: argument {k} is {ty}, expected <{lanes} x i{bits}>"
            )


def _pmaddwd(bits: int) -> Body:
    lanes = bits // 32
    name = f"x86.pmaddwd.{bits}"
    llvm_name = "llvm.x86.avx2.pmadd.wd" if bits == 256 else "llvm.x86.avx512.pmaddw.d.512"

    def emit(b: ir.IRBuilder, args: list[ir.Value], dtypes: list[str]) -> ir.Value:
        _check(args, [(lanes, 32), (2, 16), (2 * lanes, 16)], name)
        acc, a, w = args
        pair = _splat_i32(b, b.bitcast(a, I32), lanes)
        fn = declare(b.module, llvm_name, _vec(I32, lanes), [_vec(I16, 2 * lanes)] * 2)
        return b.add(acc, b.call(fn, [w, b.bitcast(pair, _vec(I16, 2 * lanes))]))

    return emit


def _vpdpbusd(bits: int, unsigned_a: bool) -> Body:
    lanes = bits // 32
    name = f"x86.vpdpbusd.{bits}.{'au8' if unsigned_a else 'bu8'}"

    def emit(b: ir.IRBuilder, args: list[ir.Value], dtypes: list[str]) -> ir.Value:
        _check(args, [(lanes, 32), (4, 8), (4 * lanes, 8)], name)
        acc, a, w = args
        word = _splat_i32(b, b.bitcast(a, I32), lanes)
        wide = b.bitcast(w, _vec(I32, lanes))
        ty = _vec(I32, lanes)
        fn = declare(b.module, f"llvm.x86.avx512.vpdpbusd.{bits}", ty, [ty, ty, ty])
        # vpdpbusd(acc, u8 operand, s8 operand)
        return b.call(fn, [acc, word, wide] if unsigned_a else [acc, wide, word])

    return emit


def _portable_dot(lanes: int, group: int) -> Body:
    def emit(b: ir.IRBuilder, args: list[ir.Value], dtypes: list[str]) -> ir.Value:
        if len(args) != 3:
            raise CodegenError(f"tensor intrinsic `dot.{lanes}x{group}` takes 3 arguments")
        acc, a, w = args
        n = lanes * group
        for arg, count in ((acc, lanes), (a, group), (w, n)):
            if not isinstance(arg.type, ir.VectorType) or arg.type.count != count:
                raise CodegenError(
                    f"tensor intrinsic `dot.{lanes}x{group}`: an argument is {arg.type},"
                    f" expected {count} lanes"
                )
        wide = _vec(I32, n)

        def extend(v: ir.Value, dtype: str, ty: ir.Type) -> ir.Value:
            return b.zext(v, ty) if element_of(dtype).startswith("uint") else b.sext(v, ty)

        a32 = extend(a, dtypes[1], _vec(I32, group))
        repeat = ir.Constant(_vec(I32, n), [g for _ in range(lanes) for g in range(group)])
        a_rep = b.shuffle_vector(a32, ir.Constant(_vec(I32, group), ir.Undefined), repeat)
        products = b.mul(a_rep, extend(w, dtypes[2], wide))
        total = acc
        for g in range(group):
            pick = ir.Constant(_vec(I32, lanes), [j * group + g for j in range(lanes)])
            part = b.shuffle_vector(products, ir.Constant(wide, ir.Undefined), pick)
            total = b.add(total, part)
        return total

    return emit


BODIES: dict[str, Body] = {
    "x86.pmaddwd.256": _pmaddwd(256),
    "x86.pmaddwd.512": _pmaddwd(512),
    "x86.vpdpbusd.512.au8": _vpdpbusd(512, True),
    "x86.vpdpbusd.512.bu8": _vpdpbusd(512, False),
    "x86.vpdpbusd.256.au8": _vpdpbusd(256, True),
    "x86.vpdpbusd.256.bu8": _vpdpbusd(256, False),
}
"""Every named body; `dot.{L}x{G}` bodies are made on demand (`body`)."""


def body(name: str) -> Body:
    """The emitter of body `name` (CodegenError naming the known ones when unknown)."""
    found = BODIES.get(name)
    if found is not None:
        return found
    if name.startswith("dot."):
        shape = name[4:].split("x")
        if len(shape) == 2 and all(p.isdigit() and int(p) > 0 for p in shape):
            made = _portable_dot(int(shape[0]), int(shape[1]))
            BODIES[name] = made
            return made
    known = ", ".join(sorted(BODIES)) + ", dot.{L}x{G}"
    raise CodegenError(f"unknown tensor intrinsic body `{name}` (known: {known})")


def emit_tensor_call(em: KernelEmitter, e: tx.Call) -> Step:
    """Emit the tensorized region `e` (`tensor.<body>(...)`); returns its vector."""
    emit = body(e.name[len(TENSOR_PREFIX) :])
    args = []
    for a in e.args:
        args.append((yield em.expr(a)))
    return emit(em.builder, args, [a.dtype for a in e.args])


__all__ = ["BODIES", "Body", "body", "emit_tensor_call"]
