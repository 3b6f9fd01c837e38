"""Neural-network operators other than convolution and pooling (TVM `src/relay/op/nn/`).

Dense and matmul, activations, softmax, normalization, dropout, padding, resampling and
losses. `nn.batch_norm` returns `(out, new_mean, new_var)` and `nn.dropout` returns
`(out, mask)`. `nn.pad` takes the pad value as its second input.
"""

from __future__ import annotations

from ..attrs import AttrField, AttrsSchema, Kind
from ._decl import (
    BROADCAST,
    ELEMWISE,
    INJECTIVE,
    OPAQUE,
    OUT_ELEMWISE_FUSABLE,
    attr,
    declare,
    dtype_field,
    required,
    schema,
)


def _norm_schema(name: str, axis: int, *lead: AttrField) -> AttrsSchema:
    return schema(
        name,
        *lead,
        attr("axis", axis),
        attr("epsilon", 1e-5),
        attr("center", True),
        attr("scale", True),
    )


_UNITS = required("units", Kind.INT, nullable=True)
_TRANSPOSES = (attr("transpose_a", False), attr("transpose_b", False))
_METHOD = attr("method", "nearest_neighbor")

DENSE_ATTRS = schema("DenseAttrs", _UNITS, dtype_field("out_dtype"))
DENSE_PACK_ATTRS = schema(
    "DensePackAttrs", _UNITS, dtype_field("out_dtype"), attr("weight_layout", "NC")
)
MATMUL_ATTRS = schema("MatmulAttrs", _UNITS, dtype_field("out_dtype"), *_TRANSPOSES)
BATCH_MATMUL_ATTRS = schema("BatchMatmulAttrs", dtype_field("out_dtype"), *_TRANSPOSES)
BIAS_ADD_ATTRS = schema("BiasAddAttrs", attr("axis", 1))
LEAKY_RELU_ATTRS = schema("LeakyReluAttrs", attr("alpha", 0.25))
PRELU_ATTRS = schema("PReluAttrs", attr("axis", 1))
SOFTMAX_ATTRS = schema("SoftmaxAttrs", attr("axis", -1))
BATCH_NORM_ATTRS = _norm_schema("BatchNormAttrs", 1)
LAYER_NORM_ATTRS = _norm_schema("LayerNormAttrs", -1)
INSTANCE_NORM_ATTRS = _norm_schema("InstanceNormAttrs", 1)
GROUP_NORM_ATTRS = _norm_schema("GroupNormAttrs", 1, attr("num_groups", 0))
L2_NORMALIZE_ATTRS = schema(
    "L2NormalizeAttrs",
    required("eps", Kind.FLOAT),
    required("axis", Kind.INTS, nullable=True),  # None (TVM's null array): every axis
)
DROPOUT_ATTRS = schema("DropoutAttrs", attr("rate", 0.5))
LRN_ATTRS = schema(
    "LRNAttrs",
    attr("size", 5),
    attr("axis", 1),
    attr("bias", 2.0),
    attr("alpha", 0.0001),
    attr("beta", 0.75),
)
FIFO_BUFFER_ATTRS = schema("FIFOBufferAttrs", attr("axis", 0))
PAD_ATTRS = schema(
    "PadAttrs", required("pad_width", Kind.INTS_NESTED), attr("pad_mode", "constant")
)
MIRROR_PAD_ATTRS = schema(
    "MirrorPadAttrs",
    attr("mode", "SYMMETRIC"),
    required("pad_width", Kind.INTS_NESTED),
)
UPSAMPLING_ATTRS = schema(
    "UpSamplingAttrs",
    required("scale_h", Kind.FLOAT),
    required("scale_w", Kind.FLOAT),
    attr("layout", "NCHW"),
    _METHOD,
    attr("align_corners", False),
)
UPSAMPLING3D_ATTRS = schema(
    "UpSampling3DAttrs",
    required("scale_d", Kind.FLOAT),
    required("scale_h", Kind.FLOAT),
    required("scale_w", Kind.FLOAT),
    attr("layout", "NCDHW"),
    _METHOD,
    attr("coordinate_transformation_mode", "half_pixel"),
)
SUBPIXEL_ATTRS = schema(
    "SubPixelAttrs",
    attr("block_size", 1),
    attr("layout", "NCHW"),
    attr("mode", "DCR"),
)

_FUSABLE = OUT_ELEMWISE_FUSABLE
_NORM_INPUTS = "data gamma beta"

