"""Reductions (TVM's `src/relay/op/tensor/reduce.cc`).

`axis=None` reduces over every axis; `exclude=True` reduces over the axes *not* listed;
`keepdims=True` keeps reduced axes with size 1. TVM's `std`, `mean_variance` and
`logsumexp` are Python compositions of these (e.g. `sqrt(variance(x, mean(x)))`), not
operators, so they are not declared here.
"""

from __future__ import annotations

from ..attrs import Kind
from ._decl import COMM_REDUCE, attr, declare, declare_family, nullable, schema

REDUCE_ATTRS = schema(
    "ReduceAttrs", nullable("axis", Kind.INTS), attr("keepdims", False), attr("exclude", False)
)
ARG_REDUCE_ATTRS = schema(
    "ArgReduceAttrs",
    nullable("axis", Kind.INTS),
    attr("keepdims", False),
    attr("select_last_index", False),
    attr("exclude", False),
)
VARIANCE_ATTRS = schema(
    "VarianceAttrs",
    nullable("axis", Kind.INTS),
    attr("keepdims", False),
    attr("exclude", False),
    attr("unbiased", False),
)

declare_family(
    "data",
    COMM_REDUCE,
    REDUCE_ATTRS,
    {
        "sum": "Sum over the reduced axes.",
        "mean": "Arithmetic mean over the reduced axes.",
        "max": "Maximum over the reduced axes.",
        "min": "Minimum over the reduced axes.",
        "prod": "Product over the reduced axes.",
        "all": "Logical and over the reduced axes.",
        "any": "Logical or over the reduced axes.",
    },
)
declare_family(
    "data",
    COMM_REDUCE,
    ARG_REDUCE_ATTRS,
    {
        "argmax": "Index of the maximum along the reduced axes (int32).",
        "argmin": "Index of the minimum along the reduced axes (int32).",
    },
)
declare(
    [
        (
            "variance",
            "data mean",
            COMM_REDUCE,
            VARIANCE_ATTRS,
            "Variance about a precomputed `mean` over the reduced axes.",
        ),
    ]
)
