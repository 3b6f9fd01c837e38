"""A generator of Relay text from the parser's own grammar (`grammar/relay.lark`).

`generate(chooser)` expands the start rule with random productions, iteratively (no
recursion), until a size budget is reached; from then on it takes the productions that
finish soonest (least derivation height), so every derivation ends. Terminals are
sampled from pools that fit their context: a NAME is a dtype inside `Tensor[...]`, an
ADT or constructor name in a `type` or a pattern, an operator where an expression is
expected, an attribute key before `=`. The texts are syntactically valid by
construction (scoping and types are mostly not), so they reach the parser's actions,
name resolution and the type checker rather than stopping at the first token.
"""

from __future__ import annotations

import functools
from pathlib import Path

from attrs import frozen
from hypothesis import strategies as st

from .choice import Chooser, DrawChooser, chance, pick

_DTYPES = ("float32", "int32", "int64", "bool", "float16", "int8", "uint8", "float64")
_TYPE_NAMES = ("List", "Option", "Tree", "A", "B", "T", "Data", "float32", "int32")
_ADT_NAMES = ("List", "Data", "Box", "Option", "Pair")
_CTORS = ("Cons", "Nil", "Some", "None", "Leaf", "Node", "Rose", "MkBox")
_OPS = (
    "add", "multiply", "subtract", "nn.relu", "nn.conv2d", "nn.dense", "nn.softmax",
    "concatenate", "split", "reshape", "sum", "transpose", "take", "zeros", "cast", "less",
    "expand_dims", "nn.max_pool2d", "nn.batch_norm", "where", "strided_slice", "tile",
)  # fmt: skip
_ATTR_KEYS = (
    "axis", "units", "channels", "kernel_size", "padding", "strides", "newshape", "dtype",
    "keepdims", "Primitive", "indices_or_sections", "axes", "shape", "layout", "exclude",
)  # fmt: skip
_SAMPLES = {
    "HEADER": ('#[version = "0.0.5"]', '#[version = "0.0.4"]', "#[]"),
    "META": ("meta[relay.Constant][0]", "meta[relay.Constant][3]", "meta[tir.SizeVar][0]"),
    "MATCH": ("match", "match?"),
    "SPECIAL_FLOAT": ("inff", "-inff", "nanf", "nanf16", "-inff64"),
    "LOCAL": ("%x", "%y", "%z", "%a", "%p0", "%f", "%xs", "%x/y"),
    "GRAPH": ("%0", "%1", "%2", "%3", "%99"),
    "GLOBAL": ("@main", "@f", "@g", "@map", "@foldl", "@nowhere"),
    "INDEX": ("0", "1", "2", "7"),
    "STRING": ('"NCHW"', '""', '"float32"', '"a\\"b"', '"OIHW"', '"λ"'),
    "BINOP": ("+", "-", "*", "/", "==", "!=", "<", ">", "<=", ">="),
}
_NUMBERS = ("0", "1", "2", "-1", "3", "1.5f", "2f", "-0.5f", "3i64", "1e-05f", "7i8", "2u8")
_DIMS = ("1", "2", "3", "4", "0", "16")
_NAMES_BY_CONTEXT = {
    "tensor_type": _DTYPES,
    "named_type": _TYPE_NAMES,
    "applied_type": _TYPE_NAMES,
    "names": ("A", "B", "T", "U", "n"),
    "type_head": _ADT_NAMES,
    "extern_type": _ADT_NAMES,
    "ctor": _CTORS,
    "pattern_ctor": _CTORS,
    "name_ref": _OPS + _CTORS,
    "attr": _ATTR_KEYS,
}
_SEPARATORS = (" ",) * 12 + ("\n", "  ", "\n  ", " /* c */ ", " // c\n", "\t")


@frozen
class _Grammar:
    """Productions by nonterminal (each with the context name it gives its terminals),
    the literal text of the string terminals, and each nonterminal's least height."""

    productions: dict[str, tuple[tuple[tuple[str, ...], str], ...]]
    literals: dict[str, str]
    height: dict[str, int]


def _grammar_text() -> str:
    from ... import grammar

    return Path(grammar.__file__).with_name("relay.lark").read_text(encoding="utf-8")


@functools.cache
def _grammar() -> _Grammar:
    from lark import Lark
    from lark.lexer import PatternStr

    lark = Lark(
        _grammar_text(),
        parser="lalr",
        lexer="contextual",
        start=["module", "expression"],
        keep_all_tokens=True,
        maybe_placeholders=False,
        cache=True,
    )
    productions: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    for rule in lark.rules:
        origin = rule.origin.name
        context = rule.alias or origin
        names = tuple(symbol.name for symbol in rule.expansion)
        productions.setdefault(origin, []).append((names, context))
    literals = {
        t.name: t.pattern.value for t in lark.terminals if isinstance(t.pattern, PatternStr)
    }
    height = {name: 10**9 for name in productions}
    changed = True
    while changed:  # least derivation heights, to a fixpoint
        changed = False
        for name, options in productions.items():
            for symbols, _ in options:
                h = 1 + max((height.get(s, 0) for s in symbols), default=0)
                if h < height[name]:
                    height[name], changed = h, True
    frozen_productions = {k: tuple(v) for k, v in productions.items()}
    return _Grammar(frozen_productions, literals, height)


def _terminal(name: str, context: str, chooser: Chooser, literals: dict[str, str]) -> str:
    if name in literals:
        return literals[name]
    if name == "NAME":
        return pick(chooser, _NAMES_BY_CONTEXT.get(context, _OPS + _DTYPES + _CTORS))
    if name == "NUMBER":
        return pick(chooser, _DIMS if context in ("dims", "shape") else _NUMBERS)
    return pick(chooser, _SAMPLES.get(name, ("x",)))


def generate(chooser: Chooser, start: str = "module", budget: int = 80) -> str:
    """A random text derived from the grammar's `start` rule (`module` or `expression`)
    with about `budget` tokens (more when closing what is open needs more)."""
    grammar = _grammar()
    words: list[str] = []
    stack: list[tuple[str, str]] = [(start, start)]
    while stack:
        symbol, context = stack.pop()
        options = grammar.productions.get(symbol)
        if options is None:
            words.append(_terminal(symbol, context, chooser, grammar.literals))
            continue
        if len(words) + len(stack) >= budget:  # finish: the shortest ways out
            least = min(_height(grammar, s) for s, _ in options)
            options = tuple(o for o in options if _height(grammar, o[0]) == least)
        symbols, inner = pick(chooser, options)
        stack.extend((s, inner) for s in reversed(symbols))
    out = []
    for word in words:
        out.append(word)
        out.append(pick(chooser, _SEPARATORS) if chance(chooser, 30) else " ")
    return "".join(out)


def _height(grammar: _Grammar, symbols: tuple[str, ...]) -> int:
    return 1 + max((grammar.height.get(s, 0) for s in symbols), default=0)


def grammar_texts(start: str = "module", budget: int = 80) -> st.SearchStrategy[str]:
    """Hypothesis strategy: `generate` with hypothesis's choices (shrinks to short texts)."""

    @st.composite
    def build(draw: st.DrawFn) -> str:
        return generate(DrawChooser(draw), start, budget)

    return build()
