"""Compute definitions of image operators (resize in every method, coordinate mode and
rounding; upsampling; crop_and_resize; dilation2d; affine_grid; grid_sample) against the
reference implementations."""

from __future__ import annotations

import numpy as np
import pytest
from relay.testing.compute_check import RandomArrays, check_compute

ARRAYS = RandomArrays(7, int_range=(-5, 6))
RNG = ARRAYS.rng
normal, ints = ARRAYS.normal, ARRAYS.ints


MODES = [
    "half_pixel",
    "align_corners",
    "asymmetric",
    "pytorch_half_pixel",
    "tf_half_pixel_for_nn",
]
ROUNDINGS = ["round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil", ""]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("sizes", [(4, 7), (8, 2), (3, 1)])
def test_resize2d_nearest_every_mode_and_rounding(mode, rounding, sizes):
    x = normal(1, 2, 4, 3)
    (out,) = check_compute(
        "image.resize2d",
        [x],
        size=list(sizes),
        method="nearest_neighbor",
        coordinate_transformation_mode=mode,
        rounding_method=rounding,
    )
    assert out.op.tag == "injective"


@pytest.mark.parametrize("mode", [*MODES, "tf_crop_and_resize"])
@pytest.mark.parametrize("method", ["linear", "cubic"])
def test_resize2d_interpolation(mode, method):
    roi = [0.1, -0.2, 0.9, 1.3] if mode == "tf_crop_and_resize" else None
    for size in ([5, 7], [3, 2], [1, 4]):
        check_compute(
            "image.resize2d",
            [normal(2, 3, 4, 5)],
            size=size,
            method=method,
            coordinate_transformation_mode=mode,
            roi=roi,
            extrapolation_value=-3.0,
        )


@pytest.mark.parametrize("alpha", [-0.5, -0.75])
@pytest.mark.parametrize("exclude", [0, 1])
def test_resize_cubic_alpha_and_exclude(alpha, exclude):
    check_compute(
        "image.resize1d",
        [normal(2, 2, 6)],
        size=[11],
        method="cubic",
        cubic_alpha=alpha,
        cubic_exclude=exclude,
    )
    check_compute(
        "image.resize2d",
        [normal(1, 1, 3, 5)],
        size=[7, 4],
        method="cubic",
        cubic_alpha=alpha,
        cubic_exclude=exclude,
    )


def test_resize_integer_data_and_out_dtypes():
    x = ints(1, 2, 5, 4, lo=0, hi=100)
    check_compute("image.resize2d", [x], size=[7, 9])
    check_compute("image.resize2d", [x.astype("uint8")], size=[3, 6], method="cubic")
    check_compute(
        "image.resize2d",
        [x],
        size=[8, 8],
        method="nearest_neighbor",
        coordinate_transformation_mode="asymmetric",
    )
    check_compute("image.resize2d", [normal(1, 2, 3, 3)], size=[5, 5], out_dtype="float64")
    check_compute("image.resize1d", [np.array([[[0, 3]]], "int32")], size=[4])
    check_compute(
        "image.resize1d",
        [ints(2, 3, 5)],
        size=[9],
        method="nearest_neighbor",
        rounding_method="round",
    )


def test_resize_layouts_and_dimensions():
    check_compute("image.resize2d", [normal(2, 4, 5, 3)], size=[7, 3], layout="NHWC")
    check_compute("image.resize1d", [normal(2, 5, 3)], size=[8], layout="NWC", method="cubic")
    check_compute(
        "image.resize3d",
        [normal(1, 2, 3, 4, 2)],
        size=[5, 7, 3],
        coordinate_transformation_mode="align_corners",
    )
    check_compute(
        "image.resize3d",
        [normal(1, 3, 4, 2, 2)],
        size=[2, 5, 3],
        layout="NDHWC",
        method="nearest_neighbor",
    )
    check_compute("image.resize3d", [normal(1, 1, 3, 3, 3)], size=[4, 4, 4], method="cubic")


