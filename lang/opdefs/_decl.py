"""Small helpers that keep the operator tables in this package short and data-like.

A table row is `(name, inputs, pattern, schema, description)`: `inputs` is a string of
space-separated argument names (its length is the operator's arity; an operator that takes
a tuple, like `concatenate`, has one input). Field helpers spell TVM's three kinds of
attribute fields: with a C++ default (`attr`), required (no default) and nullable
(default null).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..attrs import REQUIRED, AttrField, AttrsSchema, Kind
from ..op import Op, OpPattern, register_op

ELEMWISE = OpPattern.ELEMWISE
BROADCAST = OpPattern.BROADCAST
INJECTIVE = OpPattern.INJECTIVE
COMM_REDUCE = OpPattern.COMM_REDUCE
OUT_ELEMWISE_FUSABLE = OpPattern.OUT_ELEMWISE_FUSABLE
OPAQUE = OpPattern.OPAQUE

_KIND_OF_DEFAULT = {
    bool: Kind.BOOL,
    int: Kind.INT,
    float: Kind.FLOAT,
    str: Kind.STR,
    tuple: Kind.INTS,
}

Row = tuple[str, str, OpPattern, AttrsSchema | None, str]
"""One operator: name, input names, fusion pattern, attribute schema, description."""


def schema(name: str, *fields: AttrField) -> AttrsSchema:
    """The attribute type `name` (TVM's struct name, e.g. `Conv2DAttrs`) with `fields`."""
    return AttrsSchema(name, fields)  # type: ignore[arg-type]  # attrs converter


def attr(name: str, default: bool | int | float | str | tuple[int, ...]) -> AttrField:
    """A field with a C++ default; its kind follows the default (2 is INT, 2.0 is FLOAT)."""
    return AttrField(name, _KIND_OF_DEFAULT[type(default)], default)


def required(name: str, kind: Kind, *, nullable: bool = False) -> AttrField:
    """A field without a C++ default; `nullable` when TVM also accepts null (`None`)."""
    return AttrField(name, kind, REQUIRED, optional=nullable)


def nullable(name: str, kind: Kind, default: object = None) -> AttrField:
    """A field that may be null (`None`); its C++ default is null unless given."""
    return AttrField(name, kind, default, optional=True)


def dtype_field(name: str = "dtype") -> AttrField:
    """A DataType field whose default is the null dtype ("", also given as None).

    A null dtype means "the same as the input" (or the operator's own choice).
    """
    return AttrField(name, Kind.DTYPE, "", optional=True)


def declare(rows: Iterable[Row]) -> list[Op]:
    """Register every operator of a table."""
    return [
        register_op(name, len(inputs.split()), pattern, attrs, tuple(inputs.split()), doc)
        for name, inputs, pattern, attrs, doc in rows
    ]


def declare_family(
    inputs: str,
    pattern: OpPattern,
    attrs: AttrsSchema | None,
    descriptions: Mapping[str, str],
) -> list[Op]:
    """Register operators that share inputs, pattern and schema; `descriptions` maps names."""
    return declare((name, inputs, pattern, attrs, doc) for name, doc in descriptions.items())
