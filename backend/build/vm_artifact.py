"""VM artifacts: a `VMModel` saved to one file and loaded again without recompiling.

A VM artifact is a zip like a compiled model's (`artifact.py`): `model.json` holds the
format tag, the machine triple and the target, `@main`'s signature with the module's type
definitions (as Relay text), the bytecode (each instruction a list: its name, then its
fields; a constructor as its type's name, its name and its tag; an operator call as Relay
text), the kernels (symbol, lifted parameters, input and output layouts, a fallback kernel
as Relay text) and the SHA-256 digests of the other members: `kernels.o` (the native
kernels' object code, empty when every kernel is interpreted), `constants.npz` (the
constants the bytecode loads) and `params.npz` (the kernels' lifted constants).

Loading trusts nothing in the file: the zip, the JSON field by field, the digests, the
machine (triple and CPU features), and the bytecode's consistency (every register, jump
target, function, constant and kernel index in range, calls of global functions with their
arity, every function ending in a return, jump or tail call, each native kernel call
preceded by the allocation of its outputs with the kernel's output layouts, no jump
landing between the two, the memory plan the one `vm.memory` computes from the code). The
native kernels' symbols carry a digest of the kernels' interfaces (layouts of inputs,
outputs and lifted constants) that the loader recomputes, so the object code commits to
the layouts the bytecode gives it. Every refusal is an `ArtifactError` naming the file and
the reason.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from typing import Any

import attrs
import numpy as np

from ...grammar import parse, parse_expr
from ...grammar.prelude import strip_prelude
from ...lang.adt import Constructor
from ...lang.diagnostics import Error
from ...lang.dtype import numpy_dtype
from ...lang.expr import Call, Function, GlobalVar, Tuple, Var
from ...lang.module import IRModule
from ...lang.op import Op
from ...lang.printer import print_expr
from ..codegen import llvm_target, threadpool
from ..codegen.compile import load_library
from ..runtime.vm import bytecode as bc
from ..runtime.vm.memory import check_plan
from ..runtime.vm.model import VMModel
from .artifact import (
    WEIGHTS_COMPRESSION,
    ArtifactError,
    _Decoder,
    _digest,
    _read_json,
    _read_members,
    _read_params,
)

VM_ARTIFACT_FORMAT = "relaymod-vm-2"
"""The format tag of saved VM models (2: `AllocTensor` carries the memory plan's `reuse`;
version 1 files are refused with a request to rebuild)."""

VM_FORMAT_PREFIX = "relaymod-vm-"
"""What the format tags of VM artifacts, of any version, start with."""

VM_MEMBERS = ("model.json", "kernels.o", "constants.npz", "params.npz")
"""The files inside a VM artifact."""

INTERFACE_DIGEST_CHARS = 32
"""Hex digits of the kernel-interface digest in native kernel symbols."""

_INSTRUCTIONS: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        bc.Move,
        bc.LoadConst,
        bc.AllocTensor,
        bc.InvokeKernel,
        bc.InvokeDynamicKernel,
        bc.InvokeFallback,
        bc.InvokeOp,
        bc.Goto,
        bc.JumpIfFalse,
        bc.GetTag,
        bc.Switch,
        bc.JumpIfTagNot,
        bc.AllocADT,
        bc.GetADTField,
        bc.AllocTuple,
        bc.GetField,
        bc.AllocClosure,
        bc.InvokeClosure,
        bc.TailInvokeClosure,
        bc.Invoke,
        bc.TailInvoke,
        bc.RefNew,
        bc.RefRead,
        bc.RefWrite,
        bc.Ret,
        bc.Fail,
    )
}
_TERMINATORS = (bc.Ret, bc.Goto, bc.TailInvoke, bc.TailInvokeClosure, bc.Fail)

Layout = tuple[tuple[int, ...], np.dtype]


def _fields(cls: type) -> list[Any]:
    """The attrs fields of instruction class `cls` that are saved (spans are not)."""
    return [f for f in attrs.fields(cls) if f.name != "span"]


def kernel_outputs(program: bc.VMProgram) -> list[tuple[Layout, ...]]:
    """The output layouts of each kernel, read off the allocations before its calls (a
    kernel the program never calls natively has none)."""
    outputs: list[tuple[Layout, ...]] = [
        k.dynamic.outputs if k.dynamic is not None else () for k in program.kernels
    ]
    for fn in program.functions:
        for pc, ins in enumerate(fn.code):
            if isinstance(ins, bc.InvokeKernel):
                n = len(ins.outputs)
                allocs = fn.code[pc - n : pc]
                outputs[ins.kernel] = tuple(
                    (a.shape, a.dtype) for a in allocs if isinstance(a, bc.AllocTensor)
                )
    return outputs


def interface_digest(
    inputs: list[tuple[Layout, ...]],
    outputs: list[tuple[Layout, ...]],
    lifted: list[tuple[Layout, ...]],
) -> str:
    """A digest of the native kernels' interfaces (layouts of inputs, outputs and lifted
    constants, kernel by kernel), which native kernel symbols carry."""

    def text(layouts: tuple[Layout, ...]) -> list[Any]:
        return [[list(shape), str(np.dtype(dtype))] for shape, dtype in layouts]

    data = [[text(i), text(o), text(c)] for i, o, c in zip(inputs, outputs, lifted)]
    encoded = json.dumps(data, separators=(",", ":")).encode()
    return hashlib.sha256(encoded).hexdigest()[:INTERFACE_DIGEST_CHARS]


# ---------------------------------------------------------------------------------- saving
def save_vm_artifact(model: VMModel, path: str | os.PathLike[str]) -> None:
    """Write `model` as a VM artifact: bytecode, object code, constants, parameters and
    target in one zip."""
    program = model.program
    if any(not isinstance(c, np.ndarray) for c in program.constants):
        raise Error(f"cannot save {os.fspath(path)}: a constant of the program is not a tensor")
    constants_bytes = _npz(program.constants)
    params_bytes = _npz(program.params)
    library = model.library
    object_code = bytes(library.object_code) if library is not None else b""  # type: ignore[attr-defined]
    outputs = kernel_outputs(program)
    meta = {
        "format": VM_ARTIFACT_FORMAT,
        "triple": llvm_target.triple(),
        "target": {"text": str(model.target), **attrs.asdict(model.target)},
        "signature": _signature_text(model),
        "reason": model.reason,
        "entry": program.entry,
        "functions": [
            {
                "name": fn.name,
                "arity": fn.arity,
                "registers": fn.registers,
                "code": [_encode(ins) for ins in fn.code],
            }
            for fn in program.functions
        ],
        "kernels": [
            {
                "name": k.name,
                "lifted": list(k.lifted),
                "inputs": _layouts_json(k.inputs),
                "outputs": _layouts_json(outputs[n]),
                "fallback": print_expr(k.fallback) if k.fallback is not None else None,
                **_dynamic_json(k),
            }
            for n, k in enumerate(program.kernels)
        ],
        "digests": {
            "kernels.o": _digest(object_code),
            "constants.npz": _digest(constants_bytes),
            "params.npz": _digest(params_bytes),
        },
    }
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("model.json", json.dumps(meta))
        z.writestr("kernels.o", object_code)
        z.writestr("constants.npz", constants_bytes, compress_type=WEIGHTS_COMPRESSION)
        z.writestr("params.npz", params_bytes, compress_type=WEIGHTS_COMPRESSION)


def _npz(arrays: list[Any]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, *arrays)
    return buffer.getvalue()


def _dynamic_json(kernel: bc.VMKernel) -> dict[str, Any]:
    """A dynamic kernel's entries: its input layouts (negative dimensions are variables),
    its variables and its function as Relay text."""
    layout = kernel.dynamic
    if layout is None:
        return {}
    return {
        "inputs": _layouts_json(layout.inputs),
        "dynamic": {"variables": list(layout.variables), "function": print_expr(layout.function)},
    }


def _layouts_json(layouts: tuple[Layout, ...]) -> list[Any]:
    return [[list(shape), str(np.dtype(dtype))] for shape, dtype in layouts]


def _signature_text(model: VMModel) -> str:
    """`@main`'s signature (body `()`) and the module's own type definitions as Relay text
    (the prelude's come back from the prelude when it is parsed)."""
    main = model.main
    stub = Function(main.params, Tuple(()), main.ret_type, main.type_params)
    module = IRModule({GlobalVar("main"): stub}, dict(model.type_definitions))
    return strip_prelude(module).astext()


def _encode(ins: Any) -> list[Any]:
    """One instruction as `[name, field, ...]`."""
    if isinstance(ins, bc.InvokeOp):
        params = [Var(f"a{k}") for k in range(len(ins.args))]
        call = Function(params, Call(ins.op, params, ins.attrs))
        return ["InvokeOp", ins.dst, print_expr(call), list(ins.args)]
    out: list[Any] = [type(ins).__name__]
    for f in _fields(type(ins)):
        value = getattr(ins, f.name)
        if isinstance(value, Constructor):
            value = [value.belong_to.name_hint, value.name_hint, value.tag]
        elif isinstance(value, np.dtype):
            value = str(value)
        elif isinstance(value, tuple):
            value = [list(v) if isinstance(v, tuple) else v for v in value]
        out.append(value)
    return out


# ---------------------------------------------------------------------------------- loading
def is_vm_artifact(path: str | os.PathLike[str]) -> bool:
    """Whether the file at `path` says it is a VM artifact (anything unreadable is not:
    `load_artifact` then says what is wrong with it)."""
    try:
        with zipfile.ZipFile(path) as z:
            info = z.getinfo("model.json")
            if info.file_size > 1 << 30:
                return False
            meta = json.loads(z.read(info))
        fmt = meta.get("format") if isinstance(meta, dict) else None
        # any VM format (an older one is then refused by `load_vm_artifact`, clearly)
        return isinstance(fmt, str) and fmt.startswith(VM_FORMAT_PREFIX)
    except Exception:  # any unreadable file is left to load_artifact
        return False


def load_model(path: str | os.PathLike[str], num_threads: int | None = None) -> Any:
    """The model saved at `path`: a `VMModel` for a VM artifact, else a `CompiledModel`
    (`load_artifact`); an `ArtifactError` saying why a file is refused."""
    if is_vm_artifact(path):
        return load_vm_artifact(path, num_threads)
    from .artifact import load_artifact

    return load_artifact(path, num_threads=num_threads)


def load_vm_artifact(path: str | os.PathLike[str], num_threads: int | None = None) -> VMModel:
    """The VM model saved in the VM artifact at `path` (no recompiling), for the target it
    was compiled for; `num_threads`, when given, replaces the stored thread count."""
    members = _read_members(path, VM_MEMBERS)
    meta = _read_json(members["model.json"], path)
    fmt = meta.get("format")
    if fmt != VM_ARTIFACT_FORMAT:
        raise ArtifactError(
            f"{path}: artifact format {fmt!r}, expected {VM_ARTIFACT_FORMAT!r} "
            "(rebuild it with `relay build`)"
        )
    decoder = _VMDecoder(path)
    digests = decoder.get(meta, "digests", "model.json")
    for member in VM_MEMBERS[1:]:
        stored = decoder.text(decoder.get(digests, member, "digests"), f"digests.{member}")
        if _digest(members[member]) != stored:
            raise ArtifactError(
                f"{path}: {member} is not the one this artifact was saved with (its SHA-256 "
                "differs from the digest in model.json): the file was modified or damaged"
            )
    triple = decoder.text(decoder.get(meta, "triple", "model.json"), "triple")
    target = decoder.target(decoder.get(meta, "target", "model.json"))
    if num_threads is not None:
        target = attrs.evolve(target, num_threads=num_threads)
    if triple != llvm_target.triple():
        raise ArtifactError(
            f"{path}: compiled for {triple}, but this machine is {llvm_target.triple()}"
        )
    missing = target.missing_features()
    if missing:
        raise ArtifactError(
            f"{path}: compiled for CPU features this machine lacks: {', '.join(missing)} "
            f"(target `{target}`)"
        )
    constants = list(_read_params(members["constants.npz"], path))
    params = list(_read_params(members["params.npz"], path))
    signature = _parse_signature(
        decoder.text(decoder.get(meta, "signature", "model.json"), "signature"), path
    )
    program, outputs = decoder.program(meta, signature, constants, params)
    library = None
    native = [k for k in program.kernels if k.fallback is None]
    if native:
        try:
            library = load_library(members["kernels.o"])
        except Error as exc:
            raise ArtifactError(
                f"{path}: the object code cannot be loaded: {exc.message}"
            ) from None
        _check_kernels(program, outputs, library, path)
    threadpool.apply_target(target)
    reason = meta.get("reason", "")
    return VMModel(
        program,
        library,
        signature["main"],
        target,
        reason if isinstance(reason, str) else "",
        {},
        type_definitions=dict(signature.type_definitions),
    )


def _parse_signature(text: str, path: str | os.PathLike[str]) -> IRModule:
    try:
        module = parse(text, f"{path}:signature")
    except (Error, RecursionError) as exc:
        raise ArtifactError(
            f"{path}: the artifact is damaged: the signature does not parse ({exc})"
        ) from None
    if "main" not in module:
        raise ArtifactError(f"{path}: the artifact is damaged: the signature has no @main")
    return module


class _VMDecoder(_Decoder):
    """Reads the bytecode of `model.json`; anything of the wrong shape is an
    `ArtifactError` naming the field."""

    def layouts(self, value: Any, where: str, variables: int = 0) -> tuple[Layout, ...]:
        """Layouts `[[shape, dtype], ...]`; with `variables`, a dimension may be `-1 - k`
        (variable `k`) for k below it."""
        out = []
        for k, item in enumerate(self.items(value, where)):
            pair = self.items(item, f"{where}[{k}]")
            if len(pair) != 2:
                raise self.fail(f"{where}[{k}]", "is not [shape, dtype]")
            out.append(
                (
                    self.ints(pair[0], f"{where}[{k}].shape", low=-variables),
                    self.dtype(pair[1], f"{where}[{k}].dtype"),
                )
            )
        return tuple(out)

    def dtype(self, value: Any, where: str) -> np.dtype:
        text = self.text(value, where)
        try:
            return numpy_dtype(text)
        except (ValueError, TypeError):
            raise self.fail(where, f"is {text!r}, not a tensor dtype") from None

    def function_text(self, text: Any, where: str) -> Function:
        source = self.text(text, where)
        try:
            parsed = parse_expr(source, f"{self.path}:{where}")
        except (Error, RecursionError) as exc:
            raise self.fail(where, f"does not parse ({exc})") from None
        if not isinstance(parsed, Function):
            raise self.fail(where, "is not a function")
        return parsed

    def program(
        self, meta: dict[str, Any], signature: IRModule, constants: list[Any], params: list[Any]
    ) -> tuple[bc.VMProgram, list[tuple[Layout, ...]]]:
        get = self.get
        kernels, outputs = [], []
        for k, item in enumerate(self.items(get(meta, "kernels", "model.json"), "kernels")):
            where = f"kernels[{k}]"
            fallback = get(item, "fallback", where)
            fn = None if fallback is None else self.function_text(fallback, f"{where}.fallback")
            lifted = self.ints(get(item, "lifted", where), f"{where}.lifted")
            for j in lifted:
                if j >= len(params):
                    raise self.fail(f"{where}.lifted", f"names parameter {j} of {len(params)}")
            name = self.text(get(item, "name", where), f"{where}.name")
            dynamic = self.dynamic(item, where)
            if dynamic is not None:
                kernels.append(bc.VMKernel(name, lifted, (), fn, dynamic))
                outputs.append(dynamic.outputs)
                continue
            kernels.append(
                bc.VMKernel(
                    name, lifted, self.layouts(get(item, "inputs", where), f"{where}.inputs"), fn
                )
            )
            outputs.append(self.layouts(get(item, "outputs", where), f"{where}.outputs"))
        constructors = {
            (data.header.name_hint, c.name_hint): c  # type: ignore[attr-defined]
            for data in signature.type_definitions.values()
            for c in data.constructors
        }
        functions = []
        for n, item in enumerate(self.items(get(meta, "functions", "model.json"), "functions")):
            where = f"functions[{n}]"
            code = self.items(get(item, "code", where), f"{where}.code")
            functions.append(
                bc.VMFunction(
                    self.text(get(item, "name", where), f"{where}.name"),
                    self.integer(get(item, "arity", where), f"{where}.arity"),
                    self.integer(get(item, "registers", where), f"{where}.registers", low=1),
                    tuple(
                        self.instruction(ins, f"{where}.code[{pc}]", constructors)
                        for pc, ins in enumerate(code)
                    ),
                )
            )
        entry = self.integer(get(meta, "entry", "model.json"), "entry")
        program = bc.VMProgram(functions, entry, constants, kernels, params)
        _Checker(self, program, outputs, len(signature["main"].params)).check()
        return program, outputs

    def dynamic(self, item: dict[str, Any], where: str) -> bc.DynamicLayout | None:
        """The `DynamicLayout` of a dynamic kernel's entry (None for a static kernel): every
        variable is bound by an input, the kernel has native code."""
        data = item.get("dynamic")
        if data is None:
            return None
        at = f"{where}.dynamic"
        if not isinstance(data, dict) or item.get("fallback") is not None:
            raise self.fail(at, "is not {variables, function} of a native kernel")
        names = self.items(self.get(data, "variables", at), f"{at}.variables")
        variables = tuple(self.text(v, f"{at}.variables") for v in names)
        fn = self.function_text(self.get(data, "function", at), f"{at}.function")
        n = len(variables)
        inputs = self.layouts(self.get(item, "inputs", where), f"{where}.inputs", n)
        outputs = self.layouts(self.get(item, "outputs", where), f"{where}.outputs", n)
        bound = {d for dims, _ in inputs for d in dims if d < 0}
        if bound != {-1 - k for k in range(n)} or any(
            d < 0 and d not in bound for dims, _ in outputs for d in dims
        ):
            raise self.fail(at, "has a variable no input binds")
        return bc.DynamicLayout(inputs, outputs, variables, fn)

    def instruction(
        self, data: Any, where: str, constructors: dict[tuple[str, str], Constructor]
    ) -> Any:
        items = self.items(data, where)
        if not items or not isinstance(items[0], str) or items[0] not in _INSTRUCTIONS:
            raise self.fail(where, f"is {str(data)[:80]}, not an instruction")
        cls = _INSTRUCTIONS[items[0]]
        if cls is bc.InvokeOp:
            if len(items) != 4:
                raise self.fail(where, "is not [InvokeOp, dst, call, args]")
            fn = self.function_text(items[2], f"{where}.call")
            call = fn.body
            if not isinstance(call, Call) or not isinstance(call.op, Op):
                raise self.fail(f"{where}.call", "is not an operator call")
            args = self.ints(items[3], f"{where}.args")
            if len(args) != len(call.args):
                raise self.fail(where, "passes another number of arguments than its call")
            return bc.InvokeOp(self.integer(items[1], f"{where}.dst"), call.op, call.attrs, args)
        fields = _fields(cls)
        if len(items) != len(fields) + 1:
            raise self.fail(where, f"has {len(items) - 1} fields, {cls.__name__} has {len(fields)}")
        values: list[Any] = []
        for f, value in zip(fields, items[1:]):
            at = f"{where}.{f.name}"
            kind = f.type
            if kind == "int":
                low = -1 if f.name in ("self_index", "reuse") else 0
                values.append(self.integer(value, at, low=low))
            elif kind in ("Registers", "tuple[int, ...]"):
                values.append(self.ints(value, at))
            elif kind == "np.dtype":
                values.append(self.dtype(value, at))
            elif kind == "str":
                values.append(self.text(value, at))
            elif kind == "Constructor":
                triple = self.items(value, at)
                if len(triple) != 3:
                    raise self.fail(at, "is not [type, name, tag]")
                ctor = constructors.get((self.text(triple[0], at), self.text(triple[1], at)))
                if ctor is None or ctor.tag != triple[2]:
                    raise self.fail(
                        at, f"names the constructor {triple!r}, which the signature's types lack"
                    )
                values.append(ctor)
            elif kind == "tuple[tuple[int, int], ...]":
                pairs = []
                for k, pair in enumerate(self.items(value, at)):
                    ints = self.ints(pair, f"{at}[{k}]")
                    if len(ints) != 2:
                        raise self.fail(f"{at}[{k}]", "is not [tag, target]")
                    pairs.append((ints[0], ints[1]))
                values.append(tuple(pairs))
            else:  # pragma: no cover - every field type of the bytecode is handled above
                raise self.fail(at, f"has a field of unknown type {kind}")
        return cls(*values)


class _Checker:
    """The bytecode's indices and kernel calls are consistent (see the module docstring)."""

    def __init__(
        self,
        decoder: _VMDecoder,
        program: bc.VMProgram,
        outputs: list[tuple[Layout, ...]],
        nparams: int,
    ) -> None:
        self.decoder = decoder
        self.program = program
        self.outputs = outputs
        self.nparams = nparams

    def fail(self, what: str) -> ArtifactError:
        return ArtifactError(
            f"{self.decoder.path}: the artifact's bytecode is inconsistent: {what}"
        )

    def check(self) -> None:
        program = self.program
        if not program.functions:
            raise self.fail("it has no functions")
        if program.entry >= len(program.functions):
            raise self.fail(f"the entry is function {program.entry} of {len(program.functions)}")
        if program.functions[program.entry].arity != self.nparams:
            raise self.fail(f"the entry function does not take @main's {self.nparams} parameters")
        for n, fn in enumerate(program.functions):
            self.function(n, fn)

    def function(self, n: int, fn: bc.VMFunction) -> None:
        program = self.program
        where = f"function {n} ({fn.name})"
        if fn.arity > fn.registers:
            raise self.fail(f"{where} takes {fn.arity} arguments in {fn.registers} registers")
        if not fn.code or not isinstance(fn.code[-1], _TERMINATORS):
            raise self.fail(f"{where} does not end in a return, jump or tail call")
        size = len(fn.code)
        landing: set[int] = set()
        for pc, ins in enumerate(fn.code):
            at = f"{where}, instruction {pc}"
            for f in _fields(type(ins)):
                value = getattr(ins, f.name)
                if f.name in ("dst", "src", "cond", "tag", "closure", "ref") and f.type == "int":
                    self.register(value, fn, at)
                elif f.name in ("inputs", "outputs", "args", "fields", "captured"):
                    for r in value:
                        self.register(r, fn, at)
            targets: list[int] = []
            if isinstance(ins, (bc.Goto, bc.JumpIfFalse, bc.JumpIfTagNot)):
                targets = [ins.target]
            elif isinstance(ins, bc.Switch):
                targets = [ins.default, *(t for _, t in ins.table)]
            for t in targets:
                if t >= size:
                    raise self.fail(f"{at} jumps to {t}, past the end ({size} instructions)")
                landing.add(t)
            if isinstance(ins, bc.LoadConst) and ins.index >= len(program.constants):
                raise self.fail(f"{at} loads constant {ins.index} of {len(program.constants)}")
            if isinstance(ins, (bc.Invoke, bc.TailInvoke, bc.AllocClosure)):
                if ins.func >= len(program.functions):
                    raise self.fail(f"{at} names function {ins.func} of {len(program.functions)}")
                callee = program.functions[ins.func]
                if isinstance(ins, bc.AllocClosure):
                    if ins.self_index >= len(ins.captured) or len(ins.captured) > callee.arity:
                        raise self.fail(f"{at} captures values function {ins.func} cannot take")
                elif len(ins.args) != callee.arity:
                    raise self.fail(
                        f"{at} passes {len(ins.args)} arguments to a function of {callee.arity}"
                    )
            if isinstance(ins, bc.AllocADT) and len(ins.fields) != len(ins.constructor.inputs):
                raise self.fail(
                    f"{at} gives `{ins.constructor.name_hint}` {len(ins.fields)} fields"
                )
            if isinstance(ins, bc.InvokeFallback) and (
                ins.kernel >= len(program.kernels) or program.kernels[ins.kernel].fallback is None
            ):
                raise self.fail(f"{at} interprets kernel {ins.kernel}, which is not interpreted")
            if isinstance(ins, bc.InvokeKernel):
                self.kernel_call(fn, pc, ins, at)
            if isinstance(ins, bc.InvokeDynamicKernel):
                self.dynamic_call(ins, at)
        wrong = check_plan(fn)
        if wrong >= 0:
            raise self.fail(
                f"{where}, instruction {wrong}: the memory plan is not the one the bytecode "
                "gives (a kernel could write over a live tensor)"
            )
        for pc, ins in enumerate(fn.code):
            if isinstance(ins, bc.InvokeKernel):
                first = pc - len(ins.outputs)
                if any(first < t <= pc for t in landing):
                    raise self.fail(
                        f"{where}: a jump lands between the allocation of kernel outputs "
                        f"and the call at {pc}"
                    )

    def register(self, r: int, fn: bc.VMFunction, at: str) -> None:
        if r >= fn.registers:
            raise self.fail(f"{at} uses register {r} of {fn.registers}")

    def dynamic_call(self, ins: bc.InvokeDynamicKernel, at: str) -> None:
        """A dynamic kernel's call passes its inputs and names distinct output registers."""
        program = self.program
        layout = None
        if ins.kernel < len(program.kernels):
            layout = program.kernels[ins.kernel].dynamic
        if layout is None:
            raise self.fail(f"{at} calls kernel {ins.kernel} as a dynamic kernel, which it is not")
        if len(ins.inputs) != len(layout.inputs) or len(ins.outputs) != len(layout.outputs):
            raise self.fail(f"{at} passes another number of tensors than kernel {ins.kernel} takes")
        if len(ins.args) != len(layout.function.params):
            raise self.fail(f"{at} passes another number of arguments than its function takes")
        if len(set(ins.outputs)) != len(ins.outputs):
            raise self.fail(f"{at} writes one register twice")

    def kernel_call(self, fn: bc.VMFunction, pc: int, ins: bc.InvokeKernel, at: str) -> None:
        program = self.program
        if (
            ins.kernel >= len(program.kernels)
            or program.kernels[ins.kernel].fallback is not None
            or program.kernels[ins.kernel].dynamic is not None
        ):
            raise self.fail(f"{at} calls kernel {ins.kernel}, which has no static native code")
        kernel = program.kernels[ins.kernel]
        if len(ins.inputs) != len(kernel.inputs):
            raise self.fail(f"{at} passes {len(ins.inputs)} inputs to `{kernel.name}`")
        layouts = self.outputs[ins.kernel]
        first = pc - len(ins.outputs)
        allocs = fn.code[first:pc] if first >= 0 else ()
        if (
            len(ins.outputs) != len(layouts)
            or len(allocs) != len(layouts)
            or any(
                not isinstance(a, bc.AllocTensor) or a.dst != r or (a.shape, a.dtype) != layout
                for a, r, layout in zip(allocs, ins.outputs, layouts)
            )
        ):
            raise self.fail(
                f"{at}: the outputs of `{kernel.name}` are not allocated with its output "
                "layouts just before"
            )
        if len(set(ins.outputs)) != len(ins.outputs):
            raise self.fail(f"{at} writes one register twice")


def _check_kernels(
    program: bc.VMProgram,
    outputs: list[tuple[Layout, ...]],
    library: Any,
    path: str | os.PathLike[str],
) -> None:
    """Every native kernel is defined by the object code with the number of buffers the
    bytecode passes, and its symbol carries the digest of the kernels' interfaces."""
    native = [k for k, kernel in enumerate(program.kernels) if kernel.fallback is None]
    digest = interface_digest(
        [_kernel_inputs(program.kernels[k]) for k in native],
        [outputs[k] for k in native],
        [
            tuple(
                (p.shape, p.dtype) for p in (program.params[j] for j in program.kernels[k].lifted)
            )
            for k in native
        ],
    )
    for k in native:
        kernel = program.kernels[k]
        if not kernel.name.endswith(f"_{digest}_k{k}"):
            raise ArtifactError(
                f"{path}: the bytecode is not the one the object code was compiled for (kernel "
                f"`{kernel.name}` does not carry the digest of the kernels' layouts): it was edited"
            )
        nargs = len(_kernel_inputs(kernel)) + len(kernel.lifted) + len(outputs[k])
        nargs += kernel.dynamic is not None  # the variables' values
        have = library.functions.get(kernel.name)
        if have is None or not library.address(kernel.name):
            raise ArtifactError(
                f"{path}: the bytecode calls `{kernel.name}`, which the object code lacks"
            )
        if have != nargs:
            raise ArtifactError(
                f"{path}: the bytecode calls `{kernel.name}` with {nargs} buffers, but the object "
                f"code's `{kernel.name}` takes {have}"
            )


def _kernel_inputs(kernel: bc.VMKernel) -> tuple[Layout, ...]:
    """The input layouts of a native kernel (a dynamic one's dimensions may be variables)."""
    return kernel.dynamic.inputs if kernel.dynamic is not None else kernel.inputs


__all__ = [
    "VM_ARTIFACT_FORMAT",
    "VM_MEMBERS",
    "interface_digest",
    "is_vm_artifact",
    "kernel_outputs",
    "load_model",
    "load_vm_artifact",
    "save_vm_artifact",
]
