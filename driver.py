"""The build driver: from a module to something that runs — `relay.build(mod, target)`.

0. The target — a `Target` or a target string (`"llvm -mcpu=znver4 -num-threads=2"`,
   `"interp"`) — is parsed once (`resolve_target`). This is the API edge: the thread count
   of a target string without `-num-threads` comes from `RELAY_NUM_THREADS`, then
   `OMP_NUM_THREADS`, then the CPUs this process may use (`default_target`); nothing below
   reads the environment.
1. The globals `@main` calls are inlined into it (a compiled model is one dataflow graph).
2. The standard pass pipeline of the opt level runs (fusion last), under the current
   `PassContext`: its opt level when `build` is given none (3 outside any context), its
   disabled passes, options and instruments.
3. A fused, first-order, statically shaped `@main` is planned and compiled to native code
   for the target by `backend.build` (`CompiledModel`, one native entry call). A program
   with control flow, closures, ADTs or references is compiled to VM bytecode calling the
   same native kernels (`VMModel`, `backend.build.vm_compile`; its `reason` says why the
   static executor could not run it); so is a `@main` with `?` or symbolic dimensions,
   whose kernels take their extents at run time. What the VM refuses too, and an `interp`
   target, get an `InterpretedModel` with the same `run` API, which says why in `reason`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np
from attrs import frozen

from .backend.build import NotCompilable, compile_plan, plan_graph
from .backend.runtime import dlpack
from .backend.runtime.compiled import CompiledModel
from .backend.runtime.vm import VMModel
from .backend.target import Target
from .lang.attrs import FuncAttrs
from .lang.diagnostics import Error, InputError
from .lang.module import IRModule
from .lang.tuples import tuple_leaves
from .passes import ExtraPasses, PassContext
from .typecheck import ModuleTypes

DEFAULT_OPT_LEVEL = 3
"""The opt level of a build outside any `PassContext` and given none."""

THREAD_VARIABLES = ("RELAY_NUM_THREADS", "OMP_NUM_THREADS")
"""Environment variables giving the default thread count, first set (and valid) wins."""


def threads_from_environment() -> int | None:
    """The thread count `RELAY_NUM_THREADS` or else `OMP_NUM_THREADS` asks for (None when
    neither is a positive integer). The only place the environment is read."""
    for name in THREAD_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return None


def default_target(text: str = "llvm") -> Target:
    """The target `text` describes, with the environment's thread count when the text has
    no `-num-threads` (`threads_from_environment`, else all CPUs)."""
    return Target.parse(text, num_threads=threads_from_environment())


def resolve_target(target: str | Target | None) -> Target:
    """A `Target` as is; a target string parsed with `default_target`; None: `llvm`."""
    if isinstance(target, Target):
        return target
    if target is None:
        return default_target()
    if not isinstance(target, str):
        raise Error(f"a target is a string or a Target, not a {type(target).__name__}")
    return default_target(target)


def build_context(opt_level: int | None = None) -> PassContext:
    """The `PassContext` a build's pipeline runs under: the enclosing one (its disabled
    passes, options and instruments) with `opt_level` when given; outside any context, a
    fresh one at `opt_level` (default `DEFAULT_OPT_LEVEL`)."""
    enclosing = PassContext.innermost()
    if enclosing is None:
        return PassContext(opt_level=DEFAULT_OPT_LEVEL if opt_level is None else opt_level)
    if opt_level is None or opt_level == enclosing.opt_level:
        return enclosing
    return attrs.evolve(enclosing, opt_level=opt_level)


@frozen
class InterpretedModel:
    """A module run by the reference interpreter, with the compiled model's `run` API."""

    module: IRModule
    reason: str

    native = False

    @property
    def input_names(self) -> tuple[str, ...]:
        """`@main`'s parameter names, in order."""
        return tuple(p.name_hint for p in self.module["main"].params)

    def run(self, *args: Any, out: Any = None, **inputs: Any) -> Any:
        """Run `@main` on inputs given by position or by parameter name: numpy arrays, any
        CPU tensor with `__dlpack__` (imported without a copy), tuples, ADT values.

        Tensors of the result (at the top or in tuples) are arrays the caller owns: none
        aliases an input, a constant of the program or another part of the result. `out`
        (keyword only; as in `CompiledModel.run`) receives the result instead — a buffer
        for a tensor, a tuple of buffers for a tuple — and is returned; it is checked once
        the result is known. When `@main` has a parameter named `out`, `out=` is that
        input."""
        from .backend.runtime import interpret

        args, inputs, out = dlpack.import_arguments(self.input_names, args, inputs, out)
        result = interpret(self.module, *args, **inputs)
        given = [
            v
            for value in (*args, *inputs.values())
            for v in tuple_leaves(value)
            if isinstance(v, np.ndarray)
        ]
        return dlpack.deliver(dlpack.owned_result(result, given), out)


