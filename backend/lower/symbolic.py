"""Symbolic dimensions of Relay types as loop-IR variables (dynamic-shape kernels).

A dynamic-shape kernel is lowered from types whose dimensions are integers or `ShapeVar`s
(`backend.lower.dynamic`). Its compute definitions see each `ShapeVar` as one `int64`
loop-IR variable, the same object every time (`dim_expr`), so the loop extents and buffer
shapes of every stage that depends on the dimension use that variable; the kernel reads its
value at run time.
"""

from __future__ import annotations

import weakref

from ...lang.types import AnyDim, Dim, ShapeVar
from ..tir.dtypes import INDEX_DTYPE
from ..tir.expr import PrimExpr, Var

_VARIABLES: weakref.WeakKeyDictionary[ShapeVar, Var] = weakref.WeakKeyDictionary()


def shape_variable(dim: ShapeVar) -> Var:
    """The loop-IR variable standing for `dim` (one per `ShapeVar`, made on first use)."""
    found = _VARIABLES.get(dim)
    if found is None:
        found = _VARIABLES[dim] = Var(dim.name_hint, INDEX_DTYPE)
    return found


def dim_expr(dim: Dim) -> int | PrimExpr:
    """A dimension as compute definitions use it: an `int`, or the variable of a
    `ShapeVar`. A `?` dimension has no value a kernel could use: `ValueError`."""
    if isinstance(dim, ShapeVar):
        return shape_variable(dim)
    if isinstance(dim, AnyDim):
        raise ValueError("a dimension `?` has no value a kernel can compute with")
    return int(dim)


__all__ = ["dim_expr", "shape_variable"]
