"""`relay run --profile`: the per-kernel and per-kind tables, the JSON report and the
Chrome trace from the command line, on a source file and on a saved artifact."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

MODEL = """#[version = "0.0.5"]
def @main(%x: Tensor[(32, 64), float32], %w: Tensor[(128, 64), float32]) {
  %0 = nn.dense(%x, %w);
  %1 = nn.relu(%0);
  %2 = transpose(%1);
  nn.softmax(%2)
}
"""


def relay(*args, env=None):
    done = subprocess.run(
        [sys.executable, "-m", "relay", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "net.relay"
    path.write_text(MODEL)
    return path


def test_profile_prints_kernels_kinds_and_outside_time(model, tmp_path):
    trace, report = tmp_path / "trace.json", tmp_path / "report.json"
    code, out, err = relay(
        "run",
        model,
        "--profile",
        "--repeat",
        3,
        "--trace",
        trace,
        "--profile-json",
        report,
        env={"RELAY_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"},
    )
    assert code == 0, err
    assert "profile of net: target llvm" in out and "3 runs" in out
    assert "fp32 peak" in out and "GB/s" in out
    assert "fused_nn_dense_nn_relu" in out and "fused_nn_softmax" in out
    assert "outside kernels" in out
    assert "kind" in out and "nn.dense" in out
    data = json.loads(report.read_text())
    names = [k["name"] for k in data["kernels"]]
    assert "fused_nn_dense_nn_relu" in names
    dense = data["kernels"][names.index("fused_nn_dense_nn_relu")]
    assert dense["ops"] == ["nn.dense", "nn.relu"]
    assert dense["flops"] == 2 * 32 * 128 * 64 + 32 * 128
    events = json.loads(trace.read_text())["traceEvents"]
    assert {e["ph"] for e in events} >= {"M", "X"}


def test_profile_of_a_saved_artifact_in_call_order(model, tmp_path):
    artifact = tmp_path / "net.relaymod"
    code, _, err = relay("build", model, "-o", artifact)
    assert code == 0, err
    code, out, err = relay(
        "run",
        artifact,
        "--profile",
        "--sort",
        "order",
        "--top",
        1,
        env={"RELAY_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"},
    )
    assert code == 0, err
    table = out.split("profile of net")[1]
    assert "fused_nn_dense_nn_relu" in table
    assert "(2 more)" in table


def test_profile_in_the_interpreter_is_a_clear_error(model):
    code, _, err = relay("run", model, "--target", "interp", "--profile")
    assert code == 1
    assert "--profile needs a statically planned model; this one runs in the interpreter" in err
    assert "Traceback" not in err


def test_profile_of_a_program_the_vm_runs_says_so():
    root = Path(__file__).resolve().parents[1]
    code, _, err = relay("run", root / "examples" / "lstm.relay", "--profile")
    assert code == 1
    assert "this one runs in the VM" in err and "Traceback" not in err


def test_run_says_the_vm_ran_a_program_with_control_flow():
    root = Path(__file__).resolve().parents[1]
    code, out, err = relay("run", root / "examples" / "lstm.relay")
    assert code == 0, err
    assert "run by the VM (control flow)" in out + err


def test_bad_profile_options_are_usage_errors(model):
    code, _, err = relay("run", model, "--profile", "--repeat", 0)
    assert code == 2 and "--repeat must be at least 1" in err
    code, _, err = relay("run", model, "--profile", "--sort", "name")
    assert code == 2 and "invalid choice" in err
