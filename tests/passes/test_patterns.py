"""The dataflow pattern language: match, rewrite and partition."""

import numpy as np
import pytest
from relay.backend.runtime import interpret
from relay.lang import (
    Call,
    FuncAttrs,
    Function,
    IRModule,
    Let,
    OpPattern,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    assert_structural_equal,
    const,
    get_op,
)
from relay.passes.pattern import (
    RewriteBudgetError,
    Rule,
    RuleSet,
    capture,
    dominates,
    is_constant,
    is_expr,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    match,
    partition,
    rewrite,
    rule,
    wildcard,
)

F32 = "float32"


def call(name, *args, **attrs):
    op = get_op(name)
    return Call(op, args, op.make_attrs(**attrs))


def tvar(name, shape=(2, 3), dtype=F32):
    return Var(name, TensorType(shape, dtype))


# ------------------------------------------------------------------ pattern kinds


def test_wildcard_matches_anything():
    x = tvar("x")
    for e in (x, const(1.0), call("negative", x), Tuple([x])):
        assert match(wildcard(), e) is not None


def test_is_var_by_name_and_kind():
    x = tvar("x")
    assert match(is_var(), x) is not None
    assert match(is_var("x"), x) is not None
    assert match(is_var("y"), x) is None
    assert match(is_var(), const(1.0)) is None


def test_is_constant():
    assert match(is_constant(), const(np.zeros(3, F32))) is not None
    assert match(is_constant(), tvar("x")) is None


def test_is_expr_identity_and_structure():
    x, y = tvar("x"), tvar("y")
    assert match(is_expr(x), x) is not None
    assert match(is_expr(x), y) is None
    assert match(is_expr(const(2.0)), const(2.0)) is not None
    assert match(is_expr(const(2.0)), const(3.0)) is None


def test_is_op_call():
    x, y = tvar("x"), tvar("y")
    add = call("add", x, y)
    assert match(is_op("add")(wildcard(), wildcard()), add) is not None
    assert match(is_op("subtract")(wildcard(), wildcard()), add) is None
    assert match(is_op("add")(wildcard()), add) is None  # arity
    assert match(is_op("add")(is_var("x"), is_var("x")), add) is None
    assert match(is_op("add"), add) is None  # an op pattern is not a call pattern


def test_tuple_and_projection():
    x, y = tvar("x"), tvar("y")
    t = Tuple([x, y])
    assert match(is_tuple([is_var("x"), wildcard()]), t) is not None
    assert match(is_tuple([wildcard()]), t) is None
    assert match(is_tuple([is_var("y"), wildcard()]), t) is None
    item = TupleGetItem(t, 1)
    assert match(is_tuple_get_item(is_tuple([wildcard(), wildcard()])), item) is not None
    assert match(is_tuple_get_item(wildcard(), 1), item) is not None
    assert match(is_tuple_get_item(wildcard(), 0), item) is None
    assert match(is_tuple_get_item(wildcard(), 1), t) is None


def test_named_captures():
    x, c = tvar("x"), const(np.ones((2, 3), F32))
    e = call("multiply", x, c)
    found = match(is_op("multiply")(wildcard().named("lhs"), capture("rhs", is_constant())), e)
    assert found is not None
    assert found["lhs"] is x and found.captures["rhs"] is c
    assert found.captures.keys() == {"lhs", "rhs"}


def test_shared_pattern_must_match_the_same_node():
    x, y = tvar("x"), tvar("y")
    same = wildcard()
    pattern = is_op("add")(same, same)
    assert match(pattern, call("add", x, x)) is not None
    assert match(pattern, call("add", x, y)) is None
    # two captures with the same name must agree too
    twice = is_op("add")(wildcard().named("a"), wildcard().named("a"))
    assert match(twice, call("add", x, x)) is not None
    assert match(twice, call("add", x, y)) is None


