"""The schedules of the channel-blocked convolutions `nn.contrib_conv2d_NCHWc` (data
`NCHW{bi}c`, weight `OIHW{bi}i{bo}o`, output `NCHW{bo}c`) and
`nn.contrib_depthwise_conv2d_NCHWc` (weight `OIHW1i{b}o`).

In these layouts a vector of `b` channels is contiguous everywhere (input, weight and
output), so both nests use it as their SIMD vector, for any stride, with no gathers,
shuffles or packing at run time. The anchor is replaced (`dense.install`) by a compute with
the channel blocks as separate reduction axes (no `//`, `%` in the indices), computed inside
the output's loops so that the fused tail (bias add, relu, clip, residual add) reads the
accumulators before the store.

**conv2d_NCHWc**: a register block of `ocv` output-channel vectors by `owb` output columns,
the input element broadcast, the weight vector loaded contiguously:

    pad the input (its own parallel loop nest, when the convolution pads)
    for n, oc.outer, oh:                                   # fused, parallel
      for ow.outer:
        for ic.outer, kh, kw, ic.inner:                    # ic.inner unrolled
          for ocv, owb (unrolled):                         # ocv x owb vector registers
            acc[ocv, owb, :] += broadcast(x[n, ic.o, oh*s + kh*d, (ow0+owb)*s + kw*d, ic.i])
                                * w[oc.o*ocv + ocv, ic.o, kh, kw, ic.i, :]
        out[n, oc.o*ocv + ocv, oh, ow0 + owb, :] = tail(acc[ocv, owb, :])

When the weights of one register block (`ocv x IC x KH x KW x bo`) outgrow L1 and the row
has several column blocks, the input channels are walked in blocks (`ic.outer` split) with
the whole row's accumulators in a local buffer, so that a block's weights stay in L1 while
the column blocks go by.

**depthwise_conv2d_NCHWc**: one vector of `b` channels per output column, a register block
of output columns, a contiguous input vector per tap (any stride), read straight from the
unpadded input:

    for n, c.outer:                                        # fused, parallel (with oh too
      for oh, ow.outer:                                    #  for stride 1, narrow outputs)
        for kh, kw (unrolled): for owb (unrolled):
          acc[owb, :] += x[n, c.outer, ih, iw, :] if (ih, iw) inside else 0
                         * w[c.outer, 0, kh, kw, 0, :]     # ih = oh*s + kh*d - pt, ...
        out[n, c.outer, oh, ow0 + owb, :] = tail(acc[owb, :])

The padding is inlined as guards, and loop partitioning (`tir.transform.loop_partition`)
splits the first and last rows and column blocks off `oh` and `ow.outer`, so the interior
runs unguarded and nothing copies the input (a padded copy per plane made the 112x112 and
56x56 layers 10-25% slower than the NCHW kernel; with the guards they are 15-30% faster).
LLVM loads each input vector once per register block (the `kw` taps of neighbouring
columns read the same vector).

A convolution of another form (groups on conv2d_NCHWc, other layout strings) gets the
generic schedule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from attrs import frozen

from ....lang.opdefs.semantics.layouts import layout_letters
from ....lang.optable import OpTable
from ...target import Target
from ...te.rewrite import register_rewrite
from ...te.schedule import AttachKind
from ...te.tensor import ComputeOp, PlaceholderOp, Tensor, compute, reduce_axis, sum_
from ...tir.expr import PrimExpr, cast
from . import PARALLEL_MIN_WORK, Schedule, ScheduleRule, last_stage
from .conv2d import Conv2D, _ints, analyze_conv
from .dense import VECTOR_REGISTERS, anchor_view, install, require

ACCUMULATOR_BUDGET = {32: 21, 16: 12}
"""Vector accumulators a conv2d_NCHWc register block may use, per register count (the rest
hold the weight vectors and the broadcast input). With 32 registers (AVX-512), 24 (3 x 8)
ran MobileNet-v2's 24->144 1x1 conv at half the speed of 3 x 4 on Zen 4 (328 vs 160 us), with
8 broadcasts and 3 weight vectors live beside them; 21 made MobileNet-v2 3.5-6% and
ResNet-18 1.5-2% faster than 24 (A/B in one process, bench/ab_models.py); 18 and 16 were in
between."""

WEIGHT_BLOCK_BYTES = 24 * 1024
"""conv2d_NCHWc walks the input channels in blocks whose weights (for one register block
of output channels) take about this much, when the whole reduction's do not fit."""

