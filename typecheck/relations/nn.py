"""Type relations of neural-network operators other than convolution and pooling.

Dense and matmul, bias and activations, softmax, normalization, dropout, padding,
resampling, losses and the FIFO buffer. Per-channel parameters (bias, prelu's alpha,
gamma and beta, moving statistics) are *constrained* to `(C,)` of the input's dtype, so
their types are inferred when they are not annotated, as in TVM.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from ...lang.attrs import Attrs
from ...lang.opdefs import semantics
from ...lang.optable import OpTable
from ...lang.types import ANY, AnyDim, Dim, IncompleteType, TensorType, TupleType, Type
from ..show import dim_text, shape_text, type_text
from . import Relation, RelationContext, RelationError, attr, tensor_arg
from .layouts import from_reference, to_reference
from .shapes import (
    add,
    agree,
    bool_attr,
    dtype_attr,
    expect,
    float_attr,
    floordiv,
    int_attr,
    lost,
    mul,
    normalize_axis,
    one_of,
    opt_ints_attr,
    opt_size_attr,
    pick,
    product,
    require_rank,
    require_same,
    require_scalar,
    semantic_errors,
    shape_relations,
    str_attr,
)

RELATIONS: OpTable[Relation] = OpTable("type relation")
"""The type relations of this family (`relations.RELATIONS` joins the families)."""
shape_relation = shape_relations(RELATIONS)

# --------------------------------------------------------------------------- dense, matmul


def _matmul(
    args: list[Type],
    attrs: Attrs | None,
    ctx: RelationContext,
    transpose_a: bool,
    transpose_b: bool,
    names: tuple[str, str],
) -> Type | None:
    a = tensor_arg(args[0], names[0])
    if a is None:
        return None
    if a.ndim < (2 if transpose_a else 1):
        raise RelationError(f"{names[0]} `{type_text(a)}` has too few dimensions")
    k = a.shape[-2] if transpose_a else a.shape[-1]
    lead = (*a.shape[:-2], a.shape[-1]) if transpose_a else a.shape[:-1]
    units = opt_size_attr(attrs, "units")
    b = None if isinstance(args[1], IncompleteType) else tensor_arg(args[1], names[1])
    n: Dim | None = units
    if b is not None:
        require_rank(b, 2, names[1])
        bk, bn = (b.shape[1], b.shape[0]) if transpose_b else b.shape
        features = (
            f"{names[0]} has {dim_text(k)} features but {names[1]} {shape_text(b.shape)} "
            f"expects {dim_text(bk)}"
        )
        if units is not None and agree(units, bn) is False:
            raise RelationError(
                f"units={units}, but {names[1]} {shape_text(b.shape)} has {dim_text(bn)} "
                "output units"
            )
        if units is None:
            require_same(k, bk, features)
            n = bn
        elif agree(k, bk) is False:
            raise RelationError(features)
    if units is not None:
        wshape = (units, k) if transpose_b else (k, units)
        ctx.unify(args[1], TensorType(wshape, a.dtype if b is None else b.dtype))
    if n is None:
        return None
    return TensorType((*lead, n), dtype_attr(attrs, "out_dtype", a.dtype))


@shape_relation("nn.dense")
def dense_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.dense(data, weight, units, out_dtype)`: data (..., k) and weight (units, k) give
    (..., units); a null out_dtype is the input's dtype."""
    return _matmul(args, attrs, ctx, False, True, ("the input", "the weight"))