def test_alternatives():
    x = tvar("x")
    unary = is_op("negative")(wildcard()) | is_op("exp")(wildcard())
    assert match(unary, call("negative", x)) is not None
    assert match(unary, call("exp", x)) is not None
    assert match(unary, call("log", x)) is None
    # a failed left branch leaves no captures behind
    alt = is_op("add")(wildcard().named("a"), is_constant()) | is_op("add")(
        wildcard(), wildcard().named("b")
    )
    found = match(alt, call("add", x, x))
    assert found is not None and set(found.captures) == {"b"}


def test_optional():
    x, w = tvar("x", (1, 3, 4, 4)), const(np.ones((2, 3, 1, 1), F32))
    conv_pat = is_op("nn.conv2d")(wildcard(), is_constant())
    pattern = conv_pat.optional(lambda p: is_op("nn.relu")(p))
    conv = call("nn.conv2d", x, w)
    assert match(pattern, conv) is not None
    assert match(pattern, call("nn.relu", conv)) is not None
    assert match(pattern, call("negative", conv)) is None
    assert match(pattern, call("nn.relu", x)) is None


def test_has_attr():
    x = tvar("x")
    e = call("sum", x, axis=[1], keepdims=True)
    assert match(is_op("sum")(wildcard()).has_attr({"axis": [1]}), e) is not None
    assert match(is_op("sum")(wildcard()).has_attr({"axis": [1], "keepdims": True}), e)
    assert match(is_op("sum")(wildcard()).has_attr({"axis": [0]}), e) is None
    assert match(is_op("sum")(wildcard()).has_attr({"no_such": 1}), e) is None
    assert match(wildcard().has_attr({"axis": [1]}), x) is None
    f = Function([x], x, attrs=FuncAttrs({"Composite": "c"}))
    assert match(wildcard().has_attr({"Composite": "c"}), f) is not None
    assert match(wildcard().has_attr({"Composite": "d"}), f) is None


def test_type_dtype_shape():
    x = tvar("x", (2, 3))
    n = Var("n", TensorType((2, 3), "int32"))
    e = call("negative", x)
    neg = is_op("negative")(wildcard())
    assert match(neg.has_type(TensorType((2, 3), F32)), e) is not None
    assert match(neg.has_type(TensorType((3, 2), F32)), e) is None
    assert match(neg.has_dtype(F32), e) is not None
    assert match(neg.has_dtype("int32"), e) is None
    assert match(neg.has_dtype("int32"), call("negative", n)) is not None
    assert match(neg.has_shape((2, 3)), e) is not None
    assert match(neg.has_shape([3, 2]), e) is None
    assert match(wildcard().has_dtype(F32), Tuple([x])) is None
    # constraints on inner nodes use the same types
    assert match(is_op("negative")(wildcard().has_shape((2, 3))), e) is not None


def _diamond():
    x = tvar("x", (1, 3, 4, 4))
    w = const(np.ones((3, 3, 1, 1), F32))
    conv = call("nn.conv2d", x, w)
    r1 = call("nn.relu", conv)
    r2 = call("exp", r1)
    out = call("add", conv, r2)
    return x, conv, r1, r2, out


def test_dominator_pattern_on_a_diamond():
    _, conv, r1, r2, out = _diamond()
    unary = is_op("nn.relu")(wildcard()) | is_op("exp")(wildcard())
    diamond = dominates(
        is_op("nn.conv2d")(wildcard(), wildcard()).named("conv"),
        unary,
        is_op("add")(wildcard(), wildcard()),
    )
    found = match(diamond, out)
    assert found is not None and found["conv"] is conv
    assert {id(e) for e in found.region} == {id(conv), id(r1), id(r2), id(out)}
    # a path node that does not match the path pattern
    only_relu = dominates(
        is_op("nn.conv2d")(wildcard(), wildcard()),
        is_op("nn.relu")(wildcard()),
        is_op("add")(wildcard(), wildcard()),
    )
    assert match(only_relu, out) is None
    # no parent: the inputs lead to a variable
    assert match(dominates(is_op("sum")(wildcard()), unary, wildcard()), out) is None


