"""A quick scan for the names a module declares, before it is parsed.

The prelude is a fallback: a name means the program's own declaration wherever the program
declares it, even before the declaration in the text. The parser resolves names as it
reduces, so it needs to know up front which global functions, ADTs and constructors the
program declares. This scan finds them with regular expressions over the text the
pre-pass produced (comments blanked, metadata removed), skipping string literals.

The scan is lenient: on text that is not a well-formed module it may find too much or too
little, and the parse then reports the syntax error.
"""

from __future__ import annotations

import re

from attrs import frozen

_NAME = r"[A-Za-z_][A-Za-z0-9_/]*(?:\.[A-Za-z_][A-Za-z0-9_/]*)*"
# Candidates first (a cheap search), then the exact forms at each candidate.
_CANDIDATE = re.compile(r'"|def[\s@]|type\s')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_DEF = re.compile(r"def\s*@([A-Za-z_][A-Za-z0-9_/]*)")
_TYPE = re.compile(rf"type\s+({_NAME})")
_NAME_AT = re.compile(_NAME)
_SPACE = re.compile(r"\s*")
_IDENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./%@")


@frozen
class Declarations:
    """The names a module declares: global functions, ADTs, constructors (with offsets)."""

    globals: frozenset[str]
    types: frozenset[str]
    constructors: dict[str, int]


def scan_declarations(text: str) -> Declarations:
    """The names declared by `def @name`, `type Name` / `extern type Name` and ADT bodies."""
    # `def` needs no space before `@`; `type` needs one (`typeT` would be one name).
    globals_: set[str] = set()
    types: set[str] = set()
    constructors: dict[str, int] = {}
    pos = 0
    while True:
        candidate = _CANDIDATE.search(text, pos)
        if candidate is None:
            break
        start = pos = candidate.start()
        if text[start] == '"':
            string = _STRING.match(text, start)
            pos = string.end() if string is not None else len(text)
            continue
        pos = candidate.end()
        if start > 0 and text[start - 1] in _IDENT_CHARS:
            continue  # part of a longer name (`my_type`, `%type`)
        if text[start] == "d":
            match = _DEF.match(text, start)
            if match is not None:
                globals_.add(match.group(1))
                pos = match.end()
            continue
        match = _TYPE.match(text, start)
        if match is not None:
            types.add(match.group(1))
            pos = match.end()
            for name, offset in _constructors(text, pos):
                constructors.setdefault(name, offset)
    return Declarations(frozenset(globals_), frozenset(types), constructors)


def _constructors(text: str, pos: int) -> list[tuple[str, int]]:
    """The constructors of the ADT whose name ends at `pos`: `[A, B] { C(T, ...), D }`."""
    found: list[tuple[str, int]] = []
    pos = _skip_space(text, pos)
    if text.startswith("[", pos):
        pos = _skip_balanced(text, pos, "[", "]")
        pos = _skip_space(text, pos)
    if not text.startswith("{", pos):
        return found  # `extern type`, or not well formed
    pos += 1
    while True:
        pos = _skip_space(text, pos)
        name = _NAME_AT.match(text, pos)
        if name is None:
            return found  # `}` or not well formed
        found.append((name.group(), pos))
        pos = _skip_space(text, name.end())
        if text.startswith("(", pos):
            pos = _skip_space(text, _skip_balanced(text, pos, "(", ")"))
        if not text.startswith(",", pos):
            return found
        pos += 1


def _skip_space(text: str, pos: int) -> int:
    match = _SPACE.match(text, pos)
    return match.end() if match is not None else pos


def _skip_balanced(text: str, pos: int, opening: str, closing: str) -> int:
    """The offset just after the bracket that closes the one at `pos` (or the end)."""
    depth = 0
    for i in range(pos, len(text)):
        char = text[i]
        if char == opening:
            depth += 1
        elif char == closing:
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)
