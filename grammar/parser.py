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
import threading
from pathlib import Path
from typing import Any

from lark import Lark
from lark.lexer import PatternStr

from ..lang.diagnostics import Error, ParseError
from ..lang.expr import Expr
from ..lang.metadata import read_metadata
from ..lang.module import IRModule
from ..lang.span import SourceFile, Span
from .actions import Actions
from .declscan import scan_declarations
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


def parse(text: str, source_name: str = "<string>", prelude: bool = True) -> IRModule:
    """Parse a module: `def`, `type` and `extern type` items, then optional metadata.

    With `prelude` (the default), a name the module uses but does not declare that the
    prelude declares (`List`, `Cons`, `@map`, ...) means the prelude's definition, and the
    module gets the prelude definitions it needs (see `prelude.py`). With `prelude=False`
    such names are errors.
    """
    result = _parse(text, source_name, "module", prelude)
    assert isinstance(result, IRModule)
    return result


def parse_expr(text: str, source_name: str = "<string>") -> Expr:
    """Parse one expression (which may be a `;` sequence, `let` chain or graph bindings)."""
    result = _parse(text, source_name, "expression")
    assert isinstance(result, Expr)
    return result


def parse_file(path: str | os.PathLike[str], prelude: bool = True) -> IRModule:
    """Parse the module in the file `path` (diagnostics name the path as given)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ParseError(f"cannot read {os.fspath(path)}: {exc}") from None
    return parse(text, os.fspath(path), prelude)


def _parse(text: str, source_name: str, start: str, prelude: bool = False) -> Any:
    source = SourceFile(source_name, text)
    prepared = prepare(source)
    metadata = None
    if prepared.metadata is not None:
        metadata = _read_metadata(source, prepared.metadata, prepared.metadata_offset)
    link = None
    if prelude and start == "module":  # loaded outside the lock: loading parses the prelude
        declared = scan_declarations(prepared.text)
        link = PreludeLink(load_prelude().view(declared), declared)
    with _LOCK:
        driver = _parser()
        _ACTIONS.begin(source, start, metadata, link)
        collecting = gc.isenabled()
        gc.disable()  # the parse allocates many long-lived objects and no garbage cycles
        try:
            return driver.parse(prepared.text, start, _SCOPE_HOOKS)
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


def _read_metadata(source: SourceFile, text: str, offset: int) -> dict[str, list[object]]:
    line, column = source.position(offset)
    span = Span(source, line, column, line, column + len("#[metadata]"))
    try:
        return read_metadata(text)
    except Exception as exc:  # ValueError for malformed JSON; anything else is malformed too
        raise ParseError.at(span, f"malformed metadata section: {exc}") from None
