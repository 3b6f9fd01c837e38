"""The NCHW 2-D window pool schedule (`schedules/pool.py`, the stride-phase plane):
compiled kernels against the reference implementation for ResNet-18's max pool, odd sizes,
strides 1/2/3, padding 0/1/uneven, ceil_mode, dilation, average pooling with and without
count_include_pad, int dtypes, a fused epilogue; other layouts keep the old nest."""

from __future__ import annotations

import numpy as np
import pytest
from relay.backend.runtime.op_impls import implementation_for
from relay.backend.te import placeholder
from relay.lang import get_op
from relay.testing.compute_check import apply_compute, assert_matches, run_default_schedule

RNG = np.random.default_rng(19)


def pool_case(kind, shape, k=3, stride=2, pad=1, dil=1, ceil=False, incl=False,
              layout="NCHW", dtype="float32", epilogue=False, prologue=False):  # fmt: skip
    """`nn.{kind}_pool2d` (optionally + relu) through the default schedule and through the
    reference implementation; returns (got, want, schedule trace text)."""
    x = placeholder(shape, dtype, "x")
    attrs = dict(
        pool_size=(k, k) if isinstance(k, int) else k,
        strides=(stride, stride) if isinstance(stride, int) else stride,
        padding=pad if isinstance(pad, tuple) else (pad, pad),
        dilation=(dil, dil), ceil_mode=ceil, layout=layout,
    )  # fmt: skip
    if kind == "avg":
        attrs["count_include_pad"] = incl
    src = apply_compute("nn.relu", [x])[0] if prologue else x
    out, checked = apply_compute(f"nn.{kind}_pool2d", [src], **attrs)
    if dtype == "float32":
        xa = RNG.normal(size=shape).astype(dtype)
    else:
        xa = RNG.integers(-100, 100, shape).astype(dtype)
    xin = np.maximum(xa, 0).astype(xa.dtype) if prologue else xa
    want = implementation_for(get_op(f"nn.{kind}_pool2d"))([xin], checked)
    if epilogue:
        out, _ = apply_compute("nn.relu", [out])
        want = np.maximum(want, 0).astype(want.dtype)
    (got,), s = run_default_schedule([x], [out], [xa])
    return got, want, str(s.trace)


def check(got, want):
    assert got.shape == want.shape
    if np.issubdtype(want.dtype, np.integer):
        np.testing.assert_array_equal(got, want)
    else:
        assert_matches(got, want, atol_scale=2e-6)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_resnet18_pool(kind):
    got, want, trace = pool_case(kind, (1, 64, 112, 112))
    check(got, want)
    assert "_plane" in trace
    assert "parallel" in trace


CASES = [
    # shape, k, stride, pad, dil, ceil
    ((1, 5, 37, 37), 3, 2, 1, 1, False),
    ((2, 3, 15, 17), 3, 1, 1, 1, False),
    ((1, 4, 13, 41), 3, 3, 0, 1, False),
    ((1, 3, 12, 14), 2, 2, 0, 1, False),
    ((1, 6, 11, 9), 3, 2, (0, 1, 2, 0), 1, False),
    ((1, 4, 12, 15), 3, 2, 1, 1, True),
    ((1, 3, 10, 11), 2, 3, 0, 1, True),
    ((1, 2, 16, 19), 3, 1, 2, 2, False),
    ((1, 2, 3, 3), 3, 1, 1, 1, False),
    ((1, 3, 9, 21), (2, 3), (1, 2), (1, 0, 0, 1), 1, True),
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kind, incl", [("max", False), ("avg", False), ("avg", True)])
def test_odd_pools(case, kind, incl):
    shape, k, stride, pad, dil, ceil = case
    got, want, trace = pool_case(kind, shape, k, stride, pad, dil, ceil, incl)
    check(got, want)
    assert "_plane" in trace


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_fused_epilogue(kind):
    got, want, trace = pool_case(kind, (1, 8, 29, 29), epilogue=True, incl=True)
    check(got, want)
    assert "_plane" in trace


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_fused_prologue_without_padding(kind):
    got, want, trace = pool_case(kind, (1, 5, 17, 19), k=2, pad=0, prologue=True)
    check(got, want)
    assert "_plane" in trace


@pytest.mark.parametrize("dtype", ["int8", "int32"])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_integer_pools(kind, dtype):
    got, want, _ = pool_case(kind, (1, 3, 14, 13), ceil=True, dtype=dtype)
    check(got, want)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_nhwc_keeps_the_window_nest(kind):
    got, want, trace = pool_case(kind, (1, 15, 17, 6), layout="NHWC")
    check(got, want)
    assert "_plane" not in trace
