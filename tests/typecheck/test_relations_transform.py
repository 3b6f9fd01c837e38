"""Relations of shape and layout transforms against numpy (reshape, slicing, joining, ...)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from relay.lang import (
    ANY,
    Call,
    Function,
    IncompleteType,
    ShapeVar,
    TensorType,
    TupleType,
    Var,
    const,
    get_op,
)
from relay.lang.diagnostics import TypeCheckError
from relay.testing.relations import StandaloneContext as Ctx
from relay.testing.relations import f32
from relay.testing.relations import op_call_type as call_type
from relay.testing.relations import op_type_error as type_error
from relay.typecheck import infer_expr, relation_for
from relay.typecheck.relations.transform import reshape_shape

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


# --------------------------------------------------------------------------- reshape


@st.composite
def reshape_case(draw):
    """An input shape, a newshape with special values, and the shape it means.

    The input dims are consumed left to right; each step writes newshape values and the
    output dims they stand for, so the expected shape is known without a reshape rule.
    """
    shape = draw(st.lists(st.integers(1, 6), min_size=1, max_size=5))
    newshape, out = [], []
    i = 0
    inferred = False
    while i < len(shape):
        d = shape[i]
        step = draw(st.sampled_from(["literal", "copy", "infer", "merge", "split", "rest"]))
        if step == "infer" and not inferred:
            newshape.append(-1)
            out.append(d)
            inferred = True
            i += 1
        elif step == "copy":
            newshape.append(0)
            out.append(d)
            i += 1
        elif step == "merge" and i + 1 < len(shape):
            newshape.append(-3)
            out.append(d * shape[i + 1])
            i += 2
        elif step == "split":
            a = draw(st.sampled_from([k for k in range(1, d + 1) if d % k == 0]))
            left, right = a, d // a
            form = draw(st.sampled_from(["both", "left", "right"]))
            newshape += [-4, -1 if form == "left" else left, -1 if form == "right" else right]
            out += [left, right]
            i += 1
        elif step == "rest":
            newshape.append(-2)
            out += shape[i:]
            i = len(shape)
        else:
            newshape.append(d)
            out.append(d)
            i += 1
    return tuple(shape), newshape, tuple(out)


@given(reshape_case(), st.sampled_from(["float32", "int8"]))
def test_reshape_special_values(case, dtype):
    shape, newshape, expected = case
    assert np.zeros(shape).reshape(expected).shape == expected
    got = call_type("reshape", TensorType(shape, dtype), newshape=newshape)
    assert got == TensorType(expected, dtype)


@given(shapes, st.data())
def test_reshape_plain_sizes_and_minus_one_match_numpy(shape, data):
    size = int(np.prod(shape))
    dims = []
    rest = size
    while rest > 1 and len(dims) < 4:
        d = data.draw(st.sampled_from([k for k in range(2, rest + 1) if rest % k == 0]))
        dims.append(d)
        rest //= d
    dims.append(rest)
    if data.draw(st.booleans()):
        dims[data.draw(st.integers(0, len(dims) - 1))] = -1
    expected = np.zeros(shape).reshape(dims).shape
    assert call_type("reshape", f32(*shape), newshape=dims) == f32(*expected)


def test_reshape_errors_and_allowzero():
    assert "cannot reshape the input of shape (2, 3) (6 elements) to (4, 2) (8 elements)" in (
        type_error("reshape", f32(2, 3), newshape=[4, 2])
    )
    assert "24 elements do not divide into blocks of 5" in type_error(
        "reshape", f32(2, 3, 4), newshape=[5, -1]
    )
    assert "only one dimension can be -1" in type_error("reshape", f32(6), newshape=[-1, -1])
    assert "input dimension 5 does not split into 2s" in type_error(
        "reshape", f32(5), newshape=[-4, 2, -1]
    )
    assert "the 0 at position 1 copies input dimension 1" in type_error(
        "reshape", f32(6), newshape=[-1, 0]
    )
    assert "-5 at position 0 is neither a size nor one of the special values" in type_error(
        "reshape", f32(6), newshape=[-5]
    )
    assert call_type("reshape", f32(0, 3), newshape=[0, 3], allowzero=True) == f32(0, 3)
    assert call_type("reshape", f32(2, 3), newshape=[0, 3]) == f32(2, 3)


def test_reshape_with_unknown_dims():
    n = ShapeVar("n")
    assert reshape_shape((n, 3, 4), (-1, 12)) == (n, 12)
    assert reshape_shape((n, 3, 4), (0, -3)) == (n, 12)
    assert reshape_shape((ANY, 3, 4), (-1, 4)) == (ANY, 4)
    assert reshape_shape((2, ANY), (-3,)) == (ANY,)
    # 2n cannot be written as a dimension: `?` once nothing can bind n any more
    assert call_type("reshape", f32(n, 3, 4), newshape=[-1, 6]) == f32(ANY, 6)


def test_reshape_like():
    assert call_type("reshape_like", f32(2, 3, 4), f32(6, 4)) == f32(6, 4)
    got = call_type("reshape_like", f32(2, 3, 4), f32(5, 12), lhs_begin=1, rhs_begin=1)
    assert got == f32(2, 12)
    assert "element counts differ" in type_error("reshape_like", f32(2, 3), f32(7))


# --------------------------------------------------------------------------- axes


@given(shapes, st.data())
def test_transpose_matches_numpy(shape, data):
    x = np.zeros(shape)
    if data.draw(st.booleans()):
        axes = None
    else:
        axes = data.draw(st.permutations(range(len(shape))))
        axes = [a - len(shape) if data.draw(st.booleans()) else a for a in axes]
    assert call_type("transpose", f32(*shape), axes=axes) == f32(*np.transpose(x, axes).shape)


@given(st.lists(st.integers(1, 3), max_size=5).map(tuple), st.data())
def test_squeeze_matches_numpy(shape, data):
    x = np.zeros(shape)
    ones = [i for i, d in enumerate(shape) if d == 1]
    axis = None
    if data.draw(st.booleans()):
        axis = data.draw(st.lists(st.sampled_from(ones), unique=True)) if ones else []
    expected = np.squeeze(x, axis=None if axis is None else tuple(axis)).shape
    assert call_type("squeeze", f32(*shape), axis=axis) == f32(*expected)


@given(st.lists(st.integers(1, 4), max_size=4).map(tuple), st.data())
def test_expand_dims_matches_numpy(shape, data):
    ndim = len(shape)
    axis = data.draw(st.integers(-ndim - 1, ndim))
    count = data.draw(st.integers(0, 3))
    pivot = axis if axis >= 0 else ndim + axis + 1
    expected = np.expand_dims(np.zeros(shape), tuple(range(pivot, pivot + count))).shape
    got = call_type("expand_dims", f32(*shape), axis=axis, num_newaxis=count)
    assert got == f32(*expected)


def test_axis_errors():
    assert "axes=[0, 1] must list each of the 3 axes" in type_error(
        "transpose", f32(1, 2, 3), axes=[0, 1]
    )
    assert "axis -1 is given twice (as axis 1)" in type_error("transpose", f32(2, 3), axes=[1, -1])
    assert "cannot squeeze axis 1 of the input `Tensor[(2, 3), float32]`: it has size 3" in (
        type_error("squeeze", f32(2, 3), axis=[1])
    )
    assert "expected -4 <= axis < 4" in type_error("expand_dims", f32(2, 3, 4), axis=4)
    assert "dimension ? is not known" in type_error("squeeze", f32(ANY, 1), axis=None)


# --------------------------------------------------------------------------- joining


@given(shapes, st.data())
def test_concatenate_and_stack_match_numpy(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    count = data.draw(st.integers(1, 4))
    parts = []
    for _ in range(count):
        part = list(shape)
        part[axis] = data.draw(st.integers(1, 4))
        parts.append(tuple(part))
    expected = np.concatenate([np.zeros(p) for p in parts], axis=axis).shape
    got = call_type("concatenate", *[f32(*p) for p in parts], tuple_arg=True, axis=axis)
    assert got == f32(*expected)
    stack_axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    expected = np.stack([np.zeros(shape)] * count, axis=stack_axis).shape
    got = call_type("stack", *[f32(*shape)] * count, tuple_arg=True, axis=stack_axis)
    assert got == f32(*expected)


def test_concatenate_with_unknown_dims_follows_tvm():
    assert call_type("concatenate", f32(ANY, 3), f32(ANY, ANY), tuple_arg=True) == f32(ANY, 3)
    assert call_type("concatenate", f32(1, 3), f32(1, ANY), tuple_arg=True) == f32(2, ANY)
    n = ShapeVar("n")
    assert call_type("concatenate", f32(n, 3), f32(0, 3), tuple_arg=True) == f32(n, 3)
    assert call_type("concatenate", f32(2, n), f32(3, n), tuple_arg=True) == f32(5, n)


def test_joining_errors():
    message = type_error("concatenate", f32(2, 3), f32(2, 4), tuple_arg=True)
    assert "must agree on every axis but axis 0" in message
    assert "field 1 is `Tensor[(2, 4), float32]`" in message
    assert "same rank" in type_error("concatenate", f32(2, 3), f32(2), tuple_arg=True)
    message = type_error("stack", f32(2, 3), TensorType((2, 3), "int32"), tuple_arg=True, axis=0)
    assert "same dtype" in message
    assert "must have the same shape" in type_error("stack", f32(2, 3), f32(2, 4), tuple_arg=True)
    assert "needs at least one tensor" in type_error("concatenate", tuple_arg=True)
    message = type_error("concatenate", f32(2, 3))
    assert "must be a tuple of tensors, but it has type `Tensor[(2, 3), float32]`" in message


@given(shapes, st.data())
def test_split_matches_numpy(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    size = shape[axis]
    if data.draw(st.booleans()):
        spec = data.draw(st.sampled_from([k for k in range(1, size + 1) if size % k == 0]))
    else:
        spec = sorted(data.draw(st.sets(st.integers(1, size - 1), max_size=3))) if size > 1 else []
    pieces = np.split(np.zeros(shape), spec, axis=axis)
    got = call_type("split", f32(*shape), indices_or_sections=spec, axis=axis)
    assert got == TupleType([f32(*p.shape) for p in pieces])


def test_split_errors():
    assert "cannot split axis 0 of size 5 into 2 equal sections" in type_error(
        "split", f32(5), indices_or_sections=2
    )
    assert "strictly increasing" in type_error("split", f32(5), indices_or_sections=[3, 2])
    assert "strictly increasing" in type_error("split", f32(5), indices_or_sections=[0, 2])
    assert "must be below the size 5" in type_error("split", f32(5), indices_or_sections=[5])
    got = call_type("split", f32(ANY, 2), indices_or_sections=[1, 3])
    assert got == TupleType([f32(1, 2), f32(2, 2), f32(ANY, 2)])


# --------------------------------------------------------------------------- slicing


def _tvm_valid(b, e, s, d):
    def canon(i):
        low, high = (-1, d - 1) if s < 0 else (0, d)
        i = i + d if i < 0 else i
        return min(max(i, low), high)

    return canon(e) <= canon(b) if s < 0 else canon(b) <= canon(e)


@given(shapes, st.data())
def test_strided_slice_matches_numpy(shape, data):
    begin, end, strides = [], [], []
    for d in shape:
        begin.append(data.draw(st.integers(-d - 2, d + 2)))
        end.append(data.draw(st.integers(-d - 2, d + 2)))
        strides.append(data.draw(st.sampled_from([1, 2, 3, -1, -2])))
    got_or_error = None
    try:
        got_or_error = call_type(
            "strided_slice", f32(*shape), begin=begin, end=end, strides=strides, axes=None
        )
    except TypeCheckError as exc:
        got_or_error = exc
    if all(_tvm_valid(b, e, s, d) for b, e, s, d in zip(begin, end, strides, shape)):
        index = tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides))
        assert got_or_error == f32(*np.zeros(shape)[index].shape)
    else:  # TVM rejects a slice that runs backwards (numpy would give an empty axis)
        assert isinstance(got_or_error, TypeCheckError)
        assert "runs backwards" in str(got_or_error)


@given(shapes, st.data())
def test_strided_slice_axes_and_size_mode(shape, data):
    axes = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True, min_size=1))
    begin = [data.draw(st.integers(0, shape[a] - 1)) for a in axes]
    sizes = [data.draw(st.integers(-1, shape[a] - b)) for a, b in zip(axes, begin)]
    index = [slice(None)] * len(shape)
    for a, b, n in zip(axes, begin, sizes):
        index[a] = slice(b, None if n < 0 else b + n)
    expected = np.zeros(shape)[tuple(index)].shape
    got = call_type(
        "strided_slice",
        f32(*shape),
        begin=begin,
        end=sizes,
        strides=[1] * len(axes),
        axes=[a - len(shape) for a in axes],
        slice_mode="size",
    )
    assert got == f32(*expected)


def test_strided_slice_padding_and_unknown_dims():
    # short lists cover the leading axes
    assert call_type("strided_slice", f32(5, 6), begin=[1], end=[3], strides=[1], axes=None) == (
        f32(2, 6)
    )
    # TVM's quirk: a padded end for a negative stride is 0, which stays excluded
    got = call_type("strided_slice", f32(5, 6), begin=[], end=[], strides=[-1], axes=None)
    assert got == f32(4, 6)
    n = ShapeVar("n")
    got = call_type(
        "strided_slice", f32(n, ANY, 6), begin=[0, 1], end=[2, 3], strides=[1, 1], axes=None
    )
    assert got == f32(ANY, ANY, 6)
    got = call_type("strided_slice", f32(n, 6), begin=[0], end=[2], strides=[1], axes=[1])
    assert got == f32(n, 2)
    assert "a stride cannot be 0" in type_error(
        "strided_slice", f32(5), begin=[0], end=[2], strides=[0], axes=None
    )
    assert "must have the same length" in type_error(
        "strided_slice", f32(5), begin=[0, 1], end=[2], strides=[1], axes=[0]
    )


def test_slice_like():
    x = np.zeros((5, 6, 7))
    assert call_type("slice_like", f32(5, 6, 7), f32(3, 4), axes=None) == f32(*x[:3, :4].shape)
    assert call_type("slice_like", f32(5, 6, 7), f32(3, 4, 2), axes=[-1]) == f32(5, 6, 2)
    assert "cannot slice axis 0 of the input `Tensor[(5, 6), float32]` to size 9" in (
        type_error("slice_like", f32(5, 6), f32(9, 6), axes=None)
    )


# --------------------------------------------------------------------------- repetition


@given(st.lists(st.integers(1, 3), max_size=3).map(tuple), st.data())
def test_tile_repeat_reverse_match_numpy(shape, data):
    x = np.zeros(shape)
    reps = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=4))
    assert call_type("tile", f32(*shape), reps=reps) == f32(*np.tile(x, reps).shape)
    repeats = data.draw(st.integers(1, 3))
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1)) if shape else None
    expected = np.repeat(x, repeats, axis=axis).shape
    assert call_type("repeat", f32(*shape), repeats=repeats, axis=axis) == f32(*expected)
    if shape:
        axis = data.draw(st.integers(-len(shape), len(shape) - 1))
        expected = np.flip(x, axis).shape
        assert call_type("reverse", f32(*shape), axis=axis) == f32(*expected)


def test_repetition_errors_and_unknown_dims():
    assert "every repetition count must be >= 1" in type_error("tile", f32(2), reps=[0])
    assert "repeats=0 must be >= 1" in type_error("repeat", f32(2), repeats=0, axis=0)
    assert call_type("tile", f32(ANY, 2), reps=[2, 2]) == f32(ANY, 4)
    assert call_type("repeat", f32(ANY, 2), repeats=2, axis=0) == f32(ANY, 2)


# --------------------------------------------------------------------------- broadcasting


@given(shapes, st.data())
def test_broadcast_to_matches_numpy(shape, data):
    target = list(data.draw(st.lists(st.integers(1, 3), max_size=2))) + list(shape)
    source = tuple(1 if data.draw(st.booleans()) else d for d in shape)
    source = source[data.draw(st.integers(0, len(source))) :]
    expected = np.broadcast_to(np.zeros(source), target).shape
    assert call_type("broadcast_to", f32(*source), shape=target) == f32(*expected)
    assert call_type("broadcast_to_like", f32(*source), f32(*target)) == f32(*expected)
    assert call_type("collapse_sum_like", f32(*target), f32(*source)) == f32(*source)


def test_broadcast_errors():
    assert "cannot broadcast the input `Tensor[(3), float32]` to shape [4]" in type_error(
        "broadcast_to", f32(3), shape=[4]
    )
    assert "cannot collapse the input" in type_error("collapse_sum_like", f32(2, 3), f32(4))
    assert call_type("broadcast_to", f32(ANY, 1), shape=[2, 3]) == f32(2, 3)


# --------------------------------------------------------------------------- layouts


@given(st.sampled_from([1, 2, 4, 8]), st.data())
def test_layout_transform_matches_numpy(block, data):
    n, h, w = (data.draw(st.integers(1, 3)) for _ in range(3))
    c = block * data.draw(st.integers(1, 3))
    x = np.zeros((n, c, h, w))
    packed = x.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2)
    got = call_type(
        "layout_transform", f32(n, c, h, w), src_layout="NCHW", dst_layout=f"NCHW{block}c"
    )
    assert got == f32(*packed.shape)
    back = call_type(
        "layout_transform", f32(*packed.shape), src_layout=f"NCHW{block}c", dst_layout="NHWC"
    )
    assert back == f32(*x.transpose(0, 2, 3, 1).shape)


def test_layout_transform_regroups_blocks_and_reports_errors():
    got = call_type(
        "layout_transform", f32(1, 4, 7, 7, 16), src_layout="NCHW16c", dst_layout="NCHW8c"
    )
    assert got == f32(1, 8, 7, 7, 8)
    got = call_type("layout_transform", f32(ANY, 64, 7, 7), src_layout="NCHW", dst_layout="NHWC16c")
    assert got == f32(ANY, 7, 7, 4, 16)
    message = type_error(
        "layout_transform", f32(1, 63, 7, 7), src_layout="NCHW", dst_layout="NCHW16c"
    )
    assert "63 elements on the C axis, which do not split into blocks of 16" in message
    message = type_error(
        "layout_transform", f32(1, 4, 7, 7, 8), src_layout="NCHW16c", dst_layout="NCHW"
    )
    assert "dimension 4 must be 16" in message
    assert 'cannot convert the input from layout "NCHW" to "NCW"' in type_error(
        "layout_transform", f32(1, 2, 3, 4), src_layout="NCHW", dst_layout="NCW"
    )
    assert "the sub-axis c has no primal axis C" in type_error(
        "layout_transform", f32(1, 2, 3, 4), src_layout="NHW4c", dst_layout="NHW4c"
    )
    assert "rank 3" in type_error(
        "layout_transform", f32(1, 2, 3), src_layout="NCHW", dst_layout="NHWC"
    )


# --------------------------------------------------------------------------- others


@given(shapes)
def test_shape_of_and_ndarray_size(shape):
    x = np.zeros(shape)
    assert call_type("shape_of", f32(*shape)) == TensorType(np.array(np.shape(x)).shape, "int32")
    assert call_type("shape_of", f32(*shape), dtype="int64") == TensorType((x.ndim,), "int64")
    assert call_type("ndarray_size", f32(*shape)) == TensorType(np.shape(x.size), "int32")


@given(st.lists(st.integers(0, 4), min_size=1, max_size=4), st.sampled_from(["ij", "xy"]))
def test_meshgrid_matches_numpy(lengths, indexing):
    arrays = [np.zeros(n) if n else np.zeros(()) for n in lengths]
    grids = np.meshgrid(*arrays, indexing=indexing)
    types = [f32(n) if n else f32() for n in lengths]
    got = call_type("meshgrid", *types, tuple_arg=True, indexing=indexing)
    assert got == TupleType([f32(*g.shape) for g in grids])


@given(st.integers(-5, 5), st.integers(-5, 5), st.sampled_from([-2.0, -0.5, 0.5, 1.0, 3.0]))
def test_arange_matches_numpy(start, stop, step):
    expected = np.arange(start, stop, step, dtype="float32").shape
    scalar = TensorType((), "float32")
    params = [Var(n, scalar) for n in ("a", "b", "c")]
    op = get_op("arange")
    attrs = op.make_attrs(start=const(float(start)), stop=float(stop), step=step, dtype="float32")
    call = Call(op, params, attrs)
    if expected[0] == 0:
        with pytest.raises(TypeCheckError, match="would be empty"):
            infer_expr(Function(params, call))
    else:
        assert infer_expr(Function(params, call)).type_of(call) == f32(*expected)


def test_arange_with_unknown_bounds_and_inferred_scalars():
    op = get_op("arange")
    holes = [IncompleteType() for _ in range(3)]
    ctx = Ctx()
    attrs = op.make_attrs(start=None, stop=None, step=None, dtype="int32")
    assert relation_for(op)(holes, attrs, ctx) == TensorType((ANY,), "int32")
    assert all(ctx.bound[h] == TensorType((), "int32") for h in holes)


def test_unknown_inputs_wait():
    cases = {
        "reshape": dict(newshape=[-1]),
        "transpose": dict(axes=None),
        "squeeze": dict(),
        "expand_dims": dict(axis=0),
        "split": dict(indices_or_sections=2),
        "strided_slice": dict(begin=[0], end=[1], strides=[1], axes=None),
        "tile": dict(reps=[2]),
        "repeat": dict(repeats=2),
        "reverse": dict(),
        "broadcast_to": dict(shape=[2]),
        "layout_transform": dict(src_layout="NC", dst_layout="CN"),
        "shape_of": dict(),
        "ndarray_size": dict(),
    }
    for name, attrs in cases.items():
        op = get_op(name)
        assert relation_for(op)([IncompleteType()], op.make_attrs(**attrs), Ctx()) is None, name
    for name in ("concatenate", "stack", "meshgrid"):
        op = get_op(name)
        assert relation_for(op)([IncompleteType()], op.make_attrs(), Ctx()) is None
        partly = TupleType([f32(2), IncompleteType()])
        assert relation_for(op)([partly], op.make_attrs(), Ctx()) is None
    op = get_op("reshape")
    n = ShapeVar("n")
    # n * 2 is not a dimension: wait while n may still be bound, `?` at the end
    attrs = op.make_attrs(newshape=[-3])
    assert relation_for(op)([f32(n, 2)], attrs, Ctx(final=False)) is None
    assert relation_for(op)([f32(n, 2)], attrs, Ctx(final=True)) == f32(ANY)
