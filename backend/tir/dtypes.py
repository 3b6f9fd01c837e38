"""Data types of loop-IR values: a scalar dtype name (`float32`, `int64`, `bool`, `handle`) with
an optional vector width, spelled as TVM does (`float32x16`)."""

from __future__ import annotations

from functools import cache

from ...lang.dtype import normalize_dtype

INDEX_DTYPE = "int64"
"""The dtype of loop variables, buffer indices and shapes in the loop IR."""


@cache  # called per node by every pass: a look-up beats re-parsing the name
def element_of(dtype: str) -> str:
    """The scalar dtype of a (possibly vector) dtype: `float32x16` → `float32`."""
    return dtype.split("x", 1)[0] if "x" in dtype else dtype


@cache
def lanes_of(dtype: str) -> int:
    """The vector width of a dtype: `float32x16` → 16, `float32` → 1."""
    return int(dtype.split("x", 1)[1]) if "x" in dtype else 1


@cache
def with_lanes(dtype: str, lanes: int) -> str:
    """`dtype`'s element type with `lanes` lanes (`with_lanes("float32", 8)` → `float32x8`)."""
    base = element_of(dtype)
    return base if lanes == 1 else f"{base}x{lanes}"


@cache
def is_float(dtype: str) -> bool:
    """Whether the element type is a floating-point type."""
    return element_of(dtype).startswith(("float", "bfloat"))


@cache
def is_int(dtype: str) -> bool:
    """Whether the element type is a signed integer type."""
    return element_of(dtype).startswith("int")


@cache
def is_uint(dtype: str) -> bool:
    """Whether the element type is an unsigned integer type (bool excluded)."""
    return element_of(dtype).startswith("uint")


@cache
def is_bool(dtype: str) -> bool:
    """Whether the element type is `bool`."""
    return element_of(dtype) == "bool"


@cache
def bits_of(dtype: str) -> int:
    """Bits of one element: `int8` → 8, `bool` → 1, `handle` → 64."""
    base = element_of(dtype)
    if base == "bool":
        return 1
    if base == "handle":
        return 64
    return int(base.lstrip("abcdefghijklmnopqrstuvwxyz"))


def canonical(dtype: str) -> str:
    """Canonical spelling (`float` → `float32`); ValueError for an unknown name."""
    if dtype == "handle":
        return dtype
    return normalize_dtype(dtype)
