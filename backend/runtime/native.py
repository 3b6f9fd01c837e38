"""The host side of native code: aligned buffers and what a loaded library must offer.

Kernels assume every buffer they are passed is `ALIGNMENT`-byte aligned where the build
says so (the workspace; see `backend.build.memory_plan`); `aligned_empty`/`aligned_copy`
make such arrays. A compiled model calls its library through `NativeLibrary`: `get(name)`
gives a ctypes function of `void*` arguments. Libraries are made and loaded by
`backend.codegen` (LLVM through llvmlite) and handed in by `backend.build`, so this layer
needs no code generator.

The thread pool (`backend.codegen.threadpool`) exports `__relay_pool_enter`, which calls a
model's entry function with the model's thread count in force (`backend.pool_abi`);
`pool_enter()` finds it by name once the pool exists, so this layer imports no code
generator. `set_call_threads` is the same limit for a model stepping through its kernels.

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
from .. import pool_abi

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


_pool_functions: dict[str, Any] = {}


def _pool_function(name: str, proto: Any) -> Any:
    """The pool's function `name` as a ctypes `proto`, or None while there is no pool."""
    fn = _pool_functions.get(name)
    if fn is None:
        import llvmlite.binding as llvm

        address = llvm.address_of_symbol(name)
        if not address:
            return None
        fn = _pool_functions[name] = proto(address)
    return fn


def pool_enter() -> Callable[[int], None] | None:
    """`__relay_pool_enter(block)` (`backend.pool_abi`), or None when no thread pool has
    been made in this process (there is then no native code to call either)."""
    fn: Callable[[int], None] | None = _pool_function(
        pool_abi.ENTER, ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    )
    return fn


def pool_enter_arrays() -> Callable[[int, int, int], int] | None:
    """`__relay_pool_enter_arrays(block, first_input, first_output)` (`backend.pool_abi`),
    or None when there is no pool or array objects do not keep their data pointer where
    `array_data_offset` says."""
    if array_data_offset() is None:
        return None
    proto = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    fn: Callable[[int, int, int], int] | None = _pool_function(pool_abi.ENTER_ARRAYS, proto)
    return fn


def array_data_offset() -> int | None:
    """Bytes from a numpy array object's address (`id`) to its data pointer, when this
    interpreter and numpy keep it there (checked once, `_header_layout_holds`)."""
    return _DATA_OFFSET if data_address is _address_by_header else None


def set_call_threads(n: int) -> int:
    """Limit the parallel loops the calling thread runs to `n` threads (0: no limit of its
    own); returns the limit before (0 as well while there is no pool)."""
    proto = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)
    fn = _pool_function(pool_abi.SET_CALL_THREADS, proto)
    return int(fn(n)) if fn is not None else 0


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
    "array_data_offset",
    "bytes_text",
    "check_fits",
    "data_address",
    "memory_limit_bytes",
    "pool_enter",
    "pool_enter_arrays",
    "set_call_threads",
]
