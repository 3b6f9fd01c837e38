"""Reference implementations of indexing operators, with TVM semantics (topi `transform.h`).

* `take`: mode "clip" clamps each index into `[0, n - 1]` (so -1 reads element 0), "wrap"
  takes it modulo n (Python's `%`), "fast" does no check (an out-of-range index, undefined
  in TVM, is an `EvalError` here). `batch_dims` pairs the leading axes of data and
  indices, as TVM's "clip" compute does (TVM's "fast"/"wrap" computes ignore it).
* `gather`, `gather_nd` and `adv_index` read unchecked in TVM: an out-of-range (or
  negative) index is an `EvalError` here.
* `scatter_elements` accepts negative indices (+ the axis length) and applies the updates
  of one line in order along the axis: "update" keeps the last, "mean" replaces the value by
  `(value + update) / 2` each time.
* `one_hot`: an index outside `[0, depth)` gives a row of `off_value`.
* `sparse_to_dense`: later duplicates win; an index outside the output is ignored.
* `unravel_index`: every coordinate is taken modulo its dimension (floor division).
* `matrix_set_diag`: diagonals k1..k2 with TVM's (TensorFlow's) alignment rules.
* `sequence_mask`: `axis` (0 or 1) is the time axis, the other of the two the batch axis.
"""

from __future__ import annotations

import math

import numpy as np

from ....lang.attrs import Attrs
from ....lang.optable import OpTable
from ..values import EvalError, Value
from . import Impl
from .transform import (
    as_tensor,
    dtype_or,
    need_attrs,
    normalize_axis,
    tensor_arg,
    tensor_args,
    trunc_div,
)

IMPLS: OpTable[Impl] = OpTable("reference implementation")
"""The reference implementations of this family (`op_impls.IMPLS` joins them)."""

Array = np.ndarray


def _int_indices(name: str, indices: Array) -> Array:
    if indices.dtype.kind not in "iu":
        if indices.dtype.kind == "f":
            return indices.astype(np.int64)
        raise EvalError(f"operator `{name}` expects integer indices, got {indices.dtype}")
    return indices.astype(np.int64)


def _check_range(name: str, idx: Array, n: int) -> None:
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise EvalError(f"operator `{name}`: index out of range [0, {n})")


def _mode_indices(name: str, idx: Array, n: int, mode: str) -> Array:
    if mode == "clip":
        if n == 0 and idx.size:
            raise EvalError(f"operator `{name}`: indexing an empty axis")
        return np.clip(idx, 0, n - 1)
    if mode == "wrap":
        if n == 0 and idx.size:
            raise EvalError(f"operator `{name}`: indexing an empty axis")
        return np.mod(idx, max(n, 1))
    if mode == "fast":
        _check_range(name, idx, n)
        return idx
    raise EvalError(f"operator `{name}`: unknown mode `{mode}`")


@IMPLS.register("take")
def take(args: list[Value], attrs: Attrs | None) -> Array:
    """Elements of data at `indices` along `axis` (null: of the flattened data)."""
    data, raw = tensor_args("take", args)
    a = need_attrs("take", attrs)
    idx = _int_indices("take", raw)
    if a.axis is None:
        flat = data.reshape(-1)
        return np.asarray(flat[_mode_indices("take", idx, flat.size, a.mode)])
    if data.ndim == 0:
        raise EvalError("take along an axis of a scalar")
    axis = normalize_axis("take", a.axis, data.ndim)
    b = a.batch_dims + idx.ndim if a.batch_dims < 0 else a.batch_dims
    if not 0 <= b <= min(axis, idx.ndim):
        raise EvalError(f"take: batch_dims {a.batch_dims} is out of range")
    if data.shape[:b] != idx.shape[:b]:
        raise EvalError("take: the batch dimensions of data and indices differ")
    idx = _mode_indices("take", idx, data.shape[axis], a.mode)
    batch = math.prod(data.shape[:b])
    middle = math.prod(data.shape[b:axis])
    rest = data.shape[axis + 1 :]
    d = data.reshape((batch, middle, data.shape[axis], *rest))
    i = idx.reshape(batch, -1)
    out = d[
        np.arange(batch)[:, None, None],
        np.arange(middle)[None, :, None],
        i[:, None, :],
    ]
    return out.reshape(data.shape[:axis] + idx.shape[b:] + rest)


@IMPLS.register("gather")
def gather(args: list[Value], attrs: Attrs | None) -> Array:
    """`out[i..] = data[i.., indices[i..] at axis, ..]`; indices have the rank of data."""
    data, raw = tensor_args("gather", args)
    a = need_attrs("gather", attrs)
    if a.axis is None:
        raise EvalError("gather needs an `axis`")
    if data.ndim == 0 or raw.ndim != data.ndim:
        raise EvalError("gather: indices must have the rank of the data (at least 1)")
    axis = normalize_axis("gather", a.axis, data.ndim)
    idx = _int_indices("gather", raw)
    if any(idx.shape[i] > data.shape[i] for i in range(data.ndim) if i != axis):
        raise EvalError("gather: indices are larger than the data off the axis")
    _check_range("gather", idx, data.shape[axis])
    grid: list[Array] = list(np.indices(idx.shape, sparse=True))
    grid[axis] = idx
    return data[tuple(grid)]


