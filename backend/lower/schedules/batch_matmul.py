"""The schedule of `batch_matmul`: the matrix-product micro-kernel of `dense`, per batch.

`C[b, i, j] = sum_k A[b, i, k] * B[b, j, k]` (TVM's default `transpose_b=True`; any
transposes, and a batch of 1 that broadcasts): the rhs `B[b]` is packed per batch into
`[J/NB, K, NB]` when it is contiguous in k and read directly when it is contiguous in j
(`transpose_b=False`); the parallel loop runs over batch x column blocks (x row blocks when
there are few), as `dense.schedule_gemm` describes. Products with few rows per batch use
the GEMV form.
"""

from __future__ import annotations

from ....lang.optable import OpTable
from ...target import Target
from ...te.tensor import Tensor
from . import Schedule, ScheduleRule, last_stage
from .dense import schedule_product


def schedule_batch_matmul(
    s: Schedule, outputs: list[Tensor], anchor: Tensor, target: Target
) -> None:
    """The per-batch register-blocked product (module docstring); an anchor of another form
    gets the generic schedule."""
    if not schedule_product(s, outputs, anchor, target):
        from .generic import schedule_generic

        schedule_generic(s, outputs, anchor, target)


BATCH_MATMUL: ScheduleRule = ScheduleRule(schedule_batch_matmul, last_stage)
"""`batch_matmul` kernels, anchored at the product stage."""

SCHEDULES: OpTable[ScheduleRule] = OpTable("schedule")
SCHEDULES.add("nn.batch_matmul", BATCH_MATMUL)

__all__ = ["schedule_batch_matmul"]
