"""What a compiled model executes: tensor slots, kernel steps, the result tree, and where
each intermediate tensor lives in the workspace.

These are plain values. `backend.build` makes them (`plan_graph` from a fused `@main`,
`plan_memory` from the steps' buffer lifetimes) and saves them in artifacts;
`CompiledModel` only reads them.
"""

from __future__ import annotations

import math
from typing import Union

import numpy as np
from attrs import frozen

from ...lang.dtype import numpy_dtype
from ...lang.expr import Function
from ...lang.tuples import tuple_leaves


@frozen
class Slot:
    """A tensor value of the plan: its static shape and dtype, and where it comes from:
    `input` (parameter `index` of `@main`), `constant` (constant `index`) or `kernel`."""

    shape: tuple[int, ...]
    dtype: str
    kind: str
    index: int = -1

    @property
    def nbytes(self) -> int:
        """Bytes of the tensor (bool takes one byte per element), exact: a Python integer
        that never wraps, however large the shape."""
        return tensor_nbytes(self.shape, self.dtype)


def tensor_nbytes(shape: tuple[int, ...], dtype: str) -> int:
    """Bytes of a tensor of `shape` and `dtype`, computed without overflow."""
    return math.prod(shape) * numpy_dtype(dtype).itemsize


@frozen
class KernelStep:
    """Run kernel `kernel` on slots `inputs`, writing slots `outputs`."""

    kernel: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


OutputTree = Union[int, tuple["OutputTree", ...]]  # noqa: UP007


@frozen
class GraphPlan:
    """Slots, the distinct primitive functions, the steps in order, `@main`'s parameter
    names/types and the result as a tree of slot indices. (`kernels` and `constants` are
    what the build compiles; a plan loaded from an artifact has none.)"""

    slots: tuple[Slot, ...]
    kernels: tuple[Function, ...]
    constants: tuple[np.ndarray, ...]
    steps: tuple[KernelStep, ...]
    input_names: tuple[str, ...]
    input_slots: tuple[int, ...]
    output: OutputTree


def flatten_tree(tree: OutputTree) -> list[int]:
    """The slot indices of a (nested tuple) tree, depth first."""
    return tuple_leaves(tree)


@frozen
class MemoryPlan:
    """Where each planned buffer lives: `offsets[i]` in a workspace of `workspace_bytes`;
    `naive_bytes` is what separate allocations would take."""

    offsets: tuple[int, ...]
    workspace_bytes: int
    naive_bytes: int

    @property
    def saved_bytes(self) -> int:
        """Bytes saved by sharing memory between buffers whose lifetimes do not overlap."""
        return self.naive_bytes - self.workspace_bytes


__all__ = [
    "GraphPlan",
    "KernelStep",
    "MemoryPlan",
    "OutputTree",
    "Slot",
    "flatten_tree",
    "tensor_nbytes",
]
