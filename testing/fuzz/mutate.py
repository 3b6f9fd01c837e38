"""Mutators over Relay source text.

`mutate(text, chooser)` applies 1 to 4 random edits; each edit is one of: delete,
duplicate or swap tokens, replace or insert a token from a vocabulary of Relay's
keywords, names and oddities, rename a variable to another of the program, splice a
token range or a line from another seed program, flip a number, a dtype or a shape, cut
the text short, or edit one character. `perturb(text, chooser)` only makes edits that
keep the syntax (numbers, dtypes, shapes, attribute values, variable references,
dropped arguments): from a well-typed program it makes a (usually) ill-typed one.

`mutants(seeds)` and `perturbed(programs)` are the same as hypothesis strategies.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Sequence

from hypothesis import strategies as st

from .choice import Chooser, DrawChooser, chance, pick
from .corpus import seed_programs
from .tokens import Token, join, tokenize

VOCABULARY = (
    "(", ")", "{", "}", "[", "]", ",", ";", ":", "=", "=>", "->", ".", "%", "@", "#", '"',
    "/*", "*/", "//", "+", "-", "*", "/", "==", "<=", "?", "let", "fn", "def", "if", "else",
    "match", "match?", "type", "extern", "free_var", "ref", "ref_read", "ref_write", "meta",
    "meta[relay.Constant][0]", "meta[relay.Constant][99]", "meta[tir.SizeVar][0]",
    "#[metadata]", '#[version = "0.0.5"]', "%0", "%1", "%99", "%x", "%y", "@main", "@f",
    "@nowhere", "Tensor", "_", "0", "1", "-1", "-2", "1.5f", "2.5f", "3i64", "1e400f",
    "nanf", "inff", "2147483648i32", "5i8", "7u8", "True", "False", "None", "nullptr",
    "Cons", "Nil", "List", "Some", "add", "nn.conv2d", "nn.dense", "concatenate", "split",
    "axis=1", "axis=-7", "Primitive=1", "float32", "int32", "bool", '"s"', '"NCHW"',
    "\r", "\n", "\t", "\x00", "λ", "\\", "'", " ", "0.0.1", "%a.0.1", "fn [U](U) -> U",
    "Tensor[(?, 3), float16]", "(%x, %x)", "%x.0", "{ %x }", "[1, 2]",
)  # fmt: skip

DTYPES = (
    "float32", "float16", "float64", "int8", "int16", "int32", "int64", "uint8", "uint1",
    "bool", "bfloat16", "float8", "int3", "handle", "void",
)  # fmt: skip
NUMBERS = (
    "0", "1", "-1", "2", "3", "7", "16", "255", "65536", "2147483647", "2147483648",
    "-2147483649", "9999999999999999999999", "0.5f", "-0.0f", "1e-05f", "1e40f", "3.4e38f",
    "1.5f16", "2f64", "3i8", "300i8", "5u8", "-5u8", "1i64", "7i16", "1b", "1.", "01",
    "1e", "0x10",
)  # fmt: skip
DIMS = ("0", "1", "2", "3", "4", "7", "64", "?", "-1", "2147483648", "meta[tir.SizeVar][0]")
CHARS = string.printable + "λ\x00\u2028é"

_SYNTAX_KINDS = ("space", "comment")
_NUMBER_VALUE = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def _significant(tokens: list[Token]) -> list[int]:
    return [i for i, t in enumerate(tokens) if t.kind not in _SYNTAX_KINDS]


def _position(chooser: Chooser, tokens: list[Token]) -> int | None:
    places = _significant(tokens)
    return pick(chooser, places) if places else None


def _at(tokens: list[Token], i: int, text: str) -> list[Token]:
    return [*tokens[:i], Token("punct", text), *tokens[i + 1 :]]


def _delete(tokens: list[Token], chooser: Chooser, seeds: Sequence[str]) -> list[Token]:
    i = _position(chooser, tokens)
    if i is None:
        return tokens
    end = min(len(tokens), i + 1 + chooser.below(3))  # a token or a few
    return tokens[:i] + tokens[end:]


def _duplicate(tokens: list[Token], chooser: Chooser, seeds: Sequence[str]) -> list[Token]:
    i = _position(chooser, tokens)
    if i is None:
        return tokens
    end = min(len(tokens), i + 1 + chooser.below(4))
    return tokens[:end] + tokens[i:end] + tokens[end:]


def _swap(tokens: list[Token], chooser: Chooser, seeds: Sequence[str]) -> list[Token]:
    places = _significant(tokens)
    if len(places) < 2:
        return tokens
    i, j = pick(chooser, places), pick(chooser, places)
    out = list(tokens)
    out[i], out[j] = out[j], out[i]
    return out


def _replace(tokens: list[Token], chooser: Chooser, seeds: Sequence[str]) -> list[Token]:
    i = _position(chooser, tokens)
    return tokens if i is None else _at(tokens, i, pick(chooser, VOCABULARY))


def _insert(tokens: list[Token], chooser: Chooser, seeds: Sequence[str]) -> list[Token]:
    i = chooser.below(len(tokens) + 1)
    word = pick(chooser, VOCABULARY)
    return [*tokens[:i], Token("punct", f" {word} " if chance(chooser, 50) else word), *tokens[i:]]


def _rename(tokens: list[Token], chooser: Chooser, seeds: Sequence[str]) -> list[Token]:
    i = _position(chooser, tokens)
    if i is None:
        return tokens
    kind = tokens[i].kind
    same = sorted({t.text for t in tokens if t.kind == kind})
    return _at(tokens, i, pick(chooser, same))


def _splice(tokens: list[Token], chooser: Chooser, seeds: Sequence[str]) -> list[Token]:
    other = tokenize(pick(chooser, seeds))
    if not other:
        return tokens
    a = chooser.below(len(other))
    piece = other[a : a + 1 + chooser.below(40)]
    i = chooser.below(len(tokens) + 1)
    cut = chooser.below(20) if chance(chooser, 50) else 0  # replace a range, or insert
    return tokens[:i] + piece + tokens[i + cut :]


def _splice_line(tokens: list[Token], chooser: Chooser, seeds: Sequence[str]) -> list[Token]:
    lines = join(tokens).split("\n")
    donor = pick(chooser, seeds).split("\n")
    i = chooser.below(len(lines) + 1)
    lines[i:i] = [pick(chooser, donor)]
    return tokenize("\n".join(lines))


def _edit_line(tokens: list[Token], chooser: Chooser, seeds: Sequence[str]) -> list[Token]:
    lines = join(tokens).split("\n")
    i, j = chooser.below(len(lines)), chooser.below(len(lines))
    how = chooser.below(3)
    if how == 0:
        del lines[i]
    elif how == 1:
        lines.insert(i, lines[j])
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return tokenize("\n".join(lines))


def _flip_number(tokens: list[Token], chooser: Chooser, seeds: Sequence[str]) -> list[Token]:
    places = [i for i, t in enumerate(tokens) if t.kind == "number"]
    if not places:
        return _replace(tokens, chooser, seeds)
    i = pick(chooser, places)
    text = tokens[i].text
    value = _NUMBER_VALUE.match(text)
    if value and chance(chooser, 30):  # keep the value, change its suffix (dtype)
        suffix = pick(chooser, ("", "f", "f16", "f64", "i8", "i64", "u8", "u1", "i32"))
        return _at(tokens, i, value.group() + suffix)
    return _at(tokens, i, pick(chooser, NUMBERS))


def _flip_dtype(tokens: list[Token], chooser: Chooser, seeds: Sequence[str]) -> list[Token]:
    places = [i for i, t in enumerate(tokens) if t.kind == "name" and t.text in DTYPES]
    if not places:
        return _flip_number(tokens, chooser, seeds)
    return _at(tokens, pick(chooser, places), pick(chooser, DTYPES[:10]))


def _shape_spans(tokens: list[Token]) -> list[tuple[int, int]]:
    """Token ranges `(`..`)` of the shapes in `Tensor[(...), dtype]`."""
    spans = []
    for i, t in enumerate(tokens):
        if t.text != "Tensor":
            continue
        rest = [k for k in range(i + 1, min(len(tokens), i + 6)) if tokens[k].kind != "space"]
        if len(rest) >= 2 and tokens[rest[0]].text == "[" and tokens[rest[1]].text == "(":
            start = rest[1]
            end = next((k for k in range(start, len(tokens)) if tokens[k].text == ")"), None)
            if end is not None:
                spans.append((start, end))
    return spans


def _flip_shape(tokens: list[Token], chooser: Chooser, seeds: Sequence[str]) -> list[Token]:
    spans = _shape_spans(tokens)
    if not spans:
        return _flip_number(tokens, chooser, seeds)
    start, end = pick(chooser, spans)
    dims = [d.strip() for d in join(tokens[start + 1 : end]).split(",") if d.strip()]
    how = chooser.below(4)
    if how == 0 and dims:
        dims[chooser.below(len(dims))] = pick(chooser, DIMS)
    elif how == 1 and dims:
        del dims[chooser.below(len(dims))]
    elif how == 2:
        dims.insert(chooser.below(len(dims) + 1), pick(chooser, DIMS))
    else:
        dims.reverse()
    shape = Token("punct", "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")")
    return [*tokens[:start], shape, *tokens[end + 1 :]]


def _flip_attribute(tokens: list[Token], chooser: Chooser, seeds: Sequence[str]) -> list[Token]:
    """Change the value after `name=` (a number, a list, a string) or drop an argument."""
    places = [
        i
        for i, t in enumerate(tokens[:-2])
        if t.kind == "name" and tokens[i + 1].text == "=" and tokens[i + 2].kind != "space"
    ]
    if not places:
        return _drop_argument(tokens, chooser, seeds)
    i = pick(chooser, places) + 2
    values = (*NUMBERS[:10], "[]", "[1]", "[0, 0]", "[1, 1, 1, 1]", "[-1, 3]", '"NHWC"', '""',
              '"OIHW"', "True", "None", '"float16"', "[2, -1]", "[0, 1, 2, 3, 4, 5]")  # fmt: skip
    if tokens[i].text == "[":  # a list: replace it whole
        end = next((k for k in range(i, len(tokens)) if tokens[k].text == "]"), i)
        return [*tokens[:i], Token("punct", pick(chooser, values)), *tokens[end + 1 :]]
    return _at(tokens, i, pick(chooser, values))


def _drop_argument(tokens: list[Token], chooser: Chooser, seeds: Sequence[str]) -> list[Token]:
    places = [
        i
        for i, t in enumerate(tokens[:-2])
        if t.text == "," and tokens[i + 2].kind in ("local", "graph", "meta", "number")
    ]
    if not places:
        return _flip_number(tokens, chooser, seeds)
    i = pick(chooser, places)
    return tokens[:i] + tokens[i + 3 :]


def _rename_reference(tokens: list[Token], chooser: Chooser, seeds: Sequence[str]) -> list[Token]:
    places = [i for i, t in enumerate(tokens) if t.kind in ("local", "graph")]
    if not places:
        return _flip_number(tokens, chooser, seeds)
    i = pick(chooser, places)
    same = sorted({t.text for t in tokens if t.kind == tokens[i].kind})
    return _at(tokens, i, pick(chooser, same))


def _truncate(tokens: list[Token], chooser: Chooser, seeds: Sequence[str]) -> list[Token]:
    text = join(tokens)
    return tokenize(text[: chooser.below(len(text) + 1)])


def _edit_character(tokens: list[Token], chooser: Chooser, seeds: Sequence[str]) -> list[Token]:
    text = join(tokens)
    p = chooser.below(len(text) + 1)
    if chance(chooser, 50):
        return tokenize(text[:p] + text[p + 1 :])
    return tokenize(text[:p] + pick(chooser, CHARS) + text[p:])


Mutation = Callable[[list[Token], Chooser, Sequence[str]], list[Token]]

MUTATIONS: tuple[Mutation, ...] = (
    _delete, _duplicate, _swap, _replace, _insert, _rename, _splice, _splice_line,
    _edit_line, _flip_number, _flip_dtype, _flip_shape, _flip_attribute, _truncate,
    _edit_character,
)  # fmt: skip
TYPE_PERTURBATIONS: tuple[Mutation, ...] = (
    _flip_number, _flip_dtype, _flip_shape, _flip_attribute, _drop_argument, _rename_reference,
)  # fmt: skip


def _apply(
    text: str, chooser: Chooser, mutations: Sequence[Mutation], seeds: Sequence[str], edits: int
) -> str:
    tokens = tokenize(text)
    for _ in range(edits):  # inserted tokens keep a rough kind until the end
        tokens = pick(chooser, mutations)(tokens, chooser, seeds)
    return join(tokens)


def mutate(text: str, chooser: Chooser, seeds: Sequence[str] | None = None) -> str:
    """`text` after 1 to 4 random edits (any of `MUTATIONS`); splices take pieces of
    `seeds` (default: the seed corpus)."""
    donors = seeds if seeds else seed_programs()
    return _apply(text, chooser, MUTATIONS, donors, 1 + chooser.below(4))


def perturb(text: str, chooser: Chooser) -> str:
    """`text` after 1 to 3 edits that keep its syntax but usually break its typing:
    numbers, dtypes, shapes, attribute values, variable references, dropped arguments."""
    return _apply(text, chooser, TYPE_PERTURBATIONS, (), 1 + chooser.below(3))


def mutants(seeds: Sequence[str] | None = None) -> st.SearchStrategy[str]:
    """Hypothesis strategy: a seed program (default: the seed corpus) after `mutate`."""
    pool = tuple(seeds) if seeds else seed_programs()

    @st.composite
    def build(draw: st.DrawFn) -> str:
        chooser = DrawChooser(draw)
        return mutate(pick(chooser, pool), chooser, pool)

    return build()


def perturbed(programs: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Hypothesis strategy: a program of `programs` after `perturb`."""

    @st.composite
    def build(draw: st.DrawFn) -> str:
        return perturb(draw(programs), DrawChooser(draw))

    return build()
