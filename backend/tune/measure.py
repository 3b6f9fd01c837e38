"""Measuring candidate configs of a task in a worker process, with timeouts.

    results = measure(task, configs, MeasureOptions(number=5, repeat=3, timeout=60))
    results[0].cost          # seconds per call of the fastest round, or None
    results[0].error         # None, or why the config is unusable (never chosen)

Each config is built and timed in a worker process (`Measurer`: a plain `python -c`
subprocess of this interpreter, reused between configs, talking length-prefixed pickles
over its stdin/stdout). The worker compiles the task's kernel as a one-kernel graph plan
(`compile_plan` with the config: the weights folded exactly as the model's build folds
them), runs it once on seeded random inputs and compares the outputs with the interpreter
running the fused Relay function (the numpy oracle; one reference per task, kept by the
worker), then runs it untimed for `warmup_ms` and times `repeat` rounds of `number` calls
each (`number` grows until a round takes `min_repeat_ms`; `flush_cache` overwrites a buffer
larger than the last-level cache before each round). The costs are seconds per call, one
per round; the times include `CompiledModel.run`'s call overhead (~10 us), the same for
every config.

A config that fails is a result with `error` set and no cost: `build` (lowering or code
generation raised), `wrong` (outputs differ from the interpreter), `crash` (the worker
died: a segfault, an abort), `timeout` (no answer within `timeout` seconds of the request,
a new worker's start-up not counted: the worker is killed). A dead or killed worker is
replaced for the next config; the tuner goes on.

`faults` (for tests) makes the worker misbehave on given configs: `"crash"` (SIGSEGV),
`"hang"` (sleeps), `"wrong"` (perturbs the outputs before the check).

Several workers may build at once while only one times (`executors.LocalExecutor` with
`workers > 1`: a build takes 1-3 s and the timing ~0.1 s, so on two cores two workers
nearly halve a run): each worker takes a lock file (`TIMING_LOCK_ENV`) shared while it
lowers, compiles and computes the reference, exclusive while it checks and times, so no
timing overlaps another worker's build or timing.

A result's `host` is the measuring machine's `host_description` when that is not this one
(a Ray node: `ray_executor`); the log records it. `executors` puts this worker behind the
`Executor` protocol the tuner uses, next to measurement on a Ray cluster.
"""

from __future__ import annotations

import json
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import IO, Any

import numpy as np
from attrs import field, frozen

from ...lang.types import TensorType, TupleType, Type, leaf_types
from ..target import Target
from .space import Config
from .task import Task


@frozen
class MeasureOptions:
    """How candidates are timed: `repeat` rounds of `number` calls (at least `min_repeat_ms`
    per round) after untimed calls for `warmup_ms` (at least one: a worker that sat idle
    while the tuner searched ran its first calls up to 2x slower, in-process after a 2 s
    sleep), `timeout` seconds per config (build, check and timing), `check` against
    the interpreter, `flush_cache` before each round; `clock` is `wall` (elapsed time) or
    `cpu` (the worker's CPU time: for a one-thread kernel, time that other processes on a
    shared machine do not inflate; for a parallel one, the work of all its threads)."""

    number: int = 3
    repeat: int = 3
    min_repeat_ms: float = 0.0
    warmup_ms: float = 10.0
    timeout: float = 60.0
    check: bool = True
    flush_cache: bool = False
    rtol: float = 1e-3
    clock: str = field(default="wall")

    @clock.validator
    def _known_clock(self, _attribute: Any, value: str) -> None:
        if value not in CLOCKS:
            raise ValueError(f"unknown clock {value!r} (wall or cpu)")


@frozen
class MeasureResult:
    """One config's measurement: `costs` (seconds per call, one per round) or `error`
    (`error_kind`: build, wrong, crash, timeout); `trace` is the schedule's trace text;
    `build_seconds` the worker's compile time; `checked` whether outputs were compared;
    `host` the measuring machine's `host_description` (None: this machine)."""

    config: Config
    costs: tuple[float, ...] = ()
    error: str | None = None
    error_kind: str | None = None
    trace: str = ""
    build_seconds: float = 0.0
    checked: bool = False
    timestamp: float = field(factory=time.time)
    host: dict[str, Any] | None = None

    @property
    def cost(self) -> float | None:
        """The seconds per call of the fastest round; None for an error. The fastest, not
        the median: on a shared machine a round's time only ever grows (a preempted
        thread holds up a whole parallel loop: rounds of one config measured 0.69, 14.3
        and 0.77 ms at load 10 on 2 cores), so the minimum is the least noisy estimate."""
        if self.error is not None or not self.costs:
            return None
        return float(min(self.costs))


