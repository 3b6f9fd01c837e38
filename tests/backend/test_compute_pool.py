"""Compute definitions of pooling (windowed max/avg in 1-D/2-D/3-D with ceil_mode,
count_include_pad and dilation; adaptive and global pools) against the reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from relay.backend.lower.computes import compute_for
from relay.backend.runtime.op_impls import implementation_for
from relay.backend.te import placeholder
from relay.backend.te.evaluate import evaluate
from relay.lang import get_op
from relay.lang.types import TensorType
from relay.testing.relations import op_call_type

RNG = np.random.default_rng(7)


def run_both(name, *arrays, tuple_arg=False, **attrs):
    """(compute results, reference results) of one call, each a list of arrays."""
    op = get_op(name)
    types = [TensorType(a.shape, str(a.dtype)) for a in arrays]
    out_type = op_call_type(name, *types, tuple_arg=tuple_arg, **attrs)
    op_attrs = op.make_attrs(**attrs) if op.attrs_schema is not None else None
    holders = [placeholder(a.shape, str(a.dtype), f"in{i}") for i, a in enumerate(arrays)]
    outs = compute_for(op)(op_attrs, holders, out_type)
    got = evaluate(outs, dict(zip(holders, arrays)), strict_select=True)
    args = [tuple(arrays)] if tuple_arg else list(arrays)
    want = implementation_for(op)(args, op_attrs)
    return got, list(want) if isinstance(want, tuple) else [want], outs


def check(name, *arrays, tuple_arg=False, **attrs):
    """The compute of `name` equals the reference: exactly for integers, within 1e-5
    relative (plus 1e-5 of the largest magnitude, for cancellation) for floats."""
    got, want, outs = run_both(name, *arrays, tuple_arg=tuple_arg, **attrs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        if w.dtype.kind == "f":
            scale = float(np.max(np.abs(w[np.isfinite(w)]), initial=1.0))
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * scale)
        else:
            np.testing.assert_array_equal(g, w)
    return outs


def normal(*shape, dtype="float32"):
    return RNG.normal(size=shape).astype(dtype)


def ints(*shape, dtype="int32", lo=-5, hi=6):
    return RNG.integers(lo, hi, shape).astype(dtype)


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
    (out,) = check(f"nn.{kind}_pool1d", x, **attrs)
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
    check(f"nn.{kind}_pool2d", x, **attrs)
    check(f"nn.{kind}_pool2d", ints(1, 2, 7, 8, dtype="int8", lo=-128, hi=128), **attrs)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool3d_and_other_layouts(kind):
    check(
        f"nn.{kind}_pool3d",
        normal(1, 2, 4, 5, 5),
        pool_size=[2, 2, 2],
        strides=[2, 1, 2],
        padding=[1],
    )
    check(f"nn.{kind}_pool2d", normal(2, 5, 6, 3), pool_size=[2, 2], layout="NHWC", padding=[1])
    check(
        f"nn.{kind}_pool2d",
        normal(1, 2, 5, 5, 4),
        pool_size=[3, 3],
        layout="NCHW4c",
        strides=[2, 2],
    )
    check(f"nn.{kind}_pool1d", ints(2, 7, 3), pool_size=[3], layout="NWC", padding=[1])


def test_max_pool_of_padding_only_gives_the_lowest_value():
    x = normal(1, 1, 2, 2)
    attrs = dict(pool_size=[2, 2], strides=[3, 3], padding=[1], ceil_mode=True)
    check("nn.max_pool2d", x, **attrs)
    (got,), _, _ = run_both("nn.max_pool2d", x, **attrs)
    assert got.shape == (1, 1, 2, 2) and got[0, 0, 1, 1] == np.finfo(np.float32).min


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_adaptive_pools(kind, ndim):
    spatial = [7, 5, 6][:ndim]
    x = normal(2, 3, *spatial)
    name = f"nn.adaptive_{kind}_pool{ndim}d"
    (out,) = check(name, x, output_size=[3, 2, 4][:ndim])
    assert out.op.tag == f"adaptive_pool_{kind}"
    check(name, x, output_size=[4])
    check(name, x, output_size=[])
    check(name, ints(1, 2, *spatial), output_size=[3])
    check(name, x, output_size=[9, 6, 7][:ndim])


def test_adaptive_pool_layouts():
    check("nn.adaptive_avg_pool2d", normal(1, 7, 5, 3), output_size=[3, 2], layout="NHWC")
    check("nn.adaptive_max_pool2d", normal(1, 2, 7, 5, 4), output_size=[2], layout="NCHW4c")


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_global_pools(kind):
    check(f"nn.global_{kind}_pool2d", normal(2, 3, 4, 5))
    check(f"nn.global_{kind}_pool2d", normal(2, 4, 5, 3), layout="NHWC")
    check(f"nn.global_{kind}_pool2d", ints(2, 3, 4, 5, lo=-100, hi=100))
