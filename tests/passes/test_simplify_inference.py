"""`simplify-inference`: batch_norm expansion, dropout removal, same results, deep chains."""

import numpy as np
import relay
from hypothesis import assume, given
from hypothesis import strategies as st
from relay.backend.runtime import EvalError, interpret
from relay.lang import Call, Function, GlobalVar, IRModule, TupleGetItem, Var, post_order
from relay.lang.op import get_op
from relay.lang.structural import assert_structural_equal, structural_equal
from relay.lang.types import TensorType
from relay.passes import PassContext, parse_pipeline, simplify_inference_pass
from relay.testing import dataflow_programs, inputs_for
from relay.typecheck import check_module

HEADER = '#[version = "0.0.5"]\n'
PARAMS = (
    "%x: Tensor[(1, 2, 3, 3), float32], %g: Tensor[(2), float32], %b: Tensor[(2), float32], "
    "%m: Tensor[(2), float32], %v: Tensor[(2), float32]"
)


def expect(before, after):
    out = simplify_inference_pass(relay.parse(HEADER + before))
    assert_structural_equal(out["main"], relay.parse(HEADER + after)["main"])


def test_batch_norm_expands_to_scale_and_shift():
    expect(
        f"""def @main({PARAMS}) {{
          %0 = nn.batch_norm(%x, %g, %b, %m, %v);
          %0.0
        }}""",
        f"""def @main({PARAMS}) {{
          %0 = add(%v, 1e-05f);
          %1 = sqrt(%0);
          %2 = divide(%g, %1);
          %3 = expand_dims(%2, axis=1, num_newaxis=2);
          %4 = multiply(%x, %3);
          %5 = multiply(%m, %2);
          %6 = subtract(%b, %5);
          %7 = expand_dims(%6, axis=1, num_newaxis=2);
          add(%4, %7)
        }}""",
    )


def test_batch_norm_on_last_axis_without_center_and_scale():
    expect(
        """def @main(%x: Tensor[(2, 3), float32], %g: Tensor[(3), float32],
                   %b: Tensor[(3), float32], %m: Tensor[(3), float32], %v: Tensor[(3), float32]) {
          %0 = nn.batch_norm(%x, %g, %b, %m, %v, axis=-1, epsilon=0.5f, center=False, scale=False);
          %0.0
        }""",
        """def @main(%x: Tensor[(2, 3), float32], %g: Tensor[(3), float32],
                   %b: Tensor[(3), float32], %m: Tensor[(3), float32], %v: Tensor[(3), float32]) {
          %0 = add(%v, 0.5f);
          %1 = sqrt(%0);
          %2 = divide(1f, %1);
          %3 = multiply(%x, %2);
          %4 = multiply(%m, %2);
          %5 = negative(%4);
          add(%3, %5)
        }""",
    )


def test_layer_norm_expands():
    expect(
        """def @main(%x: Tensor[(2, 3), float32], %g: Tensor[(2), float32],
                   %b: Tensor[(2), float32]) {
          nn.layer_norm(%x, %g, %b, axis=0)
        }""",
        """def @main(%x: Tensor[(2, 3), float32], %g: Tensor[(2), float32],
                   %b: Tensor[(2), float32]) {
          %0 = mean(%x, axis=[0], keepdims=True);
          %1 = subtract(%x, %0);
          %2 = multiply(%1, %1);
          %3 = mean(%2, axis=[0], keepdims=True);
          %4 = add(%3, 1e-05f);
          %5 = rsqrt(%4);
          %6 = multiply(%1, %5);
          %7 = expand_dims(%g, axis=1);
          %8 = multiply(%6, %7);
          %9 = expand_dims(%b, axis=1);
          add(%8, %9)
        }""",
    )


def test_l2_normalize_expands():
    expect(
        """def @main(%x: Tensor[(2, 3), float32]) {
          nn.l2_normalize(%x, eps=0.001f, axis=[1])
        }""",
        """def @main(%x: Tensor[(2, 3), float32]) {
          %0 = multiply(%x, %x);
          %1 = sum(%0, axis=[1], keepdims=True);
          %2 = maximum(%1, 0.001f);
          %3 = sqrt(%2);
          divide(%x, %3)
        }""",
    )


def test_l2_normalize_expansion_values_match_the_interpreter_and_native_code():
    """Rows whose sum of squares is below eps, above it, and NaN: `maximum(sum, eps)` and
    `nn.l2_normalize` both floor with `sum > eps ? sum : eps` (a NaN sum gives eps), so the
    expansion, the interpreter and the compiled operator agree element for element."""
    mod = relay.parse(
        HEADER
        + """def @main(%x: Tensor[(3, 1, 2), float32]) {
          nn.l2_normalize(%x, eps=0.001f, axis=[1, 2])
        }"""
    )
    nan_free = np.array([[[0.01, -0.02]], [[3.0, 4.0]], [[-0.001, 0.0]]], "float32")
    with_nan = np.array([[[1.25, np.nan]], [[3.0, 4.0]], [[0.02, 0.01]]], "float32")
    out = simplify_inference_pass(mod)
    for x in (nan_free, with_nan):
        want = interpret(mod, x=x)
        sums = np.sum(x.astype("float64") ** 2, axis=(1, 2), keepdims=True)
        floor = np.where(sums > np.float32(0.001), sums, np.float32(0.001))
        np.testing.assert_allclose(want, x / np.sqrt(floor), rtol=1e-6)
        np.testing.assert_allclose(interpret(out, x=x), want, rtol=1e-5)
        np.testing.assert_allclose(relay.build(mod).run(x=x), want, rtol=1e-5)
    assert np.isnan(interpret(out, x=with_nan)).sum() == 1  # 1.25 / sqrt(eps) stays a number


