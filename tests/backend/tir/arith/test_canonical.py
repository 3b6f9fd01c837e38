"""The canonical form (`canonical`), symbolic intervals (`interval`) and constant bounds
(`const_bound`) that bound inference and TE lowering use."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st
from relay.backend.tir import expr as E
from relay.backend.tir.arith import as_int, canonical, const_bound, interval
from relay.backend.tir.evaluate import evaluate_expr
from relay.backend.tir.printer import astext

n, m = E.Var("n"), E.Var("m")


def test_canonical_cancels_like_terms_and_divides_exact_multiples() -> None:
    assert as_int(canonical((n * 4 + 3) - n * 4 + 1)) == 4
    assert as_int(canonical(((n * 8 + 7) // 2) - (n * 8) // 2 + 1)) == 4
    assert astext(canonical((n // 3) * 4 + m - (n // 3) * 4)) == "m"
    assert astext(canonical((n * 4 + m + 1) % 4)) == "(m + 1)%4"
    assert as_int(canonical(E.min_(n + 2, n + 5) - n)) == 2


def test_interval_relaxes_only_the_given_variables() -> None:
    lo, hi = interval(n * 4 + m * 2 - 1, {m: (E.const(0), E.const(3))})
    assert (astext(lo), astext(hi)) == ("n*4 - 1", "n*4 + 5")
    lo, hi = interval(
        E.max_(E.min_(m * 2 - 1, E.const(9)), E.const(0)), {m: (E.const(0), E.const(100))}
    )
    assert (as_int(lo), as_int(hi)) == (0, 9)
    assert interval(m * n, {m: (E.const(0), E.const(3))}) == (None, None)


small = st.integers(-20, 20)


@given(a=small, b=small, c=st.integers(1, 6), lo=small, width=st.integers(0, 8))
def test_const_bound_contains_every_value(a: int, b: int, c: int, lo: int, width: int) -> None:
    x = E.Var("x")
    exprs = [
        x * a + b,
        (x * a + b) // c,
        (x * a + b) % c,
        E.min_(x * a, E.const(b)) - E.max_(x, E.const(b)),
        E.truncdiv(x * a + b, E.const(c)),
    ]
    for e in exprs:
        bound = const_bound(e, {x: (lo, lo + width)})
        values = [int(evaluate_expr(e, {x: v})[0]) for v in range(lo, lo + width + 1)]
        assert bound[0] is not None and bound[1] is not None
        assert bound[0] <= min(values) and max(values) <= bound[1], astext(e)


@given(coefs=st.lists(st.integers(-5, 5), min_size=3, max_size=3), k=st.integers(1, 5))
def test_canonical_preserves_values(coefs: list[int], k: int) -> None:
    x, y = E.Var("x"), E.Var("y")
    a, b, c = coefs
    exprs = [
        (x * a + y * b + c) - (y * b - x) * 2,
        ((x * k * a + c) // k) * 3 - x,
        (x * k + y * a + c) % k + (x * a) // 1,
        E.max_(x * a + 1, x * a - 2) - E.min_(y, y + c),
    ]
    for e in exprs:
        s = canonical(e)
        for vx, vy in itertools.product(range(-3, 4), repeat=2):
            env = {x: vx, y: vy}
            assert int(evaluate_expr(s, env)[0]) == int(evaluate_expr(e, env)[0]), astext(e)


def test_const_bound_is_none_where_unknown() -> None:
    assert const_bound(n + 1, {}) == (None, None)
    assert const_bound(n % 8, {}) == (0, 7)  # known without a range for n
    assert const_bound(E.min_(n, E.const(5)), {}) == (None, 5)
