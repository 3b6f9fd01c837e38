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
* `relay.Target` — a target as a value: `Target.parse(text)`, `Target.host()`, `str(t)`.
* `relay.Error` — the base of every diagnosed user error.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .backend.target import Target
from .lang import *  # noqa: F403
from .lang import Error, Expr, IRModule

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
) -> Any:
    """Compile `mod`'s `@main` for `target` (a `Target`, or a string such as
    `"llvm -mcpu=znver4 -num-threads=2"` or `"interp"`; default `llvm` for this machine),
    under the current `PassContext` (`opt_level` overrides its opt level), with `params`
    (name → array) bound as constants; see `relay.driver.build`."""
    from .driver import build as _build

    return _build(mod, target=target, opt_level=opt_level, params=params)


def load(path: str | os.PathLike[str], num_threads: int | None = None) -> Any:
    """A compiled model saved with `.save(path)`, loaded without recompiling, for the target
    stored in it (`num_threads` replaces the stored thread count)."""
    from .backend.build.artifact import load_artifact

    return load_artifact(path, num_threads=num_threads)


def interpret(mod: IRModule, *args: Any, **inputs: Any) -> Any:
    """Run `@main` of `mod` in the reference interpreter on numpy inputs."""
    from .backend.runtime import interpret as _interpret

    return _interpret(mod, *args, **inputs)


__all__ = [
    "Error",
    "IRModule",
    "Target",
    "build",
    "interpret",
    "load",
    "parse",
    "parse_expr",
    "parse_file",
    "print_expr",
]
