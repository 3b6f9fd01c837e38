"""Reference implementations of sorting, top-k, scans and einsum, with TVM semantics.

* `argsort`, `sort` and `topk` are stable in both directions (TVM's CPU sort uses
  `std::stable_sort`): equal elements keep their original order, descending included.
  Index outputs have `dtype` (null: int32). `topk` with `k` null or < 1 returns everything.
* `cumsum`/`cumprod` accumulate sequentially in `dtype` (null: the input's), so integers
  wrap and float16 rounds at every step, as TVM's scan does; `exclusive` shifts the result
  by one, starting from 0 (or 1). `axis` null scans the flattened data.
* `einsum` is computed exactly (int64 or float64) and cast to the inputs' dtype.
"""

from __future__ import annotations

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
    tensor_args,
    tuple_arg,
    wide_dtype,
)

IMPLS: OpTable[Impl] = OpTable("reference implementation")
"""The reference implementations of this family (`op_impls.IMPLS` joins them)."""

Array = np.ndarray


def stable_argsort(x: Array, axis: int, ascending: bool) -> Array:
    """Indices that stably sort `x` along `axis`; equal elements keep their order."""
    if ascending:
        return np.argsort(x, axis=axis, kind="stable")
    n = x.shape[axis]
    # sorting the reversed data ascending and reversing the result is a descending sort
    # that puts the later of two equal elements of the reversed data (the earlier of the
    # original) first
    backwards = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return np.flip(n - 1 - backwards, axis)


def _sorted(name: str, args: list[Value], attrs: Attrs | None) -> tuple[Array, Array, Attrs]:
    (x,) = tensor_args(name, args)
    a = need_attrs(name, attrs)
    if x.ndim == 0:
        raise EvalError(f"operator `{name}` of a scalar")
    axis = normalize_axis(name, a.axis, x.ndim)
    order = stable_argsort(x, axis, bool(a.is_ascend))
    return x, order, a


@IMPLS.register("argsort")
def argsort(args: list[Value], attrs: Attrs | None) -> Array:
    """Indices that sort the data along `axis` (stable), of `dtype` (null: int32)."""
    _, order, a = _sorted("argsort", args, attrs)
    return as_tensor(order, dtype_or(a.dtype, np.dtype(np.int32)))


@IMPLS.register("sort")
def sort(args: list[Value], attrs: Attrs | None) -> Array:
    """The data sorted along `axis` (stable)."""
    x, order, a = _sorted("sort", args, attrs)
    return np.take_along_axis(x, order, axis=normalize_axis("sort", a.axis, x.ndim))


@IMPLS.register("topk")
def topk(args: list[Value], attrs: Attrs | None) -> Array | tuple:
    """The k largest (or smallest, `is_ascend`) along `axis`, by `ret_type`."""
    x, order, a = _sorted("topk", args, attrs)
    axis = normalize_axis("topk", a.axis, x.ndim)
    k = x.shape[axis] if a.k is None or a.k < 1 else min(a.k, x.shape[axis])
    top = np.take(order, np.arange(k), axis=axis)
    values = np.take_along_axis(x, top, axis=axis)
    indices = as_tensor(top, dtype_or(a.dtype, np.dtype(np.int32)))
    if a.ret_type == "both":
        return (values, indices)
    if a.ret_type == "values":
        return values
    if a.ret_type == "indices":
        return indices
    raise EvalError(f"topk: unknown ret_type `{a.ret_type}`")


def _scan(name: str, ufunc: np.ufunc, identity: int) -> None:
    def impl(args: list[Value], attrs: Attrs | None) -> Array:
        (x,) = tensor_args(name, args)
        a = need_attrs(name, attrs)
        dtype = dtype_or(a.dtype, x.dtype)
        if a.axis is None:
            x, axis = x.reshape(-1), 0
        else:
            if x.ndim == 0:
                x = x.reshape(1)
            axis = normalize_axis(name, a.axis, x.ndim)
        data = x.astype(dtype)
        out = ufunc.accumulate(data, axis=axis, dtype=dtype)
        if a.exclusive:
            start = np.full_like(np.take(out, [0], axis=axis), identity)
            out = np.concatenate([start, np.take(out, np.arange(x.shape[axis] - 1), axis)], axis)
        return as_tensor(out, dtype)

    impl.__name__ = name
    impl.__doc__ = f"TVM's `{name}` along `axis` (null: flattened), optionally exclusive."
    IMPLS.register(name)(impl)


_scan("cumsum", np.add, 0)
_scan("cumprod", np.multiply, 1)


@IMPLS.register("einsum")
def einsum(args: list[Value], attrs: Attrs | None) -> Array:
    """Einstein summation of a tuple of tensors by `equation`."""
    arrays = tuple_arg("einsum", args[0])
    equation = need_attrs("einsum", attrs).equation
    dtype = arrays[0].dtype
    wide = wide_dtype(dtype)
    try:
        result = np.einsum(equation, *[a.astype(wide) for a in arrays])
    except ValueError as exc:
        raise EvalError(f"einsum `{equation}`: {exc}") from None
    return as_tensor(result, dtype)
