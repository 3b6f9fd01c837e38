"""The schedule of reductions, alone or followed by an element-wise tail (mean's divide,
layer norm's normalize, softmax's stages, average pooling's divide).

A reduction stage at root, with data axes `D` (last one `d`) and reduction axes `R`:

    reads' last index is reduced      for f in fuse(D):            # parallel
    (sum over the last axis):           for r in R:                # contiguous, serial:
                                                                   # LLVM vectorizes it
    reads' last index follows d       for f in fuse(D[:-1]):       # parallel
    (sum over a middle axis, a          for d.outer:
     pooling window x[.., d*s + k]):      for r in R:
                                            for d.inner in [0, v):   # vectorized

A kernel whose output `out` reads the anchor through element-wise stages: the `L` leading
axes of `out` along which the anchor (and every other materialized stage that can) is read
element for element (`attach_depths`) are fused into one row loop (parallel when there is
enough work), those stages are computed inside it (`compute_at`), and `out`'s remaining
innermost axis is vectorized:

    for row in fuse(out[:L]):                  # parallel
      <each attached stage, for this row>
      for out[L:] ...: for inner in [0, v):    # vectorized

If bound inference cannot shrink a stage computed at a fused loop to one iteration's
region (`fused_attach_is_exact`), the rows stay separate loops: the stages go inside the
innermost row, the outermost row with more than one iteration is parallel.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

from ....lang.optable import OpTable
from ...target import Target
from ...te.tensor import ComputeOp, Operation, Tensor
from . import (
    PARALLEL_MIN_WORK,
    Schedule,
    ScheduleRule,
    attach_depths,
    extents,
    inlined_ops,
    innermost_read,
    is_reduction,
    last_reduction,
    parallel_rows,
    reduce_extent,
    stage_order,
    vector_factor,
)


def _extent_of(iv: Any) -> int | None:
    return getattr(iv.dom.extent, "value", None)


def _work(op: Operation) -> int:
    return math.prod(extents(op)) * reduce_extent(op)


def _vector_inner(stage: Any, op: ComputeOp, first: int, target: Target) -> tuple[Any, int]:
    """In a reduction stage whose reads follow its last data axis: split that axis by its
    vector factor and move the reduction loops between the parts (`first`: the first data
    axis to reorder). Returns (the loop outside the reduction loops, its extent): the outer
    part, or the whole axis when it is too short to vectorize."""
    data, red = list(op.axis), list(op.reduce_axis)
    sizes = extents(op)
    factor = vector_factor(sizes[-1], target.lanes(op.output(0).dtype))
    if factor:
        xo, xi = stage.split(data[-1], factor=factor)
        stage.reorder(*data[first:-1], xo, *red, xi)
        stage.vectorize(xi)
        return xo, -(-sizes[-1] // factor)
    stage.reorder(*data[first:], *red)
    return data[-1], sizes[-1]


def _reads_along_data(s: Schedule, op: ComputeOp) -> bool:
    return (
        bool(op.axis)
        and bool(op.reduce_axis)
        and extents(op)[-1] > 1
        and op.num_outputs == 1
        and innermost_read(op, inlined_ops(s)) == "data"
    )


def schedule_reduce_stage(s: Schedule, t: Tensor, target: Target) -> None:
    """The root loop nest of the reduction stage of `t` (see the module docstring)."""
    op = t.op
    assert isinstance(op, ComputeOp)
    stage = s[t]
    data = list(op.axis)
    sizes = extents(op)
    if 0 in sizes or not data:
        return
    if _reads_along_data(s, op):
        tail, tail_extent = _vector_inner(stage, op, 0, target)
        parallel_rows(stage, data[:-1], sizes[:-1], tail, tail_extent, _work(op), target)
    else:
        parallel_rows(stage, data, sizes, None, 1, _work(op), target)


@functools.cache
def fused_attach_is_exact() -> bool:
    """Whether bound inference gives a stage computed at a fused loop only the region of one
    fused iteration (else attaching at a fused loop recomputes the whole stage each time,
    and the rows are kept as separate loops)."""
    from ...te.bound import infer_bound
    from ...te.schedule import create_schedule
    from ...te.tensor import compute, placeholder, reduce_axis, sum_

    a = placeholder((2, 3, 4), "float32", "a")
    k = reduce_axis(4, "k")
    b = compute((2, 3), lambda i, j: sum_(a[i, j, k], axis=k), "b")
    c = compute((2, 3), lambda i, j: b[i, j], "c")
    s = create_schedule(c)
    s[b].compute_at(s[c], s[c].fuse(*c.op.axis))
    try:
        shape = infer_bound(s).stages[s[b]].shape
    except Exception:  # any failure: do not rely on it
        return False
    return all(getattr(d, "value", None) == 1 for d in shape)


def _rows(
    s: Schedule, t: Tensor, level: int, target: Target, block: int = 1
) -> tuple[Any, list[Any], int]:
    """Make the row loops of `t`'s stage (its first `level` axes) and vectorize its last
    remaining axis. Returns (loop to attach stages at, row loops, extent of the rows). The
    rows are one fused loop when bound inference handles fused loops. With `block` > 1
    dividing the last row axis (and an axis left inside the rows), that axis is split and
    the stages are attached per block of `block` rows (`row_block`)."""
    stage = s[t]
    axes = list(stage.op.axis)
    sizes = extents(t.op)
    blocked = (
        1 < block < sizes[level - 1]
        and sizes[level - 1] % block == 0
        and level < len(axes)
        and fused_attach_is_exact()
    )
    if level < len(axes):
        if not is_reduction(t.op):
            factor = vector_factor(sizes[-1], target.lanes(t.dtype))
            if factor:
                _, xi = stage.split(axes[-1], factor=factor)
                stage.vectorize(xi)
        elif _reads_along_data(s, t.op):  # type: ignore[arg-type]
            _vector_inner(stage, t.op, level, target)  # type: ignore[arg-type]
    rows = axes[:level]
    row_extent = math.prod(sizes[:level])
    if blocked:
        outer, _ = stage.split(rows[-1], factor=block)
        rows = [*rows[:-1], outer]
        row_extent //= block
    if len(rows) > 1 and fused_attach_is_exact():
        rows = [stage.fuse(*rows)]
    return rows[-1], rows, row_extent


def _vectorize_attached(
    s: Schedule, op: ComputeOp, level: int, target: Target, interleave: int = 1
) -> None:
    """Inside a row: a reduction with data axes left after `level` that reads along its
    last one gets the reduction loops outside and that axis vectorized; an element-wise
    stage (softmax's exponentials) gets its last axis vectorized, by `interleave` machine
    vectors at a time when that many divide it (`schedule_with_tail`)."""
    if len(op.axis) <= level:
        return
    if not is_reduction(op):
        lanes = target.lanes(op.output(0).dtype)
        extent = extents(op)[-1]
        wide = lanes * interleave
        factor = wide if interleave > 1 and extent % wide == 0 else vector_factor(extent, lanes)
        if factor:
            _, inner = s[op].split(op.axis[-1], factor=factor)
            s[op].vectorize(inner)
    elif _reads_along_data(s, op):
        _vector_inner(s[op], op, level, target)


def output_reading(outputs: list[Tensor], anchor: Tensor) -> Tensor:
    """The first output that depends on `anchor` (the first output if none does)."""
    for out in outputs:
        if any(op is anchor.op for op in stage_order([out])):
            return out
    return outputs[0]


def schedule_with_tail(
    s: Schedule,
    outputs: list[Tensor],
    anchor: Tensor,
    target: Target,
    keep_inner: bool = False,
    row_block: int = 1,
    interleave: int = 1,
) -> None:
    """Schedule `anchor`'s reduction inside the loops of the output that reads it (module
    docstring); with `keep_inner`, the output's innermost axis stays a vector loop even when
    it is aligned too (pooling: the window loops go outside a vector of output columns).
    With `interleave` > 1, an element-wise stage computed inside the rows is vectorized by
    that many machine vectors at a time (LLVM splits each operation into that many
    independent instructions side by side: a long dependent chain such as the exponential's
    polynomial then fills the core's schedulers from several vectors at once).
    With `row_block` > 1 dividing the innermost row axis, the stages are computed for a
    block of that many rows at a time: each stage's loop over the block's rows has
    independent iterations, so the out-of-order core overlaps one row's serial steps (a
    horizontal reduction, a division) with the next row's work."""
    from .generic import schedule_stage_default

    out = output_reading(outputs, anchor)
    for other in outputs:
        if other is not out:
            schedule_stage_default(s, other, target)
    order = stage_order([out])
    inlined = inlined_ops(s)
    output_ids = {id(t.op) for t in outputs}
    stages = [
        op
        for op in order
        if isinstance(op, ComputeOp) and id(op) not in inlined and id(op) not in output_ids
    ]
    sizes = extents(out.op)
    if not stages or 0 in sizes:
        schedule_stage_default(s, out, target)
        return
    depths = attach_depths(out, stages, inlined, order)
    if anchor.op is out.op:
        level = min(depths.get(id(op), 0) for op in stages)
    else:
        level = depths.get(id(anchor.op), 0)
    if keep_inner and level == len(sizes) and level > 1 and sizes[-1] >= 2:
        level -= 1
    if level == 0:
        schedule_stage_default(s, out, target)
        return
    at, rows, row_extent = _rows(s, out, level, target, row_block)
    work = math.prod(sizes)
    for op in stages:
        if depths.get(id(op), 0) >= level:
            s[op].compute_at(s[out], at)
            work += _work(op)
            _vectorize_attached(s, op, level, target, interleave)  # type: ignore[arg-type]
    if work >= PARALLEL_MIN_WORK and target.num_threads > 1 and row_extent > 1:
        wide = [r for r in rows if (_extent_of(r) or 0) > 1]
        s[out].parallel(wide[0] if wide else rows[0])


def schedule_reduce(
    s: Schedule,
    outputs: list[Tensor],
    anchor: Tensor,
    target: Target,
    config: Mapping[str, Any] | None = None,
) -> None:
    """Reductions (sum, mean, max, argmax, layer norm's statistics ...). `config`
    (`backend.tune`) may set `row_block`, `schedule_with_tail`'s (default 1)."""
    row_block = int((config or {}).get("row_block", 1))
    schedule_with_tail(s, outputs, anchor, target, row_block=row_block)


REDUCE: ScheduleRule = ScheduleRule(schedule_reduce, last_reduction)
"""Reductions, anchored at the operator's last reduction stage (an operator whose compute
reduces nothing, `sum(x, axis=[])`, does not anchor)."""

SCHEDULES: OpTable[ScheduleRule] = OpTable("schedule")
SCHEDULES.register(  # opaque operators whose computes are statistics, then a tail
    "nn.layer_norm",
    "nn.instance_norm",
    "nn.group_norm",
    "nn.l2_normalize",
    "nn.lrn",
    "nn.cross_entropy",
    "nn.cross_entropy_with_logits",
    "sparse_to_dense",
)(REDUCE)
