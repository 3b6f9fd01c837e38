"""Passes: the pass infrastructure and (as they are written) the passes themselves.

A `Pass` is a frozen value made with `@module_pass` / `@function_pass`; `Sequential` and
`parse_pipeline("fold-constant,fuse-ops{max-depth=8},dce")` compose them; a `PassContext`
decides what runs (TVM's rule), carries the instruments (`TimingInstrument`, `PrintIR`,
`DebugInstrument`) and remembers the types of the modules it saw (`ctx.module_types(mod)`).
`bisect` finds the first pass that changes a program's results.

`pattern` holds the dataflow pattern language and the one rewrite driver
(`pattern.apply_rules`: bottom-up or top-down, settling, fixpoint with a budget, a trace,
types carried) that `simplify-expr`, `simplify-inference`, `fold-scale-axis`, `cse` and
`pattern.rewrite` run on; other passes rebuild with `lang`'s `ExprMutator`.
"""

from .context import PassContext
from .cse import cse_pass, eliminate_common_subexpressions
from .dce import DCEOptions, dce_pass, dead_code_elimination
from .fold_constant import FoldConstantOptions, fold_constant, fold_constant_pass
from .fold_scale_axis import fold_scale_axis, fold_scale_axis_pass
from .fuse_ops import FuseOptions, fuse_ops, fuse_ops_pass
from .inline import inline, inline_pass
from .instruments import (
    DebugInstrument,
    PassInstrument,
    PrintIR,
    TimingInstrument,
    check_well_formed,
    normal_form_problem,
    well_formed_problems,
)
from .lambda_lift import lambda_lift, lambda_lift_pass
from .pass_base import (
    NORMAL_FORMS,
    PASSES,
    NoOptions,
    Pass,
    PassError,
    function_pass,
    get_pass,
    module_pass,
    register_pass,
)
from .pipeline import (
    STANDARD_PIPELINES,
    BisectResult,
    PlannedPass,
    Sequential,
    bisect,
    identity,
    infer_type,
    parse_pipeline,
    standard_pipeline,
    values_close,
)
from .remove_unused import (
    RemoveUnusedOptions,
    remove_unused_functions,
    remove_unused_functions_pass,
)
from .simplify_expr import simplify_expr, simplify_expr_pass
from .simplify_inference import simplify_inference, simplify_inference_pass
from .to_anf import to_anf, to_anf_pass
from .to_graph import to_graph, to_graph_pass

__all__ = [
    "NORMAL_FORMS",
    "PASSES",
    "STANDARD_PIPELINES",
    "BisectResult",
    "DCEOptions",
    "DebugInstrument",
    "FoldConstantOptions",
    "FuseOptions",
    "NoOptions",
    "Pass",
    "PassContext",
    "PassError",
    "PassInstrument",
    "PlannedPass",
    "PrintIR",
    "RemoveUnusedOptions",
    "Sequential",
    "TimingInstrument",
    "bisect",
    "check_well_formed",
    "cse_pass",
    "dce_pass",
    "dead_code_elimination",
    "eliminate_common_subexpressions",
    "fold_constant",
    "fold_constant_pass",
    "fold_scale_axis",
    "fold_scale_axis_pass",
    "function_pass",
    "fuse_ops",
    "fuse_ops_pass",
    "get_pass",
    "identity",
    "infer_type",
    "inline",
    "inline_pass",
    "lambda_lift",
    "lambda_lift_pass",
    "module_pass",
    "normal_form_problem",
    "parse_pipeline",
    "register_pass",
    "remove_unused_functions",
    "remove_unused_functions_pass",
    "simplify_expr",
    "simplify_expr_pass",
    "simplify_inference",
    "simplify_inference_pass",
    "standard_pipeline",
    "to_anf",
    "to_anf_pass",
    "to_graph",
    "to_graph_pass",
    "values_close",
    "well_formed_problems",
]
