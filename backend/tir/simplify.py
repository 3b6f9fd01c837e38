"""Arithmetic simplification of loop-IR expressions and statements.

`simplify(expr, var_ranges)` folds constants with the dtype's semantics (integers wrap, float32
rounds; transcendental intrinsics are not folded), puts integer sums in a canonical linear form
(`2 + i*4 + i` → `i*5 + 2`: terms in first-use order, positive ones first, constant last),
removes `x + 0`, `x*1`, `x*0` and `x - x` for integers (for floats only `x*1`, `x/1` and
`x - 0`, which IEEE arithmetic keeps exact), simplifies floor division and modulo by constants
with bounds (`(i*8 + j)//8` → `i` and `(i*8 + j)%8` → `j` when `0 <= j < 8`), decides
comparisons and `min`/`max` that the bounds of `const_int_bound` prove, and folds selects,
`if_then_else`, `likely`, and boolean connectives with constant operands.

`simplify_stmt(stmt)` (implemented in `transform.simplify`) simplifies every expression with
the ranges of the enclosing loops, removes loops of extent 1 (substituting the minimum) and of
extent <= 0, keeps the taken side of conditions it can decide, and flattens sequences, without
recursion over statements.

Proofs that need the difference of two integers (`a < b` from the bounds of `a - b`) and the
division rules assume no overflow, so they are used for `int64` (index) arithmetic only;
other integer types get interval reasoning on each operand.
"""

from __future__ import annotations

import math
from typing import Any

