"""Type relations of annotations, device placement and debugging hooks.

All of them are identities on their value (of any type, tensors or not): the result has
exactly the argument's type, even while that type is still unknown, so that what is
learnt about one side flows to the other (TVM's `IdentityRel`).
"""

from __future__ import annotations

from ...lang.attrs import Attrs
from ...lang.optable import OpTable
from ...lang.types import Type
from . import Relation, RelationContext

RELATIONS: OpTable[Relation] = OpTable("type relation")
"""The type relations of this family (`relations.RELATIONS` joins the families)."""

IDENTITIES = (
    "annotation.stop_fusion",
    "annotation.checkpoint",
    "on_device",
    "device_copy",
    "debug",
)


@RELATIONS.register(*IDENTITIES)
def identity_rel(args: list[Type], attrs: Attrs | None, ctx: RelationContext) -> Type | None:
    """The argument's type, unchanged (possibly a hole that is unified with the result)."""
    return args[0]
