"""Reference pooling checked against loops over windows written from TVM's rules."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from relay.backend.runtime.op_impls import IMPLS
from relay.lang import get_op


def call(name, *args, **attrs):
    op = get_op(name)
    return IMPLS[op](list(args), op.make_attrs(**attrs))


def pool_loops(x, kind, kernel, strides, dilation, before, after, ceil_mode, include_pad):
    """Pooling of NC+spatial data, one output element and one tap at a time.

    Windows: `ceil((n + pads - dilated kernel) / stride) + 1` of them in ceil mode (floor
    otherwise). Max over taps, padding counting as the lowest value; average = sum of the
    taps inside the data / (taps inside the given padding if include_pad, else taps inside
    the data, at least 1).
    """
    spatial = x.shape[2:]
    rnd = math.ceil if ceil_mode else math.floor
    outs = [
        rnd((n + b + a - (k - 1) * d - 1) / s) + 1
        for n, b, a, k, d, s in zip(spatial, before, after, kernel, dilation, strides)
    ]
    out = np.zeros(x.shape[:2] + tuple(outs))
    low = np.finfo(x.dtype).min if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    for nc in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in itertools.product(*map(range, outs)):
            values, in_data, in_padding = [], 0, 0
            for tap in itertools.product(*map(range, kernel)):
                pos = [
                    oi * s - b + t * d for oi, s, b, t, d in zip(o, strides, before, tap, dilation)
                ]
                inside = all(0 <= p < n for p, n in zip(pos, spatial))
                if inside:
                    values.append(float(x[(*nc, *pos)]))
                    in_data += 1
                else:
                    values.append(low if kind == "max" else 0.0)
                if all(p <= n + a - 1 for p, n, a in zip(pos, spatial, after)):
                    in_padding += 1
            if kind == "max":
                out[(*nc, *o)] = max(values)
            else:
                out[(*nc, *o)] = sum(values) / (in_padding if include_pad else max(in_data, 1))
    return out


@settings(max_examples=40)
@given(
    st.integers(1, 6),
    st.integers(1, 3),
    st.integers(1, 3),
    st.integers(1, 2),
    st.integers(0, 2),
    st.integers(0, 2),
    st.booleans(),
    st.booleans(),
    st.integers(0, 2**31),
)
def test_pool1d_matches_loops(n, k, s, d, pb, pa, ceil_mode, include_pad, seed):
    assume(s <= (k - 1) * d + 1)  # no window may start past the padding
    assume(n + pb + pa >= (k - 1) * d + 1)
    x = np.random.default_rng(seed).normal(size=(1, 2, n)).astype("float32")
    attrs = dict(pool_size=[k], strides=[s], dilation=[d], padding=[pb, pa], ceil_mode=ceil_mode)
    mx = call("nn.max_pool1d", x, **attrs)
    np.testing.assert_allclose(
        mx, pool_loops(x, "max", [k], [s], [d], [pb], [pa], ceil_mode, False)
    )
    avg = call("nn.avg_pool1d", x, count_include_pad=include_pad, **attrs)
    want = pool_loops(x, "avg", [k], [s], [d], [pb], [pa], ceil_mode, include_pad)
    assert avg.dtype == np.float32
    np.testing.assert_allclose(avg, want, rtol=1e-5, atol=1e-6)


@settings(max_examples=15)
@given(st.booleans(), st.booleans(), st.integers(0, 2**31))
def test_pool2d_with_asymmetric_padding_and_dilation_matches_loops(ceil_mode, include_pad, seed):
    x = np.random.default_rng(seed).normal(size=(1, 2, 6, 5)).astype("float32")
    attrs = dict(
        pool_size=[3, 2], strides=[2, 1], dilation=[1, 2], padding=[1, 0, 2, 1], ceil_mode=ceil_mode
    )
    args = ([3, 2], [2, 1], [1, 2], [1, 0], [2, 1], ceil_mode)
    np.testing.assert_allclose(
        call("nn.max_pool2d", x, **attrs), pool_loops(x, "max", *args, False)
    )
    avg = call("nn.avg_pool2d", x, count_include_pad=include_pad, **attrs)
    np.testing.assert_allclose(avg, pool_loops(x, "avg", *args, include_pad), rtol=1e-5, atol=1e-6)


def test_pool3d_and_nhwc_layouts():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(1, 2, 4, 3, 5)).astype("float32")
    attrs = dict(pool_size=[2, 2, 3], strides=[2, 1, 2], padding=[0, 1, 1, 1, 0, 1])
    want = pool_loops(x, "avg", [2, 2, 3], [2, 1, 2], [1, 1, 1], [0, 1, 1], [1, 0, 1], False, True)
    np.testing.assert_allclose(
        call("nn.avg_pool3d", x, count_include_pad=True, **attrs), want, rtol=1e-5
    )
    x2 = rng.normal(size=(2, 5, 4, 3)).astype("float32")  # NHWC
    nhwc = call("nn.max_pool2d", x2, pool_size=[2, 2], layout="NHWC", padding=[1])
    nchw = call("nn.max_pool2d", x2.transpose(0, 3, 1, 2), pool_size=[2, 2], padding=[1])
    np.testing.assert_array_equal(nhwc, nchw.transpose(0, 2, 3, 1))


def test_pooling_edge_cases_by_hand():
    x = np.array([[[5.0]]], "float32")
    out = call("nn.max_pool1d", x, pool_size=[1], padding=[1, 1])  # windows of padding only
    assert out.tolist() == [[[np.finfo("float32").min, 5.0, np.finfo("float32").min]]]
    ints = np.array([[[-3, -2, 7, 8]]], "int32")
    assert call("nn.avg_pool1d", ints, pool_size=[2], strides=[2]).tolist() == [[[-2, 7]]]
    const = np.full((1, 1, 5, 5), 3.0, "float32")
    avg = call("nn.avg_pool2d", const, pool_size=[3, 3], padding=[1, 1])
    assert (avg == 3.0).all()
    incl = call("nn.avg_pool2d", const, pool_size=[3, 3], padding=[1, 1], count_include_pad=True)
    assert incl[0, 0, 0, 0] == pytest.approx(3.0 * 4 / 9) and incl[0, 0, 2, 2] == 3.0
    # ceil mode adds a window starting in the padding (TVM keeps it)
    assert call(
        "nn.max_pool1d",
        np.zeros((1, 1, 4), "float32"),
        pool_size=[2],
        strides=[2],
        padding=[0, 1],
        ceil_mode=True,
    ).shape == (1, 1, 3)


def adaptive_loops(x, sizes, kind):
    out = np.zeros(x.shape[:2] + tuple(sizes))
    spatial = x.shape[2:]
    for nc in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in itertools.product(*map(range, sizes)):
            box = tuple(
                slice(math.floor(i * n / m), math.ceil((i + 1) * n / m))
                for i, n, m in zip(o, spatial, sizes)
            )
            window = x[nc + box]
            out[nc + o] = window.max() if kind == "max" else window.astype("float64").mean()
    return out


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_adaptive_pools_match_loops(kind):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 3, 7, 5)).astype("float32")
    out = call(f"nn.adaptive_{kind}_pool2d", x, output_size=[3, 4])
    np.testing.assert_allclose(out, adaptive_loops(x, [3, 4], kind), rtol=1e-5)
    square = call(f"nn.adaptive_{kind}_pool2d", x, output_size=[2])
    np.testing.assert_allclose(square, adaptive_loops(x, [2, 2], kind), rtol=1e-5)
    same = call(f"nn.adaptive_{kind}_pool2d", x)  # no output_size: the input size
    np.testing.assert_allclose(same, x, rtol=1e-6)
    x1 = rng.normal(size=(1, 2, 10)).astype("float32")
    np.testing.assert_allclose(
        call(f"nn.adaptive_{kind}_pool1d", x1, output_size=[4]),
        adaptive_loops(x1, [4], kind),
        rtol=1e-5,
    )
    x3 = rng.normal(size=(1, 1, 3, 4, 5)).astype("float32")
    np.testing.assert_allclose(
        call(f"nn.adaptive_{kind}_pool3d", x3, output_size=[2, 3, 2]),
        adaptive_loops(x3, [2, 3, 2], kind),
        rtol=1e-5,
    )


def test_global_pools_and_integer_averages():
    x = np.random.default_rng(3).normal(size=(2, 3, 4, 5)).astype("float32")
    np.testing.assert_allclose(
        call("nn.global_avg_pool2d", x)[..., 0, 0], x.mean(axis=(2, 3)), rtol=1e-5
    )
    np.testing.assert_array_equal(call("nn.global_max_pool2d", x)[..., 0, 0], x.max(axis=(2, 3)))
    nhwc = call("nn.global_max_pool2d", x.transpose(0, 2, 3, 1), layout="NHWC")
    assert nhwc.shape == (2, 1, 1, 3)
    ints = np.array([[[[-1, -2], [-2, -2]]]], "int8")
    out = call("nn.global_avg_pool2d", ints)
    assert out.dtype == np.int8 and out.tolist() == [[[[-1]]]]  # -7 / 4 rounds toward zero


def test_dtypes_are_kept():
    h = np.random.default_rng(4).normal(size=(1, 2, 5, 5)).astype("float16")
    for name in ["nn.max_pool2d", "nn.avg_pool2d"]:
        out = call(name, h, pool_size=[2, 2], padding=[1, 1])
        assert out.dtype == np.float16
    np.testing.assert_allclose(
        call("nn.avg_pool2d", h, pool_size=[2, 2]).astype("float64"),
        pool_loops(h, "avg", [2, 2], [1, 1], [1, 1], [0, 0], [0, 0], False, False),
        rtol=2e-3,
        atol=2e-3,
    )
    i8 = np.full((1, 1, 2), -100, "int8")
    padded = call("nn.max_pool1d", i8, pool_size=[1], padding=[1, 0])
    assert padded.dtype == np.int8 and padded.tolist() == [[[-128, -100, -100]]]
    # TVM sums in the input dtype: -200 wraps to 56 in int8, and 56 / 2 = 28
    assert call("nn.adaptive_avg_pool1d", i8, output_size=[1]).tolist() == [[[28]]]
