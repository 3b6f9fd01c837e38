"""Patterns compiled into nested closures, for drivers that match one pattern at many nodes.

`Matcher` interprets a pattern node by node (a dispatch on the pattern's class, with state
saved for backtracking at every node), and records the pairs a `Match` needs for its
inputs and region. A rewrite driver needs only the captures, at every node of a program,
so `compile_pattern` turns a pattern into closures once: each checks its own node and
calls its children's closures, a pattern node used twice checks that it matched the same
expression both times, and only alternatives restore state when they backtrack. The
result is the same as `Matcher.match(...).captures` (types and consumers come from the
matcher, so its `unknown` flag is set the same way). Dominator patterns are not compiled
(`compile_pattern` returns None); the driver uses the matcher for them.
"""

from __future__ import annotations

from collections.abc import Callable

from ...lang.expr import Call, Constant, Expr, Tuple, TupleGetItem, Var
from ...lang.op import Op
from ...lang.structural import structural_equal
from ...lang.types import TensorType
from .matcher import Matcher, _wrong_attr
from .patterns import (
    AltPattern,
    AttrPattern,
    CallPattern,
    CapturePattern,
    ConstantPattern,
    DFPattern,
    DominatorPattern,
    DTypePattern,
    ExprPattern,
    OpNamePattern,
    ShapePattern,
    TupleGetItemPattern,
    TuplePattern,
    TypePattern,
    VarPattern,
    WildcardPattern,
)

State = dict[object, Expr]
"""What a match has found so far: captures by name (str) and, for the pattern nodes used
more than once, the expression each matched (by the pattern's id)."""

Check = Callable[[Expr, State, Matcher], bool]
CompiledPattern = Callable[[Expr, Matcher], dict[str, Expr] | None]
"""A compiled pattern: the captures of its match at an expression, or None."""


def _parts(p: DFPattern) -> tuple[DFPattern, ...]:
    if isinstance(p, CallPattern):
        return (p.op, *p.args)
    if isinstance(p, TuplePattern):
        return p.fields
    if isinstance(p, TupleGetItemPattern):
        return (p.tuple_value,)
    if isinstance(p, AltPattern):
        return (p.left, p.right)
    if isinstance(p, AttrPattern | TypePattern | DTypePattern | ShapePattern | CapturePattern):
        return (p.pattern,)
    if isinstance(p, DominatorPattern):
        return (p.parent, p.path, p.child)
    return ()


def _uses(p: DFPattern) -> dict[int, int] | None:
    """How often each pattern node occurs in `p` (by id; None if `p` has a dominator)."""
    uses: dict[int, int] = {}
    stack = [p]
    while stack:
        q = stack.pop()
        if isinstance(q, DominatorPattern):
            return None
        uses[id(q)] = uses.get(id(q), 0) + 1
        if uses[id(q)] == 1:
            stack.extend(_parts(q))
    return uses


def _writes(p: DFPattern, shared: set[int]) -> bool:
    """Whether matching `p` records anything in the state (a capture or a shared node)."""
    stack = [p]
    while stack:
        q = stack.pop()
        if isinstance(q, CapturePattern) or id(q) in shared:
            return True
        stack.extend(_parts(q))
    return False


def _always(e: Expr, state: State, m: Matcher) -> bool:
    return True


def _compile(p: DFPattern, shared: set[int]) -> Check:
    check = _compile_node(p, shared)
    if id(p) not in shared:
        return check
    key = id(p)

    def bound(e: Expr, state: State, m: Matcher) -> bool:
        previous = state.get(key)
        if previous is not None:
            return previous is e
        if check(e, state, m):
            state[key] = e
            return True
        return False

    return bound


