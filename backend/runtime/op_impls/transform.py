"""Reference implementations of shape and layout transforms, constructors and `*_like` ops.

Also home of the small helpers the other operator families share (argument checks, the
`EvalError` form of the attribute rules in `lang/opdefs/semantics`, layout conversion).
What `reshape`'s special values and `strided_slice`'s begin/end/strides mean is written
once in `lang/opdefs/semantics` (`reshape.py`, `slicing.py`). TVM semantics worth knowing
(topi `transform.h`):

* `layout_transform` splits a primal axis `C` into `C // k` and `k` for a sub-axis `kc`;
  when `k` does not divide `C` the outer axis is rounded up and the padding is zeros.
* `arange` has `ceil((stop - start) / step)` elements `start + i * step`, computed in the
  dtype of its inputs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from numpy.typing import DTypeLike

from ....lang.attrs import Attrs
from ....lang.dtype import numpy_dtype
from ....lang.opdefs import semantics
from ....lang.opdefs.semantics import SemanticsError
from ....lang.optable import OpTable
from ..values import EvalError, Value
from . import Impl

IMPLS: OpTable[Impl] = OpTable("reference implementation")
"""The reference implementations of this family (`op_impls.IMPLS` joins them)."""

Array = np.ndarray

# ---------------------------------------------------------------- shared small helpers


def as_tensor(value: object, dtype: DTypeLike) -> Array:
    """`value` as an array (rank 0 included) of exactly `dtype`."""
    return np.asarray(value).astype(dtype, copy=False)


def need_attrs(name: str, attrs: Attrs | None) -> Attrs:
    """The attributes of a call of `name`; `EvalError` if the call has none."""
    if attrs is None:
        raise EvalError(f"operator `{name}` needs attributes")
    return attrs


def tensor_arg(name: str, value: Value, what: str = "argument") -> Array:
    """`value`, which must be a tensor (`EvalError` naming `what` otherwise)."""
    if not isinstance(value, np.ndarray):
        raise EvalError(f"operator `{name}` expects a tensor as its {what}")
    return value


def tensor_args(name: str, args: list[Value]) -> list[Array]:
    """All arguments, each of which must be a tensor."""
    return [tensor_arg(name, a, f"argument {i}") for i, a in enumerate(args)]


def tuple_arg(name: str, value: Value) -> list[Array]:
    """A tuple of tensors (the one argument of `concatenate`, `stack`, ...)."""
    if not isinstance(value, tuple) or not value:
        raise EvalError(f"operator `{name}` expects a non-empty tuple of tensors")
    return [tensor_arg(name, v, "tuple field") for v in value]


@contextmanager
def semantic_errors(name: str | None = None) -> Iterator[None]:
    """Report a `SemanticsError` of the attribute rules as an `EvalError` (naming the
    operator `name`, if given)."""
    try:
        yield
    except SemanticsError as exc:
        raise EvalError(f"operator `{name}`: {exc}" if name else str(exc)) from None


def normalize_axis(name: str, axis: int, ndim: int) -> int:
    """`axis` in `[0, ndim)` (negative counts from the end); `EvalError` if out of range."""
    try:
        return semantics.normalize_axis(axis, ndim)
    except SemanticsError:
        raise EvalError(f"operator `{name}`: axis {axis} is out of range for rank {ndim}") from None


def dtype_or(dtype: str | None, default: np.dtype) -> np.dtype:
    """The numpy dtype of a relay dtype attribute; a null dtype ("" or None) is `default`."""
    return default if not dtype else numpy_dtype(dtype)


def wide_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype exact arithmetic is done in: int64 for integers and bool, else float64.

    Integer results computed in int64 and cast back wrap exactly like TVM's arithmetic in the
    narrow type (both are arithmetic modulo 2**bits).
    """
    return np.dtype(np.float64) if dtype.kind in "fc" else np.dtype(np.int64)


