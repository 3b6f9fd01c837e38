"""The schedules of 2-D convolutions: `conv2d_nchw`, `group_conv2d_nchw`,
`depthwise_conv2d_nchw` and their NHWC forms.

Every form replaces the anchor by a view of a compute laid out for registers (see
`dense.install`; the compute rewrites `"conv2d.channel_vectors"`, `"conv2d.flat_rows"` and
`"conv2d.clone"` are registered here, so the schedules' traces replay): the view is inlined
into the element-wise tail (bias, relu, residual add), and the compute's accumulators stay
in registers while the reduction runs.
NCHW convolutions with an OIHW weight get one of three nests (`choose_nchw_form`):

**Channel vectors** (`"blocked"`; the early layers of a CNN, where the weight is small).
The weight is packed inside the kernel to `[OC/V, IC/groups, KH, KW, V]` (zero-filled past
OC; one extra pass over the weight per call) and the input is broadcast, for any stride:

    pad the input (its own parallel loop nest, when the convolution pads)
    for n, oc.outer, oh:                                  # fused, parallel
      acc[OCV, OW, V]                                     # the row's accumulators
      for ic.outer:                                       # packed weights stay in L1
        for ow.outer:
          for ic.inner, kh, kw: for ocv, owb (unrolled):  # OCV x OWB vector registers
            acc[ocv, ow0+owb, :] += broadcast(pad[n, ic, oh*s + kh*d, (ow0+owb)*s + kw*d])
                                    * wpack[oc0/V + ocv, ic, kh, kw, :]
      for ow, ocv: out[n, oc0 + ocv*V + (0..V), oh, ow] = tail(acc[ocv, ow, :])

**Flat rows** (`"flat"`; the late layers, where the weight is large, and strided or narrow
depthwise ones). No packing: output positions `q = oh * WQ + ow` run over whole rows of the
(stride-phase split, zero-padded) input, so that every tap reads a contiguous vector of
inputs at `q + offset(kh, kw)`, and the weight is broadcast (columns past OW are computed
and thrown away). A 1x1 stride-1 convolution is exactly a GEMM over the input channels:

    split the padded input into stride phases: rows[n, c, ph, pw, r, col]
    for n, oc.outer:                                      # fused, parallel
      for q.block: for ic.outer:                          # weights stay in L1
        for ic.inner, kh, kw: for o, v (unrolled):        # MR x F/V vector registers
          acc[o, q0 + v*V : +V] += rows[n, ic, phase(kh, kw), q0 + v*V + off(kh, kw) : +V]
                                   * broadcast(weight[oc0 + o, ic, kh, kw])
      for o, oh, ow: out[n, oc0 + o, oh, ow] = tail(acc[o, oh * WQ + ow])

**Width vectors** (`"width"`; wide stride-1 depthwise and other groupings, and NCHW
convolutions with another kernel layout): no packing, output columns as vectors:

    for n, c.outer, oh:                                   # fused, parallel
      for ow.outer:
        for ic, kh, kw: for c (unrolled): for ow.inner (vectorized):
          acc[c, ow] += pad[n, ic(c), oh*s + kh*d, ow*s + kw*d] * weight[c, ic, kh, kw]
        out[...] = tail(acc[...])

NHWC: output channels (the innermost axis) as vectors times a block of output columns in
registers, the input broadcast (contiguous weights for `HWIO`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from ....lang.optable import OpTable
from ...target import Target
from ...te.rewrite import register_rewrite
from ...te.schedule import AttachKind
from ...te.tensor import ComputeOp, Operation, ProducerLoad, Tensor, compute, reduce_axis, sum_
from ...tir.expr import PrimExpr, Reduce, Var, all_of, cast, const
from ...tir.op import if_then_else
from ...tir.visitor import sub_expressions
from . import PARALLEL_MIN_WORK, Schedule, ScheduleRule, extents, last_stage, substitute
from .dense import VECTOR_REGISTERS, anchor_view, install, require

# ----------------------------------------------------------------------- the convolution


@frozen
class Conv2D:
    """What a conv2d anchor computes: the (padded) input it reads, its weight, the layouts,
    strides, dilation, groups, the output dtype and the output shape."""

    op: ComputeOp
    data: Tensor
    weight: Tensor
    data_layout: str
    kernel_layout: str
    out_layout: str
    strides: tuple[int, int]
    dilation: tuple[int, int]
    groups: int
    out_dtype: str
    out_shape: tuple[int, ...]
    pads: tuple[tuple[int, int], ...]
    raw: Tensor


def analyze_conv(op: Operation) -> Conv2D | None:
    """The convolution an anchor made by `computes.conv.direct_conv` computes (None when
    the anchor does not carry that compute's workload)."""
    if not isinstance(op, ComputeOp) or op.num_outputs != 1:
        return None
    info = op.attrs
    workload = info.get("workload")
    if not isinstance(workload, tuple) or len(workload) != 9 or workload[0] != "conv2d":
        return None
    _, dshape, wshape, strides, pads, dilation, groups, layouts, out_dtype = workload
    body = op.body[0]
    if not isinstance(body, Reduce):
        return None
    loads = [e for e in sub_expressions(body.source[0]) if isinstance(e, ProducerLoad)]
    spatial = {id(iv.var) for letter, iv in zip(layouts[2], op.axis) if letter in "HW"}
    data = [ld for ld in loads if any(_uses(i, spatial) for i in ld.indices)]
    weight = [ld for ld in loads if not any(_uses(i, spatial) for i in ld.indices)]
    if len(loads) != 2 or len(data) != 1 or len(weight) != 1:
        return None
    if tuple(_ints(weight[0].producer.shape)) != tuple(wshape):
        return None
    raw = data[0].producer
    if isinstance(raw.op, ComputeOp) and "pad" in raw.op.tag and raw.op.input_tensors:
        raw = raw.op.input_tensors[0]
    if tuple(_ints(raw.shape)) != tuple(dshape):
        return None
    return Conv2D(
        op,
        data[0].producer,
        weight[0].producer,
        layouts[0],
        layouts[1],
        layouts[2],
        (int(strides[0]), int(strides[1])),
        (int(dilation[0]), int(dilation[1])),
        int(groups),
        str(out_dtype),
        tuple(_ints(op.output(0).shape)),
        tuple((int(a), int(b)) for a, b in pads),
        raw,
    )


def _uses(e: PrimExpr, var_ids: set[int]) -> bool:
    return any(id(x) in var_ids for x in sub_expressions(e) if isinstance(x, Var))


def _ints(shape: Sequence[PrimExpr]) -> list[int]:
    return [int(getattr(d, "value", 0)) for d in shape]


def _extent(iv: Any) -> int:
    return int(getattr(iv.dom.extent, "value", 0))


# ------------------------------------------------------------------ channel-vector (NCHW)


def channel_vector_ok(c: Conv2D, lanes: int) -> bool:
    """Whether the channel-vector form applies: NCHW data and output, OIHW weight, and each
    vector of output channels within one group."""
    if (c.data_layout, c.kernel_layout, c.out_layout) != ("NCHW", "OIHW", "NCHW"):
        return False
    if c.groups == 1:
        return True
    oc = c.out_shape[1]
    channels = _ints(c.data.shape)[1]
    og = oc // c.groups
    in_per_group = _ints(c.weight.shape)[1]
    return og % lanes == 0 and in_per_group * c.groups == channels


def channel_blocked(c: Conv2D, lanes: int) -> tuple[Tensor, Tensor]:
    """(the convolution `[N, ceil(OC/V), OH, OW, V]` over a packed weight, the packing
    stage `[ceil(OC/V), IC/groups, KH, KW, V]`)."""
    n_, oc, oh_, ow_ = c.out_shape
    _, cg, kh_, kw_ = _ints(c.weight.shape)
    blocks = -(-oc // lanes)
    og = oc // c.groups
    w = c.weight

    def pack(ob: PrimExpr, i: PrimExpr, kh: PrimExpr, kw: PrimExpr, v: PrimExpr) -> PrimExpr:
        value = w[ob * lanes + v, i, kh, kw]
        if oc % lanes == 0:
            return value
        return if_then_else(ob * lanes + v < oc, value, const(0, w.dtype))

    packed = compute((blocks, cg, kh_, kw_, lanes), pack, name=f"{w.name}_packed", tag="pack")
    rc, rh, rw = reduce_axis(cg, "rc"), reduce_axis(kh_, "rh"), reduce_axis(kw_, "rw")
    (sh, sw), (dh, dw) = c.strides, c.dilation
    x, od = c.data, c.out_dtype

    def body(n: PrimExpr, ob: PrimExpr, oh: PrimExpr, ow: PrimExpr, v: PrimExpr) -> PrimExpr:
        ic = rc.var if c.groups == 1 else (ob * lanes) // og * cg + rc.var
        a = x[n, ic, oh * sh + rh.var * dh, ow * sw + rw.var * dw]
        b = packed[ob, rc.var, rh.var, rw.var, v]
        return sum_(cast(od, a) * cast(od, b), axis=[rc, rh, rw])

    conv = compute((n_, blocks, oh_, ow_, lanes), body, name=f"{c.op.name}_blocked",
                   tag=c.op.tag, attrs=c.op.attrs)  # fmt: skip
    return conv, packed


@register_rewrite("conv2d.channel_vectors")
def channel_vectors_rewrite(op: Operation, lanes: int) -> dict[str, Tensor]:
    """The conv2d anchor `op` as `channel_blocked(lanes)` (`"main"`, `"packed"`), viewed
    back in NCHW."""
    c = require(analyze_conv(op), "conv2d.channel_vectors", op)
    main, packed = channel_blocked(c, lanes)
    view = anchor_view(op, lambda n, oc, oh, ow: main[n, oc // lanes, oh, ow, oc % lanes])
    return {"view": view, "main": main, "packed": packed}


@frozen
class ConvBlocking:
    """Register blocking: `ocv` vectors of output channels (or channels, for the width
    form) by `owb` output columns."""

    ocv: int
    owb: int


NCHW_FORM = "auto"
"""Which nest NCHW/OIHW convolutions get: "flat" (flat rows), "blocked" (channel vectors,
width vectors where those do not apply), or "auto" (`choose_nchw_form` decides)."""

ACCUMULATOR_BUDGET = {32: 20, 16: 10}
"""Vector accumulators a register block may use, per register count (the rest hold the
weight vectors and broadcasts; LLVM spills past this)."""


def choose_conv_blocking(blocks: int, width: int, target: Target) -> ConvBlocking:
    """Two channel vectors (one when the channel blocks are odd) by up to 8 output columns
    (`ACCUMULATOR_BUDGET` / 2 with 16 registers), preferring a column block that divides the
    width (no tail). Measured on ResNet-18's layers: 2x7 and 2x8 beat 4x4, 1x16 and 2x14
    (which spills)."""
    regs = VECTOR_REGISTERS.get(target.vector_bits, 16)
    budget = ACCUMULATOR_BUDGET.get(regs, regs // 2)
    ocv = 2 if blocks % 2 == 0 and budget >= 8 else 1
    most = max(1, min(width, budget // ocv, 8))
    divisors = [d for d in range(most, 0, -1) if width % d == 0]
    owb = divisors[0] if divisors and divisors[0] * 2 > most else most
    return ConvBlocking(ocv, owb)


def _divisor_at_most(n: int, limit: int) -> int:
    """The largest divisor of `n` that is at most `limit` (at least 1)."""
    best = 1
    for d in range(1, min(n, max(1, limit)) + 1):
        if n % d == 0:
            best = d
    return best


def _reduce_len(t: Tensor) -> int:
    op = t.op
    return math.prod(_extent(iv) for iv in op.reduce_axis) if isinstance(op, ComputeOp) else 1


def _enough_work(op: Operation, reduce_len: int) -> bool:
    return math.prod(extents(op)) * reduce_len >= PARALLEL_MIN_WORK


BLOCKED_WEIGHT_BLOCK_BYTES = 16 * 1024
"""The channel-vector form walks the input channels in blocks whose packed weights (for
one register block of output channels) take about this much."""


def _schedule_pad(s: Schedule, data: Tensor, target: Target) -> None:
    """Materialize the padding stage at root (it was inlined): parallel over its rows."""
    if not isinstance(data.op, ComputeOp) or data.op.reduce_axis:
        return
    ps = s[data]
    ps.compute_root()
    axes = list(ps.op.axis)
    if len(axes) < 3:
        return
    rows = ps.fuse(*axes[:2])  # rows stay whole: partitioning peels the padded borders
    if target.num_threads > 1 and math.prod(_ints(data.shape)) >= 32 * 1024:
        ps.parallel(rows)


def schedule_channel_vectors(
    s: Schedule, outputs: list[Tensor], anchor: Tensor, c: Conv2D, target: Target
) -> None:
    """The channel-vector nest of the module docstring."""
    lanes = target.lanes(c.out_dtype)
    host, parts = install(s, outputs, anchor, "conv2d.channel_vectors", lanes=lanes)
    main, packed = parts["main"], parts["packed"]
    _schedule_pad(s, c.data, target)
    oc_, ow_ = c.out_shape[1], c.out_shape[3]
    blocks = -(-oc_ // lanes)
    b = choose_conv_blocking(blocks, ow_, target)
    st = s[host]
    n, oc, oh, ow = st.op.axis
    oco, oci = st.split(oc, factor=lanes * b.ocv)
    ocv, ocl = st.split(oci, factor=lanes)
    owo, owi = st.split(ow, factor=b.owb)
    st.reorder(n, oco, oh, owo, owi, ocv, ocl)
    st.vectorize(ocl)
    outer = st.fuse(n, oco, oh)
    red = _reduce_len(main)
    if target.num_threads > 1 and _enough_work(host.op, red):
        st.parallel(outer)
    ms = s[main]
    cn, cb, coh, cow, cv = ms.op.axis
    rc, rh, rw = ms.op.reduce_axis
    kh, kw = _ints(c.weight.shape)[2:]
    rcb = _divisor_at_most(_extent(rc), BLOCKED_WEIGHT_BLOCK_BYTES // (b.ocv * lanes * kh * kw * 4))
    if rcb < _extent(rc) and ow_ > b.owb:
        # the whole output row's accumulators in a local buffer; the input channels in
        # blocks whose weights stay in L1 while the column blocks go by
        ms.compute_at(st, outer)
        cwo, cwi = ms.split(cow, factor=b.owb)
        rco, rci = ms.split(rc, factor=rcb)
        ms.reorder(cn, coh, rco, cwo, rci, rh, rw, cb, cwi, cv)
        ms.unroll(cwi)
    else:
        ms.compute_at(st, owo)
        ms.reorder(cn, coh, rc, rh, rw, cb, cow, cv)
        ms.unroll(cow)
    ms.unroll(cb)
    ms.vectorize(cv)
    ps = s[packed]
    pax = list(ps.op.axis)
    ps.vectorize(pax[-1])
    if target.num_threads > 1 and math.prod(_ints(packed.shape)) >= 32 * 1024:
        ps.parallel(pax[0])


# --------------------------------------------------------------- flat rows (NCHW, implicit GEMM)


@frozen
class FlatPlan:
    """The flat-row form of an NCHW convolution: output position `q = oh * wq + ow` over
    rows `wq` wide (columns from `ow_` on are computed and thrown away), in `blocks` blocks
    of `f` positions; the input split into `sh x sw` stride phases of `rows x wq`."""

    wq: int
    rows: int
    f: int
    blocks: int
    mr: int


def plan_flat(c: Conv2D, lanes: int, target: Target) -> FlatPlan:
    """Row width, block sizes and the register block (`mr` output channels, a divisor of
    the channel count, by `f / lanes` vectors of positions) of the flat-row form, chosen by
    a small cost model: vector FMAs against loads (inputs shared by the rows of a group,
    weights broadcast per row) per useful FMA, times the positions computed and thrown away,
    with a slight preference for more rows (fewer passes over the input)."""
    oc, oh, ow = c.out_shape[1], c.out_shape[2], c.out_shape[3]
    wq = flat_row_width(c)
    regs = VECTOR_REGISTERS.get(target.vector_bits, 16)
    budget = ACCUMULATOR_BUDGET.get(regs, regs // 2)
    q = oh * wq
    og = oc // c.groups
    best: tuple[float, int, int] | None = None
    for vecs in range(1, 5):
        f = vecs * lanes
        if vecs > 1 and f > q + lanes:
            break
        waste = -(-q // f) * f / (oh * ow)
        for mr in range(1, budget // vecs + 1):
            if oc % mr:
                continue
            groups_in_block = 1 if og % mr == 0 else -(-mr // og) if og < mr else 2
            loads = vecs * groups_in_block + mr
            cost = max(mr * vecs, loads) / (mr * vecs) * waste + 0.05 / mr
            if best is None or cost < best[0]:
                best = (cost, vecs, mr)
    assert best is not None
    _, vecs, mr = best
    if FLAT_BLOCK is not None and oc % FLAT_BLOCK[1] == 0:
        vecs, mr = FLAT_BLOCK
    return flat_plan(c, vecs * lanes, mr)


def flat_row_width(c: Conv2D) -> int:
    """The flat-row form's row width: the padded input's columns per stride phase."""
    w = _ints(c.raw.shape)[3]
    (pl, pr) = c.pads[1]
    return -(-(w + pl + pr) // c.strides[1])


def flat_plan(c: Conv2D, f: int, mr: int) -> FlatPlan:
    """The flat-row plan with blocks of `f` positions and `mr` output-channel rows."""
    oh = c.out_shape[2]
    (sh, sw), (dh, dw) = c.strides, c.dilation
    kh, kw = _ints(c.weight.shape)[2:]
    wq = flat_row_width(c)
    blocks = -(-(oh * wq) // f)
    reach = ((kh - 1) * dh // sh) * wq + (kw - 1) * dw // sw
    rows = -(-(blocks * f + reach) // wq)
    return FlatPlan(wq, rows, f, blocks, mr)


def flat_conv(c: Conv2D, plan: FlatPlan) -> tuple[Tensor, Tensor]:
    """(the convolution `[N, OC, blocks, f]` over flat output positions, the phase-split
    padded input `[N, C, sh, sw, rows, wq]` it reads contiguously)."""
    n_, cin, h, w = _ints(c.raw.shape)
    _, oc, _, _ = c.out_shape
    (sh, sw), (dh, dw) = c.strides, c.dilation
    (pt, _), (pl, _) = c.pads
    cg, kh_, kw_ = _ints(c.weight.shape)[1:]
    x, wq, f = c.raw, plan.wq, plan.f

    def phase(n: PrimExpr, ch: PrimExpr, ph: PrimExpr, pw: PrimExpr, r: PrimExpr,
              col: PrimExpr) -> PrimExpr:  # fmt: skip
        hh, ww = r * sh + ph - pt, col * sw + pw - pl
        ok = all_of(hh >= 0, hh < h, ww >= 0, ww < w)
        return if_then_else(ok, x[n, ch, hh, ww], const(0, x.dtype))

    # only the phases some tap reads (a 1x1 stride-2 convolution reads one of four)
    ph_n = sh if any(k * dh % sh for k in range(kh_)) else 1
    pw_n = sw if any(k * dw % sw for k in range(kw_)) else 1
    phased = compute((n_, cin, ph_n, pw_n, plan.rows, wq), phase, name=f"{c.op.name}_rows",
                     tag="pad")  # fmt: skip
    rc, rh, rw = reduce_axis(cg, "rc"), reduce_axis(kh_, "rh"), reduce_axis(kw_, "rw")
    og = oc // c.groups
    wt, od = c.weight, c.out_dtype

    def body(n: PrimExpr, o: PrimExpr, qo: PrimExpr, qi: PrimExpr) -> PrimExpr:
        ic = rc.var if c.groups == 1 else o // og * cg + rc.var
        tap_h, tap_w = rh.var * dh, rw.var * dw
        at = qo * f + qi + (tap_h // sh) * wq + tap_w // sw
        ph = tap_h % sh if ph_n > 1 else const(0)
        pw = tap_w % sw if pw_n > 1 else const(0)
        a = phased[n, ic, ph, pw, at // wq, at % wq]
        return sum_(cast(od, a) * cast(od, wt[o, rc.var, rh.var, rw.var]), axis=[rc, rh, rw])

    conv = compute((n_, oc, plan.blocks, f), body, name=f"{c.op.name}_rows_acc", tag=c.op.tag,
                   attrs=c.op.attrs)  # fmt: skip
    return conv, phased


@register_rewrite("conv2d.flat_rows")
def flat_rows_rewrite(op: Operation, f: int) -> dict[str, Tensor]:
    """The conv2d anchor `op` as `flat_conv` over blocks of `f` positions (`"main"`,
    `"phased"`), viewed back in NCHW."""
    c = require(analyze_conv(op), "conv2d.flat_rows", op)
    plan = flat_plan(c, f, 1)
    main, phased = flat_conv(c, plan)
    wq = plan.wq

    def view(n: PrimExpr, o: PrimExpr, oh: PrimExpr, ow: PrimExpr) -> PrimExpr:
        return main[n, o, (oh * wq + ow) // f, (oh * wq + ow) % f]

    return {"view": anchor_view(op, view), "main": main, "phased": phased}


FLAT_WEIGHT_BLOCK_BYTES = 16 * 1024
"""The flat-row form walks the input channels in blocks whose weights (for one register
block of output channels) take about this much (they stay in L1 across position blocks)."""


FLAT_BLOCK: tuple[int, int] | None = None
"""When set, (position vectors, output-channel rows) of every flat-row register block
(for tuning experiments; None: the cost model of `plan_flat` decides)."""


def choose_nchw_form(c: Conv2D, lanes: int) -> str:
    """The nest for an NCHW/OIHW convolution, by rules fitted to ResNet-18's and
    MobileNet-v2's layers on this machine (`bench/bench_kernels_schedules.py`):

    * `"flat"` (flat rows) when the weight has at least twice the input's elements (the
      late layers: packing such a weight costs more than channel vectors save), when each
      output reads fewer than 8 input channels (the 3-channel stem) or sums fewer than 96
      products (MobileNet's 1x1 expansions: a channel vector's scattered stores would cost
      more than its FMAs), and for depthwise/grouped convolutions with narrow or strided
      outputs;
    * `"width"` (width vectors) for other depthwise/grouped ones (stride 1, at least two
      vectors of output columns);
    * `"blocked"` (channel vectors) otherwise."""
    if NCHW_FORM in ("flat", "blocked") and flat_ok(c):
        if NCHW_FORM == "blocked" and not channel_vector_ok(c, lanes):
            return "width"
        return NCHW_FORM
    cg = _ints(c.weight.shape)[1]
    if not channel_vector_ok(c, lanes):
        wide = c.strides == (1, 1) and c.out_shape[3] >= 2 * lanes
        return "width" if wide else "flat"
    reduction = math.prod(_ints(c.weight.shape)[1:])
    if math.prod(_ints(c.weight.shape)) >= 2 * math.prod(_ints(c.raw.shape)):
        return "flat"
    if cg < 8 or reduction < 96:
        return "flat"
    return "blocked"


def flat_ok(c: Conv2D) -> bool:
    """Whether the flat-row (and channel-vector) forms apply: NCHW data and output, an OIHW
    weight of `(OC, C / groups, KH, KW)` (not TVM's depthwise `(C, multiplier, ...)`
    form), any stride, dilation and grouping."""
    if (c.data_layout, c.kernel_layout, c.out_layout) != ("NCHW", "OIHW", "NCHW"):
        return False
    o, cg = _ints(c.weight.shape)[:2]
    return o == c.out_shape[1] and cg * c.groups == _ints(c.raw.shape)[1]


def schedule_flat_rows(
    s: Schedule, outputs: list[Tensor], anchor: Tensor, c: Conv2D, target: Target
) -> None:
    """The flat-row nest: for each image and block of `mr` output channels (parallel), the
    positions in blocks of `f`, each block's `mr x f/V` accumulators in registers over the
    reduction, reading the phase-split input as contiguous vectors and the weight as
    broadcast scalars (no packing); then the output rows copied out through the tail."""
    lanes = target.lanes(c.out_dtype)
    plan = plan_flat(c, lanes, target)
    host, parts = install(s, outputs, anchor, "conv2d.flat_rows", f=plan.f)
    main, phased = parts["main"], parts["phased"]
    if c.data is not c.raw and s[c.data].attach_kind is not AttachKind.INLINE:
        s[c.data].compute_inline()  # the anchor's own padding: nothing reads it any more
    st = s[host]
    n, oc, oh, ow = st.op.axis
    oco, oci = st.split(oc, factor=plan.mr)
    st.reorder(n, oco, oci, oh, ow)
    ow_ = c.out_shape[3]
    if ow_ >= lanes:
        _, owl = st.split(ow, factor=lanes)
        st.vectorize(owl)
    elif ow_ >= 4:
        st.vectorize(ow)
    block = st.fuse(n, oco)
    red = _reduce_len(main)
    if target.num_threads > 1 and _enough_work(host.op, red):
        st.parallel(block)
    ms = s[main]
    ms.compute_at(st, block)
    cn, co, cqo, cqi = ms.op.axis
    rc, rh, rw = ms.op.reduce_axis
    qv, ql = ms.split(cqi, factor=lanes)
    kh, kw = _ints(c.weight.shape)[2:]
    rcb = _divisor_at_most(_extent(rc), FLAT_WEIGHT_BLOCK_BYTES // (plan.mr * kh * kw * 4))
    if rcb < _extent(rc) and plan.blocks > 1:
        rco, rci = ms.split(rc, factor=rcb)
        ms.reorder(cn, rco, cqo, rci, rh, rw, co, qv, ql)
    else:
        ms.reorder(cn, cqo, rc, rh, rw, co, qv, ql)
    ms.unroll(co)
    ms.unroll(qv)
    ms.vectorize(ql)
    ps = s[phased]
    pax = list(ps.op.axis)
    rows = ps.fuse(*pax[:4])
    if target.num_threads > 1 and math.prod(_ints(phased.shape)) >= 32 * 1024:
        ps.parallel(rows)


# -------------------------------------------------------------------- width-vector (NCHW)


def clone_compute(op: ComputeOp, name: str) -> Tensor:
    """A fresh copy of a one-output compute (new axis and reduction variables)."""
    body = op.body[0]

    def fn(*idx: PrimExpr) -> PrimExpr:
        sub: dict[Var, PrimExpr] = {iv.var: i for iv, i in zip(op.axis, idx)}
        if isinstance(body, Reduce):
            fresh = [reduce_axis((iv.dom.min, iv.dom.min + iv.dom.extent), iv.var.name)
                     for iv in body.axis]  # fmt: skip
            sub.update({iv.var: f.var for iv, f in zip(body.axis, fresh)})
            return Reduce(
                body.combiner,
                tuple(substitute(e, sub) for e in body.source),
                tuple(fresh),
                substitute(body.condition, sub),
                body.value_index,
            )
        return substitute(body, sub)

    return compute(op.output(0).shape, fn, name=name, tag=op.tag, attrs=op.attrs)  # type: ignore[no-any-return]


@register_rewrite("conv2d.clone")
def clone_rewrite(op: Operation) -> dict[str, Tensor]:
    """The anchor `op` as a fresh copy of itself (`"main"`, named `<op>_acc`): the compute
    the accumulators live in, the anchor's stage its view."""
    if not isinstance(op, ComputeOp) or op.num_outputs != 1:
        require(None, "conv2d.clone", op)
    assert isinstance(op, ComputeOp)
    main = clone_compute(op, f"{op.name}_acc")
    return {"view": anchor_view(op, lambda *i: main[i]), "main": main}


def schedule_width_vectors(
    s: Schedule, outputs: list[Tensor], anchor: Tensor, c: Conv2D, target: Target
) -> None:
    """The width-vector nest of the module docstring (depthwise and other groupings)."""
    lanes = target.lanes(c.out_dtype)
    host, parts = install(s, outputs, anchor, "conv2d.clone")
    main = parts["main"]
    _schedule_pad(s, c.data, target)
    oc_, ow_ = c.out_shape[1], c.out_shape[3]
    vecs = max(1, min(4, -(-ow_ // lanes)))
    owb = vecs * lanes if ow_ >= lanes else ow_
    regs = VECTOR_REGISTERS.get(target.vector_bits, 16)
    cb = max(1, min(oc_, (regs - 8) // vecs, 8))
    st = s[host]
    n, oc, oh, ow = st.op.axis
    oco, oci = st.split(oc, factor=cb)
    owo, owi = st.split(ow, factor=owb)
    st.reorder(n, oco, oh, owo, oci, owi)
    if ow_ >= lanes:
        _, owl = st.split(owi, factor=lanes)
        st.vectorize(owl)
    outer = st.fuse(n, oco, oh)
    red = _reduce_len(main)
    if target.num_threads > 1 and _enough_work(host.op, red):
        st.parallel(outer)
    ms = s[main]
    ms.compute_at(st, owo)
    cn, cc, coh, cow = ms.op.axis
    rax = list(ms.op.reduce_axis)
    if ow_ >= lanes:
        cwo, cwl = ms.split(cow, factor=lanes)
        ms.reorder(cn, coh, *rax, cc, cwo, cwl)
        ms.unroll(cc)
        ms.unroll(cwo)
        ms.vectorize(cwl)
    else:
        ms.reorder(cn, coh, *rax, cc, cow)
        ms.unroll(cc)


# ------------------------------------------------------------------------------- NHWC


def schedule_nhwc(
    s: Schedule, outputs: list[Tensor], anchor: Tensor, c: Conv2D, target: Target
) -> None:
    """Output channels (innermost in NHWC) as vectors, a block of output columns in
    registers, the input broadcast."""
    lanes = target.lanes(c.out_dtype)
    host, parts = install(s, outputs, anchor, "conv2d.clone")
    main = parts["main"]
    _schedule_pad(s, c.data, target)
    ow_, oc_ = c.out_shape[2], c.out_shape[3]
    blocks = -(-oc_ // lanes)
    b = choose_conv_blocking(blocks, ow_, target)
    cvec = min(oc_, lanes) if oc_ >= lanes else oc_
    st = s[host]
    n, oh, ow, oc = st.op.axis
    owo, owi = st.split(ow, factor=b.owb)
    oco, oci = st.split(oc, factor=cvec * b.ocv)
    ocv, ocl = st.split(oci, factor=cvec)
    st.reorder(n, oh, owo, oco, owi, ocv, ocl)
    st.vectorize(ocl)
    outer = st.fuse(n, oh)
    red = _reduce_len(main)
    if target.num_threads > 1 and _enough_work(host.op, red):
        st.parallel(outer)
    ms = s[main]
    ms.compute_at(st, oco)
    cn, coh, cow, coc = ms.op.axis
    rax = list(ms.op.reduce_axis)
    cvo, cvl = ms.split(coc, factor=cvec)
    ms.reorder(cn, coh, *rax, cow, cvo, cvl)
    ms.unroll(cow)
    ms.unroll(cvo)
    ms.vectorize(cvl)


# ------------------------------------------------------------------------------ dispatch


def schedule_conv2d(
    s: Schedule,
    outputs: list[Tensor],
    anchor: Tensor,
    target: Target,
    config: Mapping[str, Any] | None = None,
) -> None:
    """Pick the channel-vector, width-vector or NHWC nest (module docstring); a conv2d of
    another form gets the generic schedule; 8-bit operands get the int8 nest (`int8`), whose
    register tile `config` (`backend.tune`) may set."""
    from .int8 import schedule_conv2d_int8

    if schedule_conv2d_int8(s, outputs, anchor, target, config):
        return
    c = analyze_conv(s[anchor].op)
    if c is None or len(c.out_shape) != 4 or 0 in c.out_shape or 0 in _ints(c.raw.shape):
        from .generic import schedule_generic

        schedule_generic(s, outputs, anchor, target)
        return
    lanes = target.lanes(c.out_dtype)
    from . import depthwise

    dw = depthwise.analyze_depthwise(c) if depthwise.ENABLED and NCHW_FORM == "auto" else None
    if dw is not None:
        depthwise.schedule_depthwise(s, outputs, anchor, dw, target)
    elif flat_ok(c):
        form = choose_nchw_form(c, lanes)
        if form == "flat":
            schedule_flat_rows(s, outputs, anchor, c, target)
        elif form == "blocked":
            schedule_channel_vectors(s, outputs, anchor, c, target)
        else:
            schedule_width_vectors(s, outputs, anchor, c, target)
    elif c.data_layout == "NCHW" and c.out_layout == "NCHW":
        schedule_width_vectors(s, outputs, anchor, c, target)
    elif c.data_layout == "NHWC" and c.out_layout == "NHWC":
        schedule_nhwc(s, outputs, anchor, c, target)
    else:
        from .generic import schedule_generic

        schedule_generic(s, outputs, anchor, target)


CONV2D: ScheduleRule = ScheduleRule(schedule_conv2d, last_stage)
"""`conv2d` kernels, anchored at the convolution stage (its padding is a stage before)."""

SCHEDULES: OpTable[ScheduleRule] = OpTable("schedule")
SCHEDULES.add("nn.conv2d", CONV2D)

__all__ = [
    "Conv2D",
    "ConvBlocking",
    "analyze_conv",
    "channel_blocked",
    "channel_vector_ok",
    "channel_vectors_rewrite",
    "choose_conv_blocking",
    "clone_compute",
    "clone_rewrite",
    "flat_plan",
    "flat_rows_rewrite",
    "schedule_channel_vectors",
    "schedule_conv2d",
    "schedule_nhwc",
    "schedule_width_vectors",
]
