"""Reference implementations of image operators, with TVM semantics (topi `image/`).

Resizing (`image.resize{1,2,3}d`, also behind `nn.upsampling*`) maps each output index to a
source coordinate exactly as TVM does, in float32 (this decides which pixel nearest
neighbour picks): "half_pixel" `(x + 0.5) * in / out - 0.5`, "align_corners"
`(in - 1) / (out - 1) * x`, "asymmetric" `in / out * x`, "pytorch_half_pixel",
"tf_half_pixel_for_nn" and "tf_crop_and_resize" (from `roi`, outside points get
`extrapolation_value`). Nearest neighbour rounds by `rounding_method` ("round" is half away
from zero; "floor"/"ceil" nudge by 1e-5; empty means "round" for align_corners, else
"floor"); in 2-D with "asymmetric" and an integer upscale factor TVM divides integers
instead (`x // factor`). Linear and cubic (`cubic_alpha`, `cubic_exclude`) interpolation
clamp source pixels to the border; the interpolation itself is done in float64 (TVM: float32)
and cast to `out_dtype` (null: the input's; to integers by truncation). Nearest neighbour
copies pixels exactly.

`crop_and_resize` samples each box `[y1, x1, y2, x2]` (normalized) of image
`box_indices[b]` like "tf_crop_and_resize"; `dilation2d` is the max over the window of
`data + weight` with zero padding; `affine_grid` and `grid_sample` follow TVM's topi
(`grid_sample`'s nearest rounds half to even, its bicubic uses A = -0.75).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ....lang.attrs import Attrs
from ....lang.opdefs import semantics
from ....lang.opdefs.semantics import RESIZE_METHODS
from ....lang.optable import OpTable
from ..values import EvalError, Value
from . import Impl
from .conv import pad_pairs
from .transform import (
    as_tensor,
    dtype_or,
    need_attrs,
    semantic_errors,
    spatial_axes,
    tensor_args,
)

IMPLS: OpTable[Impl] = OpTable("reference implementation")
"""The reference implementations of this family (`op_impls.IMPLS` joins them)."""

Array = np.ndarray
F32 = np.float32


def source_coordinates(
    out_index: Array, n_in: int, n_out: int, mode: str, start: float = 0.0, end: float = 0.0
) -> Array:
    """TVM's `get_inx` (`semantics.source_coordinate`): the float32 source coordinate of
    each output index."""
    x = np.asarray(out_index).astype(F32)
    with semantic_errors():
        coord = semantics.source_coordinate(x, n_in, n_out, mode, F32, start, end)
    return coord if isinstance(coord, np.ndarray) else np.full_like(x, coord)


def _round_half_away(v: Array) -> Array:
    whole = np.trunc(v)
    return whole + np.where(np.abs(v - whole) >= 0.5, np.sign(v), 0).astype(v.dtype)


def nearest_index(coord: Array, rounding: str) -> Array:
    """TVM's `get_closest_index` (before clamping), as int64."""
    if rounding == "round":
        index = _round_half_away(coord)
    elif rounding == "round_prefer_floor":
        index = np.ceil(coord - F32(0.5))
    elif rounding == "round_prefer_ceil":
        index = np.floor(coord + F32(0.5))
    elif rounding == "floor":
        index = np.floor(coord + F32(1e-5))
    elif rounding == "ceil":
        index = np.ceil(coord - F32(1e-5))
    else:
        raise EvalError(f"resize: unknown rounding_method `{rounding}`")
    return index.astype(np.int64)


def cubic_weights(t: Array, alpha: float) -> list[Array]:
    """TVM's cubic spline weights of the 4 taps at offsets -1, 0, 1, 2."""
    t2, t3 = t * t, t * t * t
    return [
        alpha * (t3 - 2 * t2 + t),
        (alpha + 2) * t3 - (3 + alpha) * t2 + 1,
        -(alpha + 2) * t3 + (3 + 2 * alpha) * t2 - alpha * t,
        -alpha * t3 + alpha * t2,
    ]


Taps = list[tuple[Array, Array | None]]


