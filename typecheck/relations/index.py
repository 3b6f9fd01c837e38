"""Type relations of indexing operators: take, gather(_nd), scatter_elements, one_hot,
sparse_to_dense, adv_index, unravel_index, matrix_set_diag, sequence_mask.

Index tensors must hold integers. Shapes follow TVM's relations; where TVM leaves a
shape unchecked that the computation needs (the batch dimensions of `take`, the
diagonal of `matrix_set_diag`), the relation checks it when the sizes are known.
"""

from __future__ import annotations

from ...lang.attrs import Attrs
from ...lang.optable import OpTable
from ...lang.types import Dim, IncompleteType, ShapeVar, TensorType, Type
from ..show import shape_text, type_text
from . import Relation, RelationContext, RelationError, tensor_arg
from .elementwise import broadcast_shapes
from .shapes import (
    Wait,
    agree,
    dtype_attr,
    expect,
    int_attr,
    ints_attr,
    is_final,
    normalize_axis,
    one_of,
    opt_int_attr,
    require_integral,
    require_rank,
    require_same,
    require_scalar,
    shape_relations,
    str_attr,
    tuple_tensors,
)

RELATIONS: OpTable[Relation] = OpTable("type relation")
"""The type relations of this family (`relations.RELATIONS` joins the families)."""
shape_relation = shape_relations(RELATIONS)


