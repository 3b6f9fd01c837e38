"""`relay.testing`: hypothesis strategies for programs (and, later, pass-checking helpers).

from hypothesis import given
from relay.testing import modules

@given(modules())
def test_my_pass_keeps_programs_well_formed(mod): ...
"""

from .check_pass import check_once, check_pass
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
from .typed_ops import op_calls
from .typed_programs import dataflow_programs, functional_programs, inputs_for

__all__ = [
    "LITERAL_DTYPES",
    "METADATA_DTYPES",
    "RandomArrays",
    "apply_compute",
    "assert_matches",
    "attrs_for",
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
    "run_default_schedule",
    "types",
    "usable_ops",
    "var_names",
]
