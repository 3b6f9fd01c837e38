"""`VMModel`: a program with control flow run by the VM, with the compiled model's API.

`backend.build.vm_compile` makes it (bytecode, native kernels, the target); `run` checks
the arguments against `@main`'s annotations (`bind_inputs`), runs the executor and hands
back arrays the caller owns. `stats` says which executor ran and what the last run did.
Like a compiled model, each model runs its kernels on its own thread count (`num_threads`,
the target's at first; `set_num_threads(n)` changes it without a rebuild), whatever other
models were built since.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from attrs import define, field, frozen

from ....lang.adt import Constructor, TypeData
from ....lang.diagnostics import Error, InputError
from ....lang.expr import Function
from ....lang.tuples import tuple_leaves
from ....lang.types import GlobalTypeVar
from ...pool_abi import MAX_THREADS
from ...target import Target
from .. import native
from ..native import NativeLibrary
from .bytecode import InvokeOp, VMProgram
from .executor import Executor


@frozen
class VMStats:
    """Figures of a VM model: the executor (`"vm"`), compile seconds per stage, kernels
    (and how many run in the interpreter), and what its last run did: native kernel calls,
    interpreted kernel or operator calls, function calls, fresh allocations of kernel
    outputs and outputs placed in a dead tensor's storage by the memory plan."""

    executor: str
    seconds: Mapping[str, float]
    kernels: int
    fallback_kernels: int
    native_calls: int
    interpreted_calls: int
    calls: int
    workspace_bytes: int = 0
    saved_bytes: int = 0
    allocations: int = 0
    reused: int = 0


@define
class VMModel:
    """A module compiled to VM bytecode calling native kernels; `run(**inputs)` runs it.

    `reason` says why the static (AOT) executor could not run the program;
    `type_definitions` are the module's ADTs (the constructors of `@main`'s ADT inputs);
    `saver` writes the artifact `save` makes."""

    program: VMProgram
    library: NativeLibrary | None
    main: Function
    target: Target
    reason: str = ""
    seconds: Mapping[str, float] = field(factory=dict)
    type_definitions: Mapping[GlobalTypeVar, TypeData] = field(factory=dict)
    saver: Callable[[VMModel, str | os.PathLike[str]], None] | None = None
    _executor: Executor = field(init=False)
    _threads: int = field(init=False)

    def __attrs_post_init__(self) -> None:
        self._executor = Executor(self.program, self.library)
        self._threads = min(self.target.num_threads, MAX_THREADS)

    @property
    def num_threads(self) -> int:
        """The most threads a run of this model uses (`set_num_threads`; at first the
        target's `-num-threads`)."""
        return self._threads

    def set_num_threads(self, n: int) -> None:
        """Run this model's kernels on at most `n` threads from now on, without a rebuild
        (other models keep their own counts), as `CompiledModel.set_num_threads` does: each
        parallel loop takes `min(n, its planned threads)`."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputError(f"the number of threads must be an integer of at least 1, got {n!r}")
        self._threads = min(n, MAX_THREADS)

    @property
    def native(self) -> bool:
        """Whether every kernel runs as native code (the control flow in the VM's loop):
        no kernel is interpreted and no operator runs outside a kernel."""
        return all(k.fallback is None for k in self.program.kernels) and not any(
            isinstance(ins, InvokeOp) for fn in self.program.functions for ins in fn.code
        )

    @property
    def input_names(self) -> tuple[str, ...]:
        """`@main`'s parameter names, in order."""
        return tuple(p.name_hint for p in self.main.params)

    @property
    def stats(self) -> VMStats:
        """The executor, the kernels and the counts of the last run."""
        last = self._executor.last
        kernels = self.program.kernels
        return VMStats(
            "vm",
            dict(self.seconds),
            len(kernels),
            sum(k.fallback is not None for k in kernels),
            last.native_calls,
            last.interpreted_calls,
            last.calls,
            allocations=last.allocations,
            reused=last.reused,
        )

    def run(self, *args: Any, out: Any = None, **inputs: Any) -> Any:
        """Run `@main` on inputs given by position or by parameter name: numpy arrays, any
        CPU tensor with `__dlpack__`, tuples, ADT values. Tensors of the result are arrays
        the caller owns. `out` (keyword only) receives the result instead, as in
        `CompiledModel.run`; when `@main` has a parameter named `out`, `out=` is that
        input."""
        from .. import dlpack
        from ..inputs import bind_inputs

        args, inputs, out = dlpack.import_arguments(self.input_names, args, inputs, out)
        values = bind_inputs(self.main, args, inputs, "@main")
        before = native.set_call_threads(self._threads)
        try:
            result = self._executor.run(values)
        finally:
            native.set_call_threads(before)
        given = [v for value in values for v in tuple_leaves(value) if isinstance(v, np.ndarray)]
        return dlpack.deliver(dlpack.owned_result(result, given), out)

    def constructor(self, name: str) -> Constructor:
        """The constructor called `name` of the model's ADTs (to build ADT inputs)."""
        for data in self.type_definitions.values():
            found = data.constructor(name)
            if found is not None:
                return found
        raise Error(f"the model has no constructor `{name}`")

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model to `path` (a VM artifact that `relay.load` reads back)."""
        if self.saver is None:
            raise Error(f"cannot save {os.fspath(path)}: this VM model has no artifact writer")
        self.saver(self, path)


__all__ = ["VMModel", "VMStats"]
