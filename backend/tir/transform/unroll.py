"""Unrolled loops: left for LLVM to unroll (`unroll_in_llvm`, what `lower_pipeline` runs),
or copied here (`unroll`).

`unroll_in_llvm` keeps each UNROLLED loop of a constant extent of at most `MAX_UNROLL` as a
loop, which code generation marks `llvm.loop.unroll.full`: LLVM's full unroller copies the
body early in its pipeline, and its constant folding and SROA then do what simplifying the
copies here did (decided selects, accumulators in registers). Copying the body here instead
multiplied the work of every later stage in Python (the last simplification, `verify`,
building and parsing LLVM IR): ResNet-18's kernels took 12 s of CPU, now 9; MobileNet-v2's
16 s, now 9.5, for the same run time (ResNet-18, MobileNet-v2 and the transformer layer,
one thread, within noise). The exception: a loop with an `if_then_else` in its body (the
guarded taps of a depthwise convolution that reads its input unpadded) is still unrolled
here, where each copy's guards are simplified on their own; left to LLVM, MobileNet-v2's
14x14 depthwise kernels ran ~15% slower.

`unroll` makes an UNROLLED loop that many copies of its body, the loop variable replaced by
`min + k` in copy `k`; variables bound inside the body (lets, inner loops) and buffers
allocated in it get fresh copies per iteration, so every binder stays unique. Inner
unrolled loops are unrolled first.

Either way, a loop that cannot be unrolled (symbolic extent, or more than `MAX_UNROLL`
iterations) becomes SERIAL.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ..arith import simplify
from ..expr import Add, Call, IntImm
from ..stmt import For, ForKind, PrimFunc, Stmt
from ..visitor import StmtMutator, fresh_binders, make_seq, sub_expressions, substitute

MAX_UNROLL = 64
"""The largest extent unrolled."""


def _unrollable(loop: For) -> bool:
    ext = loop.extent
    return isinstance(ext, IntImm) and ext.value <= MAX_UNROLL


def unroll_loop(loop: For) -> Stmt:
    """The copies of an UNROLLED loop's body, or the loop made SERIAL."""
    if not _unrollable(loop):
        return attrs.evolve(loop, kind=ForKind.SERIAL)
    ext = loop.extent
    assert isinstance(ext, IntImm)
    copies = []
    for k in range(ext.value):
        value = simplify(Add(loop.min, IntImm(k, loop.min.dtype)))
        body = loop.body if k == 0 else fresh_binders(loop.body)
        copies.append(substitute(body, {loop.loop_var: value}))
    return make_seq(copies)


def _rewrite_unrolled(func: PrimFunc, rewrite: Callable[[For], Stmt]) -> PrimFunc:
    class Unroll(StmtMutator):
        def leave(self, s: Stmt, entered: Stmt) -> Stmt:
            if isinstance(s, For) and s.kind is ForKind.UNROLLED:
                return rewrite(s)
            return s

    body = Unroll().visit(func.body)
    return func if body is func.body else attrs.evolve(func, body=body)


def unroll(func: PrimFunc) -> PrimFunc:
    """`func` with every UNROLLED loop unrolled (innermost first)."""
    return _rewrite_unrolled(func, unroll_loop)


def _has_guarded_loads(loop: For) -> bool:
    """Whether `loop`'s body has an `if_then_else`."""
    return any(
        isinstance(node, Call) and node.name == "if_then_else"
        for node in sub_expressions(loop.body)
    )


def _in_llvm_or_here(loop: For) -> Stmt:
    if not _unrollable(loop):
        return attrs.evolve(loop, kind=ForKind.SERIAL)
    return unroll_loop(loop) if _has_guarded_loads(loop) else loop


def unroll_in_llvm(func: PrimFunc) -> PrimFunc:
    """`func` with the UNROLLED loops that can be unrolled left as they are, for LLVM to
    unroll, except those with an `if_then_else` in their body, which are unrolled here
    (module docstring); the others made SERIAL."""
    return _rewrite_unrolled(func, _in_llvm_or_here)


__all__ = ["MAX_UNROLL", "unroll", "unroll_in_llvm", "unroll_loop"]
