"""relay.quantize's departures from TVM's flow: int32 biases at the accumulator scale
(`bias_mode`), per-channel weight scales (`per_channel`) and bias correction."""

from __future__ import annotations

import numpy as np
import pytest
import relay
from relay.backend.runtime import interpret
from relay.passes.quantize import BIAS, INPUT, WEIGHT, QuantizeError, weight_scale
from relay.quantize import compare_points, qconfig, quantize, quantize_with_report

from .quantize_nets import convnet, mobile_net

CONV_BIAS = """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 4, 6, 6), float32], %w: Tensor[(3, 4, 3, 3), float32],
          %b: Tensor[(3, 1, 1), float32]) {
  add(nn.conv2d(%x, %w, padding=[1, 1, 1, 1]), %b)
}
"""


def _images(seed: int, n: int, shape: tuple[int, ...] = (1, 3, 8, 8)) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape).astype(np.float32) for _ in range(n)]


def _conv_bias(seed: int, weight_gain: tuple[float, ...], bias: tuple[float, ...]):
    rng = np.random.default_rng(seed)
    w = rng.normal(0, 0.2, (3, 4, 3, 3)) * np.array(weight_gain)[:, None, None, None]
    params = {
        "w": w.astype(np.float32),
        "b": np.array(bias, np.float32).reshape(3, 1, 1),
    }
    return relay.parse(CONV_BIAS), params


def _channel_errors(mod, params, realized, images) -> np.ndarray:
    """Per output channel: RMS of (realized - float) over `images`, relative to the
    channel's RMS float value."""
    err, ref = np.zeros(3), np.zeros(3)
    for x in images:
        want = interpret(mod, x=x, **params)[0]
        got = interpret(realized, x=x)[0]
        err += ((got - want) ** 2).mean(axis=(1, 2))
        ref += (want**2).mean(axis=(1, 2))
    return np.sqrt(err / ref)


def test_options_are_validated():
    with pytest.raises(QuantizeError, match="bias_mode must be one of"), qconfig(bias_mode="x"):
        pass
    with pytest.raises(QuantizeError, match="per_channel must be True"), qconfig(per_channel=1):
        pass
    bad = {"bias_mode": "weight", "bias_correction": True}
    with pytest.raises(QuantizeError, match='needs bias_mode="int32"'), qconfig(**bad):
        pass
    mod, params = convnet(0)
    with qconfig(bias_correction=True), pytest.raises(QuantizeError, match="bias_correction"):
        quantize(mod, params)  # global_scale, but the correction needs data


def test_per_channel_weight_scales():
    w = np.array([[0.5, -0.25], [3.0, 1.0], [0.0, 0.0]], np.float32)
    np.testing.assert_array_equal(weight_scale(w, "power2", 0), [[0.5], [4.0], [1.0]])
    np.testing.assert_array_equal(weight_scale(w, "max", 0), [[0.5], [3.0], [1.0]])
    assert weight_scale(w, "max") == 3.0  # per tensor: one scale


def test_int32_bias_is_quantized_at_the_accumulator_scale():
    """bias_mode="int32": the bias point's step is the conv's input step times its weight
    step, and the realized bias is an int32 constant added with no rescale; TVM's
    "weight" mode quantizes it to 8 bits on its own scale instead."""
    mod, params = _conv_bias(0, (1.0, 1.0, 1.0), (0.9, 0.0035, -0.3))
    data = [{"x": x} for x in _images(1, 4, (1, 4, 6, 6))]
    with qconfig(skip_conv_layers=[], calibrate_mode="kl_divergence"):
        realized, report = quantize_with_report(mod, params, data)
    scales = dict(report.scales)
    (bias,) = [p for p in scales if p.kind == BIAS]
    (inp,) = [p for p in scales if p.kind == INPUT and p.index < bias.index]
    (weight,) = [p for p in scales if p.kind == WEIGHT]
    assert scales[bias].dom_scale == scales[inp].dom_scale * scales[weight].dom_scale
    text = realized.astext()
    assert "int32" in text and text.count("right_shift") + text.count("int64") >= 1
    with qconfig(skip_conv_layers=[], calibrate_mode="kl_divergence", bias_mode="weight"):
        tvm_flow = quantize(mod, params, data)
    # the 8-bit bias rounds 0.0035 to 0 (its step is 1/128): a constant shift of every
    # output of the channel, where the int32 bias is exact to 1e-5
    shifts = {}
    for name, program in (("int32", realized), ("weight", tvm_flow)):
        diffs = [
            interpret(program, x=x) - interpret(mod, x=x, **params)
            for x in _images(2, 8, (1, 4, 6, 6))
        ]
        shifts[name] = np.abs(np.mean(diffs, axis=(0, 1, 3, 4)))
    assert shifts["weight"].max() > 0.005
    assert shifts["int32"].max() < 0.5 * shifts["weight"].max()


