"""One exception family for everything a user can get wrong.

A `Diagnostic` has a level, a message, an optional span and notes; an `Error` carries one
or more diagnostics and renders them as `file:line:col: error: message`, the source line
and a caret under the column. A `RelayWarning` carries a diagnostic of level "warning".
"""

from __future__ import annotations

from collections.abc import Iterable

from attrs import frozen

from .span import Span


@frozen
class Diagnostic:
    """One message about one place in the source."""

    level: str
    message: str
    span: Span | None = None
    notes: tuple[str, ...] = ()

    def render(self) -> str:
        """Text as a compiler prints it: location, level, message, source line, caret."""
        location = f"{self.span}: " if self.span is not None else ""
        lines = [f"{location}{self.level}: {self.message}"]
        if self.span is not None:
            snippet = self.span.render()
            if snippet:
                lines.append(snippet)
        lines.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(lines)


class Error(Exception):
    """Base of every diagnosed user error (`relay.Error`)."""

    def __init__(self, diagnostics: Diagnostic | str | Iterable[Diagnostic]) -> None:
        if isinstance(diagnostics, str):
            diagnostics = [Diagnostic("error", diagnostics)]
        elif isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics: list[Diagnostic] = list(diagnostics)
        super().__init__(self.render())

    @classmethod
    def at(cls, span: Span | None, message: str, *notes: str) -> Error:
        """An error with a single diagnostic at `span`."""
        return cls(Diagnostic("error", message, span, tuple(notes)))

    @property
    def span(self) -> Span | None:
        """The span of the first diagnostic."""
        return self.diagnostics[0].span if self.diagnostics else None

    @property
    def message(self) -> str:
        """The message of the first diagnostic."""
        return self.diagnostics[0].message if self.diagnostics else ""

    def render(self) -> str:
        """All diagnostics, rendered one after the other."""
        return "\n".join(d.render() for d in self.diagnostics)

    def __str__(self) -> str:
        return self.render()


class ParseError(Error):
    """The text is not a well-formed program."""


class TypeCheckError(Error):
    """The program is well-formed but ill-typed."""


class AttrsError(Error):
    """An operator or function attribute is unknown, missing or of the wrong kind."""


class RelayWarning(UserWarning):
    """A Python warning that carries a diagnostic (e.g. a module without a version header).

    `str()` is the diagnostic's first line; `diagnostic.render()` adds the source line and
    the notes, as the command line prints it.
    """

    def __init__(self, diagnostic: Diagnostic) -> None:
        location = f"{diagnostic.span}: " if diagnostic.span is not None else ""
        super().__init__(f"{location}{diagnostic.message}")
        self.diagnostic = diagnostic


class InputError(Error):
    """A value passed to a compiled or interpreted program has the wrong name, shape or dtype."""
