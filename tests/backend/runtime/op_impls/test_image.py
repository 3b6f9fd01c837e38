"""Reference image operators: resize, crop_and_resize, dilation2d, affine_grid, grid_sample."""

import itertools
import math

import numpy as np
import pytest
from relay.backend.runtime.op_impls import IMPLS
from relay.lang import get_op


def call(name, *args, **attrs):
    op = get_op(name)
    return IMPLS[op](list(args), op.make_attrs(**attrs))


def resize1d(values, size, **attrs):
    x = np.asarray(values, "float32").reshape(1, 1, -1)
    return call("image.resize1d", x, size=[size], **attrs)[0, 0].tolist()


def test_linear_resize_by_hand():
    assert resize1d([0, 10], 4) == [0, 2.5, 7.5, 10]  # half_pixel, clamped at the border
    al = resize1d([0, 10], 4, coordinate_transformation_mode="align_corners")
    assert al == pytest.approx([0, 10 / 3, 20 / 3, 10])
    assert resize1d([0, 10], 4, coordinate_transformation_mode="asymmetric") == [0, 5, 10, 10]
    assert resize1d([0, 10, 20], 1, coordinate_transformation_mode="pytorch_half_pixel") == [0]


@pytest.mark.parametrize(
    "rounding, want",
    [
        ("round", [1, 2, 2, 2]),
        ("round_prefer_floor", [1, 1, 2, 2]),
        ("round_prefer_ceil", [1, 2, 2, 2]),
        ("floor", [1, 1, 2, 2]),
        ("ceil", [1, 2, 2, 2]),
        ("", [1, 1, 2, 2]),
    ],
)
def test_nearest_rounding_methods_at_exact_halves(rounding, want):
    # asymmetric 2 -> 4: source coordinates 0, 0.5, 1, 1.5
    out = resize1d(
        [1, 2],
        4,
        method="nearest_neighbor",
        coordinate_transformation_mode="asymmetric",
        rounding_method=rounding,
    )
    assert out == want


def test_nearest_2d_integer_upscale_divides_integers_like_tvm():
    x = np.array([[[[1, 2], [3, 4]]]], "int32")
    out = call(
        "image.resize2d",
        x,
        size=[4, 4],
        method="nearest_neighbor",
        coordinate_transformation_mode="asymmetric",
        rounding_method="round",
    )
    np.testing.assert_array_equal(out, x.repeat(2, axis=2).repeat(2, axis=3))
    assert out.dtype == np.int32
    third = call(
        "image.resize2d",
        x.astype("float32"),
        size=[3, 3],
        method="nearest_neighbor",
        coordinate_transformation_mode="half_pixel",
    )  # coords -1/6, 1/2, 7/6; round
    assert third[0, 0, 0].tolist() == [1, 2, 2]


def keys_kernel(t, alpha):
    """Keys' cubic convolution kernel, written independently of TVM's spline weights."""
    t = abs(t)
    if t <= 1:
        return (alpha + 2) * t**3 - (alpha + 3) * t**2 + 1
    if t < 2:
        return alpha * t**3 - 5 * alpha * t**2 + 8 * alpha * t - 4 * alpha
    return 0.0


def keys_cubic(values, coord, alpha):
    """Cubic convolution at `coord`, out-of-range taps clamped to the border."""
    base = math.floor(coord)
    taps = range(base - 1, base + 3)
    return sum(
        values[min(max(i, 0), len(values) - 1)] * keys_kernel(coord - i, alpha) for i in taps
    )


@pytest.mark.parametrize("alpha", [-0.5, -0.75])
def test_cubic_resize_matches_keys_kernel(alpha):
    values = [1.0, 4.0, -2.0, 3.0, 0.5]
    out = resize1d(values, 7, method="cubic", cubic_alpha=alpha)
    for x, got in enumerate(out):
        coord = (x + 0.5) * 5 / 7 - 0.5
        assert got == pytest.approx(keys_cubic(values, coord, alpha), rel=1e-5, abs=1e-5)
    assert resize1d([2.0] * 4, 9, method="cubic", cubic_exclude=1) == pytest.approx([2.0] * 9)


