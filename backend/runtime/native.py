"""The host side of native code: aligned buffers and what a loaded library must offer.

Kernels assume every buffer they are passed is `ALIGNMENT`-byte aligned where the build
says so (the workspace; see `backend.build.memory_plan`); `aligned_empty`/`aligned_copy`
make such arrays. A compiled model calls its library through `NativeLibrary`: `get(name)`
gives a ctypes function of `void*` arguments. Libraries are made and loaded by
`backend.codegen` (LLVM through llvmlite) and handed in by `backend.build`, so this layer
needs no code generator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

ALIGNMENT = 64
"""Byte alignment of the buffers `aligned_empty` makes (a cache line; an AVX-512 vector)."""


class NativeLibrary(Protocol):
    """Native code a compiled model calls: functions by name, and the object code."""

    object_code: bytes

    def get(self, name: str) -> Callable[..., None]:
        """Function `name` as a ctypes function of `void*` arguments returning nothing."""
        ...


def aligned_empty(shape: int | tuple[int, ...], dtype: Any) -> np.ndarray:
    """An uninitialized C-contiguous array whose data is `ALIGNMENT`-byte aligned."""
    dt = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.empty(count * dt.itemsize + ALIGNMENT, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    return raw[start : start + count * dt.itemsize].view(dt).reshape(shape)


def aligned_copy(array: Any) -> np.ndarray:
    """A C-contiguous, `ALIGNMENT`-byte aligned copy of `array`."""
    a = np.asarray(array)
    out = aligned_empty(a.shape, a.dtype)
    out[...] = a
    return out


__all__ = ["ALIGNMENT", "NativeLibrary", "aligned_copy", "aligned_empty"]
