"""Compiling a library's kernels in worker processes: one library, one object file.

    library = compile_functions(funcs, entry, name, target)   # funcs: before `lower_pipeline`

Each kernel's loop-IR passes (`lower_pipeline`), LLVM IR building and LLVM optimization are
independent of the other kernels', so a big library runs them in worker processes: the
kernels are sorted by an estimate of their size (`kernel_size`, unrolled loops counted as
many times as they unroll), grouped into shares (a big kernel alone, small ones together)
and handed out largest first to whichever worker is free. A worker sends back the
object code of its share (`compile.kernel_object`: the same O3 pipeline, target machine
and code generation as in-process); the parent compiles the entry function and the
manifest into one more object and loads them all into one engine (`compile.link_objects`):
the library's object code is an archive of those objects (`compile.pack_objects`), which
the artifact stores and `load_library` loads as it does a single object. The kernels' code
is the code they get when compiled in one piece; the entry function is optimized without
the kernels' bodies, so no small kernel is inlined into it. `KernelStream` does the same
for kernels handed over while they are still being lowered, so the workers start before the
last kernel is lowered.

When it runs in parallel: with more than one CPU, and when the kernels' estimated size is at
least `PARALLEL_MIN_SIZE` (a convnet, not an MLP: below that, starting workers costs more
than it saves). Workers: at most one per CPU this process may use, per share, and
`MAX_JOBS`. `$RELAY_COMPILE_JOBS` caps the number of workers: `1` compiles in-process
always; unset, empty or `0` means automatic.

The workers (started lazily once per process, reused, stopped at exit; they exit on their
own when the parent goes away) talk length-prefixed pickles over two pipes. A process with
no Python thread but the caller forks them (`fork_is_safe`, `_Forked`): they have every
module already, so a cold build does not wait for them to import this package (0.65 s of
CPU each; ResNet-18 builds in 4.9-5.0 s instead of 5.2-5.4). Otherwise (another thread could
hold a lock inside LLVM or pickle at the fork) they are plain `python -c` subprocesses of the
same interpreter that import only this package, never the user's `__main__` (as
multiprocessing's spawn and forkserver workers would: a script without a `__main__` guard
would run again in every worker). An error a worker raises (a `CodegenError`, ...) is raised
in the parent as it would be in-process; a worker that dies is an `Error` saying so, and the
next build starts fresh workers.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import pickle
import queue
import signal
import struct
import subprocess
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Mapping, Sequence
from typing import IO, Any

from ...lang.diagnostics import Error
from ..target import Target
from ..tir.stmt import For, ForKind, PrimFunc
from ..tir.transform import lower_pipeline
from ..tir.visitor import children
from .compile import CompiledLibrary, compile_module, kernel_object, link_objects
from .entry import EntryPlan

Part = tuple[bytes, dict[str, float]]
"""What a worker answers for one share: its object code and its stage seconds."""

JOBS_ENV = "RELAY_COMPILE_JOBS"
MAX_JOBS = 8
"""The most worker processes one build uses, whatever the CPU count."""

PARALLEL_MIN_SIZE = 15_000
"""The estimated size (`kernel_size` summed) from which kernels compile in workers: about a
second and a half of compilation on one core (ResNet-18 is ~110,000, an MLP ~100)."""

SHARES_PER_JOB = 6
"""Shares per worker: enough for the largest-first hand-out to even out the estimate's
errors, few enough that linking the parts costs little."""


def kernel_size(func: PrimFunc) -> int:
    """An estimate of the work of compiling `func` (before `lower_pipeline`): its loop-IR
    nodes, those in an unrolled loop of constant extent counted once per iteration."""
    total = 0
    stack: list[tuple[Any, int]] = [(func.body, 1)]
    while stack:
        node, weight = stack.pop()
        total += weight
        inner = weight
        if isinstance(node, For) and node.kind is ForKind.UNROLLED:
            extent = getattr(node.extent, "value", None)
            if isinstance(extent, int) and extent > 1:
                inner = weight * extent
        for child in children(node):
            stack.append((child, inner if child is getattr(node, "body", None) else weight))
    return total


def jobs_setting() -> int:
    """`$RELAY_COMPILE_JOBS` as a cap on the workers (0: automatic); an `Error` when it is
    not a non-negative integer."""
    raw = os.environ.get(JOBS_ENV, "").strip()
    if not raw:
        return 0
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise Error(
            f"${JOBS_ENV} must be a number of worker processes (1: compile in-process, "
            f"0: automatic), not `{raw}`"
        )
    return value


def available_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def shares(sizes: Sequence[int], count: int) -> list[list[int]]:
    """The kernel indices grouped into about `count` shares of similar estimated size,
    largest share first: kernels in decreasing size, a share closed once it reaches its
    part of the total."""
    order = sorted(range(len(sizes)), key=lambda k: -sizes[k])
    quota = max(1, sum(sizes) // max(1, count))
    groups: list[list[int]] = []
    current: list[int] = []
    filled = 0
    for k in order:
        current.append(k)
        filled += sizes[k]
        if filled >= quota:
            groups.append(current)
            current, filled = [], 0
    if current:
        groups.append(current)
    return groups


def worker_count(sizes: Sequence[int], jobs: int | None = None) -> int:
    """How many workers compile kernels of these estimated sizes: `jobs` when given (at
    most one per kernel), else 1 below `PARALLEL_MIN_SIZE`, else one per CPU up to
    `MAX_JOBS` and `$RELAY_COMPILE_JOBS`."""
    if jobs is not None:
        return max(1, min(jobs, len(sizes)))
    cap = jobs_setting()
    if cap == 1 or sum(sizes) < PARALLEL_MIN_SIZE:
        return 1
    n = min(available_cpus(), MAX_JOBS, len(sizes))
    return max(1, min(n, cap) if cap else n)


def compile_functions(
    funcs: Sequence[PrimFunc],
    entry: EntryPlan | None = None,
    name: str = "relay_module",
    target: Target | None = None,
    profiled: bool = True,
    seconds: dict[str, float] | None = None,
    jobs: int | None = None,
) -> CompiledLibrary:
    """The library of kernels `funcs` (before `lower_pipeline`) and `entry`, compiled in
    worker processes when they are big enough (module docstring; `jobs` forces that many
    workers, 1 in-process). Stage times go into `seconds`: in-process `tir`, then
    `llvm-ir`, `llvm-opt`, `machine-code` and `load` (their sum is `codegen`); in parallel
    `tir+opt` (the workers' wall time; `workers.tir`, `workers.llvm-ir`, `workers.llvm-opt`
    and `workers.machine-code` sum the workers' CPU time per stage), then `link`,
    `machine-code` (the entry's object) and `load` in this process (their sum is
    `codegen`)."""
    seconds = seconds if seconds is not None else {}
    sizes = [kernel_size(f) for f in funcs]
    n = worker_count(sizes, jobs)
    start = time.perf_counter()
    if n <= 1:
        lowered = [lower_pipeline(f) for f in funcs]
        seconds["tir"] = time.perf_counter() - start
        start = time.perf_counter()
        library = compile_module(
            lowered, entry=entry, name=name, target=target, profiled=profiled, seconds=seconds
        )
        seconds["codegen"] = time.perf_counter() - start
        return library
    groups = shares(sizes, n * SHARES_PER_JOB)
    tasks = _pickled(
        [([funcs[k] for k in group], f"{name}.part{i}", target) for i, group in enumerate(groups)]
    )
    if tasks is None:  # a value that does not pickle: compile here
        return compile_functions(funcs, entry, name, target, profiled, seconds, jobs=1)
    replies = run_in_workers(min(n, len(groups)), tasks)
    seconds["tir+opt"] = time.perf_counter() - start
    _add_worker_seconds(seconds, replies)
    start = time.perf_counter()
    parts = [obj for obj, _ in replies]
    library = link_objects(
        parts, funcs, entry, name, target=target, profiled=profiled, seconds=seconds
    )
    seconds["codegen"] = time.perf_counter() - start
    return library


STREAM_SHARE_SIZE = 8_000
"""The estimated size of a share `KernelStream` sends while kernels are still being lowered
(ResNet-18's ~110,000 make about 14 shares)."""


class KernelStream:
    """Kernels handed to the compile workers as they are lowered, so that the workers'
    loop-IR passes and LLVM overlap the lowering of the next kernels (on two cores the
    second one is otherwise idle while the parent lowers):

        with KernelStream(name, target) as stream:
            for func in lowered_kernels:          # provisional names, without dots
                stream.add(func)
            library = stream.finish(funcs, renames, entry)   # final names

    Kernels are buffered until their estimated size reaches `PARALLEL_MIN_SIZE` (below it
    `finish` compiles in-process, as `compile_functions` does); from then on a share is
    sent whenever `STREAM_SHARE_SIZE` of kernels wait, and `finish` sends the rest largest
    first and loads the parts' objects with the entry's (renaming each kernel's symbols
    from its provisional name to its final one), as `compile_functions` does. The shares depend
    only on the kernels and their order, never on timing, so builds stay deterministic.
    Leaving the `with` block without `finish` (an error while lowering) stops the workers."""

    def __init__(self, name: str, target: Target | None) -> None:
        self.name = name
        self.target = target
        self.funcs: list[PrimFunc] = []
        self.sizes: list[int] = []
        self.waiting: list[int] = []
        self.sent = 0
        self.batch: _Batch | None = None
        self.unpicklable = False

    def __enter__(self) -> KernelStream:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.batch is not None:  # not finished: nobody will read the answers
            batch, self.batch = self.batch, None
            try:
                batch.pool.stop()
                with contextlib.suppress(Exception):  # the stopped workers
                    batch.close()
            finally:
                _lock.release()

    def add(self, func: PrimFunc) -> None:
        """Hand over one more kernel (before `lower_pipeline`)."""
        self.funcs.append(func)
        self.sizes.append(kernel_size(func))
        self.waiting.append(len(self.funcs) - 1)
        if self.batch is None:
            n = worker_count([PARALLEL_MIN_SIZE] * MAX_JOBS) if self._big() else 1
            if n <= 1:
                return
            _lock.acquire()
            try:
                pool = _pool()
                pool.grow(n)
                self.batch = _Batch(pool, n)
            except BaseException:
                _lock.release()
                raise
        self._send(final=False)

    def _big(self) -> bool:
        return sum(self.sizes) >= PARALLEL_MIN_SIZE

    def _send(self, final: bool) -> None:
        """Send the waiting kernels in shares of about `STREAM_SHARE_SIZE` (before the
        last kernel, a share not yet full keeps waiting)."""
        assert self.batch is not None
        total = sum(self.sizes[k] for k in self.waiting)
        if self.unpicklable or (not final and total < STREAM_SHARE_SIZE):
            return
        count = max(1, -(-total // STREAM_SHARE_SIZE) if final else total // STREAM_SHARE_SIZE)
        groups = shares([self.sizes[k] for k in self.waiting], count)
        keep: list[int] = []
        if not final and sum(self.sizes[self.waiting[i]] for i in groups[-1]) < STREAM_SHARE_SIZE:
            keep = [self.waiting[i] for i in groups.pop()]
        for group in groups:
            funcs = [self.funcs[self.waiting[i]] for i in group]
            task = _pickled([(funcs, f"{self.name}.part{self.sent}", self.target)])
            if task is None:  # a value that does not pickle: `finish` compiles here
                self.unpicklable = True
                return
            self.batch.submit(self.sent, task[0])
            self.sent += 1
        self.waiting = keep

    def finish(
        self,
        funcs: Sequence[PrimFunc],
        renames: Mapping[str, str],
        entry: EntryPlan | None = None,
        profiled: bool = True,
        seconds: dict[str, float] | None = None,
    ) -> CompiledLibrary:
        """The library of the added kernels, named as in `funcs` (the added kernels with
        their final names; `renames` maps each provisional name to its final one) with
        `entry`; stage times go into `seconds` as in `compile_functions` (`tir+opt` is the
        wait for the workers after the last kernel was added)."""
        seconds = seconds if seconds is not None else {}
        if self.batch is None:
            return compile_functions(funcs, entry, self.name, self.target, profiled, seconds)
        start = time.perf_counter()
        self._send(final=True)
        batch, self.batch = self.batch, None
        try:
            replies = batch.close()
        finally:
            _lock.release()
        if self.unpicklable:
            return compile_functions(funcs, entry, self.name, self.target, profiled, seconds, 1)
        seconds["tir+opt"] = time.perf_counter() - start
        _add_worker_seconds(seconds, replies)
        start = time.perf_counter()
        library = link_objects(
            [obj for obj, _ in replies],
            funcs,
            entry,
            self.name,
            target=self.target,
            profiled=profiled,
            seconds=seconds,
            renames=renames,
        )
        seconds["codegen"] = time.perf_counter() - start
        return library


def _add_worker_seconds(seconds: dict[str, float], replies: Sequence[Part]) -> None:
    for _, part_seconds in replies:
        for stage, s in part_seconds.items():
            seconds[f"workers.{stage}"] = seconds.get(f"workers.{stage}", 0.0) + s


def _pickled(tasks: Sequence[Any]) -> list[bytes] | None:
    """Each task pickled, or None when one does not pickle (an attribute value of a type
    pickle cannot rebuild, a tree too deep for pickle's recursion)."""
    try:
        return [pickle.dumps(t, protocol=pickle.HIGHEST_PROTOCOL) for t in tasks]
    except (pickle.PicklingError, RecursionError, TypeError, AttributeError):
        return None


def compile_part(
    funcs: Sequence[PrimFunc], name: str, target: Target | None
) -> tuple[bytes, dict[str, float]]:
    """What a worker does with one share: the loop-IR passes, then `kernel_object`; the
    object code and the CPU seconds of each stage (`tir`, `llvm-ir`, `llvm-opt`,
    `machine-code`: CPU time, so that the figures mean the same when other processes share
    the cores)."""
    seconds: dict[str, float] = {}
    start = time.process_time()
    lowered = [lower_pipeline(f) for f in funcs]
    seconds["tir"] = time.process_time() - start
    obj = kernel_object(lowered, name, target=target, seconds=seconds, clock=time.process_time)
    return obj, seconds


# --- the worker processes ------------------------------------------------------------------

_HEADER = struct.Struct("<Q")


def _send(stream: IO[bytes], data: bytes) -> None:
    """Write one message (`data`, a pickle) to `stream`."""
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _receive(stream: IO[bytes]) -> Any:
    """The next message on `stream`; EOFError when the other side is gone."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise EOFError
    (size,) = _HEADER.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)


def serve() -> None:
    """A worker's loop: read `(funcs, name, target)` shares from stdin until EOF, answer each
    with `("ok", (object code, seconds))` or `("error", exception, traceback text)` on the
    original stdout (anything else printed goes to stderr)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = os.fdopen(os.dup(0), "rb")  # not `sys.stdin`: a forked worker's is the parent's
    while True:
        try:
            task = _receive(requests)
        except EOFError:
            return
        try:
            reply: tuple[Any, ...] = ("ok", compile_part(*task))
        except Exception as exc:  # every failure goes back to the parent
            reply = ("error", _portable(exc), traceback.format_exc())
        _send(replies, pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL))


def _portable(exc: Exception) -> Exception:
    """`exc` if it survives pickling, else a RuntimeError with its type and message."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


_BOOT = (
    "import importlib, json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
    "importlib.import_module(sys.argv[2]).serve()"
)


class WorkerDied(Error):
    """A compile worker process ended without answering."""


FORK = True
"""Whether a process with no other Python thread forks its workers (`_Forked`) rather than
starting new interpreters that import this package (0.65 s of CPU per worker, which a cold
build of ResNet-18 waits for)."""


def fork_is_safe() -> bool:
    """Whether forking a worker from this process is safe: no Python thread but this one,
    so no other thread can be inside LLVM, pickle or this package's locks at the fork. Native
    threads (OpenBLAS's, the kernels' thread pool) run no code the worker uses: its LLVM
    calls are made from Python, and malloc's locks are reset by the C library at a fork."""
    return FORK and hasattr(os, "fork") and threading.active_count() == 1


class _Forked:
    """A worker forked from this process: it has every module this process imported, so it
    starts at once. Only forked when `fork_is_safe`; it closes every inherited descriptor
    but its two pipes and stderr, and leaves through `os._exit` (no `atexit` handler, no
    buffered output of this process flushed twice). Offers the part of `subprocess.Popen`
    that `_Worker` uses."""

    def __init__(self) -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        requests_r, requests_w = os.pipe()
        replies_r, replies_w = os.pipe()
        with warnings.catch_warnings():  # Python 3.12+ warns of other (native) threads
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the worker
            code = 0
            try:
                os.dup2(requests_r, 0)
                os.dup2(replies_w, 1)
                for fd in _open_descriptors():
                    if fd > 2:
                        with contextlib.suppress(OSError):
                            os.close(fd)
                serve()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                code = 1
                with contextlib.suppress(Exception):
                    traceback.print_exc()
            finally:
                os._exit(code)
        os.close(requests_r)
        os.close(replies_w)
        self.pid = pid
        self.stdin: IO[bytes] | None = os.fdopen(requests_w, "wb")
        self.stdout: IO[bytes] | None = os.fdopen(replies_r, "rb")
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """The worker's exit code, or None while it runs."""
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """The worker's exit code once it ended; `subprocess.TimeoutExpired` after
        `timeout` seconds."""
        if timeout is None and self.returncode is None:
            self.returncode = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        deadline = time.monotonic() + (timeout or 0.0)
        while (code := self.poll()) is None:
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"compile worker {self.pid}", timeout or 0.0)
            time.sleep(0.005)
        return code

    def kill(self) -> None:
        """Kill the worker (SIGKILL)."""
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


def _open_descriptors() -> list[int]:
    """This process's open file descriptors."""
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 1024))


