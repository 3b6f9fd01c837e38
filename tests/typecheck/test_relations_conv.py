"""Relations of convolutions against a naive numpy convolution (strides, padding, dilation,
groups, layouts, transposes) and against the closed-form output size."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import sliding_window_view
from relay.lang import ANY, IncompleteType, ShapeVar, TensorType, get_op
from relay.testing.relations import StandaloneContext as Ctx
from relay.testing.relations import f32
from relay.testing.relations import op_call_type as call_type
from relay.testing.relations import op_type_error as type_error
from relay.typecheck import relation_for

NAMES = {1: "nn.conv1d", 2: "nn.conv2d", 3: "nn.conv3d"}
TRANSPOSED = {1: "nn.conv1d_transpose", 2: "nn.conv2d_transpose"}


def naive_conv(x, w, strides, before, after, dilation, groups):
    """Direct convolution of NC... data with an OI... weight, by numpy windows."""
    n = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0), *zip(before, after)])
    extent = [(k - 1) * d + 1 for k, d in zip(w.shape[2:], dilation)]
    win = sliding_window_view(x, extent, axis=tuple(range(2, 2 + n)))
    win = win[(..., *(slice(None, None, d) for d in dilation))]
    win = win[(slice(None), slice(None), *(slice(None, None, s) for s in strides))]
    batch, channels = x.shape[:2]
    out_channels, per_group = w.shape[:2]
    xg = win.reshape(batch, groups, channels // groups, *win.shape[2:])
    wg = w.reshape(groups, out_channels // groups, per_group, *w.shape[2:])
    pos, ker = "xyz"[:n], "uvw"[:n]
    out = np.einsum(f"ngc{pos}{ker},goc{ker}->ngo{pos}", xg, wg)
    return out.reshape(batch, out_channels, *out.shape[3:])


def naive_conv_transpose(x, w, strides, before, after, output_padding, dilation, groups):
    """Direct transposed convolution (scatter of every input element) of NC... data with an
    IO... weight; the result is cropped by the padding."""
    batch, cin = x.shape[:2]
    per_group = w.shape[1]
    ks = w.shape[2:]
    extent = [(k - 1) * d + 1 for k, d in zip(ks, dilation)]
    full = [
        (size - 1) * s + e + p
        for size, s, e, p in zip(x.shape[2:], strides, extent, output_padding)
    ]
    out = np.zeros((batch, per_group * groups, *full))
    cin_g = cin // groups
    for pos in np.ndindex(*x.shape[2:]):
        for c in range(cin):
            g = c // cin_g
            for kpos in np.ndindex(*ks):
                at = tuple(p * s + k * d for p, s, k, d in zip(pos, strides, kpos, dilation))
                out[(slice(None), slice(g * per_group, (g + 1) * per_group), *at)] += (
                    x[(slice(None), c, *pos)][:, None] * w[(c, slice(None), *kpos)]
                )
    crop = tuple(slice(b, size - a) for b, a, size in zip(before, after, full))
    return out[(slice(None), slice(None), *crop)]


@st.composite
def conv_case(draw, n):
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    cin = groups * draw(st.integers(1, 2))
    cout = groups * draw(st.integers(1, 2))
    ks = [draw(st.integers(1, 3)) for _ in range(n)]
    dilation = [draw(st.integers(1, 2)) for _ in range(n)]
    strides = [draw(st.integers(1, 3)) for _ in range(n)]
    before = [draw(st.integers(0, 2)) for _ in range(n)]
    after = [draw(st.integers(0, 2)) for _ in range(n)]
    sizes = [
        draw(st.integers(max(1, (k - 1) * d + 1 - b - a), 6))
        for k, d, b, a in zip(ks, dilation, before, after)
    ]
    form = draw(st.sampled_from(["one", "per_axis", "both"]))
    if form == "one" or (form == "per_axis" and before != after):
        before = after = [before[0]] * n
        padding = [before[0]]
    elif form == "per_axis":
        padding = before
    else:
        padding = before + after
    return groups, cin, cout, ks, dilation, strides, before, after, padding, sizes


@settings(max_examples=25)
@given(st.sampled_from([1, 2, 3]), st.data())
def test_conv_matches_naive_numpy(n, data):
    groups, cin, cout, ks, dilation, strides, before, after, padding, sizes = data.draw(
        conv_case(n)
    )
    x = np.ones((1, cin, *sizes), dtype="float32")
    w = np.ones((cout, cin // groups, *ks), dtype="float32")
    expected = naive_conv(x, w, strides, before, after, dilation, groups).shape
    closed_form = tuple(
        (s + b + a - ((k - 1) * d + 1)) // st_ + 1
        for s, b, a, k, d, st_ in zip(sizes, before, after, ks, dilation, strides)
    )
    assert expected[2:] == closed_form
    attrs = dict(strides=strides, padding=padding, dilation=dilation, groups=groups)
    assert call_type(NAMES[n], f32(*x.shape), f32(*w.shape), **attrs) == f32(*expected)
    # the same call with channels and kernel_size given infers the weight
    op = get_op(NAMES[n])
    ctx, hole = Ctx(final=True), IncompleteType()
    made = op.make_attrs(channels=cout, kernel_size=ks, **attrs)
    assert relation_for(op)([f32(*x.shape), hole], made, ctx) == f32(*expected)
    assert ctx.bound[hole] == f32(*w.shape)


@settings(max_examples=25)
@given(st.sampled_from([1, 2]), st.data())
def test_conv_transpose_matches_naive_numpy(n, data):
    groups, cin, cout, ks, dilation, strides, before, after, padding, sizes = data.draw(
        conv_case(n)
    )
    output_padding = [data.draw(st.integers(0, s - 1)) for s in strides]
    x = np.ones((1, cin, *sizes), dtype="float32")
    w = np.ones((cin, cout // groups, *ks), dtype="float32")
    extent = [(k - 1) * d + 1 for k, d in zip(ks, dilation)]
    full = [(s - 1) * st_ + e for s, st_, e in zip(sizes, strides, extent)]
    if any(f + op - b - a < 1 for f, op, b, a in zip(full, output_padding, before, after)):
        return  # the padding would crop everything away
    expected = naive_conv_transpose(
        x, w, strides, before, after, output_padding, dilation, groups
    ).shape
    attrs = dict(
        strides=strides,
        padding=padding,
        dilation=dilation,
        groups=groups,
        output_padding=output_padding,
    )
    got = call_type(TRANSPOSED[n], f32(*x.shape), f32(*w.shape), **attrs)
    assert got == f32(*expected)
    op = get_op(TRANSPOSED[n])
    ctx, hole = Ctx(), IncompleteType()
    made = op.make_attrs(channels=cout, kernel_size=ks, **attrs)
    assert relation_for(op)([f32(*x.shape), hole], made, ctx) == f32(*expected)
    assert ctx.bound[hole] == f32(*w.shape)


@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 3), st.integers(1, 2))
def test_nhwc_hwio_and_depthwise_layouts(h, w, k, stride):
    h, w = h + k, w + k
    x = np.ones((1, h, w, 4), dtype="float32")
    weight = np.ones((k, k, 4, 6), dtype="float32")  # HWIO
    ref = naive_conv(
        x.transpose(0, 3, 1, 2),
        weight.transpose(3, 2, 0, 1),
        [stride] * 2,
        [0, 0],
        [0, 0],
        [1, 1],
        1,
    )
    expected = ref.transpose(0, 2, 3, 1).shape
    got = call_type(
        "nn.conv2d",
        f32(*x.shape),
        f32(*weight.shape),
        strides=[stride, stride],
        data_layout="NHWC",
        kernel_layout="HWIO",
    )
    assert got == f32(*expected)
    depthwise = np.ones((k, k, 4, 1), dtype="float32")  # HWOI
    ref = naive_conv(
        x.transpose(0, 3, 1, 2), depthwise.transpose(2, 3, 0, 1), [1, 1], [0, 0], [0, 0], [1, 1], 4
    )
    got = call_type(
        "nn.conv2d",
        f32(*x.shape),
        f32(*depthwise.shape),
        groups=4,
        data_layout="NHWC",
        kernel_layout="HWOI",
    )
    assert got == f32(*ref.transpose(0, 2, 3, 1).shape)


def test_depthwise_channel_multiplier_and_blocked_layouts():
    # OIHW weight (C, multiplier, kh, kw) of a depthwise conv with channels = C * multiplier
    got = call_type(
        "nn.conv2d", f32(1, 4, 8, 8), f32(4, 2, 3, 3), groups=4, channels=8, kernel_size=[3, 3]
    )
    assert got == f32(1, 8, 6, 6)
    got = call_type(
        "nn.conv2d",
        f32(1, 2, 8, 8, 8),
        f32(4, 2, 3, 3, 8, 8),
        data_layout="NCHW8c",
        kernel_layout="OIHW8i8o",
        padding=[1, 1],
    )
    assert got == f32(1, 4, 8, 8, 8)
    got = call_type(
        "nn.contrib_conv2d_NCHWc",
        f32(1, 2, 8, 8, 8),
        f32(4, 2, 3, 3, 8, 8),
        channels=32,
        kernel_size=[3, 3],
        data_layout="NCHW8c",
        kernel_layout="OIHW8i8o",
        out_layout="NCHW16c",
    )
    assert got == f32(1, 2, 6, 6, 16)


def test_int8_convolution_accumulates_into_out_dtype():
    data, weight = TensorType((1, 3, 5, 5), "int8"), TensorType((4, 3, 3, 3), "int8")
    got = call_type("nn.conv2d", data, weight, out_dtype="int32")
    assert got == TensorType((1, 4, 3, 3), "int32")
    assert call_type("nn.conv2d", data, weight) == TensorType((1, 4, 3, 3), "int8")


def test_winograd_ops():
    got = call_type("nn.contrib_conv2d_winograd_weight_transform", f32(16, 3, 3, 3), tile_size=4)
    assert got == f32(6, 6, 16, 3)
    got = call_type(
        "nn.contrib_conv2d_winograd_without_weight_transform",
        f32(1, 3, 8, 8),
        f32(6, 6, 16, 3),
        tile_size=4,
        channels=16,
        kernel_size=[3, 3],
        padding=[1, 1],
    )
    assert got == f32(1, 16, 8, 8)
    assert "channels and kernel_size must be given" in type_error(
        "nn.contrib_conv2d_winograd_without_weight_transform",
        f32(1, 3, 8, 8),
        f32(6, 6, 16, 3),
        tile_size=4,
    )


def test_conv_errors_say_what_disagrees():
    message = type_error("nn.conv2d", f32(1, 3, 8, 8), f32(16, 4, 3, 3))
    assert "nn.conv2d: the input has 3 channels but the weight (16, 4, 3, 3) expects 4" in message
    message = type_error("nn.conv2d", f32(1, 8, 8, 8), f32(16, 2, 3, 3), groups=2)
    assert (
        "the input has 8 channels in 2 groups but the weight (16, 2, 3, 3) expects 2 per group"
        in message
    )
    message = type_error("nn.conv2d", f32(1, 3, 8, 8), f32(16, 3, 3, 3), kernel_size=[5, 5])
    assert "kernel_size=[5, 5], but the weight (16, 3, 3, 3) has a 3x3 kernel" in message
    message = type_error("nn.conv2d", f32(1, 3, 8, 8), f32(16, 3, 3, 3), channels=8)
    assert "the weight (16, 3, 3, 3) has 16 output channels, but channels=8" in message
    assert "do not divide into groups=2" in type_error(
        "nn.conv2d", f32(1, 3, 8, 8), f32(16, 1, 3, 3), groups=2
    )
    assert "smaller than the kernel's extent 5" in type_error(
        "nn.conv2d", f32(1, 3, 2, 8), f32(16, 3, 3, 3), dilation=[2, 1]
    )
    assert "padding=[1, 1, 1] must have 1, 2 or 4 values" in type_error(
        "nn.conv2d", f32(1, 3, 8, 8), f32(16, 3, 3, 3), padding=[1, 1, 1]
    )
    assert 'data_layout "NCW" must be convertible to NCHW' in type_error(
        "nn.conv2d", f32(1, 3, 8), f32(16, 3, 3, 3), data_layout="NCW"
    )
    assert "rank 3" in type_error("nn.conv2d", f32(1, 3, 8), f32(16, 3, 3, 3))
    message = type_error("nn.conv2d_transpose", f32(1, 4, 8, 8), f32(3, 2, 3, 3))
    assert "the input has 4 channels but the weight (3, 2, 3, 3) expects 3" in message


def test_unknown_dims_and_inputs():
    n = ShapeVar("n")
    got = call_type("nn.conv2d", f32(n, 3, ANY, 8), f32(16, 3, 3, 3))
    assert got == f32(n, 16, ANY, 6)
    got = call_type("nn.conv2d", f32(1, 3, n, 8), f32(16, 3, 3, 3), padding=[1, 1])
    assert got == f32(1, 16, ANY, 8)  # n + 2 - 3 + 1 is not a dimension: `?` in the end
    op = get_op("nn.conv2d")
    attrs = op.make_attrs(padding=[1, 1])
    assert relation_for(op)([f32(1, 3, n, 8), f32(16, 3, 3, 3)], attrs, Ctx(final=False)) is None
    assert relation_for(op)([IncompleteType(), f32(16, 3, 3, 3)], attrs, Ctx()) is None
    assert relation_for(op)([f32(1, 3, 8, 8), IncompleteType()], attrs, Ctx()) is None
    grouped = op.make_attrs(groups=3, channels=6, kernel_size=[3, 3])
    ctx, hole = Ctx(final=False), IncompleteType()
    assert relation_for(op)([f32(1, 3, 8, 8), hole], grouped, ctx) is None
    ctx.final = True
    assert relation_for(op)([f32(1, 3, 8, 8), hole], grouped, ctx) == f32(1, 6, 6, 6)
    assert ctx.bound[hole] == f32(6, 1, 3, 3)


def test_a_small_network_in_text_form_infers_every_shape():
    from relay.grammar import parse
    from relay.typecheck import infer_module

    mod = parse(
        """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 32, 32, 3), float32], %w: Tensor[(3, 3, 3, 16), float32],
          %b, %g, %be, %m, %v, %fc) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3],
                 data_layout="NHWC", kernel_layout="HWIO");
  %1 = nn.bias_add(%0, %b, axis=3);
  %2 = nn.batch_norm(%1, %g, %be, %m, %v, axis=3);
  %3 = nn.relu(%2.0);
  %4 = nn.max_pool2d(%3, pool_size=[2, 2], strides=[2, 2], layout="NHWC");
  %5 = nn.batch_flatten(%4);
  nn.dense(%5, %fc, units=10)
}
"""
    )
    types = infer_module(mod)
    (fn,) = mod.functions.values()
    assert types.type_of(fn.body) == f32(1, 10)
    # the unannotated parameters get their types from the relations
    by_name = {p.name_hint: types.type_of(p) for p in fn.params}
    assert by_name["b"] == by_name["g"] == by_name["m"] == f32(16)
    assert by_name["fc"] == f32(10, 16 * 16 * 16)
