"""Expressions of the loop IR (TIR), shared with tensor expressions (TE).

Nodes are frozen and compared by identity (`prim_equal` in `tir.analysis` compares structure).
Every expression has a `dtype` (`float32`, `int64`, `bool`, `float32x16`, ...). Arithmetic on
expressions builds nodes: `i * 4 + j`, `x[i] * 2.0`, `a < b`. A Python number combined with
an expression takes the expression's dtype; two expressions of different dtypes are an error
(cast explicitly with `cast`). `==`/`!=` are identity, as for every IR node: use `eq`/`ne`.

Integer `Div`/`Mod` truncate toward zero (C semantics); `FloorDiv`/`FloorMod` round toward
negative infinity. Float `Div` is true division. Loop variables and indices are `int64`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Union

from attrs import field, frozen

from .dtypes import INDEX_DTYPE, element_of, is_bool, is_float, lanes_of, with_lanes

if TYPE_CHECKING:
    from .buffer import Buffer

Number = Union[int, float, bool]  # noqa: UP007
ExprLike = Union["PrimExpr", int, float, bool]


def as_tuple(items: Iterable[Any]) -> tuple[Any, ...]:
    """A tuple of `items` (the converter of every tuple field of the IR)."""
    return tuple(items)


class PrimExpr:
    """Base of every loop-IR expression; arithmetic operators build nodes."""

    __slots__ = ()
    dtype: str

    def __add__(self, other: ExprLike) -> PrimExpr:
        return _binary(Add, self, other)

    def __radd__(self, other: ExprLike) -> PrimExpr:
        return _binary(Add, other, self)

    def __sub__(self, other: ExprLike) -> PrimExpr:
        return _binary(Sub, self, other)

    def __rsub__(self, other: ExprLike) -> PrimExpr:
        return _binary(Sub, other, self)

    def __mul__(self, other: ExprLike) -> PrimExpr:
        return _binary(Mul, self, other)

    def __rmul__(self, other: ExprLike) -> PrimExpr:
        return _binary(Mul, other, self)

    def __truediv__(self, other: ExprLike) -> PrimExpr:
        return _binary(Div, self, other)

    def __rtruediv__(self, other: ExprLike) -> PrimExpr:
        return _binary(Div, other, self)

    def __floordiv__(self, other: ExprLike) -> PrimExpr:
        return _binary(FloorDiv, self, other)

    def __rfloordiv__(self, other: ExprLike) -> PrimExpr:
        return _binary(FloorDiv, other, self)

    def __mod__(self, other: ExprLike) -> PrimExpr:
        return _binary(FloorMod, self, other)

    def __rmod__(self, other: ExprLike) -> PrimExpr:
        return _binary(FloorMod, other, self)

    def __neg__(self) -> PrimExpr:
        return _binary(Sub, _zero_like(self), self)

    def __lt__(self, other: ExprLike) -> PrimExpr:
        return _binary(LT, self, other)

    def __le__(self, other: ExprLike) -> PrimExpr:
        return _binary(LE, self, other)

    def __gt__(self, other: ExprLike) -> PrimExpr:
        return _binary(GT, self, other)

    def __ge__(self, other: ExprLike) -> PrimExpr:
        return _binary(GE, self, other)

    def __and__(self, other: ExprLike) -> PrimExpr:
        return _binary(And, self, other)

    def __or__(self, other: ExprLike) -> PrimExpr:
        return _binary(Or, self, other)

    def __invert__(self) -> PrimExpr:
        return Not(self)

    def __bool__(self) -> bool:
        raise TypeError("a loop-IR expression has no truth value; use tir.all_of/select/...")

    def astype(self, dtype: str) -> PrimExpr:
        """This expression cast to `dtype` (itself if it already has that dtype)."""
        return cast(dtype, self)


def _zero_like(e: PrimExpr) -> PrimExpr:
    return const(0, e.dtype)


def const(value: Number, dtype: str | None = None) -> PrimExpr:
    """A constant; without `dtype`, ints are `int64`, floats `float32`, bools `bool`.
    A vector dtype gives a `Broadcast` of the scalar constant."""
    if dtype is None:
        dtype = (
            "bool"
            if isinstance(value, bool)
            else INDEX_DTYPE
            if isinstance(value, int)
            else "float32"
        )
    lanes = lanes_of(dtype)
    base = element_of(dtype)
    scalar: PrimExpr
    if is_float(base):
        scalar = FloatImm(float(value), base)
    else:
        scalar = IntImm(int(value), base)
    return scalar if lanes == 1 else Broadcast(scalar, lanes)


def convert(value: ExprLike, like: PrimExpr | None = None) -> PrimExpr:
    """`value` as an expression; a Python number takes the dtype of `like` when given."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, (bool, int, float)):
        return const(value, like.dtype if like is not None else None)
    raise TypeError(f"cannot use {type(value).__name__} as a loop-IR expression")


