"""`explain`: where and why a pattern does not match; pattern text; the driver's misses."""

import pytest
from relay.lang import (
    Call,
    Function,
    IRModule,
    TensorType,
    Tuple,
    TupleGetItem,
    Var,
    const,
    get_op,
)
from relay.passes.pattern import (
    Rule,
    apply_rules,
    dominates,
    explain,
    explain_report,
    is_constant,
    is_expr,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    match,
    pattern_text,
    wildcard,
)
from relay.pattern_text import PatternSyntaxError, parse_pattern

F32 = "float32"
T23 = "Tensor[(2, 3), float32]"


def call(name, *args, **attrs):
    op = get_op(name)
    return Call(op, args, op.make_attrs(**attrs))


def tvar(name, shape=(2, 3), dtype=F32):
    return Var(name, TensorType(shape, dtype))


X, Y = tvar("x"), tvar("y")


def why(pattern, expr):
    """The explanation's failure as text (the pattern must not match)."""
    found = explain(pattern, expr)
    assert not found.matched and match(pattern, expr) is None
    return str(found.failure)


# ------------------------------------------------------------------ reasons


def test_constant_expected_names_the_argument_and_its_type():
    text = why(is_op("multiply")(wildcard(), is_constant()), call("multiply", X, Y))
    assert text == f"arg 1: expected a constant, found %y: {T23}"
    assert str(explain(is_op("multiply")(wildcard(), is_constant()), call("multiply", X, Y))) == (
        f"no match at multiply(%x, %y): arg 1: expected a constant, found %y: {T23}"
    )


def test_operator_and_arity():
    assert why(is_op("add")(wildcard(), wildcard()), call("multiply", X, Y)) == (
        "callee: expected operator add, found operator multiply"
    )
    assert why(is_op("negative")(wildcard(), wildcard()), call("negative", X)) == (
        f"expected a call with 2 arguments, found negative(%x): {T23} with 1"
    )
    assert why(is_op("negative")(wildcard()), X) == f"expected a call, found %x: {T23}"


def test_nested_path():
    e = call("nn.relu", call("negative", X))
    assert why(is_op("nn.relu")(is_op("exp")(wildcard())), e) == (
        "arg 0 > callee: expected operator exp, found operator negative"
    )


def test_variables_constants_and_exact_expressions():
    assert why(is_var(), const(1.0)) == "expected a variable, found 1f"
    assert why(is_var("y"), X) == f"expected variable %y, found %x: {T23}"
    assert why(is_expr(Y), X) == f"expected exactly %y: {T23}, found %x: {T23}"


def test_tuples_and_projections():
    assert why(is_tuple([wildcard()]), Tuple([X, Y])).startswith(
        "expected a tuple of 1 field, found (%x, %y)"
    )
    assert why(is_tuple([wildcard()]), X).startswith("expected a tuple, found %x")
    got = TupleGetItem(Tuple([X, Y]), 0)
    assert why(is_tuple_get_item(wildcard(), 1), got).startswith("expected projection .1")
    assert why(is_tuple_get_item(is_tuple([is_constant(), wildcard()])), got) == (
        f"tuple > field 0: expected a constant, found %x: {T23}"
    )


def test_attribute_value_and_missing_attribute():
    e = call("sum", X, axis=[0])
    assert why(is_op("sum")(wildcard()).has_attr({"axis": [1]}), e) == (
        "expected attribute axis=[1], found axis=[0] on sum(%x): Tensor[(3), float32]"
    )
    assert "without nope" in why(is_op("sum")(wildcard()).has_attr({"nope": 1}), e)


def test_type_dtype_and_shape_constraints_print_types_as_text():
    e = call("negative", X)
    assert why(wildcard().has_dtype("int32"), e) == (
        f"expected dtype int32, found negative(%x): {T23}"
    )
    assert why(wildcard().has_shape((3,)), e) == f"expected shape (3), found negative(%x): {T23}"
    assert why(wildcard().has_type(TensorType((2,), F32)), e) == (
        f"expected type Tensor[(2), float32], found negative(%x): {T23}"
    )
    pair = Tuple([X, X])
    assert why(wildcard().has_dtype(F32), pair) == (
        f"expected a tensor (dtype float32), found (%x, %x): ({T23}, {T23})"
    )


def test_alternatives_give_both_reasons():
    p = is_op("multiply")(wildcard(), is_constant()) | is_op("multiply")(is_constant(), wildcard())
    found = explain(p, call("multiply", X, Y))
    assert found.failure.kind == "alternatives"
    left, right = found.failure.causes
    assert str(left) == f"arg 1: expected a constant, found %y: {T23}"
    assert str(right) == f"arg 0: expected a constant, found %x: {T23}"
    assert str(found).splitlines()[1:] == [
        "  no alternative matched",
        f"    - arg 1: expected a constant, found %y: {T23}",
        f"    - arg 0: expected a constant, found %x: {T23}",
    ]


def test_shared_patterns_and_repeated_captures():
    same = wildcard()
    e = call("add", X, call("exp", X))
    assert why(is_op("add")(same, same), e).startswith(
        f"arg 1: expected the node this pattern matched before, %x: {T23}, found exp(%x)"
    )
    named = is_op("add")(wildcard().named("a"), wildcard().named("a"))
    assert why(named, e).startswith('arg 1: expected "a" to be the node it captured before')


