"""Operator type relations: the typecheck facet of every operator, keyed by the `Op` object.

A *relation* computes the type of an operator call's result from the types of its
arguments and its attributes. It is a plain function

    rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None

* `args` are the argument types, resolved as far as currently known. Any of them may
  still be an `IncompleteType` (not known yet), and tensor shapes may contain `ANY`
  (`?`, known only at run time) or `ShapeVar`s (symbolic sizes).
* Return the result type, or `None` when more must be known first: the solver calls the
  relation again whenever a hole or shape variable in its arguments gets bound. When
  nothing else can move, it is called once more with `ctx.final` set: then decide (return
  a type or raise), or return `None` to give up (the checker reports what is unknown).
* Raise `RelationError(message)` for invalid input. Write the message in terms of the
  program; the checker reports it at the call's span, prefixed with the operator name
  (unless the message already starts with it), e.g.
  "nn.dense: the input has 784 features but the weight (10, 512) expects 512".
* A relation may constrain an argument by the others with `ctx.unify(args[i], t)` (it
  raises `RelationError` if they cannot agree), make a fresh unknown with `ctx.fresh()`,
  and re-read a type after unifying with `ctx.resolve(t)`.

Each family module (elementwise, nn, conv, ...) holds a table of its own and registers one
function for several operators with its decorator (names must be declared operators):

    RELATIONS: OpTable[Relation] = OpTable("type relation")   # once per family module

    @RELATIONS.register("nn.relu", "nn.leaky_relu")
    def _same_as_input(args, attrs, ctx):
        data = tensor_arg(args[0], "the input")
        return data  # None while the input type is unknown

Families whose relations use the dimension arithmetic of `shapes` (which may have to wait
for a shape variable) register with `shape_relation = shapes.shape_relations(RELATIONS)`:

    @shape_relation("nn.batch_flatten")
    def _batch_flatten(args, attrs, ctx):
        data = tensor_arg(args[0], "the input")
        if data is None:
            return None
        if data.ndim < 1:
            raise RelationError("the input must have at least one dimension")
        ...
        return TensorType((data.shape[0], rest), data.dtype)

`RELATIONS` joins the family tables listed at the bottom of this file (an `OpTable`);
`relation_for(op)` returns the relation or raises `MissingFacetError` naming the operator
and the missing facet.

This module imports only `relay.lang` and the small `typecheck.show`, so a family module
(or anything else) can import it cheaply.
"""

from __future__ import annotations

from collections.abc import Callable

from ...lang.attrs import Attrs
from ...lang.diagnostics import TypeCheckError
from ...lang.op import Op, all_ops
from ...lang.optable import OpTable
from ...lang.types import IncompleteType, TensorType, Type
from ..show import type_text


class RelationError(TypeCheckError):
    """A relation found its arguments or attributes invalid; the message says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class RelationContext:
    """What a relation may ask of the solver while it runs (one context per call site)."""

    op: Op
    """The operator whose call is being typed."""
    final: bool
    """True on the last attempt: nothing else is going to become known."""

    def unify(self, lhs: Type, rhs: Type) -> None:
        """Make `lhs` and `rhs` equal; `RelationError` if they cannot be."""
        raise NotImplementedError

    def fresh(self) -> IncompleteType:
        """A new unknown type."""
        raise NotImplementedError

    def resolve(self, t: Type) -> Type:
        """`t` with everything known so far filled in."""
        raise NotImplementedError


Relation = Callable[[list[Type], Attrs | None, RelationContext], Type | None]
"""The signature of a type relation (see the module docstring)."""


def relation_for(op: Op) -> Relation:
    """The relation of `op`; `MissingFacetError` naming the operator if it has none."""
    return RELATIONS.lookup(op)


def missing_relations() -> list[Op]:
    """Declared operators without a type relation (for the facet-coverage test)."""
    return RELATIONS.missing(all_ops())


def tensor_arg(t: Type, what: str) -> TensorType | None:
    """`t` as a tensor type; None while unknown; `RelationError` if it is something else.

    `what` names the argument in the message ("the input", "the weight", "argument 2").
    """
    if isinstance(t, TensorType):
        return t
    if isinstance(t, IncompleteType):
        return None
    raise RelationError(f"{what} must be a tensor, but it has type `{type_text(t)}`")


def attr(attrs: Attrs | None, name: str) -> object:
    """The attribute `name` of a call; `RelationError` if the call has no such attribute."""
    if attrs is None:
        raise RelationError(f"missing attribute `{name}`")
    try:
        return getattr(attrs, name)
    except AttributeError:
        raise RelationError(f"missing attribute `{name}`") from None


# The families, each with its own table; `RELATIONS` joins them (an operator in two is an
# error). Imported last: they use the helpers above.
from . import (  # noqa: E402
    algorithm,
    annotation,
    conv,
    elementwise,
    image,
    index,
    nn,
    pool,
    reduce,
    transform,
)

RELATIONS: OpTable[Relation] = OpTable.merge(
    "type relation",
    [
        algorithm.RELATIONS,
        annotation.RELATIONS,
        conv.RELATIONS,
        elementwise.RELATIONS,
        image.RELATIONS,
        index.RELATIONS,
        nn.RELATIONS,
        pool.RELATIONS,
        reduce.RELATIONS,
        transform.RELATIONS,
    ],
)
"""The type relation of each operator, keyed by the `Op` object."""
