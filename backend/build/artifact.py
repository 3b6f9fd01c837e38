"""Artifacts: a compiled model saved to one file and loaded again without recompiling.

An artifact is a zip of `model.json` (the format tag, the target and the machine triple,
the graph plan, the kernels — a fallback kernel as Relay text —, the memory plan, where
each slot lives, and the SHA-256 digests of the other two members), `kernels.o` (the
library's object code) and `params.npz` (the parameters). `save_artifact(model, path)`
writes one (it is what `CompiledModel.save` calls); `load_artifact(path)` reads it back
into a `CompiledModel` for the stored target.

Loading trusts nothing in the file. Before the object code is linked it checks the zip
(truncated, not a zip, missing or unreadable members), `model.json` (JSON of the expected
shape, field by field), the digests (object code or parameters replaced), the plan's
consistency (shapes × dtype against buffers, slot kinds and indices, kernel steps naming
existing slots and kernels, unique input names, the workspace layout, which must be the
one the plan gives) and the machine (triple and CPU features). After linking, and before
any call, every function the plan calls must be defined by the object code with the
number of arguments the plan passes, and its name must carry the digest of the plan
(`plan_digest`; the build names symbols `<name>_<digest>_k<k>` and `<name>_<digest>_main`):
the object code commits to the plan it was compiled for, so a plan edited consistently
(an input or output shape shrunk, say) is refused too. Every refusal is an `ArtifactError`
naming the file and the reason. Nothing is evaluated: JSON, `.npz` without pickle, and
Relay text for fallback kernels (parsed, interpreted only when the model runs). Loading
parses fallback kernels and links object code, which is why it belongs to the build and
not the runtime. A model too big for this machine's memory is refused by `CompiledModel`
before its workspace is allocated.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
import zlib
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from ...grammar import parse_expr
from ...lang.diagnostics import Error
from ...lang.dtype import numpy_dtype
from ...lang.expr import Function
from ...lang.printer import print_expr
from ...lang.types import TensorType
from ..codegen import llvm_target, threadpool
from ..codegen.compile import CompiledLibrary, load_library
from ..kernel_cost import KernelCost, ParallelLoop
from ..profile.run import profile_model
from ..runtime.compiled import CompiledModel, CompileStats, KernelInfo
from ..runtime.native import bytes_text, memory_limit_bytes
from ..runtime.plan import GraphPlan, KernelStep, MemoryPlan, OutputTree, Slot, flatten_tree
from ..target import Target
from .memory_plan import ALIGNMENT, place_slots

ARTIFACT_FORMAT = "relaymod-2"
"""The format tag of saved artifacts; `load_artifact` refuses other formats."""

MEMBERS = ("model.json", "kernels.o", "params.npz")
"""The files inside an artifact."""

WEIGHTS_COMPRESSION = zipfile.ZIP_STORED
"""How the weight members are stored: as they are. float32 weights barely deflate
(ResNet-18's 96 MB to 88 MB) and deflating them took 5.4 s of a `relay build -o`, as long
as the build itself (loading: 0.96 s)."""

PLAN_DIGEST_CHARS = 32
"""Hex digits of the plan digest in symbol names (128 bits)."""

MAX_OUTPUT_NESTING = 256
"""How deeply tuples may nest in a loaded model's result."""

_TARGET_FIELDS = {a.name: a.type for a in attrs.fields(Target)}
_SLOT_KINDS = ("input", "constant", "kernel")
_PLACES = ("input", "output", "param", "workspace")


class ArtifactError(Error):
    """A file `load_artifact` refuses: not an artifact, truncated, damaged, modified after
    it was saved, inconsistent, or compiled for another machine (the message says which)."""


def save_artifact(model: CompiledModel, path: str | os.PathLike[str]) -> None:
    """Write `model` as an artifact: object code, plan, parameters and target in one zip."""
    buffer = io.BytesIO()
    np.savez(buffer, *model.params)
    params_bytes = buffer.getvalue()
    object_code = bytes(model.library.object_code)
    meta = {
        "format": ARTIFACT_FORMAT,
        "triple": llvm_target.triple(),
        "target": {"text": str(model.target), **attrs.asdict(model.target)},
        "plan": _plan_to_json(model.plan),
        "kernels": [
            {
                "name": k.name,
                "lifted": list(k.lifted),
                "fallback": print_expr(k.fallback) if k.fallback is not None else None,
                "cost": attrs.asdict(k.cost) if k.cost is not None else None,
            }
            for k in model.kernels
        ],
        "memory": {
            "offsets": list(model.memory.offsets),
            "workspace_bytes": model.memory.workspace_bytes,
            "naive_bytes": model.memory.naive_bytes,
        },
        "slot_kind": {str(s): list(v) for s, v in model.slot_kind.items()},
        "output_slots": list(model.output_slots),
        "entry": model.entry_name,
        "digests": {"kernels.o": _digest(object_code), "params.npz": _digest(params_bytes)},
    }
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("model.json", json.dumps(meta))
        z.writestr("kernels.o", object_code)
        z.writestr("params.npz", params_bytes, compress_type=WEIGHTS_COMPRESSION)


def load_artifact(path: str | os.PathLike[str], num_threads: int | None = None) -> CompiledModel:
    """The compiled model saved in the artifact at `path` (no recompiling), for the target
    it was compiled for; `num_threads`, when given, replaces the stored thread count. A file
    that is not a sound artifact for this machine is an `ArtifactError` saying why."""
    members = _read_members(path)
    meta = _read_json(members["model.json"], path)
    fmt = meta.get("format")
    if fmt != ARTIFACT_FORMAT:
        raise ArtifactError(
            f"{path}: artifact format {fmt!r}, expected {ARTIFACT_FORMAT!r} "
            "(rebuild it with `relay build`)"
        )
    decoded = _Decoder(path).decode(meta)
    for member in ("kernels.o", "params.npz"):
        if _digest(members[member]) != decoded.digests[member]:
            raise ArtifactError(
                f"{path}: {member} is not the one this artifact was saved with (its SHA-256 "
                "differs from the digest in model.json): the file was modified or damaged"
            )
    params = _read_params(members["params.npz"], path)
    _check_plan(decoded, params, path)
    target = decoded.target
    if num_threads is not None:
        target = attrs.evolve(target, num_threads=num_threads)
    if decoded.triple != llvm_target.triple():
        raise ArtifactError(
            f"{path}: compiled for {decoded.triple}, but this machine is {llvm_target.triple()}"
        )
    missing = target.missing_features()
    if missing:
        raise ArtifactError(
            f"{path}: compiled for CPU features this machine lacks: {', '.join(missing)} "
            f"(target `{target}`)"
        )
    kernels = _kernel_infos(decoded, path)
    try:
        library = load_library(members["kernels.o"])
    except Error as exc:
        raise ArtifactError(f"{path}: the object code cannot be loaded: {exc.message}") from None
    _check_symbols(library, decoded, kernels, path)
    threadpool.apply_target(target)
    memory = decoded.memory
    return CompiledModel(
        plan=decoded.plan,
        kernels=kernels,
        params=params,
        memory=memory,
        slot_kind=decoded.slot_kind,
        output_slots=decoded.output_slots,
        library=library,
        entry_name=decoded.entry,
        stats=CompileStats(
            {},
            len(kernels),
            sum(k.fallback is not None for k in kernels),
            memory.workspace_bytes,
            memory.saved_bytes,
        ),
        target=target,
        saver=save_artifact,
        profiler=profile_model,
    )


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_members(
    path: str | os.PathLike[str], members: tuple[str, ...] = MEMBERS
) -> dict[str, bytes]:
    """The bytes of each of `members` (a missing, truncated or unreadable file is refused;
    the sizes the zip declares are checked against memory before anything is
    decompressed)."""
    try:
        with zipfile.ZipFile(path) as z:
            infos = {}
            for name in members:
                try:
                    infos[name] = z.getinfo(name)
                except KeyError:
                    raise ArtifactError(f"{path}: the artifact has no {name}") from None
            declared = sum(info.file_size for info in infos.values())
            if declared > memory_limit_bytes():
                raise ArtifactError(
                    f"{path}: the artifact's members would take {bytes_text(declared)}, more "
                    "than this machine's memory"
                )
            return {name: z.read(info) for name, info in infos.items()}
    except FileNotFoundError:
        raise ArtifactError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ArtifactError(f"{path}: is a directory, not a compiled model artifact") from None
    except zipfile.BadZipFile as exc:
        raise ArtifactError(
            f"{path}: not a compiled model artifact, or a truncated one ({exc})"
        ) from None
    except (OSError, EOFError, zlib.error, NotImplementedError, RuntimeError) as exc:
        raise ArtifactError(f"{path}: the artifact is damaged: cannot read it ({exc})") from None


def _read_json(data: bytes, path: str | os.PathLike[str]) -> dict[str, Any]:
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not a JSON number")

    try:
        meta = json.loads(data, parse_constant=refuse)
    except (ValueError, RecursionError) as exc:
        raise ArtifactError(
            f"{path}: the artifact is damaged: model.json is not JSON ({exc})"
        ) from None
    if not isinstance(meta, dict):
        raise ArtifactError(f"{path}: the artifact is damaged: model.json is not a JSON object")
    return meta


def _read_params(data: bytes, path: str | os.PathLike[str]) -> tuple[np.ndarray, ...]:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            names = [f"arr_{k}" for k in range(len(archive.files))]
            if sorted(archive.files) != sorted(names):
                raise ValueError(f"unexpected arrays {sorted(archive.files)}")
            params = tuple(archive[name] for name in names)
    except (OSError, KeyError, ValueError, EOFError, MemoryError, zipfile.BadZipFile) as exc:
        raise ArtifactError(f"{path}: the artifact is damaged: params.npz ({exc})") from None
    for k, p in enumerate(params):
        try:
            numpy_dtype(p.dtype.name)
        except (ValueError, TypeError):
            raise ArtifactError(
                f"{path}: the artifact is damaged: parameter {k} has dtype {p.dtype}"
            ) from None
    return params


@attrs.frozen
class _Decoded:
    """What `model.json` says, checked field by field (not yet against each other)."""

    triple: str
    target: Target
    plan: GraphPlan
    kernels: tuple[tuple[str, tuple[int, ...], str | None, KernelCost | None], ...]
    memory: MemoryPlan
    slot_kind: dict[int, tuple[str, int]]
    output_slots: tuple[int, ...]
    entry: str | None
    digests: dict[str, str]


class _Decoder:
    """Reads `model.json` into values; anything of the wrong shape is an `ArtifactError`
    naming the field."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = path

    def fail(self, where: str, what: str) -> ArtifactError:
        return ArtifactError(f"{self.path}: the artifact is damaged: {where} {what}")

    def get(self, data: Any, key: str, where: str) -> Any:
        if not isinstance(data, dict):
            raise self.fail(where, "is not an object")
        if key not in data:
            raise self.fail(where, f"has no `{key}`")
        return data[key]

    def integer(self, value: Any, where: str, low: int = 0) -> int:
        if type(value) is not int or value < low:
            raise self.fail(where, f"is {value!r}, not an integer ≥ {low}")
        return value

    def text(self, value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise self.fail(where, f"is {value!r}, not a string")
        return value

    def items(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, f"is {type(value).__name__}, not a list")
        return value

    def ints(self, value: Any, where: str, low: int = 0) -> tuple[int, ...]:
        values = self.items(value, where)
        return tuple(self.integer(v, f"{where}[{k}]", low) for k, v in enumerate(values))

    def decode(self, meta: dict[str, Any]) -> _Decoded:
        get = self.get
        digests = get(meta, "digests", "model.json")
        plan = get(meta, "plan", "model.json")
        kernels = []
        for k, item in enumerate(self.items(get(meta, "kernels", "model.json"), "kernels")):
            where = f"kernels[{k}]"
            fallback = get(item, "fallback", where)
            if fallback is not None:
                self.text(fallback, f"{where}.fallback")
            kernels.append(
                (
                    self.text(get(item, "name", where), f"{where}.name"),
                    self.ints(get(item, "lifted", where), f"{where}.lifted"),
                    fallback,
                    self.cost(item.get("cost"), f"{where}.cost"),
                )
            )
        mem = get(meta, "memory", "model.json")
        entry = get(meta, "entry", "model.json")
        return _Decoded(
            triple=self.text(get(meta, "triple", "model.json"), "triple"),
            target=self.target(get(meta, "target", "model.json")),
            plan=self.plan(plan),
            kernels=tuple(kernels),
            memory=MemoryPlan(
                self.ints(get(mem, "offsets", "memory"), "memory.offsets"),
                self.integer(get(mem, "workspace_bytes", "memory"), "memory.workspace_bytes"),
                self.integer(get(mem, "naive_bytes", "memory"), "memory.naive_bytes"),
            ),
            slot_kind=self.slot_kind(get(meta, "slot_kind", "model.json")),
            output_slots=self.ints(get(meta, "output_slots", "model.json"), "output_slots"),
            entry=None if entry is None else self.text(entry, "entry"),
            digests={m: self.text(get(digests, m, "digests"), f"digests.{m}") for m in MEMBERS[1:]},
        )

    def cost(self, data: Any, where: str) -> KernelCost | None:
        """A kernel's cost record; artifacts saved before costs were recorded have none."""
        if data is None:
            return None
        get = self.get
        ops = self.items(get(data, "ops", where), f"{where}.ops")
        return KernelCost(
            name=self.text(get(data, "name", where), f"{where}.name"),
            ops=tuple(self.text(op, f"{where}.ops[{k}]") for k, op in enumerate(ops)),
            kind=self.text(get(data, "kind", where), f"{where}.kind"),
            flops=self.integer(get(data, "flops", where), f"{where}.flops"),
            bytes=self.integer(get(data, "bytes", where), f"{where}.bytes"),
            parallel=self.parallel(data.get("parallel", []), f"{where}.parallel"),
        )

    def parallel(self, data: Any, where: str) -> tuple[ParallelLoop, ...]:
        """A kernel's parallel plans (none in artifacts saved before plans were recorded)."""
        loops = []
        for k, item in enumerate(self.items(data, where)):
            at = f"{where}[{k}]"
            fields = {
                f: self.integer(self.get(item, f, at), f"{at}.{f}", low=1 if f != "work" else 0)
                for f in ("work", "extent", "threads", "tasks", "fused")
            }
            loops.append(ParallelLoop(**fields))
        return tuple(loops)

    def target(self, data: Any) -> Target:
        fields: dict[str, Any] = {}
        for name, kind in _TARGET_FIELDS.items():
            if kind == "bool":  # a flag added after the format: absent means off
                fields[name] = data.get(name, False) if isinstance(data, dict) else False
                continue
            value = self.get(data, name, "target")
            where = f"target.{name}"
            if name == "features":
                fields[name] = tuple(self.text(f, where) for f in self.items(value, where))
            elif kind == "int":
                fields[name] = self.integer(value, where, low=1)
            else:
                fields[name] = self.text(value, where)
        try:
            return Target(**fields)
        except (TypeError, ValueError) as exc:
            raise self.fail("target", f"is not a valid target ({exc})") from None

    def plan(self, data: Any) -> GraphPlan:
        slots = []
        for k, item in enumerate(self.items(self.get(data, "slots", "plan"), "plan.slots")):
            where = f"plan.slots[{k}]"
            fields = self.items(item, where)
            if len(fields) != 4:
                raise self.fail(where, "is not [shape, dtype, kind, index]")
            shape = self.ints(fields[0], f"{where}.shape")
            dtype = self.text(fields[1], f"{where}.dtype")
            try:
                numpy_dtype(dtype)
            except (ValueError, TypeError):
                raise self.fail(f"{where}.dtype", f"is {dtype!r}, not a tensor dtype") from None
            kind = self.text(fields[2], f"{where}.kind")
            if kind not in _SLOT_KINDS:
                raise self.fail(f"{where}.kind", f"is {kind!r}, not one of {_SLOT_KINDS}")
            slots.append(Slot(shape, dtype, kind, self.integer(fields[3], f"{where}.index", -1)))
        steps = []
        for k, item in enumerate(self.items(self.get(data, "steps", "plan"), "plan.steps")):
            where = f"plan.steps[{k}]"
            fields = self.items(item, where)
            if len(fields) != 3:
                raise self.fail(where, "is not [kernel, inputs, outputs]")
            steps.append(
                KernelStep(
                    self.integer(fields[0], f"{where}.kernel"),
                    self.ints(fields[1], f"{where}.inputs"),
                    self.ints(fields[2], f"{where}.outputs"),
                )
            )
        names = self.items(self.get(data, "input_names", "plan"), "plan.input_names")
        return GraphPlan(
            slots=tuple(slots),
            kernels=(),
            constants=(),
            steps=tuple(steps),
            input_names=tuple(self.text(n, "plan.input_names") for n in names),
            input_slots=self.ints(self.get(data, "input_slots", "plan"), "plan.input_slots"),
            output=self.tree(self.get(data, "output", "plan")),
        )

    def tree(self, data: Any) -> OutputTree:
        """The result tree (nested lists of slot indices), built without recursion."""
        if not isinstance(data, list):
            return self.integer(data, "plan.output")
        root: list[Any] = []
        stack: list[tuple[list[Any], list[Any], int]] = [(data, root, 1)]
        while stack:
            source, built, depth = stack.pop()
            if depth > MAX_OUTPUT_NESTING:
                raise self.fail("plan.output", f"nests deeper than {MAX_OUTPUT_NESTING}")
            for item in source:
                if isinstance(item, list):
                    child: list[Any] = []
                    built.append(child)
                    stack.append((item, child, depth + 1))
                else:
                    built.append(self.integer(item, "plan.output"))
        return _freeze_tree(root)

    def slot_kind(self, data: Any) -> dict[int, tuple[str, int]]:
        if not isinstance(data, dict):
            raise self.fail("slot_kind", "is not an object")
        result = {}
        for key, value in data.items():
            where = f"slot_kind[{key!r}]"
            if not (key.isascii() and key.isdigit()):
                raise self.fail(where, "is not keyed by a slot number")
            pair = self.items(value, where)
            if len(pair) != 2 or pair[0] not in _PLACES:
                raise self.fail(where, f"is {pair!r}, not [place, index]")
            result[int(key)] = (pair[0], self.integer(pair[1], where))
        return result


def _freeze_tree(root: list[Any]) -> OutputTree:
    """Nested lists as nested tuples, innermost first (no recursion)."""
    order: list[list[Any]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(item for item in node if isinstance(item, list))
    frozen: dict[int, tuple[Any, ...]] = {}
    for node in reversed(order):
        frozen[id(node)] = tuple(frozen[id(i)] if isinstance(i, list) else i for i in node)
    return frozen[id(root)]


def _check_plan(d: _Decoded, params: tuple[np.ndarray, ...], path: str | os.PathLike[str]) -> None:
    """The plan, kernels, parameters and memory layout agree with one another (so no kernel
    is handed a buffer smaller than its shape, nor a slot that does not exist)."""

    def fail(what: str) -> ArtifactError:
        return ArtifactError(f"{path}: the artifact's plan is inconsistent: {what}")

    plan, slots = d.plan, d.plan.slots

    def shown(s: int) -> str:
        return f"slot {s} (Tensor[{slots[s].shape}, {slots[s].dtype}], {slots[s].nbytes} bytes)"

    def slot_ref(s: int, where: str) -> None:
        if s >= len(slots):
            raise fail(f"{where} names slot {s}, but the plan has {len(slots)} slots")

    names = plan.input_names
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise fail(f"input names appear twice: {', '.join(twice)}")
    if len(plan.input_slots) != len(names):
        raise fail(f"{len(names)} input names but {len(plan.input_slots)} input slots")
    for k, s in enumerate(plan.input_slots):
        slot_ref(s, f"input `{names[k]}`")
        if slots[s].kind != "input" or slots[s].index != k:
            raise fail(f"input `{names[k]}` is {shown(s)}, which is not input {k}")
    for s, slot in enumerate(slots):
        if slot.kind == "input" and (
            slot.index >= len(plan.input_slots) or plan.input_slots[slot.index] != s
        ):
            raise fail(f"{shown(s)} claims to be input {slot.index}")
        if slot.kind == "constant":
            if not 0 <= slot.index < len(params):
                raise fail(f"{shown(s)} is parameter {slot.index} of {len(params)}")
            p = params[slot.index]
            if p.shape != slot.shape or p.dtype != numpy_dtype(slot.dtype):
                raise fail(f"{shown(s)} holds a parameter of shape {p.shape} and dtype {p.dtype}")
    # Lifted constants follow the plan's constants, kernel after kernel, as the build
    # appends them.
    start = sum(slot.kind == "constant" for slot in slots)
    for name, lifted, _, _ in d.kernels:
        if lifted != tuple(range(start, start + len(lifted))):
            raise fail(f"kernel `{name}` uses parameters {list(lifted)}, expected from {start} on")
        start += len(lifted)
    if start != len(params):
        raise fail(f"the kernels and the plan use {start} parameters, params.npz has {len(params)}")
    written: set[int] = set()
    for k, step in enumerate(plan.steps):
        if step.kernel >= len(d.kernels):
            raise fail(f"step {k} runs kernel {step.kernel} of {len(d.kernels)}")
        for s in step.inputs:
            slot_ref(s, f"step {k}")
            if slots[s].kind == "kernel" and s not in written:
                raise fail(f"step {k} reads {shown(s)} before any step writes it")
        for s in step.outputs:
            slot_ref(s, f"step {k}")
            if slots[s].kind != "kernel" or s in written:
                raise fail(f"step {k} writes {shown(s)}, which is not a fresh kernel result")
            written.add(s)
    for s in flatten_tree(plan.output):
        slot_ref(s, "the result")
        if slots[s].kind == "kernel" and s not in written:
            raise fail(f"the result is {shown(s)}, which no step writes")
    _check_layout(d, fail, shown)


def _check_layout(d: _Decoded, fail: Any, shown: Any) -> None:
    """Every workspace slot lies inside the workspace at an aligned offset, and the stored
    layout is exactly the one the plan gives."""
    slots, memory = d.plan.slots, d.memory
    if set(d.slot_kind) != set(range(len(slots))):
        raise fail("slot_kind does not say where every slot lives")
    if len(memory.offsets) != len(slots):
        raise fail(f"{len(memory.offsets)} workspace offsets for {len(slots)} slots")
    for s, (place, _) in sorted(d.slot_kind.items()):
        if place != "workspace":
            continue
        offset = memory.offsets[s]
        if offset % ALIGNMENT:
            raise fail(f"{shown(s)} is at workspace offset {offset}, not a multiple of {ALIGNMENT}")
        if offset + slots[s].nbytes > memory.workspace_bytes:
            raise fail(
                f"{shown(s)} at workspace offset {offset} ends past the end of the workspace "
                f"({memory.workspace_bytes} bytes)"
            )
    slot_kind, output_slots, expected = place_slots(d.plan)
    if slot_kind != d.slot_kind or tuple(output_slots) != d.output_slots:
        raise fail("where slots live (slot_kind, output_slots) is not what the plan gives")
    if expected != memory:
        raise fail(
            f"the workspace layout ({memory.workspace_bytes} bytes) is not the one the plan "
            f"gives ({expected.workspace_bytes} bytes)"
        )


def _kernel_infos(d: _Decoded, path: str | os.PathLike[str]) -> tuple[KernelInfo, ...]:
    """The kernels, fallback functions parsed (never evaluated) and checked against the
    slots of the steps that run them."""
    infos = []
    for k, (name, lifted, text, cost) in enumerate(d.kernels):
        fallback = None
        if text is not None:
            if d.entry is not None:
                raise ArtifactError(
                    f"{path}: the artifact's plan is inconsistent: kernel `{name}` is "
                    "interpreted, yet the model has a native entry function"
                )
            try:
                parsed = parse_expr(text, f"{path}:kernels[{k}]")
            except (Error, RecursionError) as exc:
                raise ArtifactError(
                    f"{path}: the artifact is damaged: kernel `{name}` does not parse ({exc})"
                ) from None
            if not isinstance(parsed, Function):
                raise ArtifactError(
                    f"{path}: the artifact is damaged: kernel `{name}` is not a function"
                )
            fallback = parsed
        infos.append(KernelInfo(name, lifted, fallback, cost))
    for k, step in enumerate(d.plan.steps):
        fn = infos[step.kernel].fallback
        if fn is None:
            continue
        types = [p.type_annotation for p in fn.params]
        wanted = [TensorType(d.plan.slots[s].shape, d.plan.slots[s].dtype) for s in step.inputs]
        if len(types) != len(wanted) or any(
            not isinstance(t, TensorType) or (tuple(t.shape), t.dtype) != (w.shape, w.dtype)
            for t, w in zip(types, wanted)
        ):
            raise ArtifactError(
                f"{path}: the artifact's plan is inconsistent: step {k} passes "
                f"{len(wanted)} tensors that do not match the parameters of kernel "
                f"`{infos[step.kernel].name}`"
            )
    return tuple(infos)


def _check_symbols(
    library: CompiledLibrary,
    d: _Decoded,
    kernels: tuple[KernelInfo, ...],
    path: str | os.PathLike[str],
) -> None:
    """Every function the plan calls is defined by the object code and takes the number of
    buffers the plan passes (checked before any call)."""
    digest = plan_digest(d.plan)
    calls: dict[str, int] = {}
    if d.entry is not None:
        if not d.entry.endswith(f"_{digest}_main"):
            raise ArtifactError(
                f"{path}: the plan is not the one the object code was compiled for (the "
                "entry function's name does not carry the plan's digest): it was edited"
            )
        if library.entry != d.entry:
            raise ArtifactError(
                f"{path}: the object code's entry function is {library.entry!r}, but the plan "
                f"calls {d.entry!r}"
            )
        calls[d.entry] = 4
    for step in d.plan.steps:
        info = kernels[step.kernel]
        if info.fallback is None:
            if not info.name.endswith(f"_{digest}_k{step.kernel}"):
                raise ArtifactError(
                    f"{path}: the plan is not the one the object code was compiled for (kernel "
                    f"`{info.name}` does not carry the plan's digest): it was edited"
                )
            calls[info.name] = len(step.inputs) + len(info.lifted) + len(step.outputs)
    for name, nargs in calls.items():
        have = library.functions.get(name)
        if have is None or not library.address(name):
            raise ArtifactError(f"{path}: the plan calls `{name}`, which the object code lacks")
        if have != nargs:
            raise ArtifactError(
                f"{path}: the plan calls `{name}` with {nargs} buffers, but the object code's "
                f"`{name}` takes {have}"
            )


def _plan_to_json(plan: GraphPlan) -> dict[str, Any]:
    return {
        "slots": [[list(s.shape), s.dtype, s.kind, s.index] for s in plan.slots],
        "steps": [[st.kernel, list(st.inputs), list(st.outputs)] for st in plan.steps],
        "input_names": list(plan.input_names),
        "input_slots": list(plan.input_slots),
        "output": plan.output,
    }


def plan_digest(plan: GraphPlan) -> str:
    """A digest of what native code relies on in `plan` (slot shapes and dtypes, steps,
    inputs, the result), which the build puts in every symbol name: `<name>_<digest>_k<k>`
    for kernel `k`, `<name>_<digest>_main` for the entry function."""
    text = json.dumps(_plan_to_json(plan), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:PLAN_DIGEST_CHARS]


def digest_members(members: Mapping[str, bytes]) -> dict[str, str]:
    """The `digests` entry of `model.json` for these member contents (what saving records)."""
    return {m: _digest(members[m]) for m in MEMBERS[1:]}


__all__ = [
    "ARTIFACT_FORMAT",
    "MEMBERS",
    "ArtifactError",
    "digest_members",
    "load_artifact",
    "plan_digest",
    "save_artifact",
]
