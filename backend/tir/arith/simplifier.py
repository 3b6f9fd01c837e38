"""The simplifier: the rule table of `rules` applied bottom-up to an expression, with the
variable ranges that bounds may use.

`simplify(expr, ranges)` rebuilds `expr` from its leaves up; at each node the rules of the
node's class are tried in table order and the first that applies replaces the node (rules
that build new nodes simplify those in turn). `Simplifier` keeps the ranges and a cache of
bounds for one call, and offers the proofs rules use (`prove_le`, `prove_lt`).
"""

from __future__ import annotations

import math
from typing import Any

from ..analysis import prim_equal, prim_hash
from ..dtypes import INDEX_DTYPE
from ..expr import BinaryOp, Broadcast, FloatImm, FloorMod, IntImm, Mul, PrimExpr, Ramp, Sub
from ..visitor import rewrite_expr
from .bounds import VarRanges, const_int_bound
from .canonical import LinearSum
from .constants import Bound, make_const
from .rules import Rule, rules_for


class Simplifier:
    """Simplification under fixed variable ranges (a `Range` or an inclusive `(lo, hi)`
    per variable); bounds are cached per node for the simplifier's lifetime."""

    def __init__(self, ranges: VarRanges | None = None) -> None:
        self.ranges: VarRanges = ranges or {}
        self.bounds: dict[int, tuple[PrimExpr, Bound]] = {}
        self.hashes: dict[int, tuple[PrimExpr, int]] = {}

    def simplify(self, e: PrimExpr) -> PrimExpr:
        """`e` simplified bottom-up by the rule table."""
        return rewrite_expr(e, self.rewrite)  # type: ignore[no-any-return]

    def rewrite(self, e: Any) -> PrimExpr | None:
        """One node whose children are already simplified: the first rule that applies, or
        None when none does."""
        if not isinstance(e, PrimExpr):
            return None
        for fn in rules_for(type(e)):
            out = fn(self, e)
            if out is not None and out is not e:
                return out
        return None

    def apply(self, rule: Rule, e: PrimExpr) -> PrimExpr | None:
        """What `rule` alone makes of the node `e` (None when it does not apply)."""
        if not isinstance(e, rule.types):
            return None
        out = rule.fn(self, e)
        return None if out is e else out

    # ------------------------------------------------------------------------- facts

    def bound(self, e: PrimExpr) -> Bound:
        """Constant bounds of `e` under the ranges (cached)."""
        got = self.bounds.get(id(e))
        if got is None or got[0] is not e:
            got = (e, const_int_bound(e, self.ranges))
            self.bounds[id(e)] = got
        return got[1]

    def hash(self, e: PrimExpr) -> int:
        """`prim_hash(e)` (cached)."""
        got = self.hashes.get(id(e))
        if got is None or got[0] is not e:
            got = (e, prim_hash(e))
            self.hashes[id(e)] = got
        return got[1]

    def prove_le(self, a: PrimExpr, b: PrimExpr) -> bool | None:
        """True if `a <= b` always holds, False if never, None if unknown."""
        la, ha = self.bound(a)
        lb, hb = self.bound(b)
        if ha <= lb:
            return True
        if la > hb:
            return False
        if a.dtype == INDEX_DTYPE:
            lo, hi = self.bound(self.sum_form(Sub(a, b)))
            if hi <= 0:
                return True
            if lo > 0:
                return False
        return None

    def prove_lt(self, a: PrimExpr, b: PrimExpr) -> bool | None:
        """True if `a < b` always holds, False if never, None if unknown."""
        la, ha = self.bound(a)
        lb, hb = self.bound(b)
        if ha < lb:
            return True
        if la >= hb:
            return False
        if a.dtype.startswith(INDEX_DTYPE):
            lo, hi = self.bound(self.simplify(Sub(a, b)))
            if hi < 0:
                return True
            if lo >= 0:
                return False
        return None

    # --------------------------------------------------------------------- building

    def sum_form(self, e: PrimExpr) -> PrimExpr:
        """`e` as a canonical `LinearSum` (itself when that is what it already is)."""
        s = LinearSum.of(e, self.hash)
        s.fuse_div_mod()
        out = s.build()
        return e if prim_equal(out, e) else out

    def ramp(self, base: PrimExpr, stride: PrimExpr, lanes: int) -> PrimExpr:
        """`ramp(base, stride, lanes)` simplified (a broadcast when the stride is 0)."""
        base, stride = self.simplify(base), self.simplify(stride)
        if isinstance(stride, (IntImm, FloatImm)) and stride.value == 0:
            return Broadcast(base, lanes)
        return Ramp(base, stride, lanes)

    def split(self, a: PrimExpr, c: int) -> tuple[PrimExpr | None, PrimExpr]:
        """`a = c*quotient + rest` with the multiples of `c` moved to `quotient`."""
        s = LinearSum.of(a, self.hash)
        q, r = LinearSum(a.dtype, self.hash), LinearSum(a.dtype, self.hash)
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
        s = LinearSum.of(rest, self.hash)
        g = c
        for _, k in s.live():
            g = math.gcd(g, k)
        g = math.gcd(g, s.const)
        if g <= 1:
            return None
        r = LinearSum(rest.dtype, self.hash)
        for atom, k in s.live():
            r.add(atom, k // g)
        r.const = s.const // g
        inner: BinaryOp = cls(r.build(), make_const(c // g, rest.dtype))
        out = self.simplify(inner)
        if cls is FloorMod:
            return self.sum_form(Mul(out, make_const(g, rest.dtype)))
        return out


def simplify(expr: PrimExpr, var_ranges: VarRanges | None = None) -> PrimExpr:
    """`expr` simplified; `var_ranges` maps variables to a `Range` or an inclusive `(lo, hi)`
    used to prove index facts."""
    return Simplifier(var_ranges).simplify(expr)


__all__ = ["Simplifier", "simplify"]
