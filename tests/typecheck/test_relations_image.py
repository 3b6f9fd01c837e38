"""Relations of image operators against small numpy implementations (nearest resizing,
cropping, morphological dilation, affine grids, grid sampling)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from numpy.lib.stride_tricks import sliding_window_view
from relay.lang import ANY, IncompleteType, TensorType, get_op
from relay.testing.relations import StandaloneContext as Ctx
from relay.testing.relations import f32
from relay.testing.relations import op_call_type as call_type
from relay.testing.relations import op_type_error as type_error
from relay.typecheck import relation_for

dims = st.integers(1, 5)


def nearest(x, size):
    """Nearest-neighbour resize of the trailing axes of NC... data by index arrays."""
    for axis, out in enumerate(size, 2):
        picks = np.arange(out) * x.shape[axis] // out
        x = np.take(x, picks, axis=axis)
    return x


@given(st.sampled_from([1, 2, 3]), st.data())
def test_resize_matches_numpy(n, data):
    shape = [data.draw(dims) for _ in range(n)]
    size = [data.draw(dims) for _ in range(n)]
    x = np.zeros((2, 3, *shape), dtype="float32")
    expected = nearest(x, size)
    got = call_type(f"image.resize{n}d", f32(*x.shape), size=size, method="nearest_neighbor")
    assert got == f32(*expected.shape)
    last = np.moveaxis(x, 1, -1)
    layout = {1: "NWC", 2: "NHWC", 3: "NDHWC"}[n]
    got = call_type(f"image.resize{n}d", f32(*last.shape), size=size, layout=layout)
    assert got == f32(*np.moveaxis(expected, 1, -1).shape)
    got = call_type(f"image.resize{n}d", f32(*x.shape), size=size, out_dtype="float16")
    assert got == TensorType(expected.shape, "float16")


@given(dims, dims, st.integers(1, 4), st.lists(dims, min_size=2, max_size=2))
def test_crop_and_resize_matches_numpy(h, w, boxes, crop):
    x = np.zeros((2, 3, h, w), dtype="float32")
    crops = [nearest(x[i % 2 : i % 2 + 1], crop)[0] for i in range(boxes)]
    expected = np.stack(crops).shape
    got = call_type(
        "image.crop_and_resize",
        f32(*x.shape),
        f32(boxes, 4),
        TensorType((boxes,), "int32"),
        crop_size=crop,
    )
    assert got == f32(*expected)


@given(dims, dims, st.integers(1, 3), st.integers(1, 2), st.integers(1, 2), st.integers(0, 1))
def test_dilation2d_matches_numpy(h, w, k, stride, dil, pad):
    h, w = h + (k - 1) * dil, w + (k - 1) * dil
    x = np.zeros((1, 3, h, w), dtype="float32")
    weight = np.zeros((3, k, k), dtype="float32")
    padded = np.pad(x, [(0, 0), (0, 0), (pad, pad), (pad, pad)], constant_values=-np.inf)
    extent = (k - 1) * dil + 1
    win = sliding_window_view(padded, (extent, extent), axis=(2, 3))[..., ::dil, ::dil]
    win = win[:, :, ::stride, ::stride]
    expected = (win + weight[None, :, None, None]).max(axis=(-2, -1)).shape
    got = call_type(
        "image.dilation2d",
        f32(*x.shape),
        f32(*weight.shape),
        strides=[stride, stride],
        dilations=[dil, dil],
        padding=[pad, pad],
    )
    assert got == f32(*expected)


@given(st.integers(1, 3), dims, dims)
def test_affine_grid_and_grid_sample_match_numpy(batch, h, w):
    theta = np.zeros((batch, 2, 3), dtype="float32")
    ys, xs = np.meshgrid(np.linspace(-1, 1, h), np.linspace(-1, 1, w), indexing="ij")
    coords = np.stack([xs, ys, np.ones_like(xs)])  # (3, h, w)
    grid = np.einsum("bij,jhw->bihw", theta, coords)
    got = call_type("image.affine_grid", f32(*theta.shape), target_shape=[h, w])
    assert got == f32(*grid.shape)
    data = np.zeros((batch, 4, 5, 6), dtype="float32")
    rows = np.zeros((batch, h, w), dtype="int64")
    cols = np.zeros((batch, h, w), dtype="int64")
    sampled = np.stack([data[b][:, rows[b], cols[b]] for b in range(batch)])
    got = call_type("image.grid_sample", f32(*data.shape), f32(*grid.shape))
    assert got == f32(*sampled.shape)
    got = call_type(
        "image.grid_sample", f32(batch, 4, 2, 5, 6), f32(batch, 3, 3, h, w), layout="NCDHW"
    )
    assert got == f32(batch, 4, 3, h, w)


def test_image_errors():
    assert "size must list 2 output sizes, not None" in type_error(
        "image.resize2d", f32(1, 1, 4, 4)
    )
    assert 'layout "NCW" must be convertible to NCHW' in type_error(
        "image.resize2d", f32(1, 1, 4), size=[2, 2], layout="NCW"
    )
    assert "must have 4 coordinates per box" in type_error(
        "image.crop_and_resize",
        f32(1, 1, 4, 4),
        f32(3, 5),
        TensorType((3,), "int32"),
        crop_size=[2, 2],
    )
    assert "the box indices must have an integer dtype" in type_error(
        "image.crop_and_resize", f32(1, 1, 4, 4), f32(3, 4), f32(3), crop_size=[2, 2]
    )
    assert "must have shape (batch, 2, 3)" in type_error(
        "image.affine_grid", f32(2, 3, 3), target_shape=[4, 4]
    )
    assert "must hold 2 coordinates per point" in type_error(
        "image.grid_sample", f32(1, 2, 4, 4), f32(1, 3, 4, 4)
    )
    assert "same channels" in type_error("image.dilation2d", f32(1, 3, 4, 4), f32(2, 2, 2))


def test_unknown_dims_and_inputs():
    got = call_type("image.resize2d", f32(ANY, 3, ANY, 4), size=[8, 8])
    assert got == f32(ANY, 3, 8, 8)
    op = get_op("image.resize2d")
    assert relation_for(op)([IncompleteType()], op.make_attrs(size=[2, 2]), Ctx()) is None
    op = get_op("image.grid_sample")
    assert relation_for(op)([f32(1, 1, 2, 2), IncompleteType()], op.make_attrs(), Ctx()) is None
