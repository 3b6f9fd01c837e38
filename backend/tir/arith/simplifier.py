"""The simplifier: the rule table of `rules` applied bottom-up to an expression, with the
variable ranges that bounds may use.

`simplify(expr, ranges)` rebuilds `expr` from its leaves up; at each node the rules of the
node's class are tried in table order and the first that applies replaces the node (rules
that build new nodes simplify those in turn). An integer sum (`+`, `-`, multiplication by a
constant) is put in canonical form once, at its top node: the `+` nodes inside it are not
canonicalized on their own (which made a sum of n terms cost n canonicalizations).
`Simplifier` keeps the ranges, caches bounds and the simplified form of every node it has
seen, and offers the proofs rules use (`prove_le`, `prove_lt`).
"""

from __future__ import annotations

import math
from typing import Any

from ..analysis import prim_equal, prim_hash
from ..dtypes import INDEX_DTYPE
from ..expr import (
    Add,
    BinaryOp,
    Broadcast,
    FloatImm,
    FloorMod,
    IntImm,
    Mul,
    PrimExpr,
    Ramp,
    StringImm,
    Sub,
    Var,
)
from ..visitor import children, rebuild_node
from .bounds import VarRanges, const_int_bound
from .canonical import LinearSum
from .constants import Bound, make_const
from .rules import RULE_FNS_BY_CLASS, Rule, linear_sum, rules_for


def _is_sum(e: Any) -> bool:
    """Whether `e` is a node `linear_sum` canonicalizes: a scalar integer `+`, `-`, or a
    multiplication by an integer constant."""
    cls = type(e)
    if cls is Add or cls is Sub:
        return e.dtype in _SCALAR_INTS
    if cls is Mul:
        return e.dtype in _SCALAR_INTS and (type(e.a) is IntImm or type(e.b) is IntImm)
    return False


_SCALAR_INTS = frozenset(f"{kind}{bits}" for kind in ("int", "uint") for bits in (1, 8, 16, 32, 64))
"""The dtypes `linear_sum` works on (scalar integers)."""

_LEAVES = frozenset([Var, IntImm, FloatImm, StringImm])
"""Node classes no rule rewrites (their only rule, fold-constants, leaves them alone)."""


class Simplifier:
    """Simplification under fixed variable ranges (a `Range` or an inclusive `(lo, hi)`
    per variable). Bounds, hashes and the simplified form of every node seen are cached
    for the simplifier's lifetime (a node's simplified form depends only on the node and
    the ranges), so one simplifier reused for many expressions under the same ranges
    simplifies a subexpression they share once."""

    def __init__(self, ranges: VarRanges | None = None) -> None:
        self.ranges: VarRanges = ranges or {}
        self.bounds: dict[int, tuple[PrimExpr, Bound]] = {}
        self.hashes: dict[int, tuple[PrimExpr, int]] = {}
        # id(node) -> (node, simplified); the node is kept so that its id stays its own.
        # `inner_done` holds nodes simplified as terms of a larger sum (not canonicalized).
        self.done: dict[int, tuple[Any, PrimExpr]] = {}
        self.inner_done: dict[int, tuple[Any, PrimExpr]] = {}

    def simplify(self, e: PrimExpr) -> PrimExpr:
        """`e` simplified bottom-up by the rule table (iteratively; shared nodes once)."""
        return self._simplify(e, False)

    def _simplify(self, e: Any, inner_root: bool) -> PrimExpr:
        # Leaves (variables, constants) are their own simplified form: they are neither
        # pushed nor memoized.
        if type(e) in _LEAVES:
            return e  # type: ignore[no-any-return]
        done, inner_done = self.done, self.inner_done
        # Stack entries: (node, inside a sum, None, _) to expand; (node, inside, children,
        # whether the node is a sum) to rebuild once the children are done.
        stack: list[tuple[Any, bool, list[Any] | None, bool]] = [(e, inner_root, None, False)]
        while stack:
            node, inner, kids, sum_node = stack.pop()
            memo = inner_done if inner else done
            got = memo.get(id(node))
            if got is not None and got[0] is node:
                continue
            if kids is None:
                kids = children(node)
                if kids:
                    sum_node = _is_sum(node)
                    stack.append((node, inner, kids, sum_node))
                    for k in kids:
                        if type(k) in _LEAVES:
                            continue
                        k_inner = sum_node and _is_sum(k)
                        got = (inner_done if k_inner else done).get(id(k))
                        if got is None or got[0] is not k:
                            stack.append((k, k_inner, None, False))
                    continue
                rebuilt = node
            else:
                new = [
                    k
                    if type(k) in _LEAVES
                    else (inner_done if sum_node and _is_sum(k) else done)[id(k)][1]
                    for k in kids
                ]
                rebuilt = rebuild_node(node, kids, new)
            out = self.rewrite(rebuilt, inner)
            memo[id(node)] = (node, rebuilt if out is None else out)
        return (inner_done if inner_root else done)[id(e)][1]

    def rewrite(self, e: Any, inside_sum: bool = False) -> PrimExpr | None:
        """One node whose children are already simplified: the first rule that applies, or
        None when none does. `inside_sum`: the node is a term of a larger integer sum, which
        is canonicalized as a whole (its own canonical form is skipped)."""
        if not isinstance(e, PrimExpr):
            return None
        for fn in RULE_FNS_BY_CLASS.get(type(e)) or rules_for(type(e)):
            if inside_sum and fn is linear_sum:
                continue
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
