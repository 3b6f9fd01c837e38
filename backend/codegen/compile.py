"""Compiling kernels to native code, and loading saved object code without recompiling.

`compile_module(funcs, entry, target=...)` emits every PrimFunc (and the optional model entry
function) into one LLVM module, optimizes it for the target's CPU and features (default: the
host), emits object code, and links that object
code into a fresh MCJIT execution engine: the code that runs is exactly `.object_code`, so a
saved library behaves like the freshly compiled one. `load_library(object_code)` does only the
last step, in any process on a machine with the features the code was compiled for.
`kernel_object(share)` and `link_objects(parts, funcs, entry)` split `compile_module` in two,
so shares of the kernels can be compiled to object code in other processes (`compile_jobs`):
the library's object code is then the entry function's object followed by one object per
share, packed as a System V `ar` archive (`pack_objects`; a library of one object is that
ELF file as is), which `load_library` loads into one engine. Objects are emitted with static
relocations and the large code model (`llvm_target`), so several of them link together in
one engine (position-independent large-model objects do not: LLVM's RuntimeDyld resolves
every object's GOT-relative references to constants against the first object's GOT).

Each library carries a manifest (a JSON string in the global `__relay_manifest`) naming its
functions and their parameter counts, so a loaded library knows its own signatures. The
thread pool is not part of a library: every library links to the one pool of the process
(`threadpool.runtime()`), so loading the same library twice never starts a second pool.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import struct
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import llvmlite.binding as llvm
from llvmlite import ir

from ..target import Target
from ..tir.stmt import PrimFunc
from . import llvm_target, threadpool
from .entry import EntryPlan, emit_entry, profiled_name
from .llvm_ir import emit_primfunc
from .llvm_types import I8, CodegenError

ALIGNMENT = 64
"""Byte alignment kernels assume for every buffer they are passed."""

MANIFEST_SYMBOL = "__relay_manifest"
MANIFEST_FORMAT = 1


class CompiledLibrary:
    """Native code of some kernels (and maybe a model entry function), ready to call.

    `get(name)` is a ctypes function taking one `void*` per buffer (the entry function
    takes four: inputs, outputs, params, workspace). `object_code` is the ELF object that
    `load_library` accepts; `llvm_ir` (optimized), `llvm_ir_unoptimized` and `asm` are
    available for libraries compiled in this process (None for loaded ones).
    """

    def __init__(
        self,
        engine: llvm.ExecutionEngine,
        object_code: bytes,
        manifest: dict[str, Any],
        llvm_ir: str | None = None,
        llvm_ir_unoptimized: str | None = None,
        target: Target | None = None,
    ) -> None:
        self._engine = engine
        self.object_code = object_code
        self.functions: dict[str, int] = dict(manifest["functions"])
        self.entry: str | None = manifest.get("entry")
        self.llvm_ir = llvm_ir
        self.llvm_ir_unoptimized = llvm_ir_unoptimized
        self.target = target
        self._asm: str | None = None
        self._cache: dict[str, Callable[..., None]] = {}

    @property
    def asm(self) -> str | None:
        """The assembly of the optimized module (computed on first use)."""
        if self._asm is None and self.llvm_ir is not None:
            ref = llvm.parse_assembly(self.llvm_ir)
            self._asm = llvm_target.target_machine(self.target).emit_assembly(ref)
        return self._asm

    def names(self) -> list[str]:
        """The callable functions of this library (kernels and the entry function)."""
        return list(self.functions)

    def __contains__(self, name: object) -> bool:
        return name in self.functions

    def address(self, name: str) -> int:
        """The address of function `name`."""
        if name not in self.functions:
            raise KeyError(f"library has no function `{name}` (it has {self.names()})")
        return int(self._engine.get_function_address(name))

    def run(self, name: str, *arrays: Any) -> None:
        """Call function `name` on numpy arrays (C-contiguous; one per parameter)."""
        fn = self.get(name)
        if len(arrays) != self.functions[name]:
            raise TypeError(f"`{name}` takes {self.functions[name]} buffers, got {len(arrays)}")
        for k, a in enumerate(arrays):
            if not a.flags.c_contiguous or a.ctypes.data % ALIGNMENT:
                raise ValueError(
                    f"argument {k} of `{name}` must be C-contiguous and {ALIGNMENT}-byte "
                    "aligned (see `relay.backend.runtime.native.aligned_empty`)"
                )
        fn(*(a.ctypes.data for a in arrays))

    def get(self, name: str) -> Callable[..., None]:
        """Function `name` as a ctypes function of `void*` arguments returning nothing."""
        fn = self._cache.get(name)
        if fn is None:
            nargs = self.functions.get(name)
            if nargs is None:
                raise KeyError(f"library has no function `{name}` (it has {self.names()})")
            proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * nargs))
            cfn = proto(self.address(name))
            cfn._library = self  # type: ignore[attr-defined]  # keep the code alive
            self._cache[name] = fn = cfn
        return fn


Seconds = dict[str, float]
"""Seconds per compilation stage (`llvm-ir`, `llvm-opt`, `machine-code`, `link`), added to."""


@contextlib.contextmanager
def timed(
    seconds: Seconds | None, stage: str, clock: Callable[[], float] = time.perf_counter
) -> Iterator[None]:
    """Add the time of the `with` body by `clock` (default: wall) to `seconds[stage]`
    (when `seconds` is given)."""
    start = clock()
    try:
        yield
    finally:
        if seconds is not None:
            seconds[stage] = seconds.get(stage, 0.0) + clock() - start


def _manifest(funcs: Sequence[PrimFunc], entry: EntryPlan | None, profiled: bool) -> dict[str, Any]:
    functions = {f.name: len(f.params) for f in funcs}
    if entry is not None:
        functions[entry.name] = 4
        if profiled:
            functions[profiled_name(entry.name)] = 5
    return {
        "format": MANIFEST_FORMAT,
        "functions": functions,
        "entry": entry.name if entry else None,
    }


def _add_manifest(module: ir.Module, manifest: dict[str, Any]) -> None:
    data = bytearray(json.dumps(manifest, sort_keys=True).encode()) + b"\0"
    ty = ir.ArrayType(I8, len(data))
    gv = ir.GlobalVariable(module, ty, MANIFEST_SYMBOL)
    gv.initializer = ir.Constant(ty, data)
    gv.global_constant = True


def _new_module(name: str) -> ir.Module:
    llvm_target.initialize()
    module = ir.Module(name)
    module.triple = llvm_target.triple()
    module.data_layout = llvm_target.data_layout()
    return module


def _check_names(funcs: Sequence[PrimFunc]) -> None:
    names: set[str] = set()
    for f in funcs:
        if f.name in names:
            raise CodegenError(f"two kernels are named `{f.name}`")
        names.add(f.name)


def _emit_kernels(module: ir.Module, funcs: Sequence[PrimFunc]) -> None:
    _check_names(funcs)
    for f in funcs:
        emit_primfunc(module, f)


def _emit_entry(
    module: ir.Module, funcs: Sequence[PrimFunc], entry: EntryPlan | None, profiled: bool
) -> dict[str, Any]:
    """Add `entry` (and its profiling twin) and the manifest to `module`, which defines or
    declares the kernels `funcs`; the manifest."""
    if entry is not None:
        by_name = {f.name: f for f in funcs}
        if entry.name in by_name:
            raise CodegenError(f"the entry function `{entry.name}` clashes with a kernel")
        emit_entry(module, entry, by_name)
        if profiled:
            emit_entry(module, entry, by_name, profiled=True)
    manifest = _manifest(funcs, entry, profiled)
    _add_manifest(module, manifest)
    return manifest


def build_ir(
    funcs: Sequence[PrimFunc],
    entry: EntryPlan | None = None,
    name: str = "relay_module",
    profiled: bool = True,
) -> tuple[ir.Module, dict[str, Any]]:
    """The unoptimized LLVM module of `funcs` (plus `entry` and, with `profiled`, its
    profiling twin) and its manifest."""
    module = _new_module(name)
    _emit_kernels(module, funcs)
    return module, _emit_entry(module, funcs, entry, profiled)


def _parsed(
    text: str,
    optimize: bool,
    target: Target | None,
    seconds: Seconds | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> llvm.ModuleRef:
    """LLVM module `text` parsed, verified and (with `optimize`) run through the
    optimization pipeline for `target`."""
    with timed(seconds, "llvm-ir", clock):
        ref = llvm.parse_assembly(text)
        ref.verify()
    if optimize:
        with timed(seconds, "llvm-opt", clock):
            llvm_target.optimize(ref, target=target)
    return ref


def _library(
    ref: llvm.ModuleRef,
    manifest: dict[str, Any],
    text: str,
    target: Target | None,
    seconds: Seconds | None = None,
) -> CompiledLibrary:
    """The library of module `ref`: its object code for `target`, linked in this process."""
    with timed(seconds, "machine-code"):
        object_code = bytes(llvm_target.target_machine(target).emit_object(ref))
    with timed(seconds, "load"):
        engine = _link(object_code)
    return CompiledLibrary(engine, object_code, manifest, str(ref), text, target)


def compile_module(
    funcs: Sequence[PrimFunc],
    entry: EntryPlan | None = None,
    name: str = "relay_module",
    optimize: bool = True,
    target: Target | None = None,
    profiled: bool = True,
    seconds: Seconds | None = None,
) -> CompiledLibrary:
    """Compile `funcs` (and the model entry function `entry`, with its profiling twin
    unless `profiled` is false) to native code for `target`'s CPU and features (default:
    this host's). Stage times are added to `seconds` (`timed`)."""
    with timed(seconds, "llvm-ir"):
        module, manifest = build_ir(funcs, entry, name, profiled)
        text = str(module)
    ref = _parsed(text, optimize, target, seconds)
    return _library(ref, manifest, text, target, seconds)


