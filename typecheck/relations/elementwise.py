"""Type relations of elementwise operators: numpy broadcasting, unary math, casts, `where`.

Broadcasting follows numpy (and TVM's `BroadcastRel`): shapes are aligned on the right;
a dimension of 1 stretches to the other; `?` (known only at run time) gives the other
side (it must be 1 or equal to it at run time); two different sizes, neither 1, are an
error. Two different symbolic sizes (or a symbolic size against a number other than 1)
cannot be decided statically: the relation waits in case they get bound, and reports them
on its final attempt.
"""

from __future__ import annotations

from ...lang.attrs import Attrs
from ...lang.optable import OpTable
from ...lang.types import AnyDim, Dim, ShapeVar, TensorType, Type
from ..show import dim_text, shape_text, type_text
from . import Relation, RelationContext, RelationError, attr, tensor_arg

RELATIONS: OpTable[Relation] = OpTable("type relation")
"""The type relations of this family (`relations.RELATIONS` joins the families)."""

ARITHMETIC = (
    "add",
    "subtract",
    "multiply",
    "divide",
    "power",
    "maximum",
    "minimum",
    "floor_divide",
    "floor_mod",
    "mod",
    "trunc_divide",
    "trunc_mod",
    "logical_and",
    "logical_or",
    "logical_xor",
)
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift")
COMPARISON = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
UNARY = (
    "negative",
    "abs",
    "exp",
    "fast_exp",
    "log",
    "log2",
    "log10",
    "sqrt",
    "rsqrt",
    "sigmoid",
    "tanh",
    "fast_tanh",
    "erf",
    "fast_erf",
    "floor",
    "ceil",
    "round",
    "trunc",
    "sign",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "logical_not",
    "copy",
    "zeros_like",
    "ones_like",
)
UNARY_INTEGER = ("bitwise_not",)
PREDICATES = ("isnan", "isinf", "isfinite")


def _is_integral(dtype: str) -> bool:
    return dtype.startswith(("int", "uint", "bool"))


def broadcast_dim(x: Dim, y: Dim, final: bool) -> Dim | None:
    """The broadcast of two dimensions; None if undecidable yet; `RelationError` if never."""
    if x is y or (type(x) is int and x == y):
        return x
    if x == 1:
        return y
    if y == 1:
        return x
    if isinstance(x, AnyDim):
        return y
    if isinstance(y, AnyDim):
        return x
    if isinstance(x, ShapeVar) or isinstance(y, ShapeVar):
        if not final:
            return None
        raise RelationError(
            f"cannot broadcast dimension {dim_text(x)} with {dim_text(y)}: "
            "they are not known to be equal"
        )
    raise RelationError(f"cannot broadcast dimension {dim_text(x)} with {dim_text(y)}")


def broadcast_shapes(
    a: tuple[Dim, ...], b: tuple[Dim, ...], final: bool = True
) -> tuple[Dim, ...] | None:
    """numpy's `broadcast_shapes` over dimensions that may be symbolic or `?`.

    Returns None when the answer depends on symbolic sizes that may still get bound (only
    when not `final`); raises `RelationError` naming both shapes when they do not broadcast.
    """
    if a == b:
        return a
    rank = max(len(a), len(b))
    pa = (1,) * (rank - len(a)) + tuple(a)
    pb = (1,) * (rank - len(b)) + tuple(b)
    out: list[Dim] = []
    for x, y in zip(pa, pb):
        try:
            d = broadcast_dim(x, y, final)
        except RelationError as exc:
            raise RelationError(
                f"shapes {shape_text(a)} and {shape_text(b)} do not broadcast: {exc.message}"
            ) from None
        if d is None:
            return None
        out.append(d)
    return tuple(out)


def _operands(args: list[Type]) -> tuple[TensorType, TensorType] | None:
    lhs = tensor_arg(args[0], "the left operand")
    rhs = tensor_arg(args[1], "the right operand")
    if lhs is None or rhs is None:
        return None
    if lhs.dtype != rhs.dtype:
        raise RelationError(
            f"the operands have different dtypes: `{type_text(lhs)}` and `{type_text(rhs)}`"
        )
    return lhs, rhs


@RELATIONS.register(*ARITHMETIC)
def broadcast_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """Binary elementwise operators with broadcasting; the result has the operands' dtype."""
    operands = _operands(args)
    if operands is None:
        return None
    lhs, rhs = operands
    if lhs == rhs:
        return lhs
    shape = broadcast_shapes(lhs.shape, rhs.shape, ctx.final)
    return None if shape is None else TensorType(shape, lhs.dtype)


