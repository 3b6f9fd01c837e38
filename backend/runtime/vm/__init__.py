"""The VM: runs programs with control flow, closures, ADTs and references, calling the
same native kernels as compiled models (`backend.build.vm_compile` makes them).

* `bytecode`: the instructions (a register machine, one frame per call), `VMFunction`,
  `VMKernel`, `VMProgram`.
* `executor`: `Executor`, one loop with an explicit frame stack; `VMClosure`.
* `memory`: the static memory plan inside basic blocks (`AllocTensor.reuse`).
* `model`: `VMModel` (the `run` API of `CompiledModel`), `VMStats`.
"""

from .bytecode import VMFunction, VMKernel, VMProgram
from .executor import Executor, RunCounts, VMClosure
from .model import VMModel, VMStats

__all__ = [
    "Executor",
    "RunCounts",
    "VMClosure",
    "VMFunction",
    "VMKernel",
    "VMModel",
    "VMProgram",
    "VMStats",
]
