"""Pattern text: patterns written as the Python that builds them, read without running it.

It lives beside the command line rather than in `passes/pattern`, since reading the types
in `has_type("...")` takes the text-format parser, which `passes` does not import.

    parse_pattern('is_op("nn.conv2d")(wildcard().named("x"), is_constant()) | wildcard()')

The text is what `show.pattern_text` (a pattern's repr) prints: the functions `wildcard`,
`is_var`, `is_constant`, `is_op`, `is_tuple`, `is_tuple_get_item`, `dominates`,
`capture`; calling a pattern; `|`; the methods `named`, `has_attr`, `has_type` (a type
in the text format, as a string: `has_type("Tensor[(2, 3), float32]")`), `has_dtype`,
`has_shape`; and literal values. It is read with Python's `ast` module and only these
forms are accepted, so nothing is executed. Mistakes are diagnostics with a caret.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .grammar import parse_expr
from .lang.diagnostics import Error
from .lang.expr import Function
from .lang.span import SourceFile, Span
from .lang.types import Type
from .passes.pattern.patterns import (
    DFPattern,
    capture,
    dominates,
    is_constant,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    wildcard,
)

_FUNCTIONS: dict[str, Callable[..., DFPattern]] = {
    "wildcard": wildcard,
    "is_var": is_var,
    "is_constant": is_constant,
    "is_op": is_op,
    "is_tuple": is_tuple,
    "is_tuple_get_item": is_tuple_get_item,
    "dominates": dominates,
    "capture": capture,
}
_METHODS = ("named", "has_attr", "has_type", "has_dtype", "has_shape")


class PatternSyntaxError(Error):
    """Pattern text that is not a pattern."""


class _Reader:
    def __init__(self, text: str, source_name: str) -> None:
        self.source = SourceFile(source_name, text)
        self.body = text.strip()  # Python's parser refuses leading spaces
        lead = text[: len(text) - len(text.lstrip())]
        self._lines = lead.count("\n")
        self._columns = len(lead) - (lead.rfind("\n") + 1)

    def at(self, line: int, column: int) -> tuple[int, int]:
        """The 1-based position in the text of a position in the stripped text."""
        return line + self._lines, column + (self._columns if line == 1 else 0)

    def span(self, node: ast.AST) -> Span:
        line, column = self.at(getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1)
        end = getattr(node, "end_col_offset", None)
        end_line, end_column = self.at(
            getattr(node, "end_lineno", None) or 1, (end if end is not None else 0) + 1
        )
        return Span(self.source, line, column, end_line, max(end_column, column + 1))

    def error(self, node: ast.AST, message: str, *notes: str) -> PatternSyntaxError:
        return PatternSyntaxError.at(self.span(node), message, *notes)  # type: ignore[return-value]

    def pattern(self, node: ast.expr) -> DFPattern:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self.pattern(node.left) | self.pattern(node.right)
        if not isinstance(node, ast.Call):
            raise self.error(node, "expected a pattern", _HINT)
        if node.keywords:
            raise self.error(node.keywords[0], "keyword arguments are not supported here")
        func = node.func
        if isinstance(func, ast.Name):
            if func.id not in _FUNCTIONS:
                raise self.error(func, f"unknown pattern function {func.id!r}", _HINT)
            args = [self.argument(func.id, i, a) for i, a in enumerate(node.args)]
            try:
                return _FUNCTIONS[func.id](*args)
            except TypeError:
                raise self.error(node, f"wrong arguments for {func.id}()") from None
        if isinstance(func, ast.Attribute) and func.attr in _METHODS:
            receiver = self.pattern(func.value)
            if len(node.args) != 1:
                raise self.error(node, f".{func.attr}() takes one argument")
            arg = node.args[0]
            if func.attr == "has_type":
                return receiver.has_type(self.type(arg))
            value = self.literal(arg)
            if func.attr == "named" and isinstance(value, str):
                return receiver.named(value)
            if func.attr == "has_attr" and isinstance(value, dict):
                return receiver.has_attr(value)
            if func.attr == "has_dtype" and isinstance(value, str):
                return receiver.has_dtype(value)
            shape = isinstance(value, list | tuple) and all(isinstance(d, int) for d in value)
            if func.attr == "has_shape" and shape:
                assert isinstance(value, list | tuple)
                return receiver.has_shape(value)
            raise self.error(arg, f"wrong argument for .{func.attr}()")
        if isinstance(func, ast.Attribute):
            raise self.error(func, f"unknown pattern method .{func.attr}()", _HINT)
        callee = self.pattern(func)
        return callee(*(self.pattern(a) for a in node.args))

    def argument(self, function: str, index: int, node: ast.expr) -> object:
        """Argument `index` of `function`: a pattern, a list of patterns or a literal."""
        if function == "is_tuple" and isinstance(node, ast.List | ast.Tuple):
            return [self.pattern(e) for e in node.elts]
        takes_pattern = function in ("dominates", "is_tuple_get_item") and (
            function == "dominates" or index == 0
        )
        if function == "capture" and index == 1:
            takes_pattern = True
        return self.pattern(node) if takes_pattern else self.literal(node)

    def literal(self, node: ast.expr) -> object:
        try:
            value = ast.literal_eval(node)
        except ValueError:
            raise self.error(node, "expected a literal (a string, number, list, ...)") from None
        return value

    def type(self, node: ast.expr) -> Type:
        text = self.literal(node)
        if not isinstance(text, str):
            raise self.error(node, 'expected a type as a string: "Tensor[(2, 3), float32]"')
        try:
            fn = parse_expr(f"fn (%t: {text}) {{ %t }}")
        except Error as err:
            raise self.error(node, f"not a type: {text}", err.message) from None
        if not isinstance(fn, Function) or fn.params[0].type_annotation is None:
            raise self.error(node, f"not a type: {text}")
        return fn.params[0].type_annotation


_HINT = 'patterns are written as in Python: is_op("add")(wildcard(), is_constant())'


def parse_pattern(text: str, source_name: str = "<pattern>") -> DFPattern:
    """The pattern `text` describes (see the module docstring); `PatternSyntaxError`
    pointing into the text if it is not one."""
    reader = _Reader(text, source_name)
    try:
        tree = ast.parse(reader.body, mode="eval")
    except SyntaxError as err:
        line, column = reader.at(err.lineno or 1, err.offset or 1)
        span = Span(reader.source, line, column, line, column + 1)
        raise PatternSyntaxError.at(span, f"invalid pattern text: {err.msg}", _HINT) from None
    return reader.pattern(tree.body)
