"""How a compiled model enters its native code through the thread pool (shared by the pool in
`backend.codegen.threadpool`, which defines the functions, and `backend.runtime.compiled`,
which calls them; neither layer imports the other).

    void __relay_pool_enter(i64* block)

calls the model's entry function `block[FUNCTION]` with the arguments in
`block[ARGUMENTS]` (input table, output table, parameter table, workspace) and, when
`block[STAMPS]` is not 0, that stamps pointer too (the profiling entry), with the call's
thread count `block[THREADS]` in force on the calling thread: every parallel loop the call
reaches uses at most that many threads (and at most its plan's). The thread count is
thread-specific, so calls of models with different counts may run side by side.

    i32 __relay_pool_enter_arrays(i64* block, i8* first_input, i8* first_output)

is the same call from array objects: the input and output tables hold the addresses of
the arrays' objects (the first of each given as an argument instead, when there is one),
each turned into its data pointer by loading the pointer at `block[OBJECT_DATA]` bytes into
the object (CPython's numpy keeps it there; the caller checks that first). When an input's
data is not aligned as `block[ALIGN]` says (a table of `block[INPUTS]` masks, the element
size minus one) nothing runs and it returns 1; otherwise 0.

A model keeps its input and output pointer tables right after the `HEADER` words.
"""

from __future__ import annotations

ENTER = "__relay_pool_enter"
ENTER_ARRAYS = "__relay_pool_enter_arrays"
FUNCTION = 0
THREADS = 1
ARGUMENTS = (2, 3, 4, 5)
STAMPS = 6
INPUTS = 7
OUTPUTS = 8
ALIGN = 9
OBJECT_DATA = 10
HEADER = 12
"""Words of the block before the model's pointer tables."""

MAX_THREADS = 256
"""The most threads a parallel loop can use (the caller and 255 workers)."""

SET_CALL_THREADS = "__relay_pool_set_call_threads"
"""`i64 __relay_pool_set_call_threads(i64 n)`: the same limit set for the calling thread
alone (0: none), for a model stepping through its kernels; returns the one before."""

BIND_ENV = "RELAY_BIND_THREADS"
"""`RELAY_BIND_THREADS=1` pins the pool's workers to CPUs when the pool starts."""

SPIN_ENV = "RELAY_SPIN_NS"
"""`RELAY_SPIN_NS=N` sets how long idle workers spin (nanoseconds) before they sleep, when the
pool starts."""

__all__ = [
    "ALIGN",
    "ARGUMENTS",
    "BIND_ENV",
    "ENTER",
    "ENTER_ARRAYS",
    "FUNCTION",
    "HEADER",
    "INPUTS",
    "MAX_THREADS",
    "OBJECT_DATA",
    "OUTPUTS",
    "SET_CALL_THREADS",
    "SPIN_ENV",
    "STAMPS",
    "THREADS",
]