@shape_relation("nn.matmul")
def matmul_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.matmul(a, b, units, out_dtype, transpose_a, transpose_b)`: (.., m, k) x (k, n)."""
    return _matmul(
        args,
        attrs,
        ctx,
        bool_attr(attrs, "transpose_a"),
        bool_attr(attrs, "transpose_b"),
        ("`tensor_a`", "`tensor_b`"),
    )


@shape_relation("nn.contrib_dense_pack")
def dense_pack_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.contrib_dense_pack(data, weight)`: data (m, k), packed weight (N/n, k, n) or
    (N/n, k/c, n, c) for int8; the result is (m, N)."""
    data = tensor_arg(args[0], "the input")
    weight = tensor_arg(args[1], "the weight")
    if data is None or weight is None:
        return None
    require_rank(data, 2, "the input")
    require_rank(weight, (3, 4), "the packed weight")
    k = weight.shape[1] if weight.ndim == 3 else mul(weight.shape[1], weight.shape[3])
    require_same(
        data.shape[1],
        k,
        f"the input has {dim_text(data.shape[1])} features but the packed weight "
        f"{shape_text(weight.shape)} expects {dim_text(k)}",
    )
    units = mul(weight.shape[0], weight.shape[2])
    return TensorType((data.shape[0], units), dtype_attr(attrs, "out_dtype", data.dtype))


@shape_relation("nn.batch_matmul")
def batch_matmul_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.batch_matmul(x, y, out_dtype, transpose_a, transpose_b)`: (b, i, k) x (b, k, j),
    y given as (b, j, k) when transpose_b; a batch of 1 broadcasts (`?` stays `?`)."""
    x = tensor_arg(args[0], "`x`")
    y = tensor_arg(args[1], "`y`")
    if x is None or y is None:
        return None
    require_rank(x, 3, "`x`")
    require_rank(y, 3, "`y`")
    ta, tb = bool_attr(attrs, "transpose_a"), bool_attr(attrs, "transpose_b")
    xb, xi, xk = (x.shape[0], x.shape[2], x.shape[1]) if ta else x.shape
    yb, yk, yj = (y.shape[0], y.shape[2], y.shape[1]) if tb else y.shape
    pair = f"`x` {shape_text(x.shape)} and `y` {shape_text(y.shape)}"
    require_same(xk, yk, f"the inner dimensions of {pair} differ (transpose_b={tb})")
    batch: Dim
    if isinstance(xb, AnyDim) or isinstance(yb, AnyDim):
        batch = ANY
    elif xb == 1 or yb == 1:
        batch = yb if xb == 1 else xb
    else:
        require_same(xb, yb, f"the batch dimensions of {pair} differ")
        batch = pick(xb, yb)
    return TensorType((batch, xi, yj), dtype_attr(attrs, "out_dtype", x.dtype))


# --------------------------------------------------------------------------- channel params


def _per_channel(ctx: RelationContext, arg: Type, data: TensorType, axis: int, what: str) -> None:
    expect(
        ctx,
        arg,
        TensorType((data.shape[axis],), data.dtype),
        what,
        f"one per entry of axis {axis} of the input `{type_text(data)}`",
    )


@shape_relation("nn.bias_add")
def bias_add_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.bias_add(data, bias, axis)`: the input's type; bias is (C,) for C on `axis`."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    axis = normalize_axis(int_attr(attrs, "axis"), data.ndim)
    _per_channel(ctx, args[1], data, axis, "the bias")
    return data


@shape_relation("nn.prelu")
def prelu_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.prelu(data, alpha, axis)`: the input's type; alpha is (C,) for C on `axis`."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    axis = normalize_axis(int_attr(attrs, "axis"), data.ndim)
    _per_channel(ctx, args[1], data, axis, "alpha")
    return data


@shape_relation("nn.relu", "nn.leaky_relu")
def activation_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """Elementwise activations: the input's type."""
    return tensor_arg(args[0], "the input")


@shape_relation("nn.softmax", "nn.fast_softmax", "nn.log_softmax")
def softmax_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.softmax(data, axis)`: the input's type; `axis` must be one of its axes."""
    data = tensor_arg(args[0], "the input")
    if data is not None:
        normalize_axis(int_attr(attrs, "axis"), data.ndim)
    return data


@shape_relation("nn.batch_norm")
def batch_norm_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.batch_norm(data, gamma, beta, moving_mean, moving_var, axis, ...)`:
    (out, new_mean, new_var); every parameter is (C,) for C on `axis`."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    axis = normalize_axis(int_attr(attrs, "axis"), data.ndim)
    for arg, what in zip(args[1:], ("gamma", "beta", "the moving mean", "the moving variance")):
        _per_channel(ctx, arg, data, axis, what)
    stat = TensorType((data.shape[axis],), data.dtype)
    return TupleType([data, stat, stat])


@shape_relation("nn.layer_norm", "nn.instance_norm")
def norm_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.layer_norm(data, gamma, beta, axis, ...)` (and instance_norm): the input's type;
    gamma and beta are (C,) for C on `axis`."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    axis = normalize_axis(int_attr(attrs, "axis"), data.ndim)
    _per_channel(ctx, args[1], data, axis, "gamma")
    _per_channel(ctx, args[2], data, axis, "beta")
    return data


@shape_relation("nn.group_norm")
def group_norm_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.group_norm(data, gamma, beta, num_groups, axis, ...)`: like layer_norm; the
    channels must divide into `num_groups` groups."""
    out = norm_rel(args, attrs, ctx)
    if isinstance(out, TensorType):
        groups = int_attr(attrs, "num_groups")
        channels = out.shape[normalize_axis(int_attr(attrs, "axis"), out.ndim)]
        if groups < 1 or (type(channels) is int and channels % groups):
            raise RelationError(
                f"num_groups={groups} must be positive and divide the {dim_text(channels)} channels"
            )
    return out


@shape_relation("nn.l2_normalize")
def l2_normalize_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.l2_normalize(data, eps, axis)`: the input's type; the axes (None: every axis)
    must be its axes, each once."""
    data = tensor_arg(args[0], "the input")
    if data is not None:
        axis = opt_ints_attr(attrs, "axis")
        with semantic_errors():
            semantics.listed_axes(axis, data.ndim)
    return data


