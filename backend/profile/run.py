"""Profiling a compiled model: runs through its profiling entry with the pool's task trace on.

    profile = model.profile(x=batch, repeat=20)     # CompiledModel.profile calls profile_model
    print(profile)                                  # the per-kernel and per-kind tables
    profile.write_trace("trace.json")               # Chrome trace, one track per worker

Each measured run calls the entry's profiling twin, which writes the monotonic clock before
the first kernel and after each one into a stamps array (no Python between kernels); the
wall time of the whole `run` call is taken around it, so the difference is the time
outside the kernels (argument checks, allocation, the Python call). With the thread pool's
trace on, every parallel loop and every task it runs is recorded with its worker; a loop
belongs to the kernel whose stamps enclose its start. Runs are sequential, so the stamps of
all runs sorted in time attribute every loop with one `searchsorted`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..codegen import threadpool
from ..runtime.compiled import CompiledModel
from .data import MachinePeak, ProfileData, StepTiming, TraceEvent, WorkerLoad

TRACE_CAPACITY = 1 << 16
"""Task records made room for in the first (warm-up) run; later runs get what it needed."""


class Profile:
    """The result of profiling a model: the measurements (`data`) and their reports."""

    def __init__(self, data: ProfileData) -> None:
        self.data = data

    def table(self, width: int | None = None, sort: str = "time", top: int | None = None) -> str:
        """The report as text: kernels (by total time, or `sort="order"` for call order;
        the first `top`), operator kinds, the time outside the kernels, fitted to `width`
        columns (default: the terminal's)."""
        from .report import format_table

        return format_table(self.data, width=width, sort=sort, top=top)

    def json(self, sort: str = "time") -> dict[str, Any]:
        """The report as plain JSON values."""
        from .report import to_json

        return to_json(self.data, sort=sort)

    def chrome_trace(self) -> dict[str, Any]:
        """The median run as a Chrome trace (Perfetto, chrome://tracing): one track per
        thread, kernels on the caller's track, the tasks of parallel loops on each worker's."""
        from .report import chrome_trace

        return chrome_trace(self.data)

    def write_trace(self, path: str) -> None:
        """Write `chrome_trace()` as JSON to `path`."""
        from .report import write_chrome_trace

        write_chrome_trace(self.data, path)

    def __str__(self) -> str:
        return self.table()


def profile_model(
    model: CompiledModel,
    args: tuple[Any, ...],
    inputs: Mapping[str, Any],
    repeat: int = 10,
    warmup: int = 1,
    name: str = "model",
    machine: bool = True,
) -> Profile:
    """Profile `model` on the given inputs: `warmup` unmeasured runs, then `repeat` measured
    ones (module docstring). `machine` adds the machine's peaks (probed once, cached)."""
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    if warmup < 0:
        raise ValueError(f"warmup must be at least 0, got {warmup}")
    steps = len(model.plan.steps)
    stamps = np.zeros((repeat, steps + 1), np.int64)
    begin = np.zeros(repeat, np.int64)
    wall = np.zeros(repeat, np.int64)
    # The warm-up runs (at least one) have the trace on too: they say how much room the
    # measured runs' records need.
    warm = max(1, warmup)
    threadpool.start_trace(TRACE_CAPACITY)
    try:
        for _ in range(warm):
            model.run_profiled(stamps[0], *args, **inputs)
    finally:
        kept, dropped = threadpool.stop_trace()
    per_run = (len(kept) + dropped) / warm
    threadpool.start_trace(int(per_run * repeat * 1.5) + 1024)
    try:
        for r in range(repeat):
            begin[r] = time.monotonic_ns()
            model.run_profiled(stamps[r], *args, **inputs)
            wall[r] = time.monotonic_ns() - begin[r]
    finally:
        records, dropped = threadpool.stop_trace()
    threads = threadpool.get_num_threads()
    loop_step, loads, loop_counts = _attribute(records, stamps)
    timings = tuple(
        StepTiming(
            step=k,
            kernel=step.kernel,
            cost=model.kernels[step.kernel].cost,
            times_ns=tuple(int(t) for t in stamps[:, k + 1] - stamps[:, k]),
            loads=tuple(loads.get((r, k), ()) for r in range(repeat)) if k in loop_counts else (),
            parallel_loops=loop_counts.get(k, 0),
        )
        for k, step in enumerate(model.plan.steps)
    )
    median = int(np.argsort(wall)[len(wall) // 2])
    trace = _trace_events(timings, records, loop_step, stamps[median], int(begin[median]), median)
    return Profile(
        ProfileData(
            model=name,
            target=str(model.target),
            threads=threads,
            repeat=repeat,
            warmup=warmup,
            steps=timings,
            wall_ns=tuple(int(w) for w in wall),
            trace=(TraceEvent("run", 0, 0, int(wall[median]), "call"), *trace),
            machine=_machine_peak(threads, timings) if machine else None,
            dropped_events=dropped,
        )
    )


def _attribute(
    records: np.ndarray, stamps: np.ndarray
) -> tuple[
    dict[int, tuple[int, int]], dict[tuple[int, int], tuple[WorkerLoad, ...]], dict[int, int]
]:
    """Which (run, step) each parallel loop belongs to (by loop id), each (run, step)'s
    tasks and busy time per worker, and each step's parallel loops per run."""
    loops = records[records["worker"] < 0]
    width = stamps.shape[1]
    at = np.searchsorted(stamps.ravel(), loops["start"], side="right") - 1
    loop_step: dict[int, tuple[int, int]] = {}
    for loop_id, position in zip(loops["loop"].tolist(), at.tolist()):
        run, k = divmod(position, width)
        if position >= 0 and k < width - 1:  # started inside a kernel of a measured run
            loop_step[loop_id] = (run, k)
    tally: dict[tuple[int, int], dict[int, list[int]]] = {}
    tasks = records[records["worker"] >= 0]
    busy = (tasks["end"] - tasks["start"]).tolist()
    for loop_id, worker, ns in zip(tasks["loop"].tolist(), tasks["worker"].tolist(), busy):
        where = loop_step.get(loop_id)
        if where is None:
            continue
        per_worker = tally.setdefault(where, {})
        entry = per_worker.setdefault(worker, [0, 0])
        entry[0] += 1
        entry[1] += ns
    loads = {
        where: tuple(WorkerLoad(w, n, ns) for w, (n, ns) in sorted(per_worker.items()))
        for where, per_worker in tally.items()
    }
    counts: dict[int, int] = {}
    for run, k in loop_step.values():
        if run == 0:
            counts[k] = counts.get(k, 0) + 1
    return loop_step, loads, counts


def _trace_events(
    timings: tuple[StepTiming, ...],
    records: np.ndarray,
    loop_step: dict[int, tuple[int, int]],
    stamps: np.ndarray,
    begin: int,
    run: int,
) -> tuple[TraceEvent, ...]:
    """Run `run`'s kernels, parallel loops and tasks as trace spans (times from `begin`)."""
    events: list[TraceEvent] = []
    names = [_kernel_name(t) for t in timings]
    for t, name in zip(timings, names):
        k = t.step
        args: dict[str, object] = {"step": k, "kernel": t.kernel}
        if t.cost is not None:
            args["ops"] = ", ".join(t.cost.ops)
        start, end = int(stamps[k]) - begin, int(stamps[k + 1]) - begin
        events.append(TraceEvent(name, 0, start, end - start, "kernel", args))
    for rec in records.tolist():
        start, end, worker, loop_id, index = rec
        where = loop_step.get(loop_id)
        if where is None or where[0] != run:
            continue
        name = names[where[1]]
        if worker < 0:
            event = TraceEvent(
                f"{name} parallel loop",
                0,
                start - begin,
                end - start,
                "parallel loop",
                {"loop": loop_id, "tasks": index},
            )
        else:
            event = TraceEvent(
                f"{name} task {index}",
                worker,
                start - begin,
                end - start,
                "task",
                {"loop": loop_id, "task": index},
            )
        events.append(event)
    return tuple(events)


def _kernel_name(t: StepTiming) -> str:
    return t.cost.name if t.cost is not None else f"kernel {t.kernel}"


def _machine_peak(threads: int, timings: tuple[StepTiming, ...]) -> MachinePeak | None:
    """The machine's peaks for `threads` threads (probed once per machine, then cached).
    A cached peak that a kernel of this profile beat was measured on a busy machine: it
    is measured again."""
    from .machine import machine_peak

    try:
        peak = machine_peak(threads)
        fastest = max((_gflops(t) for t in timings), default=0.0)
        if peak.source != "measured" and fastest > peak.fp32_gflops:
            peak = machine_peak(threads, refresh=True)
        return peak
    except OSError:
        return None


def _gflops(t: StepTiming) -> float:
    """A step's FLOP rate at its median time (0 without a cost)."""
    if t.cost is None or not t.times_ns:
        return 0.0
    return t.cost.flops / max(1.0, float(np.median(t.times_ns)))


__all__ = ["Profile", "profile_model"]
