"""Passes over loop-IR kernels, each a function `PrimFunc -> PrimFunc` in its own module, and
`lower_pipeline`, which runs them in the order code generation expects."""

from __future__ import annotations

from ..analysis import verify
from ..stmt import PrimFunc
from .flatten import flatten
from .loop_partition import loop_partition
from .simplify import simplify
from .storage_reuse import storage_reuse
from .unroll import unroll, unroll_in_llvm
from .vectorize import vectorize

PIPELINE = (flatten, simplify, loop_partition, vectorize, unroll_in_llvm, storage_reuse, simplify)
"""The passes of `lower_pipeline`, in order."""


def lower_pipeline(func: PrimFunc, check: bool = True) -> PrimFunc:
    """`func` (multi-dimensional accesses, any loop kinds) lowered to what code generation
    accepts: flat accesses, vector expressions, SERIAL/PARALLEL loops and UNROLLED ones of
    a constant extent (which LLVM unrolls), constant-size allocations that share memory
    where lifetimes allow. Runs flatten, simplify, loop partition, vectorize, unroll (in
    LLVM: `unroll_in_llvm`), storage reuse and simplify, then `verify` (unless
    `check=False`)."""
    for p in PIPELINE:
        func = p(func)
    if check:
        verify(func)
    return func


__all__ = [
    "PIPELINE",
    "flatten",
    "loop_partition",
    "lower_pipeline",
    "simplify",
    "storage_reuse",
    "unroll",
    "unroll_in_llvm",
    "vectorize",
]