@IMPLS.register("gather_nd")
def gather_nd(args: list[Value], attrs: Attrs | None) -> Array:
    """Gather slices of data addressed by the first axis of `indices` (after `batch_dims`)."""
    data, raw = tensor_args("gather_nd", args)
    a = need_attrs("gather_nd", attrs)
    idx = _int_indices("gather_nd", raw)
    if idx.ndim < 1:
        raise EvalError("gather_nd: indices must have at least one axis")
    m, b = idx.shape[0], a.batch_dims
    if b < 0 or m + b > data.ndim or idx.ndim - 1 < b:
        raise EvalError("gather_nd: indices address more axes than the data has")
    if idx.shape[1 : 1 + b] != data.shape[:b]:
        raise EvalError("gather_nd: the batch dimensions of data and indices differ")
    for j in range(m):
        _check_range("gather_nd", idx[j], data.shape[b + j])
    rank = idx.ndim - 1
    batch = [
        np.arange(data.shape[j]).reshape([data.shape[j] if k == j else 1 for k in range(rank)])
        for j in range(b)
    ]
    return np.asarray(data[tuple(batch + [idx[j] for j in range(m)])])  # rank 0 stays an array


@IMPLS.register("scatter_elements")
def scatter_elements(args: list[Value], attrs: Attrs | None) -> Array:
    """A copy of data with updates written (or combined by `reduction`) at indices."""
    data, raw, updates = tensor_args("scatter_elements", args)
    a = need_attrs("scatter_elements", attrs)
    if data.ndim == 0 or raw.ndim != data.ndim or updates.shape != raw.shape:
        raise EvalError("scatter_elements: indices and updates must match the data's rank")
    if updates.dtype != data.dtype:
        raise EvalError("scatter_elements: updates must have the data's dtype")
    axis = normalize_axis("scatter_elements", a.axis, data.ndim)
    n = data.shape[axis]
    idx = _int_indices("scatter_elements", raw)
    idx = np.where(idx < 0, idx + n, idx)
    _check_range("scatter_elements", idx, n)
    if any(idx.shape[i] > data.shape[i] for i in range(data.ndim) if i != axis):
        raise EvalError("scatter_elements: indices are larger than the data off the axis")
    out = data.copy()
    grid: list[Array] = list(np.indices(idx.shape, sparse=True))
    grid[axis] = idx
    where = tuple(grid)
    reduction = a.reduction
    if reduction == "update":
        out[where] = updates  # repeated positions: the last along the axis wins
    elif reduction == "add":
        np.add.at(out, where, updates)
    elif reduction == "mul":
        np.multiply.at(out, where, updates)
    elif reduction == "min":
        np.minimum.at(out, where, updates)
    elif reduction == "max":
        np.maximum.at(out, where, updates)
    elif reduction == "mean":
        for k in range(idx.shape[axis]):
            sel = tuple(slice(k, k + 1) if d == axis else slice(None) for d in range(idx.ndim))
            target = tuple(idx[sel] if d == axis else g for d, g in enumerate(grid))
            value, update = out[target], updates[sel]
            if data.dtype.kind in "fc":
                out[target] = (value + update) / 2
            else:
                total = as_tensor(value.astype(np.int64) + update, data.dtype)
                out[target] = as_tensor(trunc_div(total, 2), data.dtype)
    else:
        raise EvalError(f"scatter_elements: unknown reduction `{reduction}`")
    return out


@IMPLS.register("one_hot")
def one_hot(args: list[Value], attrs: Attrs | None) -> Array:
    """`on_value` where the new `axis` equals the index, `off_value` elsewhere."""
    raw, on, off = tensor_args("one_hot", args)
    a = need_attrs("one_hot", attrs)
    dtype = dtype_or(a.dtype, on.dtype)
    idx = _int_indices("one_hot", raw)
    axis = normalize_axis("one_hot", a.axis, idx.ndim + 1)
    hot = idx[..., None] == np.arange(a.depth)
    out = np.where(hot, on.astype(dtype), off.astype(dtype))
    return np.ascontiguousarray(np.moveaxis(out, -1, axis)).astype(dtype, copy=False)


@IMPLS.register("sparse_to_dense")
def sparse_to_dense(args: list[Value], attrs: Attrs | None) -> Array:
    """A dense `output_shape` tensor: default_value, with sparse_values at sparse_indices."""
    raw, values, default = tensor_args("sparse_to_dense", args)
    shape = tuple(need_attrs("sparse_to_dense", attrs).output_shape)
    idx = _int_indices("sparse_to_dense", raw)
    if idx.ndim > 2 or values.ndim > 1 or default.ndim != 0:
        raise EvalError("sparse_to_dense: indices 0-2-D, values 0-1-D, default a scalar")
    rows = idx if idx.ndim == 2 else idx.reshape(-1, 1)
    if rows.shape[1] > len(shape):
        raise EvalError("sparse_to_dense: indices have more coordinates than the output")
    try:
        vals = np.broadcast_to(values.reshape(-1), (rows.shape[0],))
    except ValueError:
        raise EvalError("sparse_to_dense: one value per index expected") from None
    out = np.full(shape, default.astype(values.dtype))
    inside = np.all((rows >= 0) & (rows < np.asarray(shape[: rows.shape[1]])), axis=1)
    picked = vals[inside].reshape((-1,) + (1,) * (len(shape) - rows.shape[1]))
    out[tuple(rows[inside].T)] = picked  # an index that matches fewer axes fills a block
    return out


