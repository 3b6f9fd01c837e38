"""`relay.transform`: the passes with TVM's names and signatures.

Each function returns a registered `Pass` — the very object pipeline text names
(`FoldConstant() is parse_pipeline("fold-constant").passes[0]`), or a copy with options
set (`FuseOps(fuse_opt_level=0)`). A pass is callable on a module:

    mod = FoldConstant()(mod)
    seq = Sequential([SimplifyInference(), FoldConstant(), FuseOps()])
    with PassContext(opt_level=3, disabled_pass=["fold-scale-axis"]):
        mod = seq(mod)

`module_pass` / `function_pass` are TVM's decorators (on a function or on a class with
`transform_module` / `transform_function`); they make the same `Pass` values as
`relay.passes.module_pass`. A pass registered later (`relay opt --load`, `register=True`)
is reachable here by its `tvm_name` (by default its name in CamelCase: `my-pass` →
`MyPass()`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .lang.module import IRModule
from .passes import (
    PASSES,
    Pass,
    PassContext,
    PassError,
    PassInstrument,
    Sequential,
    alter_op_layout_pass,
    convert_layout_pass,
    cse_pass,
    dce_pass,
    fold_constant_pass,
    fold_scale_axis_pass,
    fuse_ops_pass,
    identity_pass,
    infer_type_pass,
    inline_pass,
    kebab_case,
    lambda_lift_pass,
    merge_dense_pass,
    partial_evaluate_pass,
    register_pass,
    remove_unused_functions_pass,
    simplify_expr_pass,
    simplify_inference_pass,
    to_anf_pass,
    to_graph_normal_form_pass,
    winograd_conv2d_pass,
)
from .passes import function_pass as _function_pass
from .passes import module_pass as _module_pass


def InferType() -> Pass:
    """Type-check the module. Types are not stored in the IR: the `PassContext` remembers
    them, so the passes after this one get them without inferring again."""
    return infer_type_pass


def FoldConstant() -> Pass:
    """Evaluate constant subexpressions at compile time."""
    return fold_constant_pass


def DeadCodeElimination(inline_once: bool = False, ignore_impurity: bool = False) -> Pass:
    """Remove unused let bindings (also those with effects when `ignore_impurity`).
    `inline_once` (inline bindings used once) is not supported: `ToGraphNormalForm`
    turns pure bindings into shared dataflow instead."""
    if inline_once:
        raise PassError(
            "DeadCodeElimination(inline_once=True) is not supported; "
            "ToGraphNormalForm() turns pure let bindings into dataflow"
        )
    return dce_pass.with_options(ignore_impurity=True) if ignore_impurity else dce_pass


def EliminateCommonSubexpr(fskip: Callable[..., Any] | None = None) -> Pass:
    """Share equal pure subexpressions within each function body. `fskip` (a predicate
    choosing expressions to leave alone) is not supported."""
    if fskip is not None:
        raise PassError("EliminateCommonSubexpr(fskip=...) is not supported")
    return cse_pass


def SimplifyExpr() -> Pass:
    """Algebraic peepholes: identities of arithmetic, reshape, transpose and cast."""
    return simplify_expr_pass


def SimplifyInference() -> Pass:
    """Expand batch and layer normalizations into arithmetic; remove dropout."""
    return simplify_inference_pass


def FoldScaleAxis() -> Pass:
    """Fold constant per-channel scales around convolutions and dense layers into their
    weights."""
    return fold_scale_axis_pass


def ConvertLayout(desired_layouts: Mapping[str, Sequence[str]] | None = None) -> Pass:
    """Run the operators named in `desired_layouts` in those layouts, e.g.
    `{"nn.conv2d": ["NHWC", "default"]}` (data layout, kernel layout or "default");
    the operators after them follow the new layout where they can, and `layout_transform`
    is inserted only where the layout changes. Without layouts it changes nothing."""
    from .passes.convert_layout import desired_text

    if desired_layouts is None:
        return convert_layout_pass
    return convert_layout_pass.with_options(desired_layouts=desired_text(desired_layouts))


def AlterOpLayout(block: int | None = None) -> Pass:
    """Run NCHW convolutions on channel-packed layouts (`nn.contrib_conv2d_NCHWc`, data
    `NCHW{b}c`) and keep the activations between them packed; `block` is the channel
    block (default: 8, or the target's fp32 vector lanes under `relay.build`)."""
    if block is None:
        return alter_op_layout_pass
    return alter_op_layout_pass.with_options(block=block)


def CombineParallelDense(min_num_branches: int | None = None, to_batch: bool = False) -> Pass:
    """Merge sibling `nn.dense` layers with constant weights that share an input (at least
    `min_num_branches`, default 2 where TVM's is 3) into one dense on the concatenated
    weights followed by slices (`merge-dense`, at O3 where TVM runs its pass at O4). TVM's
    `to_batch=True` form (one `nn.batch_matmul` over stacked weights) is not implemented:
    it raises `ValueError`."""
    if to_batch:
        raise ValueError(
            "CombineParallelDense(to_batch=True) is not supported: only the concatenated-"
            "weights form (to_batch=False) is implemented"
        )
    if min_num_branches is None:
        return merge_dense_pass
    return merge_dense_pass.with_options(min_branches=min_num_branches)


def ToANormalForm() -> Pass:
    """Bind every intermediate value with a `let` (A-normal form)."""
    return to_anf_pass


def ToGraphNormalForm() -> Pass:
    """Turn the `let` bindings of pure values into shared dataflow nodes."""
    return to_graph_normal_form_pass


def WinogradConv2d() -> Pass:
    """Rewrite 3x3 stride-1 NCHW convolutions with constant weights into Winograd
    convolutions where it is faster (the part of TVM's AlterOpLayout that picks Winograd)."""
    return winograd_conv2d_pass


def Inline() -> Pass:
    """Inline the calls of global functions marked `Inline=1`."""
    return inline_pass


def LambdaLift() -> Pass:
    """Lift local functions (closures) to global functions."""
    return lambda_lift_pass


def FuseOps(fuse_opt_level: int = -1) -> Pass:
    """Fuse operators into `Primitive` functions; `fuse_opt_level` is the fusion level
    (0: every operator alone), -1 the `PassContext`'s opt level."""
    if fuse_opt_level == -1:
        return fuse_ops_pass
    return fuse_ops_pass.with_options(fuse_opt_level=fuse_opt_level)


def RemoveUnusedFunctions(entry_functions: Sequence[str] | None = None) -> Pass:
    """Drop the global functions not reachable from the entry function (`main`)."""
    if not entry_functions:
        return remove_unused_functions_pass
    if isinstance(entry_functions, str) or len(entry_functions) != 1:
        raise PassError("RemoveUnusedFunctions takes a list of exactly one entry function")
    return remove_unused_functions_pass.with_options(entry=entry_functions[0])


def PartialEvaluate(fuel: int | None = None, memo: bool | None = None) -> Pass:
    """Partially evaluate the module: compute at compile time what is static, unfold
    known calls (at most `fuel` per global function), specialize the others to their
    static arguments once each (`memo`), and leave the rest as residual code in A-normal
    form. Run `DeadCodeElimination` and `FuseOps` after it as usual."""
    changes: dict[str, object] = {}
    if fuel is not None:
        changes["fuel"] = fuel
    if memo is not None:
        changes["memo"] = memo
    return partial_evaluate_pass.with_options(**changes)


def Identity() -> Pass:
    """Return the module unchanged (not in TVM; for testing pass pipelines)."""
    return identity_pass


# ------------------------------------------------------------------- TVM's decorators


def _pass_name(name: str | None, arg: Any) -> str:
    return kebab_case(name or getattr(arg, "__name__", "") or "")


def _required(required: Sequence[str] | None) -> tuple[str, ...]:
    if required is None:
        return ()
    if isinstance(required, str) or not isinstance(required, (list, tuple)):
        raise PassError("required is a list or tuple of pass names")
    return tuple(required)


def _adapter(target: Callable[..., Any], source: Any) -> Callable[..., Any]:
    """`target` named and documented like `source` (so a file of passes loaded again
    replaces its passes, and `--list-passes` shows the doc)."""
    functools.update_wrapper(target, source, updated=())
    return target


def _make_pass(
    kind: str,
    pass_arg: Any,
    opt_level: int,
    name: str | None,
    required: Sequence[str] | None,
    register: bool,
) -> Any:
    decorate = _module_pass if kind == "module" else _function_pass
    method = "transform_module" if kind == "module" else "transform_function"
    settings: dict[str, Any] = {
        "name": _pass_name(name, pass_arg),
        "opt_level": opt_level,
        "required": _required(required),
    }
    if inspect.isclass(pass_arg):
        if not callable(getattr(pass_arg, method, None)):
            raise PassError(f"a {kind} pass class must define {method}")

        def create(*args: Any, **kwargs: Any) -> Pass:
            instance = pass_arg(*args, **kwargs)
            bound = getattr(instance, method)
            if kind == "module":

                def run_module(mod: IRModule, ctx: PassContext, options: object) -> Any:
                    return bound(mod, ctx)

                fn: Callable[..., Any] = run_module
            else:

                def run_function(
                    func: Any, mod: IRModule, ctx: PassContext, options: object
                ) -> Any:
                    return bound(func, mod, ctx)

                fn = run_function
            fn.__doc__ = pass_arg.__doc__ or getattr(pass_arg, method).__doc__
            return decorate(register=False, **settings)(fn)

        functools.update_wrapper(create, pass_arg, updated=())
        return create
    if not callable(pass_arg):
        raise PassError(f"{kind}_pass decorates a function or a class, not {pass_arg!r}")
    if kind == "module":

        def run_module(mod: IRModule, ctx: PassContext, options: object) -> Any:
            return pass_arg(mod, ctx)

        fn = _adapter(run_module, pass_arg)
    else:

        def run_function(func: Any, mod: IRModule, ctx: PassContext, options: object) -> Any:
            return pass_arg(func, mod, ctx)

        fn = _adapter(run_function, pass_arg)
    return decorate(register=register, **settings)(fn)


def module_pass(
    pass_func: Callable[..., Any] | type | None = None,
    opt_level: int = 0,
    name: str | None = None,
    required: Sequence[str] | None = None,
    *,
    register: bool = False,
) -> Any:
    """TVM's decorator: `fn(mod, ctx) -> IRModule` becomes a module `Pass`; a class with
    `transform_module(self, mod, ctx)` becomes a function that makes a `Pass` from the
    class's constructor arguments. The name is `name`, else the function's or class's
    name, in kebab-case (`my_pass` / `MyPass` → `my-pass`). `register=True` adds a
    function's pass to the registry so pipeline text can name it (as in `relay opt
    --load`, which registers the passes a file defines)."""

    def wrap(arg: Any) -> Any:
        return _make_pass("module", arg, opt_level, name, required, register)

    return wrap(pass_func) if pass_func is not None else wrap


def function_pass(
    pass_func: Callable[..., Any] | type | None = None,
    opt_level: int = 0,
    name: str | None = None,
    required: Sequence[str] | None = None,
    *,
    register: bool = False,
) -> Any:
    """TVM's decorator: `fn(func, mod, ctx) -> Function` becomes a function `Pass`
    applied to every global function not marked `Primitive`; a class with
    `transform_function(self, func, mod, ctx)` becomes a function that makes such a
    `Pass`. Names and `register` as in `module_pass`."""

    def wrap(arg: Any) -> Any:
        return _make_pass("function", arg, opt_level, name, required, register)

    return wrap(pass_func) if pass_func is not None else wrap


def _factory(p: Pass) -> Callable[[], Pass]:
    def make() -> Pass:
        return p

    make.__name__ = make.__qualname__ = p.tvm_name
    make.__doc__ = p.doc
    return make


def __getattr__(attr: str) -> Callable[[], Pass]:
    """`relay.transform.MyPass` for a pass registered after import (by its `tvm_name`)."""
    for p in PASSES.values():
        if p.tvm_name == attr:
            return _factory(p)
    raise AttributeError(f"module 'relay.transform' has no attribute '{attr}'")


__all__ = [
    "AlterOpLayout",
    "CombineParallelDense",
    "ConvertLayout",
    "DeadCodeElimination",
    "EliminateCommonSubexpr",
    "FoldConstant",
    "FoldScaleAxis",
    "FuseOps",
    "Identity",
    "InferType",
    "Inline",
    "LambdaLift",
    "PartialEvaluate",
    "Pass",
    "PassContext",
    "PassInstrument",
    "RemoveUnusedFunctions",
    "Sequential",
    "SimplifyExpr",
    "SimplifyInference",
    "ToANormalForm",
    "ToGraphNormalForm",
    "WinogradConv2d",
    "function_pass",
    "module_pass",
    "register_pass",
]