def trunc_div(a: Array, b: Array | int) -> Array:
    """Integer division rounding toward zero (C's `/`, TVM's `Div` on integers)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


# ----------------------------------------------------------------------------- layouts


def parse_layout(layout: str) -> semantics.LayoutAxes:
    """The `(letter, factor)` axes of a TVM layout string (`semantics.parse_layout`);
    `EvalError` if it is not one."""
    with semantic_errors():
        return semantics.parse_layout(layout)


def spatial_axes(layout: str, letters: str = "DHW") -> list[int]:
    """Positions of the primal spatial axes (`D`, `H`, `W`, in that order) of a layout."""
    with semantic_errors():
        return semantics.spatial_positions(layout, letters)


def convert_layout(x: Array, src: str, dst: str) -> Array:
    """`x` in layout `src` rearranged into layout `dst` (TVM's `layout_transform`)."""
    if src == dst:
        return x
    src_axes, dst_axes = parse_layout(src), parse_layout(dst)
    if x.ndim != len(src_axes):
        raise EvalError(f"a tensor of rank {x.ndim} does not have layout `{src}`")
    primals = [a for a, _ in src_axes if a.isupper()]
    if sorted(primals) != sorted(a for a, _ in dst_axes if a.isupper()):
        raise EvalError(f"cannot convert layout `{src}` to `{dst}`")
    src_names = [a for a, _ in src_axes]
    # 1. each primal axis next to its sub-axis, merged: the tensor in primal axes only
    order: list[int] = []
    merged: list[int] = []
    for p in primals:
        outer = src_names.index(p)
        order.append(outer)
        size = x.shape[outer]
        if p.lower() in src_names:
            inner = src_names.index(p.lower())
            order.append(inner)
            size *= x.shape[inner]
        merged.append(size)
    y = np.transpose(x, order).reshape(merged)
    # 2. split (padding with zeros where the factor does not divide), then permute
    dst_names = [a for a, _ in dst_axes]
    factors = dict(dst_axes)
    split_shape: list[int] = []
    split_names: list[str] = []
    pad: list[tuple[int, int]] = []
    for p, size in zip(primals, merged):
        sub = p.lower()
        if sub in factors:
            factor = factors[sub]
            outer = -(-size // factor)
            pad.append((0, outer * factor - size))
            split_shape += [outer, factor]
            split_names += [p, sub]
        else:
            pad.append((0, 0))
            split_shape.append(size)
            split_names.append(p)
    if any(after for _, after in pad):
        y = np.pad(y, pad)
    y = y.reshape(split_shape)
    return np.ascontiguousarray(np.transpose(y, [split_names.index(a) for a in dst_names]))


@IMPLS.register("layout_transform")
def layout_transform(args: list[Value], attrs: Attrs | None) -> Array:
    """Rearrange the data from `src_layout` to `dst_layout` (e.g. NCHW to NCHW8c)."""
    (x,) = tensor_args("layout_transform", args)
    a = need_attrs("layout_transform", attrs)
    return convert_layout(x, a.src_layout, a.dst_layout)


# ------------------------------------------------------------------------ constructors


def _static_shape(name: str, shape: object) -> tuple[int, ...]:
    if shape is None:
        raise EvalError(f"operator `{name}` needs a static `shape`")
    dims = tuple(int(d) for d in shape)  # type: ignore[attr-defined]
    if any(d < 0 for d in dims):
        raise EvalError(f"operator `{name}`: negative dimension in shape {dims}")
    return dims


@IMPLS.register("zeros")
def zeros(args: list[Value], attrs: Attrs | None) -> Array:
    """Zeros of `shape` and `dtype` (float32 when null)."""
    a = need_attrs("zeros", attrs)
    return np.zeros(_static_shape("zeros", a.shape), dtype_or(a.dtype, np.dtype(np.float32)))


@IMPLS.register("ones")
def ones(args: list[Value], attrs: Attrs | None) -> Array:
    """Ones of `shape` and `dtype` (float32 when null)."""
    a = need_attrs("ones", attrs)
    return np.ones(_static_shape("ones", a.shape), dtype_or(a.dtype, np.dtype(np.float32)))


@IMPLS.register("full")
def full(args: list[Value], attrs: Attrs | None) -> Array:
    """A `shape` tensor of `dtype` (null: the fill value's), every element `fill_value`."""
    (fill,) = tensor_args("full", args)
    a = need_attrs("full", attrs)
    dtype = dtype_or(a.dtype, fill.dtype)
    if fill.ndim != 0:
        raise EvalError("operator `full` expects a scalar fill value")
    return np.full(_static_shape("full", a.shape), fill.astype(dtype))


@IMPLS.register("full_like")
def full_like(args: list[Value], attrs: Attrs | None) -> Array:
    """The shape and dtype of `data`, every element `fill_value`."""
    data, fill = tensor_args("full_like", args)
    if fill.ndim != 0:
        raise EvalError("operator `full_like` expects a scalar fill value")
    return np.full(data.shape, fill.astype(data.dtype))


@IMPLS.register("arange")
def arange(args: list[Value], attrs: Attrs | None) -> Array:
    """`start + i * step` for `i < ceil((stop - start) / step)`, cast to `dtype`."""
    start, stop, step = tensor_args("arange", args)
    a = need_attrs("arange", attrs)
    dtype = numpy_dtype(a.dtype)
    if start.ndim or stop.ndim or step.ndim:
        raise EvalError("operator `arange` expects scalar start, stop and step")
    if step == 0:
        raise EvalError("`arange` with a zero step")
    compute = np.result_type(start, stop, step)
    if compute.kind in "iub":
        b, e, s = int(start), int(stop), int(step)
        count = max(0, -(-(e - b) // s))
        values: Array = b + s * np.arange(count, dtype=np.int64)
    else:
        count = max(0, math.ceil((float(stop) - float(start)) / float(step)))
        i = np.arange(count).astype(compute)
        values = start.astype(compute) + step.astype(compute) * i
    return as_tensor(values, dtype)


# ---------------------------------------------------------------------------- reshape


@IMPLS.register("reshape")
def reshape(args: list[Value], attrs: Attrs | None) -> Array:
    """Reshape to `newshape` with TVM's special values."""
    (x,) = tensor_args("reshape", args)
    a = need_attrs("reshape", attrs)
    with semantic_errors("reshape"):
        shape = semantics.reshape_shape(x.shape, tuple(a.newshape), bool(a.allowzero))
    return x.reshape(shape).copy()


def _bound(index: int | None, ndim: int, default: int) -> int:
    if index is None:
        return default
    return index + ndim if index < 0 else index


@IMPLS.register("reshape_like")
def reshape_like(args: list[Value], attrs: Attrs | None) -> Array:
    """Replace dims [lhs_begin, lhs_end) of data by dims [rhs_begin, rhs_end) of shape_like."""
    x, like = tensor_args("reshape_like", args)
    a = need_attrs("reshape_like", attrs)
    lb = _bound(a.lhs_begin, x.ndim, 0)
    le = _bound(a.lhs_end, x.ndim, x.ndim)
    rb = _bound(a.rhs_begin, like.ndim, 0)
    re_ = _bound(a.rhs_end, like.ndim, like.ndim)
    shape = x.shape[:lb] + like.shape[rb:re_] + x.shape[le:]
    if math.prod(shape) != x.size:
        raise EvalError(f"reshape_like: cannot reshape {list(x.shape)} to {list(shape)}")
    return x.reshape(shape).copy()


@IMPLS.register("transpose")
def transpose(args: list[Value], attrs: Attrs | None) -> Array:
    """Permute the axes (`axes` null or empty: reverse them)."""
    (x,) = tensor_args("transpose", args)
    axes = need_attrs("transpose", attrs).axes
    if not axes:
        return np.ascontiguousarray(np.transpose(x))
    perm = [normalize_axis("transpose", ax, x.ndim) for ax in axes]
    if sorted(perm) != list(range(x.ndim)):
        raise EvalError(f"transpose: {list(axes)} is not a permutation of {x.ndim} axes")
    return np.ascontiguousarray(np.transpose(x, perm))


@IMPLS.register("squeeze")
def squeeze(args: list[Value], attrs: Attrs | None) -> Array:
    """Drop the listed size-1 axes (null: every size-1 axis)."""
    (x,) = tensor_args("squeeze", args)
    axis = need_attrs("squeeze", attrs).axis
    if axis is None:
        return x.reshape([d for d in x.shape if d != 1]).copy()
    drop = {normalize_axis("squeeze", ax, x.ndim) for ax in axis}
    for ax in drop:
        if x.shape[ax] != 1:
            raise EvalError(f"squeeze: axis {ax} has size {x.shape[ax]}, not 1")
    return x.reshape([d for i, d in enumerate(x.shape) if i not in drop]).copy()


@IMPLS.register("expand_dims")
def expand_dims(args: list[Value], attrs: Attrs | None) -> Array:
    """Insert `num_newaxis` size-1 axes at `axis` (in `[-ndim - 1, ndim]`)."""
    (x,) = tensor_args("expand_dims", args)
    a = need_attrs("expand_dims", attrs)
    axis = normalize_axis("expand_dims", a.axis, x.ndim + 1)
    if a.num_newaxis < 0:
        raise EvalError("expand_dims: num_newaxis must not be negative")
    return x.reshape(x.shape[:axis] + (1,) * a.num_newaxis + x.shape[axis:]).copy()


def _same_dtype(name: str, arrays: list[Array]) -> np.dtype:
    dtypes = {a.dtype for a in arrays}
    if len(dtypes) != 1:
        raise EvalError(f"operator `{name}` expects tensors of one dtype, got {dtypes}")
    return arrays[0].dtype


@IMPLS.register("concatenate")
def concatenate(args: list[Value], attrs: Attrs | None) -> Array:
    """Join a tuple of tensors along `axis`."""
    arrays = tuple_arg("concatenate", args[0])
    dtype = _same_dtype("concatenate", arrays)
    ndim = arrays[0].ndim
    if ndim == 0 or any(a.ndim != ndim for a in arrays):
        raise EvalError("concatenate expects tensors of one rank, at least 1")
    axis = normalize_axis("concatenate", need_attrs("concatenate", attrs).axis, ndim)
    try:
        return np.concatenate(arrays, axis=axis).astype(dtype, copy=False)
    except ValueError as exc:
        raise EvalError(f"concatenate: {exc}") from None


@IMPLS.register("stack")
def stack(args: list[Value], attrs: Attrs | None) -> Array:
    """Stack a tuple of same-shape tensors along a new axis."""
    arrays = tuple_arg("stack", args[0])
    dtype = _same_dtype("stack", arrays)
    axis = normalize_axis("stack", need_attrs("stack", attrs).axis, arrays[0].ndim + 1)
    if any(a.shape != arrays[0].shape for a in arrays):
        raise EvalError("stack expects tensors of one shape")
    return np.stack(arrays, axis=axis).astype(dtype, copy=False)


@IMPLS.register("split")
def split(args: list[Value], attrs: Attrs | None) -> tuple:
    """N equal sections, or the pieces between the given indices; a tuple."""
    (x,) = tensor_args("split", args)
    a = need_attrs("split", attrs)
    if x.ndim == 0:
        raise EvalError("split of a scalar")
    axis = normalize_axis("split", a.axis, x.ndim)
    sections = a.indices_or_sections
    if isinstance(sections, int):
        if sections <= 0 or x.shape[axis] % sections:
            raise EvalError(f"split: {sections} sections do not divide an axis of {x.shape[axis]}")
        pieces = np.split(x, sections, axis=axis)
    else:
        pieces = np.split(x, list(sections), axis=axis)
    return tuple(p.copy() for p in pieces)


def strided_slice_indices(
    shape: tuple[int, ...],
    begin: tuple[int, ...],
    end: tuple[int, ...],
    strides: tuple[int, ...] | None,
    axes: tuple[int, ...] | None,
    slice_mode: str,
) -> list[Array | None]:
    """The source indices along each axis of TVM's `strided_slice` (None: whole axis).

    `strides` None means a stride of 1 on every sliced axis."""
    with semantic_errors("strided_slice"):
        ranges = semantics.strided_slice_ranges(shape, begin, end, strides, axes, slice_mode)
    return [None if r is None else r[0] + r[1] * np.arange(r[2], dtype=np.int64) for r in ranges]


def take_indices(x: Array, indices: list[Array | None]) -> Array:
    """`x` indexed along each axis by an index array (None: the whole axis)."""
    for ax, idx in enumerate(indices):
        if idx is not None:
            x = np.take(x, idx, axis=ax)
    return np.array(x, copy=True)


@IMPLS.register("strided_slice")
def strided_slice(args: list[Value], attrs: Attrs | None) -> Array:
    """Slice `[begin, end)` with `strides` (TVM's canonicalization and clamping)."""
    (x,) = tensor_args("strided_slice", args)
    a = need_attrs("strided_slice", attrs)
    if a.begin is None or a.end is None:
        raise EvalError("strided_slice needs static begin and end")
    idx = strided_slice_indices(x.shape, a.begin, a.end, a.strides, a.axes, a.slice_mode)
    return take_indices(x, idx)


@IMPLS.register("slice_like")
def slice_like(args: list[Value], attrs: Attrs | None) -> Array:
    """`data[0:like.shape[i]]` on `axes` (null: the leading axes the two share)."""
    x, like = tensor_args("slice_like", args)
    axes = need_attrs("slice_like", attrs).axes
    if not axes:
        axes = range(min(x.ndim, like.ndim))
    index: list[slice] = [slice(None)] * x.ndim
    for ax in axes:
        ax = normalize_axis("slice_like", ax, x.ndim)
        if ax >= like.ndim or like.shape[ax] > x.shape[ax]:
            raise EvalError(f"slice_like: axis {ax} of shape_like does not fit the data")
        index[ax] = slice(0, like.shape[ax])
    return x[tuple(index)].copy()


@IMPLS.register("tile")
def tile(args: list[Value], attrs: Attrs | None) -> Array:
    """Repeat the whole tensor `reps` times per axis (numpy's `tile`)."""
    (x,) = tensor_args("tile", args)
    reps = tuple(need_attrs("tile", attrs).reps)
    if any(r < 0 for r in reps):
        raise EvalError("tile: negative repetition")
    return np.tile(x, reps)


@IMPLS.register("repeat")
def repeat(args: list[Value], attrs: Attrs | None) -> Array:
    """Repeat each element `repeats` times along `axis` (null: of the flattened data)."""
    (x,) = tensor_args("repeat", args)
    a = need_attrs("repeat", attrs)
    if a.repeats < 1:
        raise EvalError("repeat: `repeats` must be at least 1")
    if a.axis is None:
        return np.repeat(x, a.repeats)
    return np.repeat(x, a.repeats, axis=normalize_axis("repeat", a.axis, x.ndim))


@IMPLS.register("reverse")
def reverse(args: list[Value], attrs: Attrs | None) -> Array:
    """Reverse the order along `axis` (null: along every axis)."""
    (x,) = tensor_args("reverse", args)
    axis = need_attrs("reverse", attrs).axis
    if axis is None:
        return np.flip(x).copy()
    return np.flip(x, normalize_axis("reverse", axis, x.ndim)).copy()


def _broadcast(name: str, x: Array, shape: tuple[int, ...]) -> Array:
    try:
        return np.broadcast_to(x, shape).copy()
    except ValueError:
        raise EvalError(f"{name}: cannot broadcast {list(x.shape)} to {list(shape)}") from None


@IMPLS.register("broadcast_to")
def broadcast_to(args: list[Value], attrs: Attrs | None) -> Array:
    """Broadcast to `shape` with numpy's rules."""
    (x,) = tensor_args("broadcast_to", args)
    shape = _static_shape("broadcast_to", need_attrs("broadcast_to", attrs).shape)
    return _broadcast("broadcast_to", x, shape)


@IMPLS.register("broadcast_to_like")
def broadcast_to_like(args: list[Value], attrs: Attrs | None) -> Array:
    """Broadcast to the shape of the second argument."""
    x, like = tensor_args("broadcast_to_like", args)
    return _broadcast("broadcast_to_like", x, like.shape)


def collapse_sum(x: Array, shape: tuple[int, ...]) -> Array:
    """Sum `x` down to `shape` (the inverse of broadcasting `shape` to `x.shape`)."""
    lead = x.ndim - len(shape)
    if lead < 0 or any(d not in (1, n) for d, n in zip(shape, x.shape[lead:])):
        raise EvalError(f"collapse_sum_like: cannot collapse {list(x.shape)} to {list(shape)}")
    axes = tuple(range(lead)) + tuple(
        lead + i for i, d in enumerate(shape) if d == 1 and x.shape[lead + i] != 1
    )
    total = x.astype(wide_dtype(x.dtype)).sum(axis=axes, keepdims=True)
    return as_tensor(total.reshape(shape), x.dtype)


@IMPLS.register("collapse_sum_like")
def collapse_sum_like(args: list[Value], attrs: Attrs | None) -> Array:
    """Sum the broadcast axes away to reach the shape of the second argument."""
    x, like = tensor_args("collapse_sum_like", args)
    return collapse_sum(x, like.shape)


@IMPLS.register("shape_of")
def shape_of(args: list[Value], attrs: Attrs | None) -> Array:
    """The shape as a 1-D tensor of `dtype` (null: int32)."""
    (x,) = tensor_args("shape_of", args)
    dtype = dtype_or(need_attrs("shape_of", attrs).dtype, np.dtype(np.int32))
    return np.asarray(x.shape, dtype=np.int64).astype(dtype)


@IMPLS.register("ndarray_size")
def ndarray_size(args: list[Value], attrs: Attrs | None) -> Array:
    """The number of elements as a scalar of `dtype` (null: int32)."""
    (x,) = tensor_args("ndarray_size", args)
    dtype = dtype_or(need_attrs("ndarray_size", attrs).dtype, np.dtype(np.int32))
    return as_tensor(x.size, dtype)


@IMPLS.register("meshgrid")
def meshgrid(args: list[Value], attrs: Attrs | None) -> tuple:
    """Coordinate grids from 1-D tensors ("ij", or "xy": the first two axes swapped)."""
    arrays = tuple_arg("meshgrid", args[0])
    indexing = need_attrs("meshgrid", attrs).indexing
    if indexing not in ("ij", "xy"):
        raise EvalError(f"meshgrid: unknown indexing `{indexing}`")
    if any(a.ndim > 1 for a in arrays):
        raise EvalError("meshgrid expects 1-D (or scalar) tensors")
    flat = [a.reshape(-1) for a in arrays]
    grids = np.meshgrid(*flat, indexing=indexing if len(flat) >= 2 else "ij")
    return tuple(np.array(g, copy=True) for g in grids)
