"""Bounds of integer expressions: interval analysis with variable ranges.

* `const_int_bound(e, ranges)`: constant inclusive bounds `(lo, hi)` (either may be `±inf`)
  when each variable of `ranges` lies in its range and every other one anywhere in its
  dtype; `const_bound` is the same with unknown sides as None.
* `interval(e, relax)`: symbolic bounds, `[lo, hi]` as expressions, when the variables of
  `relax` range over their intervals and every other variable is fixed (bound inference
  asks "which region does this read cover while the inner loops run?").

Proofs that need the difference of two integers (`a < b` from the bounds of `a - b`) assume
no overflow; `const_int_bound` widens to the whole dtype when a result may wrap.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..dtypes import is_bool, is_int, is_uint, lanes_of
from ..expr import (
    Add,
    And,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    CmpOp,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    Range,
    Reduce,
    Select,
    Sub,
    Var,
    const,
)
from ..visitor import children
from .canonical import canonical
from .constants import INF, Bound, as_int, dtype_bound
from .fold import add, floordiv, maximum, minimum, mul, sub

VarRanges = Mapping[Var, Range | Bound | tuple[int, int]]
"""Variable ranges: a `Range` (`[min, min + extent)`) or an inclusive `(lo, hi)`."""

SymBound = tuple[PrimExpr | None, PrimExpr | None]
"""A symbolic interval `[lo, hi]` (inclusive); None on a side means unbounded."""


def _is_index(dtype: str) -> bool:
    return is_int(dtype) or is_uint(dtype)


# ------------------------------------------------------------------------ constant bounds


def _mul(a: float, b: float) -> float:
    if a == 0 or b == 0:
        return 0
    return a * b


def _floordiv_bound(x: float, c: int) -> float:
    if x in (INF, -INF):
        return x if c > 0 else -x
    return x // c  # type: ignore[no-any-return]


def _range_bound(r: Any, var_ranges: VarRanges) -> Bound:
    if isinstance(r, Range):
        lo = const_int_bound(r.min, var_ranges)
        ext = const_int_bound(r.extent, var_ranges)
        return (lo[0], lo[1] + ext[1] - 1)
    lo, hi = r
    return (lo, hi)


def const_int_bound(expr: PrimExpr, var_ranges: VarRanges | None = None) -> Bound:
    """Inclusive bounds `(lo, hi)` of an integer expression, either may be `±inf`.

    `var_ranges` maps variables to a `Range` (`[min, min + extent)`) or an inclusive
    `(lo, hi)`; other variables range over their dtype. Exact for + - * and for FloorDiv /
    FloorMod / Div / Mod / Min / Max with the usual interval rules."""
    ranges: VarRanges = var_ranges or {}
    e = expr
    if isinstance(e, IntImm):
        return (e.value, e.value)
    if isinstance(e, Var):
        r = ranges.get(e)
        full = dtype_bound(e.dtype)
        if r is None:
            return full
        lo, hi = _range_bound(r, ranges)
        return (max(lo, full[0]), min(hi, full[1]))
    if isinstance(e, FloatImm):
        return (math.floor(e.value), math.ceil(e.value)) if math.isfinite(e.value) else (-INF, INF)
    if not (_is_index(e.dtype) or is_bool(e.dtype)):
        return (-INF, INF)
    full = dtype_bound(e.dtype)
    out = _bound_of(e, ranges)
    if out is None:
        return full
    lo, hi = out
    if lo < full[0] or hi > full[1]:  # may overflow and wrap
        return full
    return (lo, hi)


def _bound_of(e: PrimExpr, ranges: VarRanges) -> Bound | None:
    b = const_int_bound
    if isinstance(e, (Add, Sub, Mul, Min, Max, FloorDiv, FloorMod, Div, Mod)):
        la, ha = b(e.a, ranges)
        lb, hb = b(e.b, ranges)
        if isinstance(e, Add):
            return (la + lb, ha + hb)
        if isinstance(e, Sub):
            return (la - hb, ha - lb)
        if isinstance(e, Mul):
            corners = [_mul(x, y) for x in (la, ha) for y in (lb, hb)]
            return (min(corners), max(corners))
        if isinstance(e, Min):
            return (min(la, lb), min(ha, hb))
        if isinstance(e, Max):
            return (max(la, lb), max(ha, hb))
        if isinstance(e, (FloorDiv, Div)):
            if lb > 0 or hb < 0:
                if isinstance(e, Div) and la < 0:
                    # truncation: between floor and ceil results
                    lim = max(abs(la), abs(ha))
                    return (-lim, lim)
                corners = [_floordiv_bound(x, int(y)) for x in (la, ha) for y in (lb, hb)
                           if math.isfinite(y)]  # fmt: skip
                if not math.isfinite(lb) or not math.isfinite(hb):
                    corners += [0, -1] if la < 0 else [0]
                return (min(corners), max(corners))
            return None
        if isinstance(e, FloorMod):
            if lb == hb and lb > 0:
                c = int(lb)
                if la >= 0 and math.isfinite(ha) and la // c == ha // c:
                    return (la % c, ha % c)
                return (0, c - 1)
            if lb > 0:
                return (0, hb - 1)
            return None
        if isinstance(e, Mod):
            if lb > 0:
                m = hb - 1
                if la >= 0:
                    if lb == hb and math.isfinite(ha) and la // lb == ha // lb:
                        return (la % lb, ha % lb)
                    return (0, min(m, ha))
                return (max(-m, la), min(m, max(ha, 0)))
            return None
    if isinstance(e, Cast):
        if _is_index(e.value.dtype) or is_bool(e.value.dtype):
            return b(e.value, ranges)
        return None
    if isinstance(e, Select):
        t, f = b(e.true_value, ranges), b(e.false_value, ranges)
        return (min(t[0], f[0]), max(t[1], f[1]))
    if isinstance(e, Call) and e.name == "if_then_else":
        t, f = b(e.args[1], ranges), b(e.args[2], ranges)
        return (min(t[0], f[0]), max(t[1], f[1]))
    if isinstance(e, Let):
        inner = dict(ranges)
        inner[e.var] = b(e.value, ranges)
        return b(e.body, inner)
    if isinstance(e, Broadcast):
        return b(e.value, ranges)
    if isinstance(e, Ramp):
        base, stride = b(e.base, ranges), b(e.stride, ranges)
        n = e.lanes - 1
        corners = [base[0] + _mul(stride[0], n), base[1] + _mul(stride[1], n)]
        return (min(base[0], *corners), max(base[1], *corners))
    if isinstance(e, (CmpOp, And, Or, Not)):
        return (0, 1)
    return None


def const_bound(
    e: PrimExpr, ranges: Mapping[Var, tuple[int, int]]
) -> tuple[int | None, int | None]:
    """Constant bounds of `e` when each variable of `ranges` lies in its inclusive interval,
    None on a side that is not known (infinite or the whole dtype)."""
    lo, hi = const_int_bound(e, ranges)
    full = dtype_bound(e.dtype)
    return (
        None if lo == full[0] or not math.isfinite(lo) else int(lo),
        None if hi == full[1] or not math.isfinite(hi) else int(hi),
    )


# ------------------------------------------------------------------------ symbolic bounds


def _like(value: int, like: PrimExpr) -> PrimExpr:
    return const(value, like.dtype)


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


def _interval_node(node: PrimExpr, kids: list[SymBound]) -> SymBound:
    """The interval of `node` from the intervals of its children."""
    none: SymBound = (None, None)
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
        return _both(div, la, _like(c, node.b)), _both(div, ha, _like(c, node.b))
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
        return _like(q if (x >= 0) == (y > 0) else -q, a)
    return a if y == 1 else Div(a, b)


def _interval_mul(a: SymBound, b: SymBound) -> SymBound:
    (la, ha), (lb, hb) = a, b
    ka = as_int(la) if la is not None and la is ha else None
    kb = as_int(lb) if lb is not None and lb is hb else None
    if ka is not None or kb is not None:
        (lo, hi), k = (a, kb) if kb is not None else (b, ka)
        assert k is not None
        scaled = [None if x is None else mul(x, _like(k, x)) for x in (lo, hi)]
        return (scaled[0], scaled[1]) if k >= 0 else (scaled[1], scaled[0])
    if la is not None and la is ha and lb is not None and lb is hb:
        return mul(la, lb), mul(la, lb)
    corners = [None if x is None else as_int(x) for x in (la, ha, lb, hb)]
    if la is None or any(c is None for c in corners):
        return None, None
    xa, ya, xb, yb = (int(c) for c in corners)  # type: ignore[arg-type]
    products = [xa * xb, xa * yb, ya * xb, ya * yb]
    return _like(min(products), la), _like(max(products), la)


def _interval_mod(node: PrimExpr, a: SymBound, b: SymBound) -> SymBound:
    (la, ha), (lb, hb) = a, b
    c = as_int(lb) if lb is not None and lb is hb else None
    if c is None or c <= 0:
        return None, None
    x = as_int(la) if la is not None else None
    y = as_int(ha) if ha is not None else None
    if x is not None and y is not None and x >= 0 and x // c == y // c:
        return _like(x % c, node), _like(y % c, node)
    if isinstance(node, FloorMod) or (x is not None and x >= 0):
        return _like(0, node), _like(c - 1, node)
    return _like(-(c - 1), node), _like(c - 1, node)


def interval(
    e: PrimExpr,
    relax: Mapping[Var, tuple[PrimExpr, PrimExpr]],
    opaque: tuple[type, ...] = (),
) -> SymBound:
    """The range `[lo, hi]` of `e` when each variable of `relax` ranges over its inclusive
    interval and every other variable is fixed (a fixed subexpression is its own bound).
    Sides that cannot be bounded are None: reads of memory (`BufferLoad`, and the node
    classes of `opaque`, such as TE's `ProducerLoad`), reductions, unknown operations."""
    unknown = (BufferLoad, Reduce, *opaque)
    relaxed = {id(v): r for v, r in relax.items()}
    results: dict[int, SymBound] = {}
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
        varies[id(node)] = varying or isinstance(node, unknown)
        if isinstance(node, Var) and id(node) in relaxed:
            results[id(node)] = relaxed[id(node)]
        elif not varies[id(node)]:
            results[id(node)] = (node, node)
        elif isinstance(node, unknown):
            results[id(node)] = (None, None)
        else:
            results[id(node)] = _interval_node(node, [results[id(k)] for k in kids])
    lo, hi = results[id(e)]
    return (None if lo is None else canonical(lo)), (None if hi is None else canonical(hi))


__all__ = ["SymBound", "VarRanges", "const_bound", "const_int_bound", "interval"]
