"""`convert-layout` (TVM's ConvertLayout): convolutions and pools in the layouts asked for,
the operators after them following, `layout_transform` only where a layout changes, and
the values of the program unchanged (the interpreter is the oracle)."""

from __future__ import annotations

import time

import numpy as np
import pytest
import relay
from hypothesis import given, settings
from hypothesis import strategies as st
from relay import transform
from relay.backend.runtime import interpret
from relay.lang import (
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    IRModule,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    post_order,
)
from relay.lang.diagnostics import Error
from relay.lang.op import get_op
from relay.lang.structural import structural_diff
from relay.lang.types import TensorType
from relay.passes import PassError, parse_pipeline
from relay.passes.layout_rules import LAYOUT_RULES, LayoutTag, relabel
from relay.testing import check_pass, inputs_for

NHWC = {"nn.conv2d": ["NHWC", "default"]}
NCHW = {"nn.conv2d": ["NCHW", "default"]}
RNG = np.random.default_rng(0)


def call(name: str, *args, **attrs) -> Call:
    op = get_op(name)
    return Call(op, args, op.make_attrs(**attrs) if op.attrs_schema is not None else None)


def rand(*shape: int, rng: np.random.Generator = RNG) -> np.ndarray:
    return rng.standard_normal(shape).astype("float32")


def main(params, body) -> IRModule:
    return IRModule({GlobalVar("main"): Function(params, body)})


def transforms(mod: IRModule) -> list[Call]:
    return [
        n
        for n in post_order(mod["main"])
        if isinstance(n, Call) and getattr(n.op, "name", "") == "layout_transform"
    ]


def calls_of(mod: IRModule, name: str) -> list[Call]:
    return [n for n in post_order(mod["main"]) if isinstance(n, Call) and n.op is get_op(name)]


def assert_same_values(before: IRModule, after: IRModule, **inputs) -> None:
    np.testing.assert_allclose(
        np.asarray(interpret(after, **inputs)),
        np.asarray(interpret(before, **inputs)),
        rtol=1e-4,
        atol=1e-4,
    )


# ------------------------------------------------------------------ generated convnets


