"""Artifacts: a compiled model saved to one file and loaded again without recompiling.

An artifact is a zip of `model.json` (the format tag, the target, the graph plan, the
kernels — a fallback kernel as Relay text —, the memory plan and where each slot lives),
`kernels.o` (the library's object code) and `params.npz` (the parameters).
`save_artifact(model, path)` writes one (it is what `CompiledModel.save` calls);
`load_artifact(path)` reads it back into a `CompiledModel` for the stored target. Loading
parses fallback kernels and links object code, which is why it belongs to the build and
not to the runtime. An artifact compiled for CPU features this host lacks is an `Error`
naming them.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from ...grammar import parse_expr
from ...lang.diagnostics import Error
from ...lang.printer import print_expr
from ..codegen import threadpool
from ..codegen.compile import load_library
from ..runtime.compiled import CompiledModel, CompileStats, KernelInfo
from ..runtime.plan import GraphPlan, KernelStep, MemoryPlan, OutputTree, Slot
from ..target import Target

ARTIFACT_FORMAT = "relaymod-1"
"""The format tag of saved artifacts; `load_artifact` refuses other formats."""

_TARGET_FIELDS = tuple(a.name for a in attrs.fields(Target))


def save_artifact(model: CompiledModel, path: str | os.PathLike[str]) -> None:
    """Write `model` as an artifact: object code, plan, parameters and target in one zip."""
    meta = {
        "format": ARTIFACT_FORMAT,
        "target": {"text": str(model.target), **attrs.asdict(model.target)},
        "plan": _plan_to_json(model.plan),
        "kernels": [
            {
                "name": k.name,
                "lifted": list(k.lifted),
                "fallback": print_expr(k.fallback) if k.fallback is not None else None,
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
    }
    buffer = io.BytesIO()
    np.savez(buffer, *model.params)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("model.json", json.dumps(meta))
        z.writestr("kernels.o", model.library.object_code)
        z.writestr("params.npz", buffer.getvalue())


def load_artifact(path: str | os.PathLike[str], num_threads: int | None = None) -> CompiledModel:
    """The compiled model saved in the artifact at `path` (no recompiling), for the target
    it was compiled for; `num_threads`, when given, replaces the stored thread count."""
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
    target = _target_from_json(meta.get("target"), path)
    if num_threads is not None:
        target = attrs.evolve(target, num_threads=num_threads)
    missing = target.missing_features()
    if missing:
        raise Error(
            f"{path}: compiled for CPU features this machine lacks: {', '.join(missing)} "
            f"(target `{target}`)"
        )
    try:
        with np.load(io.BytesIO(params_bytes), allow_pickle=False) as archive:
            params = tuple(archive[f"arr_{k}"] for k in range(len(archive.files)))
        kernels = []
        for k in meta["kernels"]:
            fallback = parse_expr(k["fallback"]) if k["fallback"] else None
            kernels.append(KernelInfo(k["name"], tuple(k["lifted"]), fallback))  # type: ignore[arg-type]
        mem = meta["memory"]
        memory = MemoryPlan(tuple(mem["offsets"]), mem["workspace_bytes"], mem["naive_bytes"])
        plan = _plan_from_json(meta["plan"])
        slot_kind = {int(s): (v[0], v[1]) for s, v in meta["slot_kind"].items()}
        output_slots = tuple(meta["output_slots"])
        entry_name = meta["entry"]
    except (KeyError, IndexError, TypeError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise Error(f"{path}: the artifact is damaged ({exc!r})") from None
    library = load_library(object_code)
    threadpool.set_num_threads(target.num_threads)
    return CompiledModel(
        plan=plan,
        kernels=tuple(kernels),
        params=params,
        memory=memory,
        slot_kind=slot_kind,
        output_slots=output_slots,
        library=library,
        entry_name=entry_name,
        stats=CompileStats(
            {},
            len(kernels),
            sum(k.fallback is not None for k in kernels),
            memory.workspace_bytes,
            memory.saved_bytes,
        ),
        target=target,
        saver=save_artifact,
    )


def _target_from_json(data: Any, path: str | os.PathLike[str]) -> Target:
    """The stored target (the host's for artifacts saved before targets were stored)."""
    if data is None:
        return Target.host()
    try:
        fields = {k: data[k] for k in _TARGET_FIELDS}
        fields["features"] = tuple(fields["features"])
        return Target(**fields)
    except (KeyError, TypeError, ValueError) as exc:
        raise Error(f"{path}: the artifact's target is damaged ({exc})") from None


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
    return GraphPlan(
        slots=tuple(Slot(tuple(s[0]), s[1], s[2], s[3]) for s in data["slots"]),
        kernels=(),
        constants=(),
        steps=tuple(KernelStep(k, tuple(i), tuple(o)) for k, i, o in data["steps"]),
        input_names=tuple(data["input_names"]),
        input_slots=tuple(data["input_slots"]),
        output=_tree_from_json(data["output"]),
    )


__all__ = ["ARTIFACT_FORMAT", "load_artifact", "save_artifact"]