@IMPLS.register("adv_index")
def adv_index(args: list[Value], attrs: Attrs | None) -> Array:
    """Numpy advanced indexing of inputs[0] by the broadcast index tensors inputs[1:]."""
    items = args[0]
    if not isinstance(items, tuple) or not items:
        raise EvalError("adv_index expects a tuple (data, index, ...)")
    data = tensor_arg("adv_index", items[0], "data")
    indices = [_int_indices("adv_index", tensor_arg("adv_index", i, "index")) for i in items[1:]]
    if len(indices) > data.ndim:
        raise EvalError("adv_index: too many indices for the data")
    for j, idx in enumerate(indices):
        _check_range("adv_index", idx, data.shape[j])
    try:
        return np.array(data[tuple(indices)], copy=True)
    except IndexError as exc:
        raise EvalError(f"adv_index: {exc}") from None


@IMPLS.register("unravel_index")
def unravel_index(args: list[Value], attrs: Attrs | None) -> Array:
    """Coordinates of flat `indices` in `shape` (each taken modulo its dimension)."""
    raw, shape = tensor_args("unravel_index", args)
    if raw.ndim > 1 or shape.ndim != 1:
        raise EvalError("unravel_index: indices 0-D or 1-D, shape 1-D")
    dims = shape.astype(np.int64)
    if np.any(dims == 0):
        raise EvalError("unravel_index: division by a zero dimension")
    rest = raw.astype(np.int64)
    coords = []
    for d in dims[::-1]:
        coords.append(np.mod(rest, d))
        rest = np.floor_divide(rest, d)
    return as_tensor(np.stack(coords[::-1]), raw.dtype)


@IMPLS.register("matrix_set_diag")
def matrix_set_diag(args: list[Value], attrs: Attrs | None) -> Array:
    """Replace diagonals k1..k2 of the innermost matrices by `diagonal`."""
    x, diag = tensor_args("matrix_set_diag", args)
    a = need_attrs("matrix_set_diag", attrs)
    if x.ndim < 2:
        raise EvalError("matrix_set_diag expects at least a matrix")
    rows, cols = x.shape[-2:]
    i = np.arange(rows)[:, None]
    j = np.arange(cols)[None, :]
    k = j - i
    inside = (k >= a.k1) & (k <= a.k2)
    max_len = diag.shape[-1]
    if a.k1 == a.k2:
        kk = np.full_like(k, a.k1)
        offset = np.zeros_like(k)
    else:
        kk = k
        super_len = np.minimum(cols - k, rows)
        sub_len = np.minimum(cols, rows + k)
        super_off = max_len - super_len if a.super_diag_right_align else 0 * k
        sub_off = max_len - sub_len if a.sub_diag_right_align else 0 * k
        offset = np.where(k >= 0, super_off, sub_off)
    pos = np.where(kk >= 0, i, j) + offset
    pos = np.where(inside, pos, 0)
    batch = x.shape[:-2]
    if a.k1 == a.k2:
        if diag.shape[:-1] != batch:
            raise EvalError("matrix_set_diag: diagonal has the wrong shape")
        if np.any(pos[inside] >= max_len):
            raise EvalError("matrix_set_diag: the diagonal is too short")
        picked = diag[..., pos]
    else:
        row = np.where(inside, a.k2 - kk, 0)
        if diag.shape[:-2] != batch or diag.shape[-2] != a.k2 - a.k1 + 1:
            raise EvalError("matrix_set_diag: diagonal has the wrong shape")
        if np.any(pos[inside] >= max_len) or np.any(pos[inside] < 0):
            raise EvalError("matrix_set_diag: the diagonal is too short")
        picked = diag[..., row, pos]
    return np.where(inside, picked, x).astype(x.dtype, copy=False)


@IMPLS.register("sequence_mask")
def sequence_mask(args: list[Value], attrs: Attrs | None) -> Array:
    """Elements at time >= valid_length[batch] become `mask_value`."""
    x, length = tensor_args("sequence_mask", args)
    a = need_attrs("sequence_mask", attrs)
    if a.axis not in (0, 1) or x.ndim < 2 or length.ndim != 1:
        raise EvalError("sequence_mask: axis 0 or 1, data of rank >= 2, 1-D valid_length")
    t = np.arange(x.shape[a.axis])
    masked = t[:, None] >= length[None, :] if a.axis == 0 else t[None, :] >= length[:, None]
    masked = masked.reshape(masked.shape + (1,) * (x.ndim - 2))
    return np.where(masked, as_tensor(a.mask_value, x.dtype), x).astype(x.dtype, copy=False)