from .analysis import VarRanges, const_int_bound, dtype_bound, prim_equal, prim_hash
from .dtypes import INDEX_DTYPE, element_of, is_bool, is_float, is_int, is_uint, lanes_of
from .evaluate import evaluate_expr
from .expr import (
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
from .stmt import Stmt
from .visitor import children, rewrite_expr, sub_expressions

_EXACT_CALLS = frozenset(
    ["floor", "ceil", "round", "nearbyint", "trunc", "fabs", "bitwise_not", "popcount",
     "isnan", "isinf", "isfinite", "likely", "fmod", "copysign", "bitwise_and",
     "bitwise_or", "bitwise_xor", "shift_left", "shift_right", "reinterpret"]
)  # fmt: skip
"""Intrinsics folded on constants (the others may differ by an ulp from native code)."""


def _is_const(e: PrimExpr) -> bool:
    return isinstance(e, (IntImm, FloatImm))


def _int_value(e: PrimExpr) -> int | None:
    return e.value if isinstance(e, IntImm) else None


def _scalar_int(dtype: str) -> bool:
    return lanes_of(dtype) == 1 and (is_int(dtype) or is_uint(dtype))


def make_const(value: Any, dtype: str) -> PrimExpr:
    """A scalar constant of `dtype` from a Python/numpy number (wrapped to the dtype)."""
    if is_float(dtype):
        return FloatImm(float(value), dtype)
    if is_bool(dtype):
        return IntImm(int(bool(value)), dtype)
    lo, hi = dtype_bound(dtype)
    span = int(hi - lo + 1)
    return IntImm((int(value) - int(lo)) % span + int(lo), dtype)


def _bool(value: bool, lanes: int = 1) -> PrimExpr:
    c = IntImm(int(value), "bool")
    return c if lanes == 1 else Broadcast(c, lanes)


# --------------------------------------------------------------------------- linear sums


class _Sum:
    """`Σ coeff·atom + const` over one integer dtype, atoms kept in first-use order."""

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype
        self.terms: list[list[Any]] = []  # [atom, coeff]
        self.index: dict[int, list[int]] = {}
        self.const = 0

    def add(self, atom: PrimExpr, coeff: int) -> None:
        h = prim_hash(atom)
        for k in self.index.get(h, []):
            if prim_equal(self.terms[k][0], atom):
                self.terms[k][1] += coeff
                return
        self.index.setdefault(h, []).append(len(self.terms))
        self.terms.append([atom, coeff])

    def add_expr(self, e: PrimExpr, scale: int) -> None:
        if isinstance(e, IntImm):
            self.const += e.value * scale
        elif isinstance(e, Add):
            self.add_expr(e.a, scale)
            self.add_expr(e.b, scale)
        elif isinstance(e, Sub):
            self.add_expr(e.a, scale)
            self.add_expr(e.b, -scale)
        elif isinstance(e, Mul) and isinstance(e.b, IntImm):
            self.add_expr(e.a, scale * e.b.value)
        elif isinstance(e, Mul) and isinstance(e.a, IntImm):
            self.add_expr(e.b, scale * e.a.value)
        else:
            self.add(e, scale)

    def live(self) -> list[tuple[PrimExpr, int]]:
        return [(a, c) for a, c in self.terms if c != 0]

    def fuse_div_mod(self) -> None:
        """`(x//c)*c*k + (x%c)*k` → `x*k`."""
        for t in self.terms:
            atom, k = t
            if k == 0 or not isinstance(atom, FloorMod) or not isinstance(atom.b, IntImm):
                continue
            c = atom.b.value
            for u in self.terms:
                other, kc = u
                if (
                    isinstance(other, FloorDiv)
                    and kc == k * c
                    and prim_equal(other.b, atom.b)
                    and prim_equal(other.a, atom.a)
                ):
                    t[1] = 0
                    u[1] = 0
                    self.add_expr(atom.a, k)
                    break

    def build(self) -> PrimExpr:
        dtype = self.dtype
        live = self.live()
        pos = [(a, c) for a, c in live if c > 0]
        neg = [(a, c) for a, c in live if c < 0]
        acc: PrimExpr | None = None
        for atom, c in pos + neg:
            mag = abs(c) if acc is not None else c
            term = atom if mag == 1 else Mul(atom, make_const(mag, dtype))
            if acc is None:
                acc = term
            elif c > 0:
                acc = Add(acc, term)
            else:
                acc = Sub(acc, term)
        k = make_const(self.const, dtype)
        value = k.value  # type: ignore[attr-defined]
        if acc is None:
            return k
        if value < 0 and make_const(-value, dtype).value == -value:  # type: ignore[attr-defined]
            return Sub(acc, make_const(-value, dtype))
        return acc if value == 0 else Add(acc, k)


def _as_sum(e: PrimExpr) -> _Sum:
    s = _Sum(e.dtype)
    s.add_expr(e, 1)
    return s


# ------------------------------------------------------------------------------- rules


class _Rules:
    """The rewrite rules, with the variable ranges that bounds may use."""

    def __init__(self, ranges: VarRanges) -> None:
        self.ranges = ranges
        self.bounds: dict[int, tuple[PrimExpr, tuple[float, float]]] = {}

    def bound(self, e: PrimExpr) -> tuple[float, float]:
        got = self.bounds.get(id(e))
        if got is None or got[0] is not e:
            got = (e, const_int_bound(e, self.ranges))
            self.bounds[id(e)] = got
        return got[1]

    def simplify(self, e: PrimExpr) -> PrimExpr:
        return rewrite_expr(e, self.rule)  # type: ignore[no-any-return]

    # -- entry: one node whose children are already simplified
    def rule(self, e: Any) -> PrimExpr | None:
        if not isinstance(e, PrimExpr):
            return None
        folded = self.fold(e)
        if folded is not None:
            return folded
        method = _DISPATCH.get(type(e))
        if method is None:
            return None
        out = method(self, e)
        return None if out is None or out is e else out

    def fold(self, e: PrimExpr) -> PrimExpr | None:
        if isinstance(e, (IntImm, FloatImm, Var, BufferLoad, Let, Ramp, Broadcast)):
            return None
        if lanes_of(e.dtype) != 1:
            return None
        if isinstance(e, Call) and e.name not in _EXACT_CALLS:
            return None
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

    # -- integer sums
    def add_sub(self, e: BinaryOp) -> PrimExpr | None:
        if _scalar_int(e.dtype):
            return self.canonical(e)
        if lanes_of(e.dtype) > 1:
            return self.vector_arith(e)
        return self.float_identities(e)

    def canonical(self, e: PrimExpr) -> PrimExpr:
        s = _as_sum(e)
        s.fuse_div_mod()
        out = s.build()
        return e if prim_equal(out, e) else out

    def mul(self, e: Mul) -> PrimExpr | None:
        if _scalar_int(e.dtype):
            if isinstance(e.a, IntImm) or isinstance(e.b, IntImm):
                return self.canonical(e)
            return None
        if lanes_of(e.dtype) > 1:
            return self.vector_arith(e)
        return self.float_identities(e)

    def float_identities(self, e: BinaryOp) -> PrimExpr | None:
        b = e.b
        if isinstance(b, FloatImm):
            if isinstance(e, (Mul, Div)) and b.value == 1.0:
                return e.a
            if isinstance(e, Sub) and b.value == 0.0 and math.copysign(1.0, b.value) > 0:
                return e.a
        if isinstance(e, Mul) and isinstance(e.a, FloatImm) and e.a.value == 1.0:
            return e.b
        if isinstance(e, (Add, Mul)) and isinstance(e.a, FloatImm) and not isinstance(b, FloatImm):
            return type(e)(b, e.a)  # constants to the right
        return None

    # -- vectors
    def vector_arith(self, e: BinaryOp) -> PrimExpr | None:
        a, b = e.a, e.b
        cls = type(e)
        if isinstance(a, Broadcast) and isinstance(b, Broadcast):
            return Broadcast(self.simplify(cls(a.value, b.value)), a.lanes)
        if isinstance(e, (Add, Sub)):
            if isinstance(a, Ramp) and isinstance(b, Broadcast):
                return self.ramp(cls(a.base, b.value), a.stride, a.lanes)
            if isinstance(a, Broadcast) and isinstance(b, Ramp):
                stride = b.stride if isinstance(e, Add) else Sub(_zero(b.stride), b.stride)
                return self.ramp(cls(a.value, b.base), stride, b.lanes)
            if isinstance(a, Ramp) and isinstance(b, Ramp):
                return self.ramp(cls(a.base, b.base), cls(a.stride, b.stride), a.lanes)
        if isinstance(e, Mul):
            if isinstance(a, Ramp) and isinstance(b, Broadcast):
                return self.ramp(Mul(a.base, b.value), Mul(a.stride, b.value), a.lanes)
            if isinstance(a, Broadcast) and isinstance(b, Ramp):
                return self.ramp(Mul(b.base, a.value), Mul(b.stride, a.value), b.lanes)
        if isinstance(e, (FloorDiv, FloorMod)) and isinstance(a, Ramp):
            return self.ramp_divmod(e, a, b)
        return None

    def ramp(self, base: PrimExpr, stride: PrimExpr, lanes: int) -> PrimExpr:
        base, stride = self.simplify(base), self.simplify(stride)
        if isinstance(stride, (IntImm, FloatImm)) and stride.value == 0:
            return Broadcast(base, lanes)
        return Ramp(base, stride, lanes)

    def ramp_divmod(self, e: BinaryOp, a: Ramp, b: PrimExpr) -> PrimExpr | None:
        """`ramp(base, s, L) // c` is `x(base // c)` when the lanes stay in one block of c."""
        if not (isinstance(b, Broadcast) and isinstance(b.value, IntImm)):
            return None
        c, s = b.value.value, _int_value(a.stride)
        if a.base.dtype != INDEX_DTYPE or c <= 0 or s is None or s < 0:
            return None
        rem = self.simplify(FloorMod(a.base, b.value))
        if self.bound(rem)[1] + s * (a.lanes - 1) >= c:
            return None
        if isinstance(e, FloorDiv):
            return Broadcast(self.simplify(FloorDiv(a.base, b.value)), a.lanes)
        return self.ramp(rem, a.stride, a.lanes)

    # -- division
    def floordiv(self, e: FloorDiv) -> PrimExpr | None:
        if lanes_of(e.dtype) > 1:
            return self.vector_arith(e)
        c = _int_value(e.b)
        if c is None or not _scalar_int(e.dtype):
            return None
        if c == 1:
            return e.a
        if c <= 0 or e.dtype != INDEX_DTYPE:
            return None
        a = e.a
        if isinstance(a, FloorDiv) and isinstance(a.b, IntImm) and a.b.value > 0:
            return self.simplify(FloorDiv(a.a, make_const(a.b.value * c, e.dtype)))
        if isinstance(a, FloorMod) and isinstance(a.b, IntImm) and a.b.value % c == 0:
            inner = self.simplify(FloorDiv(a.a, e.b))
            return self.simplify(FloorMod(inner, make_const(a.b.value // c, e.dtype)))
        quotient, rest = self.split(a, c)
        lo, hi = self.bound(rest)
        if math.isfinite(lo) and math.isfinite(hi) and lo // c == hi // c:
            rest_q: PrimExpr = make_const(int(lo // c), e.dtype)
        else:
            reduced = self.gcd_reduce(FloorDiv, rest, c)
            rest_q = FloorDiv(rest, e.b) if reduced is None else reduced
        if quotient is None and not isinstance(rest_q, IntImm) and prim_equal(rest, a):
            return rest_q if not isinstance(rest_q, FloorDiv) else None
        return self.canonical(Add(quotient, rest_q) if quotient is not None else rest_q)

    def floormod(self, e: FloorMod) -> PrimExpr | None:
        if lanes_of(e.dtype) > 1:
            return self.vector_arith(e)
        c = _int_value(e.b)
        if c is None or not _scalar_int(e.dtype):
            return None
        if c == 1:
            return make_const(0, e.dtype)
        if c <= 0 or e.dtype != INDEX_DTYPE:
            return None
        a = e.a
        if isinstance(a, FloorMod) and isinstance(a.b, IntImm) and a.b.value % c == 0:
            return self.simplify(FloorMod(a.a, e.b))
        _, rest = self.split(a, c)
        lo, hi = self.bound(rest)
        if math.isfinite(lo) and math.isfinite(hi) and lo // c == hi // c:
            return self.canonical(Sub(rest, make_const(int(lo // c) * c, e.dtype)))
        reduced = self.gcd_reduce(FloorMod, rest, c)
        if reduced is not None:
            return reduced
        return None if prim_equal(rest, a) else FloorMod(rest, e.b)

    def split(self, a: PrimExpr, c: int) -> tuple[PrimExpr | None, PrimExpr]:
        """`a = c*quotient + rest` with the multiples of `c` moved to `quotient`."""
        s = _as_sum(a)
        q, r = _Sum(a.dtype), _Sum(a.dtype)
        for atom, k in s.live():
            if k % c == 0:
                q.add(atom, k // c)
            else:
                r.add(atom, k)
        q.const, r.const = s.const // c, s.const % c
        quotient = q.build() if q.live() or q.const else None
        return quotient, r.build()

    def gcd_reduce(self, cls: type, rest: PrimExpr, c: int) -> PrimExpr | None:
        """`(g·r) // (g·c')` → `r // c'`, `(g·r) % (g·c')` → `(r % c')·g`."""
        s = _as_sum(rest)
        g = c
        for _, k in s.live():
            g = math.gcd(g, k)
        g = math.gcd(g, s.const)
        if g <= 1:
            return None
        r = _Sum(rest.dtype)
        for atom, k in s.live():
            r.add(atom, k // g)
        r.const = s.const // g
        inner = cls(r.build(), make_const(c // g, rest.dtype))
        out = self.simplify(inner)
        if cls is FloorMod:
            return self.canonical(Mul(out, make_const(g, rest.dtype)))
        return out

    def truncdiv(self, e: BinaryOp) -> PrimExpr | None:
        if is_float(e.dtype) or lanes_of(e.dtype) > 1:
            return self.float_identities(e) if isinstance(e, Div) and is_float(e.dtype) else None
        c = _int_value(e.b)
        if c == 1:
            return e.a if isinstance(e, Div) else make_const(0, e.dtype)
        if c is not None and c > 0 and self.bound(e.a)[0] >= 0:
            floor_cls = FloorDiv if isinstance(e, Div) else FloorMod
            return self.simplify(floor_cls(e.a, e.b))
        return None

    # -- min / max
    def minmax(self, e: BinaryOp) -> PrimExpr | None:
        a, b = e.a, e.b
        is_min = isinstance(e, Min)
        if prim_equal(a, b):
            return a
        if lanes_of(e.dtype) > 1:
            return self.vector_arith(e)
        if not _scalar_int(e.dtype):
            return None
        le = self.prove_le(a, b)
        if le is True:
            return a if is_min else b
        ge = self.prove_le(b, a)
        if ge is True:
            return b if is_min else a
        if isinstance(a, IntImm) and not isinstance(b, IntImm):
            return type(e)(b, a)
        return None

    def prove_le(self, a: PrimExpr, b: PrimExpr) -> bool | None:
        """True if `a <= b` always holds, False if never, None if unknown."""
        la, ha = self.bound(a)
        lb, hb = self.bound(b)
        if ha <= lb:
            return True
        if la > hb:
            return False
        if a.dtype == INDEX_DTYPE:
            lo, hi = self.bound(self.canonical(Sub(a, b)))
            if hi <= 0:
                return True
            if lo > 0:
                return False
        return None

    # -- comparisons and logic
    def compare(self, e: CmpOp) -> PrimExpr | None:
        a, b = e.a, e.b
        lanes = lanes_of(a.dtype)
        if not (is_int(a.dtype) or is_uint(a.dtype)):
            if prim_equal(a, b) and isinstance(e, (EQ, NE)) and not is_float(a.dtype):
                return _bool(isinstance(e, EQ), lanes)
            return None
        if lanes > 1 and not (a.dtype.startswith(INDEX_DTYPE) and isinstance(a, (Ramp, Broadcast))):
            return None
        if isinstance(e, (LT, LE, GT, GE)):
            x, y = (a, b) if isinstance(e, (LT, LE)) else (b, a)
            strict = isinstance(e, (LT, GT))
            if strict:  # x < y  <=>  x + 1 <= y  (integers)
                le = self.prove_lt(x, y)
            else:
                le = self.prove_le(x, y)
            return None if le is None else _bool(le, lanes)
        le, ge = self.prove_le(a, b), self.prove_le(b, a)
        if le is True and ge is True:
            return _bool(isinstance(e, EQ), lanes)
        if le is False or ge is False or self.prove_lt(a, b) or self.prove_lt(b, a):
            return _bool(isinstance(e, NE), lanes)
        return None

    def prove_lt(self, a: PrimExpr, b: PrimExpr) -> bool | None:
        la, ha = self.bound(a)
        lb, hb = self.bound(b)
        if ha < lb:
            return True
        if la >= hb:
            return False
        if a.dtype.startswith(INDEX_DTYPE):
            d = self.simplify(Sub(a, b))
            lo, hi = self.bound(d)
            if hi < 0:
                return True
            if lo >= 0:
                return False
        return None

    def logic(self, e: PrimExpr) -> PrimExpr | None:
        if isinstance(e, Not):
            v = const_bool(e.a)
            if v is not None:
                return _bool(not v, lanes_of(e.dtype))
            if isinstance(e.a, Not):
                return e.a.a
            flip: dict[type, type] = {LT: GE, LE: GT, GT: LE, GE: LT, EQ: NE, NE: EQ}
            inner = e.a
            if isinstance(inner, CmpOp) and type(inner) in flip and not is_float(inner.a.dtype):
                return flip[type(inner)](inner.a, inner.b)  # type: ignore[no-any-return]
            return None
        assert isinstance(e, (And, Or))
        va, vb = const_bool(e.a), const_bool(e.b)
        absorbing = isinstance(e, Or)  # True absorbs in Or, False in And
        for v, other in ((va, e.b), (vb, e.a)):
            if v is None:
                continue
            if v == absorbing:
                return _bool(v, lanes_of(e.dtype))
            return other
        if prim_equal(e.a, e.b):
            return e.a
        return None

    def select(self, e: Select) -> PrimExpr | None:
        v = const_bool(e.condition)
        if v is not None:
            return e.true_value if v else e.false_value
        if prim_equal(e.true_value, e.false_value):
            return e.true_value
        return None

    def call(self, e: Call) -> PrimExpr | None:
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

    def cast(self, e: Cast) -> PrimExpr | None:
        if e.value.dtype == e.dtype:
            return e.value
        if isinstance(e.value, Broadcast):
            return Broadcast(self.simplify(Cast(element_of(e.dtype), e.value.value)), e.value.lanes)
        return None

    def let(self, e: Let) -> PrimExpr | None:
        if isinstance(e.value, (IntImm, FloatImm, Var)) or not any(
            n is e.var for n in sub_expressions(e.body)
        ):
            body = rewrite_expr(e.body, lambda n: e.value if n is e.var else None)
            return self.simplify(body)
        return None


def _zero(e: PrimExpr) -> PrimExpr:
    return make_const(0, e.dtype)


def const_bool(e: PrimExpr) -> bool | None:
    """The value of a constant bool (or a broadcast of one), else None."""
    if isinstance(e, Broadcast):
        e = e.value
    if isinstance(e, IntImm) and is_bool(e.dtype):
        return bool(e.value)
    return None


_DISPATCH: dict[type, Any] = {
    Add: _Rules.add_sub,
    Sub: _Rules.add_sub,
    Mul: _Rules.mul,
    FloorDiv: _Rules.floordiv,
    FloorMod: _Rules.floormod,
    Div: _Rules.truncdiv,
    Mod: _Rules.truncdiv,
    Min: _Rules.minmax,
    Max: _Rules.minmax,
    EQ: _Rules.compare,
    NE: _Rules.compare,
    LT: _Rules.compare,
    LE: _Rules.compare,
    GT: _Rules.compare,
    GE: _Rules.compare,
    And: _Rules.logic,
    Or: _Rules.logic,
    Not: _Rules.logic,
    Select: _Rules.select,
    Call: _Rules.call,
    Cast: _Rules.cast,
    Let: _Rules.let,
}


def simplify(expr: PrimExpr, var_ranges: VarRanges | None = None) -> PrimExpr:
    """`expr` simplified; `var_ranges` maps variables to a `Range` or an inclusive
    `(lo, hi)` used to prove index facts."""
    return _Rules(var_ranges or {}).simplify(expr)


# --------------------------------------------------------------------------- statements


def simplify_stmt(stmt: Stmt, var_ranges: VarRanges | None = None) -> Stmt:
    """`stmt` with every expression simplified under the enclosing loops' ranges (and the
    facts of enclosing `if`s about single variables), loops of extent 1 replaced by their
    body, loops of extent <= 0 and decided conditions removed, sequences flattened."""
    # The statement walker lives with the passes, which import this module.
    from .transform.simplify import simplify_body

    return simplify_body(stmt, var_ranges)


__all__ = ["const_bool", "make_const", "simplify", "simplify_stmt"]
