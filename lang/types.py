"""Types: tensor types with shapes, tuples, functions, type variables, ADTs, references.

Types are values: frozen attrs classes with structural `==` and `hash`. The exceptions are
binders and holes, compared by identity: `TypeVar` (bound by a function's type
parameters), `GlobalTypeVar` (the name of an ADT), `ShapeVar` (a symbolic dimension) and
`IncompleteType` (a hole that inference fills).
"""

from __future__ import annotations

from collections.abc import Iterable

from attrs import define, field, frozen

from .dtype import normalize_dtype


class Type:
    """Base class of all types."""

    __slots__ = ()


@define(frozen=True, eq=False)
class ShapeVar:
    """A symbolic dimension (TVM's `tir.SizeVar`), compared by identity."""

    name_hint: str
    dtype: str = "int32"


@frozen
class AnyDim:
    """A dimension known only at run time, written `?`."""

    def __repr__(self) -> str:
        return "?"


ANY = AnyDim()

Dim = int | ShapeVar | AnyDim


def _to_shape(dims: Iterable[Dim]) -> tuple[Dim, ...]:
    result = tuple(dims)
    for dim in result:
        if isinstance(dim, bool) or not isinstance(dim, int | ShapeVar | AnyDim):
            raise TypeError(f"a dimension must be an int, a ShapeVar or ANY, not {dim!r}")
        if isinstance(dim, int) and dim < 0:
            raise ValueError(f"a dimension must be non-negative, not {dim}")
    return result


def _types(items: Iterable[Type]) -> tuple[Type, ...]:
    return tuple(items)


def _type_vars(items: Iterable[TypeVar]) -> tuple[TypeVar, ...]:
    return tuple(items)


@frozen
class TensorType(Type):
    """`Tensor[(d0, d1, ...), dtype]`; rank 0 is a scalar and prints as the bare dtype."""

    shape: tuple[Dim, ...] = field(converter=_to_shape)
    dtype: str = field(converter=normalize_dtype)

    @property
    def ndim(self) -> int:
        """The rank."""
        return len(self.shape)

    def is_static(self) -> bool:
        """Whether every dimension is a known integer."""
        return all(isinstance(d, int) for d in self.shape)


def scalar_type(dtype: str) -> TensorType:
    """The rank-0 tensor type of `dtype`."""
    return TensorType((), dtype)


@frozen
class TupleType(Type):
    """`(T0, T1, ...)`; `()` is the unit type."""

    fields: tuple[Type, ...] = field(converter=_types)


def leaf_types(ty: Type) -> list[Type]:
    """The non-tuple parts of `ty`, depth first, left to right (`ty` itself when it is not
    a tuple)."""
    out: list[Type] = []
    stack = [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, TupleType):
            stack.extend(reversed(t.fields))
        else:
            out.append(t)
    return out


@define(frozen=True, eq=False)
class TypeVar(Type):
    """A type parameter, bound by a function's `[A, B]` list; compared by identity."""

    name_hint: str
    kind: str = "Type"


@define(frozen=True, eq=False)
class GlobalTypeVar(Type):
    """The name of an algebraic data type in a module (`List`); compared by identity."""

    name_hint: str
    kind: str = "AdtHandle"


@frozen
class FuncType(Type):
    """`fn [T...](A0, A1, ...) -> R`."""

    arg_types: tuple[Type, ...] = field(converter=_types)
    ret_type: Type
    type_params: tuple[TypeVar, ...] = field(default=(), converter=_type_vars)
    type_constraints: tuple[Type, ...] = field(default=(), converter=_types)


@frozen
class TypeCall(Type):
    """An ADT applied to type arguments: `List[Tensor[(2), float32]]`."""

    func: GlobalTypeVar
    args: tuple[Type, ...] = field(default=(), converter=_types)


@frozen
class RefType(Type):
    """The type of a mutable reference cell holding a `value` type."""

    value: Type


@define(frozen=True, eq=False)
class IncompleteType(Type):
    """A hole, written `_`, that type inference fills; each one is distinct."""

    kind: str = "Type"


UNIT_TYPE = TupleType(())
