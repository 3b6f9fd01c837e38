"""Compute definitions of the shape and layout transforms (`lang/opdefs/transform.py`).

Every transform is pure index arithmetic over its input (so it can be inlined into its
consumer): reshapes go through a row-major flat index with `FloorDiv`/`FloorMod`,
`concatenate`/`stack` choose their input with a balanced tree of `if_then_else` on index
ranges, `layout_transform` guards its zero padding with `if_then_else`. Shapes come from the
call's checked type; what the attributes mean (axes, strided-slice clamping, layouts) from
`lang/opdefs/semantics`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ....lang.attrs import Attrs
from ....lang.dtype import numpy_dtype
from ....lang.opdefs.semantics import normalize_axis, parse_layout, strided_slice_ranges
from ....lang.optable import OpTable
from ....lang.types import Type
from ...te.tensor import Tensor, compute, reduce_axis, sum_
from ...tir import op as tir_op
from ...tir.expr import PrimExpr, all_of, const, select
from . import ComputeFn
from .elementwise import (
    BROADCAST,
    COMM_REDUCE,
    ELEMWISE,
    INJECTIVE,
    broadcast_load,
    elementwise,
    flat_inputs,
    out_dtype,
    out_shape,
    out_tensor_types,
    static_dims,
)

COMPUTES: OpTable[ComputeFn] = OpTable("compute definition")
"""The compute definitions of this family (`computes.COMPUTES` joins the families)."""

Indices = Sequence[PrimExpr]


def ravel(indices: Indices, shape: Sequence[int]) -> PrimExpr:
    """The row-major flat index of `indices` in `shape`."""
    flat: PrimExpr = const(0)
    first = True
    for index, dim in zip(indices, shape):
        flat = index if first else flat * dim + index
        first = False
    return flat


def unravel(flat: PrimExpr, shape: Sequence[int]) -> list[PrimExpr]:
    """The indices in `shape` of the row-major flat index `flat`."""
    out: list[PrimExpr] = []
    for k, dim in enumerate(shape):
        if dim == 1:
            out.append(const(0))
            continue
        stride = math.prod(shape[k + 1 :])
        index = flat if stride == 1 else flat // stride
        if k > 0:
            index = index % dim
        out.append(index)
    return out


def reshape_indices(
    out_idx: Indices, out_dims: Sequence[int], in_dims: Sequence[int]
) -> list[PrimExpr]:
    """Input indices of a row-major reshape from `in_dims` to `out_dims` (a common leading
    part of the two shapes maps directly)."""
    k = 0
    while k < min(len(out_dims), len(in_dims)) and out_dims[k] == in_dims[k]:
        k += 1
    if k == len(out_dims) == len(in_dims):
        return list(out_idx)
    flat = ravel(out_idx[k:], out_dims[k:])
    return list(out_idx[:k]) + unravel(flat, in_dims[k:])


def _reshaped(x: Tensor, out_type: Type, name: str) -> list[Tensor]:
    shape = out_shape(out_type)
    dims = static_dims(x)
    return [
        elementwise(shape, lambda i: x[tuple(reshape_indices(i, shape, dims))], name, INJECTIVE)
    ]


@COMPUTES.register("reshape")
def reshape(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Row-major reshape to the call's type (TVM's special `newshape` values are resolved
    by the type relation)."""
    (x,) = flat_inputs(inputs)
    return _reshaped(x, out_type, "reshape")


