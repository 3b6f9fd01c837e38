"""The host target: one LLVM initialization, a TargetMachine for this CPU, and the O3 pipeline.

`target_machine()` describes the host CPU by name and feature list (`cascadelake`, `+avx512f`,
...), at opt level 3. On CPUs where LLVM prefers 256-bit vectors even though AVX-512 exists
(Skylake-X, Cascade Lake) we turn that tuning off (`-prefer-256-bit`), so both our explicit
16-lane float vectors and LLVM's own loop vectorizer use full zmm registers: the kernels here
are throughput-bound loops, where 512-bit vectors win. `optimize(module_ref)` runs LLVM's
default O3 module pipeline with loop and SLP vectorization on.
"""

from __future__ import annotations

import ctypes.util
import functools
import threading

import llvmlite.binding as llvm

_lock = threading.Lock()
_initialized = False

EXTRA_FEATURES = ("-prefer-256-bit",)
"""Feature overrides appended to the host's list (see the module docstring)."""


def initialize() -> None:
    """Initialize LLVM's native target, assembly printer and parser, and make libm's symbols
    resolvable by JIT-compiled code (idempotent, thread-safe)."""
    global _initialized
    if _initialized:
        return
    with _lock:
        if _initialized:
            return
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        llvm.initialize_native_asmparser()
        libm = ctypes.util.find_library("m")
        if libm is not None:
            llvm.load_library_permanently(libm)
        _initialized = True


@functools.cache
def host_cpu() -> tuple[str, str]:
    """The host CPU's name and LLVM feature string (with `EXTRA_FEATURES` applied)."""
    initialize()
    name = llvm.get_host_cpu_name()
    features = llvm.get_host_cpu_features().flatten()
    if "+avx512f" in features.split(","):
        features = ",".join([features, *EXTRA_FEATURES])
    return name, features


@functools.cache
def triple() -> str:
    """The target triple of this process."""
    initialize()
    return str(llvm.get_process_triple())


@functools.cache
def target_machine() -> llvm.TargetMachine:
    """The shared TargetMachine for the host CPU at opt level 3, for optimizing and emitting
    code (position-independent, so object code can be loaded anywhere). Never hand it to an
    execution engine: engines take ownership of theirs (use `new_target_machine`)."""
    return new_target_machine()


def new_target_machine() -> llvm.TargetMachine:
    """A fresh TargetMachine like `target_machine()`, e.g. for an execution engine to own."""
    name, features = host_cpu()
    target = llvm.Target.from_triple(triple())
    return target.create_target_machine(
        cpu=name, features=features, opt=3, reloc="pic", codemodel="jitdefault"
    )


@functools.cache
def data_layout() -> str:
    """The data layout string of the host target machine."""
    return str(target_machine().target_data)


def has_avx512() -> bool:
    """Whether the host has AVX-512 (foundation)."""
    return "+avx512f" in host_cpu()[1].split(",")


def native_vector_bits() -> int:
    """Width in bits of the widest vector register the code generator targets."""
    features = host_cpu()[1].split(",")
    if "+avx512f" in features:
        return 512
    if "+avx" in features:
        return 256
    return 128


def optimize(module_ref: llvm.ModuleRef, speed_level: int = 3) -> None:
    """Run the default O`speed_level` module pipeline over `module_ref` in place, with loop
    vectorization, SLP vectorization, loop interleaving and unrolling enabled."""
    tm = target_machine()
    pto = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_interleaving = True
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(module_ref, pb)
