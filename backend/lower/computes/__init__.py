"""The compute facet of operators: how one Relay operator call becomes TE tensors.

    COMPUTES = OpTable("compute definition")     # in a family module (nn.py)

    @COMPUTES.register("nn.relu")
    def relu(attrs, inputs, out_type):
        (x,) = inputs
        return [compute(x.shape, lambda *i: max_(x[i], const(0, x.dtype)), tag="elemwise")]

A compute definition receives the call's checked attributes (None for operators without
attributes), the input tensors (static integer shapes) and the call's checked Relay type (a
`TensorType`, or a `TupleType` for multi-output operators), and returns one tensor per output.
Each family module (elementwise, nn, conv, ...) fills a table of its own; `COMPUTES` joins
the families listed at the bottom (an `OpTable` keyed by the `Op` object, so a missing one
is a `MissingFacetError`). `apply_compute` runs a definition and records which operator made
each stage (`made_by`): the schedule of a kernel is chosen by operator, not by tag.

Definitions are target-independent in what they compute. One may pad a layout of its own
stages so that whole vectors of the target cover it (`vector_lanes`: the target the lowering
runs for, `lowering_for`); the results never depend on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeAlias
from weakref import WeakKeyDictionary

from ....lang.attrs import Attrs
from ....lang.op import Op
from ....lang.optable import OpTable
from ....lang.types import Type
from ...target import Target
from ...te.tensor import Operation, Tensor

ComputeFn: TypeAlias = Callable[[Attrs | None, list[Tensor], Type], list[Tensor]]
"""The signature of a compute definition."""


_LOWERING_TARGET: ContextVar[Target | None] = ContextVar("lowering_target", default=None)


@contextmanager
def lowering_for(target: Target | None) -> Iterator[None]:
    """Compute definitions applied inside see `target` through `vector_lanes` (None: the
    host)."""
    token = _LOWERING_TARGET.set(target)
    try:
        yield
    finally:
        _LOWERING_TARGET.reset(token)


def vector_lanes(dtype: str) -> int:
    """Elements of `dtype` in a vector register of the target being lowered for
    (`lowering_for`; the host outside one)."""
    return (_LOWERING_TARGET.get() or Target.host()).lanes(dtype)


def compute_for(op: Op) -> ComputeFn:
    """The compute definition of `op`; `MissingFacetError` naming the operator if it has none."""
    return COMPUTES.lookup(op)


def has_compute(op: Op) -> bool:
    """Whether `op` has a compute definition."""
    return op in COMPUTES


def apply_compute(
    op: Op, attrs: Attrs | None, inputs: list[Tensor], out_type: Type
) -> list[Tensor]:
    """The tensors of `op`'s compute definition on `inputs`; every stage the definition made
    remembers that `op` made it (`made_by`), so a schedule can be chosen by operator."""
    results = compute_for(op)(attrs, inputs, out_type)
    known = {id(t.op) for t in inputs}
    stack = [t.op for t in results]
    while stack:
        stage = stack.pop()
        if id(stage) in known:
            continue
        known.add(id(stage))
        _MADE_BY[stage] = op
        stack.extend(t.op for t in stage.input_tensors)
    return results


def made_by(stage: Operation) -> Op | None:
    """The operator whose compute definition made `stage` through `apply_compute` (None for
    stages made otherwise: placeholders, stages written by hand or by a schedule)."""
    return _MADE_BY.get(stage)


_MADE_BY: WeakKeyDictionary[Operation, Op] = WeakKeyDictionary()
"""Which operator made each live stage: the provenance `made_by` reads. Weak, so a stage's
entry goes with the stage."""


# The families, each with its own table; `COMPUTES` joins them (an operator in two is an error).
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
    winograd,
)

COMPUTES: OpTable[ComputeFn] = OpTable.merge(
    "compute definition",
    [
        algorithm.COMPUTES,
        annotation.COMPUTES,
        conv.COMPUTES,
        elementwise.COMPUTES,
        image.COMPUTES,
        index.COMPUTES,
        nn.COMPUTES,
        pool.COMPUTES,
        reduce.COMPUTES,
        transform.COMPUTES,
        winograd.COMPUTES,
    ],
)
"""The compute definition of each operator, keyed by the `Op` object."""
