"""`to-anf` and `to-graph-normal-form`: golden conversions, normal-form checks, same values."""

import relay
from relay.lang import Call, Let, Var, get_op
from relay.lang.expr import Function
from relay.lang.module import IRModule
from relay.lang.structural import assert_structural_equal
from relay.passes import (
    PassContext,
    normal_form_problem,
    parse_pipeline,
    to_anf_pass,
    to_graph_normal_form_pass,
)
from relay.testing import check_pass, dataflow_programs, functional_programs
from relay.typecheck import check_module

HEADER = '#[version = "0.0.5"]\n'


def parse(text):
    return relay.parse(HEADER + text)


def assert_converts(convert, before, after):
    assert_structural_equal(convert(parse(before)), parse(after))


def test_anf_binds_in_evaluation_order_and_hoists_shared_nodes_to_the_dominating_scope():
    assert_converts(
        to_anf_pass,
        """
def @main(%x: Tensor[(2), float32], %c: bool) {
  %0 = add(%x, %x);
  if (%c) { multiply(%0, %0) } else { %0 }
}
""",
        """
def @main(%x: Tensor[(2), float32], %c: bool) {
  let %a = add(%x, %x);
  let %b = if (%c) { let %m = multiply(%a, %a); %m } else { %a };
  %b
}
""",
    )


def test_anf_binds_a_node_shared_by_both_branches_before_the_if():
    assert_converts(
        to_anf_pass,
        """
def @main(%x: Tensor[(2), float32], %c: bool) {
  %0 = exp(%x);
  if (%c) { negative(%0) } else { abs(%0) }
}
""",
        """
def @main(%x: Tensor[(2), float32], %c: bool) {
  let %e = exp(%x);
  let %r = if (%c) { let %n = negative(%e); %n } else { let %a = abs(%e); %a };
  %r
}
""",
    )


def test_anf_keeps_a_node_used_only_in_one_branch_inside_it():
    assert_converts(
        to_anf_pass,
        """
def @main(%x: Tensor[(2), float32], %c: bool) {
  if (%c) { %0 = exp(%x); add(%0, %0) } else { %x }
}
""",
        """
def @main(%x: Tensor[(2), float32], %c: bool) {
  let %r = if (%c) { let %e = exp(%x); let %s = add(%e, %e); %s } else { %x };
  %r
}
""",
    )


def test_anf_reuses_let_variables_and_converts_function_bodies():
    assert_converts(
        to_anf_pass,
        """
def @main(%x: Tensor[(2), float32]) {
  let %f = fn (%y: Tensor[(2), float32]) { add(exp(%y), %x) };
  let %v = %f(negative(%x));
  (%v, %v)
}
""",
        """
def @main(%x: Tensor[(2), float32]) {
  let %f = fn (%y: Tensor[(2), float32]) { let %e = exp(%y); let %s = add(%e, %x); %s };
  let %n = negative(%x);
  let %v = %f(%n);
  let %t = (%v, %v);
  %t
}
""",
    )


def test_anf_keeps_a_recursive_function_bound_to_its_own_variable():
    text = """
def @main(%n: int32) -> int32 {
  let %loop = fn (%i: int32) -> int32 {
    if (less(%i, 10)) { %loop(add(%i, 1)) } else { %i }
  };
  %loop(%n)
}
"""
    out = to_anf_pass(parse(text))
    assert normal_form_problem(out, "anf") is None
    check_module(out)
    body = out["main"].body
    assert isinstance(body, Let) and isinstance(body.value, Function)
    assert relay.backend.runtime.interpret(out, n=3) == 10


def test_graph_form_inlines_pure_lets_and_keeps_effects():
    assert_converts(
        to_graph_normal_form_pass,
        """
def @main(%x: Tensor[(2), float32]) {
  let %a = add(%x, %x);
  let %r = ref(%a);
  multiply(%a, %a)
}
""",
        """
def @main(%x: Tensor[(2), float32]) {
  %0 = add(%x, %x);
  let %r = ref(%0);
  multiply(%0, %0)
}
""",
    )


