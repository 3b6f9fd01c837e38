"""Type relations of sorting, top-k, scans and einsum.

`argsort` and `topk` indices are `int32` unless `dtype` says otherwise; `topk` with
`ret_type="both"` returns `(values, indices)`. `cumsum`/`cumprod` with axis None scan
the flattened input. `einsum` follows numpy's rules for the equation: explicit (`->`) or
implicit output, `...` for broadcast axes, a label repeated within one term for a
diagonal, size-1 axes stretching to the other sizes of their label.
"""

from __future__ import annotations

from collections import Counter

from ...lang.attrs import Attrs
from ...lang.optable import OpTable
from ...lang.types import Dim, TensorType, TupleType, Type
from ..show import dim_text, shape_text, type_text
from . import Relation, RelationContext, RelationError, tensor_arg
from .elementwise import broadcast_shapes
from .shapes import (
    Wait,
    dtype_attr,
    int_attr,
    is_final,
    normalize_axis,
    one_of,
    opt_int_attr,
    pick,
    product,
    require_same,
    shape_relations,
    str_attr,
    tuple_tensors,
)

RELATIONS: OpTable[Relation] = OpTable("type relation")
"""The type relations of this family (`relations.RELATIONS` joins the families)."""
shape_relation = shape_relations(RELATIONS)


@shape_relation("argsort")
def argsort_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`argsort(data, axis, is_ascend, dtype)`: the input's shape, int32 indices by default."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    normalize_axis(int_attr(attrs, "axis"), data.ndim)
    return TensorType(data.shape, dtype_attr(attrs, "dtype", "int32"))


@shape_relation("sort")
def sort_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`sort(data, axis, is_ascend)`: the input's type."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    normalize_axis(int_attr(attrs, "axis"), data.ndim)
    return data


@shape_relation("topk")
def topk_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`topk(data, k, axis, ret_type, is_ascend, dtype)`: `axis` cut to k (k < 1 or None:
    the whole axis); "both" gives (values, indices), else just the one asked for."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    axis = normalize_axis(int_attr(attrs, "axis"), data.ndim)
    ret = one_of(str_attr(attrs, "ret_type"), "ret_type", ("both", "values", "indices"))
    k = opt_int_attr(attrs, "k")
    size = data.shape[axis]
    if k is not None and k >= 1:
        if type(size) is int and k > size:
            raise RelationError(
                f"k={k} is larger than axis {axis} of the input `{type_text(data)}`"
            )
        size = k
    shape = (*data.shape[:axis], size, *data.shape[axis + 1 :])
    values = TensorType(shape, data.dtype)
    indices = TensorType(shape, dtype_attr(attrs, "dtype", "int32"))
    if ret == "both":
        return TupleType([values, indices])
    return values if ret == "values" else indices


@shape_relation("cumsum", "cumprod")
def scan_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`cumsum(data, axis, dtype, exclusive)`: the input's shape (axis None: flattened to
    one axis), `dtype` if given, else the input's."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    dtype = dtype_attr(attrs, "dtype", data.dtype)
    axis = opt_int_attr(attrs, "axis")
    if axis is None:
        return TensorType((product(data.shape),), dtype)
    normalize_axis(axis, data.ndim)
    return TensorType(data.shape, dtype)


def _labels(term: str, equation: str) -> None:
    for ch in term.replace("...", ""):
        if not (ch.isascii() and ch.isalpha()):
            raise RelationError(
                f'equation "{equation}": "{ch}" is not a label (labels are letters)'
            )
    if term.count("...") > 1:
        raise RelationError(f'equation "{equation}": a term has more than one "..."')


def einsum_shape(equation: str, shapes: list[tuple[Dim, ...]], final: bool) -> tuple[Dim, ...]:
    """The result shape of numpy's `einsum(equation, *operands)` for operands of `shapes`."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise RelationError(
            f'equation "{equation}" has {len(terms)} input terms, but there are '
            f"{len(shapes)} tensors"
        )
    sizes: dict[str, Dim] = {}
    ellipsis: tuple[Dim, ...] | None = None
    for n, (term, shape) in enumerate(zip(terms, shapes)):
        _labels(term, equation)
        head, dots, tail = term.partition("...")
        if dots:
            extra = len(shape) - len(head) - len(tail)
            if extra < 0:
                raise RelationError(
                    f'equation "{equation}": term "{term}" names more axes than tensor {n} '
                    f"(shape {shape_text(shape)}) has"
                )
            part = shape[len(head) : len(head) + extra]
            merged = part if ellipsis is None else broadcast_shapes(ellipsis, part, final)
            if merged is None:
                raise Wait
            ellipsis = merged
            dims = shape[: len(head)] + shape[len(shape) - len(tail) :]
        else:
            if len(term) != len(shape):
                raise RelationError(
                    f'equation "{equation}": term "{term}" names {len(term)} axes, but tensor '
                    f"{n} has shape {shape_text(shape)}"
                )
            dims = shape
        for label, d in zip(head + tail, dims):
            old = sizes.get(label)
            if old is None or old == 1:
                sizes[label] = d
            elif d != 1:
                require_same(
                    old,
                    d,
                    f'equation "{equation}": label {label} has size {dim_text(old)} and '
                    f"{dim_text(d)}",
                )
                sizes[label] = pick(old, d)
    if not arrow:
        counts = Counter(lhs.replace("...", "").replace(",", ""))
        rhs = ("..." if ellipsis is not None else "") + "".join(
            sorted(c for c, k in counts.items() if k == 1)
        )
    _labels(rhs, equation)
    out: list[Dim] = []
    for label in rhs.replace("...", "."):
        if label == ".":
            out.extend(ellipsis or ())
        elif label not in sizes:
            raise RelationError(f'equation "{equation}": output label {label} is not an input')
        elif rhs.count(label) > 1:
            raise RelationError(f'equation "{equation}": output label {label} repeats')
        else:
            out.append(sizes[label])
    return tuple(out)


@shape_relation("einsum")
def einsum_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`einsum((t0, t1, ...), equation)`: numpy's einsum shape; all dtypes equal."""
    fields = tuple_tensors(args[0], "the input")
    if fields is None:
        return None
    if not fields:
        raise RelationError("needs at least one tensor")
    for i, t in enumerate(fields[1:], 1):
        if t.dtype != fields[0].dtype:
            raise RelationError(
                f"all tensors must have the same dtype, but field 0 is `{type_text(fields[0])}` "
                f"and field {i} is `{type_text(t)}`"
            )
    shape = einsum_shape(str_attr(attrs, "equation"), [t.shape for t in fields], is_final())
    return TensorType(shape, fields[0].dtype)
