"""The prelude as a fallback: name resolution, needed definitions, renaming, round trips."""

from __future__ import annotations

import sys
import time

import pytest
from relay.grammar import parse, parse_file
from relay.grammar.declscan import scan_declarations
from relay.grammar.prelude import prelude_module
from relay.grammar.prepass import prepare
from relay.lang import (
    Call,
    Constructor,
    GlobalVar,
    IRModule,
    ParseError,
    SourceFile,
    assert_structural_equal,
    post_order,
)
from relay.stdlib import prelude_text
from relay.typecheck import check_module


def names(mod: IRModule) -> tuple[set[str], set[str]]:
    """The global functions and the ADTs of a module, by name."""
    return (
        {gv.name_hint for gv in mod.functions},
        {gtv.name_hint for gtv in mod.type_definitions},
    )


def nodes_of(mod: IRModule, name: str, kind: type) -> list:
    """The nodes of class `kind` in the body of global `name`."""
    return [n for n in post_order(mod[name]) if isinstance(n, kind)]


def assert_reparses(mod: IRModule) -> None:
    """The printed module parses back equal, with and without the prelude."""
    text = mod.astext()
    assert_structural_equal(parse(text, prelude=False), mod)
    assert_structural_equal(parse(text), mod)


def parse_error(text: str, prelude: bool = True) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse(text, "prog.relay", prelude=prelude)
    return info.value


# ------------------------------------------------------------------------ what is pulled in


def test_only_the_needed_definitions_are_added():
    mod = parse("def @main() -> int32 { @length(Cons(1, Nil)) }")
    assert names(mod) == ({"main", "length", "foldl"}, {"List"})


@pytest.mark.parametrize(
    ("use", "functions", "types"),
    [
        ("@concat(Nil, Cons(1, Nil))", {"concat", "foldr"}, {"List"}),
        ("@size(Rose(1, Nil))", {"size", "map", "sum", "foldl"}, {"Tree", "List"}),
        ("Some(1)", set(), {"Option"}),
        (
            "@unfoldl(fn (%n: int32) { None }, 0)",
            {"unfoldl", "unfoldr", "rev", "foldl"},
            {"List", "Option"},
        ),
        ("@iterate(fn (%x: int32) { %x }, 2)", {"iterate", "compose"}, set()),
    ],
)
def test_needed_definitions_are_closed_under_dependencies(use, functions, types):
    mod = parse(f"def @main() {{ {use} }}")
    assert names(mod) == ({"main", *functions}, types)


def test_an_adt_used_only_in_a_type_pulls_in_its_definition_and_the_adts_it_mentions():
    mod = parse("def @main(%t: Tree[float32]) { %t }")
    assert names(mod) == ({"main"}, {"Tree", "List"})


def test_a_program_without_prelude_names_gets_nothing_from_it():
    mod = parse("def @main(%x: float32) -> float32 { add(%x, 1f) }")
    assert names(mod) == ({"main"}, set())


def test_prelude_nodes_are_shared_between_modules():
    first = parse("def @main() { @length(Cons(1, Nil)) }")
    second = parse("def @f() { @length(Nil) }")
    whole = prelude_module()
    assert first["length"] is second["length"] is whole["length"]
    assert first.get_global_var("foldl") is whole.get_global_var("foldl")
    assert first.get_type("List") is whole.get_type("List")
    # the program's uses denote the module's objects
    assert nodes_of(first, "main", GlobalVar) == [first.get_global_var("length")]
    ctors = {c.name_hint: c for c in nodes_of(first, "main", Constructor)}
    assert ctors["Cons"] is first.get_constructor("Cons")


def test_prelude_spans_point_into_the_prelude_file():
    mod = parse("def @main() { @length(Nil) }")
    span = mod["length"].span
    assert span is not None and span.source.name.endswith("prelude.relay")


