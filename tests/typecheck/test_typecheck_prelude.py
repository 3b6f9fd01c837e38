"""The prelude written in `.relay` type-checks, and programs using it infer."""

from __future__ import annotations

from relay.grammar import parse
from relay.stdlib import prelude_text
from relay.typecheck import check_module, type_text


def test_prelude_type_checks_with_the_expected_signatures():
    types = check_module(parse(prelude_text(), "prelude.relay"))
    shown = {name: type_text(t) for name, t in types.global_types.items()}
    assert shown["map"] == "fn [A, B](fn (A) -> B, List[A]) -> List[B]"
    assert shown["foldl"] == "fn [A, B](fn (A, B) -> A, A, List[B]) -> A"
    assert shown["compose"] == "fn [A, B, C](fn (B) -> C, fn (A) -> B) -> fn (A) -> C"
    assert shown["length"] == "fn [A](List[A]) -> int32"


def test_program_using_the_prelude():
    src = (
        prelude_text()
        + """
def @main(%x: float32) {
  let %l = Cons(%x, Cons(2f, Nil));
  let %doubled = @map(fn (%v: float32) { multiply(%v, 2f) }, %l);
  (@length(%doubled), @foldl(fn (%acc: float32, %v: float32) { add(%acc, %v) }, 0f, %doubled),
   @zip(%l, @map(fn (%v: float32) { less(%v, 1f) }, %l)))
}
"""
    )
    types = check_module(parse(src))
    assert type_text(types.global_types["main"]) == (
        "fn (float32) -> (int32, float32, List[(float32, bool)])"
    )
