"""Passes: the pass infrastructure and (as they are written) the passes themselves.

A `Pass` is a frozen value made with `@module_pass` / `@function_pass`; `Sequential` and
`parse_pipeline("fold-constant,fuse-ops{max-depth=8},dce")` compose them; a `PassContext`
decides what runs (TVM's rule) and carries the instruments (`TimingInstrument`, `PrintIR`,
`DebugInstrument`). `bisect` finds the first pass that changes a program's results.
"""

from .context import PassContext
from .fuse_ops import FuseOptions, fuse_ops, fuse_ops_pass
from .instruments import (
    DebugInstrument,
    PassInstrument,
    PrintIR,
    TimingInstrument,
    check_well_formed,
    normal_form_problem,
    well_formed_problems,
)
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
    Sequential,
    Step,
    bisect,
    identity,
    infer_type,
    parse_pipeline,
    standard_pipeline,
    values_close,
)

__all__ = [
    "NORMAL_FORMS",
    "PASSES",
    "STANDARD_PIPELINES",
    "BisectResult",
    "DebugInstrument",
    "FuseOptions",
    "NoOptions",
    "Pass",
    "PassContext",
    "PassError",
    "PassInstrument",
    "PrintIR",
    "Sequential",
    "Step",
    "TimingInstrument",
    "bisect",
    "check_well_formed",
    "function_pass",
    "fuse_ops",
    "fuse_ops_pass",
    "get_pass",
    "identity",
    "infer_type",
    "module_pass",
    "normal_form_problem",
    "parse_pipeline",
    "register_pass",
    "standard_pipeline",
    "values_close",
    "well_formed_problems",
]
