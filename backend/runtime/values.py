"""Run-time values of the reference interpreter, and its run-time errors.

A value is one of:

* a tensor: an `np.ndarray`, always an array (rank 0 for scalars, never a Python or numpy
  scalar), whose numpy dtype stores the relay dtype (`bool` for `bool`/`uint1`);
* a tuple: a plain Python `tuple` of values (`()` is the unit value, the result of
  `ref_write`);
* a `ConstructorValue`: an ADT value, its constructor and its fields;
* a `Closure`: a function together with the environment it was created in (global
  functions are closures over no environment, with `global_var` set);
* a `RefValue`: a mutable cell (`ref(v)`);
* an `Op` or a `Constructor`, when an operator or a constructor is used as a value.

Tensors produced by the interpreter may be read-only (constants are); implementations must
never write into their inputs.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
from attrs import define, field, frozen

from ...lang.adt import Constructor
from ...lang.diagnostics import Error
from ...lang.expr import Function, GlobalVar, Var
from ...lang.op import Op

Value: TypeAlias = Any
"""`np.ndarray | tuple | ConstructorValue | Closure | RefValue | Op | Constructor`."""


class EvalError(Error):
    """A program failed while being evaluated (no matching clause, division by zero, ...)."""


class MatchError(EvalError):
    """No clause of a `match` matched the value."""


class MissingImplementationError(EvalError):
    """An operator has no reference implementation."""


_MISSING: Any = object()


class Env:
    """A scope: variable bindings of one function activation, chained to the closure's scope.

    Variables are keyed by identity. Lookups walk the chain iteratively; its length is the
    lexical nesting depth of functions, not the depth of the program.
    """

    __slots__ = ("parent", "vars")

    def __init__(self, bindings: dict[Var, Value] | None = None, parent: Env | None = None):
        self.vars: dict[Var, Value] = {} if bindings is None else bindings
        self.parent = parent

    def lookup(self, var: Var) -> Value:
        """The value bound to `var`; `EvalError` at the variable's span if it is unbound."""
        env: Env | None = self
        while env is not None:
            value = env.vars.get(var, _MISSING)
            if value is not _MISSING:
                return value
            env = env.parent
        raise EvalError.at(var.span, f"unbound variable `%{var.name_hint}`")


@frozen(eq=False)
class Closure:
    """A function value: `function` with the scope it was created in.

    A global function is a closure with `env=None` and `global_var` set. Recursive `let`
    needs no special closure: the closure shares its activation's scope, into which the
    `let` then binds the closure itself.
    """

    function: Function
    env: Env | None = field(repr=False)
    global_var: GlobalVar | None = None

    def __repr__(self) -> str:
        if self.global_var is not None:
            return f"<global @{self.global_var.name_hint}>"
        params = ", ".join(f"%{p.name_hint}" for p in self.function.params)
        return f"<closure fn ({params})>"


@define(frozen=True, eq=False, slots=True, repr=False)
class ConstructorValue:
    """A value of an algebraic data type: `Cons(1, Nil)`."""

    constructor: Constructor
    fields: tuple[Value, ...] = field(converter=tuple, default=())

    @property
    def tag(self) -> int:
        """The constructor's tag (its index in the ADT definition)."""
        return self.constructor.tag

    def __repr__(self) -> str:
        return format_value(self)


@define(eq=False, slots=True, repr=False)
class RefValue:
    """A mutable reference cell (`ref(v)`; `ref_read`, `ref_write`)."""

    value: Value

    def __repr__(self) -> str:
        return f"ref({format_value(self.value)})"


def format_value(value: Value, limit: int = 60) -> str:
    """A short, readable rendering of a value (at most `limit` leaves; deep values are fine)."""
    out: list[str] = []
    leaves = 0
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if type(item) is _Text:
            out.append(item.text)
            continue
        leaves += 1
        if leaves > limit:
            out.append("…")
            stack = [s for s in stack if type(s) is _Text and s.text == ")"]
            continue
        if isinstance(item, tuple):
            fields, close = item, _Text(",)" if len(item) == 1 else ")")
        elif isinstance(item, ConstructorValue) and item.fields:
            out.append(item.constructor.name_hint)
            fields, close = item.fields, _Text(")")
        else:
            out.append(_format_leaf(item))
            continue
        parts: list[Any] = [_Text("(")]
        for i, f in enumerate(fields):
            if i:
                parts.append(_Text(", "))
            parts.append(f)
        parts.append(close)
        stack.extend(reversed(parts))
    return "".join(out)


@frozen
class _Text:
    text: str


def _format_leaf(item: Value) -> str:
    if isinstance(item, np.ndarray):
        return _format_array(item)
    if isinstance(item, ConstructorValue):
        return item.constructor.name_hint
    if isinstance(item, RefValue):
        return "ref(…)"
    if isinstance(item, Op):
        return item.name
    if isinstance(item, Constructor):
        return item.name_hint
    return repr(item)


def _format_array(array: np.ndarray) -> str:
    from ...lang.dtype import dtype_of_array

    dtype = dtype_of_array(array)
    if array.ndim == 0:
        return f"{array[()]!s}:{dtype}"  # numpy's shortest digits for the dtype
    body = np.array2string(array, threshold=8, separator=", ").replace("\n", "")
    return f"{body}:{dtype}"


def value_equal(a: Value, b: Value) -> bool:
    """Whether two values are equal: tensors by dtype, shape and elements (NaN equals NaN),
    tuples and ADT values field by field, closures and references by identity."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)):
                return False
            if x.dtype != y.dtype or x.shape != y.shape:
                return False
            equal_nan = x.dtype.kind in "fc"
            if not np.array_equal(x, y, equal_nan=equal_nan):
                return False
        elif isinstance(x, tuple):
            if not isinstance(y, tuple) or len(x) != len(y):
                return False
            stack.extend(zip(x, y))
        elif isinstance(x, ConstructorValue):
            if not isinstance(y, ConstructorValue) or x.constructor is not y.constructor:
                return False
            stack.extend(zip(x.fields, y.fields))
        elif x is not y:
            return False
    return True
