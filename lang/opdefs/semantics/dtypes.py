"""The limits of each dtype: TVM's `min_value` and `max_value` (finite values)."""

from __future__ import annotations

import numpy as np

from ...dtype import numpy_dtype

Scalar = bool | int | float


def _limits(dtype: str) -> tuple[Scalar, Scalar]:
    np_dtype = numpy_dtype(dtype)
    if np_dtype == np.bool_:
        return False, True
    info = np.iinfo(np_dtype) if np_dtype.kind in "iu" else np.finfo(np_dtype)
    kind = int if np_dtype.kind in "iu" else float
    return kind(info.min), kind(info.max)


def lowest(dtype: str) -> Scalar:
    """The lowest finite value of `dtype` (the max-pool padding, the identity of `max`)."""
    return _limits(dtype)[0]


def highest(dtype: str) -> Scalar:
    """The highest finite value of `dtype` (the identity of `min`)."""
    return _limits(dtype)[1]