@shape_relation("nn.dropout")
def dropout_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.dropout(data, rate)`: (out, mask), both of the input's type."""
    data = tensor_arg(args[0], "the input")
    rate = float_attr(attrs, "rate")
    if not 0.0 <= rate <= 1.0:
        raise RelationError(f"rate={rate:g} must be between 0 and 1")
    return None if data is None else TupleType([data, data])


@shape_relation("nn.lrn")
def lrn_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.lrn(data, size, axis, ...)`: the input's type."""
    data = tensor_arg(args[0], "the input")
    if data is not None:
        normalize_axis(int_attr(attrs, "axis"), data.ndim)
        if int_attr(attrs, "size") < 1:
            raise RelationError(f"size={int_attr(attrs, 'size')} must be at least 1")
    return data


@shape_relation("nn.batch_flatten")
def batch_flatten_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.batch_flatten(data)`: (d0, d1 * d2 * ...); `?` if any of d1, d2, ... is `?`."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    if data.ndim == 0:
        raise RelationError("the input must have at least one dimension, but it is a scalar")
    rest = data.shape[1:]
    flat = ANY if any(isinstance(d, AnyDim) for d in rest) else product(rest)
    return TensorType((data.shape[0], flat), data.dtype)


@shape_relation("nn.cross_entropy", "nn.cross_entropy_with_logits")
def cross_entropy_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.cross_entropy(x, y)`: x and y are (batch, classes) alike; a scalar of x's dtype."""
    x = tensor_arg(args[0], "the predictions")
    y = tensor_arg(args[1], "the targets")
    if x is None or y is None:
        return None
    require_rank(x, 2, "the predictions")
    require_rank(y, 2, "the targets")
    for a, b in zip(x.shape, y.shape):
        require_same(
            a, b, f"the predictions `{type_text(x)}` and targets `{type_text(y)}` differ in shape"
        )
    return TensorType((), x.dtype)


@shape_relation("nn.fifo_buffer")
def fifo_buffer_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.fifo_buffer(data, buffer, axis)`: the buffer's type; data matches the buffer on
    every other axis and is shorter on `axis`."""
    data = tensor_arg(args[0], "the input")
    buffer = tensor_arg(args[1], "the buffer")
    if data is None or buffer is None:
        return None
    if data.ndim != buffer.ndim:
        raise RelationError(
            f"the input `{type_text(data)}` and buffer `{type_text(buffer)}` differ in rank"
        )
    axis = normalize_axis(int_attr(attrs, "axis"), buffer.ndim)
    pair = f"the input `{type_text(data)}` and buffer `{type_text(buffer)}`"
    for i, (a, b) in enumerate(zip(data.shape, buffer.shape)):
        if i != axis:
            require_same(a, b, f"{pair} differ on axis {i}")
    d, b = data.shape[axis], buffer.shape[axis]
    if type(d) is int and type(b) is int and d >= b:
        raise RelationError(f"{pair}: the input must be shorter than the buffer on axis {axis}")
    return buffer


# --------------------------------------------------------------------------- padding


def _pad_widths(attrs: Attrs | None, data: TensorType) -> list[tuple[int, int]]:
    value = attr(attrs, "pad_width")
    if not isinstance(value, tuple) or not all(isinstance(p, tuple) for p in value):
        raise RelationError(f"pad_width must be a list of [before, after] pairs, not {value!r}")
    if len(value) != data.ndim:
        raise RelationError(
            f"pad_width has {len(value)} pairs, but the input `{type_text(data)}` has "
            f"{data.ndim} axes"
        )
    for i, p in enumerate(value):
        if len(p) != 2:
            raise RelationError(f"pad_width[{i}] = {list(p)} must be a [before, after] pair")
    return [(int(a), int(b)) for a, b in value]


def _padded(data: TensorType, widths: list[tuple[int, int]]) -> tuple[Dim, ...]:
    shape: list[Dim] = []
    for i, (d, (before, after)) in enumerate(zip(data.shape, widths)):
        grown = ANY if isinstance(d, AnyDim) else add(d, before + after)
        if type(grown) is int and grown < 0:
            raise RelationError(
                f"padding axis {i} of the input `{type_text(data)}` by ({before}, {after}) "
                "leaves a negative size"
            )
        shape.append(grown)
    return tuple(shape)


@shape_relation("nn.pad")
def pad_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.pad(data, pad_value, pad_width, pad_mode)`: each axis grows by before + after
    (negative widths crop); pad_value is a scalar."""
    data = tensor_arg(args[0], "the input")
    require_scalar(tensor_arg(args[1], "the pad value"), "the pad value")
    one_of(str_attr(attrs, "pad_mode"), "pad_mode", ("constant", "edge", "reflect"))
    if data is None:
        return None
    return TensorType(_padded(data, _pad_widths(attrs, data)), data.dtype)


@shape_relation("nn.mirror_pad")
def mirror_pad_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.mirror_pad(data, pad_width, mode)`: like nn.pad with non-negative widths."""
    data = tensor_arg(args[0], "the input")
    one_of(str_attr(attrs, "mode"), "mode", ("SYMMETRIC", "REFLECT"))
    if data is None:
        return None
    widths = _pad_widths(attrs, data)
    for i, (a, b) in enumerate(widths):
        if a < 0 or b < 0:
            raise RelationError(f"pad_width[{i}] = [{a}, {b}] must not be negative")
    return TensorType(_padded(data, widths), data.dtype)