def _binary(cls: type, a: ExprLike, b: ExprLike) -> PrimExpr:
    if not isinstance(a, PrimExpr):
        b = convert(b)
        a = convert(a, b)
    else:
        b = convert(b, a)
    return cls(a, b)


def _check_same(a: PrimExpr, b: PrimExpr, what: str) -> None:
    if a.dtype != b.dtype:
        raise TypeError(f"{what}: operands have dtypes {a.dtype} and {b.dtype}; cast one")


# ----------------------------------------------------------------------------------- leaves


@frozen(eq=False)
class Var(PrimExpr):
    """A variable (loop variable, let-bound name, buffer data pointer of dtype `handle`)."""

    name: str
    dtype: str = INDEX_DTYPE

    def __repr__(self) -> str:
        return f"Var({self.name}: {self.dtype})"


@frozen(eq=False)
class IntImm(PrimExpr):
    """An integer (or bool) constant."""

    value: int
    dtype: str = INDEX_DTYPE


@frozen(eq=False)
class FloatImm(PrimExpr):
    """A floating-point constant."""

    value: float
    dtype: str = "float32"


@frozen(eq=False)
class StringImm(PrimExpr):
    """A string, only as an argument of an intrinsic call."""

    value: str
    dtype: str = "handle"


# ------------------------------------------------------------------------------- operators


@frozen(eq=False)
class BinaryOp(PrimExpr):
    """Base of arithmetic nodes; operands share one dtype, which is the result's."""

    a: PrimExpr
    b: PrimExpr
    dtype: str = field(init=False, default="")

    def __attrs_post_init__(self) -> None:
        _check_same(self.a, self.b, type(self).__name__)
        object.__setattr__(self, "dtype", self.a.dtype)


class Add(BinaryOp):
    """`a + b`."""


class Sub(BinaryOp):
    """`a - b`."""


class Mul(BinaryOp):
    """`a * b`."""


class Div(BinaryOp):
    """`a / b`: true division for floats, truncating division for integers."""


class Mod(BinaryOp):
    """Remainder of truncating division (sign of `a`), integers only."""


class FloorDiv(BinaryOp):
    """`floor(a / b)` for integers."""


class FloorMod(BinaryOp):
    """`a - floor(a / b) * b` for integers (sign of `b`)."""


class Min(BinaryOp):
    """`min(a, b)`."""


class Max(BinaryOp):
    """`max(a, b)`."""


@frozen(eq=False)
class CmpOp(PrimExpr):
    """Base of comparisons; the result is `bool` with the operands' lanes."""

    a: PrimExpr
    b: PrimExpr

    dtype: str = field(init=False, default="")

    def __attrs_post_init__(self) -> None:
        _check_same(self.a, self.b, type(self).__name__)
        object.__setattr__(self, "dtype", with_lanes("bool", lanes_of(self.a.dtype)))


class EQ(CmpOp):
    """`a == b`."""


class NE(CmpOp):
    """`a != b`."""


class LT(CmpOp):
    """`a < b`."""


class LE(CmpOp):
    """`a <= b`."""


class GT(CmpOp):
    """`a > b`."""


