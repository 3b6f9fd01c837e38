"""Helpers shared by the shape relations: typed attributes, axes, dimension arithmetic.

Dimensions are integers, shape variables (`ShapeVar`) or `?` (`ANY`). The arithmetic here
(`mul`, `add`, `floordiv`, `product`) is exact on integers, keeps a shape variable where
the answer is that variable (`n * 1`, `n + 0`), and gives `?` when an operand is `?`
(as TVM does). Anything else about a shape variable (`n * 4`) cannot be written as a
dimension: the relation then *waits* (a shape variable may still be bound to a number,
and the solver runs the relation again when it is) and settles for `?` on its final
attempt. That waiting is done by raising `Wait`, which relations registered with a
family's `shape_relation` (made by `shape_relations`) turn into "not yet" (None).

Equality of two dimensions follows the elementwise relations: `?` agrees with anything,
two different numbers never agree, and a shape variable against anything else waits and
is reported on the final attempt.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ...lang.attrs import Attrs
from ...lang.opdefs import semantics
from ...lang.opdefs.semantics import SemanticsError
from ...lang.optable import OpTable
from ...lang.types import (
    ANY,
    AnyDim,
    Dim,
    IncompleteType,
    TensorType,
    TupleType,
    Type,
)
from ..show import dim_text, type_text
from . import Relation, RelationContext, RelationError, attr, tensor_arg


class Wait(Exception):
    """The result depends on a shape variable that may still be bound: try again later."""


_FINAL: ContextVar[bool] = ContextVar("relay_relation_final", default=True)


def waiting(fn: Relation) -> Relation:
    """`fn` as a relation that may raise `Wait` (it then returns None, "not yet")."""

    @functools.wraps(fn)
    def run(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
        token = _FINAL.set(ctx.final)
        try:
            return fn(args, attrs, ctx)
        except Wait:
            return None
        finally:
            _FINAL.reset(token)

    return run


def shape_relations(
    table: OpTable[Relation],
) -> Callable[..., Callable[[Relation], Relation]]:
    """The `@shape_relation(*names)` decorator of a family whose relations go in `table`:
    it registers `waiting(fn)` for each operator of `names` and returns it."""

    def shape_relation(*names: str) -> Callable[[Relation], Relation]:
        def register(fn: Relation) -> Relation:
            return table.register(*names)(waiting(fn))

        return register

    return shape_relation


def is_final() -> bool:
    """Whether the running relation is on its final attempt."""
    return _FINAL.get()


def lost() -> AnyDim:
    """A dimension that depends on a shape variable in a way no dimension can express."""
    if not _FINAL.get():
        raise Wait
    return ANY


# --------------------------------------------------------------------------- attributes


def int_attr(attrs: Attrs | None, name: str) -> int:
    """An integer attribute."""
    value = attr(attrs, name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise RelationError(f"the attribute `{name}` must be an integer, not {value!r}")
    return value


def opt_int_attr(attrs: Attrs | None, name: str) -> int | None:
    """An integer attribute that may be None."""
    return None if attr(attrs, name) is None else int_attr(attrs, name)


def opt_size_attr(attrs: Attrs | None, name: str) -> int | None:
    """An integer attribute that is a size or a count (never negative); it may be None."""
    value = opt_int_attr(attrs, name)
    if value is not None and value < 0:
        raise RelationError(f"{name}={value} must not be negative: it is a size")
    return value


MAX_PARTS = 1 << 16
"""The most dimensions (of a tensor type) or fields (of a tuple type) that a relation
builds from a count in the attributes: more cannot be a real program, and the type itself
would take all memory."""


def check_parts(count: int, what: str) -> None:
    """`RelationError` if a relation would build a type of `count` dimensions or fields."""
    if count > MAX_PARTS:
        raise RelationError(f"{what}: that is more than {MAX_PARTS}")


def ints_attr(attrs: Attrs | None, name: str) -> tuple[int, ...]:
    """A list-of-integers attribute (a single integer counts as a list of one)."""
    value = attr(attrs, name)
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if not isinstance(value, tuple) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise RelationError(f"the attribute `{name}` must be a list of integers, not {value!r}")
    return value


def opt_ints_attr(attrs: Attrs | None, name: str) -> tuple[int, ...] | None:
    """A list-of-integers attribute that may be None."""
    return None if attr(attrs, name) is None else ints_attr(attrs, name)


def str_attr(attrs: Attrs | None, name: str) -> str:
    """A string attribute."""
    value = attr(attrs, name)
    if not isinstance(value, str):
        raise RelationError(f"the attribute `{name}` must be a string, not {value!r}")
    return value


def bool_attr(attrs: Attrs | None, name: str) -> bool:
    """A boolean attribute."""
    return bool(attr(attrs, name))


def float_attr(attrs: Attrs | None, name: str) -> float:
    """A floating-point attribute."""
    value = attr(attrs, name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RelationError(f"the attribute `{name}` must be a number, not {value!r}")
    return float(value)


def dtype_attr(attrs: Attrs | None, name: str, default: str) -> str:
    """A dtype attribute; `default` when it is null ("" or None)."""
    value = attr(attrs, name)
    return value if isinstance(value, str) and value else default


def one_of(value: str, name: str, choices: Iterable[str]) -> str:
    """`value` if it is one of `choices`; a RelationError listing them otherwise."""
    options = tuple(choices)
    if value not in options:
        listed = ", ".join(f'"{c}"' for c in options)
        raise RelationError(f'the attribute `{name}` must be one of {listed}, not "{value}"')
    return value


def per_axis(values: tuple[int, ...], count: int, name: str) -> tuple[int, ...]:
    """`values` for `count` axes: one value applies to all; otherwise exactly `count`."""
    if len(values) == 1:
        return values * count
    if len(values) != count:
        raise RelationError(
            f"the attribute `{name}` must have 1 or {count} values, but it has {len(values)}: "
            f"{list(values)}"
        )
    return values


def positive(values: Iterable[int], name: str, minimum: int = 1) -> None:
    """Check that every value of attribute `name` is at least `minimum`."""
    for v in values:
        if v < minimum:
            raise RelationError(
                f"the attribute `{name}` must be at least {minimum}, but it has {v}"
            )


# --------------------------------------------------------------------------- semantics


@contextmanager
def semantic_errors() -> Iterator[None]:
    """Report a `SemanticsError` of the attribute rules (`lang/opdefs/semantics`) as a
    `RelationError` with the same message."""
    try:
        yield
    except SemanticsError as exc:
        raise RelationError(str(exc)) from None


def normalize_axis(axis: int, ndim: int, what: str = "axis", extra: int = 0) -> int:
    """`axis` (negative counts from the end) as an index in [0, ndim + extra)
    (`semantics.normalize_axis`); RelationError if it is out of range."""
    with semantic_errors():
        return semantics.normalize_axis(axis, ndim, what, extra)


def normalize_axes(axes: Iterable[int], ndim: int, what: str = "axis") -> list[int]:
    """Each axis normalized; RelationError if one is out of range or given twice."""
    with semantic_errors():
        return semantics.normalize_axes(axes, ndim, what)


# --------------------------------------------------------------------------- dimensions


def mul(a: Dim, b: Dim) -> Dim:
    """`a * b` as a dimension."""
    if type(a) is int and type(b) is int:
        return a * b
    if a == 1:
        return b
    if b == 1:
        return a
    if isinstance(a, AnyDim) or isinstance(b, AnyDim):
        return ANY
    return lost()


def add(a: Dim, b: Dim) -> Dim:
    """`a + b` as a dimension."""
    if type(a) is int and type(b) is int:
        return a + b
    if a == 0:
        return b
    if b == 0:
        return a
    if isinstance(a, AnyDim) or isinstance(b, AnyDim):
        return ANY
    return lost()


def floordiv(a: Dim, b: int) -> Dim:
    """`a // b` as a dimension."""
    if type(a) is int:
        return a // b
    if b == 1:
        return a
    if isinstance(a, AnyDim):
        return ANY
    return lost()


def product(dims: Iterable[Dim]) -> Dim:
    """The product of `dims` (1 for none)."""
    out: Dim = 1
    for d in dims:
        out = mul(out, d)
    return out


def agree(a: Dim, b: Dim) -> bool | None:
    """Whether two dimensions agree: True, False, or None while a shape variable decides."""
    if a is b or isinstance(a, AnyDim) or isinstance(b, AnyDim):
        return True
    if type(a) is int and type(b) is int:
        return a == b
    return None


def require_same(a: Dim, b: Dim, message: str) -> None:
    """RelationError(message) unless `a` and `b` agree (waits on shape variables)."""
    same = agree(a, b)
    if same:
        return
    if same is None:
        if not _FINAL.get():
            raise Wait
        message += f" ({dim_text(a)} and {dim_text(b)} are not known to be equal)"
    raise RelationError(message)


def pick(a: Dim, b: Dim) -> Dim:
    """Of two agreeing dimensions, the more precise one (a number over a variable over `?`)."""
    if type(a) is int or isinstance(b, AnyDim):
        return a
    if type(b) is int or isinstance(a, AnyDim):
        return b
    return a


# --------------------------------------------------------------------------- arguments


def is_integral(dtype: str) -> bool:
    """Whether `dtype` is a (signed or unsigned) integer type."""
    return dtype.startswith(("int", "uint"))


def require_integral(t: TensorType, what: str) -> None:
    """RelationError unless the tensor `t` holds integers."""
    if not is_integral(t.dtype):
        raise RelationError(f"{what} must have an integer dtype, but it is `{type_text(t)}`")


def require_rank(t: TensorType, ranks: int | Iterable[int], what: str) -> None:
    """RelationError unless the rank of `t` is `ranks` (or one of them)."""
    allowed = (ranks,) if isinstance(ranks, int) else tuple(ranks)
    if t.ndim not in allowed:
        wanted = " or ".join(str(r) for r in allowed)
        raise RelationError(
            f"{what} must have rank {wanted}, but it has type `{type_text(t)}` (rank {t.ndim})"
        )


def require_scalar(t: TensorType | None, what: str) -> None:
    """RelationError unless `t` is unknown or a rank-0 tensor."""
    if t is not None and t.ndim != 0:
        raise RelationError(f"{what} must be a scalar, but it has type `{type_text(t)}`")


def expect(ctx: RelationContext, arg: Type, expected: TensorType, what: str, why: str) -> None:
    """Constrain argument `arg` to the tensor type `expected` (it may still be unknown).

    A known argument is compared first so that a mismatch reads in the program's terms:
    "`what` must have shape (16), `why`, but it has type `Tensor[(8), float32]`".
    """
    if isinstance(arg, IncompleteType):
        ctx.unify(arg, expected)
        return
    t = tensor_arg(arg, what)
    if t is None:
        return
    wanted = f"{what} must be `{type_text(expected)}` ({why}), but it has type `{type_text(t)}`"
    if t.ndim != expected.ndim or t.dtype != expected.dtype:
        raise RelationError(wanted)
    for x, y in zip(t.shape, expected.shape):
        if agree(x, y) is False:
            raise RelationError(wanted)
    ctx.unify(arg, expected)


def tuple_tensors(arg: Type, what: str) -> list[TensorType] | None:
    """The fields of a tuple of tensors; None while any part is unknown."""
    if isinstance(arg, IncompleteType):
        return None
    if not isinstance(arg, TupleType):
        raise RelationError(
            f"{what} must be a tuple of tensors, but it has type `{type_text(arg)}`"
        )
    out: list[TensorType] = []
    for i, f in enumerate(arg.fields):
        t = tensor_arg(f, f"field {i} of {what}")
        if t is None:
            return None
        out.append(t)
    return out
