"""Reference implementations of shape and layout transforms, constructors and `*_like` ops.

Also home of the small helpers the other operator families share (argument checks, axis
normalization, TVM layout strings). TVM semantics worth knowing (topi `transform.h`):

* `reshape`'s special values: 0 copies the input dimension (a literal 0 when `allowzero`),
  -1 is inferred, -2 copies all remaining dimensions, -3 merges two, -4 splits one into the
  next two values (one of which may be -1).
* `strided_slice` canonicalizes begin and end like TVM: a negative index counts from the
  end, then it is clamped to `[0, dim]` (positive stride) or `[-1, dim - 1]` (negative
  stride); a missing begin/end/stride means the whole axis with stride 1 (but a missing
  end with a negative stride is 0, as in TVM); in "size" mode `end` holds lengths
  (negative: to the end) and strides are ignored. A range that runs the wrong way for its
  stride is an error (TVM rejects it), not an empty slice.
* `layout_transform` splits a primal axis `C` into `C // k` and `k` for a sub-axis `kc`;
  when `k` does not divide `C` the outer axis is rounded up and the padding is zeros.
* `arange` has `ceil((stop - start) / step)` elements `start + i * step`, computed in the
  dtype of its inputs.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from ....lang.attrs import Attrs
from ....lang.dtype import numpy_dtype
from ..values import EvalError, Value
from . import implementation

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


def normalize_axis(name: str, axis: int, ndim: int) -> int:
    """`axis` in `[0, ndim)` (negative counts from the end); `EvalError` if out of range."""
    if not -ndim <= axis < ndim:
        raise EvalError(f"operator `{name}`: axis {axis} is out of range for rank {ndim}")
    return axis + ndim if axis < 0 else axis


def dtype_or(dtype: str | None, default: np.dtype) -> np.dtype:
    """The numpy dtype of a relay dtype attribute; a null dtype ("" or None) is `default`."""
    return default if not dtype else numpy_dtype(dtype)


def wide_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype exact arithmetic is done in: int64 for integers and bool, else float64.

    Integer results computed in int64 and cast back wrap exactly like TVM's arithmetic in the
    narrow type (both are arithmetic modulo 2**bits).
    """
    return np.dtype(np.float64) if dtype.kind in "fc" else np.dtype(np.int64)


def lowest(dtype: np.dtype) -> Any:
    """TVM's `min_value(dtype)`: the lowest finite value."""
    if dtype == np.bool_:
        return False
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return np.finfo(dtype).min


def highest(dtype: np.dtype) -> Any:
    """TVM's `max_value(dtype)`: the highest finite value."""
    if dtype == np.bool_:
        return True
    if dtype.kind in "iu":
        return np.iinfo(dtype).max
    return np.finfo(dtype).max