def test_cubic_exclude_renormalizes_the_inside_taps():
    values = [0.0, 1.0, 2.0]
    out = resize1d(
        values, 5, method="cubic", cubic_exclude=1, coordinate_transformation_mode="asymmetric"
    )
    # source 0 is exact; near the border only the inside taps count
    assert out[0] == pytest.approx(0.0, abs=1e-6)
    coord = 0.6  # 3 -> 5 asymmetric: taps -1 (outside, dropped), 0, 1, 2
    inside = {i: keys_kernel(coord - i, -0.5) for i in range(0, 3)}
    want = sum(values[i] * w for i, w in inside.items()) / sum(inside.values())
    assert out[1] == pytest.approx(want, rel=1e-5)


def test_tf_crop_and_resize_mode_extrapolates():
    out = resize1d(
        [1, 2, 3],
        3,
        coordinate_transformation_mode="tf_crop_and_resize",
        roi=[0.5, 1.5],
        extrapolation_value=-9.0,
    )
    # source coordinates 1, 2, 3: the last is outside [0, 2]
    assert out == [2, 3, -9]


def test_linear_resize_reproduces_affine_functions_in_3d_and_layouts():
    z, y, x = np.meshgrid(np.arange(3), np.arange(4), np.arange(2), indexing="ij")
    data = (x + 2 * y + 3 * z).astype("float32")[None, None]
    out = call(
        "image.resize3d", data, size=[5, 7, 3], coordinate_transformation_mode="align_corners"
    )
    zz, yy, xx = np.meshgrid(
        np.linspace(0, 2, 5), np.linspace(0, 3, 7), np.linspace(0, 1, 3), indexing="ij"
    )
    np.testing.assert_allclose(out[0, 0], xx + 2 * yy + 3 * zz, rtol=1e-5, atol=1e-5)
    img = np.random.default_rng(0).normal(size=(2, 3, 4, 5)).astype("float32")
    nchw = call("image.resize2d", img, size=[7, 3])
    nhwc = call("image.resize2d", img.transpose(0, 2, 3, 1), size=[7, 3], layout="NHWC")
    np.testing.assert_allclose(nhwc, nchw.transpose(0, 2, 3, 1), rtol=1e-6)
    ints = call("image.resize1d", np.array([[[0, 3]]], "int32"), size=[4])
    assert ints.dtype == np.int32 and ints.tolist() == [[[0, 0, 2, 3]]]  # 0.75 and 2.25 truncate
    assert call("image.resize2d", img, size=[2, 2], out_dtype="float16").dtype == np.float16


def test_crop_and_resize():
    data = np.random.default_rng(1).normal(size=(2, 3, 4, 5)).astype("float32")
    boxes = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0.25, 0.5, 0.75, 1.5]], "float32")
    out = call(
        "image.crop_and_resize",
        data,
        boxes,
        np.array([1, 0, 0], "int32"),
        crop_size=[4, 5],
        extrapolation_value=7.0,
    )
    assert out.shape == (3, 3, 4, 5)
    np.testing.assert_allclose(out[0], data[1], rtol=1e-6)
    np.testing.assert_allclose(out[1], data[0], rtol=1e-6)
    # third box: rows 0.75 .. 2.25, columns 2 .. 6 (past column 4: extrapolated)
    assert (out[2, :, :, 3:] == 7.0).all()
    np.testing.assert_allclose(
        out[2, :, 0, 0], data[0, :, 0, 2] * 0.25 + data[0, :, 1, 2] * 0.75, rtol=1e-5
    )
    center = call(
        "image.crop_and_resize",
        data,
        boxes[:1],
        np.array([0]),
        crop_size=[1, 1],
        method="nearest_neighbor",
    )
    np.testing.assert_allclose(center[0, :, 0, 0], data[0, :, 2, 2])  # 1.5, 2 round half away


