"""Where a type error about a *use* of a value is shown.

A variable is one node shared by all its uses, and so is a value bound in graph form
(`%0 = add(%x, %x); ... if (%0) ...`): the node's span is where it is bound, not where it
is used. A `Use` names a child in its role inside a parent node ("the condition of this
`if`", "argument 2 of this call"); `Use.place()` finds the text of that child inside the
parent's source span with a small scanner (brackets, commas, semicolons; comments and
strings skipped). The error is shown there, with a note saying where the value is bound.
When the child is written in place (its own span lies inside the text found), its own
span is used. When the text cannot be found (no source, a node built in Python, an infix
call), the parent's span is used.

Only errors pay for this: a `Use` is a tuple of references until `place()` is called.
"""

from __future__ import annotations

import itertools
import re

from attrs import frozen

from ..lang.adt import Constructor
from ..lang.expr import Expr, GlobalVar, Let, Var
from ..lang.op import Op
from ..lang.span import SourceFile, Span

_TOKEN = re.compile(
    r"""
      (?P<space>\s+)
    | (?P<line_comment>//[^\n]*)
    | (?P<block_comment>/\*)
    | (?P<string>"(?:[^"\\]|\\.)*")
    | (?P<punct>=>|==|!=|<=|>=|[(){}\[\],;=+\-*/<>])
    | (?P<word>[%@][\w.]+(?:/[\w.]+)*|[^\s(){}\[\],;=+\-*/<>"]+)
    """,
    re.VERBOSE,
)
_INFIX = frozenset("+-*/<>") | {"==", "!=", "<=", ">="}
_OPEN = {"(": ")", "{": "}", "[": "]"}


@frozen
class _Token:
    text: str
    begin: int
    end: int


def _tokens(text: str, begin: int, end: int, to_semicolon: bool = False) -> list[_Token]:
    """The tokens of `text[begin:end]` (offsets into `text`); comments and spaces dropped.

    `to_semicolon`: stop after the first `;` outside brackets.
    """
    out: list[_Token] = []
    pos = begin
    depth = 0
    while pos < end:
        m = _TOKEN.match(text, pos, end)
        if m is None:  # an unmatched quote: a single character token
            out.append(_Token(text[pos], pos, pos + 1))
            pos += 1
            continue
        kind = m.lastgroup
        if kind == "block_comment":
            pos = _skip_block_comment(text, m.end(), end)
            continue
        pos = m.end()
        if kind in ("space", "line_comment"):
            continue
        token = m.group()
        out.append(_Token(token, m.start(), pos))
        if to_semicolon:
            if token in _OPEN:
                depth += 1
            elif token in (")", "}", "]"):
                depth -= 1
            elif token == ";" and depth <= 0:
                break
    return out


def _skip_block_comment(text: str, pos: int, end: int) -> int:
    depth = 1
    while pos < end and depth:
        if text.startswith("/*", pos):
            depth += 1
            pos += 2
        elif text.startswith("*/", pos):
            depth -= 1
            pos += 2
        else:
            pos += 1
    return pos


def _matches(tokens: list[_Token], open_ended: bool) -> dict[int, int] | None:
    """Index of the closing bracket of each opening one (and back); None if unbalanced.

    `open_ended`: the tokens run on past the node; they are cut at the first closing
    bracket that closes something outside it (and brackets left open are fine).
    """
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for i, tok in enumerate(tokens):
        if tok.text in _OPEN:
            stack.append(i)
        elif tok.text in (")", "}", "]"):
            if not stack and open_ended:
                del tokens[i:]
                break
            if not stack or _OPEN[tokens[stack[-1]].text] != tok.text:
                return None
            j = stack.pop()
            pairs[i] = j
            pairs[j] = i
    if stack and not open_ended:
        return None
    for i in stack:
        pairs[i] = len(tokens)  # never reached: the scan stops at the first `;`
    return pairs


