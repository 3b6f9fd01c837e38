"""`relay.testing.programs_around`: programs containing a pattern, with constants of valid
shapes, checked against the interpreter by `check_pass`."""

import numpy as np
import pytest
from hypothesis import given, settings
from relay.lang.expr import Call, Constant
from relay.lang.traversal import post_order
from relay.passes.pattern import Rule, is_constant, is_op, match, rewrite, wildcard
from relay.testing import check_pass, programs_around
from relay.testing.around import CONTEXT_OPS
from relay.typecheck import check_module

X, W, C = wildcard().named("x"), is_constant().named("w"), is_constant().named("c")
CONV = is_op("nn.conv2d")(X, W).named("conv")
CONV_TIMES_C = is_op("multiply")(CONV, C)


def _fold(scale_axis):
    """Fold `multiply(conv2d(x, W), C)` into the weights when C is one factor per output
    channel; `scale_axis` is where the factors go in the OIHW weight (0 is right)."""

    def fold(x, w, c, conv):
        attrs = conv.attrs  # read a call's attributes by name; repr shows the non-defaults
        if attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW":
            return None
        cout = w.data.shape[0]
        channel = (1, cout, 1, 1)
        if np.broadcast_shapes(c.data.shape, channel) != channel:
            return None
        factors = np.broadcast_to(c.data, channel).reshape(cout)
        shape = [1, 1, 1, 1]
        shape[scale_axis] = cout
        weight = (w.data * factors.reshape(shape)).astype(w.data.dtype)
        return Call(conv.op, (x, Constant(weight)), attrs)

    def fold_pass(mod):
        return rewrite(Rule(CONV_TIMES_C, fold), mod)

    fold_pass.__name__ = f"fold_axis_{scale_axis}"
    return fold_pass


@settings(max_examples=25)
@given(programs_around(CONV_TIMES_C))
def test_programs_contain_the_pattern_with_valid_constants(mod):
    check_module(mod)  # well-typed: every shape fits its operator
    body = mod["main"].body
    found = [m for node in post_order(body) if (m := match(CONV_TIMES_C, node)) is not None]
    assert found, "the pattern occurs in @main"
    captures = found[0].captures
    assert isinstance(captures["w"], Constant) and isinstance(captures["c"], Constant)
    conv, weight = captures["conv"], captures["w"].data
    assert (weight.ndim == 4 and weight.shape[0] % conv.attrs.groups == 0) or (
        conv.attrs.kernel_layout == "HWIO"
    )
    assert all(p.type_annotation is not None for p in mod["main"].params)


def test_correct_fold_passes_and_fires_often():
    report = check_pass(_fold(0), programs_around(CONV_TIMES_C), max_examples=40, min_changed=0.2)
    assert report.total >= 20 and report.changed >= 0.2 * report.total
    assert f"changed {report.changed} of {report.total} programs" in repr(report)


def test_wrong_axis_fold_is_caught():
    with pytest.raises(AssertionError) as info:
        check_pass(_fold(3), programs_around(CONV_TIMES_C), max_examples=40)
    text = str(info.value)
    assert text.startswith("check_pass: function fold_axis_3: ")
    assert "program before:" in text and "reproduce: check_pass(..., seed=" in text


def test_constants_names_make_wildcards_constant():
    pattern = is_op("add")(wildcard().named("a"), wildcard().named("b"))

    @settings(max_examples=10)
    @given(programs_around(pattern, constants=["b"], after=0, before=0))
    def check(mod):
        body = mod["main"].body
        assert isinstance(body, Call) and isinstance(body.args[1], Constant)
        assert not isinstance(body.args[0], Constant)

    check()


def test_context_operators_and_bad_patterns():
    assert "nn.relu" in CONTEXT_OPS
    with pytest.raises(ValueError, match="no call generator"):
        programs_around(is_op("no.such.op")(wildcard()))
    with pytest.raises(ValueError, match="call pattern"):
        programs_around(wildcard())
    with pytest.raises(ValueError, match="context operator"):
        programs_around(CONV_TIMES_C, ops=["nope"])
