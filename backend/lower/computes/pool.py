"""Compute definitions of pooling: windowed max/avg pools in 1-D, 2-D and 3-D, adaptive
pools and global pools, in any layout whose spatial axes are not split (`NCHW`, `NHWC`,
`NCHW16c`).

A windowed pool is a padding stage (the dtype's lowest finite value for max, zero for avg;
`ceil_mode` grows the after-padding by `stride - 1`) and a reduction over the window taps;
average pooling divides the window sum by TVM's per-window count in a second, elementwise
stage. Integer sums wrap in the input dtype and integer averages divide toward zero.
Adaptive pools reduce over `[floor(i * n / out), ceil((i + 1) * n / out))` with a reduction
as long as the longest window and a condition for the shorter ones.

Tags: `pool_max`, `pool_sum` then `pool_avg`, `adaptive_pool_max`, `adaptive_pool_sum` then
`adaptive_pool_avg`; `attrs` holds the layout and window parameters.
"""

from __future__ import annotations

from collections.abc import Sequence

from ....lang.attrs import Attrs
from ....lang.opdefs import semantics
from ....lang.opdefs.semantics import lowest, pad_pairs
from ....lang.optable import OpTable
from ....lang.types import Type
from ...te.tensor import Tensor, compute, max_reduce, reduce_axis, sum_
from ...tir.dtypes import is_float
from ...tir.expr import IterVar, PrimExpr, all_of, cast, const, max_, min_, truncdiv
from . import ComputeFn
from .nn import int_shape, pad, per_axis, tensor_type

COMPUTES: OpTable[ComputeFn] = OpTable("compute definition")
"""The compute definitions of this family (`computes.COMPUTES` joins the families)."""

_SPATIAL = "DHW"


def spatial_positions(layout: str, ndim: int) -> list[int]:
    """Positions of the `ndim` primal spatial axes (D, H, W order) in `layout`."""
    positions = semantics.spatial_positions(layout, _SPATIAL)
    if len(positions) != ndim:
        raise ValueError(f"layout `{layout}` does not have {ndim} spatial axes")
    return positions


def divide(total: PrimExpr, count: PrimExpr, dtype: str) -> PrimExpr:
    """`total / count` in `dtype`: float division, or integer division toward zero (in
    int64, so a count wider than `dtype` divides correctly)."""
    if is_float(dtype):
        return total / cast(dtype, count)
    return cast(dtype, truncdiv(cast("int64", total), count))


def _window_count(
    o: PrimExpr, n: int, k: int, s: int, d: int, before: int, after: int, incl: bool
) -> PrimExpr:
    """TVM's per-axis element count of the average-pooling window of output `o` (int64)."""
    start = o * s - before
    end = start + (k - 1) * d
    if incl:
        end = min_(end, const(n + after - 1))
        return truncdiv(end - start, d) + 1
    jumps = max_(truncdiv(d - 1 - start, d), const(0))
    end = min_(end, const(n - 1))
    return truncdiv(end - (start + jumps * d), d) + 1


def _window_pool(attrs: Attrs, x: Tensor, out_type: Type, ndim: int, kind: str) -> Tensor:
    shape = int_shape(x)
    out_shape, dt = tensor_type(out_type)
    layout = str(attrs.layout)
    axes = spatial_positions(layout, ndim)
    kernel = per_axis(attrs.pool_size, ndim)
    strides = per_axis(attrs.strides, ndim)
    dilation = per_axis(attrs.dilation, ndim)
    pads = pad_pairs(attrs.padding, ndim)
    extra = [s - 1 if attrs.ceil_mode else 0 for s in strides]
    before, after = [0] * x.ndim, [0] * x.ndim
    for ax, (b, a), e in zip(axes, pads, extra):
        before[ax], after[ax] = b, a + e
    fill = const(lowest(dt), dt) if kind == "max" else const(0, dt)
    padded = pad(x, before, after, fill, f"pool_{kind}_pad")
    rv = [reduce_axis(k, f"rv{i}") for i, k in enumerate(kernel)]

    def window(idx: Sequence[PrimExpr]) -> PrimExpr:
        src = list(idx)
        for ax, r, s, d in zip(axes, rv, strides, dilation):
            src[ax] = idx[ax] * s + r.var * d
        return padded[tuple(src)]

    info = {
        "layout": layout,
        "pool_size": tuple(kernel),
        "strides": tuple(strides),
        "dilation": tuple(dilation),
        "padding": tuple(pads),
        "ceil_mode": bool(attrs.ceil_mode),
    }
    if kind == "max":
        return compute(  # type: ignore[no-any-return]
            out_shape, lambda *i: max_reduce(window(i), axis=rv), "pool_max", "pool_max", info
        )
    total = compute(out_shape, lambda *i: sum_(window(i), axis=rv), "pool_sum", "pool_sum", info)
    incl = bool(attrs.count_include_pad)

    def average(*i: PrimExpr) -> PrimExpr:
        counts = [
            _window_count(i[ax], shape[ax], k, s, d, b, a, incl)
            for ax, k, s, d, (b, a) in zip(axes, kernel, strides, dilation, pads)
        ]
        count = counts[0]
        for c in counts[1:]:
            count = count * c
        if not incl:
            count = max_(count, const(1))
        return divide(total[i], count, dt)

    info = info | {"count_include_pad": incl}
    return compute(out_shape, average, "pool_avg", "pool_avg", info)  # type: ignore[no-any-return]


