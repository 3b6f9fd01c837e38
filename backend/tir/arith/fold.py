"""Folding constructors: `add`, `sub`, `mul`, `floordiv`, `floormod`, `ceildiv`, `minimum`,
`maximum` build a node unless the result is already known (constants, zeros and ones,
`min`/`max` of two expressions whose difference is a constant). Bound inference and
schedules build index expressions with them."""

from __future__ import annotations

from ..dtypes import INDEX_DTYPE
from ..expr import Add, FloorDiv, FloorMod, Max, Min, Mul, PrimExpr, Sub, const
from .canonical import canonical
from .constants import as_int


def _like(value: int, like: PrimExpr) -> PrimExpr:
    return const(value, like.dtype)


def add(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`a + b`, folding constants and zeros."""
    x, y = as_int(a), as_int(b)
    if x is not None and y is not None:
        return _like(x + y, a)
    if x == 0:
        return b
    if y == 0:
        return a
    return Add(a, b)


def sub(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`a - b`, folding constants and zeros."""
    x, y = as_int(a), as_int(b)
    if x is not None and y is not None:
        return _like(x - y, a)
    if y == 0:
        return a
    if a is b:
        return _like(0, a)
    return Sub(a, b)


def mul(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`a * b`, folding constants, ones and zeros."""
    x, y = as_int(a), as_int(b)
    if x is not None and y is not None:
        return _like(x * y, a)
    if x == 1:
        return b
    if y == 1:
        return a
    if x == 0 or y == 0:
        return _like(0, a)
    return Mul(a, b)


def floordiv(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`a // b` (floor), folding constants and division by one."""
    x, y = as_int(a), as_int(b)
    if x is not None and y is not None and y != 0:
        return _like(x // y, a)
    if y == 1:
        return a
    return FloorDiv(a, b)


def floormod(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`a % b` (floor), folding constants and modulo one."""
    x, y = as_int(a), as_int(b)
    if x is not None and y is not None and y != 0:
        return _like(x % y, a)
    if y == 1:
        return _like(0, a)
    return FloorMod(a, b)


def ceildiv(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`ceil(a / b)` for a positive `b`."""
    return floordiv(add(a, sub(b, _like(1, b))), b)


def _const_difference(a: PrimExpr, b: PrimExpr) -> int | None:
    return as_int(canonical(Sub(a, b))) if a.dtype == b.dtype == INDEX_DTYPE else None


def minimum(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`min(a, b)`, deciding it when `a - b` is a constant."""
    if a is b:
        return a
    d = _const_difference(a, b)
    if d is not None:
        return a if d <= 0 else b
    return Min(a, b)


def maximum(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`max(a, b)`, deciding it when `a - b` is a constant."""
    if a is b:
        return a
    d = _const_difference(a, b)
    if d is not None:
        return a if d >= 0 else b
    return Max(a, b)


__all__ = ["add", "ceildiv", "floordiv", "floormod", "maximum", "minimum", "mul", "sub"]
