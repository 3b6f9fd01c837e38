"""`relay tune` end to end on a tiny model, and `relay build --tuning-log`."""

from __future__ import annotations

import builtins

import numpy as np
import pytest
from relay.backend.tune.log import read_log
from relay.cli import main

TINY = """#[version = "0.0.5"]
def @main(%x: Tensor[(11, 19), float32], %w: Tensor[(21, 19), float32], %b: Tensor[(21), float32]) {
  nn.relu(nn.bias_add(nn.dense(%x, %w, units=21), %b))
}
"""


def _files(tmp_path):
    model = tmp_path / "tiny.relay"
    model.write_text(TINY)
    rng = np.random.default_rng(0)
    weights = tmp_path / "w.npz"
    np.savez(
        weights,
        w=rng.standard_normal((21, 19)).astype("float32"),
        b=rng.standard_normal(21).astype("float32"),
    )
    return model, weights


def test_tune_then_build_with_the_log(tmp_path, capsys):
    model, weights = _files(tmp_path)
    log, plot = tmp_path / "tune.jsonl", tmp_path / "curve.png"
    argv = ["tune", str(model), "--params", str(weights), "--trials", "4", "--log", str(log),
            "--number", "1", "--repeat", "1", "--plot", str(plot)]  # fmt: skip
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "1 with knobs to tune" in err
    assert "GFLOP/s" in err  # the live display
    assert "measured 4 configs" in out and "(4 trials, 0 errors)" in out
    assert len(read_log(log).records) == 4
    assert plot.exists() and plot.stat().st_size > 1000
    # a second run resumes: nothing measured again
    assert main([*argv[:-2], "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "resumed: 4 record(s)" in err and "measured 0 configs" in out
    artifact = tmp_path / "tiny.relaymod"
    build = ["build", str(model), "--params", str(weights), "--tuning-log", str(log),
             "-o", str(artifact)]  # fmt: skip
    assert main(build) == 0
    assert artifact.exists()


def test_tune_errors_are_diagnosed(tmp_path, capsys, monkeypatch):
    model, weights = _files(tmp_path)
    missing = ["build", str(model), "--params", str(weights), "--tuning-log",
               str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "m.relaymod")]  # fmt: skip
    assert main(missing) == 1
    assert "no such tuning log" in capsys.readouterr().err
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("no matplotlib")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    argv = ["tune", str(model), "--trials", "1", "--log", str(tmp_path / "t.jsonl"),
            "--plot", str(tmp_path / "c.png")]  # fmt: skip
    assert main(argv) == 1
    assert "--plot needs matplotlib" in capsys.readouterr().err


def test_tune_stops_at_its_time_budget(tmp_path, capsys):
    model, weights = _files(tmp_path)
    log = tmp_path / "t.jsonl"
    argv = ["tune", str(model), "--params", str(weights), "--trials", "4", "--log", str(log),
            "--no-progress", "--time-budget", "1e-9"]  # fmt: skip
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "stopped by the time budget" in err and "measured 0 configs" in out
    with pytest.raises(SystemExit):
        main([*argv[:-1], "0"])
    assert "--time-budget must be a positive" in capsys.readouterr().err


TWO_KERNELS = """#[version = "0.0.5"]
def @main(%x: Tensor[(11, 19), float32], %w: Tensor[(21, 19), float32], %b: Tensor[(21), float32]) {
  nn.softmax(nn.relu(nn.bias_add(nn.dense(%x, %w, units=21), %b)) * 2f)
}
"""


def test_a_kernel_the_trials_did_not_reach_is_said_so(tmp_path, capsys):
    model, weights = _files(tmp_path)
    model.write_text(TWO_KERNELS)
    log = tmp_path / "tune.jsonl"
    argv = ["tune", str(model), "--params", str(weights), "--trials", "1", "--batch", "2",
            "--log", str(log), "--number", "1", "--repeat", "1", "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    out, _ = capsys.readouterr()
    lines = [line for line in out.splitlines() if line.startswith("nn.")]
    assert len(lines) == 2
    assert sum("not measured (the trials went to the other kernels)" in line for line in lines) == 1
    assert "no working config" not in out