def inline_into_main(mod: IRModule) -> IRModule:
    """`mod` with every non-polymorphic global `@main` reaches inlined into `@main` (calls
    of recursive globals stay calls)."""
    from .passes import get_pass

    marked = mod
    for gv in list(mod.functions):
        fn = mod.functions[gv]
        if gv.name_hint == "main" or fn.type_params:
            continue
        attrs = fn.attrs if fn.attrs is not None else FuncAttrs({})
        if not attrs.get("Inline"):
            marked = marked.with_function(gv, fn.replace(attrs=attrs.with_attr("Inline", 1)))  # type: ignore[attr-defined]
    return get_pass("inline")(marked)


@frozen
class OptimizedModule:
    """What `optimize` returns: the optimized module and its types, which planning and
    lowering use instead of inferring them again."""

    module: IRModule
    types: ModuleTypes


ALTER_OP_LAYOUT = "alter-op-layout"
"""The pass whose `block` option is the target's fp32 vector lanes."""


def with_vector_lanes(ctx: PassContext, lanes: int | None) -> PassContext:
    """`ctx` with `alter-op-layout`'s channel block set to `lanes` (a target's fp32
    vector lanes), unless `lanes` is None or the context's `config` sets the block."""
    options = ctx.config.get(ALTER_OP_LAYOUT, {})
    if lanes is None or any(k.replace("_", "-") == "block" for k in options):
        return ctx
    config = {**ctx.config, ALTER_OP_LAYOUT: {**options, "block": lanes}}
    return attrs.evolve(ctx, config=config)


def optimize(
    mod: IRModule,
    opt_level: int | None = 3,
    passes: ExtraPasses | None = None,
    vector_lanes: int | None = None,
    partial_evaluate: bool | None = None,
) -> OptimizedModule:
    """`mod` after inlining into `@main` and the standard pipeline of `opt_level` (None: the
    enclosing `PassContext`'s, see `build_context`), with its types from the pipeline's
    context (fusion hands over the types of the module it makes, so they are not inferred
    again). `passes` adds user passes at named points of the pipeline, run under the same
    context: `[("after:fold-constant", my_pass)]` or `{"before:fuse-ops": [a, b]}`; the
    points are `start`, `end`, `before:NAME` and `after:NAME` (`passes.insert_passes`).
    `vector_lanes` (the target's fp32 lanes; `build` passes them) is the channel block of
    `alter-op-layout` at opt level 3; without it the pass packs by 8 (AVX2's lanes), and a
    `PassContext` config such as `{"alter-op-layout": {"block": 16}}` overrides both.
    `partial_evaluate` runs `partial-evaluate` first (see `build`)."""
    from .passes import insert_passes, standard_pipeline
    from .passes.partial_eval.in_build import wants_partial_evaluation, with_partial_evaluation

    context = with_vector_lanes(build_context(opt_level), vector_lanes)
    if wants_partial_evaluation(context, partial_evaluate):
        context, passes = with_partial_evaluation(context, passes)
    with context as ctx:
        pipeline = insert_passes(standard_pipeline(ctx.opt_level), passes)
        inlined = inline_into_main(mod)
        optimized = pipeline(inlined, ctx)
        return OptimizedModule(optimized, ctx.module_types(optimized))


