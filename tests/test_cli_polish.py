"""Command-line polish: --version, examples in --help, 'did you mean', several parse errors
per file, warnings for random inputs, types in the text syntax, result summaries."""

import re
import shlex
import subprocess
import sys
from importlib import metadata

import numpy as np
import pytest
from relay.cli import build_parser, main
from relay.grammar import parse
from relay.lang.diagnostics import ParseError

HEADER = '#[version = "0.0.5"]\n'


def relay(*args):
    """Run `python -m relay ARGS` in a subprocess; (exit code, stdout, stderr)."""
    done = subprocess.run(
        [sys.executable, "-m", "relay", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stdout, done.stderr


def run_main(capsys, *args):
    """Run the command line in this process; (exit code, stdout, stderr)."""
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


# ---------------------------------------------------------------------- --version, --help
def test_version_prints_the_installed_version():
    code, out, err = relay("--version")
    assert code == 0, err
    assert out.strip() == f"relay {metadata.version('relay-lang')}"


COMMANDS = ("check", "fmt", "run", "build", "opt")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_of_each_command_has_examples_that_parse(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out
    examples = [
        line.strip()
        for line in out.split("examples:", 1)[1].splitlines()
        if line.strip().startswith("relay ")
    ]
    assert len(examples) >= 2, out
    for example in examples:
        words = shlex.split(example.split("  ")[0])  # the command, without its explanation
        words = words[: words.index("<")] if "<" in words else words  # a shell redirection
        assert words[1] == command
        args = build_parser().parse_args(words[1:])  # bad usage would exit 2 here
        assert args.command == command


# ---------------------------------------------------------------------- did you mean
CONV = (
    HEADER
    + """def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {
  CALL
}
"""
)


@pytest.mark.parametrize(
    "call, suggestion",
    [
        ("nn.conv2(%x, %w)", "nn.conv2d"),
        ("conv2d(%x, %w)", "nn.conv2d"),
        ("nn.conv2d(%x, %w, stride=[2, 2])", "strides"),
        ("nn.conv2d(%x, %w, kernal_size=[3, 3])", "kernel_size"),
        ("@mian(%x)", "@main"),
        ("Cosn(%x, Nil)", "Cons"),
        ("match (Nil) { Cosn(%a, %b) => %x, Nil => %x }", "Cons"),
        ("add(%xx, 1f)", "%x"),
    ],
)
def test_unknown_names_get_a_suggestion(call, suggestion):
    with pytest.raises(ParseError) as info:
        parse(CONV.replace("CALL", call), "m.relay")
    assert f"note: did you mean `{suggestion}`?" in info.value.render()


def test_suggestions_include_the_module_own_constructors_and_types():
    text = HEADER + (
        "type Shape { Circle(float32), Square(float32) }\n"
        "def @area(%s: Shpe) -> float32 {\n"
        "  match (%s) { Circl(%r) => %r, Square(%a) => %a }\n"
        "}\n"
    )
    with pytest.raises(ParseError) as info:
        parse(text, "m.relay")
    assert "did you mean `Circle`?" in info.value.render()
    with pytest.raises(ParseError) as info:
        parse(text.replace("Circl(", "Circle("), "m.relay")
    assert "did you mean `Shape`?" in info.value.render()


def test_no_suggestion_when_nothing_is_close():
    with pytest.raises(ParseError) as info:
        parse(CONV.replace("CALL", "zzzqqq(%x)"), "m.relay")
    assert "did you mean" not in info.value.render()


def test_cli_prints_the_suggestion(tmp_path, capsys):
    path = write(tmp_path, "m.relay", CONV.replace("CALL", "nn.conv2(%x, %w)"))
    code, _, err = run_main(capsys, "check", path)
    assert code == 1
    assert "note: did you mean `nn.conv2d`?" in err


# ---------------------------------------------------------------------- several errors
BROKEN = (
    HEADER
    + """type Pair { MkPair(float32, float32) }

def @one(%x: Tensor[(2), float32]) {
  %0 = add(%x, %x)
  %0
}

def @fine(%x: Tensor[(2), float32]) {
  @one(%x)
}

def @two(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  @one(%y)
}

def @three(
    %x: Tensor[(2), float32]) {
  nn.relu(%x, alpha=1f)
}

def @main(%x: Tensor[(2), float32]) {
  @two(@three(%x))
}
"""
)


def test_one_error_per_broken_definition():
    with pytest.raises(ParseError) as info:
        parse(BROKEN, "m.relay")
    located = [(d.span.line, d.message) for d in info.value.diagnostics]
    assert [line for line, _ in located] == [6, 14, 19], located
    assert "`;`" in located[0][1]
    assert "undeclared variable %y" in located[1][1]
    assert "alpha" in located[2][1]


def test_fixing_the_errors_one_by_one_leaves_the_rest():
    fixed = BROKEN.replace("add(%x, %x)\n", "add(%x, %x);\n")
    with pytest.raises(ParseError) as info:
        parse(fixed, "m.relay")
    assert [d.span.line for d in info.value.diagnostics] == [14, 19]
    fixed = fixed.replace("%y", "%x").replace(", alpha=1f", "")
    assert "main" in parse(fixed, "m.relay")


def test_a_broken_type_does_not_cascade_into_its_uses():
    text = HEADER + (
        "type Pair { MkPair(float32 float32) }\n"
        "def @make(%a: float32) { MkPair(%a, %a) }\n"
        "def @bad(%a: float32) { %a + }\n"
    )
    with pytest.raises(ParseError) as info:
        parse(text, "m.relay")
    lines = [d.span.line for d in info.value.diagnostics]
    assert lines == [2, 4], info.value.render()  # nothing about MkPair in @make


def test_the_cli_prints_every_error(tmp_path, capsys):
    path = write(tmp_path, "m.relay", BROKEN)
    code, _, err = run_main(capsys, "check", path)
    assert code == 1
    assert len(re.findall(r"m\.relay:\d+:\d+: error:", err)) == 3, err


# ---------------------------------------------------------------------- random inputs
ADD = (
    HEADER
    + """def @main(%x: Tensor[(2, 3), float32], %w: Tensor[(3), float32], %b: float32) {
  add(add(%x, %w), %b)
}
"""
)


@pytest.mark.parametrize("target", ["interp", "llvm"])
def test_run_warns_for_each_parameter_filled_with_random_data(tmp_path, capsys, target):
    path = write(tmp_path, "m.relay", ADD)
    inputs = tmp_path / "x.npz"
    np.savez(inputs, x=np.ones((2, 3), "float32"))
    code, _, err = run_main(capsys, "run", path, "--inputs", inputs, "--target", target)
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2, err
    assert "`w`" in warnings[0] and "Tensor[(3), float32]" in warnings[0]
    assert "`b`" in warnings[1] and "float32" in warnings[1]
    assert not any("`x`" in w for w in warnings)


def test_run_warns_for_a_loaded_artifact_too(tmp_path, capsys):
    path = write(tmp_path, "m.relay", ADD)
    artifact = tmp_path / "m.relaymod"
    code, _, err = run_main(capsys, "build", path, "-o", artifact)
    assert code == 0, err
    code, _, err = run_main(capsys, "run", artifact, "--strict-inputs")
    assert code == 1
    for name in "xwb":
        assert f"input `{name}`" in err
    code, _, err = run_main(capsys, "run", artifact)
    assert code == 0
    assert len([line for line in err.splitlines() if line.startswith("warning:")]) == 3


def test_strict_inputs_makes_a_missing_input_an_error(tmp_path, capsys):
    path = write(tmp_path, "m.relay", ADD)
    inputs = tmp_path / "x.npz"
    np.savez(inputs, x=np.ones((2, 3), "float32"), b=np.float32(1))
    code, out, err = run_main(
        capsys, "run", path, "--inputs", inputs, "--strict-inputs", "--target", "interp"
    )
    assert code == 1
    assert out == ""
    assert "`w` (Tensor[(3), float32])" in err and "--strict-inputs" in err
    assert "`x`" not in err and "`b`" not in err
    np.savez(inputs, x=np.ones((2, 3), "float32"), b=np.float32(1), w=np.ones(3, "float32"))
    code, _, err = run_main(
        capsys, "run", path, "--inputs", inputs, "--strict-inputs", "--target", "interp"
    )
    assert code == 0, err
    assert "warning" not in err


# ---------------------------------------------------------------------- types in messages
PYTHON_REPRS = re.compile(r"\(\d+,\)|dtype\(|TensorType\(|shape \(\d|shape \[\d")


@pytest.mark.parametrize("target", ["interp", "llvm"])
def test_a_wrong_input_is_described_in_the_text_syntax(tmp_path, capsys, target):
    path = write(tmp_path, "m.relay", ADD)
    inputs = tmp_path / "x.npz"
    np.savez(inputs, x=np.ones((2, 4), "float64"), w=np.ones(3, "float32"))
    code, _, err = run_main(capsys, "run", path, "--inputs", inputs, "--target", target)
    assert code == 1
    assert "expected Tensor[(2, 3), float32], got Tensor[(2, 4), float64]" in err, err
    np.savez(inputs, w=np.ones((3,), "int64"), b=np.ones(1, "float32"))
    code, _, err = run_main(capsys, "run", path, "--inputs", inputs, "--target", target)
    assert code == 1
    assert "got Tensor[(3), int64]" in err, err
    assert not PYTHON_REPRS.search(err), err


def test_a_dynamic_parameter_without_input_names_its_type(tmp_path, capsys):
    text = HEADER + "def @main(%x: Tensor[(?, 16), float32]) { nn.relu(%x) }\n"
    path = write(tmp_path, "m.relay", text)
    code, _, err = run_main(capsys, "run", path, "--target", "interp")
    assert code == 1
    assert "Tensor[(?, 16), float32]" in err
    assert not PYTHON_REPRS.search(err), err


# ---------------------------------------------------------------------- result summaries
def _run_program(tmp_path, capsys, body, params="%x: Tensor[(2, 3), float32]"):
    path = write(tmp_path, "m.relay", HEADER + f"def @main({params}) {{\n  {body}\n}}\n")
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.array([[1.5, -2, 3], [4, 0.25, -6]], "float32"))
    code, out, err = run_main(capsys, "run", path, "--inputs", inputs, "--target", "interp")
    assert code == 0, err
    return out.splitlines()


def test_a_scalar_result_prints_just_its_value(tmp_path, capsys):
    lines = _run_program(tmp_path, capsys, "sum(%x)")
    assert lines[0] == "out: 0.75 (float32)"
    assert lines[1].startswith("time:")  # no statistics line about one number


def test_an_integer_result_has_integer_statistics(tmp_path, capsys):
    lines = _run_program(tmp_path, capsys, 'multiply(cast(%x, dtype="int64"), 100000007i64)')
    summary = lines[1].strip()
    assert summary.startswith("Tensor[(2, 3), int64], ")
    assert "min -600000042," in summary and "max 400000028," in summary, summary
    assert "argmax 3" in summary
    assert "e+" not in summary


def test_a_boolean_result_counts_true(tmp_path, capsys):
    lines = _run_program(tmp_path, capsys, "greater(%x, 0f)")
    assert lines[1].strip() == "Tensor[(2, 3), bool], 4 of 6 True"


def test_a_float_result_with_nan_counts_it(tmp_path, capsys):
    lines = _run_program(tmp_path, capsys, "sqrt(%x)")
    summary = lines[1].strip()
    assert summary.startswith("Tensor[(2, 3), float32], finite values: min 0.5, max 2,")
    assert summary.endswith("; 2 NaN")


def test_a_tuple_of_scalars_and_tensors(tmp_path, capsys):
    lines = _run_program(tmp_path, capsys, "(max(%x), argmax(%x))")
    assert lines[0] == "out0: 4 (float32)"
    assert lines[1] == "out1: 3 (int32)"
