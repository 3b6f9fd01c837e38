"""Outlining a PARALLEL loop into a task function run by the thread pool.

`for v in [min, min + extent) parallel: body` becomes, in the kernel,

    closure = {captured values..., min, extent, ntasks}       (an alloca)
    ntasks  = min(extent, plan.tasks)
    __relay_parallel_run(@k.par0, closure, ntasks, plan.threads)

where `plan` is the loop's `ParallelLoop` annotation (`backend.lower.parallel_plan` decides
it at build time from the loop's work and the target's thread count); a loop without one
makes `min(extent, TASKS_PER_THREAD * threads)` tasks for all the threads the call may use.
The pool runs the loop on `min(plan.threads, the running model's thread count)` threads
(`threadpool`), so a model whose count is lowered after the build keeps its tasks and
shares them among fewer threads, and one raised above its build's count uses no more
threads than its plans.

and two internal functions: `@k.par0(i64 task, ptr closure)` loads the captures and computes
its chunk `[min + task*extent/ntasks, min + (task+1)*extent/ntasks)`, then calls
`@k.par0.body(captures..., begin, end)`, which runs the serial loop over the chunk. Captured
buffer pointers are `noalias nonnull align 64` parameters of the body function; when LLVM
inlines it into the task function those facts become alias scopes, so the loop vectorizes
without runtime alias checks. Parallel loops nested inside run serially.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from llvmlite import ir

from ..kernel_cost import PLAN_KEY, ParallelLoop
from ..tir import expr as tx
from ..tir import stmt as ts
from ..tir.visitor import sub_expressions
from . import threadpool
from .llvm_types import I32, I64, PTR, VOID, gep

if TYPE_CHECKING:
    from .llvm_ir import KernelEmitter

Step = Generator[Any, Any, Any]


def captured_vars(em: KernelEmitter, loop: ts.For) -> list[tx.Var]:
    """The variables bound outside `loop` that its body uses, in first-use order
    (buffer data pointers included)."""
    seen: dict[tx.Var, None] = {}
    buffers: set[int] = set()  # a buffer seen again brings no new variable
    for node in sub_expressions(loop.body):
        found: list[tx.Var] = []
        if isinstance(node, tx.Var):
            found.append(node)
        buf = getattr(node, "buffer", None)
        if buf is not None and id(buf) not in buffers:
            buffers.add(id(buf))
            found.append(buf.data)
            for dim in buf.shape:
                found.extend(n for n in sub_expressions(dim) if isinstance(n, tx.Var))
        for v in found:
            if v in em.vars and v not in seen and v is not loop.loop_var:
                seen[v] = None
    return list(seen)


def _counter(em: KernelEmitter) -> int:
    key = f"{em.kernel}.par"
    k = 0
    while f"{key}{k}" in em.module.globals:
        k += 1
    return k


def emit_parallel_for(em: KernelEmitter, loop: ts.For, lo: ir.Value, ext: ir.Value) -> Step:
    """Emit `loop` (PARALLEL) as a call into the thread pool; `lo`/`ext` are its bounds."""
    from .llvm_ir import KernelEmitter, pointer_param_attrs

    module, b = em.module, em.builder
    caps = captured_vars(em, loop)
    values = [em.vars[v] for v in caps]
    name = f"{em.kernel}.par{_counter(em)}"

    # body function: (captures..., begin, end) -> void, the serial loop over one chunk
    body_ty = ir.FunctionType(VOID, [v.type for v in values] + [lo.type, lo.type])
    body_fn = ir.Function(module, body_ty, f"{name}.body")
    body_fn.linkage = "internal"
    body_fn.attributes.add("nounwind")
    sub = KernelEmitter(module, body_fn, em.kernel, in_parallel=True)
    for var, arg in zip(caps, body_fn.args):
        arg.name = var.name
        if isinstance(arg.type, ir.PointerType):
            pointer_param_attrs(arg)
        sub.vars[var] = arg
    begin, end = body_fn.args[-2], body_fn.args[-1]
    yield sub.loop(loop.loop_var, begin, end, loop.body)
    sub.finish()

    # closure layout: captures, min, extent, ntasks
    closure_ty = ir.LiteralStructType([v.type for v in values] + [lo.type, lo.type, I64])
    task_fn = ir.Function(module, ir.FunctionType(VOID, [I64, PTR]), name)
    task_fn.linkage = "internal"
    task_fn.attributes.add("nounwind")
    tb = ir.IRBuilder(task_fn.append_basic_block("entry"))
    task, cl = task_fn.args

    def field(builder: ir.IRBuilder, ptr: ir.Value, k: int) -> ir.Value:
        return gep(builder, ptr, [ir.Constant(I32, 0), ir.Constant(I32, k)], closure_ty)

    loaded = [tb.load(field(tb, cl, k), typ=v.type) for k, v in enumerate(values)]
    nv = len(values)
    t_min = tb.load(field(tb, cl, nv), typ=lo.type)
    t_ext = _to_i64(tb, tb.load(field(tb, cl, nv + 1), typ=lo.type))
    t_n = tb.load(field(tb, cl, nv + 2), typ=I64)
    first = tb.sdiv(tb.mul(task, t_ext, flags=("nsw",)), t_n)
    last = tb.sdiv(tb.mul(tb.add(task, ir.Constant(I64, 1)), t_ext, flags=("nsw",)), t_n)
    chunk_begin = tb.add(t_min, _from_i64(tb, first, lo.type), flags=("nsw",))
    chunk_end = tb.add(t_min, _from_i64(tb, last, lo.type), flags=("nsw",))
    tb.call(body_fn, [*loaded, chunk_begin, chunk_end])
    tb.ret_void()

    # the launch in the kernel
    run = threadpool.declare_run(module)
    closure = em.alloca(closure_ty, 8, name=f"{name}.closure")
    for k, v in enumerate([*values, lo, ext]):
        b.store(v, field(b, closure, k))
    ext64 = _to_i64(b, ext)
    plan = loop.annotations.get(PLAN_KEY)
    if isinstance(plan, ParallelLoop):
        # planned at build time; a loop partitioned after planning keeps its plan's cut
        limit = ir.Constant(I64, max(1, plan.tasks))
        threads = ir.Constant(I32, max(1, plan.threads))
    else:  # not planned: as many tasks as the pool's threads allow
        nthreads = threadpool.declare_runtime(module)[1]
        threads = b.call(nthreads, [])
        wide = b.zext(threads, I64)
        per_thread = ir.Constant(I64, threadpool.TASKS_PER_THREAD)
        one = ir.Constant(I64, 1)
        limit = b.select(b.icmp_signed(">", wide, one), b.mul(wide, per_thread), one)
    ntasks = b.select(b.icmp_signed("<", ext64, limit), ext64, limit)
    b.store(ntasks, field(b, closure, nv + 2))
    with b.if_then(b.icmp_signed(">", ext64, ir.Constant(I64, 0))):
        b.call(run, [task_fn, closure, ntasks, threads])


def _to_i64(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    if v.type == I64:
        return v
    return b.sext(v, I64) if v.type.width < 64 else b.trunc(v, I64)


def _from_i64(b: ir.IRBuilder, v: ir.Value, ty: ir.Type) -> ir.Value:
    if ty == I64:
        return v
    return b.trunc(v, ty)
