"""The simplifier's rules, each on its own: golden rewrites, and soundness checked
exhaustively (every rule applied alone to families of expressions, both sides evaluated on
every point of the variables' small ranges)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from functools import cache

import numpy as np
import pytest
from relay.backend.tir import op
from relay.backend.tir.arith import RULES, Simplifier
from relay.backend.tir.arith.rules import RULES_BY_NAME, rules_for
from relay.backend.tir.evaluate import evaluate_expr
from relay.backend.tir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    Cast,
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
from relay.backend.tir.printer import astext
from relay.backend.tir.visitor import sub_expressions

x, y = Var("x"), Var("y")
f = Var("f", "float32")
p, q = Var("p", "bool"), Var("q", "bool")
RANGES: dict[Var, tuple[int, int]] = {x: (-4, 4), y: (0, 7)}
TRUE, FALSE = IntImm(1, "bool"), IntImm(0, "bool")


def c(v: int, dtype: str = "int64") -> PrimExpr:
    return IntImm(v, dtype)


def x4(e: PrimExpr) -> PrimExpr:
    return Broadcast(e, 4)


def apply(name: str, e: PrimExpr, ranges: dict[Var, tuple[int, int]] | None = None) -> str | None:
    """The text of what rule `name` alone makes of `e`, or None."""
    out = Simplifier(RANGES if ranges is None else ranges).apply(RULES_BY_NAME[name], e)
    return None if out is None else astext(out)


# ------------------------------------------------------------------------------ golden

GOLDEN: dict[str, list[tuple[PrimExpr, str | None]]] = {
    "fold-constants": [
        (Add(c(2), c(3)), "5"),
        (Mul(c(100, "int8"), c(3, "int8")), "44i8"),
        (FloorDiv(c(-7), c(2)), "-4"),
        (FloorDiv(c(7), c(0)), None),
        (Add(FloatImm(0.5, "float32"), FloatImm(0.25, "float32")), "0.75"),
        (op.exp(FloatImm(1.0, "float32")), None),
        (Add(x, c(1)), None),
    ],
    "linear-sum": [
        (Add(Add(c(2), x * 4), x), "x*5 + 2"),
        (Sub(x, x), "0"),
        (Sub(Add(x, y), x), "y"),
        (Add((x // 8) * 8, x % 8), "x"),
        (Mul(x, y), None),
        (Add(x, c(1)), None),
    ],
    "minmax-same": [(Min(x + 1, x + 1), "x + 1"), (Max(x, y), None)],
    "vector-broadcasts": [(Add(x4(x), x4(y)), "x4(x + y)"), (Add(x4(x), Ramp(y, c(1), 4)), None)],
    "vector-ramps": [
        (Add(Ramp(x, c(1), 4), x4(y)), "ramp(x + y, 1, 4)"),
        (Sub(Ramp(x, c(1), 4), Ramp(y, c(1), 4)), "x4(x - y)"),
        (Mul(Ramp(x, c(2), 4), x4(c(3))), "ramp(x*3, 6, 4)"),
        (Add(x4(x), x4(y)), None),
    ],
    "vector-ramp-divmod": [
        (FloorDiv(Ramp(y * 8, c(1), 4), x4(c(8))), "x4(y)"),
        (FloorMod(Ramp(y * 8, c(1), 4), x4(c(8))), "ramp(0, 1, 4)"),
        (FloorDiv(Ramp(y, c(1), 4), x4(c(8))), None),
    ],
    "float-identities": [
        (Mul(f, FloatImm(1.0, "float32")), "f"),
        (Div(f, FloatImm(1.0, "float32")), "f"),
        (Sub(f, FloatImm(0.0, "float32")), "f"),
        (Add(FloatImm(2.0, "float32"), f), "f + 2.0"),
        (Add(f, FloatImm(0.0, "float32")), None),
    ],
    "div-mod-by-one": [
        (FloorDiv(x, c(1)), "x"),
        (FloorMod(x, c(1)), "0"),
        (Div(x, c(1)), "x"),
        (FloorDiv(x, c(2)), None),
    ],
    "floordiv-nested": [
        (FloorDiv(FloorDiv(x, c(2)), c(3)), "x//6"),
        (FloorDiv(FloorMod(x, c(8)), c(4)), "x//4%2"),
        (FloorDiv(FloorMod(x, c(6)), c(4)), None),
    ],
    "floordiv-split": [
        (FloorDiv(x * 8 + y, c(8)), "x"),
        (FloorDiv(x * 8 + y + 8, c(8)), "x + 1"),
        (FloorDiv(x * 8 + y * 4 + 6, c(8)), "x + (y*2 + 3)//4"),
        (FloorDiv(x * 4 + 6, c(8)), None),  # a lone reduced quotient is not taken
        (FloorDiv(x, c(8)), None),
    ],
    "floormod-nested": [(FloorMod(FloorMod(x, c(8)), c(4)), "x%4"), (FloorMod(x, c(4)), None)],
    "floormod-split": [
        (FloorMod(x * 8 + y, c(8)), "y"),
        (FloorMod(x * 8 + y + 9, c(8)), "(y + 1)%8"),
        (FloorMod(x * 4 + 6, c(8)), "(x*2 + 3)%4*2"),
        (FloorMod(x, c(8)), None),
    ],
    "truncdiv-nonnegative": [(Div(y, c(4)), "y//4"), (Mod(y, c(4)), "y%4"), (Div(x, c(4)), None)],
    "minmax-by-bounds": [
        (Min(y, c(7)), "y"),
        (Max(y, c(-1)), "y"),
        (Min(x + 1, x + 3), "x + 1"),
        (Min(x, y), None),
    ],
    "minmax-constant-right": [(Min(c(3), x), "min(x, 3)"), (Min(x, c(3)), None)],
    "compare-same": [(EQ(p, p), "True"), (NE(p, p), "False"), (EQ(p, q), None)],
    "compare-by-bounds": [
        (LT(y, c(8)), "True"),
        (GE(y, c(8)), "False"),
        (LT(x, x + 1), "True"),
        (EQ(y, c(9)), "False"),
        (LT(x, y), None),
    ],
    "not": [(Not(TRUE), "False"), (Not(Not(p)), "p"), (Not(LT(x, y)), "x >= y")],
    "and-or": [
        (And(p, TRUE), "p"),
        (And(p, FALSE), "False"),
        (Or(p, TRUE), "True"),
        (Or(p, p), "p"),
        (And(p, q), None),
    ],
    "select": [
        (Select(TRUE, x, y), "x"),
        (Select(p, x + 1, x + 1), "x + 1"),
        (Select(p, x, y), None),
    ],
    "call": [
        (op.if_then_else(FALSE, x, y), "y"),
        (op.if_then_else(p, x, x), "x"),
        (op.likely(TRUE), "True"),
        (op.likely(p), None),
    ],
    "cast": [
        (Cast("int64", x), "x"),
        (Cast("float32", x4(x)), "x4(float32(x))"),
        (Cast("int32", x), None),
    ],
    "let-inline": [
        (Let(Var("v"), c(3), Var("w") + 1), "w + 1"),
        (Let(v := Var("v"), c(3), v + x), "x + 3"),
        (Let(v2 := Var("v"), x * y, v2 + v2), None),
    ],
}


def test_every_rule_has_golden_examples() -> None:
    assert set(GOLDEN) == {r.name for r in RULES}
    for rule in RULES:
        assert rule.doc, f"rule {rule.name} has no docstring"


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden(name: str) -> None:
    for e, want in GOLDEN[name]:
        assert apply(name, e) == want, f"{name}: {astext(e)}"


def test_rule_order_per_class() -> None:
    names = [r.fn.__name__ for r in RULES]
    for cls in (Add, FloorDiv, Min, LT, Cast):
        order = [names.index(fn.__name__) for fn in rules_for(cls)]
        assert order == sorted(order) and order[0] == 0  # folding first, then table order


# ------------------------------------------------------------------ exhaustive soundness

POOL: list[PrimExpr] = [
    x, y, c(5), c(-3), x * 4 + y, x * 8 + y, y * 2 + 1, x - y, x // 2, x % 4, y % 8,
    Min(x, y), x * 3, x * 8 + y * 2 + 6, y + 8, Max(x, c(0)),
]  # fmt: skip
DIVISORS = [1, 2, 3, 4, 8, -2]
INT_BINARY = (Add, Sub, Mul, FloorDiv, FloorMod, Div, Mod, Min, Max)
COMPARES = (EQ, NE, LT, LE, GT, GE)


def _scalar_family() -> Iterator[PrimExpr]:
    for a, b in itertools.product(POOL, POOL):
        for cls in (Add, Sub, Min, Max, *COMPARES):
            yield cls(a, b)
        yield Mul(a, c(3))
        yield Mul(c(-2), b)
        yield Mul(a, b)
    for a in POOL:
        for k in DIVISORS:
            for cls in (FloorDiv, FloorMod, Div, Mod):
                yield cls(a, c(k))
                yield cls(FloorDiv(a, c(2)), c(k))
                yield cls(FloorMod(a, c(8)), c(k))
        yield Min(c(2), a)
        yield Max(c(2), a)
        yield Add((a // 4) * 4, a % 4)
        yield Select(LT(a, c(2)), a, a + 1)
        yield Select(TRUE, a, c(0))
        yield op.if_then_else(GE(a, c(0)), a, a)
        yield Not(LT(a, y))
        yield Not(Not(GE(a, x)))
        yield Cast("int64", a)
        yield Let(v := Var("v"), c(2), v * a)
        yield Let(v := Var("v"), a, v + x)
    for b1, b2 in itertools.product([TRUE, FALSE, LT(x, y), GE(x, c(0))], repeat=2):
        yield And(b1, b2)
        yield Or(b1, b2)
        yield Not(b1)
        yield EQ(b1, b2)


def _vector_family() -> Iterator[PrimExpr]:
    small = [x, y, x * 2 + 1, y * 8, y * 8 + 3]
    for a, b in itertools.product(small, small):
        for cls in (Add, Sub, Mul, Min, Max):
            yield cls(x4(a), x4(b))
            yield cls(Ramp(a, c(1), 4), x4(b))
            yield cls(x4(a), Ramp(b, c(2), 4))
            yield cls(Ramp(a, c(1), 4), Ramp(b, c(-1), 4))
    for a in small:
        for k in (2, 4, 8):
            for s in (0, 1, 2):
                yield FloorDiv(Ramp(a, c(s), 4), x4(c(k)))
                yield FloorMod(Ramp(a, c(s), 4), x4(c(k)))
        yield Cast("float32x4", x4(a))
        yield LT(Ramp(a, c(1), 4), x4(c(8)))


def _float_family() -> Iterator[PrimExpr]:
    one, zero, two = (FloatImm(v, "float32") for v in (1.0, 0.0, 2.0))
    for e in (f, f * two, f + one):
        for cls in (Add, Sub, Mul, Div):
            yield cls(e, one)
            yield cls(e, zero)
            yield cls(one, e)
            yield cls(two, e)
        yield Cast("float32", e)
        yield Min(e, e)
    for a, b in itertools.product([1.5, -2.0, 0.0], [3.0, -0.5]):
        yield op.floor(FloatImm(a, "float32") * FloatImm(b, "float32"))
        yield Add(FloatImm(a, "float32"), FloatImm(b, "float32"))


def _const_family() -> Iterator[PrimExpr]:
    for dtype in ("int64", "int32", "int8", "uint8"):
        for a, b in itertools.product([-7, 0, 3, 100], [-2, 0, 3, 8]):
            if dtype == "uint8" and (a < 0 or b < 0):
                continue
            for cls in (*INT_BINARY, *COMPARES):
                yield cls(c(a, dtype), c(b, dtype))
            yield Cast("int64", c(a, dtype))


_GRID = {
    v: arr
    for v, arr in zip(
        RANGES,
        np.array(list(itertools.product(*[range(lo, hi + 1) for lo, hi in RANGES.values()]))).T,
    )
}
_FLOATS = np.array([1.5, -2.25, 0.0, -0.0, 3e38, np.inf, np.nan], dtype=np.float32)
_BOOLS = {p: np.array([0, 0, 1, 1], dtype=bool), q: np.array([0, 1, 0, 1], dtype=bool)}


def _values(e: PrimExpr) -> np.ndarray:
    """`e` on every point of the ranges (one row per point, one column per lane)."""
    free = {n for n in sub_expressions(e) if isinstance(n, Var)}
    if f in free:
        return np.stack([evaluate_expr(e, {f: v}) for v in _FLOATS])
    if free & set(_BOOLS):
        return np.stack([evaluate_expr(e, {k: v[i] for k, v in _BOOLS.items()}) for i in range(4)])
    if any(isinstance(n, (Ramp, Broadcast)) for n in sub_expressions(e)):
        n = len(_GRID[x])
        return np.stack(
            [evaluate_expr(e, {v: int(a[i]) for v, a in _GRID.items()}) for i in range(n)]
        )
    out = evaluate_expr(e, dict(_GRID))
    return np.broadcast_to(
        out, (len(_GRID[x]), *out.shape[1:]) if out.ndim > 1 else (len(_GRID[x]),)
    )


FAMILIES: dict[str, Callable[[], Iterator[PrimExpr]]] = {
    "scalar": _scalar_family,
    "vector": _vector_family,
    "float": _float_family,
    "constant": _const_family,
}


@cache
def _candidates() -> dict[type, list[PrimExpr]]:
    """The expressions of every family, by the class of their root."""
    out: dict[type, list[PrimExpr]] = {}
    for family in FAMILIES.values():
        for e in family():
            out.setdefault(type(e), []).append(e)
    return out


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_rule_is_sound_on_small_ranges(rule) -> None:  # type: ignore[no-untyped-def]
    """Every rewrite the rule makes alone is equal to its input on every point."""
    s = Simplifier(RANGES)
    fired = 0
    for cls, candidates in _candidates().items():
        if not issubclass(cls, rule.types):
            continue
        for e in candidates:
            out = s.apply(rule, e)
            if out is None:
                continue
            fired += 1
            assert out.dtype == e.dtype, f"{rule.name}: {astext(e)} => {astext(out)}"
            np.testing.assert_array_equal(
                _values(e), _values(out), err_msg=f"{rule.name}: {astext(e)} => {astext(out)}"
            )
    assert fired, f"rule {rule.name} never fired on the families"
