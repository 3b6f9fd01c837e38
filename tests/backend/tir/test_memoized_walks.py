"""The shortcuts the loop-IR passes take for speed give what the plain walks give: int64
constant folding without the evaluator, the variables of a node remembered per node, the
guard calls of a loop body remembered per node, and `fresh_binders` in one rewrite."""

import itertools

from relay.backend import tir
from relay.backend.tir.arith.constants import make_const
from relay.backend.tir.arith.rules import _INDEX_FOLDS, fold_constants
from relay.backend.tir.evaluate import evaluate_expr
from relay.backend.tir.expr import Call, FloatImm, FloorDiv, FloorMod, IntImm, Var, const
from relay.backend.tir.op import if_then_else, likely
from relay.backend.tir.stmt import Allocate, BufferStore, For, ForKind, IfThenElse, LetStmt, seq
from relay.backend.tir.transform.loop_partition import _Guards
from relay.backend.tir.visitor import VarSets, fresh_binders, sub_expressions

EDGES = [0, 1, -1, 2, -3, 7, -8, 12345, 2**31, 2**62, -(2**62), 2**63 - 1, -(2**63)]


def test_int64_folding_matches_the_evaluator_at_the_edges():
    for cls, a, b in itertools.product(_INDEX_FOLDS, EDGES, EDGES):
        e = cls(IntImm(a), IntImm(b))
        folded = fold_constants(None, e)  # type: ignore[arg-type]
        if b == 0 and cls in (FloorDiv, FloorMod):
            assert folded is None
            continue
        want = make_const(evaluate_expr(e)[0], e.dtype)
        assert isinstance(folded, IntImm)
        assert (folded.value, folded.dtype) == (want.value, want.dtype), (cls, a, b)
        assert type(folded.value) is int


def _vars_by_walk(e):
    return {n for n in sub_expressions(e) if isinstance(n, Var)}


def test_var_sets_are_the_variables_a_walk_finds():
    i, j, k = Var("i"), Var("j"), Var("k")
    shared = i * 4 + j
    exprs = [shared, shared * 2 + k, (shared // 3) % 5, const(3) + const(4), i, shared - shared]
    sets = VarSets()
    for e in exprs:
        assert sets.of(e) == _vars_by_walk(e)
    assert sets.of(exprs[0]) is sets.of(exprs[0])  # remembered, not walked again


def _guards_by_walk(body):
    return [
        n
        for n in sub_expressions(body)
        if isinstance(n, Call) and n.name in ("likely", "if_then_else")
    ]


def test_guard_calls_are_in_the_order_a_walk_meets_them():
    A = tir.decl_buffer((16,), "float32", "A")
    i, j = Var("i"), Var("j")
    inner_guard = likely(i < 9)
    value = if_then_else(j * 2 < 7, A.load(i), FloatImm(0.0))
    nested = likely(if_then_else(i < 3, i, j) < 5)
    store = BufferStore(A, value, [i])
    body = For(
        i,
        0,
        16,
        ForKind.SERIAL,
        seq(
            IfThenElse(inner_guard, store),
            For(j, 0, 4, ForKind.SERIAL, seq(IfThenElse(nested, store), store)),
            IfThenElse(inner_guard, BufferStore(A, value + 1.0, [j])),
        ),
    )
    guards = _Guards()
    for node in [body, body.body, body.body.stmts[1]]:
        assert list(guards.calls(node)) == _guards_by_walk(node)
    assert guards.mentioning(body.body, j) == [
        c.args[0] for c in _guards_by_walk(body.body) if j in _vars_by_walk(c.args[0])
    ]


def test_fresh_binders_renames_loops_lets_and_buffers_in_one_rewrite():
    A = tir.decl_buffer((8,), "float32", "A")
    T = tir.decl_buffer((2,), "float32", "T", scope="local")
    i, u, t, outer = Var("i"), Var("u"), Var("t", "float32"), Var("o")
    body = Allocate(
        T,
        For(
            u,
            0,
            2,
            ForKind.SERIAL,
            LetStmt(
                t,
                A.load(outer + u),
                seq(BufferStore(T, t, [u]), BufferStore(A, T.load(u) * 2.0, [i + u])),
            ),
        ),
    )
    new_i = Var("i2")
    out = fresh_binders(body, {i: new_i})
    nodes = list(sub_expressions(out))
    found = {n for n in nodes if isinstance(n, Var)}
    assert not found & {i, u, t}  # every binder renamed, `i` replaced
    assert new_i in found and outer in found  # the free variable left alone
    assert isinstance(out, Allocate) and out.buffer is not T and out.buffer.data is not T.data
    with_t = [n for n in nodes if getattr(n, "buffer", None) is not None and n.buffer.name == "T"]
    assert len(with_t) == 3  # the allocation, the store and the load
    assert all(n.buffer is out.buffer for n in with_t)  # one new buffer everywhere
    a_accesses = [n for n in nodes if getattr(n, "buffer", None) is A]
    assert len(a_accesses) == 2  # buffers not allocated inside are kept
