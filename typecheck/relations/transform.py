"""Type relations of shape and layout transforms (TVM's `tensor/transform.cc`, reshaping half).

reshape (with TVM's special values), reshape_like, transpose, squeeze, expand_dims,
concatenate, stack, split, strided_slice, slice_like, tile, repeat, reverse,
broadcast_to(_like), collapse_sum_like, layout_transform, shape_of, ndarray_size,
meshgrid and arange. Where TVM's relation has a quirk that decides an output shape, it is
kept and said in the relation's docstring; where TVM would crash or compute a nonsense
shape, the relation reports an error instead.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ...lang.attrs import Attrs
from ...lang.expr import Constant
from ...lang.opdefs import semantics
from ...lang.optable import OpTable
from ...lang.types import ANY, AnyDim, Dim, ShapeVar, TensorType, TupleType, Type
from ..show import dim_text, shape_text, type_text
from . import Relation, RelationContext, RelationError, attr, tensor_arg
from .layouts import Layout, convert_shape
from .shapes import (
    add,
    bool_attr,
    check_parts,
    dtype_attr,
    expect,
    floordiv,
    int_attr,
    ints_attr,
    lost,
    mul,
    normalize_axes,
    normalize_axis,
    one_of,
    opt_int_attr,
    opt_ints_attr,
    require_same,
    semantic_errors,
    shape_relations,
    str_attr,
    tuple_tensors,
)

RELATIONS: OpTable[Relation] = OpTable("type relation")
"""The type relations of this family (`relations.RELATIONS` joins the families)."""
shape_relation = shape_relations(RELATIONS)

# --------------------------------------------------------------------------- reshape


def _monomial(dims: list[Dim]) -> tuple[int, Counter[ShapeVar]]:
    coef = 1
    names: Counter[ShapeVar] = Counter()
    for d in dims:
        if isinstance(d, ShapeVar):
            names[d] += 1
        elif type(d) is int:
            coef *= d
    return coef, names


def _as_dim(coef: int, names: Counter[ShapeVar]) -> Dim:
    if not names:
        return coef
    if coef == 1 and sum(names.values()) == 1:
        return next(iter(names))
    return lost()


def _reshape_error(ishape: tuple[Dim, ...], newshape: tuple[int, ...], why: str) -> RelationError:
    return RelationError(
        f"cannot reshape the input of shape {shape_text(ishape)} to newshape={list(newshape)}: "
        + why
    )


def reshape_shape(
    ishape: tuple[Dim, ...], newshape: tuple[int, ...], allowzero: bool = False
) -> tuple[Dim, ...]:
    """The result shape of `reshape(data, newshape)` for an input of shape `ishape`.

    The special values are read by `semantics.reshape_plan` (0 copies, -1 is inferred,
    -2 copies the rest, -3 merges two, -4 splits one); this evaluates the plan over
    symbolic dimensions.
    """
    try:
        plan = semantics.reshape_plan(len(ishape), newshape, allowzero)
    except semantics.ReshapeError as exc:
        raise _reshape_error(ishape, newshape, str(exc)) from None
    oshape: list[Dim] = []
    for d in plan.dims:
        if isinstance(d, int):
            oshape.append(d)
        elif isinstance(d, semantics.Copy):
            oshape.append(ishape[d.src])
        elif isinstance(d, semantics.Merge):
            oshape.append(mul(ishape[d.src], ishape[d.src + 1]))
        elif isinstance(d, semantics.Part):
            oshape.append(d.size)
        elif isinstance(d, semantics.Rest):
            d0 = ishape[d.src]
            if type(d0) is int and d0 % d.known:
                raise _reshape_error(
                    ishape, newshape, f"input dimension {d0} does not split into {d.known}s"
                )
            oshape.append(floordiv(d0, d.known))
        else:
            oshape.append(1)

    infer_at = plan.infer_at
    if infer_at >= 0:
        rest_in = [d for j, d in enumerate(ishape) if j not in plan.used_in]
        rest_out = [d for j, d in enumerate(oshape) if j not in plan.used_out and j != infer_at]
        if any(isinstance(d, AnyDim) for d in rest_in + rest_out):
            oshape[infer_at] = ANY
        else:
            num, num_vars = _monomial(rest_in)
            den, den_vars = _monomial(rest_out)
            if den == 0:
                raise _reshape_error(ishape, newshape, "-1 cannot be inferred next to a size 0")
            if num % den or den_vars - num_vars:
                if not num_vars and not den_vars:
                    raise _reshape_error(
                        ishape, newshape, f"{num} elements do not divide into blocks of {den}"
                    )
                oshape[infer_at] = lost()
            else:
                oshape[infer_at] = _as_dim(num // den, num_vars - den_vars)

    if not any(isinstance(d, AnyDim) for d in (*ishape, *oshape)):
        size_in, vars_in = _monomial(list(ishape))
        size_out, vars_out = _monomial(oshape)
        if vars_in == vars_out and size_in != size_out:
            raise RelationError(
                f"cannot reshape the input of shape {shape_text(ishape)} ({size_in} elements) "
                f"to {shape_text(tuple(oshape))} ({size_out} elements)"
            )
    return tuple(oshape)


@shape_relation("reshape")
def reshape_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`reshape(data, newshape, allowzero)`: see `reshape_shape`."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    newshape = ints_attr(attrs, "newshape")
    shape = reshape_shape(data.shape, newshape, bool_attr(attrs, "allowzero"))
    return TensorType(shape, data.dtype)


def _span(begin: int, end: int | None, ndim: int, which: str) -> tuple[int, int]:
    b = begin + ndim if begin < 0 else begin
    e = ndim if end is None else (end + ndim if end < 0 else end)
    if not 0 <= b <= e <= ndim:
        raise RelationError(
            f"{which}_begin={begin} and {which}_end={end} do not select a range of the "
            f"{ndim} dimensions of the {'input' if which == 'lhs' else 'shape_like tensor'}"
        )
    return b, e


@shape_relation("reshape_like")
def reshape_like_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`reshape_like(data, shape_like)`: data dims [lhs_begin, lhs_end) replaced by
    shape_like dims [rhs_begin, rhs_end); the element count must stay the same."""
    data = tensor_arg(args[0], "the input")
    like = tensor_arg(args[1], "`shape_like`")
    if data is None or like is None:
        return None
    lb, le = _span(int_attr(attrs, "lhs_begin"), opt_int_attr(attrs, "lhs_end"), data.ndim, "lhs")
    rb, re = _span(int_attr(attrs, "rhs_begin"), opt_int_attr(attrs, "rhs_end"), like.ndim, "rhs")
    shape = data.shape[:lb] + like.shape[rb:re] + data.shape[le:]
    static = data.is_static() and all(type(d) is int for d in shape)
    if static and math.prod(data.shape) != math.prod(shape):  # type: ignore[arg-type]
        raise RelationError(
            f"cannot reshape the input of shape {shape_text(data.shape)} to "
            f"{shape_text(shape)}: the element counts differ"
        )
    return TensorType(shape, data.dtype)


