"""Integer constants of the arithmetic engine: the range a dtype holds, building a constant
wrapped to its dtype, and reading constants back (`as_int`, `const_bool`)."""

from __future__ import annotations

import math
from functools import cache
from typing import Any

from ..dtypes import INDEX_DTYPE, bits_of, element_of, is_bool, is_float, is_int, is_uint
from ..expr import Broadcast, FloatImm, IntImm, PrimExpr

INF = math.inf

Bound = tuple[float, float]
"""An inclusive integer interval `(lo, hi)`; either end may be `±math.inf`."""


@cache
def dtype_bound(dtype: str) -> Bound:
    """The values an integer dtype can hold (`bool` is [0, 1]; floats are unbounded)."""
    base = element_of(dtype)
    if is_bool(base):
        return (0, 1)
    if is_int(base):
        bits = bits_of(base)
        return (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if is_uint(base):
        return (0, 2 ** bits_of(base) - 1)
    return (-INF, INF)


_INDEX_MIN, _INDEX_MAX = -(2**63), 2**63 - 1


def make_const(value: Any, dtype: str) -> PrimExpr:
    """A scalar constant of `dtype` from a Python/numpy number (wrapped to the dtype)."""
    if dtype == INDEX_DTYPE and type(value) is int and _INDEX_MIN <= value <= _INDEX_MAX:
        return IntImm(value, dtype)
    if is_float(dtype):
        return FloatImm(float(value), dtype)
    if is_bool(dtype):
        return IntImm(int(bool(value)), dtype)
    lo, hi = dtype_bound(dtype)
    span = int(hi - lo + 1)
    return IntImm((int(value) - int(lo)) % span + int(lo), dtype)


def as_int(e: PrimExpr) -> int | None:
    """The value of an integer constant (not a bool), else None."""
    return e.value if isinstance(e, IntImm) and not is_bool(e.dtype) else None


def int_value(e: PrimExpr) -> int | None:
    """The value of an `IntImm` (bools included), else None."""
    return e.value if isinstance(e, IntImm) else None


def const_bool(e: PrimExpr) -> bool | None:
    """The value of a constant bool (or a broadcast of one), else None."""
    if isinstance(e, Broadcast):
        e = e.value
    if isinstance(e, IntImm) and is_bool(e.dtype):
        return bool(e.value)
    return None


def bool_const(value: bool, lanes: int = 1) -> PrimExpr:
    """The constant `value` as a `bool` (broadcast to `lanes` lanes when more than one)."""
    c = IntImm(int(value), "bool")
    return c if lanes == 1 else Broadcast(c, lanes)


__all__ = [
    "INF",
    "Bound",
    "as_int",
    "bool_const",
    "const_bool",
    "dtype_bound",
    "int_value",
    "make_const",
]