def test_the_printed_module_is_self_contained():
    mod = parse(
        """
def @main(%t: Tree[int32]) -> (int32, Option[int32]) {
  (@size(%t), Some(@nth(@rev(Cons(1, Cons(2, Nil))), 1)))
}
"""
    )
    assert_reparses(mod)


def test_a_program_that_includes_the_prelude_text_uses_its_own_copy():
    text = prelude_text() + "\ndef @main() { @length(Cons(1, Nil)) }\n"
    mod = parse(text)
    assert mod["length"] is not prelude_module()["length"]
    assert_structural_equal(mod, parse(text, prelude=False))
    assert names(mod)[0] == {gv.name_hint for gv in prelude_module().functions} | {"main"}


# ------------------------------------------------------------------------ prelude=False


@pytest.mark.parametrize(
    ("text", "column", "message"),
    [
        ("def @main() { Cons(1, Nil) }", 15, "unknown operator or constructor `Cons`"),
        ("def @main() { @map(1) }", 15, "undefined global function @map"),
        ("def @main(%x: List[int32]) { %x }", 15, "unknown type `List`"),
        ("def @main(%x: int32) { match (%x) { Nil => 0 } }", 37, "unknown constructor `Nil`"),
    ],
)
def test_without_the_prelude_its_names_are_errors(text, column, message):
    error = parse_error(text, prelude=False)
    assert error.span is not None
    assert (error.span.line, error.span.column) == (1, column)
    assert message in error.message
    assert "prog.relay:1:" in error.render()
    parse(text)  # with the prelude it is fine


def test_a_name_neither_the_program_nor_the_prelude_declares_is_still_an_error():
    assert "undefined global function @nope" in parse_error("def @main() { @nope(1) }").message
    assert "unknown operator or constructor `Cos`" in parse_error("def @main() { Cos }").message


# ------------------------------------------------------------------------ the program wins

OWN_LIST = """
def @wrap(%xs: List[int32]) -> List[int32] { %xs }
type List[A] {
  Cons(A, List[A]),
  Nil,
}
def @first(%xs: List[int32]) -> int32 {
  match? (%xs) { Cons(%x, _) => %x }
}
"""


def test_own_list_wins_everywhere_even_before_its_declaration():
    mod = parse(OWN_LIST + "def @main() -> int32 { @first(@wrap(Cons(1, Nil))) }")
    assert names(mod) == ({"wrap", "first", "main"}, {"List"})
    own = mod.get_type("List")
    assert own is not prelude_module().get_type("List")
    used = {c.name_hint: c for c in nodes_of(mod, "main", Constructor)}
    assert used["Cons"] is own.constructor("Cons") and used["Nil"] is own.constructor("Nil")
    param_type = mod["wrap"].params[0].type_annotation
    assert param_type.func is own.header  # the use before the declaration is the program's


def test_own_list_with_the_preludes_map_renames_the_preludes_copy():
    mod = parse(
        OWN_LIST
        + "def @main() -> (int32, int32) "
        + "{ (@first(Cons(1, Nil)), @sum(@map(fn (%x: int32) { %x * 2 }, @range(0, 3)))) }"
    )
    functions, types = names(mod)
    assert functions == {"wrap", "first", "main", "sum", "map", "range", "foldl"}
    assert types == {"List", "prelude_List"}
    renamed = mod.get_type("prelude_List")
    assert [c.name_hint for c in renamed.constructors] == ["prelude_Cons", "prelude_Nil"]
    assert mod["map"].ret_type.func is renamed.header
    assert mod.get_type("List").constructor("Cons") is not None
    text = mod.astext()
    assert "type List[A] {" in text and "type prelude_List[A] {" in text
    assert "prelude_Cons(A, prelude_List[A])" in text
    assert_reparses(mod)


def test_own_list_of_another_arity():
    mod = parse(
        """
type List {
  Cons(int32, List),
  Nil,
}
def @main() -> (List, int32) { (Cons(1, Nil), @length(@replicate(3, 1f))) }
"""
    )
    assert mod.get_type("List").type_vars == ()
    assert len(mod.get_type("prelude_List").type_vars) == 1
    assert names(mod)[0] == {"main", "length", "replicate", "foldl"}
    assert_reparses(mod)


