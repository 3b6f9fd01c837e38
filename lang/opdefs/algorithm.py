"""Sorting, top-k, scans and einsum (TVM `op/algorithm/`, `cumsum`/`cumprod`, `einsum`).

`topk` with `ret_type="both"` returns `(values, indices)`; "values" or "indices" return
one tensor.
"""

from __future__ import annotations

from ..attrs import Kind
from ._decl import INJECTIVE, OPAQUE, attr, declare, dtype_field, nullable, required, schema

ARGSORT_ATTRS = schema(
    "ArgsortAttrs",
    attr("axis", -1),
    attr("is_ascend", True),
    dtype_field(),
)
TOPK_ATTRS = schema(
    "TopKAttrs",
    required("k", Kind.INT, nullable=True),
    attr("axis", -1),
    attr("ret_type", "both"),
    attr("is_ascend", False),
    dtype_field(),
)
SCANOP_ATTRS = schema(
    "ScanopAttrs",
    nullable("axis", Kind.INT),
    dtype_field(),
    nullable("exclusive", Kind.BOOL, False),
)
EINSUM_ATTRS = schema("EinsumAttrs", required("equation", Kind.STR))

declare(
    [
        ("argsort", "data", OPAQUE, ARGSORT_ATTRS, "Indices that sort the data along `axis`."),
        ("sort", "data", OPAQUE, ARGSORT_ATTRS, "The data sorted along `axis`."),
        ("topk", "data", OPAQUE, TOPK_ATTRS, "The k largest (or smallest) along `axis`."),
        (
            "cumsum",
            "data",
            OPAQUE,
            SCANOP_ATTRS,
            "Cumulative sum along `axis` (None: of the flattened data).",
        ),
        (
            "cumprod",
            "data",
            OPAQUE,
            SCANOP_ATTRS,
            "Cumulative product along `axis` (None: of the flattened data).",
        ),
        (
            "einsum",
            "data",
            INJECTIVE,
            EINSUM_ATTRS,
            "Einstein summation of a tuple of tensors by `equation`.",
        ),
    ]
)