@st.composite
def convnets(draw, max_layers: int = 7) -> IRModule:
    """NCHW networks: convolutions (plain, strided, depthwise), bias adds, relu/clip,
    pools, residual adds, concatenations, scalar and per-channel constants, batch norm;
    ending with global pooling or not; constant weights."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    c, h, w = draw(st.integers(1, 4)), draw(st.integers(3, 9)), draw(st.integers(3, 9))
    x = Var("x", TensorType((1, c, h, w), "float32"))
    seen: list[tuple[object, tuple[int, ...]]] = [(x, (1, c, h, w))]
    cur, shape = seen[0]
    kinds = [
        "conv",
        "conv",
        "bias",
        "relu",
        "clip",
        "pool",
        "residual",
        "concat",
        "const",
        "bn",
    ]
    for layer in range(draw(st.integers(1, max_layers))):
        kind = "conv" if layer == 0 else draw(st.sampled_from(kinds))
        _, ch, hh, ww = shape
        if kind == "conv":
            depthwise = ch > 1 and draw(st.booleans())
            oc = ch if depthwise else draw(st.integers(1, 5))
            k = draw(st.sampled_from([1, 3]))
            stride = draw(st.sampled_from([1, 2])) if min(hh, ww) >= 3 else 1
            pad = k // 2
            groups = ch if depthwise else 1
            weight = Constant(rand(oc, ch // groups, k, k, rng=rng))
            cur = call(
                "nn.conv2d",
                cur,
                weight,
                strides=(stride, stride),
                padding=(pad, pad, pad, pad),
                groups=groups,
                channels=oc,
                kernel_size=(k, k),
            )
            shape = (1, oc, (hh + 2 * pad - k) // stride + 1, (ww + 2 * pad - k) // stride + 1)
        elif kind == "bias":
            cur = call("nn.bias_add", cur, Constant(rand(ch, rng=rng)))
        elif kind == "relu":
            cur = call("nn.relu", cur)
        elif kind == "clip":
            cur = call("clip", cur, a_min=0.0, a_max=6.0)
        elif kind == "pool":
            if min(hh, ww) >= 2 and draw(st.booleans()):
                name = draw(st.sampled_from(["nn.max_pool2d", "nn.avg_pool2d"]))
                cur = call(name, cur, pool_size=(2, 2), strides=(2, 2))
                shape = (1, ch, hh // 2, ww // 2)
            else:
                cur = call("nn.max_pool2d", cur, pool_size=(3, 3), padding=(1, 1, 1, 1))
        elif kind == "residual":
            same = [v for v, s in seen if s == shape and v is not cur]
            other = draw(st.sampled_from(same)) if same else Constant(rand(ch, 1, 1, rng=rng))
            cur = call("add", cur, other)
        elif kind == "concat":
            fits = [(v, s) for v, s in seen if s[2:] == shape[2:]]
            other, other_shape = draw(st.sampled_from(fits))
            cur = call("concatenate", Tuple([cur, other]), axis=1)
            shape = (1, ch + other_shape[1], hh, ww)
        elif kind == "const":
            cur = call("multiply", cur, Constant(np.float32(rng.uniform(0.5, 2.0))))
        else:
            mean, var = rand(ch, rng=rng), np.abs(rand(ch, rng=rng)) + 0.5
            bn = call(
                "nn.batch_norm",
                cur,
                *(Constant(a) for a in (rand(ch, rng=rng), rand(ch, rng=rng), mean, var)),
            )
            cur = TupleGetItem(bn, 0)
        seen.append((cur, shape))
    ending = draw(st.sampled_from(["none", "global", "mean", "two"]))
    if ending == "global":
        cur = call("nn.batch_flatten", call("nn.global_avg_pool2d", cur))
    elif ending == "mean":
        cur = call("mean", cur, axis=(2, 3))
    elif ending == "two" and len(seen) > 2:
        cur = Tuple([cur, seen[len(seen) // 2][0]])
    return main((x,), cur)


def test_generated_convnets_in_nhwc_compute_the_same_values() -> None:
    report = check_pass(
        transform.ConvertLayout(NHWC), convnets(), rtol=1e-4, atol=1e-4, min_changed=0.9
    )
    assert report.changed > 0


def test_generated_convnets_with_pools_asked_for_too() -> None:
    desired = {**NHWC, "nn.max_pool2d": ["NHWC"], "nn.avg_pool2d": ["NHWC"]}
    check_pass(transform.ConvertLayout(desired), convnets(), rtol=1e-4, atol=1e-4)


@settings(max_examples=40)
@given(convnets())
def test_round_trip_gives_back_the_program(mod: IRModule) -> None:
    there = transform.ConvertLayout(NHWC)(mod)
    back = transform.ConvertLayout(NCHW)(there)
    assert structural_diff(back, mod) is None, back.astext()


@settings(max_examples=40)
@given(convnets())
def test_a_layout_transform_only_where_the_layout_changes(mod: IRModule) -> None:
    after = transform.ConvertLayout(NHWC)(mod)
    for t in transforms(after):
        assert t.attrs.src_layout != t.attrs.dst_layout
        inner = t.args[0]
        if isinstance(inner, Call) and getattr(inner.op, "name", "") == "layout_transform":
            raise AssertionError(f"a transform of a transform:\n{after.astext()}")
    # the data enters the NHWC region once and leaves it at most once per output
    outputs = len(mod["main"].body.fields) if isinstance(mod["main"].body, Tuple) else 1
    assert len(transforms(after)) <= 1 + outputs + 1  # + the flatten/mean boundary


def test_random_dataflow_programs_with_layout_sensitive_ops() -> None:
    ops = [
        "nn.conv2d",
        "nn.conv1d",
        "nn.conv2d_transpose",
        "nn.max_pool2d",
        "nn.avg_pool2d",
        "nn.global_avg_pool2d",
        "nn.adaptive_avg_pool2d",
        "nn.bias_add",
        "nn.batch_norm",
        "nn.instance_norm",
        "nn.group_norm",
        "nn.layer_norm",
        "nn.softmax",
        "nn.pad",
        "concatenate",
        "split",
        "strided_slice",
        "sum",
        "mean",
        "argmax",
        "transpose",
        "squeeze",
        "expand_dims",
        "add",
        "multiply",
        "where",
        "reshape",
        "layout_transform",
    ]
    desired = {
        **NHWC,
        "nn.conv1d": ["NWC"],
        "nn.conv2d_transpose": ["NHWC"],
        "nn.avg_pool2d": ["NHWC"],
    }
    check_pass(
        transform.ConvertLayout(desired),
        ops=ops,
        rtol=1e-4,
        atol=1e-4,
        max_examples=80,
        min_changed=0.3,
    )


def test_split_layouts_are_used_only_where_they_divide() -> None:
    desired = {"nn.conv2d": ["NCHW2c", "OIHW2i2o"], "nn.max_pool2d": ["NCHW2c"]}
    ops = ["nn.conv2d", "nn.max_pool2d", "nn.bias_add", "add", "nn.relu", "sum"]
    check_pass(transform.ConvertLayout(desired), ops=ops, rtol=1e-4, atol=1e-4, max_examples=60)


# ------------------------------------------------------------------------ fixed programs

CONV_BN_RELU_POOL = """
#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32],
          %b: Tensor[(4), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2]);
  %4 = add(%3, 1f);
  %5 = nn.global_avg_pool2d(%4);
  nn.batch_flatten(%5)
}
"""

CONV_BN_RELU_POOL_NHWC = """
#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32],
          %b: Tensor[(4), float32]) {
  %0 = layout_transform(%x, src_layout="NCHW", dst_layout="NHWC");
  %1 = layout_transform(%w, src_layout="OIHW", dst_layout="HWIO");
  %2 = nn.conv2d(%0, %1, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3],
                 data_layout="NHWC", kernel_layout="HWIO");
  %3 = nn.bias_add(%2, %b, axis=3);
  %4 = nn.relu(%3);
  %5 = nn.max_pool2d(%4, pool_size=[2, 2], strides=[2, 2], layout="NHWC");
  %6 = add(%5, 1f);
  %7 = nn.global_avg_pool2d(%6, layout="NHWC");
  %8 = layout_transform(%7, src_layout="NHWC", dst_layout="NCHW");
  nn.batch_flatten(%8)
}
"""

INPUTS = {"x": rand(1, 3, 8, 8), "w": rand(4, 3, 3, 3), "b": rand(4)}


def test_golden_conv_bias_relu_pool() -> None:
    mod = relay.parse(CONV_BN_RELU_POOL)
    after = transform.ConvertLayout(NHWC)(mod)
    assert structural_diff(after, relay.parse(CONV_BN_RELU_POOL_NHWC)) is None, after.astext()
    assert_same_values(mod, after, **INPUTS)


def test_constant_weights_are_converted_at_compile_time() -> None:
    mod = relay.parse(CONV_BN_RELU_POOL)
    bound = relay.testing.bind_params(mod, {"w": INPUTS["w"], "b": INPUTS["b"]})
    after = transform.ConvertLayout(NHWC)(bound)
    assert len(transforms(after)) == 2  # the data in, the pooled result out
    (conv,) = calls_of(after, "nn.conv2d")
    assert isinstance(conv.args[1], Constant)
    np.testing.assert_array_equal(conv.args[1].data, INPUTS["w"].transpose(2, 3, 1, 0))
    assert_same_values(bound, after, x=INPUTS["x"])


def test_pipeline_text_and_the_tvm_spelling_are_the_same_pass() -> None:
    text = 'convert-layout{desired-layouts="nn.conv2d=NHWC:default"}'
    (from_text,) = parse_pipeline(text).passes
    assert from_text == transform.ConvertLayout(NHWC)
    assert str(transform.ConvertLayout(NHWC)) == text
    mod = relay.parse(CONV_BN_RELU_POOL)
    assert structural_diff(from_text(mod), transform.ConvertLayout(NHWC)(mod)) is None


def test_without_desired_layouts_nothing_changes() -> None:
    mod = relay.parse(CONV_BN_RELU_POOL)
    assert transform.ConvertLayout({})(mod) is mod
    assert transform.ConvertLayout({"nn.conv2d": ["NCHW"]})(mod)["main"] is mod["main"]


# each rule on a fixed case: (expression on %c = the NCHW conv output (1, 4, 6, 6),
# the operator to look at, the attribute, its value in the NHWC program)
RULE_CASES = [
    ("nn.bias_add(%c, %v)", "nn.bias_add", "axis", 3),
    ("nn.prelu(%c, %v)", "nn.prelu", "axis", 3),
    ("nn.softmax(%c, axis=1)", "nn.softmax", "axis", 3),
    ("nn.lrn(%c, size=3)", "nn.lrn", "axis", 3),
    ("nn.batch_norm(%c, %v, %v, %v, %p).0", "nn.batch_norm", "axis", 3),
    ("nn.layer_norm(%c, %v, %v, axis=1)", "nn.layer_norm", "axis", 3),
    ("nn.instance_norm(%c, %v, %v)", "nn.instance_norm", "axis", 3),
    ("nn.group_norm(%c, %v, %v, num_groups=2)", "nn.group_norm", "axis", 3),
    ("nn.l2_normalize(%c, eps=1e-3f, axis=[1])", "nn.l2_normalize", "axis", (3,)),
    ("sum(%c, axis=[1])", "sum", "axis", (3,)),
    ("mean(%c, axis=[2, 3], keepdims=True)", "mean", "axis", (1, 2)),
    ("max(%c, axis=[1], exclude=True)", "max", "axis", (0, 1, 2)),
    ("argmax(%c, axis=[1])", "argmax", "axis", (3,)),
    ("variance(%c, mean(%c, axis=[1], keepdims=True), axis=[1])", "variance", "axis", (3,)),
    ("transpose(%c, axes=[0, 2, 3, 1])", "transpose", "axes", (0, 1, 2, 3)),
    ("squeeze(nn.global_avg_pool2d(%c), axis=[2, 3])", "squeeze", "axis", (1, 2)),
    ("expand_dims(%c, axis=2)", "expand_dims", "axis", 0),
    ("concatenate((%c, %c), axis=1)", "concatenate", "axis", 3),
    ("split(%c, indices_or_sections=2, axis=1).1", "split", "axis", 3),
    ("strided_slice(%c, begin=[0, 1], end=[1, 3])", "strided_slice", "axes", (0, 3, 1, 2)),
    (
        "nn.pad(%c, 0f, pad_width=[[0, 0], [1, 2], [3, 4], [0, 0]])",
        "nn.pad",
        "pad_width",
        ((0, 0), (3, 4), (0, 0), (1, 2)),
    ),
    ("nn.avg_pool2d(%c, pool_size=[2, 2])", "nn.avg_pool2d", "layout", "NHWC"),
    ("nn.global_max_pool2d(%c)", "nn.global_max_pool2d", "layout", "NHWC"),
    (
        "nn.adaptive_avg_pool2d(%c, output_size=[2, 3])",
        "nn.adaptive_avg_pool2d",
        "layout",
        "NHWC",
    ),
    (
        'layout_transform(%c, src_layout="NCHW", dst_layout="NCHW2c")',
        "layout_transform",
        "src_layout",
        "NHWC",
    ),
    ("clip(%c, a_min=0f, a_max=1f)", "clip", "a_min", 0.0),
    ("where(greater(%c, 0f), %c, multiply(%c, 0.1f))", "where", None, None),
    ("add(%c, %k)", "add", None, None),
]


def _rule_program(expr: str) -> IRModule:
    return relay.parse(
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(1, 3, 6, 6), float32], %w: Tensor[(4, 3, 3, 3), float32], "
        "%v: Tensor[(4), float32], %p: Tensor[(4), float32], %k: Tensor[(4, 1, 1), float32]) {\n"
        "  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);\n"
        f"  {expr.replace('%c', '%0')}\n}}\n"
    )


RULE_INPUTS = {
    "x": rand(1, 3, 6, 6),
    "w": rand(4, 3, 3, 3),
    "v": rand(4),
    "p": np.abs(rand(4)) + 0.5,
    "k": rand(4, 1, 1),
}


@pytest.mark.parametrize(("expr", "name", "attr", "value"), RULE_CASES)
def test_each_layout_rule(expr: str, name: str, attr: str | None, value: object) -> None:
    mod = _rule_program(expr)
    after = transform.ConvertLayout(NHWC)(mod)
    target = calls_of(after, name)[-1]
    data = target.args[0]
    if isinstance(data, Tuple):
        data = data.fields[0]
    if name == "where":
        data = target.args[1]
    # the operator reads the NHWC value directly: no transform back in between
    assert not (isinstance(data, Call) and data.op is get_op("layout_transform")), after.astext()
    if attr is not None:
        got = getattr(target.attrs, attr)
        got = tuple(tuple(p) for p in got) if attr == "pad_width" else got
        assert got == value, after.astext()
    assert_same_values(mod, after, **RULE_INPUTS)


def test_a_lower_rank_constant_is_converted_once_at_compile_time() -> None:
    x = Var("x", TensorType((1, 3, 5, 5), "float32"))
    conv = call("nn.conv2d", x, Constant(rand(4, 3, 1, 1)), channels=4, kernel_size=(1, 1))
    k = rand(4, 1, 1)
    mod = main((x,), call("add", conv, Constant(k)))
    after = transform.ConvertLayout(NHWC)(mod)
    (add,) = calls_of(after, "add")
    assert isinstance(add.args[1], Constant)
    # (4, 1, 1) along C of NCHW is (1, 1, 4) along C of NHWC: its rank is kept
    np.testing.assert_array_equal(add.args[1].data, k.reshape(1, 1, 4))
    assert_same_values(mod, after, x=rand(1, 3, 5, 5))


def test_depthwise_conv_gets_hwoi_and_conv1d_nwc_gets_wio() -> None:
    x = Var("x", TensorType((1, 4, 6, 6), "float32"))
    dw = call("nn.conv2d", x, Constant(rand(4, 1, 3, 3)), groups=4, channels=4, kernel_size=(3, 3))
    mod = main((x,), dw)
    (conv,) = calls_of(transform.ConvertLayout(NHWC)(mod), "nn.conv2d")
    assert conv.attrs.kernel_layout == "HWOI"
    y = Var("y", TensorType((1, 2, 9), "float32"))
    c1 = call("nn.conv1d", y, Constant(rand(3, 2, 3)), channels=3, kernel_size=(3,))
    mod1 = main((y,), c1)
    after1 = transform.ConvertLayout({"nn.conv1d": ["NWC", "default"]})(mod1)
    (conv1,) = calls_of(after1, "nn.conv1d")
    assert (conv1.attrs.data_layout, conv1.attrs.kernel_layout) == ("NWC", "WIO")
    assert_same_values(mod1, after1, y=rand(1, 2, 9))


def test_an_operator_without_a_rule_runs_in_the_original_layout(monkeypatch) -> None:
    mod = _rule_program("nn.softmax(%c, axis=1)")
    softmax = get_op("nn.softmax")
    rule = LAYOUT_RULES[softmax]
    monkeypatch.delitem(LAYOUT_RULES, softmax)
    with pytest.raises(Error, match=r"operator `nn\.softmax` has no layout rule"):
        LAYOUT_RULES.lookup(softmax)
    after = transform.ConvertLayout(NHWC)(mod)
    (sm,) = calls_of(after, "nn.softmax")
    assert sm.attrs.axis == 1
    back = sm.args[0]
    assert isinstance(back, Call) and back.op is get_op("layout_transform")
    assert (back.attrs.src_layout, back.attrs.dst_layout) == ("NHWC", "NCHW")
    assert_same_values(mod, after, **RULE_INPUTS)
    assert rule is not None


def test_reshape_like_ops_are_barriers() -> None:
    mod = _rule_program("reshape(%c, newshape=[1, -1])")
    after = transform.ConvertLayout(NHWC)(mod)
    (reshape,) = calls_of(after, "reshape")
    assert reshape.args[0].op is get_op("layout_transform")


def test_lets_ifs_and_nested_functions() -> None:
    x = Var("x", TensorType((1, 3, 6, 6), "float32"))
    t = Var("t", TensorType((1, 4, 6, 6), "float32"))
    conv = call("nn.conv2d", x, Constant(rand(4, 3, 1, 1)), channels=4, kernel_size=(1, 1))
    relu = call("nn.relu", t)
    u = Var("u")
    f = Var("f")
    inner = Function([Var("z", TensorType((1, 4, 6, 6), "float32"))], relu)
    cond = call("greater", call("sum", t), Constant(np.float32(0)))
    body = Let(
        t,
        conv,
        Let(
            u,
            call("nn.relu", t),
            Let(f, inner, If(cond, Call(f, [u]), call("negative", u))),
        ),
    )
    mod = main((x,), body)
    after = transform.ConvertLayout(NHWC)(mod)
    assert any(c.attrs.data_layout == "NHWC" for c in calls_of(after, "nn.conv2d"))
    assert_same_values(mod, after, x=rand(1, 3, 6, 6))


def test_a_deep_program_converts_without_recursion() -> None:
    depth = 3000
    x = Var("x", TensorType((1, 2, 4, 4), "float32"))
    cur = call("nn.conv2d", x, Constant(rand(2, 2, 1, 1)), channels=2, kernel_size=(1, 1))
    for i in range(depth):
        cur = call("nn.relu" if i % 2 else "negative", cur)
    mod = main((x,), cur)
    start = time.perf_counter()
    after = transform.ConvertLayout(NHWC)(mod)
    assert time.perf_counter() - start < 30
    assert len(transforms(after)) == 2
    assert_same_values(mod, after, x=rand(1, 2, 4, 4))


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("desired", "message"),
    [
        ({"nn.conv2d": ["NHXW"]}, 'unknown data layout "NHXW" for `nn.conv2d`'),
        ({"nn.conv2d": ["NC2HW"]}, "unknown layout for `nn.conv2d`"),
        ({"nn.conv2d": ["NHWC", "HWIX"]}, 'unknown kernel layout "HWIX"'),
        ({"nn.conv2d": ["NWC"]}, "must have the axes N, C, H, W"),
        ({"nn.conv9d": ["NHWC"]}, "unknown operator `nn.conv9d`"),
        ({"nn.dense": ["NC"]}, "operator `nn.dense` has no layout to convert"),
        ({"nn.max_pool2d": ["NCHW", "OIHW"]}, "takes one layout"),
        ({"nn.max_pool2d": ["NCH2hW"]}, "cannot split a spatial axis"),
        ({"nn.conv2d": "NHWC"}, "are a list"),
    ],
)
def test_bad_desired_layouts_are_clear_errors(desired, message) -> None:
    with pytest.raises(PassError, match=message.replace("(", r"\(")):
        transform.ConvertLayout(desired)


def test_bad_layout_in_pipeline_text_points_at_the_option() -> None:
    with pytest.raises(PassError) as caught:
        parse_pipeline('dce,convert-layout{desired-layouts="nn.conv2d=NHQW"}')
    rendered = caught.value.render()
    assert "<pipeline>:1:" in rendered and 'unknown data layout "NHQW"' in rendered


def test_tags_relabel_by_position() -> None:
    tag = LayoutTag("NCHW", "NHW4cC")
    assert relabel(tag, "ABCD") == LayoutTag("ABCD", "ACD4bB")
    assert relabel(LayoutTag("NCHW", "NHWC"), "NCHW") == LayoutTag("NCHW", "NHWC")
    with pytest.raises(ValueError, match="different axes"):
        LayoutTag("NCHW", "NHW")


# ------------------------------------------------------------------ compiled NHWC models


def test_compiled_nhwc_network_agrees_with_the_interpreter() -> None:
    mod = relay.parse(CONV_BN_RELU_POOL)
    params = {"w": INPUTS["w"], "b": INPUTS["b"]}
    converted = transform.ConvertLayout(NHWC)(mod)
    model = relay.build(converted, target="llvm -num-threads=1", params=params)
    expected = interpret(mod, **INPUTS)
    np.testing.assert_allclose(model.run(x=INPUTS["x"]), expected, rtol=1e-4, atol=1e-4)


@settings(max_examples=3)
@given(convnets(max_layers=4), st.data())
def test_compiled_generated_convnets_agree(mod: IRModule, data) -> None:
    inputs = data.draw(inputs_for(mod))
    converted = transform.ConvertLayout(NHWC)(mod)
    model = relay.build(converted, target="llvm -num-threads=1")
    expected = interpret(mod, **inputs)
    got = model.run(**inputs)
    if isinstance(expected, tuple):
        for a, b in zip(got, expected):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
