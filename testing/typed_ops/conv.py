"""Call generators of the convolutions (1-3-D, transposed, NCHWc, Winograd), with windows
that fit their padded input.
"""

from __future__ import annotations

from ...lang.op import Op
from ...lang.opdefs.semantics import pad_pairs
from ...lang.optable import OpTable
from ...lang.types import TensorType
from .core import Generator, OpCall, Tape, _call, _input, _shape, _window

GENERATORS: OpTable[Generator] = OpTable("test generator")
"""The call generators of this family (`typed_ops.GENERATORS` joins the families)."""


def _groups(t: Tape, channels: int) -> int:
    return t.pick([1] + [g for g in range(2, channels + 1) if channels % g == 0])


CONV_N = {"nn.conv1d": 1, "nn.conv2d": 2, "nn.conv3d": 3}
DATA_LAYOUT = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
LAST_LAYOUT = {1: "NWC", 2: "NHWC", 3: "NDHWC"}


@GENERATORS.register(*CONV_N)
def _conv(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    n = CONV_N[op.name]
    x = _input(t, x, ranks=(n + 2,), kinds="f", hi=3 if n == 3 else 6)
    if x is None:
        return None
    shape = _shape(x)
    nhwc = n == 2 and t.maybe(3)
    c, spatial = (shape[-1], shape[1:-1]) if nhwc else (shape[1], shape[2:])
    groups = _groups(t, c)
    cout = groups * t.choose(1, 2)
    win = _window(t, spatial)
    if nhwc:
        weight = (*win.sizes, c // groups, cout)
    else:
        weight = (cout, c // groups, *win.sizes)
    return _call(
        op,
        [x, TensorType(weight, x.dtype)],
        strides=win.strides,
        padding=win.padding,
        dilation=win.dilation,
        groups=groups,
        channels=cout if t.maybe(5) else None,
        kernel_size=win.sizes if t.maybe(5) else None,
        data_layout="NHWC" if nhwc else DATA_LAYOUT[n],
        kernel_layout="HWIO" if nhwc else {1: "OIW", 2: "OIHW", 3: "OIDHW"}[n],
    )


@GENERATORS.register("nn.conv1d_transpose", "nn.conv2d_transpose")
def _conv_transpose(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    n = 1 if op.name == "nn.conv1d_transpose" else 2
    x = _input(t, x, ranks=(n + 2,), kinds="f", hi=5)
    if x is None:
        return None
    shape = _shape(x)
    c = shape[1]
    groups = _groups(t, c)
    per_group = t.choose(1, 2)
    win = _window(t, [1] * n, max_stride=2)  # transposed: any padding below the full size
    output_padding = [t.choose(0, s - 1) for s in win.strides]
    padding = win.padding
    full = [
        s * (size - 1) + (k - 1) * d + 1 + op_
        for size, s, k, d, op_ in zip(
            shape[2:], win.strides, win.sizes, win.dilation, output_padding
        )
    ]
    total = [before + after for before, after in pad_pairs(padding, n)]
    if any(f - p < 1 for f, p in zip(full, total)):
        padding = [0]
    weight = TensorType((c, per_group, *win.sizes), x.dtype)
    return _call(
        op,
        [x, weight],
        strides=win.strides,
        padding=padding,
        dilation=win.dilation,
        output_padding=output_padding,
        groups=groups,
        channels=per_group * groups if t.maybe(5) else None,
        kernel_size=win.sizes if t.maybe(5) else None,
    )


@GENERATORS.register("nn.contrib_conv2d_NCHWc")
def _conv_nchwc(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(5,), kinds="f", fits=lambda v: _shape(v)[4] <= 4)
    if x is None:
        return None
    _, c_outer, h, w, ib = _shape(x)
    ob = t.choose(1, 4)
    o_outer = t.choose(1, 2)
    win = _window(t, [h, w])
    weight = TensorType((o_outer, c_outer, *win.sizes, ib, ob), x.dtype)
    return _call(
        op,
        [x, weight],
        strides=win.strides,
        padding=win.padding,
        dilation=win.dilation,
        channels=o_outer * ob,
        kernel_size=win.sizes,
        data_layout=f"NCHW{ib}c",
        kernel_layout=f"OIHW{ib}i{ob}o",
        out_layout=f"NCHW{ob}c",
    )


@GENERATORS.register("nn.contrib_depthwise_conv2d_NCHWc")
def _depthwise_nchwc(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(5,), kinds="f", fits=lambda v: _shape(v)[4] <= 4)
    if x is None:
        return None
    _, c_outer, h, w, b = _shape(x)
    win = _window(t, [h, w])
    weight = TensorType((c_outer, 1, *win.sizes, 1, b), x.dtype)
    return _call(
        op,
        [x, weight],
        strides=win.strides,
        padding=win.padding,
        dilation=win.dilation,
        groups=c_outer * b,
        channels=c_outer * b,
        kernel_size=win.sizes,
        data_layout=f"NCHW{b}c",
        kernel_layout=f"OIHW1i{b}o",
        out_layout=f"NCHW{b}c",
    )


@GENERATORS.register("nn.contrib_conv2d_winograd_without_weight_transform")
def _winograd(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(4,), kinds="f", lo=2, hi=6)
    if x is None:
        return None
    _, c, h, w = _shape(x)
    pad = t.choose(0, 1)
    if min(h, w) + 2 * pad < 3:
        pad = 1
        if min(h, w) + 2 < 3:
            return None
    tile, cout = t.pick((2, 4)), t.choose(1, 4)
    weight = TensorType((tile + 2, tile + 2, cout, c), x.dtype)
    return _call(
        op,
        [x, weight],
        tile_size=tile,
        channels=cout,
        kernel_size=[3, 3],
        padding=[pad, pad],
    )


@GENERATORS.register("nn.contrib_conv2d_winograd_weight_transform")
def _winograd_weight(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    if x is not None:
        x = _input(t, x, ranks=(4,), kinds="f", fits=lambda v: _shape(v)[2:] == (3, 3))
        if x is None:
            return None
    else:
        dtype = t.dtype("f")
        if dtype is None:
            return None
        x = TensorType((t.choose(1, 4), t.choose(1, 3), 3, 3), dtype)
    return _call(op, [x], tile_size=t.pick((2, 4)))
