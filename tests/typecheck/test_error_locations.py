"""An error about a use of a value points at the use, with a note saying where it is bound.

A variable (and a value bound in graph form, `%0 = ...;`) is one node shared by all its
uses, so its own span is where it is bound; the checker finds the text of the use inside
the node that uses it.
"""

from __future__ import annotations

import pytest
from relay.grammar import parse
from relay.lang import Diagnostic, TypeCheckError
from relay.typecheck import check_module

HEADER = '#[version = "0.0.5"]\n'
LIST = "type List[A] { Cons(A, List[A]), Nil }\n"


def the_error(src: str) -> Diagnostic:
    """The single diagnostic of `src` (the header is prepended; lines count from it)."""
    with pytest.raises(TypeCheckError) as info:
        check_module(parse(HEADER + src, "t.relay"))
    diagnostics = info.value.diagnostics
    assert len(diagnostics) == 1, info.value.render()
    return diagnostics[0]


def shown(d: Diagnostic) -> str:
    """The source text the caret of `d` underlines (single-line spans)."""
    span = d.span
    assert span is not None and span.source is not None
    assert span.line == span.end_line
    return span.source.line_text(span.line)[span.column - 1 : span.end_column - 1]


def position(d: Diagnostic) -> tuple[int, int]:
    assert d.span is not None
    return d.span.line, d.span.column


def test_if_condition_bound_by_let_points_at_the_condition():
    d = the_error(
        "def @main(%x: Tensor[(4, 6), float32]) {\n"
        "  let %c = add(%x, %x);\n"
        "  if (%c) { %x } else { %x }\n"
        "}\n"
    )
    assert d.message.startswith("the condition of `if`: expected `bool`")
    assert position(d) == (4, 7)
    assert shown(d) == "%c"
    assert "`%c` is bound at t.relay:3:7" in d.notes


def test_if_condition_bound_in_graph_form_points_at_the_use_not_the_binding():
    d = the_error(
        "def @main(%x: Tensor[(4, 6), float32]) {\n"
        "  %0 = add(%x, %x);\n"
        "  if (%0) { %x } else { %x }\n"
        "}\n"
    )
    assert position(d) == (4, 7)
    assert shown(d) == "%0"
    assert "`%0` is bound at t.relay:3:3" in d.notes


def test_condition_written_in_place_keeps_its_own_span():
    d = the_error("def @main(%x: float32) {\n  if (add(%x, %x)) { %x } else { %x }\n}\n")
    assert shown(d) == "add(%x, %x)"
    assert not any("bound at" in n for n in d.notes)


def test_argument_of_a_global_call_points_at_the_argument():
    d = the_error(
        "def @f(%a: Tensor[(4), int32]) { %a }\n"
        "def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {\n"
        "  %0 = add(%x, %y);\n"
        "  %1 = @f(%0);\n"
        "  %1\n"
        "}\n"
    )
    assert d.message.startswith("argument 1 of `@f`")
    assert position(d) == (5, 11)
    assert "`%0` is bound at t.relay:4:3" in d.notes


def test_second_argument_is_found_among_several_and_comments():
    d = the_error(
        "def @f(%a: float32, %b: int32) { %b }\n"
        "def @main(%x: float32, %y: float32) {\n"
        '  @f(/* first, not this */ %x, // "second"\n'
        "     %y)\n"
        "}\n"
    )
    assert d.message.startswith("argument 2 of `@f`")
    assert position(d) == (5, 6)
    assert shown(d) == "%y"
    assert "`%y` is bound at t.relay:3:24" in d.notes


def test_argument_of_a_local_function_call():
    d = the_error(
        "def @main(%x: float32, %n: int32) {\n  let %f = fn (%v: float32) { %v };\n  %f(%n)\n}\n"
    )
    assert d.message.startswith("argument 1 of `%f`")
    assert shown(d) == "%n"


def test_return_value_against_declared_type_points_at_the_result():
    d = the_error(
        "def @main(%x: Tensor[(4), float32]) -> Tensor[(4), int32] {\n"
        "  let %c = add(%x, %x);\n"
        "  let %d = multiply(%c, %c);\n"
        "  %d\n"
        "}\n"
    )
    assert d.message.startswith("the body of the function has the wrong type")
    assert position(d) == (5, 3)
    assert "`%d` is bound at t.relay:4:7" in d.notes


