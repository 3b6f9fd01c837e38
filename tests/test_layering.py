"""The folder dependencies of DESIGN.md ("Layout"), checked on the package source.

Every import of a `relay` module — at module level or inside a function, absolute or
relative — is an edge from the importing folder to the imported one. The test fails on an
edge the design does not allow, and on any cycle between folders, so the layering cannot
rot again. Backend subfolders (`backend/build`, `backend/lower`, ...) are folders of their
own; modules directly in `backend/` (the package itself, `backend/target.py`) are the
folder `backend`, which every backend subfolder may use.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOT_PACKAGE = {"tests", "bench", "examples", ".venv", "build", "dist", ".git", ".ci", "docs"}

BELOW_BACKEND = {"lang", "typecheck", "backend"}
ALLOWED: dict[str, set[str]] = {
    "lang": set(),
    "stdlib": set(),
    "grammar": {"lang", "stdlib"},
    "typecheck": {"lang"},
    # Constant folding evaluates with the reference interpreter.
    "passes": {"lang", "typecheck", "backend.runtime"},
    "backend": {"lang", "typecheck"},
    "backend.tir": BELOW_BACKEND,
    "backend.te": BELOW_BACKEND | {"backend.tir"},
    "backend.arith": BELOW_BACKEND | {"backend.tir"},
    "backend.codegen": BELOW_BACKEND | {"backend.tir"},
    "backend.lower": BELOW_BACKEND | {"backend.te", "backend.tir", "backend.arith"},
    "backend.runtime": BELOW_BACKEND,
    # Artifacts keep fallback kernels as text, so loading one parses it.
    "backend.build": BELOW_BACKEND
    | {
        "grammar",
        "backend.lower",
        "backend.te",
        "backend.tir",
        "backend.arith",
        "backend.codegen",
        "backend.runtime",
        "backend.profile",
    },
    # Profiling runs compiled models with the thread pool's trace on and probes the machine.
    "backend.profile": BELOW_BACKEND | {"backend.runtime", "backend.codegen"},
    # Tuning builds and measures kernels (build, runtime) and reads their loop IR.
    "backend.tune": BELOW_BACKEND
    | {
        "backend.build",
        "backend.lower",
        "backend.te",
        "backend.tir",
        "backend.codegen",
        "backend.runtime",
    },
    "backend.autotune": BELOW_BACKEND
    | {"backend.build", "backend.lower", "backend.te", "backend.tir", "backend.codegen"},
}
"""What each folder may import; the package root and `testing/` may import everything."""

UNRESTRICTED = {"root", "testing"}


def folder_of(module: str) -> str | None:
    """The folder (layer) of a dotted module name, or None outside the `relay` package."""
    parts = module.split(".")
    if parts[0] != "relay":
        return None
    if len(parts) == 1:
        return "root"
    if parts[1] == "backend":
        if len(parts) >= 3 and (ROOT / "backend" / parts[2]).is_dir():
            return f"backend.{parts[2]}"
        return "backend"
    return parts[1] if (ROOT / parts[1]).is_dir() else "root"


def _module_name(path: Path) -> tuple[list[str], list[str]]:
    """The dotted name of a source file and the package its relative imports start from."""
    parts = ["relay", *path.relative_to(ROOT).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
        return parts, parts
    return parts, parts[:-1]


def _imported(node: ast.AST, package: list[str]) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = package[: len(package) - node.level + 1]
            name = ".".join(base + ([node.module] if node.module else []))
        else:
            name = node.module or ""
        return [name, *(f"{name}.{alias.name}" for alias in node.names)]
    return []


@functools.cache
def folder_edges() -> dict[tuple[str, str], list[str]]:
    """Every folder-to-folder import edge of the package, with the files that make it."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in NOT_PACKAGE:
            continue
        name, package = _module_name(path)
        source = folder_of(".".join(name))
        assert source is not None
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in {folder_of(m) for m in _imported(node, package)}:
                if target is not None and target != source:
                    edges[(source, target)].append(str(rel))
    return edges


def test_every_folder_has_a_rule():
    folders = {name for edge in folder_edges() for name in edge}
    unknown = folders - set(ALLOWED) - UNRESTRICTED
    assert not unknown, f"folders with no dependency rule in this test: {sorted(unknown)}"


def test_imports_follow_the_layering():
    wrong = [
        f"{source} -> {target} ({', '.join(sorted(set(files)))})"
        for (source, target), files in sorted(folder_edges().items())
        if source not in UNRESTRICTED and target not in ALLOWED.get(source, set())
    ]
    assert not wrong, "imports the design does not allow:\n" + "\n".join(wrong)


def test_no_cycle_between_folders():
    graph: dict[str, set[str]] = defaultdict(set)
    for source, target in folder_edges():
        graph[source].add(target)
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    for start in sorted(graph):
        if start in state:
            continue
        stack = [(start, iter(sorted(graph[start])))]
        state[start] = 1
        while stack:
            node, successors = stack[-1]
            nxt = next(successors, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                path = [n for n, _ in stack]
                cycle = [*path[path.index(nxt) :], nxt]
                pytest.fail("a cycle between folders: " + " -> ".join(cycle))
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(sorted(graph[nxt]))))


def test_the_checker_sees_function_local_and_relative_imports():
    source = "def f():\n    from ..lower import lower_func\n"
    (node,) = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)]
    imported = _imported(node, ["relay", "backend", "runtime"])
    assert folder_of(imported[0]) == "backend.lower"
    assert folder_of("relay.backend.target") == "backend"
    assert folder_of("relay.driver") == "root"
