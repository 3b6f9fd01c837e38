"""A persistent thread pool written in LLVM IR, shared by every compiled kernel in a process.

No C compiler and no Python threads: the pool is an LLVM module JIT-compiled once per
process (`runtime()`); its workers are made with `pthread_create` (resolved from the
process) the first time a parallel loop needs them and then live until interpreter exit.
Kernels reach it through two symbols registered with `llvm.add_symbol`:

* `void __relay_parallel_for(void (*task)(i64 index, i8* closure), i8* closure, i64 n)` runs
  `task(0..n-1, closure)` across the pool; the calling thread works too. Tasks are claimed
  one at a time from an atomic counter (dynamic scheduling), so a thread slowed down by
  another process on the same core does not hold the others back.
* `void __relay_parallel_run(task, closure, i64 n, i32 threads)` is the same on at most
  `threads` threads (the caller included; fewer when the call's thread count is lower or
  there are fewer tasks): a kernel passes the thread count its parallel plan chose
  (`backend.lower.parallel_plan`); workers 0..threads-2 take part, and only those are woken
  if they sleep (each sleeps on its own bit of a futex bitset).
* `i32 __relay_num_threads()` is the call's thread count (kernels compiled without a plan
  make `min(extent, TASKS_PER_THREAD * threads)` tasks).

The call's thread count belongs to the model being run: a compiled model enters its native
code through `__relay_pool_enter`/`__relay_pool_enter_arrays` (`backend.pool_abi`), which
make the model's count the calling thread's (a pthread thread-specific value) for the
call; outside a model call, the pool's own count (`set_num_threads`) applies. So models
built for different counts keep theirs, side by side, and a loaded model's count can change
(`CompiledModel.set_num_threads`) without touching any other. Workers are made on demand,
as many as the largest count asked for so far needs.

Protocol: a job (function, closure, n, next-task counter, remaining counter, allowed
workers) lives on the caller's stack and is published through `cur_job`, then the
generation counter `gen` is bumped. Workers spin on `gen` (`pause`) for the spin window
(`SPIN_NS` unless `set_spin_ns` / `RELAY_SPIN_NS` says otherwise), then sleep
in `futex(FUTEX_WAIT_BITSET)` on a bit of their own (Linux on x86-64 and AArch64; elsewhere
they keep yielding with `sched_yield`); the caller wakes sleepers only if there are some,
and only those the loop lets take part. A worker counts
itself in `active` before it reads `cur_job`; the caller, when all tasks are done, clears
`cur_job` and waits for `active == 0`, so no worker can touch a job after its frame is gone.
A `busy` flag taken with `cmpxchg` makes a nested or concurrent parallel loop (another
Python thread calling a kernel at the same time) run inline on its own thread.

`set_num_threads(n)` (default: the CPUs this process may use) changes how many threads take
part outside model calls (kernels called directly, the VM); 1 runs every loop inline. A
build or a loaded artifact sets it from its `Target` (the environment is read only at the
API and CLI edge, `relay.driver.default_target`, and for `RELAY_BIND_THREADS` below).

Pinning: `bind_threads(True)` (or `RELAY_BIND_THREADS=1` when the pool starts, or building or
loading a model for a target with `-bind-threads=1`, `apply_target`) makes each
worker pin itself to a CPU of its own as it starts (`sched_setaffinity`; Linux); off by
default.
At interpreter exit the workers are woken and joined (no hang, no code freed under a
running thread); after `os.fork` the child starts with no workers and makes its own on
demand.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import threading

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from .. import pool_abi
from ..target import Target, cpu_count
from . import llvm_target
from .llvm_types import I32, I64, PTR, VOID, FunctionPointerType, declare, gep

PARALLEL_FOR = "__relay_parallel_for"
PARALLEL_RUN = "__relay_parallel_run"
NUM_THREADS = "__relay_num_threads"
NOW_NS = "__relay_now_ns"
ENTER = pool_abi.ENTER
SET_CALL_THREADS = pool_abi.SET_CALL_THREADS
TASKS_PER_THREAD = 4
"""Tasks per thread a parallel loop is cut into (more tasks balance load better)."""
MAX_WORKERS = pool_abi.MAX_THREADS - 1
SPIN_NS = 1_000_000
"""How long (monotonic ns) a worker spins for a new job before it sleeps (the default of
`set_spin_ns` / `RELAY_SPIN_NS`), so that the back-to-back parallel loops of one model call
do not pay a wake-up each. Measured on a 2-core AMD EPYC shared with other jobs (load average
4-7): between two parallel loops of one call a worker waits a median 0.1-0.5 us, p99 0.3-2.3
us (ResNet-18: 34 us; `bench/bench_call_overhead.py --gaps-inside resnet18,mobilenet_v2,
transformer_layer,mlp1,mlp64`), so any window of tens of us covers a call on a machine of its
own. On a loaded one a spinning worker is preempted, and when it runs again after more than
the window it sleeps and the next loop pays a wake-up of ~200 us: `bench/threads.py --grain`
with back-to-back calls, two runs each, `RELAY_SPIN_NS=200000` had 4 of 12 cells at +200 us,
1 ms none of 12. Spinning costs where calls are far apart (MLP b1 on two threads, 2 ms of
caller work between calls, `bench_call_overhead.py --spin`, load 6: 353 us per call with
no spin, 792 with 200 us, 1365 with 1 ms; no difference with 0-100 us between calls), so
latency-bound uses keep 1 ms and a process sharing its cores may lower it. Measured by the
clock, not in `pause` rounds: a `pause` takes a few cycles on some CPUs (AMD Zen 1) and over
a hundred on others."""
SPIN_CHECK = 64
"""`pause` rounds between two reads of the clock while a worker spins."""

_SYS_FUTEX = {"x86_64": 202, "aarch64": 98}  # Linux syscall numbers by architecture
_PAUSE = {"x86_64": "pause", "aarch64": "yield"}  # the spin-wait hint instruction
_CLOCK_MONOTONIC = {"linux": 1, "darwin": 6}
_FUTEX_WAIT_PRIVATE = 128
_FUTEX_WAKE_PRIVATE = 129
_FUTEX_WAIT_BITSET_PRIVATE = 128 + 9
_FUTEX_WAKE_BITSET_PRIVATE = 128 + 10
_ALL_BITS = -1  # a futex bitset matching every waiter
_AFFINITY_CPUS = 1024  # CPUs a pinning mask covers (glibc's cpu_set_t)

# job struct: task fn, closure, n, next, remaining, allowed workers, loop id (-1: not
# traced), trace buffer
_JOB = ir.LiteralStructType([PTR, PTR, I64, I64, I64, I32, I32, PTR])
# trace record: start ns, end ns, worker (-1: the loop itself), loop id, task index (or, for
# the loop's record, its task count)
TRACE_RECORD = ir.LiteralStructType([I64, I64, I32, I32, I64])
TRACE_RECORD_BYTES = 32


def declare_runtime(module: ir.Module) -> tuple[ir.Function, ir.Function]:
    """Declarations of `__relay_parallel_for` and `__relay_num_threads` in a kernel module."""
    pfor = declare(module, PARALLEL_FOR, VOID, [PTR, PTR, I64])
    nthreads = declare(module, NUM_THREADS, I32, [])
    return pfor, nthreads


def declare_run(module: ir.Module) -> ir.Function:
    """Declaration of `__relay_parallel_run(task, closure, n, threads)` in a kernel module."""
    return declare(module, PARALLEL_RUN, VOID, [PTR, PTR, I64, I32])


class _PoolBuilder:
    """Builds the pool module."""

    def __init__(self) -> None:
        self.m = ir.Module("relay_threadpool")
        self.m.triple = llvm_target.triple()
        self.m.data_layout = llvm_target.data_layout()
        arch = llvm_target.triple().split("-")[0]
        linux = "linux" in llvm_target.triple()
        self.futex_nr = _SYS_FUTEX.get(arch) if linux else None
        self.pause_insn = _PAUSE.get(arch)
        g = self._global
        self.cfg = g("cfg_threads", I32, 1)
        self.nworkers = g("nworkers", I32, 0)
        self.workers = g("workers", ir.ArrayType(I64, MAX_WORKERS), None)
        self.gen = g("gen", I32, 0)
        self.sleepers = g("sleepers", I32, 0)
        self.active = g("active", I32, 0)
        self.busy = g("busy", I32, 0)
        self.shutdown = g("shutdown", I32, 0)
        self.cur_job = g("cur_job", PTR, None)
        self.trace_buf = g("trace_buf", PTR, None)
        self.trace_cap = g("trace_cap", I64, 0)
        self.trace_len = g("trace_len", I64, 0)
        self.loop_seq = g("loop_seq", I32, 0)
        self.spin_ns = g("spin_ns", I64, SPIN_NS)
        # the thread-specific key holding the running model call's thread count
        self.key_ty = I32 if linux else I64  # pthread_key_t
        self.call_key = g("call_key", self.key_ty, 0)
        # worker w pins itself to CPU bind[w] - 1 when it starts (0: not pinned)
        self.bind = g("bind", ir.ArrayType(I32, MAX_WORKERS), None)
        self.syscall = declare(self.m, "syscall", I64, [I64], var_arg=True)
        self.sched_yield = declare(self.m, "sched_yield", I32, [])
        self.pthread_create = declare(self.m, "pthread_create", I32, [PTR, PTR, PTR, PTR])
        self.pthread_join = declare(self.m, "pthread_join", I32, [I64, PTR])
        self.clock_gettime = declare(self.m, "clock_gettime", I32, [I32, PTR])
        self.key_create = declare(self.m, "pthread_key_create", I32, [PTR, PTR])
        self.getspecific = declare(self.m, "pthread_getspecific", PTR, [self.key_ty])
        self.setspecific = declare(self.m, "pthread_setspecific", I32, [self.key_ty, PTR])
        self.setaffinity = (
            declare(self.m, "sched_setaffinity", I32, [I32, I64, PTR]) if linux else None
        )
        system = "linux" if linux else ("darwin" if "apple" in llvm_target.triple() else "")
        self.clock_id = _CLOCK_MONOTONIC.get(system, 1)
        self.task_ty = ir.FunctionType(VOID, [I64, PTR])

    def _global(self, name: str, ty: ir.Type, init: int | None) -> ir.GlobalVariable:
        gv = ir.GlobalVariable(self.m, ty, f"__relay_pool.{name}")
        gv.linkage = "internal"
        gv.initializer = ir.Constant(ty, init)
        gv.align = 64
        return gv

    def _fn(
        self, name: str, ret: ir.Type, args: list[ir.Type], internal: bool = False
    ) -> tuple[ir.Function, ir.IRBuilder]:
        fn = ir.Function(self.m, ir.FunctionType(ret, args), name)
        fn.attributes.add("nounwind")
        if internal:
            fn.linkage = "internal"
        return fn, ir.IRBuilder(fn.append_basic_block("entry"))

    # -------------------------------------------------------------------- primitives

    @staticmethod
    def load(b: ir.IRBuilder, ptr: ir.Value, ty: ir.Type, order: str = "seq_cst") -> ir.Value:
        return b.load_atomic(ptr, order, ty.width // 8 if isinstance(ty, ir.IntType) else 8, typ=ty)

    @staticmethod
    def store(b: ir.IRBuilder, value: ir.Value, ptr: ir.Value, order: str = "seq_cst") -> None:
        size = value.type.width // 8 if isinstance(value.type, ir.IntType) else 8
        b._insert(ir.instructions.StoreAtomicInstr(b.block, value, ptr, order, size))

    def pause(self, b: ir.IRBuilder) -> None:
        """The CPU's spin-wait hint (nothing on architectures without a known one)."""
        if self.pause_insn is not None:
            asm = ir.InlineAsm(ir.FunctionType(VOID, []), self.pause_insn, "~{memory}", True)
            b.call(asm, [])

    def futex(
        self, b: ir.IRBuilder, op: int, value: ir.Value, bits: ir.Value | None = None
    ) -> None:
        """futex(&gen, op, value, NULL, NULL, bits) (`bits`: the bitset of the `*_BITSET`
        operations); where there is no futex, waiting degrades to yielding."""
        if self.futex_nr is None:
            b.call(self.sched_yield, [])
            return
        null = ir.Constant(PTR, None)
        args = [
            ir.Constant(I64, self.futex_nr),
            self.gen,
            ir.Constant(I64, op),
            b.sext(value, I64),
            null,
            null,
            b.sext(bits, I64) if bits is not None else ir.Constant(I64, 0),
        ]
        b.call(self.syscall, args)

    def field(self, b: ir.IRBuilder, job: ir.Value, k: int) -> ir.Value:
        return gep(b, job, [ir.Constant(I32, 0), ir.Constant(I32, k)], _JOB)

    @staticmethod
    def entry_alloca(fn: ir.Function, ty: ir.Type, name: str) -> ir.Value:
        """A stack slot in `fn`'s entry block (promoted to a register by mem2reg)."""
        eb = ir.IRBuilder(fn.entry_basic_block)
        eb.position_at_start(fn.entry_basic_block)
        return eb.alloca(ty, name=name)

    def wait_zero(
        self, b: ir.IRBuilder, fn: ir.Function, ptr: ir.Value, ty: ir.Type, name: str
    ) -> None:
        """Spin (then yield) until the integer at `ptr` is 0."""
        count = self.entry_alloca(fn, I32, f"{name}.spins")
        b.store(ir.Constant(I32, 0), count)
        loop, body, yld, spin, done = (
            fn.append_basic_block(f"{name}.{s}") for s in ("loop", "body", "yield", "spin", "done")
        )
        b.branch(loop)
        b.position_at_end(loop)
        v = self.load(b, ptr, ty, "acquire")
        b.cbranch(b.icmp_signed("==", v, ir.Constant(ty, 0)), done, body)
        b.position_at_end(body)
        k = b.load(count, typ=I32)
        b.store(b.add(k, ir.Constant(I32, 1)), count)
        b.cbranch(b.icmp_signed("<", k, ir.Constant(I32, 2000)), spin, yld)
        b.position_at_end(spin)
        self.pause(b)
        b.branch(loop)
        b.position_at_end(yld)
        b.call(self.sched_yield, [])
        b.branch(loop)
        b.position_at_end(done)

    # -------------------------------------------------------------------- functions

    def build(self) -> ir.Module:
        self.now = self._now()
        self.record = self._record()
        self.run_tasks = self._run_tasks()
        self.worker = self._worker()
        self._num_threads()
        self._init()
        self._enter()
        self._enter_arrays()
        self._set_call_threads()
        self._bind()
        self._set_num_threads()
        self._set_spin()
        self._parallel_run()
        self._parallel_for()
        self._shutdown()
        self._after_fork()
        self._trace_control()
        return self.m

    def _now(self) -> ir.Function:
        """`i64 __relay_now_ns()`: the monotonic clock in nanoseconds (`time.monotonic_ns`'s
        clock), read by profiling entry functions around each kernel call."""
        fn, b = self._fn(NOW_NS, I64, [])
        timespec = ir.LiteralStructType([I64, I64])
        ts = b.alloca(timespec, name="ts")
        b.call(self.clock_gettime, [ir.Constant(I32, self.clock_id), ts])
        zero, one = ir.Constant(I32, 0), ir.Constant(I32, 1)
        sec = b.load(gep(b, ts, [zero, zero], timespec), typ=I64)
        nsec = b.load(gep(b, ts, [zero, one], timespec), typ=I64)
        b.ret(b.add(b.mul(sec, ir.Constant(I64, 1_000_000_000)), nsec))
        return fn

    def _record(self) -> ir.Function:
        """Append one trace record to `buf` (dropped, but counted, past the capacity)."""
        fn, b = self._fn("__relay_pool_record", VOID, [PTR, I64, I64, I32, I32, I64], True)
        buf, *values = fn.args
        k = b.atomic_rmw("add", self.trace_len, ir.Constant(I64, 1), "monotonic")
        cap = self.load(b, self.trace_cap, I64, "monotonic")
        with b.if_then(b.icmp_signed("<", k, cap)):
            rec = gep(b, buf, [k], TRACE_RECORD)
            for j, v in enumerate(values):
                b.store(v, gep(b, rec, [ir.Constant(I32, 0), ir.Constant(I32, j)], TRACE_RECORD))
        b.ret_void()
        return fn

    def _trace_control(self) -> None:
        """`__relay_pool_trace_start(buf, capacity)` turns the task trace on (records go to
        `buf`); `__relay_pool_trace_stop()` turns it off and returns how many records were
        made (more than the capacity when some were dropped)."""
        fn, b = self._fn("__relay_pool_trace_start", VOID, [PTR, I64])
        self.store(b, ir.Constant(I64, 0), self.trace_len)
        self.store(b, ir.Constant(I32, 0), self.loop_seq)
        self.store(b, fn.args[1], self.trace_cap)
        self.store(b, fn.args[0], self.trace_buf, "release")
        b.ret_void()
        _, b = self._fn("__relay_pool_trace_stop", I64, [])
        self.store(b, ir.Constant(PTR, None), self.trace_buf)
        b.ret(self.load(b, self.trace_len, I64))

    def call_threads(self, b: ir.IRBuilder) -> ir.Value:
        """The threads a parallel loop on the calling thread may use: the running model
        call's count (thread-specific, set by `__relay_pool_enter`), else the pool's."""
        key = b.load(self.call_key, typ=self.key_ty)
        mine = b.ptrtoint(b.call(self.getspecific, [key]), I64)
        pool = self.load(b, self.cfg, I32, "monotonic")
        return b.select(b.icmp_signed("==", mine, ir.Constant(I64, 0)), pool, b.trunc(mine, I32))

    def _num_threads(self) -> None:
        _, b = self._fn(NUM_THREADS, I32, [])
        b.ret(self.call_threads(b))

    def _init(self) -> None:
        """`i32 __relay_pool_init()`: makes the thread-specific key of call thread counts
        (once per process, before any call); 0 on success."""
        _, b = self._fn("__relay_pool_init", I32, [])
        b.ret(b.call(self.key_create, [self.call_key, ir.Constant(PTR, None)]))

    def _enter(self) -> None:
        """`void __relay_pool_enter(i64* block)`: call a model's entry function with its
        thread count in force on this thread (`backend.pool_abi` names the block's words; a
        nonzero stamps pointer calls the profiling entry with it), then restore the count
        the thread had before."""
        fn, b = self._fn(ENTER, VOID, [PTR])
        self.enter = fn
        block = fn.args[0]

        def word(k: int) -> ir.Value:
            return b.load(gep(b, block, [ir.Constant(I64, k)], I64), typ=I64)

        threads = word(pool_abi.THREADS)
        tables = [b.inttoptr(word(k), PTR) for k in pool_abi.ARGUMENTS]
        stamps = word(pool_abi.STAMPS)
        key = b.load(self.call_key, typ=self.key_ty)
        before = b.call(self.getspecific, [key])
        b.call(self.setspecific, [key, b.inttoptr(threads, PTR)])
        entry = word(pool_abi.FUNCTION)
        plain_ty = ir.FunctionType(VOID, [PTR] * 4)
        profiled_ty = ir.FunctionType(VOID, [PTR] * 5)
        with b.if_else(b.icmp_signed("==", stamps, ir.Constant(I64, 0))) as (plain, profiled):
            with plain:
                b.call(b.inttoptr(entry, FunctionPointerType(plain_ty)), tables)
            with profiled:
                target = b.inttoptr(entry, FunctionPointerType(profiled_ty))
                b.call(target, [*tables, b.inttoptr(stamps, PTR)])
        b.call(self.setspecific, [key, before])
        b.ret_void()

    def _enter_arrays(self) -> None:
        """`i32 __relay_pool_enter_arrays(block, first_input, first_output)`
        (`backend.pool_abi`): the tables' array objects turned into data pointers, the
        inputs' alignment checked (1: misaligned, nothing ran), then `__relay_pool_enter`."""
        fn, b = self._fn(pool_abi.ENTER_ARRAYS, I32, [PTR, PTR, PTR])
        block, first_in, first_out = fn.args
        bad = b.alloca(I64, name="misaligned")
        indices = [b.alloca(I64, name="k"), b.alloca(I64, name="k")]

        def word(k: int) -> ir.Value:
            return b.load(gep(b, block, [ir.Constant(I64, k)], I64), typ=I64)

        offset = word(pool_abi.OBJECT_DATA)
        align = b.inttoptr(word(pool_abi.ALIGN), PTR)
        b.store(ir.Constant(I64, 0), bad)
        for table_word, count_word, first, index, check in (
            (pool_abi.ARGUMENTS[0], pool_abi.INPUTS, first_in, indices[0], True),
            (pool_abi.ARGUMENTS[1], pool_abi.OUTPUTS, first_out, indices[1], False),
        ):
            table = b.inttoptr(word(table_word), PTR)
            count = word(count_word)
            with b.if_then(b.icmp_signed(">", count, ir.Constant(I64, 0))):
                b.store(first, table)
            b.store(ir.Constant(I64, 0), index)
            loop, body, done = (fn.append_basic_block(s) for s in ("loop", "body", "done"))
            b.branch(loop)
            b.position_at_end(loop)
            k = b.load(index, typ=I64)
            b.cbranch(b.icmp_signed("<", k, count), body, done)
            b.position_at_end(body)
            slot = gep(b, table, [k], PTR)
            obj = b.load(slot, typ=PTR)
            data = b.load(gep(b, obj, [offset], ir.IntType(8)), typ=PTR)
            b.store(data, slot)
            if check:
                mask = b.load(gep(b, align, [k], I64), typ=I64)
                low = b.and_(b.ptrtoint(data, I64), mask)
                b.store(b.or_(b.load(bad, typ=I64), low), bad)
            b.store(b.add(k, ir.Constant(I64, 1)), index)
            b.branch(loop)
            b.position_at_end(done)
        run, refuse = fn.append_basic_block("run"), fn.append_basic_block("refuse")
        b.cbranch(b.icmp_signed("==", b.load(bad, typ=I64), ir.Constant(I64, 0)), run, refuse)
        b.position_at_end(run)
        b.call(self.enter, [block])
        b.ret(ir.Constant(I32, 0))
        b.position_at_end(refuse)
        b.ret(ir.Constant(I32, 1))

    def _set_call_threads(self) -> None:
        """`i64 __relay_pool_set_call_threads(i64 n)`: make `n` (0: none) the calling
        thread's call thread count; returns the one before (for a model stepping through
        its kernels from Python)."""
        fn, b = self._fn(pool_abi.SET_CALL_THREADS, I64, [I64])
        key = b.load(self.call_key, typ=self.key_ty)
        before = b.call(self.getspecific, [key])
        b.call(self.setspecific, [key, b.inttoptr(fn.args[0], PTR)])
        b.ret(b.ptrtoint(before, I64))

    def _set_num_threads(self) -> None:
        fn, b = self._fn("__relay_set_num_threads", VOID, [I32])
        n = fn.args[0]
        lo, hi = ir.Constant(I32, 1), ir.Constant(I32, MAX_WORKERS + 1)
        n = b.select(b.icmp_signed("<", n, lo), lo, n)
        n = b.select(b.icmp_signed(">", n, hi), hi, n)
        self.store(b, n, self.cfg)
        b.ret_void()

    def _set_spin(self) -> None:
        """`void __relay_pool_set_spin(i64 ns)`: how long idle workers spin from now on
        before they sleep (read when a worker starts waiting)."""
        fn, b = self._fn("__relay_pool_set_spin", VOID, [I64])
        n = fn.args[0]
        zero = ir.Constant(I64, 0)
        self.store(b, b.select(b.icmp_signed("<", n, zero), zero, n), self.spin_ns)
        b.ret_void()

    def _bind(self) -> None:
        """`void __relay_pool_bind(i32 worker, i32 cpu)`: worker `worker` pins itself to CPU
        `cpu` when it next starts (-1: not pinned)."""
        fn, b = self._fn("__relay_pool_bind", VOID, [I32, I32])
        slot = gep(b, self.bind, [ir.Constant(I32, 0), fn.args[0]], self.bind.value_type)
        b.store(b.add(fn.args[1], ir.Constant(I32, 1)), slot)
        b.ret_void()

    def _run_tasks(self) -> ir.Function:
        fn, b = self._fn("__relay_pool_run_tasks", VOID, [PTR, I32], internal=True)
        job, worker = fn.args
        n = b.load(self.field(b, job, 2), typ=I64)
        task = b.load(self.field(b, job, 0), typ=FunctionPointerType(self.task_ty))
        cl = b.load(self.field(b, job, 1), typ=PTR)
        loop_id = b.load(self.field(b, job, 6), typ=I32)
        traced = b.icmp_signed(">=", loop_id, ir.Constant(I32, 0))
        loop, work, done = (fn.append_basic_block(s) for s in ("loop", "work", "done"))
        b.branch(loop)
        b.position_at_end(loop)
        t = b.atomic_rmw("add", self.field(b, job, 3), ir.Constant(I64, 1), "monotonic")
        b.cbranch(b.icmp_signed("<", t, n), work, done)
        b.position_at_end(work)
        with b.if_else(traced) as (then, otherwise):
            with then:
                start = b.call(self.now, [])
                b.call(task, [t, cl])
                end = b.call(self.now, [])
                buf = b.load(self.field(b, job, 7), typ=PTR)
                b.call(self.record, [buf, start, end, worker, loop_id, t])
            with otherwise:
                b.call(task, [t, cl])
        b.atomic_rmw("sub", self.field(b, job, 4), ir.Constant(I64, 1), "acq_rel")
        b.branch(loop)
        b.position_at_end(done)
        b.ret_void()
        return fn

    def _worker(self) -> ir.Function:
        fn, b = self._fn("__relay_pool_worker", PTR, [PTR], internal=True)
        raw = b.ptrtoint(fn.args[0], I64)
        wid = b.trunc(b.and_(raw, ir.Constant(I64, 0xFFFF)), I32)
        my = b.alloca(I32, name="my_gen")
        b.store(b.trunc(b.lshr(raw, ir.Constant(I64, 16)), I32), my)
        spins = b.alloca(I32, name="spins")
        deadline = b.alloca(I64, name="deadline")
        self._pin(b, fn, wid)
        blocks = ("wait", "spin", "pause", "clock", "sleep", "got", "run", "leave", "exit")
        wait, spin, pause, clock, sleep, got, run, leave, exit_ = (
            fn.append_basic_block(s) for s in blocks
        )
        b.branch(wait)
        b.position_at_end(wait)
        b.store(ir.Constant(I32, 0), spins)
        window = self.load(b, self.spin_ns, I64, "monotonic")
        b.store(b.add(b.call(self.now, []), window), deadline)
        b.branch(spin)
        b.position_at_end(spin)
        g = self.load(b, self.gen, I32, "acquire")
        mine = b.load(my, typ=I32)
        b.cbranch(b.icmp_signed("!=", g, mine), got, pause)
        b.position_at_end(pause)
        k = b.add(b.load(spins, typ=I32), ir.Constant(I32, 1))
        b.store(k, spins)
        self.pause(b)
        every = b.and_(k, ir.Constant(I32, SPIN_CHECK - 1))
        b.cbranch(b.icmp_signed("==", every, ir.Constant(I32, 0)), clock, spin)
        b.position_at_end(clock)
        late = b.icmp_signed(">=", b.call(self.now, []), b.load(deadline, typ=I64))
        b.cbranch(late, sleep, spin)
        b.position_at_end(sleep)
        b.atomic_rmw("add", self.sleepers, ir.Constant(I32, 1), "seq_cst")
        g2 = self.load(b, self.gen, I32)
        with b.if_then(b.icmp_signed("==", g2, mine)):
            # a worker sleeps on its own bit (workers from 31 on share bit 31), so a loop
            # wakes only the workers it lets take part
            bit = b.shl(
                ir.Constant(I32, 1),
                b.select(b.icmp_signed("<", wid, ir.Constant(I32, 31)), wid, ir.Constant(I32, 31)),
            )
            self.futex(b, _FUTEX_WAIT_BITSET_PRIVATE, mine, bit)
        b.atomic_rmw("sub", self.sleepers, ir.Constant(I32, 1), "seq_cst")
        b.branch(wait)
        b.position_at_end(got)
        b.store(g, my)
        stop = self.load(b, self.shutdown, I32, "acquire")
        b.cbranch(b.icmp_signed("!=", stop, ir.Constant(I32, 0)), exit_, run)
        b.position_at_end(run)
        b.atomic_rmw("add", self.active, ir.Constant(I32, 1), "seq_cst")
        job = self.load(b, self.cur_job, PTR)
        has_job = b.icmp_unsigned("!=", b.ptrtoint(job, I64), ir.Constant(I64, 0))
        with b.if_then(has_job):
            # workers 0..allowed-1 take part, the others go back to waiting
            allowed = b.load(self.field(b, job, 5), typ=I32)
            with b.if_then(b.icmp_signed("<", wid, allowed)):
                b.call(self.run_tasks, [job, b.add(wid, ir.Constant(I32, 1))])
        b.branch(leave)
        b.position_at_end(leave)
        b.atomic_rmw("sub", self.active, ir.Constant(I32, 1), "seq_cst")
        b.branch(wait)
        b.position_at_end(exit_)
        b.ret(ir.Constant(PTR, None))
        return fn

    def _pin(self, b: ir.IRBuilder, fn: ir.Function, wid: ir.Value) -> None:
        """Worker `wid` pins itself to CPU `bind[wid] - 1` (Linux, CPUs below
        `_AFFINITY_CPUS`) when `bind[wid]` is set (`bind_threads`)."""
        if self.setaffinity is None:
            return
        words = ir.ArrayType(I64, _AFFINITY_CPUS // 64)
        mask = b.alloca(words, name="cpu_mask")
        slot = gep(b, self.bind, [ir.Constant(I32, 0), wid], self.bind.value_type)
        cpu = b.sub(b.load(slot, typ=I32), ir.Constant(I32, 1))
        ok = b.and_(
            b.icmp_signed(">=", cpu, ir.Constant(I32, 0)),
            b.icmp_signed("<", cpu, ir.Constant(I32, _AFFINITY_CPUS)),
        )
        with b.if_then(ok):
            b.store(ir.Constant(words, None), mask)
            word = b.zext(b.lshr(cpu, ir.Constant(I32, 6)), I64)
            bit = b.shl(ir.Constant(I64, 1), b.zext(b.and_(cpu, ir.Constant(I32, 63)), I64))
            b.store(bit, gep(b, mask, [ir.Constant(I32, 0), word], words))
            size = ir.Constant(I64, _AFFINITY_CPUS // 8)
            b.call(self.setaffinity, [ir.Constant(I32, 0), size, mask])

    def _start_workers(self, b: ir.IRBuilder, fn: ir.Function, want: ir.Value) -> ir.Value:
        """Create workers until there are `want`; returns how many exist."""
        loop, make, done = (fn.append_basic_block(f"start.{s}") for s in ("loop", "make", "done"))
        b.branch(loop)
        b.position_at_end(loop)
        have = b.load(self.nworkers, typ=I32)
        b.cbranch(b.icmp_signed("<", have, want), make, done)
        b.position_at_end(make)
        slot = gep(b, self.workers, [ir.Constant(I32, 0), have], self.workers.value_type)
        g = self.load(b, self.gen, I32)
        arg = b.or_(b.shl(b.zext(g, I64), ir.Constant(I64, 16)), b.zext(have, I64))
        rc = b.call(
            self.pthread_create, [slot, ir.Constant(PTR, None), self.worker, b.inttoptr(arg, PTR)]
        )
        ok = b.icmp_signed("==", rc, ir.Constant(I32, 0))
        with b.if_then(ok):
            b.store(b.add(have, ir.Constant(I32, 1)), self.nworkers)
        b.cbranch(ok, loop, done)
        b.position_at_end(done)
        return b.load(self.nworkers, typ=I32)

    def _parallel_for(self) -> None:
        """`__relay_parallel_for(task, closure, n)`: `__relay_parallel_run` on every thread
        the pool is configured for (kernels compiled before plans named the threads)."""
        fn, b = self._fn(PARALLEL_FOR, VOID, [PTR, PTR, I64])
        threads = self.call_threads(b)
        b.call(self.run, [*fn.args, threads])
        b.ret_void()

    def _parallel_run(self) -> None:
        fn, b = self._fn(PARALLEL_RUN, VOID, [PTR, PTR, I64, I32])
        self.run = fn
        task, cl, n, wanted = fn.args
        task.type = FunctionPointerType(self.task_ty)
        job = b.alloca(_JOB, name="job")
        job.align = 64
        blocks = ("serial", "serial.traced", "pooled", "done")
        serial, serial_traced, pooled, done = (fn.append_basic_block(s) for s in blocks)
        id_slot = b.alloca(I32, name="loop.id")
        start_slot = b.alloca(I64, name="loop.start")
        # With the trace on, the loop gets an id and a record of its own around its tasks'.
        tbuf = self.load(b, self.trace_buf, PTR, "acquire")
        traced = b.icmp_unsigned("!=", b.ptrtoint(tbuf, I64), ir.Constant(I64, 0))
        b.store(ir.Constant(I32, -1), id_slot)
        with b.if_then(traced):
            b.store(b.atomic_rmw("add", self.loop_seq, ir.Constant(I32, 1), "monotonic"), id_slot)
            b.store(b.call(self.now, []), start_slot)
        loop_id = b.load(id_slot, typ=I32)
        # threads: the loop's own count, at most the call's (or the pool's), at most one
        # per task
        threads = self.call_threads(b)
        threads = b.select(b.icmp_signed("<", wanted, threads), wanted, threads)
        n32 = b.trunc(b.select(b.icmp_signed("<", n, ir.Constant(I64, 1 << 30)), n,
                               ir.Constant(I64, 1 << 30)), I32)  # fmt: skip
        threads = b.select(b.icmp_signed("<", n32, threads), n32, threads)
        single = b.or_(
            b.icmp_signed("<=", n, ir.Constant(I64, 1)),
            b.icmp_signed("<=", threads, ir.Constant(I32, 1)),
        )
        try_bb, inline = fn.append_basic_block("try"), fn.append_basic_block("inline")
        b.cbranch(single, inline, try_bb)
        b.position_at_end(try_bb)
        pair = b.cmpxchg(
            self.busy, ir.Constant(I32, 0), ir.Constant(I32, 1), "acquire", "monotonic"
        )
        b.cbranch(b.extract_value(pair, 1), pooled, inline)
        b.position_at_end(inline)
        b.cbranch(traced, serial_traced, serial)
        # serial: run every task here
        b.position_at_end(serial)
        counter = self.entry_alloca(fn, I64, "t")
        b.store(ir.Constant(I64, 0), counter)
        sloop, sbody = fn.append_basic_block("serial.loop"), fn.append_basic_block("serial.body")
        b.branch(sloop)
        b.position_at_end(sloop)
        t = b.load(counter, typ=I64)
        b.cbranch(b.icmp_signed("<", t, n), sbody, done)
        b.position_at_end(sbody)
        b.call(task, [t, cl])
        b.store(b.add(t, ir.Constant(I64, 1)), counter)
        b.branch(sloop)
        # serial with the trace on: every task here, each recorded as the caller's (worker 0)
        b.position_at_end(serial_traced)
        zero = ir.Constant(I64, 0)
        for k, v in enumerate((task, cl, n, zero, n, ir.Constant(I32, 0), loop_id, tbuf)):
            b.store(v, self.field(b, job, k))
        b.call(self.run_tasks, [job, ir.Constant(I32, 0)])
        b.branch(done)
        # pooled
        b.position_at_end(pooled)
        want = b.sub(threads, ir.Constant(I32, 1))
        cap = ir.Constant(I32, MAX_WORKERS)
        want = b.select(b.icmp_signed(">", want, cap), cap, want)
        have = self._start_workers(b, fn, want)
        allowed = b.select(b.icmp_signed("<", have, want), have, want)
        for k, v in enumerate((task, cl, n, zero, n, allowed, loop_id, tbuf)):
            b.store(v, self.field(b, job, k))
        self.store(b, job, self.cur_job)
        b.atomic_rmw("add", self.gen, ir.Constant(I32, 1), "seq_cst")
        asleep = self.load(b, self.sleepers, I32)
        with b.if_then(b.icmp_signed(">", asleep, ir.Constant(I32, 0))):
            # wake at most as many sleepers as the loop takes workers
            # workers 0..allowed-1: bits 0..allowed-1 (all bits from 31 workers on)
            many = b.icmp_signed(">=", allowed, ir.Constant(I32, 31))
            low = b.sub(b.shl(ir.Constant(I32, 1), allowed), ir.Constant(I32, 1))
            mask = b.select(many, ir.Constant(I32, _ALL_BITS), low)
            self.futex(b, _FUTEX_WAKE_BITSET_PRIVATE, ir.Constant(I32, 0x7FFFFFFF), mask)
        b.call(self.run_tasks, [job, ir.Constant(I32, 0)])
        self.wait_zero(b, fn, self.field(b, job, 4), I64, "remaining")
        self.store(b, ir.Constant(PTR, None), self.cur_job)
        self.wait_zero(b, fn, self.active, I32, "active")
        self.store(b, ir.Constant(I32, 0), self.busy, "release")
        b.branch(done)
        b.position_at_end(done)
        with b.if_then(traced):
            end = b.call(self.now, [])
            start = b.load(start_slot, typ=I64)
            b.call(self.record, [tbuf, start, end, ir.Constant(I32, -1), loop_id, n])
        b.ret_void()

    def _shutdown(self) -> None:
        fn, b = self._fn("__relay_pool_shutdown", VOID, [])
        take, got = fn.append_basic_block("take"), fn.append_basic_block("got")
        yld = fn.append_basic_block("yield")
        b.branch(take)
        b.position_at_end(take)
        pair = b.cmpxchg(
            self.busy, ir.Constant(I32, 0), ir.Constant(I32, 1), "acquire", "monotonic"
        )
        b.cbranch(b.extract_value(pair, 1), got, yld)
        b.position_at_end(yld)
        b.call(self.sched_yield, [])
        b.branch(take)
        b.position_at_end(got)
        self.store(b, ir.Constant(I32, 1), self.shutdown)
        b.atomic_rmw("add", self.gen, ir.Constant(I32, 1), "seq_cst")
        all_bits = ir.Constant(I32, _ALL_BITS)
        self.futex(b, _FUTEX_WAKE_BITSET_PRIVATE, ir.Constant(I32, 0x7FFFFFFF), all_bits)
        count = b.load(self.nworkers, typ=I32)
        idx = self.entry_alloca(fn, I32, "i")
        b.store(ir.Constant(I32, 0), idx)
        loop, body, done = (fn.append_basic_block(s) for s in ("loop", "body", "done"))
        b.branch(loop)
        b.position_at_end(loop)
        i = b.load(idx, typ=I32)
        b.cbranch(b.icmp_signed("<", i, count), body, done)
        b.position_at_end(body)
        slot = gep(b, self.workers, [ir.Constant(I32, 0), i], self.workers.value_type)
        b.call(self.pthread_join, [b.load(slot, typ=I64), ir.Constant(PTR, None)])
        b.store(b.add(i, ir.Constant(I32, 1)), idx)
        b.branch(loop)
        b.position_at_end(done)
        b.store(ir.Constant(I32, 0), self.nworkers)
        self.store(b, ir.Constant(I32, 0), self.shutdown)
        self.store(b, ir.Constant(I32, 0), self.busy, "release")
        b.ret_void()

    def _after_fork(self) -> None:
        _, b = self._fn("__relay_pool_after_fork", VOID, [])
        for gv in (self.nworkers, self.sleepers, self.active, self.busy, self.shutdown):
            self.store(b, ir.Constant(I32, 0), gv)
        self.store(b, ir.Constant(PTR, None), self.cur_job)
        self.store(b, ir.Constant(PTR, None), self.trace_buf)
        b.ret_void()


class PoolRuntime:
    """The JIT-compiled pool of this process and ctypes handles to its control functions."""

    def __init__(self) -> None:
        llvm_target.initialize()
        module = _PoolBuilder().build()
        ref = llvm.parse_assembly(str(module))
        ref.verify()
        llvm_target.optimize(ref)
        self.engine = llvm.create_mcjit_compiler(ref, llvm_target.new_target_machine())
        self.engine.finalize_object()
        addr = self.engine.get_function_address
        exported = (PARALLEL_FOR, PARALLEL_RUN, NUM_THREADS, NOW_NS, ENTER, SET_CALL_THREADS)
        for name in (*exported, pool_abi.ENTER_ARRAYS):
            llvm.add_symbol(name, addr(name))
        if ctypes.CFUNCTYPE(ctypes.c_int32)(addr("__relay_pool_init"))() != 0:
            raise OSError("the thread pool cannot make its thread-specific key")
        self.enter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(addr(ENTER))
        self.set_call_threads = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(
            addr(SET_CALL_THREADS)
        )
        self.set_spin = ctypes.CFUNCTYPE(None, ctypes.c_int64)(addr("__relay_pool_set_spin"))
        self.bind = ctypes.CFUNCTYPE(None, ctypes.c_int32, ctypes.c_int32)(
            addr("__relay_pool_bind")
        )
        self.num_threads = ctypes.CFUNCTYPE(ctypes.c_int32)(addr(NUM_THREADS))
        self.set_num_threads = ctypes.CFUNCTYPE(None, ctypes.c_int32)(
            addr("__relay_set_num_threads")
        )
        self.shutdown = ctypes.CFUNCTYPE(None)(addr("__relay_pool_shutdown"))
        self.after_fork = ctypes.CFUNCTYPE(None)(addr("__relay_pool_after_fork"))
        self.parallel_for = ctypes.CFUNCTYPE(
            None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64
        )(addr(PARALLEL_FOR))
        self.now_ns = ctypes.CFUNCTYPE(ctypes.c_int64)(addr(NOW_NS))
        self.trace_start = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(
            addr("__relay_pool_trace_start")
        )
        self.trace_stop = ctypes.CFUNCTYPE(ctypes.c_int64)(addr("__relay_pool_trace_stop"))


_runtime: PoolRuntime | None = None
_lock = threading.Lock()


def default_num_threads() -> int:
    """The thread count of a pool no target has set: the CPUs this process may use."""
    return cpu_count()


def runtime() -> PoolRuntime:
    """The process's pool (compiled on first use; worker threads start on the first parallel
    loop). Registers `__relay_parallel_for`/`__relay_num_threads` for kernels to link to."""
    global _runtime
    if _runtime is not None:
        return _runtime
    with _lock:
        if _runtime is None:
            spin = os.environ.get(pool_abi.SPIN_ENV, "").strip()
            if spin:
                _spin[0] = _spin_from_text(spin)
            rt = PoolRuntime()
            rt.set_num_threads(default_num_threads())
            if os.environ.get(pool_abi.BIND_ENV, "").strip() == "1":
                _bind(rt, True)
            rt.set_spin(_spin[0])
            atexit.register(rt.shutdown)
            os.register_at_fork(after_in_child=rt.after_fork)
            _runtime = rt
    return _runtime


_spin: list[int] = [SPIN_NS]


def _spin_from_text(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(
            f"{pool_abi.SPIN_ENV} must be a whole number of nanoseconds (0 or more), got {text!r}"
        )
    return value


def set_spin_ns(ns: int) -> None:
    """Let idle workers spin for `ns` nanoseconds (0: sleep at once) before they sleep
    (`SPIN_NS` by default, or `RELAY_SPIN_NS` when the pool starts). Applies to each
    worker from the next time it starts waiting."""
    if ns < 0:
        raise ValueError(f"the spin window must be 0 or more nanoseconds, got {ns}")
    _spin[0] = int(ns)
    runtime().set_spin(int(ns))


def get_spin_ns() -> int:
    """How long idle workers spin before they sleep, in nanoseconds (`set_spin_ns`)."""
    runtime()
    return _spin[0]


def _bind(rt: PoolRuntime, on: bool) -> None:
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    for w in range(MAX_WORKERS):
        rt.bind(w, cpus[(w + 1) % len(cpus)] if on and cpus else -1)
    _bound[:] = [on and bool(cpus)]


_bound: list[bool] = [False]


def bind_threads(on: bool = True) -> None:
    """Pin each worker to a CPU of its own (on) or let them move freely (off; the default
    unless `RELAY_BIND_THREADS=1` was set when the pool started). Worker `w` takes the
    `w + 1`-th CPU this process may use, modulo their number (the calling thread, which
    runs tasks too, is left where it is: usually on the first). Running workers stop and
    the next parallel loop starts them again, pinned or not. Linux only; elsewhere a no-op."""
    rt = runtime()
    _bind(rt, on)
    rt.shutdown()


def threads_bound() -> bool:
    """Whether workers are pinned to CPUs (`bind_threads`)."""
    runtime()
    return _bound[0]


def set_call_threads(n: int) -> int:
    """Make `n` threads (0: none, the pool's count applies) the limit of parallel loops the
    calling thread runs, as a model call through `__relay_pool_enter` does; returns the
    limit before (for models stepping through kernels from Python)."""
    return int(runtime().set_call_threads(max(0, min(n, MAX_WORKERS + 1))))


def set_num_threads(n: int) -> None:
    """Use `n` threads (the caller included) for parallel loops; 1 runs them inline."""
    if n < 1:
        raise ValueError(f"the number of threads must be at least 1, got {n}")
    runtime().set_num_threads(min(n, MAX_WORKERS + 1))


def apply_target(target: Target) -> None:
    """What a model built or loaded for `target` asks of the process's pool: its thread
    count outside model calls (`set_num_threads`), and pinned workers when the target says
    `-bind-threads=1` (pinning is process-wide; a target without it leaves it as it is)."""
    set_num_threads(target.num_threads)
    if target.bind_threads and not threads_bound():
        bind_threads(True)


def get_num_threads() -> int:
    """The number of threads parallel loops use."""
    return int(runtime().num_threads())


TRACE_DTYPE = np.dtype(
    [("start", "<i8"), ("end", "<i8"), ("worker", "<i4"), ("loop", "<i4"), ("index", "<i8")]
)
"""One trace record: a task (`worker` ≥ 0, 0 the calling thread; `index` the task's number)
or a whole parallel loop (`worker` -1; `index` its task count), monotonic nanoseconds."""

_trace_buffers: list[np.ndarray] = []
_trace_on: list[bool] = []


def now_ns() -> int:
    """The clock the pool and profiling entry functions read (CLOCK_MONOTONIC, in ns: the
    same as `time.monotonic_ns()`)."""
    return int(runtime().now_ns())


def start_trace(capacity: int) -> None:
    """Record every task of every parallel loop from now on (at most `capacity` records;
    the rest are counted and dropped) until `stop_trace`. One trace at a time per process."""
    buffer = np.zeros(max(1, capacity), TRACE_DTYPE)
    assert TRACE_DTYPE.itemsize == TRACE_RECORD_BYTES
    # A loop still running in another thread may write to the last buffer after
    # `stop_trace`: buffers stay alive until the next trace starts.
    _trace_buffers[:] = [buffer]
    runtime().trace_start(buffer.ctypes.data, len(buffer))
    _trace_on[:] = [True]


def stop_trace() -> tuple[np.ndarray, int]:
    """Turn the trace off; returns the records made (loop records and task records mixed,
    in the order they were claimed) and how many were dropped for lack of room (none when
    no trace was on)."""
    if not _trace_on:
        return np.zeros(0, TRACE_DTYPE), 0
    made = int(runtime().trace_stop())
    _trace_on.clear()
    buffer = _trace_buffers[0]
    kept = min(made, len(buffer))
    return buffer[:kept].copy(), made - kept


def shutdown() -> None:
    """Stop and join the worker threads (they start again on the next parallel loop)."""
    if _runtime is not None:
        _runtime.shutdown()


__all__ = [
    "NOW_NS",
    "NUM_THREADS",
    "PARALLEL_FOR",
    "TASKS_PER_THREAD",
    "TRACE_DTYPE",
    "PoolRuntime",
    "apply_target",
    "bind_threads",
    "declare_runtime",
    "default_num_threads",
    "get_num_threads",
    "get_spin_ns",
    "now_ns",
    "runtime",
    "set_call_threads",
    "set_num_threads",
    "set_spin_ns",
    "shutdown",
    "start_trace",
    "stop_trace",
    "threads_bound",
]
