"""Shape and layout transforms (the reshaping half of TVM's `tensor/transform.cc`).

`reshape`'s `newshape` may hold TVM's special values: 0 (copy the input dimension),
-1 (infer), -2 (copy the remaining dimensions), -3 (merge two dimensions), -4 (split one
dimension into the next two values). Operators over a tuple of tensors (`concatenate`,
`stack`, `meshgrid`) take that tuple as their one input.
"""

from __future__ import annotations

from ..attrs import Kind
from ._decl import (
    BROADCAST,
    COMM_REDUCE,
    INJECTIVE,
    OPAQUE,
    attr,
    declare,
    dtype_field,
    nullable,
    required,
    schema,
)
from .tensor import INIT_OP_ATTRS

RESHAPE_ATTRS = schema("ReshapeAttrs", required("newshape", Kind.INTS), attr("allowzero", False))
RESHAPE_LIKE_ATTRS = schema(
    "ReshapeLikeAttrs",
    attr("lhs_begin", 0),
    nullable("lhs_end", Kind.INT),
    attr("rhs_begin", 0),
    nullable("rhs_end", Kind.INT),
)
TRANSPOSE_ATTRS = schema("TransposeAttrs", required("axes", Kind.INTS, nullable=True))
SQUEEZE_ATTRS = schema("SqueezeAttrs", nullable("axis", Kind.INTS))
EXPAND_DIMS_ATTRS = schema("ExpandDimsAttrs", required("axis", Kind.INT), attr("num_newaxis", 1))
CONCATENATE_ATTRS = schema("ConcatenateAttrs", attr("axis", 0))
STACK_ATTRS = schema("StackAttrs", attr("axis", 0))
SPLIT_ATTRS = schema(
    "SplitAttrs", required("indices_or_sections", Kind.INT_OR_INTS), attr("axis", 0)
)
STRIDED_SLICE_ATTRS = schema(
    "StridedSliceAttrs",
    required("begin", Kind.INTS, nullable=True),
    required("end", Kind.INTS, nullable=True),
    required("strides", Kind.INTS, nullable=True),
    attr("slice_mode", "end"),
    required("axes", Kind.INTS, nullable=True),
)
SLICE_LIKE_ATTRS = schema("SliceLikeAttrs", required("axes", Kind.INTS, nullable=True))
TILE_ATTRS = schema("TileAttrs", required("reps", Kind.INTS))
REPEAT_ATTRS = schema("RepeatAttrs", required("repeats", Kind.INT), nullable("axis", Kind.INT))
REVERSE_ATTRS = schema("ReverseAttrs", nullable("axis", Kind.INT))
LAYOUT_TRANSFORM_ATTRS = schema(
    "LayoutTransformAttrs", required("src_layout", Kind.STR), required("dst_layout", Kind.STR)
)
SHAPE_OF_ATTRS = schema("ShapeOfAttrs", dtype_field())
NDARRAY_SIZE_ATTRS = schema("NdarraySizeAttrs", dtype_field())
MESHGRID_ATTRS = schema("MeshgridAttrs", attr("indexing", "ij"))

declare(
    [
        ("reshape", "data", INJECTIVE, RESHAPE_ATTRS, "Reshape to `newshape`."),
        (
            "reshape_like",
            "data shape_like",
            INJECTIVE,
            RESHAPE_LIKE_ATTRS,
            "Reshape dims [lhs_begin, lhs_end) of data to dims [rhs_begin, rhs_end) of shape_like.",
        ),
        ("transpose", "data", INJECTIVE, TRANSPOSE_ATTRS, "Permute the axes (None: reverse)."),
        ("squeeze", "data", INJECTIVE, SQUEEZE_ATTRS, "Drop size-1 axes (None: all of them)."),
        (
            "expand_dims",
            "data",
            BROADCAST,
            EXPAND_DIMS_ATTRS,
            "Insert `num_newaxis` size-1 axes at `axis`.",
        ),
        ("concatenate", "data", INJECTIVE, CONCATENATE_ATTRS, "Join a tuple along `axis`."),
        ("stack", "data", INJECTIVE, STACK_ATTRS, "Stack a tuple along a new axis `axis`."),
        (
            "split",
            "data",
            INJECTIVE,
            SPLIT_ATTRS,
            "Split into N equal sections, or at the given indices; returns a tuple.",
        ),
        (
            "strided_slice",
            "data",
            INJECTIVE,
            STRIDED_SLICE_ATTRS,
            "Slice [begin, end) with strides ('size' mode: end holds lengths).",
        ),
        (
            "slice_like",
            "data shape_like",
            INJECTIVE,
            SLICE_LIKE_ATTRS,
            "Slice data to the shape of shape_like on `axes` (None: all).",
        ),
        ("tile", "data", BROADCAST, TILE_ATTRS, "Repeat the whole tensor `reps` times per axis."),
        (
            "repeat",
            "data",
            BROADCAST,
            REPEAT_ATTRS,
            "Repeat each element `repeats` times along `axis`.",
        ),
        ("reverse", "data", INJECTIVE, REVERSE_ATTRS, "Reverse the order along `axis`."),
        (
            "broadcast_to",
            "data",
            BROADCAST,
            INIT_OP_ATTRS,
            "Broadcast to `shape` (numpy rules).",
        ),
        (
            "broadcast_to_like",
            "data broadcast_type",
            BROADCAST,
            None,
            "Broadcast to the shape of broadcast_type.",
        ),
        (
            "collapse_sum_like",
            "data collapse_type",
            COMM_REDUCE,
            None,
            "Sum broadcast axes away to reach the shape of collapse_type.",
        ),
        (
            "layout_transform",
            "data",
            INJECTIVE,
            LAYOUT_TRANSFORM_ATTRS,
            "Convert between data layouts (e.g. NCHW to NCHW16c).",
        ),
        ("shape_of", "data", OPAQUE, SHAPE_OF_ATTRS, "The shape as a 1-D tensor."),
        (
            "ndarray_size",
            "data",
            INJECTIVE,
            NDARRAY_SIZE_ATTRS,
            "The number of elements as a scalar.",
        ),
        (
            "meshgrid",
            "data",
            INJECTIVE,
            MESHGRID_ATTRS,
            "Coordinate grids from a tuple of 1-D tensors; returns a tuple.",
        ),
    ]
)
