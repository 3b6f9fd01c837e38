"""Reference implementations of annotations, device placement and debugging hooks.

All are identities at run time: they return their argument (a tensor or a tuple) as it is.
`debug` does not call its hook (nothing in a program is ever run as Python).
"""

from __future__ import annotations

from ....lang.attrs import Attrs
from ....lang.optable import OpTable
from ..values import Value
from . import Impl

IMPLS: OpTable[Impl] = OpTable("reference implementation")
"""The reference implementations of this family (`op_impls.IMPLS` joins them)."""


@IMPLS.register(
    "annotation.stop_fusion",
    "annotation.checkpoint",
    "on_device",
    "device_copy",
    "debug",
)
def identity(args: list[Value], attrs: Attrs | None) -> Value:
    """The argument, unchanged."""
    (value,) = args
    return value
