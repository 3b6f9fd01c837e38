"""The schedule of pooling (max/avg, 1-3 spatial dims, global and adaptive).

**NCHW 2-D window pools** (`"plane"`) follow the depthwise convolution's nest
(`schedules/depthwise.py`): per channel, inside the parallel loop, a copy of the input plane
padded with the pool's fill (the dtype's lowest value for max, zero for avg; `ceil_mode`'s
extra rows and columns included) and split into its `sh x sw` stride phases, so every tap
reads a contiguous vector of output columns and no load is guarded:

    for n, c:                                              # fused, parallel: one plane
      plane[ph, pw, r, q] = x[n, c, r*sh + ph - pt, q*sw + pw - pl]   (fill outside)
      for oh, ow.outer:
        acc[ow.inner] = max (or sum) over kh, kw of
            plane[kh*dh % sh, kw*dw % sw, oh + kh*dh // sh, ow + kw*dw // sw]
        out[n, c, oh, ow] = tail(acc)         # avg: the compute's divide by the count

**Other window pools** (other layouts, 1-D and 3-D) inline the pad stage (the window reads
go through `if_then_else`) and vectorize over the output width:

    for f in fuse(n, c, oh, ow.outer):        # parallel
      for kh, kw:
        for ow.inner in [0, v):               # vectorized over the output width
          out[n, c, oh, ow] = max(out[...], x[n, c, oh*s + kh - p, ow*s + kw - p])

Average pooling divides in a second stage (the output): the window stage is computed inside
the output's rows and both vectorize over the width. Global pooling reduces the innermost
axes: parallel over `n * c`, the window loops contiguous.
"""

from __future__ import annotations

import math
from typing import Any

from attrs import frozen

from ....lang.opdefs.semantics import lowest
from ....lang.optable import OpTable
from ...target import Target
from ...te.rewrite import register_rewrite
from ...te.schedule import AttachKind
from ...te.tensor import ComputeOp, Tensor, compute, max_reduce, reduce_axis, sum_
from ...tir.expr import PrimExpr, all_of, const
from ...tir.op import if_then_else
from . import PARALLEL_MIN_WORK, Schedule, ScheduleRule, last_stage
from .dense import (
    VECTOR_REGISTERS,
    _ints,
    anchor_view,
    install,
    replace_anchor,
    require,
    tail_output,
)
from .depthwise import window_block
from .reduce import schedule_with_tail

PLANE_ENABLED = True
"""Whether NCHW 2-D window pools get the stride-phase plane nest (for comparisons)."""

WIDTH_VECTORS = 4
"""Vectors of output columns (accumulators) per register block."""


@frozen
class WindowPool:
    """An NCHW 2-D window pool of `x` (`[N, C, H, W]`) to `out_shape`: `kind` "max" or
    "avg", the window parameters per axis (H, W), and the stride-phase plane's extents."""

    kind: str
    x: Tensor
    padded: Tensor
    window: Tensor
    out_shape: tuple[int, ...]
    kernel: tuple[int, int]
    strides: tuple[int, int]
    dilation: tuple[int, int]
    pads: tuple[tuple[int, int], tuple[int, int]]
    count_include_pad: bool
    phases_h: int
    phases_w: int
    rows: int
    cols: int


def analyze_window_pool(anchor: Tensor) -> WindowPool | None:
    """The plane view of a pool anchor (`pool_max`, or `pool_avg` over `pool_sum`), or None
    when it is not a 2-D window pool over NCHW."""
    op = anchor.op
    if not isinstance(op, ComputeOp):
        return None
    if op.tag == "pool_avg":
        (window,) = op.input_tensors
        if getattr(window.op, "tag", "") != "pool_sum":
            return None
    elif op.tag == "pool_max":
        window = anchor
    else:
        return None
    return analyze_window(window.op)


def analyze_window(op: Any) -> WindowPool | None:
    """The plane view of a pool's window stage (`pool_max`, or average pooling's
    `pool_sum`), or None when it is not a 2-D window pool over NCHW."""
    if not isinstance(op, ComputeOp) or op.tag not in ("pool_max", "pool_sum"):
        return None
    window, kind = op.output(0), ("max" if op.tag == "pool_max" else "avg")
    info: Any = op.attrs
    if info.get("layout") != "NCHW" or len(info.get("pool_size", ())) != 2:
        return None
    (padded,) = window.op.input_tensors
    own_pad = padded.op.name == f"pool_{kind}_pad"  # not a pad stage the pool's input is
    x = padded.op.input_tensors[0] if own_pad else padded
    if len(x.shape) != 4 or len(window.shape) != 4:
        return None
    kernel, strides, dilation = info["pool_size"], info["strides"], info["dilation"]
    out_shape = tuple(_ints(window.shape))
    (kh, kw), (sh, sw), (dh, dw) = kernel, strides, dilation
    phases_h = sh if any(k * dh % sh for k in range(kh)) else 1
    phases_w = sw if any(k * dw % sw for k in range(kw)) else 1
    rows = out_shape[2] + (kh - 1) * dh // sh
    cols = out_shape[3] + (kw - 1) * dw // sw
    (pt, pb), (pl, pr) = info["padding"]
    return WindowPool(
        kind, x, padded, window, out_shape, tuple(kernel), tuple(strides), tuple(dilation),
        ((pt, pb), (pl, pr)), bool(info.get("count_include_pad", False)), phases_h, phases_w,
        rows, cols,
    )  # fmt: skip