def axis_taps(
    coord: Array, n_in: int, method: str, rounding: str, alpha: float, exclude: bool
) -> Taps:
    """(source index, weight) pairs along one axis; weight None for nearest neighbour."""
    if method == "nearest_neighbor":
        return [(np.clip(nearest_index(coord, rounding), 0, n_in - 1), None)]
    base = np.floor(coord)
    frac = (coord - base).astype(np.float64)
    first = base.astype(np.int64)
    if method == "linear":
        return [
            (np.clip(first, 0, n_in - 1), 1.0 - frac),
            (np.clip(first + 1, 0, n_in - 1), frac),
        ]
    weights = cubic_weights(frac, alpha)
    indices = [first + i - 1 for i in range(4)]
    if exclude:
        weights = [np.where((i < 0) | (i >= n_in), 0.0, w) for i, w in zip(indices, weights)]
        total = sum(weights)
        weights = [w / total for w in weights]
    return [(np.clip(i, 0, n_in - 1), w) for i, w in zip(indices, weights)]


def apply_taps(x: Array, axis: int, taps: Taps, index_shape: Sequence[int]) -> Array:
    """Sample `x` along `axis` by `taps` whose arrays have `index_shape` (broadcastable)."""
    result = None
    for index, weight in taps:
        sample = np.take_along_axis(x, index.reshape(index_shape), axis=axis)
        if weight is not None:
            sample = sample * weight.reshape(index_shape)
        result = sample if result is None else result + sample
    assert result is not None
    return result


def _shape_along(ndim: int, axis: int, count: int) -> list[int]:
    return [count if i == axis else 1 for i in range(ndim)]


def _use_int_div(n_in: int, n_out: int) -> bool:
    """TVM's `can_convert_multiply_to_intdiv` (2-D nearest neighbour, "asymmetric")."""
    return n_out % n_in == 0 and n_out / n_in <= 1 / (1e-5 * n_in + 1e-5)


