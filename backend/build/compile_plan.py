"""Compiling a graph plan into a `CompiledModel` for a `Target`.

`compile_plan(plan, target)` lowers each distinct primitive function of the plan to a
kernel (`lower` → `te` → `tir`), compiles them all with `codegen` into one library with an
entry function that calls the kernels in order, and places the intermediate tensors in one
workspace by liveness (`memory_plan`). A kernel whose operators have no compute definition
is kept as a primitive function that the model runs in the interpreter.

A model whose tensors need more memory than this machine has is refused first, with the
byte count, before anything is compiled or allocated; so is a kernel computing a tensor
too big for 64-bit indices. Stages of a kernel that depend only on the plan's constants
(packed weights) are computed at build time (`fold_plan`), which changes the plan's
constants and the steps' inputs. Symbol names carry the digest of the final plan
(`plan_digest`), so a saved artifact's object code commits to its plan. The thread pool is
set to the target's thread count. A model compiled for CPU features this host lacks can be
saved (to run elsewhere) but not run here: running it is an `Error` naming the features,
never an illegal instruction. With `$RELAY_CACHE_DIR` set, the compiled library is kept
there and reused by a later build of the same kernels for the same target
(`codegen.cache`; not when `dump` asks for the stages' text).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from ...lang.diagnostics import Error
from ...lang.expr import Function
from ...lang.printer import print_expr, print_type
from ...lang.traversal import post_order
from ...lang.types import TensorType
from ...typecheck import infer_expr
from ...typecheck.result import ModuleTypes
from ..codegen import threadpool
from ..codegen.cache import cache_dir, compile_cached
from ..codegen.compile import compile_module
from ..codegen.compile_jobs import KernelStream, compile_functions
from ..codegen.entry import BufferRef, EntryPlan, KernelCall
from ..kernel_cost import KernelCost
from ..lower.cost import describe_kernel, interpreted_cost
from ..lower.lower_func import LoweredKernel, LoweringError, lower_primitive
from ..profile.run import profile_model
from ..runtime.compiled import CompiledModel, CompileStats, KernelInfo, check_model_fits
from ..runtime.plan import GraphPlan, MemoryPlan, tensor_nbytes
from ..target import Target
from ..tir.printer import astext as tir_text
from ..tir.stmt import PrimFunc
from ..tir.transform import lower_pipeline
from .artifact import plan_digest, save_artifact
from .fold_plan import constant_params, fold_into_plan
from .memory_plan import place_slots


class ForeignLibrary:
    """A library compiled for features this host lacks: saved like any other, but asking
    for a function is an `Error` naming the missing features."""

    def __init__(self, object_code: bytes, missing: list[str]) -> None:
        self.object_code = object_code
        self.missing = missing

    def get(self, name: str) -> Callable[..., None]:
        """Never a function: an `Error` saying why this host cannot run the code."""
        raise Error(
            "this model was compiled for CPU features this machine lacks "
            f"({', '.join(self.missing)}); save it and run it on a machine that has them"
        )


def _te_text(fn: Function, lowered: LoweredKernel) -> str:
    """A kernel's Relay function, its schedule trace and its loop nest before the TIR
    passes (what `--dump te` shows)."""
    trace = lowered.trace.to_text() if lowered.trace is not None else "(no trace)"
    return (
        f"# kernel {lowered.name} (anchor: {lowered.anchor_tag})\n{print_expr(fn)}\n"
        f"# schedule\n{trace}\n# loop nest\n{tir_text(lowered.func)}"
    )


def _renamed(lowered: LoweredKernel, name: str) -> LoweredKernel:
    """`lowered` with its kernel called `name`."""
    return attrs.evolve(lowered, name=name, func=attrs.evolve(lowered.func, name=name))


INDEX_LIMIT = 2**63 - 1
"""The largest byte size native code can index (loops and offsets are 64-bit integers)."""


def check_index_range(fn: Function, types: ModuleTypes | None = None) -> None:
    """An `Error` at the expression when a tensor that kernel `fn` computes, even one fused
    away and never stored, has more bytes than 64-bit indices reach (its loops would
    overflow)."""
    if types is not None and fn.body in types:
        table = types
    else:
        try:
            table = infer_expr(fn)
        except Error:
            return  # an untyped kernel: lowering says why, or leaves it to the interpreter
    for node in post_order(fn.body):
        ty = table.table.get(node)
        if not isinstance(ty, TensorType) or not all(isinstance(d, int) for d in ty.shape):
            continue
        nbytes = tensor_nbytes(tuple(ty.shape), ty.dtype)  # type: ignore[arg-type]
        if nbytes > INDEX_LIMIT:
            raise Error.at(
                getattr(node, "span", None),
                f"the model computes a {print_type(ty)} of {nbytes} bytes, more than a 64-bit "
                "size can hold (its loops and indices would overflow)",
            )


class _UniqueNames:
    """Kernel display names made unique in a model as TVM does: the second
    `fused_nn_conv2d_add` is `fused_nn_conv2d_add_1`."""

    def __init__(self) -> None:
        self.seen: dict[str, int] = {}

    def unique(self, cost: KernelCost) -> KernelCost:
        """`cost` with a name no earlier kernel of the model has."""
        count = self.seen.get(cost.name, 0)
        self.seen[cost.name] = count + 1
        if count == 0:
            return cost
        return attrs.evolve(cost, name=f"{cost.name}_{count}")


def _ref_for(memory: MemoryPlan, slot_kind: dict[int, tuple[str, int]], s: int) -> BufferRef:
    """Where the native entry finds slot `s`: an input, output, parameter or workspace offset."""
    kind, index = slot_kind[s]
    if kind == "workspace":
        return BufferRef("workspace", 0, memory.offsets[s])
    return BufferRef(kind, index)


def lower_kernel(
    fn: Function,
    types: ModuleTypes | None,
    index: int,
    target: Target,
    constant_params: Collection[int] | None = None,
    config: Mapping[str, Any] | None = None,
) -> LoweredKernel | None:
    """Primitive function `fn` lowered and scheduled as kernel `k<index>` for `target`, or
    None when it cannot be (it then runs in the interpreter); an `Error` when a tensor it
    computes is too big for 64-bit indices (`check_index_range`). `config`: the schedule's
    knobs (`backend.tune`), None for the defaults."""
    check_index_range(fn, types)
    try:
        return lower_primitive(
            fn, types, f"k{index}", target, constant_params=constant_params, config=config
        )
    except LoweringError:
        return None


def name_kernels(
    kernels: Sequence[Function],
    lowered_by_kernel: Mapping[int, LoweredKernel],
    prefix: str,
    params: list[np.ndarray],
) -> tuple[list[KernelInfo], list[tuple[Function, LoweredKernel]]]:
    """The `KernelInfo` of each kernel (symbol `<prefix>_k<k>`, display name unique in the
    model; a kernel absent from `lowered_by_kernel` keeps its function for the
    interpreter), and the lowered kernels to compile, renamed to their symbols. The
    constants lowering lifted are appended to `params` (`KernelInfo.lifted` indexes it)."""
    infos: list[KernelInfo] = []
    scheduled: list[tuple[Function, LoweredKernel]] = []
    names = _UniqueNames()
    for k, fn in enumerate(kernels):
        kname = f"{prefix}_k{k}"
        if k not in lowered_by_kernel:
            infos.append(KernelInfo(kname, (), fn, names.unique(interpreted_cost(fn))))
            continue
        lowered = _renamed(lowered_by_kernel[k], kname)
        lifted = tuple(range(len(params), len(params) + len(lowered.constants)))
        params.extend(lowered.constants)
        try:
            cost = describe_kernel(fn, lowered)
        except ValueError:  # a dynamic-shape kernel: no static FLOP count
            cost = interpreted_cost(fn)
        infos.append(KernelInfo(kname, lifted, None, names.unique(cost)))
        scheduled.append((fn, lowered))
    return infos, scheduled


def compile_kernels(
    scheduled: Sequence[tuple[Function, LoweredKernel]],
    entry: EntryPlan | None,
    name: str,
    target: Target,
    seconds: dict[str, float],
    dump: dict[str, Any] | None = None,
) -> Any:
    """One library of the lowered kernels (and `entry`, when given) for `target`: the loop
    passes, then LLVM (through the cache when `$RELAY_CACHE_DIR` is set and `dump` is
    None). Stage times go into `seconds`, stage texts into `dump`. Code for CPU features
    this host lacks comes back as a `ForeignLibrary`."""
    prim_funcs: list[PrimFunc] = []
    if dump is not None:
        start = time.perf_counter()
        prim_funcs = [lower_pipeline(lowered.func) for _, lowered in scheduled]
        seconds["tir"] = time.perf_counter() - start
    if dump is not None:
        dump["te"] = "\n\n".join(_te_text(fn, lowered) for fn, lowered in scheduled)
        dump["tir"] = "\n\n".join(tir_text(f) for f in prim_funcs)
    start = time.perf_counter()
    library: Any
    if dump is not None:
        library = compile_module(prim_funcs, entry=entry, name=name, target=target)
        seconds["codegen"] = time.perf_counter() - start
    elif cache_dir() is None or not scheduled:
        # kernels big enough compile in worker processes (codegen.compile_jobs)
        funcs = [lowered.func for _, lowered in scheduled]
        library = compile_functions(funcs, entry, name, target, seconds=seconds)
    else:
        # `$RELAY_CACHE_DIR` is set: the loop-IR passes and LLVM run only on a miss
        funcs = [lowered.func for _, lowered in scheduled]
        library, hit = compile_cached(funcs, entry, name, target)
        seconds["tir+codegen" if not hit else "cached"] = time.perf_counter() - start
    if dump is not None:
        dump["llvm"] = library.llvm_ir
        dump["asm"] = library.asm
    missing = target.missing_features()
    if missing:
        library = ForeignLibrary(library.object_code, missing)
    return library


def _compile_lowered(
    plan: GraphPlan,
    original: GraphPlan,
    slots: tuple[Any, Any, MemoryPlan],
    lowered_by_kernel: dict[int, LoweredKernel],
    name: str,
    target: Target,
    seconds: dict[str, float],
    dump: dict[str, Any] | None,
    stream: KernelStream | None,
) -> tuple[Any, ...]:
    """`compile_plan` after lowering: fold the weight-only stages into the plan, name the
    kernels, plan the entry function and compile the library (finishing `stream`, which
    was given the lowered kernels under their provisional names, when there is one).
    `slots`: `place_slots(plan)`."""
    slot_kind, output_slots, memory = slots
    start = time.perf_counter()
    plan = fold_into_plan(plan, lowered_by_kernel)
    if plan is not original:
        slot_kind, output_slots, memory = place_slots(plan)
        check_model_fits(plan, memory, sum(c.nbytes for c in plan.constants))
    seconds["fold"] = time.perf_counter() - start
    params: list[np.ndarray] = list(plan.constants)
    # Symbol names carry the plan's digest: the object code commits to the plan it was
    # compiled for, so loading can tell an edited plan from the one the code expects.
    prefix = f"{name}_{plan_digest(plan)}"
    infos, scheduled = name_kernels(plan.kernels, lowered_by_kernel, prefix, params)
    entry = None
    if all(i.fallback is None for i in infos):
        calls = []
        for st in plan.steps:
            info = infos[st.kernel]
            refs = [_ref_for(memory, slot_kind, s) for s in st.inputs]
            refs += [BufferRef("param", p) for p in info.lifted]
            refs += [_ref_for(memory, slot_kind, s) for s in st.outputs]
            calls.append(KernelCall(info.name, tuple(refs)))
        entry = EntryPlan(f"{prefix}_main", tuple(calls))
    if stream is not None:
        provisional = [lowered_by_kernel[k].func.name for k in sorted(lowered_by_kernel)]
        funcs = [lowered.func for _, lowered in scheduled]
        renames = dict(zip(provisional, (f.name for f in funcs), strict=True))
        library: Any = stream.finish(funcs, renames, entry, seconds=seconds)
        missing = target.missing_features()
        if missing:
            library = ForeignLibrary(library.object_code, missing)
    else:
        library = compile_kernels(scheduled, entry, name, target, seconds, dump)
    return plan, slot_kind, output_slots, memory, infos, params, entry, library


def compile_plan(
    plan: GraphPlan,
    target: Target | None = None,
    name: str = "model",
    dump: dict[str, Any] | None = None,
    types: ModuleTypes | None = None,
    fold_weights: bool = True,
    seconds: dict[str, float] | None = None,
    configs: Callable[[Function, Collection[int] | None], Mapping[str, Any] | None] | None = None,
) -> CompiledModel:
    """Lower, schedule and compile every kernel of `plan` for `target` (default: this host)
    into one library with an entry point; `dump`, when given, receives what each stage
    produced (`te`, `tir`, `llvm`, `asm`) as text. `types`, the types of the module the plan
    was made from, types the kernels (without it, lowering infers each kernel's types).
    With `fold_weights` (the default), the stages of a kernel that depend only on the
    plan's constants (packed weights) are computed here, once (`fold_plan`): the model's
    plan then passes those values instead of the weights. The model's `stats.seconds` are
    `seconds` (the caller's stages, e.g. `optimize`) and those of each stage here.
    `configs(kernel, constant_params)`, when given, chooses each kernel's schedule knobs
    (`backend.tune.apply`: the best tuning record; None keeps the default schedule)."""
    target = target if target is not None else Target.host()
    if target.kind != "llvm":
        raise Error(f"compile_plan compiles for an llvm target, not `{target}`")
    # Say how much memory the model needs, and refuse, before compiling or allocating.
    slot_kind, output_slots, memory = place_slots(plan)
    check_model_fits(plan, memory, sum(c.nbytes for c in plan.constants))
    original = plan
    seconds = dict(seconds) if seconds is not None else {}
    start = time.perf_counter()
    weights = constant_params(plan) if fold_weights else {}
    lowered_by_kernel: dict[int, LoweredKernel] = {}
    # Without dumps or the cache, kernels go to the compile workers as they are lowered.
    stream = KernelStream(name, target) if dump is None and cache_dir() is None else None
    with stream if stream is not None else contextlib.nullcontext():
        for k, fn in enumerate(plan.kernels):
            config = configs(fn, weights.get(k)) if configs is not None else None
            lowered = lower_kernel(fn, types, k, target, weights.get(k), config)
            if lowered is not None:
                lowered_by_kernel[k] = lowered
                if stream is not None:
                    stream.add(lowered.func)
        seconds["lower"] = time.perf_counter() - start
        compiled = _compile_lowered(
            plan,
            original,
            (slot_kind, output_slots, memory),
            lowered_by_kernel,
            name,
            target,
            seconds,
            dump,
            stream,
        )
    plan, slot_kind, output_slots, memory, infos, params, entry, library = compiled
    threadpool.apply_target(target)
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
        target=target,
        saver=save_artifact,
        profiler=profile_model,
    )


__all__ = [
    "INDEX_LIMIT",
    "ForeignLibrary",
    "check_index_range",
    "compile_kernels",
    "compile_plan",
    "lower_kernel",
    "name_kernels",
    "place_slots",
]