# --------------------------------------------------------------------------- axes


@shape_relation("transpose")
def transpose_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`transpose(data, axes)`: permute the axes; None reverses them."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    axes = opt_ints_attr(attrs, "axes")
    if axes is None:
        order = list(range(data.ndim))[::-1]
    else:
        if len(axes) != data.ndim:
            raise RelationError(
                f"axes={list(axes)} must list each of the {data.ndim} axes of the input "
                f"`{type_text(data)}` once"
            )
        order = normalize_axes(axes, data.ndim)
    return TensorType(tuple(data.shape[a] for a in order), data.dtype)


@shape_relation("squeeze")
def squeeze_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`squeeze(data, axis)`: drop the listed size-1 axes (None: every size-1 axis).

    With axis None every dimension must be known; a listed axis must not be known to
    differ from 1.
    """
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    axes = opt_ints_attr(attrs, "axis")
    if axes is None:
        for d in data.shape:
            if type(d) is not int:
                if isinstance(d, ShapeVar) and not ctx.final:
                    return None
                raise RelationError(
                    f"cannot squeeze the input `{type_text(data)}` without an `axis`: "
                    f"dimension {dim_text(d)} is not known"
                )
        return TensorType(tuple(d for d in data.shape if d != 1), data.dtype)
    drop = normalize_axes(axes, data.ndim)
    for a in drop:
        d = data.shape[a]
        if type(d) is int and d != 1:
            raise RelationError(
                f"cannot squeeze axis {a} of the input `{type_text(data)}`: it has size {d}, not 1"
            )
    return TensorType(tuple(d for i, d in enumerate(data.shape) if i not in drop), data.dtype)


@shape_relation("expand_dims")
def expand_dims_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`expand_dims(data, axis, num_newaxis)`: insert size-1 axes at `axis` (in [-ndim-1, ndim])."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    count = int_attr(attrs, "num_newaxis")
    if count < 0:
        raise RelationError(f"num_newaxis must be at least 0, not {count}")
    check_parts(data.ndim + count, f"num_newaxis={count} would give {data.ndim + count} dimensions")
    at = normalize_axis(int_attr(attrs, "axis"), data.ndim, extra=1)
    return TensorType(data.shape[:at] + (1,) * count + data.shape[at:], data.dtype)


def _same_rank_and_dtype(fields: list[TensorType], what: str) -> None:
    first = fields[0]
    for i, t in enumerate(fields[1:], 1):
        if t.ndim != first.ndim or t.dtype != first.dtype:
            problem = "rank" if t.ndim != first.ndim else "dtype"
            raise RelationError(
                f"all tensors to {what} must have the same {problem}, but field 0 is "
                f"`{type_text(first)}` and field {i} is `{type_text(t)}`"
            )


def _fields(args: list[Type], what: str) -> list[TensorType] | None:
    fields = tuple_tensors(args[0], "the input")
    if fields is not None and not fields:
        raise RelationError(f"needs at least one tensor to {what}, but the tuple is empty")
    return fields


@shape_relation("concatenate")
def concatenate_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`concatenate((t0, t1, ...), axis)`: sizes add up along `axis`, the rest agree.

    As in TVM: the concatenated size is `?` if any input's is; another dimension is known
    in the result only if it is known in every input, or if it is known in some input
    and the concatenated size is `?`.
    """
    fields = _fields(args, "concatenate")
    if fields is None:
        return None
    _same_rank_and_dtype(fields, "concatenate")
    first = fields[0]
    axis = normalize_axis(int_attr(attrs, "axis"), first.ndim)
    dynamic = any(isinstance(t.shape[axis], AnyDim) for t in fields)
    joined: Dim = ANY
    if not dynamic:
        joined = first.shape[axis]
        for t in fields[1:]:
            joined = add(joined, t.shape[axis])
    shape: list[Dim] = []
    for i in range(first.ndim):
        if i == axis:
            shape.append(joined)
            continue
        known = [
            (j, t.shape[i]) for j, t in enumerate(fields) if not isinstance(t.shape[i], AnyDim)
        ]
        for j, d in known[1:]:
            require_same(
                known[0][1],
                d,
                f"the tensors must agree on every axis but axis {axis}: field {known[0][0]} is "
                f"`{type_text(fields[known[0][0]])}` and field {j} is `{type_text(fields[j])}`",
            )
        if known and (len(known) == len(fields) or dynamic):
            shape.append(known[0][1])
        else:
            shape.append(ANY)
    return TensorType(tuple(shape), first.dtype)