@shape_relation("take")
def take_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`take(data, indices, axis, batch_dims, mode)`.

    axis None: indices into the flattened data (the result has the indices' shape).
    Otherwise data.shape[:axis] + indices.shape[batch_dims:] + data.shape[axis+1:], where
    the first `batch_dims` axes of data and indices are shared batch axes.
    """
    data = tensor_arg(args[0], "the input")
    indices = tensor_arg(args[1], "the indices")
    if data is None or indices is None:
        return None
    require_integral(indices, "the indices")
    one_of(str_attr(attrs, "mode"), "mode", ("clip", "wrap", "fast"))
    axis = opt_int_attr(attrs, "axis")
    if axis is None:
        return TensorType(indices.shape, data.dtype)
    axis = normalize_axis(axis, data.ndim)
    batch = int_attr(attrs, "batch_dims")
    if batch < 0:
        batch += indices.ndim
    if not 0 <= batch <= min(axis, indices.ndim):
        raise RelationError(
            f"batch_dims={int_attr(attrs, 'batch_dims')} must be between 0 and both the axis "
            f"({axis}) and the rank of the indices ({indices.ndim})"
        )
    for i in range(batch):
        require_same(
            data.shape[i],
            indices.shape[i],
            f"the batch dimensions differ: the input is `{type_text(data)}` and the indices are "
            f"`{type_text(indices)}` (batch_dims={batch})",
        )
    shape = data.shape[:axis] + indices.shape[batch:] + data.shape[axis + 1 :]
    return TensorType(shape, data.dtype)


@shape_relation("gather")
def gather_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`gather(data, indices, axis)`: the indices' shape (same rank as data), data's dtype."""
    data = tensor_arg(args[0], "the input")
    indices = tensor_arg(args[1], "the indices")
    if data is None or indices is None:
        return None
    require_integral(indices, "the indices")
    axis = opt_int_attr(attrs, "axis")
    if axis is None:
        raise RelationError("the attribute `axis` must be an integer, not None")
    if indices.ndim != data.ndim:
        raise RelationError(
            f"the indices `{type_text(indices)}` must have the rank of the input "
            f"`{type_text(data)}`"
        )
    normalize_axis(axis, data.ndim)
    return TensorType(indices.shape, data.dtype)


@shape_relation("gather_nd")
def gather_nd_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`gather_nd(data, indices, batch_dims, index_rank)`: indices (M, ...) address the
    first M axes after the batch axes: result indices.shape[1:] + data.shape[M + B:]."""
    data = tensor_arg(args[0], "the input")
    indices = tensor_arg(args[1], "the indices")
    if data is None or indices is None:
        return None
    require_integral(indices, "the indices")
    if indices.ndim == 0:
        raise RelationError("the indices must have at least one dimension (the index tuple)")
    batch = int_attr(attrs, "batch_dims")
    first = indices.shape[0]
    rank = opt_int_attr(attrs, "index_rank")
    if rank is not None:
        if type(first) is int and first != rank:
            raise RelationError(
                f"index_rank={rank}, but the indices `{type_text(indices)}` hold {first} "
                "coordinates (their first dimension)"
            )
        depth = rank
    elif type(first) is int:
        depth = first
    else:
        if isinstance(first, ShapeVar) and not is_final():
            raise Wait
        raise RelationError(
            f"the first dimension of the indices `{type_text(indices)}` (the index depth) "
            "must be known, or given as index_rank"
        )
    if batch > indices.ndim - 1:
        raise RelationError(
            f"batch_dims={batch}, but the indices `{type_text(indices)}` have only "
            f"{indices.ndim - 1} dimensions after the index tuple"
        )
    if batch < 0 or depth < 0 or depth + batch > data.ndim:
        raise RelationError(
            f"indices of depth {depth} with batch_dims={batch} address more axes than the "
            f"input `{type_text(data)}` has"
        )
    for i in range(batch):
        require_same(
            data.shape[i],
            indices.shape[i + 1],
            f"the batch dimensions differ: the input is `{type_text(data)}` and the indices are "
            f"`{type_text(indices)}` (batch_dims={batch})",
        )
    return TensorType(indices.shape[1:] + data.shape[depth + batch :], data.dtype)


@shape_relation("scatter_elements")
def scatter_elements_rel(
    args: list[Type], attrs: Attrs | None, ctx: RelationContext
) -> Type | None:
    """`scatter_elements(data, indices, updates, axis, reduction)`: the input's type;
    indices and updates have one shape, and the rank of data."""
    data = tensor_arg(args[0], "the input")
    indices = tensor_arg(args[1], "the indices")
    updates = tensor_arg(args[2], "the updates")
    if data is None or indices is None or updates is None:
        return None
    require_integral(indices, "the indices")
    one_of(
        str_attr(attrs, "reduction"), "reduction", ("update", "add", "mul", "mean", "min", "max")
    )
    normalize_axis(int_attr(attrs, "axis"), data.ndim)
    if indices.ndim != data.ndim or updates.ndim != data.ndim:
        raise RelationError(
            f"the indices `{type_text(indices)}` and updates `{type_text(updates)}` must have "
            f"the rank of the input `{type_text(data)}`"
        )
    if updates.dtype != data.dtype:
        raise RelationError(
            f"the updates `{type_text(updates)}` must have the dtype of the input "
            f"`{type_text(data)}`"
        )
    for a, b in zip(indices.shape, updates.shape):
        require_same(
            a,
            b,
            f"the indices `{type_text(indices)}` and updates `{type_text(updates)}` must have "
            "the same shape",
        )
    return data


@shape_relation("one_hot")
def one_hot_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`one_hot(indices, on_value, off_value, depth, axis, dtype)`: a new axis of size
    `depth` at `axis` (-1: last); dtype from the attribute (else the on value's)."""
    indices = tensor_arg(args[0], "the indices")
    on = tensor_arg(args[1], "the on value")
    off = tensor_arg(args[2], "the off value")
    require_scalar(on, "the on value")
    require_scalar(off, "the off value")
    if indices is None:
        return None
    require_integral(indices, "the indices")
    depth = int_attr(attrs, "depth")
    if depth < 1:
        raise RelationError(f"depth={depth} must be at least 1")
    at = normalize_axis(int_attr(attrs, "axis"), indices.ndim, extra=1)
    dtype = dtype_attr(attrs, "dtype", "")
    if not dtype:
        if on is None:
            return None
        dtype = on.dtype
    return TensorType((*indices.shape[:at], depth, *indices.shape[at:]), dtype)


@shape_relation("sparse_to_dense")
def sparse_to_dense_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`sparse_to_dense(indices, values, default, output_shape)`: `output_shape`, the
    values' dtype; indices are integers of rank <= 2, values rank <= 1, default a scalar."""
    indices = tensor_arg(args[0], "the sparse indices")
    values = tensor_arg(args[1], "the sparse values")
    default = tensor_arg(args[2], "the default value")
    require_scalar(default, "the default value")
    if indices is None or values is None:
        return None
    require_integral(indices, "the sparse indices")
    require_rank(indices, (0, 1, 2), "the sparse indices")
    require_rank(values, (0, 1), "the sparse values")
    shape = ints_attr(attrs, "output_shape")
    if any(d < 0 for d in shape):
        raise RelationError(f"output_shape={list(shape)}: a size cannot be negative")
    return TensorType(shape, values.dtype)


@shape_relation("adv_index")
def adv_index_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`adv_index((data, i0, i1, ...))`: numpy advanced indexing of the leading axes:
    broadcast(i0, i1, ...) + data.shape[k:] for k index tensors."""
    fields = tuple_tensors(args[0], "the input")
    if fields is None:
        return None
    if len(fields) < 2:
        raise RelationError("needs the data and at least one index tensor")
    data, index = fields[0], fields[1:]
    if len(index) > data.ndim:
        raise RelationError(
            f"{len(index)} index tensors are too many for the input `{type_text(data)}`"
        )
    for i, t in enumerate(index, 1):
        require_integral(t, f"index tensor {i}")
    shape = index[0].shape
    for t in index[1:]:
        merged = broadcast_shapes(shape, t.shape, ctx.final)
        if merged is None:
            return None
        shape = merged
    return TensorType(shape + data.shape[len(index) :], data.dtype)


@shape_relation("unravel_index")
def unravel_index_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`unravel_index(indices, shape)`: (len(shape),) for a scalar index, else
    (len(shape), n) for n indices; the indices' dtype."""
    indices = tensor_arg(args[0], "the indices")
    shape = tensor_arg(args[1], "the shape")
    if indices is None or shape is None:
        return None
    require_integral(indices, "the indices")
    require_integral(shape, "the shape")
    require_rank(indices, (0, 1), "the indices")
    require_rank(shape, 1, "the shape")
    return TensorType(shape.shape + indices.shape, indices.dtype)


@shape_relation("matrix_set_diag")
def matrix_set_diag_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`matrix_set_diag(input, diagonal, k1, k2, ...)`: the input's type.

    The diagonal has the input's batch axes, then (for k1 < k2) the number of diagonals
    k2 - k1 + 1, then the longest diagonal's length (TensorFlow's `max_diag_len`).
    """
    data = tensor_arg(args[0], "the input")
    diag = tensor_arg(args[1], "the diagonal")
    if data is None or diag is None:
        return None
    if data.ndim < 2:
        raise RelationError(f"the input `{type_text(data)}` must have at least 2 dimensions")
    k1, k2 = int_attr(attrs, "k1"), int_attr(attrs, "k2")
    if k1 > k2:
        raise RelationError(f"k1={k1} must not exceed k2={k2}")
    batch = data.shape[:-2]
    rows, cols = data.shape[-2], data.shape[-1]
    expected: list[Dim] = list(batch)
    if k1 != k2:
        expected.append(k2 - k1 + 1)
    if type(rows) is int and type(cols) is int:
        if not (-rows < k1 and k2 < cols):
            raise RelationError(
                f"diagonals k1={k1} to k2={k2} do not all exist in {rows}x{cols} matrices"
            )
        expected.append(min(rows + min(k2, 0), cols - max(k1, 0)))
    else:
        expected.append(diag.shape[-1] if diag.ndim else 1)
    if diag.ndim != len(expected) or any(
        agree(a, b) is False for a, b in zip(diag.shape, expected)
    ):
        raise RelationError(
            f"the diagonal `{type_text(diag)}` does not fit the input `{type_text(data)}` with "
            f"k1={k1}, k2={k2}: expected shape {shape_text(tuple(expected))}"
        )
    return data


@shape_relation("sequence_mask")
def sequence_mask_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`sequence_mask(data, valid_length, mask_value, axis)`: the input's type; axis is 0 or
    1 (the time axis) and valid_length has one entry per batch item (the other axis)."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    axis = int_attr(attrs, "axis")
    if axis not in (0, 1):
        raise RelationError(f"axis={axis} must be 0 or 1")
    if data.ndim < 2:
        raise RelationError(f"the input `{type_text(data)}` must have at least 2 dimensions")
    length = args[1]
    if isinstance(length, IncompleteType):
        return None
    valid = tensor_arg(length, "the valid lengths")
    if valid is None:
        return None
    expect(
        ctx,
        length,
        TensorType((data.shape[1 - axis],), valid.dtype),
        "the valid lengths",
        f"one per entry of axis {1 - axis} of the input `{type_text(data)}`",
    )
    return data