class GE(CmpOp):
    """`a >= b`."""


@frozen(eq=False)
class And(PrimExpr):
    """Logical and of two bools."""

    a: PrimExpr
    b: PrimExpr
    dtype: str = field(init=False, default="")

    def __attrs_post_init__(self) -> None:
        _check_same(self.a, self.b, "And")
        if not is_bool(self.a.dtype):
            raise TypeError(f"And needs bool operands, got {self.a.dtype}")
        object.__setattr__(self, "dtype", self.a.dtype)


@frozen(eq=False)
class Or(PrimExpr):
    """Logical or of two bools."""

    a: PrimExpr
    b: PrimExpr
    dtype: str = field(init=False, default="")

    def __attrs_post_init__(self) -> None:
        _check_same(self.a, self.b, "Or")
        if not is_bool(self.a.dtype):
            raise TypeError(f"Or needs bool operands, got {self.a.dtype}")
        object.__setattr__(self, "dtype", self.a.dtype)


@frozen(eq=False)
class Not(PrimExpr):
    """Logical not of a bool."""

    a: PrimExpr
    dtype: str = field(init=False, default="")

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "dtype", self.a.dtype)


@frozen(eq=False)
class Select(PrimExpr):
    """`cond ? true_value : false_value` with BOTH sides evaluated (use the `if_then_else`
    intrinsic when the untaken side may read out of bounds)."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr

    dtype: str = field(init=False, default="")

    def __attrs_post_init__(self) -> None:
        _check_same(self.true_value, self.false_value, "Select")
        object.__setattr__(self, "dtype", self.true_value.dtype)


@frozen(eq=False)
class Cast(PrimExpr):
    """`value` converted to `dtype` (float→int truncates; to bool is `!= 0`)."""

    dtype: str
    value: PrimExpr


@frozen(eq=False)
class Call(PrimExpr):
    """An intrinsic (`exp`, `tanh`, `if_then_else`, ...: the list is `tir.op.INTRINSICS`)."""

    dtype: str
    name: str
    args: tuple[PrimExpr, ...] = field(converter=as_tuple)


@frozen(eq=False)
class Let(PrimExpr):
    """`let var = value in body` as an expression."""

    var: Var
    value: PrimExpr
    body: PrimExpr
    dtype: str = field(init=False, default="")

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "dtype", self.body.dtype)


@frozen(eq=False)
class Ramp(PrimExpr):
    """The vector `[base, base + stride, ..., base + (lanes-1)*stride]`."""

    base: PrimExpr
    stride: PrimExpr
    lanes: int

    @property
    def dtype(self) -> str:  # type: ignore[override]
        """The base's dtype with `lanes` lanes."""
        return with_lanes(self.base.dtype, self.lanes)


@frozen(eq=False)
class Broadcast(PrimExpr):
    """A scalar repeated in every lane."""

    value: PrimExpr
    lanes: int

    @property
    def dtype(self) -> str:  # type: ignore[override]
        """The value's dtype with `lanes` lanes."""
        return with_lanes(self.value.dtype, self.lanes)


@frozen(eq=False)
class BufferLoad(PrimExpr):
    """`buffer[indices]`. Before flattening there is one index per dimension; after, one
    (flat) index. A `Ramp` index loads a vector."""

    buffer: Buffer
    indices: tuple[PrimExpr, ...] = field(converter=as_tuple)

    @property
    def dtype(self) -> str:  # type: ignore[override]
        """The element dtype, with the lanes of the (last) index."""
        lanes = lanes_of(self.indices[-1].dtype) if self.indices else 1
        return with_lanes(self.buffer.dtype, lanes)


# ------------------------------------------------------------------------ iteration domains


@frozen(eq=False)
class Range:
    """The half-open interval `[min, min + extent)`."""

    min: PrimExpr = field(converter=convert)
    extent: PrimExpr = field(converter=convert)


class IterKind(enum.Enum):
    """What an iteration variable ranges over."""

    DATA_PAR = "data_par"
    REDUCE = "reduce"


