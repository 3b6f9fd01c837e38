"""`winograd-conv2d`: which convolutions it rewrites (the measured rule), that the rewrite
keeps the program's meaning (interpreter, and compiled within Winograd's tolerance), and
that it runs in the opt-level-3 pipeline on the bound weights."""

from __future__ import annotations

import numpy as np
import pytest
import relay
from relay.backend.lower.computes.winograd import WINOGRAD_RTOL
from relay.driver import bind_params, optimize
from relay.lang.expr import Call, Constant
from relay.lang.traversal import post_order
from relay.passes import PassError, standard_pipeline, winograd_conv2d_pass
from relay.passes.winograd_conv2d import winograd_tile

RNG = np.random.default_rng(5)
WINOGRAD = "nn.contrib_conv2d_winograd_without_weight_transform"


def model(c, k, h, w, conv_attrs="padding=[1, 1, 1, 1], kernel_size=[3, 3]", kh=3):
    text = f"""#[version = "0.0.5"]
def @main(%x: Tensor[(1, {c}, {h}, {w}), float32], %w: Tensor[({k}, {c}, {kh}, {kh}), float32],
          %b: Tensor[({k}), float32]) {{
  %0 = nn.conv2d(%x, %w, channels={k}, {conv_attrs});
  %1 = nn.bias_add(%0, %b);
  nn.relu(%1)
}}"""
    mod = relay.parse(text)
    x = RNG.normal(size=(1, c, h, w)).astype("float32")
    wt = RNG.normal(size=(k, c, kh, kh)).astype("float32")
    b = RNG.normal(size=(k,)).astype("float32")
    return mod, x, {"w": wt, "b": b}


def ops(mod):
    return [
        n.op.name for n in post_order(mod["main"]) if isinstance(n, Call) and hasattr(n.op, "name")
    ]


def run(mod, x, params=None):
    return np.asarray(relay.interpret(mod, x=x, **(params or {})))


def test_rule_on_resnet18_layers():
    # measured (module docstring of the pass): direct on 56x56x64, F(4,3) on 28x28 and
    # 14x14, F(2,3) on 7x7x512
    assert [winograd_tile(c, c, h, h) for c, h in [(64, 56), (128, 28), (256, 14), (512, 7)]] == [
        0,
        4,
        4,
        2,
    ]
    assert winograd_tile(16, 16, 14, 14) == 0  # few channels: the transforms dominate


@pytest.mark.parametrize(("rule", "tile"), [("f2", 2), ("f4", 4), ("auto", 4)])
def test_constant_weight_rewrite_keeps_the_meaning(rule, tile):
    mod, x, params = model(33, 40, 11, 9)
    bound = bind_params(mod, params)
    out = winograd_conv2d_pass.with_options(rule=rule)(bound)
    names = ops(out)
    assert WINOGRAD in names and "nn.conv2d" not in names
    assert "nn.contrib_conv2d_winograd_weight_transform" not in names  # transformed here
    (call,) = [n for n in post_order(out["main"]) if isinstance(n, Call) and n.op.name == WINOGRAD]
    assert int(call.attrs.tile_size) == tile
    np.testing.assert_allclose(run(out, x), run(bound, x), rtol=1e-4, atol=1e-4)


def test_variable_weight_gets_a_transform_call_when_asked():
    mod, x, params = model(32, 32, 8, 8)
    kept = winograd_conv2d_pass(mod)
    assert "nn.conv2d" in ops(kept)  # constant weights only, by default
    out = winograd_conv2d_pass.with_options(constant_weights_only=False, rule="f4")(mod)
    assert "nn.contrib_conv2d_winograd_weight_transform" in ops(out)
    want = run(mod, x, params)
    np.testing.assert_allclose(run(out, x, params), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("attrs", "kh"),
    [
        ("strides=[2, 2], padding=[1, 1, 1, 1], kernel_size=[3, 3]", 3),
        ("padding=[1, 1, 1, 1], dilation=[2, 2], kernel_size=[3, 3]", 3),
        ("kernel_size=[1, 1]", 1),
    ],
)
def test_ineligible_convolutions_are_left_alone(attrs, kh):
    mod, _, params = model(32, 32, 14, 14, attrs, kh)
    out = winograd_conv2d_pass.with_options(rule="f4")(bind_params(mod, params))
    assert "nn.conv2d" in ops(out) and WINOGRAD not in ops(out)


