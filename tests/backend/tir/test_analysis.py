"""TIR analysis: structural equality/hash, variables, verify."""

import math

import pytest
from relay.backend import tir
from relay.backend.tir import op
from relay.backend.tir.analysis import (
    VerifyError,
    free_vars,
    prim_equal,
    prim_hash,
    undefined_vars,
    verify,
    verify_problems,
)
from relay.backend.tir.expr import (
    Broadcast,
    FloatImm,
    Let,
    Ramp,
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
