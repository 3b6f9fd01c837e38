"""Compute definitions of pooling (windowed max/avg in 1-D/2-D/3-D with ceil_mode,
count_include_pad and dilation; adaptive and global pools) against the reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from relay.testing.compute_check import RandomArrays, check_compute, compute_and_reference

ARRAYS = RandomArrays(7, int_range=(-5, 6))
RNG = ARRAYS.rng
normal, ints = ARRAYS.normal, ARRAYS.ints


@settings(max_examples=40)
@given(
    n=st.integers(3, 9),
    k=st.integers(1, 3),
    s=st.integers(1, 3),
    d=st.integers(1, 2),
    pb=st.integers(0, 1),
    pa=st.integers(0, 2),
    ceil_mode=st.booleans(),
    include_pad=st.booleans(),
    kind=st.sampled_from(["max", "avg"]),
    dtype=st.sampled_from(["float32", "int32"]),
    seed=st.integers(0, 2**16),
)
def test_pool1d(n, k, s, d, pb, pa, ceil_mode, include_pad, kind, dtype, seed):
    if (k - 1) * d + 1 > n + pb + pa or pb >= k or pa >= k:
        assume(False)  # the type relation rejects padding as large as the window
    rng = np.random.default_rng(seed)
    x = (rng.normal(size=(2, 3, n)) * 10).astype(dtype)
    attrs = dict(pool_size=[k], strides=[s], dilation=[d], padding=[pb, pa], ceil_mode=ceil_mode)
    if kind == "avg":
        attrs["count_include_pad"] = include_pad
    (out,) = check_compute(f"nn.{kind}_pool1d", [x], **attrs)
    assert out.op.tag == f"pool_{kind}"


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("include_pad", [False, True])
def test_pool2d_asymmetric_padding_and_dilation(kind, ceil_mode, include_pad):
    x = normal(1, 2, 7, 8)
    attrs = dict(
        pool_size=[3, 2], strides=[2, 3], dilation=[1, 2], padding=[1, 0, 2, 1], ceil_mode=ceil_mode
    )
    if kind == "avg":
        attrs["count_include_pad"] = include_pad
    check_compute(f"nn.{kind}_pool2d", [x], **attrs)
    check_compute(f"nn.{kind}_pool2d", [ints(1, 2, 7, 8, dtype="int8", lo=-128, hi=128)], **attrs)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool3d_and_other_layouts(kind):
    check_compute(
        f"nn.{kind}_pool3d",
        [normal(1, 2, 4, 5, 5)],
        pool_size=[2, 2, 2],
        strides=[2, 1, 2],
        padding=[1],
    )
    check_compute(
        f"nn.{kind}_pool2d", [normal(2, 5, 6, 3)], pool_size=[2, 2], layout="NHWC", padding=[1]
    )
    check_compute(
        f"nn.{kind}_pool2d",
        [normal(1, 2, 5, 5, 4)],
        pool_size=[3, 3],
        layout="NCHW4c",
        strides=[2, 2],
    )
    check_compute(f"nn.{kind}_pool1d", [ints(2, 7, 3)], pool_size=[3], layout="NWC", padding=[1])


def test_max_pool_of_padding_only_gives_the_lowest_value():
    x = normal(1, 1, 2, 2)
    attrs = dict(pool_size=[2, 2], strides=[3, 3], padding=[1], ceil_mode=True)
    check_compute("nn.max_pool2d", [x], **attrs)
    (got,), _, _ = compute_and_reference("nn.max_pool2d", [x], **attrs)
    assert got.shape == (1, 1, 2, 2) and got[0, 0, 1, 1] == np.finfo(np.float32).min


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_adaptive_pools(kind, ndim):
    spatial = [7, 5, 6][:ndim]
    x = normal(2, 3, *spatial)
    name = f"nn.adaptive_{kind}_pool{ndim}d"
    (out,) = check_compute(name, [x], output_size=[3, 2, 4][:ndim])
    assert out.op.tag == f"adaptive_pool_{kind}"
    check_compute(name, [x], output_size=[4])
    check_compute(name, [x], output_size=[])
    check_compute(name, [ints(1, 2, *spatial)], output_size=[3])
    check_compute(name, [x], output_size=[9, 6, 7][:ndim])


def test_adaptive_pool_layouts():
    check_compute("nn.adaptive_avg_pool2d", [normal(1, 7, 5, 3)], output_size=[3, 2], layout="NHWC")
    check_compute(
        "nn.adaptive_max_pool2d", [normal(1, 2, 7, 5, 4)], output_size=[2], layout="NCHW4c"
    )


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_global_pools(kind):
    check_compute(f"nn.global_{kind}_pool2d", [normal(2, 3, 4, 5)])
    check_compute(f"nn.global_{kind}_pool2d", [normal(2, 4, 5, 3)], layout="NHWC")
    check_compute(f"nn.global_{kind}_pool2d", [ints(2, 3, 4, 5, lo=-100, hi=100)])