def test_return_value_in_graph_form_points_at_the_result():
    d = the_error(
        "def @main(%x: Tensor[(4), float32]) -> Tensor[(4), int32] {\n"
        "  %0 = add(%x, %x);\n"
        "  %1 = multiply(%0, %0);\n"
        "  %1\n"
        "}\n"
    )
    assert position(d) == (5, 3)
    assert "`%1` is bound at t.relay:4:3" in d.notes


def test_parameter_returned_as_the_body():
    d = the_error("def @main(%y: float32) -> int32 { %y }\n")
    assert shown(d) == "%y"
    assert "`%y` is bound at t.relay:2:11" in d.notes


def test_else_branch_variable_points_into_the_else_block():
    d = the_error(
        "def @main(%c: bool, %x: float32, %n: int32) {\n"
        "  if (%c) { %x } else { let %m = %n; %m }\n"
        "}\n"
    )
    assert d.message.startswith("the `else` branch has a different type")
    assert position(d) == (3, 38)
    assert "`%m` is bound at t.relay:3:29" in d.notes


def test_let_annotation_points_at_the_value():
    d = the_error("def @main(%x: float32) {\n  let %y: int32 = %x;\n  %y\n}\n")
    assert d.message.startswith("the value bound to `%y` does not have its declared type")
    assert shown(d) == "%x"
    assert "`%x` is bound at t.relay:2:11" in d.notes


def test_match_scrutinee_points_at_the_scrutinee():
    d = the_error(
        LIST + "def @main(%a: float32) {\n"
        "  let %s = %a;\n"
        "  match (%s) { Cons(%h, _) => %h, Nil => 0f }\n"
        "}\n"
    )
    assert d.message.startswith("pattern `Cons(%h, _)` does not fit the matched value")
    assert shown(d) == "%s"
    assert "`%s` is bound at t.relay:4:7" in d.notes


def test_match_arm_points_at_the_arm():
    d = the_error(
        LIST + "def @main(%l: List[float32], %n: int32) {\n"
        "  match (%l) { Cons(%h, _) => %h, Nil => %n }\n"
        "}\n"
    )
    assert d.message.startswith("this `match` arm has a different type")
    assert shown(d) == "%n"
    assert "`%n` is bound at t.relay:3:30" in d.notes


def test_call_of_a_non_function_notes_the_binding():
    d = the_error("def @main(%x: float32) {\n  let %a = add(%x, %x);\n  %a(%x)\n}\n")
    assert d.message == "cannot call `%a`: it has type `float32`, not a function"
    assert shown(d) == "%a(%x)"
    assert "`%a` is bound at t.relay:3:7" in d.notes


def test_projection_of_a_graph_bound_tensor_notes_the_binding():
    d = the_error("def @main(%x: float32) {\n  %0 = add(%x, %x);\n  %0.1\n}\n")
    assert d.message.startswith("cannot take field 1")
    assert shown(d) == "%0.1"
    assert "`%0` is bound at t.relay:3:3" in d.notes


def test_ref_read_of_a_variable_points_at_the_variable():
    d = the_error("def @main(%x: float32) {\n  let %r = %x;\n  ref_read(%r)\n}\n")
    assert shown(d) == "%r"
    assert "`%r` is bound at t.relay:3:7" in d.notes


def test_commas_inside_nested_arguments_do_not_split_them():
    d = the_error(
        "def @f(%a: (float32, float32), %b: int32) { %b }\n"
        "def @main(%x: float32) {\n"
        "  let %y = %x;\n"
        "  @f((add(%x, %x), %x), %y)\n"
        "}\n"
    )
    assert d.message.startswith("argument 2 of `@f`")
    assert shown(d) == "%y"


def test_rendered_error_shows_the_use_line_and_caret():
    with pytest.raises(TypeCheckError) as info:
        check_module(
            parse(
                HEADER
                + "def @main(%x: float32) {\n  let %c = %x;\n  if (%c) { 1f } else { 2f }\n}\n",
                "m.relay",
            )
        )
    lines = info.value.render().splitlines()
    assert lines[0].startswith("m.relay:4:7: error: the condition of `if`")
    assert lines[1:3] == ["    if (%c) { 1f } else { 2f }", "        ^~"]
    assert "  note: `%c` is bound at m.relay:3:7" in lines
