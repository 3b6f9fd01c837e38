"""Reference implementations of convolutions, with TVM semantics (relay `convolution.cc`).

* `padding` has 1 value (every side), one per spatial axis (both sides) or two per
  spatial axis (all befores, then all afters: `[top, left, bottom, right]` in 2-D), read
  by `lang/opdefs/semantics` (`pad_pairs`); negative padding is an error here.
* Inputs are first cast to `out_dtype` (null: the data's dtype), then multiplied and
  summed exactly (int64 or float64) and cast to `out_dtype` once: int8 inputs with an
  int32 `out_dtype` accumulate exactly, wrapping modulo 2**32 like TVM's int32 sums.
* Layouts are TVM layout strings: data `NCHW`, `NHWC`, `NCHW8c`, ...; kernels `OIHW`,
  `HWIO`, `OIHW8i8o`, ...; the result has `out_layout` (empty: the data layout).
* `groups` splits the channels; a depthwise weight given as (in_channels, multiplier) in
  the O and I axes (TVM's `HWOI` and `OIHW` depthwise forms) is output channel
  `c * multiplier + j` for input channel `c`.
* Transposed convolutions take an `IOHW` weight (in_channels, out_channels / groups, ...)
  and produce `(in - 1) * stride - pad_before - pad_after + dilation * (k - 1) + 1 +
  output_padding` outputs per spatial axis.
* Winograd: `contrib_conv2d_winograd_weight_transform` computes `G g G^T` with TVM's
  Cook-Toom matrix G (`semantics.winograd_g`, rounded to the weight's dtype), giving
  an `(alpha, alpha, CO, CI)` tensor; the convolution without weight transform computes
  `AT [U * (BT d BT^T)] AT^T` for every `alpha x alpha` input tile `d` (stride `tile`) with
  the A and B matrices that go with G (`semantics.winograd_matrices`), in float64: the
  conv2d whose weight a transformed weight came from, and for any other U what the
  compiled kernel computes. It accepts U as `(alpha, alpha, CO, CI)` or, when the channel
  counts tell, `(alpha, alpha, CI, CO)`. Integer weights, strides or dilations other than
  1 recover the weight by least squares and run a direct convolution.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ....lang.attrs import Attrs
from ....lang.opdefs import semantics
from ....lang.optable import OpTable
from ..values import EvalError, Value
from . import Impl
from .transform import (
    as_tensor,
    convert_layout,
    dtype_or,
    need_attrs,
    parse_layout,
    semantic_errors,
    tensor_args,
    wide_dtype,
)

IMPLS: OpTable[Impl] = OpTable("reference implementation")
"""The reference implementations of this family (`op_impls.IMPLS` joins them)."""

Array = np.ndarray
Pads = list[tuple[int, int]]


def pad_pairs(name: str, padding: Sequence[int], ndim: int) -> Pads:
    """TVM's padding attribute as (before, after) pairs, one per spatial axis
    (`semantics.pad_pairs`); negative padding is an `EvalError` too."""
    with semantic_errors(name):
        pairs = semantics.pad_pairs(padding, ndim)
    if any(b < 0 or a < 0 for b, a in pairs):
        raise EvalError(f"operator `{name}`: negative padding")
    return pairs


def _spatial_values(name: str, what: str, values: Sequence[int], ndim: int) -> list[int]:
    vals = [int(v) for v in values]
    if len(vals) == 1:
        vals = vals * ndim
    if len(vals) != ndim or any(v < 1 for v in vals):
        raise EvalError(f"operator `{name}`: `{what}` needs {ndim} positive values")
    return vals


def canonical_layout(layout: str, lead: str) -> str:
    """The primal layout `lead` + spatial axes (DHW order) of `layout` (`NHWC` → `NCHW`)."""
    letters = [a for a, _ in parse_layout(layout) if a.isupper()]
    if sorted(letters) != sorted(lead + "".join(c for c in "DHW" if c in letters)):
        raise EvalError(f"layout `{layout}` does not have axes {lead} and spatial D/H/W")
    return lead + "".join(c for c in "DHW" if c in letters)


def conv_nchw(
    x: Array,
    w: Array,
    strides: Sequence[int],
    pads: Pads,
    dilation: Sequence[int],
    groups: int,
    out_dtype: np.dtype,
) -> Array:
    """Grouped N-d convolution of NC+spatial data with an OI+spatial weight."""
    wide = wide_dtype(out_dtype)
    x = x.astype(out_dtype).astype(wide)
    w = w.astype(out_dtype).astype(wide)
    n, c = x.shape[:2]
    o, ig = w.shape[:2]
    kernel = w.shape[2:]
    if groups > 1 and ig * groups != c and o == c == groups:
        # depthwise weight given as (in_channels, multiplier, ...)
        w = w.reshape(o * ig, 1, *kernel)
        o, ig = o * ig, 1
    if groups < 1 or c != ig * groups or o % groups:
        raise EvalError(
            f"convolution: {c} input channels, weight {list(w.shape)} and groups={groups} "
            "do not fit"
        )
    x = np.pad(x, [(0, 0), (0, 0), *pads])
    out_sp = [
        (x.shape[2 + i] - d * (k - 1) - 1) // s + 1
        for i, (k, s, d) in enumerate(zip(kernel, strides, dilation))
    ]
    if any(size <= 0 for size in out_sp):
        raise EvalError("convolution: the (dilated) kernel is larger than the padded input")
    cg, og = c // groups, o // groups
    xg = x.reshape(n, groups, cg, *x.shape[2:])
    wg = w.reshape(groups, og, cg, *kernel)
    acc = np.zeros((n, groups, og, math.prod(out_sp)), wide)
    for offset in np.ndindex(*kernel):
        window = tuple(
            slice(k * d, k * d + s * (size - 1) + 1, s)
            for k, d, s, size in zip(offset, dilation, strides, out_sp)
        )
        patch = xg[(slice(None),) * 3 + window].reshape(n, groups, cg, -1)
        tap = (Ellipsis, *offset)
        acc += np.matmul(wg[tap], patch)
    return as_tensor(acc.reshape(n, o, *out_sp), out_dtype)


def conv_transpose_nchw(
    x: Array,
    w: Array,
    strides: Sequence[int],
    pads: Pads,
    output_padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
    out_dtype: np.dtype,
) -> Array:
    """Grouped N-d transposed convolution of NC+spatial data with an IO+spatial weight."""
    wide = wide_dtype(out_dtype)
    x = x.astype(out_dtype).astype(wide)
    w = w.astype(out_dtype).astype(wide)
    n, c = x.shape[:2]
    ci, og = w.shape[:2]
    kernel = w.shape[2:]
    if groups < 1 or ci != c or c % groups:
        raise EvalError(
            f"transposed convolution: {c} input channels, weight {list(w.shape)} and "
            f"groups={groups} do not fit"
        )
    in_sp = x.shape[2:]
    full = [
        (size - 1) * s + d * (k - 1) + 1 + op
        for size, s, d, k, op in zip(in_sp, strides, dilation, kernel, output_padding)
    ]
    cg = c // groups
    xg = x.reshape(n, groups, cg, -1)
    wg = w.reshape(groups, cg, og, *kernel)
    acc = np.zeros((n, groups, og, *full), wide)
    for offset in np.ndindex(*kernel):
        tap = (Ellipsis, *offset)
        contrib = np.matmul(np.swapaxes(wg[tap], -1, -2), xg)
        window = tuple(
            slice(k * d, k * d + s * (size - 1) + 1, s)
            for k, d, s, size in zip(offset, dilation, strides, in_sp)
        )
        acc[(slice(None),) * 3 + window] += contrib.reshape(n, groups, og, *in_sp)
    crop = []
    for length, (before, after) in zip(full, pads):
        if length - before - after <= 0:
            raise EvalError("transposed convolution: the padding removes every output")
        crop.append(slice(before, length - after))
    out = acc[(slice(None),) * 3 + tuple(crop)]
    return as_tensor(out.reshape(n, og * groups, *out.shape[3:]), out_dtype)


def _conv(name: str, ndim: int, args: list[Value], attrs: Attrs | None) -> Array:
    data, weight = tensor_args(name, args)
    a = need_attrs(name, attrs)
    x = convert_layout(data, a.data_layout, canonical_layout(a.data_layout, "NC"))
    w = convert_layout(weight, a.kernel_layout, canonical_layout(a.kernel_layout, "OI"))
    if x.ndim != ndim + 2 or w.ndim != ndim + 2:
        raise EvalError(f"operator `{name}` expects {ndim + 2}-D data and weight")
    out = conv_nchw(
        x,
        w,
        _spatial_values(name, "strides", a.strides, ndim),
        pad_pairs(name, a.padding, ndim),
        _spatial_values(name, "dilation", a.dilation, ndim),
        int(a.groups),
        dtype_or(a.out_dtype, data.dtype),
    )
    out_layout = a.out_layout or a.data_layout
    return convert_layout(out, canonical_layout(out_layout, "NC"), out_layout)


def _register_conv(name: str, ndim: int) -> None:
    def impl(args: list[Value], attrs: Attrs | None) -> Array:
        return _conv(name, ndim, args, attrs)

    impl.__name__ = name.replace(".", "_")
    impl.__doc__ = f"TVM's `{name}`."
    IMPLS.register(name)(impl)


for _name, _ndim in [
    ("nn.conv1d", 1),
    ("nn.conv2d", 2),
    ("nn.conv3d", 3),
    ("nn.contrib_conv2d_NCHWc", 2),
    ("nn.contrib_depthwise_conv2d_NCHWc", 2),
]:
    _register_conv(_name, _ndim)


def _conv_transpose(name: str, ndim: int, args: list[Value], attrs: Attrs | None) -> Array:
    data, weight = tensor_args(name, args)
    a = need_attrs(name, attrs)
    x = convert_layout(data, a.data_layout, canonical_layout(a.data_layout, "NC"))
    w = convert_layout(weight, a.kernel_layout, canonical_layout(a.kernel_layout, "IO"))
    if x.ndim != ndim + 2 or w.ndim != ndim + 2:
        raise EvalError(f"operator `{name}` expects {ndim + 2}-D data and weight")
    output_padding = [int(v) for v in a.output_padding]
    if len(output_padding) == 1:
        output_padding *= ndim
    if len(output_padding) != ndim or any(v < 0 for v in output_padding):
        raise EvalError(f"operator `{name}`: bad output_padding {list(a.output_padding)}")
    out = conv_transpose_nchw(
        x,
        w,
        _spatial_values(name, "strides", a.strides, ndim),
        pad_pairs(name, a.padding, ndim),
        output_padding,
        _spatial_values(name, "dilation", a.dilation, ndim),
        int(a.groups),
        dtype_or(a.out_dtype, data.dtype),
    )
    out_layout = a.out_layout or a.data_layout
    return convert_layout(out, canonical_layout(out_layout, "NC"), out_layout)


@IMPLS.register("nn.conv1d_transpose")
def conv1d_transpose(args: list[Value], attrs: Attrs | None) -> Array:
    """TVM's `nn.conv1d_transpose` (weight IOW)."""
    return _conv_transpose("nn.conv1d_transpose", 1, args, attrs)