def pool_plane(p: WindowPool) -> Tensor:
    """`[N, C, phases_h, phases_w, rows, cols]`: each input plane padded with the pool's
    fill and split into its stride phases."""
    x = p.x
    n_, c_, h, w = _ints(x.shape)
    (sh, sw), ((pt, _), (pl, _)) = p.strides, p.pads
    fill = const(lowest(x.dtype), x.dtype) if p.kind == "max" else const(0, x.dtype)

    def body(n: PrimExpr, ch: PrimExpr, ph: PrimExpr, pw: PrimExpr, r: PrimExpr,
             q: PrimExpr) -> PrimExpr:  # fmt: skip
        hh, ww = r * sh + ph - pt, q * sw + pw - pl
        ok = all_of(hh >= 0, hh < h, ww >= 0, ww < w)
        return if_then_else(ok, x[n, ch, hh, ww], fill)

    shape = (n_, c_, p.phases_h, p.phases_w, p.rows, p.cols)
    return compute(shape, body, name=f"{p.window.op.name}_plane", tag="pad")  # type: ignore[no-any-return]


def plane_window(p: WindowPool, plane: Tensor) -> Tensor:
    """The window max (or sum) `[N, C, OH, OW]` over the phase planes."""
    rh, rw = reduce_axis(p.kernel[0], "rh"), reduce_axis(p.kernel[1], "rw")
    (sh, sw), (dh, dw) = p.strides, p.dilation

    def body(n: PrimExpr, c: PrimExpr, oh: PrimExpr, ow: PrimExpr) -> PrimExpr:
        th, tw = rh.var * dh, rw.var * dw
        ph = th % sh if p.phases_h > 1 else const(0)
        pw = tw % sw if p.phases_w > 1 else const(0)
        value = plane[n, c, ph, pw, oh + th // sh, ow + tw // sw]
        if p.kind == "max":
            return max_reduce(value, axis=[rh, rw])
        return sum_(value, axis=[rh, rw])

    op = p.window.op
    assert isinstance(op, ComputeOp)
    return compute(p.out_shape, body, name=f"{op.name}_phased", tag=op.tag, attrs=op.attrs)  # type: ignore[no-any-return]


@register_rewrite("pool.plane")
def plane_rewrite(op: Any) -> dict[str, Tensor]:
    """The window stage `op` as `plane_window` over its phase planes (`"main"`, `"plane"`):
    a max pool's stage becomes a view of it, an average pool's window sum becomes it (the
    average stage, which divides by the count, stays)."""
    p = require(analyze_window(op), "pool.plane", op)
    plane = pool_plane(p)
    main = plane_window(p, plane)
    view = anchor_view(op, lambda *i: main[i]) if p.kind == "max" else main
    return {"view": view, "main": main, "plane": plane}


def schedule_plane_pool(
    s: Schedule, outputs: list[Tensor], anchor: Tensor, p: WindowPool, target: Target
) -> None:
    """The plane nest of the module docstring."""
    if p.kind == "max":
        host, parts = install(s, outputs, anchor, "pool.plane")
    else:  # the window sum is replaced; the average stage (the compute's count) stays
        host = tail_output(s, outputs, anchor)
        parts = replace_anchor(s, p.window, "pool.plane")
        if host is None:
            host = anchor
        elif host is not anchor:
            s[anchor].compute_inline()
    main, plane = parts["main"], parts["plane"]
    lanes = target.lanes(anchor.dtype)
    ow_ = p.out_shape[3]
    regs = VECTOR_REGISTERS.get(target.vector_bits, 16)
    vecs = max(1, min(WIDTH_VECTORS, regs // 2, -(-ow_ // lanes)))
    st = s[host]
    n, c, _, ow = st.op.axis
    plane_loop = st.fuse(n, c)
    owo, owi = st.split(ow, factor=vecs * lanes)
    _, owl = st.split(owi, factor=lanes)
    st.vectorize(owl)
    work = math.prod(p.out_shape) * p.kernel[0] * p.kernel[1]
    if target.num_threads > 1 and work >= PARALLEL_MIN_WORK:
        st.parallel(plane_loop)
    ps = s[plane]
    ps.compute_at(st, plane_loop)
    pn, pc, ph, pw, r, q = ps.op.axis
    ps.reorder(pn, pc, ph, r, q, pw)
    if p.phases_w > 1:
        ps.unroll(pw)
    window_block(s, main, st, owo, lanes)
    if p.padded is not p.x and s[p.padded].attach_kind is not AttachKind.INLINE:
        s[p.padded].compute_inline()  # nothing reads the old padding any more


def schedule_pool(s: Schedule, outputs: list[Tensor], anchor: Tensor, target: Target) -> None:
    """Pooling kernels (module docstring)."""
    p = analyze_window_pool(anchor) if PLANE_ENABLED else None
    if p is not None and 0 not in p.out_shape:
        schedule_plane_pool(s, outputs, anchor, p, target)
        return
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