@shape_relation("stack")
def stack_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`stack((t0, t1, ...), axis)`: equal shapes joined along a new axis (dims of t0)."""
    fields = _fields(args, "stack")
    if fields is None:
        return None
    _same_rank_and_dtype(fields, "stack")
    first = fields[0]
    axis = normalize_axis(int_attr(attrs, "axis"), first.ndim, extra=1)
    for j, t in enumerate(fields[1:], 1):
        for a, b in zip(first.shape, t.shape):
            require_same(
                a,
                b,
                f"the tensors to stack must have the same shape, but field 0 is "
                f"`{type_text(first)}` and field {j} is `{type_text(t)}`",
            )
    shape = (*first.shape[:axis], len(fields), *first.shape[axis:])
    return TensorType(shape, first.dtype)


@shape_relation("split")
def split_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`split(data, indices_or_sections, axis)`: a tuple of the pieces.

    An integer is a number of equal sections (it must divide the axis); a list holds the
    split points, strictly increasing, the first above 0 and the last below the size.
    """
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    if data.ndim == 0:
        raise RelationError("cannot split a scalar")
    axis = normalize_axis(int_attr(attrs, "axis"), data.ndim)
    spec = attr(attrs, "indices_or_sections")
    dim = data.shape[axis]
    pieces: list[Dim] = []
    if isinstance(spec, int) and not isinstance(spec, bool):
        if spec < 1:
            raise RelationError(f"indices_or_sections={spec}: the number of sections must be >= 1")
        check_parts(spec, f"indices_or_sections={spec} would give {spec} sections")
        if type(dim) is int and dim % spec:
            raise RelationError(
                f"cannot split axis {axis} of size {dim} into {spec} equal sections"
            )
        pieces = [floordiv(dim, spec)] * spec
    else:
        points = ints_attr(attrs, "indices_or_sections")
        begin = 0
        for p in points:
            if p <= begin:
                raise RelationError(
                    f"indices_or_sections={list(points)} must be strictly increasing "
                    "positive split points"
                )
            pieces.append(p - begin)
            begin = p
        if type(dim) is int and begin >= dim:
            raise RelationError(
                f"indices_or_sections={list(points)}: the split points must be below the size "
                f"{dim} of axis {axis}"
            )
        if isinstance(dim, AnyDim):
            pieces.append(ANY)
        else:
            pieces.append(dim - begin if type(dim) is int else lost())
    return TupleType(
        [TensorType((*data.shape[:axis], p, *data.shape[axis + 1 :]), data.dtype) for p in pieces]
    )