def test_per_channel_keeps_a_small_channel():
    """One output channel 100x smaller than the others: one scale for the whole weight
    rounds it to a level or two, a scale per channel keeps it within half a power-of-two
    step (1/128 of its largest value) like the rest (its output still shares the 8-bit
    output step of the other channels)."""
    from relay.passes.quantize.arith import quantize_array

    mod, params = _conv_bias(3, (1.0, 0.01, 1.0), (0.0, 0.0, 0.0))
    data = [{"x": x} for x in _images(4, 4, (1, 4, 6, 6))]
    weight_errors, output_errors = {}, {}
    for per_channel in (False, True):
        options = {"per_channel": per_channel, "calibrate_mode": "kl_divergence"}
        with qconfig(skip_conv_layers=[], **options):
            realized, report = quantize_with_report(mod, params, data)
        (s,) = [s for p, s in report.scales if p.kind == WEIGHT]
        w = params["w"]
        q = quantize_array(w, s.dom_scale, s.clip_min, s.clip_max, "UPWARD") * s.dom_scale
        weight_errors[per_channel] = np.abs(q - w).max(axis=(1, 2, 3)) / np.abs(w).max(
            axis=(1, 2, 3)
        )
        images = _images(5, 4, (1, 4, 6, 6))
        output_errors[per_channel] = _channel_errors(mod, params, realized, images)
    assert weight_errors[False][1] > 0.2 and weight_errors[True].max() <= 1 / 128 + 1e-6
    assert output_errors[True][1] < 0.7 * output_errors[False][1]


@pytest.mark.parametrize("mode", ["global_scale", "kl_divergence", "percentile"])
@pytest.mark.parametrize("weights", ["power2", "max"])
def test_per_channel_realized_within_one_step_of_simulated(mode, weights):
    """With per-channel scales, int32 biases and bias correction, every quantize point of
    the MobileNet-like net stays within one step of the simulated program (per-channel
    weight and bias points in their own channel's steps)."""
    mod, params = mobile_net(1)
    calibration = [{"x": x} for x in _images(4, 4)]
    options = {"per_channel": True, "bias_correction": True}
    with qconfig(calibrate_mode=mode, weight_scale=weights, skip_conv_layers=[], **options):
        rows = compare_points(mod, {"x": _images(5, 1)[0]}, params, calibration)
    assert sum(r.kind == "bias" for r in rows) >= 4
    for row in rows:
        assert row.realized_steps <= 1.0 + 1e-3, (row.point, row.realized_steps)


def test_per_channel_power2_requantizes_with_shifts():
    """Power-of-two weight and global scales: every per-channel rescale is a right shift
    by a constant array (no int64 fixed-point multiply), exactly the simulated program."""
    mod, params = mobile_net(2)
    with qconfig(per_channel=True, skip_conv_layers=[]):
        realized = quantize(mod, params)
        with qconfig(do_simulation=True):
            simulated = quantize(mod, params)
    text = realized.astext()
    assert "int64" not in text and "right_shift" in text
    for x in _images(6, 2):
        np.testing.assert_allclose(interpret(realized, x=x), interpret(simulated, x=x), atol=1e-5)


def test_per_channel_program_builds_natively():
    """The per-channel requantize (constant arrays broadcast per channel) fuses into the
    int8 conv kernels: nothing falls back to the interpreter and the compiled program
    computes what the interpreter computes."""
    mod, params = mobile_net(3)
    calibration = [{"x": x} for x in _images(7, 4)]
    options = {"per_channel": True, "bias_correction": True, "calibrate_mode": "kl_divergence"}
    with qconfig(skip_conv_layers=[], **options):
        realized = quantize(mod, params, calibration)
    built = relay.build(realized)
    assert built.stats.fallback_kernels == 0
    for x in _images(8, 2):
        np.testing.assert_allclose(built.run(x=x), interpret(realized, x=x), rtol=1e-5, atol=1e-5)


def test_bias_correction_removes_the_mean_error():
    """Inputs with a large mean and coarse (4-bit) weights: the weight's rounding error
    shifts every output channel by the same amount on every image. Bias correction
    measures that shift on the calibration images and takes it out of the bias."""
    mod, params = _conv_bias(6, (1.0, 1.0, 1.0), (0.1, -0.2, 0.05))
    images = [np.abs(x) + 1.0 for x in _images(9, 12, (1, 4, 6, 6))]
    calibration = [{"x": x} for x in images[:8]]
    mean_errors = {}
    for correct in (False, True):
        options = {"bias_correction": correct, "nbit_weight": 4, "per_channel": True}
        with qconfig(skip_conv_layers=[], calibrate_mode="kl_divergence", **options):
            realized = quantize(mod, params, calibration)
        diffs = [interpret(realized, x=x) - interpret(mod, x=x, **params) for x in images[8:]]
        mean_errors[correct] = np.abs(np.mean(diffs, axis=(0, 1, 3, 4)))
    assert mean_errors[False].max() > 0.02
    assert mean_errors[True].max() < 0.3 * mean_errors[False].max()
