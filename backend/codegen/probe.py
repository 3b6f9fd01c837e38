"""Measuring this machine's fp32 peak and memory read bandwidth with two tiny LLVM kernels.

Both kernels are pool tasks (`void task(i64 index, i8* closure)`), JIT-compiled once per
process and run through the process's thread pool with one task per thread:

* `__relay_probe_fma` runs `iterations` rounds of `CHAINS` independent multiply-add chains
  on the host's widest fp32 vector (16 lanes with AVX-512, 8 with AVX2, else 4), enough
  chains to hide the latency of two FMA units, and stores the sum of its chains in
  `out[index]` so nothing is optimized away. It uses `llvm.fma` where the CPU has fused
  multiply-add and a multiply then an add elsewhere (2 FLOPs either way).
* `__relay_probe_sum` sums its share of a float32 buffer with aligned vector loads into
  `SUM_ACCUMULATORS` accumulators and stores the sum in `out[index]`.

`measure_fp32_peak(threads)` (GFLOP/s) and `measure_bandwidth(threads)` (GB/s, 1e9 bytes
read per second) take the best of a few timed runs; each sets the pool's thread count for
the measurement and restores it after. Both together take a fraction of a second.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from ..target import Target
from . import llvm_target, threadpool
from .llvm_types import F32, I32, I64, PTR, VOID, gep, intrinsic

PROBE_VERSION = 1
"""Bumped whenever the kernels or the way they are timed change (cached figures expire)."""

CHAINS = 12
"""Independent FMA accumulator chains per task (two FMA units of latency 4-6 need 8-12)."""
SUM_ACCUMULATORS = 8
"""Vector accumulators of the sum kernel (one iteration reads `8 * lanes` floats)."""
RUN_SECONDS = 0.005
"""How long one timed run of the FMA kernel lasts: short, so that on a machine whose CPU time
is throttled in periods (a VM that stalls one of its cores for tens of milliseconds) some
runs fall between the stalls (20 ms runs on 2 threads of such a Zen 4 VM all read half the
peak, while numpy's 1 ms matmuls still reached 87% of it)."""
REPEATS = 15
"""Timed runs per measurement; the fastest counts (the others were disturbed)."""
BANDWIDTH_BYTES = 64 * 1024 * 1024
"""The smallest buffer the bandwidth probe reads; it reads at least 4 times the last-level
cache (but at most `MAX_BANDWIDTH_BYTES`), so nearly every load misses the caches. Bigger
buffers only cost time: writing one first (so its pages exist) is the slow part."""
MAX_BANDWIDTH_BYTES = 1024 * 1024 * 1024
ALIGN = 64

FMA_TASK = "__relay_probe_fma"
SUM_TASK = "__relay_probe_sum"

_MUL, _ADD = 0.5, 1.0  # acc = acc * 0.5 + 1 converges to 2: no overflow, no subnormals


class _FmaClosure(ctypes.Structure):
    _fields_ = [
        ("iterations", ctypes.c_int64),
        ("out", ctypes.c_void_p),
        ("mul", ctypes.c_float),
        ("add", ctypes.c_float),
        ("start", ctypes.c_float),
    ]


class _SumClosure(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("per_task", ctypes.c_int64),
        ("out", ctypes.c_void_p),
    ]


_FMA_CLOSURE = ir.LiteralStructType([I64, PTR, F32, F32, F32])
_SUM_CLOSURE = ir.LiteralStructType([PTR, I64, PTR])


def _field(b: ir.IRBuilder, closure: ir.Value, ty: ir.LiteralStructType, k: int) -> ir.Value:
    ptr = gep(b, closure, [ir.Constant(I32, 0), ir.Constant(I32, k)], ty)
    return b.load(ptr, typ=ty.elements[k])


def _splat(b: ir.IRBuilder, value: ir.Value, vec: ir.VectorType) -> ir.Value:
    undef = ir.Constant(vec, ir.Undefined)
    one = b.insert_element(undef, value, ir.Constant(I32, 0))
    zeros = ir.Constant(ir.VectorType(I32, vec.count), [0] * vec.count)
    return b.shuffle_vector(one, undef, zeros)


def _reduce(b: ir.IRBuilder, values: list[ir.Value], lanes: int) -> ir.Value:
    """The sum of every lane of `values` (a tree over the vectors, then over the lanes)."""
    while len(values) > 1:
        pairs = [b.fadd(values[i], values[i + 1]) for i in range(0, len(values) - 1, 2)]
        values = pairs + values[len(pairs) * 2 :]
    total = b.extract_element(values[0], ir.Constant(I32, 0))
    for lane in range(1, lanes):
        total = b.fadd(total, b.extract_element(values[0], ir.Constant(I32, lane)))
    return total


def _store_result(b: ir.IRBuilder, out: ir.Value, index: ir.Value, value: ir.Value) -> None:
    b.store(value, gep(b, out, [index], F32))


def _task(module: ir.Module, name: str) -> tuple[ir.Function, ir.IRBuilder]:
    fn = ir.Function(module, ir.FunctionType(VOID, [I64, PTR]), name)
    fn.attributes.add("nounwind")
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def _build_fma(module: ir.Module, lanes: int, fused: bool) -> None:
    """`__relay_probe_fma`: `CHAINS` vector chains `acc = acc * mul + add`, `iterations`
    times (at least once), then `out[index] = sum of every lane of every chain`; chain k
    starts at `start + k`."""
    fn, b = _task(module, FMA_TASK)
    index, closure = fn.args
    vec = ir.VectorType(F32, lanes)
    iterations = _field(b, closure, _FMA_CLOSURE, 0)
    out = _field(b, closure, _FMA_CLOSURE, 1)
    mul = _splat(b, _field(b, closure, _FMA_CLOSURE, 2), vec)
    add = _splat(b, _field(b, closure, _FMA_CLOSURE, 3), vec)
    start = _splat(b, _field(b, closure, _FMA_CLOSURE, 4), vec)
    inits = [b.fadd(start, ir.Constant(vec, [float(k)] * lanes)) for k in range(CHAINS)]
    entry = b.block
    loop, done = fn.append_basic_block("loop"), fn.append_basic_block("done")
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I64, "i")
    accs = [b.phi(vec, f"acc{k}") for k in range(CHAINS)]
    if fused:
        fma = intrinsic(module, "llvm.fma", vec, [vec] * 3, [vec])
        nexts = [b.call(fma, [acc, mul, add]) for acc in accs]
    else:
        nexts = [b.fadd(b.fmul(acc, mul), add) for acc in accs]
    i_next = b.add(i, ir.Constant(I64, 1))
    i.add_incoming(ir.Constant(I64, 0), entry)
    i.add_incoming(i_next, loop)
    for acc, init, nxt in zip(accs, inits, nexts, strict=True):
        acc.add_incoming(init, entry)
        acc.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", i_next, iterations), loop, done)
    b.position_at_end(done)
    _store_result(b, out, index, _reduce(b, nexts, lanes))
    b.ret_void()


