"""Installs the repository root as the package `relay` (see DESIGN.md, "Layout").

Metadata lives in pyproject.toml; this file only maps the root folder to `relay` and lists
its subpackages (every folder with an `__init__.py`, except tests, benchmarks, examples).
"""

from setuptools import find_packages, setup

_NOT_INSTALLED = ["tests", "tests.*", "bench", "bench.*", "examples", "examples.*", "build*"]

setup(
    package_dir={"relay": "."},
    packages=["relay", *(f"relay.{name}" for name in find_packages(".", exclude=_NOT_INSTALLED))],
)
