"""relay.quantize end to end: int8 top-1 agrees with fp32 on seeded random images."""

from __future__ import annotations

import numpy as np
import pytest
from relay.backend.runtime import interpret
from relay.quantize import qconfig, quantize

from .quantize_nets import convnet

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
