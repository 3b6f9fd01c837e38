"""Run-time: the reference interpreter (the oracle) and its run-time values.

`interpret(mod, *args, **inputs)` runs `@main` on numpy inputs; `evaluate(expr, env, mod)`
evaluates one expression. Operator semantics live in `op_impls` (one table keyed by `Op`).
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
