"""relay.quantize end to end: int8 top-1 agrees with fp32 on seeded random images."""

from __future__ import annotations

import numpy as np
import pytest
from relay.backend.runtime import interpret
from relay.passes.quantize import WEIGHT
from relay.quantize import qconfig, quantize, quantize_with_report

from .quantize_nets import convnet, residual_chain

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
