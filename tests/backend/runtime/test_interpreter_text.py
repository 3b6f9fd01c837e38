"""The reference interpreter on programs written in the text format."""

import numpy as np
import pytest
from relay.backend.runtime import MatchError, interpret
from relay.grammar import parse

LIST = """#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}

def @range(%n: int32) -> List[int32] {
  if (%n == 0) { Nil } else { Cons(%n, @range(%n - 1)) }
}

def @sum(%xs: List[int32]) -> int32 {
  match (%xs) {
    Cons(%h, %t) => %h + @sum(%t),
    Nil => 0,
  }
}

def @map[A, B](%f: fn (A) -> B, %xs: List[A]) -> List[B] {
  match (%xs) {
    Cons(%h, %t) => Cons(%f(%h), @map(%f, %t)),
    Nil => Nil,
  }
}

def @hd[A](%xs: List[A]) -> A {
  match? (%xs) {
    Cons(%h, _) => %h,
  }
}
"""


def test_list_program_from_text():
    mod = parse(
        LIST
        + """
def @main(%n: int32) -> (int32, int32, int32) {
  let %sum_to = fn (%k: int32) -> int32 {
    if (%k == 0) { 0 } else { %k + %sum_to(%k - 1) }
  };
  %0 = @range(%n);
  %1 = @map(fn (%x: int32) -> int32 { %x * 2 }, %0);
  (@sum(%0), @sum(%1), %sum_to(%n))
}
"""
    )
    assert interpret(mod, 100) == (5050, 10100, 5050)
    assert interpret(mod, n=5_000)[1] == 5_000 * 5_001


def test_incomplete_match_fails_at_its_source_location():
    mod = parse(LIST + "\ndef @main() -> int32 { @hd(Nil) }\n", "lists.relay")
    with pytest.raises(MatchError) as info:
        interpret(mod)
    message = str(info.value)
    assert "lists.relay:" in message and "no clause matches the value Nil" in message
    assert "match? (%xs)" in message  # the source line is shown


def test_references_and_closures_from_text():
    mod = parse(
        """#[version = "0.0.5"]
def @main(%start: int32) -> int32 {
  let %r = ref(%start);
  let %bump = fn (%by: int32) -> () { ref_write(%r, ref_read(%r) + %by) };
  let %a = %bump(10);
  let %b = %bump(100);
  ref_read(%r)
}
"""
    )
    assert interpret(mod, 1) == 111


def test_integer_division_from_text():
    mod = parse(
        """#[version = "0.0.5"]
def @main(%a: Tensor[(4), int8], %b: Tensor[(4), int8]) {
  (%a / %b, mod(%a, %b), floor_divide(%a, %b), floor_mod(%a, %b))
}
"""
    )
    a = np.asarray([-7, 7, -7, 7], np.int8)
    b = np.asarray([2, 2, -2, -2], np.int8)
    div, rem, fdiv, fmod = interpret(mod, a, b)
    assert div.dtype == np.int8 and div.tolist() == [-3, 3, 3, -3]
    assert rem.tolist() == [-1, 1, -1, 1]
    assert fdiv.tolist() == [-4, 3, 3, -4] and fmod.tolist() == [1, 1, -1, -1]
