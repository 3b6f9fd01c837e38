"""The reference TIR evaluator: loops, vectors, memory, and the dtype semantics of every node."""

import math

import numpy as np
import pytest
from relay.backend import tir
from relay.backend.tir import op
from relay.backend.tir.evaluate import TIREvalError, evaluate_expr, run_primfunc
from relay.backend.tir.expr import (
    Broadcast,
    BufferLoad,
    Cast,
    FloatImm,
    IntImm,
    Let,
    Ramp,
    Var,
    const,
)
from relay.backend.tir.stmt import (
    Allocate,
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


def _add_func(n: int, m: int, kind: ForKind = ForKind.SERIAL) -> PrimFunc:
    A = tir.decl_buffer((n, m), "float32", "A")
    B = tir.decl_buffer((n, m), "float32", "B")
    C = tir.decl_buffer((n, m), "float32", "C")
    i, j = Var("i"), Var("j")
    store = BufferStore(C, A.load(i, j) + B.load(i, j), (i, j))
    return PrimFunc("add", (A, B, C), For(i, 0, n, kind, For(j, 0, m, ForKind.SERIAL, store)))


@pytest.mark.parametrize("kind", list(ForKind))
def test_multidim_elementwise(kind):
    f = _add_func(3, 13, kind)
    rng = np.random.default_rng(0)
    a, b = rng.random((3, 13), dtype=np.float32), rng.random((3, 13), dtype=np.float32)
    c = np.zeros((3, 13), np.float32)
    run_primfunc(f, a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_flat_vector_accesses_with_tail():
    n = 17
    A = tir.decl_buffer((n,), "float32", "A")
    C = tir.decl_buffer((n,), "float32", "C")
    i, t = Var("i"), Var("t")
    vec = Ramp(i * 8, const(1), 8)
    main = For(
        i,
        0,
        2,
        ForKind.SERIAL,
        BufferStore(C, BufferLoad(A, [vec]) * Broadcast(FloatImm(2.0), 8), [vec]),
    )
    tail = For(t, 16, 1, ForKind.SERIAL, BufferStore(C, A.load(t) * 2.0, [t]))
    a = np.arange(n, dtype=np.float32)
    c = np.zeros(n, np.float32)
    run_primfunc(PrimFunc("k", (A, C), seq(main, tail)), a, c)
    np.testing.assert_array_equal(c, 2 * a)


def test_strided_ramp_is_gather_and_scatter():
    A = tir.decl_buffer((12,), "int32", "A")
    C = tir.decl_buffer((12,), "int32", "C")
    idx = Ramp(const(1), const(3), 4)  # 1, 4, 7, 10
    body = BufferStore(C, BufferLoad(A, [idx]) + Broadcast(const(100, "int32"), 4), [idx])
    a = np.arange(12, dtype=np.int32)
    c = np.zeros(12, np.int32)
    run_primfunc(PrimFunc("g", (A, C), body), a, c)
    expect = np.zeros(12, np.int32)
    expect[[1, 4, 7, 10]] = a[[1, 4, 7, 10]] + 100
    np.testing.assert_array_equal(c, expect)


def test_reduction_and_local_allocate():
    A = tir.decl_buffer((4, 5), "float32", "A")
    C = tir.decl_buffer((4,), "float32", "C")
    acc = tir.decl_buffer((1,), "float32", "acc", scope="local")
    i, k = Var("i"), Var("k")
    body = For(
        i,
        0,
        4,
        ForKind.PARALLEL,
        Allocate(
            acc,
            seq(
                BufferStore(acc, FloatImm(0.0), [const(0)]),
                For(
                    k,
                    0,
                    5,
                    ForKind.SERIAL,
                    BufferStore(acc, acc.load(0) + A.load(i, k), [const(0)]),
                ),
                BufferStore(C, acc.load(0), [i]),
            ),
        ),
    )
    a = np.random.default_rng(1).random((4, 5), dtype=np.float32)
    c = np.zeros(4, np.float32)
    run_primfunc(PrimFunc("sum", (A, C), body), a, c)
    np.testing.assert_allclose(c, a.sum(axis=1), rtol=1e-6)


def test_uninitialized_allocation_is_poisoned():
    T = tir.decl_buffer((3,), "float32", "T")
    C = tir.decl_buffer((3,), "float32", "C")
    i = Var("i")
    body = Allocate(T, For(i, 0, 3, ForKind.SERIAL, BufferStore(C, T.load(i), [i])))
    c = np.zeros(3, np.float32)
    run_primfunc(PrimFunc("u", (C,), body), c)
    assert np.isnan(c).all()


def test_let_stmt_let_expr_and_if():
    C = tir.decl_buffer((6,), "int64", "C")
    i, x, y = Var("i"), Var("x"), Var("y")
    body = For(
        i,
        0,
        6,
        ForKind.SERIAL,
        LetStmt(
            x,
            i * 10,
            IfThenElse(
                i < 3,
                BufferStore(C, Let(y, x + 1, y * y), [i]),
                BufferStore(C, -x, [i]),
            ),
        ),
    )
    c = np.zeros(6, np.int64)
    run_primfunc(PrimFunc("l", (C,), body), c)
    np.testing.assert_array_equal(c, [1, 121, 441, -30, -40, -50])


def test_if_then_else_is_lazy_for_scalars():
    A = tir.decl_buffer((4,), "float32", "A")
    C = tir.decl_buffer((6,), "float32", "C")
    i = Var("i")
    guarded = op.if_then_else(i < 4, A.load(i), FloatImm(-1.0))
    body = For(i, 0, 6, ForKind.SERIAL, BufferStore(C, guarded, [i]))
    a = np.arange(4, dtype=np.float32)
    c = np.zeros(6, np.float32)
    run_primfunc(PrimFunc("pad", (A, C), body), a, c)
    np.testing.assert_array_equal(c, [0, 1, 2, 3, -1, -1])


def test_select_evaluates_both_sides():
    A = tir.decl_buffer((4,), "float32", "A")
    C = tir.decl_buffer((6,), "float32", "C")
    i = Var("i")
    body = For(
        i, 0, 6, ForKind.SERIAL, BufferStore(C, tir.select(i < 4, A.load(i), FloatImm(-1.0)), [i])
    )
    with pytest.raises(TIREvalError, match="out-of-bounds"):
        run_primfunc(
            PrimFunc("pad", (A, C), body), np.zeros(4, np.float32), np.zeros(6, np.float32)
        )


def test_vector_if_then_else_masks_loads():
    A = tir.decl_buffer((10,), "float32", "A")
    C = tir.decl_buffer((16,), "float32", "C")
    idx = Ramp(const(0), const(1), 16)
    value = op.if_then_else(
        idx < Broadcast(const(10), 16), BufferLoad(A, [idx]), Broadcast(FloatImm(7.0), 16)
    )
    a = np.arange(10, dtype=np.float32) + 1
    c = np.zeros(16, np.float32)
    run_primfunc(PrimFunc("vpad", (A, C), BufferStore(C, value, [idx])), a, c)
    np.testing.assert_array_equal(c, np.concatenate([a, np.full(6, 7.0, np.float32)]))


def test_out_of_bounds_and_arity_errors():
    A = tir.decl_buffer((2, 3), "float32", "A")
    i = Var("i")
    body = For(i, 0, 7, ForKind.SERIAL, BufferStore(A, FloatImm(1.0), [i]))
    with pytest.raises(TIREvalError, match="out-of-bounds"):
        run_primfunc(PrimFunc("oob", (A,), body), np.zeros((2, 3), np.float32))
    neg = BufferStore(A, FloatImm(1.0), [const(0), const(-1)])
    with pytest.raises(TIREvalError, match="out-of-bounds"):
        run_primfunc(PrimFunc("neg", (A,), neg), np.zeros((2, 3), np.float32))
    bad = BufferStore(A, FloatImm(1.0), [const(0), const(0), const(0)])
    with pytest.raises(TIREvalError, match="dimensions"):
        run_primfunc(PrimFunc("bad", (A,), bad), np.zeros((2, 3), np.float32))


def test_argument_checks():
    f = _add_func(2, 2)
    ok = np.zeros((2, 2), np.float32)
    with pytest.raises(ValueError, match="takes 3"):
        run_primfunc(f, ok, ok)
    with pytest.raises(ValueError, match="dtype"):
        run_primfunc(f, ok, ok, np.zeros((2, 2), np.float64))
    with pytest.raises(ValueError, match="contiguous"):
        run_primfunc(f, ok, ok, np.zeros((2, 4), np.float32)[:, ::2])


def test_long_sequences_and_let_chains_do_not_recurse():
    n = 5000
    C = tir.decl_buffer((n,), "int32", "C")
    stores = [BufferStore(C, const(k % 97, "int32"), [const(k)]) for k in range(n)]
    c = np.zeros(n, np.int32)
    run_primfunc(PrimFunc("long", (C,), SeqStmt(stores)), c)
    np.testing.assert_array_equal(c, np.arange(n) % 97)
    # a chain of 3000 nested LetStmts
    vars_ = [Var(f"v{k}") for k in range(3000)]
    body = BufferStore(C, Cast("int32", vars_[-1]), [const(0)])
    for k in reversed(range(3000)):
        body = LetStmt(vars_[k], vars_[k - 1] + 1 if k else const(0), body)
    run_primfunc(PrimFunc("chain", (C,), body), c)
    assert c[0] == 2999


# ---------------------------------------------------------------------------- semantics


def _ev(expr, **vals):
    bindings = {v: vals[v.name] for v in _free(expr) if v.name in vals}
    return evaluate_expr(expr, bindings)


def _free(expr):
    from relay.backend.tir.visitor import sub_expressions

    return [n for n in sub_expressions(expr) if isinstance(n, Var)]


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_integer_division_semantics(dtype):
    x, y = Var("x", dtype), Var("y", dtype)
    for a in (-7, -6, -1, 0, 5, 7):
        for b in (-3, -2, 2, 3):
            got = [
                int(_ev(e, x=a, y=b)[0])
                for e in (tir.truncdiv(x, y), tir.truncmod(x, y), x // y, x % y)
            ]
            assert got == [int(a / b), int(math.fmod(a, b)), a // b, a % b], (a, b)


def test_integer_overflow_wraps():
    x = Var("x", "int8")
    assert int(_ev(x + const(1, "int8"), x=127)[0]) == -128
    y = Var("y", "int32")
    assert int(_ev(y * 65536, y=65536)[0]) == 0
    assert int(_ev(y * 3, y=2**30)[0]) == -(2**30)
    u = Var("u", "uint8")
    assert int(_ev(u - const(1, "uint8"), u=0)[0]) == 255
    assert int(_ev(IntImm(300, "uint8"))[0]) == 44


def test_float32_arithmetic_rounds_to_float32():
    got = _ev(FloatImm(0.1) + FloatImm(0.2))
    assert got.dtype == np.float32
    assert got[0] == np.float32(0.1) + np.float32(0.2)
    x = Var("x", "float32")
    assert _ev(x / FloatImm(3.0), x=1.0)[0] == np.float32(1.0) / np.float32(3.0)
    assert _ev(op.exp(x), x=1.0)[0] == np.float32(math.exp(1.0))


def test_casts():
    x = Var("x", "float32")
    assert [int(_ev(tir.cast("int32", x), x=v)[0]) for v in (-2.7, 2.7, -0.5)] == [-2, 2, 0]
    assert [bool(_ev(tir.cast("bool", x), x=v)[0]) for v in (0.0, -0.0, 0.25)] == [
        False,
        False,
        True,
    ]
    i = Var("i", "int32")
    assert int(_ev(tir.cast("int8", i), i=300)[0]) == 44
    assert float(_ev(tir.cast("float32", i), i=16777217)[0]) == 16777216.0
    vec = _ev(Cast("int64x4", Ramp(FloatImm(-1.5), FloatImm(1.0), 4)))
    np.testing.assert_array_equal(vec, [-1, 0, 0, 1])


def test_rounding_intrinsics():
    x = Var("x", "float32")
    vals = [2.5, -2.5, 0.5, -0.5, 1.49999988, 0.49999997, -3.5]
    assert [float(_ev(op.call("round", x), x=v)[0]) for v in vals] == [3, -3, 1, -1, 1, 0, -4]
    assert [float(_ev(op.call("nearbyint", x), x=v)[0]) for v in vals] == [2, -2, 0, -0, 1, 0, -4]
    assert [float(_ev(op.call("trunc", x), x=v)[0]) for v in (2.7, -2.7)] == [2, -2]


_FLOAT_REFS = {
    "exp": math.exp, "exp2": lambda v: 2.0**v, "exp10": lambda v: 10.0**v, "log": math.log,
    "log2": math.log2, "log10": math.log10, "log1p": math.log1p, "expm1": math.expm1,
    "sqrt": math.sqrt, "rsqrt": lambda v: 1 / math.sqrt(v), "sin": math.sin, "cos": math.cos,
    "tan": math.tan, "asin": math.asin, "acos": math.acos, "atan": math.atan,
    "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh, "asinh": math.asinh,
    "acosh": lambda v: math.acosh(v + 1), "atanh": math.atanh, "erf": math.erf,
    "sigmoid": lambda v: 1 / (1 + math.exp(-v)), "floor": math.floor, "ceil": math.ceil,
    "fabs": abs,
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(_FLOAT_REFS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_intrinsics(name, dtype):
    x = Var("x", dtype)
    arg = x + FloatImm(1.0, dtype) if name == "acosh" else x
    for v in (0.25, 0.75):
        got = _ev(op.call(name, arg), x=v)
        assert got.dtype == np.dtype(dtype)
        want = np.array(_FLOAT_REFS[name](v)).astype(dtype)
        assert got[0] == pytest.approx(want, rel=1e-6), name


def test_binary_bit_and_predicate_intrinsics():
    a, b = Var("a", "int32"), Var("b", "int32")
    cases = {
        "bitwise_and": 12 & 10, "bitwise_or": 12 | 10, "bitwise_xor": 12 ^ 10,
        "shift_left": 12 << 10,
    }  # fmt: skip
    for name, want in cases.items():
        assert int(_ev(op.call(name, a, b), a=12, b=10)[0]) == want
    assert int(_ev(op.call("shift_right", a, b), a=-16, b=2)[0]) == -4  # arithmetic
    u = Var("u", "uint8")
    assert int(_ev(op.call("shift_right", u, const(2, "uint8")), u=240)[0]) == 60
    assert int(_ev(op.call("bitwise_not", a), a=5)[0]) == ~5
    assert int(_ev(op.call("popcount", a), a=-1)[0]) == 32
    x, y = Var("x", "float32"), Var("y", "float32")
    assert _ev(op.call("pow", x, y), x=2.0, y=10.0)[0] == 1024.0
    assert _ev(op.call("fmod", x, y), x=-7.0, y=3.0)[0] == -1.0
    assert _ev(op.call("copysign", x, y), x=2.0, y=-0.0)[0] == -2.0
    assert _ev(op.call("atan2", x, y), x=1.0, y=1.0)[0] == np.float32(math.pi / 4)
    for name, v, want in [
        ("isnan", math.nan, True),
        ("isinf", math.inf, True),
        ("isfinite", math.inf, False),
    ]:
        got = _ev(op.call(name, x), x=v)
        assert got.dtype == np.bool_ and bool(got[0]) is want
    assert _ev(op.reinterpret("int32", x), x=1.0)[0] == 0x3F800000
    assert bool(_ev(op.likely(x < y), x=1.0, y=2.0)[0])


def test_vector_nodes():
    i = Var("i")
    ramp = Ramp(i * 4, const(2), 4)
    np.testing.assert_array_equal(_ev(ramp, i=1), [4, 6, 8, 10])
    sel = tir.select(ramp < Broadcast(const(7), 4), ramp, Broadcast(const(0), 4))
    np.testing.assert_array_equal(_ev(sel, i=1), [4, 6, 0, 0])
    np.testing.assert_array_equal(_ev(tir.min_(ramp, Broadcast(i * 7, 4)), i=1), [4, 6, 7, 7])


def test_evaluate_statement_and_unknown_nodes():
    C = tir.decl_buffer((1,), "float32", "C")
    body = seq(Evaluate(op.exp(FloatImm(1.0))), BufferStore(C, FloatImm(3.0), [const(0)]))
    c = np.zeros(1, np.float32)
    run_primfunc(PrimFunc("e", (C,), body), c)
    assert c[0] == 3.0
    with pytest.raises(TIREvalError, match="not bound"):
        evaluate_expr(Var("free") + 1)
