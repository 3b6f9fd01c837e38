"""Chrome traces of a profiled run, in the Trace Event Format's JSON object form, which
Perfetto and chrome://tracing open: one track per thread (the caller, then each worker of
the pool), a complete ("X") event per kernel call and per task, times in microseconds."""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .data import ProfileData, TraceEvent

_PID = 1


def chrome_trace(data: ProfileData) -> dict[str, Any]:
    """`data.trace` as a Chrome trace: metadata naming the process (the model) and each
    track present ("caller" for track 0, "worker k" otherwise), then the spans of each
    track sorted by start, parents before their children. A span that overruns the span
    enclosing it on the same track (clock reads a few nanoseconds apart) is cut at the
    parent's end, its measured duration kept in `args`, so events always nest."""
    tracks = sorted({event.track for event in data.trace})
    events: list[dict[str, Any]] = [_metadata("process_name", 0, {"name": data.model})]
    for track in tracks:
        name = "caller" if track == 0 else f"worker {track}"
        events.append(_metadata("thread_name", track, {"name": name}))
        events.append(_metadata("thread_sort_index", track, {"sort_index": track}))
    for track in tracks:
        events += _track_events([e for e in data.trace if e.track == track])
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "model": data.model,
            "target": data.target,
            "threads": data.threads,
            "dropped_events": data.dropped_events,
        },
    }


def write_chrome_trace(data: ProfileData, path: str | os.PathLike[str]) -> Path:
    """Write `chrome_trace(data)` as JSON to `path` and return the path."""
    path = Path(path)
    path.write_text(json.dumps(chrome_trace(data), allow_nan=False), encoding="utf-8")
    return path


def _metadata(name: str, track: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "ph": "M", "pid": _PID, "tid": track, "ts": 0.0, "args": args}


def _track_events(spans: Sequence[TraceEvent]) -> list[dict[str, Any]]:
    """The complete events of one track, nested: each span starts after its parent's
    start and ends no later than its parent's end."""
    ordered = sorted(spans, key=lambda e: (e.start_ns, -e.dur_ns))
    open_ends: list[int] = []
    events = []
    for span in ordered:
        start, end = span.start_ns, span.start_ns + max(span.dur_ns, 0)
        while open_ends and open_ends[-1] <= start:
            open_ends.pop()
        args = _plain(span.args)
        if open_ends and end > open_ends[-1]:
            args["measured_dur_us"] = (end - start) / 1000.0
            end = open_ends[-1]
        open_ends.append(end)
        events.append(
            {
                "name": span.name,
                "cat": span.category,
                "ph": "X",
                "pid": _PID,
                "tid": span.track,
                "ts": start / 1000.0,
                "dur": (end - start) / 1000.0,
                "args": args,
            }
        )
    return events


def _plain(args: dict[str, object]) -> dict[str, Any]:
    """`args` with every value made a JSON value (tuples as lists, non-finite floats and
    other objects as text)."""
    return {str(key): _plain_value(value) for key, value in args.items()}


def _plain_value(value: object) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value) if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        return [_plain_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain_value(item) for key, item in value.items()}
    return str(value)


__all__ = ["chrome_trace", "write_chrome_trace"]
