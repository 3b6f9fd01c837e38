"""Relations of nn operators (dense, matmul, normalization, padding, resampling) vs numpy."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from relay.lang import (
    ANY,
    IncompleteType,
    ShapeVar,
    TensorType,
    TupleType,
    get_op,
)
from relay.testing.relations import StandaloneContext as Ctx
from relay.testing.relations import f32
from relay.testing.relations import op_call_type as call_type
from relay.testing.relations import op_type_error as type_error
from relay.typecheck import relation_for

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


# --------------------------------------------------------------------------- dense, matmul


@given(st.lists(st.integers(1, 3), max_size=2), st.integers(1, 5), st.integers(1, 5), st.data())
def test_dense_and_matmul_match_numpy(lead, k, n, data):
    x = np.zeros((*lead, k), dtype="float32")
    w = np.zeros((n, k), dtype="float32")
    expected = np.matmul(x, w.T).shape
    units = data.draw(st.sampled_from([None, n]))
    assert call_type("nn.dense", f32(*x.shape), f32(n, k), units=units) == f32(*expected)
    got = call_type("nn.matmul", f32(*x.shape), f32(k, n), units=units)
    assert got == f32(*np.matmul(x, w.T).shape)
    if lead:
        a = np.zeros((*lead[:-1], k, lead[-1]))  # transposed operand
        expected = np.matmul(np.swapaxes(a, -1, -2), w.T).shape
        got = call_type(
            "nn.matmul", f32(*a.shape), f32(n, k), units=None, transpose_a=True, transpose_b=True
        )
        assert got == f32(*expected)


def test_dense_int8_accumulates_into_out_dtype():
    data, weight = TensorType((4, 16), "int8"), TensorType((8, 16), "int8")
    assert call_type("nn.dense", data, weight, units=None, out_dtype="int32") == TensorType(
        (4, 8), "int32"
    )


def test_dense_infers_the_weight_from_units():
    op = get_op("nn.dense")
    ctx = Ctx()
    hole = IncompleteType()
    got = relation_for(op)([f32(3, 784), hole], op.make_attrs(units=10), ctx)
    assert got == f32(3, 10)
    assert ctx.bound[hole] == f32(10, 784)
    assert relation_for(op)([f32(3, 784), hole], op.make_attrs(units=None), Ctx()) is None
    assert (
        relation_for(op)([IncompleteType(), f32(10, 784)], op.make_attrs(units=None), ctx) is None
    )


def test_dense_errors_name_features_and_units():
    message = type_error("nn.dense", f32(8, 784), f32(10, 512), units=None)
    assert "nn.dense: the input has 784 features but the weight (10, 512) expects 512" in message
    message = type_error("nn.dense", f32(8, 784), f32(10, 784), units=20)
    assert "units=20, but the weight (10, 784) has 10 output units" in message
    assert "must have rank 2" in type_error("nn.dense", f32(8, 784), f32(784), units=None)
    message = type_error("nn.matmul", f32(2, 3), f32(4, 5), units=None)
    assert "`tensor_a` has 3 features but `tensor_b` (4, 5) expects 4" in message


@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 4), st.integers(1, 4), st.data())
def test_batch_matmul_matches_numpy(batch, i, k, j, data):
    xb = data.draw(st.sampled_from([1, batch]))
    yb = data.draw(st.sampled_from([1, batch]))
    ta, tb = data.draw(st.booleans()), data.draw(st.booleans())
    x = np.zeros((xb, k, i) if ta else (xb, i, k))
    y = np.zeros((yb, j, k) if tb else (yb, k, j))
    xa = np.swapaxes(x, 1, 2) if ta else x
    ya = np.swapaxes(y, 1, 2) if tb else y
    expected = np.matmul(xa, ya).shape
    got = call_type("nn.batch_matmul", f32(*x.shape), f32(*y.shape), transpose_a=ta, transpose_b=tb)
    assert got == f32(*expected)


def test_batch_matmul_errors_and_unknown_batch():
    assert "inner dimensions" in type_error("nn.batch_matmul", f32(1, 2, 3), f32(1, 4, 5))
    assert "batch dimensions" in type_error("nn.batch_matmul", f32(2, 2, 3), f32(3, 3, 5))
    got = call_type("nn.batch_matmul", f32(ANY, 2, 3), f32(4, 3, 5))
    assert got == f32(ANY, 2, 5)
    got = call_type("nn.contrib_dense_pack", f32(3, 16), f32(2, 16, 8), units=None)
    assert got == f32(3, 16)
    assert "expects 32" in type_error(
        "nn.contrib_dense_pack", f32(3, 16), f32(2, 8, 8, 4), units=None
    )


# --------------------------------------------------------------------------- per channel


@given(shapes, st.data())
def test_per_channel_parameters(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    c = shape[axis]
    x = f32(*shape)
    assert call_type("nn.bias_add", x, f32(c), axis=axis) == x
    assert call_type("nn.prelu", x, f32(c), axis=axis) == x
    stat = f32(c)
    got = call_type("nn.batch_norm", x, stat, stat, stat, stat, axis=axis)
    assert got == TupleType([x, stat, stat])
    assert call_type("nn.layer_norm", x, stat, stat, axis=axis) == x
    assert call_type("nn.instance_norm", x, stat, stat, axis=axis) == x
    assert call_type("nn.group_norm", x, stat, stat, axis=axis, num_groups=1) == x
    for name in ("nn.softmax", "nn.log_softmax", "nn.fast_softmax"):
        assert call_type(name, x, axis=axis) == x
    assert call_type("nn.l2_normalize", x, eps=1e-5, axis=[axis]) == x


def test_per_channel_parameters_are_inferred_and_checked():
    op = get_op("nn.batch_norm")
    ctx = Ctx()
    holes = [IncompleteType() for _ in range(4)]
    got = relation_for(op)([f32(2, 3, 5), *holes], op.make_attrs(), ctx)
    assert got == TupleType([f32(2, 3, 5), f32(3), f32(3)])
    assert all(ctx.bound[h] == f32(3) for h in holes)
    message = type_error("nn.bias_add", f32(1, 16, 4, 4), f32(8))
    assert "the bias must be `Tensor[(16), float32]`" in message
    assert "but it has type `Tensor[(8), float32]`" in message
    assert "gamma must be `Tensor[(4), float32]`" in type_error(
        "nn.layer_norm", f32(2, 4), f32(2), f32(4)
    )
    assert "num_groups=4 must be positive and divide the 6 channels" in type_error(
        "nn.group_norm", f32(2, 6, 3), f32(6), f32(6), num_groups=4
    )
    assert "axis 2 is out of range" in type_error("nn.softmax", f32(2, 3), axis=2)


def test_activations_and_tuples():
    x = f32(2, 3)
    assert call_type("nn.relu", x) == x
    assert call_type("nn.leaky_relu", x, alpha=0.1) == x
    assert call_type("nn.dropout", x) == TupleType([x, x])
    assert call_type("nn.lrn", f32(1, 4, 5, 5), size=3) == f32(1, 4, 5, 5)


@given(shapes)
def test_batch_flatten_and_losses(shape):
    x = np.zeros(shape)
    expected = x.reshape(shape[0], -1).shape
    assert call_type("nn.batch_flatten", f32(*shape)) == f32(*expected)
    assert call_type("nn.batch_flatten", f32(ANY, *shape[1:])) == f32(ANY, *expected[1:])
    if len(shape) == 2:
        assert call_type("nn.cross_entropy", f32(*shape), f32(*shape)) == f32()
        assert call_type("nn.cross_entropy_with_logits", f32(*shape), f32(*shape)) == f32()


def test_batch_flatten_with_unknown_rest_is_unknown():
    assert call_type("nn.batch_flatten", f32(2, ANY, 3)) == f32(2, ANY)
    assert "differ in shape" in type_error("nn.cross_entropy", f32(2, 3), f32(2, 4))


@given(shapes, st.data())
def test_fifo_buffer_matches_numpy(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    buffer = list(shape)
    buffer[axis] += data.draw(st.integers(1, 3))
    joined = np.concatenate([np.zeros(buffer), np.zeros(shape)], axis=axis)
    kept = np.take(joined, np.arange(joined.shape[axis] - buffer[axis], joined.shape[axis]), axis)
    assert call_type("nn.fifo_buffer", f32(*shape), f32(*buffer), axis=axis) == f32(*kept.shape)


def test_fifo_buffer_errors():
    assert "shorter than the buffer" in type_error("nn.fifo_buffer", f32(3, 2), f32(3, 2))
    assert "differ on axis 1" in type_error("nn.fifo_buffer", f32(1, 2), f32(3, 4))


# --------------------------------------------------------------------------- padding


@given(shapes, st.data())
def test_pad_matches_numpy(shape, data):
    widths = [(data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))) for _ in shape]
    x = np.zeros(shape)
    expected = np.pad(x, widths).shape
    assert call_type("nn.pad", f32(*shape), f32(), pad_width=widths) == f32(*expected)
    mode = data.draw(st.sampled_from(["SYMMETRIC", "REFLECT"]))
    if mode == "REFLECT":
        widths = [(min(a, d - 1), min(b, d - 1)) for (a, b), d in zip(widths, shape)]
    expected = np.pad(x, widths, mode=mode.lower()).shape
    got = call_type("nn.mirror_pad", f32(*shape), pad_width=widths, mode=mode)
    assert got == f32(*expected)


def test_pad_crops_with_negative_widths_and_reports_errors():
    x = np.zeros((5, 6))
    assert call_type("nn.pad", f32(5, 6), f32(), pad_width=[[-1, -2], [0, 1]]) == f32(
        x[1:-2].shape[0], 7
    )
    assert call_type("nn.pad", f32(ANY, 6), f32(), pad_width=[[1, 1], [1, 1]]) == f32(ANY, 8)
    assert "leaves a negative size" in type_error("nn.pad", f32(2), f32(), pad_width=[[-2, -1]])
    assert "pad_width has 1 pairs, but the input" in type_error(
        "nn.pad", f32(2, 3), f32(), pad_width=[[1, 1]]
    )
    assert "the pad value must be a scalar" in type_error(
        "nn.pad", f32(2), f32(1), pad_width=[[1, 1]]
    )
    assert "must not be negative" in type_error("nn.mirror_pad", f32(4), pad_width=[[-1, 0]])


# --------------------------------------------------------------------------- resampling


@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.integers(1, 3))
def test_upsampling_matches_numpy_repeat(h, w, sh, sw):
    x = np.zeros((1, 2, h, w))
    expected = x.repeat(sh, axis=2).repeat(sw, axis=3).shape
    got = call_type("nn.upsampling", f32(*x.shape), scale_h=float(sh), scale_w=float(sw))
    assert got == f32(*expected)
    nhwc = np.transpose(x, (0, 2, 3, 1)).repeat(sh, axis=1).repeat(sw, axis=2).shape
    got = call_type(
        "nn.upsampling", f32(1, h, w, 2), scale_h=float(sh), scale_w=float(sw), layout="NHWC"
    )
    assert got == f32(*nhwc)
    x3 = np.zeros((1, 2, h, w, h))
    expected = x3.repeat(sw, axis=2).repeat(sh, axis=3).repeat(sw, axis=4).shape
    got = call_type(
        "nn.upsampling3d", f32(*x3.shape), scale_d=float(sw), scale_h=float(sh), scale_w=float(sw)
    )
    assert got == f32(*expected)


def test_upsampling_rounds_fractional_sizes():
    assert call_type("nn.upsampling", f32(1, 1, 5, 3), scale_h=1.5, scale_w=0.5) == f32(1, 1, 8, 2)
    assert call_type("nn.upsampling", f32(1, 1, ANY, 3), scale_h=2.0, scale_w=2.0) == f32(
        1, 1, ANY, 6
    )


@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3), st.integers(1, 2))
def test_depth_to_space_round_trip_matches_numpy(block, h, w, c):
    n = 1
    x = np.zeros((n, c * block * block, h, w))
    d2s = (
        x.reshape(n, block, block, c, h, w)
        .transpose(0, 3, 4, 1, 5, 2)
        .reshape(n, c, h * block, w * block)
    )
    assert call_type("nn.depth_to_space", f32(*x.shape), block_size=block) == f32(*d2s.shape)
    s2d = (
        d2s.reshape(n, c, h, block, w, block)
        .transpose(0, 3, 5, 1, 2, 4)
        .reshape(n, c * block * block, h, w)
    )
    assert call_type("nn.space_to_depth", f32(*d2s.shape), block_size=block) == f32(*s2d.shape)


def test_resampling_errors():
    assert "the channel count (block_size=2): 6 is not divisible by 4" in type_error(
        "nn.depth_to_space", f32(1, 6, 2, 2), block_size=2
    )
    assert "the height (block_size=2): 3 is not divisible by 2" in type_error(
        "nn.space_to_depth", f32(1, 1, 3, 4), block_size=2
    )
    assert 'layout "NCW" must be convertible to NCHW' in type_error(
        "nn.upsampling", f32(1, 2, 3), scale_h=2.0, scale_w=2.0, layout="NCW"
    )


def test_unknown_inputs_wait():
    n = ShapeVar("n")
    assert call_type("nn.bias_add", f32(n, 3), f32(3)) == f32(n, 3)
    cases = {
        "nn.relu": {},
        "nn.softmax": {},
        "nn.batch_flatten": {},
        "nn.upsampling": {"scale_h": 2.0, "scale_w": 2.0},
        "nn.pad": {"pad_width": [[1, 1]]},
        "nn.bias_add": {},
    }
    for name, attrs in cases.items():
        op = get_op(name)
        made = op.make_attrs(**attrs) if op.attrs_schema else None
        args = [IncompleteType() for _ in range(op.num_inputs)]
        assert relation_for(op)(args, made, Ctx()) is None, name
