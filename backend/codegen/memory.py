"""Loads, stores and allocations for the kernel emitter.

A `Ramp` index with stride 1 is one vector load/store; stride 0 or a `Broadcast` index is one
scalar load broadcast to every lane; a load with a constant stride spanning at most
`STRIDED_SPAN_BYTES` is one load of the span and a shuffle; any other vector index is a
gather/scatter (`llvm.masked.gather`/`scatter`). Under a lane mask (a vector `if_then_else`
side), loads are masked (`llvm.masked.load`/`gather`, inactive lanes read nothing and give
0) and a scalar load runs only if some lane is active. Alignment is the element size,
raised to what the index provably is a multiple of (all buffers start 64-byte aligned).

`Allocate` of at most 64 KiB (and while the function's stack use stays under
`MAX_STACK_BYTES`) is a 64-byte-aligned `alloca` in the entry block; larger ones are
`aligned_alloc`/`free` around the body.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from llvmlite import ir

from ..tir import expr as tx
from ..tir import stmt as ts
from ..tir.buffer import Buffer
from ..tir.dtypes import is_bool, is_float, lanes_of
from . import llvm_arith
from .llvm_types import (
    I1,
    I8,
    I32,
    I64,
    PTR,
    CodegenError,
    declare,
    elem_bytes,
    gep,
    intrinsic,
    scalar_type,
    splat,
)

if TYPE_CHECKING:
    from .llvm_ir import KernelEmitter

Step = Generator[Any, Any, Any]

MAX_ALLOCA_BYTES = 64 * 1024
"""The largest `Allocate` placed on the stack."""

MAX_STACK_BYTES = 256 * 1024
"""Stack space one function may take for `Allocate`s before further ones go to the heap."""


def flat_index(buffer: Buffer, indices: tuple[tx.PrimExpr, ...]) -> tx.PrimExpr:
    """The row-major flat index of `indices` into `buffer` (the index itself when flat).
    Only the last index may be a vector."""
    if len(indices) == 1:
        return indices[0]
    if not indices:
        return tx.IntImm(0, "int64")
    if len(indices) != len(buffer.shape):
        raise CodegenError(
            f"access to `{buffer.name}` has {len(indices)} indices for {len(buffer.shape)} dims"
        )
    idx_dtype = indices[0].dtype
    prefix = indices[0]
    for dim, idx in zip(buffer.shape[1:-1], indices[1:-1]):
        prefix = prefix * tx.cast(idx_dtype, dim) + idx
    last = indices[-1]
    offset = prefix * tx.cast(idx_dtype, buffer.shape[-1])
    if isinstance(last, tx.Ramp):
        return tx.Ramp(offset + last.base, last.stride, last.lanes)
    if lanes_of(last.dtype) > 1:
        return tx.Broadcast(offset, lanes_of(last.dtype)) + last
    return offset + last


def _const_value(e: tx.PrimExpr) -> int | None:
    if isinstance(e, tx.IntImm):
        return e.value
    if isinstance(e, tx.Broadcast) and isinstance(e.value, tx.IntImm):
        return e.value.value
    return None


def known_multiple(e: tx.PrimExpr, depth: int = 0) -> int:
    """A power of two that provably divides the integer `e` (1 when nothing is known);
    looks at most 12 nodes deep."""
    if depth > 12:
        return 1
    if isinstance(e, tx.IntImm):
        v = abs(e.value)
        return 1 << 30 if v == 0 else v & -v
    if isinstance(e, tx.Mul):
        return min(1 << 30, known_multiple(e.a, depth + 1) * known_multiple(e.b, depth + 1))
    if isinstance(e, (tx.Add, tx.Sub)):
        return min(known_multiple(e.a, depth + 1), known_multiple(e.b, depth + 1))
    if isinstance(e, tx.Cast):
        return known_multiple(e.value, depth + 1)
    return 1


def _align(buffer: Buffer, base: tx.PrimExpr | None, vector_lanes: int) -> int:
    """The alignment a vector access may assume: the element size, since parameters may
    start anywhere (see `llvm_ir.pointer_param_attrs`)."""
    return elem_bytes(buffer.dtype)


def _gep(em: KernelEmitter, buffer: Buffer, index: ir.Value) -> ir.Value:
    base = em.var(buffer.data)
    return gep(em.builder, base, [index], scalar_type(buffer.dtype, memory=True))


def _is_stride(index: tx.PrimExpr, stride: int) -> bool:
    return isinstance(index, tx.Ramp) and _const_value(index.stride) == stride


def _all_true(n: int) -> ir.Constant:
    return ir.Constant(ir.VectorType(I1, n), [ir.Constant(I1, 1)] * n)


def _from_memory(em: KernelEmitter, buffer: Buffer, v: ir.Value) -> ir.Value:
    return llvm_arith.from_bool_memory(em.builder, v) if is_bool(buffer.dtype) else v


def load(em: KernelEmitter, e: tx.BufferLoad) -> Step:
    """Emit `e` (a scalar, vector, broadcast or gathered load); returns the value."""
    b = em.builder
    buf = e.buffer
    index = flat_index(buf, e.indices)
    n = lanes_of(index.dtype)
    mty = scalar_type(buf.dtype, memory=True)
    mask = em.mask
    if n > 1 and mask is not None and isinstance(mask.type, ir.VectorType) and mask.type.count != n:
        mask = None
    if n == 1 or _is_stride(index, 0) or isinstance(index, tx.Broadcast):
        scalar_idx = index if n == 1 else index.base if isinstance(index, tx.Ramp) else index.value  # type: ignore[attr-defined]
        i = yield em.expr(scalar_idx)
        ptr = _gep(em, buf, i)
        if em.mask is not None and isinstance(em.mask.type, ir.VectorType):
            v = _guarded_scalar_load(em, ptr, mty, em.mask, elem_bytes(buf.dtype))
        else:
            v = b.load(ptr, typ=mty, align=elem_bytes(buf.dtype))
        v = _from_memory(em, buf, v)
        return splat(b, v, n) if n > 1 else v
    vty = ir.VectorType(mty, n)
    if _is_stride(index, 1):
        assert isinstance(index, tx.Ramp)
        i = yield em.expr(index.base)
        ptr = _gep(em, buf, i)
        align = _align(buf, index.base, n)
        if mask is None:
            v = b.load(ptr, typ=vty, align=align)
        else:
            fn = intrinsic(
                em.module, "llvm.masked.load", vty, [PTR, I32, mask.type, vty], [vty, PTR]
            )
            v = b.call(fn, [ptr, ir.Constant(I32, align), mask, ir.Constant(vty, None)])
        return _from_memory(em, buf, v)
    if mask is None and isinstance(index, tx.Ramp):
        stride = _const_value(index.stride) or 0
        if stride > 1 and ((n - 1) * stride + 1) * elem_bytes(buf.dtype) <= STRIDED_SPAN_BYTES:
            return (yield from _strided_load(em, buf, index, stride, mty))
    idx = yield em.expr(index)
    ptrs = _gep(em, buf, idx)
    pty = ptrs.type
    fn = intrinsic(
        em.module, "llvm.masked.gather", vty, [pty, I32, ir.VectorType(I1, n), vty], [vty, pty]
    )
    m = mask if mask is not None else _all_true(n)
    v = b.call(fn, [ptrs, ir.Constant(I32, elem_bytes(buf.dtype)), m, ir.Constant(vty, None)])
    return _from_memory(em, buf, v)


STRIDED_SPAN_BYTES = 256
"""Most bytes a strided vector load may span to be read as one contiguous load and a
shuffle (`_strided_load`) instead of a gather."""


def _strided_load(
    em: KernelEmitter, buf: Buffer, index: tx.Ramp, stride: int, mty: ir.Type
) -> Step:
    """A load of `n` elements `stride` apart as one contiguous load of the span from the
    first to the last and a shuffle picking every `stride`-th: every address read lies
    between two the gather would read, so it is in the buffer. An int8 16x16 block
    transpose (`NCHW16c` -> `NCHW`) becomes byte permutes instead of 16 scalar loads per
    vector."""
    b = em.builder
    n = index.lanes
    span = (n - 1) * stride + 1
    i = yield em.expr(index.base)
    ptr = _gep(em, buf, i)
    wide = b.load(ptr, typ=ir.VectorType(mty, span), align=elem_bytes(buf.dtype))
    pick = ir.Constant(ir.VectorType(I32, n), [k * stride for k in range(n)])
    v = b.shuffle_vector(wide, ir.Constant(ir.VectorType(mty, span), ir.Undefined), pick)
    return _from_memory(em, buf, v)


def _guarded_scalar_load(
    em: KernelEmitter, ptr: ir.Value, ty: ir.Type, mask: ir.Value, align: int
) -> ir.Value:
    """A scalar load that happens only if some lane of `mask` is active (else 0)."""
    b = em.builder
    red = intrinsic(em.module, "llvm.vector.reduce.or", I1, [mask.type], [mask.type])
    anyset = b.call(red, [mask])
    load_bb, end_bb = em.block("mload"), em.block("mload.end")
    pre = b.block
    b.cbranch(anyset, load_bb, end_bb)
    b.position_at_end(load_bb)
    v = b.load(ptr, typ=ty, align=align)
    b.branch(end_bb)
    b.position_at_end(end_bb)
    phi = b.phi(ty)
    phi.add_incoming(v, load_bb)
    phi.add_incoming(ir.Constant(ty, None), pre)
    return phi


def store(em: KernelEmitter, s: ts.BufferStore) -> Step:
    """Emit `s`: a scalar store, a vector store (stride-1 `Ramp`) or a scatter."""
    b = em.builder
    buf = s.buffer
    index = flat_index(buf, s.indices)
    n = lanes_of(index.dtype)
    value = yield _stored_value(em, s)
    if is_bool(buf.dtype):
        value = llvm_arith.to_bool_memory(b, value)
    if n == 1:
        if isinstance(value.type, ir.VectorType):
            raise CodegenError(f"a vector value is stored to one element of `{buf.name}`")
        i = yield em.expr(index)
        b.store(value, _gep(em, buf, i), align=elem_bytes(buf.dtype))
        return
    value = splat(b, value, n)
    if _is_stride(index, 1):
        assert isinstance(index, tx.Ramp)
        i = yield em.expr(index.base)
        b.store(value, _gep(em, buf, i), align=_align(buf, index.base, n))
        return
    idx = yield em.expr(index)
    ptrs = _gep(em, buf, idx)
    vty = value.type
    mty = ir.VectorType(I1, n)
    fn = intrinsic(
        em.module,
        "llvm.masked.scatter",
        ir.VoidType(),
        [vty, ptrs.type, I32, mty],
        [vty, ptrs.type],
    )
    b.call(fn, [value, ptrs, ir.Constant(I32, elem_bytes(buf.dtype)), _all_true(n)])


def _is_accumulation(s: ts.BufferStore) -> bool:
    """Whether `s` is `buf[...] = buf[...] + x` on floats (a reduction's update)."""
    v = s.value
    if not isinstance(v, tx.Add) or not is_float(v.dtype):
        return False
    return any(isinstance(t, tx.BufferLoad) and t.buffer is s.buffer for t in (v.a, v.b))


def _stored_value(em: KernelEmitter, s: ts.BufferStore) -> Step:
    """The value `s` stores; an accumulation's add carries `ACCUMULATE_FLAGS` (reassociation
    only where a reduction needs it)."""
    if not _is_accumulation(s):
        return (yield em.expr(s.value))
    add = s.value
    assert isinstance(add, tx.Add)
    x = yield em.expr(add.a)
    y = yield em.expr(add.b)
    return llvm_arith.accumulate(em.builder, x, y)


def _const_size(buffer: Buffer) -> int:
    size = 1
    for dim in buffer.shape:
        if not isinstance(dim, tx.IntImm):
            raise CodegenError(f"allocation `{buffer.name}` needs a constant shape")
        size *= dim.value
    return size


def allocate(em: KernelEmitter, s: ts.Allocate) -> Step:
    """Emit `s`: stack or heap memory for its buffer while its body runs."""
    buf = s.buffer
    if not all(isinstance(d, tx.IntImm) for d in buf.shape):
        yield _allocate_dynamic(em, s)
        return
    nbytes = max(1, _const_size(buf) * elem_bytes(buf.dtype))
    nbytes = math.ceil(nbytes / 64) * 64
    if nbytes <= MAX_ALLOCA_BYTES and em.stack_bytes + nbytes <= MAX_STACK_BYTES:
        em.stack_bytes += nbytes
        ptr = em.alloca(ir.ArrayType(I8, nbytes), 64, name=buf.name)
        old = em.bind(buf.data, ptr)
        try:
            yield em.stmt(s.body)
        finally:
            em.unbind(buf.data, old)
        return
    yield _heap_block(em, s, ir.Constant(I64, nbytes))


def _heap_block(em: KernelEmitter, s: ts.Allocate, nbytes: ir.Value) -> Step:
    """Emit `s`'s body with its buffer on the heap: `nbytes` (a multiple of 64) from
    `aligned_alloc`, freed after the body.

    `aligned_alloc` rather than `posix_memalign`: LLVM knows its result is fresh memory that
    aliases nothing, whereas a pointer read back from `posix_memalign`'s out-parameter may
    alias any other buffer, which kept a serial kernel's accumulators from staying in
    registers."""
    alloc = declare(em.module, "aligned_alloc", PTR, [I64, I64])
    if "noalias" not in alloc.return_value.attributes:
        alloc.return_value.add_attribute("noalias")
    free = declare(em.module, "free", ir.VoidType(), [PTR])
    ptr = em.builder.call(alloc, [ir.Constant(I64, 64), nbytes], name=s.buffer.name)
    old = em.bind(s.buffer.data, ptr)
    try:
        yield em.stmt(s.body)
    finally:
        em.unbind(s.buffer.data, old)
    em.builder.call(free, [ptr])


def _allocate_dynamic(em: KernelEmitter, s: ts.Allocate) -> Step:
    """Emit `s` for a buffer whose shape has run-time extents (a dynamic-shape kernel):
    `aligned_alloc` of the size rounded up to 64 bytes, `free` after the body."""
    buf = s.buffer
    size: tx.PrimExpr = tx.const(elem_bytes(buf.dtype), "int64")
    for dim in buf.shape:
        size = size * dim
    value = yield em.expr(size)
    b = em.builder
    value = b.add(value, ir.Constant(I64, 64))  # at least one byte, then round down to 64
    value = b.and_(value, ir.Constant(I64, -64))
    yield _heap_block(em, s, value)
