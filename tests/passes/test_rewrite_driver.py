"""The rewrite driver (`pattern.apply_rules`) and rules as data (`pattern.rules`)."""

import sys

import numpy as np
import pytest
from relay.lang import (
    Call,
    Constant,
    Function,
    Let,
    TensorType,
    Var,
    assert_structural_equal,
    const,
    get_op,
    post_order,
)
from relay.passes.pattern import (
    RewriteBudgetError,
    Rule,
    apply_rules,
    is_constant,
    is_op,
    wildcard,
)
from relay.passes.pattern.rules import RuleIndex, trivial_capture

F32 = "float32"


def call(name, *args, **attrs):
    op = get_op(name)
    return Call(op, args, op.make_attrs(**attrs))


def tvar(name, shape=(2, 3)):
    return Var(name, TensorType(shape, F32))


def _negs(e, n):
    for _ in range(n):
        e = call("negative", e)
    return e


# ------------------------------------------------------------------ rules


def test_rule_knows_whether_its_callback_wants_the_context():
    assert Rule(wildcard(), lambda: None).wants_ctx is False
    assert Rule(wildcard(), lambda ctx: None).wants_ctx is True


def test_trivial_capture_only_for_wildcards():
    assert trivial_capture(wildcard()) == ""
    assert trivial_capture(wildcard().named("n")) == "n"
    assert trivial_capture(is_op("exp")(wildcard())) is None
    assert trivial_capture(is_constant().named("c")) is None


def test_rule_index_tries_only_rules_that_can_fire():
    x = tvar("x")
    on_exp = Rule(is_op("exp")(wildcard()), lambda: None, "on_exp")
    anywhere = Rule(wildcard().named("n"), lambda n: None, "anywhere")
    index = RuleIndex([on_exp, anywhere])
    assert [(r.name, t) for r, t in index.at(call("exp", x))] == [
        ("on_exp", None),
        ("anywhere", "n"),
    ]
    assert [r.name for r, _ in index.at(call("negative", x))] == ["anywhere"]
    assert [r.name for r, _ in index.at(x)] == ["anywhere"]


# ------------------------------------------------------------------ orders


def test_top_down_sees_the_parent_before_its_children():
    # neg(neg(neg(neg(x)))): top-down removes pairs from the top, bottom-up from the bottom;
    # either way one sweep with settling reaches x
    x = tvar("x")
    pair = Rule(is_op("negative")(is_op("negative")(wildcard().named("a"))), lambda a: a, "pair")
    seen: list[int] = []

    def depth(e):
        n = 0
        while isinstance(e, Call):
            n, e = n + 1, e.args[0]
        return n

    def record(n):
        seen.append(depth(n))

    spy = Rule(is_op("negative")(wildcard()).named("n"), lambda n: record(n), "spy")
    e = _negs(x, 4)
    trace = []
    assert apply_rules(spy + pair, e, order="top-down", trace=trace) is x
    assert seen[0] == 4  # the outermost call was tried first
    seen.clear()
    assert apply_rules(spy + pair, e, order="bottom-up") is x
    assert seen[0] == 1  # the innermost call was tried first


def test_top_down_on_a_deep_chain_and_a_replacement_containing_the_node():
    x = tvar("x")
    e = _negs(x, 20_000)
    out = apply_rules(
        Rule(is_op("negative")(wildcard().named("a")), lambda a: call("exp", a), "to_exp"),
        e,
        order="top-down",
        fixpoint=False,
    )
    assert {n.op.name for n in post_order(out) if isinstance(n, Call)} == {"exp"}
    wrap = Rule(is_op("exp")(wildcard()).named("n"), lambda n: call("negative", n), "wrap")
    out = apply_rules(wrap, call("exp", x), order="top-down", fixpoint=False)
    assert_structural_equal(out, call("negative", call("exp", x)))


def test_unknown_order_is_refused():
    with pytest.raises(ValueError):
        apply_rules(Rule(wildcard(), lambda: None), tvar("x"), order="sideways")


# ------------------------------------------------------------------ settling and budgets


