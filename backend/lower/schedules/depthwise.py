"""The schedule of NCHW depthwise convolutions (`groups` = input channels, any multiplier).

A depthwise convolution does 2 x KH x KW flops per output and reads each input once: it is
bound by memory, not by FMAs. The nest reads the input and writes the output once, and
keeps everything else in cache:

    for n, c:                                              # fused, parallel: one plane
      plane[ph, pw, r, q] = x[n, c, r*sh + ph - pt, q*sw + pw - pl]   (0 outside)
      for j in multiplier:                                 # output channel c*m + j
        for oh, ow.outer:
          acc[ow.inner] = sum over kh, kw of                # vectors of output columns
              plane[kh*dh % sh, kw*dw % sw, oh + kh*dh // sh, ow + kw*dw // sw] * w[c*m+j, kh, kw]
          out[n, c*m + j, oh, ow] = tail(acc)              # bias, clip, ... fused

The plane is the input channel zero-padded and split into its `sh x sw` stride phases, so
every tap of a strided convolution reads contiguous vectors (no gathers) and no load is
guarded. It is built per channel (one L2-sized buffer per task, no padded copy of the
whole tensor); the copy of the middle of a row is unguarded (loop partitioning peels the
padded borders) and, for strided phases, left to LLVM's loop vectorizer, which reads
interleaved columns with wide loads and shuffles.

Narrow outputs (`"flat"`, fewer than `FLAT_BELOW_VECTORS` vectors per row, as in the 14x14
and 7x7 layers): the output positions of the plane `p = oh * Q + ow` run flat over rows of
the plane's width `Q`, whole vectors at a time (the columns past OW are computed and thrown
away), so a 7-wide row does not cost three part vectors:

    for n, c:                                              # fused, parallel
      plane[...] as above
      for j: for p.block (vectors of positions):
        acc[p] = sum over kh, kw of plane[.., p + (kh*dh // sh) * Q + kw*dw // sw] * w[...]
      for j, oh, ow: out[n, c*m + j, oh, ow] = tail(acc[j, oh * Q + ow])
"""

from __future__ import annotations

import math
from typing import Any

from attrs import frozen

from ...target import Target
from ...te.rewrite import register_rewrite
from ...te.schedule import AttachKind
from ...te.tensor import Tensor, compute, reduce_axis, sum_
from ...tir.expr import PrimExpr, all_of, cast, const
from ...tir.op import if_then_else
from . import PARALLEL_MIN_WORK, Schedule
from .conv2d import Conv2D, _ints, analyze_conv
from .dense import VECTOR_REGISTERS, anchor_view, install, require

ENABLED = True
"""Whether `conv2d`'s dispatch sends NCHW depthwise convolutions here (for comparisons)."""

FLAT_BELOW_VECTORS = 2
"""Outputs whose rows are narrower than this many vectors get the flat-position form."""

WIDTH_VECTORS = 4
"""Vectors of output columns (accumulators) per register block of the width form."""


@frozen
class Depthwise:
    """An NCHW depthwise convolution: `channels` input planes of `h x w`, each giving
    `multiplier` output channels; the stride-phase plane is `phases_h x phases_w x rows x
    cols`; `weight_form` is "oihw" (`[C*m, 1, KH, KW]`) or "multiplier" (`[C, m, KH, KW]`)."""

    conv: Conv2D
    channels: int
    multiplier: int
    h: int
    w: int
    kh: int
    kw: int
    phases_h: int
    phases_w: int
    rows: int
    cols: int
    weight_form: str


