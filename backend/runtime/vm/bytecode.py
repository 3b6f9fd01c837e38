"""The VM's bytecode: a register machine, one frame of registers per function call.

A `VMProgram` is a list of `VMFunction`s (the module's globals, the closures' bodies and
small wrappers that make constructors and operators first-class), the constants they load
and the kernels they call. A function's first registers hold its arguments (a closure's
captured values come first); each instruction below reads and writes registers by index,
and jumps go to instruction indices of the same function.

Tensors are numpy arrays; tuples are Python tuples; ADT values, references are the
interpreter's `ConstructorValue` and `RefValue`; closures are `VMClosure`s.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from attrs import define, field, frozen

from ....lang.adt import Constructor
from ....lang.attrs import Attrs
from ....lang.expr import Function
from ....lang.op import Op
from ....lang.span import Span

Registers = tuple[int, ...]


@frozen
class Move:
    """`dst = src`."""

    dst: int
    src: int


@frozen
class LoadConst:
    """`dst = constants[index]` (a read-only array, never written by a kernel)."""

    dst: int
    index: int


@frozen
class AllocTensor:
    """`dst` = a fresh, 64-byte aligned tensor of `shape` and numpy dtype `dtype`, for a
    kernel to write; when `reuse` >= 0, the storage of the (dead, same byte size) tensor
    in register `reuse` instead (the block's memory plan, `vm.memory`)."""

    dst: int
    shape: tuple[int, ...]
    dtype: np.dtype
    reuse: int = -1


@frozen
class InvokeKernel:
    """Call native kernel `kernel` on the tensors in `inputs`, its lifted constants, then
    the tensors in `outputs` (which it writes)."""

    kernel: int
    inputs: Registers
    outputs: Registers


@frozen
class InvokeDynamicKernel:
    """Call dynamic-shape kernel `kernel` (`VMKernel.dynamic`) on the tensors in `inputs`:
    bind its shape variables from their shapes (checking every other dimension), allocate
    its outputs into `outputs` with the shapes that gives, and run it (or, when the shapes
    break an assumption the kernel was compiled under, its function in the interpreter on
    the call's arguments `args`, whose tensors `inputs` are)."""

    kernel: int
    args: Registers
    inputs: Registers
    outputs: Registers


@frozen
class InvokeFallback:
    """`dst` = primitive function `kernel` (which has no native code) run by the
    interpreter on `args`."""

    dst: int
    kernel: int
    args: Registers


@frozen
class InvokeOp:
    """`dst` = operator `op` (with `attrs`) applied by its reference implementation: an
    operator call that fusion left outside any kernel."""

    dst: int
    op: Op
    attrs: Attrs | None
    args: Registers
    span: Span | None = field(default=None, eq=False)


@frozen
class Goto:
    """Continue at instruction `target`."""

    target: int


@frozen
class JumpIfFalse:
    """Continue at `target` when the scalar bool tensor in `cond` is false."""

    cond: int
    target: int


@frozen
class GetTag:
    """`dst` = the constructor tag (an int) of the ADT value in `src`."""

    dst: int
    src: int


@frozen
class Switch:
    """A jump table: continue at `table[tag]` for the tag in `tag`, else at `default`."""

    tag: int
    table: tuple[tuple[int, int], ...]
    default: int

    def targets(self) -> dict[int, int]:
        """The table as a mapping tag → target."""
        return dict(self.table)


@frozen
class JumpIfTagNot:
    """Continue at `target` unless the tag in register `tag` is `expected`."""

    tag: int
    expected: int
    target: int


@frozen
class AllocADT:
    """`dst` = `constructor(fields...)`."""

    dst: int
    constructor: Constructor
    fields: Registers


@frozen
class GetADTField:
    """`dst` = field `index` of the ADT value in `src`."""

    dst: int
    src: int
    index: int


@frozen
class AllocTuple:
    """`dst` = `(fields...)`."""

    dst: int
    fields: Registers


@frozen
class GetField:
    """`dst` = field `index` of the tuple in `src`."""

    dst: int
    src: int
    index: int


@frozen
class AllocClosure:
    """`dst` = a closure of function `func` over the values of `captured`; when
    `self_index` >= 0 the closure's own value is captured at that position (a function
    bound by `let` that calls itself)."""

    dst: int
    func: int
    captured: Registers
    self_index: int = -1


@frozen
class InvokeClosure:
    """`dst` = the closure (or other function value) in `closure` called on `args`."""

    dst: int
    closure: int
    args: Registers
    span: Span | None = field(default=None, eq=False)


@frozen
class TailInvokeClosure:
    """Return what the closure in `closure` returns on `args` (reusing this frame)."""

    closure: int
    args: Registers
    span: Span | None = field(default=None, eq=False)


@frozen
class Invoke:
    """`dst` = global function `func` called on `args`."""

    dst: int
    func: int
    args: Registers


@frozen
class TailInvoke:
    """Return what global function `func` returns on `args` (reusing this frame)."""

    func: int
    args: Registers


@frozen
class RefNew:
    """`dst` = a new reference holding the value in `src`."""

    dst: int
    src: int


@frozen
class RefRead:
    """`dst` = the value the reference in `ref` holds."""

    dst: int
    ref: int


@frozen
class RefWrite:
    """Store the value in `src` into the reference in `ref`; `dst` = `()`."""

    dst: int
    ref: int
    src: int


@frozen
class Ret:
    """Return the value in `src` to the caller."""

    src: int


@frozen
class Fail:
    """Stop with a `MatchError` (no clause of a `match` matched)."""

    message: str
    span: Span | None = field(default=None, eq=False)


Instruction = (
    Move
    | LoadConst
    | AllocTensor
    | InvokeKernel
    | InvokeDynamicKernel
    | InvokeFallback
    | InvokeOp
    | Goto
    | JumpIfFalse
    | GetTag
    | Switch
    | JumpIfTagNot
    | AllocADT
    | GetADTField
    | AllocTuple
    | GetField
    | AllocClosure
    | InvokeClosure
    | TailInvokeClosure
    | Invoke
    | TailInvoke
    | RefNew
    | RefRead
    | RefWrite
    | Ret
    | Fail
)


@frozen
class VMFunction:
    """One function of a program: its name, how many arguments it takes (captured values
    included), how many registers a frame needs, and its code."""

    name: str
    arity: int
    registers: int
    code: tuple[Instruction, ...]


@frozen
class DynamicLayout:
    """The shapes of a dynamic-shape kernel: per (flattened) input and output, its
    dimensions — `d >= 0` a static size, `d < 0` shape variable `-1 - d` — and numpy
    dtype; the variables' names; and the kernel's primitive function, which the
    interpreter runs on a call whose shapes break the kernel's assumptions (two
    occurrences of one variable with different sizes). The native kernel takes an int64
    array of the variables' values after its outputs."""

    inputs: tuple[tuple[tuple[int, ...], np.dtype], ...]
    outputs: tuple[tuple[tuple[int, ...], np.dtype], ...]
    variables: tuple[str, ...]
    function: Function


@frozen
class VMKernel:
    """A kernel the program calls: its symbol, the positions of its lifted constants in
    the program's `params`, the (shape, numpy dtype) of each input it reads, or the
    primitive function the interpreter runs when it has no native code; `dynamic` for a
    kernel compiled once for all sizes of its `?` or symbolic dimensions."""

    name: str
    lifted: tuple[int, ...] = ()
    inputs: tuple[tuple[tuple[int, ...], np.dtype], ...] = ()
    fallback: Function | None = None
    dynamic: DynamicLayout | None = None


@define
class VMProgram:
    """What the VM runs: functions (the entry is `functions[entry]`), constants, kernels
    and the kernels' lifted constants (`params`)."""

    functions: list[VMFunction]
    entry: int
    constants: list[Any] = field(factory=list)
    kernels: list[VMKernel] = field(factory=list)
    params: list[np.ndarray] = field(factory=list)

    def astext(self) -> str:
        """The program as text, one instruction a line (what `dump["vm"]` shows)."""
        lines = []
        for k, kernel in enumerate(self.kernels):
            how = "interpreted" if kernel.fallback is not None else "native"
            if kernel.dynamic is not None:
                how += ", dynamic: " + ", ".join(kernel.dynamic.variables)
            lines.append(f"kernel {k}: {kernel.name} ({how})")
        for index, fn in enumerate(self.functions):
            entry = " (entry)" if index == self.entry else ""
            lines.append(f"func {index} {fn.name}{entry}: {fn.arity} args, {fn.registers} regs")
            for pc, ins in enumerate(fn.code):
                lines.append(f"  {pc:4d}  {_instruction_text(ins)}")
        return "\n".join(lines)


def _instruction_text(ins: Any) -> str:
    """One instruction as `name field=value ...`."""
    parts = []
    for name in type(ins).__attrs_attrs__:  # type: ignore[attr-defined]
        if name.name == "span":
            continue
        value = getattr(ins, name.name)
        if isinstance(value, Constructor):
            value = value.name_hint
        elif isinstance(value, Op):
            value = value.name
        elif isinstance(value, np.dtype):
            value = str(value)
        parts.append(f"{name.name}={value}")
    return f"{type(ins).__name__} " + " ".join(parts)


__all__ = [
    "AllocADT",
    "AllocClosure",
    "AllocTensor",
    "AllocTuple",
    "DynamicLayout",
    "Fail",
    "GetADTField",
    "GetField",
    "GetTag",
    "Goto",
    "Instruction",
    "Invoke",
    "InvokeClosure",
    "InvokeDynamicKernel",
    "InvokeFallback",
    "InvokeKernel",
    "InvokeOp",
    "JumpIfFalse",
    "JumpIfTagNot",
    "LoadConst",
    "Move",
    "RefNew",
    "RefRead",
    "RefWrite",
    "Ret",
    "Switch",
    "TailInvoke",
    "TailInvokeClosure",
    "VMFunction",
    "VMKernel",
    "VMProgram",
]
