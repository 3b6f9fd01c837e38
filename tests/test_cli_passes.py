"""`relay opt --list-passes`, `--load FILE_OR_MODULE` and `--bisect`."""

import textwrap

import pytest
from relay.cli import main
from relay.passes import PASSES

PROGRAM = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
  %0 = multiply(%x, 2f);
  %1 = add(%0, %y);
  nn.relu(%1)
}
"""

WRONG_PASS = '''
"""A deliberately wrong pass (TVM's decorator; the loader registers it)."""
from relay import transform
from relay.lang.expr import Call
from relay.lang.op import get_op
from relay.lang.traversal import rewrite_post_order


@transform.function_pass(opt_level=1)
def add_to_subtract(func, mod, ctx):
    """Turn every addition into a subtraction (wrong on purpose)."""

    def swap(node):
        if isinstance(node, Call) and node.op is get_op("add"):
            return node.replace(op=get_op("subtract"))
        return None

    return rewrite_post_order(func, swap)
'''

NATIVE_PASS = '''
from relay.passes import module_pass


@module_pass(name="keep-everything", opt_level=3, required=("infer-type",))
def keep(mod, ctx, options):
    """Return the module as it is. A second sentence."""
    return mod
'''


@pytest.fixture(autouse=True)
def registry():
    """Loaded passes stay in this test: the registry is restored afterwards."""
    saved = dict(PASSES)
    yield
    PASSES.clear()
    PASSES.update(saved)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_passes_lists_every_pass_with_level_requirements_and_doc(capsys):
    code, out, _ = run(capsys, "opt", "--list-passes")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["PASS", "LEVEL", "REQUIRES"]
    by_name = {line.split()[0]: line for line in lines[1:]}
    assert set(by_name) == set(PASSES)
    for name, p in PASSES.items():
        cells = by_name[name].split()
        assert cells[1] == str(p.opt_level)
        assert cells[2] == (",".join(p.required) or "-")
        assert p.summary in by_name[name]
    assert by_name["fuse-ops"].split()[2] == "infer-type"


def test_load_a_file_then_name_its_pass_in_the_pipeline(tmp_path, capsys):
    passes = write(tmp_path, "my_passes.py", WRONG_PASS)
    source = write(tmp_path, "p.relay", PROGRAM)
    code, out, _ = run(capsys, "opt", source, "--load", passes, "--passes", "add-to-subtract,dce")
    assert code == 0
    assert "subtract(%0, %y)" in out and "add(" not in out
    code, out, _ = run(capsys, "opt", "--load", passes, "--list-passes")
    line = next(ln for ln in out.splitlines() if ln.startswith("add-to-subtract "))
    assert line.split()[1:4] == ["1", "-", "AddToSubtract()"]
    assert "Turn every addition into a subtraction" in line


def test_load_is_repeatable_and_takes_module_names(tmp_path, capsys, monkeypatch):
    write(tmp_path, "relay_test_native_passes.py", NATIVE_PASS)
    wrong = write(tmp_path, "wrong.py", WRONG_PASS)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, _ = run(
        capsys, "opt", "--load", "relay_test_native_passes", "--load", wrong, "--list-passes"
    )
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("keep-everything "))
    assert line.split()[1:3] == ["3", "infer-type"]
    assert "Return the module as it is." in line and "second sentence" not in line
    assert any(ln.startswith("add-to-subtract ") for ln in out.splitlines())


def test_bisect_finds_the_wrong_loaded_pass(tmp_path, capsys):
    passes = write(tmp_path, "my_passes.py", WRONG_PASS)
    source = write(tmp_path, "p.relay", PROGRAM)
    code, out, _ = run(
        capsys,
        "opt",
        source,
        "--load",
        passes,
        "--passes",
        "simplify-expr,fold-constant,add-to-subtract,dce",
        "--bisect",
    )
    assert code == 1
    head = out.splitlines()[0]
    assert "pass #2 'add-to-subtract'" in head and "changes the results" in head
    assert "add(%0, %y)" in out and "subtract(%0, %y)" in out  # before and after


def test_bisect_of_a_correct_pipeline_exits_0(tmp_path, capsys):
    source = write(tmp_path, "p.relay", PROGRAM)
    code, out, _ = run(capsys, "opt", source, "-O", "3", "--bisect", "--seed", "4")
    assert code == 0
    assert "every pass" in out and "keeps the results" in out


@pytest.mark.parametrize(
    "text, expected",
    [
        ("x = 1\nraise ValueError('boom in the pass file')\n", "ValueError: boom in the pass file"),
        ("def f(:\n", "SyntaxError"),
    ],
)
def test_a_file_that_fails_to_load_is_a_user_error_with_its_frames(
    tmp_path, capsys, text, expected
):
    bad = write(tmp_path, "bad.py", text)
    code, out, err = run(capsys, "opt", "--load", bad, "--list-passes")
    assert code == 1 and out == ""
    assert f"--load {bad}" in err and expected in err
    assert f"{bad}:" in err  # the place in the user's file
    assert "Traceback" not in err and "runpy" not in err


def test_load_errors_for_missing_files_modules_and_name_clashes(tmp_path, capsys):
    code, _, err = run(capsys, "opt", "--load", str(tmp_path / "none.py"), "--list-passes")
    assert code == 1 and "no such file" in err
    code, _, err = run(capsys, "opt", "--load", "no_such_relay_module", "--list-passes")
    assert code == 1 and "no module named 'no_such_relay_module'" in err
    clash = write(
        tmp_path,
        "clash.py",
        "from relay.passes import module_pass\n"
        "@module_pass(name='dce')\ndef mine(mod, ctx, options):\n    return mod\n",
    )
    code, _, err = run(capsys, "opt", "--load", clash, "--list-passes")
    assert code == 1 and "a pass named 'dce' is already registered" in err


def test_opt_without_a_file_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["opt"])
    assert info.value.code == 2
    assert "--list-passes" in capsys.readouterr().err


def test_explain_pattern_says_where_a_pattern_matches_and_why_not(tmp_path, capsys):
    source = write(tmp_path, "p.relay", PROGRAM)
    matching = 'is_op("add")(is_op("multiply")(wildcard(), is_constant()), wildcard())'
    code, out, _ = run(capsys, "opt", source, "--explain-pattern", matching)
    assert code == 0 and "1 matched" in out and "@main: matched add(" in out
    code, out, _ = run(
        capsys, "opt", source, "--explain-pattern", 'is_op("add")(is_constant(), wildcard())'
    )
    assert code == 0 and "0 matched" in out and "expected a constant" in out
    code, out, err = run(capsys, "opt", source, "--explain-pattern", "is_op(")
    assert code == 1 and out == "" and "<pattern>:1:" in err
