"""Compute definitions of convolutions (1-D/2-D/3-D, grouped, depthwise, transposed,
channel-blocked, Winograd) against the reference implementations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.runtime.op_impls import implementation_for
from relay.backend.te import ComputeOp, PlaceholderOp
from relay.lang import get_op
from relay.lang.types import TensorType
from relay.testing.compute_check import RandomArrays, check_compute

ARRAYS = RandomArrays(7, int_range=(-5, 6))
RNG = ARRAYS.rng
normal, ints = ARRAYS.normal, ARRAYS.ints


def layout(x, src, dst):
    """`x` converted between layouts with the reference `layout_transform`."""
    op = get_op("layout_transform")
    return implementation_for(op)([x], op.make_attrs(src_layout=src, dst_layout=dst))


# -------------------------------------------------------------------------------- conv2d


@settings(max_examples=25)
@given(
    strides=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    dilation=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    padding=st.lists(st.integers(0, 2), min_size=1, max_size=4).filter(lambda p: len(p) != 3),
    groups=st.sampled_from([1, 2]),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    seed=st.integers(0, 2**16),
)
def test_conv2d_nchw_strides_padding_dilation_groups(
    strides, dilation, padding, groups, kernel, seed
):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(1, 4, 7, 6)).astype("float32")
    w = rng.normal(size=(4, 4 // groups, *kernel)).astype("float32")
    (out,) = check_compute(
        "nn.conv2d", [x, w], strides=strides, padding=padding, dilation=dilation, groups=groups
    )
    assert out.op.tag == ("conv2d_nchw" if groups == 1 else "group_conv2d_nchw")


def test_conv2d_has_a_separate_pad_stage_and_one_reduction():
    (out,) = check_compute("nn.conv2d", [normal(1, 3, 5, 5), normal(4, 3, 3, 3)], padding=[1, 1])
    assert isinstance(out.op, ComputeOp) and len(out.op.reduce_axis) == 3
    (pad_tensor,) = out.op.input_tensors[:1]
    assert "pad" in pad_tensor.op.tag and pad_tensor.shape[2].value == 7
    assert out.op.attrs["workload"][0] == "conv2d"
    (unpadded,) = check_compute("nn.conv2d", [normal(1, 3, 5, 5), normal(4, 3, 3, 3)])
    assert all(isinstance(t.op, PlaceholderOp) for t in unpadded.op.input_tensors)


@pytest.mark.parametrize(
    ("data_layout", "kernel_layout", "out_layout"),
    [("NHWC", "HWIO", ""), ("NCHW", "OHWI", "NHWC"), ("NHWC", "OIHW", "NCHW")],
)
def test_conv2d_layouts(data_layout, kernel_layout, out_layout):
    x = normal(2, 3, 6, 5)
    w = normal(4, 3, 3, 2)
    (out,) = check_compute(
        "nn.conv2d",
        [layout(x, "NCHW", data_layout), layout(w, "OIHW", kernel_layout)],
        padding=[1, 0, 1, 1],
        strides=[2, 1],
        data_layout=data_layout,
        kernel_layout=kernel_layout,
        out_layout=out_layout,
    )
    assert out.op.tag == f"conv2d_{data_layout.lower()}"


def test_depthwise_forms():
    c, m = 3, 2
    x = normal(1, c, 5, 5)
    w = normal(c * m, 1, 3, 3)
    (out,) = check_compute("nn.conv2d", [x, w], padding=[1], groups=c)
    assert out.op.tag == "depthwise_conv2d_nchw"
    # TVM's multiplier forms (C, multiplier) in O and I, which our type relation rejects
    w_cm = w.reshape(c, m, 3, 3)
    check_compute(
        "nn.conv2d", [x, w_cm], padding=[1], groups=c, out_type=TensorType((1, 6, 5, 5), "float32")
    )
    (nhwc,) = check_compute(
        "nn.conv2d",
        [layout(x, "NCHW", "NHWC"), np.ascontiguousarray(w_cm.transpose(2, 3, 0, 1))],
        padding=[1],
        groups=c,
        data_layout="NHWC",
        kernel_layout="HWOI",
        out_type=TensorType((1, 5, 5, 6), "float32"),
    )
    assert nhwc.op.tag == "depthwise_conv2d_nhwc"


def test_int8_accumulates_in_int32_and_mixed_signs():
    x = ints(1, 16, 4, 4, dtype="int8", lo=-128, hi=128)
    w = ints(3, 16, 3, 3, dtype="int8", lo=-128, hi=128)
    check_compute("nn.conv2d", [x, w], padding=[1], out_dtype="int32")
    check_compute("nn.conv2d", [x, w], padding=[1])  # int8 accumulation wraps
    xu = ints(1, 4, 3, 3, dtype="uint8", lo=0, hi=256)
    check_compute(
        "nn.conv2d", [xu, ints(2, 4, 2, 2, dtype="int8", lo=-128, hi=128)], out_dtype="int32"
    )
    check_compute("nn.conv2d", [ints(1, 2, 5, 5), ints(2, 1, 3, 3)], groups=2, strides=[2, 2])


def test_float_data_with_float64_out_dtype():
    check_compute("nn.conv2d", [normal(1, 2, 4, 4), normal(2, 2, 3, 3)], out_dtype="float64")


# ------------------------------------------------------------------------- conv1d, conv3d


@pytest.mark.parametrize("data_layout", ["NCW", "NWC"])
def test_conv1d(data_layout):
    x = normal(2, 4, 9)
    w = normal(6, 2, 3)
    kernel_layout = "OIW" if data_layout == "NCW" else "WIO"
    (out,) = check_compute(
        "nn.conv1d",
        [layout(x, "NCW", data_layout), layout(w, "OIW", kernel_layout)],
        strides=[2],
        padding=[2, 1],
        dilation=[2],
        groups=2,
        data_layout=data_layout,
        kernel_layout=kernel_layout,
    )
    assert out.op.tag == f"group_conv1d_{data_layout.lower()}"
    check_compute("nn.conv1d", [ints(1, 3, 6), ints(2, 3, 2)], padding=[1])


@pytest.mark.parametrize("data_layout", ["NCDHW", "NDHWC"])
def test_conv3d(data_layout):
    x = normal(1, 4, 4, 5, 5)
    w = normal(2, 2, 2, 3, 2)
    kernel_layout = "OIDHW" if data_layout == "NCDHW" else "DHWIO"
    (out,) = check_compute(
        "nn.conv3d",
        [layout(x, "NCDHW", data_layout), layout(w, "OIDHW", kernel_layout)],
        padding=[1, 0, 1, 0, 1, 1],
        groups=2,
        strides=[1, 2, 2],
        data_layout=data_layout,
        kernel_layout=kernel_layout,
    )
    assert out.op.tag == f"group_conv3d_{data_layout.lower()}"
    check_compute("nn.conv3d", [ints(1, 2, 3, 3, 3), ints(2, 2, 2, 2, 2)], padding=[1])


# ---------------------------------------------------------------------------- transposed


@settings(max_examples=20)
@given(
    stride=st.integers(1, 3),
    out_pad=st.integers(0, 2),
    dil=st.integers(1, 2),
    groups=st.sampled_from([1, 2]),
    padding=st.lists(st.integers(0, 2), min_size=1, max_size=4).filter(lambda p: len(p) != 3),
    seed=st.integers(0, 2**16),
)
def test_conv2d_transpose(stride, out_pad, dil, groups, padding, seed):
    if out_pad >= max(stride, dil):
        out_pad = 0
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(1, 4, 4, 3)).astype("float32")
    w = rng.normal(size=(4, 6 // groups, 3, 2)).astype("float32")
    (out,) = check_compute(
        "nn.conv2d_transpose",
        [x, w],
        strides=[stride, stride],
        output_padding=[out_pad, out_pad],
        dilation=[dil, dil],
        groups=groups,
        padding=padding,
        channels=6,
    )
    assert out.op.tag == "conv2d_transpose_nchw"


def test_conv1d_transpose_and_integers():
    check_compute(
        "nn.conv1d_transpose",
        [normal(2, 3, 5), normal(3, 2, 4)],
        strides=[3],
        padding=[1],
        output_padding=[2],
    )
    check_compute("nn.conv1d_transpose", [ints(1, 2, 4), ints(2, 3, 3)], strides=[2])
    check_compute(
        "nn.conv2d_transpose",
        [
            ints(1, 2, 3, 3, dtype="int8", lo=-128, hi=128),
            ints(2, 2, 2, 2, dtype="int8", lo=-128, hi=128),
        ],
        strides=[2, 2],
        out_dtype="int32",
    )


def test_conv2d_transpose_nhwc():
    x = normal(1, 3, 4, 4)
    w = normal(3, 2, 3, 3)
    check_compute(
        "nn.conv2d_transpose",
        [layout(x, "NCHW", "NHWC"), w],
        strides=[2, 2],
        padding=[1, 1],
        data_layout="NHWC",
        kernel_layout="IOHW",
    )


# ---------------------------------------------------------------------- blocked, winograd


def test_conv2d_nchwc():
    x = normal(1, 8, 5, 5)
    w = normal(8, 8, 3, 3)
    (out,) = check_compute(
        "nn.contrib_conv2d_NCHWc",
        [layout(x, "NCHW", "NCHW4c"), layout(w, "OIHW", "OIHW4i4o")],
        padding=[1, 1],
        channels=8,
        kernel_size=[3, 3],
        data_layout="NCHW4c",
        kernel_layout="OIHW4i4o",
        out_layout="NCHW4c",
    )
    assert out.op.tag == "conv2d_NCHWc"
    check_compute(
        "nn.contrib_conv2d_NCHWc",
        [layout(x, "NCHW", "NCHW2c"), layout(w, "OIHW", "OIHW2i4o")],
        strides=[2, 2],
        channels=8,
        kernel_size=[3, 3],
        data_layout="NCHW2c",
        kernel_layout="OIHW2i4o",
        out_layout="NCHW8c",
    )


@pytest.mark.parametrize("tile", [2, 4])
def test_winograd_pair(tile):
    x = normal(1, 3, 6, 6)
    w = normal(4, 3, 3, 3)
    (u,) = check_compute("nn.contrib_conv2d_winograd_weight_transform", [w], tile_size=tile)
    alpha = tile + 2
    assert u.shape[0].value == alpha
    ref_u = implementation_for(get_op("nn.contrib_conv2d_winograd_weight_transform"))(
        [w], get_op("nn.contrib_conv2d_winograd_weight_transform").make_attrs(tile_size=tile)
    )
    for transformed in (ref_u, np.ascontiguousarray(ref_u.transpose(0, 1, 3, 2))):
        check_compute(
            "nn.contrib_conv2d_winograd_without_weight_transform",
            [x, transformed],
            tile_size=tile,
            padding=[1, 1],
            channels=4,
            kernel_size=[3, 3],
        )
