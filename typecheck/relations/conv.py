"""Type relations of convolutions: conv1d/2d/3d, their transposes, NCHWc and Winograd.

Shapes are computed in the reference layouts (NCHW data, OIHW weight, IOHW for the
transposes; NCW/NCDHW in 1-D/3-D) after converting from `data_layout` and
`kernel_layout`, and the result is converted to `out_layout` (default: the data
layout), exactly as TVM does; so NHWC/HWIO, depthwise HWOI and blocked layouts such as
NCHW16c work alike. Per spatial axis, with p the total padding and k' = 1 + (k-1) * dilation:

    conv:           (size + p - k') // stride + 1
    conv_transpose: stride * (size - 1) + k' - p + output_padding

`padding` has 1 value (all sides), one per spatial axis (both sides) or two per spatial
axis (all "before" values, then all "after" values). With `channels` and `kernel_size`
given the weight's type is inferred (as in TVM, also for depthwise convolutions with a
channel multiplier); otherwise they are read off the weight and checked. A null
`out_dtype` is the input's dtype (int8 inputs usually ask for int32).

Two deliberate differences from TVM: conv1d divides the input channels by `groups`
before comparing them with the weight (TVM forgets to in 1-D), and a grouped transposed
convolution whose channels are read off the weight has weight.O * groups output channels
(TVM reports weight.O).
"""

from __future__ import annotations

from ...lang.attrs import Attrs
from ...lang.opdefs import semantics
from ...lang.optable import OpTable
from ...lang.types import ANY, AnyDim, Dim, IncompleteType, TensorType, Type
from ..show import dim_text, shape_text
from . import Relation, RelationContext, RelationError, tensor_arg
from .layouts import Layout, convert_shape, from_reference, require_convertible, to_reference
from .shapes import (
    agree,
    dtype_attr,
    floordiv,
    int_attr,
    ints_attr,
    lost,
    mul,
    opt_int_attr,
    opt_ints_attr,
    per_axis,
    positive,
    require_rank,
    require_same,
    semantic_errors,
    shape_relations,
    str_attr,
)

RELATIONS: OpTable[Relation] = OpTable("type relation")
"""The type relations of this family (`relations.RELATIONS` joins the families)."""
shape_relation = shape_relations(RELATIONS)

DATA_REF = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
KERNEL_REF = {1: "OIW", 2: "OIHW", 3: "OIDHW"}
TRANSPOSE_KERNEL_REF = {1: "IOW", 2: "IOHW", 3: "IODHW"}
SPATIAL = {1: "W", 2: "HW", 3: "DHW"}


def total_padding(padding: tuple[int, ...], n: int) -> list[int]:
    """The total padding of each of `n` spatial axes from a padding attribute
    (`semantics.pad_pairs`)."""
    with semantic_errors():
        return [before + after for before, after in semantics.pad_pairs(padding, n)]


def dilated(k: Dim, dilation: int) -> Dim:
    """The extent of a kernel of size k with `dilation`: 1 + (k - 1) * dilation."""
    if type(k) is int:
        return 1 + (k - 1) * dilation
    if isinstance(k, AnyDim) or dilation == 1:
        return k
    return lost()


def conv_out(size: Dim, pad: int, extent: Dim, stride: int, axis: str) -> Dim:
    """The output size of a convolution window of `extent` along one spatial axis."""
    if type(size) is int and type(extent) is int:
        if size + pad < extent:
            raise RelationError(
                f"the input's {axis} size {size} (with padding {pad}) is smaller than the "
                f"kernel's extent {extent}"
            )
        return (size + pad - extent) // stride + 1
    if isinstance(size, AnyDim) or isinstance(extent, AnyDim):
        return ANY
    return lost()


def conv_transpose_out(
    size: Dim, pad: int, extent: Dim, stride: int, output_padding: int, axis: str
) -> Dim:
    """The output size of a transposed convolution along one spatial axis."""
    if type(size) is int and type(extent) is int:
        out = stride * (size - 1) + extent - pad + output_padding
        if out < 1:
            raise RelationError(
                f"the padding {pad} leaves no output on the {axis} axis (input size {size}, "
                f"kernel extent {extent}, stride {stride})"
            )
        return out
    if isinstance(size, AnyDim) or isinstance(extent, AnyDim):
        return ANY
    return lost()


