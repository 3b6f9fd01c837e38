"""Vectorization: a VECTORIZED loop of constant extent L becomes one pass of L-lane code.

The loop variable becomes `ramp(min, 1, L)`; loads whose index is linear in it become vector
loads (`A[ramp(b, 1, L)]`; other strides are gathers), loop-invariant values stay scalar and are
broadcast where they meet vectors (`x16(a)`), and arithmetic, comparisons, selects, casts and
intrinsic calls are lifted to vectors. Inside the loop:

* an inner loop whose bounds do not depend on the vector variable stays a (scalar) loop with a
  vectorized body, so `C[i, j] += A[i, k]*B[k, j]` vectorized over `j` keeps its `k` loop;
* an `if` whose condition is lane-invariant stays an `if`; one whose condition varies across
  lanes becomes a select when both branches store to the same location, and otherwise the
  loop is not vectorized;
* `if_then_else` with a lane-varying condition becomes a select when neither branch loads
  memory or divides integers (its branches may not be safe to evaluate in every lane).

The loop falls back to SERIAL (still correct) when anything cannot be vectorized: a store
whose index does not depend on the vector variable (a reduction such as `C[i] = C[i] + ...`),
an index that is not linear in it, a buffer both written and accessed at different indices in
the body (a dependence between lanes), an allocation in the body, nested vectors, or an extent
that is not a constant >= 2.
"""

from __future__ import annotations

from typing import Any

import attrs

from ..analysis import prim_equal
from ..arith import Simplifier
from ..dtypes import is_float, lanes_of, with_lanes
from ..expr import (
    And,
    BinaryOp,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    CmpOp,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Mod,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Select,
    StringImm,
    Var,
)
from ..stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
)
from ..visitor import StmtMutator, sub_expressions
from .simplify import simplify_stmt


class _Fail(Exception):
    """The loop body cannot be vectorized."""


