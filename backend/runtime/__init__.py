"""Run-time: what runs — compiled models, the reference interpreter (the oracle) and its
values. Nothing here compiles: `backend.build` makes compiled models and hands them their
native library.

* `compiled`: `CompiledModel` (argument checks, one native entry call per run, the
  interpreter for kernels without native code, `save` through the build's writer).
* `plan`: the values a compiled model executes (`GraphPlan`, `Slot`, `KernelStep`,
  `MemoryPlan`).
* `dlpack`: foreign tensors in (`__dlpack__`, no copy) and caller-given `out=` buffers.
* `native`: the host side of native code (`aligned_empty`, `aligned_copy`, the
  `NativeLibrary` protocol).
* `interpreter`: `interpret(mod, *args, **inputs)` runs `@main` on numpy inputs;
  `evaluate(expr, env, mod)` evaluates one expression. Operator semantics live in
  `op_impls` (one table keyed by `Op`); values in `values`; input checks in `inputs`.
"""

from .inputs import bind_inputs, describe_type
from .interpreter import Interpreter, evaluate, interpret, match_pattern
from .values import (
    Closure,
    ConstructorValue,
    Env,
    EvalError,
    MatchError,
    MissingImplementationError,
    RefValue,
    Value,
    format_value,
    value_equal,
)

__all__ = [
    "Closure",
    "ConstructorValue",
    "Env",
    "EvalError",
    "Interpreter",
    "MatchError",
    "MissingImplementationError",
    "RefValue",
    "Value",
    "bind_inputs",
    "describe_type",
    "evaluate",
    "format_value",
    "interpret",
    "match_pattern",
    "value_equal",
]
