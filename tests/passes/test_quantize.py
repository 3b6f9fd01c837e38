"""relay.quantize: qconfig, annotate rules, calibration, simulate vs realize, round trip."""

from __future__ import annotations

import math

import numpy as np
import pytest
import relay
from relay.backend.runtime import interpret
from relay.lang.op import get_op
from relay.lang.structural import structural_equal
from relay.passes.quantize import (
    ANNOTATE_RULES,
    REALIZE_RULES,
    QuantizeError,
    kl_threshold,
    percentile_threshold,
    weight_scale,
)
from relay.passes.quantize.arith import fixed_point
from relay.quantize import qconfig, quantize, quantize_with_report
from relay.typecheck import check_module

from .quantize_nets import convnet, mlp


def _input(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(1000 + seed).normal(size=shape).astype(np.float32)


def _dataset(seed: int, shape: tuple[int, ...], n: int = 3) -> list[dict[str, np.ndarray]]:
    return [{"x": _input(seed * 10 + k, shape)} for k in range(n)]


# ---------------------------------------------------------------- qconfig


def test_qconfig_defaults_are_tvms():
    with qconfig() as cfg:
        assert (cfg.nbit_input, cfg.nbit_weight, cfg.nbit_activation) == (8, 8, 32)
        assert (cfg.dtype_input, cfg.dtype_weight, cfg.dtype_activation) == (
            "int8",
            "int8",
            "int32",
        )
        assert cfg.global_scale == 8.0 and cfg.calibrate_mode == "global_scale"
        assert cfg.weight_scale == "power2" and cfg.skip_conv_layers == (0,)
        assert cfg.skip_dense_layer and not cfg.do_simulation and cfg.round_for_shift
        assert cfg.debug_enabled_ops is None and cfg.rounding == "UPWARD"
        # departures from TVM's flow (documented in QConfig): int32 biases by default
        assert cfg.bias_mode == "int32" and not cfg.per_channel and not cfg.bias_correction


def test_qconfig_nests_and_restores():
    with qconfig(global_scale=4.0):
        with qconfig(weight_scale="max") as inner:
            assert inner.global_scale == 4.0 and inner.weight_scale == "max"
        assert relay.quantize.current_qconfig().weight_scale == "power2"
    assert relay.quantize.current_qconfig().global_scale == 8.0


@pytest.mark.parametrize(
    "options, words",
    [
        ({"nbits_input": 8}, "unknown qconfig option nbits_input"),
        ({"calibrate_mode": "kl"}, "calibrate_mode must be one of"),
        ({"weight_scale": "min"}, "weight_scale must be one of"),
        ({"rounding": "DOWN"}, "rounding must be one of"),
        ({"global_scale": -1.0}, "global_scale must be a positive number"),
        ({"nbit_input": 0}, "nbit_input must be an integer"),
        ({"dtype_input": "uint3"}, "dtype_input must be one of"),
        ({"skip_conv_layers": "0"}, "skip_conv_layers must be a list"),
    ],
)
def test_qconfig_rejects_bad_options(options, words):
    with pytest.raises(QuantizeError, match=words), qconfig(**options):
        pass


# ---------------------------------------------------------------- rules tables


def test_every_annotate_rule_has_a_realize_rule():
    missing = [op.name for op in ANNOTATE_RULES if op not in REALIZE_RULES]
    assert missing == ["nn.global_avg_pool2d"]  # it reads float: nothing to realize


def test_rules_cover_the_operators_the_issue_names():
    names = {op.name for op in ANNOTATE_RULES}
    for name in ["nn.conv2d", "nn.dense", "add", "multiply", "nn.max_pool2d", "nn.avg_pool2d",
                 "concatenate", "nn.relu", "clip", "nn.global_avg_pool2d"]:  # fmt: skip
        assert get_op(name).name in names


# ---------------------------------------------------------------- calibration math


def test_weight_scales():
    w = np.array([0.3, -0.7, 0.1], np.float32)
    assert weight_scale(w, "power2") == 1.0
    assert weight_scale(w * 4, "power2") == 4.0
    assert weight_scale(w, "max") == pytest.approx(0.7)
    assert weight_scale(np.zeros(3, np.float32), "power2") == 1.0


def test_kl_threshold_lies_in_the_histogram_range():
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.normal(size=20000), [40.0, -35.0]]).astype(np.float32)
    threshold = kl_threshold(values)
    assert 0 < threshold <= 40.0
    assert threshold < 20.0  # the two outliers are clipped away
    assert threshold > 2.0  # but not the body of the distribution


def test_kl_threshold_of_a_uniform_distribution_keeps_its_range():
    values = np.random.default_rng(1).uniform(-3, 3, 50000)
    assert kl_threshold(values) > 2.5


def test_percentile_threshold():
    values = np.arange(-1000, 1001, dtype=np.float32)
    assert percentile_threshold(values, 0.99999) == 1000.0
    assert percentile_threshold(values, 0.5) == pytest.approx(500.0, abs=1)


@pytest.mark.parametrize("factor", [0.3, 0.75, 1e-4, 1.7, 12.345])
def test_fixed_point_decomposition(factor):
    multiplier, shift = fixed_point(factor)
    assert 2**30 <= multiplier < 2**31
    assert math.isclose(multiplier * 2.0 ** (shift - 31), factor, rel_tol=1e-9)


# ---------------------------------------------------------------- simulate vs realize


def _both(mod, params, dataset=None, **options):
    with qconfig(**options):
        realized, report = quantize_with_report(mod, params, dataset)
        with qconfig(do_simulation=True):
            simulated = quantize(mod, params, dataset)
    return realized, simulated, report


