"""The pre-pass of the parser: blank out comments, find the metadata section.

Lark's regular expressions cannot match nested block comments, so comments are removed
before lexing: every character of a comment except newlines becomes a space, which keeps
every token at its original line and column. The same scan checks that strings and block
comments are terminated, that a carriage return is followed by a newline, and splits off
the JSON after a `#[metadata]` line. Like the lexer, it reads a `meta[...][i]` reference
as one token.
"""

from __future__ import annotations

import re

from attrs import frozen

from ..lang.diagnostics import ParseError
from ..lang.span import SourceFile, Span

# A block comment without nested comments (the common case) is matched in one go.
_SIMPLE_COMMENT = r"/\*[^*/]*(?:(?:\*(?!/)|/(?!\*))[^*/]*)*\*/"
_INTERESTING = re.compile(
    rf'(?P<comment>{_SIMPLE_COMMENT})|"|//|/\*|\r|^#\[metadata\]|meta\[', re.MULTILINE
)
# The lexer's META terminal (relay.lark): one token, so a `"` or `//` inside is neither a
# string nor a comment.
META_REFERENCE = re.compile(r"meta\[[^\]\n]*\]\[[0-9]+\]")
# Characters that continue a name, a variable or a number: a word right after one is
# part of that token (`my_type`, `%type`, `x.type`, `1meta`), not a keyword.
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./%@")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BLOCK_EDGE = re.compile(r"/\*|\*/")
_NOT_NEWLINE = re.compile(r"[^\n]")


@frozen
class Prepared:
    """The text to lex (comments blanked) and the metadata section, if any."""

    text: str
    metadata: str | None
    metadata_offset: int


def _span_at(source: SourceFile, offset: int, length: int = 1) -> Span:
    line, column = source.position(offset)
    return Span(source, line, column, line, column + length)


def prepare(source: SourceFile) -> Prepared:
    """Blank comments out of `source.text` and split off its metadata section."""
    text = source.text
    pieces: list[str] = []
    copied = 0  # text[:copied] is already in `pieces`
    pos = 0
    metadata: str | None = None
    metadata_offset = -1
    while True:
        match = _INTERESTING.search(text, pos)
        if match is None:
            break
        start = match.start()
        kind = match.group()
        if match.lastgroup == "comment":
            pieces.append(text[copied:start])
            pieces.append(_NOT_NEWLINE.sub(" ", kind) if "\n" in kind else " " * len(kind))
            copied = pos = match.end()
        elif kind == '"':
            string = _STRING.match(text, start)
            if string is None:
                raise ParseError.at(_span_at(source, start), "unterminated string literal")
            pos = string.end()
        elif kind == "meta[":
            reference = META_REFERENCE.match(text, start) if starts_token(text, start) else None
            pos = reference.end() if reference is not None else match.end()
        elif kind == "\r":
            if not text.startswith("\n", start + 1):
                raise ParseError.at(
                    _span_at(source, start), "a carriage return (\\r) must be followed by \\n"
                )
            pieces.append(text[copied:start])
            pieces.append(" ")
            copied = pos = start + 1
        elif kind == "//":
            end = text.find("\n", start)
            end = len(text) if end < 0 else end
            pieces.append(text[copied:start])
            pieces.append(" " * (end - start))
            copied = pos = end
        elif kind == "/*":
            end = _block_comment_end(source, start)
            pieces.append(text[copied:start])
            comment = text[start:end]
            pieces.append(_NOT_NEWLINE.sub(" ", comment) if "\n" in comment else " " * len(comment))
            copied = pos = end
        else:  # #[metadata] at the start of a line
            metadata = text[match.end() :]
            metadata_offset = start
            pieces.append(text[copied:start])
            copied = len(text)
            break
    pieces.append(text[copied:])
    return Prepared("".join(pieces), metadata, metadata_offset)


def starts_token(text: str, offset: int) -> bool:
    """Whether a word at `offset` starts a token, rather than continuing the one before."""
    return offset == 0 or text[offset - 1] not in _TOKEN_CHARS


def _block_comment_end(source: SourceFile, start: int) -> int:
    """The offset just after the (nested) block comment that opens at `start`."""
    text = source.text
    depth = 1
    pos = start + 2
    while depth:
        edge = _BLOCK_EDGE.search(text, pos)
        if edge is None:
            raise ParseError.at(_span_at(source, start, 2), "unterminated block comment")
        depth += 1 if edge.group() == "/*" else -1
        pos = edge.end()
    return pos