def test_graph_form_keeps_closure_calls_and_recursive_functions():
    text = """
def @main(%n: int32) -> int32 {
  let %loop = fn (%i: int32) -> int32 {
    if (less(%i, 10)) { %loop(add(%i, 1)) } else { %i }
  };
  let %k = add(%n, 1);
  let %v = %loop(%k);
  multiply(%v, 2)
}
"""
    expected = """
def @main(%n: int32) -> int32 {
  let %loop = fn (%i: int32) -> int32 {
    if (less(%i, 10)) { %loop(add(%i, 1)) } else { %i }
  };
  let %v = %loop(add(%n, 1));
  multiply(%v, 2)
}
"""
    assert_converts(to_graph_normal_form_pass, text, expected)


def test_anf_then_graph_gives_back_a_dataflow_program():
    text = """
def @main(%x: Tensor[(2), float32], %y: Tensor[(2), float32]) {
  %0 = add(%x, %y);
  %1 = exp(%0);
  %2 = (%1, %0);
  %3 = %2.0;
  multiply(%3, %1)
}
"""
    mod = parse(text)
    anf = to_anf_pass(mod)
    assert normal_form_problem(anf, "anf") is None
    assert normal_form_problem(mod, "anf") is not None
    assert_structural_equal(to_graph_normal_form_pass(anf), mod)


def test_passes_are_registered_with_their_normal_forms():
    pipeline = parse_pipeline("to-anf,to-graph-normal-form")
    mod = parse("def @main(%x: float32) { add(exp(%x), %x) }")
    with PassContext(opt_level=1):
        out = pipeline(mod)
    assert_structural_equal(out, mod)
    assert relay.passes.get_pass("to-anf").produces == "anf"


def _to_anf_checked(mod):
    out = to_anf_pass(mod)
    problem = normal_form_problem(out, "anf")
    assert problem is None, problem
    return out


def _round_trip_checked(mod):
    out = to_graph_normal_form_pass(_to_anf_checked(mod))
    problem = normal_form_problem(out, "graph")
    assert problem is None, problem
    assert_structural_equal(out, mod)
    return out


def test_anf_keeps_values_on_dataflow_programs():
    check_pass(_to_anf_checked, max_examples=30, idempotent=True)


def test_anf_keeps_values_on_functional_programs():
    check_pass(_to_anf_checked, functional_programs(), max_examples=30, idempotent=True)


def test_anf_then_graph_is_the_identity_on_dataflow_programs():
    check_pass(_round_trip_checked, dataflow_programs(), max_examples=30)


def test_graph_keeps_values_on_functional_programs():
    check_pass(
        lambda m: to_graph_normal_form_pass(to_anf_pass(m)), functional_programs(), max_examples=30
    )
    check_pass(to_graph_normal_form_pass, functional_programs(), max_examples=30, idempotent=True)


def _chain(length):
    x = Var("x", relay.lang.TensorType((), "float32"))
    add = get_op("add")
    vars_ = [Var(f"v{i}") for i in range(length)]
    body = vars_[-1]
    for i in reversed(range(length)):
        prev = x if i == 0 else vars_[i - 1]
        body = Let(vars_[i], Call(add, (prev, x)), body)
    return IRModule.from_expr(Function((x,), body))


def test_a_deep_chain_goes_through_to_anf():
    mod = _chain(100_000)
    anf = to_anf_pass(mod)
    assert normal_form_problem(anf, "anf") is None
    assert isinstance(anf["main"].body, Let)


def test_a_deep_chain_goes_through_to_graph():
    graph = to_graph_normal_form_pass(_chain(100_000))
    assert normal_form_problem(graph, "graph") is None
    assert isinstance(graph["main"].body, Call)


def test_anf_and_graph_keep_values_of_fused_programs():
    from relay.passes import fuse_ops_pass

    def transform(mod):
        anf = _to_anf_checked(fuse_ops_pass(mod))
        return to_graph_normal_form_pass(anf)

    check_pass(transform, dataflow_programs(), max_examples=15)
