"""Type relations of pooling: windowed (max/avg 1d/2d/3d), global and adaptive pools.

The layout names the spatial axes (W; H, W; D, H, W), which must be present and not
split; other axes (N, C, or a split channel block as in NCHW16c) pass through. Per
spatial axis, with p the total padding and w = (pool_size - 1) * dilation + 1:

    floor((size + p - w) / stride) + 1        (ceil instead of floor with ceil_mode)

`padding` has 1 value, one per spatial axis, or two per spatial axis (all "before"
values, then all "after" values). Adaptive pools produce `output_size` (empty: the
input's size, as in TVM; one value: that size on every spatial axis).
"""

from __future__ import annotations

from ...lang.attrs import Attrs
from ...lang.optable import OpTable
from ...lang.types import ANY, AnyDim, Dim, TensorType, Type
from ..show import type_text
from . import Relation, RelationContext, RelationError, tensor_arg
from .conv import total_padding
from .layouts import Layout
from .shapes import (
    bool_attr,
    ints_attr,
    lost,
    opt_ints_attr,
    per_axis,
    positive,
    shape_relations,
    str_attr,
)

RELATIONS: OpTable[Relation] = OpTable("type relation")
"""The type relations of this family (`relations.RELATIONS` joins the families)."""
shape_relation = shape_relations(RELATIONS)

SPATIAL = {1: "W", 2: "HW", 3: "DHW"}


def spatial_axes(data: TensorType, layout_text: str, n: int) -> list[int]:
    """Where the `n` spatial axes of `layout_text` are in `data`; checks the layout."""
    layout = Layout.parse(layout_text, "layout")
    letters = SPATIAL[n]
    for letter in letters:
        if layout.index_of(letter) < 0 or layout.index_of(letter.lower()) >= 0:
            raise RelationError(
                f'layout "{layout}" must have the axes {", ".join(letters)}, none of them split'
            )
    if layout.ndim != data.ndim:
        raise RelationError(
            f'the input `{type_text(data)}` has rank {data.ndim}, but layout "{layout}" has '
            f"{layout.ndim} axes"
        )
    return [layout.index_of(letter) for letter in letters]


def pool_out(size: Dim, pad: int, window: int, stride: int, ceil_mode: bool, axis: str) -> Dim:
    """The output size of a pooling window along one spatial axis."""
    if isinstance(size, AnyDim):
        return ANY
    if type(size) is not int:
        return lost()
    if size + pad < window:
        raise RelationError(
            f"the input's {axis} size {size} (with padding {pad}) is smaller than the pooling "
            f"window {window}"
        )
    span = size + pad - window
    if ceil_mode:
        span += stride - 1
    return span // stride + 1


def _window_pool(args: list[Type], attrs: Attrs | None, n: int) -> Type | None:
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    axes = spatial_axes(data, str_attr(attrs, "layout"), n)
    size = per_axis(ints_attr(attrs, "pool_size"), n, "pool_size")
    strides = per_axis(ints_attr(attrs, "strides"), n, "strides")
    dilation = per_axis(ints_attr(attrs, "dilation"), n, "dilation")
    for values, name in ((size, "pool_size"), (strides, "strides"), (dilation, "dilation")):
        positive(values, name)
    padding = total_padding(ints_attr(attrs, "padding"), n)
    ceil_mode = bool_attr(attrs, "ceil_mode")
    shape = list(data.shape)
    for i, a in enumerate(axes):
        window = (size[i] - 1) * dilation[i] + 1
        shape[a] = pool_out(data.shape[a], padding[i], window, strides[i], ceil_mode, SPATIAL[n][i])
    return TensorType(tuple(shape), data.dtype)


@shape_relation("nn.max_pool1d", "nn.avg_pool1d")
def pool1d_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.max_pool1d(data, pool_size, strides, dilation, padding, layout, ceil_mode)`."""
    return _window_pool(args, attrs, 1)


@shape_relation("nn.max_pool2d", "nn.avg_pool2d")
def pool2d_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.max_pool2d(data, pool_size, strides, dilation, padding, layout, ceil_mode)`."""
    return _window_pool(args, attrs, 2)


@shape_relation("nn.max_pool3d", "nn.avg_pool3d")
def pool3d_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.max_pool3d(data, pool_size, strides, dilation, padding, layout, ceil_mode)`."""
    return _window_pool(args, attrs, 3)


@shape_relation("nn.global_max_pool2d", "nn.global_avg_pool2d")
def global_pool2d_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.global_avg_pool2d(data, layout)`: H and W become 1."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    axes = spatial_axes(data, str_attr(attrs, "layout"), 2)
    return TensorType(tuple(1 if i in axes else d for i, d in enumerate(data.shape)), data.dtype)


def _adaptive_pool(args: list[Type], attrs: Attrs | None, n: int) -> Type | None:
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    axes = spatial_axes(data, str_attr(attrs, "layout"), n)
    sizes = opt_ints_attr(attrs, "output_size") or ()
    if len(sizes) not in (0, 1, n):
        raise RelationError(
            f"output_size={list(sizes)} must have at most {n} values (one per spatial axis)"
        )
    positive(sizes, "output_size")
    shape = list(data.shape)
    if sizes:
        for i, a in enumerate(axes):
            shape[a] = sizes[0] if len(sizes) == 1 else sizes[i]
    return TensorType(tuple(shape), data.dtype)


@shape_relation("nn.adaptive_max_pool1d", "nn.adaptive_avg_pool1d")
def adaptive_pool1d_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.adaptive_avg_pool1d(data, output_size, layout)`."""
    return _adaptive_pool(args, attrs, 1)


@shape_relation("nn.adaptive_max_pool2d", "nn.adaptive_avg_pool2d")
def adaptive_pool2d_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.adaptive_avg_pool2d(data, output_size, layout)`."""
    return _adaptive_pool(args, attrs, 2)


@shape_relation("nn.adaptive_max_pool3d", "nn.adaptive_avg_pool3d")
def adaptive_pool3d_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.adaptive_avg_pool3d(data, output_size, layout)`."""
    return _adaptive_pool(args, attrs, 3)
