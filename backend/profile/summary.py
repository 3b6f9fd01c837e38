"""The figures of a profiling session: one row per distinct kernel, one per operator kind,
and the time outside the kernels.

Per kernel: `calls` is how many steps of the plan call it per run, `median_ns` the median of
all its samples, `total_ns` the sum over its steps of each step's median (its time per
run); rates are the per-call FLOPs and bytes over the median. The time outside the kernels
is the median over runs of the run's wall time minus its kernels' times.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence

from attrs import frozen

from .data import ProfileData, StepTiming

SORT_ORDERS = ("time", "order")
"""The orders `summarize` accepts: by total time per run, or by first call."""


@frozen
class KernelRow:
    """One distinct kernel of the session (times in nanoseconds; `share` of the kernels'
    total per run; `of_peak` and `of_bandwidth` fractions of the machine's fp32 peak and
    memory bandwidth, None without a machine; `imbalance` the median over launches of the
    slowest worker's busy time over the mean, None without a parallel loop; `tasks` the
    median tasks per run). `first_step` is the step that calls it first."""

    kernel: int
    first_step: int
    name: str
    ops: tuple[str, ...]
    kind: str | None
    calls: int
    median_ns: float
    total_ns: float
    share: float
    flops: int | None
    bytes: int | None
    gflops: float | None
    gbs: float | None
    of_peak: float | None
    of_bandwidth: float | None
    imbalance: float | None
    tasks: float | None


@frozen
class KindRow:
    """The kernels whose schedule one operator kind chose (`kind` None for kernels without
    a recorded cost): how many, their calls and time per run, share of the kernels' total,
    and GFLOP/s (their FLOPs per run over their time; None when a FLOP count is unknown)."""

    kind: str | None
    kernels: int
    calls: int
    total_ns: float
    share: float
    gflops: float | None
    of_peak: float | None


@frozen
class Summary:
    """Everything the reports show: the kernel rows kept (sorted, cut by `top`), the rows
    `top` left out, the kinds, and per run the kernels' total, the median time outside
    them and the median wall time (nanoseconds)."""

    kernels: tuple[KernelRow, ...]
    hidden: tuple[KernelRow, ...]
    kinds: tuple[KindRow, ...]
    kernels_ns: float
    outside_ns: float
    wall_ns: float
    peak_gflops: float | None


def peak_gflops(data: ProfileData) -> float | None:
    """The fp32 peak the kernels are compared with: the one-thread peak when the session
    ran on one thread, the all-thread peak otherwise (None without a machine)."""
    if data.machine is None:
        return None
    if data.threads == 1:
        return data.machine.fp32_gflops_1thread
    return data.machine.fp32_gflops


def outside_ns(data: ProfileData) -> float:
    """Median over runs of the run's wall time minus the time of its kernel calls: the
    argument checks, allocation and Python call around the native entry."""
    gaps = [
        wall - sum(step.times_ns[run] for step in data.steps if run < len(step.times_ns))
        for run, wall in enumerate(data.wall_ns)
    ]
    return median(gaps)


def summarize(data: ProfileData, sort: str = "time", top: int | None = None) -> Summary:
    """The rows and totals of `data`'s report: kernels by total time (`sort="time"`) or by
    first call (`sort="order"`), the first `top` of them kept."""
    if sort not in SORT_ORDERS:
        raise ValueError(f"unknown sort order {sort!r}: expected 'time' or 'order'")
    if top is not None and top < 0:
        raise ValueError(f"top must be a non-negative number of kernels, not {top}")
    rows = _kernel_rows(data)
    kinds = _kind_rows(rows, data)
    if sort == "time":
        rows = sorted(rows, key=lambda row: (-row.total_ns, row.first_step))
        kinds = sorted(kinds, key=lambda kind: -kind.total_ns)
    kept = rows if top is None else rows[:top]
    return Summary(
        kernels=tuple(kept),
        hidden=tuple(rows[len(kept) :]),
        kinds=tuple(kinds),
        kernels_ns=sum(row.total_ns for row in rows),
        outside_ns=outside_ns(data),
        wall_ns=median(data.wall_ns),
        peak_gflops=peak_gflops(data),
    )


def _kernel_rows(data: ProfileData) -> list[KernelRow]:
    """One row per distinct kernel, in call order, with shares of the kernels' total."""
    groups: dict[int, list[StepTiming]] = {}
    for step in sorted(data.steps, key=lambda step: step.step):
        groups.setdefault(step.kernel, []).append(step)
    totals = {kernel: sum(median(s.times_ns) for s in steps) for kernel, steps in groups.items()}
    grand_total = sum(totals.values())
    peak = peak_gflops(data)
    bandwidth = data.machine.bandwidth_gbs if data.machine is not None else None
    rows = []
    for kernel, steps in groups.items():
        cost = next((step.cost for step in steps if step.cost is not None), None)
        per_call = median([t for step in steps for t in step.times_ns])
        flops = cost.flops if cost is not None else None
        nbytes = cost.bytes if cost is not None else None
        gflops = ratio(flops, per_call)
        gbs = ratio(nbytes, per_call)
        rows.append(
            KernelRow(
                kernel=kernel,
                first_step=steps[0].step,
                name=cost.name if cost is not None else f"kernel {kernel}",
                ops=cost.ops if cost is not None else (),
                kind=cost.kind if cost is not None else None,
                calls=len(steps),
                median_ns=per_call,
                total_ns=totals[kernel],
                share=ratio(totals[kernel], grand_total) or 0.0,
                flops=flops,
                bytes=nbytes,
                gflops=gflops,
                gbs=gbs,
                of_peak=ratio(gflops, peak),
                of_bandwidth=ratio(gbs, bandwidth),
                imbalance=_imbalance(steps, data.threads),
                tasks=_tasks_per_run(steps),
            )
        )
    return rows