def analyze_depthwise(c: Conv2D) -> Depthwise | None:
    """The depthwise view of `c`, or None when it is not an NCHW/OIHW depthwise convolution
    (every group one input channel)."""
    if (c.data_layout, c.kernel_layout, c.out_layout) != ("NCHW", "OIHW", "NCHW"):
        return None
    if len(c.out_shape) != 4 or len(_ints(c.raw.shape)) != 4:
        return None
    _, channels, h, w = _ints(c.raw.shape)
    o, i, kh, kw = _ints(c.weight.shape)
    oc = c.out_shape[1]
    if c.groups != channels or channels == 0 or oc % channels:
        return None
    multiplier = oc // channels
    if o == oc and i == 1:
        form = "oihw"
    elif o == channels and i == multiplier:
        form = "multiplier"
    else:
        return None
    (sh, sw), (dh, dw) = c.strides, c.dilation
    oh, ow = c.out_shape[2], c.out_shape[3]
    phases_h = sh if any(k * dh % sh for k in range(kh)) else 1
    phases_w = sw if any(k * dw % sw for k in range(kw)) else 1
    rows = oh + (kh - 1) * dh // sh
    cols = ow + (kw - 1) * dw // sw
    return Depthwise(c, channels, multiplier, h, w, kh, kw, phases_h, phases_w, rows, cols, form)


def phase_plane(d: Depthwise, rows: int) -> Tensor:
    """`[N, C, phases_h, phases_w, rows, cols]`: each input plane zero-padded (to `rows`
    rows, at least `d.rows`) and split into its stride phases."""
    c = d.conv
    x = c.raw
    (sh, sw) = c.strides
    (pt, _), (pl, _) = c.pads
    n_ = _ints(x.shape)[0]

    def body(n: PrimExpr, ch: PrimExpr, ph: PrimExpr, pw: PrimExpr, r: PrimExpr,
             q: PrimExpr) -> PrimExpr:  # fmt: skip
        hh, ww = r * sh + ph - pt, q * sw + pw - pl
        ok = all_of(hh >= 0, hh < d.h, ww >= 0, ww < d.w)
        return if_then_else(ok, x[n, ch, hh, ww], const(0, x.dtype))

    shape = (n_, d.channels, d.phases_h, d.phases_w, max(rows, d.rows), d.cols)
    return compute(shape, body, name=f"{c.op.name}_plane", tag="pad")  # type: ignore[no-any-return]