# --------------------------------------------------------------------------- slicing


@shape_relation("strided_slice")
def strided_slice_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`strided_slice(data, begin, end, strides, slice_mode, axes)`, clamping like TVM.

    The lists are read by `semantics.strided_slice_axes` (`strides` None: all 1; with
    `axes` None they cover the leading axes and the rest is padded as TVM pads it; "size"
    mode; no stride 0) and each static axis is clamped by `semantics.slice_range` (a slice
    running backwards is an error, as in TVM). An axis of unknown size keeps it only when
    sliced whole.
    """
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    begin, end = ints_attr(attrs, "begin"), ints_attr(attrs, "end")
    strides = opt_ints_attr(attrs, "strides")
    mode = one_of(str_attr(attrs, "slice_mode"), "slice_mode", ("end", "size"))
    axes_attr = opt_ints_attr(attrs, "axes")
    shape = list(data.shape)
    with semantic_errors():
        sliced = semantics.strided_slice_axes(
            data.ndim, begin, end, strides, axes_attr, mode, f"the input `{type_text(data)}`"
        )
        for ax, b, e, s in sliced:
            d = data.shape[ax]
            if type(d) is not int:
                whole = s == 1 and b == 0 and e == semantics.MAX_INDEX
                shape[ax] = d if whole else (ANY if isinstance(d, AnyDim) else lost())
                continue
            shape[ax] = semantics.slice_range(ax, b, e, s, d)[1]
    return TensorType(tuple(shape), data.dtype)


@shape_relation("slice_like")
def slice_like_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`slice_like(data, shape_like, axes)`: data cut to shape_like's size on `axes`
    (None: on each leading axis that shape_like has)."""
    data = tensor_arg(args[0], "the input")
    like = tensor_arg(args[1], "`shape_like`")
    if data is None or like is None:
        return None
    axes_attr = opt_ints_attr(attrs, "axes")
    if axes_attr is None:
        axes = list(range(min(data.ndim, like.ndim)))
    else:
        if not axes_attr:
            raise RelationError("axes cannot be empty (use None for every axis)")
        axes = normalize_axes(axes_attr, data.ndim)
    shape = list(data.shape)
    for a in axes:
        if a >= like.ndim:
            raise RelationError(
                f"axis {a} is past the last axis of `shape_like`, which has type "
                f"`{type_text(like)}`"
            )
        want, have = like.shape[a], data.shape[a]
        if type(want) is int and type(have) is int and want > have:
            raise RelationError(
                f"cannot slice axis {a} of the input `{type_text(data)}` to size {want}: "
                f"it has only {have}"
            )
        shape[a] = want
    return TensorType(tuple(shape), data.dtype)


