"""int8 depthwise conv2d (NCHW, one output channel per input channel): two taps of a kernel
row per `vpmaddwd` (int16 pairs), or four per VNNI `vpdpbusd` (byte quads), instead of one
widened int32 multiply per tap.

Taps come in groups of `G` along the kernel row (`kw = G*t .. G*t + G-1`; missing taps get
a zero weight). For stride `sw` in {1, 2} along the width, one channel's input is rebuilt
once as `pairs[r, q, g] = x_padded[r, q*sw + g]` (`G` = 2: int16; `G` = 4: uint8, the int8
data plus 128, padding 128), so the taps of group `t` for output column `ow` are
`pairs[row, ow + t*G/sw, :]`, and `L` consecutive columns are one contiguous `L x G` block:
the lane operand of `avx2_i16` / `avx512bw_i16` (pairs, 8 / 16 lanes) or of
`avx_vnni_s8u8` / `avx512_vnni_s8u8` (quads, 8 / 16 lanes), with the weight group
broadcast (`tap_groups` picks by the int8 plan, `row_tile` the lanes and tile):

    for n, c (fused, parallel):                                # one channel plane
      pairs[r, q, g] = x[n, c, r - pt, q*sw + g - pl] (+128)    (0 or 128 outside)
      for oh, ow.outer:                                         # VB vectors of L columns
        acc[ow : +L] = sum over kh, t of dot(pairs[oh*sh + kh, ow + t*G/sw : +L, :],
                                             wgroup[c, kh, t, :])
        res[n, c, oh, ow] = acc (- 128 * sum(w[c]) for shifted quads)
      out[n, c, oh, ow] = tail(res[n, c, oh, ow])               # requantize, vectorized

Exact: products of 8-bit values summed into int32 lanes (no saturating instruction).
"""

from __future__ import annotations

from typing import Any

from attrs import frozen

from ...target import Target
from ...te.rewrite import register_rewrite
from ...te.tensor import Tensor, compute, reduce_axis, sum_
from ...tir.expr import PrimExpr, Var, all_of, cast, const
from ...tir.op import if_then_else
from . import PARALLEL_MIN_WORK, Schedule
from .dense import anchor_view, install, require

LANES = 8
"""int32 lanes of a ymm register (16 of a zmm register: `tap_groups`)."""

VECTORS = 4
"""Column vectors (accumulators) per register tile."""


def _depthwise_form(c: Any) -> tuple[int, int, int, int, int] | None:
    """(channels, h, w, kh, kw) when conv `c` is an NCHW depthwise conv this module handles
    (multiplier 1, stride 1 or 2 and no dilation along the width, 8-bit operands)."""
    from .conv2d import _ints

    if (c.data_layout, c.kernel_layout, c.out_layout) != ("NCHW", "OIHW", "NCHW"):
        return None
    if len(c.out_shape) != 4 or len(_ints(c.raw.shape)) != 4 or c.out_dtype != "int32":
        return None
    _, channels, h, w = _ints(c.raw.shape)
    o, i, kh, kw = _ints(c.weight.shape)
    if c.groups != channels or o != channels or i != 1 or c.out_shape[1] != channels:
        return None
    if c.strides[1] not in (1, 2) or c.dilation[1] != 1 or 0 in c.out_shape:
        return None
    if c.raw.dtype not in ("int8", "uint8") or c.weight.dtype not in ("int8", "uint8"):
        return None
    return channels, h, w, kh, kw


WHOLE_ROW_VECTORS = 8
"""Most column vectors (accumulators) of a tile that covers a row exactly (`row_tile`)."""


@frozen
class TapGroups:
    """How a depthwise kernel's taps are multiplied: `group` taps of a kernel row per
    instruction (2: `vpmaddwd` on int16 pairs; 4: VNNI `vpdpbusd` on byte quads, the data
    shifted to uint8 by `shift`), on 16 or 8 int32 lanes (`lane_choices`, widest first)."""

    group: int
    shift: int
    lane_choices: tuple[int, ...]


