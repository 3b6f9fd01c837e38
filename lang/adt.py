"""Algebraic data types: constructors (which are also expressions) and ADT definitions."""

from __future__ import annotations

from collections.abc import Iterable

from attrs import define, field, frozen

from .expr import Expr
from .span import Span
from .types import GlobalTypeVar, Type, TypeVar, _type_vars, _types


@define(frozen=True, eq=False, slots=True)
class Constructor(Expr):
    """A constructor of an ADT (`Cons`); also usable as an expression (the callee).

    Compared by identity. `inputs` may mention the type parameters of the ADT.
    """

    name_hint: str
    inputs: tuple[Type, ...] = field(converter=_types)
    belong_to: GlobalTypeVar
    tag: int = 0
    span: Span | None = field(default=None, kw_only=True, repr=False)


def _constructors(items: Iterable[Constructor]) -> tuple[Constructor, ...]:
    return tuple(items)


@frozen
class TypeData:
    """An ADT definition: `type List[A] { Cons(A, List[A]), Nil }`."""

    header: GlobalTypeVar
    type_vars: tuple[TypeVar, ...] = field(converter=_type_vars)
    constructors: tuple[Constructor, ...] = field(converter=_constructors)
    span: Span | None = field(default=None, kw_only=True, eq=False, repr=False)

    def constructor(self, name: str) -> Constructor | None:
        """The constructor called `name`, if any."""
        for ctor in self.constructors:
            if ctor.name_hint == name:
                return ctor
        return None
