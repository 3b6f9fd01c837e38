"""`relay opt`, run in a subprocess: pipelines, instruments, exit codes and outputs."""

import subprocess
import sys

import pytest
import relay
from relay.passes import PASSES, STANDARD_PIPELINES

GOOD = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(3), float32]) -> Tensor[(2, 3), float32] {
  %0 = add(%x, %y);
  multiply(%0, 2f)
}
"""

UNUSED = """#[version = "0.0.5"]
def @unused(%a: Tensor[(2), float32]) {
  negative(%a)
}

def @main(%x: Tensor[(2), float32]) {
  %0 = negative(%x);
  %1 = abs(%x);
  add(%1, %1)
}
"""

PRELUDE = """#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) {
  Cons(%x, Nil)
}
"""

BAD_TYPES = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(4, 5), float32]) {
  nn.dense(%x, %w)
}
"""

BAD_SYNTAX = """#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) {
  %0 = add(%x, %x)
  %0
}
"""


def relay_cli(*args, stdin=None):
    """Run `python -m relay ARGS`; return (exit code, stdout, stderr)."""
    done = subprocess.run(
        [sys.executable, "-m", "relay", *map(str, args)],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=300,
    )
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, text in [
        ("good", GOOD),
        ("unused", UNUSED),
        ("prelude", PRELUDE),
        ("types", BAD_TYPES),
        ("syntax", BAD_SYNTAX),
    ]:
        paths[name] = tmp_path / f"{name}.relay"
        paths[name].write_text(text)
    return paths


def test_help():
    code, out, err = relay_cli("opt", "--help")
    assert code == 0, err
    for flag in ("-O", "--passes", "--print-after", "--timing", "--debug"):
        assert flag in out


def test_chosen_passes_print_the_optimized_module(files):
    code, out, err = relay_cli("opt", files["unused"], "--passes", "remove-unused-functions,dce")
    assert code == 0, err
    assert err == ""
    expected = relay.parse(
        """#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) {
  %0 = abs(%x);
  add(%0, %0)
}
"""
    )
    relay.lang.structural.assert_structural_equal(relay.parse(out), expected)


def test_fusion_output_parses_back(files):
    code, out, err = relay_cli("opt", files["good"], "--passes", "fuse-ops")
    assert code == 0, err
    assert "Primitive=1" in out
    assert out.startswith('#[version = "0.0.5"]')
    relay.parse(out)  # canonical text that reads back


def test_prelude_is_not_printed(files):
    code, out, err = relay_cli("opt", files["prelude"], "--passes", "infer-type,dce")
    assert code == 0, err
    assert out == PRELUDE


def test_print_after_goes_to_stderr(files):
    code, out, err = relay_cli(
        "opt",
        files["unused"],
        "--passes",
        "remove-unused-functions,dce,infer-type",
        "--print-after",
        "dce",
        "--print-after",
        "remove-unused-functions",
    )
    assert code == 0, err
    assert "// IR after dce" in err and "// IR after remove-unused-functions" in err
    assert "// IR after infer-type" not in err
    assert "// IR" not in out
    printed = err.split("// IR after dce")[0]  # the module after remove-unused-functions
    assert "def @main" in printed and "@unused" not in printed


def test_timing_table_on_stderr(files):
    code, out, err = relay_cli("opt", files["good"], "--passes", "dce,fuse-ops", "--timing")
    assert code == 0, err
    lines = err.splitlines()
    assert lines[0].split() == ["pass", "ms", "%"]
    names = [line.split()[0] for line in lines[1:]]
    assert names[0] == "dce" and names[-1] == "total" and "fuse-ops" in names
    assert "pass" not in out


def test_debug_runs_checks(files):
    code, out, err = relay_cli("opt", files["good"], "--passes", "dce,fuse-ops", "--debug")
    assert code == 0, err
    assert "Primitive=1" in out


def test_standard_pipeline_levels(files):
    for level in range(4):
        names = [n.strip() for n in STANDARD_PIPELINES[level].split(",")]
        missing = [n for n in names if n not in PASSES]
        code, out, err = relay_cli("opt", files["good"], f"-O{level}")
        if missing:
            assert code == 1, err
            assert "not available yet" in err
            assert all(name in err for name in missing)
        else:
            assert code == 0, err
            relay.parse(out)


def test_standard_input(files):
    code, out, err = relay_cli("opt", "-", "--passes", "dce", stdin=UNUSED)
    assert code == 0, err
    assert "abs(%x)" in out and "negative(%x)" not in out


def test_user_errors_exit_1(files):
    code, out, err = relay_cli("opt", files["good"], "--passes", "dce,frob")
    assert code == 1 and out == ""
    assert "unknown pass 'frob'" in err and "<pipeline>:1:5" in err and "^" in err
    code, _, err = relay_cli("opt", files["good"], "--passes", "dce", "--print-after", "nope")
    assert code == 1 and "unknown pass 'nope'" in err
    code, out, err = relay_cli("opt", files["types"], "--passes", "dce")
    assert code == 1 and out == "" and "types.relay:3:" in err
    code, out, err = relay_cli("opt", files["syntax"], "--passes", "dce")
    assert code == 1 and out == "" and "syntax.relay:4:3: error" in err
    code, _, err = relay_cli("opt", files["good"].parent / "missing.relay", "--passes", "dce")
    assert code == 1 and "no such file" in err


def test_bad_usage_exits_2(files):
    code, _, err = relay_cli("opt", files["good"], "-O7")
    assert code == 2 and "invalid choice" in err
    code, _, err = relay_cli("opt")
    assert code == 2 and "usage: relay opt" in err
