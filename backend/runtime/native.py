"""The host side of native code: aligned buffers and what a loaded library must offer.

Kernels assume every buffer they are passed is `ALIGNMENT`-byte aligned where the build
says so (the workspace; see `backend.build.memory_plan`); `aligned_empty`/`aligned_copy`
make such arrays. A compiled model calls its library through `NativeLibrary`: `get(name)`
gives a ctypes function of `void*` arguments. Libraries are made and loaded by
`backend.codegen` (LLVM through llvmlite) and handed in by `backend.build`, so this layer
needs no code generator.

Memory: `memory_limit_bytes()` is what this process may use at most (physical memory, or
a smaller cgroup limit); `check_fits(nbytes, subject)` is the `Error` that says a tensor or
a model cannot fit, raised before anything is allocated.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ...lang.diagnostics import Error

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


def _address_by_header(array: np.ndarray) -> int:
    # numpy's array object begins with the Python object header, then the data pointer
    # (`PyArrayObject_fields.data`); `id` is the object's address in CPython.
    return ctypes.c_void_p.from_address(id(array) + _DATA_OFFSET).value or 0


def _address_by_interface(array: np.ndarray) -> int:
    return int(array.ctypes.data)


_DATA_OFFSET = 2 * ctypes.sizeof(ctypes.c_void_p)


def _header_layout_holds() -> bool:
    """Whether `_address_by_header` reads the data pointer on this numpy and interpreter
    (checked on arrays, views and zero-size arrays before it is used)."""
    if sys.implementation.name != "cpython":
        return False
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    probes = [base, base[1:, 2:], base.T, np.empty(0, np.int8), np.zeros((), np.float64)]
    return all(_address_by_header(a) == _address_by_interface(a) for a in probes)


data_address: Callable[[np.ndarray], int] = (
    _address_by_header if _header_layout_holds() else _address_by_interface
)
"""The address of an array's first element: what `array.ctypes.data` gives, about ten
times faster (a compiled model's call reads one per input and output)."""


def aligned_copy(array: Any) -> np.ndarray:
    """A C-contiguous, `ALIGNMENT`-byte aligned copy of `array`."""
    a = np.asarray(array)
    out = aligned_empty(a.shape, a.dtype)
    out[...] = a
    return out


_CGROUP_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),  # cgroup v2
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),  # cgroup v1
)
_INT64_MAX = 2**63 - 1


def memory_limit_bytes() -> int:
    """The most memory this process can have: physical memory, or the cgroup's limit when
    that is smaller (read on every call; cheap)."""
    try:
        limit = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        limit = _INT64_MAX
    for path in _CGROUP_LIMITS:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            limit = min(limit, int(text))
    return limit


def bytes_text(nbytes: int) -> str:
    """`N bytes (X GiB)`: a byte count for people, exact and rounded."""
    return f"{nbytes} bytes ({nbytes / 2**30:.2f} GiB)"


def check_fits(nbytes: int, subject: str, detail: str = "") -> None:
    """An `Error` when `nbytes` (an exact count, never wrapped) is more than this machine's
    memory or than a 64-bit size can hold: "`subject` needs N bytes (X GiB) of memory ...".
    `detail`, when given, follows the count in parentheses (what the bytes are for)."""
    limit = memory_limit_bytes()
    if nbytes <= limit and nbytes <= _INT64_MAX:
        return
    why = (
        "more than a 64-bit size can hold"
        if nbytes > _INT64_MAX
        else f"more than this machine has: {bytes_text(limit)}"
    )
    extra = f" ({detail})" if detail else ""
    raise Error(f"{subject} needs {bytes_text(nbytes)} of memory{extra}, {why}")


__all__ = [
    "ALIGNMENT",
    "NativeLibrary",
    "aligned_copy",
    "aligned_empty",
    "bytes_text",
    "check_fits",
    "data_address",
    "memory_limit_bytes",
]
