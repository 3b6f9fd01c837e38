"""Executors, as in TVM: `relay.create_executor(kind, mod, device, target, params)`.

An executor turns a module (and, optionally, an expression in its context) into something
to call: `create_executor("graph", mod).evaluate()(x, w)` runs `@main` on `x` and `w`.

* `debug`: the reference interpreter (every construct of the language).
* `graph` (and `aot`, its alias): `relay.build` — native code for the target, with the
  interpreter for programs native code does not cover (control flow, ADTs, closures).
* `vm`: for now the same as `graph`: `relay.build`, whose interpreter fallback runs control
  flow, recursion and ADTs correctly (a virtual machine of its own is issue 13).

`evaluate()` gives a callable running `@main`; `evaluate(expr)` evaluates `expr` in the
module's context: a `Function` or a `GlobalVar` gives a callable, any other (closed)
expression gives its value at once, as TVM does. The callables take arguments by position
(in parameter order) or by parameter name, and `out=` buffers, as `run` does; tensors in
and out may be anything with `__dlpack__`. `params` (name → array) binds weights as
constants of the evaluated function; they then leave its signature. A tensor result is a
numpy array, a tuple result a tuple of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from attrs import define, field

from .backend.runtime import dlpack
from .backend.target import Target
from .driver import build
from .lang.diagnostics import Error
from .lang.expr import Constant, Expr, Function, GlobalVar, Let, Var
from .lang.module import IRModule

KINDS = ("debug", "graph", "vm", "aot")
"""The executor kinds `create_executor` knows."""


@define
class Evaluation:
    """A callable made by `Executor.evaluate`: runs `model` on its arguments."""

    model: Any

    def __call__(self, *args: Any, out: Any = None, **inputs: Any) -> Any:
        """The result of the evaluated function on `args` (by position) and `inputs` (by
        parameter name); `out` receives it instead when given (see `CompiledModel.run`)."""
        return self.model.run(*args, out=out, **inputs)

    @property
    def native(self) -> bool:
        """Whether the function runs as native code (False: the interpreter)."""
        return bool(self.model.native)


@define
class Executor:
    """Evaluates functions and expressions of `mod` with the executor `kind` (see the
    module docstring); made by `create_executor`."""

    kind: str
    mod: IRModule
    target: str | Target | None
    params: dict[str, np.ndarray]
    _built: dict[Any, Evaluation] = field(factory=dict, init=False)

    def evaluate(self, expr: Expr | None = None, binds: Mapping[Var, Any] | None = None) -> Any:
        """A callable running `@main` (no `expr`), a global (`GlobalVar`) or a `Function`;
        the value of any other closed expression. `binds` gives values (tensors) to free
        variables of `expr`, bound by `let` around it."""
        if binds:
            if expr is None:
                raise Error("evaluate: `binds` needs an expression to bind in")
            expr = _bind(expr, binds)
        if expr is None:
            if "main" not in self.mod:
                raise Error("evaluate: the module has no @main; pass an expression to evaluate")
            return self._evaluation(None, self.mod)
        if not isinstance(expr, Expr):
            raise Error(f"evaluate: expected a relay expression, got a {type(expr).__name__}")
        if isinstance(expr, GlobalVar):
            if expr not in self.mod:
                raise Error(f"evaluate: the module has no global function @{expr.name_hint}")
            return self._evaluation(expr, self.mod.with_function("main", self.mod[expr]))
        _check_closed(expr)
        if isinstance(expr, Function):
            return self._evaluation(expr, self.mod.with_function("main", expr))
        if isinstance(expr, Constant):
            return np.array(expr.data)
        closed = Function([], expr)
        return self._evaluation(closed, self.mod.with_function("main", closed), keep=False)()

    def _evaluation(self, key: Expr | None, work: IRModule, keep: bool = True) -> Evaluation:
        """The callable for `work`'s `@main`, built once per key (`None`: the module's)."""
        cached = self._built.get(key) if keep else None
        if cached is not None:
            return cached
        target = "interp" if self.kind == "debug" else self.target
        model = build(work, target=target, params=self._params_for(key, work))
        evaluation = Evaluation(model)
        if keep:
            self._built[key] = evaluation
        return evaluation

    def _params_for(self, key: Expr | None, work: IRModule) -> dict[str, np.ndarray] | None:
        """The `params` to bind: all of them for `@main` (a name it lacks is an error, as in
        `relay.build`); for a function given to `evaluate`, those naming its parameters."""
        if not self.params or key is None:
            return self.params or None
        names = {p.name_hint for p in work["main"].params}
        return {k: v for k, v in self.params.items() if k in names} or None


def create_executor(
    kind: str = "debug",
    mod: IRModule | None = None,
    device: Any = None,
    target: str | Target | None = "llvm",
    params: Mapping[str, Any] | None = None,
) -> Executor:
    """An executor of `kind` — `debug` (the interpreter), `graph` or `aot` (`relay.build`:
    native code, the interpreter for what native code does not cover), `vm` (for now the
    same as `graph`) — for `mod` (an empty module when None) on the CPU (`device`: None,
    `"cpu"` or a DLPack CPU device `(1, 0)`), compiling for `target`, with `params`
    (name → array or `__dlpack__` tensor) bound as constants of `@main`. Errors are
    `relay.Error`s: an unknown kind lists the kinds."""
    if kind not in KINDS:
        raise Error(f"unknown executor kind {kind!r}; the kinds are: {', '.join(KINDS)}")
    if mod is None:
        mod = IRModule()
    elif not isinstance(mod, IRModule):
        raise Error(f"create_executor: `mod` is an IRModule, not a {type(mod).__name__}")
    _check_device(device)
    bound = {
        name: _as_tensor(value, f"parameter `{name}`") for name, value in (params or {}).items()
    }
    return Executor(kind, mod, target, bound)


def _check_device(device: Any) -> None:
    """Accept the CPU in the spellings users write; refuse any other device clearly."""
    if device is None:
        return
    if isinstance(device, str) and device.strip().lower() in ("cpu", "cpu(0)", "cpu:0", "llvm"):
        return
    if isinstance(device, tuple) and len(device) == 2 and device[0] == dlpack.DLPACK_CPU:
        return
    if getattr(device, "device_type", None) == dlpack.DLPACK_CPU:
        return
    raise Error(f"create_executor: models run on the CPU; got device {device!r}")


def _as_tensor(value: Any, where: str) -> np.ndarray:
    value = dlpack.import_value(value, where)
    if isinstance(value, bool | int | float | np.generic):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray):
        raise Error(f"{where}: expected a tensor (an array), got a {type(value).__name__}")
    return value


def _bind(expr: Expr, binds: Mapping[Var, Any]) -> Expr:
    for var, value in reversed(list(binds.items())):
        if not isinstance(var, Var):
            raise Error(f"evaluate: `binds` maps variables to values, not a {type(var).__name__}")
        expr = Let(var, Constant(_as_tensor(value, f"the value bound to %{var.name_hint}")), expr)
    return expr


def _check_closed(expr: Expr) -> None:
    from .lang.freevars import free_vars

    free = free_vars(expr)
    if free:
        names = ", ".join(f"%{v.name_hint}" for v in free)
        raise Error(
            f"evaluate: the expression has free variables ({names}); make them parameters of "
            "a function or give their values with `binds`"
        )


__all__ = ["KINDS", "Evaluation", "Executor", "create_executor"]
