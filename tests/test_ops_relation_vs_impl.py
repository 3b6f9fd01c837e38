"""For every operator, on random valid calls: the type relation's result type is the shape
and dtype (and tuple structure) the reference implementation produces.

The calls come from `relay.testing.typed_ops` (valid shapes, attributes, index constants in
range); the relation is applied directly (`call_type`) and the implementation is called with
random values of the argument types (`implementation_for`). That every operator has a
call generator is checked with the other facets in `test_operator_facets.py`.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.runtime.op_impls import implementation_for
from relay.lang import Op, TensorType, TupleType, Type, all_ops
from relay.lang.dtype import numpy_dtype
from relay.testing import op_calls
from relay.testing.typed_ops import GENERATORS, Nonzero, OpCall, Tape, call_type, spec_type

DTYPES = ("float32", "float64", "float16", "int32", "int64", "int8", "uint8", "bool")


def arg_value(spec: object, rng: np.random.Generator) -> np.ndarray:
    """A random value for one argument of a generated call."""
    if isinstance(spec, np.ndarray):
        return spec
    t = spec_type(spec)  # type: ignore[arg-type]
    dtype = numpy_dtype(t.dtype)
    shape = tuple(int(d) for d in t.shape)  # type: ignore[call-overload]
    if dtype.kind == "b":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind in "iu":
        value = rng.integers(0 if dtype.kind == "u" else -5, 6, shape).astype(dtype)
        if isinstance(spec, Nonzero):
            value[value == 0] = 1
        return np.asarray(value)
    return rng.uniform(-2, 2, shape).astype(dtype)


def mismatch(t: Type, value: object, where: str = "the result") -> str | None:
    """Where `value` does not have type `t` (shape, dtype, tuple structure), or None."""
    if isinstance(t, TupleType):
        if not isinstance(value, tuple) or len(value) != len(t.fields):
            return f"{where} is {type(value).__name__}, expected a {len(t.fields)}-tuple"
        for i, (ft, fv) in enumerate(zip(t.fields, value)):
            found = mismatch(ft, fv, f"{where}.{i}")
            if found:
                return found
        return None
    assert isinstance(t, TensorType)
    if not isinstance(value, np.ndarray):
        return f"{where} is a {type(value).__name__}, not an array"
    shape = tuple(int(d) for d in t.shape)  # type: ignore[call-overload]
    if value.shape != shape or value.dtype != numpy_dtype(t.dtype):
        return f"{where} is {value.shape} {value.dtype}, the relation says {shape} {t.dtype}"
    return None


def describe(call: OpCall) -> str:
    args = ", ".join(str(spec_type(a)) for a in call.args)
    fields = [] if call.attrs is None else [f.name for f in call.attrs.schema.fields]
    attrs = dict(zip(fields, call.attrs.values)) if call.attrs is not None else {}
    return f"{call.op.name}({args}) with {attrs}"


def ids(op: Op) -> str:
    return op.name


@pytest.mark.parametrize("op", [op for op in all_ops() if op in GENERATORS], ids=ids)
@settings(max_examples=8)
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_relation_matches_implementation(op: Op, data: st.DataObject, seed: int) -> None:
    call = data.draw(op_calls(op, DTYPES))
    out_type = call_type(call)  # a valid call: the relation must accept it
    rng = np.random.default_rng(seed)
    values = [arg_value(a, rng) for a in call.args]
    args = [tuple(values)] if call.tuple_arg else values
    with np.errstate(all="ignore"):
        result = implementation_for(op)(args, call.attrs)  # type: ignore[arg-type]
    problem = mismatch(out_type, result)
    assert problem is None, f"{describe(call)}: {problem}"


@pytest.mark.parametrize("op", [op for op in all_ops() if op in GENERATORS], ids=ids)
@settings(max_examples=4)
@given(first=st.binary(min_size=96, max_size=96), second=st.binary(min_size=96, max_size=96))
def test_a_call_built_for_a_given_input_takes_it(op: Op, first: bytes, second: bytes) -> None:
    """The generator contract program builders rely on: asked for a call that takes a
    tensor of type x, a generator returns one with x at `primary`, or None."""
    gen = GENERATORS[op]
    call = gen(Tape(first, DTYPES), op, None)
    if call is None or call.primary is None:
        return
    x = spec_type(call.args[call.primary])
    again = gen(Tape(second, DTYPES), op, x)
    assert again is not None, f"{op.name} refused an input of a type it generates: {x}"
    assert again.primary is not None and spec_type(again.args[again.primary]) == x
    call_type(again)
    for other in (TensorType((2, 3), "float32"), TensorType((), "int8"), TensorType((1,), "bool")):
        made = gen(Tape(second, DTYPES), op, other)
        if made is not None and made.primary is not None:
            assert spec_type(made.args[made.primary]) == other, op.name
            call_type(made)
