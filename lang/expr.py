"""Expressions and patterns of the language.

Expression nodes are immutable (frozen attrs classes with slots) and compared by identity:
a node used twice is *shared*, which is how a dataflow graph (graph normal form) is
represented. Equality up to renaming is `relay.lang.structural.structural_equal`.

Every node carries an optional source `span` and a `replace(**changes)` that returns the
node itself when nothing changes, so "did this rewrite change anything?" is an `is` test.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
from attrs import define, field, frozen

from .attrs import NO_ATTRS, Attrs, FuncAttrs
from .dtype import dtype_of_array
from .span import Span

if TYPE_CHECKING:
    from .adt import Constructor
from .types import Type, TypeVar


def _exprs(items: Iterable[Expr]) -> tuple[Expr, ...]:
    return tuple(items)


def _vars(items: Iterable[Var]) -> tuple[Var, ...]:
    return tuple(items)


def _types(items: Iterable[Type] | None) -> tuple[Type, ...]:
    return () if items is None else tuple(items)


def _type_vars(items: Iterable[TypeVar] | None) -> tuple[TypeVar, ...]:
    return () if items is None else tuple(items)


def _func_attrs(attrs: FuncAttrs | None) -> FuncAttrs:
    return NO_ATTRS if attrs is None else attrs


def _patterns(items: Iterable[Pattern]) -> tuple[Pattern, ...]:
    return tuple(items)


def _clauses(items: Iterable[Clause]) -> tuple[Clause, ...]:
    return tuple(items)


class Expr:
    """Base of all expressions."""

    __slots__ = ()
    span: Span | None

    def replace(self, **changes: Any) -> Any:
        """A copy with `changes` applied; `self` if every change is the current value."""
        if all(getattr(self, key) is value for key, value in changes.items()):
            return self
        return attrs.evolve(self, **changes)  # type: ignore[misc]


@define(frozen=True, eq=False, slots=True)
class Var(Expr):
    """A local variable; the object is its identity, `name_hint` only a printing hint."""

    name_hint: str = ""
    type_annotation: Type | None = None
    span: Span | None = field(default=None, kw_only=True, repr=False)


@define(frozen=True, eq=False, slots=True)
class GlobalVar(Expr):
    """The name of a global function of a module (`@main`)."""

    name_hint: str
    span: Span | None = field(default=None, kw_only=True, repr=False)


def _frozen(array: np.ndarray) -> bool:
    """Whether nobody can write `array`'s elements: C-contiguous, read-only, and so is every
    array it views, down to the one owning the memory (then it needs no copy)."""
    if not array.flags.c_contiguous:
        return False
    node: object = array
    while isinstance(node, np.ndarray):
        if node.flags.writeable:
            return False
        if node.base is None:
            return bool(node.flags.owndata)
        node = node.base
    return False


def _to_array(data: object) -> np.ndarray:
    if isinstance(data, np.ndarray) and _frozen(data):
        dtype_of_array(data)  # raises ValueError for unsupported dtypes
        return data
    array = np.array(data, copy=True) if not isinstance(data, np.ndarray) else data.copy()
    if array.dtype == np.float64 and not isinstance(data, np.ndarray):
        array = array.astype(np.float32)
    dtype_of_array(array)  # raises ValueError for unsupported dtypes
    array.setflags(write=False)
    return array


@define(frozen=True, eq=False, slots=True)
class Constant(Expr):
    """A tensor constant (rank 0 for scalars); its array is a read-only copy (an array
    nobody can write already, see `_frozen`, is kept without one)."""

    data: np.ndarray = field(converter=_to_array)
    span: Span | None = field(default=None, kw_only=True, repr=False)

    @property
    def dtype(self) -> str:
        """The relay dtype of the constant."""
        return dtype_of_array(self.data)

    @property
    def is_scalar(self) -> bool:
        """Whether the constant has rank 0."""
        return self.data.ndim == 0


def const(value: object, dtype: str | None = None) -> Constant:
    """A constant from a Python or numpy value (Python floats become float32)."""
    if dtype is not None:
        from .dtype import numpy_dtype

        return Constant(np.asarray(value, dtype=numpy_dtype(dtype)))
    if isinstance(value, bool):
        return Constant(np.asarray(value, dtype=np.bool_))
    if isinstance(value, int):
        return Constant(
            np.asarray(value, dtype=np.int32 if -(2**31) <= value < 2**31 else np.int64)
        )
    if isinstance(value, float):
        return Constant(np.asarray(value, dtype=np.float32))
    return Constant(np.asarray(value))


@define(frozen=True, eq=False, slots=True)
class Tuple(Expr):
    """`(a, b, ...)`; `()` is the unit value."""

    fields: tuple[Expr, ...] = field(converter=_exprs)
    span: Span | None = field(default=None, kw_only=True, repr=False)


@define(frozen=True, eq=False, slots=True)
class TupleGetItem(Expr):
    """`t.i`: field `index` of a tuple."""

    tuple_value: Expr
    index: int
    span: Span | None = field(default=None, kw_only=True, repr=False)


@define(frozen=True, eq=False, slots=True)
class Call(Expr):
    """`op(args..., attrs)`: a call of an operator, global, closure or constructor."""

    op: Expr
    args: tuple[Expr, ...] = field(converter=_exprs)
    attrs: Attrs | None = None
    type_args: tuple[Type, ...] = field(default=(), converter=_types)
    span: Span | None = field(default=None, kw_only=True, repr=False)


@define(frozen=True, eq=False, slots=True)
class Let(Expr):
    """`let %var = value; body` (the variable is in scope in `value` too, for recursion)."""

    var: Var
    value: Expr
    body: Expr
    span: Span | None = field(default=None, kw_only=True, repr=False)


@define(frozen=True, eq=False, slots=True)
class If(Expr):
    """`if (cond) { true_branch } else { false_branch }`."""

    cond: Expr
    true_branch: Expr
    false_branch: Expr
    span: Span | None = field(default=None, kw_only=True, repr=False)


@define(frozen=True, eq=False, slots=True)
class Function(Expr):
    """`fn [T...](%p: T, ...) -> R { body }`, with attributes such as `Primitive=1`."""

    params: tuple[Var, ...] = field(converter=_vars)
    body: Expr
    ret_type: Type | None = None
    type_params: tuple[TypeVar, ...] = field(default=(), converter=_type_vars)
    attrs: FuncAttrs = field(default=NO_ATTRS, converter=_func_attrs)
    span: Span | None = field(default=None, kw_only=True, repr=False)

    @property
    def is_primitive(self) -> bool:
        """Whether fusion marked this function as one kernel (`Primitive=1`)."""
        return bool(self.attrs.get("Primitive", 0))


# ----------------------------------------------------------------------------- patterns


class Pattern:
    """Base of match patterns (values: compared structurally)."""

    __slots__ = ()


@frozen
class PatternWildcard(Pattern):
    """`_`: matches anything, binds nothing."""


@frozen
class PatternVar(Pattern):
    """`%x`: matches anything and binds it."""

    var: Var


@frozen
class PatternConstructor(Pattern):
    """`Cons(p0, p1)`: matches a value built by `constructor`, then its fields."""

    constructor: Constructor
    patterns: tuple[Pattern, ...] = field(default=(), converter=_patterns)


@frozen
class PatternTuple(Pattern):
    """`(p0, p1)`: matches a tuple field by field."""

    patterns: tuple[Pattern, ...] = field(default=(), converter=_patterns)


def pattern_vars(pattern: Pattern) -> list[Var]:
    """The variables a pattern binds, left to right."""
    found: list[Var] = []
    stack = [pattern]
    while stack:
        p = stack.pop()
        if isinstance(p, PatternVar):
            found.append(p.var)
        elif isinstance(p, PatternConstructor | PatternTuple):
            stack.extend(reversed(p.patterns))
    return found


def replace_pattern_vars(pattern: Pattern, mapping: dict[Var, Var]) -> Pattern:
    """The pattern with its bound variables replaced according to `mapping`."""
    if isinstance(pattern, PatternVar):
        new = mapping.get(pattern.var, pattern.var)
        return pattern if new is pattern.var else PatternVar(new)
    if isinstance(pattern, PatternConstructor | PatternTuple):
        subs = tuple(replace_pattern_vars(p, mapping) for p in pattern.patterns)
        if all(a is b for a, b in zip(subs, pattern.patterns)):
            return pattern
        return attrs.evolve(pattern, patterns=subs)  # type: ignore[arg-type]
    return pattern


@define(frozen=True, eq=False, slots=True)
class Clause:
    """One arm of a match: `lhs => rhs`."""

    lhs: Pattern
    rhs: Expr


@define(frozen=True, eq=False, slots=True)
class Match(Expr):
    """`match (data) { clauses }`; `complete=False` is `match?` (no exhaustiveness check)."""

    data: Expr
    clauses: tuple[Clause, ...] = field(converter=_clauses)
    complete: bool = True
    span: Span | None = field(default=None, kw_only=True, repr=False)


# --------------------------------------------------------------------------- references


@define(frozen=True, eq=False, slots=True)
class RefCreate(Expr):
    """`ref(value)`: a new mutable cell."""

    value: Expr
    span: Span | None = field(default=None, kw_only=True, repr=False)


@define(frozen=True, eq=False, slots=True)
class RefRead(Expr):
    """`ref_read(ref)`."""

    ref: Expr
    span: Span | None = field(default=None, kw_only=True, repr=False)


@define(frozen=True, eq=False, slots=True)
class RefWrite(Expr):
    """`ref_write(ref, value)`; evaluates to `()`."""

    ref: Expr
    value: Expr
    span: Span | None = field(default=None, kw_only=True, repr=False)


def let_chain(bindings: list[tuple[Var, Expr]], body: Expr) -> Expr:
    """Nest `bindings` as lets around `body`, without recursion."""
    for var, value in reversed(bindings):
        body = Let(var, value, body)
    return body