def test_dominator_pattern_rejects_escaping_path_nodes():
    _, _, r1, _, out = _diamond()
    escaped = Tuple([out, r1])  # r1 is used outside the diamond
    diamond = dominates(
        is_op("nn.conv2d")(wildcard(), wildcard()),
        is_op("nn.relu")(wildcard()) | is_op("exp")(wildcard()),
        is_op("add")(wildcard(), wildcard()),
    )
    assert match(diamond, out) is not None
    assert match(is_tuple([diamond, wildcard()]), escaped) is None


# ------------------------------------------------------------------ rewrite


def _neg_chain(x, n):
    e = x
    for _ in range(n):
        e = call("negative", e)
    return e


def test_rewrite_to_fixpoint_and_none_means_no_change():
    x = tvar("x")
    double_neg = Rule(
        is_op("negative")(is_op("negative")(wildcard().named("a"))), lambda a: a, "double_neg"
    )
    never = Rule(is_op("negative")(wildcard()), lambda: None, "never")
    e = call("add", _neg_chain(x, 5), const(np.zeros((2, 3), F32)))
    result = rewrite(never + double_neg, e)
    assert_structural_equal(result, call("add", call("negative", x), e.args[1]))
    assert rewrite(never, e) is e


def test_rewrite_needs_several_sweeps():
    # x + 0 -> x exposes negative(negative(x)) only after the parent was visited
    x = tvar("x")
    zero = const(np.zeros((2, 3), F32))

    @rule(is_op("add")(wildcard().named("a"), is_constant().named("c")))
    def add_zero(a, c):
        return a if not np.any(c.data) else None

    @rule(is_op("negative")(wildcard().named("a")))
    def neg_of_neg(a):
        return a.args[0] if isinstance(a, Call) and a.op is get_op("negative") else None

    e = call("negative", call("add", call("negative", x), zero))
    result, records = rewrite(add_zero + neg_of_neg, e, trace=True)
    assert result is x
    assert [(r.rule, r.iteration) for r in records] == [("add_zero", 0), ("neg_of_neg", 0)]


def test_rewrite_uses_types_each_sweep():
    x = tvar("x")
    same_cast = Rule(
        is_op("cast")(wildcard().named("a").has_dtype(F32)).has_attr({"dtype": F32}),
        lambda a: a,
        "same_cast",
    )
    inner = call("cast", call("cast", x, dtype=F32), dtype=F32)
    f = Function([x], call("cast", inner, dtype="int32"))
    result = rewrite(same_cast, f)
    assert_structural_equal(result, Function([x], call("cast", x, dtype="int32")))
    g = Function([x], call("cast", call("cast", x, dtype="int32"), dtype=F32))
    assert rewrite(same_cast, g) is g


def test_rewrite_budget_overrun_names_the_rule():
    x, y = tvar("x"), tvar("y")
    commute = Rule(
        is_op("add")(wildcard().named("a"), wildcard().named("b")),
        lambda a, b: call("add", b, a),
        "commute",
    )
    harmless = Rule(is_op("exp")(wildcard()), lambda: None, "harmless")
    with pytest.raises(RewriteBudgetError) as info:
        rewrite(harmless + commute, call("add", x, y), max_iterations=4)
    assert "commute" in str(info.value)
    assert "harmless" not in str(info.value)
    assert "4 iterations" in str(info.value)


def test_trace_records_rule_before_after():
    x = tvar("x")
    drop_neg = Rule(is_op("negative")(wildcard().named("a")), lambda a: a, "drop_neg")
    e = call("exp", call("negative", x))
    result, records = rewrite(drop_neg, e, trace=True)
    assert_structural_equal(result, call("exp", x))
    assert len(records) == 1
    assert records[0].rule == "drop_neg" and records[0].before is e.args[0]
    assert records[0].after is x and records[0].iteration == 0


