"""Valid random calls of every operator: shapes, dtypes, attributes and index constants.

`GENERATORS` (an `OpTable`) maps each operator (the `Op` object) to a function

    gen(tape: Tape, op: Op, x: TensorType | None) -> OpCall | None

that reads its choices from `tape` and returns a call TVM's semantics accept. With `x`
given, the call takes a tensor of that type as its argument `OpCall.primary` (so program
generators can feed it an existing node), or the function returns None if `x` does not
fit (wrong rank, dtype kind, too small). With `x=None` it invents its own inputs.

Arguments of an `OpCall` are
* a `TensorType`: a free input (any finite values will do),
* `Nonzero(type)`: a free input whose values must not be zero (integer divisors),
* an `np.ndarray`: a constant the call needs as it is (indices in range, shapes, ...).

`op_calls(op)` is the hypothesis strategy of such calls. Every choice is read from bytes;
choice 0 is the simplest one (size-1 dimensions, the first axis, the first listed option),
so examples shrink towards small, plain calls.

`core` holds the tape, the call types and the small choices every generator makes; one
module per operator family (elementwise, reduce, transform, index, algorithm, nn, conv,
pool, image, annotation) holds that family's generators in a table of its own, and
`GENERATORS` joins the families listed below.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from ...lang.op import Op, lookup_op
from ...lang.optable import OpTable
from . import (
    algorithm,
    annotation,
    conv,
    elementwise,
    image,
    index,
    nn,
    pool,
    reduce,
    transform,
)
from .core import (
    Generator,
    Nonzero,
    OpCall,
    Tape,
    call_type,
    kind,
    spec_type,
    static_shape,
)
from .elementwise import broadcast_partner
from .transform import factorization

__all__ = [
    "GENERATORS",
    "Nonzero",
    "OpCall",
    "Tape",
    "broadcast_partner",
    "call_type",
    "factorization",
    "generator_for",
    "kind",
    "op_calls",
    "spec_type",
    "static_shape",
]

GENERATORS: OpTable[Generator] = OpTable.merge(
    "test generator",
    [
        elementwise.GENERATORS,
        reduce.GENERATORS,
        transform.GENERATORS,
        index.GENERATORS,
        algorithm.GENERATORS,
        nn.GENERATORS,
        conv.GENERATORS,
        pool.GENERATORS,
        image.GENERATORS,
        annotation.GENERATORS,
    ],
)
"""The call generator of each operator, keyed by the `Op` object."""


def generator_for(op: Op) -> Generator:
    """The call generator of `op`; `MissingFacetError` naming it if there is none."""
    return GENERATORS.lookup(op)


_OP_BYTES = 96  # enough choices for the largest call


@st.composite
def _op_call(draw: Any, op: Op, dtypes: tuple[str, ...]) -> OpCall:
    gen = generator_for(op)
    for _ in range(20):
        tape = Tape(draw(st.binary(min_size=_OP_BYTES, max_size=_OP_BYTES)), dtypes)
        call = gen(tape, op, None)
        if call is not None:
            return call
    raise ValueError(f"op_calls: no call of `{op.name}` with dtypes {dtypes}")


def op_calls(op: Op | str, dtypes: Sequence[str] = ("float32",)) -> st.SearchStrategy[OpCall]:
    """Valid random calls of `op` (an `Op` or its name) whose new tensors have `dtypes`.

    Each call is an `OpCall`: `call.args` are `TensorType`s (free inputs), `Nonzero`
    inputs and constant `np.ndarray`s; `call_type(call)` is its result type.

        from hypothesis import given
        from relay.testing import op_calls

        @given(op_calls("nn.conv2d"))
        def test_my_conv_kernel(call): ...
    """
    found = lookup_op(op) if isinstance(op, str) else op
    if found is None:
        raise ValueError(f"op_calls: no operator `{op}`")
    generator_for(found)
    return _op_call(found, tuple(dtypes))
