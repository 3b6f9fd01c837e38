"""Compiled models: native kernels, one entry point, a static memory plan, saved artifacts.

`compile_plan(plan)` lowers each distinct primitive function to a kernel, compiles them all
into one library with an entry function that calls the kernels in order, and places the
intermediate tensors in one workspace by liveness (`memory_plan`). `CompiledModel.run`
checks the arguments (name, shape, dtype, contiguity) before any native code runs, then
makes one native call. A kernel whose operators have no compute definition runs in the
interpreter instead; the model then steps through its kernels from Python.

`CompiledModel.save(path)` writes one artifact — a zip of the object code, the plan (JSON)
and the parameters (`.npz`) — that `load(path)` runs again without recompiling.
"""

from __future__ import annotations

import ctypes
import io
import json
import os
import threading
import time
import zipfile
from collections.abc import Mapping
from typing import Any

import numpy as np
from attrs import define, field, frozen

from ...lang.diagnostics import Error, InputError
from ...lang.dtype import dtype_of_array, numpy_dtype
from ...lang.expr import Function
from .graph_plan import GraphPlan, OutputTree, Slot, flatten_tree
from .memory_plan import MemoryPlan, plan_memory

ARTIFACT_FORMAT = "relaymod-1"
"""The format tag of saved artifacts; `load` refuses other formats."""


@frozen
class KernelInfo:
    """One compiled kernel: its symbol, how many constants it lifted (passed after its
    inputs), or the primitive function run by the interpreter when it has no native code."""

    name: str
    lifted: tuple[int, ...] = ()
    fallback: Function | None = None


@frozen
class CompileStats:
    """Figures from compilation: seconds per stage, kernels, memory saved by planning."""

    seconds: Mapping[str, float]
    kernels: int
    fallback_kernels: int
    workspace_bytes: int
    saved_bytes: int


def _ref_for(memory: MemoryPlan, slot_kind: dict[int, tuple[str, int]], s: int):  # type: ignore[no-untyped-def]
    """Where the native entry finds slot `s`: an input, output, parameter or workspace offset."""
    from ..codegen.entry import BufferRef

    kind, index = slot_kind[s]
    if kind == "workspace":
        return BufferRef("workspace", 0, memory.offsets[s])
    return BufferRef(kind, index)


