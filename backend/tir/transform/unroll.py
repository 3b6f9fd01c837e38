"""Unrolling: an UNROLLED loop with a constant extent of at most 64 becomes that many copies
of its body, the loop variable replaced by `min + k` in copy `k`.

Variables bound inside the body (lets, inner loops) and buffers allocated in it get fresh
copies per iteration, so every binder stays unique. A loop that cannot be unrolled (symbolic
extent, or more than `MAX_UNROLL` iterations) becomes SERIAL. Inner unrolled loops are unrolled
first.
"""

from __future__ import annotations

import attrs

from ..arith import simplify
from ..expr import Add, IntImm
from ..stmt import For, ForKind, PrimFunc, Stmt
from ..visitor import StmtMutator, fresh_binders, make_seq, substitute

MAX_UNROLL = 64
"""The largest extent unrolled."""


def unroll_loop(loop: For) -> Stmt:
    """The copies of an UNROLLED loop's body, or the loop made SERIAL."""
    ext = loop.extent
    if not isinstance(ext, IntImm) or ext.value > MAX_UNROLL:
        return attrs.evolve(loop, kind=ForKind.SERIAL)
    copies = []
    for k in range(ext.value):
        value = simplify(Add(loop.min, IntImm(k, loop.min.dtype)))
        body = loop.body if k == 0 else fresh_binders(loop.body)
        copies.append(substitute(body, {loop.loop_var: value}))
    return make_seq(copies)


def unroll(func: PrimFunc) -> PrimFunc:
    """`func` with every UNROLLED loop unrolled (innermost first)."""

    class Unroll(StmtMutator):
        def leave(self, s: Stmt, entered: Stmt) -> Stmt:
            if isinstance(s, For) and s.kind is ForKind.UNROLLED:
                return unroll_loop(s)
            return s

    body = Unroll().visit(func.body)
    return func if body is func.body else attrs.evolve(func, body=body)


__all__ = ["MAX_UNROLL", "unroll", "unroll_loop"]