@IMPLS.register("nn.conv2d_transpose")
def conv2d_transpose(args: list[Value], attrs: Attrs | None) -> Array:
    """TVM's `nn.conv2d_transpose` (weight IOHW)."""
    return _conv_transpose("nn.conv2d_transpose", 2, args, attrs)


# ------------------------------------------------------------------------------ winograd


def winograd_g(tile_size: int, kernel_size: int) -> Array:
    """TVM's Winograd weight-transform matrix G (`semantics.winograd_g`), float64."""
    with semantic_errors():
        return np.asarray(semantics.winograd_g(tile_size, kernel_size))


@IMPLS.register("nn.contrib_conv2d_winograd_weight_transform")
def winograd_weight_transform(args: list[Value], attrs: Attrs | None) -> Array:
    """`U[e, n, co, ci] = sum G[e, h] G[n, w] weight[co, ci, h, w]` (weight OIHW, square)."""
    (weight,) = tensor_args("nn.contrib_conv2d_winograd_weight_transform", args)
    tile = int(need_attrs("nn.contrib_conv2d_winograd_weight_transform", attrs).tile_size)
    if weight.ndim != 4 or weight.shape[2] != weight.shape[3]:
        raise EvalError("winograd weight transform expects an OIHW weight with a square kernel")
    g = winograd_g(tile, weight.shape[3]).astype(weight.dtype).astype(np.float64)
    # One matrix product with kron(G, G) (rows `e*alpha + n`, columns `h*k + w`): the
    # result comes out in `enoi` order, ~10x faster than the three-operand einsum. Done
    # in blocks of channel pairs, so the float64 temporaries stay in cache (a whole
    # ResNet-18 at once was memory bound: 2x slower; the values are the same).
    co, ci, k, _ = weight.shape
    alpha = g.shape[0]
    kron = np.kron(g, g)
    flat = weight.reshape(co * ci, k * k)
    u = np.empty((alpha * alpha, co * ci), dtype=weight.dtype)
    for start in range(0, co * ci, _TRANSFORM_BLOCK):
        block = flat[start : start + _TRANSFORM_BLOCK].astype(np.float64)
        u[:, start : start + _TRANSFORM_BLOCK] = kron @ block.T
    return as_tensor(u.reshape(alpha, alpha, co, ci), weight.dtype)