class _Params:
    """The attributes of a convolution call, read and checked once."""

    def __init__(self, attrs: Attrs | None, n: int, transpose: bool) -> None:
        self.n = n
        self.strides = per_axis(ints_attr(attrs, "strides"), n, "strides")
        self.dilation = per_axis(ints_attr(attrs, "dilation"), n, "dilation")
        positive(self.strides, "strides")
        positive(self.dilation, "dilation")
        self.padding = total_padding(ints_attr(attrs, "padding"), n)
        self.groups = int_attr(attrs, "groups")
        if self.groups < 1:
            raise RelationError(f"groups={self.groups} must be at least 1")
        self.channels = opt_int_attr(attrs, "channels")
        if self.channels is not None and self.channels < 1:
            raise RelationError(f"channels={self.channels} must be at least 1")
        ks = opt_ints_attr(attrs, "kernel_size")
        self.kernel_size = None if ks is None else per_axis(ks, n, "kernel_size")
        if self.kernel_size is not None:
            positive(self.kernel_size, "kernel_size")
        self.output_padding = (
            per_axis(ints_attr(attrs, "output_padding"), n, "output_padding")
            if transpose
            else (0,) * n
        )
        data_layout = str_attr(attrs, "data_layout")
        require_convertible(Layout.parse(data_layout, "data_layout"), DATA_REF[n], "data_layout")
        self.kernel_layout = Layout.parse(str_attr(attrs, "kernel_layout"), "kernel_layout")
        ref = (TRANSPOSE_KERNEL_REF if transpose else KERNEL_REF)[n]
        require_convertible(self.kernel_layout, ref, "kernel_layout")
        self.kernel_ref = ref
        self.out_layout = Layout.parse(str_attr(attrs, "out_layout") or data_layout, "out_layout")
        require_convertible(self.out_layout, DATA_REF[n], "out_layout")
        self.data_layout = data_layout


def _result(
    data: TensorType,
    dshape: tuple[Dim, ...],
    p: _Params,
    channels: Dim,
    kernel: tuple[Dim, ...],
    transpose: bool,
    out_dtype: str,
) -> TensorType:
    spatial: list[Dim] = []
    for i in range(p.n):
        extent = dilated(kernel[i], p.dilation[i])
        axis = SPATIAL[p.n][i]
        if transpose:
            spatial.append(
                conv_transpose_out(
                    dshape[2 + i], p.padding[i], extent, p.strides[i], p.output_padding[i], axis
                )
            )
        else:
            spatial.append(conv_out(dshape[2 + i], p.padding[i], extent, p.strides[i], axis))
    ref = (dshape[0], channels, *spatial)
    return TensorType(from_reference(ref, DATA_REF[p.n], p.out_layout, "the result"), out_dtype)


def _check_weight(
    w: TensorType, wref: tuple[Dim, ...], expected: tuple[Dim, ...], cin: Dim, p: _Params
) -> None:
    """Compare the weight (in the reference kernel layout) with what the attributes and
    the input imply; name the first component that differs."""
    wtext = f"the weight {shape_text(w.shape)}"
    if p.kernel_layout.name != p.kernel_ref:
        wtext += f' (layout "{p.kernel_layout}")'
    ks = wref[2:]
    for got, want in zip(ks, expected[2:]):
        if agree(got, want) is False:
            raise RelationError(
                f"kernel_size={list(expected[2:])}, but {wtext} has a "
                f"{'x'.join(dim_text(k) for k in ks)} kernel"
            )
    o_at, i_at = (1, 0) if p.kernel_ref.startswith("I") else (0, 1)
    if agree(wref[o_at], expected[o_at]) is False:
        raise RelationError(
            f"{wtext} has {dim_text(wref[o_at])} output channels"
            + (" per group" if p.kernel_ref.startswith("I") and p.groups > 1 else "")
            + f", but channels={p.channels} and groups={p.groups} ask for "
            f"{dim_text(expected[o_at])}"
        )
    if agree(wref[i_at], expected[i_at]) is False:
        per_group = "" if p.groups == 1 or i_at == 0 else f" in {p.groups} groups"
        raise RelationError(
            f"the input has {dim_text(cin)} channels{per_group} but {wtext} expects "
            f"{dim_text(wref[i_at])}" + (" per group" if per_group else "")
        )