# ---------------------------------------------------------------- inputs and the oracle


def _flat_types(ty: Type) -> list[TensorType]:
    out: list[TensorType] = []
    for t in leaf_types(ty):
        if not isinstance(t, TensorType):
            raise ValueError(f"a kernel parameter of type {t} cannot be measured")
        out.append(t)
    return out


def random_array(ty: TensorType, rng: np.random.Generator) -> np.ndarray:
    """Seeded data of a tensor type: normal floats, small integers, random booleans."""
    from ...lang.dtype import numpy_dtype

    shape = tuple(int(d) for d in ty.shape)  # type: ignore[arg-type]
    dt = numpy_dtype(ty.dtype)
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(dt)
    if dt.kind == "u":
        return rng.integers(0, 8, shape).astype(dt)
    return rng.integers(-4, 5, shape).astype(dt)


def kernel_inputs(task: Task, seed: int = 0) -> list[np.ndarray]:
    """Seeded random data for every (flattened) parameter of the task's kernel."""
    rng = np.random.default_rng(seed)
    types = [t for p in task.fn.params for t in _flat_types(_param_type(p))]
    return [random_array(t, rng) for t in types]


def _param_type(p: Any) -> Type:
    if p.type_annotation is None:
        raise ValueError(f"kernel parameter %{p.name_hint} has no type")
    return p.type_annotation  # type: ignore[no-any-return]


