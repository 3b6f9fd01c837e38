"""Type relations of image operators: resize1d/2d/3d, crop_and_resize, dilation2d,
affine_grid, grid_sample.

Layouts work as for convolutions: the shape is converted to the reference layout (NCW,
NCHW, NCDHW), its spatial axes are replaced, and it is converted back. A null
`out_dtype` is the input's dtype.
"""

from __future__ import annotations

from ...lang.attrs import Attrs
from ...lang.optable import OpTable
from ...lang.types import Dim, TensorType, Type
from ..show import type_text
from . import Relation, RelationContext, RelationError, tensor_arg
from .conv import conv_out, dilated, total_padding
from .layouts import Layout, convert_shape, from_reference, require_convertible, to_reference
from .shapes import (
    dtype_attr,
    ints_attr,
    one_of,
    opt_ints_attr,
    per_axis,
    positive,
    require_integral,
    require_rank,
    require_same,
    shape_relations,
    str_attr,
)

RELATIONS: OpTable[Relation] = OpTable("type relation")
"""The type relations of this family (`relations.RELATIONS` joins the families)."""
shape_relation = shape_relations(RELATIONS)

_REF = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _sizes(attrs: Attrs | None, name: str, n: int) -> tuple[int, ...]:
    sizes = opt_ints_attr(attrs, name)
    if sizes is None or len(sizes) != n:
        raise RelationError(f"{name} must list {n} output size{'s' if n > 1 else ''}, not {sizes}")
    positive(sizes, name)
    return sizes


def _resize(args: list[Type], attrs: Attrs | None, n: int) -> Type | None:
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    size = _sizes(attrs, "size", n)
    layout, ref = to_reference(
        data.shape, str_attr(attrs, "layout"), _REF[n], "the input", "layout"
    )
    out = from_reference((*ref[:2], *size), _REF[n], layout, "the result")
    return TensorType(out, dtype_attr(attrs, "out_dtype", data.dtype))


@shape_relation("image.resize1d")
def resize1d_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`image.resize1d(data, size, layout, ...)`: the width becomes size[0]."""
    return _resize(args, attrs, 1)


@shape_relation("image.resize2d")
def resize2d_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`image.resize2d(data, size, layout, ...)`: (H, W) becomes `size`."""
    return _resize(args, attrs, 2)


@shape_relation("image.resize3d")
def resize3d_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`image.resize3d(data, size, layout, ...)`: (D, H, W) becomes `size`."""
    return _resize(args, attrs, 3)


@shape_relation("image.crop_and_resize")
def crop_and_resize_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`image.crop_and_resize(data, boxes, box_indices, crop_size, layout, ...)`: one crop
    of `crop_size` per box; boxes are (num_boxes, 4), box_indices (num_boxes,) integers."""
    data = tensor_arg(args[0], "the input")
    boxes = tensor_arg(args[1], "the boxes")
    indices = tensor_arg(args[2], "the box indices")
    if data is None or boxes is None or indices is None:
        return None
    require_rank(boxes, 2, "the boxes")
    require_rank(indices, 1, "the box indices")
    require_integral(indices, "the box indices")
    require_same(
        boxes.shape[1], 4, f"the boxes `{type_text(boxes)}` must have 4 coordinates per box"
    )
    require_same(
        boxes.shape[0],
        indices.shape[0],
        f"the boxes `{type_text(boxes)}` and box indices `{type_text(indices)}` must have one "
        "entry per box",
    )
    size = _sizes(attrs, "crop_size", 2)
    layout, ref = to_reference(data.shape, str_attr(attrs, "layout"), "NCHW", "the input", "layout")
    out = from_reference((boxes.shape[0], ref[1], *size), "NCHW", layout, "the result")
    return TensorType(out, dtype_attr(attrs, "out_dtype", data.dtype))


@shape_relation("image.dilation2d")
def dilation2d_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`image.dilation2d(data, weight, strides, padding, dilations, ...)`: a morphological
    dilation, shaped like a depthwise convolution; the weight is IHW (or HWI)."""
    data = tensor_arg(args[0], "the input")
    weight = tensor_arg(args[1], "the weight")
    if data is None or weight is None:
        return None
    layout, dshape = to_reference(
        data.shape, str_attr(attrs, "data_layout"), "NCHW", "the input", "data_layout"
    )
    klayout = Layout.parse(str_attr(attrs, "kernel_layout"), "kernel_layout")
    require_convertible(klayout, "IHW", "kernel_layout")
    wshape = convert_shape(weight.shape, klayout, Layout.parse("IHW"), "the weight")
    require_same(
        dshape[1],
        wshape[0],
        f"the input `{type_text(data)}` and the weight `{type_text(weight)}` must have the "
        "same channels",
    )
    strides = per_axis(ints_attr(attrs, "strides"), 2, "strides")
    dilations = per_axis(ints_attr(attrs, "dilations"), 2, "dilations")
    positive(strides, "strides")
    positive(dilations, "dilations")
    padding = total_padding(ints_attr(attrs, "padding"), 2)
    spatial: list[Dim] = [
        conv_out(
            dshape[2 + i], padding[i], dilated(wshape[1 + i], dilations[i]), strides[i], "HW"[i]
        )
        for i in range(2)
    ]
    out = from_reference((dshape[0], wshape[0], *spatial), "NCHW", layout, "the result")
    return TensorType(out, dtype_attr(attrs, "out_dtype", data.dtype))


@shape_relation("image.affine_grid")
def affine_grid_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`image.affine_grid(data, target_shape)`: (batch, 2, 3) matrices give a
    (batch, 2, height, width) sampling grid."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    require_rank(data, 3, "the affine matrices")
    message = f"the affine matrices `{type_text(data)}` must have shape (batch, 2, 3)"
    require_same(data.shape[1], 2, message)
    require_same(data.shape[2], 3, message)
    target = _sizes(attrs, "target_shape", 2)
    return TensorType((data.shape[0], 2, *target), data.dtype)


@shape_relation("image.grid_sample")
def grid_sample_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`image.grid_sample(data, grid, layout, ...)`: NCHW data sampled at a (N, 2, H', W')
    grid gives (N, C, H', W'); NCDHW data with a (N, 3, D', H', W') grid likewise."""
    data = tensor_arg(args[0], "the input")
    grid = tensor_arg(args[1], "the grid")
    if data is None or grid is None:
        return None
    layout = one_of(str_attr(attrs, "layout"), "layout", ("NCHW", "NCDHW"))
    n = len(layout) - 2
    require_rank(data, n + 2, "the input")
    require_rank(grid, n + 2, "the grid")
    require_same(
        grid.shape[1],
        n,
        f"the grid `{type_text(grid)}` must hold {n} coordinates per point (axis 1)",
    )
    require_same(
        data.shape[0],
        grid.shape[0],
        f"the input `{type_text(data)}` and the grid `{type_text(grid)}` differ in batch size",
    )
    return TensorType((*data.shape[:2], *grid.shape[2:]), data.dtype)
