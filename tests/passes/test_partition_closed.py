"""`partition` builds closed functions and keeps programs' meaning.

A partitioned function's parameters are the match's inputs; with named leaves
(`wildcard().named("x")`) they used to be left out, which made functions with no
parameters and free variables."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from relay.backend.runtime import interpret
from relay.lang import Call, Function, IRModule, TensorType, Var, const, get_op, post_order
from relay.lang.freevars import free_vars
from relay.passes.pattern import (
    dominates,
    is_constant,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    match,
    partition,
    wildcard,
)
from relay.testing import dataflow_programs, functional_programs, inputs_for
from relay.testing.check_pass import check_once
from relay.typecheck import check_module

F32 = "float32"
UNARY = ("nn.relu", "exp", "negative", "tanh", "sigmoid", "abs")
BINARY = ("add", "multiply", "subtract", "maximum")


def call(name, *args, **attrs):
    op = get_op(name)
    return Call(op, tuple(args), op.make_attrs(**attrs))


def partitioned_functions(e):
    """The functions `partition` made in `e`."""
    return [
        n for n in post_order(e) if isinstance(n, Function) and "PartitionedFromPattern" in n.attrs
    ]


def partition_module(pattern, mod):
    """`mod` with every function partitioned by `pattern`."""
    out = mod
    for gv in list(mod.functions):
        out = out.with_function(gv, partition(pattern, out.functions[gv], {"Composite": "p"}, out))
    return out


def assert_closed(e):
    """Every partitioned function in `e` is closed and called with one argument per
    parameter; returns how many there are."""
    made = partitioned_functions(e)
    for fn in made:
        assert free_vars(fn) == [], f"free variables {free_vars(fn)} in\n{fn}"
    for node in post_order(e):
        if isinstance(node, Call) and isinstance(node.op, Function) and node.op in made:
            assert len(node.args) == len(node.op.params)
    return len(made)


# ------------------------------------------------------------------ the reported cases


def test_named_wildcard_becomes_a_parameter():
    a = Var("a", TensorType((2, 3), F32))
    pattern = is_op("nn.relu")(wildcard().named("x"))
    inner = call("exp", a)
    found = match(pattern, call("nn.relu", inner))
    assert found.inputs == (inner,)
    out = partition(pattern, Function([a], call("nn.relu", inner)))
    (fn,) = partitioned_functions(out)
    assert len(fn.params) == 1 and free_vars(fn) == []
    assert out.body.args == (inner,)


def test_docstring_example_has_inputs():
    x = Var("x", TensorType((1, 3, 4, 4), F32))
    w = const(np.ones((3, 3, 1, 1), F32))
    conv = is_op("nn.conv2d")(wildcard().named("x"), is_constant().named("w"))
    source = Function([x], call("nn.relu", call("nn.conv2d", x, w)))
    found = match(conv.optional(lambda p: is_op("nn.relu")(p)), source.body)
    assert found.inputs == (x, w)
    out = partition(conv.optional(lambda p: is_op("nn.relu")(p)), source, {"Composite": "cr"})
    assert assert_closed(out) == 1
    data = np.random.default_rng(0).standard_normal((1, 3, 4, 4)).astype(F32)
    np.testing.assert_allclose(
        interpret(IRModule.from_expr(out), x=data), interpret(IRModule.from_expr(source), x=data)
    )


def test_captured_wrappers_of_leaves_are_inputs():
    a, b = Var("a", TensorType((2, 3), F32)), Var("b", TensorType((2, 3), F32))
    body = call("add", call("exp", a), b)
    pattern = is_op("add")(wildcard().named("l").has_dtype(F32), is_var().named("r"))
    out = partition(pattern, Function([a, b], body))
    (fn,) = partitioned_functions(out)
    assert len(fn.params) == 2 and free_vars(fn) == []


def test_dominator_region_is_closed():
    x = Var("x", TensorType((2, 3), F32))
    top = call("exp", x)
    body = call("add", call("nn.relu", top), call("tanh", top))
    pattern = dominates(
        is_op("exp")(wildcard()), wildcard()(wildcard()), is_op("add")(wildcard(), wildcard())
    )
    out = partition(pattern, Function([x], body))
    assert assert_closed(out) == 1
    data = np.random.default_rng(0).standard_normal((2, 3)).astype(F32)
    np.testing.assert_allclose(
        interpret(IRModule.from_expr(out), x=data),
        interpret(IRModule.from_expr(Function([x], body)), x=data),
        rtol=1e-6,
    )


# ------------------------------------------------------------------ properties


def leaves():
    """Leaf patterns, named or not."""
    base = st.sampled_from(["wildcard", "constant", "var"])

    def build(kind_and_name):
        kind, named = kind_and_name
        p = {"wildcard": wildcard, "constant": is_constant, "var": is_var}[kind]()
        return p.named(f"c{named}") if named >= 0 else p

    return st.tuples(base, st.integers(-1, 3)).map(build)


def patterns():
    """Small patterns over unary and binary operators, with named captures, alternatives,
    optional operators, tuples and projections."""

    def extend(inner):
        unary = st.tuples(st.sampled_from(UNARY), inner).map(lambda t: is_op(t[0])(t[1]))
        binary = st.tuples(st.sampled_from(BINARY), inner, inner).map(
            lambda t: is_op(t[0])(t[1], t[2])
        )
        named = st.tuples(inner, st.integers(0, 3)).map(lambda t: t[0].named(f"n{t[1]}"))
        alt = st.tuples(inner, inner).map(lambda t: t[0] | t[1])
        optional = st.tuples(inner, st.sampled_from(UNARY)).map(
            lambda t: t[0].optional(lambda p: is_op(t[1])(p))
        )
        project = inner.map(lambda p: is_tuple_get_item(p))
        tup = st.lists(inner, min_size=1, max_size=2).map(is_tuple)
        return st.one_of(unary, binary, named, alt, optional, project, tup)

    calls = st.recursive(leaves(), extend, max_leaves=4)
    return calls.filter(lambda p: not isinstance(p, type(wildcard())))


def check_partition(mod, pattern, inputs):
    """`partition` on every function of `mod`: closed functions, well-typed, same values."""
    after = check_once(lambda m: partition_module(pattern, m), "partition", mod, inputs)
    for fn in after.functions.values():
        assert_closed(fn)
    check_module(after)
    return after


@given(dataflow_programs(ops=UNARY + BINARY + ("split", "concatenate")), patterns(), st.data())
def test_partition_of_dataflow_programs(mod, pattern, data):
    check_partition(mod, pattern, data.draw(inputs_for(mod)))


@given(functional_programs(max_size=20, refs=False), patterns(), st.data())
def test_partition_of_functional_programs(mod, pattern, data):
    check_partition(mod, pattern, data.draw(inputs_for(mod)))


def test_fixed_patterns_do_partition_generated_programs():
    """The properties above are not vacuous: common patterns do outline something."""
    pattern = is_op("add")(wildcard().named("x"), wildcard()) | is_op("nn.relu")(
        wildcard().named("y")
    )
    total = 0

    @given(dataflow_programs(ops=("add", "nn.relu", "exp")), st.data())
    def run(mod, data):
        nonlocal total
        after = check_partition(mod, pattern, data.draw(inputs_for(mod)))
        total += sum(assert_closed(fn) for fn in after.functions.values())

    run()
    assert total > 0
