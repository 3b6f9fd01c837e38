"""The printer's `inline_constants` option: small metadata constants show their values in a
comment, larger ones only as `meta[...]`, and the text still parses to the same module."""

import numpy as np
import relay
from relay.lang.expr import Call, Constant, Function, GlobalVar, Var
from relay.lang.module import IRModule
from relay.lang.op import get_op
from relay.lang.printer import constant_values_text, print_expr
from relay.lang.structural import structural_diff
from relay.lang.types import TensorType


def _module(*constants):
    x = Var("x", TensorType((2, 2), "float32"))
    body = x
    for c in constants:
        body = Call(get_op("add"), (body, Constant(c)))
    return IRModule({GlobalVar("main"): Function([x], body)})


SMALL = np.asarray([[1.5, -2.0], [0.25, np.nan]], "float32")


def test_small_constants_show_values_inline():
    text = _module(SMALL).astext(inline_constants=16)
    assert "meta[relay.Constant][0] /* [[1.5, -2], [0.25, nan]] */" in text


def test_large_constants_only_by_reference():
    big = np.ones((2, 2), "float32") * 3
    text = _module(SMALL, big).astext(inline_constants=3)
    assert "/*" not in text.split("#[metadata]")[0]  # 4 elements > 3: both by reference only
    assert "meta[relay.Constant][0]" in text and "meta[relay.Constant][1]" in text


def test_off_by_default():
    assert "/*" not in _module(SMALL).astext().split("#[metadata]")[0]


def test_round_trip_parses_to_the_same_module():
    ints = np.asarray([[1, 2], [3, 4]], "int8")
    x = Var("x", TensorType((2, 2), "int8"))
    mods = [
        _module(SMALL, np.full((2, 2), 7.0, "float32")),
        IRModule({GlobalVar("main"): Function([x], Call(get_op("add"), (x, Constant(ints))))}),
    ]
    for mod in mods:
        text = mod.astext(inline_constants=16)
        back = relay.parse(text)
        assert structural_diff(back, mod) is None
        assert back.astext(inline_constants=16) == text


def test_value_text_and_expressions():
    assert constant_values_text(np.asarray([True, False])) == "[True, False]"
    assert constant_values_text(np.asarray([[1], [2]], "int32")) == "[[1], [2]]"
    expr = Call(get_op("multiply"), (Constant(SMALL), Constant(SMALL)))
    assert "/* [[1.5, -2], [0.25, nan]] */" in print_expr(expr, inline_constants=4)
