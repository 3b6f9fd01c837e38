"""A lossless tokenizer of Relay text for the mutators and the minimizer.

`tokenize(text)` splits any string (valid or not) into tokens whose concatenation is the
text again; each token has a kind, so mutations can be syntax-aware (flip a number, a
dtype, a shape) without a parser.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

KINDS = (
    "space", "comment", "string", "header", "meta", "number", "local", "graph", "global",
    "name", "punct",
)  # fmt: skip

_PATTERN = re.compile(
    r"""(?P<space>\s+)
    |(?P<comment>//[^\n]*)
    |(?P<string>"(?:\\.|[^"\\\n])*")
    |(?P<header>\#\[[^\]\n]*\])
    |(?P<meta>meta\[[^\]\n]*\]\[[0-9]+\])
    |(?P<number>-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?[A-Za-z_0-9]*)
    |(?P<local>%[A-Za-z_][A-Za-z0-9_/]*)
    |(?P<graph>%[0-9]+)
    |(?P<global>@[A-Za-z_][A-Za-z0-9_/]*)
    |(?P<name>[A-Za-z_][A-Za-z0-9_/]*(?:\.[A-Za-z_][A-Za-z0-9_/]*)*)
    |(?P<punct>->|=>|==|!=|<=|>=|/\*|\*/|.)""",
    re.X | re.S,
)


class Token(NamedTuple):
    """A piece of the text and what it looks like."""

    kind: str
    text: str


def tokenize(text: str) -> list[Token]:
    """The tokens of `text`; `"".join(t.text for t in tokenize(text)) == text`."""
    return list(_tokens(text))


@functools.lru_cache(maxsize=1024)  # the seed programs are tokenized again and again
def _tokens(text: str) -> tuple[Token, ...]:
    return tuple(Token(m.lastgroup or "punct", m.group()) for m in _PATTERN.finditer(text))


def join(tokens: list[Token]) -> str:
    """The text of `tokens`."""
    return "".join(t.text for t in tokens)


def retokenize(tokens: list[Token]) -> list[Token]:
    """`tokens` tokenized again (after edits that may have glued or split tokens)."""
    return tokenize(join(tokens))
