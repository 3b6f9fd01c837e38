"""The simplifier's rules: a table of patterns (node classes plus a guard) and callbacks.

Each `Rule` names the node classes it looks at and a callback `(simplifier, node) -> new
node | None` that is called on a node whose children are already simplified; None (or the
node itself) means "does not apply". For one node the rules of its class run in table order
and the first that applies wins; `Simplifier` (in `simplifier`) drives them bottom-up and
gives them the variable ranges and bounds they may use (`s.bound`, `s.prove_le`).

Folding follows each dtype's semantics (integers wrap, float32 rounds; transcendental
intrinsics are not folded). Rules that need the difference of two integers, or that divide,
assume no overflow and so apply to `int64` (index) arithmetic only.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING

from attrs import frozen

from ..analysis import prim_equal, uses_var
from ..dtypes import INDEX_DTYPE, element_of, is_float, is_int, is_uint, lanes_of
from ..evaluate import evaluate_expr
from ..expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    BinaryOp,
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
    Select,
    Sub,
    Var,
)
from ..visitor import children, substitute
from .constants import bool_const, const_bool, int_value, make_const

if TYPE_CHECKING:
    from .simplifier import Simplifier

RuleFn = Callable[["Simplifier", PrimExpr], PrimExpr | None]


@frozen
class Rule:
    """One rewrite: the node classes it matches (subclasses included) and its callback."""

    name: str
    types: tuple[type, ...]
    fn: RuleFn

    @property
    def doc(self) -> str:
        """What the rule does (its callback's docstring)."""
        return (self.fn.__doc__ or "").strip()


def _scalar_int(dtype: str) -> bool:
    return lanes_of(dtype) == 1 and (is_int(dtype) or is_uint(dtype))


def _is_const(e: PrimExpr) -> bool:
    return isinstance(e, (IntImm, FloatImm))


def _zero(e: PrimExpr) -> PrimExpr:
    return make_const(0, e.dtype)


_EXACT_CALLS = frozenset(
    ["floor", "ceil", "round", "nearbyint", "trunc", "fabs", "bitwise_not", "popcount",
     "isnan", "isinf", "isfinite", "likely", "fmod", "copysign", "bitwise_and",
     "bitwise_or", "bitwise_xor", "shift_left", "shift_right", "reinterpret"]
)  # fmt: skip
"""Intrinsics folded on constants (the others may differ by an ulp from native code)."""

_NOT_FOLDED = (IntImm, FloatImm, Var, BufferLoad, Let, Ramp, Broadcast)


# ----------------------------------------------------------------------------- constants


def fold_constants(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """A scalar node whose operands are all constants is evaluated (`2 + 3` → `5`, integers
    wrap); integer division by zero and inexact intrinsics are left alone."""
    if isinstance(e, _NOT_FOLDED) or lanes_of(e.dtype) != 1:
        return None
    if isinstance(e, Call) and e.name not in _EXACT_CALLS:
        return None
    if isinstance(e, (BinaryOp, CmpOp)):  # the common case, without the generic walk
        a, b = e.a, e.b
        if not (_is_const(a) and _is_const(b)):
            return None
        if type(a) is IntImm and type(b) is IntImm and a.dtype == INDEX_DTYPE:
            folded = _fold_index(type(e), a.value, b.value)
            if folded is not None:
                return make_const(folded, e.dtype)
    else:
        kids = children(e)
        if not kids or not all(_is_const(k) for k in kids):
            return None
    is_div = isinstance(e, (Div, Mod, FloorDiv, FloorMod))
    if is_div and not is_float(e.dtype) and e.b.value == 0:  # type: ignore[attr-defined]
        return None
    try:
        value = evaluate_expr(e)
    except Exception:
        return None
    return make_const(value[0], e.dtype)


_INDEX_FOLDS: dict[type, Callable[[int, int], int | bool]] = {
    Add: operator.add,
    Sub: operator.sub,
    Mul: operator.mul,
    Min: min,
    Max: max,
    FloorDiv: operator.floordiv,
    FloorMod: operator.mod,
    EQ: operator.eq,
    NE: operator.ne,
    LT: operator.lt,
    LE: operator.le,
    GT: operator.gt,
    GE: operator.ge,
}
"""Operators on two `int64` constants folded with Python integers (`make_const` wraps the
result as int64 arithmetic would), without the evaluator."""


def _fold_index(cls: type, a: int, b: int) -> int | bool | None:
    """`a cls b` for two int64 values, or None (another operator, division by zero)."""
    op = _INDEX_FOLDS.get(cls)
    if op is None or (b == 0 and (cls is FloorDiv or cls is FloorMod)):
        return None
    return op(a, b)


# ---------------------------------------------------------------------------- integer sums


def linear_sum(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """A scalar integer `+`, `-` or multiplication by a constant is put in canonical form
    (`2 + i*4 + i` → `i*5 + 2`, `x - x` → `0`, `(x//c)*c + x%c` → `x`)."""
    if not _scalar_int(e.dtype):
        return None
    if isinstance(e, Mul) and not (isinstance(e.a, IntImm) or isinstance(e.b, IntImm)):
        return None
    return s.sum_form(e)


def float_identities(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """Exact float identities: `x*1`, `1*x`, `x/1` → `x`, `x - 0.0` → `x`; a constant operand
    of `+`/`*` moves to the right."""
    assert isinstance(e, BinaryOp)
    if isinstance(e, Div):
        if not is_float(e.dtype):
            return None
    elif lanes_of(e.dtype) != 1 or _scalar_int(e.dtype):
        return None
    b = e.b
    if isinstance(b, FloatImm):
        if isinstance(e, (Mul, Div)) and b.value == 1.0:
            return e.a
        if isinstance(e, Sub) and b.value == 0.0 and math.copysign(1.0, b.value) > 0:
            return e.a
    if isinstance(e, Mul) and isinstance(e.a, FloatImm) and e.a.value == 1.0:
        return e.b
    if isinstance(e, (Add, Mul)) and isinstance(e.a, FloatImm) and not isinstance(b, FloatImm):
        return type(e)(b, e.a)
    return None


# --------------------------------------------------------------------------------- vectors


def vector_broadcasts(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """`x(a) op x(b)` → `x(a op b)` (a broadcast of the scalar result)."""
    assert isinstance(e, BinaryOp)
    a, b = e.a, e.b
    if lanes_of(e.dtype) > 1 and isinstance(a, Broadcast) and isinstance(b, Broadcast):
        return Broadcast(s.simplify(type(e)(a.value, b.value)), a.lanes)
    return None


def vector_ramps(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """Ramps absorb broadcasts and ramps: `ramp(b, s) + x(c)` → `ramp(b + c, s)`,
    `ramp(b1, s1) - ramp(b2, s2)` → `ramp(b1 - b2, s1 - s2)`, `ramp(b, s) * x(c)` →
    `ramp(b*c, s*c)`; a ramp of stride 0 is a broadcast."""
    assert isinstance(e, BinaryOp)
    if lanes_of(e.dtype) <= 1:
        return None
    a, b = e.a, e.b
    cls = type(e)
    if isinstance(e, (Add, Sub)):
        if isinstance(a, Ramp) and isinstance(b, Broadcast):
            return s.ramp(cls(a.base, b.value), a.stride, a.lanes)
        if isinstance(a, Broadcast) and isinstance(b, Ramp):
            stride = b.stride if isinstance(e, Add) else Sub(_zero(b.stride), b.stride)
            return s.ramp(cls(a.value, b.base), stride, b.lanes)
        if isinstance(a, Ramp) and isinstance(b, Ramp):
            return s.ramp(cls(a.base, b.base), cls(a.stride, b.stride), a.lanes)
    if isinstance(e, Mul):
        if isinstance(a, Ramp) and isinstance(b, Broadcast):
            return s.ramp(Mul(a.base, b.value), Mul(a.stride, b.value), a.lanes)
        if isinstance(a, Broadcast) and isinstance(b, Ramp):
            return s.ramp(Mul(b.base, a.value), Mul(b.stride, a.value), b.lanes)
    return None


def vector_ramp_divmod(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """`ramp(base, s, L) // x(c)` is `x(base // c)` and `ramp(base, s, L) % x(c)` is
    `ramp(base % c, s, L)` when the lanes stay in one block of `c` (by the bounds)."""
    assert isinstance(e, (FloorDiv, FloorMod))
    a, b = e.a, e.b
    if lanes_of(e.dtype) <= 1 or not isinstance(a, Ramp):
        return None
    if not (isinstance(b, Broadcast) and isinstance(b.value, IntImm)):
        return None
    c, stride = b.value.value, int_value(a.stride)
    if a.base.dtype != INDEX_DTYPE or c <= 0 or stride is None or stride < 0:
        return None
    rem = s.simplify(FloorMod(a.base, b.value))
    if s.bound(rem)[1] + stride * (a.lanes - 1) >= c:
        return None
    if isinstance(e, FloorDiv):
        return Broadcast(s.simplify(FloorDiv(a.base, b.value)), a.lanes)
    return s.ramp(rem, a.stride, a.lanes)


# -------------------------------------------------------------------------------- division


def _index_divisor(e: BinaryOp) -> int | None:
    """The constant divisor `c > 0` of a scalar `int64` division, else None."""
    c = int_value(e.b)
    if c is None or c <= 0 or lanes_of(e.dtype) != 1 or e.dtype != INDEX_DTYPE:
        return None
    return c


def div_mod_by_one(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """`x // 1` → `x`, `x % 1` → `0` (floor or truncating, any scalar integer)."""
    assert isinstance(e, BinaryOp)
    if int_value(e.b) != 1 or lanes_of(e.dtype) != 1 or is_float(e.dtype):
        return None
    if isinstance(e, (FloorDiv, FloorMod)) and not _scalar_int(e.dtype):
        return None
    return e.a if isinstance(e, (FloorDiv, Div)) else make_const(0, e.dtype)


def floordiv_nested(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """`(x // a) // b` → `x // (a*b)`; `(x % m) // c` → `(x // c) % (m / c)` when `c`
    divides `m` (positive constants)."""
    assert isinstance(e, FloorDiv)
    c = _index_divisor(e)
    a = e.a
    if c is None or not isinstance(a, (FloorDiv, FloorMod)) or not isinstance(a.b, IntImm):
        return None
    if isinstance(a, FloorDiv) and a.b.value > 0:
        return s.simplify(FloorDiv(a.a, make_const(a.b.value * c, e.dtype)))
    if isinstance(a, FloorMod) and a.b.value % c == 0:
        inner = s.simplify(FloorDiv(a.a, e.b))
        return s.simplify(FloorMod(inner, make_const(a.b.value // c, e.dtype)))
    return None


def floordiv_split(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """`(c*q + r) // c` → `q + r // c`, where `r // c` is a constant when the bounds of `r`
    lie in one block of `c` (`(i*8 + j) // 8` → `i` for `0 <= j < 8`), and a common factor
    of `r` and `c` is divided out."""
    assert isinstance(e, FloorDiv)
    c = _index_divisor(e)
    if c is None:
        return None
    a = e.a
    quotient, rest = s.split(a, c)
    lo, hi = s.bound(rest)
    if math.isfinite(lo) and math.isfinite(hi) and lo // c == hi // c:
        rest_q: PrimExpr = make_const(int(lo // c), e.dtype)
    else:
        reduced = s.gcd_reduce(FloorDiv, rest, c)
        rest_q = FloorDiv(rest, e.b) if reduced is None else reduced
    if quotient is None and not isinstance(rest_q, IntImm) and prim_equal(rest, a):
        return rest_q if not isinstance(rest_q, FloorDiv) else None
    return s.sum_form(Add(quotient, rest_q) if quotient is not None else rest_q)


def floormod_nested(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """`(x % m) % c` → `x % c` when `c` divides `m`."""
    assert isinstance(e, FloorMod)
    c = _index_divisor(e)
    a = e.a
    if c is None or not isinstance(a, FloorMod) or not isinstance(a.b, IntImm):
        return None
    return s.simplify(FloorMod(a.a, e.b)) if a.b.value % c == 0 else None


def floormod_split(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """`(c*q + r) % c` → `r % c`, which is `r - k*c` when the bounds of `r` lie in one block
    of `c` (`(i*8 + j) % 8` → `j` for `0 <= j < 8`); a common factor `g` of `r` and `c`
    comes out: `(g*r') % (g*c')` → `(r' % c')*g`."""
    assert isinstance(e, FloorMod)
    c = _index_divisor(e)
    if c is None:
        return None
    a = e.a
    _, rest = s.split(a, c)
    lo, hi = s.bound(rest)
    if math.isfinite(lo) and math.isfinite(hi) and lo // c == hi // c:
        return s.sum_form(Sub(rest, make_const(int(lo // c) * c, e.dtype)))
    reduced = s.gcd_reduce(FloorMod, rest, c)
    if reduced is not None:
        return reduced
    return None if prim_equal(rest, a) else FloorMod(rest, e.b)


def truncdiv_nonnegative(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """Truncating `x / c`, `x % c` (integer, `c > 0`) are floor division and modulo when
    `x >= 0` by the bounds, and simplify as those."""
    assert isinstance(e, (Div, Mod))
    if is_float(e.dtype) or lanes_of(e.dtype) > 1:
        return None
    c = int_value(e.b)
    if c is not None and c > 0 and s.bound(e.a)[0] >= 0:
        floor_cls = FloorDiv if isinstance(e, Div) else FloorMod
        return s.simplify(floor_cls(e.a, e.b))
    return None


# ------------------------------------------------------------------------------ min / max


def minmax_same(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """`min(x, x)` → `x`, `max(x, x)` → `x`."""
    assert isinstance(e, (Min, Max))
    return e.a if prim_equal(e.a, e.b) else None


def minmax_by_bounds(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """`min(a, b)` → `a` when the bounds prove `a <= b` (and so on for `b`, and `max`)."""
    assert isinstance(e, (Min, Max))
    if not _scalar_int(e.dtype):
        return None
    a, b = e.a, e.b
    is_min = isinstance(e, Min)
    if s.prove_le(a, b) is True:
        return a if is_min else b
    if s.prove_le(b, a) is True:
        return b if is_min else a
    return None


def minmax_constant_right(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """`min(3, x)` → `min(x, 3)` (integer constants to the right)."""
    assert isinstance(e, (Min, Max))
    if _scalar_int(e.dtype) and isinstance(e.a, IntImm) and not isinstance(e.b, IntImm):
        return type(e)(e.b, e.a)
    return None


# ---------------------------------------------------------------------- comparisons, logic


def compare_same(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """`x == x` → true, `x != x` → false for bools and handles (not floats: NaN)."""
    assert isinstance(e, CmpOp)
    a, b = e.a, e.b
    if is_int(a.dtype) or is_uint(a.dtype) or is_float(a.dtype):
        return None
    if isinstance(e, (EQ, NE)) and prim_equal(a, b):
        return bool_const(isinstance(e, EQ), lanes_of(a.dtype))
    return None


def compare_by_bounds(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """An integer comparison the bounds decide is a constant (`i < 8` → true for
    `0 <= i < 8`); `int64` comparisons use the bounds of the difference."""
    assert isinstance(e, CmpOp)
    a, b = e.a, e.b
    lanes = lanes_of(a.dtype)
    if not (is_int(a.dtype) or is_uint(a.dtype)):
        return None
    if lanes > 1 and not (a.dtype.startswith(INDEX_DTYPE) and isinstance(a, (Ramp, Broadcast))):
        return None
    if isinstance(e, (LT, LE, GT, GE)):
        x, y = (a, b) if isinstance(e, (LT, LE)) else (b, a)
        holds = s.prove_lt(x, y) if isinstance(e, (LT, GT)) else s.prove_le(x, y)
        return None if holds is None else bool_const(holds, lanes)
    le, ge = s.prove_le(a, b), s.prove_le(b, a)
    if le is True and ge is True:
        return bool_const(isinstance(e, EQ), lanes)
    if le is False or ge is False or s.prove_lt(a, b) or s.prove_lt(b, a):
        return bool_const(isinstance(e, NE), lanes)
    return None


_FLIP: dict[type, type] = {LT: GE, LE: GT, GT: LE, GE: LT, EQ: NE, NE: EQ}


def not_simplify(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """`not true` → false, `not not x` → `x`, `not (a < b)` → `a >= b` (not for floats)."""
    assert isinstance(e, Not)
    v = const_bool(e.a)
    if v is not None:
        return bool_const(not v, lanes_of(e.dtype))
    if isinstance(e.a, Not):
        return e.a.a
    inner = e.a
    if isinstance(inner, CmpOp) and type(inner) in _FLIP and not is_float(inner.a.dtype):
        return _FLIP[type(inner)](inner.a, inner.b)  # type: ignore[no-any-return]
    return None


def and_or_simplify(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """`x and true` → `x`, `x and false` → false (dually for `or`); `x and x` → `x`."""
    assert isinstance(e, (And, Or))
    va, vb = const_bool(e.a), const_bool(e.b)
    absorbing = isinstance(e, Or)  # True absorbs in Or, False in And
    for v, other in ((va, e.b), (vb, e.a)):
        if v is None:
            continue
        if v == absorbing:
            return bool_const(v, lanes_of(e.dtype))
        return other
    return e.a if prim_equal(e.a, e.b) else None


def select_simplify(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """`select(true, a, b)` → `a`, `select(c, a, a)` → `a`."""
    assert isinstance(e, Select)
    v = const_bool(e.condition)
    if v is not None:
        return e.true_value if v else e.false_value
    return e.true_value if prim_equal(e.true_value, e.false_value) else None


def call_simplify(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """`if_then_else(true, a, b)` → `a`, `if_then_else(c, a, a)` → `a`; `likely` of a
    constant is the constant."""
    assert isinstance(e, Call)
    if e.name == "if_then_else":
        cond, t, f = e.args
        v = const_bool(cond)
        if v is not None:
            return t if v else f
        if prim_equal(t, f):
            return t
    if e.name == "likely" and const_bool(e.args[0]) is not None:
        return e.args[0]
    return None


def cast_simplify(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """A cast to the value's own dtype goes; a cast of a broadcast is a broadcast of the
    cast."""
    assert isinstance(e, Cast)
    if e.value.dtype == e.dtype:
        return e.value
    if isinstance(e.value, Broadcast):
        return Broadcast(s.simplify(Cast(element_of(e.dtype), e.value.value)), e.value.lanes)
    return None


def let_inline(s: Simplifier, e: PrimExpr) -> PrimExpr | None:
    """`let x = v in b` → `b[x := v]` when `v` is a constant or a variable, or `x` is unused."""
    assert isinstance(e, Let)
    if isinstance(e.value, (IntImm, FloatImm, Var)) or not uses_var(e.body, e.var):
        return s.simplify(substitute(e.body, {e.var: e.value}))
    return None


# ---------------------------------------------------------------------------------- table

_ARITH = (Add, Sub, Mul, FloorDiv, FloorMod, Min, Max)

RULES: tuple[Rule, ...] = (
    Rule("fold-constants", (PrimExpr,), fold_constants),
    Rule("linear-sum", (Add, Sub, Mul), linear_sum),
    Rule("minmax-same", (Min, Max), minmax_same),
    Rule("vector-broadcasts", _ARITH, vector_broadcasts),
    Rule("vector-ramps", (Add, Sub, Mul), vector_ramps),
    Rule("vector-ramp-divmod", (FloorDiv, FloorMod), vector_ramp_divmod),
    Rule("float-identities", (Add, Sub, Mul, Div), float_identities),
    Rule("div-mod-by-one", (FloorDiv, FloorMod, Div, Mod), div_mod_by_one),
    Rule("floordiv-nested", (FloorDiv,), floordiv_nested),
    Rule("floordiv-split", (FloorDiv,), floordiv_split),
    Rule("floormod-nested", (FloorMod,), floormod_nested),
    Rule("floormod-split", (FloorMod,), floormod_split),
    Rule("truncdiv-nonnegative", (Div, Mod), truncdiv_nonnegative),
    Rule("minmax-by-bounds", (Min, Max), minmax_by_bounds),
    Rule("minmax-constant-right", (Min, Max), minmax_constant_right),
    Rule("compare-same", (CmpOp,), compare_same),
    Rule("compare-by-bounds", (CmpOp,), compare_by_bounds),
    Rule("not", (Not,), not_simplify),
    Rule("and-or", (And, Or), and_or_simplify),
    Rule("select", (Select,), select_simplify),
    Rule("call", (Call,), call_simplify),
    Rule("cast", (Cast,), cast_simplify),
    Rule("let-inline", (Let,), let_inline),
)
"""Every rule, in the order they are tried on a node."""

RULES_BY_NAME: dict[str, Rule] = {r.name: r for r in RULES}


RULE_FNS_BY_CLASS: dict[type, tuple[RuleFn, ...]] = {}
"""`rules_for` of each node class seen (the simplifier looks here first)."""


def rules_for(cls: type) -> tuple[RuleFn, ...]:
    """The callbacks of the rules that match nodes of class `cls`, in table order (without
    fold-constants for the classes it never folds)."""
    fns = RULE_FNS_BY_CLASS.get(cls)
    if fns is None:
        fns = tuple(
            r.fn
            for r in RULES
            if issubclass(cls, r.types)
            and not (r.fn is fold_constants and issubclass(cls, _NOT_FOLDED))
        )
        RULE_FNS_BY_CLASS[cls] = fns
    return fns


__all__ = ["RULES", "RULES_BY_NAME", "Rule", "rules_for"]
