"""Buffer flattening: every multi-dimensional access becomes one row-major flat index.

Each buffer of rank > 1 (parameter or allocation) is replaced in the body by a one-dimensional
`flat_view` sharing its memory; `func.params` keep their full shapes (the executor checks
arguments against them). `A[i, j]` on a `4x8` buffer becomes `A[i*8 + j]`. Accesses that are
already flat (one index) only switch to the view. A vector index in the last dimension stays a
vector (the other indices are broadcast).
"""

from __future__ import annotations

from typing import Any

import attrs

from ..arith import simplify
from ..buffer import Buffer, flat_view
from ..dtypes import lanes_of
from ..expr import Broadcast, BufferLoad, Mul, PrimExpr, const
from ..stmt import Allocate, BufferStore, PrimFunc
from ..visitor import rewrite_expr


def _size(buffer: Buffer) -> PrimExpr:
    size: PrimExpr = const(1)
    for d in buffer.shape:
        size = Mul(size, d)
    return simplify(size)


def flat_index(buffer: Buffer, indices: tuple[PrimExpr, ...]) -> PrimExpr:
    """The row-major flat index of `buffer[indices]` (one index per dimension; a 0-d buffer
    has the single element 0)."""
    if not indices:
        return const(0)
    lanes = max(lanes_of(i.dtype) for i in indices)
    strides: list[PrimExpr] = []
    stride: PrimExpr = const(1)
    for d in reversed(buffer.shape):
        strides.append(stride)
        stride = simplify(Mul(stride, d))
    strides.reverse()
    total: PrimExpr | None = None
    for idx, st in zip(indices, strides):
        if lanes > 1:
            if lanes_of(idx.dtype) == 1:
                idx = Broadcast(idx, lanes)
            st = Broadcast(st, lanes)
        term = idx * st
        total = term if total is None else total + term
    assert total is not None
    return simplify(total)


class _Flattener:
    def __init__(self) -> None:
        self.views: dict[int, Buffer] = {}
        self.keep: list[Buffer] = []

    def view(self, buffer: Buffer) -> Buffer:
        got = self.views.get(id(buffer))
        if got is None:
            got = buffer if buffer.ndim == 1 else flat_view(buffer, _size(buffer))
            self.views[id(buffer)] = got
            self.keep.append(buffer)
        return got

    def __call__(self, node: Any) -> Any:
        if isinstance(node, (BufferLoad, BufferStore)):
            buf = node.buffer
            if buf.ndim == 1:
                return None
            view = self.view(buf)
            indices = node.indices
            if len(indices) == buf.ndim:
                indices = (flat_index(buf, indices),)
            return attrs.evolve(node, buffer=view, indices=indices)
        if isinstance(node, Allocate) and node.buffer.ndim != 1:
            return Allocate(self.view(node.buffer), node.body)
        return None


def flatten(func: PrimFunc) -> PrimFunc:
    """`func` with one flat index per buffer access (params keep their shapes)."""
    body = rewrite_expr(func.body, _Flattener())
    return func if body is func.body else attrs.evolve(func, body=body)


__all__ = ["flat_index", "flatten"]
