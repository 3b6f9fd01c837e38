"""Parse the Relay text format into IR: `parse`, `parse_expr`, `parse_file`.

lark compiles the grammar (`relay.lark`) to LALR(1) tables once per process (cached on
disk by lark); `lalr.py` runs them with a contextual lexer. No parse tree is built: the
callbacks in `actions.py` run at each reduction and build the IR directly, so nothing
recurses with the depth of the program. The callbacks keep per-parse state in one object,
so parses are serialized by a lock.

Every error is a `ParseError` with a `file:line:col` span and a caret; inputs that make
anything else go wrong are reported as ParseErrors too.
"""

from __future__ import annotations

import gc
import os
import re
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lark import Lark
from lark.lexer import PatternStr

from ..lang.diagnostics import Diagnostic, Error, ParseError, RelayWarning
from ..lang.expr import Expr
from ..lang.metadata import read_metadata
from ..lang.module import IRModule
from ..lang.printer import VERSION_HEADER
from ..lang.span import SourceFile, Span
from .actions import Actions
from .declscan import Item, scan_declarations, scan_items
from .errors import convert
from .lalr import Driver, SyntaxProblem
from .prelude import PreludeLink, load_prelude
from .prepass import prepare

_GRAMMAR = Path(__file__).with_name("relay.lark")
_LOCK = threading.Lock()
_ACTIONS = Actions()
_driver: Driver | None = None
_spellings: dict[str, str] = {}
# Every bracket opens a scope (so every `,` is inside one, and resets only that one).
_SCOPE_HOOKS = {
    "LPAR": _ACTIONS.open_scope,
    "LBRACE": _ACTIONS.open_scope,
    "LSQB": _ACTIONS.open_scope,
    "RPAR": _ACTIONS.close_scope,
    "RBRACE": _ACTIONS.close_scope,
    "RSQB": _ACTIONS.close_scope,
    "COMMA": _ACTIONS.next_element,
}


def _parser() -> Driver:
    """The parser, built on first use (lark compiles the grammar to LALR tables)."""
    global _driver
    if _driver is None:
        lark = Lark(
            _GRAMMAR.read_text(),
            parser="lalr",
            lexer="contextual",
            start=["module", "expression"],
            transformer=_ACTIONS,
            keep_all_tokens=True,
            maybe_placeholders=False,
            propagate_positions=False,
            cache=True,
        )
        for terminal in lark.terminals:
            if isinstance(terminal.pattern, PatternStr):
                _spellings[terminal.name] = f"`{terminal.pattern.value}`"
        _driver = Driver(lark)
    return _driver


def parse(
    text: str,
    source_name: str = "<string>",
    prelude: bool = True,
    strict: bool = False,
    on_warning: Callable[[Diagnostic], None] | None = None,
) -> IRModule:
    """Parse a module: `def`, `type` and `extern type` items, then optional metadata.

    With `prelude` (the default), a name the module uses but does not declare that the
    prelude declares (`List`, `Cons`, `@map`, ...) means the prelude's definition, and the
    module gets the prelude definitions it needs (see `prelude.py`). With `prelude=False`
    such names are errors.

    A module must start with `#[version = "0.0.5"]` for TVM to read it. Without one, the
    module is still read, and a warning diagnostic goes to `on_warning` (by default it is
    raised as a Python `RelayWarning`); with `strict` it is a ParseError instead.
    """
    result, source = _parse(text, source_name, "module", prelude, strict)
    assert isinstance(result, IRModule)
    if source is not None:  # no version header
        warning = _missing_header(source, "warning")
        if on_warning is not None:
            on_warning(warning)
        else:
            warnings.warn(RelayWarning(warning), stacklevel=2)
    return result


# Runs on the text with comments blanked out; any other `#[...]` there is an error later.
_HEADER_FIRST = re.compile(r"[ \t\n]*#\[")


def _missing_header(source: SourceFile, level: str) -> Diagnostic:
    """The diagnostic for a module without a version header."""
    return Diagnostic(
        level,
        f"missing version header {VERSION_HEADER}: TVM's parser requires it",
        Span(source, 1, 1, 1, 1),
        (f"add the line {VERSION_HEADER} at the top of the file",),
    )


def parse_expr(text: str, source_name: str = "<string>") -> Expr:
    """Parse one expression (which may be a `;` sequence, `let` chain or graph bindings)."""
    result, _ = _parse(text, source_name, "expression")
    assert isinstance(result, Expr)
    return result


