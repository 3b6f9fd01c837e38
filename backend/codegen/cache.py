"""A persistent cache of compiled libraries, keyed by the kernels' loop IR and the target.

    library = compile_cached(funcs, entry, name, target)    # funcs: before `lower_pipeline`

Off unless `$RELAY_CACHE_DIR` is set (an explicit opt-in: a cache must never surprise).
Then the object code of every library compiled through `compile_cached` is kept in
`$RELAY_CACHE_DIR/kernels/<key>.o`, and a later build whose kernels are the same skips the
loop-IR passes and all of LLVM: it loads the object code (`load_library`), as loading a
saved artifact does.

The key (`library_key`) is a SHA-256 of: this file's format number; the source of the code
that turns loop IR into object code (`backend/tir`, `backend/codegen`, `backend/target.py`)
and the llvmlite and LLVM versions, so that changing the compiler invalidates every entry;
the target's CPU, LLVM feature string and options; the library's name and entry plan; and
an exact serialization of each kernel (`kernel_text`: every node with all its fields,
variables numbered by first use, so two kernels get one key only when they are the same up
to the names of their variables). A value the serialization cannot spell exactly (an
object printed with its address) makes the library uncacheable, never a wrong hit.

An entry is a header (magic, SHA-256 of the payload) and the object code, written to a
temporary file and renamed into place. A damaged entry (bad header, checksum mismatch, code
that does not load) is a miss: the library is compiled again and the entry rewritten.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import llvmlite
import llvmlite.binding as llvm

from ..target import Target
from ..tir.expr import Var
from ..tir.stmt import PrimFunc
from . import llvm_target
from .compile import CompiledLibrary, load_library
from .compile_jobs import compile_functions
from .entry import EntryPlan
from .llvm_types import CodegenError

CACHE_ENV = "RELAY_CACHE_DIR"
CACHE_FORMAT = 1
MAGIC = b"RELAYOBJ1\n"
_SUBDIR = "kernels"


class Uncacheable(Exception):
    """A value of a kernel that `kernel_text` cannot serialize exactly."""


def cache_dir() -> Path | None:
    """The directory of cached libraries (`$RELAY_CACHE_DIR/kernels`), None when the cache
    is off."""
    root = os.environ.get(CACHE_ENV)
    return Path(root) / _SUBDIR if root else None


@functools.cache
def compiler_digest() -> str:
    """A digest of everything that turns loop IR into object code: the sources of
    `backend/tir`, `backend/codegen` and `backend/target.py`, and the llvmlite and LLVM
    versions."""
    backend = Path(__file__).resolve().parent.parent
    files = sorted((backend / "tir").rglob("*.py")) + sorted((backend / "codegen").rglob("*.py"))
    files.append(backend / "target.py")
    h = hashlib.sha256()
    for path in files:
        h.update(str(path.relative_to(backend)).encode() + b"\0" + path.read_bytes() + b"\0")
    h.update(f"{llvmlite.__version__} {llvm.llvm_version_info}".encode())
    return h.hexdigest()


def _leaf(value: Any) -> str:
    """A non-node field value, spelled exactly (or `Uncacheable`)."""
    if value is None or isinstance(value, (bool, int, str)):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, float):
        return f"float:{value.hex()}" if value == value else "float:nan"
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    text = repr(value)
    if " at 0x" in text:
        raise Uncacheable(text)
    return f"{type(value).__name__}:{text}"


def kernel_text(root: Any) -> str:
    """An exact serialization of `root` (a `PrimFunc`, an entry plan, any attrs value made of
    loop-IR nodes): every attrs node with all its fields in order, tuples and mappings
    element by element, variables numbered by first use (iteratively; `Uncacheable` when a
    value has no exact spelling)."""
    out: list[str] = []
    numbers: dict[int, int] = {}
    keep: list[Any] = []  # the numbered variables stay alive, so their ids stay theirs
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, _Token):
            out.append(node.text)
        elif isinstance(node, Var):
            n = numbers.get(id(node))
            if n is None:
                n = numbers[id(node)] = len(numbers)
                keep.append(node)
            out.append(f"v{n}:{node.dtype}")
        elif attrs.has(type(node)):
            out.append(f"{type(node).__name__}(")
            stack.append(_CLOSE)
            for f in reversed(attrs.fields(type(node))):
                stack.append(getattr(node, f.name))
                stack.append(_Token(f" {f.name}="))
        elif isinstance(node, (tuple, list)):
            out.append("[")
            stack.append(_END)
            stack.extend(reversed(node))
        elif isinstance(node, Mapping):
            out.append("{")
            stack.append(_END_MAP)
            for key in sorted(node, key=str, reverse=True):
                stack.append(node[key])
                stack.append(_Token(f" {_leaf(key)}:"))
        else:
            out.append(_leaf(node))
    return "".join(out)


class _Token:
    """Text `kernel_text` writes as is (brackets, field names), never a value of the IR."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


_CLOSE, _END, _END_MAP = _Token(")"), _Token("]"), _Token("}")


def library_key(
    funcs: Sequence[PrimFunc], entry: EntryPlan | None, name: str, target: Target, profiled: bool
) -> str | None:
    """The cache key of a library (module docstring); None when it cannot be cached."""
    h = hashlib.sha256()
    h.update(f"format {CACHE_FORMAT}\0{compiler_digest()}\0".encode())
    h.update(f"{target}\0{target.cpu}\0{llvm_target.feature_string(target)}\0".encode())
    h.update(f"{name}\0{profiled}\0".encode())
    try:
        h.update(kernel_text(entry).encode())
        for f in funcs:
            h.update(b"\0" + kernel_text(f).encode())
    except Uncacheable:
        return None
    return h.hexdigest()


def read_entry(path: Path) -> bytes | None:
    """The object code stored at `path`, None when it is missing or damaged."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(MAGIC) + 32
    if len(data) <= head or not data.startswith(MAGIC):
        return None
    payload = data[head:]
    if hashlib.sha256(payload).digest() != data[len(MAGIC) : head]:
        return None
    return payload


def write_entry(path: Path, object_code: bytes) -> None:
    """Store `object_code` at `path` atomically (a failure to write is ignored: the cache
    is an optimization)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".obj.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + hashlib.sha256(object_code).digest() + object_code)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass


def compile_cached(
    funcs: Sequence[PrimFunc],
    entry: EntryPlan | None,
    name: str,
    target: Target,
    profiled: bool = True,
) -> tuple[CompiledLibrary, bool]:
    """The library of `funcs` (kernels before `lower_pipeline`) and `entry` for `target`,
    and whether it came from the cache: loaded from `$RELAY_CACHE_DIR` when an entry with
    its key is there, else compiled (`compile_functions`: in worker processes when big) and
    stored."""
    directory = cache_dir()
    key = library_key(funcs, entry, name, target, profiled) if directory is not None else None
    path = directory / f"{key}.o" if directory is not None and key is not None else None
    if path is not None:
        code = read_entry(path)
        if code is not None:
            try:
                return load_library(code), True
            except CodegenError:
                pass  # damaged beyond the checksum's reach: compile again
    library = compile_functions(funcs, entry, name, target, profiled=profiled)
    if path is not None:
        write_entry(path, library.object_code)
    return library, False


__all__ = [
    "CACHE_ENV",
    "Uncacheable",
    "cache_dir",
    "compile_cached",
    "compiler_digest",
    "kernel_text",
    "library_key",
    "read_entry",
    "write_entry",
]