class _Lanes(StmtMutator):
    """Rewrites a loop body with the loop variable as a ramp of `lanes` lanes."""

    def __init__(self, var: Var, start: PrimExpr, lanes: int) -> None:
        self.var = var
        self.lanes = lanes
        self.ramp = Ramp(start, IntImm(1, start.dtype), lanes)
        self.vars: dict[Var, Var] = {}
        self.done: set[int] = set()
        self.keep: list[Stmt] = []
        # one memo for every index: the parts that do not depend on the lanes are shared
        self.simplifier = Simplifier()

    # -------------------------------------------------------------------- expressions
    def wide(self, e: PrimExpr) -> PrimExpr:
        return e if lanes_of(e.dtype) > 1 else Broadcast(e, self.lanes)

    def expr(self, e: PrimExpr) -> PrimExpr:
        if e is self.var:
            return self.ramp
        if isinstance(e, Var):
            return self.vars.get(e, e)
        if isinstance(e, (IntImm, FloatImm, StringImm)):
            return e
        if lanes_of(e.dtype) > 1:
            raise _Fail("nested vectors")
        if isinstance(e, BufferLoad):
            return self.load(e)
        if isinstance(e, (BinaryOp, CmpOp, And, Or)):
            a, b = self.expr(e.a), self.expr(e.b)
            if lanes_of(a.dtype) == 1 and lanes_of(b.dtype) == 1:
                return e if a is e.a and b is e.b else type(e)(a, b)
            return type(e)(self.wide(a), self.wide(b))
        if isinstance(e, Not):
            a = self.expr(e.a)
            return e if a is e.a else Not(a)
        if isinstance(e, Select):
            c, t, f = self.expr(e.condition), self.expr(e.true_value), self.expr(e.false_value)
            if all(lanes_of(x.dtype) == 1 for x in (c, t, f)):
                return Select(c, t, f)
            return Select(c, self.wide(t), self.wide(f))
        if isinstance(e, Cast):
            v = self.expr(e.value)
            if lanes_of(v.dtype) == 1:
                return e if v is e.value else Cast(e.dtype, v)
            return Cast(with_lanes(e.dtype, self.lanes), v)
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, Let):
            value = self.expr(e.value)
            if lanes_of(value.dtype) == 1:
                return Let(e.var, value, self.expr(e.body))
            new = Var(e.var.name, value.dtype)
            self.vars[e.var] = new
            try:
                return Let(new, value, self.expr(e.body))
            finally:
                del self.vars[e.var]
        raise _Fail(f"cannot vectorize {type(e).__name__}")

    def index(self, buffer: Any, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        new = [self.simplifier.simplify(self.expr(i)) for i in indices]
        for i in new[:-1]:
            if lanes_of(i.dtype) > 1:
                raise _Fail(f"vector index in a leading dimension of `{buffer.name}`")
        last = new[-1] if new else None
        if last is not None and lanes_of(last.dtype) > 1 and not isinstance(last, Ramp):
            if isinstance(last, Broadcast):
                new[-1] = last.value
            else:
                raise _Fail(f"index of `{buffer.name}` is not linear in the vector variable")
        return tuple(new)

    def load(self, e: BufferLoad) -> PrimExpr:
        indices = self.index(e.buffer, e.indices)
        if all(a is b for a, b in zip(indices, e.indices)):
            return e
        return BufferLoad(e.buffer, indices)

    def call(self, e: Call) -> PrimExpr:
        args = [self.expr(a) for a in e.args]
        if all(lanes_of(a.dtype) == 1 for a in args):
            return e if all(a is b for a, b in zip(args, e.args)) else Call(e.dtype, e.name, args)
        if e.name == "if_then_else":
            c, t, f = args
            if lanes_of(c.dtype) == 1:
                return Call(
                    with_lanes(e.dtype, self.lanes), e.name, [c, self.wide(t), self.wide(f)]
                )
            if _unsafe(t) or _unsafe(f):
                raise _Fail("if_then_else with a lane-varying condition guards loads")
            return Select(c, self.wide(t), self.wide(f))
        dtype = with_lanes(e.dtype, self.lanes)
        return Call(
            dtype, e.name, [self.wide(a) if not isinstance(a, StringImm) else a for a in args]
        )

    # --------------------------------------------------------------------- statements
    def mark(self, s: Stmt) -> Stmt:
        self.done.add(id(s))
        self.keep.append(s)
        return s

    def store(self, s: BufferStore, value: PrimExpr) -> Stmt:
        indices = self.index(s.buffer, s.indices)
        if not indices or lanes_of(indices[-1].dtype) == 1:
            raise _Fail(f"store to `{s.buffer.name}` at an index invariant in the lanes")
        return self.mark(BufferStore(s.buffer, self.wide(value), indices))

    def enter(self, s: Stmt) -> Stmt:
        if id(s) in self.done:
            return s
        if isinstance(s, BufferStore):
            return self.store(s, self.expr(s.value))
        if isinstance(s, For):
            lo, ext = self.expr(s.min), self.expr(s.extent)
            if lanes_of(lo.dtype) > 1 or lanes_of(ext.dtype) > 1:
                raise _Fail("inner loop bounds vary across lanes")
            return self.mark(attrs.evolve(s, min=lo, extent=ext))
        if isinstance(s, IfThenElse):
            return self.if_(s)
        if isinstance(s, LetStmt):
            value = self.expr(s.value)
            if lanes_of(value.dtype) == 1:
                return self.mark(attrs.evolve(s, value=value))
            new = Var(s.var.name, value.dtype)
            self.vars[s.var] = new
            return self.mark(LetStmt(new, value, s.body))
        if isinstance(s, Evaluate):
            return self.mark(Evaluate(self.expr(s.value)))
        if isinstance(s, Allocate):
            raise _Fail("allocation inside a vectorized loop")
        if isinstance(s, SeqStmt):
            return s
        raise _Fail(f"cannot vectorize {type(s).__name__}")

    def if_(self, s: IfThenElse) -> Stmt:
        cond = self.expr(s.condition)
        if lanes_of(cond.dtype) == 1:
            return self.mark(attrs.evolve(s, condition=cond))
        t, f = s.then_case, s.else_case
        if (
            isinstance(t, BufferStore)
            and isinstance(f, BufferStore)
            and t.buffer.data is f.buffer.data
            and len(t.indices) == len(f.indices)
            and all(prim_equal(a, b) for a, b in zip(t.indices, f.indices))
        ):
            value = Select(cond, self.wide(self.expr(t.value)), self.wide(self.expr(f.value)))
            return self.store(t, value)
        raise _Fail("if with a lane-varying condition")

    def leave(self, s: Stmt, entered: Stmt) -> Stmt:
        if isinstance(entered, LetStmt) and isinstance(s, LetStmt):
            for old, new in list(self.vars.items()):
                if new is entered.var:
                    del self.vars[old]
        return s


def _unsafe(e: PrimExpr) -> bool:
    """Whether evaluating `e` in a lane that did not ask for it could fault."""
    for n in sub_expressions(e):
        if isinstance(n, BufferLoad):
            return True
        if isinstance(n, (Div, Mod, FloorDiv, FloorMod)) and not is_float(n.dtype):
            return True
        if isinstance(n, Call) and n.name == "if_then_else":
            return True
    return False


def _check_dependences(body: Stmt) -> None:
    """Every buffer written in `body` must be accessed at one index (lanes independent)."""
    indices: dict[int, list[tuple[PrimExpr, ...]]] = {}
    written: set[int] = set()
    for n in sub_expressions(body):
        if isinstance(n, (BufferLoad, BufferStore)):
            indices.setdefault(id(n.buffer.data), []).append(n.indices)
            if isinstance(n, BufferStore):
                written.add(id(n.buffer.data))
                last = n.indices[-1]
                if isinstance(last, Ramp) and isinstance(last.stride, IntImm):
                    if last.stride.value == 0:
                        raise _Fail("lanes store to one element")
                elif isinstance(last, Ramp):
                    raise _Fail("store with a symbolic stride")
    for data in written:
        first, *rest = indices[data]
        for other in rest:
            if len(other) != len(first) or not all(prim_equal(a, b) for a, b in zip(first, other)):
                raise _Fail("a written buffer is accessed at different indices")


def vectorize_loop(loop: For) -> Stmt:
    """The vector form of a VECTORIZED loop, or the loop made SERIAL when it cannot be
    vectorized."""
    ext = loop.extent
    if not isinstance(ext, IntImm) or ext.value < 2:
        return attrs.evolve(loop, kind=ForKind.SERIAL)
    try:
        body = _Lanes(loop.loop_var, loop.min, ext.value).visit(loop.body)
        if any(n is loop.loop_var for n in sub_expressions(body)):
            raise _Fail("loop variable left in the vector body")
        _check_dependences(body)
    except _Fail:
        return attrs.evolve(loop, kind=ForKind.SERIAL)
    return simplify_stmt(body)


class _Vectorize(StmtMutator):
    def leave(self, s: Stmt, entered: Stmt) -> Stmt:
        if isinstance(s, For) and s.kind is ForKind.VECTORIZED:
            return vectorize_loop(s)
        return s


def vectorize(func: PrimFunc) -> PrimFunc:
    """`func` with every VECTORIZED loop turned into vector code (or SERIAL, see the module
    docstring)."""
    body = _Vectorize().visit(func.body)
    return func if body is func.body else attrs.evolve(func, body=body)


__all__ = ["vectorize", "vectorize_loop"]
