"""Compute definitions of convolutions: `nn.conv{1,2,3}d`, the transposed convolutions,
`nn.contrib_conv2d_NCHWc` (the Winograd pair is in `winograd.py`).

A convolution is a zero-padding stage (`pad`, in the data's own layout, only when padding is
nonzero) and one reduction over input channels and kernel taps. Any TVM layout whose
spatial axes are not split works (`NCHW`, `NHWC`, `NCHW8c`; kernels `OIHW`, `HWIO`,
`OIHW8i8o`, `HWOI`): tensors are read at primal indices through `layout_index`. Operands are
cast to `out_dtype` before the multiply, so int8 data with `out_dtype=int32` accumulates in
int32. Tags name the kind and layout as TVM's schedules do (`conv2d_nchw`,
`depthwise_conv2d_nhwc`, `group_conv2d_nchw`, `conv2d_NCHWc`, `conv2d_transpose_nchw`, ...);
`attrs["workload"]` holds the shapes and parameters.
"""

from __future__ import annotations

from collections.abc import Sequence

from ....lang.attrs import Attrs
from ....lang.opdefs.semantics import layout_letters, pad_pairs
from ....lang.optable import OpTable
from ....lang.types import Type
from ...te.tensor import Tensor, compute, reduce_axis, sum_
from ...tir.expr import PrimExpr, all_of, cast, const, eq
from ...tir.op import if_then_else
from . import ComputeFn
from .nn import (
    int_shape,
    layout_index,
    pad,
    per_axis,
    primal_index,
    primal_sizes,
    tensor_type,
)

COMPUTES: OpTable[ComputeFn] = OpTable("compute definition")
"""The compute definitions of this family (`computes.COMPUTES` joins the families)."""

SPATIAL = {1: "W", 2: "HW", 3: "DHW"}
"""The primal spatial axes of an N-d convolution, in layout-string order."""


def pad_spatial(x: Tensor, layout: str, pads: Sequence[tuple[int, int]], name: str) -> Tensor:
    """`x` zero-padded on the spatial axes of `layout` by (before, after) pairs."""
    letters = layout_letters(layout)
    spatial = SPATIAL[len(pads)]
    before, after = [0] * x.ndim, [0] * x.ndim
    for s, (b, a) in zip(spatial, pads):
        before[letters.index(s)], after[letters.index(s)] = b, a
    return pad(x, before, after, 0, name)


def conv_tag(ndim: int, groups: int, in_channels: int, layout: str) -> str:
    """TVM's tag of a convolution: `conv2d_nchw`, `depthwise_conv2d_nhwc`, `group_...`."""
    base = f"conv{ndim}d_{layout.lower()}"
    if groups == 1:
        return base
    return f"depthwise_{base}" if groups == in_channels else f"group_{base}"


