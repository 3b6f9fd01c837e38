"""The error of schedule misuse (shared by the schedule, trace and lowering modules)."""

from __future__ import annotations

from ...lang.diagnostics import Error


class ScheduleError(Error):
    """A schedule primitive was misused (a loop not in the stage, inlining a reduction, a
    trace that does not fit the computation, ...). Schedules are built in Python, so the
    error has no source span."""


__all__ = ["ScheduleError"]
