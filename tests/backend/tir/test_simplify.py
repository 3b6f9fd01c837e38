"""The TIR simplifier: golden rewrites, and equivalence checked exhaustively on small ranges."""

import itertools
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from relay.backend import tir
from relay.backend.tir import op
from relay.backend.tir.arith import simplify
from relay.backend.tir.evaluate import evaluate_expr, run_primfunc
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
from relay.backend.tir.printer import astext
from relay.backend.tir.stmt import (
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    seq,
)
from relay.backend.tir.transform.simplify import simplify_stmt

i, j, k = Var("i"), Var("j"), Var("k")
R = {i: Range(0, 4), j: Range(0, 8), k: Range(0, 16)}


def _s(e, ranges=R):
    return astext(simplify(e, ranges))


def test_index_arithmetic():
    assert _s((i * 8 + j) // 8) == "i"
    assert _s((i * 8 + j) % 8) == "j"
    assert _s((i * 8 + j + 3) // 8) == "i + (j + 3)//8"
    assert _s((i * 8 + j) // 4) == "i*2 + j//4"
    assert _s((i * 16 + j * 2) % 8) == "j%4*2"
    assert _s(tir.truncdiv(i * 8 + j, const(8))) == "i"
    assert _s((k // 4) // 2) == "k//8"
    assert _s((k % 8) % 4) == "k%4"
    assert _s((k % 8) // 4) == "k//4%2"
    f = Var("f")
    assert _s((f // 8) * 8 + f % 8, {}) == "f"
    assert _s(((i * 8 + j) // 8) * 8 + (i * 8 + j) % 8) == "i*8 + j"
    # int64 index arithmetic is assumed not to overflow
    assert _s((f * 8 + 3) // 8, {}) == "f"
    assert _s((f * 8 + j) // 8, {}) == "f + j//8"


def test_linear_canonical_form():
    assert _s(2 + i * 4 + i) == "i*5 + 2"
    assert _s(i + 0) == "i"
    assert _s(i * 1) == "i"
    assert _s(i * 0) == "0"
    assert _s(i - i) == "0"
    assert _s((i + 1) * 4 - 4) == "i*4"
    assert _s(3 - j + i) == "i - j + 3"
    assert _s(i - 5) == "i - 5"


def test_constant_folding_respects_dtypes():
    assert _s(FloatImm(0.1) + FloatImm(0.2)) == astext(
        FloatImm(float(np.float32(0.1) + np.float32(0.2)))
    )
    assert _s(IntImm(100, "int8") + IntImm(100, "int8")) == "-56i8"
    assert _s(tir.truncdiv(const(-7), const(2))) == "-3"
    assert _s(const(-7) // 2) == "-4"
    assert _s(tir.cast("int32", FloatImm(-2.7))) == "-2i32"
    assert _s(Cast("bool", FloatImm(0.5))) == "True"
    assert _s(Cast("uint8", const(-1, "int32"))) == "255u8"
    assert _s(op.call("round", FloatImm(2.5))) == "3.0"
    assert _s(const(5) // 0) == "5//0"  # division by zero is left for run time
    assert _s(op.exp(FloatImm(1.0))) == "exp(1.0)"  # transcendental: not folded


def test_float_identities_keep_ieee():
    x = Var("x", "float32")
    assert _s(x * 1.0) == "x"
    assert _s(x / 1.0) == "x"
    assert _s(x - 0.0) == "x"
    assert _s(x + 0.0) == "x + 0.0"  # -0.0 + 0.0 is +0.0
    assert _s(x * 0.0) == "x*0.0"  # NaN/inf times zero
    assert _s(x - x) == "x - x"
    assert _s(FloatImm(1.5) * x) == "x*1.5"


def test_comparisons_minmax_logic():
    assert _s(i * 8 + j < 32) == "True"
    assert _s(i * 8 + j < 31) == "i*8 + j < 31"
    assert _s(i < 3) == "i < 3"
    assert _s(j >= 0) == "True"
    assert _s(tir.eq(i, i + 1)) == "False"
    assert _s(tir.min_(i * 8 + j, i * 8 + 8)) == "i*8 + j"
    assert _s(tir.max_(i, const(10))) == "10"
    assert _s(tir.min_(const(3), k)) == "min(k, 3)"
    assert _s((i < 3) & (j >= 0)) == "i < 3"
    assert _s((i < 3) | (j >= 0)) == "True"
    assert _s(~(i < j)) == "i >= j"
    assert _s(op.likely(j < 8)) == "True"
    x = Var("x", "float32")
    assert _s(tir.select(i < 100, x, x + 1.0)) == "x"
    assert _s(op.if_then_else(i > 10, x, x * 2.0)) == "x*2.0"
    assert _s(Let(Var("t"), i + 1, Var("u"))) == "u"


def test_vector_rules():
    ramp = Ramp(i * 16, const(1), 16)
    assert _s(ramp + Broadcast(const(3), 16)) == "ramp(i*16 + 3, 1, 16)"
    assert _s(ramp // Broadcast(const(16), 16)) == "x16(i)"
    assert _s(ramp % Broadcast(const(16), 16)) == "ramp(0, 1, 16)"
    assert _s(ramp < Broadcast(const(64), 16)) == "x16(True)"
    assert _s(Broadcast(i, 4) * Broadcast(const(2), 4)) == "x4(i*2)"
    assert _s(Ramp(i, const(1), 4) * Broadcast(const(3), 4)) == "ramp(i*3, 3, 4)"


def test_simplify_stmt():
    A = tir.decl_buffer((32,), "float32", "A")
    x, t = Var("x"), Var("t")
    body = seq(
        For(x, 2, 1, ForKind.SERIAL, BufferStore(A, FloatImm(1.0), [x * 3])),
        For(x, 0, 0, ForKind.SERIAL, BufferStore(A, FloatImm(2.0), [x])),
        For(
            i,
            0,
            4,
            ForKind.SERIAL,
            For(
                j,
                0,
                8,
                ForKind.SERIAL,
                IfThenElse(
                    op.likely(i * 8 + j < 32), BufferStore(A, FloatImm(3.0), [(i * 8 + j) % 32])
                ),
            ),
        ),
        LetStmt(t, const(5), BufferStore(A, FloatImm(4.0), [t])),
        Evaluate(const(0)),
        IfThenElse(i < 0, BufferStore(A, FloatImm(5.0), [const(0)])),
    )
    assert astext(simplify_stmt(body, {i: (0, 3)})) == (
        "A[6] = 1.0\nfor i in serial(0, 4):\n  for j in serial(0, 8):\n    A[i*8 + j] = 3.0\nA[5] = 4.0"
    )


def test_conditions_refine_ranges():
    A = tir.decl_buffer((32,), "float32", "A")
    body = For(
        i,
        0,
        10,
        ForKind.SERIAL,
        IfThenElse(
            i < 4,
            BufferStore(A, FloatImm(1.0), [tir.min_(i, const(5))]),
            BufferStore(A, FloatImm(2.0), [tir.max_(i, const(3))]),
        ),
    )
    assert astext(simplify_stmt(body)) == (
        "for i in serial(0, 10):\n  if i < 4:\n    A[i] = 1.0\n  else:\n    A[i] = 2.0"
    )


def test_long_sequence_simplifies_iteratively():
    A = tir.decl_buffer((1,), "int64", "A")
    body = SeqStmt([BufferStore(A, const(kk) + 0, [const(0)]) for kk in range(5000)])
    out = simplify_stmt(body)
    assert len(out.stmts) == 5000 and astext(out.stmts[-1]) == "A[0] = 4999"
    nested = BufferStore(A, const(1), [const(0)])
    for d in range(2000):
        nested = For(Var(f"v{d}"), 0, 1, ForKind.SERIAL, nested)
    assert astext(simplify_stmt(nested)) == "A[0] = 1"


def test_simplify_stmt_keeps_results():
    A = tir.decl_buffer((3, 13), "float32", "A")
    B = tir.decl_buffer((3, 13), "float32", "B")
    io, jo, ji = Var("i"), Var("jo"), Var("ji")
    jj = jo * 8 + ji
    body = For(
        io,
        0,
        3,
        ForKind.SERIAL,
        For(
            jo,
            0,
            2,
            ForKind.SERIAL,
            For(
                ji,
                0,
                8,
                ForKind.SERIAL,
                IfThenElse(op.likely(jj < 13), BufferStore(B, A.load(io, jj) * 1.0, [io, jj])),
            ),
        ),
    )
    f = PrimFunc("f", (A, B), body)
    g = PrimFunc("f", (A, B), simplify_stmt(body))
    a = np.random.default_rng(0).random((3, 13), dtype=np.float32)
    b1, b2 = np.zeros_like(a), np.zeros_like(a)
    run_primfunc(f, a, b1)
    run_primfunc(g, a, b2)
    np.testing.assert_array_equal(b1, b2)


# ---------------------------------------------------------------- exhaustive equivalence

_V = [Var("a"), Var("b"), Var("c")]
_RANGES = {_V[0]: (0, 6), _V[1]: (-4, 3), _V[2]: (0, 9)}


def _leaf():
    return st.one_of(st.sampled_from(_V), st.integers(-10, 10).map(lambda v: const(v)))


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
        st.integers(1, 12),
    ).map(lambda t: t[0](t[1], const(t[2])))
    scaled = st.tuples(children, st.integers(-4, 9)).map(lambda t: t[0] * t[1])
    cmps = st.tuples(
        st.sampled_from([lambda a, b: a < b, lambda a, b: a <= b, tir.eq]), children, children
    )
    selects = st.tuples(cmps, children, children).map(
        lambda t: tir.select(t[0][0](t[0][1], t[0][2]), t[1], t[2])
    )
    return st.one_of(binary, divs, scaled, selects)


int_exprs = st.recursive(_leaf(), _node, max_leaves=10)


def _grid(ranges):
    """Every point of the ranges at once: one array per variable (the evaluator works on
    arrays elementwise, so one evaluation covers the whole grid)."""
    points = np.array(list(itertools.product(*[range(lo, hi + 1) for lo, hi in ranges.values()])))
    return {v: points[:, n] for n, v in enumerate(ranges)}, len(points)


@given(int_exprs)
def test_simplify_preserves_integer_values(e):
    s = simplify(e, _RANGES)
    env, n = _grid(_RANGES)
    want = np.broadcast_to(evaluate_expr(e, env), (n,))
    got = np.broadcast_to(evaluate_expr(s, env), (n,))
    np.testing.assert_array_equal(want, got, err_msg=f"{astext(e)}  =>  {astext(s)}")


@given(int_exprs, st.sampled_from([4, 8, 5]))
def test_simplify_preserves_vector_values(e, lanes):
    from relay.backend.tir.transform.vectorize import _Lanes

    # a = ramp(c, 1, lanes): the expression as the vectorizer lifts it
    vec = _Lanes(_V[0], _V[2], lanes).expr(e)
    ranges = {_V[1]: (-4, 3), _V[2]: (0, 3)}
    s = simplify(vec, ranges)
    grid, n = _grid(ranges)
    per_lane = [
        np.broadcast_to(evaluate_expr(e, {**grid, _V[0]: grid[_V[2]] + lane}), (n,))
        for lane in range(lanes)
    ]
    for p in range(n):
        env = {v: int(vals[p]) for v, vals in grid.items()}
        want = evaluate_expr(vec, env)
        got = evaluate_expr(s, env)
        assert len(got) == len(want)
        np.testing.assert_array_equal(want, got)
        np.testing.assert_array_equal(np.broadcast_to(want, (lanes,)), [x[p] for x in per_lane])


_floats = st.sampled_from([0.0, -0.0, 1.0, -2.5, 3.0e38, math.inf, -math.inf, math.nan, 0.1])


@given(_floats, _floats, st.sampled_from(["add", "sub", "mul", "div", "min", "max"]))
def test_float_simplification_is_bit_exact(x, y, name):
    xv, yv = Var("x", "float32"), Var("y", "float32")
    ops = {
        "add": lambda a, b: a + b,
        "sub": lambda a, b: a - b,
        "mul": lambda a, b: a * b,
        "div": lambda a, b: a / b,
        "min": Min,
        "max": Max,
    }
    fn = ops[name]
    for e in (fn(xv, FloatImm(y)), fn(FloatImm(x), yv), fn(FloatImm(x), FloatImm(y)), fn(xv, xv)):
        s = simplify(e)
        got = evaluate_expr(s, {xv: x, yv: y})
        want = evaluate_expr(e, {xv: x, yv: y})
        assert got.tobytes() == want.tobytes() or (np.isnan(got).all() and np.isnan(want).all()), (
            astext(e),
            astext(s),
        )