def direct_conv(
    data: Tensor,
    weight: Tensor,
    *,
    strides: Sequence[int],
    pads: Sequence[tuple[int, int]],
    dilation: Sequence[int],
    groups: int,
    layouts: tuple[str, str, str],
    out_shape: Sequence[int],
    out_dtype: str,
    name: str,
    tag: str,
) -> Tensor:
    """A grouped N-d convolution in the given (data, kernel, out) layouts.

    A depthwise weight given as (in_channels, multiplier) in its O and I axes (TVM's
    `OIHW`/`HWOI` depthwise forms) makes output channel `c * multiplier + j` for input
    channel `c`, as the reference implementation does."""
    data_layout, kernel_layout, out_layout = layouts
    ndim = len(strides)
    spatial = SPATIAL[ndim]
    dshape, wshape = int_shape(data), int_shape(weight)
    channels = primal_sizes(data_layout, dshape)["C"]
    wsizes = primal_sizes(kernel_layout, wshape)
    out_channels = primal_sizes(out_layout, out_shape)["C"]
    in_per_group = wsizes["I"]
    multiplier_form = (
        groups > 1 and in_per_group * groups != channels and wsizes["O"] == channels == groups
    )
    padded = pad_spatial(data, data_layout, pads, f"{name}_pad")
    pshape = int_shape(padded)
    cg, og = channels // groups, out_channels // groups
    rc = reduce_axis(cg, "rc")
    rk = [reduce_axis(wsizes[s], f"r{s.lower()}") for s in spatial]
    axes = rk if multiplier_form else [rc, *rk]

    def body(*idx: PrimExpr) -> PrimExpr:
        p = primal_index(out_layout, out_shape, idx)
        oc = p["C"]
        if multiplier_form:
            ic = oc // in_per_group
            wp = {"O": ic, "I": oc % in_per_group}
        else:
            ic = (oc // og) * cg + rc.var if groups > 1 else rc.var
            wp = {"O": oc, "I": rc.var}
        dp = {"N": p["N"], "C": ic}
        for s, st, di, r in zip(spatial, strides, dilation, rk):
            dp[s] = p[s] * st + r.var * di
            wp[s] = r.var
        x = padded[layout_index(data_layout, pshape, dp)]
        w = weight[layout_index(kernel_layout, wshape, wp)]
        return sum_(cast(out_dtype, x) * cast(out_dtype, w), axis=axes)

    workload = (
        name,
        dshape,
        wshape,
        tuple(strides),
        tuple(pads),
        tuple(dilation),
        groups,
        layouts,
        out_dtype,
    )
    info = {
        "workload": workload,
        "data_layout": data_layout,
        "kernel_layout": kernel_layout,
        "out_layout": out_layout,
        "groups": groups,
        "out_dtype": out_dtype,
    }
    return compute(out_shape, body, name, tag, info)  # type: ignore[no-any-return]


def _conv(attrs: Attrs, inputs: list[Tensor], out_type: Type, ndim: int, tag: str) -> Tensor:
    data, weight = inputs
    shape, od = tensor_type(out_type)
    data_layout = str(attrs.data_layout)
    layouts = (data_layout, str(attrs.kernel_layout), str(attrs.out_layout) or data_layout)
    groups = int(attrs.groups)
    channels = primal_sizes(data_layout, int_shape(data))["C"]
    return direct_conv(
        data,
        weight,
        strides=per_axis(attrs.strides, ndim),
        pads=pad_pairs(attrs.padding, ndim),
        dilation=per_axis(attrs.dilation, ndim),
        groups=groups,
        layouts=layouts,
        out_shape=shape,
        out_dtype=od,
        name=f"conv{ndim}d",
        tag=tag or conv_tag(ndim, groups, channels, data_layout),
    )


@COMPUTES.register("nn.conv1d")
def conv1d(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """1-D convolution (`NCW`/`NWC` data, any kernel layout)."""
    assert attrs is not None
    return [_conv(attrs, inputs, out_type, 1, "")]


@COMPUTES.register("nn.conv2d")
def conv2d(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """2-D convolution (`NCHW`, `NHWC`, ... data; grouped and depthwise included)."""
    assert attrs is not None
    return [_conv(attrs, inputs, out_type, 2, "")]


@COMPUTES.register("nn.conv3d")
def conv3d(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """3-D convolution (`NCDHW`/`NDHWC` data)."""
    assert attrs is not None
    return [_conv(attrs, inputs, out_type, 3, "")]


@COMPUTES.register("nn.contrib_conv2d_NCHWc")
def conv2d_nchwc(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """2-D convolution on channel-blocked layouts (`NCHW8c` data, `OIHW8i8o` weight)."""
    assert attrs is not None
    return [_conv(attrs, inputs, out_type, 2, "conv2d_NCHWc")]


@COMPUTES.register("nn.contrib_depthwise_conv2d_NCHWc")
def depthwise_conv2d_nchwc(
    attrs: Attrs | None, inputs: list[Tensor], out_type: Type
) -> list[Tensor]:
    """Depthwise 2-D convolution on channel-blocked layouts (`NCHW8c` data, `OIHW1i8o`
    weight)."""
    assert attrs is not None
    return [_conv(attrs, inputs, out_type, 2, "depthwise_conv2d_NCHWc")]


# ------------------------------------------------------------------- transposed convolution


def _conv_transpose(attrs: Attrs, inputs: list[Tensor], out_type: Type, ndim: int) -> Tensor:
    """`out[y] = sum_k x[(y + before - k*d) / s] * w[k]` over the taps where the division
    is exact and in range: a stage that dilates the data by the strides and pads it
    (`dilate_pad`, in NC+spatial order), then a stride-1 convolution with the flipped
    kernel."""
    data, weight = inputs
    shape, od = tensor_type(out_type)
    data_layout, kernel_layout = str(attrs.data_layout), str(attrs.kernel_layout)
    out_layout = str(attrs.out_layout) or data_layout
    spatial = SPATIAL[ndim]
    strides, dilation = per_axis(attrs.strides, ndim), per_axis(attrs.dilation, ndim)
    pads = pad_pairs(attrs.padding, ndim)
    groups = int(attrs.groups)
    dshape, wshape = int_shape(data), int_shape(weight)
    dsizes, wsizes = primal_sizes(data_layout, dshape), primal_sizes(kernel_layout, wshape)
    osizes = primal_sizes(out_layout, shape)
    kernel = [wsizes[s] for s in spatial]
    channels = dsizes["C"]
    cg, og = channels // groups, wsizes["O"]
    dp_shape = [dsizes["N"], channels]
    dp_shape += [osizes[s] + (k - 1) * d for s, k, d in zip(spatial, kernel, dilation)]

    def dilate_pad(n: PrimExpr, c: PrimExpr, *zs: PrimExpr) -> PrimExpr:
        conds, src = [], {"N": n, "C": c}
        for s, z, k, d, st, (before, _) in zip(spatial, zs, kernel, dilation, strides, pads):
            p = z - (k - 1) * d + before
            conds += [p >= 0, p < dsizes[s] * st]
            if st > 1:
                conds.append(eq(p % st, 0))
            src[s] = p // st if st > 1 else p
        value = data[layout_index(data_layout, dshape, src)]
        return if_then_else(all_of(*conds), value, const(0, data.dtype))

    dp = compute(dp_shape, dilate_pad, "conv_transpose_dilate_pad", "injective,pad")
    rc = reduce_axis(cg, "rc")
    rk = [reduce_axis(k, f"r{s.lower()}") for s, k in zip(spatial, kernel)]

    def body(*idx: PrimExpr) -> PrimExpr:
        p = primal_index(out_layout, shape, idx)
        g, j = p["C"] // og, p["C"] % og
        ic = g * cg + rc.var if groups > 1 else rc.var
        read = [p["N"], ic, *(p[s] + r.var * d for s, r, d in zip(spatial, rk, dilation))]
        wp = {"I": ic, "O": j}
        for s, r, k in zip(spatial, rk, kernel):
            wp[s] = (k - 1) - r.var
        w = weight[layout_index(kernel_layout, wshape, wp)]
        return sum_(cast(od, dp[tuple(read)]) * cast(od, w), axis=[rc, *rk])

    name = f"conv{ndim}d_transpose"
    workload = (name, dshape, wshape, tuple(strides), tuple(pads), tuple(dilation), groups, od)
    info = {"workload": workload, "data_layout": data_layout, "out_dtype": od, "groups": groups}
    tag = f"{name}_{data_layout.lower()}"
    return compute(shape, body, name, tag, info)  # type: ignore[no-any-return]


@COMPUTES.register("nn.conv1d_transpose")
def conv1d_transpose(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """1-D transposed convolution (weight `IOW`)."""
    assert attrs is not None
    return [_conv_transpose(attrs, inputs, out_type, 1)]


@COMPUTES.register("nn.conv2d_transpose")
def conv2d_transpose(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """2-D transposed convolution (weight `IOHW`)."""
    assert attrs is not None
    return [_conv_transpose(attrs, inputs, out_type, 2)]
