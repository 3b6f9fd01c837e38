"""Compute definitions of the indexing operators (`lang/opdefs/index.py`).

Gathers read the data at indices loaded from the index tensor (cast to int64; `take` clamps
or wraps them by `mode`). `sparse_to_dense` is a reduction (the last sparse row matching each
output position) followed by a select; `scatter_elements` is an extern loop nest (copy the
data, then apply the updates in order), as its writes collide. Semantics follow
`backend/runtime/op_impls/index.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ....lang.attrs import Attrs
from ....lang.dtype import numpy_dtype
from ....lang.opdefs.semantics import normalize_axis
from ....lang.optable import OpTable
from ....lang.types import Type
from ...te.tensor import Tensor, comm_reducer, compute, extern, reduce_axis
from ...tir import op as tir_op
from ...tir.buffer import Buffer
from ...tir.dtypes import INDEX_DTYPE, is_float
from ...tir.expr import (
    PrimExpr,
    Var,
    all_of,
    cast,
    const,
    eq,
    max_,
    min_,
    select,
    truncdiv,
)
from ...tir.stmt import BufferStore, For, ForKind, LetStmt, Stmt, seq
from . import ComputeFn
from .elementwise import (
    COMM_REDUCE,
    INJECTIVE,
    broadcast_load,
    elementwise,
    flat_inputs,
    out_dtype,
    out_shape,
    static_dims,
)
from .transform import choose, unravel

COMPUTES: OpTable[ComputeFn] = OpTable("compute definition")
"""The compute definitions of this family (`computes.COMPUTES` joins the families)."""

Indices = Sequence[PrimExpr]


def as_index(value: PrimExpr) -> PrimExpr:
    """An index value loaded from a tensor, as int64 (floats truncate)."""
    return cast(INDEX_DTYPE, value)


def _mode(value: PrimExpr, n: int, mode: str) -> PrimExpr:
    if mode == "clip":
        return min_(max_(value, const(0)), const(max(n - 1, 0)))
    if mode == "wrap":
        return value % max(n, 1)
    return value


@COMPUTES.register("take")
def take(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Elements of data at `indices` along `axis` (null: of the flattened data); `mode`
    "clip" clamps, "wrap" wraps, "fast" trusts the indices."""
    data, indices = flat_inputs(inputs)
    assert attrs is not None
    dims = static_dims(data)
    shape = out_shape(out_type)
    if attrs.axis is None:
        size = math.prod(dims)

        def flat_body(i: Indices) -> PrimExpr:
            pos = _mode(as_index(indices[tuple(i)]), size, attrs.mode)
            return data[tuple(unravel(pos, dims))]

        return [elementwise(shape, flat_body, "take", INJECTIVE)]
    axis = normalize_axis(attrs.axis, data.ndim)
    b = attrs.batch_dims + indices.ndim if attrs.batch_dims < 0 else attrs.batch_dims
    middle = indices.ndim - b

    def body(i: Indices) -> PrimExpr:
        pre, mid, post = i[:axis], i[axis : axis + middle], i[axis + middle :]
        pos = as_index(indices[tuple(pre[:b]) + tuple(mid)])
        pos = _mode(pos, dims[axis], attrs.mode)
        return data[tuple([*pre, pos, *post])]

    return [elementwise(shape, body, "take", INJECTIVE)]


