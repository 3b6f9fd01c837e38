"""The compute facet of operators: how one Relay operator call becomes TE tensors.

    @register_compute("nn.relu")
    def relu(attrs, inputs, out_type):
        (x,) = inputs
        return [compute(x.shape, lambda *i: max_(x[i], const(0, x.dtype)), tag="elemwise")]

A compute definition receives the call's checked attributes (None for operators without
attributes), the input tensors (static integer shapes) and the call's checked Relay type (a
`TensorType`, or a `TupleType` for multi-output operators), and returns one tensor per output.
The table is keyed by the `Op` object; the family modules imported at the bottom fill it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from ....lang.attrs import Attrs
from ....lang.op import Op, get_op
from ....lang.types import Type
from ...te.tensor import Tensor

ComputeFn: TypeAlias = Callable[[Attrs | None, list[Tensor], Type], list[Tensor]]
"""The signature of a compute definition."""

COMPUTES: dict[Op, ComputeFn] = {}
"""The compute definition of each operator, keyed by the `Op` object."""


def register_compute(*names: str | Op) -> Callable[[ComputeFn], ComputeFn]:
    """Decorator: make the function the compute definition of the operators `names`.
    Registering an operator twice is a `ValueError`; the function is returned unchanged."""

    def register(fn: ComputeFn) -> ComputeFn:
        for name in names:
            op = get_op(name) if isinstance(name, str) else name
            if op in COMPUTES:
                raise ValueError(f"operator `{op.name}` already has a compute definition")
            COMPUTES[op] = fn
        return fn

    return register


def compute_for(op: Op) -> ComputeFn:
    """The compute definition of `op`; `KeyError` naming the operator if it has none."""
    fn = COMPUTES.get(op)
    if fn is None:
        raise KeyError(f"operator `{op.name}` has no compute definition")
    return fn


def has_compute(op: Op) -> bool:
    """Whether `op` has a compute definition."""
    return op in COMPUTES


from . import (  # noqa: E402, F401  (each module registers its compute definitions)
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
