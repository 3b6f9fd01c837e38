"""`dce`: unused pure let bindings go (chains at once), effects and used ones stay."""

import relay
from relay.lang import Let, Var, let_chain
from relay.lang.expr import Call, Function
from relay.lang.op import get_op
from relay.lang.structural import assert_structural_equal
from relay.lang.types import TensorType
from relay.passes import PassContext, dce_expr, get_pass, parse_pipeline
from relay.testing import check_pass, functional_programs
from relay.typecheck import check_module

HEADER = '#[version = "0.0.5"]\n'


def run_dce(text, options=""):
    mod = relay.parse(HEADER + text)
    with PassContext(opt_level=3):
        return parse_pipeline("dce" + options)(mod)


def expect(text):
    return relay.parse(HEADER + text)


def test_dead_chain_goes_in_one_pass():
    before = """def @main(%x: float32) {
  let %a = add(%x, %x);
  let %b = multiply(%a, %a);
  let %c = subtract(%x, %x);
  %c
}"""
    after = """def @main(%x: float32) {
  let %c = subtract(%x, %x);
  %c
}"""
    assert_structural_equal(run_dce(before)["main"], expect(after)["main"])


def test_used_bindings_stay():
    text = """def @main(%x: float32) {
  let %a = add(%x, %x);
  let %b = multiply(%a, %a);
  %b
}"""
    assert_structural_equal(run_dce(text)["main"], expect(text)["main"])


def test_dead_binding_inside_closure_and_branch():
    before = """def @main(%x: float32, %c: bool) {
  let %f = fn (%y: float32) {
    let %dead = exp(%y);
    %y
  };
  if (%c) {
    let %d2 = negative(%x);
    %f(%x)
  } else {
    %x
  }
}"""
    after = """def @main(%x: float32, %c: bool) {
  let %f = fn (%y: float32) {
    %y
  };
  if (%c) {
    %f(%x)
  } else {
    %x
  }
}"""
    assert_structural_equal(run_dce(before)["main"], expect(after)["main"])


EFFECTFUL = """def @main(%x: float32) {
  let %r = ref(%x);
  let %w = ref_write(%r, add(%x, %x));
  let %f = fn (%y: float32) { %y };
  let %call = %f(%x);
  let %dead = exp(%x);
  ref_read(%r)
}"""

EFFECTFUL_KEPT = """def @main(%x: float32) {
  let %r = ref(%x);
  let %w = ref_write(%r, add(%x, %x));
  let %f = fn (%y: float32) { %y };
  let %call = %f(%x);
  ref_read(%r)
}"""


def test_effects_are_kept_unless_impurity_is_ignored():
    assert_structural_equal(run_dce(EFFECTFUL)["main"], expect(EFFECTFUL_KEPT)["main"])
    forced = run_dce(EFFECTFUL, "{ignore-impurity=true}")
    after = """def @main(%x: float32) {
  let %r = ref(%x);
  ref_read(%r)
}"""
    assert_structural_equal(forced["main"], expect(after)["main"])
    check_module(forced)


def test_graph_form_is_unchanged():
    mod = relay.parse(HEADER + "def @main(%x: float32) { add(%x, %x) }")
    assert dce_expr(mod["main"]) is mod["main"]


def test_pass_registration():
    p = get_pass("dce")
    assert p.opt_level == 1
    assert str(p.with_options(ignore_impurity=True)) == "dce{ignore-impurity=true}"


def test_long_chain_is_iterative():
    x = Var("x", TensorType((), "float32"))
    add = get_op("add")
    bindings = []
    prev = x
    for i in range(100_000):
        v = Var(f"v{i}")
        bindings.append((v, Call(add, (prev, x))))
        prev = v
    # every binding but the first is dead: the body uses only v0
    body = let_chain(bindings, bindings[0][0])
    out = dce_expr(Function((x,), body))
    assert isinstance(out, Function)
    assert isinstance(out.body, Let) and out.body.var is bindings[0][0]
    assert out.body.body is bindings[0][0]
    # a fully live chain is returned as is
    live = Function((x,), let_chain(bindings[:1000], bindings[999][0]))
    assert dce_expr(live) is live


def test_property_dataflow_programs():
    check_pass(get_pass("dce"), ops=["add", "multiply", "exp"], idempotent=True)


def test_property_functional_programs():
    check_pass(get_pass("dce"), functional_programs(), idempotent=True)
