"""The simplification pass: every expression of a kernel simplified with the ranges of the
loops around it, loops of extent one inlined, decided conditions and empty code removed.
The statement walk is iterative (long sequences and deep nests do not recurse)."""

from __future__ import annotations

from typing import Any

import attrs

from ..arith import Simplifier, VarRanges, const_bool, const_int_bound
from ..arith.constants import int_value
from ..dtypes import INDEX_DTYPE, is_int, is_uint, lanes_of
from ..expr import GE, GT, LE, LT, And, Call, FloatImm, IntImm, Not, Or, PrimExpr, Range, Var
from ..stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
)
from ..visitor import (
    NOOP,
    StmtMutator,
    VarSets,
    is_noop,
    make_seq,
    replace_buffers,
    substitute,
)


def _scalar_int(dtype: str) -> bool:
    return lanes_of(dtype) == 1 and (is_int(dtype) or is_uint(dtype))


_SWAP: dict[type, type] = {LT: GT, LE: GE, GT: LT, GE: LE}
_NEGATE: dict[type, type] = {LT: GE, LE: GT, GT: LE, GE: LT}


def _refine(cond: PrimExpr, ranges: dict[Var, Any], positive: bool) -> None:
    """Narrow `ranges` with the facts `cond` (or its negation) gives about single variables
    compared with constants (`i < 5`, `likely(j >= 2 and j < 9)`)."""
    if isinstance(cond, Call) and cond.name == "likely":
        cond = cond.args[0]
    if isinstance(cond, Not):
        _refine(cond.a, ranges, not positive)
        return
    if (isinstance(cond, And) and positive) or (isinstance(cond, Or) and not positive):
        _refine(cond.a, ranges, positive)  # type: ignore[attr-defined]
        _refine(cond.b, ranges, positive)  # type: ignore[attr-defined]
        return
    if not isinstance(cond, (LT, LE, GT, GE)):
        return
    a, b = cond.a, cond.b
    cls: type = type(cond)
    if isinstance(a, IntImm) and isinstance(b, Var):
        a, b, cls = b, a, _SWAP[cls]
    if not (isinstance(a, Var) and isinstance(b, IntImm)) or a.dtype != INDEX_DTYPE:
        return
    if not positive:
        cls = _NEGATE[cls]
    lo, hi = const_int_bound(a, ranges)
    c = b.value
    if cls is LT:
        hi = min(hi, c - 1)
    elif cls is LE:
        hi = min(hi, c)
    elif cls is GT:
        lo = max(lo, c + 1)
    else:
        lo = max(lo, c)
    ranges[a] = (lo, hi)


def scope_ranges(s: Stmt, index: int, ranges: dict[Var, Any]) -> dict[Var, Any]:
    """The variable ranges inside sub-statement `index` of `s`, given `ranges` around `s`
    (a new dict when `s` adds facts: a loop's range, an integer let's bounds, what an `if`
    condition says in either branch; `ranges` itself otherwise)."""
    if isinstance(s, For):
        return {**ranges, s.loop_var: Range(s.min, s.extent)}
    if isinstance(s, LetStmt) and _scalar_int(s.value.dtype):
        return {**ranges, s.var: const_int_bound(s.value, ranges)}
    if isinstance(s, IfThenElse):
        inner = dict(ranges)
        _refine(s.condition, inner, positive=index == 0)
        return inner
    return ranges