def test_own_nil_free_list_and_the_preludes_nil():
    # The program's List has no `Nil`, so `Nil` is the prelude's (of the renamed prelude List).
    mod = parse(
        """
type List[A] {
  Cons(A, List[A]),
  Empty,
}
def @main() { (Cons(1, Empty), Nil) }
"""
    )
    assert names(mod) == ({"main"}, {"List", "prelude_List"})
    renamed = mod.get_type("prelude_List")
    assert [c.name_hint for c in renamed.constructors] == ["prelude_Cons", "Nil"]
    nil = [c for c in nodes_of(mod, "main", Constructor) if c.name_hint == "Nil"]
    assert nil == [renamed.constructor("Nil")]
    assert_reparses(mod)


def test_a_constructor_used_before_the_programs_own_declaration_is_an_error():
    error = parse_error("def @main() { Cons(1, Nil) }\ntype List[A] { Cons(A, List[A]), Nil }")
    assert error.span is not None and (error.span.line, error.span.column) == (1, 15)
    assert "`Cons`: it is used before its declaration at 2:16" in error.message
    assert "names a prelude constructor" in error.message
    error = parse_error(
        "def @f(%x: List[int32]) { match (%x) { Nil => 0, _ => 1 } }\n"
        "type List[A] { Cons(A, List[A]), Nil }"
    )
    assert "`Nil`: it is used before its declaration at 2:34" in error.message


def test_a_global_defined_after_its_use_is_the_programs():
    mod = parse("def @main() { @map(1) }\ndef @map(%x: int32) -> int32 { %x }")
    assert names(mod) == ({"main", "map"}, set())
    assert len(mod["map"].params) == 1
    assert nodes_of(mod, "main", GlobalVar) == [mod.get_global_var("map")]


def test_a_needed_prelude_function_the_program_also_defines_is_renamed():
    mod = parse(
        """
def @main() -> (int32, int32) { (@size(Rose(1, Cons(Rose(2, Nil), Nil))), @map(3)) }
def @map(%x: int32) -> int32 { %x }
"""
    )
    functions, types = names(mod)
    assert functions == {"main", "map", "prelude_map", "size", "sum", "foldl"}
    assert types == {"Tree", "List"}
    renamed = mod.get_global_var("prelude_map")
    assert renamed in nodes_of(mod, "size", GlobalVar)
    assert renamed in nodes_of(mod, "prelude_map", GlobalVar)  # its recursive call
    assert mod.get_global_var("map") not in nodes_of(mod, "size", GlobalVar)
    assert_reparses(mod)


def test_renamed_names_avoid_the_programs_names():
    mod = parse(
        """
def @map(%x: int32) -> int32 { %x }
def @prelude_map(%x: int32) -> int32 { %x }
type Tree { Leaf }
def @main(%t: Tree) -> int32 { @size(Rose(1, Nil)) }
"""
    )
    functions, types = names(mod)
    assert {"map", "prelude_map", "prelude_map_2", "size"} <= functions
    assert types == {"Tree", "prelude_Tree", "List"}
    assert [c.name_hint for c in mod.get_type("prelude_Tree").constructors] == ["Rose"]
    assert_reparses(mod)


def test_renamed_variants_are_stable():
    text = "type List { Nil }\ndef @main() { @length(@range(0, 2)) }"
    first, second = parse(text), parse(text)
    assert first.get_type("prelude_List") is second.get_type("prelude_List")
    assert first["length"] is second["length"]
    assert first.astext() == second.astext()


def test_parse_file_uses_the_prelude(tmp_path):
    path = tmp_path / "prog.relay"
    path.write_text("def @main() -> int32 { @sum(Cons(1, Nil)) }\n")
    assert names(parse_file(path)) == ({"main", "sum", "foldl"}, {"List"})
    with pytest.raises(ParseError, match="unknown operator or constructor `Cons`"):
        parse_file(path, prelude=False)


