"""Tuning logs: one JSON object per line, appended atomically, read back tolerantly.

    log = TuningLog("tune.jsonl")
    log.append(record_of(task, result))          # one write + flush + fsync per line
    contents = read_log("tune.jsonl")            # this host's records
    contents.corrupt                             # [(line number, why)], skipped
    contents.foreign                             # records of other hosts, ignored

A record holds the task key and operator, the config (knob -> value), the schedule's trace
text, the costs (seconds per call, one per round) and the fastest of them (the cost), the
error (kind and message; None when the config works), the host that measured it (CPU
name, a digest of its features, CPU count: a remote node's own when measured on a
cluster), the target the kernel was built for, versions (log format, Python, llvmlite,
numpy) and the time. A killed run leaves at most a truncated last line: reading reports it
by its line number and goes on, and the next append starts on a fresh line, so nothing
written before is lost.
Records of other hosts are counted, not used.
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from attrs import field, frozen

from .measure import MeasureResult, host_description
from .space import Config
from .task import Task, target_identity

LOG_VERSION = 1
"""The version of the record format."""


def versions() -> dict[str, str]:
    """The versions a record was measured with."""
    import llvmlite
    import numpy

    return {
        "log": str(LOG_VERSION),
        "python": platform.python_version(),
        "llvmlite": str(getattr(llvmlite, "__version__", "?")),
        "numpy": numpy.__version__,
    }


def record_of(task: Task, result: MeasureResult) -> dict[str, Any]:
    """The log record of one measurement of `task`."""
    return {
        "task": task.key,
        "op": task.op_name,
        "config": result.config.to_json(),
        "trace": result.trace,
        "costs": list(result.costs),
        "cost": result.cost,
        "error": result.error,
        "error_kind": result.error_kind,
        "flops": task.flops(),
        "host": result.host or host_description(),
        "target": target_identity(task.target),
        "versions": versions(),
        "time": result.timestamp,
    }


class TuningLog:
    """A JSON-lines log file records are appended to (created when missing)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._checked_end = False

    def _ensure_line_start(self, fd: int) -> None:
        """Begin a fresh line when the file ends inside one (a run killed mid-write)."""
        if self._checked_end:
            return
        self._checked_end = True
        size = os.fstat(fd).st_size
        if size == 0:
            return
        with open(self.path, "rb") as f:
            f.seek(size - 1)
            if f.read(1) != b"\n":
                os.write(fd, b"\n")

    def append(self, record: dict[str, Any]) -> None:
        """Write `record` as one line with a single `write` (O_APPEND), then fsync."""
        line = (json.dumps(record, sort_keys=True) + "\n").encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            self._ensure_line_start(fd)
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def extend(self, records: Iterable[dict[str, Any]]) -> None:
        """Append each of `records`."""
        for r in records:
            self.append(r)


@frozen
class LogContents:
    """What a log holds for this host: `records` (in file order), `corrupt` lines
    (line number, reason) and the count of `foreign` records (other hosts)."""

    records: tuple[dict[str, Any], ...] = ()
    corrupt: tuple[tuple[int, str], ...] = ()
    foreign: int = 0
    path: str = field(default="")

    def messages(self) -> list[str]:
        """What a user should hear about the log (corrupt lines, foreign records)."""
        out = [
            f"{self.path}:{line}: skipped a corrupt record ({why})" for line, why in self.corrupt
        ]
        if self.foreign:
            out.append(f"{self.path}: ignored {self.foreign} record(s) measured on another host")
        return out

    def by_task(self) -> dict[str, dict[Config, float | None]]:
        """Per task key, each measured config's cost (None for an error; the best cost of
        a config measured more than once)."""
        out: dict[str, dict[Config, float | None]] = {}
        for r in self.records:
            measured = out.setdefault(r["task"], {})
            config = Config.from_json(r["config"])
            cost = r.get("cost") if r.get("error") is None else None
            old = measured.get(config)
            if config not in measured or (cost is not None and (old is None or cost < old)):
                measured[config] = cost
        return out


REQUIRED = {"task": str, "config": dict}


def _problem(record: Any) -> str | None:
    if not isinstance(record, dict):
        return "not a JSON object"
    for key, kind in REQUIRED.items():
        if not isinstance(record.get(key), kind):
            return f"no `{key}`"
    cost = record.get("cost")
    if cost is not None and not isinstance(cost, int | float):
        return "`cost` is not a number"
    try:
        Config.from_json(record["config"])
    except ValueError as exc:
        return str(exc)
    return None


def read_log(path: str | os.PathLike[str], host: dict[str, Any] | None = None) -> LogContents:
    """This host's records of the log at `path` (module docstring); a missing file is an
    empty log. `host` overrides this machine's description (tests)."""
    p = Path(path)
    if not p.exists():
        return LogContents(path=str(p))
    here = host if host is not None else host_description()
    records: list[dict[str, Any]] = []
    corrupt: list[tuple[int, str]] = []
    foreign = 0
    with open(p, "rb") as f:
        for number, raw in enumerate(f, start=1):
            text = raw.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                corrupt.append((number, f"invalid JSON: {exc.msg}"))
                continue
            problem = _problem(record)
            if problem is not None:
                corrupt.append((number, problem))
                continue
            rh = record.get("host") or {}
            if rh.get("cpu") != here["cpu"] or rh.get("features") != here["features"]:
                foreign += 1
                continue
            records.append(record)
    return LogContents(tuple(records), tuple(corrupt), foreign, str(p))


def best_records(contents: LogContents) -> dict[str, dict[str, Any]]:
    """Per task key, the record with the lowest cost among those without an error."""
    best: dict[str, dict[str, Any]] = {}
    for r in contents.records:
        if r.get("error") is not None or not isinstance(r.get("cost"), int | float):
            continue
        old = best.get(r["task"])
        if old is None or r["cost"] < old["cost"]:
            best[r["task"]] = r
    return best


__all__ = [
    "LOG_VERSION",
    "LogContents",
    "TuningLog",
    "best_records",
    "read_log",
    "record_of",
    "versions",
]