declare(
    [
        ("nn.dense", "data weight", _FUSABLE, DENSE_ATTRS, "data @ weight.T (weight: units x k)."),
        (
            "nn.contrib_dense_pack",
            "data weight",
            _FUSABLE,
            DENSE_PACK_ATTRS,
            "Dense with a packed weight of `weight_layout` (e.g. NC8n).",
        ),
        (
            "nn.matmul",
            "tensor_a tensor_b",
            _FUSABLE,
            MATMUL_ATTRS,
            "Matrix product, either operand optionally transposed.",
        ),
        (
            "nn.batch_matmul",
            "tensor_a tensor_b",
            _FUSABLE,
            BATCH_MATMUL_ATTRS,
            "Batched matrix product of 3-D tensors, either optionally transposed.",
        ),
        ("nn.bias_add", "data bias", BROADCAST, BIAS_ADD_ATTRS, "Add a 1-D bias along `axis`."),
        ("nn.relu", "data", ELEMWISE, None, "Rectified linear unit, max(x, 0)."),
        ("nn.leaky_relu", "data", ELEMWISE, LEAKY_RELU_ATTRS, "x if x > 0 else alpha * x."),
        ("nn.prelu", "data alpha", BROADCAST, PRELU_ATTRS, "Leaky relu with per-channel alpha."),
        ("nn.softmax", "data", _FUSABLE, SOFTMAX_ATTRS, "Softmax along `axis`."),
        (
            "nn.fast_softmax",
            "data",
            _FUSABLE,
            SOFTMAX_ATTRS,
            "Softmax along `axis` with a fast exponential.",
        ),
        ("nn.log_softmax", "data", _FUSABLE, SOFTMAX_ATTRS, "Log of softmax along `axis`."),
        (
            "nn.batch_norm",
            "data gamma beta moving_mean moving_var",
            _FUSABLE,
            BATCH_NORM_ATTRS,
            "Batch normalization with moving statistics; returns (out, mean, var).",
        ),
        (
            "nn.layer_norm",
            _NORM_INPUTS,
            OPAQUE,
            LAYER_NORM_ATTRS,
            "Normalize over `axis`, then scale by gamma and shift by beta.",
        ),
        (
            "nn.group_norm",
            _NORM_INPUTS,
            OPAQUE,
            GROUP_NORM_ATTRS,
            "Normalize over channel groups, then scale by gamma and shift by beta.",
        ),
        (
            "nn.instance_norm",
            _NORM_INPUTS,
            OPAQUE,
            INSTANCE_NORM_ATTRS,
            "Normalize each instance and channel, then scale by gamma and shift by beta.",
        ),
        (
            "nn.l2_normalize",
            "data",
            OPAQUE,
            L2_NORMALIZE_ATTRS,
            "x / sqrt(max(sum(x**2 over `axis`), eps)) (axis None: over every axis).",
        ),
        (
            "nn.dropout",
            "data",
            OPAQUE,
            DROPOUT_ATTRS,
            "Dropout (identity at inference); returns (out, mask).",
        ),
        ("nn.lrn", "data", OPAQUE, LRN_ATTRS, "Local response normalization across channels."),
        ("nn.batch_flatten", "data", INJECTIVE, None, "Flatten all but the first axis."),
        (
            "nn.cross_entropy",
            "x y",
            OPAQUE,
            None,
            "Cross entropy of predictions x against one-hot targets y.",
        ),
        (
            "nn.cross_entropy_with_logits",
            "x y",
            OPAQUE,
            None,
            "Cross entropy of log-probabilities x against targets y.",
        ),
        (
            "nn.fifo_buffer",
            "data buffer",
            OPAQUE,
            FIFO_BUFFER_ATTRS,
            "Append data to buffer along `axis`, dropping the oldest entries.",
        ),
        (
            "nn.pad",
            "data pad_value",
            INJECTIVE,
            PAD_ATTRS,
            "Pad each axis by `pad_width` [before, after] pairs.",
        ),
        (
            "nn.mirror_pad",
            "data",
            INJECTIVE,
            MIRROR_PAD_ATTRS,
            "Pad by reflection (SYMMETRIC or REFLECT) by `pad_width` pairs.",
        ),
        (
            "nn.upsampling",
            "data",
            INJECTIVE,
            UPSAMPLING_ATTRS,
            "2-D upsampling by scale_h and scale_w.",
        ),
        (
            "nn.upsampling3d",
            "data",
            INJECTIVE,
            UPSAMPLING3D_ATTRS,
            "3-D upsampling by scale_d, scale_h and scale_w.",
        ),
        (
            "nn.depth_to_space",
            "data",
            INJECTIVE,
            SUBPIXEL_ATTRS,
            "Move channel blocks into block_size x block_size spatial blocks.",
        ),
        (
            "nn.space_to_depth",
            "data",
            INJECTIVE,
            SUBPIXEL_ATTRS,
            "Move block_size x block_size spatial blocks into channels.",
        ),
    ]
)