class _Worker:
    def __init__(self) -> None:
        self.process: _Forked | subprocess.Popen[bytes]
        if fork_is_safe():
            self.process = _Forked()
            return
        paths = [p for p in sys.path if p]
        self.process = subprocess.Popen(
            [sys.executable, "-c", _BOOT, json.dumps(paths), __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )

    def ask(self, task: bytes) -> Any:
        """The reply of the worker to `task` (pickled); `WorkerDied` when it is gone."""
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        try:
            _send(stdin, task)
            return _receive(stdout)
        except (EOFError, BrokenPipeError, OSError):
            code = self.process.wait()
            raise WorkerDied(
                f"a compile worker process ended without answering (exit code {code}); "
                f"set ${JOBS_ENV}=1 to compile in this process"
            ) from None

    def stop(self) -> None:
        """Close the worker's stdin (it exits), killing it if it does not within a second."""
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
            self.process.wait(timeout=1.0)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


class _Pool:
    """Worker processes of this process, started as needed, one build at a time."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.workers: list[_Worker] = []

    def grow(self, n: int) -> None:
        while len(self.workers) < n:
            self.workers.append(_Worker())

    def run(self, tasks: Sequence[bytes], n: int) -> list[Part]:
        """The reply of each task (in order), handed out in order to whichever of the
        first `n` workers is free; the first failure is raised once every worker stopped."""
        batch = _Batch(self, min(n, len(tasks)))
        for k, task in enumerate(tasks):
            batch.submit(k, task)
        return batch.close()

    def stop(self) -> None:
        """Stop every worker (the pool then starts new ones when asked)."""
        workers, self.workers = self.workers, []
        for w in workers:
            w.stop()


class _Batch:
    """Tasks handed out, as they are submitted, to whichever of the first `n` workers of
    `pool` is free (one thread per worker drives it); `close` waits for every reply."""

    def __init__(self, pool: _Pool, n: int) -> None:
        self.pool = pool
        self.tasks: queue.SimpleQueue[tuple[int, bytes] | None] = queue.SimpleQueue()
        self.results: dict[int, Part] = {}
        self.failures: list[BaseException] = []
        self.guard = threading.Lock()
        self.threads = [
            threading.Thread(target=self._drive, args=(w,), daemon=True)
            for w in pool.workers[: max(1, n)]
        ]
        for t in self.threads:
            t.start()

    def submit(self, k: int, task: bytes) -> None:
        """Hand out task number `k` (a pickle)."""
        self.tasks.put((k, task))

    def _drive(self, worker: _Worker) -> None:
        while True:
            item = self.tasks.get()
            if item is None:
                return
            if self.failures:
                continue  # a task failed: the others are skipped
            k, task = item
            try:
                reply = worker.ask(task)
            except BaseException as exc:  # raised by `close`
                with self.guard:
                    self.failures.append(exc)
                return
            if reply[0] == "ok":
                self.results[k] = reply[1]
                continue
            error: BaseException = reply[1]
            if not isinstance(error, Error) and hasattr(error, "add_note"):
                error.add_note(f"in a compile worker process:\n{reply[2]}")
            with self.guard:
                self.failures.append(error)

    def close(self) -> list[Part]:
        """The replies in task order, once every task is answered; the first failure is
        raised instead (the pool stopped when a worker died or the wait was interrupted)."""
        for _ in self.threads:
            self.tasks.put(None)
        try:
            for t in self.threads:
                t.join()
        except BaseException:
            self.pool.stop()  # interrupted: the workers' answers will never be read
            raise
        if self.failures:
            if any(isinstance(f, WorkerDied) for f in self.failures):
                self.pool.stop()
            raise self.failures[0]
        return [self.results[k] for k in sorted(self.results)]


_lock = threading.Lock()
_current: _Pool | None = None


def _pool() -> _Pool:
    """This process's pool (call with `_lock` held)."""
    global _current
    if _current is None or _current.pid != os.getpid():
        _current = _Pool()  # none yet, or inherited through fork: not ours to use
    return _current


def run_in_workers(n: int, tasks: Sequence[bytes]) -> list[Part]:
    """The object code and stage seconds of each task (a pickled `(funcs, name, target)`, in
    order) from the process's worker pool, started or grown to `n` workers first; one
    build at a time."""
    with _lock:
        pool = _pool()
        pool.grow(n)
        return pool.run(tasks, n)


def start_workers(n: int | None = None) -> int:
    """Start the compile workers a big build will use now, without waiting for them, so
    that their start-up (importing this package) overlaps the build's optimization and
    lowering; `n` workers, default as many as `worker_count` gives a big library. Returns
    how many are running (0 when builds compile in-process: one CPU, or
    `$RELAY_COMPILE_JOBS=1`)."""
    if n is None:
        cap = jobs_setting()
        n = 1 if cap == 1 else min(available_cpus(), MAX_JOBS, cap or MAX_JOBS)
    if n <= 1:
        return 0
    if not _lock.acquire(blocking=False):
        return 0  # a build is using the pool
    try:
        pool = _pool()
        pool.grow(n)
        return len(pool.workers)
    finally:
        _lock.release()


def stop_workers() -> None:
    """Stop this process's compile workers (a later parallel build starts new ones)."""
    with _lock:
        if _current is not None and _current.pid == os.getpid():
            _current.stop()


atexit.register(stop_workers)


__all__ = [
    "JOBS_ENV",
    "MAX_JOBS",
    "PARALLEL_MIN_SIZE",
    "STREAM_SHARE_SIZE",
    "KernelStream",
    "WorkerDied",
    "available_cpus",
    "compile_functions",
    "compile_part",
    "jobs_setting",
    "kernel_size",
    "run_in_workers",
    "serve",
    "shares",
    "start_workers",
    "stop_workers",
    "worker_count",
]
