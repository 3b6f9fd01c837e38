"""Call generators of the annotations (`on_device`, `device_copy`, `debug`)."""

from __future__ import annotations

from ...lang.op import Op
from ...lang.optable import OpTable
from ...lang.types import TensorType
from .core import Generator, OpCall, Tape, _call, _input

GENERATORS: OpTable[Generator] = OpTable("test generator")
"""The call generators of this family (`typed_ops.GENERATORS` joins the families)."""


@GENERATORS.register("on_device", "device_copy", "debug")
def _device(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x)
    if x is None:
        return None
    if op.name == "on_device":
        return _call(op, [x], virtual_device=t.pick((None, 1)), constrain_result=t.maybe(3))
    if op.name == "device_copy":
        return _call(op, [x], src_virtual_device=1, dst_virtual_device=2)
    return _call(op, [x], debug_func=None)