def _largest_input_step(report) -> float:
    from relay.passes.quantize import INPUT

    return max(s.dom_scale for p, s in report.scales if p.kind == INPUT)


@pytest.mark.parametrize("seed", range(4))
def test_power2_global_scale_convnet_is_exact(seed):
    # All scales are powers of two: every rescale is an exact shift, the realized integer
    # program equals the fake-quantized float one up to the avg pool's integer division.
    mod, params = convnet(seed, head=False)
    realized, simulated, report = _both(mod, params, skip_conv_layers=[])
    assert report.points["weight"] >= 5 and report.points["input"] >= 4
    for k in range(3):
        x = _input(seed * 7 + k, (1, 3, 8, 8))
        got, want = interpret(realized, x=x), interpret(simulated, x=x)
        assert np.abs(got - want).max() <= _largest_input_step(report)


@pytest.mark.parametrize("seed", range(4))
def test_mlp_integer_path_is_exact(seed):
    mod, params = mlp(seed)
    realized, simulated, _ = _both(mod, params, skip_dense_layer=False)
    x = _input(seed, tuple(mod["main"].params[0].type_annotation.shape))
    np.testing.assert_array_equal(interpret(realized, x=x), interpret(simulated, x=x))


@pytest.mark.parametrize("mode", ["kl_divergence", "percentile"])
@pytest.mark.parametrize("weights", ["power2", "max"])
def test_calibrated_convnet_within_one_step(mode, weights):
    mod, params = convnet(3, head=False)
    data = _dataset(3, (1, 3, 8, 8))
    realized, simulated, report = _both(
        mod, params, data, calibrate_mode=mode, weight_scale=weights, skip_conv_layers=[]
    )
    for _, s in report.scales:
        assert math.isfinite(s.scale) and s.scale > 0 and math.isfinite(s.dom_scale)
    x = _input(99, (1, 3, 8, 8))
    got, want = interpret(realized, x=x), interpret(simulated, x=x)
    assert np.abs(got - want).max() <= _largest_input_step(report)


def test_simulation_stays_close_to_float():
    mod, params = convnet(1)
    _, simulated, _ = _both(mod, params)
    x = _input(5, (1, 3, 8, 8))
    want = interpret(mod, x=x, **params)
    got = interpret(simulated, x=x)
    cos = float(np.dot(got.ravel(), want.ravel()) / np.linalg.norm(got) / np.linalg.norm(want))
    assert cos > 0.98


def test_realized_program_uses_integer_kernels():
    mod, params = convnet(2)
    realized, _, _ = _both(mod, params)
    text = realized.astext()
    assert 'out_dtype="int32"' in text and 'dtype="int8"' in text and "right_shift" in text
    # the first conv is skipped by default: its weight stays float
    convs = [line for line in text.splitlines() if "nn.conv2d(" in line]
    assert "out_dtype" not in convs[0] and all("out_dtype" in c for c in convs[1:])


def test_realized_text_round_trips_and_type_checks():
    mod, params = convnet(0)
    realized, simulated, _ = _both(mod, params, skip_conv_layers=[])
    for m in (realized, simulated):
        again = relay.parse(m.astext())
        check_module(again)
        assert structural_equal(again["main"], m["main"])


def test_realized_program_builds_and_matches_the_interpreter():
    mod, params = mlp(1)
    realized, _, _ = _both(mod, params, skip_dense_layer=False)
    x = _input(1, tuple(mod["main"].params[0].type_annotation.shape))
    built = relay.build(realized)
    np.testing.assert_array_equal(built.run(x=x), interpret(realized, x=x))


# ---------------------------------------------------------------- options and errors


def test_skip_dense_and_debug_enabled_ops():
    mod, params = mlp(0)
    with qconfig():
        _, report = quantize_with_report(mod, params)
    assert report.points == {}  # dense skipped by default: nothing to quantize
    mod, params = convnet(0)
    with qconfig(skip_conv_layers=[], debug_enabled_ops=["nn.conv2d"]):
        realized, report = quantize_with_report(mod, params)
    assert "add(" in realized.astext()
    assert report.points["weight"] == 4  # the four convolutions' weights only


def test_unbound_weights_say_to_pass_params():
    mod, _ = convnet(0)
    with pytest.raises(QuantizeError, match="pass params"), qconfig(skip_conv_layers=[]):
        quantize(mod)


def test_calibration_needs_a_dataset():
    mod, params = convnet(0)
    with qconfig(calibrate_mode="kl_divergence"):
        with pytest.raises(QuantizeError, match="needs a calibration dataset"):
            quantize(mod, params)
        with pytest.raises(QuantizeError, match="dataset is empty"):
            quantize(mod, params, [])
        with pytest.raises(QuantizeError, match="missing x; unexpected y"):
            quantize(mod, params, [{"y": _input(0, (1, 3, 8, 8))}])
        with pytest.raises(QuantizeError, match=r"(?s)wrong size of dimension 2.*batch 0"):
            quantize(mod, params, [{"x": _input(0, (1, 3, 4, 4))}])


def test_operators_without_rules_are_reported():
    mod = relay.parse(
        """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4), float32], %w: Tensor[(4, 4), float32]) {
  %0 = nn.dense(%x, %w);
  nn.softmax(%0)
}"""
    )
    w = np.eye(4, dtype=np.float32)
    with qconfig(skip_dense_layer=False):
        realized, report = quantize_with_report(mod, {"w": w})
    assert report.float_ops == {"nn.softmax": 1}
    x = _input(0, (1, 4))
    np.testing.assert_allclose(interpret(realized, x=x), interpret(mod, x=x, w=w), atol=0.05)
