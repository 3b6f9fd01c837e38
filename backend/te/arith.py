"""Index arithmetic for schedules: folding constructors, linear canonical forms and intervals.

Bound inference and lowering build index expressions (`i.outer * 4 + i.inner`, region
offsets, extents) and need three things from them, all over `int64` indices:

* `simplify(e)`: a canonical sum of `coefficient * atom` terms plus a constant, so that
  `(o * 4 + 3) - o * 4 + 1` becomes `4` and `(o * 4 + i) - o * 4` becomes `i`;
* `interval(e, relax)`: the range `[lo, hi]` (inclusive, as expressions) of `e` when the
  variables of `relax` range over their intervals and every other variable is fixed;
* `const_bound(e, ranges)`: the same with constant ranges, as Python integers.

Every walk keeps its own stack; nothing recurses on the depth of an expression.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from ..tir.dtypes import INDEX_DTYPE, is_bool, is_int, is_uint, lanes_of
from ..tir.expr import (
    Add,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    PrimExpr,
    Reduce,
    Select,
    Sub,
    Var,
    const,
)
from ..tir.visitor import children, rewrite_expr

Bound = tuple[PrimExpr | None, PrimExpr | None]
"""An interval `[lo, hi]` (inclusive); None on a side means unbounded."""


def as_int(e: PrimExpr) -> int | None:
    """The value of an integer constant, else None."""
    return e.value if isinstance(e, IntImm) and not is_bool(e.dtype) else None


def _c(value: int, like: PrimExpr) -> PrimExpr:
    return const(value, like.dtype)


# --------------------------------------------------------------------- folding constructors


def add(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`a + b`, folding constants and zeros."""
    x, y = as_int(a), as_int(b)
    if x is not None and y is not None:
        return _c(x + y, a)
    if x == 0:
        return b
    if y == 0:
        return a
    return Add(a, b)


