"""Relations of pooling against naive numpy pooling (windows, padding, dilation, ceil_mode,
layouts) and of global and adaptive pools."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from numpy.lib.stride_tricks import sliding_window_view
from relay.lang import ANY, IncompleteType, ShapeVar, get_op
from relay.testing.relations import StandaloneContext as Ctx
from relay.testing.relations import f32
from relay.testing.relations import op_call_type as call_type
from relay.testing.relations import op_type_error as type_error
from relay.typecheck import relation_for

LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def naive_max_pool(x, size, strides, before, after, dilation, ceil_mode):
    """Max pooling of NC... data by numpy windows; ceil_mode keeps a last partial window."""
    n = x.ndim - 2
    extra = [s - 1 if ceil_mode else 0 for s in strides]
    pads = [(0, 0), (0, 0), *((b, a + e) for b, a, e in zip(before, after, extra))]
    x = np.pad(x, pads, constant_values=-np.inf)
    extent = [(k - 1) * d + 1 for k, d in zip(size, dilation)]
    win = sliding_window_view(x, extent, axis=tuple(range(2, 2 + n)))
    win = win[(..., *(slice(None, None, d) for d in dilation))]
    win = win[(slice(None), slice(None), *(slice(None, None, s) for s in strides))]
    return win.max(axis=tuple(range(-n, 0)))


@given(st.sampled_from([1, 2, 3]), st.data())
def test_pools_match_naive_numpy(n, data):
    size = [data.draw(st.integers(1, 3)) for _ in range(n)]
    dilation = [data.draw(st.integers(1, 2)) for _ in range(n)]
    strides = [data.draw(st.integers(1, 3)) for _ in range(n)]
    before = [data.draw(st.integers(0, 1)) for _ in range(n)]
    after = [data.draw(st.integers(0, 1)) for _ in range(n)]
    dims = [
        data.draw(st.integers(max(1, (k - 1) * d + 1 - b - a), 6))
        for k, d, b, a in zip(size, dilation, before, after)
    ]
    ceil_mode = data.draw(st.booleans())
    x = np.zeros((1, 2, *dims))
    expected = naive_max_pool(x, size, strides, before, after, dilation, ceil_mode).shape
    closed_form = tuple(
        (s + b + a - (k - 1) * d - 1 + (st_ - 1 if ceil_mode else 0)) // st_ + 1
        for s, b, a, k, d, st_ in zip(dims, before, after, size, dilation, strides)
    )
    assert expected[2:] == closed_form
    for kind in ("max", "avg"):
        got = call_type(
            f"nn.{kind}_pool{n}d",
            f32(*x.shape),
            pool_size=size,
            strides=strides,
            dilation=dilation,
            padding=before + after,
            ceil_mode=ceil_mode,
        )
        assert got == f32(*expected)
    # channels-last layout: the same sizes on the moved axes
    last = "N" + LAYOUTS[n][2:] + "C"
    moved = np.moveaxis(np.zeros(expected), 1, -1).shape
    got = call_type(
        f"nn.max_pool{n}d",
        f32(*np.moveaxis(x, 1, -1).shape),
        pool_size=size,
        strides=strides,
        dilation=dilation,
        padding=before + after,
        ceil_mode=ceil_mode,
        layout=last,
    )
    assert got == f32(*moved)


def test_pool_padding_forms_and_blocked_channels():
    x = f32(1, 2, 7, 7)
    one = call_type("nn.max_pool2d", x, pool_size=[3, 3], padding=[1])
    assert one == call_type("nn.max_pool2d", x, pool_size=[3, 3], padding=[1, 1])
    assert one == call_type("nn.max_pool2d", x, pool_size=[3, 3], padding=[1, 1, 1, 1]) == x
    got = call_type(
        "nn.avg_pool2d", f32(1, 2, 7, 7, 16), pool_size=[2, 2], strides=[2, 2], layout="NCHW16c"
    )
    assert got == f32(1, 2, 3, 3, 16)


@given(st.lists(st.integers(1, 5), min_size=2, max_size=2))
def test_global_pools_match_numpy(hw):
    x = np.zeros((2, 3, *hw))
    expected = x.mean(axis=(2, 3), keepdims=True).shape
    for kind in ("max", "avg"):
        assert call_type(f"nn.global_{kind}_pool2d", f32(*x.shape)) == f32(*expected)
    nhwc = x.transpose(0, 2, 3, 1).max(axis=(1, 2), keepdims=True).shape
    got = call_type("nn.global_avg_pool2d", f32(2, *hw, 3), layout="NHWC")
    assert got == f32(*nhwc)


@given(st.sampled_from([1, 2, 3]), st.data())
def test_adaptive_pools(n, data):
    dims = [data.draw(st.integers(1, 6)) for _ in range(n)]
    form = data.draw(st.sampled_from(["empty", "one", "all"]))
    sizes = {"empty": [], "one": [data.draw(st.integers(1, 4))], "all": None}[form]
    if sizes is None:
        sizes = [data.draw(st.integers(1, 4)) for _ in range(n)]
    wanted = dims if not sizes else (sizes * n if len(sizes) == 1 else sizes)
    for kind in ("max", "avg"):
        got = call_type(f"nn.adaptive_{kind}_pool{n}d", f32(1, 2, *dims), output_size=sizes)
        assert got == f32(1, 2, *wanted)


def test_pool_errors():
    assert "smaller than the pooling window 5" in type_error(
        "nn.max_pool2d", f32(1, 1, 4, 8), pool_size=[3, 3], dilation=[2, 1]
    )
    assert 'layout "NCHW4h" must have the axes H, W, none of them split' in type_error(
        "nn.max_pool2d", f32(1, 1, 1, 8, 4), pool_size=[1, 1], layout="NCHW4h"
    )
    assert "rank 3, but layout" in type_error("nn.max_pool2d", f32(1, 1, 4), pool_size=[1, 1])
    assert "`pool_size` must have 1 or 2 values, but it has 3" in type_error(
        "nn.max_pool2d", f32(1, 1, 4, 4), pool_size=[1, 1, 1]
    )
    assert "output_size=[1, 2, 3] must have at most 2 values" in type_error(
        "nn.adaptive_avg_pool2d", f32(1, 1, 4, 4), output_size=[1, 2, 3]
    )


def test_unknown_dims_and_inputs():
    n = ShapeVar("n")
    got = call_type("nn.max_pool2d", f32(n, 3, ANY, 8), pool_size=[2, 2], strides=[2, 2])
    assert got == f32(n, 3, ANY, 4)
    op = get_op("nn.max_pool2d")
    attrs = op.make_attrs(pool_size=[2, 2])
    assert relation_for(op)([IncompleteType()], attrs, Ctx()) is None
    assert relation_for(op)([f32(1, 1, n, 4)], attrs, Ctx(final=False)) is None
    assert relation_for(op)([f32(1, 1, n, 4)], attrs, Ctx(final=True)) == f32(1, 1, ANY, 3)
