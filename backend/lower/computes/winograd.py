"""Compute definitions of the Winograd pair: `nn.contrib_conv2d_winograd_weight_transform`
and `nn.contrib_conv2d_winograd_without_weight_transform` (F(m x m, r x r), NCHW).

The contract is the reference implementation's: the weight transform is `U = G g G^T` with
TVM's Cook-Toom matrix G (`semantics.winograd_g`, rounded to the weight's dtype), laid out
`(alpha, alpha, CO, CI)` with `alpha = m + r - 1`; the convolution computes the conv2d whose
weight U came from (U may also come as `(alpha, alpha, CI, CO)` when the channel counts tell).
For a stride-1, undilated, ungrouped float NCHW convolution it is a real Winograd algorithm
with the A and B matrices that match G (`winograd_matrices`):

    pad    X[b, c, y, x]  = x[b, c, y - pad_top, x - pad_left]                (0 outside)
    tiles  D[i, j, c, q, t] = X[b(q), c, th(q)*m + i, t*m + j]          (t vectorized: gathers)
    rows   T[e, j, c, q, t] = sum_i BT[e, i] D[i, j, c, q, t]
    cols   V[e, n, c, p]  = sum_j BT[n, j] T[e, j, c, p // TWP, p % TWP]  (V = BT d B)
    gemm   M[e, n, k, p]  = sum_c U[e, n, k, c] V[e, n, c, p]              (alpha^2 GEMMs)
           (U packed by b output channels: U[e, n, k // b, c, k % b], one stream per block)
    rows   Z[k, i, n, p]  = sum_e AT[i, e] M[e, n, k, p]
    cols   O[k, q, i, x]  = sum_n AT[x % m, n] Z[k, i, n, q*TWP + x // m]  (O = AT M A)
    out    y[b, k, h, w]  = O[k, b*TH + h // m, h % m, w]                   (cropped)

Tile `p = q * TWP + t` is tile column `t` of tile row `q = b * TH + th` (`tile_grid`): the
`TW = ceil(OW/m)` columns padded to `TWP` (whole vectors), the `B * TH` rows padded to `Q`
(`Q * TWP` a multiple of the target's vector, `computes.vector_lanes`, so the GEMM's
columns are whole vectors; padding rows read the last real row). The padded
columns read zeros; padding tiles compute outputs nobody reads. Tiles of a row are
consecutive, so the gather reads `X` with stride m along `t`, and O stores a row of output
pixels contiguously, so the crop is a contiguous vector copy. The row stages (T, V, Z) are a
`select` over their transform-position axis of explicit sums of the nonzero matrix entries;
the schedule unrolls that axis and each copy simplifies to its own sum. O is a sum over all
`n` with the coefficients `AT[x % m, n]` vectorized over `x % m` (constant vectors).

Any other convolution (strides, dilation, groups, another layout, integer dtypes) recovers
the weight with the pseudo-inverse of G and runs a direct convolution, as the reference
implementation defines the operator.

Numerics: Winograd is exact in real arithmetic; in float32 its rounding error grows with
the tile (the transforms' entries reach 8 for F(4,3)): relative to the output's largest
magnitude it stays below about 1e-5 for F(2,3) and 1e-4 for F(4,3) on unit-normal data
(`WINOGRAD_RTOL`).
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Sequence

import numpy as np

from ....lang.attrs import Attrs
from ....lang.opdefs.semantics import pad_pairs, winograd_g, winograd_matrices
from ....lang.optable import OpTable
from ....lang.types import Type
from ...te.tensor import Tensor, compute, reduce_axis, sum_
from ...tir.expr import PrimExpr, all_of, cast, const, eq, min_, select
from ...tir.op import call, if_then_else
from . import ComputeFn, vector_lanes
from .conv import direct_conv
from .nn import int_shape, per_axis, primal_sizes, tensor_type

COMPUTES: OpTable[ComputeFn] = OpTable("compute definition")
"""The compute definitions of the Winograd pair."""


WINOGRAD_RTOL = {2: 1e-5, 4: 1e-4}
"""Error bound of float32 Winograd relative to the largest output magnitude, by tile size
(unit-normal data and weights, up to 512 input channels; measured, with margin)."""


def _matrix_entry(values: np.ndarray, row: PrimExpr, col: PrimExpr, dtype: str) -> PrimExpr:
    """`values[row, col]` of a small constant matrix, as a chain of selects."""
    rows, cols = values.shape
    result: PrimExpr = const(0.0, dtype)
    for r in reversed(range(rows)):
        line: PrimExpr = const(0.0, dtype)
        for c in reversed(range(cols)):
            line = select(eq(col, c), const(float(values[r, c]), dtype), line)
        result = select(eq(row, r), line, result)
    return result


def column_entry(column: np.ndarray, row: PrimExpr, dtype: str) -> PrimExpr:
    """`column[row]` of a small constant vector for a symbolic `row`: a chain of selects of
    constants (vectorized over `row`, one constant vector)."""
    result: PrimExpr = const(float(column[-1]), dtype)
    for r in reversed(range(len(column) - 1)):
        result = select(eq(row, r), const(float(column[r]), dtype), result)
    return result


def combine_rows(matrix: np.ndarray, row: PrimExpr, term: object, dtype: str) -> PrimExpr:
    """`sum_j matrix[row, j] * term(j)` for a symbolic `row`: a select over the rows, each
    an explicit sum of its nonzero entries (a coefficient of 1 or -1 is an add or a sub)."""
    result: PrimExpr | None = None
    for r in reversed(range(matrix.shape[0])):
        total: PrimExpr | None = None
        for j, v in enumerate(matrix[r]):
            if v == 0.0:
                continue
            t = term(j)  # type: ignore[operator]
            if v == -1.0:
                total = (const(0.0, dtype) - t) if total is None else total - t
                continue
            scaled = t if v == 1.0 else t * const(float(v), dtype)
            total = scaled if total is None else total + scaled
        value = total if total is not None else const(0.0, dtype)
        result = value if result is None else select(eq(row, r), value, result)
    assert result is not None
    return result


# ------------------------------------------------------------------------- weight transform


@COMPUTES.register("nn.contrib_conv2d_winograd_weight_transform")
def winograd_weight_transform(
    attrs: Attrs | None, inputs: list[Tensor], out_type: Type
) -> list[Tensor]:
    """`U[e, n, co, ci] = sum G[e, h] G[n, w] weight[co, ci, h, w]` (weight `OIHW`), with
    TVM's Cook-Toom matrix G rounded to the weight's dtype: the kernel columns transformed
    first (`weight_rows`), then the rows, each a select over the position of explicit sums."""
    assert attrs is not None
    (weight,) = inputs
    shape, dt = tensor_type(out_type)
    co, ci, kh, kw = int_shape(weight)
    tile = int(attrs.tile_size)
    g = np.asarray(winograd_g(tile, kw)).astype(np.dtype(dt)).astype(np.float64)
    alpha = g.shape[0]

    def cols(h: PrimExpr, n: PrimExpr, o: PrimExpr, i: PrimExpr) -> PrimExpr:
        return combine_rows(g, n, lambda w: weight[o, i, h, w], dt)

    half = compute((kh, alpha, co, ci), cols, "winograd_weight_cols", "winograd_weight_cols")

    def rows(e: PrimExpr, n: PrimExpr, o: PrimExpr, i: PrimExpr) -> PrimExpr:
        return combine_rows(g, e, lambda h: half[h, n, o, i], dt)

    info = {"tile_size": tile}
    return [compute(shape, rows, "winograd_weight_transform", "winograd_weight_transform", info)]


# ---------------------------------------------------------------------------- convolution


def _transposed_weight(attrs: Attrs, u_shape: tuple[int, ...], in_channels: int) -> bool:
    """Whether U comes as `(alpha, alpha, CI, CO)` (the reference implementation's rule)."""
    co, ci = u_shape[2], u_shape[3]
    transposed = co == in_channels and ci != in_channels
    channels = attrs.channels
    if channels is not None and ci == int(channels) and co == in_channels and co != ci:
        transposed = True
    return transposed


def winograd_applies(attrs: Attrs, data: Tensor, u: Tensor, out_dtype: str) -> bool:
    """Whether the Winograd algorithm computes this call (else the direct fallback):
    NCHW data and output, stride 1, dilation 1, one group, float data, weight and output,
    a square transformed weight whose kernel size matches `kernel_size`."""
    alpha, alpha2 = int_shape(u)[:2]
    tile = int(attrs.tile_size)
    kernel = int(attrs.kernel_size[0]) if attrs.kernel_size else alpha - tile + 1
    sizes = list(attrs.kernel_size) if attrs.kernel_size else [kernel, kernel]
    return (
        str(attrs.data_layout) == "NCHW"
        and str(attrs.out_layout or "NCHW") == "NCHW"
        and per_axis(attrs.strides, 2) == [1, 1]
        and per_axis(attrs.dilation, 2) == [1, 1]
        and int(attrs.groups) == 1
        and alpha == alpha2 == tile + kernel - 1
        and [int(k) for k in sizes] == [kernel, kernel]
        and 1 < tile < 9
        and 2 < kernel < 8
        and all(t.startswith("float") for t in (data.dtype, u.dtype, out_dtype))
    )


@COMPUTES.register("nn.contrib_conv2d_winograd_without_weight_transform")
def winograd_conv2d(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The conv2d whose weight the (already transformed) Winograd weight came from: the
    Winograd algorithm of the module docstring when it applies (`winograd_applies`), else
    the recovered weight and a direct convolution."""
    assert attrs is not None
    data, u = inputs
    shape, od = tensor_type(out_type)
    if not winograd_applies(attrs, data, u, od):
        if len(u.shape) == 5:
            u = _unpacked(u, int(attrs.channels))
        return [_recover_and_convolve(attrs, data, u, shape, od)]
    return [winograd_nchw(attrs, data, u, shape, od)]


def _unpacked(u: Tensor, channels: int) -> Tensor:
    """The `(alpha, alpha, CO, CI)` weight of one packed by output-channel blocks
    (`semantics.pack_winograd_weight`)."""
    alpha, alpha2, _, ci, block = int_shape(u)
    return compute(
        (alpha, alpha2, channels, ci),
        lambda e, n, k, c: u[e, n, k // block, c, k % block],
        "winograd_weight_unpacked",
        "injective",
    )


def tile_grid(batch: int, oh: int, ow: int, tile: int, block: int) -> tuple[int, int, int, int]:
    """(tile rows per image `TH`, tile columns `TW`, padded tile columns `TWP`, padded tile
    rows of the whole batch `Q`) of the layout in the module docstring. `TWP` is `TW`
    rounded up to a multiple of 4 (from 3 columns on) so a row of tiles makes whole vectors;
    `Q` is `batch * TH` rounded up so that `Q * TWP` is a multiple of `block` (a vector's
    elements: the GEMM's columns are whole vectors; padding further only adds tiles, as 64
    for the 56 of a 28x28 F(4x4) layer cost 15% of its time on AVX2)."""
    th_n, tw_n = -(-oh // tile), -(-ow // tile)
    tw_p = -(-tw_n // 4) * 4 if tw_n >= 3 else tw_n
    rows = batch * th_n
    step = block // math.gcd(block, tw_p)
    return th_n, tw_n, tw_p, -(-rows // step) * step


def winograd_nchw(attrs: Attrs, data: Tensor, u: Tensor, shape: Sequence[int], od: str) -> Tensor:
    """The Winograd stages of the module docstring (stride 1, NCHW)."""
    batch, channels, height, width = int_shape(data)
    _, out_channels, oh, ow = shape
    alpha = int_shape(u)[0]
    tile = int(attrs.tile_size)
    kernel = alpha - tile + 1
    block = int_shape(u)[4] if len(u.shape) == 5 else 0  # packed by output channels
    transposed = not block and _transposed_weight(attrs, tuple(int_shape(u)), channels)
    at, bt, _ = winograd_matrices(tile, kernel)
    (top, _), (left, _) = pad_pairs(attrs.padding, 2)
    th_n, _, tw_p, q_n = tile_grid(batch, oh, ow, tile, vector_lanes(od))
    rows = batch * th_n
    n_tiles = q_n * tw_p
    zero = const(0, data.dtype)

    def padded(b: PrimExpr, c: PrimExpr, y: PrimExpr, x: PrimExpr) -> PrimExpr:
        h, w = y - top, x - left
        ok = all_of(h >= 0, h < height, w >= 0, w < width)
        return cast(od, if_then_else(ok, data[b, c, h, w], zero))

    pad_shape = (batch, channels, th_n * tile + kernel - 1, tw_p * tile + kernel - 1)
    xpad = compute(pad_shape, padded, "winograd_pad", "winograd_pad")

    def tiles(i: PrimExpr, j: PrimExpr, c: PrimExpr, q: PrimExpr, tw: PrimExpr) -> PrimExpr:
        row = q if q_n == rows else min_(q, const(rows - 1))  # padding rows repeat the last
        return xpad[row // th_n, c, (row % th_n) * tile + i, tw * tile + j]

    grid = (channels, q_n, tw_p)
    d = compute((alpha, alpha, *grid), tiles, "winograd_tiles", "winograd_tiles")
    t = compute(
        (alpha, alpha, *grid),
        lambda e, j, c, q, tw: combine_rows(bt, e, lambda i: d[i, j, c, q, tw], od),
        "winograd_input_rows",
        "winograd_transform",
    )
    v = compute(
        (alpha, alpha, channels, n_tiles),
        lambda e, n, c, p: combine_rows(bt, n, lambda j: t[e, j, c, p // tw_p, p % tw_p], od),
        "winograd_input",
        "winograd_transform",
    )
    rc = reduce_axis(channels, "rc")

    def gemm(e: PrimExpr, n: PrimExpr, k: PrimExpr, p: PrimExpr) -> PrimExpr:
        if block:
            weight = u[e, n, k // block, rc.var, k % block]
        else:
            weight = u[e, n, rc.var, k] if transposed else u[e, n, k, rc.var]
        return sum_(cast(od, weight) * v[e, n, rc.var, p], axis=rc)

    m = compute((alpha, alpha, out_channels, n_tiles), gemm, "winograd_gemm", "winograd_gemm")
    z = compute(
        (out_channels, tile, alpha, n_tiles),
        lambda k, i, n, p: combine_rows(at, i, lambda e: m[e, n, k, p], od),
        "winograd_output_rows",
        "winograd_transform",
    )

    def columns(k: PrimExpr, q: PrimExpr, i: PrimExpr, x: PrimExpr) -> PrimExpr:
        p, j = q * tw_p + x // tile, x % tile
        terms = [z[k, i, n, p] * column_entry(at[:, n], j, od) for n in range(alpha)]
        return functools.reduce(operator.add, terms)

    o_shape = (out_channels, q_n, tile, tw_p * tile)
    o = compute(o_shape, columns, "winograd_output", "winograd_output")

    def crop(b: PrimExpr, k: PrimExpr, h: PrimExpr, w: PrimExpr) -> PrimExpr:
        return o[k, b * th_n + h // tile, h % tile, w]

    workload = ("conv2d_winograd", (batch, channels, height, width), tuple(int_shape(u)),
                tile, tuple(pad_pairs(attrs.padding, 2)), od)  # fmt: skip
    info = {"workload": workload, "tile_size": tile, "out_dtype": od}
    return compute(shape, crop, "conv2d_winograd", "conv2d_winograd_nchw", info)  # type: ignore[no-any-return]


def _recover_and_convolve(
    attrs: Attrs, data: Tensor, u: Tensor, shape: Sequence[int], od: str
) -> Tensor:
    """The fallback: the weight recovered with the pseudo-inverse of G (float64; rounded
    half to even for integer weights), then a direct convolution."""
    data_layout = str(attrs.data_layout)
    groups = int(attrs.groups)
    alpha, _, co, ci = int_shape(u)
    tile = int(attrs.tile_size)
    kernel = int(attrs.kernel_size[0]) if attrs.kernel_size else alpha - tile + 1
    in_channels = primal_sizes(data_layout, int_shape(data))["C"] // groups
    transposed = _transposed_weight(attrs, tuple(int_shape(u)), in_channels)
    g_inv = np.linalg.pinv(np.asarray(winograd_g(tile, kernel)))
    re, rn = reduce_axis(alpha, "re"), reduce_axis(alpha, "rn")

    def recover(o: PrimExpr, i: PrimExpr, h: PrimExpr, w: PrimExpr) -> PrimExpr:
        src = u[re, rn, i, o] if transposed else u[re, rn, o, i]
        gh = _matrix_entry(g_inv, h, re.var, "float64")
        gw = _matrix_entry(g_inv, w, rn.var, "float64")
        return sum_(gh * gw * cast("float64", src), axis=[re, rn])

    out_ch, in_ch = (ci, co) if transposed else (co, ci)
    wshape = (out_ch, in_ch, kernel, kernel)
    recovered = compute(wshape, recover, "winograd_weight_recover", "winograd_weight_recover")
    if u.dtype.startswith("float"):
        weight = compute(wshape, lambda *i: cast(od, recovered[i]), "winograd_weight", "elemwise")
    else:
        weight = compute(
            wshape,
            lambda *i: cast(u.dtype, call("nearbyint", recovered[i])),
            "winograd_weight",
            "elemwise",
        )
    return direct_conv(
        data,
        weight,
        strides=per_axis(attrs.strides, 2),
        pads=pad_pairs(attrs.padding, 2),
        dilation=per_axis(attrs.dilation, 2),
        groups=groups,
        layouts=(data_layout, "OIHW", str(attrs.out_layout) or data_layout),
        out_shape=shape,
        out_dtype=od,
        name="conv2d_winograd",
        tag=f"conv2d_winograd_{data_layout.lower()}",
    )
