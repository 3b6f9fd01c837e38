"""`alter-op-layout` (TVM's AlterOpLayout on x86): NCHW convolutions become convolutions on
channel-packed layouts (`NCHW{b}c`), the activations between them stay packed, transforms
appear only at the boundaries, and the values of the program do not change (the
interpreter is the oracle)."""

from __future__ import annotations

import logging
import subprocess
import sys
import time

import numpy as np
import pytest
import relay
from hypothesis import given, settings
from hypothesis import strategies as st
from relay import transform
from relay.backend.runtime import interpret
from relay.driver import build, optimize
from relay.lang import (
    Call,
    Constant,
    IRModule,
    Tuple,
    TupleGetItem,
    Var,
)
from relay.lang.op import get_op
from relay.lang.types import TensorType
from relay.passes import PassContext, PassError, parse_pipeline, standard_pipeline
from relay.passes.alter_op_layout import channel_block
from relay.testing import bind_params, check_pass

from .ir_build import call, calls_of, main, ops_of

RNG = np.random.default_rng(0)
ROOT = __file__.rsplit("/tests/", 1)[0]


def rand(*shape: int, rng: np.random.Generator = RNG) -> np.ndarray:
    return rng.standard_normal(shape).astype("float32")


def layouts(mod: IRModule) -> list[tuple[str, str]]:
    return [
        (str(t.attrs.src_layout), str(t.attrs.dst_layout))
        for t in calls_of(mod, "layout_transform")
    ]


def assert_same_values(before: IRModule, after: IRModule, **inputs) -> None:
    np.testing.assert_allclose(
        np.asarray(interpret(after, **inputs)),
        np.asarray(interpret(before, **inputs)),
        rtol=1e-4,
        atol=1e-4,
    )


# ------------------------------------------------------------------ generated convnets