# --------------------------------------------------------------------------- repetition


@shape_relation("tile")
def tile_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`tile(data, reps)`: both padded with leading 1s to the longer; any unknown dim is `?`."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    reps = ints_attr(attrs, "reps")
    for r in reps:
        if r < 1:
            raise RelationError(f"reps={list(reps)}: every repetition count must be >= 1")
    rank = max(data.ndim, len(reps))
    dims = (1,) * (rank - data.ndim) + data.shape
    counts = (1,) * (rank - len(reps)) + reps
    shape = tuple(d * r if type(d) is int else ANY for d, r in zip(dims, counts))
    return TensorType(shape, data.dtype)


@shape_relation("repeat")
def repeat_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`repeat(data, repeats, axis)`: axis size times `repeats` (axis None: flattened)."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    repeats = int_attr(attrs, "repeats")
    if repeats < 1:
        raise RelationError(f"repeats={repeats} must be >= 1")
    axis = opt_int_attr(attrs, "axis")
    if axis is None:
        total: Dim = 1
        for d in data.shape:
            total = mul(total, d)
        return TensorType((mul(total, repeats),), data.dtype)
    a = normalize_axis(axis, data.ndim)
    d = data.shape[a]
    grown = ANY if isinstance(d, AnyDim) else mul(d, repeats)
    return TensorType((*data.shape[:a], grown, *data.shape[a + 1 :]), data.dtype)


@shape_relation("reverse")
def reverse_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`reverse(data, axis)`: the input's type; `axis` must be in range (None: all axes)."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    axis = opt_int_attr(attrs, "axis")
    if axis is not None:
        normalize_axis(axis, data.ndim)
    return data


# --------------------------------------------------------------------------- broadcasting


def check_broadcasts_to(source: TensorType, target: tuple[Dim, ...], message: str) -> None:
    """RelationError(message) unless a tensor of `source`'s shape broadcasts to `target`."""
    if source.ndim > len(target):
        raise RelationError(message)
    for d, t in zip(source.shape[::-1], target[::-1]):
        if d != 1:
            require_same(d, t, message)


@shape_relation("broadcast_to")
def broadcast_to_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`broadcast_to(data, shape)`: numpy's `broadcast_to`; the result keeps data's dtype."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    target = opt_ints_attr(attrs, "shape")
    if target is None:
        raise RelationError("the attribute `shape` must be a list of sizes, not None")
    for d in target:
        if d < 0:
            raise RelationError(f"shape={list(target)}: a size cannot be negative")
    check_broadcasts_to(
        data, target, f"cannot broadcast the input `{type_text(data)}` to shape {list(target)}"
    )
    return TensorType(target, data.dtype)


@shape_relation("broadcast_to_like")
def broadcast_to_like_rel(
    args: list[Type], attrs: Attrs | None, ctx: RelationContext
) -> Type | None:
    """`broadcast_to_like(data, like)`: the shape of `like`, the dtype of `data`."""
    data = tensor_arg(args[0], "the input")
    like = tensor_arg(args[1], "`broadcast_type`")
    if data is None or like is None:
        return None
    check_broadcasts_to(
        data, like.shape, f"cannot broadcast the input `{type_text(data)}` to `{type_text(like)}`"
    )
    return TensorType(like.shape, data.dtype)