class _StmtSimplifier(StmtMutator):
    """Simplifies statements top-down with the ranges of enclosing loops and conditions."""

    def __init__(self, ranges: VarRanges | None) -> None:
        self.ranges: dict[Var, Any] = dict(ranges or {})
        self.saved: list[dict[Var, Any]] = []
        # Variables replaced by a value (loops of extent 1, lets of constants). A variable
        # is only used inside its binder, so one map serves the whole (depth-first) walk.
        self.values: dict[Var, PrimExpr] = {}
        self.cache: dict[tuple[int, int], tuple[PrimExpr, Any, PrimExpr]] = {}
        # One simplifier per ranges in scope: the expressions of a scope share its memo
        # (the unrolled copies of a body share most subexpressions).
        self.simplifiers: dict[int, tuple[dict[Var, Any], Simplifier]] = {}
        self.var_sets = VarSets()

    def simplifier(self) -> Simplifier:
        """The simplifier for the ranges in scope."""
        got = self.simplifiers.get(id(self.ranges))
        if got is None or got[0] is not self.ranges:
            got = (self.ranges, Simplifier(self.ranges))
            self.simplifiers[id(self.ranges)] = got
        return got[1]

    def expr(self, e: PrimExpr) -> PrimExpr:
        key = (id(e), id(self.ranges))
        got = self.cache.get(key)
        if got is not None and got[0] is e and got[1] is self.ranges:
            return got[2]
        if not self.values:
            out = self.simplifier().simplify(e)
            self.cache[key] = (e, self.ranges, out)
        elif self.var_sets.of(e).isdisjoint(self.values):
            out = self.simplifier().simplify(e)  # nothing to substitute
        else:  # with substitutions the result depends on more than `e`: not cached
            out = self.simplifier().simplify(substitute(e, self.values))
        return out

    def enter(self, s: Stmt) -> Stmt:
        if isinstance(s, For):
            lo, ext = self.expr(s.min), self.expr(s.extent)
            e = int_value(ext)
            if e is not None and e <= 0:
                return NOOP
            if e == 1:
                self.values[s.loop_var] = lo
                return s.body
            self.values.pop(s.loop_var, None)  # a sibling binding of the same variable
            return _evolve(s, min=lo, extent=ext)
        if isinstance(s, IfThenElse):
            cond = self.expr(s.condition)
            v = const_bool(cond)
            if v is True:
                return s.then_case
            if v is False:
                return s.else_case if s.else_case is not None else NOOP
            return _evolve(s, condition=cond)
        if isinstance(s, LetStmt):
            value = self.expr(s.value)
            if isinstance(value, (IntImm, FloatImm, Var)):
                self.values[s.var] = value
                return s.body
            self.values.pop(s.var, None)
            return _evolve(s, value=value)
        if isinstance(s, BufferStore):
            return _evolve(
                s, value=self.expr(s.value), indices=tuple(self.expr(i) for i in s.indices)
            )
        if isinstance(s, Evaluate):
            value = self.expr(s.value)
            return NOOP if isinstance(value, (IntImm, FloatImm)) else _evolve(s, value=value)
        if isinstance(s, Allocate):
            shape = tuple(self.expr(d) for d in s.buffer.shape)
            if all(a is b for a, b in zip(shape, s.buffer.shape)):
                return s
            new_buf = attrs.evolve(s.buffer, shape=shape)
            return Allocate(new_buf, replace_buffers(s.body, {s.buffer: new_buf}))
        return s

    def open_scope(self, s: Stmt, index: int) -> None:
        self.saved.append(self.ranges)
        self.ranges = scope_ranges(s, index, self.ranges)

    def close_scope(self, s: Stmt, index: int) -> None:
        closing, self.ranges = self.ranges, self.saved.pop()
        if closing is not self.ranges:
            self.simplifiers.pop(id(closing), None)

    def leave(self, s: Stmt, entered: Stmt) -> Stmt:
        if isinstance(s, SeqStmt):
            return make_seq(list(s.stmts))
        if isinstance(s, IfThenElse):
            ite: IfThenElse = s
            if ite.else_case is not None and is_noop(ite.else_case):
                ite = _evolve(ite, else_case=None)
            if is_noop(ite.then_case):
                if ite.else_case is None:
                    return NOOP
                return IfThenElse(self.expr(Not(ite.condition)), ite.else_case)
            return ite
        if isinstance(s, (For, LetStmt, Allocate)) and is_noop(s.body):
            return NOOP
        return s


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(x is y for x, y in zip(a, b))
    return a is b


def _evolve(s: Any, **changes: Any) -> Any:
    """`s` with `changes`, or `s` itself when every field is already identical."""
    if all(_same(getattr(s, k), v) for k, v in changes.items()):
        return s
    return attrs.evolve(s, **changes)


def simplify_stmt(stmt: Stmt, var_ranges: VarRanges | None = None) -> Stmt:
    """`stmt` with every expression simplified under the enclosing loops' ranges (and the
    facts of enclosing `if`s about single variables), loops of extent 1 replaced by their
    body, loops of extent <= 0 and decided conditions removed, sequences flattened."""
    return _StmtSimplifier(var_ranges).visit(stmt)


def simplify(func: PrimFunc) -> PrimFunc:
    """`func` with its body simplified (constant folding, index arithmetic, loops of extent
    one, decided conditions)."""
    body = simplify_stmt(func.body)
    return func if body is func.body else attrs.evolve(func, body=body)


__all__ = ["scope_ranges", "simplify", "simplify_stmt"]
