"""Passes: the pass infrastructure and the passes themselves.

A `Pass` is a frozen value made with `@module_pass` / `@function_pass`; `Sequential` and
`parse_pipeline("fold-constant,fuse-ops{max-depth=8},dce")` compose them; a `PassContext`
(TVM's signature: `opt_level`, `required_pass`, `disabled_pass`, `instruments`, `config`)
decides what runs (TVM's rule), carries the instruments (`TimingInstrument`, `PrintIR`,
`DebugInstrument`) and remembers the types of the modules it saw (`ctx.module_types(mod)`).
`insert_passes` adds passes at a named point of a pipeline (`after:fold-constant`);
`bisect` finds the first pass that changes a program's results.

Naming: each pass is exported once, as its `Pass` object, named after its pipeline name
with `_pass` (`fold-constant` → `fold_constant_pass`, `to-graph-normal-form` →
`to_graph_normal_form_pass`); call it on a module (`fold_constant_pass(mod)`) and set its
options with `.with_options(...)`. A pass that also works on a single expression exports
`<name>_expr` (`dce_expr`, `cse_expr`). `relay.transform` spells the same objects the TVM
way (`FoldConstant()`).

`pattern` holds the dataflow pattern language and the one rewrite driver
(`pattern.apply_rules`: bottom-up or top-down, settling, fixpoint with a budget, a trace,
types carried) that `simplify-expr`, `simplify-inference`, `fold-scale-axis`, `cse` and
`pattern.rewrite` run on; other passes rebuild with `lang`'s `ExprMutator`.
"""

from .alter_op_layout import AlterOpLayoutOptions, alter_op_layout_pass
from .context import PassContext
from .convert_layout import ConvertLayoutOptions, convert_layout_pass
from .cse import cse_expr, cse_pass
from .dce import DCEOptions, dce_expr, dce_pass
from .fold_constant import FoldConstantOptions, fold_constant_pass
from .fold_scale_axis import fold_scale_axis_pass
from .fuse_ops import FuseOptions, fuse_ops_pass
from .inline import inline_pass
from .instruments import (
    DebugInstrument,
    PassInstrument,
    PrintIR,
    TimingInstrument,
    check_well_formed,
    normal_form_problem,
    well_formed_problems,
)
from .lambda_lift import lambda_lift_pass
from .merge_dense import MergeDenseOptions, merge_dense_pass
from .partial_eval import PartialEvalOptions, partial_evaluate_pass
from .pass_base import (
    NORMAL_FORMS,
    PASSES,
    NoOptions,
    Pass,
    PassError,
    camel_case,
    function_pass,
    get_pass,
    kebab_case,
    module_pass,
    register_pass,
)
from .pipeline import (
    STANDARD_PIPELINES,
    BisectResult,
    ExtraPasses,
    PlannedPass,
    Sequential,
    bisect,
    identity_pass,
    infer_type_pass,
    insert_passes,
    insertion_points,
    parse_pipeline,
    standard_pipeline,
    values_close,
)
from .remove_unused import RemoveUnusedOptions, remove_unused_functions_pass
from .simplify_expr import simplify_expr_pass
from .simplify_inference import simplify_inference_pass
from .to_anf import to_anf_pass
from .to_graph import to_graph_normal_form_pass
from .winograd_conv2d import WinogradOptions, winograd_conv2d_pass

__all__ = [
    "NORMAL_FORMS",
    "PASSES",
    "STANDARD_PIPELINES",
    "AlterOpLayoutOptions",
    "BisectResult",
    "ConvertLayoutOptions",
    "DCEOptions",
    "DebugInstrument",
    "ExtraPasses",
    "FoldConstantOptions",
    "FuseOptions",
    "MergeDenseOptions",
    "NoOptions",
    "PartialEvalOptions",
    "Pass",
    "PassContext",
    "PassError",
    "PassInstrument",
    "PlannedPass",
    "PrintIR",
    "RemoveUnusedOptions",
    "Sequential",
    "TimingInstrument",
    "WinogradOptions",
    "alter_op_layout_pass",
    "bisect",
    "camel_case",
    "check_well_formed",
    "convert_layout_pass",
    "cse_expr",
    "cse_pass",
    "dce_expr",
    "dce_pass",
    "fold_constant_pass",
    "fold_scale_axis_pass",
    "function_pass",
    "fuse_ops_pass",
    "get_pass",
    "identity_pass",
    "infer_type_pass",
    "inline_pass",
    "insert_passes",
    "insertion_points",
    "kebab_case",
    "lambda_lift_pass",
    "merge_dense_pass",
    "module_pass",
    "normal_form_problem",
    "parse_pipeline",
    "partial_evaluate_pass",
    "register_pass",
    "remove_unused_functions_pass",
    "simplify_expr_pass",
    "simplify_inference_pass",
    "standard_pipeline",
    "to_anf_pass",
    "to_graph_normal_form_pass",
    "values_close",
    "well_formed_problems",
    "winograd_conv2d_pass",
]