def tap_groups(target: Target, data_dtype: str, weight_dtype: str) -> TapGroups:
    """Quads when the int8 plan of `target` (`int8.choose_plan`, `force_plan` included) is
    VNNI (int8 weights), 16 lanes with AVX-512 VNNI and 8 with VNNI on ymm (AVX-VNNI, or
    AVX-512 VNNI with AVX-512VL); else pairs, 16 lanes on a 512-bit AVX-512BW target (or
    under `force_plan("avx512bw")`), else 8."""
    from .int8 import _FORCED, choose_plan

    plan = choose_plan(target, data_dtype, weight_dtype)
    if plan is not None and plan.kind in ("avx512_vnni", "avx_vnni"):
        if plan.kind == "avx_vnni":
            return TapGroups(4, plan.shift, (LANES,))
        ymm = bool(_FORCED) or target.has_feature("avx512vl") or target.has_feature("avxvnni")
        return TapGroups(4, plan.shift, (2 * LANES, LANES) if ymm else (2 * LANES,))
    if _FORCED:
        wide = _FORCED[-1][0] == "avx512bw"
    else:
        wide = target.has_feature("avx512bw") and target.vector_bits >= 512
    return TapGroups(2, 0, (2 * LANES, LANES) if wide else (LANES,))


def row_tile(choices: tuple[int, ...], width: int) -> tuple[int, int]:
    """(lanes, vectors) of the register tile for rows of `width` output columns, lanes out
    of `choices`. A tile of up to `WHOLE_ROW_VECTORS` vectors that divides the row exactly
    comes first (56 columns: 7 x 8; 112: 7 x 16): each channel's result is then computed
    inside the tail's loop over channels, instead of stored whole (padded) and read back.
    Else the lanes padding the row least (7 columns: 8) and up to `VECTORS` vectors."""
    for lanes in choices:
        if width % lanes == 0 and width // lanes <= WHOLE_ROW_VECTORS:
            return lanes, width // lanes
    for lanes in choices:
        for vectors in range(VECTORS, 0, -1):
            if width % (vectors * lanes) == 0:
                return lanes, vectors

    def padded(lanes: int) -> int:
        tile = max(1, min(VECTORS, -(-width // lanes))) * lanes
        return -(-width // tile) * tile

    lanes = min(choices, key=lambda n: (padded(n), -n))
    return lanes, max(1, min(VECTORS, -(-width // lanes)))


_PLAN_KINDS = {(4, 16): "avx512_vnni", (4, 8): "avx_vnni", (2, 16): "avx512bw", (2, 8): "avx2"}
"""The int8 plan whose instruction multiplies `(group, lanes)` taps and lanes."""


def _tap_intrinsic(group: int, lanes: int, portable: bool) -> Any:
    """The intrinsic of `group` taps on `lanes` lanes, the weight broadcast and the data in
    the lanes (`int8._lanes_intrinsic` of that plan)."""
    from .int8 import _lanes_intrinsic, _plan

    return _lanes_intrinsic(_plan(_PLAN_KINDS[group, lanes], "int8", portable))


def schedule_depthwise_int8(
    s: Schedule, outputs: list[Tensor], anchor: Tensor, target: Target, portable: bool = False
) -> bool:
    """The nest of the module docstring; False (nothing changed) for another form or a
    target without AVX2. `portable` uses the intrinsic's plain-LLVM twin."""
    from .conv2d import analyze_conv
    from .int8 import _conv_loads, _int_product, schedule_padded_tail

    c = analyze_conv(s[anchor].op)
    if c is None or _depthwise_form(c) is None or not _int_product(c.op, *_conv_loads(c)):
        return False
    if not target.has_feature("avx2") and not portable:
        return False
    n_, ch, oh_, ow_ = c.out_shape
    kh, kw = _depthwise_form(c)[3:]  # type: ignore[index]
    groups = tap_groups(target, c.raw.dtype, c.weight.dtype)
    lanes, vb = row_tile(groups.lane_choices, ow_)
    host, parts = install(s, outputs, anchor, "int8.depthwise_pairs", vb=vb, lanes=lanes,
                          group=groups.group, shift=groups.shift)  # fmt: skip
    pairs, acc, res = parts["pairs"], parts["acc"], parts["res"]
    parallel = target.num_threads > 1 and n_ * ch * oh_ * ow_ * kh * kw >= PARALLEL_MIN_WORK
    rs = s[res]
    if ow_ % (vb * lanes) == 0:
        # whole tiles: each channel's result is computed inside the tail's channel loop
        st = s[host]
        n, oc, _, ow = st.op.axis
        plane = st.fuse(n, oc)
        _, owl = st.split(ow, factor=lanes)
        st.vectorize(owl)
        if parallel:
            st.parallel(plane)
        rs.compute_at(st, plane)
        s[pairs].compute_at(st, plane)
    else:
        # a part tile: the padded result at root (the tail cannot cover its padding)
        rs.compute_root()
        plane = rs.fuse(*rs.op.axis[:2])
        if parallel:
            rs.parallel(plane)
        s[pairs].compute_at(rs, plane)
        schedule_padded_tail(s, host, target)
    s[pairs].unroll(s[pairs].op.axis[-1])
    _, _, _, rw = rs.op.axis
    rwo, rwi = rs.split(rw, factor=vb * lanes)
    _, rwl = rs.split(rwi, factor=lanes)
    rs.vectorize(rwl)
    ast = s[acc]
    ast.compute_at(rs, rwo)
    *outer, aw = ast.op.axis
    awv, awl = ast.split(aw, factor=lanes)
    rkh, rt, rg = ast.op.reduce_axis
    ast.reorder(rkh, rt, *outer, awv, awl, rg)
    ast.unroll(awv)
    ast.tensorize(awl, _tap_intrinsic(groups.group, lanes, portable))
    s[parts["wpair"]].compute_root()
    if "wsum" in parts:
        s[parts["wsum"]].compute_root()
    return True


@register_rewrite("int8.depthwise_pairs")
def depthwise_pairs_rewrite(
    op: Any, vb: int, lanes: int = LANES, group: int = 2, shift: int = 0
) -> dict[str, Tensor]:
    """The int8 depthwise anchor `op` over groups of `group` taps (module docstring: 2,
    int16 pairs; 4, byte quads of the data shifted by `shift` into uint8, the weight sum
    times `shift` subtracted after), tiles of `vb` column vectors of `lanes` lanes
    (`"pairs"`, `"wpair"`, `"acc"`, `"res"`, and `"wsum"` when shifted)."""
    from .conv2d import analyze_conv
    from .int8 import _conv_weight_sum

    c = require(analyze_conv(op), "int8.depthwise_pairs", op)
    form = require(_depthwise_form(c), "int8.depthwise_pairs", op)
    channels, h, w, kh, kw = form
    x, wt = c.raw, c.weight
    n_, _, oh_, ow_ = c.out_shape
    sh, sw = c.strides
    dh = c.dilation[0]
    pt, pl = c.pads[0][0], c.pads[1][0]
    data_dtype, weight_dtype = ("int16", "int16") if group == 2 else ("uint8", "int8")
    taps = -(-kw // group)
    step = group // sw
    owp = -(-ow_ // (vb * lanes)) * (vb * lanes)
    rows = (oh_ - 1) * sh + (kh - 1) * dh + 1
    cols = owp + (taps - 1) * step

    def pairs_body(n: Var, ch: Var, r: Var, q: Var, g: Var) -> PrimExpr:
        hh, ww = r - pt, q * sw + g - pl
        inside = all_of(hh >= 0, hh < h, ww >= 0, ww < w)
        value = x[n, ch, hh, ww]
        if shift:
            value = cast("int32", value) + shift
        return if_then_else(inside, cast(data_dtype, value), const(shift, data_dtype))

    pairs = compute((n_, channels, rows, cols, group), pairs_body, name=f"{x.name}_pairs",
                    tag="pad")  # fmt: skip

    def wpair_body(ch: Var, k: Var, t: Var, g: Var) -> PrimExpr:
        tap = t * group + g
        value = cast(weight_dtype, wt[ch, 0, k, tap])
        return if_then_else(tap < kw, value, const(0, weight_dtype))

    wpair = compute((channels, kh, taps, group), wpair_body, name=f"{wt.name}_pairs",
                    tag="pack")  # fmt: skip
    rkh, rt, rg = reduce_axis(kh, "kh"), reduce_axis(taps, "t"), reduce_axis(group, "g")

    def acc_body(n: Var, ch: Var, oh: Var, ow: Var) -> PrimExpr:
        a = cast("int32", wpair[ch, rkh.var, rt.var, rg.var])
        b = cast("int32", pairs[n, ch, oh * sh + rkh.var * dh, ow + rt.var * step, rg.var])
        return sum_(a * b, axis=[rkh, rt, rg])

    shape = (n_, channels, oh_, owp)
    acc = compute(shape, acc_body, name=f"{c.op.name}_int8", tag=c.op.tag, attrs=c.op.attrs)
    res = compute(shape, lambda *i: acc[i], name=f"{c.op.name}_res")
    parts = {"pairs": pairs, "wpair": wpair, "acc": acc, "res": res}
    if not shift:
        return {"view": anchor_view(op, lambda *i: res[i]), **parts}
    wsum = _conv_weight_sum(wt, shift)
    view = anchor_view(op, lambda n, ch, oh, ow: res[n, ch, oh, ow] - wsum[ch])
    return {"view": view, **parts, "wsum": wsum}


__all__ = ["TapGroups", "depthwise_pairs_rewrite", "schedule_depthwise_int8", "tap_groups"]
