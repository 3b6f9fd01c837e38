"""The schedule of `batch_matmul`: the matrix-product micro-kernel of `dense`, per batch.

`C[b, i, j] = sum_k A[b, i, k] * B[b, j, k]` (TVM's default `transpose_b=True`; any
transposes, and a batch of 1 that broadcasts): the rhs `B[b]` is packed per batch into
`[J/NB, K, NB]` when it is contiguous in k and read directly when it is contiguous in j
(`transpose_b=False`); the parallel loop runs over batch x column blocks (x row blocks when
there are few), as `dense.schedule_gemm` describes. Products with few rows per batch use
the GEMV form.
"""

from __future__ import annotations

from ...te.tensor import Tensor
from ..target import Target
from . import PRIORITY_COMPLEX, Schedule, register_schedule
from .dense import schedule_product


@register_schedule("batch_matmul", PRIORITY_COMPLEX)
def schedule_batch_matmul(
    s: Schedule, outputs: list[Tensor], anchor: Tensor, target: Target
) -> None:
    """The per-batch register-blocked product (module docstring); an anchor of another form
    gets the generic schedule."""
    if not schedule_product(s, outputs, anchor, target):
        from .generic import schedule_generic

        schedule_generic(s, outputs, anchor, target)


__all__ = ["schedule_batch_matmul"]
