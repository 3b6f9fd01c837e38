"""Reference implementations of shape and layout transforms and constructors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.runtime import EvalError
from relay.backend.runtime.op_impls import IMPLS
from relay.lang import get_op


def call(name, *args, **attrs):
    op = get_op(name)
    return IMPLS[op](list(args), op.make_attrs(**attrs))


X = np.arange(24, dtype="float32").reshape(2, 3, 4)


@pytest.mark.parametrize(
    "newshape, allowzero, want",
    [
        ([0, -1], False, (2, 12)),
        ([-1], False, (24,)),
        ([-2], False, (2, 3, 4)),
        ([2, 0, 4], False, (2, 3, 4)),
        ([-3, 4], False, (6, 4)),
        ([2, -3], False, (2, 12)),
        ([-4, 1, 2, -2], False, (1, 2, 3, 4)),
        ([-4, -1, 2, -3], False, (1, 2, 12)),
        ([0, 0, 2, 2], False, (2, 3, 2, 2)),
        ([4, -1, 2], False, (4, 3, 2)),
        ([0, -2], False, (2, 3, 4)),
        ([-3, -2], False, (6, 4)),
    ],
)
def test_reshape_special_values_worked_out_by_hand(newshape, allowzero, want):
    out = call("reshape", X, newshape=newshape, allowzero=allowzero)
    assert out.shape == want
    np.testing.assert_array_equal(out.ravel(), X.ravel())


def test_reshape_allowzero_keeps_a_literal_zero_and_bad_shapes_fail():
    empty = np.zeros((0, 3), "int32")
    assert call("reshape", empty, newshape=[3, 0], allowzero=True).shape == (3, 0)
    assert call("reshape", empty, newshape=[0, 3]).shape == (0, 3)
    with pytest.raises(EvalError):
        call("reshape", X, newshape=[5, -1])
    with pytest.raises(EvalError):
        call("reshape", X, newshape=[-1, -1])


@settings(max_examples=60)
@given(
    st.integers(0, 8),
    st.integers(-10, 10) | st.none(),
    st.integers(-10, 10) | st.none(),
    st.integers(-3, 3).filter(lambda s: s != 0),
)
def test_strided_slice_matches_python_slicing(n, begin, end, stride):
    data = np.arange(n, dtype="int32")
    b = (0 if stride > 0 else 2**62) if begin is None else begin
    e = (2**62 if stride > 0 else -(2**62)) if end is None else end
    start, stop, _ = slice(b, e, stride).indices(n)
    wrong_way = start > stop if stride > 0 else stop > start
    if wrong_way:  # TVM rejects a range that runs against its stride
        with pytest.raises(EvalError):
            call("strided_slice", data, begin=[b], end=[e], strides=[stride], axes=None)
        return
    out = call("strided_slice", data, begin=[b], end=[e], strides=[stride], axes=None)
    assert out.tolist() == data[b:e:stride].tolist()


def test_strided_slice_partial_specs_axes_and_size_mode():
    # missing begin/end/strides cover the remaining axes with stride 1
    assert call("strided_slice", X, begin=[1], end=[2], strides=None, axes=None).shape == (1, 3, 4)
    out = call("strided_slice", X, begin=[0, 2], end=[2, 0], strides=[1, -1], axes=None)
    np.testing.assert_array_equal(out, X[0:2, 2:0:-1])
    out = call("strided_slice", X, begin=[3, 1], end=[0, -3], strides=[-2, -1], axes=[2, 0])
    np.testing.assert_array_equal(out, X[1::-1, :, 3:0:-2])
    with pytest.raises(EvalError):  # -1 is the last element, so 1 .. -1 runs the wrong way
        call("strided_slice", X, begin=[1], end=[-1], strides=[-1], axes=[2])
    sized = call(
        "strided_slice",
        X,
        begin=[0, 1, 1],
        end=[-1, 2, 2],
        strides=[5],
        slice_mode="size",
        axes=None,
    )
    np.testing.assert_array_equal(sized, X[:, 1:3, 1:3])
    clamped = call("strided_slice", X, begin=[-100], end=[100], strides=[1], axes=[1])
    np.testing.assert_array_equal(clamped, X)
    with pytest.raises(EvalError):
        call("strided_slice", X, begin=[0], end=[1], strides=[0], axes=[0])


def test_transpose_squeeze_expand_dims():
    np.testing.assert_array_equal(call("transpose", X, axes=None), X.transpose())
    np.testing.assert_array_equal(call("transpose", X, axes=[-1, 0, 1]), X.transpose(2, 0, 1))
    y = np.zeros((1, 3, 1, 2), "int8")
    assert call("squeeze", y, axis=None).shape == (3, 2)
    assert call("squeeze", y, axis=[-2]).shape == (1, 3, 2)
    assert call("squeeze", y, axis=[]).shape == (1, 3, 1, 2)
    with pytest.raises(EvalError):
        call("squeeze", y, axis=[1])
    assert call("expand_dims", X, axis=-1, num_newaxis=2).shape == (2, 3, 4, 1, 1)
    assert call("expand_dims", X, axis=-4).shape == (1, 2, 3, 4)
    assert call("expand_dims", X, axis=1, num_newaxis=0).shape == (2, 3, 4)


def test_concatenate_stack_split():
    a, b = X, X + 100
    np.testing.assert_array_equal(call("concatenate", (a, b), axis=-2), np.concatenate([a, b], 1))
    np.testing.assert_array_equal(call("stack", (a, b), axis=-1), np.stack([a, b], -1))
    with pytest.raises(EvalError):
        call("concatenate", (a, a.astype("int32")), axis=0)
    parts = call("split", X, indices_or_sections=2, axis=-1)
    assert isinstance(parts, tuple) and [p.shape for p in parts] == [(2, 3, 2)] * 2
    parts = call("split", X, indices_or_sections=[1, 3], axis=2)
    assert [p.shape[2] for p in parts] == [1, 2, 1]
    np.testing.assert_array_equal(parts[1], X[:, :, 1:3])
    with pytest.raises(EvalError):
        call("split", X, indices_or_sections=3, axis=2)


def test_tile_repeat_reverse_broadcast():
    v = np.array([[1, 2]], "int32")
    assert call("tile", v, reps=[2, 2]).tolist() == [[1, 2, 1, 2], [1, 2, 1, 2]]
    assert call("tile", v, reps=[2, 1, 1]).shape == (2, 1, 2)
    assert call("repeat", v, repeats=2, axis=-1).tolist() == [[1, 1, 2, 2]]
    assert call("reverse", v, axis=1).tolist() == [[2, 1]]
    assert call("broadcast_to", v, shape=[3, 2]).tolist() == [[1, 2]] * 3
    assert call("broadcast_to_like", v, np.zeros((2, 1, 2))).shape == (2, 1, 2)
    with pytest.raises(EvalError):
        call("broadcast_to", v, shape=[3])


def test_collapse_sum_like_sums_the_broadcast_axes():
    x = np.arange(6, dtype="int32").reshape(2, 3)
    assert call("collapse_sum_like", x, np.zeros(3)).tolist() == [3, 5, 7]
    assert call("collapse_sum_like", x, np.zeros((2, 1))).tolist() == [[3], [12]]
    assert call("collapse_sum_like", x, np.zeros(())).tolist() == 15
    big = np.full((300,), 1, "int8")
    assert call("collapse_sum_like", big, np.zeros(1)).tolist() == [300 - 256]


def test_reshape_like_slice_like_shape_of_ndarray_size():
    like = np.zeros((6, 2, 2))
    assert call("reshape_like", X, like).shape == (6, 2, 2)
    assert call("reshape_like", X, np.zeros((3, 4)), lhs_begin=1, rhs_begin=0).shape == (2, 3, 4)
    assert call("reshape_like", X, np.zeros((12, 5)), lhs_begin=1, rhs_end=1).shape == (2, 12)
    np.testing.assert_array_equal(call("slice_like", X, np.zeros((1, 2)), axes=None), X[:1, :2])
    np.testing.assert_array_equal(
        call("slice_like", X, np.zeros((5, 5, 3)), axes=[-1]), X[:, :, :3]
    )
    s = call("shape_of", X)
    assert s.dtype == np.int32 and s.tolist() == [2, 3, 4]
    assert call("shape_of", X, dtype="int64").dtype == np.int64
    n = call("ndarray_size", X, dtype="int64")
    assert n.shape == () and n.dtype == np.int64 and n.tolist() == 24


def test_constructors_and_like_ops():
    z = call("zeros", shape=[2, 3], dtype="int8")
    assert z.dtype == np.int8 and z.shape == (2, 3) and not z.any()
    assert call("ones", shape=[], dtype="float16").tolist() == 1.0
    assert call("ones", shape=[2], dtype=None).dtype == np.float32
    f = call("full", np.array(2.7, "float32"), shape=[2], dtype="int32")
    assert f.dtype == np.int32 and f.tolist() == [2, 2]
    fl = call("full_like", np.zeros((2, 2), "float16"), np.array(3, "int32"))
    assert fl.dtype == np.float16 and fl.tolist() == [[3, 3], [3, 3]]


def _arange(start, stop, step, dtype):
    s = [np.array(v, dtype) for v in (start, stop, step)]
    return call("arange", *s, start=None, stop=None, step=None, dtype=dtype)


def test_arange_counts_and_values():
    assert _arange(0, 5, 2, "int32").tolist() == [0, 2, 4]
    assert _arange(5, 0, -2, "int32").tolist() == [5, 3, 1]
    assert _arange(0, 0, 1, "int32").tolist() == []
    assert _arange(3, 0, 1, "int64").tolist() == []
    out = _arange(0, 1, 0.25, "float32")
    assert out.dtype == np.float32 and out.tolist() == [0, 0.25, 0.5, 0.75]
    assert len(_arange(0, 1, 0.3, "float32")) == 4
    with pytest.raises(EvalError):
        _arange(0, 1, 0, "int32")


def test_meshgrid_ij_and_xy():
    a, b = np.arange(3, dtype="int32"), np.arange(2, dtype="int32")
    gi = call("meshgrid", (a, b), indexing="ij")
    assert [g.shape for g in gi] == [(3, 2), (3, 2)]
    assert gi[0][:, 0].tolist() == [0, 1, 2] and gi[1][0].tolist() == [0, 1]
    gx = call("meshgrid", (a, b), indexing="xy")
    assert [g.shape for g in gx] == [(2, 3), (2, 3)]
    assert gx[0][0].tolist() == [0, 1, 2] and gx[1][:, 0].tolist() == [0, 1]


def test_layout_transform_to_and_from_a_blocked_layout():
    x = np.random.default_rng(0).normal(size=(2, 8, 3, 5)).astype("float32")
    blocked = call("layout_transform", x, src_layout="NCHW", dst_layout="NCHW4c")
    assert blocked.shape == (2, 2, 3, 5, 4)
    for n, co, h, w, ci in [(0, 1, 2, 4, 3), (1, 0, 0, 0, 1), (1, 1, 1, 3, 0)]:
        assert blocked[n, co, h, w, ci] == x[n, co * 4 + ci, h, w]
    back = call("layout_transform", blocked, src_layout="NCHW4c", dst_layout="NCHW")
    np.testing.assert_array_equal(back, x)
    nhwc = call("layout_transform", x, src_layout="NCHW", dst_layout="NHWC")
    np.testing.assert_array_equal(nhwc, x.transpose(0, 2, 3, 1))
    rebl = call("layout_transform", blocked, src_layout="NCHW4c", dst_layout="NCHW2c")
    np.testing.assert_array_equal(rebl, x.reshape(2, 4, 2, 3, 5).transpose(0, 1, 3, 4, 2))


def test_layout_transform_of_a_weight_and_with_padding():
    w = np.arange(8 * 4 * 3 * 3, dtype="int32").reshape(8, 4, 3, 3)
    packed = call("layout_transform", w, src_layout="OIHW", dst_layout="OIHW2i4o")
    assert packed.shape == (2, 2, 3, 3, 2, 4)
    for o, i, h, kw in [(5, 3, 1, 2), (0, 0, 0, 0), (7, 2, 2, 1)]:
        assert packed[o // 4, i // 2, h, kw, i % 2, o % 4] == w[o, i, h, kw]
    x = np.arange(1 * 3 * 2 * 2, dtype="float32").reshape(1, 3, 2, 2) + 1
    padded = call("layout_transform", x, src_layout="NCHW", dst_layout="NCHW2c")
    assert padded.shape == (1, 2, 2, 2, 2)
    assert (padded[0, 1, :, :, 1] == 0).all() and (padded[0, 1, :, :, 0] == x[0, 2]).all()


@settings(max_examples=25)
@given(st.integers(1, 3), st.sampled_from([1, 2, 4]), st.integers(1, 3))
def test_layout_transform_round_trips(outer, factor, hw):
    x = np.random.default_rng(outer * 7 + factor).normal(size=(2, outer * factor, hw, 2))
    there = call("layout_transform", x, src_layout="NCHW", dst_layout=f"NHW{factor}cC")
    assert there.shape == (2, hw, 2, factor, outer)
    back = call("layout_transform", there, src_layout=f"NHW{factor}cC", dst_layout="NCHW")
    np.testing.assert_array_equal(back, x)