def bind_params(mod: IRModule, params: Mapping[str, np.ndarray]) -> IRModule:
    """`mod` with the `@main` parameters named in `params` replaced by those constants (they
    leave `@main`'s signature). Each array is checked against the parameter's annotation;
    an unknown name, a wrong shape or a wrong dtype is an `InputError` naming it."""
    from .backend.runtime.inputs import check_input
    from .lang.expr import Constant, Function
    from .lang.traversal import substitute

    main = mod["main"]
    by_name = {p.name_hint: p for p in main.params}
    mapping = {}
    for name, value in params.items():
        param = by_name.get(name)
        if param is None:
            known = ", ".join(by_name) or "none"
            raise InputError(f"cannot bind `{name}`: @main has no such parameter ({known})")
        checked = value
        if param.type_annotation is not None:
            checked = check_input(param, param.type_annotation, value, {})
        if not isinstance(checked, np.ndarray):
            raise InputError(f"cannot bind `{name}`: only tensors can be bound as constants")
        mapping[param] = Constant(checked)
    kept = [p for p in main.params if p not in mapping]
    body = substitute(main.body, mapping)  # type: ignore[arg-type]
    bound = Function(kept, body, main.ret_type, main.type_params, main.attrs, span=main.span)
    return mod.with_function("main", bound)


STAGES = (
    ("check", "type check and bind the parameters"),
    ("optimize", "the pass pipeline (`relay opt --timing` times each pass)"),
    ("plan", "the graph plan"),
    ("lower", "lowering and scheduling each kernel (TE)"),
    ("fold", "computing the kernels' weight-only stages"),
    ("tir", "the loop-IR passes"),
    ("tir+opt", "waiting for the compile workers after lowering (wall): loop-IR passes, LLVM"),
    ("workers.tir", "  loop-IR passes (CPU seconds summed over the workers)"),
    ("workers.llvm-ir", "  building and parsing LLVM IR (CPU, summed)"),
    ("workers.llvm-opt", "  the LLVM O3 pipeline (CPU, summed)"),
    ("workers.machine-code", "  LLVM code generation, one object per share (CPU, summed)"),
    ("llvm-ir", "building and parsing LLVM IR"),
    ("llvm-opt", "the LLVM O3 pipeline"),
    ("link", "the entry function's module; the parts' kernels renamed"),
    ("machine-code", "LLVM code generation (in-process: the library; else the entry's object)"),
    ("load", "loading the object code"),
)
"""The stages a compiled model's `stats.seconds` may hold, in build order, described."""

_TOTALS = frozenset(["codegen", "tir+codegen"])
"""Keys of `stats.seconds` that sum other stages (left out of the report's rows)."""


def stage_report(seconds: Mapping[str, float], total: float | None = None) -> str:
    """A table of a build's `stats.seconds`: one row per stage in build order (stages
    inside the compile workers indented, not counted in the total), then the total (the
    build's wall time when given)."""
    described = dict(STAGES)
    rows = [k for k, _ in STAGES if k in seconds]
    rows += [k for k in seconds if k not in described and k not in _TOTALS]
    width = max([len("stage"), *(len(k) for k in rows)])
    lines = [f"{'stage':<{width}}  {'seconds':>8}  what"]
    for key in rows:
        lines.append(f"{key:<{width}}  {seconds[key]:8.3f}  {described.get(key, '')}")
    counted = sum(v for k, v in seconds.items() if k not in _TOTALS and "." not in k)
    lines.append(f"{'total':<{width}}  {(total if total is not None else counted):8.3f}")
    return "\n".join(lines)


PRESTART_MIN_HEAVY_CALLS = 10
"""Convolution, dense and batch-matmul calls from which a build starts its compile workers
before optimizing (their start-up then overlaps the passes): ResNet-18 has 19, MobileNet-v2
38, the transformer layer 5, an MLP 3."""

_HEAVY_PREFIXES = ("nn.conv", "nn.contrib_conv", "nn.dense", "nn.contrib_dense", "nn.batch_matmul")


def heavy_calls(mod: IRModule) -> int:
    """How many convolution, dense and batch-matmul calls the functions of `mod` hold."""
    from .lang.expr import Call
    from .lang.op import Op
    from .lang.traversal import post_order

    count = 0
    for fn in mod.functions.values():
        for node in post_order(fn.body):
            if isinstance(node, Call) and isinstance(node.op, Op):
                count += node.op.name.startswith(_HEAVY_PREFIXES)
    return count


