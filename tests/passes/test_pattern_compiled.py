"""Compiled patterns (`pattern.compiled`, what the rewrite driver matches with) give the
captures `Matcher.match` gives, at every node of a few programs, for patterns with
shared nodes, alternatives that capture, attributes, types, tuples and projections."""

import numpy as np
import pytest
from relay.lang import (
    Call,
    Function,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    const,
    get_op,
    post_order,
)
from relay.passes.pattern import (
    Matcher,
    dominates,
    is_constant,
    is_expr,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    wildcard,
)
from relay.passes.pattern.compiled import compile_pattern
from relay.passes.pattern.matcher import consumers
from relay.typecheck import infer_expr

T = TensorType((2, 2), "float32")


def call(name, *args, **attrs):
    op = get_op(name)
    return Call(op, args, op.make_attrs(**attrs) if op.attrs_schema is not None else None)


def program() -> Function:
    x, y = Var("x", T), Var("y", T)
    one = const(np.ones((2, 2), "float32"))
    a = call("add", x, x)
    b = call("multiply", a, one)
    c = call("add", b, call("exp", b))
    d = call("transpose", call("transpose", c, axes=[1, 0]), axes=[1, 0])
    e = call("reshape", call("squeeze", call("expand_dims", d, axis=0), axis=[0]), newshape=[2, 2])
    t = Tuple([e, y, one])
    f = call("add", TupleGetItem(t, 0), TupleGetItem(t, 2))
    g = call(
        "add", TupleGetItem(t, 1), call("cast", call("cast", f, dtype="float64"), dtype="float32")
    )
    return Function([x, y], call("add", g, call("nn.relu", call("add", x, y))))


def patterns():
    x, w = wildcard().named("x"), wildcard()
    c = is_constant().named("c")

    def reshape_like():
        return is_op("reshape") | is_op("squeeze") | is_op("expand_dims")

    shared_alt = reshape_like()
    return [
        is_op("add")(w, w),  # one node used twice: the same expression both times
        is_op("add")(x, x).named("call"),
        is_op("multiply")(x, c).named("call"),
        is_op("add")(x, is_op("exp")(x)),
        is_op("add")(x, is_op("exp")(wildcard().named("x"))),  # one name, two patterns
        (is_op("add")(x, c) | is_op("add")(x, wildcard().named("y"))).named("call"),
        (is_op("exp")(x) | is_op("add")(x, x)).named("either"),
        reshape_like()(reshape_like()(wildcard().named("inner"))).named("outer"),
        shared_alt(shared_alt(x)),  # one alternative object: the same operator both times
        is_op("transpose")(is_op("transpose")(x)).has_attr({"axes": [1, 0]}),
        is_op("transpose")(x).has_attr({"axes": [0, 1]}),
        is_op("cast")(is_op("cast")(x).has_dtype("float64")).has_dtype("float32"),
        is_op("add")(x, wildcard()).has_shape((2, 2)),
        is_op("add")(x, wildcard()).has_type(TensorType((3,), "float32")),
        is_tuple([wildcard(), is_var("y").named("v"), is_constant()]).named("t"),
        is_op("add")(is_tuple_get_item(is_tuple([x, wildcard(), c]), 0), wildcard()),
        is_op("add")(is_tuple_get_item(wildcard(), 1), wildcard()),
        is_op("nn.relu")(is_op("add")(is_var("x"), is_var())),
        is_op("multiply")(wildcard(), is_expr(const(np.ones((2, 2), "float32")))),
        wildcard().optional(lambda p: is_op("nn.relu")(p)).named("maybe"),
        (is_op("add") | is_op("multiply"))(wildcard(), is_constant()),
        # the left alternative captures `b`, then fails: `b` is dropped, `a` is kept
        is_op("add")(
            wildcard().named("a"),
            is_op("exp")(wildcard().named("b")).has_attr({"axis": 0}) | wildcard().named("z"),
        ),
    ]


@pytest.mark.parametrize("index", range(len(patterns())))
def test_compiled_patterns_capture_what_the_matcher_captures(index):
    fn = program()
    types = infer_expr(fn)
    pattern = patterns()[index]
    compiled = compile_pattern(pattern)
    assert compiled is not None
    matched = 0
    for node in post_order(fn):
        slow = Matcher(lambda: types, lambda: consumers(fn))
        fast = Matcher(lambda: types, lambda: consumers(fn))
        expected = slow.match(pattern, node)
        found = compiled(node, fast)
        if expected is None:
            assert found is None, node
        else:
            matched += 1
            assert found is not None, node
            assert found.keys() == expected.captures.keys()
            assert all(found[k] is expected.captures[k] for k in found)
        assert fast.unknown == slow.unknown
    # every pattern but the ones built to fail matches somewhere
    assert (matched > 0) == (index not in (8, 10, 13))


def test_untyped_nodes_set_unknown_like_the_matcher():
    fn = program()
    pattern = is_op("add")(wildcard(), wildcard()).has_shape((2, 2))
    compiled = compile_pattern(pattern)
    assert compiled is not None
    late = call("add", fn.params[0], fn.params[0])  # built after inference: no type
    slow, fast = Matcher(lambda: infer_expr(fn)), Matcher(lambda: infer_expr(fn))
    assert slow.match(pattern, late) is None and compiled(late, fast) is None
    assert slow.unknown and fast.unknown


def test_dominator_patterns_are_left_to_the_matcher():
    diamond = dominates(is_op("exp")(wildcard()), is_op("add")(wildcard(), wildcard()), wildcard())
    assert compile_pattern(diamond) is None
    assert compile_pattern(is_op("exp")(diamond)) is None