def _tap(d: Depthwise, plane: Tensor, n: PrimExpr, ic: PrimExpr, row: PrimExpr, col: PrimExpr,
         kh: PrimExpr, kw: PrimExpr) -> PrimExpr:  # fmt: skip
    """The plane element tap (kh, kw) of the output at (row, col) reads."""
    (sh, sw), (dh, dw) = d.conv.strides, d.conv.dilation
    th, tw = kh * dh, kw * dw
    ph = th % sh if d.phases_h > 1 else const(0)
    pw = tw % sw if d.phases_w > 1 else const(0)
    return plane[n, ic, ph, pw, row + th // sh, col + tw // sw]


def _weight(d: Depthwise, oc: PrimExpr, kh: PrimExpr, kw: PrimExpr) -> PrimExpr:
    w = d.conv.weight
    if d.weight_form == "oihw":
        return w[oc, 0, kh, kw]
    return w[oc // d.multiplier, oc % d.multiplier, kh, kw]


def width_conv(d: Depthwise, plane: Tensor) -> Tensor:
    """The convolution `[N, OC, OH, OW]` over the phase planes."""
    c = d.conv
    rh, rw = reduce_axis(d.kh, "rh"), reduce_axis(d.kw, "rw")
    od, m = c.out_dtype, d.multiplier

    def body(n: PrimExpr, oc: PrimExpr, oh: PrimExpr, ow: PrimExpr) -> PrimExpr:
        ic = oc // m if m > 1 else oc
        a = _tap(d, plane, n, ic, oh, ow, rh.var, rw.var)
        b = _weight(d, oc, rh.var, rw.var)
        return sum_(cast(od, a) * cast(od, b), axis=[rh, rw])

    return compute(c.out_shape, body, name=f"{c.op.name}_dw", tag=c.op.tag, attrs=c.op.attrs)  # type: ignore[no-any-return]


def flat_conv(d: Depthwise, plane: Tensor, f: int) -> Tensor:
    """The convolution `[N, OC, blocks, f]` over flat positions `p = oh * cols + ow` of the
    phase planes (blocks of `f`; positions past the plane read its zero-filled end)."""
    c = d.conv
    rh, rw = reduce_axis(d.kh, "rh"), reduce_axis(d.kw, "rw")
    od, m, q = c.out_dtype, d.multiplier, d.cols
    n_, oc_, oh_ = c.out_shape[0], c.out_shape[1], c.out_shape[2]
    blocks = -(-(oh_ * q) // f)

    (sh, sw), (dh, dw) = c.strides, c.dilation

    def body(n: PrimExpr, oc: PrimExpr, pb: PrimExpr, pi: PrimExpr) -> PrimExpr:
        ic = oc // m if m > 1 else oc
        th, tw = rh.var * dh, rw.var * dw
        at = pb * f + pi + (th // sh) * q + tw // sw
        ph = th % sh if d.phases_h > 1 else const(0)
        pw = tw % sw if d.phases_w > 1 else const(0)
        a = plane[n, ic, ph, pw, at // q, at % q]
        b = _weight(d, oc, rh.var, rw.var)
        return sum_(cast(od, a) * cast(od, b), axis=[rh, rw])

    return compute((n_, oc_, blocks, f), body, name=f"{c.op.name}_dw_flat", tag=c.op.tag,  # type: ignore[no-any-return]
                   attrs=c.op.attrs)  # fmt: skip


def _analyzed(op: Any, rewrite: str) -> Depthwise:
    c = analyze_conv(op)
    return require(analyze_depthwise(c) if c is not None else None, rewrite, op)  # type: ignore[no-any-return]


@register_rewrite("depthwise.width")
def width_rewrite(op: Any) -> dict[str, Tensor]:
    """The depthwise anchor `op` as `width_conv` over its phase planes (`"main"`,
    `"plane"`)."""
    d = _analyzed(op, "depthwise.width")
    plane = phase_plane(d, d.rows)
    main = width_conv(d, plane)
    return {"view": anchor_view(op, lambda *i: main[i]), "main": main, "plane": plane}


@register_rewrite("depthwise.flat")
def flat_rewrite(op: Any, f: int) -> dict[str, Tensor]:
    """The depthwise anchor `op` as `flat_conv` over blocks of `f` flat positions
    (`"main"`, `"plane"`), viewed back in NCHW."""
    d = _analyzed(op, "depthwise.flat")
    c, q = d.conv, d.cols
    (sh, sw), (dh, dw) = c.strides, c.dilation
    blocks = -(-(c.out_shape[2] * q) // f)
    reach = ((d.kh - 1) * dh // sh) * q + (d.kw - 1) * dw // sw
    plane = phase_plane(d, -(-(blocks * f + reach) // q))
    main = flat_conv(d, plane, f)

    def view(n: PrimExpr, o: PrimExpr, oh: PrimExpr, ow: PrimExpr) -> PrimExpr:
        return main[n, o, (oh * q + ow) // f, (oh * q + ow) % f]

    return {"view": anchor_view(op, view), "main": main, "plane": plane}


def choose_form(d: Depthwise, lanes: int) -> str:
    """ "flat" for rows narrower than `FLAT_BELOW_VECTORS` vectors, else "width"."""
    return "flat" if d.conv.out_shape[3] < FLAT_BELOW_VECTORS * lanes else "width"


def _schedule_plane(s: Schedule, plane: Tensor, host: Tensor, at: object, d: Depthwise) -> None:
    """The plane is computed per channel inside the host's parallel loop: rows outside,
    columns inside (unguarded in the middle after partitioning), the width phases
    innermost so that a strided copy reads interleaved columns."""
    ps = s[plane]
    ps.compute_at(s[host], at)
    n, ch, ph, pw, r, q = ps.op.axis
    ps.reorder(n, ch, ph, r, q, pw)
    if d.phases_w > 1:
        ps.unroll(pw)


def _parallel(s: Schedule, host: Tensor, loop: object, d: Depthwise, target: Target) -> None:
    work = math.prod(d.conv.out_shape) * d.kh * d.kw
    if target.num_threads > 1 and work >= PARALLEL_MIN_WORK:
        s[host].parallel(loop)


def schedule_depthwise(
    s: Schedule, outputs: list[Tensor], anchor: Tensor, d: Depthwise, target: Target
) -> None:
    """The nest of the module docstring."""
    c = d.conv
    lanes = target.lanes(c.out_dtype)
    if choose_form(d, lanes) == "flat":
        _schedule_flat(s, outputs, anchor, d, lanes, target)
    else:
        _schedule_width(s, outputs, anchor, d, lanes, target)
    if c.data is not c.raw and s[c.data].attach_kind is not AttachKind.INLINE:
        s[c.data].compute_inline()  # the anchor's own padding: nothing reads it any more


def _plane_loop(s: Schedule, host: Tensor, d: Depthwise) -> tuple[object, object]:
    """Split the host's channels into (input channel, multiplier) and fuse the batch with
    the input channel: (the plane loop, the output column loop)."""
    st = s[host]
    n, oc, _, ow = st.op.axis
    if d.multiplier > 1:
        oc, _ = st.split(oc, factor=d.multiplier)
    return st.fuse(n, oc), ow


def _schedule_width(
    s: Schedule, outputs: list[Tensor], anchor: Tensor, d: Depthwise, lanes: int, target: Target
) -> None:
    c = d.conv
    host, parts = install(s, outputs, anchor, "depthwise.width")
    main, plane = parts["main"], parts["plane"]
    ow_ = c.out_shape[3]
    regs = VECTOR_REGISTERS.get(target.vector_bits, 16)
    vecs = max(1, min(WIDTH_VECTORS, regs // 2, -(-ow_ // lanes)))
    st = s[host]
    plane_loop, ow = _plane_loop(s, host, d)
    owo, owi = st.split(ow, factor=vecs * lanes)
    _, owl = st.split(owi, factor=lanes)
    st.vectorize(owl)
    _parallel(s, host, plane_loop, d, target)
    _schedule_plane(s, plane, host, plane_loop, d)
    window_block(s, main, st, owo, lanes)


def window_block(s: Schedule, main: Tensor, host: Any, at: Any, lanes: int) -> None:
    """The window stage `main` (axes n, c, h, w; reduce kh, kw) computed at `host`'s loop
    `at` over a register block of output columns: the window taps unrolled outside the
    column vectors, which are unrolled and vectorized (depthwise convs and window pools)."""
    ms = s[main]
    ms.compute_at(host, at)
    cn, co, coh, cow = ms.op.axis
    rh, rw = ms.op.reduce_axis
    cwo, cwl = ms.split(cow, factor=lanes)
    ms.reorder(cn, co, coh, rh, rw, cwo, cwl)
    ms.unroll(rh)
    ms.unroll(rw)
    ms.unroll(cwo)
    ms.vectorize(cwl)


def _schedule_flat(
    s: Schedule, outputs: list[Tensor], anchor: Tensor, d: Depthwise, lanes: int, target: Target
) -> None:
    c = d.conv
    host, parts = install(s, outputs, anchor, "depthwise.flat", f=lanes)
    main, plane = parts["main"], parts["plane"]
    ow_ = c.out_shape[3]
    st = s[host]
    plane_loop, ow = _plane_loop(s, host, d)
    if ow_ >= lanes:
        _, owl = st.split(ow, factor=lanes)
        st.vectorize(owl)
    elif ow_ >= 4:
        st.vectorize(ow)
    _parallel(s, host, plane_loop, d, target)
    _schedule_plane(s, plane, host, plane_loop, d)
    ms = s[main]
    ms.compute_at(st, plane_loop)
    cn, co, cpb, cpi = ms.op.axis
    rh, rw = ms.op.reduce_axis
    ms.reorder(cn, co, cpb, rh, rw, cpi)
    ms.unroll(rh)
    ms.unroll(rw)
    ms.vectorize(cpi)


__all__ = [
    "Depthwise",
    "analyze_depthwise",
    "choose_form",
    "flat_conv",
    "flat_rewrite",
    "phase_plane",
    "schedule_depthwise",
    "width_conv",
    "width_rewrite",
]