def test_unknown_rule_is_an_error():
    mod, _, params = model(32, 32, 14, 14)
    with pytest.raises(PassError, match="rule must be one of"):
        winograd_conv2d_pass.with_options(rule="f3")(bind_params(mod, params))
    with pytest.raises(PassError, match="weight_block must be 0"):
        winograd_conv2d_pass.with_options(weight_block=-6)(bind_params(mod, params))


def test_opt_level_3_build_uses_winograd_on_bound_weights():
    assert "winograd-conv2d" in str(standard_pipeline(3))
    assert "winograd-conv2d" not in str(standard_pipeline(2))
    mod, x, params = model(40, 36, 13, 10)
    optimized = optimize(bind_params(mod, params), 3).module
    assert WINOGRAD in optimized.astext()
    want = run(mod, x, params)
    got = relay.build(mod, params=params, opt_level=3).run(x=x)
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=WINOGRAD_RTOL[4] * scale)


@pytest.mark.parametrize("tile", [2, 4])
def test_folded_weight_is_the_float64_transform_to_float32_rounding(tile):
    # the pass transforms a constant weight in float32 (one matrix product); the
    # interpreter's transform, the oracle, sums in float64
    from relay.backend.runtime.op_impls import implementation_for
    from relay.lang.op import get_op
    from relay.passes.winograd_conv2d import transform_weight

    weight = RNG.normal(size=(40, 36, 3, 3)).astype("float32")
    op = get_op("nn.contrib_conv2d_winograd_weight_transform")
    want = np.asarray(implementation_for(op)([weight], op.make_attrs(tile_size=tile)))
    got = transform_weight(weight, tile)
    assert got.shape == want.shape and got.dtype == np.float32
    assert not got.flags.writeable  # a constant keeps it without a copy
    np.testing.assert_allclose(got, want, rtol=0, atol=4e-7 * np.abs(want).max())


def _winograd_weight(out):
    (call,) = [n for n in post_order(out["main"]) if isinstance(n, Call) and n.op.name == WINOGRAD]
    return call.args[1].data


@pytest.mark.parametrize(
    ("c", "k", "h", "block", "shape"),
    [
        (64, 64, 14, 6, (6, 6, 11, 64, 6)),
        (48, 36, 7, 6, (4, 4, 6, 48, 6)),
        (40, 40, 28, 4, (6, 6, 10, 40, 4)),
        (64, 64, 14, 0, (6, 6, 64, 64)),
    ],
)
def test_constant_weight_is_packed_by_output_channels(c, k, h, block, shape):
    """The transformed weight is packed by `weight_block` output channels (rows past CO
    zero); the packed program computes what the unpacked one does, up to the float32
    rounding of the transform (its product runs over the channels in another order)."""
    mod, x, params = model(c, k, h, h)
    bound = bind_params(mod, params)
    out = winograd_conv2d_pass.with_options(weight_block=block)(bound)
    assert _winograd_weight(out).shape == shape
    plain = winograd_conv2d_pass.with_options(weight_block=0)(bound)
    want = run(plain, x)
    np.testing.assert_allclose(run(out, x), want, rtol=0, atol=1e-6 * np.abs(want).max())
    np.testing.assert_allclose(run(out, x), run(bound, x), rtol=1e-4, atol=1e-4)


def test_build_packs_the_winograd_weight():
    mod, x, params = model(64, 64, 14, 14)
    optimized = optimize(bind_params(mod, params), 3).module
    constants = [n.data.shape for n in post_order(optimized["main"]) if isinstance(n, Constant)]
    assert (6, 6, 11, 64, 6) in constants  # fused: the packed weight is the kernel's argument
    want = run(mod, x, params)
    got = relay.build(mod, params=params, opt_level=3).run(x=x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=WINOGRAD_RTOL[4] * np.abs(want).max())


@pytest.mark.parametrize(("co", "block"), [(40, 6), (36, 6), (13, 4)])
def test_folded_weight_is_packed_in_the_product(co, block):
    from relay.lang.opdefs.semantics import pack_winograd_weight
    from relay.passes.winograd_conv2d import transform_weight

    weight = RNG.normal(size=(co, 20, 3, 3)).astype("float32")
    for tile in (2, 4):
        want = pack_winograd_weight(transform_weight(weight, tile), block)
        got = transform_weight(weight, tile, block)
        assert got.shape == want.shape and not got.flags.writeable
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * np.abs(want).max())