def reference_outputs(task: Task, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The interpreter's results of the task's fused function on `inputs` (flattened)."""
    from ...lang.module import IRModule
    from ...lang.tuples import tuple_leaves
    from ..runtime.interpreter import Interpreter
    from ..runtime.values import Closure

    flat = iter(inputs)
    args = [_rebuild(_param_type(p), flat) for p in task.fn.params]
    result = Interpreter(IRModule()).call(Closure(task.fn, None, None), args)
    return [np.asarray(v) for v in tuple_leaves(result)]


def _rebuild(ty: Type, flat: Any) -> Any:
    if isinstance(ty, TupleType):
        return tuple(_rebuild(f, flat) for f in ty.fields)
    return next(flat)


def one_kernel_model(task: Task, config: Config | None, inputs: Sequence[np.ndarray]) -> Any:
    """The task's kernel compiled alone (a one-step graph plan) with `config`: the
    parameters the model's build folds are constants here (`inputs`' values), the others
    inputs of the model, in order."""
    from ..build.compile_plan import compile_plan
    from ..runtime.plan import GraphPlan, KernelStep, Slot

    folded = set(task.constant_params or ())
    slots: list[Slot] = []
    constants: list[np.ndarray] = []
    names: list[str] = []
    input_slots: list[int] = []
    for k, arr in enumerate(inputs):
        shape, dtype = tuple(arr.shape), str(arr.dtype) if arr.dtype != np.bool_ else "bool"
        if k in folded:
            slots.append(Slot(shape, dtype, "constant", len(constants)))
            constants.append(arr)
        else:
            slots.append(Slot(shape, dtype, "input", len(names)))
            input_slots.append(k)
            names.append(f"in{k}")
    ret = task.fn.ret_type
    if ret is None:
        from ...typecheck import infer_expr

        ret = infer_expr(task.fn).type_of(task.fn).ret_type  # type: ignore[attr-defined]
    outs = []
    for t in _flat_types(ret):
        outs.append(len(slots))
        slots.append(Slot(tuple(int(d) for d in t.shape), t.dtype, "kernel"))  # type: ignore[arg-type]
    plan = GraphPlan(
        slots=tuple(slots),
        kernels=(task.fn,),
        constants=tuple(constants),
        steps=(KernelStep(0, tuple(range(len(inputs))), tuple(outs)),),
        input_names=tuple(names),
        input_slots=tuple(input_slots),
        output=outs[0] if len(outs) == 1 else tuple(outs),
    )
    knobs = config.as_dict() if config is not None else None
    model = compile_plan(plan, task.target, name="tune", configs=lambda fn, cp: knobs)
    return model, [inputs[k] for k in input_slots]


# ------------------------------------------------------------------------- the worker


def _compare(outs: Sequence[np.ndarray], refs: Sequence[np.ndarray], rtol: float) -> str | None:
    """None when `outs` match `refs`, else what differs."""
    if len(outs) != len(refs):
        return f"{len(outs)} outputs, the interpreter gives {len(refs)}"
    for j, (o, r) in enumerate(zip(outs, refs)):
        if o.shape != r.shape:
            return f"output {j} has shape {o.shape}, the interpreter's {r.shape}"
        if o.dtype.kind == "f":
            scale = float(np.max(np.abs(r))) if r.size else 0.0
            bad = ~np.isclose(o, r, rtol=rtol, atol=rtol * max(1.0, scale), equal_nan=True)
        else:
            bad = o != r
        if np.any(bad):
            worst = int(np.argmax(bad.reshape(-1)))
            return (
                f"output {j} differs from the interpreter at {int(np.sum(bad))} of {o.size} "
                f"elements (first at flat index {worst}: {o.reshape(-1)[worst]!r} vs "
                f"{r.reshape(-1)[worst]!r})"
            )
    return None


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
"""`MeasureOptions.clock` values and the clock each one reads."""


def _time_model(model: Any, args: Sequence[np.ndarray], opts: MeasureOptions) -> list[float]:
    clock = CLOCKS[opts.clock]
    number = max(1, opts.number)
    flush = np.zeros(64 * 1024 * 1024 // 8) if opts.flush_cache else None
    warm_until = time.perf_counter() + opts.warmup_ms / 1000
    while True:
        model.run(*args)
        if time.perf_counter() >= warm_until:
            break
    if opts.min_repeat_ms > 0:
        while True:
            start = clock()
            for _ in range(number):
                model.run(*args)
            if (clock() - start) * 1000 >= opts.min_repeat_ms or number >= 1 << 20:
                break
            number *= 2
    costs = []
    for _ in range(max(1, opts.repeat)):
        if flush is not None:
            flush += 1.0
        start = clock()
        for _ in range(number):
            model.run(*args)
        costs.append((clock() - start) / number)
    return costs


def _fault(kind: str | None) -> None:
    if kind == "crash":
        import ctypes

        ctypes.string_at(0)  # a segmentation fault
    elif kind == "hang":
        time.sleep(1e6)


TIMING_LOCK_ENV = "RELAY_TUNE_TIMING_LOCK"
"""The lock file workers building side by side share (module docstring); unset: no lock."""

_lock_files: dict[str, IO[str]] = {}


@contextmanager
def _flocked(handle: IO[str], exclusive: bool) -> Iterator[None]:
    """Hold `handle`'s file lock, exclusive or shared, for the block."""
    import fcntl

    fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def _phase(exclusive: bool) -> Iterator[None]:
    """Hold the workers' lock (`TIMING_LOCK_ENV`) shared or exclusive for the block."""
    path = os.environ.get(TIMING_LOCK_ENV)
    if not path:
        yield
        return
    handle = _lock_files.get(path)
    if handle is None:
        handle = _lock_files[path] = open(path, "a", encoding="utf-8")  # noqa: SIM115
    with _flocked(handle, exclusive):
        yield


@contextmanager
def _holding_shared(path: str | None) -> Iterator[None]:
    """Hold the workers' lock file shared for the block (through a descriptor of its own,
    so that it is a holder of its own); nothing when `path` is None."""
    if path is None:
        yield
        return
    with open(path, "a", encoding="utf-8") as handle, _flocked(handle, exclusive=False):
        yield


def measure_here(
    task: Task,
    config: Config,
    opts: MeasureOptions,
    refs: dict[str, list[np.ndarray]] | None = None,
    fault: str | None = None,
) -> MeasureResult:
    """Build, check and time `config` in this process (what a worker does for one request)."""
    with _phase(exclusive=False):
        inputs = kernel_inputs(task)
        start = time.perf_counter()
        try:
            trace = task.lowered(config).trace
            model, args = one_kernel_model(task, config, inputs)
        except Exception as exc:  # any failure of lowering or codegen is the config's error
            return MeasureResult(config, error=f"{type(exc).__name__}: {exc}", error_kind="build")
        built = time.perf_counter() - start
        trace_text = trace.to_text() if trace is not None else ""
        refs = refs if refs is not None else {}
        if opts.check and task.key not in refs:
            refs[task.key] = reference_outputs(task, inputs)
    _fault(fault)  # holding no lock, as a hung or dead worker should hold none
    with _phase(exclusive=True):
        ref = refs.get(task.key)
        return _check_and_time(config, model, args, opts, ref, fault, trace_text, built)


