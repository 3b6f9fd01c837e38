"""The build driver: from a module to something that runs — `relay.build(mod)`.

1. The globals `@main` calls are inlined into it (a compiled model is one dataflow graph).
2. The standard pass pipeline of the opt level runs (fusion last).
3. A fused, first-order, statically shaped `@main` is planned and compiled to native code
   (`backend.runtime.compiled`). Anything else — control flow, closures, ADTs,
   references, dynamic shapes, or `target="interp"` — gets an `InterpretedModel` with the
   same `run` API, which says why in `reason`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from attrs import frozen

from .backend.runtime.compiled import CompiledModel, compile_plan
from .backend.runtime.graph_plan import NotCompilable, plan_graph
from .lang.attrs import FuncAttrs
from .lang.diagnostics import Error, InputError
from .lang.module import IRModule

TARGETS = ("llvm", "interp")


@frozen
class InterpretedModel:
    """A module run by the reference interpreter, with the compiled model's `run` API."""

    module: IRModule
    reason: str

    native = False

    def run(self, *args: Any, **inputs: Any) -> Any:
        """Run `@main` on numpy inputs (by position or by parameter name)."""
        from .backend.runtime import interpret

        return interpret(self.module, *args, **inputs)


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


def optimize(mod: IRModule, opt_level: int = 3) -> IRModule:
    """`mod` after inlining into `@main` and the standard pipeline of `opt_level`."""
    from .passes import PassContext, standard_pipeline

    inlined = inline_into_main(mod)
    with PassContext(opt_level=opt_level):
        return standard_pipeline(opt_level)(inlined)


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


def build(
    mod: IRModule,
    target: str = "llvm",
    opt_level: int = 3,
    params: Mapping[str, np.ndarray] | None = None,
    dump: dict[str, Any] | None = None,
) -> CompiledModel | InterpretedModel:
    """Compile `mod`'s `@main` for `target` (`llvm`: native code for this CPU; `interp`:
    the reference interpreter). `params` binds named parameters of `@main` as constants
    (weights): the optimizer then folds what depends only on them (batch-norm arithmetic,
    scale folding into convolution weights) and the compiled model takes the remaining
    inputs. Returns an object with `.run(**inputs)`; a compiled model also has `.save(path)`.
    `dump`, when given, receives the text of each stage."""
    from .typecheck import check_module

    if target not in TARGETS:
        raise Error(f"unknown target `{target}` (targets: {', '.join(TARGETS)})")
    if "main" not in mod:
        raise Error("the module has no @main function to build")
    check_module(mod)
    if params:
        mod = bind_params(mod, params)
    if target == "interp":
        return InterpretedModel(mod, "target interp")
    optimized = optimize(mod, opt_level)
    types = check_module(optimized)
    try:
        plan = plan_graph(optimized["main"], types)
    except NotCompilable as exc:
        return InterpretedModel(mod, exc.message)
    if dump is not None:
        dump["relay"] = optimized.astext()
    return compile_plan(plan, dump=dump)
