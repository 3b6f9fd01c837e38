"""Declarations of every operator (name, arity, attribute schema, fusion pattern).

Importing this package registers the operators; one module per family. The other facets
of an operator (type relation, implementation, ...) live in the layers that use them;
what an attribute *means* (axes, reshape's special values, layouts, padding, strided-slice
indices, dtype limits, resize coordinates, Winograd matrices) is written once in the
`semantics` subpackage, which every facet calls.
"""

from __future__ import annotations

from ..attrs import AttrsSchema
from ..op import all_ops
from . import (  # noqa: F401  (each module declares its family)
    algorithm,
    annotation,
    conv,
    image,
    index,
    nn,
    pool,
    reduce,
    tensor,
    transform,
)


def attrs_schemas() -> dict[str, AttrsSchema]:
    """Every attribute schema used by a declared operator, by its TVM name (`Conv2DAttrs`)."""
    return {op.attrs_schema.name: op.attrs_schema for op in all_ops() if op.attrs_schema}


def find_attrs_schema(type_key: str) -> AttrsSchema | None:
    """The schema named `type_key`, spelled `Conv2DAttrs` or `relay.attrs.Conv2DAttrs`."""
    return attrs_schemas().get(type_key.removeprefix("relay.attrs."))
