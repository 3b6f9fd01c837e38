"""The reference interpreter: runs the whole language on numpy values.

It is the oracle every pass and every compiled kernel is tested against, so it is written
to be obviously right first:

* **Strict, left to right.** A call evaluates its callee, then its arguments in order;
  `let` evaluates its value, then its body.
* **Graph form.** An expression node used several times (a DAG) is evaluated once per
  activation of the function whose body contains it: results are memoized by node
  identity in a table per activation. A nested function gets a fresh table on every call.
* **No Python recursion per construct or per call.** Evaluation is a generator per
  non-trivial sub-expression, driven by `relay.lang.trampoline.run` with an explicit
  stack. Expressions in tail position (a `let` body, an `if` branch, a `match` arm, the
  body of a called function) continue in the same generator, so a let chain of any
  length, and a tail-recursive loop of any length, use constant stack; non-tail recursion
  of the interpreted program uses one generator per pending call.
* **Scopes.** Each activation has an `Env` (bindings keyed by `Var` identity) chained to
  the environment its closure captured. A `let` binds into the current activation's
  scope, so a function bound by `let` sees itself: recursive `let` needs nothing special.
  A well-formed program binds each variable once per activation; re-binding the same `Var`
  object in a nested scope of the same function is not supported.

Run-time errors (no matching clause, an unbound variable, a failing operator) are
`EvalError`s with the span of the offending expression; bad inputs to `interpret` are
`InputError`s naming the argument.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

import numpy as np

from ...lang import trampoline
from ...lang.adt import Constructor
from ...lang.diagnostics import Error, InputError
from ...lang.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from ...lang.module import IRModule
from ...lang.op import Op
from .inputs import bind_inputs
from .op_impls import IMPLS
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
)

_MISSING: Any = object()

Memo = dict[Expr, Value]
Eval = Generator[Any, Value, Value]


class Interpreter:
    """Evaluates expressions of one module (`mod` may be None for closed expressions)."""

    def __init__(self, mod: IRModule | None = None) -> None:
        self.mod = mod
        self._globals: dict[GlobalVar, Closure] = {}
        self._by_name = {gv.name_hint: gv for gv in mod.functions} if mod is not None else {}

    # ------------------------------------------------------------------ entry points
    def evaluate(self, expr: Expr, env: Mapping[Var, Value] | None = None) -> Value:
        """The value of `expr`, with the free variables bound by `env`."""
        return self._run(expr, Env(dict(env) if env else {}))

    def call(self, function: Closure | Function, args: list[Value]) -> Value:
        """The result of calling `function` (a closure or a closed function) on `args`."""
        if isinstance(function, Function):
            function = Closure(function, None)
        params = function.function.params
        if len(params) != len(args):
            raise EvalError.at(
                function.function.span,
                f"the function takes {len(params)} arguments, got {len(args)}",
            )
        return self._run(function.function.body, Env(dict(zip(params, args)), function.env))

    def _run(self, expr: Expr, env: Env) -> Value:
        try:
            with np.errstate(all="ignore"):
                return trampoline.run(self._eval(expr, env, {}))
        except Error as exc:
            # the Python traceback of a deep evaluation is thousands of generator frames
            raise exc.with_traceback(None) from exc.__cause__

    # ------------------------------------------------------------------ evaluation
    def _global(self, gv: GlobalVar) -> Closure:
        closure = self._globals.get(gv)
        if closure is None:
            function = None
            if self.mod is not None:
                function = self.mod.functions.get(gv)
                if function is None and gv.name_hint in self._by_name:
                    function = self.mod.functions[self._by_name[gv.name_hint]]
            if function is None:
                raise EvalError.at(gv.span, f"no global function @{gv.name_hint} in the module")
            closure = Closure(function, None, gv)
            self._globals[gv] = closure
        return closure

    def _quick(self, expr: Expr, env: Env, memo: Memo) -> Value:
        """The value of `expr` if it is found without evaluating sub-expressions that need a
        generator (atoms, memoized nodes, closures, and operator calls on those); else
        `_MISSING`."""
        cls = type(expr)
        if cls is Var:
            return env.lookup(expr)  # type: ignore[arg-type]
        if cls is Constant:
            return expr.data  # type: ignore[attr-defined]
        value = memo.get(expr, _MISSING)
        if value is not _MISSING:
            return value
        if cls is Call and type(expr.op) is Op:  # type: ignore[attr-defined]
            args = []
            for arg in expr.args:  # type: ignore[attr-defined]
                kind = type(arg)
                if kind is Var:
                    value = env.lookup(arg)
                elif kind is Constant:
                    value = arg.data
                else:
                    value = memo.get(arg, _MISSING)
                    if value is _MISSING:
                        return _MISSING
                args.append(value)
            value = self._apply_op(expr.op, args, expr)  # type: ignore[attr-defined, arg-type]
            memo[expr] = value
            return value
        if cls is Function:
            value = Closure(expr, env)  # type: ignore[arg-type]
            memo[expr] = value
            return value
        if cls is GlobalVar:
            return self._global(expr)  # type: ignore[arg-type]
        if cls is Op or cls is Constructor:
            return expr
        return _MISSING

    def _eval(self, expr: Expr, env: Env, memo: Memo) -> Eval:
        """Evaluate `expr`; a generator for `trampoline.run` (yields sub-evaluations)."""
        entry_memo = memo
        in_entry = True  # still in the activation that asked for `expr`
        tail: list[Expr] = []  # nodes of that activation whose value is the final value
        quick = self._quick
        while True:
            value = quick(expr, env, memo)
            if value is not _MISSING:
                break
            if in_entry:
                tail.append(expr)
            if isinstance(expr, Let):
                value = quick(expr.value, env, memo)
                if value is _MISSING:
                    value = yield self._eval(expr.value, env, memo)
                env.vars[expr.var] = value
                expr = expr.body
                continue
            if isinstance(expr, Call):
                callee = quick(expr.op, env, memo)
                if callee is _MISSING:
                    callee = yield self._eval(expr.op, env, memo)
                args = []
                for arg in expr.args:
                    value = quick(arg, env, memo)
                    if value is _MISSING:
                        value = yield self._eval(arg, env, memo)
                    args.append(value)
                if isinstance(callee, Closure):
                    function = callee.function
                    if len(function.params) != len(args):
                        raise EvalError.at(
                            expr.span,
                            f"{_describe_callee(callee)} takes {len(function.params)} "
                            f"arguments, got {len(args)}",
                        )
                    env = Env(dict(zip(function.params, args)), callee.env)
                    memo = {}
                    in_entry = False
                    expr = function.body
                    continue
                value = self._apply_value(callee, args, expr)
                break
            if isinstance(expr, If):
                cond = quick(expr.cond, env, memo)
                if cond is _MISSING:
                    cond = yield self._eval(expr.cond, env, memo)
                expr = expr.true_branch if _truth(cond, expr) else expr.false_branch
                continue
            if isinstance(expr, Match):
                data = quick(expr.data, env, memo)
                if data is _MISSING:
                    data = yield self._eval(expr.data, env, memo)
                for clause in expr.clauses:
                    bindings = match_pattern(clause.lhs, data)
                    if bindings is not None:
                        env.vars.update(bindings)
                        expr = clause.rhs
                        break
                else:
                    raise MatchError.at(
                        expr.span, f"no clause matches the value {format_value(data)}"
                    )
                continue
            if isinstance(expr, Tuple):
                fields = []
                for field in expr.fields:
                    value = quick(field, env, memo)
                    if value is _MISSING:
                        value = yield self._eval(field, env, memo)
                    fields.append(value)
                value = tuple(fields)
                break
            if isinstance(expr, TupleGetItem):
                value = quick(expr.tuple_value, env, memo)
                if value is _MISSING:
                    value = yield self._eval(expr.tuple_value, env, memo)
                if not isinstance(value, tuple) or not -len(value) <= expr.index < len(value):
                    raise EvalError.at(
                        expr.span, f"cannot take field {expr.index} of {format_value(value)}"
                    )
                value = value[expr.index]
                break
            if isinstance(expr, RefCreate):
                value = quick(expr.value, env, memo)
                if value is _MISSING:
                    value = yield self._eval(expr.value, env, memo)
                value = RefValue(value)
                break
            if isinstance(expr, RefRead):
                ref = quick(expr.ref, env, memo)
                if ref is _MISSING:
                    ref = yield self._eval(expr.ref, env, memo)
                value = _as_ref(ref, expr).value
                break
            if isinstance(expr, RefWrite):
                ref = quick(expr.ref, env, memo)
                if ref is _MISSING:
                    ref = yield self._eval(expr.ref, env, memo)
                value = quick(expr.value, env, memo)
                if value is _MISSING:
                    value = yield self._eval(expr.value, env, memo)
                _as_ref(ref, expr).value = value
                value = ()
                break
            raise EvalError.at(
                getattr(expr, "span", None), f"cannot evaluate a {type(expr).__name__}"
            )
        for node in tail:
            entry_memo[node] = value
        return value

    def _apply_value(self, callee: Value, args: list[Value], call: Call) -> Value:
        """Apply an operator or a constructor (closures are handled by `_eval`)."""
        if isinstance(callee, Op):
            return self._apply_op(callee, args, call)
        if isinstance(callee, Constructor):
            if len(args) != len(callee.inputs):
                raise EvalError.at(
                    call.span,
                    f"constructor {callee.name_hint} takes {len(callee.inputs)} "
                    f"arguments, got {len(args)}",
                )
            return ConstructorValue(callee, tuple(args))
        raise EvalError.at(call.span, f"cannot call the value {format_value(callee)}")

    def _apply_op(self, op: Op, args: list[Value], call: Call) -> Value:
        impl = IMPLS.get(op)
        if impl is None:
            raise MissingImplementationError.at(
                call.span, f"operator `{op.name}` has no reference implementation"
            )
        try:
            result = impl(args, call.attrs)
        except Error as exc:
            if exc.span is not None:
                raise
            notes = exc.diagnostics[0].notes if exc.diagnostics else ()
            raise type(exc).at(call.span, exc.message, *notes) from exc
        except Exception as exc:
            raise EvalError.at(call.span, f"operator `{op.name}` failed: {exc}") from exc
        if not isinstance(result, np.ndarray | tuple):
            raise TypeError(
                f"the reference implementation of `{op.name}` returned "
                f"{type(result).__name__}, not an np.ndarray or a tuple"
            )
        return result


def _describe_callee(closure: Closure) -> str:
    if closure.global_var is not None:
        return f"@{closure.global_var.name_hint}"
    return "the function"


def _truth(cond: Value, expr: If) -> bool:
    if not isinstance(cond, np.ndarray) or cond.ndim != 0:
        raise EvalError.at(
            expr.cond.span or expr.span,
            f"the condition of `if` must be a scalar bool tensor, got {format_value(cond)}",
        )
    return bool(cond)


def _as_ref(value: Value, expr: Expr) -> RefValue:
    if not isinstance(value, RefValue):
        raise EvalError.at(expr.span, f"expected a reference, got {format_value(value)}")
    return value


def match_pattern(pattern: Pattern, value: Value) -> dict[Var, Value] | None:
    """The bindings of the pattern's variables if `value` matches `pattern`, else None."""
    bindings: dict[Var, Value] = {}
    stack: list[tuple[Pattern, Value]] = [(pattern, value)]
    while stack:
        p, v = stack.pop()
        if isinstance(p, PatternVar):
            bindings[p.var] = v
        elif isinstance(p, PatternWildcard):
            continue
        elif isinstance(p, PatternConstructor):
            if not isinstance(v, ConstructorValue) or v.constructor is not p.constructor:
                return None
            if len(p.patterns) != len(v.fields):
                return None
            stack.extend(zip(p.patterns, v.fields))
        elif isinstance(p, PatternTuple):
            if not isinstance(v, tuple) or len(v) != len(p.patterns):
                return None
            stack.extend(zip(p.patterns, v))
        else:
            raise TypeError(f"unknown pattern {p!r}")
    return bindings


# ---------------------------------------------------------------------------- public API


def evaluate(
    expr: Expr, env: Mapping[Var, Value] | None = None, mod: IRModule | None = None
) -> Value:
    """The value of `expr`, its free variables bound by `env`, its globals looked up in
    `mod`."""
    return Interpreter(mod).evaluate(expr, env)


def interpret(mod: IRModule, *args: Value, main: str = "main", **inputs: Value) -> Value:
    """Run `@main` (or the global `main`) of `mod` on inputs given by position or by
    parameter name (without `%`).

    Inputs are numpy arrays (Python numbers and lists are converted to the parameter's
    annotated dtype), Python tuples, or other run-time values. A missing, unexpected or
    ill-shaped input raises `InputError` naming the argument. Returns the result value:
    an `np.ndarray` for a tensor, a Python tuple for a tuple.
    """
    if main not in mod:
        raise InputError(f"the module has no function @{main}")
    gv = mod.get_global_var(main)
    function = mod.functions[gv]
    values = bind_inputs(function, args, inputs, f"@{main}")
    return Interpreter(mod).call(Closure(function, None, gv), values)
