"""The depthwise conv2d schedule (`schedules/depthwise.py`): compiled kernels against the
reference implementation, with the fused epilogue (bias add, clip), for every depthwise
layer of MobileNet-v2 and for sizes no vector divides, odd strided inputs, multipliers,
dilation, uneven padding, batches, int8, other targets; and a whole program built with
bound weights against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest
import relay
from relay.backend.lower.schedules import conv2d as conv2d_schedules
from relay.backend.lower.schedules import depthwise
from relay.backend.lower.schedules.conv2d import analyze_conv
from relay.backend.runtime.op_impls import implementation_for
from relay.backend.target import Target
from relay.backend.te import placeholder
from relay.lang import get_op
from relay.testing.compute_check import apply_compute, assert_matches, run_default_schedule

RNG = np.random.default_rng(12)


def depthwise_case(
    n, c, h, w, mult=1, k=3, stride=1, pad=1, dil=1, weight_form="oihw", epilogue=True,
    target=None, dtype="float32", out_dtype="",
):  # fmt: skip
    """conv2d (groups = c) + add(bias) + clip(0, 6) through the default schedule, and the
    same through the reference implementations; returns (got, want, schedule)."""
    oc = c * mult
    wshape = (oc, 1, k, k) if weight_form == "oihw" else (c, mult, k, k)
    pads = pad if isinstance(pad, tuple) else (pad, pad)
    x = placeholder((n, c, h, w), dtype, "x")
    wt = placeholder(wshape, dtype, "w")
    conv, attrs = apply_compute(
        "nn.conv2d", [x, wt], strides=(stride, stride), padding=pads, dilation=(dil, dil),
        groups=c, channels=oc, kernel_size=(k, k), out_dtype=out_dtype,
    )  # fmt: skip
    if dtype == "float32":
        xa = RNG.normal(size=(n, c, h, w)).astype(dtype)
        wa = RNG.normal(size=wshape).astype(dtype)
    else:
        xa = RNG.integers(-50, 50, (n, c, h, w)).astype(dtype)
        wa = RNG.integers(-50, 50, wshape).astype(dtype)
    want = implementation_for(get_op("nn.conv2d"))([xa, wa], attrs)
    inputs, arrays, out = [x, wt], [xa, wa], conv
    if epilogue:
        b = placeholder((oc, 1, 1), str(want.dtype), "b")
        added, _ = apply_compute("add", [conv, b])
        out, clip_attrs = apply_compute("clip", [added], a_min=0.0, a_max=6.0)
        ba = RNG.normal(size=(oc, 1, 1)).astype(want.dtype)
        inputs, arrays = [*inputs, b], [*arrays, ba]
        added_ref = implementation_for(get_op("add"))([want, ba], None)
        want = implementation_for(get_op("clip"))([added_ref], clip_attrs)
    (got,), s = run_default_schedule(inputs, [out], arrays, target)
    return got, want, s


def assert_close(got, want):
    assert_matches(got, want, atol_scale=2e-6)


def form_of(s) -> str:
    text = str(s.trace)
    assert "conv2d_plane" in text  # the per-channel phase plane, no padded copy at root
    return "flat" if "conv2d_dw_flat" in text else "width"


MOBILENET_V2 = [
    # (channels, input size, stride): every depthwise layer of examples/mobilenet_v2.relay
    (32, 112, 1),
    (96, 112, 2),
    (144, 56, 1),
    (144, 56, 2),
    (192, 28, 1),
    (192, 28, 2),
    (384, 14, 1),
    (576, 14, 1),
    (576, 14, 2),
    (960, 7, 1),
]


@pytest.mark.parametrize("c, size, stride", MOBILENET_V2)
def test_mobilenet_v2_layers(c, size, stride):
    got, want, s = depthwise_case(1, c, size, size, stride=stride)
    assert_close(got, want)
    out = (size - 1) // stride + 1
    assert form_of(s) == ("flat" if out < 2 * Target.host().lanes("float32") else "width")
    assert "parallel" in str(s.trace)
    assert "w_packed" not in str(s.trace)  # the weight is read as it is


ODD_CASES = [
    # n, c, h, w, mult, k, stride, pad, dil
    (1, 5, 37, 37, 1, 3, 1, 1, 1),  # 37 columns: four vectors and a 5-column tail
    (1, 7, 19, 23, 1, 3, 1, 1, 1),  # 7 channels, rows of 23 (flat positions)
    (2, 3, 15, 15, 1, 3, 2, 1, 1),  # stride 2, odd input, batch 2
    (1, 6, 13, 41, 1, 3, 2, 1, 1),  # stride 2, odd and wide: strided width vectors
    (1, 4, 11, 9, 2, 3, 1, 1, 1),  # multiplier 2
    (3, 5, 17, 21, 2, 3, 2, 1, 1),  # multiplier 2, stride 2, batch 3
    (1, 6, 20, 35, 1, 3, 1, 2, 2),  # dilation 2
    (1, 4, 23, 23, 1, 5, 2, 2, 1),  # 5x5 stride 2
    (1, 3, 12, 14, 1, 3, 3, 1, 1),  # stride 3
    (1, 8, 9, 9, 1, 1, 2, 0, 1),  # 1x1 stride 2: one phase
    (1, 9, 10, 10, 1, 3, 1, 0, 1),  # no padding
    (1, 2, 3, 3, 1, 3, 1, 1, 1),  # a tiny plane, fewer columns than 4
    (1, 4, 12, 40, 1, 3, 1, (0, 1, 2, 0), 1),  # uneven padding (top, left, bottom, right)
]


@pytest.mark.parametrize("case", ODD_CASES)
def test_sizes_no_vector_divides(case):
    n, c, h, w, mult, k, stride, pad, dil = case
    got, want, s = depthwise_case(n, c, h, w, mult, k, stride, pad, dil)
    assert_close(got, want)
    form_of(s)
    got, want, _ = depthwise_case(n, c, h, w, mult, k, stride, pad, dil, epilogue=False)
    assert_close(got, want)


@pytest.mark.parametrize("stride", [1, 2])
def test_multiplier_weight_form(stride):
    """TVM's depthwise weight `(C, multiplier, KH, KW)`: output channel `c * m + j`."""
    got, want, s = depthwise_case(1, 4, 18, 35, mult=3, stride=stride, weight_form="multiplier")
    assert_close(got, want)
    form_of(s)


