"""The schedule of `nn.contrib_conv2d_winograd_without_weight_transform` (the stages of
`computes.winograd`), and of the weight transform when it runs as a kernel.

    input transform (parallel over channels):
      for c:                                            # parallel
        X[:, c] = padded channel (borders peeled by loop partitioning)
        for q (tile rows):
          D[:, :, c, q, :] = tiles (stride-m gathers, vectors along the row's tiles)
          T[e, :, c, q, :]  (e unrolled: each copy its own sum of D rows)
          V[e, n, c, q*TWP:(q+1)*TWP]  (n unrolled: each copy its own sum of T columns)
    batched GEMM M[e, n] = U[e, n] (K x C) @ V[e, n] (C x P): the register-blocked
      micro-kernel of `dense.schedule_gemm` per transform position, parallel over
      positions x column blocks, V's tiles as vectors and U's entries broadcast (from one
      stream per block of rows when U comes packed by output channels)
    output (parallel over images x output channels, the element-wise tail fused):
      for b, k:                                         # fused, parallel
        Z[k, i, :, tiles(b)] (i unrolled, vectors of tiles)
        O[k, rows(b), i, tw*m : tw*m+m]  (vectors along the m columns of a tile)
        for h, w (vectors): out[b, k, h, w] = tail(O[k, b*TH + h // m, h % m, w])

A kernel whose anchor is the direct fallback of the operator (strides, groups, integer
dtypes) gets the generic schedule.

Knobs (`backend.tune.space.winograd_space`; `schedule_winograd(config=...)`, every one
optional, `winograd_defaults` gives what the schedule does without them):
- `rows`, `vectors`: the batched GEMM's register block (output channels x vectors of
  tiles); `k_inner`, `parallel_rows`: as `dense.schedule_gemm`'s knobs.
- `input_vector`: the vector width along a row of tiles in the input transform (a divisor
  of the row's padded tile count), `input_parallel`: whether it runs parallel over
  channels.
- `output_vector`: the vector width of Z's tiles in the output transform; `output_unroll`:
  whether LLVM may unroll its loops over tiles and rows (`OUTPUT_UNROLL_MAX_TILES`).
The tile size is not a knob: it is the operator's `tile_size` attribute, fixed with the
transformed weight's shape when the build rewrites a conv2d, so another tile is another
kernel (another task), not another schedule of this one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ....lang.optable import OpTable
from ...target import Target
from ...te.schedule import AttachKind
from ...te.tensor import ComputeOp, Tensor
from . import Schedule, ScheduleRule, last_stage, stage_order
from .dense import (
    Blocking,
    Product,
    analyze_product,
    choose_blocking,
    install,
    schedule_gemm,
    tail_output,
)

WINOGRAD_STAGES = (
    "winograd_pad",
    "winograd_tiles",
    "winograd_input_rows",
    "winograd_input",
    "winograd_gemm",
    "winograd_output_rows",
    "winograd_output",
)
"""The names of the stages `computes.winograd.winograd_nchw` makes, producers first."""


def _size(iv: object) -> int:
    """The constant extent of an axis (or a dimension); 0 when it is not constant."""
    extent = getattr(getattr(iv, "dom", None), "extent", iv)
    return int(getattr(extent, "value", 0))


def stages_of(anchor: Tensor) -> dict[str, Tensor] | None:
    """The Winograd stages behind an anchor made by `winograd_nchw`, by name; None when the
    anchor is the direct fallback."""
    if not isinstance(anchor.op, ComputeOp) or anchor.op.tag != "conv2d_winograd_nchw":
        return None
    found = {op.name: op.output(0) for op in stage_order([anchor]) if isinstance(op, ComputeOp)}
    if not all(name in found for name in WINOGRAD_STAGES):
        return None
    return {name: found[name] for name in WINOGRAD_STAGES}


def tile_vector(tiles: int, lanes: int) -> int:
    """The vector width along a row of `tiles` tiles: whole vectors of `lanes`, else of 4,
    else the row (1: not vectorized)."""
    for width in (lanes, 4):
        if tiles % width == 0:
            return width
    return tiles


def row_tiles(st: dict[str, Tensor]) -> int:
    """The padded tile count of a row of tiles (`TWP`)."""
    return _size(st["winograd_tiles"].shape[-1])


def input_parallel_default(st: dict[str, Tensor], target: Target) -> bool:
    """Whether the input transform runs parallel over channels by default."""
    work = math.prod(_size(d) for d in st["winograd_input"].shape)
    return target.num_threads > 1 and work >= 16 * 1024


ONE_ROW_MAX_VECTORS = 8
"""A batched GEMM whose tiles make at most this many vectors, and no whole number of
`dense.choose_blocking`'s column blocks, takes them all in one register block of one row
(a vector accumulator each, the weight entry broadcast once). ResNet-18's 128@28 layer on
AVX2, 2 threads: 1 x 7 vectors on its 56 tiles took 0.85x the time of the former 6 x 2 on 64
tiles (8 x 1 on 56: 1.03x; 2 x 7: 1.14x)."""


def gemm_blocking(p: Product, target: Target) -> Blocking:
    """The batched GEMM's default register block: `dense.choose_blocking`, unless its
    column block leaves a partial one: then all the columns in one row
    (`ONE_ROW_MAX_VECTORS`), else whole vectors of columns (a partial column block costs
    the whole product its speed)."""
    sizes = [_size(iv) for iv in p.op.axis]
    lanes = target.lanes(p.op.output(0).dtype)
    blocking = choose_blocking(sizes[-2], sizes[-1], lanes, target)
    if sizes[-1] % blocking.nb and sizes[-1] % lanes == 0:
        if sizes[-1] // lanes <= ONE_ROW_MAX_VECTORS:
            return Blocking(1, sizes[-1], lanes)
        nb = max(
            v * lanes for v in range(1, blocking.nb // lanes + 1) if sizes[-1] % (v * lanes) == 0
        )
        blocking = Blocking(min(sizes[-2], 8), nb, lanes)
    return blocking


OUTPUT_UNROLL_MAX_TILES = 4
"""LLVM unrolls the output transform's loops over tiles and transform rows only for rows of
at most this many tiles; longer rows keep them loops (`pragma no_unroll`). Measured on
ResNet-18, 2 threads: 256@14 (4 tiles a row) ran 4% slower with them rolled, 128@28 (7)
ran as fast and compiled 0.25 s faster (of 0.70 s)."""


def winograd_defaults(st: dict[str, Tensor], target: Target) -> dict[str, Any]:
    """The knobs of the transforms the schedule takes without a config (module docstring;
    the GEMM's defaults are `gemm_blocking`'s and `dense.gemm_defaults`')."""
    tiles = row_tiles(st)
    return {
        "output_unroll": tiles <= OUTPUT_UNROLL_MAX_TILES,
        "input_vector": tile_vector(tiles, target.lanes(st["winograd_input"].dtype)),
        "input_parallel": input_parallel_default(st, target),
        # the schedule takes the lanes of the kernel's output (the tail's dtype)
        "output_vector": tile_vector(tiles, target.lanes(st["winograd_output"].dtype)),
    }


def schedule_input_transform(
    s: Schedule, st: dict[str, Tensor], target: Target, width: int, parallel: bool
) -> None:
    """V at root, parallel over channels (with `parallel`); the padded channel per channel,
    D and T per row of tiles, vectors of `width` along the tiles of the row."""
    v = s[st["winograd_input"]]
    e, n, c, p = v.op.axis
    row_tiles = _size(st["winograd_tiles"].shape[-1])
    row, inner = v.split(p, factor=row_tiles)
    if width < row_tiles:
        block, inner = v.split(inner, factor=width)
        v.reorder(c, row, e, n, block, inner)
    else:
        v.reorder(c, row, e, n, inner)
    v.unroll(n)
    if width > 1:
        v.vectorize(inner)
    if parallel:
        v.parallel(c)
    s[st["winograd_pad"]].compute_at(v, c)
    for name in ("winograd_input_rows", "winograd_tiles"):
        stage = s[st[name]]
        stage.compute_at(v, row)
        axes = list(stage.op.axis)
        if name == "winograd_input_rows":
            stage.unroll(axes[0])
        if width > 1:
            _, lane = stage.split(axes[-1], factor=width)
            stage.vectorize(lane)


def schedule_batched_gemm(
    s: Schedule, gemm: Tensor, target: Target, config: Mapping[str, Any] | None = None
) -> None:
    """The register-blocked product of `dense` per transform position; `config` may set
    `rows` and `vectors` of the register block and `dense.schedule_gemm`'s knobs."""
    p = analyze_product(s[gemm].op)
    if p is None:
        return
    blocking = gemm_blocking(p, target)
    knobs = dict(config or {})
    if "rows" in knobs or "vectors" in knobs:
        lanes = blocking.lanes
        mr = int(knobs.pop("rows", blocking.mr))
        nb = int(knobs.pop("vectors", blocking.nb // lanes)) * lanes
        blocking = Blocking(mr, nb, lanes)
    host, parts = install(s, [gemm], gemm, "dense.gemm", nb=blocking.nb)
    schedule_gemm(s, host, parts["main"], parts.get("packed"), blocking, target, knobs or None)


def schedule_output(
    s: Schedule,
    outputs: list[Tensor],
    anchor: Tensor,
    st: dict[str, Tensor],
    target: Target,
    vec: int | None = None,
    unroll: bool = True,
) -> None:
    """The crop (inlined into the element-wise tail when there is one) parallel over images
    x output channels, with Z and O computed per output channel, Z's tiles in vectors of
    `vec` (None: whole vectors of the output's lanes, else of 4, else the row); without
    `unroll`, LLVM may not unroll Z's and O's loops over tiles and rows (`no_unroll`)."""
    host = tail_output(s, outputs, anchor)
    if host is None:
        host = anchor
    elif host is not anchor:
        s[anchor].compute_inline()
    out = s[host]
    b, k, _, w = out.op.axis
    lanes = target.lanes(host.dtype)
    width = _size(w)
    if width >= lanes:
        _, wl = out.split(w, factor=lanes)
        out.vectorize(wl)
    elif width >= 4:
        out.vectorize(w)
    row = out.fuse(b, k)
    if target.num_threads > 1 and _size(row) > 1:
        out.parallel(row)
    z, o = s[st["winograd_output_rows"]], s[st["winograd_output"]]
    z.compute_at(out, row)
    k, i, n, p = z.op.axis
    if vec is None:
        vec = tile_vector(row_tiles(st), lanes)
    po, pl = z.split(p, factor=vec)
    z.reorder(k, i, po, n, pl)
    z.unroll(i)
    if vec > 1:
        z.vectorize(pl)
    o.compute_at(out, row)
    x = o.op.axis[3]
    tile = _size(o.op.axis[2])
    xo, j = o.split(x, factor=tile)
    o.vectorize(j)
    if not unroll:
        for stage, loop in ((z, po), (z, n), (o, o.op.axis[1]), (o, xo)):
            stage.pragma(loop, "no_unroll")


GEMM_KNOBS = ("rows", "vectors", "k_inner", "unroll", "parallel", "parallel_rows")
"""The knobs `schedule_winograd` hands to the batched GEMM."""


def schedule_winograd(
    s: Schedule,
    outputs: list[Tensor],
    anchor: Tensor,
    target: Target,
    config: Mapping[str, Any] | None = None,
) -> None:
    """The nest of the module docstring; the fallback anchor gets the generic schedule.
    `config` sets knobs (module docstring); those it does not name keep their defaults."""
    st = stages_of(s[anchor].op.output(0))
    if st is None:
        from .generic import schedule_generic

        schedule_generic(s, outputs, anchor, target)
        return
    config = config or {}
    knobs = {**winograd_defaults(st, target), **config}
    gemm_config = {k: v for k, v in config.items() if k in GEMM_KNOBS}
    schedule_input_transform(
        s, st, target, int(knobs["input_vector"]), bool(knobs["input_parallel"])
    )
    schedule_batched_gemm(s, st["winograd_gemm"], target, gemm_config)
    out_vec = config.get("output_vector")
    vec = None if out_vec is None else int(out_vec)
    schedule_output(s, outputs, anchor, st, target, vec, bool(knobs["output_unroll"]))


def schedule_weight_transform(
    s: Schedule, outputs: list[Tensor], anchor: Tensor, target: Target
) -> None:
    """The weight transform as a kernel: both stages at root, the transform-position axis
    unrolled, parallel over it, the input channels as vectors (the weight is read with a
    stride of 9 along them: gathers)."""
    op = s[anchor].op
    if not isinstance(op, ComputeOp) or op.tag != "winograd_weight_transform":
        from .generic import schedule_generic

        schedule_generic(s, outputs, anchor, target)
        return
    for t, select_axis in ((anchor, 0), (op.input_tensors[0], 1)):
        stage = s[t]
        if stage.attach_kind is AttachKind.INLINE:
            continue
        axes = list(stage.op.axis)
        lanes = target.lanes(t.dtype)
        stage.reorder(axes[2], axes[0], axes[1], axes[3])
        if _size(axes[3]) >= lanes:
            _, inner = stage.split(axes[3], factor=lanes)
            stage.vectorize(inner)
        stage.unroll(axes[select_axis])
        if target.num_threads > 1 and math.prod(_size(a) for a in axes) >= 16 * 1024:
            stage.parallel(axes[2])


WINOGRAD: ScheduleRule = ScheduleRule(schedule_winograd, last_stage)
"""Winograd convolution kernels, anchored at the crop stage (the operator's result)."""

WEIGHT_TRANSFORM: ScheduleRule = ScheduleRule(schedule_weight_transform, last_stage)
"""Winograd weight-transform kernels."""

SCHEDULES: OpTable[ScheduleRule] = OpTable("schedule")
SCHEDULES.add("nn.contrib_conv2d_winograd_without_weight_transform", WINOGRAD)
SCHEDULES.add("nn.contrib_conv2d_winograd_weight_transform", WEIGHT_TRANSFORM)

__all__ = [
    "GEMM_KNOBS",
    "gemm_blocking",
    "row_tiles",
    "schedule_weight_transform",
    "schedule_winograd",
    "stages_of",
    "winograd_defaults",
]
