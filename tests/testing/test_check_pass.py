"""`relay.testing.check_pass`: correct passes pass; each kind of broken pass is caught with
a message naming the failed check."""

import pytest
import relay
from hypothesis import strategies as st
from relay.lang.expr import Call, Function, Var
from relay.lang.op import get_op
from relay.lang.types import TensorType
from relay.passes import PassContext, function_pass, identity
from relay.passes.pattern import Rule, is_op, rewrite, wildcard
from relay.testing import check_once, check_pass

PROGRAM = relay.parse(
    """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(3), float32]) {
  %0 = add(%x, %y);
  multiply(%0, %x)
}
"""
)


def _swap_add(mod):
    """Wrong: add becomes subtract."""
    x, y = wildcard().named("x"), wildcard().named("y")
    return rewrite(Rule(is_op("add")(x, y), lambda x, y: Call(get_op("subtract"), (x, y))), mod)


def _wrap_negate_twice(mod):
    """Correct but not idempotent: each run wraps @main's body in two negations."""
    fn = mod["main"]
    neg = get_op("negative")
    body = Call(neg, (Call(neg, (fn.body,)),))
    return mod.with_function("main", Function(fn.params, body, fn.ret_type))


def _free_var(mod):
    """Ill-formed: @main's body mentions a variable bound nowhere."""
    fn = mod["main"]
    free = Var("ghost", TensorType((2, 3), "float32"))
    return mod.with_function("main", Function(fn.params, free, fn.ret_type))


def _retype(mod):
    """Changes @main's type: returns its second parameter."""
    fn = mod["main"]
    return mod.with_function("main", Function(fn.params, fn.params[1]))


def _ill_typed(mod):
    """Ill-typed: adds a float tensor to an int constant."""
    fn = mod["main"]
    bad = Call(get_op("add"), (fn.params[0], relay.parse_expr("1")))
    return mod.with_function("main", Function(fn.params, bad))


def _raises(mod):
    raise relay.Error("this pass always fails")


def _message(transform, **kwargs):
    with pytest.raises(AssertionError) as info:
        check_pass(transform, st.just(PROGRAM), max_examples=20, **kwargs)
    return str(info.value)


def test_correct_passes_pass_every_form():
    check_pass(identity, ops=["add", "multiply"], idempotent=True, max_examples=10)
    check_pass("identity,infer-type", max_examples=5)
    check_pass(lambda mod: mod, max_examples=5)


def test_wrong_values_are_caught_with_program_and_inputs():
    text = _message(_swap_add)
    assert "the values differ" in text
    assert "function _swap_add" in text
    assert "program before:" in text and "add(%x, %y)" in text
    assert "program after:" in text and "subtract(%x, %y)" in text
    assert "inputs:" in text and "%x = " in text and "%y = " in text


def test_wrong_values_found_on_generated_programs():
    with pytest.raises(AssertionError, match="the values differ"):
        check_pass(_swap_add, ops=["add", "multiply"], max_examples=50)


def test_not_idempotent_is_caught_only_when_asked():
    check_pass(_wrap_negate_twice, st.just(PROGRAM), max_examples=3)
    text = _message(_wrap_negate_twice, idempotent=True)
    assert "not idempotent" in text and "after twice:" in text


def test_ill_formed_result_is_caught():
    assert "is not well-formed" in _message(_free_var)


def test_changed_main_type_is_caught():
    text = _message(_retype)
    assert "the type of @main changed" in text
    assert "-> Tensor[(2, 3), float32]" in text and "-> Tensor[(3), float32]" in text


def test_ill_typed_result_is_caught():
    assert "does not type-check" in _message(_ill_typed)


def test_a_pass_error_is_reported_as_a_failure():
    text = _message(_raises)
    assert "the pass raised an error" in text and "this pass always fails" in text


def test_registered_function_pass_and_context():
    calls = []

    @function_pass(name="test-check-pass-counting", opt_level=3, register=False)
    def counting(fn, mod, ctx, options):
        calls.append(ctx.opt_level)
        return fn

    check_pass(counting, st.just(PROGRAM), max_examples=2)
    assert calls and set(calls) == {3}  # no context entered: runs at opt level 3
    calls.clear()
    with PassContext(opt_level=1):
        check_pass(counting, st.just(PROGRAM), max_examples=2)
    assert calls and set(calls) == {1}  # a Pass runs even above the context's level


def test_max_examples_bounds_the_runs():
    seen = []

    def spy(mod):
        seen.append(mod)
        return mod

    check_pass(spy, ops=["add"], max_examples=4)
    assert 1 <= len(seen) <= 4


def test_check_once_and_bad_arguments():
    inputs = {"x": [[1.0, 2.0, 3.0]] * 2, "y": [1.0, 0.0, -1.0]}
    assert check_once(lambda m: m, "identity", PROGRAM, inputs) is PROGRAM
    with pytest.raises(AssertionError, match="the values differ"):
        check_once(_swap_add, "swap", PROGRAM, inputs)
    with pytest.raises(TypeError, match="expected a Pass"):
        check_pass(42)
    with pytest.raises(ValueError, match="not both"):
        check_pass(identity, st.just(PROGRAM), ops=["add"])
