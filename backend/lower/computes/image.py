"""Compute definitions of the image operators: `image.resize{1,2,3}d` (also behind
`nn.upsampling` and `nn.upsampling3d`, registered here), `image.crop_and_resize`,
`image.dilation2d`, `image.affine_grid` and `image.grid_sample`.

Resizing maps each output index to a float32 source coordinate with exactly TVM's
arithmetic (this decides which pixel nearest neighbour picks), then reads the clamped
source pixels: one for nearest neighbour, 2 or 4 per axis for linear and cubic
interpolation, combined axis by axis in the reference's order. Interpolation runs in
float32 for float32 (and float16) results and in float64 otherwise, so integer results
truncate the same value the reference truncates. `grid_sample` works in float64 like the
reference. All of them are single injective computes except `dilation2d` (pad + max).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ....lang.attrs import Attrs
from ....lang.opdefs import semantics
from ....lang.opdefs.semantics import RESIZE_METHODS, pad_pairs
from ....lang.optable import OpTable
from ....lang.types import Type
from ...te.tensor import Tensor, compute, max_reduce, reduce_axis
from ...tir.expr import PrimExpr, all_of, any_of, cast, const, eq, max_, min_, select
from ...tir.op import call, ceil, fabs, floor, if_then_else, round_, trunc
from . import ComputeFn
from .nn import int_shape, pad, tensor_type
from .pool import spatial_positions

COMPUTES: OpTable[ComputeFn] = OpTable("compute definition")
"""The compute definitions of this family (`computes.COMPUTES` joins the families)."""

F32 = np.float32


def _f32(value: float | np.float32) -> PrimExpr:
    return const(float(F32(value)), "float32")


def source_coordinate(
    o: PrimExpr, n_in: int, n_out: int, mode: str, start: float = 0.0, end: float = 0.0
) -> PrimExpr:
    """TVM's `get_inx` (`semantics.source_coordinate`): the float32 source coordinate of
    output index `o`."""
    coord: PrimExpr = semantics.source_coordinate(
        cast("float32", o), n_in, n_out, mode, _f32, start, end
    )
    return coord


def nearest_index(coord: PrimExpr, rounding: str) -> PrimExpr:
    """TVM's `get_closest_index` (before clamping), as int64."""
    if rounding == "round":
        index = round_(coord)
    elif rounding == "round_prefer_floor":
        index = ceil(coord - _f32(0.5))
    elif rounding == "round_prefer_ceil":
        index = floor(coord + _f32(0.5))
    elif rounding == "floor":
        index = floor(coord + _f32(1e-5))
    elif rounding == "ceil":
        index = ceil(coord - _f32(1e-5))
    else:
        raise ValueError(f"resize: unknown rounding_method `{rounding}`")
    return cast("int64", index)


def clamp(index: PrimExpr, n: int) -> PrimExpr:
    """`index` clamped into `[0, n)`."""
    return min_(max_(index, const(0)), const(n - 1))


def cubic_weights(t: PrimExpr, alpha: float) -> list[PrimExpr]:
    """TVM's cubic spline weights of the 4 taps at offsets -1, 0, 1, 2."""
    a = const(alpha, t.dtype)
    t2, t3 = t * t, t * t * t
    return [
        a * (t3 - t2 * 2.0 + t),
        (a + 2.0) * t3 - (a + 3.0) * t2 + 1.0,
        -(a + 2.0) * t3 + (a * 2.0 + 3.0) * t2 - a * t,
        -a * t3 + a * t2,
    ]


Taps = list[tuple[PrimExpr, PrimExpr | None]]