def _imbalance(steps: Sequence[StepTiming], threads: int) -> float | None:
    """Median over every launch (step and run) of the slowest worker's busy time over the
    mean over all workers (a worker with no task counts as idle)."""
    ratios = []
    for step in steps:
        for loads in step.loads:
            busy: dict[int, int] = {}
            for load in loads:
                busy[load.worker] = busy.get(load.worker, 0) + load.busy_ns
            workers = max(threads, max(busy, default=-1) + 1, 1)
            mean = sum(busy.values()) / workers
            if mean > 0:
                ratios.append(max(busy.values()) / mean)
    return median(ratios) if ratios else None


def _tasks_per_run(steps: Sequence[StepTiming]) -> float | None:
    """Median over runs of the tasks the kernel's parallel loops ran (None without one)."""
    if not any(step.loads or step.parallel_loops for step in steps):
        return None
    runs = max(len(step.loads) for step in steps)
    per_run = [
        sum(load.tasks for step in steps if run < len(step.loads) for load in step.loads[run])
        for run in range(runs)
    ]
    return median(per_run)


def _kind_rows(rows: Sequence[KernelRow], data: ProfileData) -> list[KindRow]:
    """The kernel rows grouped by operator kind, in order of the kind's first call."""
    groups: dict[str | None, list[KernelRow]] = {}
    for row in sorted(rows, key=lambda row: row.first_step):
        groups.setdefault(row.kind, []).append(row)
    grand_total = sum(row.total_ns for row in rows)
    peak = peak_gflops(data)
    kinds = []
    for kind, members in groups.items():
        total = sum(row.total_ns for row in members)
        flop_counts = [row.flops * row.calls for row in members if row.flops is not None]
        known = len(flop_counts) == len(members)
        gflops = ratio(sum(flop_counts), total) if known else None
        kinds.append(
            KindRow(
                kind=kind,
                kernels=len(members),
                calls=sum(row.calls for row in members),
                total_ns=total,
                share=ratio(total, grand_total) or 0.0,
                gflops=gflops,
                of_peak=ratio(gflops, peak),
            )
        )
    return kinds


def median(values: Iterable[float]) -> float:
    """The median of `values` as a float (0.0 when there are none)."""
    values = list(values)
    return float(statistics.median(values)) if values else 0.0


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """`numerator / denominator`, or None when either is unknown or the denominator is 0."""
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


__all__ = [
    "SORT_ORDERS",
    "KernelRow",
    "KindRow",
    "Summary",
    "median",
    "outside_ns",
    "peak_gflops",
    "ratio",
    "summarize",
]