def _compile_node(p: DFPattern, shared: set[int]) -> Check:
    if isinstance(p, WildcardPattern):
        return _always
    if isinstance(p, VarPattern):
        name = p.name
        if name is None:
            return lambda e, state, m: isinstance(e, Var)
        return lambda e, state, m: isinstance(e, Var) and e.name_hint == name
    if isinstance(p, ConstantPattern):
        return lambda e, state, m: isinstance(e, Constant)
    if isinstance(p, ExprPattern):
        target = p.expr
        if isinstance(target, Var):
            return lambda e, state, m: e is target
        return lambda e, state, m: e is target or structural_equal(e, target)
    if isinstance(p, OpNamePattern):
        op_name = p.name
        return lambda e, state, m: isinstance(e, Op) and e.name == op_name
    if isinstance(p, CallPattern):
        return _compile_call(p, shared)
    if isinstance(p, TuplePattern):
        fields = [_compile(f, shared) for f in p.fields]
        arity = len(fields)

        def tuple_(e: Expr, state: State, m: Matcher) -> bool:
            if not isinstance(e, Tuple) or len(e.fields) != arity:
                return False
            return all(f(x, state, m) for f, x in zip(fields, e.fields))

        return tuple_
    if isinstance(p, TupleGetItemPattern):
        value, index = _compile(p.tuple_value, shared), p.index

        def projection(e: Expr, state: State, m: Matcher) -> bool:
            if not isinstance(e, TupleGetItem) or (index is not None and e.index != index):
                return False
            return value(e.tuple_value, state, m)

        return projection
    if isinstance(p, AltPattern):
        return _compile_alt(p, shared)
    if isinstance(p, CapturePattern):
        inner, name = _compile(p.pattern, shared), p.name

        def capture(e: Expr, state: State, m: Matcher) -> bool:
            if not inner(e, state, m):
                return False
            old = state.get(name)
            if old is not None:
                return old is e
            state[name] = e
            return True

        return capture
    if isinstance(p, AttrPattern):
        inner, wanted = _compile(p.pattern, shared), p.attrs
        return lambda e, state, m: inner(e, state, m) and _wrong_attr(e, wanted) is None
    if isinstance(p, TypePattern | DTypePattern | ShapePattern):
        return _compile_typed(p, _compile(p.pattern, shared))
    raise TypeError(f"unknown pattern class {type(p).__name__}")


def _compile_call(p: CallPattern, shared: set[int]) -> Check:
    args = [_compile(a, shared) for a in p.args]
    arity = len(args)
    if isinstance(p.op, OpNamePattern) and id(p.op) not in shared:
        op_name = p.op.name

        def op_call(e: Expr, state: State, m: Matcher) -> bool:
            if not isinstance(e, Call) or len(e.args) != arity:
                return False
            op = e.op
            if not isinstance(op, Op) or op.name != op_name:
                return False
            return all(f(x, state, m) for f, x in zip(args, e.args))

        return op_call
    callee = _compile(p.op, shared)

    def call(e: Expr, state: State, m: Matcher) -> bool:
        if not isinstance(e, Call) or len(e.args) != arity or not callee(e.op, state, m):
            return False
        return all(f(x, state, m) for f, x in zip(args, e.args))

    return call


def _compile_alt(p: AltPattern, shared: set[int]) -> Check:
    left, right = _compile(p.left, shared), _compile(p.right, shared)
    if not _writes(p.left, shared):
        return lambda e, state, m: left(e, state, m) or right(e, state, m)

    def alt(e: Expr, state: State, m: Matcher) -> bool:
        saved = dict(state)
        if left(e, state, m):
            return True
        state.clear()
        state.update(saved)
        return right(e, state, m)

    return alt


def _compile_typed(p: TypePattern | DTypePattern | ShapePattern, inner: Check) -> Check:
    def typed(e: Expr, state: State, m: Matcher) -> bool:
        if not inner(e, state, m):
            return False
        ty = m._type_of(e)
        if ty is None:
            return False
        if isinstance(p, TypePattern):
            return structural_equal(ty, p.type)
        if not isinstance(ty, TensorType):
            return False
        if isinstance(p, DTypePattern):
            return ty.dtype == p.dtype
        return ty.shape == p.shape

    return typed


def compile_pattern(pattern: DFPattern) -> CompiledPattern | None:
    """`pattern` compiled (see the module docstring), or None if it has a dominator."""
    uses = _uses(pattern)
    if uses is None:
        return None
    shared = {key for key, n in uses.items() if n > 1}
    check = _compile(pattern, shared)

    if not shared:

        def captures(e: Expr, m: Matcher) -> dict[str, Expr] | None:
            state: State = {}
            return state if check(e, state, m) else None  # type: ignore[return-value]

        return captures

    def captures_of_shared(e: Expr, m: Matcher) -> dict[str, Expr] | None:
        state: State = {}
        if not check(e, state, m):
            return None
        return {k: v for k, v in state.items() if type(k) is str}

    return captures_of_shared