@RELATIONS.register(*BITWISE)
def bitwise_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """Bitwise binary operators: like `broadcast_rel`, for integer (or bool) operands."""
    operands = _operands(args)
    if operands is not None and not _is_integral(operands[0].dtype):
        raise RelationError(f"needs integer operands, but they are `{operands[0].dtype}`")
    return broadcast_rel(args, attrs, ctx)


@RELATIONS.register(*COMPARISON)
def compare_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """Comparisons: broadcast like arithmetic; the result is `bool`."""
    out = broadcast_rel(args, attrs, ctx)
    if not isinstance(out, TensorType):
        return out
    return TensorType(out.shape, "bool")


@RELATIONS.register(*UNARY, "clip")
def identity_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """Unary elementwise operators: the result has the input's type."""
    return tensor_arg(args[0], "the input")


@RELATIONS.register(*UNARY_INTEGER)
def integer_unary_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """Unary bitwise operators: the input's type, which must be integral."""
    data = tensor_arg(args[0], "the input")
    if data is not None and not _is_integral(data.dtype):
        raise RelationError(f"needs an integer input, but it is `{data.dtype}`")
    return data


@RELATIONS.register(*PREDICATES)
def predicate_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`isnan`, `isinf`, `isfinite`: the input's shape, dtype `bool`."""
    data = tensor_arg(args[0], "the input")
    return None if data is None else TensorType(data.shape, "bool")


@RELATIONS.register("cast", "reinterpret")
def cast_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`cast(data, dtype=...)`: the input's shape with the attribute's dtype."""
    data = tensor_arg(args[0], "the input")
    dtype = attr(attrs, "dtype")
    if not isinstance(dtype, str) or not dtype:
        raise RelationError("the attribute `dtype` must name a dtype")
    return None if data is None else TensorType(data.shape, dtype)


@RELATIONS.register("cast_like")
def cast_like_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`cast_like(data, like)`: the shape of `data`, the dtype of `like`."""
    data = tensor_arg(args[0], "the input")
    like = tensor_arg(args[1], "`dtype_like`")
    if data is None or like is None:
        return None
    return TensorType(data.shape, like.dtype)


def _scalar(t: TensorType | None, what: str) -> None:
    if t is not None and t.ndim != 0:
        raise RelationError(f"{what} must be a scalar, but it has type `{type_text(t)}`")


@RELATIONS.register("full_like")
def full_like_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`full_like(data, fill_value)`: the type of `data`; `fill_value` is a scalar."""
    data = tensor_arg(args[0], "the input")
    _scalar(tensor_arg(args[1], "the fill value"), "the fill value")
    return data


def _static_shape(attrs: Attrs | None) -> tuple[int, ...]:
    shape = attr(attrs, "shape")
    if shape is None:
        raise RelationError("the attribute `shape` must be a list of sizes (not None)")
    sizes: tuple[int, ...] = tuple(shape)  # type: ignore[arg-type]
    if any(d < 0 for d in sizes):
        raise RelationError(f"shape={list(sizes)}: a size cannot be negative")
    return sizes


@RELATIONS.register("zeros", "ones")
def init_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`zeros(shape=..., dtype=...)`: a tensor of that shape and dtype (float32 if unset)."""
    dtype = attr(attrs, "dtype") or "float32"
    return TensorType(_static_shape(attrs), dtype)  # type: ignore[arg-type]


@RELATIONS.register("full")
def full_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`full(fill_value, shape=..., dtype=...)`: dtype of the fill value if unset."""
    fill = tensor_arg(args[0], "the fill value")
    _scalar(fill, "the fill value")
    dtype = attr(attrs, "dtype")
    if not dtype:
        if fill is None:
            return None
        dtype = fill.dtype
    return TensorType(_static_shape(attrs), dtype)  # type: ignore[arg-type]


@RELATIONS.register("where")
def where_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """`where(condition, x, y)`: the three shapes broadcast together; the dtype of x and y."""
    cond = tensor_arg(args[0], "the condition")
    x = tensor_arg(args[1], "`x`")
    y = tensor_arg(args[2], "`y`")
    if cond is None or x is None or y is None:
        return None
    if x.dtype != y.dtype:
        raise RelationError(
            f"`x` and `y` have different dtypes: `{type_text(x)}` and `{type_text(y)}`"
        )
    shape = broadcast_shapes(cond.shape, x.shape, ctx.final)
    if shape is None:
        return None
    shape = broadcast_shapes(shape, y.shape, ctx.final)
    return None if shape is None else TensorType(shape, x.dtype)