def sub(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`a - b`, folding constants and zeros."""
    x, y = as_int(a), as_int(b)
    if x is not None and y is not None:
        return _c(x - y, a)
    if y == 0:
        return a
    if a is b:
        return _c(0, a)
    return Sub(a, b)


def mul(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`a * b`, folding constants, ones and zeros."""
    x, y = as_int(a), as_int(b)
    if x is not None and y is not None:
        return _c(x * y, a)
    if x == 1:
        return b
    if y == 1:
        return a
    if x == 0 or y == 0:
        return _c(0, a)
    return Mul(a, b)


def floordiv(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`a // b` (floor), folding constants and division by one."""
    x, y = as_int(a), as_int(b)
    if x is not None and y is not None and y != 0:
        return _c(x // y, a)
    if y == 1:
        return a
    return FloorDiv(a, b)


def floormod(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`a % b` (floor), folding constants and modulo one."""
    x, y = as_int(a), as_int(b)
    if x is not None and y is not None and y != 0:
        return _c(x % y, a)
    if y == 1:
        return _c(0, a)
    return FloorMod(a, b)


def ceildiv(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`ceil(a / b)` for a positive `b`."""
    return floordiv(add(a, sub(b, _c(1, b))), b)


def _const_difference(a: PrimExpr, b: PrimExpr) -> int | None:
    return as_int(simplify(Sub(a, b))) if a.dtype == b.dtype == INDEX_DTYPE else None


def minimum(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`min(a, b)`, deciding it when `a - b` is a constant."""
    if a is b:
        return a
    d = _const_difference(a, b)
    if d is not None:
        return a if d <= 0 else b
    return Min(a, b)


def maximum(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """`max(a, b)`, deciding it when `a - b` is a constant."""
    if a is b:
        return a
    d = _const_difference(a, b)
    if d is not None:
        return a if d >= 0 else b
    return Max(a, b)


# ----------------------------------------------------------------------------- linear forms

# A linear form: ({key(atom): (atom, coefficient)}, constant). Atoms are variables or
# expressions that are not linear; their keys are structural (two copies of `f // 3` are
# the same atom), variables by identity.
Key = Any
Linear = tuple[dict[Key, tuple[PrimExpr, int]], int]


def _lin_add(a: Linear, b: Linear, sign: int) -> Linear:
    terms = dict(a[0])
    for key, (atom, coef) in b[0].items():
        old = terms.get(key)
        total = (old[1] if old else 0) + sign * coef
        if total == 0:
            terms.pop(key, None)
        else:
            terms[key] = (atom, total)
    return terms, a[1] + sign * b[1]


def _lin_scale(a: Linear, k: int) -> Linear:
    if k == 0:
        return {}, 0
    return {key: (atom, coef * k) for key, (atom, coef) in a[0].items()}, a[1] * k


def _lin_expr(form: Linear) -> PrimExpr:
    terms, constant = form
    result: PrimExpr | None = None
    for atom, coef in terms.values():
        if result is None:
            result = atom if coef == 1 else Mul(atom, const(coef, INDEX_DTYPE))
        elif coef == 1:
            result = Add(result, atom)
        elif coef == -1:
            result = Sub(result, atom)
        elif coef < 0:
            result = Sub(result, Mul(atom, const(-coef, INDEX_DTYPE)))
        else:
            result = Add(result, Mul(atom, const(coef, INDEX_DTYPE)))
    if result is None:
        return const(constant, INDEX_DTYPE)
    if constant > 0:
        return Add(result, const(constant, INDEX_DTYPE))
    if constant < 0:
        return Sub(result, const(-constant, INDEX_DTYPE))
    return result


def _form_key(form: Linear) -> Key:
    return ("lin", frozenset((k, c) for k, (_, c) in form[0].items()), form[1])


class _Canon:
    """Bottom-up canonicalization state: the linear form and structural key of each node
    produced so far (by identity of the produced node)."""

    def __init__(self) -> None:
        self.forms: dict[int, Linear] = {}
        self.keys: dict[int, Key] = {}

    def key(self, node: Any) -> Key:
        """A structural key of an already visited node (identity for unknown ones)."""
        known = self.keys.get(id(node))
        if known is not None:
            return known
        if isinstance(node, Var):
            return ("var", id(node))
        if isinstance(node, (IntImm, FloatImm)):
            return ("imm", node.value, node.dtype)
        if not isinstance(node, PrimExpr) or not attrs.has(type(node)):
            return ("id", id(node))
        parts: list[Any] = [type(node).__name__]
        for f in attrs.fields(type(node)):  # type: ignore[arg-type]
            value = getattr(node, f.name)
            if isinstance(value, PrimExpr):
                parts.append(self.key(value) if id(value) in self.keys else ("id", id(value)))
            elif isinstance(value, tuple):
                parts.append(tuple(self.keys.get(id(v), ("id", id(v))) for v in value))
            elif isinstance(value, (str, int, float, bool)):
                parts.append(value)
            else:
                parts.append(("id", id(value)))
        return tuple(parts)

    def lin(self, e: PrimExpr) -> Linear:
        """The linear form of a visited node (an atom when it is not linear)."""
        known = self.forms.get(id(e))
        if known is not None:
            return known
        value = as_int(e)
        if value is not None:
            return {}, value
        return {self.key(e): (e, 1)}, 0

    def visit(self, node: Any) -> Any:
        """Canonicalize `node` (children already canonical); None keeps it."""
        out: Any = None
        if isinstance(node, PrimExpr) and node.dtype == INDEX_DTYPE:
            form = self._form(node)
            if isinstance(node, (Var, IntImm)) and form is not None:
                self.forms[id(node)] = form
            elif form is not None:
                out = _lin_expr(form)
                self.forms[id(out)] = form
                self.keys[id(out)] = _form_key(form)
        result = node if out is None else out
        if id(result) not in self.keys:
            form = self.forms.get(id(result))
            self.keys[id(result)] = self.key(result) if form is None else _form_key(form)
        return out

    def _form(self, node: PrimExpr) -> Linear | None:
        if isinstance(node, Var):
            return {("var", id(node)): (node, 1)}, 0
        if isinstance(node, IntImm):
            return {}, node.value
        if isinstance(node, (Add, Sub)):
            sign = 1 if isinstance(node, Add) else -1
            return _lin_add(self.lin(node.a), self.lin(node.b), sign)
        if isinstance(node, Mul):
            la, lb = self.lin(node.a), self.lin(node.b)
            if not lb[0]:
                return _lin_scale(la, lb[1])
            if not la[0]:
                return _lin_scale(lb, la[1])
            return None
        if isinstance(node, (FloorDiv, FloorMod)):
            c = as_int(node.b)
            if c is None or c <= 0:
                return None
            la = self.lin(node.a)
            whole = {k: (a, co) for k, (a, co) in la[0].items() if co % c == 0}
            rest = {k: (a, co) for k, (a, co) in la[0].items() if co % c != 0}
            if isinstance(node, FloorDiv):
                if rest:
                    return None
                return {k: (a, co // c) for k, (a, co) in whole.items()}, la[1] // c
            if not rest:
                return {}, la[1] % c
            if not whole:
                return None
            inner_form: Linear = (rest, la[1])
            atom = FloorMod(_lin_expr(inner_form), node.b)
            key = ("FloorMod", INDEX_DTYPE, _form_key(inner_form), ("imm", c, INDEX_DTYPE))
            self.keys[id(atom)] = key
            return {key: (atom, 1)}, 0
        if isinstance(node, (Min, Max)):
            diff = _lin_add(self.lin(node.a), self.lin(node.b), -1)
            if diff[0]:
                return None
            pick_a = diff[1] <= 0 if isinstance(node, Min) else diff[1] >= 0
            return self.lin(node.a if pick_a else node.b)
        return None


def simplify(e: PrimExpr) -> PrimExpr:
    """`e` with its `int64` affine parts in canonical form (a sum of scaled atoms and a
    constant, like terms combined; structurally equal atoms are combined). Other nodes are
    kept, with simplified children."""
    return rewrite_expr(e, _Canon().visit)  # type: ignore[no-any-return]


# -------------------------------------------------------------------------------- intervals

_IMPURE = (BufferLoad, Reduce)


def _is_impure(node: Any) -> bool:
    from .tensor import ProducerLoad

    return isinstance(node, (*_IMPURE, ProducerLoad))


def _both(
    f: Callable[[PrimExpr, PrimExpr], PrimExpr], x: PrimExpr | None, y: PrimExpr | None
) -> PrimExpr | None:
    return None if x is None or y is None else f(x, y)


def _either(
    f: Callable[[PrimExpr, PrimExpr], PrimExpr], x: PrimExpr | None, y: PrimExpr | None
) -> PrimExpr | None:
    """Combine two bounds where one known side is enough (the min of `hi`s, the max of `lo`s)."""
    if x is None:
        return y
    if y is None:
        return x
    return f(x, y)


def _is_int_scalar(dtype: str) -> bool:
    return (is_int(dtype) or is_uint(dtype)) and lanes_of(dtype) == 1


def _interval_node(node: PrimExpr, kids: list[Bound]) -> Bound:
    """The interval of `node` from the intervals of its children."""
    none: Bound = (None, None)
    if isinstance(node, Add):
        (la, ha), (lb, hb) = kids
        return _both(add, la, lb), _both(add, ha, hb)
    if isinstance(node, Sub):
        (la, ha), (lb, hb) = kids
        return _both(sub, la, hb), _both(sub, ha, lb)
    if isinstance(node, Mul):
        return _interval_mul(kids[0], kids[1])
    if isinstance(node, (FloorDiv, Div)):
        (la, ha), (lb, hb) = kids
        c = as_int(lb) if lb is not None and lb is hb else None
        if c is None or c <= 0:
            return none
        div = floordiv if isinstance(node, FloorDiv) else _truncdiv
        return _both(div, la, _c(c, node.b)), _both(div, ha, _c(c, node.b))
    if isinstance(node, (FloorMod, Mod)):
        return _interval_mod(node, kids[0], kids[1])
    if isinstance(node, Min):
        (la, ha), (lb, hb) = kids
        return _both(minimum, la, lb), _either(minimum, ha, hb)
    if isinstance(node, Max):
        (la, ha), (lb, hb) = kids
        return _either(maximum, la, lb), _both(maximum, ha, hb)
    if isinstance(node, Select):
        (_, _), (lt, ht), (lf, hf) = kids
        return _both(minimum, lt, lf), _both(maximum, ht, hf)
    if isinstance(node, Call) and node.name == "if_then_else":
        (_, _), (lt, ht), (lf, hf) = kids
        return _both(minimum, lt, lf), _both(maximum, ht, hf)
    if isinstance(node, Cast) and _is_int_scalar(node.dtype):
        (lo, hi) = kids[0]
        src = node.value.dtype
        if is_bool(src):
            return const(0, node.dtype), const(1, node.dtype)
        if _is_int_scalar(src):
            cast_of: Callable[[PrimExpr], PrimExpr] = lambda x: _cast(node.dtype, x)  # noqa: E731
            return (None if lo is None else cast_of(lo)), (None if hi is None else cast_of(hi))
    return none


def _cast(dtype: str, x: PrimExpr) -> PrimExpr:
    value = as_int(x)
    return const(value, dtype) if value is not None else Cast(dtype, x)


def _truncdiv(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    x, y = as_int(a), as_int(b)
    if x is not None and y is not None and y != 0:
        q = abs(x) // abs(y)
        return _c(q if (x >= 0) == (y > 0) else -q, a)
    return a if y == 1 else Div(a, b)


def _interval_mul(a: Bound, b: Bound) -> Bound:
    (la, ha), (lb, hb) = a, b
    ka = as_int(la) if la is not None and la is ha else None
    kb = as_int(lb) if lb is not None and lb is hb else None
    if ka is not None or kb is not None:
        (lo, hi), k = (a, kb) if kb is not None else (b, ka)
        assert k is not None
        scaled = [None if x is None else mul(x, _c(k, x)) for x in (lo, hi)]
        return (scaled[0], scaled[1]) if k >= 0 else (scaled[1], scaled[0])
    if la is not None and la is ha and lb is not None and lb is hb:
        return mul(la, lb), mul(la, lb)
    corners = [None if x is None else as_int(x) for x in (la, ha, lb, hb)]
    if la is None or any(c is None for c in corners):
        return None, None
    xa, ya, xb, yb = (int(c) for c in corners)  # type: ignore[arg-type]
    products = [xa * xb, xa * yb, ya * xb, ya * yb]
    return _c(min(products), la), _c(max(products), la)


def _interval_mod(node: PrimExpr, a: Bound, b: Bound) -> Bound:
    (la, ha), (lb, hb) = a, b
    c = as_int(lb) if lb is not None and lb is hb else None
    if c is None or c <= 0:
        return None, None
    x = as_int(la) if la is not None else None
    y = as_int(ha) if ha is not None else None
    if x is not None and y is not None and x >= 0 and x // c == y // c:
        return _c(x % c, node), _c(y % c, node)
    if isinstance(node, FloorMod) or (x is not None and x >= 0):
        return _c(0, node), _c(c - 1, node)
    return _c(-(c - 1), node), _c(c - 1, node)


def interval(e: PrimExpr, relax: Mapping[Var, tuple[PrimExpr, PrimExpr]]) -> Bound:
    """The range `[lo, hi]` of `e` when each variable of `relax` ranges over its inclusive
    interval and every other variable is fixed (a fixed subexpression is its own bound).
    Sides that cannot be bounded are None (reads of memory, unknown operations)."""
    relaxed = {id(v): r for v, r in relax.items()}
    results: dict[int, Bound] = {}
    varies: dict[int, bool] = {}
    stack: list[tuple[Any, bool]] = [(e, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in results:
            continue
        kids = [k for k in children(node) if isinstance(k, PrimExpr)]
        if not expanded:
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in results)
            continue
        varying = id(node) in relaxed or any(varies[id(k)] for k in kids)
        varies[id(node)] = varying or _is_impure(node)
        if isinstance(node, Var) and id(node) in relaxed:
            results[id(node)] = relaxed[id(node)]
        elif not varies[id(node)]:
            results[id(node)] = (node, node)
        elif _is_impure(node):
            results[id(node)] = (None, None)
        else:
            results[id(node)] = _interval_node(node, [results[id(k)] for k in kids])
    lo, hi = results[id(e)]
    return (None if lo is None else simplify(lo)), (None if hi is None else simplify(hi))


def const_bound(
    e: PrimExpr, ranges: Mapping[Var, tuple[int, int]]
) -> tuple[int | None, int | None]:
    """Constant bounds of `e` when each variable of `ranges` lies in its inclusive interval
    (None on a side that is not a known constant)."""
    relax = {v: (const(lo, v.dtype), const(hi, v.dtype)) for v, (lo, hi) in ranges.items()}
    lo, hi = interval(e, relax)
    return (None if lo is None else as_int(lo)), (None if hi is None else as_int(hi))


__all__ = [
    "Bound",
    "add",
    "as_int",
    "ceildiv",
    "const_bound",
    "floordiv",
    "floormod",
    "interval",
    "maximum",
    "minimum",
    "mul",
    "simplify",
    "sub",
]
