"""relay: a statically typed functional IR for deep learning, compiled to native CPU code.

The public API:

* `relay.parse(text)`, `relay.parse_expr(text)`, `relay.parse_file(path)` — the Relay text
  format (version 0.0.5) to an `IRModule` / expression.
* `IRModule.astext()` and `relay.print_expr(expr)` — back to canonical text.
* The IR nodes (`relay.Var`, `relay.Call`, `relay.Function`, `relay.TensorType`, ...) and
  `relay.structural_equal` / `relay.structural_hash`.
* `relay.build(mod, target="llvm -num-threads=2", opt_level=3)` — a model compiled to
  native code for a target (a string or a `relay.Target`; the build runs under the current
  `PassContext`), with `.run(**inputs)` and `.save(path)`; `relay.load(path)` loads a
  saved one; `relay.interpret(mod, **inputs)` runs the reference interpreter.
* `relay.create_executor(kind="debug"|"graph"|"vm"|"aot", mod, target=..., params=...)`
  with `.evaluate(expr=None)(*args)`, as in TVM; inputs and `out=` buffers of `run` may be
  any CPU tensor with `__dlpack__` (a torch tensor), shared without a copy.
* `relay.Target` — a target as a value: `Target.parse(text)`, `Target.host()`, `str(t)`.
* `relay.Error` — the base of every diagnosed user error.
* IR builders made from the operator table: `relay.var("x", shape=(1, 3))`, `relay.const`,
  `relay.add(a, b)`, `relay.reshape(x, (3, 1))`, `relay.nn.conv2d(x, w, padding=(1, 1))`,
  `relay.image.*`, `relay.annotation.*` (one function per operator, keyword attributes
  checked by the operator's schema as the parser checks them); with the node classes
  (`relay.Function`, `relay.Tuple`, `relay.If`, `relay.Let`, ...) and
  `IRModule.from_expr(fn)`. Tuple-valued operators return a `relay.TupleWrapper`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from . import annotation, image, nn
from .backend.target import Target
from .lang import *  # noqa: F403
from .lang import Error, Expr, IRModule
from .lang.builders import TupleWrapper, const, var

# One function per top-level operator (`relay.add`, ...). This binds `sum`, `max`, `min`,
# `all`, `any`, `abs` and `round` in this module as TVM's relay does: code here that needs
# the builtins must use `builtins.max` and so on.
from .op import *  # noqa: F403

if TYPE_CHECKING:
    from .lang.types import Type

__version__ = "0.1.0"


def parse(
    text: str, source_name: str = "<string>", prelude: bool = True, strict: bool = False
) -> IRModule:
    """Parse a module in the Relay text format (version 0.0.5).

    Names of the prelude (`List`, `Cons`, `@map`, ...) that the text uses without declaring
    them bring in the prelude's definitions; `prelude=False` turns that off. A module
    without the `#[version = "0.0.5"]` header is read with a `RelayWarning`, or rejected
    with `strict=True`.
    """
    from .grammar import parse as _parse

    return _parse(text, source_name, prelude=prelude, strict=strict)


def parse_expr(text: str, source_name: str = "<string>") -> Expr:
    """Parse a single expression in the Relay text format."""
    from .grammar import parse_expr as _parse_expr

    return _parse_expr(text, source_name)


def parse_file(
    path: str | os.PathLike[str], prelude: bool = True, strict: bool = False
) -> IRModule:
    """Parse a `.relay` file; diagnostics name the file as given (options as in `parse`)."""
    from .grammar import parse_file as _parse_file

    return _parse_file(path, prelude=prelude, strict=strict)


def print_expr(expr: Expr, types: dict[Expr, Type] | None = None) -> str:
    """An expression as text (free variables declared with `free_var`)."""
    from .lang.printer import print_expr as _print_expr

    return _print_expr(expr, types)


def build(
    mod: IRModule,
    target: str | Target | None = None,
    opt_level: int | None = None,
    params: Any | None = None,
    passes: Any | None = None,
    partial_evaluate: bool | None = None,
    tuning_log: str | os.PathLike[str] | None = None,
) -> Any:
    """Compile `mod`'s `@main` for `target` (a `Target`, or a string such as
    `"llvm -mcpu=znver4 -num-threads=2"` or `"interp"`; default `llvm` for this machine),
    under the current `PassContext` (`opt_level` overrides its opt level), with `params`
    (name → array) bound as constants and `passes` added to the pipeline at named points
    (`[("after:fold-constant", my_pass)]`), after `partial-evaluate` when
    `partial_evaluate=True`, with the best configs of `tuning_log` (`relay tune`); see
    `relay.driver.build`."""
    from .driver import build as _build

    return _build(
        mod,
        target=target,
        opt_level=opt_level,
        params=params,
        passes=passes,
        partial_evaluate=partial_evaluate,
        tuning_log=tuning_log,
    )


def load(path: str | os.PathLike[str], num_threads: int | None = None) -> Any:
    """A compiled model saved with `.save(path)`, loaded without recompiling, for the target
    stored in it (`num_threads` replaces the stored thread count): a `CompiledModel`, or a
    `VMModel` for a program with control flow."""
    from .backend.build.vm_artifact import load_model

    return load_model(path, num_threads=num_threads)


def create_executor(
    kind: str = "debug",
    mod: IRModule | None = None,
    device: Any = None,
    target: str | Target | None = "llvm",
    params: Any | None = None,
) -> Any:
    """An executor of `kind` (`debug`: the interpreter; `graph`/`aot`: `relay.build`; `vm`:
    for now `relay.build` too) whose `.evaluate(expr=None)` gives a callable; see
    `relay.executor`."""
    from .executor import create_executor as _create_executor

    return _create_executor(kind, mod, device=device, target=target, params=params)


def interpret(mod: IRModule, *args: Any, **inputs: Any) -> Any:
    """Run `@main` of `mod` in the reference interpreter on numpy inputs."""
    from .backend.runtime import interpret as _interpret

    return _interpret(mod, *args, **inputs)


def __getattr__(name: str) -> Any:
    """`relay.transform` (TVM's pass names) and `relay.quantize`, imported when first
    used."""
    if name in ("transform", "quantize"):
        import importlib

        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'relay' has no attribute '{name}'")


__all__ = [
    "Error",
    "IRModule",
    "Target",
    "TupleWrapper",
    "annotation",
    "build",
    "const",
    "create_executor",
    "image",
    "interpret",
    "load",
    "nn",
    "parse",
    "parse_expr",
    "parse_file",
    "print_expr",
    "var",
]