@st.composite
def convnets(draw, channels=(1, 2, 3, 4, 6, 8, 12), max_layers: int = 7) -> IRModule:
    """NCHW networks with constant weights: convolutions (plain, strided, depthwise,
    grouped), bias adds, relu/clip, pools, residual adds, channel concatenations, batch
    norm, channel counts the block may not divide; ending with global pooling, a mean over
    the spatial axes, two outputs or none of these."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    c, h, w = draw(st.sampled_from(channels)), draw(st.integers(3, 7)), draw(st.integers(3, 7))
    x = Var("x", TensorType((1, c, h, w), "float32"))
    seen: list[tuple[object, tuple[int, ...]]] = [(x, (1, c, h, w))]
    cur, shape = seen[0]
    kinds = ["conv", "conv", "bias", "relu", "clip", "pool", "residual", "concat", "bn"]
    for layer in range(draw(st.integers(1, max_layers))):
        kind = "conv" if layer == 0 else draw(st.sampled_from(kinds))
        _, ch, hh, ww = shape
        if kind == "conv":
            form = draw(st.sampled_from(["plain", "plain", "depthwise", "grouped"]))
            groups = ch if form == "depthwise" else 2 if form == "grouped" and ch % 2 == 0 else 1
            oc = ch if groups == ch else draw(st.sampled_from(channels))
            oc = oc * groups if groups > 1 and groups != ch else oc
            k = draw(st.sampled_from([1, 3]))
            stride = draw(st.sampled_from([1, 2])) if min(hh, ww) >= 3 else 1
            pad = k // 2
            cur = call(
                "nn.conv2d",
                cur,
                Constant(rand(oc, ch // groups, k, k, rng=rng)),
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


def test_generated_convnets_packed_by_4_compute_the_same_values() -> None:
    report = check_pass(
        transform.AlterOpLayout(4), convnets(), rtol=1e-4, atol=1e-4, min_changed=0.9
    )
    assert report.changed > 0


def test_generated_convnets_packed_by_8_with_channels_it_does_not_divide() -> None:
    check_pass(
        transform.AlterOpLayout(8),
        convnets(channels=(3, 5, 8, 12, 16)),
        rtol=1e-4,
        atol=1e-4,
        min_changed=0.9,
        max_examples=30,
    )


@settings(max_examples=30)
@given(convnets())
def test_transforms_only_where_the_layout_changes(mod: IRModule) -> None:
    after = transform.AlterOpLayout(4)(mod)
    for t in calls_of(after, "layout_transform"):
        assert t.attrs.src_layout != t.attrs.dst_layout
        inner = t.args[0]
        assert not (isinstance(inner, Call) and inner.op is get_op("layout_transform")), (
            after.astext()
        )
    # every plain and depthwise convolution is packed; other grouped ones are not
    for conv in calls_of(after, "nn.conv2d"):
        assert int(conv.attrs.groups) > 1 and str(conv.attrs.data_layout) == "NCHW"


def test_random_programs_with_layout_sensitive_ops() -> None:
    ops = [
        "nn.conv2d",
        "nn.max_pool2d",
        "nn.global_avg_pool2d",
        "nn.bias_add",
        "nn.pad",
        "concatenate",
        "split",
        "sum",
        "mean",
        "add",
        "strided_slice",
        "reshape",
    ]
    check_pass(
        transform.AlterOpLayout(2),
        ops=ops,
        rtol=1e-4,
        atol=1e-4,
        max_examples=60,
        min_changed=0.01,
    )


# each rule on a split channel axis: (expression on %c = a packed conv output (1, 8, 6, 6)
# with block 4, the operator to look at, whether it reads the packed value, the attribute
# and its value in the packed program)
SPLIT_RULE_CASES = [
    ("nn.bias_add(%c, %v)", "add", True, None, None),
    ("nn.relu(%c)", "nn.relu", True, None, None),
    ("add(%c, %k)", "add", True, None, None),
    (
        "nn.pad(%c, 0f, pad_width=[[0, 0], [0, 0], [1, 2], [3, 4]])",
        "nn.pad",
        True,
        "pad_width",
        ((0, 0), (0, 0), (1, 2), (3, 4), (0, 0)),
    ),
    ("nn.pad(%c, 0f, pad_width=[[0, 0], [1, 0], [0, 0], [0, 0]])", "nn.pad", False, None, None),
    ("sum(%c, axis=[2, 3])", "sum", True, "axis", (2, 3)),
    ("mean(%c, axis=[1], exclude=True, keepdims=True)", "mean", True, "axis", (0, 2, 3)),
    ("sum(%c, axis=[1])", "sum", False, None, None),
    ("argmax(%c, axis=[3])", "argmax", True, "axis", (3,)),
    ("split(%c, indices_or_sections=2, axis=1).1", "split", True, "axis", 1),
    ("split(%c, indices_or_sections=[4], axis=1).0", "split", True, "indices_or_sections", (1,)),
    ("split(%c, indices_or_sections=[2], axis=1).0", "split", False, None, None),
    ("split(%c, indices_or_sections=3, axis=2).0", "split", True, "axis", 2),
    ("concatenate((%c, %c), axis=1)", "concatenate", True, "axis", 1),
    ("concatenate((%c, %c), axis=3)", "concatenate", True, "axis", 3),
    ("nn.avg_pool2d(%c, pool_size=[2, 2])", "nn.avg_pool2d", True, "layout", "NCHW4c"),
    ("nn.global_max_pool2d(%c)", "nn.global_max_pool2d", True, "layout", "NCHW4c"),
    (
        "nn.adaptive_avg_pool2d(%c, output_size=[2, 3])",
        "nn.adaptive_avg_pool2d",
        True,
        "layout",
        "NCHW4c",
    ),
    ("nn.softmax(%c, axis=1)", "nn.softmax", False, None, None),
    ("nn.batch_norm(%c, %v, %v, %v, %p).0", "nn.batch_norm", False, None, None),
    ("transpose(%c, axes=[0, 2, 3, 1])", "transpose", False, None, None),
]


@pytest.mark.parametrize(("expr", "name", "packed", "attr", "value"), SPLIT_RULE_CASES)
def test_each_rule_on_a_split_channel_axis(expr, name, packed, attr, value) -> None:
    mod = relay.parse(
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(1, 3, 6, 6), float32], %w: Tensor[(8, 3, 3, 3), float32], "
        "%v: Tensor[(8), float32], %p: Tensor[(8), float32], %k: Tensor[(8, 1, 1), float32]) {\n"
        "  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=8, kernel_size=[3, 3]);\n"
        f"  {expr.replace('%c', '%0')}\n}}\n"
    )
    after = transform.AlterOpLayout(4)(mod)
    target = calls_of(after, name)[-1]
    data = target.args[0].fields[0] if isinstance(target.args[0], Tuple) else target.args[0]
    unpacked = isinstance(data, Call) and data.op is get_op("layout_transform")
    assert unpacked != packed, after.astext()
    if attr is not None:
        got = getattr(target.attrs, attr)
        got = tuple(tuple(p) for p in got) if attr == "pad_width" else got
        assert got == value, after.astext()
    rng = np.random.default_rng(2)
    inputs = {
        "x": rand(1, 3, 6, 6, rng=rng),
        "w": rand(8, 3, 3, 3, rng=rng),
        "v": rand(8, rng=rng),
        "p": np.abs(rand(8, rng=rng)) + 0.5,
        "k": rand(8, 1, 1, rng=rng),
    }
    assert_same_values(mod, after, **inputs)


# ------------------------------------------------------------------------ fixed programs

CHAIN = """
#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w1: Tensor[(16, 3, 3, 3), float32],
          %b1: Tensor[(16), float32], %w2: Tensor[(16, 1, 3, 3), float32],
          %w3: Tensor[(16, 16, 1, 1), float32], %w4: Tensor[(8, 32, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w1, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %b1);
  %2 = nn.relu(%1);
  %3 = nn.conv2d(%2, %w2, padding=[1, 1, 1, 1], groups=16, channels=16, kernel_size=[3, 3]);
  %4 = clip(%3, a_min=0f, a_max=6f);
  %5 = nn.conv2d(%4, %w3, channels=16, kernel_size=[1, 1]);
  %6 = add(%5, %2);
  %7 = concatenate((%6, %4), axis=1);
  %8 = nn.conv2d(%7, %w4, channels=8, kernel_size=[1, 1]);
  %9 = nn.max_pool2d(%8, pool_size=[2, 2], strides=[2, 2]);
  %10 = nn.global_avg_pool2d(%9);
  nn.batch_flatten(%10)
}
"""


def chain_inputs() -> dict[str, np.ndarray]:
    mod = relay.parse(CHAIN)
    rng = np.random.default_rng(1)
    return {
        p.name_hint: rand(*(int(d) for d in p.type_annotation.shape), rng=rng)
        for p in mod["main"].params
    }


def test_a_chain_is_packed_with_one_transform_in_and_one_out() -> None:
    inputs = chain_inputs()
    weights = {k: v for k, v in inputs.items() if k != "x"}
    mod = bind_params(relay.parse(CHAIN), weights)
    after = transform.AlterOpLayout(8)(mod)
    ops = ops_of(after)
    assert ops["nn.contrib_conv2d_NCHWc"] == 3 and ops["nn.contrib_depthwise_conv2d_NCHWc"] == 1
    assert ops["nn.conv2d"] == 0 and ops["nn.bias_add"] == 0
    # the weights were packed at compile time: only the data goes in, the pooled result out
    assert layouts(after) == [("NCHW", "NCHW3c"), ("NCHW8c", "NCHW")], after.astext()
    (first, *_) = calls_of(after, "nn.contrib_conv2d_NCHWc")
    assert (first.attrs.data_layout, first.attrs.kernel_layout, first.attrs.out_layout) == (
        "NCHW3c",
        "OIHW3i8o",
        "NCHW8c",
    )
    # OIHW3i8o: [O/8, I/3, H, W, 3i, 8o], element (o // 8, i // 3, h, w, i % 3, o % 8)
    packed = weights["w1"].reshape(2, 8, 1, 3, 3, 3).transpose(0, 2, 4, 5, 3, 1)
    np.testing.assert_array_equal(first.args[1].data, packed)
    (dw,) = calls_of(after, "nn.contrib_depthwise_conv2d_NCHWc")
    assert dw.attrs.kernel_layout == "OIHW1i8o" and dw.args[1].data.shape == (2, 1, 3, 3, 1, 8)
    # the bias is a broadcasting add of a [C/8, 1, 1, 8] constant
    bias = [a for a in calls_of(after, "add") if isinstance(a.args[1], Constant)]
    assert len(bias) == 1 and bias[0].args[1].data.shape == (2, 1, 1, 8)
    np.testing.assert_array_equal(bias[0].args[1].data[:, 0, 0, :].reshape(16), weights["b1"])
    (concat,) = calls_of(after, "concatenate")
    assert concat.attrs.axis == 1
    assert_same_values(mod, after, x=inputs["x"])


def test_without_constant_weights_the_weights_are_transformed_once() -> None:
    mod = relay.parse(CHAIN)
    after = transform.AlterOpLayout(8)(mod)
    kernels = [(s, d) for s, d in layouts(after) if s == "OIHW"]
    assert sorted(d for _, d in kernels) == ["OIHW1i8o", "OIHW3i8o", "OIHW8i8o", "OIHW8i8o"]
    assert_same_values(mod, after, **chain_inputs())


def test_channels_the_block_does_not_divide_get_the_largest_divisor() -> None:
    assert [channel_block(c, 8) for c in (3, 5, 8, 12, 16, 13, 1)] == [3, 5, 8, 6, 8, 1, 1]
    assert channel_block(24, 16) == 12
    x = Var("x", TensorType((1, 12, 5, 5), "float32"))
    conv = call("nn.conv2d", x, Constant(rand(20, 12, 1, 1)), channels=20, kernel_size=(1, 1))
    mod = main((x,), call("nn.relu", conv))
    (packed,) = calls_of(transform.AlterOpLayout(8)(mod), "nn.contrib_conv2d_NCHWc")
    assert packed.attrs.kernel_layout == "OIHW6i5o" and packed.attrs.out_layout == "NCHW5c"
    assert_same_values(mod, transform.AlterOpLayout(8)(mod), x=rand(1, 12, 5, 5))


def test_a_concatenate_whose_parts_the_block_does_not_divide_is_unpacked() -> None:
    x = Var("x", TensorType((1, 4, 5, 5), "float32"))
    a = call("nn.conv2d", x, Constant(rand(8, 4, 1, 1)), channels=8, kernel_size=(1, 1))
    b = call("nn.conv2d", x, Constant(rand(6, 4, 1, 1)), channels=6, kernel_size=(1, 1))
    joined = call("concatenate", Tuple([a, b]), axis=1)
    mod = main((x,), call("nn.relu", joined))
    after = transform.AlterOpLayout(8)(mod)
    (concat,) = calls_of(after, "concatenate")
    assert concat.attrs.axis == 1
    assert all(
        isinstance(f, Call) and f.op is get_op("layout_transform") for f in concat.args[0].fields
    )
    assert_same_values(mod, after, x=rand(1, 4, 5, 5))
    # blocks that divide every part: the blocks are joined whole, no transform around it
    after4 = transform.AlterOpLayout(2)(mod)
    (concat4,) = calls_of(after4, "concatenate")
    assert not any(
        isinstance(f, Call) and f.op is get_op("layout_transform") for f in concat4.args[0].fields
    )
    assert_same_values(mod, after4, x=rand(1, 4, 5, 5))


def test_grouped_and_winograd_convolutions_stay_unpacked() -> None:
    x = Var("x", TensorType((1, 8, 6, 6), "float32"))
    conv = call("nn.conv2d", x, Constant(rand(8, 8, 1, 1)), channels=8, kernel_size=(1, 1))
    grouped = call(
        "nn.conv2d", conv, Constant(rand(8, 4, 3, 3)), groups=2, channels=8, kernel_size=(3, 3)
    )
    mod = main((x,), call("nn.relu", grouped))
    after = transform.AlterOpLayout(8)(mod)
    assert ops_of(after)["nn.contrib_conv2d_NCHWc"] == 1
    (kept,) = calls_of(after, "nn.conv2d")
    assert kept.attrs.data_layout == "NCHW" and kept.args[0].op is get_op("layout_transform")
    assert_same_values(mod, after, x=rand(1, 8, 6, 6))
    wino = transform.WinogradConv2d().with_options(rule="f2")(
        main((x,), call("nn.conv2d", x, Constant(rand(8, 8, 3, 3)), channels=8, kernel_size=(3, 3)))
    )
    assert transform.AlterOpLayout(8)(wino)["main"] is wino["main"]


def test_block_zero_is_off_and_a_negative_block_is_an_error() -> None:
    mod = relay.parse(CHAIN)
    assert transform.AlterOpLayout(0)(mod)["main"] is mod["main"]
    with pytest.raises(PassError, match="block must be 0"):
        transform.AlterOpLayout(-1)
    (p,) = parse_pipeline("alter-op-layout{block=4}").passes
    assert p == transform.AlterOpLayout(4) and str(p) == "alter-op-layout{block=4}"
    with pytest.raises(PassError, match="block"):
        parse_pipeline("alter-op-layout{block=x}")


def test_an_operator_without_a_rule_is_noted(caplog) -> None:
    with caplog.at_level(logging.INFO, logger="relay.passes"):
        after = transform.AlterOpLayout(8)(relay.parse(CHAIN))
    notes = [r.getMessage() for r in caplog.records]
    assert any(
        "op nn.batch_flatten has no layout rule: kept NCHW, with transforms around it" in n
        for n in notes
    ), notes
    (flatten,) = calls_of(after, "nn.batch_flatten")
    assert flatten.args[0].op is get_op("layout_transform")


def test_relay_opt_debug_prints_the_notes(tmp_path) -> None:
    path = tmp_path / "m.relay"
    path.write_text(CHAIN)
    done = subprocess.run(
        [sys.executable, "-m", "relay", "opt", "-O", "3", "--debug", str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "note: alter-op-layout: op nn.batch_flatten has no layout rule" in done.stderr
    assert "nn.contrib_conv2d_NCHWc" in done.stdout


def test_a_deep_program_packs_without_recursion() -> None:
    x = Var("x", TensorType((1, 8, 4, 4), "float32"))
    cur = call("nn.conv2d", x, Constant(rand(8, 8, 1, 1)), channels=8, kernel_size=(1, 1))
    for i in range(3000):
        cur = call("nn.relu" if i % 2 else "negative", cur)
    mod = main((x,), cur)
    start = time.perf_counter()
    after = transform.AlterOpLayout(8)(mod)
    assert time.perf_counter() - start < 30
    assert len(layouts(after)) == 2
    assert_same_values(mod, after, x=rand(1, 8, 4, 4))


# -------------------------------------------------------------------- in the pipeline


def test_the_standard_pipeline_packs_after_winograd() -> None:
    names = [p.name for p in standard_pipeline(3).passes]
    assert names.index("winograd-conv2d") < names.index("alter-op-layout") < names.index("fuse-ops")
    assert "alter-op-layout" not in [p.name for p in standard_pipeline(2).passes]


def _optimized(mod: IRModule, **kwargs) -> IRModule:
    with PassContext(opt_level=3, disabled_pass=["fuse-ops"], **kwargs):
        return optimize(mod, None).module


def test_the_block_comes_from_the_target_unless_the_context_sets_it() -> None:
    mod = bind_params(relay.parse(CHAIN), {k: v for k, v in chain_inputs().items() if k != "x"})
    with PassContext(opt_level=3, disabled_pass=["fuse-ops"]):
        by_default = optimize(mod, None).module
        by_lanes = optimize(mod, None, vector_lanes=4).module
    with PassContext(opt_level=3, disabled_pass=["fuse-ops"], config={"alter-op-layout.block": 2}):
        by_config = optimize(mod, None, vector_lanes=4).module
    assert layouts(by_default)[-1] == ("NCHW8c", "NCHW")
    assert layouts(by_lanes)[-1] == ("NCHW4c", "NCHW")
    assert layouts(by_config)[-1] == ("NCHW2c", "NCHW")


def test_built_model_with_bound_weights_packs_no_weight_at_run_time() -> None:
    inputs = chain_inputs()
    weights = {k: v for k, v in inputs.items() if k != "x"}
    dump: dict[str, str] = {}
    model = build(relay.parse(CHAIN), target="llvm -num-threads=1", params=weights, dump=dump)
    text = dump["relay"]
    assert "nn.contrib_conv2d_NCHWc" in text and 'src_layout="OIHW"' not in text
    assert text.count("layout_transform(") == 2
    expected = interpret(relay.parse(CHAIN), **inputs)
    np.testing.assert_allclose(model.run(x=inputs["x"]), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["mobilenet_v2", "resnet18"])
def test_example_models_through_the_o3_pipeline(name: str) -> None:
    sys.path.insert(0, f"{ROOT}/bench")
    from peers import load_make_weights

    make_weights = load_make_weights()
    module = make_weights.load_model(make_weights.model_path(name))
    weights = make_weights.make_weights(make_weights.main_parameters(module), seed=0)
    data = weights.pop("data")
    mod = bind_params(module, weights)
    after = _optimized(mod)
    ops = ops_of(after)
    assert ops["nn.conv2d"] == 0
    if name == "mobilenet_v2":
        # one transform in (RGB, 3 channels), one out before the classifier
        assert layouts(after) == [("NCHW", "NCHW3c"), ("NCHW8c", "NCHW")]
        assert ops["nn.contrib_depthwise_conv2d_NCHWc"] == 17
        np.testing.assert_allclose(
            interpret(after, data=data), interpret(mod, data=data), rtol=1e-4, atol=1e-6
        )
    else:
        # the Winograd convolutions stay NCHW: a pair of transforms around each of them
        winograd = ops["nn.contrib_conv2d_winograd_without_weight_transform"]
        assert ops["layout_transform"] <= 2 + 2 * winograd


RESIDUAL = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16, 8, 8), float32], %w: Tensor[(16, 16, 3, 3), float32],
          %y: Tensor[(1, 16, 8, 8), {dtype}]) {{
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);
  %1 = cast(%0, dtype="{dtype}");
  add(%1, %y)
}}"""


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_integer_sums_with_an_unpacked_operand_stay_unpacked(dtype: str) -> None:
    """A quantized ResNet's residual add: an integer sum of a packed conv's value and one in
    the original layout (from an int8 conv, which is not packed) runs unpacked, so the sum
    is not packed and then unpacked again for the next int8 conv; a float sum follows the
    packed conv as before (the other operand is packed)."""
    rng = np.random.default_rng(3)
    w = rng.normal(size=(16, 16, 3, 3)).astype("float32")
    mod = bind_params(relay.parse(RESIDUAL.format(dtype=dtype)), {"w": w})
    after = transform.AlterOpLayout(8)(mod)
    if dtype == "int32":
        assert layouts(after) == [("NCHW", "NCHW8c"), ("NCHW8c", "NCHW")], after.astext()
        (add,) = calls_of(after, "add")
        assert add.args[1].name_hint == "y"
    else:
        assert layouts(after) == [("NCHW", "NCHW8c"), ("NCHW", "NCHW8c"), ("NCHW8c", "NCHW")]
    x = rng.normal(size=(1, 16, 8, 8)).astype("float32")
    y = rng.integers(-50, 50, (1, 16, 8, 8)).astype(dtype)
    assert_same_values(mod, after, x=x, y=y)
