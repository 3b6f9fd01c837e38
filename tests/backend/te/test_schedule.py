"""TE schedules lowered to TIR and run with the reference evaluator, against numpy."""

from __future__ import annotations

import numpy as np
import pytest
from relay.backend import te
from relay.backend.te.limits import min_value
from relay.backend.tir import expr as E
from relay.backend.tir.buffer import Buffer
from relay.backend.tir.evaluate import run_primfunc
from relay.backend.tir.op import if_then_else
from relay.backend.tir.stmt import (
    Allocate,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    PrimFunc,
)
from relay.backend.tir.visitor import sub_expressions
from relay.lang.diagnostics import Error

RNG = np.random.default_rng(0)


def run(func: PrimFunc, *inputs: np.ndarray) -> list[np.ndarray]:
    """Run `func` on `inputs`; the remaining params are zero-filled outputs, returned."""
    outs = [np.zeros([int(d.value) for d in p.shape], p.dtype) for p in func.params[len(inputs) :]]
    run_primfunc(func, *inputs, *outs)
    return outs


def rand(*shape: int) -> np.ndarray:
    return RNG.random(shape, dtype=np.float32)


def nodes(func: PrimFunc, cls: type) -> list:
    return [n for n in sub_expressions(func.body) if isinstance(n, cls)]


def loop_kinds(func: PrimFunc) -> dict[str, ForKind]:
    return {f.loop_var.name: f.kind for f in nodes(func, For)}