def _conv(
    args: list[Type], attrs: Attrs | None, ctx: RelationContext, n: int, transpose: bool
) -> Type | None:
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    p = _Params(attrs, n, transpose)
    _, dshape = to_reference(data.shape, p.data_layout, DATA_REF[n], "the input", "data_layout")
    out_dtype = dtype_attr(attrs, "out_dtype", data.dtype)
    cin = dshape[1]
    if type(cin) is int and cin % p.groups:
        raise RelationError(f"the input's {cin} channels do not divide into groups={p.groups}")
    if p.channels is not None and p.channels % p.groups:
        raise RelationError(f"channels={p.channels} do not divide into groups={p.groups}")
    w = None if isinstance(args[1], IncompleteType) else tensor_arg(args[1], "the weight")
    wref = None
    if w is not None:
        wref = convert_shape(w.shape, p.kernel_layout, Layout.parse(p.kernel_ref), "the weight")
    if p.channels is not None and p.kernel_size is not None:
        ks: tuple[Dim, ...] = p.kernel_size
        if transpose:
            expected = (cin, floordiv(p.channels, p.groups), *ks)
        elif w is None and p.groups > 1 and not ctx.final:
            return None  # a depthwise weight may take another shape: wait to see it
        elif wref is not None and p.groups > 1 and p.groups == cin and wref[0] == p.groups:
            expected = (cin, floordiv(p.channels, p.groups), *ks)  # depthwise, multiplier
        else:
            expected = (p.channels, floordiv(cin, p.groups), *ks)
        if w is not None and wref is not None:
            _check_weight(w, wref, expected, cin, p)
        wshape = from_reference(expected, p.kernel_ref, p.kernel_layout, "the weight")
        ctx.unify(args[1], TensorType(wshape, data.dtype if w is None else w.dtype))
        return _result(data, dshape, p, p.channels, ks, transpose, out_dtype)
    if w is None or wref is None:
        return None
    ks = wref[2:]
    if transpose:
        o = wref[1]
        expected = (cin, o if p.channels is None else p.channels // p.groups, *ks)
    else:
        o = wref[0]
        expected = (o if p.channels is None else p.channels, floordiv(cin, p.groups), *ks)
    if p.kernel_size is not None:
        expected = (*expected[:2], *p.kernel_size)
    _check_weight(w, wref, expected, cin, p)
    i_at = 0 if transpose else 1
    require_same(
        wref[i_at],
        expected[i_at],
        f"the input has {dim_text(cin)} channels but the weight {shape_text(w.shape)} expects "
        f"{dim_text(wref[i_at])}",
    )
    channels = mul(o, p.groups) if transpose else o
    return _result(data, dshape, p, channels, ks, transpose, out_dtype)


@shape_relation("nn.conv1d")
def conv1d_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.conv1d(data, weight, ...)`: NCW data, OIW weight by default."""
    return _conv(args, attrs, ctx, 1, False)


@shape_relation("nn.conv2d")
def conv2d_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.conv2d(data, weight, ...)`: NCHW data, OIHW weight by default."""
    return _conv(args, attrs, ctx, 2, False)


@shape_relation("nn.conv3d")
def conv3d_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.conv3d(data, weight, ...)`: NCDHW data, OIDHW weight by default."""
    return _conv(args, attrs, ctx, 3, False)


@shape_relation("nn.conv1d_transpose")
def conv1d_transpose_rel(
    args: list[Type], attrs: Attrs | None, ctx: RelationContext
) -> Type | None:
    """`nn.conv1d_transpose(data, weight, ...)`: NCW data, IOW weight by default."""
    return _conv(args, attrs, ctx, 1, True)


@shape_relation("nn.conv2d_transpose")
def conv2d_transpose_rel(
    args: list[Type], attrs: Attrs | None, ctx: RelationContext
) -> Type | None:
    """`nn.conv2d_transpose(data, weight, ...)`: NCHW data, IOHW weight by default."""
    return _conv(args, attrs, ctx, 2, True)


@shape_relation(
    "nn.contrib_conv2d_NCHWc",
    "nn.contrib_depthwise_conv2d_NCHWc",
    "nn.contrib_conv2d_winograd_without_weight_transform",
)
def conv2d_packed_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """Convolutions whose weight is pre-packed or pre-transformed (NCHW[x]c, Winograd):
    `channels` and `kernel_size` must be given; the weight's shape is not checked (it
    depends on the backend), as in TVM."""
    data = tensor_arg(args[0], "the input")
    if not isinstance(args[1], IncompleteType):
        tensor_arg(args[1], "the weight")
    if data is None:
        return None
    p = _Params(attrs, 2, False)
    if p.channels is None or p.kernel_size is None:
        raise RelationError(
            "channels and kernel_size must be given (the weight is packed or transformed)"
        )
    _, dshape = to_reference(data.shape, p.data_layout, "NCHW", "the input", "data_layout")
    out_dtype = dtype_attr(attrs, "out_dtype", data.dtype)
    return _result(data, dshape, p, p.channels, p.kernel_size, False, out_dtype)


@shape_relation("nn.contrib_conv2d_winograd_weight_transform")
def winograd_weight_transform_rel(
    args: list[Type], attrs: Attrs | None, ctx: RelationContext
) -> Type | None:
    """`nn.contrib_conv2d_winograd_weight_transform(weight, tile_size)`: an OIHW weight
    (O, I, kh, kw) becomes (tile + kh - 1, tile + kw - 1, O, I)."""
    weight = tensor_arg(args[0], "the weight")
    if weight is None:
        return None
    require_rank(weight, 4, "the weight (OIHW)")
    tile = int_attr(attrs, "tile_size")
    if tile < 1:
        raise RelationError(f"tile_size={tile} must be at least 1")
    o, i, kh, kw = weight.shape
    grown = [_plus(d, tile - 1) for d in (kh, kw)]
    return TensorType((*grown, o, i), weight.dtype)


def _plus(d: Dim, k: int) -> Dim:
    if type(d) is int:
        return d + k
    if isinstance(d, AnyDim) or k == 0:
        return d
    return lost()