def test_settle_does_every_rewrite_in_one_sweep():
    x = tvar("x")
    drop = Rule(is_op("negative")(wildcard().named("a")), lambda a: a, "drop")
    to_neg = Rule(is_op("exp")(wildcard().named("a")), lambda a: call("negative", a), "to_neg")
    trace = []
    out = apply_rules(to_neg + drop, call("exp", call("exp", x)), settle=True, trace=trace)
    assert out is x
    assert {r.iteration for r in trace} == {0}
    trace = []
    assert apply_rules(to_neg + drop, call("exp", call("exp", x)), trace=trace) is x
    assert max(r.iteration for r in trace) > 0


def _commute():
    return Rule(
        is_op("add")(wildcard().named("a"), wildcard().named("b")),
        lambda a, b: call("add", b, a),
        "commute",
    )


def test_settling_budget_names_the_rules_that_kept_firing():
    x, y = tvar("x"), tvar("y")
    with pytest.raises(RewriteBudgetError) as info:
        apply_rules(_commute(), call("add", x, y), settle=True, max_sweeps=5)
    assert "commute" in str(info.value) and "5 rewrites" in str(info.value)


def test_one_sweep_without_fixpoint():
    x, y = tvar("x"), tvar("y")
    out = apply_rules(_commute(), call("add", x, y), fixpoint=False)
    assert out.args == (y, x)


def test_no_rule_fires_returns_the_input():
    x = tvar("x")
    e = call("exp", x)
    assert apply_rules(Rule(is_op("negative")(wildcard()), lambda: x), e) is e


# ------------------------------------------------------------------ the context


def test_context_gives_types_of_rebuilt_and_new_nodes():
    # x * 1 -> x needs the type of the (rebuilt) multiply and of x; every rebuilt node
    # above a rewrite keeps its type, so one sweep with settling does all of them
    x = tvar("x")
    body = x
    for _ in range(50):
        body = call("multiply", call("exp", body), const(np.float32(1)))

    def by_one(call_, a, c, ctx):
        return a if np.all(c.data == 1) and ctx.type_of(call_) == ctx.type_of(a) else None

    rules = Rule(
        is_op("multiply")(wildcard().named("a"), is_constant().named("c")).named("call_"),
        by_one,
        "by_one",
    )
    trace = []
    out = apply_rules(rules, Function([x], body), settle=True, trace=trace)
    assert len(trace) == 50 and {r.iteration for r in trace} == {0}
    assert {n.op.name for n in post_order(out) if isinstance(n, Call)} == {"exp"}


def test_context_original_and_rewritten():
    # a rule keyed by the input's nodes: the let values planned for replacement
    x = tvar("x")
    v = Var("v")
    value = call("exp", x)
    e = Let(v, value, call("negative", v))
    planned = {id(value)}

    def swap(n, ctx):
        if id(ctx.original) in planned:
            return call("sqrt", n.args[0])
        if isinstance(n, Let):
            assert ctx.rewritten(ctx.original.value).op is get_op("sqrt")
        return None

    out = apply_rules(Rule(wildcard().named("n"), swap, "swap"), e, fixpoint=False)
    assert out.value.op is get_op("sqrt")


def test_constants_typed_locally():
    # a replacement made of new nodes is typed from its children's types
    x = tvar("x")

    def fold(a, c, ctx):
        if isinstance(c, Constant) and ctx.type_of(a) is not None:
            return call("add", a, const(np.zeros((2, 3), F32)))
        return None

    def check(a, c, ctx):
        assert ctx.type_of(a) is not None
        return None

    rules = Rule(is_op("subtract")(wildcard().named("a"), is_constant().named("c")), fold) + Rule(
        is_op("add")(wildcard().named("a"), is_constant().named("c")), check
    )
    out = apply_rules(rules, Function([x], call("subtract", x, const(np.zeros((2, 3), F32)))))
    assert out.body.op is get_op("add")


def test_top_down_with_types_needed_midway():
    # types first asked for after some rewrites: the nodes rewritten before are typed too
    x = tvar("x")
    to_exp = Rule(is_op("negative")(wildcard().named("a")), lambda a: call("exp", a), "to_exp")

    def typed(n, ctx):
        assert ctx.type_of(n) is not None
        return None

    rules = to_exp + Rule(is_op("sqrt")(wildcard()).named("n"), typed, "typed")
    e = Function([x], call("sqrt", call("add", call("negative", x), call("negative", x))))
    out = apply_rules(rules, e, order="top-down", fixpoint=False)
    assert out.body.args[0].args[0].op is get_op("exp")
    e = Function([x], call("add", call("negative", x), call("sqrt", call("negative", x))))
    out = apply_rules(rules, e, order="top-down", fixpoint=False)
    assert out.body.args[0].op is get_op("exp")


