"""Programs that use the prelude without declaring it: they type-check and run."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from relay.backend.runtime import ConstructorValue, MatchError, interpret
from relay.cli import main as cli_main
from relay.grammar import parse
from relay.lang import TypeCheckError
from relay.typecheck import check_module, type_text


def py(value):
    """A run-time value as plain Python: lists for `List`s, `(name, fields)` for other ADTs."""
    if isinstance(value, np.ndarray):
        return value.item()
    if isinstance(value, tuple):
        return tuple(py(v) for v in value)
    assert isinstance(value, ConstructorValue)
    if value.constructor.belong_to.name_hint.endswith("List"):
        items = []
        while value.fields:  # iterative: lists may be long
            items.append(py(value.fields[0]))
            value = value.fields[1]
        return items
    return (value.constructor.name_hint, *(py(f) for f in value.fields))


def run(text: str, *args):
    mod = parse(text)
    types = check_module(mod)
    return py(interpret(mod, *args)), type_text(types.global_types["main"])


def test_prelude_functions_and_types_give_hand_worked_results():
    result, main_type = run(
        """
def @main(%n: int32) {
  let %xs = Cons(1, Cons(2, Cons(3, Nil)));
  let %tree = Rose(1, Cons(Rose(2, Nil), Cons(Rose(3, Cons(Rose(4, Nil), Nil)), Nil)));
  let %first: Option[int32] = Some(5);
  (
    @map(fn (%x: int32) { %x * %x }, %xs),
    @foldl(fn (%acc: int32, %x: int32) { %acc * 10 + %x }, 0, %xs),
    @sum(%xs),
    @length(%xs),
    @rev(%xs),
    @zip(%xs, Cons(True, Cons(False, Nil))),
    @filter(fn (%x: int32) { %x != 2 }, %xs),
    @nth(%xs, 2),
    @concat(%xs, Cons(%n, Nil)),
    match (%first) { Some(%v) => %v + 1, None => 0 },
    @size(%tree),
    @unfoldr(fn (%k: int32) { if (%k < 3) { Some((%k + 1, %k * %k)) } else { None } }, 0),
  )
}
""",
        7,
    )
    assert result == (
        [1, 4, 9],
        123,
        6,
        3,
        [3, 2, 1],
        [(1, True), (2, False)],
        [1, 3],
        3,
        [1, 2, 3, 7],
        6,
        4,
        [0, 1, 4],
    )
    assert main_type == (
        "fn (int32) -> (List[int32], int32, int32, int32, List[int32], List[(int32, bool)], "
        "List[int32], int32, List[int32], int32, int32, List[int32])"
    )


def test_tree_map_and_option_values():
    result, _ = run(
        """
def @main() {
  let %tree = Rose(1f, Cons(Rose(2f, Nil), Nil));
  let %none: Option[int32] = None;
  (@tmap(fn (%x: float32) { %x * 2f }, %tree), Some(%none), @hd(@range(4, 6)))
}
"""
    )
    assert result == (("Rose", 2.0, [("Rose", 4.0, [])]), ("Some", ("None",)), 4)


OWN_LIST = """
type List[A] {
  Cons(A, List[A]),
  Nil,
}

def @mylength[A](%xs: List[A]) -> int32 {
  match (%xs) {
    Cons(_, %rest) => 1 + @mylength(%rest),
    Nil => 0,
  }
}
"""


def test_a_program_with_its_own_list_and_the_preludes_map():
    text = OWN_LIST + (
        "def @main() {\n"
        "  let %own = Cons(10, Cons(20, Nil));\n"
        "  (@mylength(%own), @map(fn (%x: int32) { %x + 1 }, @range(0, 3)),\n"
        "   @sum(@map(fn (%x: int32) { %x * 2 }, @replicate(4, 5))))\n"
        "}\n"
    )
    mod = parse(text)
    types = check_module(mod)
    assert type_text(types.global_types["mylength"]) == "fn [A](List[A]) -> int32"
    assert type_text(types.global_types["main"]) == ("fn () -> (int32, prelude_List[int32], int32)")
    assert py(interpret(mod)) == (2, [1, 2, 3], 40)
    again = parse(mod.astext(), prelude=False)
    check_module(again)
    assert py(interpret(again)) == (2, [1, 2, 3], 40)


def test_a_program_with_a_list_of_another_arity():
    text = """
type List {
  Cons(int32, List),
  Nil,
}

def @total(%xs: List) -> int32 {
  match (%xs) {
    Cons(%x, %rest) => %x + @total(%rest),
    Nil => 0,
  }
}

def @main() -> (int32, int32) {
  (@total(Cons(1, Cons(2, Nil))), @length(@map(fn (%x: float32) { %x }, @replicate(3, 1f))))
}
"""
    mod = parse(text)
    check_module(mod)
    assert py(interpret(mod)) == (3, 3)
    assert py(interpret(parse(mod.astext(), prelude=False))) == (3, 3)


def test_the_preludes_nil_does_not_mix_silently_with_an_own_nil_free_list():
    own = """
type List[A] {
  Cons(A, List[A]),
  Empty,
}
"""
    mod = parse(own + "def @main() { (Cons(1, Empty), @length(Cons(1, Empty))) }")
    with pytest.raises(TypeCheckError, match="prelude_List"):
        check_module(mod)  # @length takes the prelude's List, not the program's
    mod = parse(own + "def @main() { Cons(1, Nil) }")
    with pytest.raises(TypeCheckError):
        check_module(mod)  # `Nil` is the prelude's: a different type


def test_a_recursive_sum_over_ten_thousand_elements():
    limit = sys.getrecursionlimit()
    text = """
def @rsum(%xs: List[int32]) -> int32 {
  match (%xs) {
    Cons(%x, %rest) => %x + @rsum(%rest),
    Nil => 0,
  }
}

def @main(%n: int32) -> (int32, int32, int32) {
  let %xs = @range(0, %n);
  (@rsum(%xs), @sum(%xs), @length(@rev(%xs)))
}
"""
    result, _ = run(text, 10_000)
    assert result == (49_995_000, 49_995_000, 10_000)
    assert sys.getrecursionlimit() == limit


def test_a_failing_partial_prelude_function_points_into_the_prelude():
    mod = parse("def @main() -> int32 { @hd(@range(3, 1)) }", "prog.relay")
    with pytest.raises(MatchError) as info:
        interpret(mod)
    assert "prelude.relay" in info.value.render()


def test_relay_check_and_run_see_the_prelude(tmp_path, capsys):
    path = tmp_path / "prog.relay"
    path.write_text("def @main(%n: int32) -> int32 { @sum(@range(0, %n)) }\n")
    inputs = tmp_path / "in.npz"
    np.savez(inputs, n=np.array(5, dtype="int32"))
    assert cli_main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "@main: fn (int32) -> int32" in out
    assert "@sum: fn (List[int32]) -> int32" in out
    output = tmp_path / "out.npz"
    code = cli_main(
        ["run", str(path), "--target", "interp", "--inputs", str(inputs), "--output", str(output)]
    )
    assert code == 0
    assert np.load(output)["out"] == 10
