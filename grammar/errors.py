"""Turn syntax errors of the driver into diagnostics that say what was found and expected.

The expected set of an LALR state is a set of terminal names; it is summarized in words
("an expression", "`;` after binding", "`)`") using the innermost construct still open on
the parser's value stack.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lark import Token

from ..lang.diagnostics import Diagnostic, ParseError
from ..lang.expr import Var
from ..lang.op import all_ops
from ..lang.span import SourceFile, Span
from .lalr import SyntaxProblem

if TYPE_CHECKING:
    from .state import ParseState

_WORDS = {
    "LOCAL": "a variable (`%x`)",
    "GRAPH": "a graph variable (`%0`)",
    "GLOBAL": "a global (`@f`)",
    "NAME": "a name",
    "NUMBER": "a number",
    "SPECIAL_FLOAT": "a number",
    "INDEX": "a tuple index",
    "STRING": "a string",
    "BINOP": "an infix operator",
    "META": "a meta reference",
    "HEADER": "a `#[...]` directive",
    "MATCH": "`match`",
    "$END": "end of input",
}
_EXPRESSION_STARTS = {
    "GRAPH", "GLOBAL", "NUMBER", "LOCAL", "NAME", "SPECIAL_FLOAT", "META", "MATCH", "LPAR",
    "LBRACE", "FN", "IF", "REF", "REF_READ", "REF_WRITE", "TRUE", "FALSE", "LET", "FREE_VAR",
}  # fmt: skip
_TYPE_STARTS = {"NAME", "FN", "REF", "TENSOR", "UNDERSCORE", "LPAR"}
# word: (terminals whose presence means that word, terminals the word covers)
_GROUPS = {
    "an expression": ({"GRAPH", "GLOBAL", "NUMBER"}, _EXPRESSION_STARTS),
    "a type": ({"TENSOR", "UNDERSCORE"}, _TYPE_STARTS),
}
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {"(": "RPAR", "[": "RSQB", "{": "RBRACE"}
_NOISE = {"BINOP", "LPAR", "DOT"}  # continuations of an expression, rarely what is missing
_STRAY = {
    "%": "stray `%`: expected a variable name or number right after it (`%x`, `%0`)",
    "@": "stray `@`: expected a global function name right after it (`@main`)",
    "#": 'stray `#`: the only directives are `#[version = "0.0.5"]` and `#[metadata]`',
}


def convert(problem: SyntaxProblem, source: SourceFile, spellings: dict[str, str]) -> ParseError:
    """A ParseError for a syntax error (`spellings` maps string terminals to their text)."""
    token = problem.token
    if token is None:
        line, column = source.position(problem.offset)
        char = source.text[problem.offset] if problem.offset < len(source.text) else ""
        span = Span(source, line, column, line, column + 1)
        if char in _STRAY:
            return _error(span, _STRAY[char])
        return _error(span, f"unexpected character {char!r}")
    expected = problem.expected
    if token.type == "$END":
        line, column = token.end_line or 1, token.end_column or 1
        span = Span(source, line, column, line, column + 1)
        found = "unexpected end of input"
    else:
        line, column = source.position(problem.offset)
        span = Span(source, line, column, line, column + len(token.value))
        found = ""
    if token.type == "HEADER":
        message = (
            "a `#[...]` directive can only appear first (`#[version = ...]`) "
            "or at the start of a line (`#[metadata]`)"
        )
        return _error(span, message)
    stack = problem.stack
    if (
        token.type == "EQUAL"
        and stack
        and isinstance(stack[-1], Token)
        and stack[-1].type == "LOCAL"
    ):
        name = stack[-1]
        return _error(span, f"unexpected `=` after {name}: bind it with `let {name} = ...;`")
    wanted = _describe(expected, _innermost_open(stack), spellings)
    if found:
        message = f"{found}, expected {wanted}" if wanted else found
    else:
        shown = _show(token)
        message = f"expected {wanted}, found {shown}" if wanted else f"unexpected {shown}"
    return _error(span, message)


def _error(span: Span, message: str) -> ParseError:
    return ParseError(Diagnostic("error", message, span))


def _show(token: Token) -> str:
    text = str(token.value)
    if len(text) > 30:
        text = text[:27] + "..."
    return f"`{text}`"


def _innermost_open(stack: list[Any]) -> str | None:
    """`"binding"`, or the opening bracket of the innermost unfinished construct.

    The value stack holds tokens of constructs that are complete but not yet reduced
    (LALR reduces on the next token), so brackets are matched on the way down.
    """
    depth = 0
    finished = False  # a `;` ends the binding below it
    for i in range(len(stack) - 1, -1, -1):
        item = stack[i]
        if isinstance(item, Token):
            if item in _OPENERS:
                if depth:
                    depth -= 1
                    continue
                return str(item)
            if item in _OPENERS.values():
                depth += 1
            elif depth:
                continue
            elif item == ";":
                finished = True
            elif item == "=" and not finished and i > 0 and _is_binder(stack[i - 1]):
                return "binding"
        elif depth or finished:
            continue
        elif type(item) is tuple and len(item) == 2 and type(item[0]) is Var and item[1] == "let":
            return "binding"
    return None


def _is_binder(item: Any) -> bool:
    return isinstance(item, Token) and item.type in ("GRAPH", "LOCAL")


def _describe(expected: set[str], opener: str | None, spellings: dict[str, str]) -> str:
    """What was expected, in words."""
    expected = expected - {"HEADER"}
    if opener == "binding" and "SEMICOLON" in expected:
        return "`;` after binding"
    words: list[str] = []
    closer = _CLOSERS.get(opener or "")
    if closer in expected:
        words.append(spellings[closer])
        if "COMMA" in expected:
            words.append(spellings["COMMA"])
        expected = expected - _NOISE - {closer, "COMMA", "SEMICOLON"}
    for word, (starts, covered) in _GROUPS.items():
        if starts <= expected:
            words.insert(0, word)
            expected = expected - covered
    if words or expected - _NOISE:
        expected = expected - _NOISE
    for name in sorted(expected, key=_order):
        word = _WORDS.get(name) or spellings.get(name) or name
        if word not in words:
            words.append(word)
    if not words:
        return ""
    if len(words) > 6:
        words = [*words[:5], "..."]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _order(name: str) -> tuple[int, str]:
    return (0 if name in _WORDS else 1, name)


# ---------------------------------------------------------------------- did you mean
COMMON_DTYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "bfloat16",
)  # fmt: skip


def did_you_mean(name: str, candidates: Iterable[str], sigil: str = "") -> tuple[str, ...]:
    """A note naming the candidate closest to the misspelled `name`, if one is close."""
    choices = {c for c in candidates if c != name}
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return (f"did you mean `{sigil}{close[0]}`?",) if close else ()


def constructor_names(state: ParseState) -> list[str]:
    """The constructors a program can name: its own and the prelude's."""
    names = list(state.constructors)
    if state.prelude is not None:
        names.extend(state.prelude.declared.constructors)
        names.extend(state.prelude.view.constructors)
    return names


def operator_or_constructor_note(state: ParseState, name: str) -> tuple[str, ...]:
    """`did you mean ...?` for an unknown operator or constructor name."""
    return did_you_mean(name, [op.name for op in all_ops()] + constructor_names(state))


def global_note(state: ParseState, name: str) -> tuple[str, ...]:
    """`did you mean @...?` for an undefined global: the module's and the prelude's."""
    names = list(state.defined)
    if state.prelude is not None:
        names.extend(state.prelude.view.functions)
    return did_you_mean(name, names, "@")


def type_note(state: ParseState, name: str) -> tuple[str, ...]:
    """`did you mean ...?` for an unknown type name: dtypes, the module's and the
    prelude's ADTs."""
    names = [*COMMON_DTYPES, *state.type_defs]
    if state.prelude is not None:
        names.extend(state.prelude.view.types)
    return did_you_mean(name, names)