def test_without_retyping_only_the_input_has_types():
    x = tvar("x")
    to_exp = Rule(is_op("negative")(wildcard().named("a")), lambda a: call("exp", a), "to_exp")
    seen = []

    def look(n, ctx):
        seen.append((ctx.type_of(n), ctx.type_of(ctx.original)))
        return None

    rules = to_exp + Rule(is_op("sqrt")(wildcard()).named("n"), look, "look")
    fn = Function([x], call("sqrt", call("negative", x)))
    apply_rules(rules, fn, retype=False, fixpoint=False)
    assert seen[0][0] is None and seen[0][1] is not None  # the rebuilt sqrt is untyped
    seen.clear()
    apply_rules(rules, fn, fixpoint=False)
    assert seen[0][0] is not None


# ------------------------------------------------------------------ signatures, types, reprs


def test_rule_checks_callback_parameters_against_captures():
    from relay.passes.pattern import RuleSignatureError, rule

    pattern = is_op("add")(wildcard().named("x"), is_constant().named("c"))
    with pytest.raises(RuleSignatureError, match="the pattern captures no 'y'"):
        Rule(pattern, lambda x, c, y: None)
    with pytest.raises(RuleSignatureError, match="no parameter for the capture 'c'"):

        @rule(pattern)
        def misspelt(x, const):
            return None

    with pytest.raises(RuleSignatureError, match="captured by some alternatives only"):
        Rule(pattern | is_op("add")(wildcard().named("x"), wildcard()), lambda x, c: None)
    with pytest.raises(RuleSignatureError, match="may not be named 'ctx'"):
        Rule(wildcard().named("ctx"), lambda ctx: None)
    # what is accepted: defaults for optional captures, **kwargs, ctx and types
    Rule(pattern | is_op("add")(wildcard().named("x"), wildcard()), lambda x, c=None: None)
    Rule(pattern, lambda **captures: None)
    both = Rule(pattern, lambda x, c, ctx, types: None)
    assert both.wants_ctx and both.wants_types
    assert isinstance(RuleSignatureError("m"), TypeError)


def test_types_argument_gives_capture_types_lazily(monkeypatch):
    x = tvar("x")
    e = call("add", call("negative", x), const(np.float32(1.0)))
    seen = {}

    def fold(a, c, types):
        seen["types"] = dict((name, types[name]) for name in types)
        return a

    out = apply_rules(Rule(is_op("add")(wildcard().named("a"), is_constant().named("c")), fold), e)
    assert isinstance(out, Call) and out.op.name == "negative"
    assert seen["types"] == {"a": TensorType((2, 3), F32), "c": TensorType((), F32)}

    # types are inferred only when the callback reads one
    rewrite_module = sys.modules["relay.passes.pattern.rewrite"]
    real = rewrite_module.infer_expr
    inferred = []

    def counting(*args, **kwargs):
        inferred.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(rewrite_module, "infer_expr", counting)
    ignores = Rule(is_op("add")(wildcard().named("a"), is_constant()), lambda a, types: a)
    apply_rules(ignores, e)
    assert inferred == []
    reads = Rule(
        is_op("add")(wildcard().named("a"), is_constant()), lambda a, types: types["a"] and a
    )
    apply_rules(reads, e)
    assert inferred == [1]


def test_rewrite_record_and_rule_reprs():
    x = tvar("x")
    e = call("negative", call("negative", x))
    r = Rule(is_op("negative")(is_op("negative")(wildcard().named("a"))), lambda a: a, "double_neg")
    trace = []
    apply_rules(r, e, trace=trace)
    assert (
        repr(trace[0])
        == "RewriteRecord('double_neg', sweep 0: negative(negative(...)) -> %x: Tensor[(2, 3), float32])"
    )
    assert (
        repr(r)
        == 'Rule(\'double_neg\', is_op("negative")(is_op("negative")(wildcard().named("a"))))'
    )
