"""relay.quantize end to end: int8 top-1 agrees with fp32 on seeded random images."""

from __future__ import annotations

import numpy as np
import pytest
from relay.backend.runtime import interpret
from relay.passes.quantize import INPUT, WEIGHT
from relay.quantize import compare_points, qconfig, quantize, quantize_with_report

from .quantize_nets import convnet, mobile_net, residual_chain

IMAGES = 64


def _images(seed: int, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(1, 3, 8, 8)).astype(np.float32) for _ in range(n)]


@pytest.mark.parametrize("mode", ["global_scale", "kl_divergence", "percentile"])
def test_int8_top1_agrees_with_fp32(mode):
    mod, params = convnet(0)
    calibration = [{"x": x} for x in _images(1, 8)]
    with qconfig(calibrate_mode=mode, skip_conv_layers=[]):
        realized = quantize(mod, params, calibration)
    agree, cosines = 0, []
    for x in _images(2, IMAGES):
        want = interpret(mod, x=x, **params).ravel()
        got = interpret(realized, x=x).ravel()
        agree += int(np.argmax(got) == np.argmax(want))
        cosines.append(np.dot(got, want) / np.linalg.norm(got) / np.linalg.norm(want))
    assert agree / IMAGES >= 0.9, f"top-1 agreement {agree}/{IMAGES}"
    assert float(np.mean(cosines)) > 0.98


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.mark.parametrize("mode", ["kl_divergence", "percentile"])
def test_residual_chain_keeps_its_logits(mode):
    """ResNet-18's structure with un-normalizing batch norms (issue 14's diagnosis):
    activations grow through the residual adds far past `global_scale`, the calibrated
    scales follow them, and both the simulated and the realized program keep the logits
    (cosine >= 0.999, the realized one within a few steps of the simulated one)."""
    mod, params = residual_chain(0, blocks=6, channels=16)
    images = [x.reshape(1, 3, 8, 8) for x in _images(3, 16)]
    calibration = [{"x": x} for x in images[:4]]
    programs = {}
    for simulated in (True, False):
        with qconfig(calibrate_mode=mode, do_simulation=simulated):
            programs[simulated], report = quantize_with_report(mod, params, calibration)
    grown = max(s.scale for point, s in report.scales if point.kind != WEIGHT)
    assert grown > 4 * 8.0, f"activations did not grow past global_scale: {grown}"
    agree = 0
    for x in images[4:]:
        want = interpret(mod, x=x, **params).ravel()
        sim = interpret(programs[True], x=x).ravel()
        real = interpret(programs[False], x=x).ravel()
        assert _cosine(sim, want) >= 0.999 and _cosine(real, want) >= 0.999
        assert np.abs(real - sim).max() <= 0.02 * np.abs(want).max()
        agree += int(np.argmax(real) == np.argmax(want))
    assert agree >= 11, f"top-1 agreement {agree}/12"


@pytest.mark.parametrize("mode", ["global_scale", "kl_divergence", "percentile"])
@pytest.mark.parametrize("weights", ["power2", "max"])
def test_realized_within_one_step_of_simulated_at_every_point(mode, weights):
    """MobileNet-v2's structure (depthwise, 1x1, residual add, global pool, dense): at every
    quantize point, in dataflow order, the realized program's value is within one
    quantization step of the simulated program's (the simulated one rounds float sums the
    realized one computes exactly; at power-of-two scales they agree exactly)."""
    mod, params = mobile_net(1)
    calibration = [{"x": x} for x in _images(4, 4)]
    with qconfig(calibrate_mode=mode, weight_scale=weights, skip_conv_layers=[]):
        for x in _images(5, 1):
            rows = compare_points(mod, {"x": x}, params, calibration)
            assert sum(r.kind == "weight" for r in rows) >= 5
            assert sum(r.kind == "input" for r in rows) >= 5
            for row in rows:
                # 1e-3: both sides are float32 products q * step, rounded once each
                assert row.realized_steps <= 1.0 + 1e-3, (row.point, row.realized_steps)
                if mode == "global_scale" and weights == "power2":
                    assert row.realized_steps == 0.0, (row.point, row.realized_steps)


def test_realized_mobile_net_builds_and_matches_its_interpreted_form():
    """The realized program compiled natively (int8 depthwise and 1x1 kernels) computes what
    the interpreter computes from the same text: integers exactly, so the float head's
    logits agree to float rounding, and stay within a step of the simulated program."""
    import relay

    mod, params = mobile_net(2)
    calibration = [{"x": x} for x in _images(6, 4)]
    with qconfig(calibrate_mode="kl_divergence", skip_conv_layers=[]):
        realized, report = quantize_with_report(mod, params, calibration)
        with qconfig(do_simulation=True):
            simulated = quantize(mod, params, calibration)
    built = relay.build(realized)
    head_step = max(s.dom_scale for p, s in report.scales if p.kind == INPUT)
    for x in _images(7, 3):
        native = np.asarray(built.run(x=x))
        reference = interpret(realized, x=x)
        np.testing.assert_allclose(native, reference, rtol=1e-5, atol=1e-5)
        sim = interpret(simulated, x=x)
        # the logits read the last 8-bit point through global pool and dense: one step
        # there moves a logit by at most step * sum|fc row|
        bound = head_step * float(np.abs(params["fc"]).sum(axis=1).max())
        assert np.abs(reference - sim).max() <= bound


def _make_weights():
    import importlib.util
    import sys
    from pathlib import Path

    name = "relay_examples_make_weights"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[2] / "examples" / "make_weights.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.mark.parametrize("shift", [0.0, 2.0])
def test_calibrated_batch_norms_normalize_and_centre_the_logits(shift):
    """examples/make_weights.py's data-dependent init: on the calibration images every
    batch norm's output has per-channel mean beta + shift * gamma and standard deviation
    gamma (each fitted after the layers before it), and every logit has mean zero."""
    from relay.lang.expr import Call, Function, Tuple, TupleGetItem
    from relay.lang.module import IRModule
    from relay.lang.traversal import post_order

    mw = _make_weights()
    mod, params = mobile_net(3)
    images = np.concatenate(_images(8, 12))
    calibrated = mw.calibrate_batch_norm(mod, params, {"x": images}, shift)
    assert set(calibrated) == set(params)
    main = mod["main"]
    norms = [
        n for n in post_order(main.body) if isinstance(n, Call) and n.op.name == "nn.batch_norm"
    ]
    assert len(norms) == 5
    probe = Function(main.params, Tuple((*(TupleGetItem(n, 0) for n in norms), main.body)))
    module = IRModule.from_expr(probe)
    runs = [interpret(module, x=images[i : i + 1], **calibrated) for i in range(len(images))]
    for k, norm in enumerate(norms):
        out = np.concatenate([np.asarray(r[k]) for r in runs]).astype(np.float64)
        gamma = calibrated[norm.args[1].name_hint]
        beta = calibrated[norm.args[2].name_hint]
        np.testing.assert_allclose(out.mean(axis=(0, 2, 3)), beta + shift * gamma, atol=1e-3)
        np.testing.assert_allclose(out.std(axis=(0, 2, 3)), gamma, rtol=1e-3)
    logits = np.concatenate([np.asarray(r[-1]) for r in runs])
    np.testing.assert_allclose(logits.mean(axis=0), 0.0, atol=1e-4)
    assert len(set(np.argmax(logits, axis=1))) >= 4
    # the random statistics did not normalize: the first batch norm's mean moved
    assert not np.allclose(calibrated["sm"], params["sm"])
