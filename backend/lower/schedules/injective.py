"""The schedule of injective kernels: every output is one vectorized, parallel loop nest.

For an output with axes `(a0, ..., an)`, `f` the vector factor of `an` (the vector width of
the dtype when it divides the extent, else a smaller power of two that does, else the width
with a guarded tail; see `vector_factor`):

    for r in fuse(a0, ..., a(n-1)):      # parallel (with an.outer fused in too when the
      for an.outer in [0, an / f):      #  rows alone give the threads too few iterations)
        for an.inner in [0, f):         # vectorized
          out[...] = ...

When `an` is too short to vectorize (`f` is 0), it is fused with the next axis longer than
1 (one `//`/`%` level, which simplification folds back into a contiguous index) and the
fused loop is split by its vector factor instead. Parallel loops are made only for outputs with at
least `PARALLEL_MIN_ELEMENTS` elements on a target with several threads.

A float32 stage that calls exp, sigmoid, erf or tanh (in its body or a stage inlined into it)
is vectorized several machine vectors at a time when that many divide `an`
(`INTERLEAVED_CALLS`): LLVM splits each wide operation into independent machine
instructions side by side, so the functions' long dependent chains (polynomials, a
division) overlap instead of running one vector at a time at their latency. Measured over
(128, 2048) at 1 thread (fastest thread CPU time of 150 runs, alternating, bit-identical):
exp 402 -> 294 us, sigmoid 527 -> 387, x * sigmoid(x) 536 -> 407, erf 331 -> 310 (4
vectors); tanh 702 -> 589 with 2 vectors (627 with 4: its two branches need twice the
registers).
"""

from __future__ import annotations

import math

from ...target import Target
from ...te.tensor import ComputeOp, Tensor
from ...tir.expr import Call
from ...tir.visitor import sub_expressions
from ..parallel_plan import ELEMENT_WEIGHT
from . import PARALLEL_MIN_ELEMENTS as MIN_ELEMENTS
from . import (
    Schedule,
    ScheduleRule,
    extents,
    inlined_ops,
    parallel_rows,
    vector_factor,
)
from .generic import schedule_generic


def schedule_injective_stage(s: Schedule, t: Tensor, target: Target) -> None:
    """Give the (non-reducing, at root) stage of `t` the vectorized parallel loop nest."""
    stage = s[t]
    axes = list(stage.op.axis)
    sizes = extents(t.op)
    if not axes or 0 in sizes:
        return
    lanes = target.lanes(t.dtype)
    total = math.prod(sizes) * ELEMENT_WEIGHT  # the work (parallel_plan.work_of)
    factor = vector_factor(sizes[-1], lanes)
    wide = lanes * interleave_of(s, t) if t.dtype == "float32" else lanes
    if wide > lanes and sizes[-1] % wide == 0:
        factor = wide
    if factor:
        tail, inner = stage.split(axes[-1], factor=factor)
        stage.vectorize(inner)
        n_tail = -(-sizes[-1] // factor)
        parallel_rows(stage, axes[:-1], sizes[:-1], tail, n_tail, total, target, MIN_ELEMENTS)
        return
    # A short innermost axis: vectorize across it and the next longer axis fused (one level
    # of `//` and `%` in the indices, which simplification folds back).
    k = trailing_pair(sizes)
    span = math.prod(sizes[k:])
    factor = vector_factor(span, lanes)
    if factor and k < len(axes) - 1:
        tail, inner = stage.split(stage.fuse(*axes[k:]), factor=factor)
        stage.vectorize(inner)
        n_tail = -(-span // factor)
        parallel_rows(stage, axes[:k], sizes[:k], tail, n_tail, total, target, MIN_ELEMENTS)
        return
    parallel_rows(stage, axes, sizes, None, 1, total, target, MIN_ELEMENTS)


INTERLEAVED_CALLS = {"exp": 4, "sigmoid": 4, "erf": 4, "tanh": 2}
"""Machine vectors per vector operation of a float32 element-wise stage calling these
intrinsics (the largest count among its calls; module docstring)."""


def interleave_of(s: Schedule, t: Tensor) -> int:
    """How many machine vectors `t`'s stage computes per vector operation: the largest
    `INTERLEAVED_CALLS` count among the calls of its body and of the stages inlined into
    it, else 1."""
    inlined = inlined_ops(s)
    found = 1
    stack, seen = [t.op], {id(t.op)}
    while stack:
        op = stack.pop()
        if not isinstance(op, ComputeOp):
            continue
        for body in op.body:
            for e in sub_expressions(body):
                if isinstance(e, Call):
                    found = max(found, INTERLEAVED_CALLS.get(e.name, 1))
        for producer in op.input_tensors:
            if id(producer.op) in inlined and id(producer.op) not in seen:
                seen.add(id(producer.op))
                stack.append(producer.op)
    return found


def trailing_pair(sizes: list[int]) -> int:
    """The first of the trailing axes that hold the last two axes longer than 1 (and the
    axes of extent 1 around them): fusing `sizes[k:]` nests at most one `//`/`%` pair."""
    long_axes = 0
    k = len(sizes)
    while k > 0 and (long_axes < 2 or sizes[k - 1] == 1):
        if sizes[k - 1] > 1:
            long_axes += 1
        k -= 1
    return k


INJECTIVE: ScheduleRule = ScheduleRule(schedule_generic, anchor_stage=None)
"""Elementwise, broadcast and injective operators: they never anchor a kernel (a kernel of
only such stages gets every output's default loop nest, `generic.schedule_generic`)."""