def parse_file(
    path: str | os.PathLike[str],
    prelude: bool = True,
    strict: bool = False,
    on_warning: Callable[[Diagnostic], None] | None = None,
) -> IRModule:
    """Parse the module in the file `path` (diagnostics name the path as given); the
    options are `parse`'s."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ParseError(f"cannot read {os.fspath(path)}: {exc}") from None
    if on_warning is None:
        on_warning = _warn_from_caller
    return parse(text, os.fspath(path), prelude, strict, on_warning)


def _warn_from_caller(diagnostic: Diagnostic) -> None:
    warnings.warn(RelayWarning(diagnostic), stacklevel=4)


def _parse(
    text: str, source_name: str, start: str, prelude: bool = False, strict: bool = False
) -> tuple[Any, SourceFile | None]:
    """The module or expression, and for a module without a version header its source
    (a missing header is an error with `strict`)."""
    source = SourceFile(source_name, text)
    prepared = prepare(source)
    headless = start == "module" and _HEADER_FIRST.match(prepared.text) is None
    if headless and strict:
        raise ParseError(_missing_header(source, "error"))
    metadata = None
    if prepared.metadata is not None:
        metadata = _read_metadata(source, prepared.metadata, prepared.metadata_offset)
    try:
        result = _run(source, prepared.text, start, metadata, prelude)
    except ParseError as first:
        if start != "module":
            raise
        error = _recover(first, source, prepared.text, metadata, prelude)
        if error is first:
            raise
        raise error from None
    return result, (source if headless else None)


def _run(
    source: SourceFile,
    text: str,
    start: str,
    metadata: dict[str, list[object]] | None,
    prelude: bool,
) -> Any:
    """Parse `text` (the pre-pass's output for `source`) from rule `start`."""
    link = None
    if prelude and start == "module":  # loaded outside the lock: loading parses the prelude
        declared = scan_declarations(text)
        link = PreludeLink(load_prelude().view(declared), declared)
    with _LOCK:
        driver = _parser()
        _ACTIONS.begin(source, start, metadata, link)
        collecting = gc.isenabled()
        gc.disable()  # the parse allocates many long-lived objects and no garbage cycles
        try:
            return driver.parse(text, start, _SCOPE_HOOKS)
        except SyntaxProblem as exc:
            raise convert(exc, source, _spellings) from None
        except ParseError:
            raise
        except Error as exc:
            raise ParseError(exc.diagnostics) from None
        except Exception as exc:  # a bug: still report it as a diagnostic
            raise ParseError.at(
                Span(source, 1, 1, 1, 2), f"internal parser error: {type(exc).__name__}: {exc}"
            ) from exc
        finally:
            if collecting:
                gc.enable()
            _ACTIONS.end()


MAX_ERRORS = 20  # a module with more broken definitions reports the first ones


def _recover(
    first: ParseError,
    source: SourceFile,
    text: str,
    metadata: dict[str, list[object]] | None,
    prelude: bool,
) -> ParseError:
    """`first` and the errors of the module's other top-level items (at most MAX_ERRORS).

    The item holding an error is replaced by a stub: `def @f() { () }` for a function (so
    uses of `@f` elsewhere still resolve), blank text for a type; the stub keeps every
    other character at its line and column. The module is then parsed again, until it
    parses, or an error lies outside every item or inside a stub. An error that names
    something a blanked item declared is a consequence of an earlier one: its item is
    stubbed without reporting it.
    """
    items = scan_items(text)
    if len(items) < 2:
        return first
    diagnostics: list[Diagnostic] = []
    stubbed: set[int] = set()
    lost: list[str] = []  # names declared by items that could not be stubbed
    error = first
    for _ in range(2 * MAX_ERRORS):  # reported errors, and consequences stubbed silently
        if len(diagnostics) >= MAX_ERRORS:
            break
        index = _item_at(items, source, error.span)
        if index is None or index in stubbed:
            break
        if not _mentions(error.message, lost):
            diagnostics.extend(error.diagnostics)
        stubbed.add(index)
        item = items[index]
        stub = _stub(text[item.start : item.end], item)
        if stub is None:
            stub = _NOT_NEWLINE.sub(" ", text[item.start : item.end])
            lost.extend(
                [f"@{item.name}"] if item.kind == "def" else [item.name, *item.constructors]
            )
        text = text[: item.start] + stub + text[item.end :]
        try:
            _run(source, text, "module", metadata, prelude)
        except ParseError as next_error:
            error = next_error
            continue
        break
    if len(diagnostics) <= 1:
        return first
    return ParseError(diagnostics)


_NOT_NEWLINE = re.compile(r"[^\n]")


def _item_at(items: list[Item], source: SourceFile, span: Span | None) -> int | None:
    """The index of the item holding the start of `span`."""
    if span is None or span.source is not source:
        return None
    starts = source.line_starts()
    if not 1 <= span.line <= len(starts):
        return None
    offset = starts[span.line - 1] + span.column - 1
    for index, item in enumerate(items):
        if item.start <= offset < item.end:
            return index
    return None


def _mentions(message: str, names: list[str]) -> bool:
    """Whether `message` names one of `names` (as a whole word)."""
    return any(re.search(rf"(?<![\w@]){re.escape(n)}(?![\w/.])", message) for n in names)


def _stub(region: str, item: Item) -> str | None:
    """`def @name() { () }` laid out over the lines of `region` (its newlines kept, the
    rest blank), or None for a type or when it does not fit."""
    if item.kind != "def":
        return None
    tokens = ["def", f"@{item.name}", "()", "{", "()", "}"]
    lines = []
    for line in region.split("\n"):
        placed: list[str] = []
        width = 0
        while tokens and width + len(tokens[0]) + bool(placed) <= len(line):
            width += len(tokens[0]) + bool(placed)
            placed.append(tokens.pop(0))
        lines.append(" ".join(placed).ljust(len(line)))
    return "\n".join(lines) if not tokens else None


def _read_metadata(source: SourceFile, text: str, offset: int) -> dict[str, list[object]]:
    line, column = source.position(offset)
    span = Span(source, line, column, line, column + len("#[metadata]"))
    try:
        return read_metadata(text)
    except Exception as exc:  # ValueError for malformed JSON; anything else is malformed too
        raise ParseError.at(span, f"malformed metadata section: {exc}") from None
