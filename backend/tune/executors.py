"""Where candidate configs are measured: one `Executor` protocol, two implementations.

    with make_executor("local") as executor:        # the default: a worker process here
        for result in executor.submit(task, configs, options):
            ...                                     # MeasureResults as they complete

`submit(task, configs, options, faults)` yields one `MeasureResult` per config (in the
order they complete; each carries its config) and never raises for a config that fails:
a build error, a wrong result, a crashed or hung worker are error results, as
`measure.MeasureResult` describes. The tuner sees nothing else, so both executors obey
the same measurement contract (the worker's `measure.measure_here` does the work).

Executor specs (`relay tune --executor SPEC`, `tune(..., executor=SPEC)`):

- `local` (the default): `LocalExecutor`, one worker process of this interpreter
  (`measure.Measurer`), configs measured one at a time; `local:N`: N worker processes
  that build side by side and take turns to time (`measure`'s timing lock), N results in
  flight, yielded as they complete.
- `ray://HOST:PORT`: a Ray cluster through the Ray Client (the head's client server port,
  10001 by default); `ray:auto` or `ray:HOST:PORT` (the GCS port): join a running cluster
  as a driver; `ray:local`: a new Ray instance on this machine; `ray` alone: `ray.init()`'s
  own choice ($RAY_ADDRESS, a cluster `ray start` began here, else a new instance). See
  `ray_executor` (Ray is an optional extra: relay-lang[ray]).
"""

from __future__ import annotations

import contextlib
import os
import queue
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import Protocol, runtime_checkable

from ...lang.diagnostics import Error
from .measure import MeasureOptions, Measurer, MeasureResult
from .space import Config
from .task import Task


class ExecutorError(Error):
    """An executor cannot be used: its package is missing, its cluster does not answer."""


@runtime_checkable
class Executor(Protocol):
    """Measures batches of configs (module docstring); a context manager."""

    name: str

    def submit(
        self,
        task: Task,
        configs: Sequence[Config],
        options: MeasureOptions,
        faults: Mapping[Config, str] | None = None,
    ) -> Iterator[MeasureResult]:
        """One result per config of `configs`, yielded as each completes."""
        ...

    def close(self) -> None:
        """Release the workers (and the cluster connection this executor opened)."""
        ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...


class LocalExecutor:
    """Configs measured by `workers` worker processes of this interpreter, each replaced
    after it crashes or hangs (`measure.Measurer`); several workers build at once and
    time one at a time (module docstring)."""

    name = "local"

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise ExecutorError(f"a local executor needs at least 1 worker, not {workers}")
        self.lock_path: str | None = None
        if workers > 1:
            handle, self.lock_path = tempfile.mkstemp(prefix="relay-tune-", suffix=".lock")
            os.close(handle)
        self.measurers = [Measurer(self.lock_path) for _ in range(workers)]
        self.measurer = self.measurers[0]

    def submit(
        self,
        task: Task,
        configs: Sequence[Config],
        options: MeasureOptions,
        faults: Mapping[Config, str] | None = None,
    ) -> Iterator[MeasureResult]:
        """Each config measured in a worker: in order with one worker, else as completed."""
        faults = faults or {}
        if len(self.measurers) == 1:
            for config in configs:
                yield self.measurer.measure_one(task, config, options, faults.get(config))
            return
        idle: queue.SimpleQueue[Measurer] = queue.SimpleQueue()
        for m in self.measurers:
            idle.put(m)

        def one(config: Config) -> MeasureResult:
            worker = idle.get()
            try:
                return worker.measure_one(task, config, options, faults.get(config))
            finally:
                idle.put(worker)

        pool = ThreadPoolExecutor(len(self.measurers), thread_name_prefix="relay-tune")
        try:
            futures: list[Future[MeasureResult]] = [pool.submit(one, c) for c in configs]
            for future in as_completed(futures):
                yield future.result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        """Stop the worker processes."""
        for m in self.measurers:
            m.close()
        if self.lock_path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.lock_path)
            self.lock_path = None

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


EXECUTOR_SPECS = "local, local:N, ray, ray://HOST:PORT, ray:auto, ray:HOST:PORT or ray:local"
"""The forms `make_executor` accepts, for messages."""


def make_executor(spec: str | None = None, connect_timeout: float = 10.0) -> Executor:
    """The executor a spec names (module docstring); an `ExecutorError` when the spec is
    unknown, Ray is not installed or the cluster does not answer within `connect_timeout`
    seconds."""
    text = (spec or "local").strip()
    if text == "local":
        return LocalExecutor()
    if text.startswith("local:"):
        count = text[6:]
        if not count.isdigit() or int(count) < 1:
            raise ExecutorError(f"executor {text!r}: `local:` takes a number of workers >= 1")
        return LocalExecutor(int(count))
    if text == "ray" or text.startswith(("ray:", "ray://")):
        from .ray_executor import RayExecutor

        address = None if text == "ray" else text if text.startswith("ray://") else text[4:]
        if address == "":
            raise ExecutorError(f"executor {text!r}: no address after `ray:` ({EXECUTOR_SPECS})")
        return RayExecutor(address, connect_timeout=connect_timeout)
    raise ExecutorError(f"unknown executor {text!r} (expected {EXECUTOR_SPECS})")


__all__ = ["EXECUTOR_SPECS", "Executor", "ExecutorError", "LocalExecutor", "make_executor"]