def _build_sum(module: ir.Module, lanes: int) -> None:
    """`__relay_probe_sum`: `out[index] = sum(data[index * per_task : (index + 1) *
    per_task])`, `per_task` a positive multiple of `SUM_ACCUMULATORS * lanes` and `data`
    aligned to a vector."""
    fn, b = _task(module, SUM_TASK)
    index, closure = fn.args
    vec = ir.VectorType(F32, lanes)
    step = SUM_ACCUMULATORS * lanes
    data = _field(b, closure, _SUM_CLOSURE, 0)
    per_task = _field(b, closure, _SUM_CLOSURE, 1)
    out = _field(b, closure, _SUM_CLOSURE, 2)
    base = gep(b, data, [b.mul(index, per_task)], F32)
    entry = b.block
    loop, done = fn.append_basic_block("loop"), fn.append_basic_block("done")
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I64, "i")
    accs = [b.phi(vec, f"acc{k}") for k in range(SUM_ACCUMULATORS)]
    nexts = []
    for k, acc in enumerate(accs):
        ptr = gep(b, base, [b.add(i, ir.Constant(I64, k * lanes))], F32)
        nexts.append(b.fadd(acc, b.load(ptr, typ=vec, align=4 * lanes)))
    i_next = b.add(i, ir.Constant(I64, step))
    i.add_incoming(ir.Constant(I64, 0), entry)
    i.add_incoming(i_next, loop)
    for acc, nxt in zip(accs, nexts, strict=True):
        acc.add_incoming(ir.Constant(vec, [0.0] * lanes), entry)
        acc.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", i_next, per_task), loop, done)
    b.position_at_end(done)
    _store_result(b, out, index, _reduce(b, nexts, lanes))
    b.ret_void()