# --------------------------------------------------------------------------- resampling


def _scale(attrs: Attrs | None, name: str) -> float:
    scale = float_attr(attrs, name)
    if not 0 < scale < float("inf"):
        raise RelationError(f"{name}={scale:g} must be positive and finite")
    return scale


def _scaled(d: Dim, scale: float) -> Dim:
    if type(d) is int:
        return round(d * scale)
    if isinstance(d, AnyDim):
        return ANY
    return d if scale == 1.0 else lost()


def _resample(
    data: TensorType, layout: str, ref: str, change: dict[int, Callable[[Dim], Dim]]
) -> tuple[Dim, ...]:
    """The input's shape through the reference layout `ref`, its axes changed by `change`."""
    parsed, shape = to_reference(data.shape, layout, ref, "the input", "layout")
    dims = [change[i](d) if i in change else d for i, d in enumerate(shape)]
    return from_reference(tuple(dims), ref, parsed, "the result")


@shape_relation("nn.upsampling")
def upsampling_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.upsampling(data, scale_h, scale_w, layout, ...)`: H and W scaled and rounded."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    sh, sw = _scale(attrs, "scale_h"), _scale(attrs, "scale_w")
    change: dict[int, Callable[[Dim], Dim]] = {
        2: lambda d: _scaled(d, sh),
        3: lambda d: _scaled(d, sw),
    }
    return TensorType(_resample(data, str_attr(attrs, "layout"), "NCHW", change), data.dtype)


@shape_relation("nn.upsampling3d")
def upsampling3d_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.upsampling3d(data, scale_d, scale_h, scale_w, layout, ...)`: D, H, W scaled."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    scales = [_scale(attrs, k) for k in ("scale_d", "scale_h", "scale_w")]
    change: dict[int, Callable[[Dim], Dim]] = {
        i + 2: functools.partial(_scaled, scale=s) for i, s in enumerate(scales)
    }
    return TensorType(_resample(data, str_attr(attrs, "layout"), "NCDHW", change), data.dtype)


def _block(attrs: Attrs | None) -> int:
    one_of(str_attr(attrs, "mode"), "mode", ("DCR", "CRD"))
    size = int_attr(attrs, "block_size")
    if size < 1:
        raise RelationError(f"block_size={size} must be at least 1")
    return size


def _divide(d: Dim, by: int, what: str) -> Dim:
    if type(d) is int and d % by:
        raise RelationError(f"{what} {d} is not divisible by {by}")
    return floordiv(d, by)


@shape_relation("nn.depth_to_space")
def depth_to_space_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.depth_to_space(data, block_size, layout, mode)`: C / b², H * b, W * b."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    b = _block(attrs)
    change: dict[int, Callable[[Dim], Dim]] = {
        1: lambda d: _divide(d, b * b, f"the channel count (block_size={b}):"),
        2: lambda d: mul(d, b),
        3: lambda d: mul(d, b),
    }
    return TensorType(_resample(data, str_attr(attrs, "layout"), "NCHW", change), data.dtype)


@shape_relation("nn.space_to_depth")
def space_to_depth_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`nn.space_to_depth(data, block_size, layout, mode)`: C * b², H / b, W / b."""
    data = tensor_arg(args[0], "the input")
    if data is None:
        return None
    b = _block(attrs)
    change: dict[int, Callable[[Dim], Dim]] = {
        1: lambda d: mul(d, b * b),
        2: lambda d: _divide(d, b, f"the height (block_size={b}):"),
        3: lambda d: _divide(d, b, f"the width (block_size={b}):"),
    }
    return TensorType(_resample(data, str_attr(attrs, "layout"), "NCHW", change), data.dtype)
