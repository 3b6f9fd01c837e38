"""Deep programs type-check with Python's default recursion limit."""

from __future__ import annotations

import sys

from relay.grammar import parse
from relay.lang import (
    Call,
    Function,
    If,
    IRModule,
    Let,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    const,
    get_op,
    let_chain,
)
from relay.typecheck import check_module, infer_expr, type_text

ADD = get_op("add")
NEG = get_op("negative")
T = TensorType((4, 4), "float32")


def test_recursion_limit_is_the_default():
    assert sys.getrecursionlimit() <= 1000


def test_100k_binding_let_chain():
    x = Var("x", T)
    bindings = []
    prev = x
    for i in range(100_000):
        v = Var(f"v{i}")
        bindings.append((v, Call(ADD, [prev, prev])))
        prev = v
    fn = Function([x], let_chain(bindings, prev))
    types = check_module(IRModule.from_expr(fn))
    assert types.type_of(prev) == T
    assert (
        type_text(types.global_types["main"])
        == "fn (Tensor[(4, 4), float32]) -> Tensor[(4, 4), float32]"
    )
    assert len(types.table) >= 300_000


def test_10k_deep_nested_call():
    x = Var("x", T)
    e = x
    for _ in range(10_000):
        e = Call(ADD, [e, const(1.0)])
    assert infer_expr(Function([x], e)).type_of(e) == T


def test_shared_graph_is_visited_once():
    x = Var("x", T)
    e = x
    for _ in range(50_000):
        e = Call(ADD, [e, e])  # a DAG that is 2**50000 nodes as a tree
    types = infer_expr(Function([x], e))
    assert types.type_of(e) == T
    assert len(types.table) == 50_000 + 2


def test_deep_nesting_of_scopes():
    x = Var("x", TensorType((), "float32"))
    e = x
    for i in range(2_000):
        v = Var(f"v{i}")
        inner = Function([v], Call(ADD, [v, e]))
        cond = Call(get_op("less"), [x, const(0.0)])
        e = Let(Var(f"f{i}"), inner, If(cond, Call(inner, [x]), TupleGetItem(Tuple([x]), 0)))
    assert infer_expr(Function([x], e)).type_of(e) == TensorType((), "float32")


def test_long_chain_of_waiting_relations_resolves_iteratively():
    x = Var("x")  # unknown until the very end
    e = x
    for _ in range(10_000):
        e = Call(NEG, [e])
    pin = Var("pin", T)
    fn = Function([x], Tuple([e, Let(pin, x, pin)]))
    types = infer_expr(fn)
    assert types.type_of(e) == T


def test_deep_program_from_text():
    lines = [
        '#[version = "0.0.5"]',
        "def @main(%x: Tensor[(2, 2), float32]) {",
        "  %0 = add(%x, %x);",
    ]
    lines += [f"  %{i} = multiply(%{i - 1}, %x);" for i in range(1, 10_000)]
    lines += ["  %9999", "}"]
    types = check_module(parse("\n".join(lines)))
    ret = types.global_types["main"].ret_type
    assert ret == TensorType((2, 2), "float32")


def test_a_chain_of_one_call_runs_its_relation_a_few_times(monkeypatch):
    # a call whose argument types are the static types of an earlier call of the same
    # operator and attributes gets that call's result without running the relation
    from relay.typecheck import constraints

    runs = []
    real = constraints.OpCall.run

    def counting(self, solver, final):
        runs.append(self.op.name)
        return real(self, solver, final)

    monkeypatch.setattr(constraints.OpCall, "run", counting)
    x, y = Var("x", T), Var("y", TensorType((4, 1), "float32"))
    body = x
    for _ in range(1_000):
        body = Call(ADD, [Call(NEG, [body]), y])
    types = infer_expr(Function([x, y], body))
    assert types.type_of(body) == T
    assert len(runs) <= 6
    # a call that does not type-check is still reported, also after equal calls
    bad = Call(ADD, [body, Var("z", TensorType((3,), "float32"))])
    errors = infer_expr(Function([x, y], Call(ADD, [bad, bad])), raise_errors=False).errors
    assert len(errors) == 1 and "add" in errors[0].message
