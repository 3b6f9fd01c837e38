"""`relay.quantize`: automatic int8 quantization of float models (TVM's flow).

    with relay.quantize.qconfig(calibrate_mode="kl_divergence"):
        qmod = relay.quantize.quantize(mod, params, dataset=[{"data": x0}, {"data": x1}])

`quantize` binds `params` into `@main`, inlines the globals it calls, runs the
prerequisite passes (graph normal form, simplify-inference, fold-constant,
fold-scale-axis, fold-constant), then annotates, calibrates and realizes it
(`relay.passes.quantize` says how). The result is a module whose `@main` computes in int8
/ int32 with core operators (or, with `do_simulation=True`, the fake-quantized float
program); it type-checks, prints, parses back and builds. A dataset is an iterable of
batches, each a mapping from `@main`'s remaining input names to arrays.
`split_params` turns the constants of a quantized module back into named parameters (what
`relay quantize --params-out` writes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from .lang.expr import Constant, Expr, Function, Var
from .lang.module import IRModule
from .lang.traversal import rewrite_post_order
from .lang.types import TensorType
from .passes.quantize import (
    OPTIONS,
    QConfig,
    QuantizeError,
    QuantizeReport,
    current_qconfig,
    qconfig,
)
from .passes.quantize.calibrate import Batch, Runner, default_runner
from .passes.quantize.check import PointComparison


def prerequisite_optimize(mod: IRModule, params: Mapping[str, Any] | None = None) -> IRModule:
    """`mod` with `params` bound, globals inlined into `@main`, in graph normal form, with
    batch norms expanded and folded into the weights (TVM's `prerequisite_optimize`)."""
    from .driver import bind_params, inline_into_main
    from .passes import (
        PassContext,
        Sequential,
        fold_constant_pass,
        fold_scale_axis_pass,
        simplify_inference_pass,
        to_graph_normal_form_pass,
    )
    from .typecheck import check_module

    if "main" not in mod:
        raise QuantizeError("the module has no @main function to quantize")
    check_module(mod)
    if params:
        mod = bind_params(mod, {k: np.asarray(v) for k, v in params.items()})
    mod = inline_into_main(mod)
    pipeline = Sequential(
        [
            to_graph_normal_form_pass,
            simplify_inference_pass,
            fold_constant_pass,
            fold_scale_axis_pass,
            fold_constant_pass,
        ]
    )
    with PassContext(opt_level=3) as ctx:
        optimized = pipeline(mod, ctx)
    return IRModule.from_expr(optimized["main"])


def quantize_with_report(
    mod: IRModule,
    params: Mapping[str, Any] | None = None,
    dataset: Iterable[Batch] | None = None,
    *,
    runner: Runner = default_runner,
    progress: Callable[[int], None] | None = None,
) -> tuple[IRModule, QuantizeReport]:
    """`quantize`, also returning a `QuantizeReport` (points, scales, float operators);
    `runner` runs the calibration batches (the interpreter by default) and `progress(k)`
    is called after the k-th batch."""
    from .passes.quantize import quantize_dataflow
    from .typecheck import check_module, infer_module

    config = current_qconfig()
    prepared = prerequisite_optimize(mod, params)
    types = infer_module(prepared)
    main = prepared["main"]
    fn, report = quantize_dataflow(main, types, config, dataset, runner, progress)
    result = IRModule.from_expr(fn)
    check_module(result)
    return result, report


def quantize(
    mod: IRModule, params: Mapping[str, Any] | None = None, dataset: Iterable[Batch] | None = None
) -> IRModule:
    """Quantize `mod`'s `@main` under the current `qconfig` (TVM's
    `relay.quantize.quantize(mod, params, dataset)`): the realized int8 program, or the
    simulated one with `do_simulation=True`. `params` (name → array) are bound as
    constants first: conv/dense weights must be constants. `dataset` (batches of named
    inputs) is needed by the `kl_divergence` and `percentile` calibration modes."""
    return quantize_with_report(mod, params, dataset)[0]


def compare_points(
    mod: IRModule,
    inputs: Mapping[str, Any],
    params: Mapping[str, Any] | None = None,
    dataset: Iterable[Batch] | None = None,
    *,
    runner: Runner = default_runner,
) -> list[PointComparison]:
    """For each quantize point of `mod` (quantized under the current `qconfig`, calibrated
    on `dataset`), on `inputs`: the realized value's largest distance from the simulated
    one in quantization steps, and the simulated value's cosine against the float one
    (`relay.passes.quantize.check`)."""
    from .passes.quantize import annotate, calibrate
    from .passes.quantize.check import compare_points as compare
    from .typecheck import infer_module

    config = current_qconfig()
    prepared = prerequisite_optimize(mod, params)
    annotated = annotate(prepared["main"], infer_module(prepared), config)
    scales = calibrate(annotated, config, dataset, runner)
    return compare(annotated, scales, config, inputs, runner)


def split_params(mod: IRModule, prefix: str = "p") -> tuple[IRModule, dict[str, np.ndarray]]:
    """`mod` with every non-scalar constant of `@main` made a new parameter (`p0`, `p1`,
    ... in order of first use), and those arrays by name."""
    main = mod["main"]
    taken = {p.name_hint for p in main.params}
    params: dict[str, np.ndarray] = {}
    new_vars: list[Var] = []
    seen: dict[int, Var] = {}

    def lift(node: Expr) -> Expr | None:
        if not isinstance(node, Constant) or node.data.ndim == 0:
            return None
        var = seen.get(id(node))
        if var is None:
            index = len(params)
            name = f"{prefix}{index}"
            while name in taken:
                index += 1
                name = f"{prefix}{index}_"
            taken.add(name)
            var = Var(name, TensorType(tuple(node.data.shape), str(node.data.dtype)))
            seen[id(node)] = var
            params[name] = node.data
            new_vars.append(var)
        return var

    body = rewrite_post_order(main.body, lift)
    lifted = Function([*main.params, *new_vars], body, main.ret_type, main.type_params, main.attrs)
    return mod.with_function("main", lifted), params


__all__ = [
    "OPTIONS",
    "PointComparison",
    "QConfig",
    "QuantizeError",
    "QuantizeReport",
    "compare_points",
    "current_qconfig",
    "prerequisite_optimize",
    "qconfig",
    "quantize",
    "quantize_with_report",
    "split_params",
]
