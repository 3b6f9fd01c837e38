"""`cse`: equal pure subexpressions are shared within one function body."""

import numpy as np
import relay
from relay.backend.runtime import interpret
from relay.lang import Var, let_chain
from relay.lang.expr import Call, Function, Let
from relay.lang.op import get_op
from relay.lang.structural import assert_structural_equal
from relay.lang.types import TensorType
from relay.passes import PassContext, cse_expr, get_pass, parse_pipeline
from relay.testing import check_pass, functional_programs

HEADER = '#[version = "0.0.5"]\n'


def parse(text):
    return relay.parse(HEADER + text)


def cse(text):
    with PassContext(opt_level=3):
        return parse_pipeline("cse")(parse(text))


def test_calls_constants_tuples_and_projections_merge():
    before = """def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
  %0 = add(%x, %y);
  %1 = add(%x, %y);
  %2 = exp(%0);
  %3 = exp(%1);
  %4 = (%2, 1f);
  %5 = (%3, 1f);
  %6 = multiply(%4.0, %5.0);
  %7 = sum(%6, axis=[0]);
  %8 = sum(%6, axis=[0], keepdims=True);
  (%7, %8)
}"""
    after = """def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
  %0 = add(%x, %y);
  %1 = exp(%0);
  %2 = (%1, 1f);
  %3 = %2.0;
  %4 = multiply(%3, %3);
  (sum(%4, axis=[0]), sum(%4, axis=[0], keepdims=True))
}"""
    out = cse(before)
    assert_structural_equal(out["main"], parse(after)["main"])
    mul = out["main"].body.fields[0].args[0]
    assert mul.args[0] is mul.args[1]


def test_effectful_and_closure_calls_are_not_merged():
    text = """def @main(%x: Tensor[(4), float32], %f: fn (Tensor[(4), float32]) -> Tensor[(4), float32]) {
  %0 = nn.dropout(%x);
  %1 = nn.dropout(%x);
  (%0.0, %1.0, %f(%x), %f(%x))
}"""
    out = cse(text)
    fields = out["main"].body.fields
    assert fields[0].tuple_value is not fields[1].tuple_value
    assert fields[2] is not fields[3]


def test_no_merge_across_function_scopes_or_of_let_values():
    text = """def @main(%x: float32, %c: bool) {
  let %a = add(%x, 1f);
  let %b = add(%x, 1f);
  let %g = fn (%y: float32) {
    multiply(add(%x, 1f), %y)
  };
  %0 = if (%c) { negative(%x) } else { %g(%x) };
  (%a, %b, %0, negative(%x))
}"""
    mod = parse(text)
    out = cse(text)
    main = out["main"]
    a_let = main.body
    b_let = a_let.body
    assert isinstance(a_let, Let) and isinstance(b_let, Let)
    assert a_let.value is not b_let.value
    g_body = b_let.body.value.body
    assert g_body.args[0] is not a_let.value and g_body.args[0] is not b_let.value
    result = b_let.body.body
    # the two negative(%x) of the same function body merge
    assert result.fields[3] is result.fields[2].true_branch
    for c in (True, False):
        assert interpret(out, x=2.0, c=c) == interpret(mod, x=2.0, c=c)


def test_pass_registration():
    p = get_pass("cse")
    assert p.opt_level == 3


def test_long_chain_is_iterative():
    x = Var("x", TensorType((), "float32"))
    add = get_op("add")
    bindings = []
    prev = x
    for i in range(100_000):
        v = Var(f"v{i}")
        other = Call(add, (x, x)) if i % 100 == 0 else x
        bindings.append((v, Call(add, (prev, other))))
        prev = v
    fn = Function((x,), let_chain(bindings, prev))
    out = cse_expr(fn)
    assert isinstance(out, Function)
    node, values = out.body, []
    while isinstance(node, Let):
        values.append(node.value)
        node = node.body
    assert len(values) == 100_000
    assert values[0].args[1] is values[100].args[1] is values[99_900].args[1]
    assert values[0].args[1] is not bindings[100][1].args[1]
    small = Function((x,), let_chain(bindings[:201], bindings[200][0]))
    small_out = cse_expr(small)
    mod = relay.lang.IRModule.from_expr(small)
    np.testing.assert_allclose(
        interpret(mod.with_function("main", small_out), x=1.5), interpret(mod, x=1.5)
    )


def test_property_dataflow_programs():
    check_pass(get_pass("cse"), idempotent=True)


def test_property_functional_programs():
    check_pass(get_pass("cse"), functional_programs(), idempotent=True)
