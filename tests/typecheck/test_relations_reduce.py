"""Relations of reductions against numpy: axes (None, lists, negative), keepdims, exclude."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from relay.lang import ANY, IncompleteType, ShapeVar, TensorType, get_op
from relay.testing.relations import StandaloneContext as Ctx
from relay.testing.relations import op_call_type as call_type
from relay.testing.relations import op_type_error as type_error
from relay.typecheck import relation_for
from relay.typecheck.relations.reduce import ARG_REDUCE, REDUCE


@st.composite
def reduce_case(draw, min_rank=0):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=min_rank, max_size=4)))
    ndim = len(shape)
    axis = None
    if draw(st.booleans()):
        picked = draw(st.lists(st.integers(0, max(ndim - 1, 0)), unique=True, max_size=ndim))
        axis = [a - ndim if draw(st.booleans()) else a for a in picked] if ndim else []
    return shape, axis, draw(st.booleans()), draw(st.booleans())


def numpy_axes(ndim, axis, exclude):
    if not axis:  # None or empty: every axis (TVM)
        return tuple(range(ndim))
    listed = {a % ndim for a in axis}
    return tuple(i for i in range(ndim) if (i not in listed) == exclude)


@given(reduce_case(), st.sampled_from(REDUCE), st.sampled_from(["float32", "int32", "float16"]))
def test_reductions_match_numpy(case, op_name, dtype):
    shape, axis, keepdims, exclude = case
    x = np.zeros(shape, dtype=dtype)
    axes = numpy_axes(len(shape), axis, exclude)
    if op_name in ("all", "any"):
        expected = np.all(x, axis=axes, keepdims=keepdims).shape
    else:
        expected = np.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype).shape
    got = call_type(
        op_name, TensorType(shape, dtype), axis=axis, keepdims=keepdims, exclude=exclude
    )
    assert got == TensorType(expected, dtype)
    assert str(np.max(x, axis=axes, keepdims=keepdims).dtype) == got.dtype


@given(reduce_case(min_rank=1), st.sampled_from(ARG_REDUCE))
def test_arg_reductions_give_int32_indices(case, op_name):
    shape, axis, keepdims, exclude = case
    axes = numpy_axes(len(shape), axis, exclude)
    expected = np.sum(np.zeros(shape), axis=axes, keepdims=keepdims).shape
    got = call_type(
        op_name, TensorType(shape, "float32"), axis=axis, keepdims=keepdims, exclude=exclude
    )
    assert got == TensorType(expected, "int32")
    if len(axes) == 1:  # numpy's argmax takes one axis
        reference = getattr(np, op_name)(np.zeros(shape), axis=axes[0], keepdims=keepdims)
        assert got.shape == reference.shape


@given(reduce_case(min_rank=1))
def test_variance_matches_numpy(case):
    shape, axis, keepdims, exclude = case
    x = np.zeros(shape, dtype="float32")
    axes = numpy_axes(len(shape), axis, exclude)
    mean = np.mean(x, axis=axes, keepdims=True)
    got = call_type(
        "variance",
        TensorType(shape, "float32"),
        TensorType(mean.shape, "float32"),
        axis=axis,
        keepdims=keepdims,
        exclude=exclude,
    )
    assert got == TensorType(np.var(x, axis=axes, keepdims=keepdims).shape, "float32")


def test_reduction_errors_say_what_is_wrong():
    t = TensorType((2, 3, 4), "float32")
    assert "axis 3 is out of range for an input of rank 3" in type_error("sum", t, axis=[3])
    assert "axis -4 is out of range" in type_error("mean", t, axis=[-4])
    assert "axis -1 is given twice" in type_error("max", t, axis=[2, -1])
    assert "argmax: the input must have at least one dimension" in type_error(
        "argmax", TensorType((), "float32")
    )
    message = type_error("variance", t, TensorType((2, 4), "float32"), axis=[1])
    assert "variance: the mean `Tensor[(2, 4), float32]` does not fit" in message
    assert "keepdims=True" in message
    message = type_error("variance", t, TensorType((2, 5, 4), "float32"), axis=[1])
    assert "does not broadcast" in message


def test_scalar_reduction_over_every_axis_is_a_scalar():
    assert call_type("sum", TensorType((), "float32")) == TensorType((), "float32")


def test_unknown_dims_pass_through():
    n = ShapeVar("n")
    t = TensorType((ANY, n, 3), "float32")
    assert call_type("sum", t, axis=[2]) == TensorType((ANY, n), "float32")
    assert call_type("argmin", t, axis=[0], keepdims=True) == TensorType((1, n, 3), "int32")
    assert call_type("prod", t, axis=[1], exclude=True) == TensorType((n,), "float32")


def test_unknown_input_waits():
    for name in (*REDUCE, *ARG_REDUCE):
        op = get_op(name)
        assert relation_for(op)([IncompleteType()], op.make_attrs(), Ctx()) is None
    op = get_op("variance")
    data = TensorType((2, 3), "float32")
    assert relation_for(op)([data, IncompleteType()], op.make_attrs(), Ctx()) is None
