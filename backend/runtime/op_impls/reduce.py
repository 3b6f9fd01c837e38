"""Reference implementations of reductions, with TVM semantics (relay `reduce.cc`, topi).

* `axis` null or empty reduces every axis; `exclude` reduces the axes not listed (TVM's
  compute returns the input unchanged when that leaves none); a rank-0 input is returned
  unchanged.
* Results keep the input dtype. Integer `sum`/`prod` wrap around in that dtype; float sums
  and products are accumulated in float64 and rounded once.
* `mean` of integers divides the wrapped sum by the element count cast to the dtype,
  rounding toward zero (TVM's `divide`); float16 means are computed in float32 by TVM and
  in float64 here.
* `max`/`min` of an empty reduction give the dtype's lowest/highest value (the reducer's
  identity); `argmax`/`argmin` return int32 indices into the reduced axes flattened in
  row-major order, the first occurrence (the last with `select_last_index`); with no axis
  to reduce (a scalar, or `exclude` listing every axis) they return zeros, the index of
  the only element (TVM's compute returns the input itself, contradicting its type).
* `variance(data, mean)` is `sum((data - mean)**2) / (count - unbiased)`.
* `all`/`any` treat nonzero as true and return the input dtype (bool for bool input).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ....lang.attrs import Attrs
from ....lang.opdefs import semantics
from ....lang.opdefs.semantics import highest, lowest
from ....lang.optable import OpTable
from ..values import EvalError, Value
from . import Impl
from .transform import (
    as_tensor,
    need_attrs,
    semantic_errors,
    tensor_args,
    trunc_div,
    wide_dtype,
)

IMPLS: OpTable[Impl] = OpTable("reference implementation")
"""The reference implementations of this family (`op_impls.IMPLS` joins them)."""

Array = np.ndarray


def reduce_axes(name: str, ndim: int, axis: object, exclude: bool) -> tuple[int, ...]:
    """The axes TVM reduces for `axis` (null or empty: all) and `exclude`, sorted
    (`semantics.reduce_axes`); `EvalError` naming `name` for a bad axis."""
    with semantic_errors(name):
        return semantics.reduce_axes(ndim, axis, exclude)  # type: ignore[arg-type]


def _plan(name: str, args: list[Value], attrs: Attrs | None) -> tuple[Array, tuple, bool]:
    """The data, the reduced axes and keepdims; no axes means "return the data"."""
    x = tensor_args(name, args)[0]
    a = need_attrs(name, attrs)
    if x.ndim == 0:
        return x, (), bool(a.keepdims)
    return x, reduce_axes(name, x.ndim, a.axis, bool(a.exclude)), bool(a.keepdims)


Reducer = Callable[[Array, tuple, bool], object]


def _register(name: str, reducer: Reducer) -> None:
    def impl(args: list[Value], attrs: Attrs | None) -> Array:
        x, axes, keepdims = _plan(name, args, attrs)
        if not axes:
            return x.copy()
        return as_tensor(reducer(x, axes, keepdims), x.dtype)

    impl.__name__ = name
    impl.__doc__ = f"TVM's `{name}` reduction."
    IMPLS.register(name)(impl)


def _sum(x: Array, axes: tuple, keepdims: bool) -> object:
    return np.sum(x.astype(wide_dtype(x.dtype)), axis=axes, keepdims=keepdims)


def _prod(x: Array, axes: tuple, keepdims: bool) -> object:
    return np.prod(x.astype(wide_dtype(x.dtype)), axis=axes, keepdims=keepdims)


def _max(x: Array, axes: tuple, keepdims: bool) -> object:
    return np.max(x, axis=axes, keepdims=keepdims, initial=lowest(x.dtype.name))


def _min(x: Array, axes: tuple, keepdims: bool) -> object:
    return np.min(x, axis=axes, keepdims=keepdims, initial=highest(x.dtype.name))


def _all(x: Array, axes: tuple, keepdims: bool) -> object:
    return np.all(x != 0, axis=axes, keepdims=keepdims)


def _any(x: Array, axes: tuple, keepdims: bool) -> object:
    return np.any(x != 0, axis=axes, keepdims=keepdims)


def divide_by_count(total: Array, count: int, dtype: np.dtype) -> Array:
    """`total / count` in `dtype`: float division, or integer division toward zero of the
    wrapped total by the count cast to `dtype` (TVM's `divide(sum, cast(dtype, count))`)."""
    if dtype.kind in "fc":
        return as_tensor(total / count, dtype)
    divisor = int(as_tensor(count, dtype))
    if divisor == 0:
        raise EvalError("integer division by zero (an empty reduction)")
    return as_tensor(trunc_div(as_tensor(total, dtype), divisor), dtype)


for _name, _fn in [
    ("sum", _sum),
    ("prod", _prod),
    ("max", _max),
    ("min", _min),
    ("all", _all),
    ("any", _any),
]:
    _register(_name, _fn)


@IMPLS.register("mean")
def mean(args: list[Value], attrs: Attrs | None) -> Array:
    """The sum over the reduced axes divided by their element count, in the input dtype."""
    x, axes, keepdims = _plan("mean", args, attrs)
    if not axes:
        return x.copy()
    count = math.prod(x.shape[i] for i in axes)
    return divide_by_count(np.asarray(_sum(x, axes, keepdims)), count, x.dtype)


@IMPLS.register("variance")
def variance(args: list[Value], attrs: Attrs | None) -> Array:
    """`sum((data - mean)**2) / (count - unbiased)` over the reduced axes."""
    x, m = tensor_args("variance", args)
    a = need_attrs("variance", attrs)
    if x.ndim == 0:
        return x.copy()
    axes = reduce_axes("variance", x.ndim, a.axis, bool(a.exclude))
    wide = wide_dtype(x.dtype)
    diff = x.astype(wide) - m.astype(wide)
    if x.dtype.kind not in "fc":
        diff = diff.astype(x.dtype).astype(wide)  # the subtraction wraps in the dtype
    total = np.sum(diff * diff, axis=axes, keepdims=bool(a.keepdims))
    count = math.prod(x.shape[i] for i in axes) - (1 if a.unbiased else 0)
    if x.dtype.kind in "fc":
        return as_tensor(total / count, x.dtype)
    if count == 0:
        raise EvalError("integer division by zero in `variance`")
    return as_tensor(trunc_div(as_tensor(total, x.dtype), count), x.dtype)


def _arg_reduce(name: str, pick: Callable[[Array], Array]) -> None:
    def impl(args: list[Value], attrs: Attrs | None) -> Array:
        x = tensor_args(name, args)[0]
        a = need_attrs(name, attrs)
        axes = reduce_axes(name, x.ndim, a.axis, bool(a.exclude)) if x.ndim else ()
        if not axes:  # TVM returns the input; its only "index" is 0 (int32, as typed)
            return np.zeros(x.shape, np.int32)
        kept = [i for i in range(x.ndim) if i not in axes]
        size = math.prod(x.shape[i] for i in axes)
        if size == 0:
            raise EvalError(f"`{name}` of an empty reduction")
        flat = np.transpose(x, kept + list(axes)).reshape([x.shape[i] for i in kept] + [size])
        if a.select_last_index:
            index = size - 1 - pick(flat[..., ::-1])
        else:
            index = pick(flat)
        if a.keepdims:
            index = index.reshape([1 if i in axes else d for i, d in enumerate(x.shape)])
        return as_tensor(index, np.int32)

    impl.__name__ = name
    impl.__doc__ = f"TVM's `{name}`: int32 index of the extreme over the reduced axes."
    IMPLS.register(name)(impl)


_arg_reduce("argmax", lambda flat: np.argmax(flat, axis=-1))
_arg_reduce("argmin", lambda flat: np.argmin(flat, axis=-1))
