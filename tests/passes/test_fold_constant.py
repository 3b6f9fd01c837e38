"""`fold-constant`: constant calls, tuples, projections and static `shape_of` fold."""

import numpy as np
import relay
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.runtime import interpret
from relay.lang import Var, let_chain
from relay.lang.expr import Call, Constant, Function, Let, Tuple, const
from relay.lang.module import IRModule
from relay.lang.op import Op, get_op
from relay.lang.structural import assert_structural_equal
from relay.lang.traversal import post_order, substitute
from relay.lang.types import TensorType
from relay.passes import PassContext, fold_constant_pass, get_pass, parse_pipeline
from relay.passes.fold_constant import NEVER_FOLDED
from relay.testing import check_pass, dataflow_programs, functional_programs, inputs_for
from relay.typecheck import check_module

HEADER = '#[version = "0.0.5"]\n'


def parse(text):
    return relay.parse(HEADER + text)


def fold(text, options=""):
    with PassContext(opt_level=2):
        return parse_pipeline("fold-constant" + options)(parse(text))


def test_scalar_arithmetic_tuple_and_projection_fold():
    before = """def @main(%x: Tensor[(2), float32]) {
  %0 = add(1f, 2f);
  %1 = (%0, 2f);
  %2 = multiply(%1.1, %1.0);
  multiply(%x, %2)
}"""
    after = """def @main(%x: Tensor[(2), float32]) {
  multiply(%x, 6f)
}"""
    out = fold(before)
    assert_structural_equal(out["main"], parse(after)["main"])
    body = out["main"].body
    assert isinstance(body.args[1], Constant) and body.args[1].is_scalar


def test_let_bound_constants_inline_and_shape_of_folds():
    before = """def @main(%x: Tensor[(2, 3), float32]) {
  let %a = subtract(5, 2);
  let %s = shape_of(%x);
  let %y = add(%x, %x);
  (%a, %s, cast(%s, dtype="float32"), %y)
}"""
    out = fold(before)
    check_module(out)
    main = out["main"]
    assert isinstance(main.body, Let) and main.body.var.name_hint == "y"
    a, shape, cast, y = main.body.body.fields
    assert isinstance(a, Constant) and a.data.dtype == np.int32 and a.data == 3
    assert isinstance(shape, Constant)
    np.testing.assert_array_equal(shape.data, np.array([2, 3], "int32"))
    assert shape.data.dtype == np.int32
    assert isinstance(cast, Constant)
    np.testing.assert_array_equal(cast.data, np.array([2.0, 3.0], "float32"))
    assert y is main.body.var


def test_tuple_results_fold_to_tuples_of_constants():
    before = """def @main() {
  split(ones(shape=[4], dtype="float32"), indices_or_sections=2)
}"""
    out = fold(before)
    body = out["main"].body
    assert isinstance(body, Tuple) and all(isinstance(f, Constant) for f in body.fields)
    for got, want in zip(interpret(out), interpret(parse(before))):
        np.testing.assert_array_equal(got, want)


def test_size_limit_and_effectful_ops_are_respected():
    text = """def @main(%x: Tensor[(2, 3), float32]) {
  %0 = zeros(shape=[2, 3], dtype="float32");
  %1 = nn.dropout(ones(shape=[2], dtype="float32"));
  (add(%x, %0), %1.0)
}"""
    small = fold(text, "{max-elements=1}")
    assert_structural_equal(small["main"], parse(text)["main"])
    big = fold(text)
    assert isinstance(big["main"].body.fields[0].args[1], Constant)
    dropout = big["main"].body.fields[1].tuple_value
    assert dropout.op.name == "nn.dropout" and isinstance(dropout.args[0], Constant)
    x = np.ones((2, 3), "float32")
    for got, want in zip(interpret(big, x=x), interpret(parse(text), x=x)):
        np.testing.assert_array_equal(got, want)


def test_calls_that_fail_are_left_for_run_time():
    text = """def @main() {
  divide(1, 0)
}"""
    out = fold(text)
    assert isinstance(out["main"].body, Call)


def test_nothing_to_fold_keeps_module():
    mod = parse("def @main(%x: float32) { add(%x, 1f) }")
    assert fold_constant_pass(mod) is mod


def test_pass_registration():
    p = get_pass("fold-constant")
    assert p.opt_level == 2
    assert str(p.with_options(max_elements=10)) == "fold-constant{max-elements=10}"


def test_long_chain_is_iterative():
    x = Var("x", TensorType((), "float32"))
    add = get_op("add")
    bindings = []
    prev = x
    for i in range(100_000):
        v = Var(f"v{i}")
        value = Call(add, (const(1.0), const(2.0))) if i % 1000 == 0 else Call(add, (prev, x))
        bindings.append((v, value))
        prev = v
    mod = IRModule.from_expr(Function((x,), let_chain(bindings, prev)))
    out = fold_constant_pass(mod)
    first = out["main"].body
    # v0 = add(1f, 2f) was folded and inlined: v1 = add(3f, %x)
    assert isinstance(first, Let) and first.var is bindings[1][0]
    assert isinstance(first.value.args[0], Constant) and float(first.value.args[0].data) == 3.0


def test_property_dataflow_programs():
    check_pass(get_pass("fold-constant"), idempotent=True)


def test_property_functional_programs():
    check_pass(get_pass("fold-constant"), functional_programs(), idempotent=True)


@settings(max_examples=30, deadline=None)
@given(dataflow_programs(), st.data())
def test_property_programs_on_constant_inputs_fold_completely(mod, data):
    """With every input bound to a constant, all but effectful calls fold, the result
    type-checks with `@main`'s result type unchanged and the values are the same."""
    inputs = data.draw(inputs_for(mod), label="inputs")
    main = mod["main"]
    mapping = {p: Constant(np.asarray(inputs[p.name_hint])) for p in main.params}
    closed = mod.with_function("main", Function((), substitute(main.body, mapping)))
    want_type = check_module(closed).global_types["main"]
    out = fold_constant_pass(closed)
    assert check_module(out).global_types["main"] == want_type
    remaining = [
        n.op.name
        for n in post_order(out["main"])
        if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name not in NEVER_FOLDED
    ]
    assert not remaining or all(
        any(isinstance(a, Call) and a.op.name in NEVER_FOLDED for a in post_order(n))
        for n in post_order(out["main"])
        if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name in remaining
    )
    got, want = interpret(out), interpret(closed)
    for g, w in zip(flatten(got), flatten(want)):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True)


def flatten(value):
    stack, out = [value], []
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            stack.extend(item)
        else:
            out.append(np.asarray(item))
    return out
