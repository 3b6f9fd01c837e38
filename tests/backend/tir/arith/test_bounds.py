"""Interval analysis (`const_int_bound`) and linear forms of the arithmetic engine: examples,
and soundness on every point of small ranges."""

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from relay.backend import tir
from relay.backend.tir.arith import const_int_bound, linear_form
from relay.backend.tir.evaluate import evaluate_expr
from relay.backend.tir.expr import Cast, FloorDiv, FloorMod, IntImm, Max, Min, Range, Var, const
from relay.backend.tir.visitor import sub_expressions


def test_const_int_bound_examples():
    i, j = Var("i"), Var("j")
    r = {i: Range(0, 4), j: (0, 7)}
    assert const_int_bound(i * 8 + j, r) == (0, 31)
    assert const_int_bound((i * 8 + j) // 8, r) == (0, 3)
    assert const_int_bound((i * 8 + j) % 8, r) == (0, 7)
    assert const_int_bound(j % 8, r) == (0, 7)
    assert const_int_bound((j + 8) % 8, r) == (0, 7)
    assert const_int_bound(tir.min_(i, j - 5), r) == (-5, 2)
    assert const_int_bound(i - j, r) == (-7, 3)
    assert const_int_bound(i * -3, r) == (-9, 0)
    assert const_int_bound(Var("free")) == (-(2**63), 2**63 - 1)
    assert const_int_bound(Var("u", "uint8")) == (0, 255)
    assert const_int_bound(i < j, r) == (0, 1)
    # unbounded vars give infinities where the dtype cannot overflow... or the dtype range
    lo, hi = const_int_bound(Var("f") // 4)
    assert lo <= -(2**61) and hi >= 2**61 - 1


# ------------------------------------------------------------- soundness by enumeration

_V = [Var("a"), Var("b"), Var("c")]
_RANGES = {_V[0]: (0, 5), _V[1]: (-3, 3), _V[2]: (1, 4)}


def _leaf():
    return st.one_of(st.sampled_from(_V), st.integers(-9, 9).map(lambda v: const(v)))


def _node(children):
    ops = [
        lambda a, b: a + b,
        lambda a, b: a - b,
        lambda a, b: a * b,
        lambda a, b: Min(a, b),
        lambda a, b: Max(a, b),
    ]
    binary = st.tuples(st.sampled_from(ops), children, children).map(lambda t: t[0](t[1], t[2]))
    divs = st.tuples(
        st.sampled_from([FloorDiv, FloorMod, tir.truncdiv, tir.truncmod]),
        children,
        st.integers(1, 9),
    ).map(lambda t: t[0](t[1], const(t[2])))
    return st.one_of(binary, divs)


int_exprs = st.recursive(_leaf(), _node, max_leaves=8)


def _grid():
    """Every point at once: one array per variable (evaluated elementwise)."""
    points = np.array(list(itertools.product(*[range(lo, hi + 1) for lo, hi in _RANGES.values()])))
    return {v: points[:, n] for n, v in enumerate(_V)}


@given(int_exprs)
def test_const_int_bound_is_sound(e):
    lo, hi = const_int_bound(e, _RANGES)
    values = evaluate_expr(e, _grid())
    assert lo <= values.min() and values.max() <= hi, (tir.astext(e), lo, hi)


@given(int_exprs)
def test_linear_form_is_exact(e):
    a = _V[0]
    form = linear_form(e, a)
    if form is None:
        return
    coeff, rest = form
    assert not any(n is a for n in sub_expressions(rest))
    env = _grid()
    want = evaluate_expr(e, env)
    got = coeff * env[a] + evaluate_expr(rest, env)
    np.testing.assert_array_equal(np.broadcast_to(want, got.shape), got)


def test_linear_form_examples():
    i, j = Var("i"), Var("j")
    assert linear_form(i * 8 + j - i, i)[0] == 7
    assert linear_form(j * 3, i)[0] == 0
    assert linear_form(i * i, i) is None
    assert linear_form((i + 1) // 2, i) is None
    assert linear_form(Cast("int64", Var("x", "int32")) + i, i)[0] == 1
    assert const_int_bound(IntImm(3, "int32")) == (3, 3)
