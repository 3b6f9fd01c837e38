"""Diagnostics render as file:line:col: error: message, the line, and a caret."""

from relay.lang import Diagnostic, Error, ParseError, SourceFile, Span


def test_render_with_caret():
    src = SourceFile("model.relay", "def @main() {\n  %x + 1\n}\n")
    span = Span(src, 2, 3, 2, 5)
    error = ParseError.at(span, "undeclared variable %x")
    text = str(error)
    assert text.splitlines() == [
        "model.relay:2:3: error: undeclared variable %x",
        "    %x + 1",
        "    ^~",
    ]
    assert isinstance(error, Error)
    assert error.span == span


def test_render_without_span_and_with_notes():
    diag = Diagnostic("warning", "match is not exhaustive", None, ("`Nil` is not covered",))
    assert diag.render() == "warning: match is not exhaustive\n  note: `Nil` is not covered"


def test_several_diagnostics():
    src = SourceFile("f", "a\nb\n")
    error = Error(
        [
            Diagnostic("error", "one", Span(src, 1, 1, 1, 1)),
            Diagnostic("error", "two", Span(src, 2, 1, 2, 1)),
        ]
    )
    assert "f:1:1: error: one" in str(error) and "f:2:1: error: two" in str(error)


def test_position_of_offset():
    src = SourceFile("f", "ab\ncd\n")
    assert src.position(0) == (1, 1)
    assert src.position(4) == (2, 2)