def matmul(n: int, m: int, k: int):
    A = te.placeholder((n, k), "float32", "A")
    B = te.placeholder((k, m), "float32", "B")
    r = te.reduce_axis(k, "k")
    C = te.compute((n, m), lambda i, j: te.sum_(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


# ------------------------------------------------------------------------------ matmul


@pytest.mark.parametrize(("n", "m", "k"), [(8, 16, 4), (13, 17, 5)])
def test_matmul_split_reorder_vectorize_parallel(n: int, m: int, k: int) -> None:
    A, B, C = matmul(n, m, k)
    s = te.create_schedule(C)
    i, j = C.op.axis
    (r,) = C.op.reduce_axis
    io, ii = s[C].split(i, factor=4)
    jo, ji = s[C].split(j, factor=8)
    s[C].reorder(io, jo, r, ii, ji)
    s[C].vectorize(ji)
    s[C].parallel(io)
    f = te.lower(s, [A, B, C], "matmul")
    assert f.name == "matmul"
    assert [p.name for p in f.params] == ["A", "B", "C"]
    assert f.attrs["num_outputs"] == 1
    kinds = loop_kinds(f)
    assert kinds["i.outer"] == ForKind.PARALLEL
    assert kinds["j.inner"] == ForKind.VECTORIZED
    assert kinds["j.inner.init"] == ForKind.VECTORIZED
    a, b = rand(n, k), rand(k, m)
    (c,) = run(f, a, b)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    guarded = bool(nodes(f, IfThenElse))
    assert guarded == (n % 4 != 0 or m % 8 != 0)


def test_accesses_are_multidimensional_on_params() -> None:
    A, B, C = matmul(6, 7, 3)
    f = te.lower(te.create_schedule(C), [A, B, C])
    for store in nodes(f, BufferStore):
        assert len(store.indices) == store.buffer.ndim == 2
    for load in nodes(f, E.BufferLoad):
        assert len(load.indices) == load.buffer.ndim == 2
    assert {id(b) for b in (s.buffer for s in nodes(f, BufferStore))} <= {id(p) for p in f.params}


def test_reduction_is_init_then_update() -> None:
    A, B, C = matmul(4, 5, 3)
    f = te.lower(te.create_schedule(C), [A, B, C])
    loop_i = f.body
    assert isinstance(loop_i, For) and loop_i.loop_var.name == "i"
    loop_j = loop_i.body
    assert isinstance(loop_j, For)
    init, update = loop_j.body.stmts
    assert isinstance(init, BufferStore) and isinstance(init.value, E.FloatImm)
    assert isinstance(update, For) and update.loop_var.name == "k"


def test_reduce_axis_innermost_unless_reordered() -> None:
    A, B, C = matmul(4, 5, 3)
    s = te.create_schedule(C)
    i, j = C.op.axis
    s[C].reorder(C.op.reduce_axis[0], i, j)
    f = te.lower(s, [A, B, C])
    names = [fl.loop_var.name for fl in nodes(f, For)]
    assert names == ["i.init", "j.init", "k", "i", "j"]
    a, b = rand(4, 3), rand(3, 5)
    np.testing.assert_allclose(run(f, a, b)[0], a @ b, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------- non-divisible splits


@pytest.mark.parametrize("extent", [13, 17])
@pytest.mark.parametrize("factor", [4, 8])
def test_non_divisible_split_guards_with_likely(extent: int, factor: int) -> None:
    X = te.placeholder((extent,), "float32", "X")
    Y = te.compute((extent,), lambda i: X[i] * 2.0 + 1.0, name="Y")
    s = te.create_schedule(Y)
    _o, _i = s[Y].split(Y.op.axis[0], factor=factor)
    f = te.lower(s, [X, Y])
    outer = f.body
    assert isinstance(outer, For) and outer.extent.value == -(-extent // factor)
    (guard,) = nodes(f, IfThenElse)
    assert isinstance(guard.condition, E.Call) and guard.condition.name == "likely"
    cond = guard.condition.args[0]
    assert isinstance(cond, E.LT) and cond.b.value == extent
    x = rand(extent)
    np.testing.assert_allclose(run(f, x)[0], x * 2 + 1)


def test_split_nparts_and_nested_splits() -> None:
    X = te.placeholder((17, 13), "float32", "X")
    Y = te.compute((17, 13), lambda i, j: X[i, j] + 3.0, name="Y")
    s = te.create_schedule(Y)
    i, j = Y.op.axis
    io, ii = s[Y].split(i, nparts=3)
    iio, iii = s[Y].split(ii, factor=4)
    jo, ji = s[Y].split(j, factor=8)
    s[Y].reorder(jo, io, iio, ji, iii)
    s[Y].unroll(iii)
    f = te.lower(s, [X, Y])
    assert loop_kinds(f)["i.inner.inner"] == ForKind.UNROLLED
    x = rand(17, 13)
    np.testing.assert_allclose(run(f, x)[0], x + 3)


def test_split_of_reduce_axis_does_not_count_twice() -> None:
    X = te.placeholder((3, 10), "float32", "X")
    r = te.reduce_axis(10, "r")
    Y = te.compute((3,), lambda i: te.sum_(X[i, r], axis=r), name="Y")
    s = te.create_schedule(Y)
    _ro, ri = s[Y].split(r, factor=4)
    _rio, _rii = s[Y].split(ri, factor=3)  # 4 = 3 + 1: the inner split overshoots
    f = te.lower(s, [X, Y])
    x = rand(3, 10)
    np.testing.assert_allclose(run(f, x)[0], x.sum(1), rtol=1e-5, atol=1e-5)


def test_tile() -> None:
    A, B, C = matmul(10, 11, 4)
    s = te.create_schedule(C)
    xo, yo, xi, yi = s[C].tile(*C.op.axis, 4, 3)
    assert s[C].leaf_iter_vars == [xo, yo, C.op.reduce_axis[0], xi, yi] or s[C].leaf_iter_vars[
        :2
    ] == [xo, yo]
    a, b = rand(10, 4), rand(4, 11)
    np.testing.assert_allclose(run(te.lower(s, [A, B, C]), a, b)[0], a @ b, rtol=1e-5, atol=1e-5)


def test_fuse_then_split_then_parallel_vectorize() -> None:
    X = te.placeholder((6, 7), "float32", "X")
    Y = te.compute((7, 6), lambda i, j: X[j, i] * 3.0, name="Y")
    s = te.create_schedule(Y)
    fused = s[Y].fuse(*Y.op.axis)
    assert s[Y].iv_name(fused) == "i.j.fused"
    o, i = s[Y].split(fused, factor=5)
    s[Y].parallel(o)
    s[Y].vectorize(i)
    f = te.lower(s, [X, Y])
    (guard,) = nodes(f, IfThenElse)  # only `fused < 42`: it implies i < 7
    assert guard.condition.args[0].b.value == 42
    x = rand(6, 7)
    np.testing.assert_allclose(run(f, x)[0], x.T * 3)


# ------------------------------------------------------------------------------- placement


def test_compute_at_allocates_the_needed_region_inside_the_loop() -> None:
    n = 17
    A = te.placeholder((n + 2,), "float32", "A")
    B = te.compute((n + 2,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((n,), lambda i: B[i] + B[i + 1] + B[i + 2], name="C")
    s = te.create_schedule(C)
    io, _ii = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], io)
    f = te.lower(s, [A, C])
    outer = f.body
    assert isinstance(outer, For) and outer.loop_var.name == "i.outer"
    alloc = outer.body
    assert isinstance(alloc, Allocate) and alloc.buffer.name == "B"
    assert [d.value for d in alloc.buffer.shape] == [6]
    assert alloc.buffer.scope == "local"
    a = rand(n + 2)
    b = a * 2
    np.testing.assert_allclose(run(f, a)[0], b[:-2] + b[1:-1] + b[2:], rtol=1e-6)


def test_compute_at_reads_through_inlined_stage_with_guarded_padding() -> None:
    n = 10
    X = te.placeholder((n,), "float32", "X")
    P = te.compute((n,), lambda i: X[i] * 3.0, name="P")
    Q = te.compute((n,), lambda i: P[i] + 1.0, name="Q")
    R = te.compute((n,), lambda i: if_then_else(i >= 1, Q[i - 1], 0.0) + Q[i], name="R")
    s = te.create_schedule(R)
    s[Q].compute_inline()
    io, _ = s[R].split(R.op.axis[0], factor=3)
    s[P].compute_at(s[R], io)
    f = te.lower(s, [X, R])
    x = rand(n)
    q = x * 3 + 1
    np.testing.assert_allclose(run(f, x)[0], np.concatenate([[0], q[:-1]]) + q, rtol=1e-6)


def test_compute_at_a_reduction_loop_and_nested_attach() -> None:
    A, B, _C = matmul(9, 6, 7)
    A2 = te.compute(A.shape, lambda i, k: A[i, k] - 0.5, name="A2")
    r = te.reduce_axis(7, "k")
    D = te.compute((9, 6), lambda i, j: te.sum_(A2[i, r] * B[r, j], axis=r), name="D")
    s = te.create_schedule(D)
    i, j = D.op.axis
    io, ii = s[D].split(i, factor=4)
    ro, ri = s[D].split(D.op.reduce_axis[0], factor=3)
    s[D].reorder(io, j, ro, ri, ii)
    s[A2].compute_at(s[D], ro)
    f = te.lower(s, [A, B, D])
    a, b = rand(9, 7), rand(7, 6)
    np.testing.assert_allclose(run(f, a, b)[0], (a - 0.5) @ b, rtol=1e-5, atol=1e-5)


def test_compute_inline_chain_leaves_no_intermediate_buffer() -> None:
    A = te.placeholder((6, 7), "float32", "A")
    B = te.compute((6, 7), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((7, 6), lambda i, j: B[j, i] * 3.0, name="C")
    D = te.compute((7, 6), lambda i, j: C[i, j] - A[j, i], name="D")
    s = te.create_schedule(D)
    s[B].compute_inline()
    s[C].compute_inline()
    f = te.lower(s, [A, D])
    assert not nodes(f, Allocate)
    assert not nodes(f, te.ProducerLoad)
    a = rand(6, 7)
    np.testing.assert_allclose(run(f, a)[0], (a + 1).T * 3 - a.T, rtol=1e-6)


def test_compute_root_intermediates_are_allocated_globally() -> None:
    A = te.placeholder((5,), "float32", "A")
    B = te.compute((5,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((5,), lambda i: B[4 - i] * 2.0, name="C")
    s = te.create_schedule(C)
    s[B].compute_inline()
    s[B].compute_root()
    f = te.lower(s, [A, C])
    assert isinstance(f.body, Allocate) and f.body.buffer.scope == "global"
    a = rand(5)
    np.testing.assert_allclose(run(f, a)[0], (a[::-1] + 1) * 2, rtol=1e-6)


def test_cache_read_and_cache_write_gemm() -> None:
    A, B, C = matmul(13, 10, 7)
    s = te.create_schedule(C)
    CL = s.cache_write(C, "local")
    AL = s.cache_read(A, "local", [CL])
    assert s[CL].name == "C.local" and s[AL].name == "A.local"
    _io, jo, _ii, _ji = s[C].tile(*s[C].op.axis, 4, 4)
    s[CL].compute_at(s[C], jo)
    ko, ki = s[CL].split(s[CL].op.reduce_axis[0], factor=3)
    x, y = s[CL].op.axis
    s[CL].reorder(ko, ki, x, y)
    s[CL].vectorize(y)
    s[AL].compute_at(s[CL], ko)
    f = te.lower(s, [A, B, C])
    shapes = {a.buffer.name: [d.value for d in a.buffer.shape] for a in nodes(f, Allocate)}
    assert shapes == {"C.local": [4, 4], "A.local": [4, 3]}
    a, b = rand(13, 7), rand(7, 10)
    np.testing.assert_allclose(run(f, a, b)[0], a @ b, rtol=1e-5, atol=1e-5)


def test_cache_read_of_an_intermediate_for_some_readers() -> None:
    X = te.placeholder((8,), "float32", "X")
    Y = te.compute((8,), lambda i: X[i] * 2.0, name="Y")
    Z1 = te.compute((8,), lambda i: Y[i] + 1.0, name="Z1")
    Z2 = te.compute((8,), lambda i: Y[7 - i] + Z1[i], name="Z2")
    s = te.create_schedule(Z2)
    YL = s.cache_read(Y, "local", [Z2])
    assert s[Z2].op.input_tensors[0] is YL
    assert s[Z1].op.input_tensors[0] is s.tensor(Y)
    f = te.lower(s, [X, Z2])
    x = rand(8)
    np.testing.assert_allclose(run(f, x)[0], x[::-1] * 2 + x * 2 + 1, rtol=1e-6)


# ------------------------------------------------------------------------------ reductions


def _argmax(n: int, m: int):
    A = te.placeholder((n, m), "float32", "A")
    k = te.reduce_axis(m, "k")
    x0, x1 = E.Var("x0", "int64"), E.Var("x1", "float32")
    y0, y1 = E.Var("y0", "int64"), E.Var("y1", "float32")
    keep = x1 >= y1
    comb = E.CommReducer(
        (x0, x1),
        (y0, y1),
        (E.select(keep, x0, y0), E.select(keep, x1, y1)),
        (E.const(-1, "int64"), min_value("float32")),
        "argmax",
    )
    true = E.const(True, "bool")

    def body(i):
        src = (k.var, A[i, k])
        return [E.Reduce(comb, src, (k,), true, 0), E.Reduce(comb, src, (k,), true, 1)]

    idx, val = te.compute((n,), body, name="argmax")
    return A, idx, val


@pytest.mark.parametrize("split", [None, 4])
def test_tuple_reduction_argmax_stores_every_component(split: int | None) -> None:
    A, idx, val = _argmax(5, 11)
    s = te.create_schedule(idx)
    if split:
        s[idx].split(s[idx].op.reduce_axis[0], factor=split)
    f = te.lower(s, [A, idx, val])
    assert f.attrs["num_outputs"] == 2
    assert [p.dtype for p in f.params] == ["float32", "int64", "float32"]
    a = rand(5, 11)
    got_i, got_v = run(f, a)
    np.testing.assert_array_equal(got_i, a.argmax(1))
    np.testing.assert_array_equal(got_v, a.max(1))


def test_tuple_reduction_computed_at_consumer() -> None:
    A, idx, val = _argmax(6, 5)
    out = te.compute((6,), lambda i: E.cast("float32", idx[i]) + val[i], name="out")
    s = te.create_schedule(out)
    o, _ = s[out].split(out.op.axis[0], factor=4)
    s[idx].compute_at(s[out], o)
    f = te.lower(s, [A, out])
    a = rand(6, 5)
    np.testing.assert_allclose(run(f, a)[0], a.argmax(1) + a.max(1), rtol=1e-6)


def test_reduction_with_condition_and_offset_axis() -> None:
    A = te.placeholder((5, 9), "float32", "A")
    k = te.reduce_axis((2, 9), "k")
    C = te.compute(
        (5,), lambda i: te.max_reduce(A[i, k], axis=k, where=E.eq(k.var % 2, 0)), name="C"
    )
    s = te.create_schedule(C)
    s[C].split(k, factor=2)
    f = te.lower(s, [A, C])
    a = rand(5, 9)
    np.testing.assert_array_equal(run(f, a)[0], a[:, 2:9:2].max(1))


# ----------------------------------------------------------------------------------- extern


def _double(ins: list[Buffer], outs: list[Buffer]):
    i = E.Var("i", "int64")
    body = BufferStore(outs[0], ins[0].load(i) * 2.0, (i,))
    return For(i, E.const(0), E.const(7), ForKind.SERIAL, body)


def test_extern_op_reads_and_writes_the_real_buffers() -> None:
    X = te.placeholder((7,), "float32", "X")
    Y = te.compute((7,), lambda i: X[i] + 1.0, name="Y")
    Z = te.extern([(7,)], [Y], _double, ["float32"], name="ext")
    W = te.compute((7,), lambda i: Z[i] - 1.0, name="W")
    f = te.lower_default(W, [X, W])
    ext_bufs = set(Z.op.input_buffers) | set(Z.op.output_buffers)
    assert not any(s.buffer in ext_bufs for s in nodes(f, BufferStore))
    x = rand(7)
    np.testing.assert_allclose(run(f, x)[0], (x + 1) * 2 - 1, rtol=1e-6)


def test_extern_op_as_output() -> None:
    X = te.placeholder((7,), "float32", "X")
    Z = te.extern([(7,)], [X], _double, ["float32"], name="ext")
    f = te.lower(te.create_schedule(Z), [X, Z])
    x = rand(7)
    np.testing.assert_allclose(run(f, x)[0], x * 2)


# ---------------------------------------------------------------------------- lower_default


def test_lower_default_inlines_injective_and_keeps_reductions_at_root() -> None:
    A = te.placeholder((4, 6), "float32", "A")
    E1 = te.compute((4, 6), lambda i, j: A[i, j] * 2.0, name="E1")
    r = te.reduce_axis(6, "r")
    S = te.compute((4,), lambda i: te.sum_(E1[i, r], axis=r), name="S")
    Out = te.compute((4, 6), lambda i, j: E1[i, j] / S[i], name="O")
    f = te.lower_default(Out, [A, Out])
    (alloc,) = nodes(f, Allocate)
    assert alloc.buffer.name == "S" and alloc.buffer.scope == "global"
    a = rand(4, 6)
    np.testing.assert_allclose(run(f, a)[0], a / a.sum(1, keepdims=True), rtol=1e-5)


def test_multiple_outputs_in_argument_order() -> None:
    X = te.placeholder((5,), "float32", "X")
    Y = te.compute((5,), lambda i: X[i] + 1.0, name="Y")
    Z = te.compute((5,), lambda i: Y[i] * 2.0, name="Z")
    f = te.lower_default([Y, Z], [X, Z, Y])
    x = rand(5)
    z, y = run(f, x)
    np.testing.assert_allclose(y, x + 1)
    np.testing.assert_allclose(z, (x + 1) * 2)


def test_symbolic_extent_loops() -> None:
    n = E.Var("n", "int64")
    X = te.placeholder((n,), "float32", "X")
    Y = te.compute((n,), lambda i: X[i] + 1.0, name="Y")
    s = te.create_schedule(Y)
    s[Y].split(Y.op.axis[0], factor=4)
    f = te.lower(s, [X, Y])
    assert [p.shape[0] for p in f.params] == [n, n]
    assert len(nodes(f, IfThenElse)) == 1


def test_deep_root_chain_within_default_recursion_limit() -> None:
    X = te.placeholder((2,), "float32", "X")
    t = X
    for q in range(2000):
        t = te.compute((2,), lambda i, t=t: t[i] + 1.0, name=f"T{q}")
    f = te.lower(te.create_schedule(t), [X, t])
    assert len(nodes(f, Allocate)) == 1999


def test_inline_chain() -> None:
    X = te.placeholder((3,), "float32", "X")
    t = X
    for q in range(200):
        t = te.compute((3,), lambda i, t=t: t[i] + 1.0, name=f"T{q}")
    f = te.lower_default(t, [X, t])
    assert not nodes(f, Allocate)


# ------------------------------------------------------------------------------------ errors


def _err(fn, match: str) -> te.ScheduleError:
    with pytest.raises(te.ScheduleError, match=match) as info:
        fn()
    err = info.value
    assert isinstance(err, Error) and err.span is None
    return err


def test_errors_of_loop_primitives() -> None:
    A, _B, C = matmul(8, 8, 4)
    s = te.create_schedule(C)
    i, j = C.op.axis
    io, ii = s[C].split(i, factor=4)
    _err(lambda: s[C].split(i, factor=2), "`i` is not a loop of stage C")
    _err(lambda: s[C].split(j, factor=0), "positive integer")
    _err(lambda: s[C].split(j), "exactly one")
    _err(lambda: s[C].fuse(io, j), "not consecutive")
    _err(lambda: s[C].fuse(j, C.op.reduce_axis[0]), "reduction loops")
    _err(lambda: s[C].reorder(io, io), "given twice")
    _err(lambda: s[C].vectorize(C.op.reduce_axis[0]), "reduction loop")
    _err(lambda: s[C].parallel(C.op.reduce_axis[0]), "reduction loop")
    _err(lambda: s[A].split(i, factor=2), "stage A is an input and has no loops")
    _err(lambda: s[C].split(A, factor=2), "expected an iteration variable")
    s[C].unroll(ii)
    _err(lambda: s[C].split(ii, factor=2), "already marked unrolled")
    assert [st.primitive for st in s.trace] == ["split", "unroll"]


def test_errors_of_placement() -> None:
    A = te.placeholder((8,), "float32", "A")
    r = te.reduce_axis(8, "r")
    S = te.compute((1,), lambda i: te.sum_(A[r], axis=r), name="S")
    T = te.compute((8,), lambda i: A[i] + S[0], name="T")
    s = te.create_schedule(T)
    _err(lambda: s[S].compute_inline(), "is a reduction")
    _err(lambda: s[T].compute_inline(), "is an output")
    _err(lambda: s[A].compute_inline(), "not a compute stage")
    _err(lambda: s[T].compute_at(s[S], S.op.axis[0]), "is an output")
    _err(lambda: s[S].compute_at(s[T], S.op.axis[0]), "not a loop of stage T")
    _err(lambda: s[S].compute_at(s[S], S.op.axis[0]), "itself")
    _err(lambda: s.cache_write(A, "local"), "not a compute stage")
    other = te.placeholder((8,), "float32", "other")
    _err(lambda: s[other], "not part of this schedule")
    _err(lambda: s["nope"], "no stage named")


def test_lowering_errors() -> None:
    A = te.placeholder((8,), "float32", "A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((8,), lambda i: B[i] * 2.0, name="C")
    D = te.compute((8,), lambda i: B[i] + C[i], name="D")
    s = te.create_schedule(D)
    o, _i = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], o)  # D also reads B, outside C's loops
    _err(lambda: te.lower(s, [A, D]), "stage D reads it outside that loop")
    s[B].compute_root()
    _err(lambda: te.lower(s, [D]), "input A is not among the arguments")
    s[C].vectorize(o)
    _err(lambda: te.lower(s, [A, D]), "not the innermost loop")
    s2 = te.create_schedule(D)
    o2, i2 = s2[D].split(D.op.axis[0], factor=2)
    s2[D].parallel(o2)
    s2[D].parallel(i2)
    _err(lambda: te.lower(s2, [A, D]), "inside another parallel loop")
    s3 = te.create_schedule(D)
    o3, i3 = s3[D].split(D.op.axis[0], factor=2)
    s3[C].compute_at(s3[D], o3)
    _err(lambda: s3[D].fuse(o3, i3), "stage C is computed at `i.outer` of stage D")
    _err(lambda: s3[D].split(o3, factor=2), "split/fuse loops before computing")
    s3[C].compute_root()
    s3[D].fuse(o3, i3)
    n = E.Var("n", "int64")
    X = te.placeholder((n,), "float32", "X")
    Y = te.compute((n,), lambda i: X[i] + 1.0, name="Y")
    s4 = te.create_schedule(Y)
    s4[Y].vectorize(Y.op.axis[0])
    _err(lambda: te.lower(s4, [X, Y]), "no constant extent")


def test_cache_write_after_split_and_inline_read_by_extern_are_errors() -> None:
    _A, _B, C = matmul(4, 4, 4)
    s = te.create_schedule(C)
    s[C].split(C.op.axis[0], factor=2)
    _err(lambda: s.cache_write(C, "local"), "call cache_write first")
    X = te.placeholder((7,), "float32", "X")
    Y = te.compute((7,), lambda i: X[i] + 1.0, name="Y")
    Z = te.extern([(7,)], [Y], _double, ["float32"], name="ext")
    s2 = te.create_schedule(Z)
    _err(lambda: s2[Y].compute_inline(), "read by extern op ext")
    _err(lambda: s2[Z].compute_at(s2[Y], Y.op.axis[0]), "extern op")
