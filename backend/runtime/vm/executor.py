"""The VM's executor: one loop over a program's instructions with an explicit frame stack.

A call pushes the caller's (code, registers, pc, destination) and starts the callee with a
fresh register list; `Ret` pops it. No Python recursion happens per call, so a program's
recursion depth is bounded by memory, not by Python's stack; tail calls (`TailInvoke`,
`TailInvokeClosure`) reuse the frame, so a tail-recursive loop runs in constant space.
Native kernels are called through ctypes on the arrays' data pointers; each input tensor
is checked against the kernel's static shape and dtype first (a tensor inside an ADT
argument is not checked when the program starts), so a wrong tensor is an `InputError`,
never a wild memory access. A dynamic-shape kernel's inputs bind its shape variables, the
outputs are allocated from them (shapes cached per kernel and sizes) and the values are
passed to the kernel. Kernels without native code, and operator calls fusion left
outside any kernel, run in the reference interpreter.

Dispatch: before a function first runs, each run of `AllocTensor`s followed by the
`InvokeKernel` that writes exactly those registers is replaced, at the first
`AllocTensor`'s position, by one executor-private `KernelCall` holding everything the
call needs (the ctypes function, per input its register and expected layout, the lifted
constants' addresses, per output its register, shape and dtype) and the position after the
`InvokeKernel`; the instructions it covers stay in place, so every jump target keeps its
meaning. `Executor(..., fuse=False)` runs the bytecode as it is.

Memory: an `AllocTensor` with `reuse` (the block's memory plan, `vm.memory`) takes the
storage of the dead tensor in that register — as it is when shape and dtype agree, else
as a view of its first bytes — instead of allocating; `RunCounts` counts both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ....lang.adt import Constructor
from ....lang.diagnostics import Error, InputError
from ....lang.module import IRModule
from ....lang.op import Op
from ..native import NativeLibrary, data_address
from ..values import Closure, ConstructorValue, EvalError, MatchError, RefValue, format_value
from .bytecode import (
    AllocADT,
    AllocClosure,
    AllocTensor,
    AllocTuple,
    DynamicLayout,
    Fail,
    GetADTField,
    GetField,
    GetTag,
    Goto,
    Invoke,
    InvokeClosure,
    InvokeDynamicKernel,
    InvokeFallback,
    InvokeKernel,
    InvokeOp,
    JumpIfFalse,
    JumpIfTagNot,
    LoadConst,
    Move,
    RefNew,
    RefRead,
    RefWrite,
    Ret,
    Switch,
    TailInvoke,
    TailInvokeClosure,
    VMProgram,
)


class VMClosure:
    """A function value of the VM: function `func` of the program and the values it
    captured (passed before its own arguments)."""

    __slots__ = ("captured", "func")

    def __init__(self, func: int, captured: list[Any]) -> None:
        self.func = func
        self.captured = captured

    def __repr__(self) -> str:
        return f"<vm closure {self.func}>"


class KernelCall:
    """Executor-private: allocate a native kernel's outputs and call it (an `InvokeKernel`
    and the `AllocTensor`s of its outputs), then continue at `next_pc`."""

    __slots__ = ("allocs", "fn", "inputs", "lifted", "next_pc")

    def __init__(
        self,
        fn: Callable[..., None],
        inputs: tuple[tuple[int, tuple[int, ...], np.dtype, tuple[int, ...]], ...],
        lifted: tuple[int, ...],
        allocs: tuple[tuple[int, tuple[int, ...], np.dtype, int, bool], ...],
        next_pc: int,
    ) -> None:
        self.fn = fn
        self.inputs = inputs
        self.lifted = lifted
        self.allocs = allocs
        self.next_pc = next_pc


class RunCounts:
    """What the last run did: native kernel calls, interpreted kernel or operator calls,
    function calls, fresh tensor allocations for kernel outputs and outputs placed in the
    storage of a dead tensor (the memory plan)."""

    __slots__ = ("allocations", "calls", "interpreted_calls", "native_calls", "reused")

    def __init__(self) -> None:
        self.native_calls = 0
        self.interpreted_calls = 0
        self.calls = 0
        self.allocations = 0
        self.reused = 0


class Executor:
    """Runs a `VMProgram` whose native kernels are in `library`."""

    def __init__(
        self, program: VMProgram, library: NativeLibrary | None, fuse: bool = True
    ) -> None:
        self.program = program
        self.fuse = fuse
        self.library = library
        self._kernel_fns: list[Callable[..., None] | None] | None = None
        self._params = [np.require(p, requirements="C") for p in program.params]
        self._lifted = [
            tuple(data_address(self._params[j]) for j in k.lifted) for k in program.kernels
        ]
        self._layouts = [
            tuple((shape, dtype, _c_strides(shape, dtype)) for shape, dtype in k.inputs)
            for k in program.kernels
        ]
        self._switch_tables: dict[int, dict[int, int]] = {}
        self._shapes: dict[int, dict[tuple[int, ...], Any]] = {}
        self._interpreter: Any = None
        self._codes: list[list[Any] | None] = [None] * len(program.functions)
        self.last = RunCounts()

    def _kernels(self) -> list[Callable[..., None] | None]:
        """The ctypes function of each native kernel (looked up on the first run: a
        library for CPU features this host lacks refuses here, with the reason)."""
        if self._kernel_fns is None:
            fns: list[Callable[..., None] | None] = []
            for kernel in self.program.kernels:
                if kernel.fallback is not None or self.library is None:
                    fns.append(None)
                else:
                    fns.append(self.library.get(kernel.name))
            self._kernel_fns = fns
        return self._kernel_fns

    def _code(self, func: int) -> list[Any]:
        """The code the loop runs for function `func` (see the module docstring)."""
        code = self._codes[func]
        if code is None:
            code = self._codes[func] = self._fused(self.program.functions[func].code)
        return code

    def _fused(self, original: Any) -> list[Any]:
        """`original` with `KernelCall`s in place of allocate-then-call sequences."""
        code = list(original)
        if not self.fuse:
            return code
        fns = self._kernels()
        layouts_of: dict[int, Any] = {}  # register -> (shape, dtype) of its AllocTensor
        for ins in original:
            if type(ins) is AllocTensor:
                seen = layouts_of.get(ins.dst)
                layouts_of[ins.dst] = (ins.shape, ins.dtype) if seen is None else ()
        start = 0
        while start < len(code):
            end = start
            while end < len(code) and type(code[end]) is AllocTensor:
                end += 1
            call = code[end] if end < len(code) else None
            if end > start and type(call) is InvokeKernel and fns[call.kernel] is not None:
                allocated = {ins.dst: ins for ins in code[start:end]}
                outputs = call.outputs
                if (
                    len(allocated) == end - start
                    and sorted(allocated) == sorted(outputs)
                    and not set(outputs) & set(call.inputs)
                ):
                    layouts = self._layouts[call.kernel]
                    code[start] = KernelCall(
                        fns[call.kernel],  # type: ignore[arg-type]
                        tuple((r, *layout) for r, layout in zip(call.inputs, layouts)),
                        self._lifted[call.kernel],
                        tuple(_alloc_entry(allocated[r], layouts_of) for r in outputs),
                        end + 1,
                    )
            start = end + 1
        return code

    def _interp(self) -> Any:
        if self._interpreter is None:
            from ..interpreter import Interpreter

            self._interpreter = Interpreter(IRModule())
        return self._interpreter

    def run(self, args: list[Any]) -> Any:
        """The value the entry function returns on `args`."""
        with np.errstate(all="ignore"):
            try:
                return self._loop(args)
            except Error as exc:
                raise exc.with_traceback(None) from exc.__cause__

    def _loop(self, args: list[Any]) -> Any:
        program = self.program
        functions = program.functions
        constants = program.constants
        kernels = program.kernels
        kernel_fns = self._kernels()
        layouts = self._layouts
        lifted = self._lifted
        counts = RunCounts()
        self.last = counts
        ndarray = np.ndarray
        empty = np.empty
        address = data_address

        codes = self._codes
        fn = functions[program.entry]
        regs: list[Any] = list(args) + [None] * (fn.registers - len(args))
        code = codes[program.entry] or self._code(program.entry)
        pc = 0
        stack: list[tuple[Any, list[Any], int, int]] = []
        while True:
            ins: Any = code[pc]
            pc += 1
            kind = type(ins)
            if kind is KernelCall:
                ptrs = []
                for r, shape, dtype, strides in ins.inputs:
                    a = regs[r]
                    if type(a) is not ndarray or a.shape != shape:
                        raise _bad_tensor(a, shape, dtype)
                    if a.dtype is not dtype and a.dtype != dtype:
                        raise _bad_tensor(a, shape, dtype)
                    if a.strides != strides and not (a.flags.c_contiguous and a.flags.aligned):
                        a = regs[r] = np.require(a, requirements=("C", "A"))
                    ptrs.append(address(a))
                ptrs.extend(ins.lifted)
                for r, shape, dtype, donor, same in ins.allocs:
                    if donor < 0:
                        a = regs[r] = empty(shape, dtype)
                        counts.allocations += 1
                    else:
                        a = regs[donor]
                        if not same:
                            a = np.ndarray(shape, dtype, buffer=a)
                        regs[r] = a
                        counts.reused += 1
                    ptrs.append(address(a))
                ins.fn(*ptrs)
                counts.native_calls += 1
                pc = ins.next_pc
            elif kind is InvokeKernel:
                k = ins.kernel
                ptrs = []
                for r, (shape, dtype, strides) in zip(ins.inputs, layouts[k]):
                    a = regs[r]
                    if type(a) is not ndarray or a.shape != shape:
                        raise _bad_tensor(a, shape, dtype)
                    if a.dtype is not dtype and a.dtype != dtype:
                        raise _bad_tensor(a, shape, dtype)
                    if a.strides != strides and not (a.flags.c_contiguous and a.flags.aligned):
                        a = regs[r] = np.require(a, requirements=("C", "A"))
                    ptrs.append(address(a))
                ptrs.extend(lifted[k])
                for r in ins.outputs:
                    ptrs.append(address(regs[r]))
                kernel_fns[k](*ptrs)  # type: ignore[misc]
                counts.native_calls += 1
            elif kind is AllocTensor:
                if ins.reuse < 0:
                    regs[ins.dst] = empty(ins.shape, ins.dtype)
                    counts.allocations += 1
                else:
                    regs[ins.dst] = np.ndarray(ins.shape, ins.dtype, buffer=regs[ins.reuse])
                    counts.reused += 1
            elif kind is InvokeDynamicKernel:
                self._call_dynamic(ins, regs, kernel_fns, counts)
            elif kind is Move:
                regs[ins.dst] = regs[ins.src]
            elif kind is GetField:
                regs[ins.dst] = regs[ins.src][ins.index]
            elif kind is AllocTuple:
                regs[ins.dst] = tuple([regs[r] for r in ins.fields])
            elif kind is LoadConst:
                regs[ins.dst] = constants[ins.index]
            elif kind is Ret:
                value = regs[ins.src]
                if not stack:
                    return value
                code, regs, pc, dst = stack.pop()
                regs[dst] = value
            elif kind is Invoke or kind is TailInvoke:
                callee = functions[ins.func]
                new = [regs[r] for r in ins.args]
                new.extend([None] * (callee.registers - len(new)))
                if kind is Invoke:
                    stack.append((code, regs, pc, ins.dst))
                regs, code, pc = new, codes[ins.func] or self._code(ins.func), 0
                counts.calls += 1
            elif kind is InvokeClosure or kind is TailInvokeClosure:
                target = regs[ins.closure]
                given = [regs[r] for r in ins.args]
                if type(target) is not VMClosure:
                    value = self._call_value(target, given, ins)
                    if kind is InvokeClosure:
                        regs[ins.dst] = value
                        continue
                    if not stack:
                        return value
                    code, regs, pc, dst = stack.pop()
                    regs[dst] = value
                    continue
                callee = functions[target.func]
                new = [*target.captured, *given]
                if len(new) != callee.arity:
                    raise EvalError.at(
                        ins.span,
                        f"the function takes {callee.arity - len(target.captured)} "
                        f"arguments, got {len(given)}",
                    )
                new.extend([None] * (callee.registers - len(new)))
                if kind is InvokeClosure:
                    stack.append((code, regs, pc, ins.dst))
                regs, code, pc = new, codes[target.func] or self._code(target.func), 0
                counts.calls += 1
            elif kind is JumpIfFalse:
                if not regs[ins.cond]:
                    pc = ins.target
            elif kind is Goto:
                pc = ins.target
            elif kind is GetTag:
                regs[ins.dst] = regs[ins.src].constructor.tag
            elif kind is Switch:
                table = self._switch_tables.get(id(ins))
                if table is None:
                    table = self._switch_tables[id(ins)] = ins.targets()
                pc = table.get(regs[ins.tag], ins.default)
            elif kind is JumpIfTagNot:
                if regs[ins.tag] != ins.expected:
                    pc = ins.target
            elif kind is GetADTField:
                regs[ins.dst] = regs[ins.src].fields[ins.index]
            elif kind is AllocADT:
                regs[ins.dst] = ConstructorValue(ins.constructor, [regs[r] for r in ins.fields])
            elif kind is AllocClosure:
                captured = [regs[r] for r in ins.captured]
                closure = VMClosure(ins.func, captured)
                if ins.self_index >= 0:
                    captured[ins.self_index] = closure
                regs[ins.dst] = closure
            elif kind is InvokeFallback:
                fallback = kernels[ins.kernel].fallback
                regs[ins.dst] = self._interp().call(
                    Closure(fallback, None), [regs[r] for r in ins.args]
                )
                counts.interpreted_calls += 1
            elif kind is InvokeOp:
                regs[ins.dst] = self._apply_op(ins.op, ins.attrs, [regs[r] for r in ins.args], ins)
                counts.interpreted_calls += 1
            elif kind is RefNew:
                regs[ins.dst] = RefValue(regs[ins.src])
            elif kind is RefRead:
                regs[ins.dst] = regs[ins.ref].value
            elif kind is RefWrite:
                regs[ins.ref].value = regs[ins.src]
                regs[ins.dst] = ()
            elif kind is Fail:
                raise MatchError.at(ins.span, ins.message)
            else:  # pragma: no cover - the compiler emits nothing else
                raise Error(f"the VM cannot execute {ins!r}")

    def _call_dynamic(
        self,
        ins: InvokeDynamicKernel,
        regs: list[Any],
        kernel_fns: list[Callable[..., None] | None],
        counts: RunCounts,
    ) -> None:
        """Run `ins` (see `InvokeDynamicKernel`): bind the shape variables, check the
        inputs, allocate the outputs from the shapes the variables give, call the kernel
        with the variables' values last."""
        k = ins.kernel
        layout = self.program.kernels[k].dynamic
        assert layout is not None
        values = [-1] * len(layout.variables)
        ptrs = []
        for r, (dims, dtype) in zip(ins.inputs, layout.inputs):
            a = regs[r]
            if type(a) is not np.ndarray or a.ndim != len(dims) or a.dtype != dtype:
                raise _bad_dynamic(a, dims, dtype, layout)
            for d, size in zip(dims, a.shape):
                if d >= 0:
                    if d != size:
                        raise _bad_dynamic(a, dims, dtype, layout)
                elif values[-1 - d] < 0:
                    values[-1 - d] = size
                elif values[-1 - d] != size:
                    # an assumption of the kernel does not hold (a `?` broadcast): interpret
                    result = self._interp().call(
                        Closure(layout.function, None), [regs[r] for r in ins.args]
                    )
                    self._store_outputs(result, ins.outputs, regs)
                    counts.interpreted_calls += 1
                    return
            if not (a.flags.c_contiguous and a.flags.aligned):
                a = regs[r] = np.require(a, requirements=("C", "A"))
            ptrs.append(data_address(a))
        cache = self._shapes.setdefault(k, {})
        key = tuple(values)
        known = cache.get(key)
        if known is None:
            if len(cache) > 64:
                cache.clear()
            shapes = tuple(
                (tuple(d if d >= 0 else values[-1 - d] for d in dims), dtype)
                for dims, dtype in layout.outputs
            )
            known = cache[key] = (shapes, np.array(values or [0], dtype=np.int64))
        shapes, dims_array = known
        ptrs.extend(self._lifted[k])
        for r, (shape, dtype) in zip(ins.outputs, shapes):
            out = regs[r] = np.empty(shape, dtype)
            ptrs.append(data_address(out))
        counts.allocations += len(ins.outputs)
        ptrs.append(data_address(dims_array))
        kernel_fns[k](*ptrs)  # type: ignore[misc]
        counts.native_calls += 1

    @staticmethod
    def _store_outputs(result: Any, outputs: tuple[int, ...], regs: list[Any]) -> None:
        """The tensors of an interpreted kernel's `result` (a tensor or nested tuple) into
        the registers `outputs`, depth first."""
        from ....lang.tuples import tuple_leaves

        for r, value in zip(outputs, tuple_leaves(result)):
            regs[r] = value

    def _apply_op(self, op: Op, attrs: Any, args: list[Any], ins: Any) -> Any:
        """Operator `op` applied by its reference implementation, errors at `ins`'s span."""
        from ....lang.expr import Call

        call = Call(op, (), attrs, span=getattr(ins, "span", None))
        return self._interp()._apply_op(op, args, call)

    def _call_value(self, target: Any, args: list[Any], ins: Any) -> Any:
        """Call a function value that is not a VM closure: an interpreter closure, an
        operator or a constructor given as an input."""
        if isinstance(target, Closure):
            self.last.interpreted_calls += 1
            return self._interp().call(target, args)
        if isinstance(target, Constructor):
            return ConstructorValue(target, args)
        if isinstance(target, Op):
            self.last.interpreted_calls += 1
            return self._apply_op(target, None, args, ins)
        raise EvalError.at(ins.span, f"cannot call the value {format_value(target)}")