def test_rule_sets_combine():
    r1 = Rule(wildcard(), lambda: None, "a")
    r2 = Rule(wildcard(), lambda: None, "b")
    r3 = Rule(wildcard(), lambda: None, "c")
    combined = (r1 + r2) + (RuleSet([r3]) + r1)
    assert [r.name for r in combined] == ["a", "b", "c", "a"]


def test_rewrite_module():
    x = tvar("x")
    mod = IRModule.from_expr(Function([x], call("negative", call("negative", x))))
    rules = Rule(is_op("negative")(is_op("negative")(wildcard().named("a"))), lambda a: a)
    out = rewrite(rules, mod)
    assert isinstance(out, IRModule)
    assert out["main"].body is out["main"].params[0]


def test_style_example_fold_scale_into_conv_weights():
    fold = Rule(
        is_op("multiply")(
            is_op("nn.conv2d")(wildcard().named("x"), is_constant().named("w")).named("conv"),
            is_constant().named("s").has_shape((4, 1, 1)),
        ),
        lambda x, w, conv, s: Call(
            conv.op, (x, const(w.data * s.data.reshape(-1, 1, 1, 1))), conv.attrs
        ),
        "fold_scale_into_conv",
    )
    rng = np.random.default_rng(0)
    x = tvar("x", (1, 3, 6, 6))
    w = const(rng.standard_normal((4, 3, 3, 3)).astype(F32))
    s = const(rng.standard_normal((4, 1, 1)).astype(F32))
    mod = IRModule.from_expr(Function([x], call("multiply", call("nn.conv2d", x, w), s)))
    out = rewrite(fold, mod)
    assert out["main"].body.op is get_op("nn.conv2d")
    data = rng.standard_normal((1, 3, 6, 6)).astype(F32)
    np.testing.assert_allclose(interpret(out, x=data), interpret(mod, x=data), rtol=1e-5, atol=1e-5)


def test_deep_let_chain_rewrite():
    n = 100_000
    x = tvar("x")
    zero = const(np.zeros((2, 3), F32))
    variables = [Var(f"v{i}") for i in range(n)]
    body: object = variables[-1]
    for i in reversed(range(n)):
        previous = variables[i - 1] if i else x
        body = Let(variables[i], call("add", previous, zero), body)
    add_zero = Rule(is_op("add")(wildcard().named("a"), is_expr(zero)), lambda a: a)
    out = rewrite(add_zero, body)
    count = 0
    node = out
    while isinstance(node, Let):
        assert isinstance(node.value, Var)
        count += 1
        node = node.body
    assert count == n
    assert match(is_op("add")(wildcard(), wildcard()), out) is None


def test_deep_nested_call_match_and_rewrite():
    x = tvar("x")
    e = _neg_chain(x, 10_000)
    assert match(is_op("negative")(is_op("negative")(wildcard())), e) is not None
    double_neg = Rule(is_op("negative")(is_op("negative")(wildcard().named("a"))), lambda a: a)
    assert rewrite(double_neg, e) is x


# ------------------------------------------------------------------ partition


def test_partition_golden():
    x = tvar("x", (1, 3, 4, 4))
    w1 = const(np.ones((3, 3, 1, 1), F32))
    w2 = const(np.full((3, 3, 1, 1), 2.0, F32))
    conv1 = call("nn.conv2d", x, w1)
    relu1 = call("nn.relu", conv1)
    conv2 = call("nn.conv2d", relu1, w2)
    source = Function([x], call("exp", conv2))
    pattern = is_op("nn.conv2d")(wildcard(), is_constant()).optional(lambda p: is_op("nn.relu")(p))
    out = partition(pattern, source, {"Composite": "conv_relu"})

    def group(with_relu):
        a, b = Var("FunctionVar_0"), Var("FunctionVar_1")
        conv = call("nn.conv2d", a, b)
        name = "nn.conv2d_nn.relu_" if with_relu else "nn.conv2d_"
        attrs = {"Composite": "conv_relu", "PartitionedFromPattern": name}
        return Function(
            [a, b], call("nn.relu", conv) if with_relu else conv, attrs=FuncAttrs(attrs)
        )

    first = Call(group(True), (x, w1))
    expected = Function([x], call("exp", Call(group(False), (first, w2))))
    assert_structural_equal(out, expected)
    data = np.random.default_rng(1).standard_normal((1, 3, 4, 4)).astype(F32)
    np.testing.assert_allclose(
        interpret(IRModule.from_expr(out), x=data),
        interpret(IRModule.from_expr(source), x=data),
        rtol=1e-6,
    )