def test_dropout_is_removed():
    expect(
        """def @main(%x: Tensor[(2, 3), float32]) {
          %0 = nn.dropout(%x, rate=0.3f);
          %1 = %0.0;
          nn.relu(%1)
        }""",
        "def @main(%x: Tensor[(2, 3), float32]) { nn.relu(%x) }",
    )


def test_batch_norm_values_match_the_interpreter():
    mod = relay.parse(
        HEADER
        + f"""def @main({PARAMS}) {{
          %0 = nn.batch_norm(%x, %g, %b, %m, %v, epsilon=0.01f);
          (%0.0, %0.1)
        }}"""
    )
    rng = np.random.default_rng(1)
    inputs = {k: rng.standard_normal(s).astype("float32") for k, s in [("x", (1, 2, 3, 3))]}
    inputs.update({k: rng.standard_normal(2).astype("float32") for k in "gbm"})
    inputs["v"] = rng.random(2).astype("float32")
    out = simplify_inference_pass(mod)
    assert any(isinstance(n, TupleGetItem) and n.index == 1 for n in post_order(out["main"]))
    assert_same(interpret(out, **inputs), interpret(mod, **inputs))


def test_registered_in_pipeline():
    mod = relay.parse(HEADER + "def @main(%x: Tensor[(2), float32]) { %0 = nn.dropout(%x); %0.0 }")
    with PassContext(opt_level=0):
        out = parse_pipeline("simplify-inference")(mod)
    assert isinstance(out["main"].body, Var)


def assert_same(a, b):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
        return
    # where the original is NaN the expansion may differ (`maximum` and NaN), so only the
    # original's non-NaN elements are compared. The interpreter normalizes in float64 and
    # the expansion computes in float32 (rounding is amplified by chained normalizations):
    # the tolerance is 1e-4 rather than 1e-5.
    a, b = np.asarray(a), np.asarray(b)
    keep = ~np.isnan(b)
    np.testing.assert_allclose(a[keep], b[keep], rtol=1e-4, atol=1e-5)


OPS = ["nn.batch_norm", "nn.dropout", "nn.layer_norm", "nn.instance_norm", "nn.l2_normalize"]
OPS += ["add", "nn.relu", "abs"]


@given(
    dataflow_programs(ops=OPS, max_ops=6),
    st.data(),
)
def test_keeps_types_and_results(mod, data):
    out = simplify_inference_pass(mod)
    before, after = check_module(mod), check_module(out)
    assert structural_equal(before.global_types["main"], after.global_types["main"])
    inputs = data.draw(inputs_for(mod))
    try:
        with np.errstate(invalid="raise"):
            expected = interpret(mod, **inputs)
    except (FloatingPointError, EvalError):
        # NaN made inside (sqrt of a negative variance): operators treat NaN differently
        # (`maximum`, `relu`), so such programs say nothing about the rewrite
        assume(False)
    assert_same(interpret(out, **inputs), expected)


def test_deep_chain():
    x = Var("x", TensorType((2,), "float32"))
    body: relay.lang.Expr = x
    dropout = get_op("nn.dropout")
    bindings = []
    for i in range(50_000):
        d, v = Var(f"d{i}"), Var(f"v{i}")
        bindings += [(d, Call(dropout, (body,), dropout.make_attrs())), (v, TupleGetItem(d, 0))]
        body = v
    fn = Function((x,), relay.lang.let_chain(bindings, body))
    out = simplify_inference_pass(IRModule({GlobalVar("main"): fn}))
    assert sum(isinstance(n, TupleGetItem) for n in post_order(out["main"])) == 0


def test_let_bound_batch_norm_expands_and_keeps_values():
    mod = relay.parse(
        HEADER
        + f"""def @main({PARAMS}) {{
          let %t = nn.batch_norm(%x, %g, %b, %m, %v);
          let %y = %t.0;
          nn.relu(%y)
        }}"""
    )
    out = simplify_inference_pass(mod)
    projections = [n for n in post_order(out["main"]) if isinstance(n, TupleGetItem)]
    assert projections == []
    rng = np.random.default_rng(2)
    inputs = {"x": rng.standard_normal((1, 2, 3, 3)).astype("float32")}
    inputs.update({k: rng.standard_normal(2).astype("float32") for k in "gbm"})
    inputs["v"] = rng.random(2).astype("float32")
    assert_same(interpret(out, **inputs), interpret(mod, **inputs))
