"""Tensor expressions (TE): what each element of a tensor is (`tensor`), and how the loops
that compute it run (`schedule`), recorded as a replayable `trace`, and `lower`ing a schedule
to a loop-IR kernel (bound inference in `bound`)."""

from .errors import ScheduleError
from .lower import lower, lower_default
from .schedule import Schedule, Stage, create_schedule
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
from .trace import ScheduleStep, Trace, replay

__all__ = [
    "ComputeOp", "ExternOp", "Operation", "PlaceholderOp", "ProducerLoad", "Schedule",
    "ScheduleError", "ScheduleStep", "Stage", "Tensor", "Trace", "comm_reducer", "compute",
    "create_schedule", "extern", "lower", "lower_default", "max_reduce", "min_reduce",
    "placeholder", "prod", "reduce_axis", "replay", "sum_",
]  # fmt: skip
