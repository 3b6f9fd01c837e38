"""The parser never crashes: mutated programs, truncated programs and random text either
parse to an `IRModule` or raise a `relay.lang.diagnostics.Error` whose span lies inside
the text. Never another exception type."""

from __future__ import annotations

import re
import string
import time

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from relay.grammar import parse
from relay.lang import IRModule
from relay.lang.diagnostics import Error
from relay.lang.metadata import write_metadata
from relay.lang.printer import print_module
from relay.testing import modules

PRELUDE = """#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}

type Option[A] {
  Some(A),
  None,
}

def @map[A, B](%f: fn (A) -> B, %xs: List[A]) -> List[B] {
  match (%xs) {
    Cons(%x, %rest) => Cons(%f(%x), @map(%f, %rest)),
    Nil => Nil,
  }
}

def @foldl[A, B](%f: fn (A, B) -> A, %acc: A, %xs: List[B]) -> A {
  match? (%xs) {
    Cons(%x, %rest) => @foldl(%f, %f(%acc, %x), %rest),
    Nil => %acc,
  }
}

def @main(%x: Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32] {
  let %f = fn (%a: Tensor[(2, 2), float32], %b: Tensor[(2, 2), float32]) { %a + %b * 2f };
  let %xs = Cons(%x, Cons(%x, Nil));
  @foldl(%f, %x, %xs)
}
"""

CONV_BLOCK = """#[version = "0.0.5"]
def @main(%data: Tensor[(1, 3, 8, 8), float32] /* ty=Tensor[(1, 3, 8, 8), float32] */) \
-> Tensor[(1, 4, 8, 8), float32] {
  %0 = nn.conv2d(%data, meta[relay.Constant][0] /* ty=Tensor[(4, 3, 3, 3), float32] */, \
padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]) /* ty=Tensor[(1, 4, 8, 8), float32] */;
  %1 = nn.batch_norm(%0, meta[relay.Constant][1], meta[relay.Constant][1], \
meta[relay.Constant][1], meta[relay.Constant][1], epsilon=1e-05f) \
/* ty=(Tensor[(1, 4, 8, 8), float32], Tensor[(4), float32], Tensor[(4), float32]) */;
  %2 = %1.0 /* ty=Tensor[(1, 4, 8, 8), float32] */;
  %3 = fn (%p0: Tensor[(1, 4, 8, 8), float32], Primitive=1) { nn.relu(%p0) };
  %3(%2) /* ty=Tensor[(1, 4, 8, 8), float32] */
}
#[metadata]
""" + write_metadata(
    {"relay.Constant": [np.ones((4, 3, 3, 3), "float32"), np.arange(4, dtype="float32")]}
)

MISC = """#[version = "0.0.5"]
def @f(%x: int32, %s: Tensor[(?, 3), float16]) -> (int32, bool) {
  /* a /* nested */ comment */
  %0 = add(%x, 1);  // a line comment
  let %r: ref(int32) = ref(%0);
  let %_ = ref_write(%r, -2i64);
  %1 = if (less(%0, 5)) { ref_read(%r) } else { %0 * 2 };
  (%1, True)
}

def @h[T](%p: (T, T), %q: fn [U](U) -> U, %u: ()) -> T {
  free_var %z: Tensor[(1), int16];
  %q(%p.0);
  %q(%p.1)
}
"""

REALISTIC = [PRELUDE, CONV_BLOCK, MISC]

VOCAB = [
    "(", ")", "{", "}", "[", "]", ",", ";", ":", "=", "=>", "->", ".", "%", "@", "#", '"',
    "/*", "*/", "//", "let", "fn", "def", "if", "else", "match", "match?", "type", "extern",
    "free_var", "ref", "ref_read", "ref_write", "meta", "meta[relay.Constant][0]",
    "meta[relay.Constant][99]", "meta[tir.SizeVar][0]", "#[metadata]", '#[version = "0.0.5"]',
    "%0", "%99", "%x", "@main", "@nowhere", "Tensor", "_", "?", "0", "-1", "1.5f", "1e400f",
    "nanf", "inff", "2147483648i32", "5i8", "True", "None", "Cons", "Nil", "add",
    "nn.conv2d", "\r", "\n", "\t", "\x00", "λ", "\\", "'", " ", "0.0.1", "%a.0.1",
]  # fmt: skip

_TOKEN = re.compile(r"\s+|[%@#]?\w+|.", re.S)


def check_parse(text: str) -> None:
    """`parse(text)` returns a module or raises a diagnosed Error located inside `text`."""
    start = time.monotonic()
    try:
        result = parse(text)
    except Error as err:
        span = err.span
        assert span is not None, f"error without a location: {err.message}"
        lines = text.split("\n")
        assert 1 <= span.line <= len(lines) + 1, (span, len(lines))
        width = len(lines[span.line - 1]) if span.line <= len(lines) else 0
        assert 1 <= span.column <= width + 1, (span, width)
        assert err.render()
    else:
        assert isinstance(result, IRModule)
    assert time.monotonic() - start < 10, "parsing took too long"


@st.composite
def mutated(draw: st.DrawFn, text: str) -> str:
    """`text` after 1 to 4 random edits of its tokens or characters."""
    tokens = _TOKEN.findall(text)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 7))
        n = len(tokens)
        i = draw(st.integers(0, max(n - 1, 0)))
        if kind == 0 and n:
            del tokens[i]
        elif kind == 1:
            tokens.insert(i, draw(st.sampled_from(VOCAB)))
        elif kind == 2 and n:
            j = draw(st.integers(0, n - 1))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif kind == 3 and n:
            tokens.insert(i, tokens[i])
        elif kind == 4 and n:
            tokens[i] = draw(st.sampled_from(VOCAB))
        else:
            flat = "".join(tokens)
            p = draw(st.integers(0, len(flat)))
            if kind == 5:
                flat = flat[:p]
            elif kind == 6:
                flat = flat[:p] + flat[p + 1 :]
            else:
                flat = flat[:p] + draw(st.sampled_from(string.printable + "λ\x00")) + flat[p:]
            tokens = _TOKEN.findall(flat)
    return "".join(tokens)


def test_hand_written_programs_parse() -> None:
    for text in REALISTIC:
        assert isinstance(parse(text), IRModule)


@given(st.sampled_from(REALISTIC).flatmap(mutated))
def test_mutated_hand_written_programs(text: str) -> None:
    check_parse(text)


@given(modules(max_depth=3).map(print_module).flatmap(mutated))
def test_mutated_printed_modules(text: str) -> None:
    check_parse(text)


def test_every_truncation_of_hand_written_programs() -> None:
    for text in (PRELUDE, MISC, CONV_BLOCK[: CONV_BLOCK.index("#[metadata]") + 40]):
        for end in range(len(text)):
            check_parse(text[:end])


@given(st.lists(st.sampled_from(VOCAB), max_size=30).map(" ".join))
def test_random_token_soup(text: str) -> None:
    check_parse('#[version = "0.0.5"]\n' + text)
    check_parse(text)


@given(st.text(string.printable, max_size=200))
def test_random_printable_text(text: str) -> None:
    check_parse(text)


@given(st.text(max_size=100))
def test_random_unicode_text(text: str) -> None:
    check_parse(text)