def test_partition_skips_matches_whose_inner_nodes_escape():
    x = tvar("x")
    neg = call("negative", x)
    e = Tuple([call("exp", neg), neg])
    pattern = is_op("exp")(is_op("negative")(wildcard()))
    assert partition(pattern, e, {"Composite": "c"}) is e
    single = Tuple([call("exp", call("negative", x))])
    out = partition(pattern, single, {"Composite": "c"})
    assert isinstance(out.fields[0], Call) and isinstance(out.fields[0].op, Function)
    assert out.fields[0].op.attrs.get("Composite") == "c"
    assert out.fields[0].args == (x,)


def test_operator_pattern_kind_attribute():
    x = tvar("x")
    elementwise = wildcard().has_attr({"TOpPattern": int(OpPattern.ELEMWISE)})(wildcard())
    assert match(elementwise, call("exp", x)) is not None
    assert match(elementwise, call("sum", x)) is None


def test_partition_deep_let_chain():
    n = 10_000
    x = tvar("x")
    one = const(np.ones((2, 3), F32))
    variables = [Var(f"v{i}") for i in range(n)]
    body: object = variables[-1]
    for i in reversed(range(n)):
        body = Let(variables[i], call("add", variables[i - 1] if i else x, one), body)
    out = partition(is_op("add")(wildcard(), is_constant()), body, {"Composite": "add_c"})
    count = 0
    node = out
    while isinstance(node, Let):
        value = node.value
        assert isinstance(value, Call) and isinstance(value.op, Function)
        assert value.op.attrs.get("Composite") == "add_c"
        count += 1
        node = node.body
    assert count == n


# ------------------------------------------------------------------ reprs


def test_patterns_print_as_pattern_text():
    conv = is_op("nn.conv2d")(wildcard().named("x"), is_constant().named("w"))
    relu = conv.optional(lambda p: is_op("nn.relu")(p))
    assert repr(conv) == 'is_op("nn.conv2d")(wildcard().named("x"), is_constant().named("w"))'
    assert str(relu) == f'is_op("nn.relu")({conv!r}) | {conv!r}'
    assert repr(relu.named("r")) == f'({relu!r}).named("r")'
    assert repr(is_tuple_get_item(is_tuple([is_var("a"), wildcard()]), 0)) == (
        'is_tuple_get_item(is_tuple([is_var("a"), wildcard()]), 0)'
    )
    typed = wildcard().has_type(TensorType((2, 3), F32)).has_dtype(F32).has_shape((2, 3))
    assert repr(typed) == (
        'wildcard().has_type("Tensor[(2, 3), float32]").has_dtype("float32").has_shape((2, 3))'
    )
    assert repr(dominates(wildcard(), is_op("exp")(wildcard()), wildcard())) == (
        'dominates(wildcard(), is_op("exp")(wildcard()), wildcard())'
    )
    assert repr(is_expr(tvar("k"))) == 'is_expr("%k: Tensor[(2, 3), float32]")'


def test_match_repr_is_short():
    x = tvar("x")
    e = call("nn.relu", call("exp", x))
    found = match(is_op("nn.relu")(wildcard().named("y")), e)
    assert (
        repr(found)
        == "Match(nn.relu(exp(...)), captures {y=exp(%x)}, inputs [exp(%x)], 1 region nodes)"
    )