_TRANSFORM_BLOCK = 1024
"""Channel pairs per block of `winograd_weight_transform`."""


def _winograd_tiles(
    x: Array, u: Array, tile: int, kernel: int, pads: Sequence[tuple[int, int]], groups: int
) -> Array:
    """`AT [U * (BT d BT^T)] AT^T` for each input tile `d` of NCHW `x` (zero-padded by
    `pads`, then to whole tiles), U `(alpha, alpha, CO, CI / groups)`, float64."""
    with semantic_errors():
        at, bt, _ = semantics.winograd_matrices(tile, kernel)
    alpha = tile + kernel - 1
    n, c, h, w = x.shape
    (top, bottom), (left, right) = pads
    out_h, out_w = h + top + bottom - kernel + 1, w + left + right - kernel + 1
    if out_h <= 0 or out_w <= 0:
        raise EvalError("the winograd convolution's window is larger than the padded input")
    tiles_h, tiles_w = -(-out_h // tile), -(-out_w // tile)
    padded = np.zeros((n, c, tiles_h * tile + kernel - 1, tiles_w * tile + kernel - 1))
    padded[:, :, top : top + h, left : left + w] = x
    rows = np.arange(tiles_h)[:, None] * tile + np.arange(alpha)[None, :]
    cols = np.arange(tiles_w)[:, None] * tile + np.arange(alpha)[None, :]
    d = padded[:, :, rows[:, None, :, None], cols[None, :, None, :]]  # n c th tw a a
    v = np.einsum("ea,ncijab,fb->ncijef", bt, d, bt)
    co = u.shape[2]
    per_in, per_out = c // groups, co // groups
    m = np.empty((n, co, tiles_h, tiles_w, alpha, alpha))
    u64 = u.astype(np.float64)
    for g in range(groups):
        ks, cs = slice(g * per_out, (g + 1) * per_out), slice(g * per_in, (g + 1) * per_in)
        m[:, ks] = np.einsum("efkc,ncijef->nkijef", u64[:, :, ks], v[:, cs])
    y = np.einsum("pe,nkijef,qf->nkipjq", at, m, at)
    y = y.reshape(n, co, tiles_h * tile, tiles_w * tile)
    return y[:, :, :out_h, :out_w]


@IMPLS.register("nn.contrib_conv2d_winograd_without_weight_transform")
def winograd_conv2d(args: list[Value], attrs: Attrs | None) -> Array:
    """The conv2d whose weight the (already transformed) Winograd weight came from."""
    name = "nn.contrib_conv2d_winograd_without_weight_transform"
    data, u = tensor_args(name, args)
    a = need_attrs(name, attrs)
    x = convert_layout(data, a.data_layout, canonical_layout(a.data_layout, "NC"))
    if u.ndim == 5 and a.channels is not None:  # packed by output-channel blocks
        with semantic_errors():
            u = semantics.unpack_winograd_weight(u, int(a.channels))
    if x.ndim != 4 or u.ndim != 4 or u.shape[0] != u.shape[1]:
        raise EvalError(
            f"operator `{name}` expects 4-D data and an (alpha, alpha, CO, CI) weight, or "
            "one packed as (alpha, alpha, CO / b, CI, b)"
        )
    alpha, tile = u.shape[0], int(a.tile_size)
    kernel = int(a.kernel_size[0]) if a.kernel_size else alpha - tile + 1
    in_channels = x.shape[1] // int(a.groups)
    co, ci = u.shape[2], u.shape[3]
    channels = int(a.channels) if a.channels is not None else None
    transposed = co == in_channels and ci != in_channels
    if channels is not None and ci == channels and co == in_channels and co != ci:
        transposed = True
    if transposed:
        u = np.swapaxes(u, 2, 3)
    strides = _spatial_values(name, "strides", a.strides, 2)
    dilation = _spatial_values(name, "dilation", a.dilation, 2)
    pads = pad_pairs(name, a.padding, 2)
    if u.dtype.kind == "f" and list(strides) == [1, 1] and list(dilation) == [1, 1]:
        out = _winograd_tiles(x, u, tile, kernel, pads, int(a.groups))
        out = as_tensor(out, dtype_or(a.out_dtype, data.dtype))
        out_layout = a.out_layout or a.data_layout
        return convert_layout(out, canonical_layout(out_layout, "NC"), out_layout)
    g_inv = np.linalg.pinv(winograd_g(tile, kernel))
    weight = np.einsum("he,wn,enoi->oihw", g_inv, g_inv, u.astype(np.float64))
    if u.dtype.kind not in "fc":
        weight = np.rint(weight)
    out = conv_nchw(
        x,
        weight.astype(u.dtype) if u.dtype.kind not in "fc" else weight,
        _spatial_values(name, "strides", a.strides, 2),
        pad_pairs(name, a.padding, 2),
        _spatial_values(name, "dilation", a.dilation, 2),
        int(a.groups),
        dtype_or(a.out_dtype, data.dtype),
    )
    out_layout = a.out_layout or a.data_layout
    return convert_layout(out, canonical_layout(out_layout, "NC"), out_layout)
