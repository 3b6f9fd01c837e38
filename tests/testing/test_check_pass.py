"""`relay.testing.check_pass`: correct passes pass; each kind of broken pass is caught with
a message naming the failed check."""

import functools
import re

import numpy as np
import pytest
import relay
import relay.driver
import relay.testing as relay_testing
from hypothesis import strategies as st
from relay.lang.expr import Call, Constant, Function, Var
from relay.lang.op import get_op
from relay.lang.traversal import post_order, rewrite_post_order
from relay.lang.types import TensorType
from relay.passes import PassContext, Sequential, bisect, function_pass, get_pass
from relay.passes.pattern import Rule, is_op, rewrite, wildcard
from relay.testing import (
    CheckPassReport,
    call_type,
    check_once,
    check_pass,
    dataflow_programs,
    shrink_bindings,
)

identity = get_pass("identity")  # the built-in pass that changes nothing

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


# --------------------------------------------------------------------- coverage, seeds, shrinking

BREAKABLE_OPS = ["add", "multiply", "maximum", "nn.relu", "negative", "tanh"]


def _commute_multiply(mod):
    """Correct: `a * b` becomes `b * a` (one bottom-up sweep; changes every program with a
    multiply)."""
    multiply = get_op("multiply")

    def swap(node):
        if isinstance(node, Call) and node.op is multiply:
            return Call(multiply, (node.args[1], node.args[0]), node.attrs)
        return None

    fn = mod["main"]
    body = rewrite_post_order(fn.body, swap)
    return mod.with_function("main", Function(fn.params, body, fn.ret_type))


def _maximum_to_minimum(mod):
    """Wrong: breaks one operator, `maximum` becomes `minimum`."""
    a, b = wildcard().named("a"), wildcard().named("b")
    return rewrite(Rule(is_op("maximum")(a, b), lambda a, b: Call(get_op("minimum"), (a, b))), mod)


def _failure(transform, **kwargs):
    with pytest.raises(AssertionError) as info:
        check_pass(transform, **kwargs)
    return info.value


def _program_before(text):
    return relay.parse(text.split("program before:\n", 1)[1].split("\nprogram after:", 1)[0])


def _calls(mod):
    return [n for n in post_order(mod["main"].body) if isinstance(n, Call)]


def test_report_counts_changed_programs():
    report = check_pass(_commute_multiply, ops=["multiply", "add"], max_examples=15, seed=3)
    assert isinstance(report, CheckPassReport)
    assert 0 < report.changed <= report.total <= 15
    assert repr(report) == (
        f"check_pass: function _commute_multiply changed {report.changed} of {report.total} "
        "programs (seed=3)"
    )
    assert check_pass(identity, ops=["add"], max_examples=5).changed == 0


def test_min_changed_fails_a_rewrite_that_rarely_fires():
    check_pass(_commute_multiply, ops=["multiply"], max_examples=10, min_changed=0.5)
    text = str(_failure(identity, ops=["multiply", "add"], max_examples=10, min_changed=0.1))
    assert "changed 0 of" in text and "min_changed=0.1" in text and "rarely" in text
    with pytest.raises(ValueError, match="fraction"):
        check_pass(identity, min_changed=2)


@functools.cache
def _generated_failure(shrink):
    """The report of a pass that breaks `maximum`, on generated programs (seed 3)."""
    programs = dataflow_programs(ops=BREAKABLE_OPS, max_ops=4)
    return _failure(_maximum_to_minimum, programs=programs, max_examples=30, seed=3, shrink=shrink)


def test_failure_names_the_seed_that_reproduces_it():
    first = str(_failure(_swap_add, programs=st.just(PROGRAM), max_examples=20))
    seed = int(re.search(r"reproduce: check_pass\(\.\.\., seed=(\d+)\)", first).group(1))
    again = str(_failure(_swap_add, programs=st.just(PROGRAM), max_examples=20, seed=seed))
    assert again == first
    assert "reproduce: check_pass(..., seed=3)" in str(_generated_failure(True))