ROWS_BELOW_VECTORS = 2
"""Depthwise outputs narrower than this many vectors run parallel over output rows rather
than whole channel-block planes (measured with a padded copy per task: 7x7 layers 25%
faster, 28x28 and wider ones slower; the row guards then stay, as `oh` is fused into the
parallel loop, which costs nothing measurable on the 14x14 and 7x7 layers). Stride-1
depthwise layers of any width run by rows too: with the guarded loads (no padded copy)
MobileNet-v2's 112-, 56- and 28-wide stride-1 layers are 15-20% faster by rows (whole
model, 2 threads: 168 -> 136-155, 190 -> 153-159, 64 -> 52 us); its stride-2 layers
are 5-10% slower by rows and keep whole planes."""

ROWS_AT_STRIDE_ONE = True
"""Whether stride-1 depthwise layers run parallel over rows whatever their width (above;
off: only narrow outputs do, for comparisons)."""

DEPTHWISE_COLUMNS = {32: 8, 16: 4}
"""Output columns (vector accumulators) per depthwise register block, per register count,
when the task is a whole channel-block plane (measured, AVX2, MobileNet-v2's 112-28 wide
layers: 4 columns 5-15% faster than 8, which spill; 3 about as fast as 4)."""

DEPTHWISE_ROW_COLUMNS = {32: 12, 16: 8}
"""The most output columns per depthwise register block when the task is one output row
(narrow outputs: the whole row in one or two blocks is faster there)."""


@frozen
class BlockedConv:
    """A channel-blocked convolution: the generic analysis `conv`, the input block `bi`,
    the output block `bo` (the vector), and whether it is the depthwise form."""

    conv: Conv2D
    bi: int
    bo: int
    depthwise: bool


def analyze_blocked(op: Any, depthwise: bool) -> BlockedConv | None:
    """The blocked view of an NCHWc conv anchor, or None when its layouts or grouping are
    not the ones the nests handle (`NCHW{bi}c` / `OIHW{bi}i{bo}o` / `NCHW{bo}c`, groups 1;
    depthwise: `OIHW1i{b}o`, groups = channels)."""
    c = analyze_conv(op)
    if c is None or len(c.out_shape) != 5 or 0 in c.out_shape or 0 in _ints(c.raw.shape):
        return None
    if layout_letters(c.data_layout) != list("NCHWc"):
        return None
    if layout_letters(c.out_layout) != list("NCHWc"):
        return None
    if layout_letters(c.kernel_layout) != list("OIHWio"):
        return None
    _, ci_o, _, _, bi = _ints(c.raw.shape)
    wo, wi, _, _, wbi, wbo = _ints(c.weight.shape)
    _, oc_o, _, _, bo = c.out_shape
    if wo != oc_o or wbo != bo:
        return None
    if depthwise:
        if c.groups != ci_o * bi or bi != bo or oc_o != ci_o or wi != 1 or wbi != 1:
            return None
    elif c.groups != 1 or wi != ci_o or wbi != bi:
        return None
    return BlockedConv(c, bi, bo, depthwise)


# ---------------------------------------------------------------------- conv2d_NCHWc


