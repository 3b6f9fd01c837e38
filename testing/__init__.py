"""`relay.testing`: hypothesis strategies for programs, and helpers to check passes and kernels.

    from hypothesis import given
    from relay.testing import check_pass, op_calls

    def test_my_pass():
        check_pass("fold-constant,dce")  # on random well-typed programs, against the interpreter

    @given(op_calls("nn.conv2d"))
    def test_my_conv_kernel(call): ...

* `strategies`: syntactic modules, expressions, types, patterns and attributes;
* `typed_ops/`: valid random calls of every operator (`op_calls`), one module per operator
  family, joined in the `GENERATORS` table (the "test generator" facet);
* `typed_programs`: well-typed dataflow and functional programs built from those calls, and
  inputs for them;
* `around`: programs that contain a given pattern, with constants of valid shapes
  (`programs_around`), for checking a rewrite where it fires;
* `check_pass`: run a pass on generated programs and compare with the interpreter
  (coverage count, `min_changed`, the seed of a failure, failures shrunk to the bindings
  that matter by `shrink_bindings`);
* `bind_params` (from the driver): turn `@main` parameters into constants;
  `call_type`: the result type of an `OpCall`;
* `compute_check`: compare a compute definition (and its default schedule) with the
  operator's reference implementation;
* `relations`: call a type relation on its own (`op_call_type`).
"""

from ..driver import bind_params
from .around import CONTEXT_OPS, programs_around
from .check_pass import CheckPassReport, check_once, check_pass
from .compute_check import (
    RandomArrays,
    apply_compute,
    assert_matches,
    check_compute,
    compute_and_reference,
    declared_op_names,
    op_names_called_in,
    run_default_schedule,
)
from .shrink_bindings import shrink_bindings
from .strategies import (
    LITERAL_DTYPES,
    METADATA_DTYPES,
    attrs_for,
    constants,
    exprs,
    func_attrs,
    literal_constants,
    metadata_constants,
    modules,
    patterns,
    types,
    usable_ops,
    var_names,
)
from .typed_ops import call_type, op_calls
from .typed_programs import dataflow_programs, functional_programs, inputs_for

__all__ = [
    "CONTEXT_OPS",
    "LITERAL_DTYPES",
    "METADATA_DTYPES",
    "CheckPassReport",
    "RandomArrays",
    "apply_compute",
    "assert_matches",
    "attrs_for",
    "bind_params",
    "call_type",
    "check_compute",
    "check_once",
    "check_pass",
    "compute_and_reference",
    "constants",
    "dataflow_programs",
    "declared_op_names",
    "exprs",
    "func_attrs",
    "functional_programs",
    "inputs_for",
    "literal_constants",
    "metadata_constants",
    "modules",
    "op_calls",
    "op_names_called_in",
    "patterns",
    "programs_around",
    "run_default_schedule",
    "shrink_bindings",
    "types",
    "usable_ops",
    "var_names",
]
