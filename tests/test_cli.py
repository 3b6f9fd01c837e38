"""The `relay` command line, run in a subprocess: exit codes, diagnostics, outputs."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

GOOD = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(3), float32]) -> Tensor[(2, 3), float32] {
  %0 = add(%x, %y);
  multiply(%0, 2f)
}
"""

TUPLE = """#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) {
  (%x, (negative(%x), %x))
}
"""

BAD_SYNTAX = """#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) {
  %0 = add(%x, %x)
  %0
}
"""

BAD_TYPES = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 5), float32]) {
  nn.dense(%x, %w)
}

def @other(%a: Tensor[(2), float32], %b: Tensor[(2), int32]) {
  add(%a, %b)
}
"""


def relay(*args, stdin=None, cwd=None):
    """Run `python -m relay ARGS`; return (exit code, stdout, stderr)."""
    done = subprocess.run(
        [sys.executable, "-m", "relay", *map(str, args)],
        capture_output=True,
        text=True,
        input=stdin,
        cwd=cwd,
        timeout=300,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, text in [
        ("good", GOOD),
        ("tuple", TUPLE),
        ("syntax", BAD_SYNTAX),
        ("types", BAD_TYPES),
    ]:
        path = tmp_path / f"{name}.relay"
        path.write_text(text)
        paths[name] = path
    return paths


def test_help_on_every_command():
    for command in ([], ["check"], ["fmt"], ["run"]):
        code, out, err = relay(*command, "--help")
        assert code == 0, err
        assert "usage: relay" in out


def test_bad_usage_exits_2():
    assert relay()[0] == 2
    assert relay("frobnicate")[0] == 2
    code, _, err = relay("run", "x.relay", "--target", "cuda")
    assert code == 2 and "unknown target kind `cuda`" in err


def test_check_prints_global_types(files):
    code, out, err = relay("check", files["good"])
    assert code == 0, err
    assert (
        "@main: fn (Tensor[(2, 3), float32], Tensor[(3), float32]) -> Tensor[(2, 3), float32]"
        in out
    )


def test_check_syntax_error_has_location_and_caret(files):
    code, _out, err = relay("check", files["syntax"])
    assert code == 1
    first = err.splitlines()[0]
    assert first.startswith(f"{files['syntax']}:4:3: error:"), err
    assert "expected `;`" in err
    assert "Traceback" not in err
    caret_line = err.splitlines()[2]
    assert caret_line.strip().startswith("^")


def test_check_reports_every_type_error(files):
    code, _, err = relay("check", files["types"])
    assert code == 1
    assert f"{files['types']}:3:" in err and f"{files['types']}:7:" in err
    assert "Traceback" not in err


def test_missing_file_and_directory(tmp_path):
    code, _, err = relay("check", tmp_path / "nope.relay")
    assert code == 1 and "no such file" in err
    code, _, err = relay("fmt", tmp_path)
    assert code == 1 and "directory" in err


def test_fmt_prints_canonical_form_and_check_mode(files, tmp_path):
    code, out, err = relay("fmt", files["good"])
    assert code == 0, err
    assert out.startswith('#[version = "0.0.5"]')
    canonical = tmp_path / "canonical.relay"
    canonical.write_text(out)
    assert relay("fmt", "--check", canonical)[0] == 0
    assert relay("fmt", canonical)[1] == out  # idempotent
    messy = tmp_path / "messy.relay"
    messy.write_text(GOOD.replace("  %0", "      %0"))
    assert relay("fmt", "--check", messy)[0] == 1
    assert relay("fmt", "-i", messy)[0] == 0
    assert messy.read_text() == out


def test_fmt_reads_standard_input():
    code, out, _ = relay("fmt", "-", stdin=GOOD)
    assert code == 0 and "def @main" in out


def test_run_interp_with_inputs_and_output(files, tmp_path):
    x = np.arange(6, dtype="float32").reshape(2, 3)
    y = np.ones(3, dtype="float32")
    np.savez(tmp_path / "in.npz", x=x, y=y)
    out = tmp_path / "out.npz"
    code, stdout, err = relay(
        "run", files["good"], "--target", "interp", "--inputs", tmp_path / "in.npz", "--output", out
    )
    assert code == 0, err
    assert "time:" in stdout
    with np.load(out) as result:
        np.testing.assert_array_equal(result["out"], (x + y) * 2)


def test_run_fills_missing_inputs_with_seeded_random_data(files, tmp_path):
    outs = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.npz"
        assert relay("run", files["good"], "--target", "interp", "--output", path)[0] == 0
        with np.load(path) as result:
            outs.append(result["out"])
    np.testing.assert_array_equal(outs[0], outs[1])
    assert outs[0].shape == (2, 3) and outs[0].dtype == np.float32


def test_run_tuple_outputs_are_flattened_depth_first(files, tmp_path):
    x = np.array([1.0, 2.0], dtype="float32")
    np.savez(tmp_path / "in.npz", x=x)
    out = tmp_path / "out.npz"
    code, _, err = relay(
        "run",
        files["tuple"],
        "--target",
        "interp",
        "--inputs",
        tmp_path / "in.npz",
        "--output",
        out,
    )
    assert code == 0, err
    with np.load(out) as result:
        assert sorted(result.files) == ["out0", "out1", "out2"]
        np.testing.assert_array_equal(result["out1"], -x)


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        ({"x": np.zeros((3, 3), "float32")}, "input `x`"),
        ({"x": np.zeros((2, 3), "float64")}, "input `x`"),
        ({"z": np.zeros((2, 3), "float32")}, "unexpected input `z`"),
    ],
)
def test_run_wrong_inputs_are_diagnosed(files, tmp_path, arrays, message):
    np.savez(tmp_path / "in.npz", **arrays)
    code, _, err = relay(
        "run", files["good"], "--target", "interp", "--inputs", tmp_path / "in.npz"
    )
    assert code == 1
    assert message in err and "Traceback" not in err


def test_run_compiles_with_llvm_by_default_and_matches_the_interpreter(files, tmp_path):
    code, out, err = relay("run", files["good"], "--output", tmp_path / "native.npz")
    assert code == 0, err
    assert re.search(r"target llvm -num-threads=\d+, compiled in", out), out
    code, _, err = relay("run", files["good"], "--target", "interp", "--output", tmp_path / "i.npz")
    assert code == 0, err
    with np.load(tmp_path / "native.npz") as a, np.load(tmp_path / "i.npz") as b:
        np.testing.assert_allclose(a["out"], b["out"], rtol=1e-6)


def test_build_writes_an_artifact_that_run_loads(files, tmp_path):
    artifact = tmp_path / "good.relaymod"
    code, out, err = relay(
        "build", files["good"], "-o", artifact, "--dump", "tir", "--dump", "llvm"
    )
    assert code == 0, err
    assert "1 kernels" in out and artifact.exists()
    assert "for " in (tmp_path / "good.relaymod.tir.txt").read_text()
    assert "define" in (tmp_path / "good.relaymod.llvm.txt").read_text()
    code, out, err = relay("run", artifact, "--output", tmp_path / "loaded.npz")
    assert code == 0, err
    assert "loaded" in out
    code, _, err = relay("run", files["good"], "--output", tmp_path / "direct.npz")
    with np.load(tmp_path / "loaded.npz") as a, np.load(tmp_path / "direct.npz") as b:
        np.testing.assert_array_equal(a["out"], b["out"])


def test_build_timings_prints_each_stage_and_writes_no_dump_unasked(files, tmp_path):
    artifact = tmp_path / "good.relaymod"
    code, out, err = relay("build", files["good"], "-o", artifact, "--timings")
    assert code == 0, err
    stages = [line.split()[0] for line in out.splitlines() if re.match(r"^[a-z+.-]+ +\d", line)]
    assert stages[:3] == ["check", "optimize", "plan"] and stages[-1] == "total", out
    assert "machine-code" in stages and "llvm-opt" in stages
    assert not list(tmp_path.glob("*.txt"))  # nothing dumped without --dump


def test_run_a_broken_artifact_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.relaymod"
    bad.write_bytes(b"not a zip")
    code, _, err = relay("run", bad)
    assert code == 1 and "not a compiled model artifact" in err


def test_run_example_model(tmp_path):
    root = Path(__file__).resolve().parents[1]
    code, _out, err = relay(
        "run", root / "examples" / "mlp.relay", "--target", "interp", "--output", tmp_path / "o.npz"
    )
    assert code == 0, err
    with np.load(tmp_path / "o.npz") as result:
        probabilities = result["out"]
    assert probabilities.shape == (1, 10)
    assert abs(float(probabilities.sum()) - 1.0) < 1e-4


PRELUDE_USER = """#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) -> int32 {
  @length(Cons(%x, Cons(%x, Nil)))
}
"""


def test_fmt_does_not_copy_the_prelude_into_the_program(tmp_path):
    path = tmp_path / "uses_prelude.relay"
    path.write_text(PRELUDE_USER)
    code, out, err = relay("fmt", path)
    assert code == 0, err
    assert "def @length" not in out and "type List" not in out
    assert "@length(" in out
    code, out, err = relay("run", path, "--target", "interp")
    assert code == 0, err
    assert out.startswith("out: 2")


def test_build_of_a_program_with_control_flow_saves_a_vm_model_that_run_loads(tmp_path):
    root = Path(__file__).resolve().parents[1]
    artifact = tmp_path / "x.relaymod"
    code, _, err = relay("build", root / "examples" / "lstm.relay", "-o", artifact)
    assert code == 0, err
    code, out, err = relay("run", artifact, "--output", tmp_path / "loaded.npz")
    assert code == 0, err
    assert "loaded" in out and "run by the VM" in out
    code, _, err = relay("run", root / "examples" / "lstm.relay", "--output", tmp_path / "d.npz")
    assert code == 0, err
    with np.load(tmp_path / "loaded.npz") as a, np.load(tmp_path / "d.npz") as b:
        np.testing.assert_array_equal(a["out"], b["out"])


def test_build_with_bound_params_takes_only_the_remaining_inputs(tmp_path):
    source = tmp_path / "affine.relay"
    source.write_text(
        '#[version = "0.0.5"]\n'
        "def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 3), float32]) {\n"
        "  nn.dense(%x, %w)\n}\n"
    )
    w = np.arange(12, dtype=np.float32).reshape(4, 3)
    x = np.ones((2, 3), np.float32)
    np.savez(tmp_path / "w.npz", w=w)
    np.savez(tmp_path / "x.npz", x=x)
    artifact = tmp_path / "affine.relaymod"
    code, _, err = relay("build", source, "--params", tmp_path / "w.npz", "-o", artifact)
    assert code == 0, err
    code, _, err = relay(
        "run", artifact, "--inputs", tmp_path / "x.npz", "--output", tmp_path / "o.npz"
    )
    assert code == 0, err
    with np.load(tmp_path / "o.npz") as result:
        np.testing.assert_allclose(result["out"], x @ w.T)
    code, _, err = relay("run", artifact, "--inputs", tmp_path / "w.npz")
    assert code == 1 and "unexpected input `w`" in err


HEADERLESS = """def @main(%x: Tensor[(2), float32]) {
  negative(%x)
}
"""


@pytest.mark.parametrize("command", [["check"], ["fmt"], ["opt"], ["run", "--target", "interp"]])
def test_missing_version_header_is_a_warning_with_the_fix(tmp_path, command):
    source = tmp_path / "m.relay"
    source.write_text(HEADERLESS)
    code, _, err = relay(*command, source)
    assert code == 0, err
    assert f"{source}:1:1: warning: missing version header" in err
    assert 'note: add the line #[version = "0.0.5"] at the top of the file' in err
    code, out, err = relay(*command, "--strict", source)
    assert code == 1 and out == ""
    assert f"{source}:1:1: error: missing version header" in err and "Traceback" not in err


def test_strict_accepts_a_file_with_the_header_and_build_has_strict_too(tmp_path):
    source = tmp_path / "m.relay"
    source.write_text('#[version = "0.0.5"]\n' + HEADERLESS)
    code, _, err = relay("check", "--strict", source)
    assert code == 0 and "warning" not in err
    source.write_text(HEADERLESS)
    code, _, err = relay("build", "--strict", source, "-o", tmp_path / "m.relaymod")
    assert code == 1 and "missing version header" in err
    assert not (tmp_path / "m.relaymod").exists()