@shape_relation("collapse_sum_like")
def collapse_sum_like_rel(
    args: list[Type], attrs: Attrs | None, ctx: RelationContext
) -> Type | None:
    """`collapse_sum_like(data, like)`: sum `data` down to the shape of `like`, which must
    broadcast to data's shape (the inverse of broadcasting)."""
    data = tensor_arg(args[0], "the input")
    like = tensor_arg(args[1], "`collapse_type`")
    if data is None or like is None:
        return None
    check_broadcasts_to(
        like,
        data.shape,
        f"cannot collapse the input `{type_text(data)}` to `{type_text(like)}`: the target "
        "does not broadcast to the input",
    )
    return TensorType(like.shape, data.dtype)


# --------------------------------------------------------------------------- layouts, shapes


@shape_relation("layout_transform")
def layout_transform_rel(
    args: list[Type], attrs: Attrs | None, ctx: RelationContext
) -> Type | None:
    """`layout_transform(data, src_layout, dst_layout)`, e.g. NCHW (1, 64, 7, 7) to NCHW16c
    (1, 4, 7, 7, 16); the layouts must have the same primal axes."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    src = Layout.parse(str_attr(attrs, "src_layout"), "src_layout")
    dst = Layout.parse(str_attr(attrs, "dst_layout"), "dst_layout")
    return TensorType(convert_shape(data.shape, src, dst, "the input"), data.dtype)


@shape_relation("shape_of")
def shape_of_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`shape_of(data, dtype)`: a 1-D tensor of length rank (int32 unless `dtype` says)."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    return TensorType((data.ndim,), dtype_attr(attrs, "dtype", "int32"))


@shape_relation("ndarray_size")
def ndarray_size_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`ndarray_size(data, dtype)`: a scalar (int32 unless `dtype` says)."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    return TensorType((), dtype_attr(attrs, "dtype", "int32"))


@shape_relation("meshgrid")
def meshgrid_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`meshgrid((x0, x1, ...), indexing)`: one grid per input, all of shape (len0, len1,
    ...); "xy" indexing swaps the first two; scalars count as length 1."""
    fields = _fields(args, "make a meshgrid of")
    if fields is None:
        return None
    indexing = one_of(str_attr(attrs, "indexing"), "indexing", ("ij", "xy"))
    first = fields[0]
    lengths: list[Dim] = []
    for i, t in enumerate(fields):
        if t.dtype != first.dtype:
            raise RelationError(
                f"all tensors must have the same dtype, but field 0 is `{type_text(first)}` "
                f"and field {i} is `{type_text(t)}`"
            )
        if t.ndim > 1:
            raise RelationError(
                f"every input must be a scalar or 1-D, but field {i} is `{type_text(t)}`"
            )
        lengths.append(t.shape[0] if t.ndim else 1)
    if indexing == "xy" and len(lengths) >= 2:
        lengths[0], lengths[1] = lengths[1], lengths[0]
    grid = TensorType(tuple(lengths), first.dtype)
    return TupleType([grid] * len(fields))


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, Constant) and value.data.size == 1:
        return float(np.asarray(value.data).reshape(()))
    return None


@shape_relation("arange")
def arange_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`arange(start, stop, step, dtype)`: start, stop and step are scalars of `dtype`; the
    length ceil((stop - start) / step) is known when the attributes hold constants."""
    dtype = dtype_attr(attrs, "dtype", "")
    if not dtype:
        raise RelationError("the attribute `dtype` must name a dtype")
    scalar = TensorType((), dtype)
    for arg, name in zip(args, ("start", "stop", "step")):
        expect(ctx, arg, scalar, f"`{name}`", f"a scalar of the dtype {dtype}")
    start, stop, step = (_number(attr(attrs, k)) for k in ("start", "stop", "step"))
    if start is None or stop is None or step is None:
        return TensorType((ANY,), dtype)
    if step == 0:
        raise RelationError("step cannot be 0")
    count = math.ceil((stop - start) / step)
    if count <= 0:
        raise RelationError(
            f"arange from {start:g} to {stop:g} by {step:g} would be empty (TVM requires at "
            "least one element)"
        )
    return TensorType((count,), dtype)
