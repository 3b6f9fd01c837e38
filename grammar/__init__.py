"""The text format: `parse` (a module), `parse_expr` (one expression), `parse_file`.

The grammar is `relay.lark` (LALR(1), contextual lexer); the parser builds IR directly at
each reduction, so programs of any depth parse without recursion. Errors are
`relay.lang.diagnostics.ParseError`s pointing at the offending token.

`parse` makes the prelude (`stdlib/prelude.relay`) available to every module: names a
module uses but does not declare fall back to the prelude's (`prelude.py`).
"""

from .parser import parse, parse_expr, parse_file

__all__ = ["parse", "parse_expr", "parse_file"]