class ProbeKernels:
    """The JIT-compiled probe kernels of this process: their addresses and vector width."""

    def __init__(self) -> None:
        llvm_target.initialize()
        host = Target.host()
        self.lanes = min(16, max(4, host.lanes("float32")))
        x86 = llvm_target.triple().split("-")[0] in ("x86_64", "i386", "i686")
        self.fused = not x86 or host.has_feature("fma") or host.has_feature("avx512f")
        module = ir.Module("relay_probe")
        module.triple = llvm_target.triple()
        module.data_layout = llvm_target.data_layout()
        _build_fma(module, self.lanes, self.fused)
        _build_sum(module, self.lanes)
        ref = llvm.parse_assembly(str(module))
        ref.verify()
        llvm_target.optimize(ref)
        self.engine = llvm.create_mcjit_compiler(ref, llvm_target.new_target_machine())
        self.engine.finalize_object()
        self.fma = self.engine.get_function_address(FMA_TASK)
        self.sum = self.engine.get_function_address(SUM_TASK)

    @property
    def sum_step(self) -> int:
        """Floats one round of the sum kernel reads; a task's share is a multiple of it."""
        return SUM_ACCUMULATORS * self.lanes


_kernels: ProbeKernels | None = None
_lock = threading.Lock()


def kernels() -> ProbeKernels:
    """The probe kernels (compiled on first use, once per process)."""
    global _kernels
    if _kernels is None:
        with _lock:
            if _kernels is None:
                _kernels = ProbeKernels()
    return _kernels


@contextmanager
def pool_threads(threads: int) -> Iterator[None]:
    """Run the pool's parallel loops with `threads` threads inside the block."""
    if threads < 1:
        raise ValueError(f"the number of threads must be at least 1, got {threads}")
    before = threadpool.get_num_threads()
    threadpool.set_num_threads(threads)
    try:
        yield
    finally:
        threadpool.set_num_threads(before)


def _run(task: int, closure: ctypes.Structure, tasks: int) -> float:
    """Seconds one parallel loop of `tasks` tasks of `task` takes."""
    pool = threadpool.runtime()
    start = time.perf_counter()
    pool.parallel_for(task, ctypes.addressof(closure), tasks)
    return time.perf_counter() - start


def run_fma(iterations: int, tasks: int, start: float = 0.0) -> tuple[float, np.ndarray]:
    """Run `tasks` FMA tasks of `iterations` rounds through the pool (at its current thread
    count): the seconds it took and each task's result (the sum over every lane of chains
    that started at `start + k` and ran `acc = acc * 0.5 + 1`)."""
    if iterations < 1 or tasks < 1:
        raise ValueError(f"iterations and tasks must be positive, got {iterations}, {tasks}")
    k = kernels()
    out = np.zeros(tasks, dtype=np.float32)
    closure = _FmaClosure(iterations, out.ctypes.data, _MUL, _ADD, start)
    seconds = _run(k.fma, closure, tasks)
    return seconds, out