# ------------------------------------------------------------------------ declaration scan


def scan(text: str):
    return scan_declarations(prepare(SourceFile("t", text)).text)


def test_scan_finds_functions_types_and_constructors():
    found = scan(
        """
#[version = "0.0.5"]
def @main(%x: int32) { %x }
def @nn/f() { 1 }
def@tight() { 2 }
type Pair[A, B] { MkPair(Tensor[(1, 2), float32], (A, fn (B) -> List[A])), Empty, }
extern type Storage[A]
type Unit
type Empty2 {}
"""
    )
    assert found.globals == {"main", "nn/f", "tight"}
    assert found.types == {"Pair", "Storage", "Unit", "Empty2"}
    assert set(found.constructors) == {"MkPair", "Empty"}


def test_scan_skips_comments_strings_and_lookalikes():
    found = scan(
        """
// def @commented() { 1 }
/* type Hidden { Ctor } */
def @f() { nn.dense(1, 2, out_dtype="def @instring") }
def @g(%type: int32) { my_type }
"""
    )
    assert found.globals == {"f", "g"}
    assert found.types == set()
    assert found.constructors == {}


def test_compact_declarations_are_found_and_win():
    mod = parse("def@main(){@map(1)}def@map(%x:int32)->int32{%x}type List{Cons,Nil}")
    assert names(mod) == ({"main", "map"}, {"List"})


def test_scan_records_where_each_constructor_is_declared():
    text = "type T {\n  A,\n  B(int32),\n}"
    found = scan(text)
    assert {name: text[offset : offset + 1] for name, offset in found.constructors.items()} == {
        "A": "A",
        "B": "B",
    }


# ------------------------------------------------------------------------ scale


def test_small_programs_parse_fast_with_the_prelude():
    text = "def @main() -> int32 { @length(@map(fn (%x: int32) { %x }, Cons(1, Nil))) }"
    parse(text)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        parse(text)
        best = min(best, time.perf_counter() - start)
    assert best < 0.02


def test_a_long_let_chain_using_the_prelude():
    limit = sys.getrecursionlimit()
    n = 5_000
    lines = ["def @main() -> int32 {", "  let %x0 = Nil;"]
    lines += [f"  let %x{i} = Cons({i}, %x{i - 1});" for i in range(1, n)]
    lines += [f"  @sum(%x{n - 1})", "}"]
    mod = parse("\n".join(lines))
    assert names(mod) == ({"main", "sum", "foldl"}, {"List"})
    calls = [n for n in post_order(mod["main"]) if isinstance(n, Call)]
    assert len(calls) == n + 1  # `Nil`, n - 1 calls of `Cons` and the call of @sum
    assert sys.getrecursionlimit() == limit


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("def @map(%x: int32) { %x }", "@map"),
        ("type Option { Other }", "type `Option`"),
        ("type Mine { Cons }", "constructor `Cons`"),
    ],
)
def test_a_declaration_the_scan_missed_is_reported_not_mixed(monkeypatch, text, what):
    import relay.grammar.parser as parser_module

    monkeypatch.setattr(parser_module, "scan_declarations", lambda text: scan(""))
    error = parse_error(text)
    assert f"the declaration of {what} was missed" in error.message


def test_strip_prelude_leaves_the_program_as_written():
    from relay.grammar.prelude import strip_prelude

    text = (
        "type List { Empty }\n"
        "def @main() -> (List, int32) { (Empty, @size(Rose(1, Cons(Rose(2, Nil), Nil)))) }"
    )
    mod = parse(text)
    assert names(mod)[1] == {"List", "prelude_List", "Tree"}
    own = strip_prelude(mod)
    assert names(own) == ({"main"}, {"List"})
    assert_structural_equal(parse(own.astext()), mod)
    check_module(mod)