def _check_and_time(
    config: Config,
    model: Any,
    args: Sequence[np.ndarray],
    opts: MeasureOptions,
    ref: list[np.ndarray] | None,
    fault: str | None,
    trace_text: str,
    built: float,
) -> MeasureResult:
    """`measure_here`'s second half: the outputs compared with `ref`, then the timing."""
    checked = False
    if opts.check and ref is not None:
        result = model.run(*args)
        outs = [np.asarray(result)] if not isinstance(result, tuple) else _leaves(result)
        if fault == "wrong":
            outs = [o + 1 if o.dtype.kind != "b" else ~o for o in outs]
        problem = _compare(outs, ref, opts.rtol)
        if problem is not None:
            return MeasureResult(config, error=problem, error_kind="wrong", trace=trace_text,
                                 build_seconds=built)  # fmt: skip
        checked = True
    costs = _time_model(model, args, opts)
    return MeasureResult(
        config, tuple(costs), trace=trace_text, build_seconds=built, checked=checked
    )


def _leaves(value: Any) -> list[np.ndarray]:
    from ...lang.tuples import tuple_leaves

    return [np.asarray(v) for v in tuple_leaves(value)]


_HEADER = struct.Struct("<Q")


def dumps(value: Any) -> bytes:
    """`value` pickled with operators by name (an `Op` is a registered singleton: the
    worker must get its own, which the operator tables are keyed by)."""
    import io

    from ...lang.op import Op

    class _Pickler(pickle.Pickler):
        def persistent_id(self, obj: Any) -> Any:
            return ("op", obj.name) if isinstance(obj, Op) else None

    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buffer.getvalue()


def loads(data: bytes) -> Any:
    """A value `dumps` pickled, its operators the registered ones."""
    import io

    from ...lang.op import get_op

    class _Unpickler(pickle.Unpickler):
        def persistent_load(self, pid: Any) -> Any:
            kind, name = pid
            if kind != "op":
                raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")
            return get_op(name)

    return _Unpickler(io.BytesIO(data)).load()


def _send(stream: IO[bytes], data: bytes) -> None:
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _read_exact(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if data is None or len(data) < size:
        raise EOFError
    return data


def serve() -> None:
    """A measurement worker's loop: read `(task, config, options, fault)` requests from
    stdin until EOF, answer each with a `MeasureResult` on the original stdout (anything
    printed goes to stderr)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    replies.write(_READY)  # booted: configs' timeouts count from here
    replies.flush()
    requests = sys.stdin.buffer
    refs: dict[str, list[np.ndarray]] = {}
    while True:
        try:
            (size,) = _HEADER.unpack(_read_exact(requests, _HEADER.size))
            task, config, opts, fault = loads(_read_exact(requests, size))
        except EOFError:
            return
        try:
            result = measure_here(task, config, opts, refs, fault)
        except Exception as exc:
            result = MeasureResult(
                config,
                error=f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}",
                error_kind="build",
            )
        _send(replies, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))


_SERIAL_BLAS = {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
"""A worker's numpy runs on one thread: BLAS threads left spinning after the interpreter's
reference outputs took a core from the timing of a task's first config (the default was
measured 2-4x slower than in a model until this was set)."""

_READY = b"R"
"""The byte a worker writes once it has started and imported relay."""

BOOT_TIMEOUT = 300.0
"""Seconds a new worker may take to start (its imports), apart from any config's timeout."""

_BOOT = (
    "import importlib, json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
    "importlib.import_module(sys.argv[2]).serve()"
)


