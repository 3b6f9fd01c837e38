"""Shrink a failing program while it still fails the same way (delta debugging).

`minimize(text, still_fails)` removes chunks of lines, then chunks of tokens, halving
the chunk size each time nothing can be removed (ddmin's complement steps), until no
single line or token can go, or the budget of tests or seconds runs out.
`same_finding(stage, outcome)` is the usual test: the stage gives a finding with the
same signature.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .stages import Outcome, run_stage
from .tokens import tokenize

_T = TypeVar("_T")


class _Budget:
    def __init__(self, seconds: float, tests: int) -> None:
        self.deadline = time.monotonic() + seconds
        self.tests = tests

    def spend(self) -> bool:
        self.tests -= 1
        return self.tests >= 0 and time.monotonic() < self.deadline


def _ddmin(items: list[_T], test: Callable[[list[_T]], bool], budget: _Budget) -> list[_T]:
    """A sublist of `items` that still passes `test`, from which no chunk of the final
    size (1 when the budget lasts) can be removed."""
    chunk = max(1, len(items) // 2)
    while items:
        removed = False
        start = 0
        while start < len(items):
            candidate = items[:start] + items[start + chunk :]
            if not budget.spend():
                return items
            if test(candidate):
                items, removed = candidate, True  # same start: the next chunk moved here
            else:
                start += chunk
        if chunk == 1 and not removed:
            return items
        if not removed:
            chunk = max(1, chunk // 2)
    return items


def minimize(
    text: str,
    still_fails: Callable[[str], bool],
    seconds: float = 60.0,
    max_tests: int = 2000,
) -> str:
    """The smallest text found that still makes `still_fails` true (which `text` must):
    whole lines are removed first, then single tokens (whitespace kept)."""
    budget = _Budget(seconds, max_tests)
    cache: dict[str, bool] = {text: True}

    def test(candidate: str) -> bool:
        if candidate not in cache:
            cache[candidate] = still_fails(candidate)
        return cache[candidate]

    for simplify in _SIMPLIFICATIONS:  # coordinated edits that ddmin cannot make
        for candidate in simplify(text):
            if budget.spend() and test(candidate):
                text = candidate
                break
    lines = text.split("\n")
    lines = _ddmin(lines, lambda kept: test("\n".join(kept)), budget)
    lines = _remove_blocks(lines, lambda kept: test("\n".join(kept)), budget)
    current = "\n".join(lines)
    tokens = tokenize(current)
    significant = [i for i, t in enumerate(tokens) if t.kind != "space"]

    def with_only(kept: Sequence[int]) -> str:
        keep = set(kept)
        return "".join(t.text for i, t in enumerate(tokens) if t.kind == "space" or i in keep)

    kept = _ddmin(significant, lambda k: test(with_only(k)), budget)
    return _tidy(with_only(kept), test)


_RETURN_TYPE = re.compile(r"^(def @[^\n]*\))\s*->[^\n{]*\{", re.M)
_COMMENT = re.compile(r"/\*[^/*]*\*/")


def _without_return_types(text: str) -> list[str]:
    """`text` without the return type annotations of its `def`s (so the result of a
    function can be cut down)."""
    plain = _RETURN_TYPE.sub(r"\1 {", text)
    return [plain] if plain != text else []


def _without_comments(text: str) -> list[str]:
    """`text` without its `/* ... */` comments (the printer's type annotations)."""
    plain = _COMMENT.sub("", text)
    return [plain] if plain != text else []


def _single_results(text: str) -> list[str]:
    """`text` with a last line `(a, b, ...)` before a closing `}` replaced by each of its
    fields in turn."""
    lines = text.split("\n")
    out = []
    for i in range(len(lines) - 1):
        line = lines[i].strip()
        if lines[i + 1].strip() != "}" or not (line.startswith("(") and line.endswith(")")):
            continue
        fields = [f.strip() for f in line[1:-1].split(",")]
        if len(fields) > 1 and all(re.fullmatch(r"%[\w.]+", f) for f in fields):
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            out += ["\n".join([*lines[:i], indent + f, *lines[i + 1 :]]) for f in fields]
    return out


def _without_metadata(text: str) -> list[str]:
    """`text` without its metadata section."""
    at = text.find("#[metadata]")
    return [text[:at]] if at >= 0 else []


_SIMPLIFICATIONS: tuple[Callable[[str], list[str]], ...] = (
    _without_comments, _without_metadata, _without_return_types, _single_results,
)  # fmt: skip


_VERSION = '#[version = "0.0.5"]'


def _blocks(lines: list[str]) -> list[tuple[int, int]]:
    """Line ranges [i, j] from a line that opens braces to the line that closes them."""
    opened: list[int] = []
    found = []
    for i, line in enumerate(lines):
        for char in line:
            if char == "{":
                opened.append(i)
            elif char == "}" and opened:
                start = opened.pop()
                if start != i:
                    found.append((start, i))
    return sorted(set(found), key=lambda r: r[0] - r[1])  # the biggest first


def _remove_blocks(
    lines: list[str], test: Callable[[list[str]], bool], budget: _Budget
) -> list[str]:
    """`lines` without the brace blocks (a `def`, a clause, a closure) that can go."""
    progress = True
    while progress:
        progress = False
        for start, end in _blocks(lines):
            candidate = lines[:start] + lines[end + 1 :]
            if not budget.spend():
                return lines
            if test(candidate):
                lines, progress = candidate, True
                break
    return lines


def _tidy(text: str, test: Callable[[str], bool]) -> str:
    """`text` with blank lines and trailing spaces dropped and the version header back,
    if it still fails."""
    tidy = "\n".join(line.rstrip() for line in text.split("\n") if line.strip()) + "\n"
    if tidy != text and test(tidy):
        text = tidy
    if not text.startswith(_VERSION) and test(f"{_VERSION}\n{text}"):
        text = f"{_VERSION}\n{text}"
    return text


def same_finding(
    stage: str, finding: Outcome, seed: int = 0, valid: bool = False, **options: Any
) -> Callable[[str], bool]:
    """A test for `minimize`: running `stage` on the text gives a finding with the
    signature of `finding` (timeouts excepted: they are not minimized)."""

    def still_fails(text: str) -> bool:
        outcomes = run_stage(stage, text, seed, valid, **options)
        return any(o.signature == finding.signature for o in outcomes if o.is_finding)

    return still_fails
