"""`relay.testing`: hypothesis strategies for programs (and, later, pass-checking helpers).

from hypothesis import given
from relay.testing import modules

@given(modules())
def test_my_pass_keeps_programs_well_formed(mod): ...
"""

from .check_pass import check_once, check_pass
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
    "attrs_for",
    "check_once",
    "check_pass",
    "constants",
    "dataflow_programs",
    "exprs",
    "func_attrs",
    "functional_programs",
    "inputs_for",
    "literal_constants",
    "metadata_constants",
    "modules",
    "op_calls",
    "patterns",
    "types",
    "usable_ops",
    "var_names",
]
