"""Data type names, as TVM spells them (`float32`, `int8`, `uint1`, `bool`, `int8x4`, ...)."""

from __future__ import annotations

import re

import numpy as np

_DTYPE_RE = re.compile(r"^(bfloat|float|int|uint|bool|handle)(\d*)(?:x(\d+))?$")

_VALID_BITS = {
    "float": {16, 32, 64},
    "bfloat": {16},
    "int": {8, 16, 32, 64},
    "uint": {1, 8, 16, 32, 64},
    "bool": {1},
    "handle": {64},
}
_DEFAULT_BITS = {"float": 32, "int": 32, "uint": 32, "bool": 1, "handle": 64, "bfloat": 16}


def normalize_dtype(name: str) -> str:
    """Canonical spelling of a dtype name (`float` → `float32`); ValueError if unknown."""
    match = _DTYPE_RE.match(name)
    if match is None:
        raise ValueError(f"unknown dtype `{name}`")
    kind, bits_text, lanes_text = match.groups()
    bits = int(bits_text) if bits_text else _DEFAULT_BITS[kind]
    if bits not in _VALID_BITS[kind]:
        raise ValueError(f"unknown dtype `{name}`: {kind} has no {bits}-bit form")
    base = "bool" if kind == "bool" else f"{kind}{bits}"
    if lanes_text:
        lanes = int(lanes_text)
        if lanes < 1:
            raise ValueError(f"unknown dtype `{name}`: lanes must be positive")
        return f"{base}x{lanes}" if lanes > 1 else base
    return base


def is_dtype_name(name: str) -> bool:
    """Whether `name` spells a dtype."""
    try:
        normalize_dtype(name)
    except ValueError:
        return False
    return True


def looks_like_scalar_dtype(name: str) -> bool:
    """TVM's prefix test for a bare scalar type (`int32`, `float`, `bool`, `uint8`)."""
    return name.startswith(("int", "uint", "float", "bool")) and is_dtype_name(name)


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype that stores values of a (scalar) relay dtype."""
    name = normalize_dtype(name)
    if name == "bool" or name == "uint1":
        return np.dtype(np.bool_)
    if name == "bfloat16":
        raise ValueError("bfloat16 has no numpy storage type")
    return np.dtype(name)


def dtype_of_array(array: np.ndarray) -> str:
    """The relay dtype name of a numpy array's element type."""
    kind = array.dtype
    if kind == np.bool_:
        return "bool"
    return normalize_dtype(str(kind))
