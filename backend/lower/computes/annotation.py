"""Compute definitions of annotations, device placement and debugging hooks
(`annotation.stop_fusion`, `annotation.checkpoint`, `on_device`, `device_copy`, `debug`).

All are identities at run time: each input tensor (each field, when the argument is a
tuple) is copied elementwise into one output.
"""

from __future__ import annotations

from ....lang.attrs import Attrs
from ....lang.optable import OpTable
from ....lang.types import Type
from ...te.tensor import Tensor
from . import ComputeFn
from .nn import identity_like

COMPUTES: OpTable[ComputeFn] = OpTable("compute definition")
"""The compute definitions of this family (`computes.COMPUTES` joins the families)."""


@COMPUTES.register(
    "annotation.stop_fusion",
    "annotation.checkpoint",
    "on_device",
    "device_copy",
    "debug",
)
def identity(attrs: Attrs | None, inputs: list[Tensor], out_type: Type) -> list[Tensor]:
    """A copy of each input."""
    return [
        identity_like(x, f"copy{k}" if len(inputs) > 1 else "copy") for k, x in enumerate(inputs)
    ]
