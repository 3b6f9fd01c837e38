"""A lean LALR(1) driver over the tables lark computes for `relay.lark`.

lark compiles the grammar: LALR tables, terminal definitions and the reduction callbacks
(our `Actions` methods wrapped as lark wraps inline transformer callbacks). This module
runs them with a tighter loop than lark's generic one (about twice the throughput on long
programs) and a contextual lexer with the same rules as lark's:

* in each parser state only the terminals that state accepts are tried, ordered like
  lark orders them (priority, then longest possible match, then name), so `%a -1` is a
  subtraction (no literal may follow an operand) while `(-1)` is a negative literal;
* keywords are names that the state accepts as keywords (`None` is `null` only where an
  attribute value may stand, and a constructor name elsewhere);
* a keyword is a whole word: a state that accepts a keyword but no name still scans a
  name, so `typeOption` is one (unexpected) name, never `type` then `Option`.

Both stacks are Python lists: nesting depth never touches the recursion limit.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from lark import Lark, Token
from lark.lexer import PatternStr, TerminalDef
from lark.parse_tree_builder import ExpandSingleChild
from lark.parsers.lalr_analysis import Shift

_END = "$END"
_WHITESPACE = "[ \t\n]"
_new_token = Token._future_new  # Token() without its keyword-deprecation layer


class SyntaxProblem(Exception):
    """Raised by the driver; `errors.py` turns it into a diagnostic."""

    def __init__(self, token: Token | None, offset: int, expected: set[str], stack: list[Any]):
        super().__init__("syntax error")
        self.token = token  # None: no terminal matches at `offset`
        self.offset = offset
        self.expected = expected
        self.stack = stack


class _Lexer:
    """The scanner of one set of acceptable terminals."""

    __slots__ = ("keywords", "regex")

    def __init__(self, regex: re.Pattern[str], keywords: dict[str, str]) -> None:
        self.regex = regex
        self.keywords = keywords


class Driver:
    """Parse text with the tables and callbacks of a Lark object (parser="lalr")."""

    def __init__(self, lark: Lark) -> None:
        inner = lark.parser.parser.parser  # ParsingFrontend -> LALR_Parser -> _Parser
        table = inner.parse_table
        callbacks: dict[Any, Callable[[list[Any]], Any]] = inner.callbacks
        self.start_states: dict[str, int] = dict(table.start_states)
        self.end_states: dict[str, int] = dict(table.end_states)
        terminals = {t.name: t for t in lark.terminals}
        ignore = [terminals[name] for name in lark.lexer_conf.ignore]
        if [t.pattern.to_regexp() for t in ignore] != [_WHITESPACE + "+"]:
            raise ValueError("relay.lark must %ignore exactly /[ \\t\\n]+/")
        self.skip = re.compile(_WHITESPACE + "*")
        self.rules: list[tuple[int, Callable[[list[Any]], Any] | None, str]] = []
        rule_index: dict[Any, int] = {}
        self.actions: dict[int, dict[str, int]] = {}
        self.gotos: dict[int, dict[str, int]] = {}
        lexers: dict[frozenset[str], _Lexer] = {}
        self.matchers: dict[int, Callable[[str, int], re.Match[str] | None]] = {}
        self.keywords: dict[int, dict[str, str]] = {}
        for state, entries in table.states.items():
            actions: dict[str, int] = {}
            gotos: dict[str, int] = {}
            for name, (action, arg) in entries.items():
                symbol = str(name)  # lark's names are Tokens: slow to hash and compare
                if action is Shift:
                    (actions if symbol.isupper() else gotos)[symbol] = arg
                    continue
                index = rule_index.get(arg)
                if index is None:
                    index = rule_index[arg] = len(self.rules)
                    length, callback = len(arg.expansion), callbacks[arg]
                    if length == 1 and isinstance(callback, ExpandSingleChild):
                        # `?rule: child`: the value is the child's; skip the call
                        self.rules.append((length, None, str(arg.origin.name)))
                    else:
                        self.rules.append((length, callback, str(arg.origin.name)))
                actions[symbol] = -1 - index
            self.actions[state] = actions
            self.gotos[state] = gotos
            accepted = frozenset(name for name in actions if name != _END)
            lexer = lexers.get(accepted)
            if lexer is None:
                lexer = lexers[accepted] = _scanner(
                    [terminals[n] for n in accepted], ignore, terminals.get("NAME")
                )
            self.matchers[state] = lexer.regex.match
            self.keywords[state] = lexer.keywords
        self.root = _scanner(list(terminals.values()), ignore, None, skip_ignored=False)

    def parse(self, text: str, start: str, on_shift: dict[str, Callable[[], None]]) -> Any:
        """Run the parser over `text`; returns the value of the start rule.

        `on_shift[kind]()` is called when a token of that kind is shifted.
        """
        actions, gotos, rules = self.actions, self.gotos, self.rules
        matchers, keywords = self.matchers, self.keywords
        states = [self.start_states[start]]
        values: list[Any] = []
        end_state = self.end_states[start]
        pos, line, line_start, size = 0, 1, 0, len(text)
        last: Token | None = None
        while True:
            state = states[-1]
            match = matchers[state](text, pos)
            if match is None:
                token = self._special(text, pos, last, states, values, end_state)
                kind = token.type
                pos = size
            else:
                kind = match.lastgroup or ""
                begin, finish = match.span(kind)
                if begin != pos:
                    newlines = text.count("\n", pos, begin)
                    if newlines:
                        line += newlines
                        line_start = text.rfind("\n", pos, begin) + 1
                pos = finish
                value = text[begin:pos]
                if kind == "NAME":
                    kind = keywords[state].get(value, kind)
                column = begin - line_start + 1
                if kind == "STRING" and "\n" in value:
                    token = _new_token(kind, value, begin, line, column)
                    line += value.count("\n")
                    line_start = begin + value.rfind("\n") + 1
                    token.end_line, token.end_column = line, pos - line_start + 1
                    token.end_pos = pos
                else:
                    end = column + pos - begin
                    token = _new_token(kind, value, begin, line, column, line, end, pos)
                last = token
            while True:
                code = actions[state].get(kind)
                if code is None:
                    expected = self._acceptable(states, end_state)
                    raise SyntaxProblem(token, token.start_pos or 0, expected, values)
                if code >= 0:
                    states.append(code)
                    values.append(token)
                    hook = on_shift.get(kind)
                    if hook is not None:
                        hook()
                    break
                length, callback, origin = rules[-1 - code]
                if callback is None:
                    del states[-1]
                    result = values.pop()
                elif length:
                    children = values[-length:]
                    del states[-length:]
                    del values[-length:]
                    result = callback(children)
                else:
                    result = callback([])
                state = gotos[states[-1]][origin]
                states.append(state)
                values.append(result)
                if state == end_state and kind == _END:
                    return result

    def _acceptable(self, states: list[int], end_state: int) -> set[str]:
        """The terminals that can really come next (LALR tables list a few more)."""
        found = set()
        for kind in self.actions[states[-1]]:
            stack = states[-64:]  # reductions here never reach deeper than a rule's length
            while True:
                code = self.actions[stack[-1]].get(kind) if stack else None
                if code is None:
                    break
                if code >= 0 or (kind == _END and stack[-1] == end_state):
                    found.add(kind)
                    break
                length, _, origin = self.rules[-1 - code]
                if length:
                    del stack[-length:]
                if not stack:  # the reductions went past the window: assume it fits
                    found.add(kind)
                    break
                stack.append(self.gotos[stack[-1]][origin])
                if kind == _END and stack[-1] == end_state:
                    found.add(kind)
                    break
        return found

    def _special(
        self,
        text: str,
        pos: int,
        last: Token | None,
        states: list[int],
        values: list[Any],
        end_state: int,
    ) -> Token:
        """End of input, or a syntax error at `pos` (after optional whitespace)."""
        skipped = self.skip.match(text, pos)
        pos = skipped.end() if skipped else pos
        if pos >= len(text):
            if last is None:
                return Token(_END, "", 0, 1, 1, 1, 1, 0)
            return Token.new_borrow_pos(_END, "", last)
        expected = self._acceptable(states, end_state)
        found = self.root.regex.match(text, pos)
        if found is None:
            raise SyntaxProblem(None, pos, expected, values)
        kind = found.lastgroup or ""
        value = found.group(kind)
        if kind == "NAME":
            kind = self.root.keywords.get(value, kind)
        token = Token(kind, value, pos)
        raise SyntaxProblem(token, pos, expected, values)


def _scanner(
    terminals: list[TerminalDef],
    ignore: list[TerminalDef],
    name: TerminalDef | None,
    skip_ignored: bool = True,
) -> _Lexer:
    """One regular expression trying `terminals` in lark's order; keywords folded into NAME.

    `name` is the NAME terminal: keywords are scanned as names even where `terminals` has
    no NAME (a name there is then a syntax error, as it should be).
    """
    keywords: dict[str, str] = {}
    name_terminal = next((t for t in terminals if t.name == "NAME"), name)
    chosen = []
    for terminal in terminals:
        if terminal in ignore:
            continue
        if (
            name_terminal is not None
            and isinstance(terminal.pattern, PatternStr)
            and terminal.priority == name_terminal.priority
            and re.fullmatch(name_terminal.pattern.to_regexp(), terminal.pattern.value)
        ):
            keywords[terminal.pattern.value] = terminal.name
            continue
        chosen.append(terminal)
    if keywords and name_terminal is not None and name_terminal not in chosen:
        chosen.append(name_terminal)
    chosen.sort(key=lambda t: (-t.priority, -t.pattern.max_width, -len(t.pattern.value), t.name))
    alternatives = "|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in chosen) or "(?!)"
    prefix = ""
    if skip_ignored:
        # One starred character class: `(?:[ \t\n]+)*` would backtrack exponentially.
        prefix = _WHITESPACE + "*"
    return _Lexer(re.compile(f"{prefix}(?:{alternatives})"), keywords)
