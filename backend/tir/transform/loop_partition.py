"""Loop partitioning: split boundary iterations off so the bulk of a loop runs unguarded.

For a loop `for v in [m, m + e)` with constant bounds, the pass looks in its body for guards:
conditions of `likely(...)` calls and of `if_then_else(...)` calls. A guard that is a
conjunction of integer comparisons linear in `v` (`v*a + r < b`, with bounds on `r` from the
ranges of the other loops) is true for every iteration in an interval of `v`. The loop is split
into a head, a middle where every analysed guard is provably true, and a tail:

    for i in serial(0, 13):                  for i in serial(0, 12):
      if likely(i < 12):                       A[i] = ...
        A[i] = ...                ==>         (i = 12: the guard is false, the store is gone)

After splitting, the parts are simplified (with the ranges of what encloses them; the rest of
the kernel is left as it came, simplified by the pipeline before): with the narrower loop
ranges the guards in the middle fold to true (and in head or tail they often fold to false).
Guards that are not linear in the loop variable, or whose truth interval is empty, are left
alone. The head and tail copies get fresh loop variables.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from ..arith import Simplifier, const_bool, const_int_bound, linear_form, simplify
from ..dtypes import INDEX_DTYPE
from ..expr import GE, GT, LE, LT, And, Call, IntImm, PrimExpr, Range, Sub, Var
from ..stmt import For, PrimFunc, Stmt
from ..visitor import (
    StmtMutator,
    VarSets,
    fresh_binders,
    make_seq,
    memoized_fold,
    stmt_children,
    sub_expressions,
)
from .simplify import scope_ranges, simplify_stmt

Interval = tuple[float, float]

_MAX_COPIES = 64
"""Stop partitioning when the body would be copied more often than this in total."""


_GUARD_CALLS = ("likely", "if_then_else")


def _guards_of(node: Any, parts: list[tuple[Call, ...]]) -> tuple[Call, ...]:
    own = isinstance(node, Call) and node.name in _GUARD_CALLS
    parts = [p for p in parts if p]
    if not parts:
        return (node,) if own else ()
    if len(parts) == 1 and not own:
        return parts[0]
    seen: set[int] = set()
    found: list[Call] = [node] if own else []
    for part in parts:
        for c in part:
            if id(c) not in seen and c is not node:
                seen.add(id(c))
                found.append(c)
    return tuple(found)


class _Guards:
    """The guard calls (`likely`, `if_then_else`) under each node, remembered per node: the
    loops of a nest ask for the guards of their bodies, which share everything but the
    loop statements themselves, so each node is walked once per pass."""

    def __init__(self) -> None:
        # id(node) -> (node, its guard calls): the node is kept so that its id stays its own
        self.memo: dict[int, tuple[Any, tuple[Call, ...]]] = {}
        self.vars = VarSets()

    def calls(self, root: Any) -> tuple[Call, ...]:
        """The guard calls under `root`, each object once, in pre-order of first occurrence
        (the order `sub_expressions` meets them)."""
        return memoized_fold(root, self.memo, _guards_of)

    def mentioning(self, body: Stmt, var: Var) -> list[PrimExpr]:
        """The conditions of the guard calls in `body` that mention `var`."""
        conds = (call.args[0] for call in self.calls(body))
        return [cond for cond in conds if var in self.vars.of(cond)]


def _conjuncts(cond: PrimExpr) -> list[PrimExpr]:
    out, stack = [], [cond]
    while stack:
        c = stack.pop()
        if isinstance(c, Call) and c.name == "likely":
            stack.append(c.args[0])
        elif isinstance(c, And):
            stack += [c.b, c.a]
        else:
            out.append(c)
    return out


def _inner_ranges(body: Stmt) -> dict[Var, Any]:
    ranges: dict[Var, Any] = {}
    seen: set[int] = set()
    stack = [body]  # loops are statements: the walk need not enter expressions
    while stack:
        s = stack.pop()
        if id(s) in seen:
            continue
        seen.add(id(s))
        if isinstance(s, For):
            ranges[s.loop_var] = Range(s.min, s.extent)
        kids = stmt_children(s)
        kids.reverse()
        stack.extend(kids)
    return ranges


def _true_interval(cond: PrimExpr, var: Var, ranges: dict[Var, Any]) -> Interval | None:
    """The values of `var` for which the conjuncts of `cond` that depend on `var` hold
    whatever the other variables are; None when no conjunct is a comparison linear in `var`
    with a bounded remainder. (Conjuncts that do not mention `var` are left to inner loops.)"""
    lo, hi = -math.inf, math.inf
    found = False
    for c in _conjuncts(cond):
        if not any(n is var for n in sub_expressions(c)):
            continue
        if not isinstance(c, (LT, LE, GT, GE)) or c.a.dtype != INDEX_DTYPE:
            return None
        # normalize to  d <= 0
        d = Sub(c.a, c.b) if isinstance(c, (LT, LE)) else Sub(c.b, c.a)
        offset = 1 if isinstance(c, (LT, GT)) else 0
        form = linear_form(simplify(d), var)
        if form is None or form[0] == 0:
            return None
        a, rest = form
        r_hi = const_int_bound(simplify(rest), ranges)[1] + offset
        if not math.isfinite(r_hi):
            return None
        # a*v + r_hi <= 0
        if a > 0:
            hi = min(hi, math.floor(-r_hi / a))
        else:
            lo = max(lo, math.ceil(r_hi / -a))
        found = True
    return (lo, hi) if found else None


class _Partitioner(StmtMutator):
    def __init__(self) -> None:
        self.ranges: dict[Var, Any] = {}
        self.saved: list[dict[Var, Any]] = []
        self.copies = 0
        self.count = 0
        self.in_split = 0  # split loops around the statement being visited
        self.guards = _Guards()

    def enter(self, s: Stmt) -> Stmt:
        if not isinstance(s, For) or s.annotations.get("partitioned"):
            return s
        m, e = s.min, s.extent
        if not (isinstance(m, IntImm) and isinstance(e, IntImm)) or e.value < 2:
            return s
        var = s.loop_var
        guards = self.guards.mentioning(s.body, var)
        if not guards:
            return s
        ranges = {**self.ranges, s.loop_var: Range(m, e), **_inner_ranges(s.body)}
        # guards that enclosing partitions already decided need no split here
        under = Simplifier(ranges)  # one memo for guards that share subexpressions
        open_guards = [g for g in map(under.simplify, guards) if const_bool(g) is None]
        decided = len(open_guards) < len(guards)  # guards that simplifying removes
        guards = open_guards
        first, last = m.value, m.value + e.value - 1
        lo, hi = float(first), float(last)
        found = False
        for g in guards:
            iv = _true_interval(g, s.loop_var, ranges)
            if iv is None:
                continue
            glo, ghi = max(iv[0], first), min(iv[1], last)
            if glo > ghi:
                continue
            if found and (max(lo, glo) > min(hi, ghi)):
                continue
            lo, hi = max(lo, glo), min(hi, ghi)
            found = True
        if not found or (lo == first and hi == last) or self.copies + 2 > _MAX_COPIES:
            # no split; guards decided here (or true throughout) go when simplified
            return _mark(s, SPLIT if decided or found else True)
        self.copies += 2
        self.count += 1
        mid_lo, mid_hi = int(lo), int(hi)
        parts: list[Stmt] = []
        if mid_lo > first:
            parts.append(_copy(s, first, mid_lo - first))
        middle = attrs.evolve(s, min=IntImm(mid_lo), extent=IntImm(mid_hi - mid_lo + 1))
        parts.append(_mark(middle, SPLIT))
        if mid_hi < last:
            parts.append(_copy(s, mid_hi + 1, last - mid_hi))
        return make_seq(parts)

    def open_scope(self, s: Stmt, index: int) -> None:
        self.saved.append(self.ranges)
        self.ranges = scope_ranges(s, index, self.ranges)
        if isinstance(s, For):
            self.in_split += _is_split(s)

    def close_scope(self, s: Stmt, index: int) -> None:
        self.ranges = self.saved.pop()
        if isinstance(s, For):
            self.in_split -= _is_split(s)

    def leave(self, s: Stmt, entered: Stmt) -> Stmt:
        # The rest of the kernel is as simplified as it came in: only the parts of split
        # loops (outermost ones, with what encloses them) need simplifying again.
        if self.in_split == 0 and isinstance(s, For) and _is_split(s):
            return simplify_stmt(s, self.ranges)
        return s


def _is_split(s: For) -> bool:
    return s.annotations.get("partitioned") == SPLIT


SPLIT = "split"
"""The `partitioned` annotation of the parts of a split loop and of a loop whose guards
hold for all its iterations (simplified after the walk); other loops get True."""


def _mark(s: For, how: object = True) -> For:
    return attrs.evolve(s, annotations={**s.annotations, "partitioned": how})


def _copy(s: For, start: int, extent: int) -> Stmt:
    var = Var(s.loop_var.name, s.loop_var.dtype)
    body = fresh_binders(s.body, {s.loop_var: var})
    return _mark(For(var, IntImm(start), IntImm(extent), s.kind, body, s.annotations), SPLIT)


def _unmark(s: Stmt) -> Stmt:
    class Unmark(StmtMutator):
        def leave(self, t: Stmt, entered: Stmt) -> Stmt:
            if isinstance(t, For) and "partitioned" in t.annotations:
                ann = {k: v for k, v in t.annotations.items() if k != "partitioned"}
                return attrs.evolve(t, annotations=ann)
            return t

    return Unmark().visit(s)


def loop_partition(func: PrimFunc) -> PrimFunc:
    """`func` with loops split so that `likely`/`if_then_else` guards disappear from their
    bulk (see the module docstring)."""
    p = _Partitioner()
    body = p.visit(func.body)
    if body is func.body:
        return func
    return attrs.evolve(func, body=_unmark(body))


__all__ = ["loop_partition"]