def flops_per_iteration() -> int:
    """FLOPs one task does per round of the FMA kernel (2 per lane per chain)."""
    return 2 * kernels().lanes * CHAINS


def measure_fp32_peak(threads: int) -> float:
    """The fp32 multiply-add throughput of `threads` threads, in GFLOP/s (1e9 FLOP/s):
    the fastest of `REPEATS` runs of about `RUN_SECONDS` each, one task per thread."""
    with pool_threads(threads):
        iterations, seconds = 1 << 12, 0.0
        while iterations < 1 << 40:  # calibrate (this also wakes the workers)
            seconds, _ = run_fma(iterations, threads)
            if seconds >= RUN_SECONDS / 8:
                break
            iterations *= 4
        iterations = max(1, int(iterations * RUN_SECONDS / max(seconds, 1e-9)))
        best = min(run_fma(iterations, threads)[0] for _ in range(REPEATS))
    return flops_per_iteration() * iterations * threads / best / 1e9


def aligned_buffer(nbytes: int, fill: float = 1.0) -> np.ndarray:
    """A float32 array of `nbytes` bytes aligned to `ALIGN` bytes, filled with `fill` (every
    page written, so reading it really reads memory)."""
    count = nbytes // 4
    raw = np.empty(count + ALIGN // 4, dtype=np.float32)
    offset = (-raw.ctypes.data % ALIGN) // 4
    buf = raw[offset : offset + count]
    buf.fill(fill)
    return buf


def run_sum(data: np.ndarray, tasks: int) -> tuple[float, np.ndarray, int]:
    """Sum `data` (float32, contiguous, `ALIGN`-aligned) in `tasks` equal shares through the
    pool: the seconds it took, each share's sum, and the bytes read (the shares cover the
    longest prefix of `data` that splits into whole kernel rounds)."""
    if data.dtype != np.float32 or not data.flags.c_contiguous or data.ctypes.data % ALIGN:
        raise ValueError("run_sum needs a contiguous, 64-byte aligned float32 array")
    if tasks < 1:
        raise ValueError(f"tasks must be positive, got {tasks}")
    k = kernels()
    per_task = data.size // tasks // k.sum_step * k.sum_step
    if per_task == 0:
        raise ValueError(f"{data.size} floats are too few for {tasks} tasks")
    out = np.zeros(tasks, dtype=np.float32)
    closure = _SumClosure(data.ctypes.data, per_task, out.ctypes.data)
    seconds = _run(k.sum, closure, tasks)
    return seconds, out, per_task * tasks * 4


def bandwidth_bytes() -> int:
    """The size of the buffer `measure_bandwidth` reads by default."""
    return min(MAX_BANDWIDTH_BYTES, max(BANDWIDTH_BYTES, 4 * Target.host().l3_bytes))


def measure_bandwidth(threads: int, nbytes: int | None = None) -> float:
    """The memory read bandwidth of `threads` threads, in GB/s (1e9 bytes per second): the
    fastest of `REPEATS` sums of a buffer of `nbytes` bytes (default: `bandwidth_bytes()`),
    one share per thread."""
    if nbytes is None:
        nbytes = bandwidth_bytes()
    data = aligned_buffer(nbytes)
    with pool_threads(threads):
        run_sum(data, threads)  # wakes the workers
        runs = [run_sum(data, threads) for _ in range(REPEATS)]
    best = min(seconds for seconds, _, _ in runs)
    return runs[0][2] / best / 1e9


__all__ = [
    "BANDWIDTH_BYTES",
    "CHAINS",
    "MAX_BANDWIDTH_BYTES",
    "PROBE_VERSION",
    "REPEATS",
    "SUM_ACCUMULATORS",
    "ProbeKernels",
    "aligned_buffer",
    "bandwidth_bytes",
    "flops_per_iteration",
    "kernels",
    "measure_bandwidth",
    "measure_fp32_peak",
    "pool_threads",
    "run_fma",
    "run_sum",
]
