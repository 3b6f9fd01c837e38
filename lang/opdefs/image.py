"""Image operators (TVM `src/relay/op/image/`): resizing, cropping, sampling, dilation.

`image.resize{1,2,3}d` take the target `size` as an attribute (the `dyn.` variants that take
it as an input are not declared); `roi` is only used by the "tf_crop_and_resize"
coordinate transformation.
"""

from __future__ import annotations

from ..attrs import AttrsSchema, Kind
from ._decl import (
    INJECTIVE,
    OUT_ELEMWISE_FUSABLE,
    attr,
    declare,
    dtype_field,
    nullable,
    required,
    schema,
)

_EXTRAPOLATION_VALUE = attr("extrapolation_value", 0.0)


def _resize_schema(ndim: int, layout: str) -> AttrsSchema:
    return schema(
        f"Resize{ndim}DAttrs",
        nullable("size", Kind.INTS),
        nullable("roi", Kind.FLOATS),
        attr("layout", layout),
        attr("method", "linear"),
        attr("coordinate_transformation_mode", "half_pixel"),
        attr("rounding_method", "round"),
        attr("cubic_alpha", -0.5),
        attr("cubic_exclude", 0),
        _EXTRAPOLATION_VALUE,
        dtype_field("out_dtype"),
    )


RESIZE_ATTRS = {
    1: _resize_schema(1, "NCW"),
    2: _resize_schema(2, "NCHW"),
    3: _resize_schema(3, "NCDHW"),
}
CROP_AND_RESIZE_ATTRS = schema(
    "CropAndResizeAttrs",
    nullable("crop_size", Kind.INTS),
    attr("layout", "NCHW"),
    attr("method", "bilinear"),
    _EXTRAPOLATION_VALUE,
    dtype_field("out_dtype"),
)
DILATION2D_ATTRS = schema(
    "Dilation2DAttrs",
    attr("strides", (1, 1)),
    attr("padding", (0, 0)),
    attr("dilations", (1, 1)),
    attr("data_layout", "NCHW"),
    attr("kernel_layout", "IHW"),
    dtype_field("out_dtype"),
)
AFFINE_GRID_ATTRS = schema("AffineGridAttrs", required("target_shape", Kind.INTS))
GRID_SAMPLE_ATTRS = schema(
    "GridSampleAttrs",
    attr("method", "bilinear"),
    attr("layout", "NCHW"),
    attr("padding_mode", "zeros"),
    attr("align_corners", True),
)

declare(
    [
        (
            f"image.resize{n}d",
            "data",
            INJECTIVE,
            RESIZE_ATTRS[n],
            f"{n}-D resize of the spatial axes to `size` by `method` interpolation.",
        )
        for n in (1, 2, 3)
    ]
)
declare(
    [
        (
            "image.crop_and_resize",
            "data boxes box_indices",
            INJECTIVE,
            CROP_AND_RESIZE_ATTRS,
            "Crop each box from its image and resize it to `crop_size`.",
        ),
        (
            "image.dilation2d",
            "data weight",
            OUT_ELEMWISE_FUSABLE,
            DILATION2D_ATTRS,
            "Morphological 2-D dilation (max of data + weight over each window).",
        ),
        (
            "image.affine_grid",
            "data",
            INJECTIVE,
            AFFINE_GRID_ATTRS,
            "Sampling grid of `target_shape` from batched 2x3 affine matrices.",
        ),
        (
            "image.grid_sample",
            "data grid",
            INJECTIVE,
            GRID_SAMPLE_ATTRS,
            "Sample data at the (normalized) coordinates of grid.",
        ),
    ]
)
