"""Patterns and expressions as short text, for reprs and explanations.

`pattern_text(p)` writes a pattern the way it is built in Python
(`is_op("nn.relu")(wildcard().named("x"))`), which `text.parse_pattern` reads back.
`expr_summary(e)` describes an expression in one line of the text format, its operands
abbreviated: `%x: Tensor[(2, 3), float32]`, `nn.relu(%0)`, `1f`.
"""

from __future__ import annotations

from collections.abc import Callable

from ...lang.adt import Constructor
from ...lang.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
)
from ...lang.expr import Match as MatchExpr
from ...lang.op import Op
from ...lang.printer import scalar_literal
from ...lang.types import TensorType, Type
from ...typecheck.show import type_text
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

TypeOf = Callable[[Expr], Type | None]


# ------------------------------------------------------------------ expressions


def _atom(e: Expr) -> str:
    """`e` as an operand: a name or literal, else an ellipsis for a compound expression."""
    if isinstance(e, Var):
        return "%" + (e.name_hint or "_")
    if isinstance(e, GlobalVar):
        return "@" + e.name_hint
    if isinstance(e, Constant):
        literal = scalar_literal(e)
        return literal if literal is not None else "meta[Constant]"
    if isinstance(e, Op):
        return e.name
    if isinstance(e, Constructor):
        return e.name_hint
    if isinstance(e, Call) and isinstance(e.op, Op | Constructor | GlobalVar):
        return _atom(e.op) + "(...)"
    if isinstance(e, TupleGetItem):
        return f"{_atom(e.tuple_value)}.{e.index}"
    if isinstance(e, Tuple):
        return "(...)"
    return "..."


def expr_head(e: Expr) -> str:
    """`e` with its operands abbreviated."""
    if isinstance(e, Call):
        callee = _atom(e.op) if not isinstance(e.op, Function) else "fn (...)"
        return f"{callee}({', '.join(_atom(a) for a in e.args)})"
    if isinstance(e, Tuple):
        if len(e.fields) == 1:
            return f"({_atom(e.fields[0])},)"
        return "(" + ", ".join(_atom(f) for f in e.fields) + ")"
    if isinstance(e, TupleGetItem):
        return f"{_atom(e.tuple_value)}.{e.index}"
    if isinstance(e, Function):
        return "fn (" + ", ".join(_atom(p) for p in e.params) + ") {...}"
    if isinstance(e, Let):
        return f"let {_atom(e.var)} = {_atom(e.value)}; ..."
    if isinstance(e, If):
        return f"if ({_atom(e.cond)}) {{...}} else {{...}}"
    if isinstance(e, MatchExpr):
        return f"match ({_atom(e.data)}) {{...}}"
    if isinstance(e, Op):
        return f"operator {e.name}"
    if isinstance(e, Constant) and scalar_literal(e) is None:
        return f"constant {constant_type_text(e)}"
    return _atom(e)


def constant_type_text(c: Constant) -> str:
    """The type of a tensor constant, read from its data."""
    return type_text(TensorType(tuple(int(d) for d in c.data.shape), c.dtype))


def expr_summary(e: Expr, type_of: TypeOf | None = None) -> str:
    """`e` in one line, with its type when known (`%x: Tensor[(2, 3), float32]`): a
    variable's annotation, a constant's own, else what `type_of` returns."""
    text = expr_head(e)
    t: Type | None = None
    if isinstance(e, Var):
        t = e.type_annotation
    if t is None and type_of is not None and not isinstance(e, Op | Constant):
        t = type_of(e)
    return text if t is None else f"{text}: {type_text(t)}"


# ------------------------------------------------------------------ patterns

_POSTFIX = (
    WildcardPattern,
    VarPattern,
    ConstantPattern,
    ExprPattern,
    OpNamePattern,
    CallPattern,
    TuplePattern,
    TupleGetItemPattern,
    AttrPattern,
    TypePattern,
    DTypePattern,
    ShapePattern,
    CapturePattern,
    DominatorPattern,
)


def _operand(p: DFPattern) -> str:
    """`p` where a method is applied to it or it is called (an alternative needs brackets)."""
    text = pattern_text(p)
    return text if isinstance(p, _POSTFIX) else f"({text})"


def value_text(value: object) -> str:
    if isinstance(value, list | tuple):
        items = [value_text(v) for v in value]
        if isinstance(value, tuple):
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def _quoted(text: str) -> str:
    return value_text(text)


def pattern_text(p: DFPattern) -> str:
    """`p` as the Python that builds it (patterns are small: this recurses on them)."""
    if isinstance(p, WildcardPattern):
        return "wildcard()"
    if isinstance(p, VarPattern):
        return "is_var()" if p.name is None else f"is_var({_quoted(p.name)})"
    if isinstance(p, ConstantPattern):
        return "is_constant()"
    if isinstance(p, ExprPattern):
        return f"is_expr({_quoted(expr_summary(p.expr))})"
    if isinstance(p, OpNamePattern):
        return f"is_op({_quoted(p.name)})"
    if isinstance(p, CallPattern):
        return _operand(p.op) + "(" + ", ".join(pattern_text(a) for a in p.args) + ")"
    if isinstance(p, TuplePattern):
        return "is_tuple([" + ", ".join(pattern_text(f) for f in p.fields) + "])"
    if isinstance(p, TupleGetItemPattern):
        index = "" if p.index is None else f", {p.index}"
        return f"is_tuple_get_item({pattern_text(p.tuple_value)}{index})"
    if isinstance(p, AltPattern):
        right = pattern_text(p.right)
        if isinstance(p.right, AltPattern):
            right = f"({right})"
        return f"{pattern_text(p.left)} | {right}"
    if isinstance(p, AttrPattern):
        items = ", ".join(f"{_quoted(k)}: {value_text(v)}" for k, v in p.attrs.items())
        return f"{_operand(p.pattern)}.has_attr({{{items}}})"
    if isinstance(p, TypePattern):
        return f"{_operand(p.pattern)}.has_type({_quoted(type_text(p.type))})"
    if isinstance(p, DTypePattern):
        return f"{_operand(p.pattern)}.has_dtype({_quoted(p.dtype)})"
    if isinstance(p, ShapePattern):
        return f"{_operand(p.pattern)}.has_shape({value_text(p.shape)})"
    if isinstance(p, CapturePattern):
        return f"{_operand(p.pattern)}.named({_quoted(p.name)})"
    if isinstance(p, DominatorPattern):
        parts = (pattern_text(p.parent), pattern_text(p.path), pattern_text(p.child))
        return "dominates(" + ", ".join(parts) + ")"
    return type(p).__name__ + "()"