def axis_taps(
    coord: PrimExpr, n_in: int, method: str, rounding: str, alpha: float, exclude: bool, dt: str
) -> Taps:
    """(clamped source index, weight in `dt`) pairs along one axis; weight None for nearest
    neighbour."""
    if method == "nearest_neighbor":
        return [(clamp(nearest_index(coord, rounding), n_in), None)]
    base = floor(coord)
    frac = cast(dt, coord - base)
    first = cast("int64", base)
    if method == "linear":
        return [(clamp(first, n_in), const(1.0, dt) - frac), (clamp(first + 1, n_in), frac)]
    weights = cubic_weights(frac, alpha)
    indices = [first + (i - 1) for i in range(4)]
    if exclude:
        zero = const(0.0, dt)
        weights = [select(any_of(i < 0, i >= n_in), zero, w) for i, w in zip(indices, weights)]
        total = weights[0] + weights[1] + weights[2] + weights[3]
        weights = [w / total for w in weights]
    return [(clamp(i, n_in), w) for i, w in zip(indices, weights)]


def interpolate(
    read: Callable[[dict[int, PrimExpr]], PrimExpr], axes: Sequence[int], taps: Sequence[Taps]
) -> PrimExpr:
    """The weighted sum of `read` over the taps of each axis, with the first axis innermost
    (the order the reference applies them in). `read` gets the source index of each axis."""

    def level(m: int, chosen: dict[int, PrimExpr]) -> PrimExpr:
        if m == 0:
            return read(chosen)
        result: PrimExpr | None = None
        for index, weight in taps[m - 1]:
            sample = level(m - 1, {**chosen, axes[m - 1]: index})
            if weight is not None:
                sample = sample * weight
            result = sample if result is None else result + sample
        assert result is not None
        return result

    return level(len(axes), {})


def _use_int_div(n_in: int, n_out: int) -> bool:
    """TVM's `can_convert_multiply_to_intdiv` (2-D nearest neighbour, "asymmetric")."""
    return n_out % n_in == 0 and n_out / n_in <= 1 / (1e-5 * n_in + 1e-5)


def _work_dtype(out_dtype: str) -> str:
    return "float32" if out_dtype in ("float32", "float16") else "float64"


