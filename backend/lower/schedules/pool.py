"""The schedule of pooling (max/avg, 1-3 spatial dims, global and adaptive).

The pad stage is inlined (the window reads go through `if_then_else`). For a window pool
over NCHW with output `out[n, c, oh, ow]` and window `(kh, kw)`:

    for f in fuse(n, c, oh, ow.outer):        # parallel
      for kh, kw:
        for ow.inner in [0, v):               # vectorized over the output width
          out[n, c, oh, ow] = max(out[...], x[n, c, oh*s + kh - p, ow*s + kw - p])

Average pooling divides in a second stage (the output): the window stage is computed inside
the output's rows and both vectorize over the width. Global pooling reduces the innermost
axes: parallel over `n * c`, the window loops contiguous.
"""

from __future__ import annotations

from ....lang.optable import OpTable
from ...target import Target
from ...te.tensor import Tensor
from . import Schedule, ScheduleRule, last_stage
from .reduce import schedule_with_tail


def schedule_pool(s: Schedule, outputs: list[Tensor], anchor: Tensor, target: Target) -> None:
    """Pooling kernels (module docstring)."""
    schedule_with_tail(s, outputs, anchor, target, keep_inner=True)


POOL: ScheduleRule = ScheduleRule(schedule_pool, last_stage)
"""Pooling kernels, anchored at the pool's last stage (average pooling's divide)."""

SCHEDULES: OpTable[ScheduleRule] = OpTable("schedule")
SCHEDULES.register(
    *(f"nn.{kind}_pool{n}d" for kind in ("max", "avg") for n in (1, 2, 3)),
    *(f"nn.adaptive_{kind}_pool{n}d" for kind in ("max", "avg") for n in (1, 2, 3)),
    "nn.global_max_pool2d",
    "nn.global_avg_pool2d",
)(POOL)