def _alloc_entry(
    alloc: AllocTensor, layouts_of: dict[int, Any]
) -> tuple[int, tuple[int, ...], np.dtype, int, bool]:
    """What a `KernelCall` needs of `alloc`: its register, shape and dtype, the register
    whose storage it reuses (or -1) and whether that tensor has the same shape and dtype
    (then it is taken as it is, else viewed with this shape and dtype); `layouts_of` maps
    a register allocated once to its (shape, dtype), one allocated twice to `()`."""
    donor = alloc.reuse
    same = donor >= 0 and layouts_of.get(donor) == (alloc.shape, alloc.dtype)
    return (alloc.dst, alloc.shape, alloc.dtype, donor, same)


def _c_strides(shape: tuple[int, ...], dtype: np.dtype) -> tuple[int, ...]:
    """The strides of a C-contiguous array of `shape` and `dtype`."""
    strides = []
    step = dtype.itemsize
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def _bad_dynamic(
    value: Any, dims: tuple[int, ...], dtype: np.dtype, layout: DynamicLayout
) -> InputError:
    """The error for a tensor a dynamic-shape kernel cannot read."""
    from ..inputs import describe_array

    got = describe_array(value) if isinstance(value, np.ndarray) else format_value(value)
    text = ", ".join(str(d) if d >= 0 else layout.variables[-1 - d] for d in dims)
    return InputError(
        f"a tensor reached a kernel expecting Tensor[({text}), {dtype}] but is {got} "
        "(check the tensors inside the arguments' ADT values)"
    )


def _bad_tensor(value: Any, shape: tuple[int, ...], dtype: np.dtype) -> InputError:
    """The error for a tensor a kernel cannot read: one inside an ADT argument whose shape
    or dtype is not what the program's types say."""
    from ..inputs import describe_array

    got = describe_array(value) if isinstance(value, np.ndarray) else format_value(value)
    dims = ", ".join(str(d) for d in shape)
    return InputError(
        f"a tensor reached a kernel expecting Tensor[({dims}), {dtype}] but is {got} "
        "(check the tensors inside the arguments' ADT values)"
    )


__all__ = ["Executor", "RunCounts", "VMClosure"]
