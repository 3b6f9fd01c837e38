"""Reference convolutions checked against explicit loops over output positions."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.runtime import EvalError
from relay.backend.runtime.op_impls import IMPLS
from relay.backend.runtime.op_impls.conv import winograd_g
from relay.lang import get_op


def call(name, *args, **attrs):
    op = get_op(name)
    return IMPLS[op](list(args), op.make_attrs(**attrs))


def conv_loops(x, w, strides, before, after, dilation, groups):
    """N-d grouped convolution (NC..., OI...) by loops over every output element and tap."""
    spatial, kernel = x.shape[2:], w.shape[2:]
    out_sp = [
        (n + b + a - (k - 1) * d - 1) // s + 1
        for n, b, a, k, d, s in zip(spatial, before, after, kernel, dilation, strides)
    ]
    ig, og = w.shape[1], w.shape[0] // groups
    out = np.zeros((x.shape[0], w.shape[0], *out_sp))
    for b, oc, *o in itertools.product(*map(range, out.shape)):
        g = oc // og
        total = 0.0
        for ic in range(ig):
            for tap in itertools.product(*map(range, kernel)):
                src = [
                    oi * s + t * d - bf
                    for oi, s, t, d, bf in zip(o, strides, tap, dilation, before)
                ]
                if all(0 <= p < n for p, n in zip(src, spatial)):
                    total += float(x[(b, g * ig + ic, *src)]) * float(w[(oc, ic, *tap)])
        out[(b, oc, *o)] = total
    return out


def conv_transpose_loops(x, w, strides, before, after, output_padding, dilation, groups):
    """N-d transposed convolution by scattering every input element through the kernel."""
    spatial, kernel = x.shape[2:], w.shape[2:]
    cg, og = x.shape[1] // groups, w.shape[1]
    out_sp = [
        (n - 1) * s + d * (k - 1) + 1 - b - a + op
        for n, s, d, k, b, a, op in zip(
            spatial, strides, dilation, kernel, before, after, output_padding
        )
    ]
    out = np.zeros((x.shape[0], og * groups, *out_sp))
    for b, ic, *i in itertools.product(*map(range, x.shape)):
        g = ic // cg
        for oc in range(og):
            for tap in itertools.product(*map(range, kernel)):
                dst = [
                    ii * s + t * d - bf
                    for ii, s, t, d, bf in zip(i, strides, tap, dilation, before)
                ]
                if all(0 <= p < n for p, n in zip(dst, out_sp)):
                    out[(b, g * og + oc, *dst)] += float(x[(b, ic, *i)]) * float(w[(ic, oc, *tap)])
    return out


@settings(max_examples=20)
@given(
    st.integers(1, 2),
    st.integers(1, 2),
    st.integers(1, 2),
    st.integers(1, 3),
    st.lists(st.integers(0, 2), min_size=4, max_size=4),
    st.sampled_from([1, 2]),
    st.integers(0, 2**31),
)
def test_conv2d_matches_loops(sh, sw, dil, k, padding, groups, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(1, 4, 5, 6)).astype("float32")
    w = rng.normal(size=(4, 4 // groups, k, k)).astype("float32")
    out = call(
        "nn.conv2d", x, w, strides=[sh, sw], padding=padding, dilation=[dil, dil], groups=groups
    )
    want = conv_loops(x, w, (sh, sw), padding[:2], padding[2:], (dil, dil), groups)
    assert out.dtype == np.float32 and out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_padding_with_one_or_two_values():
    x = np.random.default_rng(0).normal(size=(1, 2, 4, 4)).astype("float32")
    w = np.random.default_rng(1).normal(size=(3, 2, 3, 3)).astype("float32")
    one = call("nn.conv2d", x, w, padding=[1])
    two = call("nn.conv2d", x, w, padding=[1, 0])
    np.testing.assert_allclose(one, conv_loops(x, w, (1, 1), (1, 1), (1, 1), (1, 1), 1), atol=1e-5)
    np.testing.assert_allclose(two, conv_loops(x, w, (1, 1), (1, 0), (1, 0), (1, 1), 1), atol=1e-5)
    with pytest.raises(EvalError):
        call("nn.conv2d", x, w, padding=[1, 1, 1])


def test_conv1d_and_conv3d_match_loops():
    rng = np.random.default_rng(2)
    x1 = rng.normal(size=(2, 3, 9)).astype("float32")
    w1 = rng.normal(size=(4, 3, 3)).astype("float32")
    out1 = call("nn.conv1d", x1, w1, strides=[2], padding=[2, 1], dilation=[2])
    np.testing.assert_allclose(
        out1, conv_loops(x1, w1, (2,), (2,), (1,), (2,), 1), rtol=1e-5, atol=1e-5
    )
    x3 = rng.normal(size=(1, 2, 4, 3, 5)).astype("float32")
    w3 = rng.normal(size=(2, 1, 2, 2, 3)).astype("float32")
    out3 = call("nn.conv3d", x3, w3, padding=[1, 0, 1, 0, 1, 1], groups=2, strides=[1, 2, 2])
    want3 = conv_loops(x3, w3, (1, 2, 2), (1, 0, 1), (0, 1, 1), (1, 1, 1), 2)
    np.testing.assert_allclose(out3, want3, rtol=1e-5, atol=1e-5)


def test_a_delta_kernel_is_the_identity():
    x = np.random.default_rng(3).normal(size=(2, 3, 5, 7)).astype("float32")
    w = np.zeros((3, 3, 3, 3), "float32")
    for c in range(3):
        w[c, c, 1, 1] = 1
    np.testing.assert_array_equal(call("nn.conv2d", x, w, padding=[1, 1]), x)


def test_layouts_nhwc_hwio_ohwi_and_out_layout():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(1, 3, 6, 5)).astype("float32")
    w = rng.normal(size=(4, 3, 3, 2)).astype("float32")
    ref = call("nn.conv2d", x, w, padding=[1, 0, 1, 1])
    nhwc = call(
        "nn.conv2d",
        x.transpose(0, 2, 3, 1),
        w.transpose(2, 3, 1, 0),
        padding=[1, 0, 1, 1],
        data_layout="NHWC",
        kernel_layout="HWIO",
    )
    np.testing.assert_allclose(nhwc, ref.transpose(0, 2, 3, 1), rtol=1e-6)
    ohwi = call(
        "nn.conv2d",
        x,
        w.transpose(0, 2, 3, 1),
        padding=[1, 0, 1, 1],
        kernel_layout="OHWI",
        out_layout="NHWC",
    )
    np.testing.assert_allclose(ohwi, ref.transpose(0, 2, 3, 1), rtol=1e-6)


def test_depthwise_forms_agree_with_loops():
    rng = np.random.default_rng(5)
    c, m = 3, 2
    x = rng.normal(size=(1, c, 5, 5)).astype("float32")
    w = rng.normal(size=(c * m, 1, 3, 3)).astype("float32")  # group conv form
    ref = conv_loops(x, w, (1, 1), (1, 1), (1, 1), (1, 1), c)
    np.testing.assert_allclose(call("nn.conv2d", x, w, padding=[1], groups=c), ref, atol=1e-5)
    # TVM's depthwise forms: OIHW (C, multiplier, ...) and NHWC + HWOI (..., C, multiplier)
    w_cm = w.reshape(c, m, 3, 3)
    np.testing.assert_allclose(call("nn.conv2d", x, w_cm, padding=[1], groups=c), ref, atol=1e-5)
    hwoi = w_cm.transpose(2, 3, 0, 1)
    out = call(
        "nn.conv2d",
        x.transpose(0, 2, 3, 1),
        hwoi,
        padding=[1],
        groups=c,
        data_layout="NHWC",
        kernel_layout="HWOI",
    )
    np.testing.assert_allclose(out, ref.transpose(0, 2, 3, 1), atol=1e-5)


def test_int8_inputs_accumulate_exactly_in_int32():
    x = np.full((1, 64, 3, 3), -128, "int8")
    w = np.full((2, 64, 3, 3), 127, "int8")
    out = call("nn.conv2d", x, w, out_dtype="int32")
    exact = -128 * 127 * 64 * 9
    assert out.dtype == np.int32 and (out == exact).all()
    narrow = call("nn.conv2d", x, w)  # out_dtype null: int8, wrapping
    assert (
        narrow.dtype == np.int8
        and (narrow == np.int8(exact % 256 - 256 if exact % 256 > 127 else exact % 256)).all()
    )
    mixed = call(
        "nn.conv2d",
        np.full((1, 1, 1, 1), 200, "uint8"),
        np.full((1, 1, 1, 1), -3, "int8"),
        out_dtype="int32",
    )
    assert mixed.tolist() == [[[[-600]]]]


def test_float16_stays_float16():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(1, 2, 4, 4)).astype("float16")
    w = rng.normal(size=(2, 2, 3, 3)).astype("float16")
    out = call("nn.conv2d", x, w, padding=[1])
    assert out.dtype == np.float16
    want = conv_loops(x, w, (1, 1), (1, 1), (1, 1), (1, 1), 1)
    np.testing.assert_allclose(out.astype("float64"), want, rtol=2e-3, atol=2e-3)
    assert call("nn.conv2d", x, w, out_dtype="float32").dtype == np.float32


@settings(max_examples=15)
@given(
    st.integers(1, 3),
    st.integers(0, 1),
    st.integers(1, 2),
    st.sampled_from([1, 2]),
    st.lists(st.integers(0, 1), min_size=4, max_size=4),
    st.integers(0, 2**31),
)
def test_conv2d_transpose_matches_scattering_loops(stride, out_pad, dil, groups, padding, seed):
    out_pad = min(out_pad, stride - 1)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(1, 2, 3, 4)).astype("float32")
    w = rng.normal(size=(2, 3, 3, 2)).astype("float32")  # IOHW: in 2, out 3 per group
    out = call(
        "nn.conv2d_transpose",
        x,
        w,
        strides=[stride, stride],
        padding=padding,
        output_padding=[out_pad, out_pad],
        dilation=[dil, dil],
        groups=groups,
    )
    want = conv_transpose_loops(
        x, w, (stride, stride), padding[:2], padding[2:], (out_pad, out_pad), (dil, dil), groups
    )
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_conv_transpose_is_the_adjoint_of_conv():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(1, 3, 7, 7))
    w = rng.normal(size=(4, 3, 3, 3))
    y = call("nn.conv2d", x, w, strides=[2, 2], padding=[1, 1])
    v = rng.normal(size=y.shape)
    back = call("nn.conv2d_transpose", v, w, strides=[2, 2], padding=[1, 1])
    assert back.shape == x.shape
    np.testing.assert_allclose(np.sum(y * v), np.sum(x * back), rtol=1e-10)


def test_conv1d_transpose_matches_loops():
    rng = np.random.default_rng(8)
    x = rng.normal(size=(2, 2, 5))
    w = rng.normal(size=(2, 3, 4))
    out = call("nn.conv1d_transpose", x, w, strides=[3], padding=[1], output_padding=[2])
    np.testing.assert_allclose(out, conv_transpose_loops(x, w, (3,), (1,), (1,), (2,), (1,), 1))


def test_conv2d_nchwc_is_conv2d_in_blocked_layouts():
    rng = np.random.default_rng(9)
    x = rng.normal(size=(1, 8, 5, 5)).astype("float32")
    w = rng.normal(size=(8, 8, 3, 3)).astype("float32")
    ref = call("nn.conv2d", x, w, padding=[1, 1])
    xb = call("layout_transform", x, src_layout="NCHW", dst_layout="NCHW4c")
    wb = call("layout_transform", w, src_layout="OIHW", dst_layout="OIHW4i4o")
    out = call(
        "nn.contrib_conv2d_NCHWc",
        xb,
        wb,
        padding=[1, 1],
        channels=8,
        kernel_size=[3, 3],
        data_layout="NCHW4c",
        kernel_layout="OIHW4i4o",
        out_layout="NCHW4c",
    )
    np.testing.assert_allclose(
        out,
        call("layout_transform", ref, src_layout="NCHW", dst_layout="NCHW4c"),
        rtol=1e-5,
        atol=1e-5,
    )


def test_winograd_matrix_g_for_f_2_3():
    want = [[1, 0, 0], [0.5, -0.5, 0.5], [0.5, 0.5, 0.5], [0, 0, 1]]
    np.testing.assert_allclose(winograd_g(2, 3), want)


@pytest.mark.parametrize("tile", [2, 4, 6])
def test_winograd_ops_compute_conv2d(tile):
    rng = np.random.default_rng(tile)
    x = rng.normal(size=(1, 3, 8, 8)).astype("float32")
    w = rng.normal(size=(5, 3, 3, 3)).astype("float32")
    u = call("nn.contrib_conv2d_winograd_weight_transform", w, tile_size=tile)
    alpha = tile + 2
    assert u.shape == (alpha, alpha, 5, 3) and u.dtype == np.float32
    g = winograd_g(tile, 3)
    np.testing.assert_allclose(
        u[:, :, 1, 2], g @ w[1, 2].astype("float64") @ g.T, rtol=1e-5, atol=1e-5
    )
    ref = call("nn.conv2d", x, w, padding=[1, 1])
    out = call(
        "nn.contrib_conv2d_winograd_without_weight_transform",
        x,
        u,
        tile_size=tile,
        padding=[1, 1],
        channels=5,
        kernel_size=[3, 3],
    )
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
    swapped = call(
        "nn.contrib_conv2d_winograd_without_weight_transform",
        x,
        u.transpose(0, 1, 3, 2),
        tile_size=tile,
        padding=[1, 1],
        channels=5,
        kernel_size=[3, 3],
    )
    np.testing.assert_allclose(swapped, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("tile", [2, 4])
def test_winograd_weight_transform_is_g_w_gt_for_every_channel_pair(tile):
    rng = np.random.default_rng(7)
    w = rng.normal(size=(6, 4, 3, 3)).astype("float32")
    u = call("nn.contrib_conv2d_winograd_weight_transform", w, tile_size=tile)
    g = winograd_g(tile, 3).astype("float32").astype("float64")
    expected = np.einsum("eh,nw,oihw->enoi", g, g, w.astype("float64")).astype("float32")
    np.testing.assert_allclose(u, expected, rtol=1e-6, atol=1e-6)