def test_int8_accumulates_in_int32():
    """int8 depthwise convs take the paired-taps int8 schedule (schedules/int8_depthwise.py),
    not the float planes, and accumulate exactly in int32."""
    got, want, s = depthwise_case(1, 6, 20, 20, dtype="int8", out_dtype="int32", epilogue=False)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)
    assert "int8.depthwise_pairs" in str(s.trace)


@pytest.mark.parametrize(
    "target",
    [Target(vector_bits=256, num_threads=2), Target(vector_bits=512, num_threads=1)],
    ids=["avx2-2threads", "avx512-1thread"],
)
def test_other_targets(target):
    for stride in (1, 2):
        got, want, s = depthwise_case(1, 24, 40, 40, stride=stride, target=target)
        assert_close(got, want)
        assert ("parallel" in str(s.trace)) == (target.num_threads > 1)


def test_conv_and_its_epilogue_as_two_outputs():
    """The tail cannot host the convolution when both are outputs: the convolution's own
    stage gets the nest, the epilogue its default loops."""
    x = placeholder((1, 6, 16, 30), "float32", "x")
    w = placeholder((6, 1, 3, 3), "float32", "w")
    conv, attrs = apply_compute(
        "nn.conv2d", [x, w], padding=(1, 1), groups=6, channels=6, kernel_size=(3, 3)
    )
    out, _ = apply_compute("nn.relu", [conv])
    arrays = [
        RNG.normal(size=(1, 6, 16, 30)).astype("f4"),
        RNG.normal(size=(6, 1, 3, 3)).astype("f4"),
    ]
    (gc, gr), s = run_default_schedule([x, w], [conv, out], arrays)
    ref = implementation_for(get_op("nn.conv2d"))(arrays, attrs)
    assert_close(gc, ref)
    assert_close(gr, np.maximum(ref, 0))
    form_of(s)


def test_analysis():
    x = placeholder((2, 6, 10, 11), "float32", "x")
    w = placeholder((12, 1, 3, 3), "float32", "w")
    conv, _ = apply_compute("nn.conv2d", [x, w], strides=(2, 2), padding=(1, 1), groups=6,
                            channels=12, kernel_size=(3, 3))  # fmt: skip
    c = analyze_conv(conv.op)
    assert c is not None
    d = depthwise.analyze_depthwise(c)
    assert d is not None
    assert (d.channels, d.multiplier, d.weight_form) == (6, 2, "oihw")
    assert (d.phases_h, d.phases_w) == (2, 2)
    assert (d.rows, d.cols) == (5 + 1, 6 + 1)  # output 5x6, one more row/column of taps
    grouped = placeholder((12, 2, 3, 3), "float32", "g")
    conv_g, _ = apply_compute("nn.conv2d", [x, grouped], padding=(1, 1), groups=3,
                              channels=12, kernel_size=(3, 3))  # fmt: skip
    cg = analyze_conv(conv_g.op)
    assert cg is not None and depthwise.analyze_depthwise(cg) is None  # 2 channels per group


