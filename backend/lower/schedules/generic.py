"""The fallback schedule, and the default loop nest of a single stage.

`schedule_generic` is used for a kernel no operator anchors: every output gets the
default of its kind (`schedule_stage_default`: the injective nest for element-wise stages,
the reduction nest for reductions, nothing for extern stages). `schedule_secondary` gives the
same default to the materialized stages the anchor's schedule left untouched at root.
"""

from __future__ import annotations

from ...target import Target
from ...te.tensor import ComputeOp, Tensor
from . import Schedule, ScheduleRule, is_reduction, stage_state


def schedule_stage_default(s: Schedule, t: Tensor, target: Target) -> None:
    """The default loop nest of `t`'s stage (at root, untouched): vectorized and parallel
    for element-wise stages, parallel rows for reductions; extern stages are left alone."""
    op = t.op
    if not isinstance(op, ComputeOp):
        return
    if is_reduction(op):
        from .reduce import schedule_reduce_stage

        schedule_reduce_stage(s, t, target)
    else:
        from .injective import schedule_injective_stage

        schedule_injective_stage(s, t, target)


def schedule_generic(s: Schedule, outputs: list[Tensor], anchor: Tensor, target: Target) -> None:
    """The fallback: each output gets its default loop nest (the other materialized stages,
    the anchor among them, get theirs from `schedule_secondary`)."""
    for out in outputs:
        schedule_stage_default(s, out, target)


def schedule_secondary(s: Schedule, target: Target) -> None:
    """Give the default loop nest to every compute stage that is still at root with its
    original loops (the anchor's schedule did not place or transform it)."""
    for stage in list(s.stages):
        if isinstance(stage.op, ComputeOp) and stage_state(s, stage.op) == "untouched":
            schedule_stage_default(s, stage.op.output(0), target)


GENERIC: ScheduleRule = ScheduleRule(schedule_generic, anchor_stage=None)
"""Operators without a schedule of their own (convolutions other than 2-D, sorting, scans,
scatter, ...): they never anchor; every output gets its default loop nest."""
