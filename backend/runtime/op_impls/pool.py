"""Reference implementations of pooling, with TVM semantics (topi `nn/pooling.h`).

Windowed pools (`pool_impl_nd`), per spatial axis with input size n, kernel k, stride s,
dilation d and padding (before, after):

* In `ceil_mode` the after-padding grows by `s - 1`; there are
  `(n - (k - 1) * d - 1 + before + after) // s + 1` windows (so in ceil mode a window may
  start in the padding, even past it: TVM does not drop such windows).
* Max pooling pads with the dtype's lowest finite value (a window of padding only gives it).
* Average pooling sums the window (padding counts 0) and divides by a product over axes:
  with `count_include_pad`, `(min(start + (k-1)d, n + after - 1) - start) / d + 1` (the
  extra ceil-mode padding is not counted); without, the number of window taps inside the
  input, `max(product, 1)`. Integer sums wrap in the input dtype (TVM sums in it) and
  integer averages divide toward zero.

Adaptive pools use windows `[floor(i * n / out), ceil((i + 1) * n / out))`; an empty
`output_size` keeps the input size and a single value applies to every axis. Global pools
are adaptive pools to size 1. Layouts name the spatial axes (`NCHW`, `NHWC`, `NCHW16c`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ....lang.attrs import Attrs
from ....lang.opdefs.semantics import lowest
from ....lang.optable import OpTable
from ..values import EvalError, Value
from . import Impl
from .conv import pad_pairs
from .transform import (
    as_tensor,
    need_attrs,
    spatial_axes,
    tensor_args,
    trunc_div,
    wide_dtype,
)

IMPLS: OpTable[Impl] = OpTable("reference implementation")
"""The reference implementations of this family (`op_impls.IMPLS` joins them)."""

Array = np.ndarray


def _per_axis(name: str, what: str, values: Sequence[int], ndim: int) -> list[int]:
    vals = [int(v) for v in values]
    if len(vals) == 1:
        vals = vals * ndim
    if len(vals) != ndim or any(v < 1 for v in vals):
        raise EvalError(f"operator `{name}`: `{what}` needs {ndim} positive values")
    return vals


def _layout_axes(name: str, layout: str, ndim: int, x: Array) -> list[int]:
    axes = spatial_axes(layout)
    if len(axes) != ndim:
        raise EvalError(f"operator `{name}`: layout `{layout}` needs {ndim} spatial axes")
    if x.ndim != len(layout) - sum(c.isdigit() for c in layout):
        raise EvalError(f"operator `{name}`: data of rank {x.ndim} is not `{layout}`")
    return axes


def _window_divisor(
    n: int, k: int, s: int, d: int, before: int, after: int, out: int, incl: bool
) -> Array:
    """TVM's per-axis element count of each average-pooling window (int64, unclamped)."""
    start = np.arange(out, dtype=np.int64) * s - before
    end = start + (k - 1) * d
    if incl:
        end = np.minimum(end, n + after - 1)
        return trunc_div(end - start, d) + 1
    jumps = np.maximum(trunc_div(d - 1 - start, d), 0)
    end = np.minimum(end, n - 1)
    return trunc_div(end - (start + d * jumps), d) + 1


def pool_nd(
    name: str, x: Array, axes: list[int], kind: str, attrs: Attrs, include_pad: bool
) -> Array:
    """Max or average pooling of `x` over the spatial `axes` with TVM's rules."""
    ndim = len(axes)
    kernel = _per_axis(name, "pool_size", attrs.pool_size, ndim)
    strides = _per_axis(name, "strides", attrs.strides, ndim)
    dilation = _per_axis(name, "dilation", attrs.dilation, ndim)
    pads = pad_pairs(name, attrs.padding, ndim)
    extra = [s - 1 if attrs.ceil_mode else 0 for s in strides]
    outs = []
    for ax, k, s, d, (before, after), e in zip(axes, kernel, strides, dilation, pads, extra):
        count = (x.shape[ax] - (k - 1) * d - 1 + before + after + e) // s + 1
        if count <= 0:
            raise EvalError(f"operator `{name}`: the window is larger than the padded input")
        outs.append(count)
    pad_width = [(0, 0)] * x.ndim
    for ax, (before, after), e in zip(axes, pads, extra):
        pad_width[ax] = (before, after + e)
    acc: Array | None = None
    if kind == "max":
        padded = np.pad(x, pad_width, constant_values=lowest(x.dtype.name))
    else:
        padded = np.pad(x.astype(wide_dtype(x.dtype)), pad_width)
    for offset in np.ndindex(*kernel):
        window: list[slice] = [slice(None)] * x.ndim
        for ax, o, d, s, count in zip(axes, offset, dilation, strides, outs):
            window[ax] = slice(o * d, o * d + s * (count - 1) + 1, s)
        tap = padded[tuple(window)]
        if acc is None:
            acc = tap.copy()
        elif kind == "max":
            acc = np.maximum(acc, tap)
        else:
            acc = acc + tap
    assert acc is not None
    if kind == "max":
        return acc
    divisor = np.ones((), np.int64)
    for ax, k, s, d, (before, after), count in zip(axes, kernel, strides, dilation, pads, outs):
        per_axis = _window_divisor(x.shape[ax], k, s, d, before, after, count, include_pad)
        shape = [1] * x.ndim
        shape[ax] = count
        divisor = divisor * per_axis.reshape(shape)
    if not include_pad:
        divisor = np.maximum(divisor, 1)
    return _divide(acc, divisor, x.dtype)


