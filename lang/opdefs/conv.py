"""Convolutions (TVM `src/relay/op/nn/convolution.cc`).

`padding` holds what was given: one value (all sides), one per spatial axis, or two per
spatial axis (`[top, left, bottom, right]` in 2-D); TVM's defaults have two values in 1-D
and 2-D and three in 3-D. `channels` and `kernel_size` may be None (inferred from the
weight). A null `out_dtype` ("" or None) means the input's dtype.
"""

from __future__ import annotations

from ..attrs import AttrField, AttrsSchema, Kind
from ._decl import OUT_ELEMWISE_FUSABLE, attr, declare, dtype_field, nullable, required, schema


def _layouts(data_layout: str, kernel_layout: str) -> tuple[AttrField, ...]:
    return (
        attr("data_layout", data_layout),
        attr("kernel_layout", kernel_layout),
        attr("out_layout", ""),
        dtype_field("out_dtype"),
    )


def _conv_schema(
    name: str, ndim: int, pad_count: int, layouts: str, *lead: AttrField
) -> AttrsSchema:
    data_layout, kernel_layout = layouts.split()
    return schema(
        name,
        *lead,
        attr("strides", (1,) * ndim),
        attr("padding", (0,) * pad_count),
        attr("dilation", (1,) * ndim),
        attr("groups", 1),
        nullable("channels", Kind.INT),
        nullable("kernel_size", Kind.INTS),
        *_layouts(data_layout, kernel_layout),
    )


def _conv_transpose_schema(name: str, ndim: int, layouts: str) -> AttrsSchema:
    data_layout, kernel_layout = layouts.split()
    return schema(
        name,
        nullable("channels", Kind.INT),
        nullable("kernel_size", Kind.INTS),
        attr("strides", (1,) * ndim),
        attr("output_padding", (0,) * ndim),
        attr("padding", (0,) * ndim),
        attr("dilation", (1,) * ndim),
        attr("groups", 1),
        *_layouts(data_layout, kernel_layout),
    )


_TILE_SIZE = required("tile_size", Kind.INT)

CONV1D_ATTRS = _conv_schema("Conv1DAttrs", 1, 2, "NCW OIW")
CONV2D_ATTRS = _conv_schema("Conv2DAttrs", 2, 2, "NCHW OIHW")
CONV3D_ATTRS = _conv_schema("Conv3DAttrs", 3, 3, "NCDHW OIDHW")
CONV2D_WINOGRAD_ATTRS = _conv_schema("Conv2DWinogradAttrs", 2, 2, "NCHW OIHW", _TILE_SIZE)
CONV1D_TRANSPOSE_ATTRS = _conv_transpose_schema("Conv1DTransposeAttrs", 1, "NCW IOW")
CONV2D_TRANSPOSE_ATTRS = _conv_transpose_schema("Conv2DTransposeAttrs", 2, "NCHW IOHW")
CONV_WINOGRAD_WEIGHT_TRANSFORM_ATTRS = schema("ConvWinogradWeightTransformAttrs", _TILE_SIZE)

_DW = "data weight"
declare(
    [
        ("nn.conv1d", _DW, OUT_ELEMWISE_FUSABLE, CONV1D_ATTRS, "1-D convolution."),
        ("nn.conv2d", _DW, OUT_ELEMWISE_FUSABLE, CONV2D_ATTRS, "2-D convolution."),
        ("nn.conv3d", _DW, OUT_ELEMWISE_FUSABLE, CONV3D_ATTRS, "3-D convolution."),
        (
            "nn.conv1d_transpose",
            _DW,
            OUT_ELEMWISE_FUSABLE,
            CONV1D_TRANSPOSE_ATTRS,
            "1-D transposed convolution (gradient of conv1d with respect to its data).",
        ),
        (
            "nn.conv2d_transpose",
            _DW,
            OUT_ELEMWISE_FUSABLE,
            CONV2D_TRANSPOSE_ATTRS,
            "2-D transposed convolution (gradient of conv2d with respect to its data).",
        ),
        (
            "nn.contrib_conv2d_NCHWc",
            _DW,
            OUT_ELEMWISE_FUSABLE,
            CONV2D_ATTRS,
            "2-D convolution on channel-blocked layouts (NCHW[x]c data, OIHW[x]i[y]o weight).",
        ),
        (
            "nn.contrib_depthwise_conv2d_NCHWc",
            _DW,
            OUT_ELEMWISE_FUSABLE,
            CONV2D_ATTRS,
            "Depthwise 2-D convolution on channel-blocked layouts (NCHW[x]c data, "
            "OIHW1i[x]o weight).",
        ),
        (
            "nn.contrib_conv2d_winograd_without_weight_transform",
            _DW,
            OUT_ELEMWISE_FUSABLE,
            CONV2D_WINOGRAD_ATTRS,
            "2-D Winograd convolution with an already transformed weight.",
        ),
        (
            "nn.contrib_conv2d_winograd_weight_transform",
            "weight",
            OUT_ELEMWISE_FUSABLE,
            CONV_WINOGRAD_WEIGHT_TRANSFORM_ATTRS,
            "Winograd transform of a conv2d weight for `tile_size`.",
        ),
    ]
)
