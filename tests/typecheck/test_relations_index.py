"""Relations of indexing operators against numpy: take, gather, scatter, one_hot, ..."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from relay.lang import (
    ANY,
    IncompleteType,
    ShapeVar,
    TensorType,
    get_op,
)
from relay.testing.relations import StandaloneContext as Ctx
from relay.testing.relations import f32
from relay.testing.relations import op_call_type as call_type
from relay.testing.relations import op_type_error as type_error
from relay.typecheck import RelationError, relation_for

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


def i32(*shape):
    return TensorType(shape, "int32")


@given(shapes, shapes, st.data())
def test_take_matches_numpy(shape, ishape, data):
    x = np.zeros(shape)
    idx = np.zeros(ishape, dtype="int32")
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    mode = data.draw(st.sampled_from(["clip", "wrap", "fast"]))
    expected = np.take(x, idx, axis=axis).shape
    assert call_type("take", f32(*shape), i32(*ishape), axis=axis, mode=mode) == f32(*expected)


@given(shapes, shapes, st.integers(1, 3))
def test_take_with_batch_dims_matches_a_loop(shape, ishape, batch):
    x = np.zeros((batch, *shape))
    idx = np.zeros((batch, *ishape), dtype="int64")
    axis = len(shape)  # the last axis of x
    expected = np.array([np.take(x[i], idx[i], axis=axis - 1) for i in range(batch)]).shape
    got = call_type("take", f32(*x.shape), TensorType(idx.shape, "int64"), axis=axis, batch_dims=1)
    assert got == f32(*expected)


@given(shapes, st.data())
def test_gather_and_scatter_match_numpy(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    ishape = list(shape)
    ishape[axis] = data.draw(st.integers(1, 4))
    x = np.zeros(shape)
    idx = np.zeros(ishape, dtype="int32")
    expected = np.take_along_axis(x, idx, axis=axis).shape
    assert call_type("gather", f32(*shape), i32(*ishape), axis=axis) == f32(*expected)
    out = x.copy()
    np.put_along_axis(out, idx, np.ones(ishape), axis=axis)
    reduction = data.draw(st.sampled_from(["update", "add", "mul", "mean", "min", "max"]))
    got = call_type(
        "scatter_elements", f32(*shape), i32(*ishape), f32(*ishape), axis=axis, reduction=reduction
    )
    assert got == f32(*out.shape)


@given(shapes, shapes, st.data())
def test_gather_nd_matches_numpy(shape, rest, data):
    depth = data.draw(st.integers(1, len(shape)))
    idx = np.zeros((depth, *rest), dtype="int32")
    expected = np.zeros(shape)[tuple(idx)].shape
    assert call_type("gather_nd", f32(*shape), i32(*idx.shape)) == f32(*expected)


def test_gather_nd_batch_dims_and_index_rank():
    # batch_dims=1: out = indices.shape[1:] + data.shape[1 + depth:]
    assert call_type("gather_nd", f32(2, 3, 4), i32(1, 2), batch_dims=1) == f32(2, 4)
    assert call_type("gather_nd", f32(3, 4), i32(ANY, 5), index_rank=1) == f32(5, 4)
    assert "index depth" in type_error("gather_nd", f32(3, 4), i32(ANY, 5))
    assert "address more axes" in type_error("gather_nd", f32(3, 4), i32(3, 5))


@given(shapes, st.integers(1, 5), st.data())
def test_one_hot_matches_numpy(ishape, depth, data):
    axis = data.draw(st.integers(-len(ishape) - 1, len(ishape)))
    idx = np.zeros(ishape, dtype="int32")
    encoded = np.eye(depth, dtype="float32")[idx]
    expected = np.moveaxis(encoded, -1, axis).shape
    got = call_type("one_hot", i32(*ishape), f32(), f32(), depth=depth, axis=axis, dtype="float32")
    assert got == f32(*expected)
    got = call_type("one_hot", i32(*ishape), i32(), i32(), depth=depth, axis=axis)
    assert got == i32(*expected)  # a null dtype is the on value's


@given(shapes, st.data())
def test_adv_index_matches_numpy(shape, data):
    count = data.draw(st.integers(1, len(shape)))
    base = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=2))
    indices = [np.zeros([1 if data.draw(st.booleans()) else d for d in base], "int32")]
    indices += [np.zeros(base, "int32") for _ in range(count - 1)]
    expected = np.zeros(shape)[tuple(indices)].shape
    types = [f32(*shape), *(i32(*i.shape) for i in indices)]
    assert call_type("adv_index", *types, tuple_arg=True) == f32(*expected)


@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(0, 4))
def test_unravel_index_matches_numpy(dims, count):
    idx = np.zeros(count, "int32") if count else np.zeros((), "int32")
    expected = np.stack(np.unravel_index(idx, dims)).shape
    got = call_type("unravel_index", i32(*idx.shape), i32(len(dims)))
    assert got == i32(*expected)


def test_sparse_to_dense_matrix_set_diag_sequence_mask():
    got = call_type("sparse_to_dense", i32(3, 2), f32(3), f32(), output_shape=[4, 5])
    assert got == f32(4, 5)
    assert "the default value must be a scalar" in type_error(
        "sparse_to_dense", i32(3, 2), f32(3), f32(1), output_shape=[4, 5]
    )
    assert "the sparse indices must have an integer dtype" in type_error(
        "sparse_to_dense", f32(3, 2), f32(3), f32(), output_shape=[4, 5]
    )
    for k1, k2, diag in [
        (0, 0, (2, 3)),
        (-1, 1, (2, 3, 3)),
        (1, 2, (2, 2, 3)),
        (-2, -1, (2, 2, 2)),
    ]:
        assert call_type("matrix_set_diag", f32(2, 3, 4), f32(*diag), k1=k1, k2=k2) == f32(2, 3, 4)
    message = type_error("matrix_set_diag", f32(2, 3, 4), f32(2, 4))
    assert "the diagonal `Tensor[(2, 4), float32]` does not fit" in message
    assert "expected shape (2, 3)" in message
    assert call_type("sequence_mask", f32(5, 3, 4), i32(3)) == f32(5, 3, 4)
    assert call_type("sequence_mask", f32(3, 5, 4), i32(3), axis=1) == f32(3, 5, 4)
    assert "the valid lengths must be `Tensor[(3), int32]`" in type_error(
        "sequence_mask", f32(5, 3, 4), i32(5)
    )


def test_valid_lengths_are_constrained():
    op = get_op("sequence_mask")
    rel = relation_for(op)
    assert rel([f32(5, 3), IncompleteType()], op.make_attrs(), Ctx()) is None
    ctx = Ctx()
    assert rel([f32(5, 3), i32(ANY)], op.make_attrs(), ctx) == f32(5, 3)
    assert rel([f32(5, 3), i32(3)], op.make_attrs(axis=0), ctx) == f32(5, 3)
    with pytest.raises(RelationError, match="axis=2 must be 0 or 1"):
        rel([f32(5, 3), i32(3)], op.make_attrs(axis=2), ctx)


def test_index_errors():
    assert "the indices must have an integer dtype, but it is `Tensor[(2), float32]`" in (
        type_error("take", f32(5), f32(2), axis=0)
    )
    assert '`mode` must be one of "clip", "wrap", "fast", not "nearest"' in type_error(
        "take", f32(5), i32(2), axis=0, mode="nearest"
    )
    assert "batch dimensions differ" in type_error(
        "take", f32(2, 5), i32(3, 2), axis=1, batch_dims=1
    )
    assert "must have the rank of the input" in type_error("gather", f32(5, 2), i32(5), axis=0)
    assert "must have the same shape" in type_error(
        "scatter_elements", f32(5, 2), i32(5, 2), f32(5, 1), axis=0
    )
    assert "depth=0 must be at least 1" in type_error("one_hot", i32(3), f32(), f32(), depth=0)
    assert "index tensor 1 must have an integer dtype" in type_error(
        "adv_index", f32(3, 4), f32(2), tuple_arg=True
    )
    assert "too many" in type_error("adv_index", f32(3), i32(2), i32(2), tuple_arg=True)


def test_unknown_dims_and_inputs():
    n = ShapeVar("n")
    assert call_type("take", f32(n, 4), i32(ANY), axis=0) == f32(ANY, 4)
    assert call_type("gather_nd", f32(n, 4), i32(1, ANY)) == f32(ANY, 4)
    for name, attrs in [("take", {}), ("gather", {"axis": 0}), ("gather_nd", {})]:
        op = get_op(name)
        args = [f32(2), IncompleteType()]
        assert relation_for(op)(args, op.make_attrs(**attrs), Ctx()) is None