@define
class CompiledModel:
    """A model compiled to native code; `run(**inputs)` executes it.

    Not re-entrant: one workspace is shared by the runs of a model (a lock serializes
    concurrent calls)."""

    plan: GraphPlan
    kernels: tuple[KernelInfo, ...]
    params: tuple[np.ndarray, ...]
    memory: MemoryPlan
    slot_kind: dict[int, tuple[str, int]]
    output_slots: tuple[int, ...]
    library: Any
    entry_name: str | None
    stats: CompileStats
    _workspace: np.ndarray = field(init=False)
    _lock: threading.Lock = field(init=False, factory=threading.Lock)
    _param_ptrs: Any = field(init=False, default=None)
    _input_specs: list[tuple[str, tuple[int, ...], np.dtype, str]] = field(init=False, factory=list)
    _output_specs: list[tuple[tuple[int, ...], np.dtype]] = field(init=False, factory=list)

    def __attrs_post_init__(self) -> None:
        for name, s in zip(self.plan.input_names, self.plan.input_slots):
            slot = self.plan.slots[s]
            shown = f"Tensor[{slot.shape}, {slot.dtype}]"
            self._input_specs.append((name, slot.shape, numpy_dtype(slot.dtype), shown))
        for s in self.output_slots:
            slot = self.plan.slots[s]
            self._output_specs.append((slot.shape, numpy_dtype(slot.dtype)))
        from ..codegen.compile import aligned_empty

        # Workspace offsets are multiples of 64 bytes from a 64-byte aligned base; parameters,
        # like inputs, need only element alignment.
        self._workspace = aligned_empty((max(1, self.memory.workspace_bytes),), np.uint8)
        self.params = tuple(np.require(p, requirements="C") for p in self.params)
        self._param_ptrs = (ctypes.c_void_p * max(1, len(self.params)))(
            *[p.ctypes.data for p in self.params]
        )

    @property
    def native(self) -> bool:
        """Whether every kernel runs as native code in one entry call."""
        return self.entry_name is not None

    @property
    def input_names(self) -> tuple[str, ...]:
        """`@main`'s parameter names, in order."""
        return self.plan.input_names

    def _check_inputs(self, args: tuple[Any, ...], inputs: Mapping[str, Any]) -> list[np.ndarray]:
        names = self.plan.input_names
        if len(args) > len(names):
            raise InputError(f"the model takes {len(names)} arguments, got {len(args)}")
        given: dict[int, Any] = dict(enumerate(args))
        for key, value in inputs.items():
            if key not in names:
                known = ", ".join(names) or "none"
                raise InputError(f"unexpected argument `{key}` (the model's inputs: {known})")
            k = names.index(key)
            if k in given:
                raise InputError(f"argument `{key}` is given twice")
            given[k] = value
        arrays = []
        for k, (name, shape, dt, expected) in enumerate(self._input_specs):
            if k not in given:
                raise InputError(f"missing argument `{name}` ({expected})")
            value = given[k]
            if isinstance(value, (bool, int, float, np.generic)) and shape == ():
                value = np.asarray(value, dtype=dt)
            if not isinstance(value, np.ndarray):
                raise InputError(
                    f"argument `{name}`: expected {expected}, got a {type(value).__name__}"
                )
            if value.dtype != dt:
                raise InputError(
                    f"argument `{name}`: expected dtype {dtype_of_array(np.empty(0, dt))}, "
                    f"got {value.dtype} (shape {tuple(value.shape)})"
                )
            if value.shape != shape:
                raise InputError(
                    f"argument `{name}`: expected shape {shape}, got {tuple(value.shape)}"
                )
            if not value.flags.c_contiguous:
                raise InputError(
                    f"argument `{name}`: the array is not C-contiguous "
                    "(pass np.ascontiguousarray(...))"
                )
            arrays.append(value)
        return arrays

    def run(self, *args: Any, **inputs: Any) -> Any:
        """Run the model on numpy inputs (by position or by `@main`'s parameter names);
        returns an array, or a tuple shaped like `@main`'s result type."""
        arrays = self._check_inputs(args, inputs)
        outputs = [np.empty(shape, dt) for shape, dt in self._output_specs]
        with self._lock:
            if self.entry_name is not None:
                in_ptrs = (ctypes.c_void_p * max(1, len(arrays)))(*[a.ctypes.data for a in arrays])
                out_ptrs = (ctypes.c_void_p * max(1, len(outputs)))(
                    *[o.ctypes.data for o in outputs]
                )
                self.library.get(self.entry_name)(
                    in_ptrs,
                    out_ptrs,
                    self._param_ptrs,
                    ctypes.c_void_p(self._workspace.ctypes.data),
                )
            else:
                self._run_steps(arrays, outputs)
            by_slot = dict(zip(self.output_slots, outputs))
            return self._result(self.plan.output, arrays, by_slot, set())

    def _slot_array(
        self, s: int, arrays: list[np.ndarray], outputs: dict[int, np.ndarray]
    ) -> np.ndarray:
        slot = self.plan.slots[s]
        kind, index = self.slot_kind[s]
        if kind == "input":
            return arrays[index]
        if kind == "param":
            return self.params[index]
        if kind == "output":
            return outputs[s]
        offset = self.memory.offsets[s]
        dt = numpy_dtype(slot.dtype)
        count = int(np.prod(slot.shape, dtype=np.int64))
        return self._workspace[offset : offset + count * dt.itemsize].view(dt).reshape(slot.shape)

    def _run_steps(self, arrays: list[np.ndarray], outputs: list[np.ndarray]) -> None:
        by_slot = dict(zip(self.output_slots, outputs))
        for step in self.plan.steps:
            info = self.kernels[step.kernel]
            ins = [self._slot_array(s, arrays, by_slot) for s in step.inputs]
            outs = [self._slot_array(s, arrays, by_slot) for s in step.outputs]
            if info.fallback is not None:
                _run_fallback(info.fallback, ins, outs)
                continue
            lifted = [self.params[k] for k in info.lifted]
            ptrs = [a.ctypes.data for a in (*ins, *lifted, *outs)]
            self.library.get(info.name)(*[ctypes.c_void_p(p) for p in ptrs])

    def _result(
        self,
        tree: OutputTree,
        arrays: list[np.ndarray],
        outputs: dict[int, np.ndarray],
        handed: set[int],
    ) -> Any:
        """The result shaped like `tree`: a kernel output the first time its slot appears,
        a copy for inputs, parameters and repeated slots (results never alias)."""
        if isinstance(tree, int):
            array = self._slot_array(tree, arrays, outputs)
            if tree in outputs and tree not in handed:
                handed.add(tree)
                return array
            return array.copy()
        return tuple(self._result(t, arrays, outputs, handed) for t in tree)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the artifact: object code, plan and parameters in one zip file."""
        from ...lang.printer import print_expr

        meta = {
            "format": ARTIFACT_FORMAT,
            "plan": _plan_to_json(self.plan),
            "kernels": [
                {
                    "name": k.name,
                    "lifted": list(k.lifted),
                    "fallback": print_expr(k.fallback) if k.fallback is not None else None,
                }
                for k in self.kernels
            ],
            "memory": {
                "offsets": list(self.memory.offsets),
                "workspace_bytes": self.memory.workspace_bytes,
                "naive_bytes": self.memory.naive_bytes,
            },
            "slot_kind": {str(s): list(v) for s, v in self.slot_kind.items()},
            "output_slots": list(self.output_slots),
            "entry": self.entry_name,
        }
        buffer = io.BytesIO()
        np.savez(buffer, *self.params)
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
            z.writestr("model.json", json.dumps(meta))
            z.writestr("kernels.o", self.library.object_code)
            z.writestr("params.npz", buffer.getvalue())


def _run_fallback(fn: Function, ins: list[np.ndarray], outs: list[np.ndarray]) -> None:
    from ...lang.module import IRModule
    from .interpreter import Interpreter
    from .values import Closure

    result = Interpreter(IRModule()).call(Closure(fn, None, None), list(ins))
    flat: list[np.ndarray] = []
    stack = [result]
    while stack:
        v = stack.pop()
        if isinstance(v, tuple):
            stack.extend(reversed(v))
        else:
            flat.append(v)
    for o, v in zip(outs, flat):
        o[...] = v


def _plan_to_json(plan: GraphPlan) -> dict[str, Any]:
    return {
        "slots": [[list(s.shape), s.dtype, s.kind, s.index] for s in plan.slots],
        "steps": [[st.kernel, list(st.inputs), list(st.outputs)] for st in plan.steps],
        "input_names": list(plan.input_names),
        "input_slots": list(plan.input_slots),
        "output": plan.output,
    }


def _tree_from_json(data: Any) -> OutputTree:
    if isinstance(data, int):
        return data
    return tuple(_tree_from_json(d) for d in data)


def _plan_from_json(data: Mapping[str, Any]) -> GraphPlan:
    from .graph_plan import KernelStep

    return GraphPlan(
        slots=tuple(Slot(tuple(s[0]), s[1], s[2], s[3]) for s in data["slots"]),
        kernels=(),
        constants=(),
        steps=tuple(KernelStep(k, tuple(i), tuple(o)) for k, i, o in data["steps"]),
        input_names=tuple(data["input_names"]),
        input_slots=tuple(data["input_slots"]),
        output=_tree_from_json(data["output"]),
    )


def load(path: str | os.PathLike[str]) -> CompiledModel:
    """A compiled model from an artifact written by `CompiledModel.save` (no recompiling)."""
    from ...grammar import parse_expr
    from ..codegen.compile import load_library

    try:
        with zipfile.ZipFile(path) as z:
            meta = json.loads(z.read("model.json"))
            object_code = z.read("kernels.o")
            params_bytes = z.read("params.npz")
    except FileNotFoundError:
        raise Error(f"{path}: no such file") from None
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise Error(f"{path}: not a compiled model artifact ({exc})") from None
    if meta.get("format") != ARTIFACT_FORMAT:
        raise Error(f"{path}: artifact format {meta.get('format')!r}, expected {ARTIFACT_FORMAT!r}")
    with np.load(io.BytesIO(params_bytes), allow_pickle=False) as archive:
        params = tuple(archive[f"arr_{k}"] for k in range(len(archive.files)))
    kernels = []
    for k in meta["kernels"]:
        fallback = parse_expr(k["fallback"]) if k["fallback"] else None
        kernels.append(KernelInfo(k["name"], tuple(k["lifted"]), fallback))  # type: ignore[arg-type]
    mem = meta["memory"]
    return CompiledModel(
        plan=_plan_from_json(meta["plan"]),
        kernels=tuple(kernels),
        params=params,
        memory=MemoryPlan(tuple(mem["offsets"]), mem["workspace_bytes"], mem["naive_bytes"]),
        slot_kind={int(s): (v[0], v[1]) for s, v in meta["slot_kind"].items()},
        output_slots=tuple(meta["output_slots"]),
        library=load_library(object_code),
        entry_name=meta["entry"],
        stats=CompileStats(
            {},
            len(kernels),
            sum(k.fallback is not None for k in kernels),
            mem["workspace_bytes"],
            mem["naive_bytes"] - mem["workspace_bytes"],
        ),
    )


def _te_text(fn: Function, lowered: Any) -> str:
    """A kernel's Relay function, its schedule trace and its loop nest before the TIR
    passes (what `--dump te` shows)."""
    from ...lang.printer import print_expr
    from ..tir.printer import astext

    trace = lowered.trace.to_text() if lowered.trace is not None else "(no trace)"
    return (
        f"# kernel {lowered.name} (anchor: {lowered.anchor_tag})\n{print_expr(fn)}\n"
        f"# schedule\n{trace}\n# loop nest\n{astext(lowered.func)}"
    )


def compile_plan(
    plan: GraphPlan, name: str = "model", dump: dict[str, Any] | None = None
) -> CompiledModel:
    """Lower, schedule and compile every kernel of `plan` into one library with an entry
    point; `dump`, when given, receives what each stage produced (`te`, `tir`, `llvm`,
    `asm`) as text."""
    from ..codegen.compile import compile_module
    from ..codegen.entry import BufferRef, EntryPlan, KernelCall
    from ..lower.lower_func import LoweringError, lower_primitive
    from ..lower.target import host_target
    from ..tir.printer import astext as tir_text
    from ..tir.transform import lower_pipeline

    seconds: dict[str, float] = {}
    target = host_target()
    start = time.perf_counter()
    params: list[np.ndarray] = list(plan.constants)
    infos: list[KernelInfo] = []
    scheduled: list[tuple[Function, Any]] = []
    for k, fn in enumerate(plan.kernels):
        kname = f"{name}_k{k}"
        try:
            lowered = lower_primitive(fn, None, kname, target)
        except LoweringError:
            infos.append(KernelInfo(kname, (), fn))
            continue
        lifted = tuple(range(len(params), len(params) + len(lowered.constants)))
        params.extend(lowered.constants)
        infos.append(KernelInfo(kname, lifted))
        scheduled.append((fn, lowered))
    seconds["lower"] = time.perf_counter() - start
    start = time.perf_counter()
    prim_funcs = [lower_pipeline(lowered.func) for _, lowered in scheduled]
    seconds["tir"] = time.perf_counter() - start
    if dump is not None:
        dump["te"] = "\n\n".join(_te_text(fn, lowered) for fn, lowered in scheduled)
        dump["tir"] = "\n\n".join(tir_text(f) for f in prim_funcs)

    slot_kind: dict[int, tuple[str, int]] = {}
    output_slots: list[int] = []
    for s in flatten_tree(plan.output):
        if plan.slots[s].kind == "kernel" and s not in slot_kind:
            slot_kind[s] = ("output", len(output_slots))
            output_slots.append(s)
    temps = []
    for s, slot in enumerate(plan.slots):
        if slot.kind == "input":
            slot_kind[s] = ("input", slot.index)
        elif slot.kind == "constant":
            slot_kind[s] = ("param", slot.index)
        elif s not in slot_kind:
            slot_kind[s] = ("workspace", 0)
            temps.append(s)
    temp_set = set(temps)
    sizes = [plan.slots[s].nbytes if s in temp_set else 0 for s in range(len(plan.slots))]
    memory = plan_memory(
        sizes,
        [
            (
                tuple(i for i in st.inputs if i in temp_set),
                tuple(o for o in st.outputs if o in temp_set),
            )
            for st in plan.steps
        ],
    )

    all_native = all(i.fallback is None for i in infos)
    entry = None
    if all_native:
        calls = []
        for st in plan.steps:
            info = infos[st.kernel]
            refs = [_ref_for(memory, slot_kind, s) for s in st.inputs]
            refs += [BufferRef("param", p) for p in info.lifted]
            refs += [_ref_for(memory, slot_kind, s) for s in st.outputs]
            calls.append(KernelCall(info.name, tuple(refs)))
        entry = EntryPlan(f"{name}_main", tuple(calls))
    start = time.perf_counter()
    library = compile_module(prim_funcs, entry=entry, name=name)
    seconds["codegen"] = time.perf_counter() - start
    if dump is not None:
        dump["llvm"] = library.llvm_ir
        dump["asm"] = library.asm
    stats = CompileStats(
        seconds,
        len(infos),
        sum(i.fallback is not None for i in infos),
        memory.workspace_bytes,
        memory.saved_bytes,
    )
    return CompiledModel(
        plan=plan,
        kernels=tuple(infos),
        params=tuple(params),
        memory=memory,
        slot_kind=slot_kind,
        output_slots=tuple(output_slots),
        library=library,
        entry_name=entry.name if entry is not None else None,
        stats=stats,
    )
