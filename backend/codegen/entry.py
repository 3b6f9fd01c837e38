"""The model entry function: one native call that runs every kernel of a model in order.

An `EntryPlan` lists kernel calls; each argument is a `BufferRef` naming an input, output,
parameter or a slice of the workspace. `emit_entry` builds

    void <name>(i8** inputs, i8** outputs, i8** params, i8* workspace)

which loads each pointer (`inputs[index] + offset`, ..., `workspace + offset`; offsets in
bytes) and calls the kernels with them, so the executor crosses from Python to native code
once per model run. Offsets must keep the 64-byte alignment kernels assume.

Beside it, `emit_entry(..., profiled=True)` builds the profiling twin

    void <name>_profiled(i8** inputs, i8** outputs, i8** params, i8* workspace, i64* stamps)

which makes the same calls and reads the monotonic clock (`__relay_now_ns`, from the
thread pool's module) before the first call and after each one: `stamps[0]` is the start,
`stamps[k + 1]` the end of call `k`. Its calls are never inlined, so the kernels' code is the
one the plain entry runs and each stamp falls between two kernels.
"""

from __future__ import annotations

from collections.abc import Mapping

from attrs import field, frozen, validators
from llvmlite import ir

from ..tir.expr import as_tuple
from ..tir.stmt import PrimFunc
from .llvm_ir import declare_kernel
from .llvm_types import I8, I64, PTR, VOID, CodegenError, declare, gep

BUFFER_KINDS = ("input", "output", "param", "workspace")
PROFILED_SUFFIX = "_profiled"
NOW_NS = "__relay_now_ns"  # defined by the thread pool's module (threadpool.NOW_NS)


def profiled_name(entry: str) -> str:
    """The name of the profiling twin of entry function `entry`."""
    return entry + PROFILED_SUFFIX


def _check_offset(instance: object, attribute: object, value: int) -> None:
    if value < 0 or value % 64:
        raise ValueError(f"a buffer offset must be a non-negative multiple of 64, got {value}")


@frozen
class BufferRef:
    """A kernel argument: `inputs[index]`, `outputs[index]`, `params[index]` (plus `offset`
    bytes), or `workspace + offset` (`index` unused)."""

    kind: str = field(validator=validators.in_(BUFFER_KINDS))
    index: int = field(validator=validators.ge(0))
    offset: int = field(default=0, validator=_check_offset)


@frozen
class KernelCall:
    """One call of kernel `kernel` with `args` (one per kernel parameter, in order)."""

    kernel: str
    args: tuple[BufferRef, ...] = field(converter=as_tuple)


@frozen
class EntryPlan:
    """The entry function `name` and the kernel calls it makes, in order."""

    name: str
    calls: tuple[KernelCall, ...] = field(converter=as_tuple)


def emit_entry(
    module: ir.Module, plan: EntryPlan, kernels: Mapping[str, PrimFunc], profiled: bool = False
) -> ir.Function:
    """Add `plan`'s entry function to `module` (which defines or declares the kernels), or
    with `profiled` its profiling twin (module docstring)."""
    name = profiled_name(plan.name) if profiled else plan.name
    if name in module.globals:
        raise CodegenError(f"the entry function `{name}` clashes with another function")
    params = [PTR, PTR, PTR, PTR] + ([PTR] if profiled else [])
    fn = ir.Function(module, ir.FunctionType(VOID, params), name)
    fn.attributes.add("nounwind")
    for arg, nm in zip(fn.args, ("inputs", "outputs", "params", "workspace", "stamps")):
        arg.name = nm
    tables = dict(zip(("input", "output", "param"), fn.args[:3]))
    workspace = fn.args[3]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    loaded: dict[tuple[str, int], ir.Value] = {}
    now = declare(module, NOW_NS, I64, []) if profiled else None

    def stamp(k: int) -> None:
        if now is not None:
            slot = gep(b, fn.args[4], [ir.Constant(I64, k)], I64)
            b.store(b.call(now, []), slot)

    def pointer(ref: BufferRef) -> ir.Value:
        if ref.kind == "workspace":
            base = workspace
        else:
            key = (ref.kind, ref.index)
            base = loaded.get(key)
            if base is None:
                slot = gep(b, tables[ref.kind], [ir.Constant(I64, ref.index)], PTR)
                base = loaded[key] = b.load(slot, typ=PTR, align=8)
        if ref.offset:
            return gep(b, base, [ir.Constant(I64, ref.offset)], I8)
        return base

    stamp(0)
    for k, call in enumerate(plan.calls):
        func = kernels.get(call.kernel)
        if func is None:
            raise CodegenError(f"entry `{plan.name}` calls unknown kernel `{call.kernel}`")
        if len(call.args) != len(func.params):
            raise CodegenError(
                f"entry `{plan.name}` calls `{call.kernel}` with {len(call.args)} buffers; "
                f"it takes {len(func.params)}"
            )
        callee = declare_kernel(module, func)
        pointers = [pointer(ref) for ref in call.args]
        if now is None:
            b.call(callee, pointers)
        else:
            b.call(callee, pointers, attrs=("noinline",))
            stamp(k + 1)
    b.ret_void()
    return fn
