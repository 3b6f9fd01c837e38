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