def trunc_div(a: Array, b: Array | int) -> Array:
    """Integer division rounding toward zero (C's `/`, TVM's `Div` on integers)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


# ----------------------------------------------------------------------------- layouts

_LAYOUT_TOKEN = re.compile(r"(\d*)([A-Za-z])")


def parse_layout(layout: str) -> list[tuple[str, int]]:
    """The axes of a TVM layout string, as `(letter, factor)`.

    Upper-case letters are primal axes (factor 0); a lower-case letter is a sub-axis of its
    upper-case primal, with the factor written before it (`NCHW16c`: `c` has factor 16; a
    missing factor is 0, e.g. `NCHWc` as pooling accepts).
    """
    axes: list[tuple[str, int]] = []
    pos = 0
    for match in _LAYOUT_TOKEN.finditer(layout):
        if match.start() != pos:
            break
        digits, letter = match.groups()
        if letter.isupper() and digits:
            raise EvalError(f"bad layout `{layout}`: a primal axis `{letter}` has a factor")
        axes.append((letter, int(digits) if digits else 0))
        pos = match.end()
    if pos != len(layout) or not layout:
        raise EvalError(f"bad layout `{layout}`")
    letters = [a for a, _ in axes]
    if len(set(letters)) != len(letters):
        raise EvalError(f"bad layout `{layout}`: an axis appears twice")
    for letter in letters:
        if letter.islower() and letter.upper() not in letters:
            raise EvalError(f"bad layout `{layout}`: sub-axis `{letter}` without its primal")
    return axes


def spatial_axes(layout: str, letters: str = "DHW") -> list[int]:
    """Positions of the primal spatial axes (`D`, `H`, `W`, in that order) of a layout."""
    names = [a for a, _ in parse_layout(layout)]
    return [names.index(c) for c in letters if c in names]


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
            if factor <= 0:
                raise EvalError(f"layout `{dst}`: sub-axis `{sub}` needs a factor")
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


@implementation("layout_transform")
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


@implementation("zeros")
def zeros(args: list[Value], attrs: Attrs | None) -> Array:
    """Zeros of `shape` and `dtype` (float32 when null)."""
    a = need_attrs("zeros", attrs)
    return np.zeros(_static_shape("zeros", a.shape), dtype_or(a.dtype, np.dtype(np.float32)))


@implementation("ones")
def ones(args: list[Value], attrs: Attrs | None) -> Array:
    """Ones of `shape` and `dtype` (float32 when null)."""
    a = need_attrs("ones", attrs)
    return np.ones(_static_shape("ones", a.shape), dtype_or(a.dtype, np.dtype(np.float32)))


@implementation("full")
def full(args: list[Value], attrs: Attrs | None) -> Array:
    """A `shape` tensor of `dtype` (null: the fill value's), every element `fill_value`."""
    (fill,) = tensor_args("full", args)
    a = need_attrs("full", attrs)
    dtype = dtype_or(a.dtype, fill.dtype)
    if fill.ndim != 0:
        raise EvalError("operator `full` expects a scalar fill value")
    return np.full(_static_shape("full", a.shape), fill.astype(dtype))


@implementation("full_like")
def full_like(args: list[Value], attrs: Attrs | None) -> Array:
    """The shape and dtype of `data`, every element `fill_value`."""
    data, fill = tensor_args("full_like", args)
    if fill.ndim != 0:
        raise EvalError("operator `full_like` expects a scalar fill value")
    return np.full(data.shape, fill.astype(data.dtype))


@implementation("arange")
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


def infer_reshape(ishape: tuple[int, ...], newshape: tuple[int, ...], allowzero: bool) -> list[int]:
    """The output shape of TVM's `reshape(newshape)` of an `ishape` tensor."""
    out: list[int] = []
    infer_at = -1
    src = 0
    i = 0
    ndim = len(ishape)

    def take_src() -> int:
        nonlocal src
        if src >= ndim:
            raise EvalError(f"reshape: newshape {list(newshape)} uses more input axes than exist")
        src += 1
        return ishape[src - 1]

    while i < len(newshape):
        s = newshape[i]
        if s > 0:
            out.append(s)
            src += 1
        elif s == 0 and allowzero:
            out.append(0)
            src += 1
        elif s == 0:
            out.append(take_src())
        elif s == -1:
            if infer_at >= 0:
                raise EvalError("reshape: more than one -1 in newshape")
            infer_at = len(out)
            out.append(-1)
            src += 1
        elif s == -2:
            while src < ndim:
                out.append(ishape[src])
                src += 1
        elif s == -3:
            d1 = take_src()
            d2 = take_src()
            out.append(d1 * d2)
        elif s == -4:
            if i + 2 >= len(newshape):
                raise EvalError("reshape: -4 must be followed by two values")
            d0 = take_src()
            d1, d2 = newshape[i + 1], newshape[i + 2]
            i += 2
            if d1 == -1 and d2 > 0 and d0 % d2 == 0:
                d1 = d0 // d2
            elif d2 == -1 and d1 > 0 and d0 % d1 == 0:
                d2 = d0 // d1
            if d1 * d2 != d0:
                raise EvalError(f"reshape: cannot split a dimension of {d0} into {d1} x {d2}")
            out += [d1, d2]
        else:
            raise EvalError(f"reshape: bad value {s} in newshape")
        i += 1
    total = math.prod(ishape)
    if infer_at >= 0:
        known = math.prod(d for j, d in enumerate(out) if j != infer_at)
        if known == 0 or total % known:
            raise EvalError(f"reshape: cannot infer -1 reshaping {list(ishape)} to {out}")
        out[infer_at] = total // known
    if math.prod(out) != total:
        raise EvalError(f"reshape: cannot reshape {list(ishape)} to {out}")
    return out


@implementation("reshape")
def reshape(args: list[Value], attrs: Attrs | None) -> Array:
    """Reshape to `newshape` with TVM's special values."""
    (x,) = tensor_args("reshape", args)
    a = need_attrs("reshape", attrs)
    return x.reshape(infer_reshape(x.shape, tuple(a.newshape), bool(a.allowzero))).copy()


def _bound(index: int | None, ndim: int, default: int) -> int:
    if index is None:
        return default
    return index + ndim if index < 0 else index


@implementation("reshape_like")
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


@implementation("transpose")
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


@implementation("squeeze")
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


@implementation("expand_dims")
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


@implementation("concatenate")
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


@implementation("stack")
def stack(args: list[Value], attrs: Attrs | None) -> Array:
    """Stack a tuple of same-shape tensors along a new axis."""
    arrays = tuple_arg("stack", args[0])
    dtype = _same_dtype("stack", arrays)
    axis = normalize_axis("stack", need_attrs("stack", attrs).axis, arrays[0].ndim + 1)
    if any(a.shape != arrays[0].shape for a in arrays):
        raise EvalError("stack expects tensors of one shape")
    return np.stack(arrays, axis=axis).astype(dtype, copy=False)


@implementation("split")
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


_MAX = 2**63 - 1


def _canonical_index(index: int, extent: int, stride: int) -> int:
    lo, hi = (-1, extent - 1) if stride < 0 else (0, extent)
    if index < 0:
        index += extent
    return min(max(index, lo), hi)


def strided_slice_indices(
    shape: tuple[int, ...],
    begin: tuple[int, ...],
    end: tuple[int, ...],
    strides: tuple[int, ...],
    axes: tuple[int, ...] | None,
    slice_mode: str,
) -> list[Array | None]:
    """The source indices along each axis of TVM's `strided_slice` (None: whole axis)."""
    ndim = len(shape)
    if axes is None:
        axes = tuple(range(ndim))
        strides = tuple(strides) + (1,) * (ndim - len(strides))
        begin = tuple(begin) + tuple(0 if s > 0 else _MAX for s in strides[len(begin) :])
        end = tuple(end) + tuple(0 if s < 0 else _MAX for s in strides[len(end) :])
    else:
        strides = tuple(strides) + (1,) * (len(axes) - len(strides))
    if not (len(begin) == len(end) == len(axes)) or len(begin) > ndim:
        raise EvalError("strided_slice: begin, end (and axes) must have matching lengths")
    result: list[Array | None] = [None] * ndim
    for i, ax in enumerate(axes):
        ax = normalize_axis("strided_slice", ax, ndim)
        stride = 1 if slice_mode == "size" else strides[i]
        if stride == 0:
            raise EvalError("strided_slice: stride 0")
        stop = end[i]
        if slice_mode == "size":
            stop = (0 if stride < 0 else _MAX) if stop < 0 else begin[i] + stop
        dim = shape[ax]
        b = _canonical_index(begin[i], dim, stride)
        e = _canonical_index(stop, dim, stride)
        if (stride < 0 and e > b) or (stride > 0 and b > e):
            raise EvalError(
                f"strided_slice: begin {begin[i]} and end {end[i]} are invalid for axis {ax} "
                f"with stride {stride}"
            )
        count = (abs(e - b) + abs(stride) - 1) // abs(stride)
        result[ax] = b + stride * np.arange(count, dtype=np.int64)
    return result


def take_indices(x: Array, indices: list[Array | None]) -> Array:
    """`x` indexed along each axis by an index array (None: the whole axis)."""
    for ax, idx in enumerate(indices):
        if idx is not None:
            x = np.take(x, idx, axis=ax)
    return np.array(x, copy=True)


@implementation("strided_slice")
def strided_slice(args: list[Value], attrs: Attrs | None) -> Array:
    """Slice `[begin, end)` with `strides` (TVM's canonicalization and clamping)."""
    (x,) = tensor_args("strided_slice", args)
    a = need_attrs("strided_slice", attrs)
    if a.begin is None or a.end is None:
        raise EvalError("strided_slice needs static begin and end")
    if a.slice_mode not in ("end", "size"):
        raise EvalError(f"strided_slice: unknown slice_mode `{a.slice_mode}`")
    strides = tuple(a.strides) if a.strides is not None else ()
    axes = tuple(a.axes) if a.axes is not None else None
    idx = strided_slice_indices(x.shape, a.begin, a.end, strides, axes, a.slice_mode)
    return take_indices(x, idx)


@implementation("slice_like")
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


@implementation("tile")
def tile(args: list[Value], attrs: Attrs | None) -> Array:
    """Repeat the whole tensor `reps` times per axis (numpy's `tile`)."""
    (x,) = tensor_args("tile", args)
    reps = tuple(need_attrs("tile", attrs).reps)
    if any(r < 0 for r in reps):
        raise EvalError("tile: negative repetition")
    return np.tile(x, reps)


@implementation("repeat")
def repeat(args: list[Value], attrs: Attrs | None) -> Array:
    """Repeat each element `repeats` times along `axis` (null: of the flattened data)."""
    (x,) = tensor_args("repeat", args)
    a = need_attrs("repeat", attrs)
    if a.repeats < 1:
        raise EvalError("repeat: `repeats` must be at least 1")
    if a.axis is None:
        return np.repeat(x, a.repeats)
    return np.repeat(x, a.repeats, axis=normalize_axis("repeat", a.axis, x.ndim))


@implementation("reverse")
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


@implementation("broadcast_to")
def broadcast_to(args: list[Value], attrs: Attrs | None) -> Array:
    """Broadcast to `shape` with numpy's rules."""
    (x,) = tensor_args("broadcast_to", args)
    shape = _static_shape("broadcast_to", need_attrs("broadcast_to", attrs).shape)
    return _broadcast("broadcast_to", x, shape)


@implementation("broadcast_to_like")
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


@implementation("collapse_sum_like")
def collapse_sum_like(args: list[Value], attrs: Attrs | None) -> Array:
    """Sum the broadcast axes away to reach the shape of the second argument."""
    x, like = tensor_args("collapse_sum_like", args)
    return collapse_sum(x, like.shape)


@implementation("shape_of")
def shape_of(args: list[Value], attrs: Attrs | None) -> Array:
    """The shape as a 1-D tensor of `dtype` (null: int32)."""
    (x,) = tensor_args("shape_of", args)
    dtype = dtype_or(need_attrs("shape_of", attrs).dtype, np.dtype(np.int32))
    return np.asarray(x.shape, dtype=np.int64).astype(dtype)


@implementation("ndarray_size")
def ndarray_size(args: list[Value], attrs: Attrs | None) -> Array:
    """The number of elements as a scalar of `dtype` (null: int32)."""
    (x,) = tensor_args("ndarray_size", args)
    dtype = dtype_or(need_attrs("ndarray_size", attrs).dtype, np.dtype(np.int32))
    return as_tensor(x.size, dtype)


@implementation("meshgrid")
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