def test_dilation2d_matches_loops():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1, 2, 5, 6)).astype("float32")
    w = rng.normal(size=(2, 2, 3)).astype("float32")
    out = call("image.dilation2d", x, w, strides=[2, 1], padding=[1, 0, 0, 1], dilations=[1, 2])
    xp = np.pad(x, [(0, 0), (0, 0), (1, 0), (0, 1)])
    oh, ow = (6 - 2) // 2 + 1, (7 - 5) // 1 + 1
    assert out.shape == (1, 2, oh, ow)
    for c, i, j in itertools.product(range(2), range(oh), range(ow)):
        best = max(xp[0, c, i * 2 + p, j + q * 2] + w[c, p, q] for p in range(2) for q in range(3))
        assert out[0, c, i, j] == pytest.approx(best)
    nhwc = call(
        "image.dilation2d",
        x.transpose(0, 2, 3, 1),
        w.transpose(1, 2, 0),
        strides=[2, 1],
        padding=[1, 0, 0, 1],
        dilations=[1, 2],
        data_layout="NHWC",
        kernel_layout="HWI",
    )
    np.testing.assert_allclose(nhwc, out.transpose(0, 2, 3, 1))


def identity_grid(h, w):
    theta = np.array([[[1, 0, 0], [0, 1, 0]]], "float32")
    return call("image.affine_grid", theta, target_shape=[h, w])


def test_affine_grid():
    grid = identity_grid(3, 5)
    assert grid.shape == (1, 2, 3, 5) and grid.dtype == np.float32
    np.testing.assert_allclose(grid[0, 0, 1], np.linspace(-1, 1, 5), atol=1e-6)
    np.testing.assert_allclose(grid[0, 1, :, 2], np.linspace(-1, 1, 3), atol=1e-6)
    theta = np.array([[[0, 2, 0.5], [1, 0, -1]]], "float32")
    g = call("image.affine_grid", theta, target_shape=[2, 2])
    np.testing.assert_allclose(g[0, 0], 2 * grid_y(2, 2) + 0.5, atol=1e-6)


def grid_y(h, w):
    return np.repeat(np.linspace(-1, 1, h)[:, None], w, axis=1)


@pytest.mark.parametrize("method", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_of_the_identity_grid_is_the_data(method):
    data = np.random.default_rng(3).normal(size=(1, 2, 4, 5)).astype("float32")
    out = call("image.grid_sample", data, identity_grid(4, 5), method=method)
    np.testing.assert_allclose(out, data, rtol=1e-4, atol=1e-4)


def test_grid_sample_padding_modes_by_hand():
    data = np.array([[[[1.0, 2.0, 3.0, 4.0]]]], "float32")  # H = 1, W = 4
    # align_corners=False: pixel p = -0.5 + (x + 1) * 2: x = -1 -> p = -0.5, x = 1.25 -> p = 4
    grid = np.zeros((1, 2, 1, 3), "float32")
    grid[0, 0, 0] = [-1.0, 1.25, 0.0]
    common = dict(align_corners=False)
    zeros = call("image.grid_sample", data, grid, padding_mode="zeros", **common)
    assert zeros[0, 0, 0].tolist() == pytest.approx([0.5, 0.0, 2.5])
    border = call("image.grid_sample", data, grid, padding_mode="border", **common)
    assert border[0, 0, 0].tolist() == pytest.approx([1.0, 4.0, 2.5])
    refl = call("image.grid_sample", data, grid, padding_mode="reflection", **common)
    assert refl[0, 0, 0].tolist() == pytest.approx([1.0, 4.0, 2.5])


def test_grid_sample_3d_identity():
    data = np.random.default_rng(4).normal(size=(1, 1, 2, 3, 4)).astype("float32")
    z, y, x = np.meshgrid(
        np.linspace(-1, 1, 2), np.linspace(-1, 1, 3), np.linspace(-1, 1, 4), indexing="ij"
    )
    grid = np.stack([x, y, z])[None].astype("float32")
    out = call("image.grid_sample", data, grid, layout="NCDHW")
    np.testing.assert_allclose(out, data, rtol=1e-5, atol=1e-5)
