"""Call generators of the reductions (`sum`, `mean`, ..., `argmax`, `variance`)."""

from __future__ import annotations

from typing import Any

from ...lang.op import Op
from ...lang.optable import OpTable
from ...lang.types import TensorType
from .core import Generator, OpCall, Tape, _call, _input, _shape

GENERATORS: OpTable[Generator] = OpTable("test generator")
"""The call generators of this family (`typed_ops.GENERATORS` joins the families)."""


def _reduce_axes(t: Tape, ndim: int) -> tuple[list[int] | None, bool, set[int]]:
    """An `axis` attribute, `exclude`, and the set of axes they reduce."""
    exclude = t.maybe(2)
    if ndim == 0 or not t.maybe(7):
        return None, exclude, set(range(ndim))
    picked = [a for a in range(ndim) if t.maybe(5)]
    axis = [a - ndim if t.maybe(3) else a for a in picked]
    if not picked:
        return axis, exclude, set(range(ndim))
    reduced = {a for a in range(ndim) if (a not in picked) == exclude}
    return axis, exclude, reduced


@GENERATORS.register("sum", "mean", "max", "min", "prod", "all", "any", "argmax", "argmin")
def _reduce(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    kinds = "b" if op.name in ("all", "any") else "fi"
    ranks = (2, 1, 3, 4) if op.name.startswith("arg") else (2, 1, 3, 0, 4)
    x = _input(t, x, ranks=ranks, kinds=kinds)
    if x is None:
        return None
    axis, exclude, _ = _reduce_axes(t, x.ndim)
    attrs: dict[str, Any] = {"axis": axis, "keepdims": t.maybe(4), "exclude": exclude}
    if op.name.startswith("arg"):
        attrs["select_last_index"] = t.maybe(3)
    return _call(op, [x], **attrs)


@GENERATORS.register("variance")
def _variance(t: Tape, op: Op, x: TensorType | None) -> OpCall | None:
    x = _input(t, x, ranks=(2, 1, 3, 4), kinds="f")
    if x is None:
        return None
    axis, exclude, reduced = _reduce_axes(t, x.ndim)
    mean = TensorType(tuple(1 if i in reduced else d for i, d in enumerate(_shape(x))), x.dtype)
    return _call(
        op, [x, mean], axis=axis, keepdims=t.maybe(4), exclude=exclude, unbiased=t.maybe(3)
    )
