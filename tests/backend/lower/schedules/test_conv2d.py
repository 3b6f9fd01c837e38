"""The default schedules of conv2d (channel vectors with a packed weight, width vectors for
depthwise and grouped, NHWC): compiled kernels against the reference implementation, with
strides 1 and 2, dilation, padding, sizes no block divides, batch 3, element-wise tails
(bias, relu, residual add), and other targets."""

from __future__ import annotations

import re

import numpy as np
import pytest
from attrs import evolve
from relay.backend.lower.schedules import conv2d as conv2d_schedules
from relay.backend.lower.schedules import depthwise as depthwise_schedules
from relay.backend.lower.schedules.conv2d import (
    analyze_conv,
    channel_vector_ok,
    choose_conv_blocking,
    plan_flat,
)
from relay.backend.runtime.op_impls import implementation_for
from relay.backend.target import Target
from relay.backend.te import placeholder
from relay.lang import get_op
from relay.testing.compute_check import apply_compute, assert_matches, run_default_schedule

RNG = np.random.default_rng(3)


def assert_close(got, want):
    """Floats to 1e-5 relative plus 2e-6 of the largest magnitude; integers exactly."""
    assert_matches(got, want, atol_scale=2e-6)


def conv_case(
    n, c, h, w, oc, kh, kw, stride=1, pad=0, dil=1, groups=1, layout="NCHW", tail=False,
    target=None, dtype="float32", out_dtype="",
):  # fmt: skip
    """Run conv2d (optionally + bias + relu) through the default schedule and the reference."""
    if layout == "NCHW":
        dshape, wshape, caxis = (n, c, h, w), (oc, c // groups, kh, kw), 1
        extra = {}
    else:
        dshape, wshape, caxis = (n, h, w, c), (kh, kw, c // groups, oc), 3
        extra = {"data_layout": "NHWC", "kernel_layout": "HWIO"}
    x = placeholder(dshape, dtype, "x")
    wt = placeholder(wshape, dtype, "w")
    conv, attrs = apply_compute(
        "nn.conv2d", [x, wt], strides=(stride, stride), padding=(pad, pad),
        dilation=(dil, dil), groups=groups, channels=oc, kernel_size=(kh, kw),
        out_dtype=out_dtype, **extra,
    )  # fmt: skip
    if dtype == "float32":
        xa = RNG.normal(size=dshape).astype(dtype)
        wa = RNG.normal(size=wshape).astype(dtype)
    else:
        xa = RNG.integers(-50, 50, dshape).astype(dtype)
        wa = RNG.integers(-50, 50, wshape).astype(dtype)
    want = implementation_for(get_op("nn.conv2d"))([xa, wa], attrs)
    inputs, arrays, out = [x, wt], [xa, wa], conv
    if tail:
        b = placeholder((oc,), str(want.dtype), "b")
        biased, _ = apply_compute("nn.bias_add", [conv, b], axis=caxis)
        out, _ = apply_compute("nn.relu", [biased])
        ba = RNG.normal(size=(oc,)).astype(want.dtype)
        inputs, arrays = [*inputs, b], [*arrays, ba]
        shape = [1] * 4
        shape[caxis] = oc
        want = np.maximum(want + ba.reshape(shape), 0)
    (got,), s = run_default_schedule(inputs, [out], arrays, target)
    return got, want, s


NCHW_CASES = [
    (1, 4, 6, 6, 16, 3, 3, 1, 1),  # one channel vector, one column block
    (3, 5, 9, 11, 20, 3, 3, 2, 1),  # batch 3, stride 2, channels no vector divides
    (2, 6, 10, 7, 33, 3, 2, 1, 2, 2),  # dilation 2, rectangular kernel
    (1, 16, 13, 13, 40, 1, 1, 1, 0),  # 1x1: the GEMM-like form
    (1, 8, 15, 15, 32, 1, 1, 2, 0),  # 1x1 stride 2 (a ResNet downsample)
    (1, 3, 23, 23, 16, 7, 7, 2, 3),  # the ResNet stem, small
    (2, 5, 11, 9, 7, 3, 3, 3, 2, 1),  # stride 3, 7 output channels (a prime)
    (1, 4, 12, 12, 16, 3, 3, 2, 2, 2),  # dilation = stride: every tap in one phase
]


@pytest.fixture(params=["blocked", "flat"])
def nchw_form(request, monkeypatch):
    """Force one NCHW form for the test."""
    monkeypatch.setattr(conv2d_schedules, "NCHW_FORM", request.param)
    return request.param


@pytest.mark.parametrize("case", NCHW_CASES)
def test_conv2d_nchw_forms(case, nchw_form):
    got, want, s = conv_case(*case)
    assert_close(got, want)
    text = str(s.trace)
    if nchw_form == "blocked":
        assert "w_packed" in text and "conv2d_blocked" in text
    else:
        assert "w_packed" not in text and 'compute_at("conv2d_rows_acc"' in text
    got, want, s = conv_case(*case, tail=True)
    assert_close(got, want)
    assert re.search(r'compute_at\("conv2d_(blocked|rows_acc)", "relu"', str(s.trace))


def test_conv2d_auto_form_for_depthwise(monkeypatch):
    # conv2d.py's own forms (the dedicated depthwise schedule off)
    monkeypatch.setattr(depthwise_schedules, "ENABLED", False)
    # stride 1, wide rows: width vectors; strided or narrow: flat rows
    got, want, s = conv_case(1, 16, 40, 40, 16, 3, 3, 1, 1, groups=16)
    assert_close(got, want)
    assert "conv2d_acc" in str(s.trace)
    got, want, s = conv_case(1, 16, 40, 40, 16, 3, 3, 2, 1, groups=16)
    assert_close(got, want)
    assert "conv2d_rows_acc" in str(s.trace)


def test_conv2d_auto_form_follows_the_weight_size():
    # weight (16*64*9) twice the input (64*8*8): flat rows, no packing
    _, _, s = conv_case(1, 64, 8, 8, 16, 3, 3, 1, 1)
    assert "conv2d_rows_acc" in str(s.trace)
    # input (16*30*30) larger than the weight (16*16*9), 144 products per output:
    # channel vectors
    got, want, s = conv_case(1, 16, 30, 30, 16, 3, 3, 1, 1)
    assert_close(got, want)
    assert "conv2d_blocked" in str(s.trace)
    # a 1x1 expansion (16 products per output): flat rows
    got, want, s = conv_case(1, 16, 20, 20, 96, 1, 1)
    assert_close(got, want)
    assert "conv2d_rows_acc" in str(s.trace)


@pytest.mark.parametrize(
    "case",
    [
        (1, 8, 12, 12, 8, 3, 3, 1, 1, 1, 8),  # depthwise
        (3, 8, 13, 9, 16, 3, 3, 2, 1, 1, 8),  # depthwise, multiplier 2, stride 2, batch 3
        (1, 6, 9, 9, 12, 1, 1, 1, 0, 1, 3),  # grouped, 4 channels per group
        (2, 12, 20, 19, 12, 3, 3, 1, 2, 2, 12),  # depthwise, dilation 2
        (1, 32, 18, 18, 32, 3, 3, 1, 1, 1, 32),  # depthwise, a whole vector of columns
    ],
)
def test_conv2d_nchw_grouped(case, nchw_form):
    got, want, s = conv_case(*case)
    assert_close(got, want)
    text = str(s.trace)
    if nchw_form == "blocked":  # channel vectors do not apply: width vectors
        assert "w_packed" not in text and "conv2d_acc" in text
    else:
        assert "conv2d_rows_acc" in text
    got, want, _ = conv_case(*case, tail=True)
    assert_close(got, want)


def test_grouped_conv2d_with_whole_channel_vectors_per_group(monkeypatch):
    monkeypatch.setattr(conv2d_schedules, "NCHW_FORM", "blocked")
    got, want, s = conv_case(2, 8, 7, 7, 32, 3, 3, 1, 1, groups=2)
    assert_close(got, want)
    assert "w_packed" in str(s.trace)


@pytest.mark.parametrize(
    "case",
    [
        (3, 5, 9, 11, 20, 3, 3, 2, 1),
        (1, 8, 9, 9, 8, 3, 3, 1, 1, 1, 8),
        (1, 16, 7, 7, 24, 1, 1, 1, 0),
    ],
)
def test_conv2d_nhwc(case):
    got, want, _ = conv_case(*case, layout="NHWC")
    assert_close(got, want)
    got, want, _ = conv_case(*case, layout="NHWC", tail=True)
    assert_close(got, want)


def test_conv2d_int8_accumulates_in_int32():
    got, want, _ = conv_case(1, 6, 8, 8, 20, 3, 3, 1, 1, dtype="int8", out_dtype="int32")
    assert got.dtype == np.int32
    assert_close(got, want)


@pytest.mark.parametrize(
    "target",
    [Target(vector_bits=256, num_threads=2), Target(vector_bits=512, num_threads=1)],
    ids=["avx2-2threads", "avx512-1thread"],
)
def test_conv2d_other_targets(target):
    got, want, s = conv_case(2, 16, 14, 14, 24, 3, 3, 1, 1, target=target, tail=True)
    assert_close(got, want)
    assert ("parallel" in str(s.trace)) == (target.num_threads > 1)
    got, want, _ = conv_case(1, 16, 14, 14, 16, 3, 3, 2, 1, groups=16, target=target)
    assert_close(got, want)


def test_conv2d_residual_block_tail():
    """conv -> bias -> add(identity) -> relu, as in a ResNet block."""
    x = placeholder((2, 8, 10, 10), "float32", "x")
    w = placeholder((16, 8, 3, 3), "float32", "w")
    b = placeholder((16,), "float32", "b")
    ident = placeholder((2, 16, 10, 10), "float32", "ident")
    conv, attrs = apply_compute(
        "nn.conv2d", [x, w], padding=(1, 1), channels=16, kernel_size=(3, 3)
    )
    biased, _ = apply_compute("nn.bias_add", [conv, b], axis=1)
    summed, _ = apply_compute("add", [biased, ident])
    out, _ = apply_compute("nn.relu", [summed])
    arrays = [
        RNG.normal(size=(2, 8, 10, 10)).astype("f4"),
        RNG.normal(size=(16, 8, 3, 3)).astype("f4"),
        RNG.normal(size=(16,)).astype("f4"),
        RNG.normal(size=(2, 16, 10, 10)).astype("f4"),
    ]
    (got,), _ = run_default_schedule([x, w, b, ident], [out], arrays)
    ref = implementation_for(get_op("nn.conv2d"))(arrays[:2], attrs)
    assert_close(got, np.maximum(ref + arrays[2].reshape(1, -1, 1, 1) + arrays[3], 0))


def test_conv2d_with_two_outputs():
    x = placeholder((1, 4, 8, 8), "float32", "x")
    w = placeholder((16, 4, 3, 3), "float32", "w")
    conv, attrs = apply_compute(
        "nn.conv2d", [x, w], padding=(1, 1), channels=16, kernel_size=(3, 3)
    )
    out, _ = apply_compute("nn.relu", [conv])
    arrays = [
        RNG.normal(size=(1, 4, 8, 8)).astype("f4"),
        RNG.normal(size=(16, 4, 3, 3)).astype("f4"),
    ]
    (gc, gr), _ = run_default_schedule([x, w], [conv, out], arrays)
    ref = implementation_for(get_op("nn.conv2d"))(arrays, attrs)
    assert_close(gc, ref)
    assert_close(gr, np.maximum(ref, 0))


def test_analysis_and_blocking():
    x = placeholder((1, 8, 9, 9), "float32", "x")
    w = placeholder((32, 8, 3, 3), "float32", "w")
    conv, _ = apply_compute("nn.conv2d", [x, w], strides=(2, 2), padding=(1, 1), channels=32,
                            kernel_size=(3, 3))  # fmt: skip
    c = analyze_conv(conv.op)
    assert c is not None
    assert c.weight is w and c.strides == (2, 2) and c.out_shape == (1, 32, 5, 5)
    assert channel_vector_ok(c, 16) and channel_vector_ok(c, 64)  # one group: any width
    wg = placeholder((32, 4, 3, 3), "float32", "wg")
    grouped, _ = apply_compute("nn.conv2d", [x, wg], padding=(1, 1), channels=32,
                               kernel_size=(3, 3), groups=2)  # fmt: skip
    g = analyze_conv(grouped.op)
    assert g is not None and g.groups == 2
    assert channel_vector_ok(g, 16) and not channel_vector_ok(g, 32)  # 16 channels per group
    t = Target.host()
    for vector_bits, budget in [(512, 20), (256, 10)]:  # 32 and 16 vector registers
        machine = evolve(t, vector_bits=vector_bits)
        for blocks, width in [(4, 56), (16, 14), (32, 7), (4, 112), (1, 5)]:
            b = choose_conv_blocking(blocks, width, machine)
            assert 1 <= b.ocv <= blocks and 1 <= b.owb <= width
            assert b.ocv * b.owb <= budget
    avx512 = evolve(t, vector_bits=512)
    assert choose_conv_blocking(32, 7, avx512).owb == 7  # a block that divides the width
    avx2 = choose_conv_blocking(32, 14, evolve(t, vector_bits=256))
    assert (avx2.ocv, avx2.owb) == (2, 5)  # 2 of 14 wastes the budget: 5 columns and a tail
    lanes = t.lanes("float32")
    plan = plan_flat(c, lanes, t)
    assert plan.wq == 6 and 32 % plan.mr == 0  # rows of (9 + 2) // 2 phase columns
    assert plan.blocks * plan.f >= 5 * plan.wq and plan.f % lanes == 0


def test_depthwise_with_the_multiplier_weight_form(monkeypatch):
    """TVM's depthwise weight `(C, multiplier, KH, KW)`: output channel `c * m + j`."""
    monkeypatch.setattr(depthwise_schedules, "ENABLED", False)  # conv2d.py's own form
    x = placeholder((1, 4, 8, 8), "float32", "x")
    w = placeholder((4, 2, 3, 3), "float32", "w")
    conv, attrs = apply_compute(
        "nn.conv2d", [x, w], padding=(1, 1), groups=4, channels=8, kernel_size=(3, 3)
    )
    arrays = [
        RNG.normal(size=(1, 4, 8, 8)).astype("f4"),
        RNG.normal(size=(4, 2, 3, 3)).astype("f4"),
    ]
    (got,), s = run_default_schedule([x, w], [conv], arrays)
    assert_close(got, implementation_for(get_op("nn.conv2d"))(arrays, attrs))
    assert "conv2d_acc" in str(s.trace)  # the width form, on the compute as it is