def _start_compile_workers(mod: IRModule, dump: dict[str, Any] | None) -> None:
    """Start the compile workers now when `mod` looks big enough to compile in them (see
    `PRESTART_MIN_HEAVY_CALLS`), unless the stages are dumped or a compile cache is set."""
    from .backend.codegen.cache import cache_dir
    from .backend.codegen.compile_jobs import start_workers

    if dump is None and cache_dir() is None and heavy_calls(mod) >= PRESTART_MIN_HEAVY_CALLS:
        start_workers()


def build(
    mod: IRModule,
    target: str | Target | None = None,
    opt_level: int | None = None,
    params: Mapping[str, np.ndarray] | None = None,
    dump: dict[str, Any] | None = None,
    passes: ExtraPasses | None = None,
    partial_evaluate: bool | None = None,
    tuning_log: str | os.PathLike[str] | None = None,
) -> CompiledModel | VMModel | InterpretedModel:
    """Compile `mod`'s `@main` for `target`: a `Target` or a target string (`llvm` — native
    code for this CPU, with options such as `-mcpu=`, `-mattr=`, `-num-threads=` — or
    `interp`, the reference interpreter); default `llvm` with `default_target`'s threads.
    The pipeline runs under the current `PassContext` (`build_context`): `opt_level`, when
    given, overrides its opt level. `params` binds named parameters of `@main` as constants
    (weights): the optimizer then folds what depends only on them (batch-norm arithmetic,
    scale folding into convolution weights) and the compiled model takes the remaining
    inputs. Returns an object with `.run(**inputs)`; a compiled model also has `.save(path)`
    and `.target`. `dump`, when given, receives the text of each stage. `passes` adds user
    passes at named points of the pipeline (see `optimize`). `partial_evaluate=True` (or
    `partial-evaluate` in the context's `required_pass`; None: as the context says) runs
    the partial evaluator first: a `@main` whose recursion runs over a list or tree built
    in it from its parameters comes out first-order and builds to the static executor
    instead of the VM; what stays dynamic still goes to the VM (the docstring of
    `passes/partial_eval/in_build.py` says why it is opt-in). A compiled model's
    `stats.seconds` gives the seconds of each stage, `check` and `optimize` included.
    `tuning_log` (a `relay tune` log): each kernel with a working record measured on this
    host gets its best config, the others the default schedule (`backend.tune.apply`; what
    the log had to say, e.g. corrupt lines, is logged as warnings)."""
    from .typecheck import check_module

    seconds: dict[str, float] = {}
    start = time.perf_counter()
    resolved = resolve_target(target)
    if "main" not in mod:
        raise Error("the module has no @main function to build")
    check_module(mod)
    if params:
        mod = bind_params(mod, params)
    if resolved.kind == "interp":
        return InterpretedModel(mod, "target interp")
    seconds["check"] = time.perf_counter() - start
    _start_compile_workers(mod, dump)
    start = time.perf_counter()
    optimized = optimize(mod, opt_level, passes, resolved.lanes("float32"), partial_evaluate)
    seconds["optimize"] = time.perf_counter() - start
    start = time.perf_counter()
    try:
        plan = plan_graph(optimized.module["main"], optimized.types)
    except NotCompilable as exc:
        from .backend.build.vm_compile import compile_vm

        try:
            return compile_vm(optimized.module, optimized.types, resolved, exc.message, dump=dump)
        except NotCompilable as refused:
            return InterpretedModel(mod, f"{exc.message}; the VM cannot run it: {refused.message}")
    seconds["plan"] = time.perf_counter() - start
    if dump is not None:
        dump["relay"] = optimized.module.astext()
    configs = _tuning_configs(tuning_log, resolved)
    return compile_plan(
        plan, resolved, dump=dump, types=optimized.types, seconds=seconds, configs=configs
    )


def _tuning_configs(path: str | os.PathLike[str] | None, target: Target) -> Any:
    """The config chooser of a tuning log (None without one); its notes become warnings."""
    if path is None:
        return None
    import logging

    from .backend.tune.apply import BestConfigs

    if not os.path.exists(path):
        raise Error(f"{os.fspath(path)}: no such tuning log")
    chooser = BestConfigs.from_log(path, target)
    for message in chooser.messages:
        logging.getLogger("relay.tune").warning(message)
    return chooser
