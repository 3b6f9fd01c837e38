"""`relay quantize`: end to end, and its diagnosed errors."""

from __future__ import annotations

import numpy as np
import pytest
import relay
from relay.backend.runtime import interpret
from relay.cli import main
from relay.quantize import qconfig, quantize
from relay.typecheck import check_module

from .passes.quantize_nets import convnet


@pytest.fixture
def files(tmp_path):
    mod, params = convnet(4)
    model = tmp_path / "model.relay"
    model.write_text(mod.astext())
    weights = tmp_path / "w.npz"
    np.savez(weights, **params)
    rng = np.random.default_rng(0)
    calib = tmp_path / "calib.npz"
    np.savez(calib, x=rng.normal(size=(3, 1, 3, 8, 8)).astype(np.float32))
    return mod, params, tmp_path, model, weights, calib


def test_quantize_writes_program_and_weights(files, capsys):
    mod, params, tmp, model, weights, calib = files
    out, wout = tmp / "q.relay", tmp / "q.npz"
    argv = [
        "quantize", str(model), "--params", str(weights), "--calib", str(calib),
        "--mode", "kl", "-o", str(out), "--params-out", str(wout),
    ]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "calibrating: batch 3/3" in err and "quantize points:" in err
    quantized = relay.parse(out.read_text())
    check_module(quantized)
    with np.load(wout) as archive:
        qweights = {k: archive[k] for k in archive.files}
    assert any(v.dtype == np.int8 for v in qweights.values())
    # the same as the API with the same options and data
    data = [{"x": x} for x in np.load(calib)["x"]]
    with qconfig(calibrate_mode="kl_divergence"):
        expected = quantize(mod, params, data)
    x = np.random.default_rng(5).normal(size=(1, 3, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(interpret(quantized, x=x, **qweights), interpret(expected, x=x))


def test_quantize_to_stdout_with_global_scale(files, capsys):
    _, _, _, model, weights, _ = files
    assert main(["quantize", str(model), "--params", str(weights), "--simulate"]) == 0
    text = capsys.readouterr().out
    check_module(relay.parse(text))
    assert "floor(" in text and 'out_dtype="int32"' not in text


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--calib", "MISSING.npz"], "no such calibration file"),
        (["--calib", "BAD_KEYS.npz"], "missing x; unexpected y"),
        (["--calib", "BAD_SHAPE.npz"], "`x` has shape (2, 3, 4, 4)"),
        (["--calib", "EMPTY.npz"], "calibration set is empty"),
    ],
)
def test_bad_calibration_files_are_diagnosed(files, capsys, extra, message):
    _, _, tmp, model, weights, _ = files
    rng = np.random.default_rng(0)
    np.savez(tmp / "BAD_KEYS.npz", y=rng.normal(size=(1, 3, 8, 8)))
    np.savez(tmp / "BAD_SHAPE.npz", x=rng.normal(size=(2, 3, 4, 4)))
    np.savez(tmp / "EMPTY.npz", x=np.zeros((0, 1, 3, 8, 8), np.float32))
    extra = [str(tmp / e) if e.endswith(".npz") else e for e in extra]
    argv = ["quantize", str(model), "--params", str(weights), "--mode", "kl", *extra]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_missing_params_and_missing_calibration(files, capsys):
    _, _, _, model, _, calib = files
    assert main(["quantize", str(model), "--calib", str(calib), "--mode", "kl"]) == 1
    assert "weights must come from --params" in capsys.readouterr().err
    assert main(["quantize", str(model)]) == 1
    assert "pass params" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["quantize", str(model), "--mode", "percentile"])
    assert exit_info.value.code == 2
    assert "needs calibration data" in capsys.readouterr().err


def test_per_channel_int32_bias_and_bias_correction_flags_match_the_api(files, capsys):
    mod, params, tmp, model, weights, calib = files
    out, wout = tmp / "q.relay", tmp / "q.npz"
    argv = [
        "quantize", str(model), "--params", str(weights), "--calib", str(calib),
        "--mode", "percentile", "--per-channel", "--bias-correction", "--weight-scale", "max",
        "-o", str(out), "--params-out", str(wout),
    ]  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    with np.load(wout) as archive:
        qweights = {k: archive[k] for k in archive.files}
    data = [{"x": x} for x in np.load(calib)["x"]]
    options = {"calibrate_mode": "percentile", "weight_scale": "max", "per_channel": True}
    with qconfig(**options, bias_correction=True):
        expected = quantize(mod, params, data)
    with qconfig(**options):
        uncorrected = quantize(mod, params, data)
    x = np.random.default_rng(5).normal(size=(1, 3, 8, 8)).astype(np.float32)
    got = interpret(relay.parse(out.read_text()), x=x, **qweights)
    np.testing.assert_array_equal(got, interpret(expected, x=x))
    assert not np.array_equal(got, interpret(uncorrected, x=x))


def test_bias_correction_without_calibration_data_is_a_usage_error(files, capsys):
    _, _, _, model, weights, _ = files
    with pytest.raises(SystemExit) as exit_info:
        main(["quantize", str(model), "--params", str(weights), "--bias-correction"])
    assert exit_info.value.code == 2
    assert "--bias-correction needs calibration data" in capsys.readouterr().err
