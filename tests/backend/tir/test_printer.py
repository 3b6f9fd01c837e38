"""The readable TIR listing: layout, precedence, constants, names."""

from relay.backend import tir
from relay.backend.tir import op
from relay.backend.tir.expr import Broadcast, BufferLoad, FloatImm, IntImm, Let, Ramp, Var, const
from relay.backend.tir.printer import astext
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


def test_function_listing():
    A = tir.decl_buffer((4, 8), "float32", "A")
    B = tir.decl_buffer((4, 8), "float32", "B")
    C = tir.decl_buffer((4, 8), "float32", "C")
    Af, Bf, Cf = (tir.flat_view(b, const(32)) for b in (A, B, C))
    i, j = Var("i"), Var("j")
    flat = i * 8 + j
    body = For(
        i,
        0,
        4,
        ForKind.PARALLEL,
        For(j, 0, 8, ForKind.SERIAL, BufferStore(Cf, Af.load(flat) + Bf.load(flat), [flat])),
    )
    text = astext(PrimFunc("fused_add", (A, B, C), body, {"num_outputs": 1}))
    assert text == (
        "def fused_add(A: float32[4, 8], B: float32[4, 8], C: float32[4, 8]):\n"
        "  # num_outputs=1\n"
        "  for i in parallel(0, 4):\n"
        "    for j in serial(0, 8):\n"
        "      C[i*8 + j] = A[i*8 + j] + B[i*8 + j]"
    )


def test_vectors_allocate_if_let():
    A = tir.decl_buffer((64,), "float32", "A")
    T = tir.decl_buffer((16,), "float32", "T", scope="local")
    i, x = Var("i"), Var("x", "int32")
    ramp = Ramp(i * 16, const(1), 16)
    body = Allocate(
        T,
        seq(
            BufferStore(
                T,
                BufferLoad(A, [ramp]) * Broadcast(FloatImm(2.0), 16),
                [Ramp(const(0), const(1), 16)],
            ),
            LetStmt(
                x,
                const(3, "int32"),
                IfThenElse(
                    op.likely(i < 4),
                    Evaluate(op.exp(FloatImm(1.0))),
                    BufferStore(A, FloatImm(0.0), [i]),
                ),
            ),
        ),
    )
    assert astext(body) == (
        "allocate T: float32[16] local\n"
        "T[ramp(0, 1, 16)] = A[ramp(i*16, 1, 16)]*x16(2.0)\n"
        "x: int32 = 3i32\n"
        "if likely(i < 4):\n"
        "  exp(1.0)\n"
        "else:\n"
        "  A[i] = 0.0"
    )


def test_precedence_only_where_needed():
    i, j, k = Var("i"), Var("j"), Var("k")
    assert astext(i + j * k) == "i + j*k"
    assert astext((i + j) * k) == "(i + j)*k"
    assert astext(i - (j - k)) == "i - (j - k)"
    assert astext((i - j) - k) == "i - j - k"
    assert astext((i * 8 + j) // 8 % 4) == "(i*8 + j)//8%4"
    assert astext(i // (j * k)) == "i//(j*k)"
    assert astext(tir.eq(i < j, j < k)) == "(i < j) == (j < k)"
    assert astext(((i < j) & (j < k)) | ~(k < i)) == "i < j and j < k or not k < i"
    assert astext((i < j) & ((j < k) | (k < i))) == "i < j and (j < k or k < i)"
    assert astext(tir.truncdiv(i, j) + tir.truncmod(i, k)) == "truncdiv(i, j) + truncmod(i, k)"
    assert astext(tir.min_(i, j) - tir.max_(j, k)) == "min(i, j) - max(j, k)"
    assert astext(i * -1) == "i*-1"


def test_constants_and_casts():
    assert astext(FloatImm(0.1)) == "0.1"
    assert astext(FloatImm(1 / 3)) == "0.33333334"
    assert astext(FloatImm(2.0, "float64")) == "2.0f64"
    assert astext(FloatImm(0.5, "float16")) == "0.5f16"
    assert astext(FloatImm(float("inf"))) == "inf"
    assert astext(IntImm(3, "int32")) == "3i32"
    assert astext(IntImm(7, "uint8")) == "7u8"
    assert astext(IntImm(1, "bool")) == "True"
    y = Var("y", "float32")
    assert astext(tir.cast("int32", y) + const(1, "int32")) == "int32(y) + 1i32"
    assert astext(tir.select(y < 0.0, y, 0.0)) == "select(y < 0.0, y, 0.0)"
    assert astext(y / 2.0) == "y/2.0"
    assert astext(Let(Var("t"), const(2), Var("u"))) == "(let t = 2 in u)"


def test_names_are_unique_and_buffers_alias_by_memory():
    i1, i2 = Var("i"), Var("i")
    weird = Var("a.b")
    assert astext(i1 + i2 + weird) == "i + i_1 + a_b"
    A = tir.decl_buffer((2, 2), "float32", "A")
    A2 = tir.decl_buffer((4,), "float32", "A")  # another buffer with the same hint
    view = tir.flat_view(A, const(4))
    s = seq(
        BufferStore(view, A2.load(0), [const(1)]),
        BufferStore(A, FloatImm(1.0), [const(0), const(1)]),
    )
    assert astext(s) == "A[1] = A_1[0]\nA[0, 1] = 1.0"


def test_long_sequence_prints_without_recursion():
    C = tir.decl_buffer((3000,), "int64", "C")
    s = SeqStmt([BufferStore(C, const(k), [const(k)]) for k in range(3000)])
    lines = astext(s).splitlines()
    assert len(lines) == 3000 and lines[-1] == "C[2999] = 2999"
    body = BufferStore(C, const(0), [const(0)])
    for k in range(2000):
        body = For(Var(f"v{k}"), 0, 1, ForKind.UNROLLED, body)
    assert len(astext(body).splitlines()) == 2001
