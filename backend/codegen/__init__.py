"""Native code generation: loop IR (TIR `PrimFunc`s) to LLVM IR with llvmlite, optimized for
a `Target`'s CPU and features (default: the host), linked in-process (MCJIT) or saved as
object code.

* `compile_module(funcs, entry, target=...)` → `CompiledLibrary` (`.get(name)` ctypes
  functions, `.llvm_ir`, `.asm`, `.object_code`); `load_library(object_code)` loads one back.
* `EntryPlan`/`KernelCall`/`BufferRef`: the model entry function calling kernels in order.
* `set_num_threads`/`get_num_threads`: the persistent thread pool (written in LLVM IR).
* `emit_primfunc(module, func)`: one kernel into an llvmlite `ir.Module`.
"""

from .compile import (
    CompiledLibrary,
    build_ir,
    compile_module,
    load_library,
)
from .entry import BufferRef, EntryPlan, KernelCall, emit_entry
from .llvm_ir import emit_primfunc
from .llvm_types import CodegenError
from .threadpool import get_num_threads, set_num_threads

__all__ = [
    "BufferRef",
    "CodegenError",
    "CompiledLibrary",
    "EntryPlan",
    "KernelCall",
    "build_ir",
    "compile_module",
    "emit_entry",
    "emit_primfunc",
    "get_num_threads",
    "load_library",
    "set_num_threads",
]
