"""Indexing operators: take, gather and scatter, one-hot and masks (TVM `tensor/transform.cc`).

`take`'s `mode` says what an out-of-range index does: "clip" (clamp), "wrap" (modulo) or
"fast" (unchecked). `adv_index` takes one tuple `(data, index0, index1, ...)`.
"""

from __future__ import annotations

from ..attrs import Kind
from ._decl import (
    INJECTIVE,
    OPAQUE,
    OUT_ELEMWISE_FUSABLE,
    attr,
    declare,
    dtype_field,
    nullable,
    required,
    schema,
)

TAKE_ATTRS = schema(
    "TakeAttrs",
    attr("batch_dims", 0),
    nullable("axis", Kind.INT),
    attr("mode", "clip"),
)
GATHER_ATTRS = schema("GatherAttrs", nullable("axis", Kind.INT))
GATHER_ND_ATTRS = schema("GatherNDAttrs", attr("batch_dims", 0), nullable("index_rank", Kind.INT))
SCATTER_ELEMENTS_ATTRS = schema(
    "ScatterElementsAttrs",
    attr("axis", 0),
    attr("reduction", "update"),
)
ONE_HOT_ATTRS = schema(
    "OneHotAttrs",
    attr("depth", 1),
    attr("axis", -1),
    dtype_field(),
)
SPARSE_TO_DENSE_ATTRS = schema("SparseToDenseAttrs", required("output_shape", Kind.INTS))
MATRIX_SET_DIAG_ATTRS = schema(
    "MatrixSetDiagAttrs",
    attr("k1", 0),
    attr("k2", 0),
    attr("super_diag_right_align", True),
    attr("sub_diag_right_align", False),
)
SEQUENCE_MASK_ATTRS = schema("SequenceMaskAttrs", attr("mask_value", 0.0), attr("axis", 0))

declare(
    [
        (
            "take",
            "data indices",
            INJECTIVE,
            TAKE_ATTRS,
            "Elements of data at `indices` along `axis` (None: of the flattened data).",
        ),
        (
            "gather",
            "data indices",
            INJECTIVE,
            GATHER_ATTRS,
            "out[..i..] = data[..indices[..i..]..] along `axis`.",
        ),
        (
            "gather_nd",
            "data indices",
            INJECTIVE,
            GATHER_ND_ATTRS,
            "Gather slices of data addressed by the first axis of `indices`.",
        ),
        (
            "scatter_elements",
            "data indices updates",
            OPAQUE,
            SCATTER_ELEMENTS_ATTRS,
            "Write (or combine by `reduction`) updates into a copy of data at indices.",
        ),
        (
            "one_hot",
            "indices on_value off_value",
            OUT_ELEMWISE_FUSABLE,
            ONE_HOT_ATTRS,
            "One-hot encoding of `indices` with `depth` classes on a new `axis`.",
        ),
        (
            "sparse_to_dense",
            "sparse_indices sparse_values default_value",
            OPAQUE,
            SPARSE_TO_DENSE_ATTRS,
            "A dense `output_shape` tensor from sparse indices and values.",
        ),
        (
            "adv_index",
            "inputs",
            INJECTIVE,
            None,
            "Numpy-style advanced indexing of inputs[0] by the index tensors inputs[1:].",
        ),
        (
            "unravel_index",
            "indices shape",
            INJECTIVE,
            None,
            "Coordinates of flat `indices` in an array of `shape`.",
        ),
        (
            "matrix_set_diag",
            "input diagonal",
            INJECTIVE,
            MATRIX_SET_DIAG_ATTRS,
            "Replace diagonals k1..k2 of the innermost matrices.",
        ),
        (
            "sequence_mask",
            "data valid_length",
            INJECTIVE,
            SEQUENCE_MASK_ATTRS,
            "Set elements past each sequence's valid length to `mask_value`.",
        ),
    ]
)