def blocked_conv(b: BlockedConv) -> Tensor:
    """The convolution `[N, OC/bo, OH, OW, bo]` with the input channel blocks as separate
    reduction axes (outer, kh, kw, inner), reading the (padded) input stage."""
    c = b.conv
    _, ci_o, kh_, kw_, _, _ = _ints(c.weight.shape)
    rco, rh = reduce_axis(ci_o, "rco"), reduce_axis(kh_, "rh")
    rw, rci = reduce_axis(kw_, "rw"), reduce_axis(b.bi, "rci")
    (sh, sw), (dh, dw) = c.strides, c.dilation
    x, w, od = c.data, c.weight, c.out_dtype

    def body(n: PrimExpr, oco: PrimExpr, oh: PrimExpr, ow: PrimExpr, oci: PrimExpr) -> PrimExpr:
        a = x[n, rco.var, oh * sh + rh.var * dh, ow * sw + rw.var * dw, rci.var]
        k = w[oco, rco.var, rh.var, rw.var, rci.var, oci]
        return sum_(cast(od, a) * cast(od, k), axis=[rco, rh, rw, rci])

    return compute(c.out_shape, body, name=f"{c.op.name}_blocked", tag=c.op.tag,  # type: ignore[no-any-return]
                   attrs=c.op.attrs)  # fmt: skip


@register_rewrite("nchwc.conv")
def blocked_conv_rewrite(op: Any) -> dict[str, Tensor]:
    """The conv2d_NCHWc anchor `op` as `blocked_conv` (`"main"`)."""
    main = blocked_conv(require(analyze_blocked(op, depthwise=False), "nchwc.conv", op))
    return {"view": anchor_view(op, lambda *i: main[i]), "main": main}


@frozen
class NCHWcBlocking:
    """`ocv` output-channel vectors by `owb` output columns; input channel blocks walked
    `icb` at a time (all of them when it equals the count)."""

    ocv: int
    owb: int
    icb: int


