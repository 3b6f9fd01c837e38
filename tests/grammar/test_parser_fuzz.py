"""Any input string gives a result or a ParseError at a real position, never another error."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from relay.grammar import parse, parse_expr
from relay.lang.diagnostics import ParseError
from relay.lang.expr import Expr
from relay.lang.module import IRModule

CORPUS = """\
#[version = "0.0.5"]
type List[A] { Cons(A, List[A]), Nil, }
def @map[A, B](%f: fn(A) -> B, %xs: List[A]) -> List[B] {
  match (%xs) { Cons(%x, %rest) => Cons(%f(%x), @map(%f, %rest)), Nil => Nil, }
}
def @main(%x: Tensor[(1, 3), float32], %t: (int32, bool)) -> Tensor[(1, 3), float32] {
  %0 = nn.softmax(%x, axis=1) /* ty=Tensor[(1, 3), float32] */;
  let %y: float32 = 2.5f; // comment
  let %r = ref(%t.0);
  %1 = if (%t.1) { ref_read(%r) } else { -1 };
  free_var %z: int64;
  fn (%a, Primitive=1) { %a * %y - 1 }(%0); (%1, %z, "s", meta[relay.Constant][0])
}
#[metadata]
{"root": 1}
"""

VOCABULARY = [
    "def", "@main", "@f", "type", "extern", "let", "fn", "if", "else", "match", "match?",
    "free_var", "ref", "ref_read", "ref_write", "Tensor", "float32", "int", "True", "None",
    "%x", "%y", "%0", "%1", "List", "Cons", "Nil", "add", "nn.conv2d", "_", "1", "-2",
    "2.5f", "3i64", "inff", "7i8", '"s"', "meta[relay.Constant][0]", "(", ")", "[", "]",
    "{", "}", ",", ";", ":", "=", "->", "=>", ".", "0", "+", "-", "*", "/", "==", "<=",
    "?", "/*", "*/", "//", "\n", "#[version = \"0.0.5\"]", "#[metadata]", "%", "@", "#",
    "\r", "\t", "axis=1", "Primitive=1",
]  # fmt: skip


def check_outcome(text: str, module: bool) -> None:
    try:
        result = (parse if module else parse_expr)(text)
    except ParseError as error:
        span = error.span
        assert span is not None
        lines = text.split("\n")
        assert 1 <= span.line <= len(lines)
        assert 1 <= span.column <= len(lines[span.line - 1]) + 2
        assert "internal parser error" not in error.message, str(error)
        assert str(error)  # renders
    else:
        assert isinstance(result, IRModule if module else Expr)


@settings(max_examples=150)
@given(
    st.text(alphabet=st.sampled_from('%@#()[]{},;:=<>+-*/.?!_"\\ \n\r\tabfinx019ĳ'), max_size=60)
)
def test_random_characters(text: str) -> None:
    check_outcome(text, module=False)
    check_outcome(text, module=True)


@settings(max_examples=150)
@given(st.lists(st.sampled_from(VOCABULARY), max_size=30), st.sampled_from([" ", ""]))
def test_token_soup(tokens: list[str], separator: str) -> None:
    text = separator.join(tokens)
    check_outcome(text, module=False)
    check_outcome(text, module=True)


@settings(max_examples=150)
@given(st.data())
def test_mutated_programs(data: st.DataObject) -> None:
    text = CORPUS
    for _ in range(data.draw(st.integers(1, 3))):
        start = data.draw(st.integers(0, len(text)))
        end = data.draw(st.integers(start, min(len(text), start + 12)))
        insert = data.draw(st.sampled_from(["", *VOCABULARY]))
        text = text[:start] + insert + text[end:]
    check_outcome(text, module=True)


def test_corpus_itself_is_valid_apart_from_metadata() -> None:
    check_outcome(CORPUS, module=True)


def test_long_whitespace_before_an_error_is_fast() -> None:
    # A starred group of whitespace runs would backtrack exponentially here.
    check_outcome("1" + " \n\t" * 3000 + "$", module=False)
    check_outcome("def @f() {" + " " * 5000, module=True)
