"""TIR passes: each keeps results (checked with the reference evaluator before and after) and
does what it promises on hand-built kernels; random loop nests go through the whole pipeline."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from relay.backend import tir
from relay.backend.tir import op
from relay.backend.tir.analysis import verify
from relay.backend.tir.evaluate import run_primfunc
from relay.backend.tir.expr import (
    Broadcast,
    BufferLoad,
    FloatImm,
    IntImm,
    Ramp,
    Var,
    const,
)
from relay.backend.tir.printer import astext
from relay.backend.tir.stmt import (
    Allocate,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    seq,
)
from relay.backend.tir.transform import (
    PIPELINE,
    flatten,
    loop_partition,
    lower_pipeline,
    simplify,
    storage_reuse,
    unroll,
    unroll_in_llvm,
    vectorize,
)
from relay.backend.tir.transform.storage_reuse import BYTES_SAVED
from relay.backend.tir.transform.unroll import MAX_UNROLL
from relay.backend.tir.visitor import sub_expressions

RNG = np.random.default_rng(0)


def _args(func):
    out = []
    for b in func.params:
        shape = tuple(int(d.value) for d in b.shape)
        if b.dtype.startswith("float"):
            out.append(RNG.standard_normal(shape).astype(b.dtype))
        else:
            out.append(RNG.integers(-50, 50, shape).astype(b.dtype))
    return out


def _same_results(before, after):
    args = _args(before)
    a1 = [a.copy() for a in args]
    a2 = [a.copy() for a in args]
    run_primfunc(before, *a1)
    run_primfunc(after, *a2)
    for x, y in zip(a1, a2):
        np.testing.assert_array_equal(x, y)


def _nodes(func, cls):
    return [n for n in sub_expressions(func.body) if isinstance(n, cls)]


def _loops(func):
    return _nodes(func, For)


def _split_elementwise(n, m, factor, inner_kind, outer_kind=ForKind.SERIAL):
    """B[i, j] = A[i, j] * 2 + 1 with j split by `factor` and a likely guard."""
    A = tir.decl_buffer((n, m), "float32", "A")
    B = tir.decl_buffer((n, m), "float32", "B")
    i, jo, ji = Var("i"), Var("j_outer"), Var("j_inner")
    j = jo * factor + ji
    store = BufferStore(B, A.load(i, j) * 2.0 + 1.0, (i, j))
    nest = For(
        i,
        0,
        n,
        outer_kind,
        For(
            jo,
            0,
            -(-m // factor),
            ForKind.SERIAL,
            For(ji, 0, factor, inner_kind, IfThenElse(op.likely(j < m), store)),
        ),
    )
    return PrimFunc("ew", (A, B), nest)


# ----------------------------------------------------------------------------- flatten


def test_flatten_row_major_and_views():
    f = _split_elementwise(3, 13, 4, ForKind.SERIAL)
    g = flatten(f)
    assert g.params == f.params  # shapes kept for argument checks
    for n in _nodes(g, BufferLoad) + _nodes(g, BufferStore):
        assert len(n.indices) == 1 and n.buffer.ndim == 1
        assert n.buffer.data is (f.params[0] if n.buffer.name == "A" else f.params[1]).data
    assert "B[i*13 + j_outer*4 + j_inner] = A[i*13 + j_outer*4 + j_inner]*2.0 + 1.0" in astext(g)
    _same_results(f, g)
    verify(g)


def test_flatten_allocations_and_mixed_forms():
    A = tir.decl_buffer((2, 3, 4), "int32", "A")
    B = tir.decl_buffer((24,), "int32", "B")
    T = tir.decl_buffer((3, 4), "int32", "T", scope="local")
    i, j, k = Var("i"), Var("j"), Var("k")
    body = For(
        i,
        0,
        2,
        ForKind.SERIAL,
        Allocate(
            T,
            seq(
                For(
                    j,
                    0,
                    3,
                    ForKind.SERIAL,
                    For(k, 0, 4, ForKind.SERIAL, BufferStore(T, A.load(i, j, k) + 1, (j, k))),
                ),
                For(
                    j, 0, 12, ForKind.SERIAL, BufferStore(B, T.load(j) * 3, [i * 12 + j])
                ),  # already flat
            ),
        ),
    )
    f = PrimFunc("mixed", (A, B), body)
    g = flatten(f)
    allocs = _nodes(g, Allocate)
    assert len(allocs) == 1 and allocs[0].buffer.ndim == 1 and allocs[0].buffer.data is T.data
    assert "T[j*4 + k] = A[i*12 + j*4 + k] + 1i32" in astext(g)
    _same_results(f, g)


# -------------------------------------------------------------------------- partition


@pytest.mark.parametrize("m", [13, 17, 16])
def test_loop_partition_removes_guards_from_the_bulk(m):
    f = flatten(_split_elementwise(2, m, 8, ForKind.SERIAL))
    g = loop_partition(f)
    _same_results(f, g)
    text = astext(g)
    assert "likely" not in text
    if m % 8 > 1:  # the tail loop runs exactly the remaining iterations
        assert f"serial(0, {m % 8})" in text
    verify(g)


def test_loop_partition_two_sided_padding():
    H = 5
    A = tir.decl_buffer((H, H), "float32", "A")
    B = tir.decl_buffer((H + 2, H + 2), "float32", "B")
    y, x = Var("y"), Var("x")
    inside = (y >= 1) & (y < H + 1) & (x >= 1) & (x < H + 1)
    body = For(
        y,
        0,
        H + 2,
        ForKind.PARALLEL,
        For(
            x,
            0,
            H + 2,
            ForKind.SERIAL,
            BufferStore(B, op.if_then_else(inside, A.load(y - 1, x - 1), FloatImm(0.0)), [y, x]),
        ),
    )
    f = flatten(PrimFunc("pad", (A, B), body))
    g = loop_partition(f)
    _same_results(f, g)
    assert "if_then_else" not in astext(g)
    assert "for y in parallel(1, 5):" in astext(g)


def test_loop_partition_leaves_nonlinear_and_data_guards():
    A = tir.decl_buffer((10,), "float32", "A")
    i = Var("i")
    body = For(
        i,
        0,
        10,
        ForKind.SERIAL,
        seq(
            IfThenElse(op.likely(i * i < 20), BufferStore(A, FloatImm(1.0), [i])),
            IfThenElse(op.likely(A.load(i) < 0.5), BufferStore(A, FloatImm(2.0), [i])),
        ),
    )
    f = PrimFunc("odd", (A,), body)
    g = loop_partition(f)
    assert astext(g) == astext(f)
    _same_results(f, g)


# -------------------------------------------------------------------------- vectorize


@pytest.mark.parametrize("m", [13, 16, 17])
def test_vectorize_after_partition(m):
    f = simplify(flatten(_split_elementwise(3, m, 8, ForKind.VECTORIZED, ForKind.PARALLEL)))
    g = vectorize(loop_partition(f))
    _same_results(f, g)
    assert not any(lp.kind is ForKind.VECTORIZED for lp in _loops(g))
    ramps = [n for n in sub_expressions(g.body) if isinstance(n, Ramp)]
    assert ramps and all(r.stride.value == 1 for r in ramps)
    assert "B[ramp(i*" in astext(g) and "x8(2.0)" in astext(g)
    verify(g)


def _vector_loop(body_fn, n=8, size=9, dtype="float32"):
    A = tir.decl_buffer((size,), dtype, "A")
    B = tir.decl_buffer((size,), dtype, "B")
    x = Var("x")
    return PrimFunc("v", (A, B), For(x, 0, n, ForKind.VECTORIZED, body_fn(A, B, x)))


def test_vectorize_gathers_and_invariants():
    f = _vector_loop(
        lambda A, B, x: BufferStore(B, A.load(x * 2 + 1) + A.load(const(3)), [x]), size=20
    )
    g = vectorize(f)
    _same_results(f, g)
    assert astext(g).splitlines()[1] == "  B[ramp(0, 1, 8)] = A[ramp(1, 2, 8)] + x8(A[3])"


def test_vectorize_strided_load_is_a_ramp():
    f = _vector_loop(lambda A, B, x: BufferStore(B, A.load(x * 2), [x]), size=20)
    g = vectorize(f)
    _same_results(f, g)
    assert astext(g).splitlines()[1] == "  B[ramp(0, 1, 8)] = A[ramp(0, 2, 8)]"


@pytest.mark.parametrize(
    "name, body",
    [
        (
            "reduction into one element",
            lambda A, B, x: BufferStore(B, B.load(0) + A.load(x), [const(0)]),
        ),
        ("lane dependence", lambda A, B, x: BufferStore(A, A.load(x) + 1.0, [x + 1])),
        ("lane-varying if", lambda A, B, x: IfThenElse(x < 5, BufferStore(B, A.load(x), [x]))),
        ("non-linear index", lambda A, B, x: BufferStore(B, A.load(x * x % 9), [x])),
        (
            "guarded load",
            lambda A, B, x: BufferStore(
                B, op.if_then_else(x < 3, A.load(x + 6), FloatImm(0.0)), [x]
            ),
        ),
        (
            "allocation",
            lambda A, B, x: Allocate(
                tir.decl_buffer((1,), "float32", "T", "local"),
                BufferStore(B, A.load(x), [x]),
            ),
        ),
    ],
)
def test_vectorize_falls_back_to_serial(name, body):
    f = _vector_loop(body)
    g = vectorize(f)
    loops = _loops(g)
    assert len(loops) == 1 and loops[0].kind is ForKind.SERIAL, name
    assert loops[0].body is f.body.body
    _same_results(f, g)


def test_vectorize_selects_and_keeps_inner_loops():
    def body(A, B, x):
        k = Var("k")
        return seq(
            IfThenElse(
                x < 3, BufferStore(B, FloatImm(1.0), [x]), BufferStore(B, A.load(x) * 2.0, [x])
            ),
            For(
                k,
                0,
                3,
                ForKind.SERIAL,
                BufferStore(B, B.load(x) + A.load(x) * tir.cast("float32", k), [x]),
            ),
            BufferStore(A, B.load(x) * op.if_then_else(x < 4, FloatImm(3.0), FloatImm(0.5)), [x]),
        )

    f = _vector_loop(body)
    g = vectorize(f)
    _same_results(f, g)
    text = astext(g)
    assert "select(ramp(0, 1, 8) < x8(3), x8(1.0), A[ramp(0, 1, 8)]*x8(2.0))" in text
    assert "for k in serial(0, 3):" in text
    assert "for x" not in text
    assert "select(ramp(0, 1, 8) < x8(4), x8(3.0), x8(0.5))" in text
    verify(g)


def test_vectorize_lets_casts_and_ints():
    def body(A, B, x):
        t = Var("t", "int32")
        return LetStmt(
            t, tir.cast("int32", x) * const(3, "int32"), BufferStore(B, A.load(x) + t, [x])
        )

    f = _vector_loop(body, dtype="int32")
    g = vectorize(f)
    _same_results(f, g)
    assert "for x" not in astext(g)


def test_vectorize_symbolic_extent_is_serial():
    A = tir.decl_buffer((8,), "float32", "A")
    x, n = Var("x"), Var("n")
    loop = For(
        x,
        0,
        8,
        ForKind.SERIAL,
        For(n, 0, x, ForKind.VECTORIZED, BufferStore(A, FloatImm(1.0), [n])),
    )
    g = vectorize(PrimFunc("s", (A,), loop))
    assert all(lp.kind is ForKind.SERIAL for lp in _loops(g))


# ----------------------------------------------------------------------------- unroll


def test_unroll_copies_with_fresh_binders():
    A = tir.decl_buffer((4, 5), "float32", "A")
    C = tir.decl_buffer((5,), "float32", "C")
    j, u, t = Var("j"), Var("u"), Var("t", "float32")
    T = tir.decl_buffer((1,), "float32", "T", scope="local")
    body = For(
        j,
        0,
        5,
        ForKind.SERIAL,
        seq(
            BufferStore(C, FloatImm(0.0), [j]),
            For(
                u,
                0,
                4,
                ForKind.UNROLLED,
                Allocate(
                    T,
                    LetStmt(
                        t,
                        A.load(u, j) * 2.0,
                        seq(
                            BufferStore(T, t, [const(0)]),
                            BufferStore(C, C.load(j) + T.load(0), [j]),
                        ),
                    ),
                ),
            ),
        ),
    )
    f = PrimFunc("unr", (A, C), body)
    g = unroll(f)
    _same_results(f, g)
    assert [lp.kind for lp in _loops(g)] == [ForKind.SERIAL]
    lets = _nodes(g, LetStmt)
    allocs = _nodes(g, Allocate)
    assert len(lets) == 4 and len({id(s.var) for s in lets}) == 4
    assert len(allocs) == 4 and len({id(a.buffer.data) for a in allocs}) == 4
    verify(g)


def test_unroll_limits():
    A = tir.decl_buffer((100,), "float32", "A")
    u, n = Var("u"), Var("n")
    big = For(u, 0, 100, ForKind.UNROLLED, BufferStore(A, FloatImm(1.0), [u]))
    g = unroll(PrimFunc("big", (A,), big))
    assert _loops(g)[0].kind is ForKind.SERIAL
    sym = For(
        n, 0, 3, ForKind.SERIAL, For(u, 0, n, ForKind.UNROLLED, BufferStore(A, FloatImm(1.0), [u]))
    )
    g = unroll(PrimFunc("sym", (A,), sym))
    assert all(lp.kind is ForKind.SERIAL for lp in _loops(g))


def test_unroll_in_llvm_keeps_the_loops_it_can_unroll():
    """The pipeline's unrolling leaves a constant-extent loop of at most MAX_UNROLL
    iterations UNROLLED (code generation asks LLVM to unroll it) and makes the others
    SERIAL, with the same results."""
    A = tir.decl_buffer((100,), "float32", "A")
    u, w, n = Var("u"), Var("w"), Var("n")
    small = For(u, 0, 4, ForKind.UNROLLED, BufferStore(A, A.load(u) + 1.0, [u]))
    big = For(w, 0, 100, ForKind.UNROLLED, BufferStore(A, A.load(w) * 2.0, [w]))
    f = PrimFunc("mixed", (A,), seq(small, big))
    g = unroll_in_llvm(f)
    _same_results(f, g)
    assert [lp.kind for lp in _loops(g)] == [ForKind.UNROLLED, ForKind.SERIAL]
    sym = For(
        n, 0, 3, ForKind.SERIAL, For(u, 0, n, ForKind.UNROLLED, BufferStore(A, FloatImm(1.0), [u]))
    )
    g = unroll_in_llvm(PrimFunc("sym", (A,), sym))
    assert all(lp.kind is ForKind.SERIAL for lp in _loops(g))
    # a loop with guarded loads is unrolled here: each copy's guard simplifies on its own
    guarded = For(
        u, 0, 4, ForKind.UNROLLED,
        BufferStore(A, op.if_then_else(u < 2, A.load(u + 1), FloatImm(0.0)), [u]),
    )  # fmt: skip
    f = PrimFunc("guarded", (A,), guarded)
    g = simplify(unroll_in_llvm(f))
    _same_results(f, g)
    assert not _loops(g) and "if_then_else" not in astext(g)


# ---------------------------------------------------------------------- storage reuse


def _three_stages(scope="global"):
    A = tir.decl_buffer((8,), "float32", "A")
    C = tir.decl_buffer((8,), "float32", "C")
    T1, T2, T3 = (tir.decl_buffer((8,), "float32", f"T{k}", scope=scope) for k in (1, 2, 3))
    x = Var("x")

    def stage(dst, src, c):
        return For(x, 0, 8, ForKind.SERIAL, BufferStore(dst, src.load(x) * c, [x]))

    body = Allocate(
        T1,
        Allocate(
            T2,
            Allocate(
                T3,
                seq(stage(T1, A, 2.0), stage(T2, T1, 3.0), stage(T3, T2, 4.0), stage(C, T3, 5.0)),
            ),
        ),
    )
    return PrimFunc("chain", (A, C), body)


@pytest.mark.parametrize("scope", ["global", "local"])
def test_storage_reuse_merges_disjoint_lifetimes(scope):
    f = _three_stages(scope)
    g = storage_reuse(f)
    _same_results(f, g)
    assert g.attrs[BYTES_SAVED] == 32
    assert len(_nodes(g, Allocate)) == 2
    datas = {n.buffer.data for n in _nodes(g, BufferStore)}
    assert len(datas) == 3  # T1 and T3 share memory; C is the third
    verify(g)


def test_storage_reuse_sibling_allocations_and_dtypes():
    A = tir.decl_buffer((6,), "float32", "A")
    x = Var("x")
    blocks = []
    for k, (dtype, size) in enumerate(
        [("float32", 6), ("float32", 4), ("int32", 6), ("float32", 5)]
    ):
        T = tir.decl_buffer((size,), dtype, f"T{k}")
        fill = For(
            x,
            0,
            size,
            ForKind.SERIAL,
            BufferStore(T, tir.cast(dtype, x) + tir.cast(dtype, const(k)), [x]),
        )
        use = For(
            x,
            0,
            size,
            ForKind.SERIAL,
            BufferStore(A, A.load(x) + tir.cast("float32", T.load(x)), [x]),
        )
        blocks.append(Allocate(T, seq(fill, use)))
    f = PrimFunc("sib", (A,), seq(*blocks))
    g = storage_reuse(f)
    _same_results(f, g)
    float_allocs = [a for a in _nodes(g, Allocate) if a.buffer.dtype == "float32"]
    assert len(float_allocs) == 1 and float_allocs[0].buffer.shape[0].value == 6
    assert g.attrs[BYTES_SAVED] == (6 + 4 + 5 - 6) * 4


def test_storage_reuse_keeps_overlapping_lifetimes():
    A = tir.decl_buffer((4,), "float32", "A")
    T1, T2 = tir.decl_buffer((4,), "float32", "T1"), tir.decl_buffer((4,), "float32", "T2")
    x = Var("x")
    body = Allocate(
        T1,
        Allocate(
            T2,
            seq(
                For(x, 0, 4, ForKind.SERIAL, BufferStore(T1, A.load(x), [x])),
                For(x, 0, 4, ForKind.SERIAL, BufferStore(T2, T1.load(x) + 1.0, [x])),
                For(x, 0, 4, ForKind.SERIAL, BufferStore(A, T1.load(x) + T2.load(x), [x])),
            ),
        ),
    )
    f = PrimFunc("overlap", (A,), body)
    g = storage_reuse(f)
    assert BYTES_SAVED not in g.attrs and len(_nodes(g, Allocate)) == 2
    _same_results(f, g)


# --------------------------------------------------------------------------- pipeline


def test_lower_pipeline_end_to_end():
    f = _split_elementwise(3, 13, 8, ForKind.VECTORIZED, ForKind.PARALLEL)
    g = lower_pipeline(f)
    _same_results(f, g)
    assert astext(g) == (
        "def ew(A: float32[3, 13], B: float32[3, 13]):\n"
        "  for i in parallel(0, 3):\n"
        "    B[ramp(i*13, 1, 8)] = A[ramp(i*13, 1, 8)]*x8(2.0) + x8(1.0)\n"
        "    B[ramp(i*13 + 8, 1, 5)] = A[ramp(i*13 + 8, 1, 5)]*x5(2.0) + x5(1.0)"
    )


def test_lower_pipeline_output_is_codegen_normal_form():
    g = lower_pipeline(_three_stages())
    for n in sub_expressions(g.body):
        if isinstance(n, For):  # UNROLLED loops are left to LLVM's unroller
            assert n.kind in (ForKind.SERIAL, ForKind.PARALLEL, ForKind.UNROLLED)
            if n.kind is ForKind.UNROLLED:
                assert isinstance(n.extent, IntImm) and n.extent.value <= MAX_UNROLL
        if isinstance(n, (BufferLoad, BufferStore)):
            assert len(n.indices) == 1
        if isinstance(n, Allocate):
            assert all(isinstance(d, tir.IntImm) for d in n.buffer.shape)


# ------------------------------------------------------------------- random loop nests


@st.composite
def loop_nests(draw):
    """Small kernels shaped like te.lower's output: an elementwise or reduction stage, maybe
    behind intermediate stages, with a split (guarded when it does not divide) and random
    loop kinds."""
    n0 = draw(st.integers(1, 4))
    n1 = draw(st.integers(1, 17))
    r = draw(st.integers(1, 4))
    dtype = draw(st.sampled_from(["float32", "float32", "int32"]))
    A = tir.decl_buffer((n0, n1), dtype, "A")
    V = tir.decl_buffer((n1,), dtype, "V")
    D = tir.decl_buffer((n0, r), dtype, "D")
    C = tir.decl_buffer((n0, n1), dtype, "C")
    kinds = st.sampled_from(list(ForKind))

    def c(v):
        return const(v, dtype)

    def value(i, j, k, src):
        leaves = [src.load(i, j), V.load(j), c(draw(st.integers(-3, 3)))]
        if k is not None:
            leaves.append(D.load(i, k))
        shifted = op.if_then_else(j >= 1, src.load(i, j - 1), c(0))
        leaves.append(shifted)
        e = draw(st.sampled_from(leaves))
        for _ in range(draw(st.integers(0, 3))):
            other = draw(st.sampled_from(leaves))
            pick = draw(st.integers(0, 4))
            if pick == 0:
                e = e + other
            elif pick == 1:
                e = e * other
            elif pick == 2:
                e = tir.max_(e, other)
            elif pick == 3:
                e = e - other
            else:
                e = tir.select(src.load(i, j) < c(1), e, other)
        return e

    def nest(dst, src, reduce):
        i, jo, ji = Var("i"), Var("j_outer"), Var("j_inner")
        f = draw(st.integers(1, 8))
        j = jo * f + ji
        guard = None if n1 % f == 0 else op.likely(j < n1)

        def guarded(s):
            return s if guard is None else IfThenElse(guard, s)

        if reduce:
            k = Var("k")
            init = guarded(BufferStore(dst, c(0), (i, j)))
            update = guarded(BufferStore(dst, dst.load(i, j) + value(i, j, k, src), (i, j)))
            if draw(st.booleans()):  # k outside the vector-able loop
                inner = seq(
                    For(ji, 0, f, draw(kinds), init),
                    For(k, 0, r, draw(kinds), For(ji, 0, f, draw(kinds), update)),
                )
            else:
                inner = For(ji, 0, f, draw(kinds), seq(init, For(k, 0, r, draw(kinds), update)))
        else:
            inner = For(
                ji, 0, f, draw(kinds), guarded(BufferStore(dst, value(i, j, None, src), (i, j)))
            )
        return For(i, 0, n0, draw(kinds), For(jo, 0, -(-n1 // f), draw(kinds), inner))

    stages = draw(st.integers(0, 3))
    temps = [
        tir.decl_buffer((n0, n1), dtype, f"T{k}", scope=draw(st.sampled_from(["global", "local"])))
        for k in range(stages)
    ]
    srcs = [A, *temps]
    dsts = [*temps, C]
    body = seq(*[nest(dst, src, draw(st.booleans())) for src, dst in zip(srcs, dsts)])
    for t in reversed(temps):
        body = Allocate(t, body)
    return PrimFunc("random", (A, V, D, C), body)


@given(loop_nests())
def test_every_pass_keeps_results_on_random_nests(func):
    args = _args(func)
    want = [a.copy() for a in args]
    run_primfunc(func, *want)
    current = func
    for p in PIPELINE:
        current = p(current)
        got = [a.copy() for a in args]
        run_primfunc(current, *got)
        for x, y in zip(want, got):
            np.testing.assert_array_equal(x, y, err_msg=f"after {p.__module__}\n{astext(current)}")
    verify(current)
    for n in sub_expressions(current.body):
        if isinstance(n, For):  # UNROLLED loops are left to LLVM's unroller
            assert n.kind in (ForKind.SERIAL, ForKind.PARALLEL, ForKind.UNROLLED)
            if n.kind is ForKind.UNROLLED:
                assert isinstance(n.extent, IntImm) and n.extent.value <= MAX_UNROLL
        if isinstance(n, (BufferLoad, BufferStore)):
            assert len(n.indices) == 1


def test_broadcast_leftovers_are_not_needed():
    # a vector loop whose body only reads invariants stores a broadcast
    f = _vector_loop(lambda A, B, x: BufferStore(B, A.load(0) * 2.0, [x]))
    g = lower_pipeline(f)
    _same_results(f, g)
    stores = _nodes(g, BufferStore)
    assert len(stores) == 1 and isinstance(stores[0].value, Broadcast)


def test_zero_dimensional_buffers():
    A = tir.decl_buffer((), "float32", "A")
    B = tir.decl_buffer((3,), "float32", "B")
    x = Var("x")
    body = For(
        x, 0, 3, ForKind.VECTORIZED, BufferStore(B, op.exp(A.load()) + tir.cast("float32", x), [x])
    )
    f = PrimFunc("scalar", (A, B), body)
    g = lower_pipeline(f)
    _same_results(f, g)
    assert "A[0]" in astext(g) and "for x" not in astext(g)


def test_pipeline_on_long_and_deep_programs():
    A = tir.decl_buffer((4,), "float32", "A")
    stores = [BufferStore(A, A.load(k % 4) + 1.0, [const((k + 1) % 4)]) for k in range(3000)]
    f = PrimFunc("long", (A,), seq(*stores))
    g = lower_pipeline(f)
    assert len(g.body.stmts) == 3000
    _same_results(f, g)
    body = BufferStore(A, A.load(0) * 2.0, [const(0)])
    for d in range(1500):
        v = Var(f"t{d}")
        body = LetStmt(v, const(d), For(Var(f"l{d}"), 0, 1, ForKind.SERIAL, body))
    f = PrimFunc("deep", (A,), body)
    g = lower_pipeline(f)
    assert astext(g) == "def deep(A: float32[4]):\n  A[0] = A[0]*2.0"
