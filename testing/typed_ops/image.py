"""Call generators of the `image.*` operators (resize, crop_and_resize, dilation2d,
affine_grid, grid_sample).
"""

from __future__ import annotations

from typing import Any

from ...lang.op import Op
from ...lang.optable import OpTable
from ...lang.types import TensorType
from .conv import DATA_LAYOUT, LAST_LAYOUT
from .core import Generator, OpCall, Tape, _call, _index_array, _input, _shape, _window

GENERATORS: OpTable[Generator] = OpTable("test generator")
"""The call generators of this family (`typed_ops.GENERATORS` joins the families)."""


RESIZE_N = {"image.resize1d": 1, "image.resize2d": 2, "image.resize3d": 3}


@GENERATORS.register(*RESIZE_N)
def _resize(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    n = RESIZE_N[op.name]
    x = _input(t, x, ranks=(n + 2,), kinds="f", hi=4 if n == 3 else 5)
    if x is None:
        return None
    method = t.pick(("nearest_neighbor", "linear", "cubic"))
    attrs: dict[str, Any] = {
        "size": [t.choose(1, 6 if n < 3 else 4) for _ in range(n)],
        "layout": LAST_LAYOUT[n] if t.maybe(3) else DATA_LAYOUT[n],
        "method": method,
        "coordinate_transformation_mode": t.pick(
            ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel")
        ),
    }
    if method == "nearest_neighbor":
        attrs["rounding_method"] = t.pick(("", "round", "floor", "ceil"))
    if method == "cubic":
        attrs["cubic_alpha"] = t.pick((-0.5, -0.75))
        attrs["cubic_exclude"] = t.choose(0, 1)
    return _call(op, [x], **attrs)


@GENERATORS.register("image.crop_and_resize")
def _crop_and_resize(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4,), kinds="f", hi=5)
    if x is None:
        return None
    last = t.maybe(3)
    boxes = t.choose(1, 3)
    box_indices = _index_array(t, (boxes,), _shape(x)[0])
    return _call(
        op,
        [x, TensorType((boxes, 4), x.dtype), box_indices],
        crop_size=[t.choose(1, 4), t.choose(1, 4)],
        layout="NHWC" if last else "NCHW",
        method=t.pick(("bilinear", "nearest_neighbor")),
        extrapolation_value=t.pick((0.0, 1.5)),
    )


@GENERATORS.register("image.dilation2d")
def _dilation2d(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4,), kinds="f", hi=6)
    if x is None:
        return None
    _, c, h, w = _shape(x)
    win = _window(t, [h, w])
    padding = win.padding if len(win.padding) != 1 else win.padding * 2
    return _call(
        op,
        [x, TensorType((c, *win.sizes), x.dtype)],
        strides=win.strides,
        padding=padding,
        dilations=win.dilation,
    )


@GENERATORS.register("image.affine_grid")
def _affine_grid(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    if x is not None:
        x = _input(t, x, ranks=(3,), kinds="f", fits=lambda v: _shape(v)[1:] == (2, 3))
        if x is None:
            return None
    else:
        dtype = t.dtype("f")
        if dtype is None:
            return None
        x = TensorType((t.choose(1, 3), 2, 3), dtype)
    return _call(op, [x], target_shape=[t.choose(2, 5), t.choose(2, 5)])  # 1: no grid step


@GENERATORS.register("image.grid_sample")
def _grid_sample(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4, 5), kinds="f", hi=5)
    if x is None:
        return None
    k = x.ndim - 2
    grid = TensorType((_shape(x)[0], k, *t.dims(k, 1, 4)), x.dtype)
    methods = ("bilinear", "nearest", "bicubic") if k == 2 else ("bilinear", "nearest")
    return _call(
        op,
        [x, grid],
        method=t.pick(methods),
        layout="NCHW" if k == 2 else "NCDHW",
        padding_mode=t.pick(("zeros", "border", "reflection")),
        align_corners=t.maybe(5),
    )
