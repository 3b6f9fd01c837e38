"""The smallest and largest values of each dtype, as constants (identities of max/min)."""

from __future__ import annotations

import numpy as np

from ...lang.dtype import numpy_dtype
from ..tir.dtypes import is_bool, is_float
from ..tir.expr import PrimExpr, const


def min_value(dtype: str) -> PrimExpr:
    """The least value of `dtype` (`-inf` for floats, `false` for bool)."""
    if is_bool(dtype):
        return const(False, dtype)
    if is_float(dtype):
        return const(float("-inf"), dtype)
    return const(int(np.iinfo(numpy_dtype(dtype)).min), dtype)


def max_value(dtype: str) -> PrimExpr:
    """The greatest value of `dtype` (`inf` for floats, `true` for bool)."""
    if is_bool(dtype):
        return const(True, dtype)
    if is_float(dtype):
        return const(float("inf"), dtype)
    return const(int(np.iinfo(numpy_dtype(dtype)).max), dtype)
