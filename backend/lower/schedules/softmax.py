"""The schedule of softmax and log-softmax: the statistics (max, sum of exponentials) and
the normalize stage are computed row by row.

For softmax over the last axis of `x[n, c]` (the compute materializes the exponentials, so
each is computed once):

    for n in rows:                 # parallel when there is enough work
      maxelem = max_k x[n, k]                      # LLVM vectorizes the reductions
      for c.outer: for c.inner in [0, v):          # vectorized
        e[c] = exp(x[n, c] - maxelem)
      expsum = sum_k e[k]
      for c.outer: for c.inner in [0, v):          # vectorized
        out[n, c] = e[c] * (1 / expsum)

The statistics are computed for `ROW_BLOCK` rows at a time when that divides the rows (one
row's serial steps, its horizontal max and sum and the division, overlap the next row's
work), and the exponentials `EXP_INTERLEAVE` machine vectors per operation when that many
divide the row (their polynomial is a long dependent chain: side by side, several vectors
fill the core's schedulers; 8x128x128 at 1 thread 244 -> 200 us).

Log-softmax has no exponential stage (`x - max - log(sum_k exp(x[n, k] - max))`). Over
another axis the rows are the leading axes before it (the statistics of a row are computed
for all the trailing positions at once). An element-wise tail after the softmax is the
output; the normalize stage is then computed inside the output's rows too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ....lang.optable import OpTable
from ...target import Target
from ...te.tensor import Tensor
from . import Schedule, ScheduleRule, last_stage
from .reduce import schedule_with_tail


def schedule_softmax(
    s: Schedule,
    outputs: list[Tensor],
    anchor: Tensor,
    target: Target,
    config: Mapping[str, Any] | None = None,
) -> None:
    """Softmax-like kernels: statistics per row, normalize vectorized (module docstring).
    `config` (`backend.tune`) may set `row_block` and `interleave` (defaults `ROW_BLOCK`,
    `EXP_INTERLEAVE`)."""
    from .reduce import output_reading

    knobs = config or {}
    out = output_reading(outputs, anchor)
    if anchor.op is out.op:
        # The normalize stage is the output: its statistics are the stages to attach.
        anchor = _first_statistic(anchor) or anchor
    row_block = int(knobs.get("row_block", ROW_BLOCK))
    interleave = int(knobs.get("interleave", EXP_INTERLEAVE))
    schedule_with_tail(s, outputs, anchor, target, row_block=row_block, interleave=interleave)


ROW_BLOCK = 8
"""Rows whose stages are computed together (`schedule_with_tail`'s `row_block`)."""

EXP_INTERLEAVE = 4
"""Machine vectors per vector operation of the exponential stage (`interleave`)."""


def _first_statistic(anchor: Tensor) -> Tensor | None:
    """The first reduction stage the normalize stage reads (the row maximum)."""
    from . import is_reduction, stage_order

    for op in stage_order([anchor]):
        if is_reduction(op):
            return op.output(0)
    return None


SOFTMAX: ScheduleRule = ScheduleRule(schedule_softmax, last_stage)
"""Softmax-like kernels, anchored at the normalize stage."""

SCHEDULES: OpTable[ScheduleRule] = OpTable("schedule")
SCHEDULES.register("nn.softmax", "nn.log_softmax", "nn.fast_softmax")(SOFTMAX)