def test_dominator_reasons():
    top = call("exp", X)
    diamond = call("add", call("nn.relu", top), call("tanh", top))
    child = is_op("add")(wildcard(), wildcard())
    found = explain(
        dominates(is_op("exp")(wildcard()), is_op("nn.relu")(wildcard()), child), diamond
    )
    assert found.failure.kind == "path"
    assert "tanh(exp(...))" in found.failure.message
    assert str(found.failure.causes[0]) == "callee: expected operator nn.relu, found operator tanh"
    no_parent = explain(dominates(is_op("negative")(wildcard()), wildcard(), child), diamond)
    assert no_parent.failure.kind == "path_leaf"
    assert explain(dominates(is_op("exp")(wildcard()), wildcard(), child), diamond).matched


def test_escaping_path_node():
    top = call("exp", X)
    inner = call("nn.relu", top)
    out = call("add", inner, call("tanh", top))
    root = Tuple([out, inner])
    p = dominates(is_op("exp")(wildcard()), wildcard(), is_op("add")(wildcard(), wildcard()))
    from relay.passes.pattern import ExplainingMatcher
    from relay.passes.pattern.matcher import consumers

    found = ExplainingMatcher(None, lambda: consumers(root)).explain(p, out)
    assert found.failure.kind == "escapes"
    assert "outside the region" in found.failure.message


def test_explanation_agrees_with_match_on_success():
    p = is_op("add")(wildcard().named("a"), is_constant())
    e = call("add", X, const(1.0))
    found = explain(p, e)
    assert found.matched and found.failure is None
    assert found.match.captures == {"a": X}
    assert str(found) == "matched add(%x, 1f)"
    assert p.explain(e).matched


# ------------------------------------------------------------------ pattern text


@pytest.mark.parametrize(
    "text",
    [
        'is_op("nn.conv2d")(wildcard().named("x"), is_constant()) | wildcard()',
        'is_tuple_get_item(is_tuple([is_var("x"), wildcard()]), 1).has_shape((2, 3))',
        'wildcard().has_type("Tensor[(2, 3), float32]").has_dtype("float32")',
        'is_op("sum")(wildcard()).has_attr({"axis": [1], "keepdims": False})',
        'dominates(is_op("exp")(wildcard()), wildcard(), is_op("add")(wildcard(), wildcard()))',
        '(is_op("exp") | is_op("tanh"))(wildcard()).named("u")',
        "wildcard() | (is_constant() | is_var())",
    ],
)
def test_pattern_text_round_trips(text):
    p = parse_pattern(text)
    assert pattern_text(p) == text
    assert repr(parse_pattern(repr(p))) == repr(p)


def test_parsed_pattern_matches_like_the_built_one():
    p = parse_pattern('is_op("multiply")(wildcard().named("x"), is_constant())')
    assert match(p, call("multiply", X, const(2.0))).captures == {"x": X}
    assert match(p, call("multiply", X, Y)) is None


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ('is_op("add")(wildcard(), foo())', "unknown pattern function 'foo'", 26),
        ('is_op("add"', "invalid pattern text", 6),
        ("wildcard().frob(1)", "unknown pattern method .frob()", 1),
        ('wildcard().has_type("Tensor[(2,")', "not a type", 21),
        ("wildcard().named(x)", "expected a literal", 18),
        ("1 + 2", "expected a pattern", 1),
        ('  is_op("add")(wildcard(), bar())', "unknown pattern function 'bar'", 28),
    ],
)
def test_pattern_text_errors_point_into_the_text(text, message, column):
    with pytest.raises(PatternSyntaxError) as info:
        parse_pattern(text)
    assert message in info.value.message
    assert info.value.span.column == column
    assert "^" in info.value.render()


def test_explain_report_on_a_module():
    x = tvar("x")
    body = call("add", call("multiply", x, const(2.0)), call("multiply", x, x))
    mod = IRModule.from_expr(Function([x], body))
    report = explain_report(parse_pattern('is_op("multiply")(wildcard(), is_constant())'), mod)
    lines = report.splitlines()
    assert lines[0] == 'pattern: is_op("multiply")(wildcard(), is_constant())'
    assert lines[1] == "2 candidate nodes, 1 matched"
    assert "@main: matched multiply(%x, 2f)" in lines
    assert f"@main: no match at multiply(%x, %x): arg 1: expected a constant, found %x: {T23}" in (
        lines
    )
    assert "no node can match" in explain_report(parse_pattern('is_op("exp")(wildcard())'), mod)


# ------------------------------------------------------------------ the driver


def test_driver_records_why_rules_did_not_fire():
    x = tvar("x")
    e = call("add", call("multiply", x, x), const(1.0))
    fold = Rule(is_op("multiply")(wildcard(), is_constant()), lambda: None, "fold")
    never = Rule(is_op("add")(wildcard().named("a"), wildcard()), lambda a: None, "never")
    misses = []
    assert apply_rules(fold + never, e, misses=misses) is e
    texts = [str(m) for m in misses]
    assert texts == [
        "rule 'fold' (sweep 0): no match at multiply(%x, %x): arg 1: expected a constant, "
        f"found %x: {T23}",
        "rule 'never' (sweep 0): matched add(multiply(...), 1f), but the callback made no change",
    ]
    assert misses[0].explanation.failure.path == ("arg 1",)


def test_driver_explains_nothing_unless_asked(monkeypatch):
    from relay.passes.pattern import ExplainingMatcher

    def boom(*args, **kwargs):
        raise AssertionError("explanations computed without being asked for")

    monkeypatch.setattr(ExplainingMatcher, "explain", boom)
    e = call("add", call("multiply", X, X), const(1.0))
    rule = Rule(is_op("multiply")(wildcard(), is_constant()), lambda: None)
    assert apply_rules(rule, e) is e
    with pytest.raises(AssertionError, match="without being asked"):
        apply_rules(rule, e, misses=[])