def choose_nchwc_blocking(b: BlockedConv, target: Target) -> NCHWcBlocking:
    """The register block with the lowest cost per FMA among `ocv` output-channel vectors
    (a divisor of the channel blocks, at most 4) by `owb` columns, `ocv x owb` accumulators
    within `ACCUMULATOR_BUDGET` (in registers: a vector wider than the target's takes
    several): loads (`ocv` weight vectors and `owb` broadcasts per step,
    each `LOAD_COST` FMAs) against FMAs, fewer accumulators than hide the FMA latency, and
    `COLUMN_TAIL_COST` for a column tail; ties go to the bigger block. Then the input channel blocks
    whose weights fit `WEIGHT_BLOCK_BYTES`. Measured on MobileNet-v2's and ResNet-18's
    layers (AVX2): 4x3, 3x4 and 2x4 reach 90-100% of the one-thread peak where 1x7 and 2x6
    reach 75-80%; a block that does not divide the channel blocks costs half the speed."""
    c = b.conv
    _, oc_o, _, ow_, _ = c.out_shape
    ci_o, kh, kw = _ints(c.weight.shape)[1:4]
    regs = VECTOR_REGISTERS.get(target.vector_bits, 16)
    parts = max(1, -(-b.bo // target.lanes(c.out_dtype)))  # registers per channel vector
    budget = max(1, ACCUMULATOR_BUDGET.get(regs, regs * 3 // 4) // parts)
    best: tuple[float, int, int, int] | None = None  # (cost, -acc, -ocv, owb)
    for ocv in (1, 2, 3, 4):
        if oc_o % ocv:
            continue
        for owb in range(1, max(1, min(ow_, budget // ocv)) + 1):
            acc = ocv * owb
            cost = max(acc, LOAD_COST * (ocv + owb), LATENCY_ACCUMULATORS / parts) / acc
            if ow_ % owb:
                cost *= COLUMN_TAIL_COST
            key = (cost, -acc, -ocv, owb)
            if best is None or key < best:
                best = key
    assert best is not None
    _, _, neg_ocv, owb = best
    ocv = -neg_ocv
    per_block = ocv * kh * kw * b.bi * b.bo * 4
    icb = _divisor_at_most(ci_o, max(1, WEIGHT_BLOCK_BYTES // per_block))
    return NCHWcBlocking(ocv, owb, icb)


LOAD_COST = 1.6
"""What a load (weight vector or broadcast input) costs in the register block, in FMAs."""

LATENCY_ACCUMULATORS = 8
"""Independent accumulators that keep both FMA units busy through the FMA latency."""

COLUMN_TAIL_COST = 1.15
"""The cost factor of a register block whose columns do not divide the output width (the
tail block is a second, partial nest). Measured (AVX2, 2 threads): MobileNet-v2's 32>16
1x1 @112 runs 2x4 (no tail) about 10% faster than 2x6 (a tail), which 1.05 chose; 4x3 with
a tail stays as fast as 4x2 and 2x4 on the 28-, 14- and 7-wide layers, and is kept."""


def _divisor_at_most(n: int, limit: int) -> int:
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


def _pad_at_root(s: Schedule, data: Tensor, raw: Tensor, target: Target) -> None:
    """Materialize the padding stage (it was inlined) at root: parallel over (n, c.outer)
    planes, each row's columns and channel vector as one vectorized loop. When the input
    `raw` is computed in the kernel (a fused `layout_transform` packing NCHW data), the
    rows of each plane go in parallel too when planes are few, and the channel block is
    unrolled inside the columns."""
    if not isinstance(data.op, ComputeOp) or data.op.reduce_axis:
        return
    ps = s[data]
    ps.compute_root()
    n, co, h, w, ci = ps.op.axis
    shape = _ints(data.shape)
    if isinstance(raw.op, PlaceholderOp):
        plane = ps.fuse(n, co)
        _vectorize_row(ps, w, ci, target.lanes(data.dtype), shape[3:])
    else:
        # the packing `layout_transform` is inlined here (fused into the kernel): each
        # channel of the block reads its own contiguous input row; LLVM's loop vectorizer
        # turns the unrolled block of stores into interleaved (shuffled) vector stores
        few_planes = shape[0] * shape[1] < 2 * target.num_threads
        plane = ps.fuse(n, co, h) if few_planes else ps.fuse(n, co)
        ps.unroll(ci)
    if target.num_threads > 1 and math.prod(shape) >= 32 * 1024:
        ps.parallel(plane)


def _vectorize_row(stage: Any, w: Any, ci: Any, lanes: int, sizes: list[int]) -> None:
    """Vectorize a (columns, channel vector) pair: the vector itself when it is at least 4
    wide, else the fused row in vectors."""
    if sizes[1] >= 4:
        stage.vectorize(ci)
        return
    if sizes[0] * sizes[1] >= lanes:
        _, inner = stage.split(stage.fuse(w, ci), factor=lanes)
        stage.vectorize(inner)


def _parallel_work(c: Conv2D, reduce_len: int) -> bool:
    return math.prod(c.out_shape) * reduce_len >= PARALLEL_MIN_WORK


def schedule_conv2d_nchwc(
    s: Schedule,
    outputs: list[Tensor],
    anchor: Tensor,
    target: Target,
    config: Mapping[str, Any] | None = None,
) -> None:
    """The conv2d_NCHWc nest of the module docstring (generic for other forms). `config`
    (`backend.tune`) may set the blocking's `ocv`, `owb` and `icb` (`NCHWcBlocking`)."""
    b = analyze_blocked(s[anchor].op, depthwise=False)
    if b is None:
        _generic(s, outputs, anchor, target)
        return
    c = b.conv
    host, parts = install(s, outputs, anchor, "nchwc.conv")
    main = parts["main"]
    _pad_at_root(s, c.data, c.raw, target)
    blk = choose_nchwc_blocking(b, target)
    if config:
        blk = NCHWcBlocking(
            int(config.get("ocv", blk.ocv)),
            int(config.get("owb", blk.owb)),
            int(config.get("icb", blk.icb)),
        )
    ci_o, kh, kw = _ints(c.weight.shape)[1:4]
    st = s[host]
    n, oco, oh, ow, oci = st.op.axis
    oco_o, oco_i = st.split(oco, factor=blk.ocv)
    owo, owi = st.split(ow, factor=blk.owb)
    st.reorder(n, oco_o, oh, owo, oco_i, owi, oci)
    _vectorize_vector(st, oci, b.bo)
    outer = st.fuse(n, oco_o, oh)
    row_buffer = blk.icb < ci_o and c.out_shape[3] > blk.owb
    if _parallel_work(c, ci_o * kh * kw * b.bi) and (
        target.num_threads > 1 or (row_buffer and c.data is not c.raw)
    ):
        # A one-thread target too when the row buffer reads a padded input: the nest
        # becomes a task function (one task on one thread, `codegen.parallel`) whose
        # buffers are `noalias` parameters. In the kernel function LLVM could not tell the
        # heap-allocated padded input from the row of accumulators and stored each
        # accumulator after every FMA, 3x slower (64>128 3x3/2 @56: 11 against 36 GFLOP/s
        # on one thread). Heap temporaries now come from `aligned_alloc` (fresh memory to
        # LLVM), which removes most of those stores; the task form removes all.
        st.parallel(outer)
    ms = s[main]
    cn, coc, coh, cow, cv = ms.op.axis
    rco, rh, rw, rci = ms.op.reduce_axis
    if row_buffer:
        # the row's accumulators in a local buffer, the weights of `icb` input channel
        # blocks in L1 while the column blocks go by
        ms.compute_at(st, outer)
        cwo, cwi = ms.split(cow, factor=blk.owb)
        rco_o, rco_i = ms.split(rco, factor=blk.icb)
        ms.reorder(cn, coh, rco_o, cwo, rco_i, rh, rw, rci, coc, cwi, cv)
        ms.unroll(cwi)
    else:
        ms.compute_at(st, owo)
        ms.reorder(cn, coh, rco, rh, rw, rci, coc, cow, cv)
        ms.unroll(cow)
    ms.unroll(coc)
    if b.bi <= 16:
        ms.unroll(rci)
    _vectorize_vector(ms, cv, b.bo)


def _vectorize_vector(stage: Any, axis: Any, width: int) -> None:
    """Vectorize the channel-vector axis (a short one is left to LLVM's SLP vectorizer)."""
    if width >= 2:
        stage.vectorize(axis)


def _generic(s: Schedule, outputs: list[Tensor], anchor: Tensor, target: Target) -> None:
    from .generic import schedule_generic

    schedule_generic(s, outputs, anchor, target)


# ------------------------------------------------------------- depthwise_conv2d_NCHWc


def blocked_depthwise(b: BlockedConv) -> Tensor:
    """The depthwise convolution `[N, C/b, OH, OW, b]` over the (padded) input stage."""
    c = b.conv
    kh_, kw_ = _ints(c.weight.shape)[2:4]
    rh, rw = reduce_axis(kh_, "rh"), reduce_axis(kw_, "rw")
    (sh, sw), (dh, dw) = c.strides, c.dilation
    x, w, od = c.data, c.weight, c.out_dtype

    def body(n: PrimExpr, co: PrimExpr, oh: PrimExpr, ow: PrimExpr, ci: PrimExpr) -> PrimExpr:
        a = x[n, co, oh * sh + rh.var * dh, ow * sw + rw.var * dw, ci]
        k = w[co, 0, rh.var, rw.var, 0, ci]
        return sum_(cast(od, a) * cast(od, k), axis=[rh, rw])

    return compute(c.out_shape, body, name=f"{c.op.name}_dw", tag=c.op.tag,  # type: ignore[no-any-return]
                   attrs=c.op.attrs)  # fmt: skip


@register_rewrite("nchwc.depthwise")
def blocked_depthwise_rewrite(op: Any) -> dict[str, Tensor]:
    """The depthwise_conv2d_NCHWc anchor `op` as `blocked_depthwise` (`"main"`)."""
    b = require(analyze_blocked(op, depthwise=True), "nchwc.depthwise", op)
    main = blocked_depthwise(b)
    return {"view": anchor_view(op, lambda *i: main[i]), "main": main}


def schedule_depthwise_nchwc(
    s: Schedule,
    outputs: list[Tensor],
    anchor: Tensor,
    target: Target,
    config: Mapping[str, Any] | None = None,
) -> None:
    """The depthwise nest of the module docstring (generic for other forms). `config`
    (`backend.tune`) may set `by_rows` (tasks of one output row rather than whole
    channel-block planes) and `owb` (output columns per register block)."""
    b = analyze_blocked(s[anchor].op, depthwise=True)
    if b is None:
        _generic(s, outputs, anchor, target)
        return
    c = b.conv
    host, parts = install(s, outputs, anchor, "nchwc.depthwise")
    main = parts["main"]
    kh, kw = _ints(c.weight.shape)[2:4]
    ow_ = c.out_shape[3]
    config = config or {}
    by_rows = bool(config.get("by_rows", depthwise_by_rows(b, target)))
    owb = int(config.get("owb", depthwise_columns(ow_, by_rows, target)))
    threads = target.num_threads
    st = s[host]
    n, co, oh, ow, ci = st.op.axis
    owo, owi = st.split(ow, factor=owb)
    st.reorder(n, co, oh, owo, owi, ci)
    _vectorize_vector(st, ci, b.bo)
    plane = st.fuse(n, co, oh) if by_rows else st.fuse(n, co)
    if threads > 1 and _parallel_work(c, kh * kw):
        st.parallel(plane)
    if c.data is not c.raw and s[c.data].attach_kind is not AttachKind.INLINE:
        s[c.data].compute_inline()  # the padding becomes guards on the loads
    ms = s[main]
    ms.compute_at(st, owo)
    cn, cc, coh, cow, cv = ms.op.axis
    rh, rw = ms.op.reduce_axis
    ms.reorder(cn, cc, coh, rh, rw, cow, cv)
    ms.unroll(rh)
    ms.unroll(rw)
    ms.unroll(cow)
    _vectorize_vector(ms, cv, b.bo)


def depthwise_by_rows(b: BlockedConv, target: Target) -> bool:
    """Whether a depthwise layer's tasks are output rows (else whole channel-block planes)
    by default: few planes for the threads, narrow outputs (`ROWS_BELOW_VECTORS`) and
    stride-1 layers (`ROWS_AT_STRIDE_ONE`)."""
    c = b.conv
    _, c_o, _, ow, _ = c.out_shape
    few_planes = _ints(c.raw.shape)[0] * c_o < 2 * target.num_threads
    return (
        few_planes
        or ow < ROWS_BELOW_VECTORS * target.lanes(c.out_dtype)
        or (ROWS_AT_STRIDE_ONE and c.strides == (1, 1))
    )


def depthwise_columns(ow: int, by_rows: bool, target: Target) -> int:
    """Output columns per depthwise register block: at most `DEPTHWISE_COLUMNS` (or
    `DEPTHWISE_ROW_COLUMNS` for one-row tasks), a divisor of `ow` when one is at least
    two thirds of that (no column tail), else the row split evenly into the fewest blocks."""
    regs = VECTOR_REGISTERS.get(target.vector_bits, 16)
    table = DEPTHWISE_ROW_COLUMNS if by_rows else DEPTHWISE_COLUMNS
    most = max(1, min(ow, table.get(regs, regs // 4)))
    divisor = max(d for d in range(1, most + 1) if ow % d == 0)
    if divisor * 3 >= most * 2:
        return divisor
    return -(-ow // -(-ow // most))


CONV2D_NCHWC: ScheduleRule = ScheduleRule(schedule_conv2d_nchwc, last_stage)
"""`contrib_conv2d_NCHWc` kernels, anchored at the convolution (its padding is before)."""

DEPTHWISE_NCHWC: ScheduleRule = ScheduleRule(schedule_depthwise_nchwc, last_stage)
"""`contrib_depthwise_conv2d_NCHWc` kernels, anchored at the convolution."""

SCHEDULES: OpTable[ScheduleRule] = OpTable("schedule")
SCHEDULES.add("nn.contrib_conv2d_NCHWc", CONV2D_NCHWC)
SCHEDULES.add("nn.contrib_depthwise_conv2d_NCHWc", DEPTHWISE_NCHWC)

__all__ = [
    "BlockedConv",
    "NCHWcBlocking",
    "analyze_blocked",
    "blocked_conv",
    "blocked_conv_rewrite",
    "blocked_depthwise",
    "blocked_depthwise_rewrite",
    "choose_nchwc_blocking",
    "depthwise_by_rows",
    "depthwise_columns",
    "schedule_conv2d_nchwc",
    "schedule_depthwise_nchwc",
]
