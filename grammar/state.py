"""Per-parse state shared by the reduction callbacks: scopes, tables, spans, errors.

The callbacks run inside lark's LALR loop, one per reduction, in text order. Names are
resolved when a reference is reduced, so a scope is a dictionary from name to binder with
an undo log: opening a scope remembers the log length, closing it undoes the bindings made
since. Graph numbers (`%0`) live in one table for the whole parse, as in TVM.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn

from lark import Token

from ..lang.adt import Constructor, TypeData
from ..lang.diagnostics import ParseError
from ..lang.expr import Expr, Function, GlobalVar
from ..lang.metadata import MetaObject
from ..lang.span import SourceFile, Span
from ..lang.types import GlobalTypeVar
from .errors import global_note, type_note
from .prelude import PreludeLink

_META = re.compile(r"meta\[([^\]]*)\]\[([0-9]+)\]")


class Scope:
    """Names in scope, with nested scopes implemented by an undo log."""

    __slots__ = ("marks", "names", "undo")

    def __init__(self) -> None:
        self.names: dict[str, Any] = {}
        self.undo: list[tuple[str, Any]] = []
        self.marks: list[int] = [0]

    def push(self) -> None:
        """Open a nested scope."""
        self.marks.append(len(self.undo))

    def pop(self) -> None:
        """Close the innermost scope, forgetting what was bound in it."""
        marks = self.marks
        mark = marks.pop() if len(marks) > 1 else 0
        if len(self.undo) > mark:
            self._restore(mark)

    def reset(self) -> None:
        """Forget what was bound in the innermost scope, but keep it open."""
        if len(self.undo) > self.marks[-1]:
            self._restore(self.marks[-1])

    def bind(self, name: str, value: Any) -> None:
        """Bind `name` in the innermost scope (shadowing any outer binding)."""
        self.undo.append((name, self.names.get(name)))
        self.names[name] = value

    def _restore(self, mark: int) -> None:
        undo, names = self.undo, self.names
        while len(undo) > mark:
            name, old = undo.pop()
            if old is None:
                del names[name]
            else:
                names[name] = old


class Ref:
    """A reference (`%x`, `%0`, `@f`, `nn.conv2d`, `(e)`) with the tokens it spans.

    Shared nodes cannot carry the span of each use, so references keep their tokens until
    a consumer (call, projection, operator) has used them to compute its own span.
    """

    __slots__ = ("first", "last", "node")

    def __init__(self, node: Expr, first: Token, last: Token) -> None:
        self.node = node
        self.first = first
        self.last = last


class MetaAttr:
    """A `meta[...]` attribute value, resolved only if it is used."""

    __slots__ = ("token",)

    def __init__(self, token: Token) -> None:
        self.token = token


class ParseState:
    """Everything one parse accumulates; the callbacks in `actions.py` extend it."""

    source: SourceFile
    mode: str
    metadata: dict[str, list[object]] | None

    def begin(
        self,
        source: SourceFile,
        mode: str,
        metadata: dict[str, list[object]] | None,
        prelude: PreludeLink | None = None,
    ) -> None:
        """Reset for a new parse of `source` (`mode` is "module" or "expression").

        With `prelude`, names the program does not declare fall back to the prelude's.
        """
        self.source = source
        self.mode = mode
        self.metadata = metadata
        self.prelude = prelude
        self.vars = Scope()
        self.type_vars = Scope()
        self.graph: dict[str, tuple[Expr, Token]] = {}
        self.globals: dict[str, GlobalVar] = {}
        self.global_uses: dict[str, Span] = {}
        self.defined: dict[str, Span] = {}
        self.functions: dict[GlobalVar, Function] = {}
        self.adts: dict[str, GlobalTypeVar] = {}
        self.adt_uses: dict[str, Span] = {}
        self.type_defs: dict[str, tuple[TypeData, Span]] = {}
        self.constructors: dict[str, Constructor] = {}
        self.default_attrs: dict[object, object] = {}
        # The last reference used as a value and its last token: a `let` or `e1; e2` whose
        # body is a bare reference ends where that use ends, not where the node was bound.
        self.last_use: tuple[Expr, Token] | None = None

    def end(self) -> None:
        """Drop references to the finished parse."""
        self.begin(self.source, self.mode, None)

    # ------------------------------------------------------------------ spans, errors
    def span(self, first: Any, last: Any) -> Span:
        """The span from the start of `first` to the end of `last` (tokens, nodes, refs)."""
        if type(first) is Token and type(last) is Token:
            return Span(self.source, first.line, first.column, last.end_line, last.end_column)  # type: ignore[arg-type]
        start = _start(first) or _start(last)
        end = _end(last) or _end(first)
        if start is None or end is None:
            return Span(self.source, 1, 1, 1, 1)
        return Span(self.source, start[0], start[1], end[0], end[1])

    def token_span(self, token: Token) -> Span:
        """The span of one token."""
        return Span(self.source, token.line, token.column, token.end_line, token.end_column)  # type: ignore[arg-type]

    def error(self, where: Any, message: str, *notes: str) -> NoReturn:
        """Raise a ParseError at a token, node, ref or span."""
        span = where if isinstance(where, Span) else self.span(where, where)
        raise ParseError.at(span, message, *notes)

    # ------------------------------------------------------------------ globals and ADTs
    def global_var(self, token: Token, use: bool) -> GlobalVar:
        """The GlobalVar called `@name` (one object per name); uses are recorded."""
        name = token[1:]
        gv = self.globals.get(name)
        if gv is None:
            if self.prelude is not None:
                fallback = self.prelude.global_var(name)
                if fallback is not None:
                    if not use:
                        self._missed_declaration(token, f"@{name}")
                    self.globals[name] = fallback
                    return fallback
            gv = self.globals[name] = GlobalVar(name, span=self.token_span(token))
        if use and name not in self.global_uses:
            self.global_uses[name] = self.token_span(token)
        return gv

    def adt(self, token: Token, use: bool) -> GlobalTypeVar:
        """The GlobalTypeVar of the ADT called `token` (one object per name)."""
        name = str(token)
        gtv = self.adts.get(name)
        if gtv is None:
            if self.prelude is not None:
                fallback = self.prelude.adt(name)
                if fallback is not None:
                    if not use:
                        self._missed_declaration(token, f"type `{name}`")
                    self.adts[name] = fallback
                    return fallback
            gtv = self.adts[name] = GlobalTypeVar(name)
        if use and name not in self.adt_uses:
            self.adt_uses[name] = self.token_span(token)
        return gtv

    def constructor(self, token: Token) -> Constructor | None:
        """The constructor `token` names: the program's (declared earlier), else the prelude's.

        A use of a prelude constructor's name before the program's own declaration of that
        name is an error: the program's name wins everywhere, but TVM's text format (and
        this parser) need a constructor declared before it is used.
        """
        name = str(token)
        ctor = self.constructors.get(name)
        if ctor is None and self.prelude is not None:
            ctor = self.prelude.constructor(name)
            if ctor is None:
                offset = self.prelude.hidden_constructor(name)
                if offset is not None:
                    line, column = self.source.position(offset)
                    self.error(
                        token,
                        f"unknown operator or constructor `{name}`: it is used before its "
                        f"declaration at {line}:{column} and also names a prelude constructor",
                        "declare the type before its constructors are used",
                    )
        return ctor

    def _missed_declaration(self, token: Token, what: str) -> NoReturn:
        self.error(
            token,
            f"internal parser error: the declaration of {what} was missed by the scan for "
            "declarations, so earlier uses may mean the prelude's",
        )

    def check_definitions(self) -> None:
        """Every used global and ADT of a module must be defined in it (or in the prelude)."""
        used = self.prelude.used if self.prelude is not None else set()
        for name, span in self.global_uses.items():
            if name not in self.defined and ("def", name) not in used:
                self.error(span, f"undefined global function @{name}", *global_note(self, name))
        for name, span in self.adt_uses.items():
            if name not in self.type_defs and ("type", name) not in used:
                message = f"unknown type `{name}` (not a dtype, type variable or ADT)"
                self.error(span, message, *type_note(self, name))

    # ------------------------------------------------------------------ metadata
    def meta_object(self, token: Token) -> object:
        """The object `meta[key][i]` refers to."""
        match = _META.fullmatch(token)
        if match is None:  # the lexer only produces well-formed references
            self.error(token, f"malformed meta reference `{token}`")
        key, digits = match.group(1).strip(), match.group(2)
        index = int(digits) if len(digits) <= 18 else 2**63
        if key.startswith("relay.attrs."):
            self.error(
                token,
                f"attribute objects from the metadata (`{token}`) are not supported",
                "write the attributes as keyword arguments instead",
            )
        if self.metadata is None:
            self.error(token, f"`{token}` refers to metadata, but there is no #[metadata] section")
        entries = self.metadata.get(key)
        if entries is None:
            self.error(token, f"the metadata section has no `{key}` entries")
        if index >= len(entries):
            self.error(
                token,
                f"`{token}` is out of range: the metadata has {len(entries)} `{key}` entries",
            )
        return entries[index]

    def meta_attr_value(self, value: object) -> object:
        """An attribute value with its `meta[...]` references resolved: opaque objects
        (`meta[VirtualDevice][0]`) are values; constants and shape variables are not."""
        if isinstance(value, MetaAttr):
            obj = self.meta_object(value.token)
            if not isinstance(obj, MetaObject):
                self.error(
                    value.token,
                    f"`{value.token}` cannot be an attribute value: only objects such as "
                    "meta[VirtualDevice][i] can",
                )
            return obj
        if isinstance(value, list) and any(isinstance(v, MetaAttr | list) for v in value):
            return [self.meta_attr_value(v) for v in value]  # lists nest at most 32 deep
        return value


def _start(x: Any) -> tuple[int, int] | None:
    if isinstance(x, Token):
        return x.line, x.column  # type: ignore[return-value]
    if type(x) is Ref:
        return x.first.line, x.first.column  # type: ignore[return-value]
    span = getattr(x, "span", None)
    return (span.line, span.column) if span is not None else None


def _end(x: Any) -> tuple[int, int] | None:
    if isinstance(x, Token):
        return x.end_line, x.end_column  # type: ignore[return-value]
    if type(x) is Ref:
        return x.last.end_line, x.last.end_column  # type: ignore[return-value]
    span = getattr(x, "span", None)
    return (span.end_line, span.end_column) if span is not None else None
