"""Reports of a profiling session as a plain-text table that fits the terminal, as JSON,
or as a Chrome trace (`chrome_trace`, re-exported here); the figures come from `summary`.
"""

from __future__ import annotations

import shutil
import textwrap
from typing import Any

from .chrome_trace import chrome_trace, write_chrome_trace
from .data import MachinePeak, ProfileData
from .summary import SORT_ORDERS, KernelRow, KindRow, Summary, median, ratio, summarize
from .table import Column, fit_columns, format_count, format_rate, format_us, render

_UNKNOWN_KIND = "(unknown)"
_MIN_WIDTH = 48
# Columns hidden first when the terminal is narrow, least useful first.
_DROP_ORDER = (
    "tasks",
    "bytes",
    "flops",
    "bw_pct",
    "gbs",
    "imbalance",
    "median",
    "peak_pct",
    "gflops",
    "calls",
)


def format_table(
    data: ProfileData, width: int | None = None, sort: str = "time", top: int | None = None
) -> str:
    """The session as plain text: a header (model, target, threads, runs, machine peaks),
    the per-kernel table, the time outside the kernels and the per-kind table. No line is
    wider than `width` (default: the terminal's) unless `width` is below a sensible
    minimum: long names are cut with "…" and the least useful columns hidden."""
    if width is None:
        width = shutil.get_terminal_size((120, 24)).columns
    width = max(width, _MIN_WIDTH)
    summary = summarize(data, sort, top)
    lines = [*_wrap(_header(data), width), *_wrap(_machine_line(data.machine), width)]
    if data.dropped_events:
        note = f"{data.dropped_events} trace events were dropped (trace buffer full)"
        lines += _wrap(note, width)
    lines.append("")
    lines += _kernel_table(summary, width)
    lines.append("")
    lines += _totals_table(summary, width)
    lines.append("")
    lines += _kind_table(summary, width)
    return "\n".join(lines) + "\n"


def _header(data: ProfileData) -> str:
    threads = f"{data.threads} thread" + ("s" if data.threads != 1 else "")
    runs = f"{data.repeat} run" + ("s" if data.repeat != 1 else "")
    return (
        f"profile of {data.model}: target {data.target}, {threads}, "
        f"{runs} after {data.warmup} warmup"
    )


def _machine_line(machine: MachinePeak | None) -> str:
    if machine is None:
        return "machine peaks not measured: no percentages of peak"
    source = "measured" if machine.source == "measured" else f"cached in {machine.source}"
    threads = f"{machine.threads} thread" + ("s" if machine.threads != 1 else "")
    cpu = f"{machine.cpu}: " if machine.cpu else ""
    return (
        f"{cpu}fp32 peak {format_rate(machine.fp32_gflops)} GFLOP/s ({threads}), "
        f"{format_rate(machine.fp32_gflops_1thread)} GFLOP/s (1 thread); "
        f"memory {format_rate(machine.bandwidth_gbs)} GB/s ({source})"
    )


def _kernel_table(summary: Summary, width: int) -> list[str]:
    rows = list(summary.kernels)
    cells: list[list[str]] = [
        [
            row.name,
            str(row.calls),
            format_us(row.median_ns),
            format_us(row.total_ns),
            _percent(row.share),
            format_count(row.flops),
            format_count(row.bytes),
            format_rate(row.gflops),
            format_rate(row.gbs),
            _percent(row.of_peak),
            _percent(row.of_bandwidth),
            f"{row.imbalance:.2f}" if row.imbalance is not None else "",
            format_count(row.tasks),
        ]
        for row in rows
    ]
    if summary.hidden:
        hidden_ns = sum(row.total_ns for row in summary.hidden)
        hidden_share = sum(row.share for row in summary.hidden)
        more = f"({len(summary.hidden)} more)"
        cells.append([more, "", "", format_us(hidden_ns), _percent(hidden_share)] + [""] * 8)
    titles = [
        # The name is the fused operators (`fused_nn_dense_nn_relu`): JSON lists them too.
        ("name", "kernel", False, 20),
        ("calls", "calls", True, 0),
        ("median", "µs/call", True, 0),
        ("total", "µs/run", True, 0),
        ("share", "share", True, 0),
        ("flops", "FLOPs", True, 0),
        ("bytes", "bytes", True, 0),
        ("gflops", "GFLOP/s", True, 0),
        ("gbs", "GB/s", True, 0),
        ("peak_pct", "%peak", True, 0),
        ("bw_pct", "%bw", True, 0),
        ("imbalance", "imbal", True, 0),
        ("tasks", "tasks", True, 0),
    ]
    columns = [
        Column(key, title, tuple(row[i] for row in cells), numeric, min_width)
        for i, (key, title, numeric, min_width) in enumerate(titles)
    ]
    kept, dropped = fit_columns(columns, width, _DROP_ORDER)
    lines = render(kept)
    if dropped:
        names = ", ".join(column.title for column in dropped)
        lines += _wrap(f"(hidden for width: {names}; widen the terminal or use JSON)", width)
    return lines