class _Text:
    """The tokens of one node's source text, with bracket matching."""

    def __init__(self, tokens: list[_Token], pairs: dict[int, int]) -> None:
        self.tokens = tokens
        self.pairs = pairs

    def top_level(self, lo: int, hi: int, texts: set[str] | frozenset[str]) -> list[int]:
        """Indices in `[lo, hi)` of tokens in `texts` that are outside any bracket."""
        found: list[int] = []
        i = lo
        while i < hi:
            tok = self.tokens[i].text
            if tok in _OPEN:
                i = self.pairs[i] + 1
                continue
            if tok in texts:
                found.append(i)
            i += 1
        return found

    def next_open(self, lo: int, bracket: str) -> int | None:
        """The first top-level `bracket` at or after `lo`."""
        i = lo
        while i < len(self.tokens):
            tok = self.tokens[i].text
            if tok == bracket:
                return i
            i = self.pairs[i] + 1 if tok in _OPEN else i + 1
        return None

    def inside(self, open_index: int) -> tuple[int, int]:
        """The token range between a bracket and its match."""
        return open_index + 1, self.pairs[open_index]

    def tail(self, lo: int, hi: int) -> tuple[int, int]:
        """The result expression of a block: what follows its last top-level `;`."""
        semis = self.top_level(lo, hi, {";"})
        return (semis[-1] + 1 if semis else lo), hi

    def items(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The comma-separated items of `[lo, hi)` (a trailing comma makes no item)."""
        bounds = [lo - 1, *self.top_level(lo, hi, {","}), hi]
        out = [(a + 1, b) for a, b in itertools.pairwise(bounds)]
        if out and out[-1][0] >= out[-1][1]:
            out.pop()
        return out


def _source_range(span: Span) -> tuple[SourceFile, int, int] | None:
    source = span.source
    if source is None:
        return None
    starts = source.line_starts()
    if not (1 <= span.line <= len(starts) and 1 <= span.end_line <= len(starts)):
        return None
    begin = starts[span.line - 1] + span.column - 1
    end = starts[span.end_line - 1] + span.end_column - 1
    if not 0 <= begin < end <= len(source.text):
        return None
    return source, begin, end


def _within(inner: Span | None, outer: Span) -> bool:
    if inner is None or inner.source is not outer.source:
        return False
    return (outer.line, outer.column) <= (inner.line, inner.column) and (
        inner.end_line,
        inner.end_column,
    ) <= (outer.end_line, outer.end_column)


def result_of(e: Expr) -> Expr:
    """The expression whose value `e` is: the body at the end of a chain of `let`s."""
    while isinstance(e, Let):
        e = e.body
    return e


@frozen
class Use:
    """`child` in the role `role` of `parent`; `index` numbers arguments and arms.

    Roles: "cond", "then", "else" (of an `if`), "arg" (of a call), "value" (of a `let`),
    "body" (of a function), "scrutinee" and "arm" (of a `match`), "ref" (of `ref_read`).
    """

    child: Expr
    parent: Expr
    role: str
    index: int = 0

    def place(self) -> tuple[Span | None, tuple[str, ...]]:
        """The span to show the error at, and notes saying where the value is bound."""
        child = result_of(self.child) if self.role in _BLOCKS else self.child
        parent_span = self.parent.span
        shared = isinstance(child, Var | GlobalVar | Constructor | Op)
        if parent_span is None:
            return (None if shared else child.span), ()
        found = self._find(parent_span)
        if found is None:
            if not shared and _within(child.span, parent_span):
                return child.span, ()
            return parent_span, binding_notes(child, None)
        if not shared and _within(child.span, found):
            return child.span, ()
        return found, binding_notes(child, found)

    def _find(self, span: Span) -> Span | None:
        where = _source_range(span)
        if where is None:
            return None
        source, begin, end = where
        # A `let`'s span may end early (at its body's binding when the body is a variable),
        # and its value is followed by `;`: read on to the end of the text.
        open_ended = self.role == "value"
        if open_ended:
            end = len(source.text)
        tokens = _tokens(source.text, begin, end, open_ended)
        pairs = _matches(tokens, open_ended)
        if not tokens or pairs is None:
            return None
        text = _Text(tokens, pairs)
        finder = _FINDERS.get(self.role)
        try:
            found = finder(self, text) if finder is not None else None
        except (IndexError, KeyError):  # text not shaped as expected: use the parent's span
            return None
        if found is None or found[0] >= found[1]:
            return None
        first, last = tokens[found[0]], tokens[found[1] - 1]
        line, column = source.position(first.begin)
        end_line, end_column = source.position(last.end)
        return Span(source, line, column, end_line, end_column)

    def _if_part(self, text: _Text) -> tuple[int, int] | None:
        if text.tokens[0].text != "if":
            return None
        cond = text.next_open(1, "(")
        if cond is None:
            return None
        if self.role == "cond":
            return text.inside(cond)
        then = text.next_open(text.pairs[cond] + 1, "{")
        if then is None:
            return None
        if self.role == "else":
            then = text.next_open(text.pairs[then] + 1, "{")
            if then is None:
                return None
        return text.tail(*text.inside(then))

    def _call_arg(self, text: _Text) -> tuple[int, int] | None:
        last = len(text.tokens) - 1
        if text.tokens[last].text != ")":
            return None
        opening = text.pairs[last]
        if opening == 0 or text.top_level(0, opening, _INFIX):
            return None  # not a call written `f(...)`, e.g. an infix operator
        items = text.items(*text.inside(opening))
        if self.index >= len(items):
            return None
        lo, hi = items[self.index]
        if text.top_level(lo, hi, {"="}):
            return None  # a keyword attribute, not an argument
        return lo, hi

    def _let_value(self, text: _Text) -> tuple[int, int] | None:
        if text.tokens[0].text != "let":
            return None
        equals = text.top_level(1, len(text.tokens), {"="})
        if not equals:
            return None
        semis = text.top_level(equals[0] + 1, len(text.tokens), {";"})
        if not semis:
            return None
        return equals[0] + 1, semis[0]

    def _function_body(self, text: _Text) -> tuple[int, int] | None:
        last = len(text.tokens) - 1
        if text.tokens[last].text != "}":
            return None
        return text.tail(*text.inside(text.pairs[last]))

    def _match_part(self, text: _Text) -> tuple[int, int] | None:
        if text.tokens[0].text not in ("match", "match?"):
            return None
        data = text.next_open(1, "(")
        if data is None:
            return None
        if self.role == "scrutinee":
            return text.inside(data)
        last = len(text.tokens) - 1
        if text.tokens[last].text != "}":
            return None
        clauses = text.items(*text.inside(text.pairs[last]))
        if self.index >= len(clauses):
            return None
        lo, hi = clauses[self.index]
        arrows = text.top_level(lo, hi, {"=>"})
        if not arrows or arrows[0] + 1 >= hi:
            return None
        lo = arrows[0] + 1
        if text.tokens[lo].text == "{" and text.pairs[lo] == hi - 1:
            return text.tail(*text.inside(lo))
        return lo, hi

    def _ref_arg(self, text: _Text) -> tuple[int, int] | None:
        if len(text.tokens) < 3 or text.tokens[1].text != "(":
            return None
        return text.inside(1)


_BLOCKS = frozenset({"then", "else", "body", "arm"})
_FINDERS = {
    "cond": Use._if_part,
    "then": Use._if_part,
    "else": Use._if_part,
    "arg": Use._call_arg,
    "value": Use._let_value,
    "body": Use._function_body,
    "scrutinee": Use._match_part,
    "arm": Use._match_part,
    "ref": Use._ref_arg,
}

_BOUND_AT = re.compile(r"(%[\w.]+(?:/[\w.]+)*)\s*=\s*$")


def binding_notes(child: Expr, use: Span | None = None) -> tuple[str, ...]:
    """ "`%c` is bound at f.relay:3:7" for a variable or a value bound in graph form.

    `use` is where the value is used (its text may name a graph binding).
    """
    if isinstance(child, GlobalVar | Constructor | Op) or child.span is None:
        return ()
    if isinstance(child, Var):
        if not child.name_hint:
            return ()
        return (f"`%{child.name_hint}` is bound at {child.span}",)
    graph = _graph_binding(child.span)
    if graph is not None:
        return (f"`{graph[0]}` is bound at {graph[1]}",)
    name = None
    if use is not None:
        used = _source_range(use)
        if used is not None:
            source, begin, end = used
            written = source.text[begin:end]
            if re.fullmatch(r"%[\w.]+", written):
                name = written
    if name is None:
        return (f"this value is computed at {child.span}",)
    return (f"`{name}` is bound at {child.span}",)


def _graph_binding(span: Span) -> tuple[str, Span] | None:
    """The `%N` of a graph binding `%N = value;` and its span, read before `value`."""
    if span.source is None:
        return None
    before = span.source.line_text(span.line)[: span.column - 1]
    m = _BOUND_AT.search(before)
    if m is None:
        return None
    start, end = m.span(1)
    return m.group(1), Span(span.source, span.line, start + 1, span.line, end + 1)
