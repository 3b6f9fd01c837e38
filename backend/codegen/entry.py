"""The model entry function: one native call that runs every kernel of a model in order.

An `EntryPlan` lists kernel calls; each argument is a `BufferRef` naming an input, output,
parameter or a slice of the workspace. `emit_entry` builds

    void <name>(i8** inputs, i8** outputs, i8** params, i8* workspace)

which loads each pointer (`inputs[index] + offset`, ..., `workspace + offset`; offsets in
bytes) and calls the kernels with them, so the executor crosses from Python to native code
once per model run. Offsets must keep the 64-byte alignment kernels assume.
"""

from __future__ import annotations

from collections.abc import Mapping

from attrs import field, frozen, validators
from llvmlite import ir

from ..tir.expr import as_tuple
from ..tir.stmt import PrimFunc
from .llvm_ir import declare_kernel
from .llvm_types import I8, I64, PTR, VOID, CodegenError, gep

BUFFER_KINDS = ("input", "output", "param", "workspace")


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


def emit_entry(module: ir.Module, plan: EntryPlan, kernels: Mapping[str, PrimFunc]) -> ir.Function:
    """Add `plan`'s entry function to `module` (which defines or declares the kernels)."""
    if plan.name in module.globals:
        raise CodegenError(f"the entry function `{plan.name}` clashes with another function")
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR, PTR, PTR]), plan.name)
    fn.attributes.add("nounwind")
    for arg, nm in zip(fn.args, ("inputs", "outputs", "params", "workspace")):
        arg.name = nm
    tables = dict(zip(("input", "output", "param"), fn.args[:3]))
    workspace = fn.args[3]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    loaded: dict[tuple[str, int], ir.Value] = {}

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

    for call in plan.calls:
        func = kernels.get(call.kernel)
        if func is None:
            raise CodegenError(f"entry `{plan.name}` calls unknown kernel `{call.kernel}`")
        if len(call.args) != len(func.params):
            raise CodegenError(
                f"entry `{plan.name}` calls `{call.kernel}` with {len(call.args)} buffers; "
                f"it takes {len(func.params)}"
            )
        callee = declare_kernel(module, func)
        b.call(callee, [pointer(ref) for ref in call.args])
    b.ret_void()
    return fn