class Measurer:
    """One worker process measuring configs one at a time, restarted after it dies or
    hangs; `timing_lock` is the lock file it shares with other workers (module
    docstring). Use as a context manager (or call `close`)."""

    def __init__(self, timing_lock: str | None = None) -> None:
        self.timing_lock = timing_lock
        self.process: subprocess.Popen[bytes] | None = None
        self.stderr: IO[bytes] | None = None
        self.restarts = 0

    def _start(self) -> subprocess.Popen[bytes]:
        if self.process is not None and self.process.poll() is None:
            return self.process
        if self.process is not None:
            self.restarts += 1
        paths = [p for p in sys.path if p]
        env = dict(os.environ, RELAY_COMPILE_JOBS="1", **_SERIAL_BLAS)
        if self.timing_lock is not None:
            env[TIMING_LOCK_ENV] = self.timing_lock
        if self.stderr is not None:
            self.stderr.close()
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the worker)
        with _holding_shared(self.timing_lock):  # its start must not overlap a timing
            self.process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, json.dumps(paths), __name__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                close_fds=True,
                env=env,
            )
            self._await_boot(self.process)
        return self.process

    def _await_boot(self, process: subprocess.Popen[bytes]) -> None:
        """Wait for a new worker's ready byte, so that starting Python and importing relay
        (seconds on a loaded machine) never count against a config's timeout. A worker that
        dies or stays silent here is left to `measure_one`'s crash and timeout handling."""
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout.fileno()], [], [], BOOT_TIMEOUT)
        if ready:
            process.stdout.read(len(_READY))

    def _stderr_tail(self) -> str:
        if self.stderr is None:
            return ""
        self.stderr.seek(0)
        lines = self.stderr.read().decode(errors="replace").strip().splitlines()
        return " | ".join(lines[-3:])

    def _kill(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()

    def measure_one(
        self, task: Task, config: Config, opts: MeasureOptions, fault: str | None = None
    ) -> MeasureResult:
        """`config` measured in the worker: its result, or a `crash` / `timeout` error
        (the worker is then replaced)."""
        process = self._start()
        assert process.stdin is not None and process.stdout is not None
        deadline = time.monotonic() + opts.timeout
        try:
            _send(process.stdin, dumps((task, config, opts, fault)))
            fd = process.stdout.fileno()
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                self._kill()
                return MeasureResult(
                    config,
                    error=f"no result within {opts.timeout:g} s (the worker was killed)",
                    error_kind="timeout",
                )
            (size,) = _HEADER.unpack(_read_exact(process.stdout, _HEADER.size))
            result: MeasureResult = pickle.loads(_read_exact(process.stdout, size))
            return result
        except (EOFError, BrokenPipeError, OSError):
            code = process.wait()
            tail = self._stderr_tail()
            self._kill()
            how = f"signal {-code}" if code < 0 else f"exit code {code}"
            return MeasureResult(
                config,
                error=f"the measurement worker died ({how})" + (f": {tail}" if tail else ""),
                error_kind="crash",
            )

    def close(self) -> None:
        """Stop the worker (close its stdin; kill it if it lingers)."""
        if self.process is None:
            return
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
            self.process.wait(timeout=2.0)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.process = None
        if self.stderr is not None:
            self.stderr.close()
            self.stderr = None

    def __enter__(self) -> Measurer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def measure(
    task: Task,
    configs: Sequence[Config],
    options: MeasureOptions | None = None,
    measurer: Measurer | None = None,
    faults: Mapping[Config, str] | None = None,
) -> list[MeasureResult]:
    """Each of `configs` built, checked and timed in a worker process (module docstring),
    in order. `measurer` reuses a worker across calls; `faults` is for tests."""
    opts = options or MeasureOptions()
    own = measurer is None
    worker = measurer or Measurer()
    try:
        return [worker.measure_one(task, c, opts, (faults or {}).get(c)) for c in configs]
    finally:
        if own:
            worker.close()


def host_description(target: Target | None = None) -> dict[str, Any]:
    """What identifies this machine in a tuning log: CPU, a digest of its features, CPUs."""
    import hashlib

    from ..target import cpu_count, host_info

    info = host_info()
    digest = hashlib.sha256(",".join(info.features).encode()).hexdigest()[:16]
    return {"cpu": info.cpu, "features": digest, "cpus": cpu_count()}


__all__ = [
    "TIMING_LOCK_ENV",
    "MeasureOptions",
    "MeasureResult",
    "Measurer",
    "host_description",
    "kernel_inputs",
    "measure",
    "measure_here",
    "one_kernel_model",
    "reference_outputs",
]
