"""Loop IR (a `PrimFunc`) to LLVM IR with llvmlite.

`emit_primfunc(module, func)` adds `void <name>(<elem>* noalias nonnull align 64 p0, ...)`
to an `ir.Module`: one pointer per buffer parameter, in order (bool buffers hold one byte per
element). The emitter is table-driven: `_STMT` and `_EXPR` map node classes to generator
methods driven by `lang.trampoline.run`, so deep expressions and long let-chains never
recurse in Python. Values of loop-IR variables live in `KernelEmitter.vars`.

Accepted input is the output of `tir.transform.lower_pipeline`: flat (or multi-dimensional,
flattened here row-major) accesses, `Ramp`/`Broadcast` vectors, `For` loops (SERIAL and
PARALLEL; VECTORIZED runs as SERIAL, left to LLVM's vectorizer; UNROLLED runs as SERIAL
with `llvm.loop.unroll.full` on its latch, so LLVM unrolls it completely; a loop annotated
`pragma_no_unroll` gets `llvm.loop.unroll.disable`, so LLVM leaves it a loop), `Allocate` with
a constant size, `LetStmt`/`Let`, `IfThenElse`, `Select`, casts and every intrinsic of
`tir.op`.

Loops are emitted rotated (guard, body with the induction phi, latch with `add nsw` and the
exit test), the shape LLVM's loop vectorizer expects. Pure operations (arithmetic,
comparisons, casts, ramps, broadcasts) are value-numbered: an operation on the same LLVM
operands as one emitted earlier at a point that dominates this one (the same or an
enclosing loop body or branch) reuses its result, so the index arithmetic that statements
share is emitted once (a smaller module for LLVM to parse and optimize). Scalar
`if_then_else` whose sides can neither fault nor have effects becomes a `select`; otherwise
it branches. A vector `if_then_else` evaluates each side under a lane mask: loads become
masked loads/gathers and integer divisors of inactive lanes become 1.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

from ...lang.trampoline import Step, run
from ..tir import expr as tx
from ..tir import stmt as ts
from ..tir.stmt import PrimFunc
from ..tir.visitor import sub_expressions
from . import llvm_arith, memory
from .llvm_types import (
    I64,
    PTR,
    VOID,
    CodegenError,
    constant,
    elem_bytes,
    gep,
    lanes,
    llvm_type,
    splat,
)


def pointer_param_attrs(arg: ir.Argument, elem_align: int = 1) -> None:
    """Mark a buffer pointer parameter `noalias nonnull align <element size>`: arrays a user
    passes need not start on a 64-byte boundary (unaligned vector moves cost nothing extra on
    aligned data, and copying inputs to align them would)."""
    arg.add_attribute("noalias")
    arg.add_attribute("nonnull")
    arg.attributes.align = elem_align


class KernelEmitter:
    """Emits loop-IR statements into one LLVM function.

    `vars` maps loop-IR `Var`s (by identity) to LLVM values; `mask` is the lane mask of the
    vector `if_then_else` side being emitted (None outside one); `in_parallel` is true in the
    outlined body of a parallel loop, where nested parallel loops run serially.
    """

    def __init__(self, module: ir.Module, fn: ir.Function, kernel: str, in_parallel: bool) -> None:
        self.module = module
        self.fn = fn
        self.kernel = kernel
        self.in_parallel = in_parallel
        entry = fn.append_basic_block("entry")
        self.entry_builder = ir.IRBuilder(entry)
        self.body_block = fn.append_basic_block("body")
        self.builder = ir.IRBuilder(self.body_block)
        self.vars: dict[tx.Var, ir.Value] = {}
        self.mask: ir.Value | None = None
        self.stack_bytes = 0
        self._cache: list[dict[tx.PrimExpr, ir.Value]] = [{}]
        # Value numbering: one table per region whose values dominate what follows in it.
        self._numbered: list[dict[tuple[Any, ...], ir.Value]] = [{}]

    # ------------------------------------------------------------------ infrastructure

    def finish(self) -> None:
        """Close the function: branch from the alloca block to the body, return."""
        self.entry_builder.branch(self.body_block)
        if not self.builder.block.is_terminated:
            self.builder.ret_void()

    def alloca(self, ty: ir.Type, align: int = 64, name: str = "") -> ir.Value:
        """A stack slot in the entry block (allocated once per call, not per iteration)."""
        slot = self.entry_builder.alloca(ty, name=name)
        slot.align = align
        return slot

    def loop_id(self, unroll: str) -> ir.MDValue:
        """A new loop ID (`!n = !{!n, !{"llvm.loop.unroll.<unroll>"}}`) for the latch of a
        loop LLVM must unroll completely (`full`) or not at all (`disable`)."""
        hint = ir.MetaDataString(self.module, f"llvm.loop.unroll.{unroll}")
        node = self.module.add_metadata([hint])
        loop_id = ir.values.MDValue(self.module, [node], name=str(len(self.module.metadata)))
        loop_id.operands = (loop_id, node)  # a loop ID refers to itself (never hashed)
        return loop_id

    def block(self, name: str) -> ir.Block:
        """A new basic block in the current function."""
        return self.fn.append_basic_block(name)

    def bind(self, var: tx.Var, value: ir.Value) -> ir.Value | None:
        """Bind `var`; returns the previous binding (to restore with `unbind`)."""
        old = self.vars.get(var)
        self.vars[var] = value
        return old

    def unbind(self, var: tx.Var, old: ir.Value | None) -> None:
        """Undo `bind`."""
        if old is None:
            self.vars.pop(var, None)
        else:
            self.vars[var] = old

    def push_scope(self, mask: ir.Value | None = None) -> ir.Value | None:
        """Start a region whose values must not be reused outside it (a branch, a masked
        side, a let body); returns the previous mask for `pop_scope`."""
        self._cache.append({})
        self._numbered.append({})
        old = self.mask
        if mask is not None:
            self.mask = mask
        return old

    def pop_scope(self, old_mask: ir.Value | None) -> None:
        """End the region started by `push_scope`."""
        self._cache.pop()
        self._numbered.pop()
        self.mask = old_mask

    def numbered(self, key: tuple[Any, ...], make: Any) -> ir.Value:
        """The value of the pure operation `key` (its kind and operands' `value_key`s):
        one emitted at a dominating point, else `make()`, remembered in this region."""
        for table in reversed(self._numbered):
            hit = table.get(key)
            if hit is not None:
                return hit
        value = make()
        self._numbered[-1][key] = value
        return value

    def var(self, v: tx.Var) -> ir.Value:
        """The value bound to `v`."""
        value = self.vars.get(v)
        if value is None:
            raise CodegenError(f"variable `{v.name}` is used in `{self.kernel}` but not bound")
        return value

    # ------------------------------------------------------------------ expressions

    def expr(self, e: tx.PrimExpr) -> Any:
        """The LLVM value of `e`: a value, or a generator for `run` that returns one."""
        for layer in reversed(self._cache):
            hit = layer.get(e)
            if hit is not None:
                return hit
        cls = type(e)
        if cls is tx.IntImm or cls is tx.FloatImm:
            return constant(e.dtype, e.value)  # type: ignore[attr-defined]
        if cls is tx.Var:
            return self.var(e)  # type: ignore[arg-type]
        return self._expr_cached(e)

    def _expr_cached(self, e: tx.PrimExpr) -> Step:
        handler = _EXPR.get(type(e))
        if handler is None:
            handler = _expr_by_base(type(e))
        value = yield handler(self, e)
        self._cache[-1][e] = value
        return value

    def _binary(self, e: tx.BinaryOp) -> Step:
        x = yield self.expr(e.a)
        y = yield self.expr(e.b)
        cls, dtype, mask = type(e), e.a.dtype, self.mask
        key = (cls, dtype, value_key(x), value_key(y), id(mask) if mask is not None else 0)
        return self.numbered(key, lambda: llvm_arith.binary(self.builder, cls, x, y, dtype, mask))

    def _compare(self, e: tx.CmpOp) -> Step:
        x = yield self.expr(e.a)
        y = yield self.expr(e.b)
        cls, dtype = type(e), e.a.dtype
        key = (cls, dtype, value_key(x), value_key(y))
        return self.numbered(key, lambda: llvm_arith.compare(self.builder, cls, x, y, dtype))

    def _logical(self, e: tx.And | tx.Or) -> Step:
        x = yield self.expr(e.a)
        y = yield self.expr(e.b)
        return llvm_arith.logical(self.builder, type(e), x, y)

    def _not(self, e: tx.Not) -> Step:
        x = yield self.expr(e.a)
        return llvm_arith.logical(self.builder, tx.Not, x)

    def _select(self, e: tx.Select) -> Step:
        c = yield self.expr(e.condition)
        t = yield self.expr(e.true_value)
        f = yield self.expr(e.false_value)
        return self.select(c, t, f)

    def select(self, c: ir.Value, t: ir.Value, f: ir.Value) -> ir.Value:
        """`select` with lanes reconciled (a vector condition widens scalar sides)."""
        n = max(lanes(c), lanes(t), lanes(f))
        if n > 1:
            t, f = splat(self.builder, t, n), splat(self.builder, f, n)
        return self.builder.select(c, t, f)

    def _cast(self, e: tx.Cast) -> Step:
        v = yield self.expr(e.value)
        src, dst = e.value.dtype, e.dtype
        key = (tx.Cast, src, dst, value_key(v))
        return self.numbered(key, lambda: llvm_arith.cast(self.builder, v, src, dst))

    def _let(self, e: tx.Let) -> Step:
        v = yield self.expr(e.value)
        old = self.bind(e.var, v)
        saved = self.push_scope()
        try:
            body = yield self.expr(e.body)
        finally:
            self.pop_scope(saved)
            self.unbind(e.var, old)
        return body

    def _ramp(self, e: tx.Ramp) -> Step:
        base = yield self.expr(e.base)
        stride = yield self.expr(e.stride)
        key = (tx.Ramp, e.lanes, value_key(base), value_key(stride))
        return self.numbered(key, lambda: self.ramp(base, stride, e.lanes))

    def ramp(self, base: ir.Value, stride: ir.Value, n: int) -> ir.Value:
        """`base + k*stride` for lanes `k` in `[0, n)`."""
        ety = base.type
        steps = ir.Constant(ir.VectorType(ety, n), [ir.Constant(ety, k) for k in range(n)])
        b = self.builder
        if isinstance(ety, ir.IntType):
            offs = b.mul(splat(b, stride, n), steps)
            return b.add(splat(b, base, n), offs)
        fsteps = ir.Constant(ir.VectorType(ety, n), [ir.Constant(ety, float(k)) for k in range(n)])
        return b.fadd(splat(b, base, n), b.fmul(splat(b, stride, n), fsteps))

    def _broadcast(self, e: tx.Broadcast) -> Step:
        v = yield self.expr(e.value)
        key = (tx.Broadcast, e.lanes, value_key(v))
        return self.numbered(key, lambda: splat(self.builder, v, e.lanes))

    def _call(self, e: tx.Call) -> Step:
        from .intrinsics import emit_call

        return (yield emit_call(self, e))

    def _load(self, e: tx.BufferLoad) -> Step:
        return (yield memory.load(self, e))

    def _unsupported(self, e: Any) -> Step:
        raise CodegenError(f"the code generator cannot emit a `{type(e).__name__}` node")
        yield

    def if_then_else(self, cond: tx.PrimExpr, t_e: tx.PrimExpr, f_e: tx.PrimExpr) -> Step:
        """The lazy conditional: only the taken side is evaluated (per lane for vectors)."""
        b = self.builder
        c = yield self.expr(cond)
        n = max(lanes(c), _lanes_of(t_e.dtype))
        if lanes(c) > 1:
            outer = self.mask
            m_t = c if outer is None else b.and_(outer, c)
            not_c = llvm_arith.logical(b, tx.Not, c)
            m_f = not_c if outer is None else b.and_(outer, not_c)
            saved = self.push_scope(m_t)
            t = yield self.expr(t_e)
            self.pop_scope(saved)
            saved = self.push_scope(m_f)
            f = yield self.expr(f_e)
            self.pop_scope(saved)
            return self.select(c, t, f)
        if _cannot_fault(t_e) and _cannot_fault(f_e):
            t = yield self.expr(t_e)
            f = yield self.expr(f_e)
            return self.select(c, t, f)
        then_bb, else_bb, merge_bb = (
            self.block("ite.then"),
            self.block("ite.else"),
            self.block("ite.end"),
        )
        b.cbranch(c, then_bb, else_bb)
        results = []
        for bb, side in ((then_bb, t_e), (else_bb, f_e)):
            b.position_at_end(bb)
            saved = self.push_scope()
            v = yield self.expr(side)
            self.pop_scope(saved)
            if n > 1:
                v = splat(b, v, n)
            results.append((v, b.block))
            b.branch(merge_bb)
        b.position_at_end(merge_bb)
        phi = b.phi(results[0][0].type)
        for v, bb in results:
            phi.add_incoming(v, bb)
        return phi

    # ------------------------------------------------------------------ statements

    def stmt(self, s: ts.Stmt) -> Step:
        """A generator emitting statement `s` at the builder's position."""
        handler = _STMT.get(type(s))
        if handler is None:
            raise CodegenError(f"the code generator cannot emit a `{type(s).__name__}` statement")
        self._cache = [{}]
        return handler(self, s)

    def _seq(self, s: ts.SeqStmt) -> Step:
        for child in s.stmts:
            yield self.stmt(child)

    def _store(self, s: ts.BufferStore) -> Step:
        yield memory.store(self, s)

    def _evaluate(self, s: ts.Evaluate) -> Step:
        yield self.expr(s.value)

    def _let_stmt(self, s: ts.LetStmt) -> Step:
        v = yield self.expr(s.value)
        old = self.bind(s.var, v)
        try:
            yield self.stmt(s.body)
        finally:
            self.unbind(s.var, old)

    def _if(self, s: ts.IfThenElse) -> Step:
        b = self.builder
        c = yield self.expr(s.condition)
        if lanes(c) > 1:
            raise CodegenError("an IfThenElse statement needs a scalar condition")
        then_bb = self.block("if.then")
        end_bb = self.block("if.end")
        else_bb = self.block("if.else") if s.else_case is not None else end_bb
        b.cbranch(c, then_bb, else_bb)
        b.position_at_end(then_bb)
        self._numbered.append({})
        yield self.stmt(s.then_case)
        self._numbered.pop()
        if not b.block.is_terminated:
            b.branch(end_bb)
        if s.else_case is not None:
            b.position_at_end(else_bb)
            self._numbered.append({})
            yield self.stmt(s.else_case)
            self._numbered.pop()
            if not b.block.is_terminated:
                b.branch(end_bb)
        b.position_at_end(end_bb)

    def _for(self, s: ts.For) -> Step:
        lo = yield self.expr(s.min)
        ext = yield self.expr(s.extent)
        ty = llvm_type(s.loop_var.dtype)
        lo, ext = _as_int(self.builder, lo, ty), _as_int(self.builder, ext, ty)
        if s.kind is ts.ForKind.PARALLEL and not self.in_parallel:
            from .parallel import emit_parallel_for

            yield emit_parallel_for(self, s, lo, ext)
            return
        end = self.builder.add(lo, ext, flags=("nsw",))
        unroll = None
        if s.kind is ts.ForKind.UNROLLED:
            unroll = "full"
        elif s.annotations.get("pragma_no_unroll"):
            unroll = "disable"
        yield self.loop(s.loop_var, lo, end, s.body, unroll=unroll)

    def loop(
        self,
        var: tx.Var,
        begin: ir.Value,
        end: ir.Value,
        body: ts.Stmt,
        unroll: str | None = None,
    ) -> Step:
        """`for var in [begin, end): body` as a rotated loop (guard, body, latch); `unroll`
        `"full"` marks it for LLVM to unroll completely (`llvm.loop.unroll.full`),
        `"disable"` forbids LLVM to unroll it, None leaves it to LLVM."""
        b = self.builder
        name = var.name or "i"
        body_bb, exit_bb = self.block(f"{name}.body"), self.block(f"{name}.end")
        pre = b.block
        b.cbranch(b.icmp_signed("<", begin, end), body_bb, exit_bb)
        b.position_at_end(body_bb)
        phi = b.phi(begin.type, name=name)
        phi.add_incoming(begin, pre)
        old = self.bind(var, phi)
        self._numbered.append({})
        try:
            yield self.stmt(body)
        finally:
            self._numbered.pop()
            self.unbind(var, old)
        nxt = b.add(phi, ir.Constant(begin.type, 1), name=f"{name}.next", flags=("nsw",))
        latch = b.cbranch(b.icmp_signed("<", nxt, end), body_bb, exit_bb)
        if unroll is not None:
            latch.set_metadata("llvm.loop", self.loop_id(unroll))
        phi.add_incoming(nxt, b.block)
        b.position_at_end(exit_bb)

    def _allocate(self, s: ts.Allocate) -> Step:
        yield memory.allocate(self, s)


def value_key(v: ir.Value) -> Any:
    """What identifies an operand for value numbering: its identity (values live as long as
    their module; equal constants of `llvm_types.constant` are one object)."""
    return id(v)


def _lanes_of(dtype: str) -> int:
    return int(dtype.split("x", 1)[1]) if "x" in dtype else 1


def _as_int(b: ir.IRBuilder, v: ir.Value, ty: ir.Type) -> ir.Value:
    if v.type == ty:
        return v
    if v.type.width < ty.width:
        return b.sext(v, ty)
    return b.trunc(v, ty)


_FAULTING_DIV = (tx.Div, tx.Mod, tx.FloorDiv, tx.FloorMod)


def _cannot_fault(e: tx.PrimExpr) -> bool:
    """Whether evaluating `e` can neither fault nor trap: no loads, no integer division by a
    divisor that is not a nonzero constant."""
    for node in sub_expressions(e):
        if isinstance(node, tx.BufferLoad):
            return False
        if isinstance(node, _FAULTING_DIV) and not node.a.dtype.startswith(("float", "bfloat")):
            d = node.b.value if isinstance(node.b, tx.IntImm) else None
            if isinstance(node.b, tx.Broadcast) and isinstance(node.b.value, tx.IntImm):
                d = node.b.value.value
            if not d:
                return False
    return True


_EXPR: dict[type, Any] = {
    tx.Select: KernelEmitter._select,
    tx.Cast: KernelEmitter._cast,
    tx.Call: KernelEmitter._call,
    tx.Let: KernelEmitter._let,
    tx.Ramp: KernelEmitter._ramp,
    tx.Broadcast: KernelEmitter._broadcast,
    tx.BufferLoad: KernelEmitter._load,
    tx.And: KernelEmitter._logical,
    tx.Or: KernelEmitter._logical,
    tx.Not: KernelEmitter._not,
}


def _expr_by_base(cls: type) -> Any:
    """The handler of a node class not in `_EXPR` (arithmetic and comparison subclasses)."""
    handler: Any
    if issubclass(cls, tx.BinaryOp):
        handler = KernelEmitter._binary
    elif issubclass(cls, tx.CmpOp):
        handler = KernelEmitter._compare
    else:
        handler = KernelEmitter._unsupported
    _EXPR[cls] = handler
    return handler


_STMT: dict[type, Any] = {
    ts.SeqStmt: KernelEmitter._seq,
    ts.BufferStore: KernelEmitter._store,
    ts.Evaluate: KernelEmitter._evaluate,
    ts.LetStmt: KernelEmitter._let_stmt,
    ts.IfThenElse: KernelEmitter._if,
    ts.For: KernelEmitter._for,
    ts.Allocate: KernelEmitter._allocate,
}


def declare_kernel(module: ir.Module, func: PrimFunc) -> ir.Function:
    """The LLVM declaration of `func`'s kernel: one pointer per buffer parameter."""
    existing = module.globals.get(func.name)
    if existing is not None:
        if not getattr(existing, "relay_kernel", False):
            raise CodegenError(f"kernel name `{func.name}` clashes with a function the code uses")
        return existing
    fnty = ir.FunctionType(VOID, [PTR] * len(func.params))
    fn = ir.Function(module, fnty, func.name)
    fn.relay_kernel = True
    for arg, buf in zip(fn.args, func.params):
        arg.name = buf.name
        pointer_param_attrs(arg, elem_bytes(buf.dtype))
    fn.attributes.add("nounwind")
    return fn


def emit_primfunc(module: ir.Module, func: PrimFunc) -> ir.Function:
    """Add the kernel of `func` to `module` and return its LLVM function."""
    fn = declare_kernel(module, func)
    if fn.blocks:
        raise CodegenError(f"kernel `{func.name}` is defined twice in one module")
    em = KernelEmitter(module, fn, func.name, in_parallel=False)
    for arg, buf in zip(fn.args, func.params):
        existing = em.vars.get(buf.data)
        if existing is not None:
            raise CodegenError(
                f"parameters of `{func.name}` share the memory of `{buf.name}`; "
                "kernel parameters must not alias"
            )
        em.vars[buf.data] = arg
    _bind_shape_vars(em, fn, func)
    run(em.stmt(func.body))
    em.finish()
    return fn


def _bind_shape_vars(em: KernelEmitter, fn: ir.Function, func: PrimFunc) -> None:
    """A dynamic-shape kernel (`func.attrs["shape_vars"]`, loop-IR variables in its
    buffers' shapes) reads their values from its last parameter, an int64 array."""
    shape_vars = func.attrs.get("shape_vars", ())
    if not shape_vars:
        return
    dims = fn.args[len(func.params) - 1]
    for k, v in enumerate(shape_vars):
        ptr = gep(em.entry_builder, dims, [ir.Constant(I64, k)], I64)
        em.vars[v] = em.entry_builder.load(ptr, typ=I64, align=8)
