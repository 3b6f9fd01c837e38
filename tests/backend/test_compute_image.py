"""Compute definitions of image operators (resize in every method, coordinate mode and
rounding; upsampling; crop_and_resize; dilation2d; affine_grid; grid_sample) against the
reference implementations."""

from __future__ import annotations

import numpy as np
import pytest
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
    (out,) = check(
        "image.resize2d",
        x,
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
        check(
            "image.resize2d",
            normal(2, 3, 4, 5),
            size=size,
            method=method,
            coordinate_transformation_mode=mode,
            roi=roi,
            extrapolation_value=-3.0,
        )


@pytest.mark.parametrize("alpha", [-0.5, -0.75])
@pytest.mark.parametrize("exclude", [0, 1])
def test_resize_cubic_alpha_and_exclude(alpha, exclude):
    check(
        "image.resize1d",
        normal(2, 2, 6),
        size=[11],
        method="cubic",
        cubic_alpha=alpha,
        cubic_exclude=exclude,
    )
    check(
        "image.resize2d",
        normal(1, 1, 3, 5),
        size=[7, 4],
        method="cubic",
        cubic_alpha=alpha,
        cubic_exclude=exclude,
    )


def test_resize_integer_data_and_out_dtypes():
    x = ints(1, 2, 5, 4, lo=0, hi=100)
    check("image.resize2d", x, size=[7, 9])
    check("image.resize2d", x.astype("uint8"), size=[3, 6], method="cubic")
    check(
        "image.resize2d",
        x,
        size=[8, 8],
        method="nearest_neighbor",
        coordinate_transformation_mode="asymmetric",
    )
    check("image.resize2d", normal(1, 2, 3, 3), size=[5, 5], out_dtype="float64")
    check("image.resize1d", np.array([[[0, 3]]], "int32"), size=[4])
    check(
        "image.resize1d",
        ints(2, 3, 5),
        size=[9],
        method="nearest_neighbor",
        rounding_method="round",
    )


def test_resize_layouts_and_dimensions():
    check("image.resize2d", normal(2, 4, 5, 3), size=[7, 3], layout="NHWC")
    check("image.resize1d", normal(2, 5, 3), size=[8], layout="NWC", method="cubic")
    check(
        "image.resize3d",
        normal(1, 2, 3, 4, 2),
        size=[5, 7, 3],
        coordinate_transformation_mode="align_corners",
    )
    check(
        "image.resize3d",
        normal(1, 3, 4, 2, 2),
        size=[2, 5, 3],
        layout="NDHWC",
        method="nearest_neighbor",
    )
    check("image.resize3d", normal(1, 1, 3, 3, 3), size=[4, 4, 4], method="cubic")


@pytest.mark.parametrize("method", ["nearest_neighbor", "bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_upsampling(method, align_corners, layout):
    x = normal(1, 2, 3, 4) if layout == "NCHW" else normal(1, 3, 4, 2)
    for sh, sw in [(2.0, 2.0), (1.5, 2.5), (3.0, 1.0)]:
        check(
            "nn.upsampling",
            x,
            scale_h=sh,
            scale_w=sw,
            method=method,
            align_corners=align_corners,
            layout=layout,
        )
    check("nn.upsampling", ints(1, 1, 3, 3), scale_h=2.0, scale_w=3.0, layout="NCHW")


@pytest.mark.parametrize("method", ["nearest_neighbor", "trilinear"])
@pytest.mark.parametrize("mode", ["half_pixel", "align_corners", "asymmetric"])
def test_upsampling3d(method, mode):
    check(
        "nn.upsampling3d",
        normal(1, 2, 2, 3, 2),
        scale_d=2.0,
        scale_h=1.5,
        scale_w=2.0,
        method=method,
        coordinate_transformation_mode=mode,
    )
    check(
        "nn.upsampling3d",
        normal(1, 2, 3, 2, 2),
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
        check(
            "image.crop_and_resize",
            data,
            boxes,
            index,
            crop_size=crop,
            method=method,
            layout=layout,
            extrapolation_value=7.0,
        )
    check(
        "image.crop_and_resize",
        ints(2, 3, 4, 4, lo=0, hi=50),
        boxes,
        index,
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
    (out,) = check(
        "image.dilation2d",
        x,
        w,
        strides=[2, 1],
        padding=[1, 0, 0, 1],
        dilations=[1, 2],
        data_layout=layout,
        kernel_layout=kernel_layout,
    )
    assert out.op.tag == "dilation2d"
    xi, wi = ints(1, 2, 4, 4), ints(2, 2, 2)
    check("image.dilation2d", xi, wi, padding=[1, 1])


def test_affine_grid():
    theta = normal(2, 2, 3)
    check("image.affine_grid", theta, target_shape=[3, 4])
    check("image.affine_grid", theta.astype("float64"), target_shape=[5, 2])


@pytest.mark.parametrize("method", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_2d(method, padding_mode, align_corners):
    data = normal(2, 3, 4, 5)
    grid = (RNG.uniform(-1.6, 1.6, size=(2, 2, 3, 6))).astype("float32")
    grid[0, :, 0, 0] = [0.5, -0.25]  # exact halves for nearest's rounding
    check(
        "image.grid_sample",
        data,
        grid,
        method=method,
        padding_mode=padding_mode,
        align_corners=align_corners,
    )


@pytest.mark.parametrize("method", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_3d(method, padding_mode):
    data = normal(1, 2, 3, 4, 3)
    grid = RNG.uniform(-1.4, 1.4, size=(1, 3, 2, 3, 2)).astype("float32")
    check("image.grid_sample", data, grid, method=method, padding_mode=padding_mode, layout="NCDHW")