def kernel_object(
    funcs: Sequence[PrimFunc],
    name: str = "relay_part",
    optimize: bool = True,
    target: Target | None = None,
    seconds: Seconds | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> bytes:
    """The object code of the kernels `funcs` alone (no entry function, no manifest),
    optimized and emitted as `compile_module` does: one part of a library that
    `link_objects` completes. Kernels are independent functions, so compiling them in parts
    gives each the code it gets in one module. Stage times by `clock` are added to
    `seconds` (`llvm-ir`, `llvm-opt`, `machine-code`)."""
    with timed(seconds, "llvm-ir", clock):
        module = _new_module(name)
        _emit_kernels(module, funcs)
        text = str(module)
    ref = _parsed(text, optimize, target, seconds, clock)
    with timed(seconds, "machine-code", clock):
        return bytes(llvm_target.target_machine(target).emit_object(ref))


def link_objects(
    parts: Sequence[bytes],
    funcs: Sequence[PrimFunc],
    entry: EntryPlan | None = None,
    name: str = "relay_module",
    optimize: bool = True,
    target: Target | None = None,
    profiled: bool = True,
    seconds: Seconds | None = None,
    renames: Mapping[str, str] | None = None,
) -> CompiledLibrary:
    """The library of kernels `funcs` whose object code is in `parts` (`kernel_object` of
    a share of them each; `funcs` give the kernels' names and signatures), with `entry`
    (and its profiling twin unless `profiled` is false) and the manifest in one more object
    compiled here: the library `compile_module(funcs, ...)` makes, its object code an
    archive of the entry's object and the parts (`pack_objects`). `renames` maps names the
    parts' kernels were compiled under (without dots) to their names in `funcs`: each
    kernel's symbols (`k`, `k.par0`, ...) are renamed in the parts' object code
    (`rename_symbols`). The library's `llvm_ir` is the entry module's. Stage times are
    added to `seconds` (`link`: the entry module and the renaming; `machine-code`: the
    entry's object; `load`)."""
    _check_names(funcs)
    with timed(seconds, "link"):
        objects = [rename_symbols(part, renames or {}) for part in parts]
        defined: set[str] = set()
        for obj in objects:
            defined.update(_elf_symbols(obj)[0])
        missing = [f.name for f in funcs if f.name not in defined]
        if missing:
            raise CodegenError(f"no part of the library defines {', '.join(missing)}")
        module = _new_module(name)
        manifest = _emit_entry(module, funcs, entry, profiled)
        text = str(module)
        ref = _parsed(text, optimize, target)
    with timed(seconds, "machine-code"):
        entry_object = bytes(llvm_target.target_machine(target).emit_object(ref))
    object_code = pack_objects([entry_object, *objects])
    with timed(seconds, "load"):
        engine = _link(object_code)
    return CompiledLibrary(engine, object_code, manifest, str(ref), text, target)


ARCHIVE_MAGIC = b"!<arch>\n"
_MEMBER_HEADER = 60


def pack_objects(objects: Sequence[bytes]) -> bytes:
    """The object code of a library made of `objects`: the one object as is, several as
    a System V `ar` archive of members `part<k>.o` in order (`object_members` reads it)."""
    if len(objects) == 1:
        return bytes(objects[0])
    out = bytearray(ARCHIVE_MAGIC)
    for k, obj in enumerate(objects):
        header = f"{f'part{k}.o/':<16}{0:<12}{0:<6}{0:<6}{644:<8}{len(obj):<10}`\n"
        out += header.encode() + obj
        if len(obj) % 2:
            out += b"\n"
    return bytes(out)


def object_members(object_code: bytes) -> list[bytes]:
    """The object files of a library's object code (`pack_objects`); a `CodegenError`
    when the archive is damaged."""
    if not object_code.startswith(ARCHIVE_MAGIC):
        return [object_code]
    members: list[bytes] = []
    pos = len(ARCHIVE_MAGIC)
    while pos < len(object_code):
        header = object_code[pos : pos + _MEMBER_HEADER]
        size_field = header[48:58].strip()
        if len(header) < _MEMBER_HEADER or header[58:] != b"`\n" or not size_field.isdigit():
            raise CodegenError("object code is damaged: a bad archive member header")
        size = int(size_field)
        pos += _MEMBER_HEADER
        if pos + size > len(object_code):
            raise CodegenError("object code is damaged: an archive member is cut short")
        members.append(object_code[pos : pos + size])
        pos += size + size % 2
    if not members:
        raise CodegenError("object code is damaged: an empty archive")
    return members


_SECTION = struct.Struct("<IIQQQQIIQQ")
_SH_OFFSET = 0x18  # where a section header holds its file offset, then its size


def _elf_sections(obj: bytes) -> list[tuple[int, ...]]:
    """The section headers of a 64-bit little-endian ELF object file."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        raise CodegenError("object code is not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    return [_SECTION.unpack_from(obj, shoff + k * shentsize) for k in range(shnum)]


def _symbol_entries(obj: bytes) -> Iterator[tuple[int, int, str, int]]:
    """Each named symbol of an ELF object: the symbol table's index, the entry's file
    offset, its name and its section index (0: undefined)."""
    sections = _elf_sections(obj)
    for index, sec in enumerate(sections):
        if sec[1] != 2:  # SHT_SYMTAB
            continue
        offset, size, link, entsize = sec[4], sec[5], sec[6], sec[9] or 24
        strtab = sections[link][4]
        for pos in range(offset + entsize, offset + size, entsize):
            st_name, _info, _other, st_shndx = struct.unpack_from("<IBBH", obj, pos)
            if st_name:
                end = obj.index(b"\0", strtab + st_name)
                yield index, pos, obj[strtab + st_name : end].decode(), st_shndx


def _elf_symbols(obj: bytes) -> tuple[set[str], set[str]]:
    """The symbols one ELF object defines and those it needs from elsewhere."""
    defined: set[str] = set()
    needed: set[str] = set()
    for _, _, name, shndx in _symbol_entries(obj):
        (needed if shndx == 0 else defined).add(name)
    return defined, needed


def undefined_symbols(object_code: bytes) -> list[str]:
    """Names of the symbols a library's object code (one ELF64 little-endian object file,
    or an archive of them) needs from elsewhere, sorted."""
    defined: set[str] = set()
    needed: set[str] = set()
    for obj in object_members(object_code):
        d, n = _elf_symbols(obj)
        defined |= d
        needed |= n
    return sorted(needed - defined)


def rename_symbols(obj: bytes, renames: Mapping[str, str]) -> bytes:
    """ELF object `obj` with each symbol named `old` or `old.suffix` for an `old` of
    `renames` named `renames[old]` (with the same suffix). The new names go in a copy of
    the symbol string table appended to the file (the old table stays in place: section
    names may share it)."""
    if not renames:
        return obj
    sections = _elf_sections(obj)
    data = bytearray(obj)
    tables: dict[int, tuple[bytearray, dict[str, int]]] = {}
    for index, pos, name, _ in _symbol_entries(obj):
        base, dot, rest = name.partition(".")
        new = renames.get(base)
        if new is None:
            continue
        link = sections[index][6]
        if link not in tables:
            start, size = sections[link][4], sections[link][5]
            tables[link] = (bytearray(obj[start : start + size]), {})
        table, offsets = tables[link]
        full = new + dot + rest
        if full not in offsets:
            offsets[full] = len(table)
            table += full.encode() + b"\0"
        struct.pack_into("<I", data, pos, offsets[full])
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    (shentsize,) = struct.unpack_from("<H", obj, 0x3A)
    for link, (table, _) in tables.items():
        header = shoff + link * shentsize + _SH_OFFSET
        struct.pack_into("<QQ", data, header, len(data), len(table))
        data += table
    return bytes(data)


_LINKER_SYMBOLS = frozenset(["_GLOBAL_OFFSET_TABLE_"])  # provided by the JIT linker itself


def _link(object_code: bytes) -> llvm.ExecutionEngine:
    threadpool.runtime()  # kernels link to the process's pool symbols
    try:
        objects = object_members(object_code)
        needed = [s for s in undefined_symbols(object_code) if s not in _LINKER_SYMBOLS]
    except (struct.error, IndexError, ValueError, UnicodeDecodeError) as exc:
        raise CodegenError(f"object code is damaged: {exc}") from None
    missing = [s for s in needed if llvm.address_of_symbol(s) is None]
    if missing:
        raise CodegenError(
            f"the compiled code needs symbols this process does not provide: {', '.join(missing)}"
        )
    empty = llvm.parse_assembly("")
    empty.triple = llvm_target.triple()
    engine = llvm.create_mcjit_compiler(empty, llvm_target.new_target_machine())
    for obj in objects:
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    return engine


def load_library(object_code: bytes) -> CompiledLibrary:
    """Load object code saved from `CompiledLibrary.object_code`, without recompiling."""
    llvm_target.initialize()
    if (
        not object_code.startswith((b"\x7fELF", ARCHIVE_MAGIC))
        or MANIFEST_SYMBOL.encode() not in object_code
    ):
        raise CodegenError("this is not object code of a relay library")
    engine = _link(bytes(object_code))
    addr = engine.get_global_value_address(MANIFEST_SYMBOL)
    if not addr:
        raise CodegenError("the library has no manifest")
    manifest = json.loads(ctypes.string_at(addr).decode())
    if manifest.get("format") != MANIFEST_FORMAT:
        raise CodegenError(f"library format {manifest.get('format')} is not supported")
    return CompiledLibrary(engine, bytes(object_code), manifest)
