"""What one profiling session measured, as plain values: per kernel step the time of every
run, per worker the tasks of each parallel loop, the wall time of each `run` call, and the
machine's peaks. `report` turns these into tables, JSON and Chrome traces; `run` makes them.

Times are integer nanoseconds of the monotonic clock (`CLOCK_MONOTONIC`, the same clock
as `time.monotonic_ns`), taken by the generated code around each kernel call and by the
thread pool around each task.
"""

from __future__ import annotations

from attrs import field, frozen

from ..kernel_cost import KernelCost


@frozen
class MachinePeak:
    """The machine's measured fp32 peak (GFLOP/s with every thread of the target, and with
    one) and memory bandwidth (GB/s, read, every thread), for `threads` threads; `source` is
    `measured` or the cache file the figures were read from."""

    fp32_gflops: float
    fp32_gflops_1thread: float
    bandwidth_gbs: float
    threads: int
    cpu: str
    source: str = "measured"


@frozen
class WorkerLoad:
    """One worker's share of one kernel step in one run: tasks it ran and nanoseconds it
    spent in them. Worker 0 is the thread that called the model."""

    worker: int
    tasks: int
    busy_ns: int


@frozen
class StepTiming:
    """One kernel call of the plan (step `step`, in call order) over all profiled runs.

    `kernel` is the index of the distinct kernel it calls; `cost` its name, fused operators,
    FLOPs and bytes (None when unknown, e.g. an artifact saved before costs were recorded).
    `times_ns[r]` is its duration in run `r`; `loads[r]` how its parallel loops' tasks were
    spread over the workers in run `r` (empty for a kernel with no parallel loop);
    `parallel_loops` how many parallel loops it launched per run."""

    step: int
    kernel: int
    cost: KernelCost | None
    times_ns: tuple[int, ...]
    loads: tuple[tuple[WorkerLoad, ...], ...] = ()
    parallel_loops: int = 0


@frozen
class TraceEvent:
    """A span on one track of a Chrome trace: `track` 0 is the calling thread (kernels and
    the tasks it ran itself), `track` k > 0 the pool's worker k; `start_ns` is relative to
    the start of the traced run's `run` call."""

    name: str
    track: int
    start_ns: int
    dur_ns: int
    category: str = "kernel"
    args: dict[str, object] = field(factory=dict, eq=False)


@frozen
class ProfileData:
    """A profiling session of one compiled model: `repeat` runs (after `warmup` unmeasured
    ones) with `threads` threads; `wall_ns[r]` is run `r`'s whole `run` call (argument
    checks, allocation, the native call); `trace` the events of one run (the median one)."""

    model: str
    target: str
    threads: int
    repeat: int
    warmup: int
    steps: tuple[StepTiming, ...]
    wall_ns: tuple[int, ...]
    trace: tuple[TraceEvent, ...] = ()
    machine: MachinePeak | None = None
    dropped_events: int = 0


__all__ = ["MachinePeak", "ProfileData", "StepTiming", "TraceEvent", "WorkerLoad"]