def resize(
    x: Array,
    axes: Sequence[int],
    sizes: Sequence[int],
    *,
    method: str,
    mode: str,
    rounding: str = "",
    alpha: float = -0.5,
    exclude: bool = False,
    extrapolation: float = 0.0,
    roi: Sequence[float] | None = None,
    out_dtype: np.dtype | None = None,
    int_div: bool = False,
) -> Array:
    """TVM's resize of the spatial `axes` of `x` to `sizes` (see the module docstring)."""
    with semantic_errors():
        method, rounding = semantics.resize_method(method, mode, rounding)
    k = len(axes)
    roi = list(roi) if roi else [0.0] * (2 * k)
    if len(roi) != 2 * k:
        raise EvalError(f"resize: roi needs {2 * k} values")
    out = x if method == "nearest_neighbor" else x.astype(np.float64)
    outside = np.zeros((), bool)
    for i, (ax, size) in enumerate(zip(axes, sizes)):
        n_in = x.shape[ax]
        if size < 1 or n_in < 1:
            raise EvalError("resize: sizes must be positive")
        index = np.arange(size)
        coord = source_coordinates(index, n_in, size, mode, roi[i], roi[i + k])
        if method == "nearest_neighbor" and int_div and mode == "asymmetric":
            if _use_int_div(n_in, size):
                taps: Taps = [(np.clip(index // (size // n_in), 0, n_in - 1), None)]
            else:
                taps = axis_taps(coord, n_in, method, rounding, alpha, exclude)
        else:
            taps = axis_taps(coord, n_in, method, rounding, alpha, exclude)
        out = apply_taps(out, ax, taps, _shape_along(x.ndim, ax, size))
        if mode == "tf_crop_and_resize":
            off = (coord < 0) | (coord > F32(n_in - 1))
            outside = outside | off.reshape(_shape_along(x.ndim, ax, size))
    if mode == "tf_crop_and_resize":
        out = np.where(outside, extrapolation, out)
    return as_tensor(out, out_dtype if out_dtype is not None else x.dtype)


def _register_resize(ndim: int) -> None:
    name = f"image.resize{ndim}d"

    def impl(args: list[Value], attrs: Attrs | None) -> Array:
        (x,) = tensor_args(name, args)
        a = need_attrs(name, attrs)
        axes = spatial_axes(a.layout)
        if len(axes) != ndim or x.ndim != len([c for c in a.layout if c.isalpha()]):
            raise EvalError(f"operator `{name}`: data does not have layout `{a.layout}`")
        if a.size is None or len(a.size) != ndim:
            raise EvalError(f"operator `{name}` needs {ndim} static output sizes")
        return resize(
            x,
            axes,
            [int(s) for s in a.size],
            method=a.method,
            mode=a.coordinate_transformation_mode,
            rounding=a.rounding_method,
            alpha=float(a.cubic_alpha),
            exclude=bool(a.cubic_exclude),
            extrapolation=float(a.extrapolation_value),
            roi=a.roi,
            out_dtype=dtype_or(a.out_dtype, x.dtype),
            int_div=ndim == 2,
        )

    impl.__name__ = f"resize{ndim}d"
    impl.__doc__ = f"TVM's `{name}`."
    IMPLS.register(name)(impl)


for _ndim in (1, 2, 3):
    _register_resize(_ndim)


@IMPLS.register("image.crop_and_resize")
def crop_and_resize(args: list[Value], attrs: Attrs | None) -> Array:
    """Crop each box from image `box_indices[b]` and resize it to `crop_size`."""
    data, boxes, box_indices = tensor_args("image.crop_and_resize", args)
    a = need_attrs("image.crop_and_resize", attrs)
    hw = spatial_axes(a.layout, "HW")
    if data.ndim != 4 or len(hw) != 2 or a.layout.find("N") != 0:
        raise EvalError("crop_and_resize expects NCHW or NHWC data")
    if boxes.ndim != 2 or boxes.shape[1] != 4 or box_indices.shape != (boxes.shape[0],):
        raise EvalError("crop_and_resize: boxes (B, 4) and box_indices (B,) expected")
    if a.crop_size is None or len(a.crop_size) != 2:
        raise EvalError("crop_and_resize needs a static crop_size of 2 values")
    method = RESIZE_METHODS.get(a.method)
    if method not in ("linear", "nearest_neighbor"):
        raise EvalError(f"crop_and_resize: unknown method `{a.method}`")
    index = box_indices.astype(np.int64)
    if index.size and (index.min() < 0 or index.max() >= data.shape[0]):
        raise EvalError("crop_and_resize: box index out of range")
    images = data[index].astype(np.float64) if method == "linear" else data[index]
    b32 = boxes.astype(F32)
    nb = boxes.shape[0]
    outside = np.zeros((), bool)
    out = images
    for i, (ax, size) in enumerate(zip(hw, a.crop_size)):
        n_in = data.shape[ax]
        start, end = b32[:, i], b32[:, i + 2]
        x = np.arange(size).astype(F32)[None, :]
        if size > 1:
            coord = (
                start[:, None] * F32(n_in - 1)
                + (F32(n_in - 1) * (end - start)[:, None] / F32(size - 1)) * x
            )
        else:
            coord = (F32(0.5) * (start + end) * F32(n_in - 1))[:, None] + 0 * x
        taps = axis_taps(coord, n_in, method, "round", -0.5, False)
        shape = [nb if j == 0 else size if j == ax else 1 for j in range(data.ndim)]
        out = apply_taps(out, ax, taps, shape)
        outside = outside | ((coord < 0) | (coord > F32(n_in - 1))).reshape(shape)
    out = np.where(outside, float(a.extrapolation_value), out)
    return as_tensor(out, dtype_or(a.out_dtype, data.dtype))


@IMPLS.register("image.dilation2d")
def dilation2d(args: list[Value], attrs: Attrs | None) -> Array:
    """Morphological dilation: max over each window of `data + weight` (zero padding)."""
    data, weight = tensor_args("image.dilation2d", args)
    a = need_attrs("image.dilation2d", attrs)
    if a.data_layout == "NCHW" and a.kernel_layout == "IHW":
        x, w = data, weight
    elif a.data_layout == "NHWC" and a.kernel_layout == "HWI":
        x, w = data.transpose(0, 3, 1, 2), weight.transpose(2, 0, 1)
    else:
        raise EvalError("dilation2d supports NCHW/IHW and NHWC/HWI")
    if x.ndim != 4 or w.ndim != 3 or w.shape[0] != x.shape[1]:
        raise EvalError("dilation2d: the weight must have one kernel per channel")
    out_dtype = dtype_or(a.out_dtype, data.dtype)
    (sh, sw), (dh, dw) = a.strides, a.dilations
    pads = pad_pairs("image.dilation2d", a.padding, 2)
    xp = np.pad(x.astype(out_dtype), [(0, 0), (0, 0), *pads])
    kh, kw = w.shape[1:]
    if kh < 1 or kw < 1:
        raise EvalError("dilation2d: empty kernel")
    oh = (xp.shape[2] - (kh - 1) * dh - 1) // sh + 1
    ow = (xp.shape[3] - (kw - 1) * dw - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        raise EvalError("dilation2d: the window is larger than the padded input")
    wk = w.astype(out_dtype)
    result = None
    for i in range(kh):
        for j in range(kw):
            window = xp[:, :, i * dh : i * dh + sh * (oh - 1) + 1 : sh]
            window = window[:, :, :, j * dw : j * dw + sw * (ow - 1) + 1 : sw]
            tap = window + wk[None, :, i, j, None, None]
            result = tap if result is None else np.maximum(result, tap)
    assert result is not None
    if a.data_layout == "NHWC":
        result = result.transpose(0, 2, 3, 1)
    return as_tensor(np.ascontiguousarray(result), out_dtype)


@IMPLS.register("image.affine_grid")
def affine_grid(args: list[Value], attrs: Attrs | None) -> Array:
    """`out[n, d, i, j] = data[n, d] . (x_j, y_i, 1)` over a [-1, 1] grid of target_shape."""
    (data,) = tensor_args("image.affine_grid", args)
    shape = need_attrs("image.affine_grid", attrs).target_shape
    if data.ndim != 3 or data.shape[1:] != (2, 3) or len(shape) != 2:
        raise EvalError("affine_grid: data (N, 2, 3) and a 2-D target_shape expected")
    h, w = shape
    if h < 2 or w < 2:
        raise EvalError("affine_grid: target height and width must be greater than 1")
    dtype = data.dtype
    start = np.asarray(-1.0, dtype)
    y_step = np.asarray((2.0 - 1e-7) / (h - 1), dtype)
    x_step = np.asarray((2.0 - 1e-7) / (w - 1), dtype)
    y = (start + np.arange(h).astype(dtype) * y_step).astype(np.float64)
    x = (start + np.arange(w).astype(dtype) * x_step).astype(np.float64)
    m = data.astype(np.float64)
    out = (
        m[:, :, 0, None, None] * x[None, None, None, :]
        + m[:, :, 1, None, None] * y[None, None, :, None]
        + m[:, :, 2, None, None]
    )
    return as_tensor(out, dtype)


def _reflect(coord: Array, size: int, align_corners: bool) -> Array:
    """TVM's grid_sample coordinate reflection (before clipping)."""
    span, corner = (size - 1, 0.0) if align_corners else (size, -0.5)
    if span <= 0:
        return np.zeros_like(coord)
    inside = (coord >= corner) & (coord <= span + corner)
    dist = np.abs(corner - coord)
    times = np.trunc(dist).astype(np.int64) // span
    extra = dist - times * span
    flipped = np.where(times % 2 == 0, extra + corner, span - extra + corner)
    return np.where(inside, coord, flipped)


def _gather_zero(data_last: Array, batch: Array, index: list[Array], sizes: list[int]) -> Array:
    """`data[n, ..idx.., :]` (channels last) with 0 where an index is outside the image."""
    valid = np.ones(index[0].shape, bool)
    for idx, size in zip(index, sizes):
        valid &= (idx >= 0) & (idx < size)
    clipped = [np.clip(idx, 0, size - 1) for idx, size in zip(index, sizes)]
    where = (batch, *clipped)
    values = data_last[where]
    return np.where(valid[..., None], values, 0.0)


@IMPLS.register("image.grid_sample")
def grid_sample(args: list[Value], attrs: Attrs | None) -> Array:
    """Sample data at the normalized coordinates of `grid` (x, y[, z] on axis 1)."""
    data, grid = tensor_args("image.grid_sample", args)
    a = need_attrs("image.grid_sample", attrs)
    k = data.ndim - 2
    if a.layout not in ("NCHW", "NCDHW") or k != len(a.layout) - 2 or grid.shape[1] != k:
        raise EvalError("grid_sample: NCHW or NCDHW data with a (N, k, ...) grid expected")
    if grid.shape[0] != data.shape[0] or grid.ndim != data.ndim:
        raise EvalError("grid_sample: the grid does not match the data")
    if a.method not in ("bilinear", "nearest", "bicubic") or (a.method == "bicubic" and k != 2):
        raise EvalError(f"grid_sample: unsupported method `{a.method}`")
    if a.padding_mode not in ("zeros", "border", "reflection"):
        raise EvalError(f"grid_sample: unknown padding_mode `{a.padding_mode}`")
    sizes = list(data.shape[2:])
    align = bool(a.align_corners)
    # spatial axis i (D, H, W order) is driven by grid channel k - 1 - i (x, y, z order)
    coords = []
    for i, size in enumerate(sizes):
        c = grid[:, k - 1 - i].astype(np.float64)
        coords.append((c + 1) * (size - 1) / 2 if align else -0.5 + (c + 1) * size / 2)
    data_last = np.moveaxis(data.astype(np.float64), 1, -1)
    batch = np.arange(data.shape[0]).reshape((-1,) + (1,) * k)

    def border(c: Array, size: int) -> Array:
        if a.padding_mode == "reflection":
            c = _reflect(c, size, align)
        return np.clip(c, 0, size - 1) if a.padding_mode != "zeros" else c

    if a.method == "bicubic":
        out = _bicubic(data_last, batch, coords, sizes, border)
    else:
        coords = [border(c, size) for c, size in zip(coords, sizes)]
        if a.method == "nearest":
            index = [np.rint(c).astype(np.int64) for c in coords]
            out = _gather_zero(data_last, batch, index, sizes)
        else:
            out = np.zeros(grid.shape[:1] + grid.shape[2:] + data.shape[1:2])
            lows = [np.floor(c) for c in coords]
            for corner in np.ndindex(*(2,) * k):
                weight = np.ones(coords[0].shape)
                index = []
                for c, low, bit in zip(coords, lows, corner):
                    weight = weight * ((c - low) if bit else (1.0 - (c - low)))
                    index.append(low.astype(np.int64) + bit)
                out = out + _gather_zero(data_last, batch, index, sizes) * weight[..., None]
    return as_tensor(np.moveaxis(out, -1, 1), data.dtype)


def _bicubic(
    data_last: Array,
    batch: Array,
    coords: list[Array],
    sizes: list[int],
    border: Callable[[Array, int], Array],
) -> Array:
    """grid_sample's bicubic interpolation (2-D), TVM's A = -0.75 weights."""
    a = -0.75

    def w1(t: Array) -> Array:
        return ((a + 2) * t - (a + 3)) * t * t + 1

    def w2(t: Array) -> Array:
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a

    (y, x), (h, w) = coords, sizes
    y0, x0 = np.floor(y), np.floor(x)
    fy, fx = y - y0, x - x0
    wy = [w2(fy + 1), w1(fy), w1(1 - fy), w2(2 - fy)]
    wx = [w2(fx + 1), w1(fx), w1(1 - fx), w2(2 - fx)]
    out = np.zeros((*y.shape, data_last.shape[-1]))
    for i in range(4):
        yi = border(y0 - 1 + i, h)
        for j in range(4):
            xj = border(x0 - 1 + j, w)
            taps = [np.trunc(yi).astype(np.int64), np.trunc(xj).astype(np.int64)]
            value = _gather_zero(data_last, batch, taps, sizes)
            out = out + value * (wy[i] * wx[j])[..., None]
    return out