def _totals_table(summary: Summary, width: int) -> list[str]:
    calls = sum(row.calls for row in (*summary.kernels, *summary.hidden))
    entries = [
        (f"kernels ({calls} calls)", summary.kernels_ns),
        ("outside kernels (argument checks, allocation, Python call)", summary.outside_ns),
        ("kernels + outside", summary.kernels_ns + summary.outside_ns),
        ("run (median wall time)", summary.wall_ns),
    ]
    columns = [
        Column("label", "per run", tuple(label for label, _ in entries), False, 16),
        Column("us", "µs", tuple(format_us(ns) for _, ns in entries), True, 0),
        Column(
            "share",
            "of run",
            tuple(_percent(ratio(ns, summary.wall_ns)) for _, ns in entries),
            True,
            0,
        ),
    ]
    kept, _ = fit_columns(columns, width, ())
    return render(kept)


def _kind_table(summary: Summary, width: int) -> list[str]:
    kinds = summary.kinds
    columns = [
        Column("kind", "kind", tuple(k.kind or _UNKNOWN_KIND for k in kinds), False, 10),
        Column("kernels", "kernels", tuple(str(k.kernels) for k in kinds), True, 0),
        Column("calls", "calls", tuple(str(k.calls) for k in kinds), True, 0),
        Column("total", "µs/run", tuple(format_us(k.total_ns) for k in kinds), True, 0),
        Column("share", "share", tuple(_percent(k.share) for k in kinds), True, 0),
        Column("gflops", "GFLOP/s", tuple(format_rate(k.gflops) for k in kinds), True, 0),
        Column("peak_pct", "%peak", tuple(_percent(k.of_peak) for k in kinds), True, 0),
    ]
    kept, _ = fit_columns(columns, width, ("peak_pct", "kernels", "gflops", "calls"))
    return render(kept)


def to_json(data: ProfileData, sort: str = "time", top: int | None = None) -> dict[str, Any]:
    """The session's report as plain JSON values (`json.dumps`-able, no NaN): the kernel
    and kind rows (times in µs, shares and fractions of peak between 0 and 1), the time
    outside the kernels, the totals, the machine, and the raw per-step and per-run times."""
    summary = summarize(data, sort, top)
    machine = data.machine
    return {
        "model": data.model,
        "target": data.target,
        "threads": data.threads,
        "runs": data.repeat,
        "warmup": data.warmup,
        "sort": sort,
        "dropped_events": data.dropped_events,
        "machine": None
        if machine is None
        else {
            "cpu": machine.cpu,
            "threads": machine.threads,
            "fp32_gflops": machine.fp32_gflops,
            "fp32_gflops_1thread": machine.fp32_gflops_1thread,
            "bandwidth_gbs": machine.bandwidth_gbs,
            "source": machine.source,
        },
        "peak_gflops": summary.peak_gflops,
        "kernels": [_kernel_json(row) for row in summary.kernels],
        "hidden_kernels": len(summary.hidden),
        "kinds": [_kind_json(kind) for kind in summary.kinds],
        "kernels_us": _us(summary.kernels_ns),
        "outside": {
            "us": _us(summary.outside_ns),
            "share": ratio(summary.outside_ns, summary.wall_ns),
        },
        "total_us": _us(summary.wall_ns),
        "kernels_plus_outside_us": _us(summary.kernels_ns + summary.outside_ns),
        "steps": [
            {
                "step": step.step,
                "kernel": step.kernel,
                "name": step.cost.name if step.cost is not None else f"kernel {step.kernel}",
                "median_us": _us(median(step.times_ns)),
            }
            for step in sorted(data.steps, key=lambda step: step.step)
        ],
        "wall_us": [_us(ns) for ns in data.wall_ns],
    }


def _kernel_json(row: KernelRow) -> dict[str, Any]:
    return {
        "kernel": row.kernel,
        "first_step": row.first_step,
        "name": row.name,
        "ops": list(row.ops),
        "kind": row.kind,
        "calls": row.calls,
        "median_us": _us(row.median_ns),
        "total_us": _us(row.total_ns),
        "share": row.share,
        "flops": row.flops,
        "bytes": row.bytes,
        "gflops": row.gflops,
        "gbs": row.gbs,
        "of_peak": row.of_peak,
        "of_bandwidth": row.of_bandwidth,
        "imbalance": row.imbalance,
        "tasks": row.tasks,
    }


def _kind_json(kind: KindRow) -> dict[str, Any]:
    return {
        "kind": kind.kind,
        "kernels": kind.kernels,
        "calls": kind.calls,
        "total_us": _us(kind.total_ns),
        "share": kind.share,
        "gflops": kind.gflops,
        "of_peak": kind.of_peak,
    }


def _us(ns: float) -> float:
    return ns / 1000.0


def _percent(fraction: float | None) -> str:
    return "" if fraction is None else f"{100 * fraction:.1f}%"


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width=width, subsequent_indent="  ") or [""]


__all__ = [
    "SORT_ORDERS",
    "chrome_trace",
    "format_table",
    "summarize",
    "to_json",
    "write_chrome_trace",
]