@pytest.mark.parametrize("method", ["nearest_neighbor", "bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_upsampling(method, align_corners, layout):
    x = normal(1, 2, 3, 4) if layout == "NCHW" else normal(1, 3, 4, 2)
    for sh, sw in [(2.0, 2.0), (1.5, 2.5), (3.0, 1.0)]:
        check_compute(
            "nn.upsampling",
            [x],
            scale_h=sh,
            scale_w=sw,
            method=method,
            align_corners=align_corners,
            layout=layout,
        )
    check_compute("nn.upsampling", [ints(1, 1, 3, 3)], scale_h=2.0, scale_w=3.0, layout="NCHW")


@pytest.mark.parametrize("method", ["nearest_neighbor", "trilinear"])
@pytest.mark.parametrize("mode", ["half_pixel", "align_corners", "asymmetric"])
def test_upsampling3d(method, mode):
    check_compute(
        "nn.upsampling3d",
        [normal(1, 2, 2, 3, 2)],
        scale_d=2.0,
        scale_h=1.5,
        scale_w=2.0,
        method=method,
        coordinate_transformation_mode=mode,
    )
    check_compute(
        "nn.upsampling3d",
        [normal(1, 2, 3, 2, 2)],
        scale_d=2.0,
        scale_h=2.0,
        scale_w=1.0,
        layout="NDHWC",
    )


@pytest.mark.parametrize("method", ["bilinear", "nearest_neighbor"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_crop_and_resize(method, layout):
    data = normal(2, 3, 4, 5) if layout == "NCHW" else normal(2, 4, 5, 3)
    boxes = np.array(
        [[0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9], [0.25, 0.5, 0.75, 1.5], [-0.3, 0.2, 0.4, 0.6]],
        "float32",
    )
    index = np.array([1, 0, 0, 1], "int32")
    for crop in ([4, 5], [1, 1], [3, 2]):
        check_compute(
            "image.crop_and_resize",
            [data, boxes, index],
            crop_size=crop,
            method=method,
            layout=layout,
            extrapolation_value=7.0,
        )
    check_compute(
        "image.crop_and_resize",
        [ints(2, 3, 4, 4, lo=0, hi=50), boxes, index],
        crop_size=[3, 3],
        method=method,
    )


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_dilation2d(layout):
    x, w = normal(1, 2, 5, 6), normal(2, 3, 2)
    if layout == "NHWC":
        x, w = (
            np.ascontiguousarray(x.transpose(0, 2, 3, 1)),
            np.ascontiguousarray(w.transpose(1, 2, 0)),
        )
    kernel_layout = "IHW" if layout == "NCHW" else "HWI"
    (out,) = check_compute(
        "image.dilation2d",
        [x, w],
        strides=[2, 1],
        padding=[1, 0, 0, 1],
        dilations=[1, 2],
        data_layout=layout,
        kernel_layout=kernel_layout,
    )
    assert out.op.tag == "dilation2d"
    xi, wi = ints(1, 2, 4, 4), ints(2, 2, 2)
    check_compute("image.dilation2d", [xi, wi], padding=[1, 1])


def test_affine_grid():
    theta = normal(2, 2, 3)
    check_compute("image.affine_grid", [theta], target_shape=[3, 4])
    check_compute("image.affine_grid", [theta.astype("float64")], target_shape=[5, 2])


@pytest.mark.parametrize("method", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_2d(method, padding_mode, align_corners):
    data = normal(2, 3, 4, 5)
    grid = (RNG.uniform(-1.6, 1.6, size=(2, 2, 3, 6))).astype("float32")
    grid[0, :, 0, 0] = [0.5, -0.25]  # exact halves for nearest's rounding
    check_compute(
        "image.grid_sample",
        [data, grid],
        method=method,
        padding_mode=padding_mode,
        align_corners=align_corners,
    )


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_3d(method, padding_mode):
    data = normal(1, 2, 3, 4, 3)
    grid = RNG.uniform(-1.4, 1.4, size=(1, 3, 2, 3, 2)).astype("float32")
    check_compute(
        "image.grid_sample", [data, grid], method=method, padding_mode=padding_mode, layout="NCDHW"
    )
