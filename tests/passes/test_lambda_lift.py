"""`lambda-lift`: closures become globals; captured variables become leading parameters."""

import numpy as np
import relay
from relay.backend.runtime import interpret
from relay.lang import Call, Function, GlobalVar, IRModule, Let, TensorType, Var, get_op, post_order
from relay.lang.structural import assert_structural_equal
from relay.passes import PassContext, lambda_lift_pass, parse_pipeline, well_formed_problems
from relay.testing import check_pass, functional_programs
from relay.typecheck import check_module

HEADER = '#[version = "0.0.5"]\n'


def parse(text):
    return relay.parse(HEADER + text)


def closures(mod):
    """The non-primitive function literals left anywhere in `mod`."""
    return [
        node
        for fn in mod.functions.values()
        for node in post_order(fn.body)
        if isinstance(node, Function) and not node.is_primitive
    ]


def test_a_directly_called_closure_becomes_a_call_of_the_global():
    before = parse("""
def @main(%x: float32) -> float32 {
  let %f = fn (%y: float32) -> float32 { add(%x, %y) };
  %f(%x)
}
""")
    after = parse("""
def @main_lifted0(%x1: float32, %y: float32) -> float32 { add(%x1, %y) }
def @main(%x: float32) -> float32 { @main_lifted0(%x, %x) }
""")
    assert_structural_equal(lambda_lift_pass(before), after)


def test_a_recursive_closure_calls_its_global_and_an_escaping_one_becomes_a_global_value():
    before = parse("""
def @main(%n: int32, %k: int32) -> (int32, fn (int32) -> int32) {
  let %loop = fn (%i: int32) -> int32 {
    if (less(%i, %k)) { %loop(add(%i, 1)) } else { %i }
  };
  let %g = fn (%z: int32) -> int32 { %z };
  (%loop(%n), %g)
}
""")
    after = parse("""
def @main_lifted0(%k1: int32, %i: int32) -> int32 {
  if (less(%i, %k1)) { @main_lifted0(%k1, add(%i, 1)) } else { %i }
}
def @main_lifted1(%z: int32) -> int32 { %z }
def @main(%n: int32, %k: int32) -> (int32, fn (int32) -> int32) {
  let %g = @main_lifted1;
  (@main_lifted0(%k, %n), %g)
}
""")
    out = lambda_lift_pass(before)
    assert_structural_equal(out, after)
    assert interpret(out, n=1, k=5)[0] == 5


def test_an_escaping_capturing_closure_leaves_a_wrapper():
    before = parse("""
def @main(%x: float32) -> fn (float32) -> float32 {
  fn (%y: float32) -> float32 { multiply(%x, %y) }
}
""")
    after = parse("""
def @main_lifted0(%x1: float32, %y: float32) -> float32 { multiply(%x1, %y) }
def @main(%x: float32) -> fn (float32) -> float32 {
  fn (%y1: float32) -> float32 { @main_lifted0(%x, %y1) }
}
""")
    assert_structural_equal(lambda_lift_pass(before), after)


def test_nested_closures_are_lifted_innermost_first_and_keep_their_values():
    text = """
def @main(%x: float32, %y: float32) -> float32 {
  let %outer = fn (%a: float32) -> float32 {
    let %inner = fn (%b: float32) -> float32 { add(%a, multiply(%b, %x)) };
    %inner(%y)
  };
  %outer(%x)
}
"""
    before = parse(text)
    out = lambda_lift_pass(before)
    check_module(out)
    assert closures(out) == []
    assert len(out.functions) == 3
    inputs = {"x": relay.lang.const(2.0).data, "y": relay.lang.const(3.0).data}
    assert interpret(out, **inputs) == interpret(before, **inputs)


def test_an_escaping_recursive_closure_rebinds_itself_in_its_global():
    text = """
def @main(%k: int32) -> int32 {
  let %f = fn (%i: int32) -> int32 {
    let %self = %f;
    if (less(%i, %k)) { %self(add(%i, 1)) } else { %i }
  };
  let %h = %f;
  %h(0)
}
"""
    before = parse(text)
    out = lambda_lift_pass(before)
    check_module(out)
    assert interpret(out, k=4) == interpret(before, k=4) == 4


def test_primitive_functions_stay_in_place_and_the_pass_is_registered():
    before = parse("""
def @main(%x: float32) -> float32 {
  %0 = fn (%p: float32, Primitive=1) -> float32 { exp(%p) };
  %0(%x)
}
""")
    with PassContext(opt_level=1):
        out = parse_pipeline("lambda-lift")(before)
    assert_structural_equal(out, before)


def _only_wrappers_left(mod):
    out = lambda_lift_pass(mod)
    for node in closures(out):
        assert isinstance(node.body, Call) and isinstance(node.body.op, GlobalVar)
    return out


def test_lambda_lift_keeps_values_on_functional_programs():
    check_pass(_only_wrappers_left, functional_programs(), max_examples=60)


def test_lambda_lift_handles_a_deep_let_chain():
    x = Var("x", TensorType((), "float32"))
    add = get_op("add")
    f = Var("f")
    y = Var("y", TensorType((), "float32"))
    closure = Function((y,), Call(add, (x, y)))
    vars_ = [Var(f"v{i}") for i in range(100_000)]
    body = vars_[-1]
    for i in reversed(range(len(vars_))):
        prev = x if i == 0 else vars_[i - 1]
        body = Let(vars_[i], Call(f, (prev,)), body)
    mod = IRModule.from_expr(Function((x,), Let(f, closure, body)))
    out = lambda_lift_pass(mod)
    assert closures(out) == []
    assert len(out.functions) == 2


def test_a_closure_calling_a_lifted_closure_captures_what_that_one_captures():
    """Found by the fuzz campaign: `%g` calls `%f`, which captures `%r`; once `%f` is
    lifted, its calls pass `%r`, so `%g`'s global must receive `%r` too."""
    mod = parse(
        """
def @main(%x: Tensor[(2), float32]) {
  let %r = add(%x, %x);
  let %f = fn (%p: Tensor[(2), float32]) { multiply(%r, %p) };
  let %g = fn (%q: Tensor[(2), float32]) { %f(%q) };
  let %h = %f;
  (%g(%x), %h(%x))
}"""
    )
    lifted = lambda_lift_pass(mod)
    assert not well_formed_problems(lifted)
    check_module(lifted)
    x = np.array([1.0, -2.0], np.float32)
    for got, want in zip(interpret(lifted, x=x), interpret(mod, x=x)):
        np.testing.assert_array_equal(got, want)
