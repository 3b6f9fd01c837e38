"""docs/tutorial_rewrite.md is a test: its ```python blocks run in order, in one namespace."""

import re
from pathlib import Path

from relay.passes import PASSES

TUTORIAL = Path(__file__).resolve().parent.parent / "docs" / "tutorial_rewrite.md"
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def python_blocks(text):
    """The code of every ```python block of a markdown text, in order."""
    return BLOCK.findall(text)


def test_blocks_are_found():
    blocks = python_blocks("a\n```python\nx = 1\n```\ntext\n```\nnot python\n```\n")
    assert blocks == ["x = 1\n"]


def test_tutorial_code_runs(capsys):
    blocks = python_blocks(TUTORIAL.read_text(encoding="utf-8"))
    assert len(blocks) >= 6
    namespace = {"__name__": "tutorial_rewrite"}
    try:
        for number, code in enumerate(blocks, 1):
            exec(compile(code, f"{TUTORIAL.name}:block{number}", "exec"), namespace)
    finally:
        PASSES.pop("remove-multiply-by-one", None)  # the tutorial registers it
    printed = capsys.readouterr().out
    assert "before:" in printed and "after:" in printed
    assert "check_pass: pass 'drop-constant-factors': the values differ" in printed
    assert "remove_multiply_by_one" in namespace
