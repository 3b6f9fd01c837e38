"""The vectorized numpy evaluator of tensor expressions."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from relay.backend.te import (
    compute,
    max_reduce,
    min_reduce,
    placeholder,
    prod,
    reduce_axis,
    sum_,
)
from relay.backend.te import evaluate as te_evaluate
from relay.backend.te.evaluate import evaluate
from relay.backend.tir import op as T
from relay.backend.tir.expr import (
    CommReducer,
    Let,
    Reduce,
    Var,
    all_of,
    cast,
    const,
    eq,
    select,
    truncdiv,
    truncmod,
)
from relay.backend.tir.stmt import seq

RNG = np.random.default_rng(0)


def test_matmul_sum_reduction() -> None:
    a = RNG.standard_normal((3, 4)).astype("float32")
    b = RNG.standard_normal((4, 5)).astype("float32")
    A, B = placeholder((3, 4), "float32", "A"), placeholder((4, 5), "float32", "B")
    r = reduce_axis(4, "r")
    C = compute((3, 5), lambda i, j: sum_(A[i, r] * B[r, j], axis=r), name="C")
    (out,) = evaluate(C, {A: a, B: b})
    assert out.dtype == np.float32 and out.shape == (3, 5)
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("reducer", "ref"),
    [(max_reduce, np.max), (min_reduce, np.min), (prod, np.prod), (sum_, np.sum)],
)
def test_simple_reducers_over_two_axes(reducer, ref) -> None:  # type: ignore[no-untyped-def]
    x = RNG.integers(-3, 4, (2, 3, 4)).astype("int32")
    X = placeholder((2, 3, 4), "int32", "X")
    r1, r2 = reduce_axis(3, "r1"), reduce_axis(4, "r2")
    Y = compute((2,), lambda i: reducer(X[i, r1, r2], axis=[r1, r2]), name="Y")
    (out,) = evaluate(Y, {X: x})
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, ref(x, axis=(1, 2)).astype("int32"))


def test_reduce_axis_with_offset_and_condition() -> None:
    x = RNG.standard_normal((6,)).astype("float32")
    X = placeholder((6,), "float32", "X")
    r = reduce_axis((2, 8), "r")  # r in [2, 8): reads past the end are masked by `where`
    Y = compute((1,), lambda i: sum_(X[r], axis=r, where=r.var < 6), name="Y")
    (out,) = evaluate(Y, {X: x})
    np.testing.assert_allclose(out, [x[2:].sum()], rtol=1e-6)


def test_integer_sum_wraps_around() -> None:
    x = np.full((4,), 100, dtype="int8")
    X = placeholder((4,), "int8", "X")
    r = reduce_axis(4, "r")
    Y = compute((), lambda: sum_(X[r], axis=r), name="Y")
    (out,) = evaluate(Y, {X: x})
    assert out.shape == () and out.dtype == np.int8
    assert int(out) == np.int8(np.int64(400).astype(np.int8))


def test_empty_reduction_gives_identity() -> None:
    X = placeholder((2, 0), "float32", "X")
    r = reduce_axis(0, "r")
    Y = compute((2,), lambda i: max_reduce(X[i, r], axis=r), name="Y")
    (out,) = evaluate(Y, {X: np.zeros((2, 0), "float32")})
    assert np.all(out == -np.inf)


def _argmax(X, n):  # type: ignore[no-untyped-def]
    li, lv = Var("li", "int32"), Var("lv", X.dtype)
    ri, rv = Var("ri", "int32"), Var("rv", X.dtype)
    better = (lv > rv) | (eq(lv, rv) & (li < ri))
    comb = CommReducer(
        (li, lv),
        (ri, rv),
        (select(better, li, ri), select(better, lv, rv)),
        (const(-1, "int32"), const(float("-inf"), X.dtype)),
        "argmax",
    )
    r = reduce_axis(n, "r")

    def body(i):  # type: ignore[no-untyped-def]
        src = (cast("int32", r.var), X[i, r])
        cond = const(True, "bool")
        return [Reduce(comb, src, (r,), cond, 0), Reduce(comb, src, (r,), cond, 1)]

    return compute((X.shape[0],), body, name="argmax")


def test_tuple_combiner_argmax_first_index_wins() -> None:
    x = np.array([[1, 3, 3, 0], [5, 5, 5, 5], [0, 1, 2, 9]], dtype="float32")
    X = placeholder((3, 4), "float32", "X")
    idx, val = _argmax(X, 4)
    out_idx, out_val = evaluate([idx, val], {X: x})
    assert out_idx.dtype == np.int32
    np.testing.assert_array_equal(out_idx, [1, 0, 3])
    np.testing.assert_array_equal(out_val, [3, 5, 9])


def test_if_then_else_guards_out_of_range_reads() -> None:
    a = RNG.standard_normal((3, 4)).astype("float32")
    A = placeholder((3, 4), "float32", "A")
    inside = lambda i, j: all_of(i >= 1, i < 4, j >= 2, j < 6)  # noqa: E731
    P = compute((5, 8), lambda i, j: T.if_then_else(inside(i, j), A[i - 1, j - 2], 0.0), name="pad")
    (out,) = evaluate(P, {A: a})
    expected = np.zeros((5, 8), "float32")
    expected[1:4, 2:6] = a
    np.testing.assert_array_equal(out, expected)


def test_unguarded_out_of_range_read_is_an_error() -> None:
    A = placeholder((3,), "float32", "A")
    B = compute((4,), lambda i: A[i], name="B")
    with pytest.raises(IndexError, match="out of range"):
        evaluate(B, {A: np.zeros(3, "float32")})


def test_select_guards_unless_strict() -> None:
    A = placeholder((3,), "float32", "A")
    B = compute((4,), lambda i: select(i < 3, A[i], const(7.0)), name="B")
    (out,) = evaluate(B, {A: np.array([1, 2, 3], "float32")})
    np.testing.assert_array_equal(out, [1, 2, 3, 7])
    with pytest.raises(IndexError):
        evaluate(B, {A: np.array([1, 2, 3], "float32")}, strict_select=True)


def test_nested_guards_combine_masks() -> None:
    # concatenate-like: the inner guard is only evaluated where the outer one failed
    A = placeholder((2,), "int32", "A")
    B = placeholder((3,), "int32", "B")
    C = placeholder((1,), "int32", "C")
    D = compute(
        (6,),
        lambda i: T.if_then_else(i < 2, A[i], T.if_then_else(i < 5, B[i - 2], C[i - 5])),
        name="cat",
    )
    args = {
        A: np.array([1, 2], "int32"),
        B: np.array([3, 4, 5], "int32"),
        C: np.array([6], "int32"),
    }
    np.testing.assert_array_equal(evaluate(D, args)[0], [1, 2, 3, 4, 5, 6])


def test_integer_division_semantics() -> None:
    a = np.array([7, -7, 7, -7, -128], "int8")
    b = np.array([2, 2, -2, -2, -1], "int8")
    A, B = placeholder((5,), "int8", "A"), placeholder((5,), "int8", "B")
    outs = [
        compute((5,), lambda i: truncdiv(A[i], B[i]), name="tdiv"),
        compute((5,), lambda i: truncmod(A[i], B[i]), name="tmod"),
        compute((5,), lambda i: A[i] // B[i], name="fdiv"),
        compute((5,), lambda i: A[i] % B[i], name="fmod"),
    ]
    tdiv, tmod, fdiv, fmod = evaluate(outs, {A: a, B: b})
    np.testing.assert_array_equal(tdiv[:4], [3, -3, -3, 3])
    np.testing.assert_array_equal(tmod[:4], [1, -1, 1, -1])
    np.testing.assert_array_equal(fdiv[:4], [3, -4, -4, 3])
    np.testing.assert_array_equal(fmod[:4], [1, 1, -1, -1])
    assert tdiv.dtype == np.int8 and int(tdiv[4]) == -128  # wraps like the hardware


def test_integer_arithmetic_wraps() -> None:
    A = placeholder((2,), "uint8", "A")
    B = compute((2,), lambda i: A[i] * 2 + 1, name="B")
    (out,) = evaluate(B, {A: np.array([100, 200], "uint8")})
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, [201, (401) % 256])


def test_casts() -> None:
    x = np.array([-1.7, -0.5, 0.0, 2.9, 300.0], "float32")
    X = placeholder((5,), "float32", "X")
    outs = [
        compute((5,), lambda i: cast("int32", X[i]), name="to_int"),
        compute((5,), lambda i: cast("bool", X[i]), name="to_bool"),
        compute((5,), lambda i: cast("float32", cast("int8", cast("int32", X[i]))), name="wrap"),
    ]
    to_int, to_bool, wrap = evaluate(outs, {X: x})
    np.testing.assert_array_equal(to_int, [-1, 0, 0, 2, 300])
    np.testing.assert_array_equal(to_bool, [True, True, False, True, True])
    np.testing.assert_array_equal(wrap, [-1, 0, 0, 2, 44])


def test_intrinsics() -> None:
    x = np.array([-2.5, -0.5, 0.5, 1.5, 2.4999998], "float32")
    X = placeholder((5,), "float32", "X")
    names = [
        "round",
        "nearbyint",
        "floor",
        "ceil",
        "trunc",
        "fabs",
        "exp",
        "tanh",
        "erf",
        "sigmoid",
    ]
    outs = [compute((5,), lambda i, n=n: T.call(n, X[i]), name=n) for n in names]
    got = dict(zip(names, evaluate(outs, {X: x})))
    np.testing.assert_array_equal(got["round"], [-3, -1, 1, 2, 2])
    np.testing.assert_array_equal(got["nearbyint"], [-2, -0, 0, 2, 2])
    np.testing.assert_array_equal(got["floor"], np.floor(x))
    np.testing.assert_array_equal(got["ceil"], np.ceil(x))
    np.testing.assert_array_equal(got["trunc"], np.trunc(x))
    np.testing.assert_array_equal(got["fabs"], np.abs(x))
    np.testing.assert_allclose(got["exp"], np.exp(x.astype("float64")), rtol=1e-6)
    np.testing.assert_allclose(got["tanh"], np.tanh(x.astype("float64")), rtol=1e-6)
    import math

    np.testing.assert_allclose(got["erf"], [math.erf(v) for v in x], rtol=1e-6)
    np.testing.assert_allclose(got["sigmoid"], 1 / (1 + np.exp(-x.astype("float64"))), rtol=1e-6)
    assert all(v.dtype == np.float32 for v in got.values())


def test_integer_intrinsics() -> None:
    a = np.array([-8, 5, 3, 0], "int32")
    b = np.array([1, 2, -1, 3], "int32")
    A, B = placeholder((4,), "int32", "A"), placeholder((4,), "int32", "B")
    outs = [
        compute((4,), lambda i: T.call("shift_right", A[i], const(1, "int32")), name="shr"),
        compute((4,), lambda i: T.call("bitwise_and", A[i], B[i]), name="and"),
        compute((4,), lambda i: T.call("popcount", A[i]), name="pop"),
        compute((4,), lambda i: T.pow_(A[i], B[i]), name="pow"),
    ]
    shr, band, pop, power = evaluate(outs, {A: a, B: b})
    np.testing.assert_array_equal(shr, a >> 1)
    np.testing.assert_array_equal(band, a & b)
    np.testing.assert_array_equal(pop, [29, 2, 2, 0])
    np.testing.assert_array_equal(power, [-8, 25, 0, 0])


def test_let_and_multi_output_compute() -> None:
    x = RNG.standard_normal((3,)).astype("float32")
    X = placeholder((3,), "float32", "X")
    v = Var("v", "float32")
    lo, hi = compute((3,), lambda i: [Let(v, X[i] * 2.0, v - 1.0), X[i] + 1.0], name="two")
    out_lo, out_hi = evaluate([lo, hi], {X: x})
    np.testing.assert_allclose(out_lo, x * 2 - 1, rtol=1e-6)
    np.testing.assert_allclose(out_hi, x + 1, rtol=1e-6)


def test_rank_zero_and_broadcast_index_mapping() -> None:
    s = np.array(3.0, "float32")
    m = RNG.standard_normal((2, 3)).astype("float32")
    S, M = placeholder((), "float32", "S"), placeholder((2, 3), "float32", "M")
    Y = compute((2, 3), lambda i, j: M[i, j] * S[()], name="Y")
    (out,) = evaluate(Y, {S: s, M: m})
    np.testing.assert_allclose(out, m * 3, rtol=1e-6)
    Z = compute((4, 2, 3), lambda k, i, j: M[i, j], name="Z")
    np.testing.assert_array_equal(evaluate(Z, {M: m})[0], np.broadcast_to(m, (4, 2, 3)))


def test_shared_operation_is_evaluated_once(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    calls: list[str] = []
    original = te_evaluate._Evaluator._compute

    def counting(self, op):  # type: ignore[no-untyped-def]
        calls.append(op.name)
        return original(self, op)

    monkeypatch.setattr(te_evaluate._Evaluator, "_compute", counting)
    X = placeholder((3,), "float32", "X")
    Y = compute((3,), lambda i: X[i] + 1.0, name="Y")
    Z1 = compute((3,), lambda i: Y[i] * 2.0, name="Z1")
    Z2 = compute((3,), lambda i: Y[i] * Z1[i], name="Z2")
    outs = evaluate([Z1, Z2, Y], {X: np.ones(3, "float32")})
    assert sorted(calls) == ["Y", "Z1", "Z2"]
    np.testing.assert_array_equal(outs[1], [8, 8, 8])


def test_long_chain_of_operations_and_deep_expression() -> None:
    assert sys.getrecursionlimit() == 1000
    X = placeholder((2,), "int32", "X")
    t = X
    for _ in range(3000):
        t = compute((2,), lambda i, t=t: t[i] + 1, name="step")
    (out,) = evaluate(t, {X: np.zeros(2, "int32")})
    np.testing.assert_array_equal(out, [3000, 3000])

    def deep(i):  # type: ignore[no-untyped-def]
        e = X[i]
        for _ in range(300):
            e = e + 1
        return e

    (out2,) = evaluate(compute((2,), deep, name="deep"), {X: np.zeros(2, "int32")})
    np.testing.assert_array_equal(out2, [300, 300])


def test_bad_inputs() -> None:
    X = placeholder((2,), "float32", "X")
    Y = compute((2,), lambda i: X[i], name="Y")
    with pytest.raises(KeyError, match="X"):
        evaluate(Y, {})
    with pytest.raises(ValueError, match="shape"):
        evaluate(Y, {X: np.zeros(3, "float32")})


def test_zero_sized_output_and_guarded_read_of_empty_tensor() -> None:
    E0 = placeholder((0,), "float32", "E0")
    A = placeholder((2,), "float32", "A")
    Y = compute((0,), lambda i: E0[i], name="Y")
    assert evaluate(Y, {E0: np.zeros(0, "float32")})[0].shape == (0,)
    Z = compute((2,), lambda i: T.if_then_else(i < 0, E0[i], A[i]), name="Z")
    (out,) = evaluate(Z, {E0: np.zeros(0, "float32"), A: np.array([1, 2], "float32")})
    np.testing.assert_array_equal(out, [1, 2])


def test_extern_operation_runs_through_the_tir_evaluator() -> None:
    from relay.backend.te import extern
    from relay.backend.tir.stmt import BufferStore, For, ForKind

    x = RNG.standard_normal((5,)).astype("float32")
    X = placeholder((5,), "float32", "X")
    Y = compute((5,), lambda i: X[i] * 2.0, name="Y")

    def build(ins, outs):  # type: ignore[no-untyped-def]
        (src,), (dst,) = ins, outs
        i = Var("i")
        # a running sum: awkward as a compute, natural as a loop
        first = BufferStore(dst, src.load(const(0)), (const(0),))
        step = BufferStore(dst, dst.load(i - 1) + src.load(i), (i,))
        return seq(first, For(i, 1, 4, ForKind.SERIAL, step))

    S = extern([(5,)], [Y], build, ["float32"], name="cumsum")
    Z = compute((5,), lambda i: S[i] + 1.0, name="Z")
    out_s, out_z = evaluate([S, Z], {X: x})
    np.testing.assert_allclose(out_s, np.cumsum(x * 2), rtol=1e-5)
    np.testing.assert_allclose(out_z, np.cumsum(x * 2) + 1, rtol=1e-5)
