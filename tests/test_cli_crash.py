"""Internal errors in the command line: exit 3, a sentence saying where to report the bug,
and with `--save-crash DIR` the program and the traceback saved in DIR (run in-process,
with a stage forced to fail)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import relay.typecheck
from relay import cli

PROGRAM = """#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) {
  add(%x, %x)
}
"""


def _broken_check(module, *args, **kwargs):  # the forced bug
    raise RuntimeError("forced failure in the type checker")


@pytest.fixture
def broken_typecheck(monkeypatch):
    monkeypatch.setattr(relay.typecheck, "check_module", _broken_check)


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "prog.relay"
    path.write_text(PROGRAM, encoding="utf-8")
    return path


def _saved(folder: Path) -> tuple[Path, Path]:
    programs = sorted(folder.glob("crash-*.relay"))
    reports = sorted(folder.glob("crash-*.txt"))
    assert len(programs) == 1 and len(reports) == 1, (programs, reports)
    return programs[0], reports[0]


def test_internal_error_says_where_to_report(broken_typecheck, program, capsys):
    assert cli.main(["check", str(program)]) == cli.EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: forced failure in the type checker" in err
    assert "this is a bug in relay" in err.lower()
    assert f"please report it to {cli.REPORT_TO}" in err
    assert "--save-crash DIR" in err  # how to save the program next time
    assert "Traceback" not in err  # only with RELAY_DEBUG=1


def test_save_crash_before_the_command(broken_typecheck, program, tmp_path, capsys):
    folder = tmp_path / "crashes"
    assert cli.main(["--save-crash", str(folder), "check", str(program)]) == cli.EXIT_INTERNAL
    saved, report = _saved(folder)
    assert saved.read_text(encoding="utf-8") == PROGRAM
    text = report.read_text(encoding="utf-8")
    assert "Traceback" in text and "_broken_check" in text
    assert "RuntimeError: forced failure in the type checker" in text
    assert f"relay --save-crash {folder} check {program}" in text
    err = capsys.readouterr().err
    assert str(saved) in err and str(report) in err


def test_save_crash_after_the_command_and_twice(broken_typecheck, program, tmp_path):
    folder = tmp_path / "crashes"
    assert cli.main(["opt", str(program), "--save-crash", str(folder)]) == cli.EXIT_INTERNAL
    assert cli.main(["opt", str(program), "--save-crash", str(folder)]) == cli.EXIT_INTERNAL
    assert len(list(folder.glob("crash-*.relay"))) == 2  # the second does not overwrite


def test_save_crash_of_standard_input(broken_typecheck, tmp_path, monkeypatch):
    folder = tmp_path / "crashes"
    monkeypatch.setattr("sys.stdin", io.StringIO(PROGRAM))
    assert cli.main(["check", "-", "--save-crash", str(folder)]) == cli.EXIT_INTERNAL
    saved, _ = _saved(folder)
    assert saved.read_text(encoding="utf-8") == PROGRAM


def test_build_failure_is_saved_too(monkeypatch, program, tmp_path, capsys):
    import relay.driver

    def broken_build(*args, **kwargs):
        raise IndexError("forced failure in the build")

    monkeypatch.setattr(relay.driver, "build", broken_build)
    folder = tmp_path / "crashes"
    status = cli.main(["build", str(program), "--save-crash", str(folder)])
    assert status == cli.EXIT_INTERNAL
    saved, report = _saved(folder)
    assert saved.read_text(encoding="utf-8") == PROGRAM
    assert "IndexError: forced failure in the build" in report.read_text(encoding="utf-8")
    assert "internal error: IndexError" in capsys.readouterr().err


def test_user_errors_save_nothing(program, tmp_path, capsys):
    folder = tmp_path / "crashes"
    bad = tmp_path / "bad.relay"
    bad.write_text(PROGRAM.replace("add(%x, %x)", "add(%x, %y)"), encoding="utf-8")
    assert cli.main(["--save-crash", str(folder), "check", str(bad)]) == cli.EXIT_USER_ERROR
    assert cli.main(["--save-crash", str(folder), "check", str(program)]) == cli.EXIT_OK
    assert not folder.exists()
    assert "internal error" not in capsys.readouterr().err


def test_unwritable_crash_folder_is_reported(broken_typecheck, program, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert cli.main(["--save-crash", str(blocker), "check", str(program)]) == cli.EXIT_INTERNAL
    assert f"could not save it in {blocker}" in capsys.readouterr().err
