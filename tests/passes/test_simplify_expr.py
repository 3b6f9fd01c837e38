"""`simplify-expr`: golden rewrites, rules that must not fire, same results, deep chains."""

import numpy as np
import pytest
import relay
from hypothesis import given
from hypothesis import strategies as st
from relay.backend.runtime import interpret
from relay.lang import Call, Function, GlobalVar, IRModule, Var, post_order
from relay.lang.op import get_op
from relay.lang.structural import assert_structural_equal, structural_equal
from relay.lang.types import TensorType
from relay.passes import PassContext, parse_pipeline, simplify_expr_pass
from relay.passes.simplify_expr import widens_losslessly
from relay.testing import dataflow_programs, inputs_for
from relay.typecheck import check_module

HEADER = '#[version = "0.0.5"]\n'


def simplified(text):
    return simplify_expr_pass(relay.parse(HEADER + text))


def expect(before, after):
    assert_structural_equal(simplified(before)["main"], relay.parse(HEADER + after)["main"])


def test_arithmetic_identities_and_transpose_pair_vanish():
    expect(
        """def @main(%x: Tensor[(2, 3), float32]) {
          %0 = multiply(%x, 1f);
          %1 = add(0f, %0);
          %2 = subtract(%1, 0f);
          %3 = divide(%2, 1f);
          %4 = multiply(1f, %3);
          %5 = add(%4, 0f);
          %6 = transpose(%5, axes=[1, 0]);
          transpose(%6, axes=[1, 0])
        }""",
        "def @main(%x: Tensor[(2, 3), float32]) { %x }",
    )


def test_identity_constant_that_broadcasts_the_result_is_kept():
    # ones of shape (2, 3) broadcast a (3) tensor: the multiply changes the type and stays
    x = Var("x", TensorType((3,), "float32"))
    ones = relay.lang.const(np.ones((2, 3), "float32"))
    mod = IRModule({GlobalVar("main"): Function((x,), Call(get_op("multiply"), (x, ones)))})
    assert_structural_equal(simplify_expr_pass(mod)["main"], mod["main"])


def test_non_identity_constant_is_kept():
    text = "def @main(%x: Tensor[(2), float32]) { multiply(%x, 2f) }"
    expect(text, text)


def test_transposes_compose():
    expect(
        """def @main(%x: Tensor[(2, 3, 4), float32]) {
          %0 = transpose(%x, axes=[1, 0, 2]);
          transpose(%0, axes=[0, 2, 1])
        }""",
        """def @main(%x: Tensor[(2, 3, 4), float32]) {
          transpose(%x, axes=[1, 2, 0])
        }""",
    )


def test_reshape_chain_becomes_one_reshape_or_nothing():
    expect(
        """def @main(%x: Tensor[(2, 3), float32]) {
          %0 = reshape(%x, newshape=[6]);
          %1 = expand_dims(%0, axis=0);
          %2 = reshape(%1, newshape=[3, 2]);
          squeeze(expand_dims(%2, axis=1, num_newaxis=2), axis=[1, 2])
        }""",
        """def @main(%x: Tensor[(2, 3), float32]) {
          reshape(%x, newshape=[3, 2])
        }""",
    )
    expect(
        """def @main(%x: Tensor[(2, 3), float32]) {
          %0 = reshape(%x, newshape=[6]);
          reshape(%0, newshape=[2, 3])
        }""",
        "def @main(%x: Tensor[(2, 3), float32]) { %x }",
    )


def test_casts():
    expect(
        """def @main(%x: Tensor[(2), int8]) {
          %0 = cast(%x, dtype="int8");
          %1 = cast(%0, dtype="int32");
          cast(%1, dtype="float32")
        }""",
        """def @main(%x: Tensor[(2), int8]) { cast(%x, dtype="float32") }""",
    )
    # float32 -> int32 loses values: the chain stays
    text = """def @main(%x: Tensor[(2), float32]) {
      %0 = cast(%x, dtype="int32");
      cast(%0, dtype="float32")
    }"""
    expect(text, text)


@pytest.mark.parametrize(
    ("src", "mid", "ok"),
    [
        ("int8", "int16", True),
        ("int16", "int8", False),
        ("uint8", "int16", True),
        ("uint8", "int8", False),
        ("int8", "uint16", False),
        ("int16", "float32", True),
        ("int32", "float32", False),
        ("int32", "float64", True),
        ("int64", "float64", False),
        ("float16", "float32", True),
        ("float32", "float16", False),
        ("bool", "int8", True),
        ("float32", "int64", False),
    ],
)
def test_widens_losslessly(src, mid, ok):
    assert widens_losslessly(src, mid) is ok


def test_registered_in_pipeline():
    mod = relay.parse(HEADER + "def @main(%x: Tensor[(2), float32]) { add(%x, 0f) }")
    with PassContext(opt_level=0):
        out = parse_pipeline("simplify-expr")(mod)
    assert isinstance(out["main"].body, Var)


def assert_same(a, b):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
        return
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6, equal_nan=True)


OPS = ["add", "subtract", "multiply", "divide", "reshape", "transpose", "squeeze"]
OPS += ["expand_dims", "cast", "negative", "ones_like", "zeros_like"]


@given(dataflow_programs(ops=OPS, max_ops=8), st.data())
def test_keeps_types_and_results(mod, data):
    out = simplify_expr_pass(mod)
    before, after = check_module(mod), check_module(out)
    assert structural_equal(before.global_types["main"], after.global_types["main"])
    inputs = data.draw(inputs_for(mod))
    assert_same(interpret(out, **inputs), interpret(mod, **inputs))


def test_deep_chain():
    x = Var("x", TensorType((2,), "float32"))
    body: relay.lang.Expr = x
    one = relay.lang.const(1.0)
    multiply = get_op("multiply")
    bindings = []
    for i in range(100_000):
        v = Var(f"v{i}")
        bindings.append((v, Call(multiply, (body, one))))
        body = v
    fn = Function((x,), relay.lang.let_chain(bindings, body))
    out = simplify_expr_pass(IRModule({GlobalVar("main"): fn}))
    assert not any(isinstance(n, Call) for n in post_order(out["main"]))