@COMPUTES.register("gather")
def gather(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`out[i..] = data[i.. with indices[i..] at axis ..]`."""
    data, indices = flat_inputs(inputs)
    assert attrs is not None
    axis = normalize_axis(attrs.axis, data.ndim)

    def body(i: Indices) -> PrimExpr:
        idx = list(i)
        idx[axis] = as_index(indices[tuple(i)])
        return data[tuple(idx)]

    return [elementwise(static_dims(indices), body, "gather", INJECTIVE)]


@COMPUTES.register("gather_nd")
def gather_nd(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Slices of data addressed by the first axis of `indices` (after `batch_dims`)."""
    data, indices = flat_inputs(inputs)
    assert attrs is not None
    m = static_dims(indices)[0]
    b = attrs.batch_dims
    rank = indices.ndim - 1

    def body(i: Indices) -> PrimExpr:
        y, rest = tuple(i[:rank]), tuple(i[rank:])
        coords = [as_index(indices[tuple([const(j), *y])]) for j in range(m)]
        return data[tuple([*y[:b], *coords, *rest])]

    return [elementwise(out_shape(out_type), body, "gather_nd", INJECTIVE)]


@COMPUTES.register("adv_index")
def adv_index(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Numpy advanced indexing of the first tensor by the (broadcast) index tensors."""
    data, *index_tensors = flat_inputs(inputs)
    shape = out_shape(out_type)
    lead = len(shape) - (data.ndim - len(index_tensors))

    def body(i: Indices) -> PrimExpr:
        coords = [as_index(broadcast_load(t, i[:lead])) for t in index_tensors]
        return data[tuple([*coords, *i[lead:]])]

    return [elementwise(shape, body, "adv_index", INJECTIVE)]


@COMPUTES.register("one_hot")
def one_hot(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`on_value` where the new `axis` equals the index, `off_value` elsewhere."""
    indices, on, off = flat_inputs(inputs)
    assert attrs is not None
    dtype = out_dtype(out_type)
    axis = normalize_axis(attrs.axis, indices.ndim + 1)

    def body(i: Indices) -> PrimExpr:
        rest = tuple(i[:axis]) + tuple(i[axis + 1 :])
        hot = eq(as_index(indices[rest]), i[axis])
        return select(hot, cast(dtype, on[()]), cast(dtype, off[()]))

    return [elementwise(out_shape(out_type), body, "one_hot", INJECTIVE)]


@COMPUTES.register("sparse_to_dense")
def sparse_to_dense(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`default_value` everywhere, `sparse_values` at `sparse_indices` (the last duplicate
    wins; an index row addressing fewer axes fills a block): a reduction finds the last
    matching row of each output position, then a select reads its value."""
    indices, values, default = flat_inputs(inputs)
    shape = out_shape(out_type)
    dtype = out_dtype(out_type)
    idims = static_dims(indices)
    rows = 1 if indices.ndim == 0 else idims[0]
    ncoords = 1 if indices.ndim < 2 else idims[1]

    def coord(k: PrimExpr, j: int) -> PrimExpr:
        if indices.ndim == 0:
            return as_index(indices[()])
        if indices.ndim == 1:
            return as_index(indices[k])
        return as_index(indices[k, const(j)])

    def value(k: PrimExpr) -> PrimExpr:
        if values.ndim == 0:
            return values[()]
        if static_dims(values)[0] == 1:
            return values[const(0)]
        return values[k]

    fill = cast(dtype, default[()])
    if rows == 0:
        return [elementwise(shape, lambda i: fill, "sparse_to_dense", INJECTIVE)]
    last_row = comm_reducer(max_, lambda t: const(-1, t), "last_row")
    r = reduce_axis(rows, "row")

    def find(*i: PrimExpr) -> PrimExpr:
        match = all_of(*(eq(coord(r.var, j), i[j]) for j in range(ncoords)))
        return last_row(select(match, r.var, const(-1)), axis=r)

    found = compute(shape, find, name="sparse_to_dense_find", tag=COMM_REDUCE)

    def body(i: Indices) -> PrimExpr:
        k = found[tuple(i)]
        return tir_op.if_then_else(k >= 0, value(k), fill)

    return [elementwise(shape, body, "sparse_to_dense", INJECTIVE)]


def loop_nest(shape: Sequence[int], body: Callable[[list[Var]], Stmt], prefix: str) -> Stmt:
    """Serial loops over `shape` (outermost first) around `body(loop_vars)`."""
    loop_vars = [Var(f"{prefix}{k}", INDEX_DTYPE) for k in range(len(shape))]
    stmt = body(loop_vars)
    for v, extent in reversed(list(zip(loop_vars, shape))):
        stmt = For(v, const(0), const(extent), ForKind.SERIAL, stmt)
    return stmt


def _combine(reduction: str, old: PrimExpr, new: PrimExpr) -> PrimExpr:
    if reduction == "update":
        return new
    if reduction == "add":
        return old + new
    if reduction == "mul":
        return old * new
    if reduction == "min":
        return min_(old, new)
    if reduction == "max":
        return max_(old, new)
    if reduction == "mean":
        total = old + new
        return total / const(2.0, old.dtype) if is_float(old.dtype) else truncdiv(total, 2)
    raise ValueError(f"scatter_elements: unknown reduction `{reduction}`")


@COMPUTES.register("scatter_elements")
def scatter_elements(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """A copy of data with `updates` written (or combined by `reduction`) at `indices` along
    `axis`, one update after another in row-major order (negative indices count from the
    end): an extern loop nest."""
    data, indices, updates = flat_inputs(inputs)
    assert attrs is not None
    axis = normalize_axis(attrs.axis, data.ndim)
    dims = static_dims(data)
    n = dims[axis]
    reduction = attrs.reduction

    def build(ins: list[Buffer], outs: list[Buffer]) -> Stmt:
        d, idx, upd = ins
        (out,) = outs
        copy = loop_nest(dims, lambda v: BufferStore(out, d.load(*v), tuple(v)), "c")

        def update(v: list[Var]) -> Stmt:
            raw = Var("raw", INDEX_DTYPE)
            target = list[PrimExpr](v)
            target[axis] = select(raw < 0, raw + n, raw)
            new = _combine(reduction, out.load(*target), upd.load(*v))
            store = BufferStore(out, new, tuple(target))
            return LetStmt(raw, as_index(idx.load(*v)), store)

        return seq(copy, loop_nest(static_dims(indices), update, "u"))

    result = extern(
        [dims], [data, indices, updates], build, [data.dtype], "scatter_elements", tag="scatter"
    )
    return [result]


@COMPUTES.register("unravel_index")
def unravel_index(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Row `c` holds coordinate `c` of each flat index in the (runtime) `shape`, each taken
    modulo its dimension (floor division)."""
    indices, shape_t = flat_inputs(inputs)
    rank = static_dims(shape_t)[0]

    def body(i: Indices) -> PrimExpr:
        rest = tuple(i[1:])
        flat = as_index(indices[rest])

        def coordinate(c: int) -> PrimExpr:
            value = flat
            for k in range(rank - 1, c, -1):
                value = value // as_index(shape_t[const(k)])
            return cast(indices.dtype, value % as_index(shape_t[const(c)]))

        return choose(i[0], list(range(rank + 1)), coordinate)

    return [elementwise(out_shape(out_type), body, "unravel_index", INJECTIVE)]


@COMPUTES.register("matrix_set_diag")
def matrix_set_diag(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Diagonals `k1..k2` of the innermost matrices replaced by `diagonal` (TensorFlow's
    alignment rules for several diagonals)."""
    x, diag = flat_inputs(inputs)
    assert attrs is not None
    k1, k2 = attrs.k1, attrs.k2
    dims = static_dims(x)
    rows, cols = dims[-2], dims[-1]
    max_len = static_dims(diag)[-1]

    def body(idx: Indices) -> PrimExpr:
        batch, i, j = tuple(idx[:-2]), idx[-2], idx[-1]
        k = j - i
        inside = (k >= k1) & (k <= k2)
        if k1 == k2:
            picked = diag[tuple([*batch, i if k1 >= 0 else j])]
        else:
            zero = const(0)
            super_off = (
                max_len - min_(const(cols) - k, const(rows))
                if attrs.super_diag_right_align
                else zero
            )
            sub_off = (
                max_len - min_(const(cols), const(rows) + k) if attrs.sub_diag_right_align else zero
            )
            pos = select(k >= 0, i, j) + select(k >= 0, super_off, sub_off)
            picked = diag[tuple([*batch, k2 - k, pos])]
        return tir_op.if_then_else(inside, picked, x[tuple(idx)])

    return [elementwise(dims, body, "matrix_set_diag", INJECTIVE)]


@COMPUTES.register("sequence_mask")
def sequence_mask(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Elements at time `t >= valid_length[b]` become `mask_value` (`axis` is the time
    axis, the other of the first two the batch axis)."""
    x, length = flat_inputs(inputs)
    assert attrs is not None
    time_axis = attrs.axis
    batch_axis = 1 - time_axis
    mask = const(np.asarray(attrs.mask_value).astype(numpy_dtype(x.dtype)).item(), x.dtype)

    def body(i: Indices) -> PrimExpr:
        t, limit = i[time_axis], length[(i[batch_axis],)]
        if is_float(limit.dtype):
            past = cast("float64", t) >= cast("float64", limit)
        else:
            past = t >= cast(INDEX_DTYPE, limit)
        return select(past, mask, x[tuple(i)])

    return [elementwise(static_dims(x), body, "sequence_mask", INJECTIVE)]
