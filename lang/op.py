"""Operators: one object per operator name, and the table of declared operators.

An `Op` is the declaration facet of an operator: its name, its arity, its attribute
schema and its fusion pattern kind. The other facets (type relation, reference
implementation, compute, layout and quantization rules) live in tables keyed by the `Op`
object, in the layer that uses them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from attrs import define, field

from .attrs import Attrs, AttrsSchema
from .diagnostics import AttrsError
from .expr import Expr
from .span import Span


class OpPattern(enum.IntEnum):
    """How an operator's output indexes its inputs; fusion decides with it."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


def _strs(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(items)


@define(frozen=True, eq=False, slots=True)
class Op(Expr):
    """A primitive operator (`nn.conv2d`); there is exactly one object per name."""

    name: str
    num_inputs: int
    """Number of positional arguments; -1 for variadic."""
    attrs_schema: AttrsSchema | None
    pattern: OpPattern
    arg_names: tuple[str, ...] = field(default=(), converter=_strs)
    description: str = ""
    span: Span | None = field(default=None, kw_only=True, repr=False)

    def make_attrs(self, **values: object) -> Attrs | None:
        """Checked attributes for a call of this operator (None if it takes none)."""
        if self.attrs_schema is None:
            if values:
                key = next(iter(values))
                raise AttrsError(f"operator `{self.name}` takes no attributes, got `{key}`")
            return None
        return self.attrs_schema.make(**values)

    def __repr__(self) -> str:
        return f"Op({self.name})"


_REGISTRY: dict[str, Op] = {}


def register_op(
    name: str,
    num_inputs: int,
    pattern: OpPattern,
    attrs_schema: AttrsSchema | None = None,
    arg_names: tuple[str, ...] = (),
    description: str = "",
) -> Op:
    """Declare an operator; declaring a name twice is an error."""
    if name in _REGISTRY:
        raise ValueError(f"operator `{name}` is already declared")
    op = Op(name, num_inputs, attrs_schema, pattern, arg_names, description)
    _REGISTRY[name] = op
    return op


def get_op(name: str) -> Op:
    """The operator called `name`; AttrsError naming it if there is none."""
    op = _REGISTRY.get(name)
    if op is None:
        raise AttrsError(f"unknown operator `{name}`")
    return op


def lookup_op(name: str) -> Op | None:
    """The operator called `name`, or None."""
    return _REGISTRY.get(name)


def all_ops() -> list[Op]:
    """Every declared operator, in declaration order."""
    return list(_REGISTRY.values())
