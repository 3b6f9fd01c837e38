"""The Python examples of README.md run as written (from a copy of the checkout's
examples, with the weights they need made first)."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    work = tmp_path_factory.mktemp("readme")
    shutil.copytree(ROOT / "examples", work / "examples", ignore=shutil.ignore_patterns("*.npz"))
    made = subprocess.run(
        [sys.executable, "examples/make_weights.py", "mlp"],
        cwd=work,
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    return work


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_example_runs(workdir, index):
    done = subprocess.run(
        [sys.executable, "-c", BLOCKS[index]],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
