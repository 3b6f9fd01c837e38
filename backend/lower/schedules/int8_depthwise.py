"""int8 depthwise conv2d (NCHW, one output channel per input channel) with `vpmaddwd`: two
taps of a kernel row per instruction instead of one widened int32 multiply per tap.

Taps come in pairs along the kernel row (`kw = 2t, 2t + 1`; an odd row gets a zero tap).
For stride `sw` in {1, 2} along the width, one channel's input is rebuilt once as int16
pairs `pairs[r, q, g] = x_padded[r, q*sw + g]`, so the two taps of pair `t` for output
column `ow` are `pairs[row, ow + t*2/sw, :]` (stride 1: each column next to its right
neighbour; stride 2: the input row as it lies), and `L` consecutive columns are one
contiguous `L x 2` block, the `b` operand of `avx2_i16` (`avx512bw_i16` with 16 lanes) with
the weight pair broadcast:

    for n, c (fused, parallel):                                # one channel plane
      pairs[r, q, g] = int16(x[n, c, r - pt, q*sw + g - pl])   (0 outside)
      for oh, ow.outer:                                         # VB vectors of L columns
        acc[ow : +L] = sum over kh, t of vpmaddwd(pairs[oh*sh + kh, ow + t*2/sw : +L, :],
                                                  wpair[c, kh, t, :])
        res[n, c, oh, ow] = acc
      out[n, c, oh, ow] = tail(res[n, c, oh, ow])               # requantize, vectorized

Exact: int8 (or uint8) values in int16, products summed in pairs into int32 lanes.
"""

from __future__ import annotations

from typing import Any

from ...target import Target
from ...te.rewrite import register_rewrite
from ...te.tensor import Tensor, compute, reduce_axis, sum_
from ...tir.expr import PrimExpr, Var, all_of, cast, const
from ...tir.op import if_then_else
from . import PARALLEL_MIN_WORK, Schedule
from .dense import anchor_view, install, require

LANES = 8
"""int32 lanes of `vpmaddwd` on ymm (16 on zmm, with AVX-512BW: `pair_lanes`)."""

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
"""Most column vectors (accumulators) of a tile that covers a row exactly (`pair_tile`)."""


def pair_tile(target: Target, width: int) -> tuple[int, int]:
    """(lanes, vectors) of the register tile for rows of `width` output columns. Lanes are
    16 (`vpmaddwd` zmm) on a 512-bit AVX-512BW target (or under `force_plan("avx512bw")`),
    else 8. A tile of up to `WHOLE_ROW_VECTORS` vectors that divides the row exactly comes
    first (56 columns: 7 x 8; 112: 7 x 16): each channel's result is then computed inside
    the tail's loop over channels, instead of stored whole (padded) and read back. Else the
    lanes padding the row least (7 columns: 8) and up to `VECTORS` vectors."""
    from .int8 import _FORCED

    if _FORCED:
        wide = _FORCED[-1][0] == "avx512bw"
    else:
        wide = target.has_feature("avx512bw") and target.vector_bits >= 512
    choices = (2 * LANES, LANES) if wide else (LANES,)
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


def schedule_depthwise_int8(
    s: Schedule, outputs: list[Tensor], anchor: Tensor, target: Target, portable: bool = False
) -> bool:
    """The nest of the module docstring; False (nothing changed) for another form or a
    target without AVX2. `portable` uses the intrinsic's plain-LLVM twin."""
    from ...te import intrinsics_x86 as x86
    from .conv2d import analyze_conv
    from .int8 import _conv_loads, _int_product, schedule_padded_tail

    c = analyze_conv(s[anchor].op)
    if c is None or _depthwise_form(c) is None or not _int_product(c.op, *_conv_loads(c)):
        return False
    if not target.has_feature("avx2") and not portable:
        return False
    n_, ch, oh_, ow_ = c.out_shape
    kh, kw = _depthwise_form(c)[3:]  # type: ignore[index]
    lanes, vb = pair_tile(target, ow_)
    host, parts = install(s, outputs, anchor, "int8.depthwise_pairs", vb=vb, lanes=lanes)
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
    intrinsic = x86.AVX512BW_I16 if lanes == 2 * LANES else x86.AVX2_I16
    if portable:
        intrinsic = x86.PORTABLE[intrinsic.name]
    ast.tensorize(awl, intrinsic)
    s[parts["wpair"]].compute_root()
    return True


@register_rewrite("int8.depthwise_pairs")
def depthwise_pairs_rewrite(op: Any, vb: int, lanes: int = LANES) -> dict[str, Tensor]:
    """The int8 depthwise anchor `op` over tap pairs (module docstring), tiles of `vb`
    column vectors of `lanes` lanes (`"pairs"`, `"wpair"`, `"acc"`, `"res"`)."""
    from .conv2d import analyze_conv

    c = require(analyze_conv(op), "int8.depthwise_pairs", op)
    form = require(_depthwise_form(c), "int8.depthwise_pairs", op)
    channels, h, w, kh, kw = form
    x, wt = c.raw, c.weight
    n_, _, oh_, ow_ = c.out_shape
    sh, sw = c.strides
    dh = c.dilation[0]
    pt, pl = c.pads[0][0], c.pads[1][0]
    taps = -(-kw // 2)
    step = 2 // sw
    owp = -(-ow_ // (vb * lanes)) * (vb * lanes)
    rows = (oh_ - 1) * sh + (kh - 1) * dh + 1
    cols = owp + (taps - 1) * step

    def pairs_body(n: Var, ch: Var, r: Var, q: Var, g: Var) -> PrimExpr:
        hh, ww = r - pt, q * sw + g - pl
        inside = all_of(hh >= 0, hh < h, ww >= 0, ww < w)
        return if_then_else(inside, cast("int16", x[n, ch, hh, ww]), const(0, "int16"))

    pairs = compute((n_, channels, rows, cols, 2), pairs_body, name=f"{x.name}_pairs",
                    tag="pad")  # fmt: skip

    def wpair_body(ch: Var, k: Var, t: Var, g: Var) -> PrimExpr:
        tap = t * 2 + g
        value = cast("int16", wt[ch, 0, k, tap])
        return if_then_else(tap < kw, value, const(0, "int16"))

    wpair = compute((channels, kh, taps, 2), wpair_body, name=f"{wt.name}_pairs", tag="pack")
    rkh, rt, rg = reduce_axis(kh, "kh"), reduce_axis(taps, "t"), reduce_axis(2, "g")

    def acc_body(n: Var, ch: Var, oh: Var, ow: Var) -> PrimExpr:
        a = cast("int32", wpair[ch, rkh.var, rt.var, rg.var])
        b = cast("int32", pairs[n, ch, oh * sh + rkh.var * dh, ow + rt.var * step, rg.var])
        return sum_(a * b, axis=[rkh, rt, rg])

    shape = (n_, channels, oh_, owp)
    acc = compute(shape, acc_body, name=f"{c.op.name}_int8", tag=c.op.tag, attrs=c.op.attrs)
    res = compute(shape, lambda *i: acc[i], name=f"{c.op.name}_res")
    parts = {"pairs": pairs, "wpair": wpair, "acc": acc, "res": res}
    return {"view": anchor_view(op, lambda *i: res[i]), **parts}


__all__ = ["depthwise_pairs_rewrite", "schedule_depthwise_int8"]