def _register_window_pool(kind: str, ndim: int) -> None:
    def fn(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
        assert attrs is not None
        return [_window_pool(attrs, inputs[0], out_type, ndim, kind)]

    fn.__name__ = f"{kind}_pool{ndim}d"
    fn.__doc__ = f"`nn.{kind}_pool{ndim}d`: padding, then the {kind} over each window."
    COMPUTES.register(f"nn.{kind}_pool{ndim}d")(fn)


for _kind in ("max", "avg"):
    for _ndim in (1, 2, 3):
        _register_window_pool(_kind, _ndim)


# -------------------------------------------------------------------------------- adaptive


def adaptive_pool(x: Tensor, positions: list[int], sizes: list[int], kind: str) -> Tensor:
    """Adaptive max or average pooling of the spatial axes at `positions` to `sizes`."""
    shape = int_shape(x)
    out_shape = list(shape)
    for ax, size in zip(positions, sizes):
        out_shape[ax] = size
    dt = x.dtype
    longest = []
    for ax, out in zip(positions, sizes):
        n = shape[ax]
        longest.append(max(-((-(i + 1) * n) // out) - (i * n) // out for i in range(out)))
    rv = [reduce_axis(k, f"rv{i}") for i, k in enumerate(longest)]

    def bounds(i: PrimExpr, n: int, out: int) -> tuple[PrimExpr, PrimExpr]:
        return (i * n) // out, ((i + 1) * n + out - 1) // out

    def taps(idx: Sequence[PrimExpr], axes: Sequence[IterVar]) -> tuple[PrimExpr, PrimExpr]:
        src, conds = list(idx), []
        for ax, r, out in zip(positions, axes, sizes):
            start, end = bounds(idx[ax], shape[ax], out)
            conds.append(start + r.var < end)
            src[ax] = min_(start + r.var, end - 1)
        return x[tuple(src)], all_of(*conds)

    info = {"layout_axes": tuple(positions), "output_size": tuple(sizes)}
    if kind == "max":

        def body_max(*i: PrimExpr) -> PrimExpr:
            value, _ = taps(i, rv)
            return max_reduce(value, axis=rv)  # clamped taps repeat the last element

        return compute(  # type: ignore[no-any-return]
            out_shape, body_max, "adaptive_pool_max", "adaptive_pool_max", info
        )

    def body_sum(*i: PrimExpr) -> PrimExpr:
        value, inside = taps(i, rv)
        return sum_(value, axis=rv, where=inside)

    total = compute(out_shape, body_sum, "adaptive_pool_sum", "adaptive_pool_sum", info)

    def average(*i: PrimExpr) -> PrimExpr:
        count: PrimExpr = const(1)
        for ax, out in zip(positions, sizes):
            start, end = bounds(i[ax], shape[ax], out)
            count = count * (end - start)
        return divide(total[i], count, dt)

    return compute(  # type: ignore[no-any-return]
        out_shape, average, "adaptive_pool_avg", "adaptive_pool_avg", info
    )


def _output_sizes(output_size: Sequence[int] | None, shape: Sequence[int], positions: list[int]):  # type: ignore[no-untyped-def]
    sizes = [int(v) for v in output_size] if output_size else []
    if not sizes:
        return [shape[ax] for ax in positions]
    return sizes * len(positions) if len(sizes) == 1 else sizes


def _register_adaptive_pool(kind: str, ndim: int) -> None:
    def fn(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
        assert attrs is not None
        (x,) = inputs
        positions = spatial_positions(str(attrs.layout), ndim)
        sizes = _output_sizes(attrs.output_size, int_shape(x), positions)
        return [adaptive_pool(x, positions, sizes, kind)]

    fn.__name__ = f"adaptive_{kind}_pool{ndim}d"
    fn.__doc__ = f"`nn.adaptive_{kind}_pool{ndim}d` to `output_size`."
    COMPUTES.register(f"nn.adaptive_{kind}_pool{ndim}d")(fn)


def _register_global_pool(kind: str) -> None:
    def fn(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
        assert attrs is not None
        positions = spatial_positions(str(attrs.layout), 2)
        return [adaptive_pool(inputs[0], positions, [1, 1], kind)]

    fn.__name__ = f"global_{kind}_pool2d"
    fn.__doc__ = f"`nn.global_{kind}_pool2d`: the {kind} over all spatial positions."
    COMPUTES.register(f"nn.global_{kind}_pool2d")(fn)


for _kind in ("max", "avg"):
    for _ndim in (1, 2, 3):
        _register_adaptive_pool(_kind, _ndim)
    _register_global_pool(_kind)