def test_report_has_no_hypothesis_dump_or_explanation():
    err = _generated_failure(True)
    text = str(err)
    assert not getattr(err, "__notes__", None)
    assert err.__cause__ is None and err.__suppress_context__
    for noise in ("Falsifying example", "Draw 1", "sometimes passed", "AttrField", "schema="):
        assert noise not in text


def test_failure_is_shrunk_to_the_bindings_that_matter():
    shrunk = _calls(_program_before(str(_generated_failure(True))))
    assert [c.op.name for c in shrunk] == ["maximum"]
    # hypothesis alone (the checker before binding shrinking) leaves unrelated bindings
    unshrunk = _calls(_program_before(str(_generated_failure(False))))
    assert len(unshrunk) > 1 and "maximum" in [c.op.name for c in unshrunk]


def test_shrink_bindings_keeps_the_values_the_fault_sees():
    mod = relay.parse(
        """#[version = "0.0.5"]
def @main(%x: Tensor[(3), float32], %y: Tensor[(3), float32]) {
  %0 = tanh(%x);
  %1 = add(%0, %y);
  %2 = maximum(%1, %x);
  %3 = nn.relu(%2);
  (%3, negative(%y))
}
"""
    )
    inputs = {
        "x": np.asarray([1.0, -1.0, 0.5], "float32"),
        "y": np.asarray([0.0, 2.0, -3.0], "float32"),
    }

    def fails(candidate, candidate_inputs):
        try:
            check_once(_maximum_to_minimum, "max", candidate, candidate_inputs)
        except AssertionError:
            return True
        return False

    small, small_inputs = shrink_bindings(mod, inputs, fails)
    assert [c.op.name for c in _calls(small)] == ["maximum"]
    assert fails(small, small_inputs)
    (value,) = [v for k, v in small_inputs.items() if k != "x"]
    tanh_x = np.tanh(inputs["x"])  # the value of %0 or of %1, whichever became the parameter
    assert np.allclose(value, tanh_x) or np.allclose(value, tanh_x + inputs["y"])


def test_a_crash_of_the_pass_is_reported_with_the_program():
    def crashes(mod):
        raise KeyError("boom")

    text = str(_failure(crashes, programs=st.just(PROGRAM), max_examples=3))
    assert "the pass raised an error" in text and "KeyError: 'boom'" in text
    assert "program before:" in text and "def @main" in text  # shrunk: any program crashes it


def test_reports_show_small_constants_inline():
    x = Var("x", TensorType((2,), "float32"))
    const = Constant(np.asarray([0.5, -1.0], "float32"))
    main = Function([x], Call(get_op("maximum"), (x, const)))
    mod = relay.IRModule({relay.GlobalVar("main"): main})
    text = str(_failure(_maximum_to_minimum, programs=st.just(mod), max_examples=5))
    assert "/* [0.5, -1] */" in text


def test_help_shows_the_whole_contract_and_exports():
    doc = check_pass.__doc__
    for word in ("well-formed", "idempotent", "min_changed", "seed", "programs_around", "shrunk"):
        assert word in doc
    assert relay_testing.bind_params is relay.driver.bind_params
    assert relay_testing.call_type is call_type


def test_attrs_and_bisect_results_have_short_reprs():
    attrs = get_op("nn.conv2d").make_attrs(strides=(2, 2), groups=1)
    assert repr(attrs) == "Conv2DAttrs(strides=(2, 2))"
    assert repr(get_op("nn.conv2d").make_attrs()) == "Conv2DAttrs()"
    broken = function_pass(name="test-max-to-min", opt_level=0, register=False)(
        lambda fn, mod, ctx, options: _maximum_to_minimum(mod.with_function("main", fn))["main"]
    )
    mod = relay.parse(
        """#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32], %y: Tensor[(2), float32]) { maximum(%x, %y) }
"""
    )
    inputs = {"x": np.asarray([1.0, 5.0], "float32"), "y": np.asarray([3.0, 2.0], "float32")}
    found = bisect(mod, Sequential([identity, broken]), inputs)
    assert repr(found) == (
        "BisectResult(pass #1 'test-max-to-min': the values differ: max abs difference 3)"
    )