@frozen(eq=False)
class IterVar:
    """A named iteration variable with its domain (output axes and reduction axes of TE)."""

    var: Var
    dom: Range
    kind: IterKind = IterKind.DATA_PAR

    @property
    def name(self) -> str:
        """The variable's name."""
        return self.var.name

    def __repr__(self) -> str:
        return f"IterVar({self.var.name}, kind={self.kind.value})"


# ------------------------------------------------------------------------------- reductions


@frozen(eq=False)
class CommReducer:
    """A commutative reducer over tuples: `result(lhs, rhs)` combines two partial values;
    `identity` is the neutral element. Sum is `lhs=(x,), rhs=(y,), result=(x + y,)`."""

    lhs: tuple[Var, ...] = field(converter=as_tuple)
    rhs: tuple[Var, ...] = field(converter=as_tuple)
    result: tuple[PrimExpr, ...] = field(converter=as_tuple)
    identity: tuple[PrimExpr, ...] = field(converter=as_tuple)
    name: str = "reducer"


@frozen(eq=False)
class Reduce(PrimExpr):
    """A reduction of `source` over `axis` (reduce-kind IterVars) with `combiner`, keeping
    only iterations where `condition` holds; `value_index` picks one component of a tuple
    reduction (argmax keeps index and value)."""

    combiner: CommReducer
    source: tuple[PrimExpr, ...] = field(converter=as_tuple)
    axis: tuple[IterVar, ...] = field(converter=as_tuple)
    condition: PrimExpr
    value_index: int = 0

    @property
    def dtype(self) -> str:  # type: ignore[override]
        """The dtype of the selected component."""
        return self.source[self.value_index].dtype


# ------------------------------------------------------------------------------ constructors


def cast(dtype: str, value: ExprLike) -> PrimExpr:
    """`value` as `dtype` (no node when it already has that dtype)."""
    expr = convert(value)
    if expr.dtype == dtype:
        return expr
    if isinstance(expr, (IntImm, FloatImm)) and lanes_of(dtype) == 1:
        return const(expr.value != 0 if is_bool(dtype) else expr.value, dtype)
    return Cast(dtype, expr)


def eq(a: ExprLike, b: ExprLike) -> PrimExpr:
    """`a == b` as a node."""
    return _binary(EQ, a, b)


def ne(a: ExprLike, b: ExprLike) -> PrimExpr:
    """`a != b` as a node."""
    return _binary(NE, a, b)


def min_(a: ExprLike, b: ExprLike) -> PrimExpr:
    """`min(a, b)` as a node."""
    return _binary(Min, a, b)


def max_(a: ExprLike, b: ExprLike) -> PrimExpr:
    """`max(a, b)` as a node."""
    return _binary(Max, a, b)


def select(condition: ExprLike, true_value: ExprLike, false_value: ExprLike) -> PrimExpr:
    """`condition ? true_value : false_value`, both sides evaluated."""
    cond = convert(condition)
    if isinstance(true_value, PrimExpr):
        t = true_value
        f = convert(false_value, t)
    else:
        f = convert(false_value)
        t = convert(true_value, f)
    return Select(cond, t, f)


def truncdiv(a: ExprLike, b: ExprLike) -> PrimExpr:
    """Integer division toward zero."""
    return _binary(Div, a, b)


def truncmod(a: ExprLike, b: ExprLike) -> PrimExpr:
    """Remainder of division toward zero."""
    return _binary(Mod, a, b)


def all_of(*conditions: PrimExpr) -> PrimExpr:
    """The conjunction of bool conditions (`true` when none)."""
    if not conditions:
        return const(True, "bool")
    result = conditions[0]
    for c in conditions[1:]:
        result = And(result, c)
    return result


def any_of(*conditions: PrimExpr) -> PrimExpr:
    """The disjunction of bool conditions (`false` when none)."""
    if not conditions:
        return const(False, "bool")
    result = conditions[0]
    for c in conditions[1:]:
        result = Or(result, c)
    return result
