"""The canonical form of integer expressions: a sum of atoms with constant coefficients.

`LinearSum` is `Σ coeff·atom + const` over one integer dtype. Atoms are whatever is not
`+`, `-` or a multiplication by a constant (variables, `x // 8`, `min(a, b)`, loads); two
structurally equal atoms (`prim_equal`) are one term. Terms keep their first-use order and
are rebuilt positive ones first, the constant last: `2 + i*4 + i` is `i*5 + 2`.

* `canonical(e)` puts every `int64` affine part of `e` in this form, bottom-up, and divides
  a floor division or modulo by a positive constant through the terms it divides exactly
  (`(o*8 + 16) // 8` is `o + 2`, `(o*8 + j) % 8` is `j % 8`); `min`/`max` of two sums with a
  constant difference is decided. It needs no variable ranges: bound inference and TE
  lowering use it, the simplifier's rules use `LinearSum` directly.
* `linear_form(e, var)` splits `e` into `a * var + rest`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..analysis import prim_equal, prim_hash, uses_var
from ..dtypes import INDEX_DTYPE
from ..expr import Add, FloorDiv, FloorMod, IntImm, Max, Min, Mul, PrimExpr, Sub, Var, const
from ..visitor import rewrite_expr, substitute
from .constants import make_const


class LinearSum:
    """`Σ coeff·atom + const` over one integer dtype, atoms kept in first-use order."""

    __slots__ = ("const", "dtype", "hasher", "index", "terms")

    def __init__(self, dtype: str, hasher: Callable[[PrimExpr], int] = prim_hash) -> None:
        self.dtype = dtype
        self.hasher = hasher  # `prim_hash`, or a memoized copy of it
        self.terms: list[list[Any]] = []  # [atom, coeff, prim_hash(atom)]
        self.index: dict[int, list[int]] = {}
        self.const = 0

    @staticmethod
    def of(e: PrimExpr, hasher: Callable[[PrimExpr], int] = prim_hash) -> LinearSum:
        """The sum that `e` spells with `+`, `-` and multiplications by constants."""
        s = LinearSum(e.dtype, hasher)
        s.add_expr(e, 1)
        return s

    def copy(self) -> LinearSum:
        """An independent copy."""
        out = LinearSum(self.dtype, self.hasher)
        out.terms = [list(t) for t in self.terms]
        out.index = {h: list(ks) for h, ks in self.index.items()}
        out.const = self.const
        return out

    def add(self, atom: PrimExpr, coeff: int, h: int | None = None) -> None:
        """Add `coeff·atom` (combined with an equal atom already present)."""
        if h is None:
            h = self.hasher(atom)
        for k in self.index.get(h, ()):
            if prim_equal(self.terms[k][0], atom):
                self.terms[k][1] += coeff
                return
        self.index.setdefault(h, []).append(len(self.terms))
        self.terms.append([atom, coeff, h])

    def add_sum(self, other: LinearSum, scale: int) -> None:
        """Add `scale·other`."""
        for atom, coeff, h in other.terms:
            if coeff:
                self.add(atom, coeff * scale, h)
        self.const += other.const * scale

    def add_expr(self, e: PrimExpr, scale: int) -> None:
        """Add `scale·e`, looking through `+`, `-` and multiplications by constants."""
        stack = [(e, scale)]
        while stack:
            node, k = stack.pop()
            if isinstance(node, IntImm):
                self.const += node.value * k
            elif isinstance(node, Add):
                stack += [(node.b, k), (node.a, k)]
            elif isinstance(node, Sub):
                stack += [(node.b, -k), (node.a, k)]
            elif isinstance(node, Mul) and isinstance(node.b, IntImm):
                stack.append((node.a, k * node.b.value))
            elif isinstance(node, Mul) and isinstance(node.a, IntImm):
                stack.append((node.b, k * node.a.value))
            else:
                self.add(node, k)

    def live(self) -> list[tuple[PrimExpr, int]]:
        """The (atom, coefficient) pairs with a nonzero coefficient."""
        return [(a, c) for a, c, _ in self.terms if c != 0]

    def is_const(self) -> bool:
        """Whether every coefficient is zero."""
        return all(c == 0 for _, c, _ in self.terms)

    def fuse_div_mod(self) -> None:
        """`(x//c)*c*k + (x%c)*k` → `x*k`."""
        for t in self.terms:
            atom, k, _ = t
            if k == 0 or not isinstance(atom, FloorMod) or not isinstance(atom.b, IntImm):
                continue
            c = atom.b.value
            for u in self.terms:
                other, kc, _ = u
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
        """The sum as an expression: positive terms first, then negative ones, then the
        constant (`i*5 - j + 2`)."""
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


# --------------------------------------------------------------------- canonical(e)


class _Canonicalizer:
    """Bottom-up canonicalization: the `LinearSum` of every node it produced (by identity;
    the node is kept alongside so that its id stays valid)."""

    def __init__(self) -> None:
        self.sums: dict[int, tuple[PrimExpr, LinearSum]] = {}

    def sum_of(self, e: PrimExpr) -> LinearSum:
        """The sum of an already visited node (a single atom when it is not affine)."""
        known = self.sums.get(id(e))
        if known is not None and known[0] is e:
            return known[1]
        s = LinearSum(e.dtype)
        if isinstance(e, IntImm):
            s.const = e.value
        else:
            s.add(e, 1)
        return s

    def visit(self, node: Any) -> Any:
        """Canonicalize `node` (children already canonical); None keeps it."""
        if not isinstance(node, PrimExpr) or node.dtype != INDEX_DTYPE:
            return None
        if isinstance(node, (Var, IntImm)):
            return None
        s = self.form(node)
        if s is None:
            return None
        out = s.build()
        self.sums[id(out)] = (out, s)
        return out

    def form(self, node: PrimExpr) -> LinearSum | None:
        """The sum `node` equals, or None when it is an atom."""
        if isinstance(node, (Add, Sub)):
            s = self.sum_of(node.a).copy()
            s.add_sum(self.sum_of(node.b), 1 if isinstance(node, Add) else -1)
            return s
        if isinstance(node, Mul):
            sa, sb = self.sum_of(node.a), self.sum_of(node.b)
            if sb.is_const() or sa.is_const():
                s, k = (sa, sb.const) if sb.is_const() else (sb, sa.const)
                out = LinearSum(node.dtype)
                if k:
                    out.add_sum(s, k)
                return out
            return None
        if isinstance(node, (FloorDiv, FloorMod)):
            return self.divide(node)
        if isinstance(node, (Min, Max)):
            diff = self.sum_of(node.a).copy()
            diff.add_sum(self.sum_of(node.b), -1)
            if not diff.is_const():
                return None
            pick_a = diff.const <= 0 if isinstance(node, Min) else diff.const >= 0
            return self.sum_of(node.a if pick_a else node.b)
        return None

    def divide(self, node: FloorDiv | FloorMod) -> LinearSum | None:
        c = node.b.value if isinstance(node.b, IntImm) else None
        if c is None or c <= 0:
            return None
        sa = self.sum_of(node.a)
        whole = [(a, k, h) for a, k, h in sa.terms if k and k % c == 0]
        rest = [(a, k, h) for a, k, h in sa.terms if k and k % c != 0]
        out = LinearSum(node.dtype)
        if isinstance(node, FloorDiv):
            if rest:
                return None
            for a, k, h in whole:
                out.add(a, k // c, h)
            out.const = sa.const // c
            return out
        if not rest:
            out.const = sa.const % c
            return out
        if not whole:
            return None
        inner = LinearSum(node.dtype)
        for a, k, h in rest:
            inner.add(a, k, h)
        inner.const = sa.const
        out.add(FloorMod(inner.build(), node.b), 1)
        return out


def canonical(e: PrimExpr) -> PrimExpr:
    """`e` with its `int64` affine parts in canonical form (see the module docstring); other
    nodes are kept, with canonical children. Needs no variable ranges."""
    return rewrite_expr(e, _Canonicalizer().visit)  # type: ignore[no-any-return]


# ------------------------------------------------------------------------ linear_form


def linear_form(expr: PrimExpr, var: Var) -> tuple[int, PrimExpr] | None:
    """`(a, rest)` with `expr == a * var + rest`, `a` an int and `rest` free of `var`, or None
    when `expr` is not linear in `var` (through + - and multiplication by constants)."""
    coeff = _coeff(expr, var)
    if coeff is None:
        return None
    return coeff, substitute(expr, {var: const(0, var.dtype)})


def _coeff(e: PrimExpr, var: Var) -> int | None:
    """The coefficient of `var` in `e`, or None if `e` is not linear in it."""
    s = LinearSum.of(e)
    total = 0
    for atom, k in s.live():
        if atom is var:
            total += k
        elif uses_var(atom, var):
            return None
    return total


__all__ = ["LinearSum", "canonical", "linear_form"]
