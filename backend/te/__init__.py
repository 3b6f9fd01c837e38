"""Tensor expressions (TE): what each element of a tensor is (`tensor`), and how the loops
that compute it run (`schedule`, added by the schedule module)."""

from .tensor import (
    ComputeOp,
    ExternOp,
    Operation,
    PlaceholderOp,
    ProducerLoad,
    Tensor,
    comm_reducer,
    compute,
    extern,
    max_reduce,
    min_reduce,
    placeholder,
    prod,
    reduce_axis,
    sum_,
)  # fmt: skip

__all__ = [
    "ComputeOp", "ExternOp", "Operation", "PlaceholderOp", "ProducerLoad", "Tensor",
    "comm_reducer", "compute", "extern", "max_reduce", "min_reduce", "placeholder", "prod",
    "reduce_axis", "sum_",
]  # fmt: skip