@COMPUTES.register("reshape_like")
def reshape_like(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Row-major reshape to the call's type."""
    x = flat_inputs(inputs)[0]
    return _reshaped(x, out_type, "reshape_like")


@COMPUTES.register("transpose")
def transpose(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Permuted axes: output axis k is input axis `axes[k]` (null or empty: reversed)."""
    (x,) = flat_inputs(inputs)
    assert attrs is not None
    axes = attrs.axes
    perm = [normalize_axis(a, x.ndim) for a in axes] if axes else list(reversed(range(x.ndim)))

    def body(i: Indices) -> PrimExpr:
        src: list[PrimExpr] = [const(0)] * x.ndim
        for k, p in enumerate(perm):
            src[p] = i[k]
        return x[tuple(src)]

    return [elementwise(out_shape(out_type), body, "transpose", INJECTIVE)]


@COMPUTES.register("squeeze")
def squeeze(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The listed size-1 axes dropped (null: every size-1 axis)."""
    (x,) = flat_inputs(inputs)
    assert attrs is not None
    dims = static_dims(x)
    if attrs.axis is None:
        drop = {k for k, d in enumerate(dims) if d == 1}
    else:
        drop = {normalize_axis(a, x.ndim) for a in attrs.axis}

    def body(i: Indices) -> PrimExpr:
        it = iter(i)
        return x[tuple(const(0) if k in drop else next(it) for k in range(x.ndim))]

    return [elementwise(out_shape(out_type), body, "squeeze", INJECTIVE)]


@COMPUTES.register("expand_dims")
def expand_dims(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`num_newaxis` size-1 axes inserted at `axis`."""
    (x,) = flat_inputs(inputs)
    assert attrs is not None
    axis = normalize_axis(attrs.axis, x.ndim + 1)
    count = attrs.num_newaxis

    def body(i: Indices) -> PrimExpr:
        return x[tuple(i[:axis]) + tuple(i[axis + count :])]

    return [elementwise(out_shape(out_type), body, "expand_dims", BROADCAST)]


def choose(index: PrimExpr, offsets: Sequence[int], leaf: Callable[[int], PrimExpr]) -> PrimExpr:
    """`leaf(k)` for the piece `k` with `offsets[k] <= index < offsets[k + 1]`, as a balanced
    tree of lazy `if_then_else` (depth log2 of the number of pieces)."""

    def build(lo: int, hi: int) -> PrimExpr:
        if hi - lo == 1:
            return leaf(lo)
        mid = (lo + hi) // 2
        return tir_op.if_then_else(index < offsets[mid], build(lo, mid), build(mid, hi))

    return build(0, len(offsets) - 1)


def _nonempty(pieces: list[tuple[Tensor, int]]) -> list[tuple[Tensor, int]]:
    return [p for p in pieces if p[1] > 0] or pieces[:1]


@COMPUTES.register("concatenate")
def concatenate(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The tuple's tensors joined along `axis`."""
    tensors = flat_inputs(inputs)
    assert attrs is not None
    axis = normalize_axis(attrs.axis, tensors[0].ndim)
    pieces = _nonempty([(t, static_dims(t)[axis]) for t in tensors])
    offsets = [0]
    for _, size in pieces:
        offsets.append(offsets[-1] + size)

    def body(i: Indices) -> PrimExpr:
        def leaf(k: int) -> PrimExpr:
            t = pieces[k][0]
            idx = list(i)
            idx[axis] = i[axis] - offsets[k] if offsets[k] else i[axis]
            return t[tuple(idx)]

        return choose(i[axis], offsets, leaf)

    return [elementwise(out_shape(out_type), body, "concatenate", INJECTIVE)]


@COMPUTES.register("stack")
def stack(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The tuple's same-shape tensors stacked along a new axis `axis`."""
    tensors = flat_inputs(inputs)
    assert attrs is not None
    axis = normalize_axis(attrs.axis, tensors[0].ndim + 1)
    offsets = list(range(len(tensors) + 1))

    def body(i: Indices) -> PrimExpr:
        rest = tuple(i[:axis]) + tuple(i[axis + 1 :])
        return choose(i[axis], offsets, lambda k: tensors[k][rest])

    return [elementwise(out_shape(out_type), body, "stack", INJECTIVE)]


@COMPUTES.register("split")
def split(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """N equal sections, or the pieces between the given indices (numpy's `split`)."""
    (x,) = flat_inputs(inputs)
    assert attrs is not None
    axis = normalize_axis(attrs.axis, x.ndim)
    dim = static_dims(x)[axis]
    sections = attrs.indices_or_sections
    if isinstance(sections, int):
        bounds = [k * (dim // sections) for k in range(sections)]
    else:
        bounds = [0] + [slice(int(s)).indices(dim)[1] for s in sections]
    outs = []
    for k, ty in enumerate(out_tensor_types(out_type)):
        begin = bounds[k]
        shape = tuple(int(d) for d in ty.shape)  # type: ignore[arg-type]

        def body(i: Indices, begin: int = begin) -> PrimExpr:
            idx = list(i)
            idx[axis] = i[axis] + begin if begin else i[axis]
            return x[tuple(idx)]

        outs.append(elementwise(shape, body, f"split{k}", INJECTIVE))
    return outs


@COMPUTES.register("strided_slice")
def strided_slice(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """`x[begin:end:stride]` per axis with TVM's canonicalization of begin and end."""
    (x,) = flat_inputs(inputs)
    assert attrs is not None
    ranges = strided_slice_ranges(
        static_dims(x), attrs.begin, attrs.end, attrs.strides, attrs.axes, attrs.slice_mode
    )
    plan: list[tuple[int, int] | None] = []
    for r in ranges:
        if r is None:
            plan.append(None)
        else:
            first, stride, count = r
            plan.append((first if count else 0, stride if count > 1 else 1))

    def body(i: Indices) -> PrimExpr:
        idx = []
        for index, p in zip(i, plan):
            if p is None:
                idx.append(index)
            else:
                first, step = p
                scaled = index if step == 1 else index * step
                idx.append(scaled + first if first else scaled)
        return x[tuple(idx)]

    return [elementwise(out_shape(out_type), body, "strided_slice", INJECTIVE)]


@COMPUTES.register("slice_like")
def slice_like(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The leading `[0, like.shape[i])` part of the data on the chosen axes."""
    x = flat_inputs(inputs)[0]
    return [elementwise(out_shape(out_type), lambda i: x[tuple(i)], "slice_like", INJECTIVE)]


@COMPUTES.register("tile")
def tile(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The whole tensor repeated `reps` times per axis (numpy's `tile`)."""
    (x,) = flat_inputs(inputs)
    dims = static_dims(x)
    shape = out_shape(out_type)
    lead = len(shape) - len(dims)

    def body(i: Indices) -> PrimExpr:
        idx = []
        for k, d in enumerate(dims):
            o = i[lead + k]
            idx.append(const(0) if d == 1 else o if shape[lead + k] == d else o % d)
        return x[tuple(idx)]

    return [elementwise(shape, body, "tile", BROADCAST)]


@COMPUTES.register("repeat")
def repeat(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Each element repeated `repeats` times along `axis` (null: of the flattened data)."""
    (x,) = flat_inputs(inputs)
    assert attrs is not None
    r = attrs.repeats
    dims = static_dims(x)
    if attrs.axis is None:

        def flat_body(i: Indices) -> PrimExpr:
            return x[tuple(unravel(i[0] // r if r != 1 else i[0], dims))]

        return [elementwise(out_shape(out_type), flat_body, "repeat", BROADCAST)]
    axis = normalize_axis(attrs.axis, x.ndim)

    def body(i: Indices) -> PrimExpr:
        idx = list(i)
        idx[axis] = i[axis] // r if r != 1 else i[axis]
        return x[tuple(idx)]

    return [elementwise(out_shape(out_type), body, "repeat", BROADCAST)]


@COMPUTES.register("reverse")
def reverse(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The order reversed along `axis` (null: along every axis)."""
    (x,) = flat_inputs(inputs)
    assert attrs is not None
    dims = static_dims(x)
    flipped = set(range(x.ndim)) if attrs.axis is None else {normalize_axis(attrs.axis, x.ndim)}

    def body(i: Indices) -> PrimExpr:
        return x[tuple((dims[k] - 1) - i[k] if k in flipped else i[k] for k in range(x.ndim))]

    return [elementwise(dims, body, "reverse", INJECTIVE)]


def _broadcast(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The data broadcast (numpy rules) to the call's shape."""
    x = flat_inputs(inputs)[0]
    return [
        elementwise(out_shape(out_type), lambda i: broadcast_load(x, i), "broadcast_to", BROADCAST)
    ]


COMPUTES.register("broadcast_to", "broadcast_to_like")(_broadcast)


@COMPUTES.register("collapse_sum_like")
def collapse_sum_like(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The data summed over its broadcast axes down to the shape of the second argument."""
    x = flat_inputs(inputs)[0]
    dims = static_dims(x)
    shape = out_shape(out_type)
    lead = len(dims) - len(shape)
    reduced = list(range(lead)) + [
        lead + k for k, d in enumerate(shape) if d == 1 and dims[lead + k] != 1
    ]
    if not reduced:
        return [elementwise(shape, lambda i: x[tuple(i)], "collapse_sum_like", ELEMWISE)]
    raxes = {j: reduce_axis(dims[j], f"r{j}") for j in reduced}

    def body(*i: PrimExpr) -> PrimExpr:
        idx = [raxes[j].var if j in raxes else i[j - lead] for j in range(len(dims))]
        return sum_(x[tuple(idx)], axis=list(raxes.values()))

    return [compute(shape, body, name="collapse_sum_like", tag=COMM_REDUCE)]


@COMPUTES.register("layout_transform")
def layout_transform(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The data rearranged from `src_layout` to `dst_layout` (`NCHW` ↔ `NCHW16c`, ...);
    a split whose factor does not divide its axis pads with zeros."""
    (x,) = flat_inputs(inputs)
    assert attrs is not None
    dims = static_dims(x)
    src = [a for a, _ in parse_layout(attrs.src_layout)]
    dst = parse_layout(attrs.dst_layout)
    dst_names = [a for a, _ in dst]
    dst_factor = dict(dst)
    primals = [a for a in src if a.isupper()]
    merged = {}
    src_factor = {}
    for p in primals:
        size = dims[src.index(p)]
        if p.lower() in src:
            src_factor[p] = dims[src.index(p.lower())]
            size *= src_factor[p]
        merged[p] = size
    padded = [
        p for p in primals if p.lower() in dst_names and merged[p] % dst_factor[p.lower()] != 0
    ]

    def body(i: Indices) -> PrimExpr:
        value: dict[str, PrimExpr] = {}
        for p in primals:
            outer = i[dst_names.index(p)]
            if p.lower() in dst_names:
                outer = outer * dst_factor[p.lower()] + i[dst_names.index(p.lower())]
            value[p] = outer
        idx: list[PrimExpr] = [const(0)] * len(src)
        for p in primals:
            if p in src_factor:
                idx[src.index(p)] = value[p] // src_factor[p]
                idx[src.index(p.lower())] = value[p] % src_factor[p]
            else:
                idx[src.index(p)] = value[p]
        load = x[tuple(idx)]
        if not padded:
            return load
        inside = all_of(*(value[p] < merged[p] for p in padded))
        return tir_op.if_then_else(inside, load, const(0, x.dtype))

    return [elementwise(out_shape(out_type), body, "layout_transform", INJECTIVE)]


@COMPUTES.register("shape_of")
def shape_of(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The (static) shape of the data as constants of the call's dtype."""
    (x,) = flat_inputs(inputs)
    dims = static_dims(x)
    dtype = out_dtype(out_type)
    np_dtype = numpy_dtype(dtype)
    values = [int(np.asarray(d).astype(np_dtype)) for d in dims]

    def body(i: Indices) -> PrimExpr:
        if not values:
            return const(0, dtype)
        result = const(values[-1], dtype)
        for k in range(len(values) - 2, -1, -1):
            result = select(i[0] <= k, const(values[k], dtype), result)
        return result

    return [elementwise((len(dims),), body, "shape_of", INJECTIVE)]


@COMPUTES.register("ndarray_size")
def ndarray_size(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """The (static) number of elements as a scalar of the call's dtype."""
    (x,) = flat_inputs(inputs)
    dtype = out_dtype(out_type)
    size = np.asarray(math.prod(static_dims(x))).astype(numpy_dtype(dtype)).item()
    return [elementwise((), lambda i: const(size, dtype), "ndarray_size", INJECTIVE)]


@COMPUTES.register("meshgrid")
def meshgrid(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """Coordinate grids: output k reads input k at its own axis ("ij"), with the first two
    axes swapped for "xy"."""
    tensors = flat_inputs(inputs)
    assert attrs is not None
    swap = attrs.indexing == "xy" and len(tensors) >= 2
    outs = []
    for k, (t, ty) in enumerate(zip(tensors, out_tensor_types(out_type))):
        axis = {0: 1, 1: 0}.get(k, k) if swap else k
        shape = tuple(int(d) for d in ty.shape)  # type: ignore[arg-type]

        def body(i: Indices, t: Tensor = t, axis: int = axis) -> PrimExpr:
            return t[(i[axis],)] if t.ndim == 1 else t[()]

        outs.append(elementwise(shape, body, f"meshgrid{k}", INJECTIVE))
    return outs
