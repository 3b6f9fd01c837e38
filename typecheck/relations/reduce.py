"""Type relations of reductions: sum, mean, max, min, prod, all, any, argmax, argmin, variance.

The reduced axes follow TVM's `GetReduceAxes`: `axis` None *or empty* means every axis;
negative axes count from the end; `exclude=True` reduces the axes *not* listed.
`keepdims=True` keeps each reduced axis with size 1. The result has the input's dtype,
except `argmax`/`argmin`, whose indices are `int32`. An axis given twice is an error.
"""

from __future__ import annotations

from ...lang.attrs import Attrs
from ...lang.opdefs import semantics
from ...lang.optable import OpTable
from ...lang.types import Dim, TensorType, Type
from ..show import type_text
from . import Relation, RelationContext, RelationError, tensor_arg
from .shapes import agree, bool_attr, opt_ints_attr, semantic_errors, shape_relations

RELATIONS: OpTable[Relation] = OpTable("type relation")
"""The type relations of this family (`relations.RELATIONS` joins the families)."""
shape_relation = shape_relations(RELATIONS)

REDUCE = ("sum", "mean", "max", "min", "prod", "all", "any")
ARG_REDUCE = ("argmax", "argmin")


def reduced_shape(shape: tuple[Dim, ...], attrs: Attrs | None) -> tuple[Dim, ...]:
    """The shape of a reduction of `shape` by the `axis`/`exclude`/`keepdims` attributes
    (the reduced axes: `semantics.reduce_axes`)."""
    axis, exclude = opt_ints_attr(attrs, "axis"), bool_attr(attrs, "exclude")
    with semantic_errors():
        axes = semantics.reduce_axes(len(shape), axis, exclude)
    if bool_attr(attrs, "keepdims"):
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


@shape_relation(*REDUCE)
def reduce_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`sum(data, axis, keepdims, exclude)` and friends: the reduced shape, same dtype."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    return TensorType(reduced_shape(data.shape, attrs), data.dtype)


def _not_scalar(data: TensorType) -> None:
    if data.ndim == 0:
        raise RelationError("the input must have at least one dimension, but it is a scalar")


@shape_relation(*ARG_REDUCE)
def arg_reduce_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`argmax`/`argmin`: the reduced shape, dtype `int32` (TVM's index type)."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    _not_scalar(data)
    return TensorType(reduced_shape(data.shape, attrs), "int32")


@shape_relation("variance")
def variance_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`variance(data, mean)`: `mean` has the rank of `data` (a keepdims mean)."""
    data = tensor_arg(args[0], "the input")
    mean = tensor_arg(args[1], "the mean")
    if data is None or mean is None:
        return None
    _not_scalar(data)
    problem = ""
    if mean.ndim != data.ndim:
        problem = f"it has rank {mean.ndim}, the input rank {data.ndim}"
    elif mean.dtype != data.dtype:
        problem = "the dtypes differ"
    elif any(agree(m, d) is False and m != 1 for m, d in zip(mean.shape, data.shape)):
        problem = "its shape does not broadcast to the input's"
    if problem:
        raise RelationError(
            f"the mean `{type_text(mean)}` does not fit the input `{type_text(data)}`: {problem} "
            "(compute it with keepdims=True)"
        )
    return TensorType(reduced_shape(data.shape, attrs), data.dtype)