def resize(
    x: Tensor,
    axes: Sequence[int],
    sizes: Sequence[int],
    *,
    method: str,
    mode: str,
    out_dtype: str,
    rounding: str = "",
    alpha: float = -0.5,
    exclude: bool = False,
    extrapolation: float = 0.0,
    roi: Sequence[float] | None = None,
    int_div: bool = False,
    name: str = "resize",
) -> Tensor:
    """TVM's resize of the spatial `axes` of `x` to `sizes` (see the module docstring)."""
    method, rounding = semantics.resize_method(method, mode, rounding)
    k = len(axes)
    roi_values = list(roi) if roi else [0.0] * (2 * k)
    shape = int_shape(x)
    out_shape = list(shape)
    for ax, size in zip(axes, sizes):
        out_shape[ax] = size
    dt = _work_dtype(out_dtype)
    nearest = method == "nearest_neighbor"

    def body(*idx: PrimExpr) -> PrimExpr:
        taps: list[Taps] = []
        outside: list[PrimExpr] = []
        for i, (ax, size) in enumerate(zip(axes, sizes)):
            n_in = shape[ax]
            coord = source_coordinate(idx[ax], n_in, size, mode, roi_values[i], roi_values[i + k])
            if nearest and int_div and mode == "asymmetric" and _use_int_div(n_in, size):
                taps.append([(clamp(idx[ax] // (size // n_in), n_in), None)])
            else:
                taps.append(axis_taps(coord, n_in, method, rounding, alpha, exclude, dt))
            outside += [coord < _f32(0.0), coord > _f32(n_in - 1)]

        def read(chosen: dict[int, PrimExpr]) -> PrimExpr:
            value = x[tuple(chosen.get(d, i) for d, i in enumerate(idx))]
            return value if nearest else cast(dt, value)

        value = interpolate(read, axes, taps)
        if mode == "tf_crop_and_resize":
            value = select(
                any_of(*outside), const(extrapolation, "float64"), cast("float64", value)
            )
        return cast(out_dtype, value)

    info = {"method": method, "coordinate_transformation_mode": mode}
    return compute(out_shape, body, name, "injective", info)  # type: ignore[no-any-return]


def _register_resize(ndim: int) -> None:
    def fn(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
        assert attrs is not None
        (x,) = inputs
        shape, od = tensor_type(out_type)
        axes = spatial_positions(str(attrs.layout), ndim)
        out = resize(
            x,
            axes,
            [shape[ax] for ax in axes],
            method=str(attrs.method),
            mode=str(attrs.coordinate_transformation_mode),
            out_dtype=od,
            rounding=str(attrs.rounding_method),
            alpha=float(attrs.cubic_alpha),
            exclude=bool(attrs.cubic_exclude),
            extrapolation=float(attrs.extrapolation_value),
            roi=attrs.roi,
            int_div=ndim == 2,
            name=f"resize{ndim}d",
        )
        return [out]

    fn.__name__ = f"resize{ndim}d"
    fn.__doc__ = f"`image.resize{ndim}d` to the static `size`."
    COMPUTES.register(f"image.resize{ndim}d")(fn)


for _ndim in (1, 2, 3):
    _register_resize(_ndim)


@COMPUTES.register("nn.upsampling")
def upsampling(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Resize H and W by `scale_h`, `scale_w` (TVM's topi `upsampling`: align_corners or
    asymmetric coordinates)."""
    assert attrs is not None
    (x,) = inputs
    shape, od = tensor_type(out_type)
    axes = spatial_positions(str(attrs.layout), 2)
    mode = "align_corners" if attrs.align_corners else "asymmetric"
    sizes = [shape[ax] for ax in axes]
    out = resize(
        x,
        axes,
        sizes,
        method=str(attrs.method),
        mode=mode,
        out_dtype=od,
        int_div=True,
        name="upsampling",
    )
    return [out]


@COMPUTES.register("nn.upsampling3d")
def upsampling3d(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Resize D, H and W by `scale_d`, `scale_h`, `scale_w`."""
    assert attrs is not None
    (x,) = inputs
    shape, od = tensor_type(out_type)
    axes = spatial_positions(str(attrs.layout), 3)
    out = resize(
        x,
        axes,
        [shape[ax] for ax in axes],
        method=str(attrs.method),
        mode=str(attrs.coordinate_transformation_mode),
        out_dtype=od,
        name="upsampling3d",
    )
    return [out]


# ------------------------------------------------------------------------ crop and resize


@COMPUTES.register("image.crop_and_resize")
def crop_and_resize(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Crop each box `[y1, x1, y2, x2]` (normalized) of image `box_indices[b]` and resize it
    to `crop_size` ("tf_crop_and_resize" coordinates; outside points get
    `extrapolation_value`)."""
    assert attrs is not None
    data, boxes, box_indices = inputs
    shape, od = tensor_type(out_type)
    dshape = int_shape(data)
    axes = spatial_positions(str(attrs.layout), 2)
    sizes = [int(s) for s in attrs.crop_size]
    method = RESIZE_METHODS[str(attrs.method)]
    nearest = method == "nearest_neighbor"
    dt = _work_dtype(od)

    def body(*idx: PrimExpr) -> PrimExpr:
        b = idx[0]
        image = clamp(cast("int64", box_indices[b]), dshape[0])
        taps, outside = [], []
        for i, (ax, size) in enumerate(zip(axes, sizes)):
            n_in = dshape[ax]
            start = cast("float32", boxes[b, const(i)])
            end = cast("float32", boxes[b, const(i + 2)])
            x = cast("float32", idx[ax])
            if size > 1:
                coord = start * _f32(n_in - 1) + _f32(n_in - 1) * (end - start) / _f32(size - 1) * x
            else:
                coord = _f32(0.5) * (start + end) * _f32(n_in - 1)
            taps.append(axis_taps(coord, n_in, method, "round", -0.5, False, dt))
            outside += [coord < _f32(0.0), coord > _f32(n_in - 1)]

        def read(chosen: dict[int, PrimExpr]) -> PrimExpr:
            full = tuple(image if d == 0 else chosen.get(d, i) for d, i in enumerate(idx))
            value = data[full]
            return value if nearest else cast(dt, value)

        value = cast("float64", interpolate(read, axes, taps))
        extrapolation = const(float(attrs.extrapolation_value), "float64")
        return cast(od, select(any_of(*outside), extrapolation, value))

    return [compute(shape, body, "crop_and_resize", "injective", {"method": method})]


# ------------------------------------------------------------------------------ dilation2d


@COMPUTES.register("image.dilation2d")
def dilation2d(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Morphological dilation: the max over each window of `data + weight`, zero padding
    (`NCHW` data with an `IHW` weight, or `NHWC` with `HWI`)."""
    assert attrs is not None
    data, weight = inputs
    shape, od = tensor_type(out_type)
    nhwc = str(attrs.data_layout) == "NHWC"
    (sh, sw), (dh, dw) = attrs.strides, attrs.dilations
    (top, bottom), (left, right) = pad_pairs(attrs.padding, 2)
    hw = (1, 2) if nhwc else (2, 3)
    before, after = [0, 0, 0, 0], [0, 0, 0, 0]
    before[hw[0]], before[hw[1]], after[hw[0]], after[hw[1]] = top, left, bottom, right
    padded = pad(data, before, after, 0, "dilation2d_pad")
    wshape = int_shape(weight)
    kh, kw = (wshape[0], wshape[1]) if nhwc else (wshape[1], wshape[2])
    ri, rj = reduce_axis(kh, "ri"), reduce_axis(kw, "rj")

    def body(n: PrimExpr, a: PrimExpr, b: PrimExpr, c: PrimExpr) -> PrimExpr:
        if nhwc:
            y, x, ch = a, b, c
            src = padded[n, y * sh + ri.var * dh, x * sw + rj.var * dw, ch]
            w = weight[ri, rj, ch]
        else:
            ch, y, x = a, b, c
            src = padded[n, ch, y * sh + ri.var * dh, x * sw + rj.var * dw]
            w = weight[ch, ri, rj]
        return max_reduce(cast(od, src) + cast(od, w), axis=[ri, rj])

    return [compute(shape, body, "dilation2d", "dilation2d", {"data_layout": attrs.data_layout})]


# ---------------------------------------------------------------------- grids and sampling


@COMPUTES.register("image.affine_grid")
def affine_grid(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`out[n, d, i, j] = m[n, d, 0] * x_j + m[n, d, 1] * y_i + m[n, d, 2]` over a grid of
    `target_shape` points from -1 towards 1 (steps of `(2 - 1e-7) / (size - 1)`)."""
    assert attrs is not None
    (m,) = inputs
    shape, dt = tensor_type(out_type)
    h, w = (int(v) for v in attrs.target_shape)
    npdt = np.dtype(dt)
    y_step = const(float(np.asarray((2.0 - 1e-7) / (h - 1), npdt)), dt)
    x_step = const(float(np.asarray((2.0 - 1e-7) / (w - 1), npdt)), dt)
    start = const(-1.0, dt)

    def body(n: PrimExpr, d: PrimExpr, i: PrimExpr, j: PrimExpr) -> PrimExpr:
        y = start + cast(dt, i) * y_step
        x = start + cast(dt, j) * x_step
        return m[n, d, const(0)] * x + m[n, d, const(1)] * y + m[n, d, const(2)]

    return [compute(shape, body, "affine_grid", "injective")]


def _reflect(c: PrimExpr, size: int, align_corners: bool) -> PrimExpr:
    """TVM's grid_sample coordinate reflection (float64, before clipping)."""
    span, corner = (size - 1, 0.0) if align_corners else (size, -0.5)
    if span <= 0:
        return const(0.0, "float64")
    lo = const(corner, "float64")
    inside = all_of(c >= lo, c <= const(span + corner, "float64"))
    dist = fabs(lo - c)
    times = cast("int64", trunc(dist)) // span
    extra = dist - cast("float64", times * span)
    flipped = select(eq(times % 2, 0), extra + lo, const(float(span), "float64") - extra + lo)
    return select(inside, c, flipped)


@COMPUTES.register("image.grid_sample")
def grid_sample(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Sample `data` (NCHW or NCDHW) at the normalized coordinates of `grid` (x, y[, z] on
    axis 1): bilinear, nearest (half to even) or bicubic (A = -0.75), with zeros, border or
    reflection padding; computed in float64."""
    assert attrs is not None
    data, grid = inputs
    shape, dt = tensor_type(out_type)
    dshape = int_shape(data)
    k = len(dshape) - 2
    sizes = list(dshape[2:])
    align = bool(attrs.align_corners)
    padding_mode, method = str(attrs.padding_mode), str(attrs.method)
    f64 = "float64"

    def border(c: PrimExpr, size: int) -> PrimExpr:
        if padding_mode == "reflection":
            c = _reflect(c, size, align)
        if padding_mode != "zeros":
            c = min_(max_(c, const(0.0, f64)), const(float(size - 1), f64))
        return c

    def body(n: PrimExpr, ch: PrimExpr, *sp: PrimExpr) -> PrimExpr:
        coords = []
        for i, size in enumerate(sizes):
            where = (n, const(k - 1 - i), *sp)
            c = cast(f64, grid[where])
            if align:
                coords.append((c + 1.0) * float(size - 1) / 2.0)
            else:
                coords.append(const(-0.5, f64) + (c + 1.0) * float(size) / 2.0)

        def gather(index: Sequence[PrimExpr]) -> PrimExpr:
            valid = all_of(*(all_of(i >= 0, i < s) for i, s in zip(index, sizes)))
            clipped = tuple(clamp(i, s) for i, s in zip(index, sizes))
            where = (n, ch, *clipped)
            value = cast(f64, data[where])
            return if_then_else(valid, value, const(0.0, f64))

        if method == "bicubic":
            return cast(dt, _bicubic(coords, sizes, border, gather))
        coords = [border(c, size) for c, size in zip(coords, sizes)]
        if method == "nearest":
            return cast(dt, gather([cast("int64", call("nearbyint", c)) for c in coords]))
        lows = [floor(c) for c in coords]
        out: PrimExpr = const(0.0, f64)
        for corner in np.ndindex(*(2,) * k):
            weight: PrimExpr = const(1.0, f64)
            index = []
            for c, low, bit in zip(coords, lows, corner):
                weight = weight * ((c - low) if bit else (const(1.0, f64) - (c - low)))
                index.append(cast("int64", low) + int(bit))
            out = out + gather(index) * weight
        return cast(dt, out)

    return [compute(shape, body, "grid_sample", "injective", {"method": method})]


def _bicubic(
    coords: list[PrimExpr],
    sizes: list[int],
    border: Callable[[PrimExpr, int], PrimExpr],
    gather: Callable[[Sequence[PrimExpr]], PrimExpr],
) -> PrimExpr:
    """grid_sample's bicubic interpolation (2-D) with TVM's A = -0.75 weights."""
    f64 = "float64"
    a = const(-0.75, f64)

    def w1(t: PrimExpr) -> PrimExpr:
        return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0

    def w2(t: PrimExpr) -> PrimExpr:
        return ((a * t - a * 5.0) * t + a * 8.0) * t - a * 4.0

    (y, x), (h, w) = coords, sizes
    y0, x0 = floor(y), floor(x)
    fy, fx = y - y0, x - x0
    one, two = const(1.0, f64), const(2.0, f64)
    wy = [w2(fy + 1.0), w1(fy), w1(one - fy), w2(two - fy)]
    wx = [w2(fx + 1.0), w1(fx), w1(one - fx), w2(two - fx)]
    out: PrimExpr = const(0.0, f64)
    for i in range(4):
        yi = border(y0 - 1.0 + float(i), h)
        for j in range(4):
            xj = border(x0 - 1.0 + float(j), w)
            value = gather([cast("int64", trunc(yi)), cast("int64", trunc(xj))])
            out = out + value * (wy[i] * wx[j])
    return out
