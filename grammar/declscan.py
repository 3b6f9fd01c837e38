"""A quick scan for the names a module declares, before it is parsed.

The prelude is a fallback: a name means the program's own declaration wherever the program
declares it, even before the declaration in the text. The parser resolves names as it
reduces, so it needs to know up front which global functions, ADTs and constructors the
program declares. This scan finds them with regular expressions over the text the
pre-pass produced (comments blanked, metadata removed), reading keywords (whole words),
string literals and `meta[...][i]` references as the lexer does.

The scan must not miss a declaration the parser goes on to read (the parser reports a miss
as an internal error). It is lenient otherwise: on text that is not a well-formed module
it may find too much, and the parse then reports the syntax error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from attrs import frozen

from .prepass import META_REFERENCE, starts_token

_NAME = r"[A-Za-z_][A-Za-z0-9_/]*(?:\.[A-Za-z_][A-Za-z0-9_/]*)*"
# The lexer's whitespace (the pre-pass turned `\r\n` into ` \n` and comments into spaces).
_GAP = r"[ \t\n]"
# Candidates first (a cheap search), then the exact forms at each candidate. A keyword is a
# whole word, like the lexer's (`typeT` is one name; `def@f` is `def` then `@f`).
_CANDIDATE = re.compile(rf'"|meta\[|def(?:{_GAP}|@)|type{_GAP}')
_ITEM_CANDIDATE = re.compile(rf'"|meta\[|def(?:{_GAP}|@)|extern{_GAP}+type{_GAP}|type{_GAP}')
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_DEF = re.compile(rf"def{_GAP}*@([A-Za-z_][A-Za-z0-9_/]*)")
_TYPE = re.compile(rf"type{_GAP}+({_NAME})")
_NAME_AT = re.compile(_NAME)
_SPACE = re.compile(rf"{_GAP}*")


@frozen
class Declarations:
    """The names a module declares: global functions, ADTs, constructors (with offsets)."""

    globals: frozenset[str]
    types: frozenset[str]
    constructors: dict[str, int]


def _keywords(text: str, candidates: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    """The offset and kind (`def`, `type` or `extern`) of each keyword the lexer would
    read at the start of a `candidates` match: strings and `meta[...][i]` references are
    skipped as the lexer skips them, and a word glued to a longer name is no keyword."""
    pos = 0
    while True:
        candidate = candidates.search(text, pos)
        if candidate is None:
            return
        start = candidate.start()
        char = text[start]
        if char == '"':
            string = _STRING.match(text, start)
            pos = string.end() if string is not None else len(text)
            continue
        pos = candidate.end()
        if not starts_token(text, start):
            continue  # part of a longer name (`my_type`, `%type`, `x.type`)
        if char == "m":
            reference = META_REFERENCE.match(text, start)
            pos = reference.end() if reference is not None else pos
            continue
        yield start, {"d": "def", "t": "type", "e": "extern"}[char]


def scan_declarations(text: str) -> Declarations:
    """The names declared by `def @name`, `type Name` / `extern type Name` and ADT bodies."""
    globals_: set[str] = set()
    types: set[str] = set()
    constructors: dict[str, int] = {}
    for start, keyword in _keywords(text, _CANDIDATE):
        if keyword == "def":
            match = _DEF.match(text, start)
            if match is not None:
                globals_.add(match.group(1))
            continue
        match = _TYPE.match(text, start)
        if match is not None:
            types.add(match.group(1))
            for name, offset in _constructors(text, match.end()):
                constructors.setdefault(name, offset)
    return Declarations(frozenset(globals_), frozenset(types), constructors)


@frozen
class Item:
    """A top-level item of a module: `def @name ...` or `[extern] type Name ...`, from
    `start` up to the next item (or the end of the text)."""

    kind: str  # "def" or "type"
    name: str
    start: int
    end: int
    constructors: tuple[str, ...] = ()


def scan_items(text: str) -> list[Item]:
    """The top-level items of a module, in order (as leniently as `scan_declarations`:
    used only to recover from errors, so a malformed item just ends where the next begins)."""
    found: list[tuple[str, str, int, tuple[str, ...]]] = []
    for start, keyword in _keywords(text, _ITEM_CANDIDATE):
        if keyword == "def":
            match = _DEF.match(text, start)
            if match is not None:
                found.append(("def", match.group(1), start, ()))
            continue
        at = text.index("type", start + len("extern")) if keyword == "extern" else start
        match = _TYPE.match(text, at)
        if match is not None:
            names = tuple(name for name, _ in _constructors(text, match.end()))
            found.append(("type", match.group(1), start, names))
    ends = [start for _, _, start, _ in found[1:]] + [len(text)]
    return [
        Item(kind, name, start, end, ctors) for (kind, name, start, ctors), end in zip(found, ends)
    ]


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
    i = pos
    while i < len(text):
        char = text[i]
        if char == opening:
            depth += 1
        elif char == closing:
            depth -= 1
            if depth == 0:
                return i + 1
        elif char == "m" and starts_token(text, i):
            reference = META_REFERENCE.match(text, i)  # its brackets are not the type's
            if reference is not None:
                i = reference.end()
                continue
        i += 1
    return len(text)
