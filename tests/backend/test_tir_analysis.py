"""TIR analysis: structural equality/hash, variables, verify, integer bounds, linear forms."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from relay.backend import tir
from relay.backend.tir import op
from relay.backend.tir.analysis import (
    VerifyError,
    const_int_bound,
    free_vars,
    linear_form,
    prim_equal,
    prim_hash,
    undefined_vars,
    verify,
    verify_problems,
)
from relay.backend.tir.evaluate import evaluate_expr
from relay.backend.tir.expr import (
    Broadcast,
    Cast,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Ramp,
    Range,
    Var,
    const,
)
from relay.backend.tir.stmt import (
    Allocate,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    seq,
)
from relay.backend.tir.visitor import sub_expressions


def test_prim_equal_and_hash():
    i, j = Var("i"), Var("j")
    a = (i * 8 + j) // 4
    b = (i * 8 + j) // 4
    assert a is not b and prim_equal(a, b) and prim_hash(a) == prim_hash(b)
    assert not prim_equal(a, (i * 8 + j) // 2)
    assert not prim_equal(i + j, j + i)
    assert not prim_equal(i, Var("i"))  # variables by identity
    assert not prim_equal(const(1), const(1, "int32"))  # dtypes matter
    assert prim_equal(FloatImm(math.nan), FloatImm(math.nan))
    A = tir.decl_buffer((4,), "float32", "A")
    B = tir.decl_buffer((4,), "float32", "A")
    assert prim_equal(A.load(i), A.load(i)) and not prim_equal(A.load(i), B.load(i))
    s1 = BufferStore(A, FloatImm(1.0), [i])
    s2 = BufferStore(A, FloatImm(1.0), [i])
    assert prim_equal(s1, s2) and prim_hash(s1) == prim_hash(s2)
    assert prim_equal(Ramp(i, const(1), 4), Ramp(i, const(1), 4))
    assert not prim_equal(Ramp(i, const(1), 4), Ramp(i, const(1), 8))
    assert prim_equal(op.exp(FloatImm(1.0)), op.exp(FloatImm(1.0)))
    assert not prim_equal(op.exp(FloatImm(1.0)), op.log(FloatImm(1.0)))


def test_equality_of_deep_expressions_is_iterative():
    i = Var("i")
    a, b = i, i
    for k in range(400):  # BinaryOp.dtype itself recurses, so nodes cap the depth
        a = a + k
        b = b + k
    assert prim_equal(a, b) and prim_hash(a) == prim_hash(b)


def test_free_vars():
    i, j, x = Var("i"), Var("j"), Var("x")
    assert free_vars(i * j + i) == [i, j]
    assert free_vars(Let(x, i + 1, x * j)) == [i, j]
    A = tir.decl_buffer((4,), "int64", "A")
    loop = For(i, 0, 4, ForKind.SERIAL, BufferStore(A, i + j, [i]))
    assert free_vars(loop) == [j]


def _func(body, *params):
    return PrimFunc("f", params, body)


def test_undefined_vars_are_scoped():
    A = tir.decl_buffer((4,), "int64", "A")
    i, j = Var("i"), Var("j")
    use_after = seq(
        For(i, 0, 4, ForKind.SERIAL, BufferStore(A, i, [i])), BufferStore(A, i, [const(0)])
    )
    assert undefined_vars(_func(use_after, A)) == [i]
    ok = For(i, 0, 4, ForKind.SERIAL, LetStmt(j, i * 2, BufferStore(A, j, [i])))
    assert undefined_vars(_func(ok, A)) == []
    verify(_func(ok, A))


def test_verify_reports_problems():
    A = tir.decl_buffer((2, 3), "float32", "A")
    i = Var("i")
    i32 = Var("k", "int32")
    T = tir.decl_buffer((4,), "float32", "T")
    cases = {
        "outside the scope": BufferStore(A, FloatImm(1.0), [i, i]),
        "loop variable has dtype int32": For(
            i32,
            const(0, "int32"),
            const(2, "int32"),
            ForKind.SERIAL,
            BufferStore(A, FloatImm(1.0), [const(0)]),
        ),
        "accessed with 3 indices": BufferStore(A, FloatImm(1.0), [const(0), const(0), const(0)]),
        "store of a int64": BufferStore(A, const(1), [const(0)]),
        "if condition": IfThenElse(const(1), BufferStore(A, FloatImm(1.0), [const(0)])),
        "outside its allocation": seq(
            Allocate(T, BufferStore(T, FloatImm(1.0), [const(0)])),
            BufferStore(A, T.load(0), [const(0)]),
        ),
        "bound again": For(
            i,
            0,
            2,
            ForKind.SERIAL,
            For(i, 0, 2, ForKind.SERIAL, BufferStore(A, FloatImm(1.0), [i])),
        ),
        "4-lane index": BufferStore(A, FloatImm(1.0), [Ramp(const(0), const(1), 4)]),
    }
    for needle, body in cases.items():
        problems = verify_problems(_func(body, A))
        assert problems and needle in problems[0], (needle, problems)
        with pytest.raises(VerifyError, match="ill-formed"):
            verify(_func(body, A))
    # both access forms, vectors and sibling rebinding are fine
    good = seq(
        For(i, 0, 2, ForKind.SERIAL, BufferStore(A, FloatImm(1.0), [i, i])),
        For(i, 0, 6, ForKind.SERIAL, BufferStore(A, FloatImm(2.0), [i])),
        BufferStore(A, Broadcast(FloatImm(0.0), 4), [Ramp(const(0), const(1), 4)]),
    )
    assert verify_problems(_func(good, A)) == []


def test_verify_long_sequence():
    A = tir.decl_buffer((1,), "int64", "A")
    body = SeqStmt([BufferStore(A, const(k), [const(0)]) for k in range(20000)])
    verify(_func(body, A))


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
