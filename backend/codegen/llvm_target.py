"""LLVM for a `Target`: one LLVM initialization, a TargetMachine per target, the O3 pipeline.

`target_machine(target)` describes the target's CPU by name and a full feature list (every
feature LLVM knows for this host, `+` when the target has it, `-` otherwise, so a named CPU's
defaults never add features the target turned off), at opt level 3; no target means the
host (`Target.host()`). On CPUs where LLVM prefers 256-bit vectors even though AVX-512 exists
(Skylake-X, Cascade Lake) we turn that tuning off (`-prefer-256-bit`), so both our explicit
16-lane float vectors and LLVM's own loop vectorizer use full zmm registers: the kernels here
are throughput-bound loops, where 512-bit vectors win. `optimize(module_ref)` runs LLVM's
default O3 module pipeline with loop and SLP vectorization on.

Code generation runs without Loop Strength Reduction (`CODEGEN_OPTIONS`): on the unrolled
register blocks of our convolutions (a hundred loads off one base per loop body) LSR took
over half of machine-code time (ResNet-18: 1.35 of 2.6 s) and the kernels run as fast
without it (ResNet-18, MobileNet-v2 and the transformer layer, one thread, CPU time per
run within 0.5%). LLVM's SLP vectorizer builds vectors of at most 256 bits: with 512 (the
register width of an AVX-512 target, its default) LLVM 22 aborts the process while
selecting instructions for some of the 512-bit shuffles it makes of small scalar blocks
(dense 4x1 by 12 units plus a bias, on Zen 4: an assertion in SelectionDAGBuilder); our
kernels' vector code is explicit and keeps its width. LLVM's options are process-wide:
another LLVM user in the same process (numba) would see them too.

Object code uses static relocations and the large code model: RuntimeDyld (MCJIT's loader)
places the sections of an object anywhere and patches absolute 64-bit addresses, so nothing
needs a GOT. Several such objects load into one engine (a library compiled in worker
processes is an entry object plus one object per share). Position-independent large-model
code does not allow that: RuntimeDyldELF resolves every object's `R_X86_64_GOTOFF64`
(constant-pool) relocations against the first `.got` section it loaded, so the second
object's constants are read from the wrong place (wrong numbers or a crash).
"""

from __future__ import annotations

import ctypes.util
import functools
import threading

import llvmlite.binding as llvm

from ..target import Target, host_info

_lock = threading.Lock()
_initialized = False

CODEGEN_OPTIONS = ("-disable-lsr", "-slp-max-reg-size=256")
"""LLVM command-line options set once per process (see the module docstring)."""

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
        for option in CODEGEN_OPTIONS:
            llvm.set_option("relay", option)
        _initialized = True


def feature_string(target: Target) -> str:
    """The LLVM feature string of `target` (with `EXTRA_FEATURES` on AVX-512 targets)."""
    enabled = set(target.features)
    known = host_info().known
    flags = [("+" if name in enabled else "-") + name for name in sorted(known)]
    flags += [f"+{name}" for name in target.features if name not in known]
    if "avx512f" in enabled:
        flags += EXTRA_FEATURES
    return ",".join(flags)


@functools.cache
def triple() -> str:
    """The target triple of this process."""
    initialize()
    return str(llvm.get_process_triple())


def target_machine(target: Target | None = None) -> llvm.TargetMachine:
    """The shared TargetMachine for `target` (default: the host) at opt level 3, for
    optimizing and emitting code (static relocations, large code model: see the module
    docstring). Never hand it to an execution engine: engines take ownership of theirs (use
    `new_target_machine`)."""
    return _shared_machine(*_machine_key(target))


def _machine_key(target: Target | None) -> tuple[str, str]:
    t = target if target is not None else Target.host()
    return t.cpu, feature_string(t)


@functools.cache
def _shared_machine(cpu: str, features: str) -> llvm.TargetMachine:
    return _create_machine(cpu, features)


def new_target_machine(target: Target | None = None) -> llvm.TargetMachine:
    """A fresh TargetMachine like `target_machine(target)`, e.g. for an engine to own."""
    return _create_machine(*_machine_key(target))


def _create_machine(cpu: str, features: str) -> llvm.TargetMachine:
    initialize()
    return llvm.Target.from_triple(triple()).create_target_machine(
        cpu=cpu, features=features, opt=3, reloc="static", codemodel="large"
    )


@functools.cache
def data_layout() -> str:
    """The data layout string of the host target machine."""
    return str(target_machine().target_data)


def optimize(
    module_ref: llvm.ModuleRef, speed_level: int = 3, target: Target | None = None
) -> None:
    """Run the default O`speed_level` module pipeline for `target` (default: the host) over
    `module_ref` in place, with loop vectorization, SLP vectorization, loop interleaving and
    unrolling enabled."""
    tm = target_machine(target)
    pto = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_interleaving = True
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(module_ref, pb)
