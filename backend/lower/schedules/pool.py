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

from ...te.tensor import Tensor
from ..target import Target
from . import PRIORITY_REDUCE, Schedule, register_schedule
from .reduce import schedule_with_tail


@register_schedule("pool", PRIORITY_REDUCE)
@register_schedule("global_pool", PRIORITY_REDUCE)
@register_schedule("adaptive_pool", PRIORITY_REDUCE)
def schedule_pool(s: Schedule, outputs: list[Tensor], anchor: Tensor, target: Target) -> None:
    """Pooling kernels (module docstring)."""
    schedule_with_tail(s, outputs, anchor, target, keep_inner=True)