def test_grouped_and_nhwc_keep_their_forms():
    x = placeholder((1, 8, 12, 12), "float32", "x")
    wg = placeholder((8, 2, 3, 3), "float32", "w")
    conv, attrs = apply_compute("nn.conv2d", [x, wg], padding=(1, 1), groups=4, channels=8,
                                kernel_size=(3, 3))  # fmt: skip
    arrays = [
        RNG.normal(size=(1, 8, 12, 12)).astype("f4"),
        RNG.normal(size=(8, 2, 3, 3)).astype("f4"),
    ]
    (got,), s = run_default_schedule([x, wg], [conv], arrays)
    assert_close(got, implementation_for(get_op("nn.conv2d"))(arrays, attrs))
    assert "conv2d_plane" not in str(s.trace)
    xh = placeholder((1, 12, 12, 8), "float32", "xh")
    wh = placeholder((3, 3, 1, 8), "float32", "wh")
    conv_h, attrs_h = apply_compute(
        "nn.conv2d", [xh, wh], padding=(1, 1), groups=8, channels=8, kernel_size=(3, 3),
        data_layout="NHWC", kernel_layout="HWIO",
    )  # fmt: skip
    arrays_h = [
        RNG.normal(size=(1, 12, 12, 8)).astype("f4"),
        RNG.normal(size=(3, 3, 1, 8)).astype("f4"),
    ]
    (got_h,), s_h = run_default_schedule([xh, wh], [conv_h], arrays_h)
    assert_close(got_h, implementation_for(get_op("nn.conv2d"))(arrays_h, attrs_h))
    assert "conv2d_plane" not in str(s_h.trace)


def test_disabled_or_forced_forms_fall_back(monkeypatch):
    monkeypatch.setattr(depthwise, "ENABLED", False)
    got, want, s = depthwise_case(1, 8, 20, 20)
    assert_close(got, want)
    assert "conv2d_plane" not in str(s.trace)
    monkeypatch.setattr(depthwise, "ENABLED", True)
    monkeypatch.setattr(conv2d_schedules, "NCHW_FORM", "flat")
    _, _, s = depthwise_case(1, 8, 20, 20)
    assert "conv2d_plane" not in str(s.trace) and "conv2d_rows_acc" in str(s.trace)


PROGRAM = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 24, 29, 29), float32], %w: Tensor[(24, 1, 3, 3), float32],
          %gamma: Tensor[(24), float32], %beta: Tensor[(24), float32],
          %mean: Tensor[(24), float32], %var: Tensor[(24), float32],
          %w2: Tensor[(48, 1, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, strides=[2, 2], padding=[1, 1, 1, 1], groups=24, channels=24,
                 kernel_size=[3, 3]);
  %1 = nn.batch_norm(%0, %gamma, %beta, %mean, %var);
  %2 = clip(%1.0, a_min=0f, a_max=6f);
  nn.conv2d(%2, %w2, padding=[1, 1, 1, 1], groups=24, channels=48, kernel_size=[3, 3])
}
"""


def test_program_with_bound_weights_against_the_interpreter():
    mod = relay.parse(PROGRAM)
    x = RNG.normal(size=(1, 24, 29, 29)).astype("f4")
    params = {
        "w": RNG.normal(size=(24, 1, 3, 3)).astype("f4"),
        "gamma": RNG.uniform(0.5, 1.5, 24).astype("f4"),
        "beta": RNG.normal(size=24).astype("f4"),
        "mean": RNG.normal(size=24).astype("f4"),
        "var": RNG.uniform(0.5, 2.0, 24).astype("f4"),
        "w2": RNG.normal(size=(48, 1, 3, 3)).astype("f4"),
    }
    want = np.asarray(relay.interpret(mod, x=x, **params))
    got = np.asarray(relay.build(mod, target="llvm", params=params).run(x=x))
    assert_matches(got, want, atol_scale=1e-5)