def _divide(total: Array, divisor: Array, dtype: np.dtype) -> Array:
    """`total / divisor` in `dtype`: float division, or wrapped-total division toward zero."""
    if dtype.kind in "fc":
        return as_tensor(total / divisor, dtype)
    if np.any(divisor == 0):
        raise EvalError("integer division by zero: an average over no elements")
    return as_tensor(trunc_div(as_tensor(total, dtype), divisor), dtype)


def _register_window_pool(kind: str, ndim: int) -> None:
    name = f"nn.{kind}_pool{ndim}d"

    def impl(args: list[Value], attrs: Attrs | None) -> Array:
        (x,) = tensor_args(name, args)
        a = need_attrs(name, attrs)
        axes = _layout_axes(name, a.layout, ndim, x)
        include = bool(getattr(a, "count_include_pad", False)) if kind == "avg" else False
        return pool_nd(name, x, axes, kind, a, include)

    impl.__name__ = f"{kind}_pool{ndim}d"
    impl.__doc__ = f"TVM's `{name}`."
    IMPLS.register(name)(impl)


for _kind in ("max", "avg"):
    for _ndim in (1, 2, 3):
        _register_window_pool(_kind, _ndim)


def _adaptive_windows(n: int, out: int) -> tuple[Array, Array]:
    i = np.arange(out, dtype=np.int64)
    return (i * n) // out, -((-(i + 1) * n) // out)


def adaptive_pool(x: Array, axes: list[int], sizes: list[int], kind: str) -> Array:
    """Adaptive max or average pooling of the spatial `axes` to `sizes`."""
    reduce: Callable[[Array, Array], Array] = np.maximum if kind == "max" else np.add
    acc = x if kind == "max" else x.astype(wide_dtype(x.dtype))
    divisor = np.ones((), np.int64)
    for ax, out in zip(axes, sizes):
        n = acc.shape[ax]
        if out < 1 or n < 1:
            raise EvalError("adaptive pooling needs positive input and output sizes")
        start, end = _adaptive_windows(n, out)
        length = end - start
        result = None
        for t in range(int(length.max())):
            tap = np.take(acc, np.minimum(start + t, end - 1), axis=ax)
            if kind != "max":
                inside = (t < length).reshape([out if i == ax else 1 for i in range(x.ndim)])
                tap = np.where(inside, tap, 0)
            result = tap if result is None else reduce(result, tap)
        assert result is not None
        acc = result
        divisor = divisor * length.reshape([out if i == ax else 1 for i in range(x.ndim)])
    if kind == "max":
        return as_tensor(acc, x.dtype)
    return _divide(acc, divisor, x.dtype)


def _output_sizes(name: str, output_size: object, x: Array, axes: list[int]) -> list[int]:
    sizes = [int(v) for v in output_size] if output_size else []  # type: ignore[attr-defined]
    if not sizes:
        return [x.shape[ax] for ax in axes]
    if len(sizes) == 1:
        return sizes * len(axes)
    if len(sizes) != len(axes):
        raise EvalError(f"operator `{name}`: output_size needs {len(axes)} values")
    return sizes


def _register_adaptive_pool(kind: str, ndim: int) -> None:
    name = f"nn.adaptive_{kind}_pool{ndim}d"

    def impl(args: list[Value], attrs: Attrs | None) -> Array:
        (x,) = tensor_args(name, args)
        a = need_attrs(name, attrs)
        axes = _layout_axes(name, a.layout, ndim, x)
        return adaptive_pool(x, axes, _output_sizes(name, a.output_size, x, axes), kind)

    impl.__name__ = f"adaptive_{kind}_pool{ndim}d"
    impl.__doc__ = f"TVM's `{name}`."
    IMPLS.register(name)(impl)


for _kind in ("max", "avg"):
    for _ndim in (1, 2, 3):
        _register_adaptive_pool(_kind, _ndim)


def _register_global_pool(kind: str) -> None:
    name = f"nn.global_{kind}_pool2d"

    def impl(args: list[Value], attrs: Attrs | None) -> Array:
        (x,) = tensor_args(name, args)
        axes = _layout_axes(name, need_attrs(name, attrs).layout, 2, x)
        return adaptive_pool(x, axes, [1, 1], kind)

    impl.__name__ = f"global_{kind}_pool2d"
    impl.__doc__ = f"TVM's `{name}`: the {kind} over all spatial positions."
    IMPLS.register(name)(impl)


_register_global_pool("max")
_register_global_pool("avg")
