"""Deep programs run with Python's default recursion limit: long let chains, deep
non-tail recursion of the interpreted program, deeply nested calls, long tail loops."""

import sys
import time

import numpy as np
from relay.backend.runtime import ConstructorValue, evaluate, interpret
from relay.lang import (
    Call,
    Clause,
    Constructor,
    Function,
    GlobalTypeVar,
    GlobalVar,
    If,
    IRModule,
    Match,
    PatternConstructor,
    PatternVar,
    TensorType,
    Tuple,
    TupleGetItem,
    TypeCall,
    TypeData,
    TypeVar,
    Var,
    const,
    get_op,
    let_chain,
)

DEFAULT_LIMIT = 1000


def op(name, *args):
    return Call(get_op(name), args)


def i32(value):
    return const(value, "int32")


def test_recursion_limit_is_the_default():
    assert sys.getrecursionlimit() <= DEFAULT_LIMIT


def _list_module():
    gtv = GlobalTypeVar("List")
    a = TypeVar("A")
    cons = Constructor("Cons", [a, TypeCall(gtv, [a])], gtv, 0)
    nil = Constructor("Nil", [], gtv, 1)
    data = TypeData(gtv, [a], [cons, nil])
    # def @range(%n) { if (%n == 0) { Nil } else { Cons(%n, @range(%n - 1)) } }
    build, total = GlobalVar("range"), GlobalVar("sum")
    n = Var("n", TensorType((), "int32"))
    range_fn = Function(
        [n],
        If(
            op("equal", n, i32(0)),
            Call(nil, []),
            Call(cons, [n, Call(build, [op("subtract", n, i32(1))])]),
        ),
    )
    # def @sum(%xs) { match (%xs) { Cons(%h, %t) => %h + @sum(%t), Nil => 0 } }
    xs, h, t = Var("xs"), Var("h"), Var("t")
    sum_fn = Function(
        [xs],
        Match(
            xs,
            [
                Clause(
                    PatternConstructor(cons, [PatternVar(h), PatternVar(t)]),
                    op("add", h, Call(total, [t])),
                ),
                Clause(PatternConstructor(nil), i32(0)),
            ],
        ),
    )
    mod = IRModule({build: range_fn, total: sum_fn}, {gtv: data})
    return mod, build, total, cons, nil


def test_summing_a_10000_element_list_non_tail_recursively():
    mod, build, total, cons, _ = _list_module()
    k = Var("k", TensorType((), "int32"))
    mod = mod.with_function("main", Function([k], Call(total, [Call(build, [k])])))
    assert interpret(mod, 10_000) == 10_000 * 10_001 // 2
    # the list itself comes back as a (deep) value
    lst = interpret(mod.with_function("main", Function([k], Call(build, [k]))), k=10_000)
    assert isinstance(lst, ConstructorValue) and lst.constructor is cons
    assert lst.fields[0] == 10_000
    assert repr(lst).startswith("Cons(10000:int32, Cons(9999:int32")


def test_100000_binding_let_chain_and_its_speed():
    x = Var("x", TensorType((), "float32"))
    add, one = get_op("add"), const(1.0)
    bindings = []
    prev = x
    for i in range(100_000):
        v = Var(f"v{i}")
        bindings.append((v, Call(add, [prev, one])))
        prev = v
    mod = IRModule.from_expr(Function([x], let_chain(bindings, prev)))
    start = time.perf_counter()
    result = interpret(mod, 0.0)
    elapsed = time.perf_counter() - start
    assert result == 100_000 and result.dtype == np.float32
    print(f"\n100k-binding let chain: {elapsed:.3f} s ({elapsed / 100_000 * 1e6:.2f} us/binding)")


def test_100000_binding_chain_through_tuples():
    # values that need a generator each (tuple + projection), not just operator calls
    x = Var("x")
    bindings = []
    prev = x
    for i in range(100_000):
        v = Var(f"t{i}")
        bindings.append((v, Tuple([TupleGetItem(prev, 0)])))
        prev = v
    result = evaluate(let_chain(bindings, prev), {x: (np.asarray(7, np.int32),)})
    assert result[0] == 7


def test_10000_deep_nested_call():
    node = i32(0)
    for _ in range(10_000):
        node = op("add", node, i32(1))
    assert evaluate(node) == 10_000
    # nesting that is not an operator call on atoms at any level
    node = i32(5)
    for _ in range(10_000):
        node = TupleGetItem(Tuple([node]), 0)
    assert evaluate(node) == 5


def test_long_tail_recursive_loop():
    loop = GlobalVar("loop")
    n, acc = Var("n"), Var("acc")
    body = If(
        op("equal", n, i32(0)),
        acc,
        Call(loop, [op("subtract", n, i32(1)), op("add", acc, n)]),
    )
    mod = IRModule({loop: Function([n, acc], body)})
    k = Var("k", TensorType((), "int32"))
    mod = mod.with_function("main", Function([k], Call(loop, [k, i32(0)])))
    assert interpret(mod, 20_000) == 20_000 * 20_001 // 2
