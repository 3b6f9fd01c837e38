"""Source files and spans: where in the user's text a node came from."""

from __future__ import annotations

import bisect

from attrs import field, frozen


@frozen(eq=False)
class SourceFile:
    """A named piece of source text; spans point into it (compared by identity)."""

    name: str
    text: str
    _line_starts: list[int] = field(factory=list, repr=False)

    def line_starts(self) -> list[int]:
        """Offsets at which each line starts (computed once, on demand)."""
        if not self._line_starts:
            text = self.text
            starts = [0]
            find = text.find
            newline = find("\n")
            while newline >= 0:  # str.find runs in C: fast on long lines (metadata)
                starts.append(newline + 1)
                newline = find("\n", newline + 1)
            self._line_starts.extend(starts)
        return self._line_starts

    def line_text(self, line: int) -> str:
        """The text of 1-based line `line`, without its newline."""
        starts = self.line_starts()
        if not 1 <= line <= len(starts):
            return ""
        begin = starts[line - 1]
        end = starts[line] - 1 if line < len(starts) else len(self.text)
        return self.text[begin:end].rstrip("\r")

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset.

        Before the table of line starts exists, only the text up to `offset` is scanned, so
        locating something early in a file does not index the (possibly huge) rest of it.
        """
        if not self._line_starts:
            text = self.text
            line_start = text.rfind("\n", 0, offset) + 1
            return text.count("\n", 0, offset) + 1, offset - line_start + 1
        starts = self._line_starts
        line = bisect.bisect_right(starts, offset)
        return line, offset - starts[line - 1] + 1


@frozen
class Span:
    """A region of a source file: 1-based lines and columns, end column exclusive."""

    source: SourceFile | None
    line: int
    column: int
    end_line: int
    end_column: int

    @property
    def source_name(self) -> str:
        """The file name shown in diagnostics."""
        return self.source.name if self.source is not None else "<unknown>"

    def merge(self, other: Span | None) -> Span:
        """The smallest span covering both."""
        if other is None:
            return self
        start = min((self.line, self.column), (other.line, other.column))
        end = max((self.end_line, self.end_column), (other.end_line, other.end_column))
        return Span(self.source, start[0], start[1], end[0], end[1])

    def render(self) -> str:
        """The source line of the span's start with a caret (and tildes) under it."""
        if self.source is None:
            return ""
        text = self.source.line_text(self.line).expandtabs(1)
        if not text.strip():
            return ""
        width = 1
        if self.end_line == self.line and self.end_column > self.column:
            width = self.end_column - self.column
        width = max(1, min(width, len(text) - self.column + 1))
        marker = " " * (self.column - 1) + "^" + "~" * (width - 1)
        return f"  {text}\n  {marker}"

    def __str__(self) -> str:
        return f"{self.source_name}:{self.line}:{self.column}"
