"""Every diagnostic of the parser: its message and its exact position."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.grammar import parse, parse_expr, parse_file
from relay.lang.diagnostics import Error, ParseError
from relay.lang.metadata import encode_ndarray, write_metadata
from relay.lang.types import ShapeVar


def error_of(text: str, module: bool = False) -> ParseError:
    with pytest.raises(ParseError) as info:
        (parse if module else parse_expr)(text)
    return info.value


def check(text: str, line: int, column: int, *fragments: str, module: bool = False) -> ParseError:
    error = error_of(text, module)
    assert error.span is not None, error
    assert (error.span.line, error.span.column) == (line, column), str(error)
    for fragment in fragments:
        assert fragment in error.message, str(error)
    return error


def test_rendering_has_location_source_line_and_caret() -> None:
    error = error_of("def @main(%x) {\n  add(%x, %y)\n}\n", module=True)
    assert isinstance(error, Error)
    assert str(error).splitlines() == [
        "<string>:2:11: error: undeclared variable %y",
        "    add(%x, %y)",
        "            ^~",
    ]


def test_source_name_is_used() -> None:
    error = error_of_named("1 +", "model.relay")
    assert str(error).startswith("model.relay:1:4: error:")


def error_of_named(text: str, name: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse_expr(text, name)
    return info.value


# ---------------------------------------------------------------------- names


def test_undeclared_variable() -> None:
    check("let %x = 1; %z", 1, 13, "undeclared variable %z")


def test_unknown_operator_or_constructor() -> None:
    check("foo(1)", 1, 1, "unknown operator or constructor `foo`")
    check("nn.convolution(1)", 1, 1, "unknown operator or constructor `nn.convolution`")


def test_constructor_must_be_declared_before_use() -> None:
    check(
        "def @f() { Nil }\ntype List[A] { Cons(A, List[A]), Nil }",
        1,
        12,
        "unknown operator or constructor `Nil`",
        module=True,
    )


def test_unknown_constructor_in_pattern_and_wrong_arity() -> None:
    check("match (1) { Foo => 1 }", 1, 13, "unknown constructor `Foo`")
    check(
        "type T { A(int32) }\ndef @f(%t: T) { match (%t) { A(%x, %y) => %x } }",
        2,
        30,
        "has 1 field(s), but the pattern has 2",
        module=True,
    )


def test_duplicate_pattern_variable() -> None:
    check("match ((1, 2)) { (%a, %a) => %a }", 1, 23, "bound twice")


def test_variables_out_of_scope() -> None:
    check("{ let %x = 1; %x }; %x", 1, 21, "undeclared variable %x")
    check("(let %x = 1; %x, %x)", 1, 18, "undeclared variable %x")
    check("(fn (%x) { %x }, %x)", 1, 18, "undeclared variable %x")
    check("match (1) { %a => %a }; %a", 1, 25, "undeclared variable %a")
    check("if (True) { let %v = 1; %v } else { %v }", 1, 37, "undeclared variable %v")


def test_graph_variable_errors() -> None:
    check("%1 = 1; %0", 1, 9, "graph variable %0 is used before it is bound")
    check("%0 = add(%0, 1); %0", 1, 10, "graph variable %0 is used before it is bound")
    error = check("%0 = 1;\n%0 = 2;\n%0", 2, 1, "graph variable %0 is already bound")
    assert error.diagnostics[0].notes == ("first bound at <string>:1:1",)


def test_undefined_global_is_reported_at_first_use() -> None:
    check(
        "def @f() { @g(1) }\ndef @h() { @g(2) }", 1, 12, "undefined global function @g", module=True
    )


def test_duplicate_definitions() -> None:
    error = check("def @f() { 1 }\ndef @f() { 2 }", 2, 5, "duplicate definition of @f", module=True)
    assert "first defined at <string>:1:5" in error.diagnostics[0].notes[0]
    check("type A { B }\ntype A { C }", 2, 6, "duplicate definition of type `A`", module=True)
    check("type A { B }\nextern type A", 2, 13, "duplicate definition of type `A`", module=True)
    check("type A { B }\ntype C { B }", 2, 10, "duplicate constructor `B`", module=True)
    check("type A { B, B }", 1, 13, "duplicate constructor `B`", module=True)
    check("fn (%x, %x) { %x }", 1, 9, "duplicate parameter %x")
    check("fn [A, A](%x: A) { %x }", 1, 8, "duplicate type parameter `A`")


def test_undefined_adt() -> None:
    check("def @f(%x: Lst[int32]) { %x }", 1, 12, "unknown type `Lst`", module=True)


def test_type_variable_cannot_be_applied() -> None:
    check("fn [A](%x: A[int32]) { %x }", 1, 12, "type variable `A` cannot be applied")
    check("fn (%x: int32[int32]) { %x }", 1, 9, "dtype `int32` cannot be applied")


def test_bad_dtypes_and_dims() -> None:
    check("fn (%x: Tensor[(1, 2), float33]) { %x }", 1, 24, "unknown dtype `float33`")
    check("fn (%x: Tensor[(1, 2.5), float32]) { %x }", 1, 20, "dimension must be an integer")
    check("fn (%x: Tensor[(-1), float32]) { %x }", 1, 17, "non-negative")


# ---------------------------------------------------------------------- literals


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("2147483648i32", "out of range for int32"),
        ("32768i16", "out of range for int16"),
        ("-32769i16", "out of range for int16"),
        ("9223372036854775808", "out of range for int64"),
        ("9223372036854775808i64", "out of range for int64"),
        ("65505f16", "out of range for float16"),
        ("1e39f", "out of range for float32"),
        ("3.40283e+38f32", "out of range for float32"),
        ("1e309f64", "out of range for float64"),
        ("5i8", "int8 literals need meta[relay.Constant]"),
        ("5u8", "uint8 literals need meta[relay.Constant]"),
        ("1.5i32", "has a fraction or exponent but an integer type"),
        ("3x", "invalid suffix `x`"),
        ("3i128", "invalid suffix"),
    ],
)
def test_literal_diagnostics(text: str, fragment: str) -> None:
    check(f"add({text}, 1)", 1, 5, fragment)


# ---------------------------------------------------------------------- attributes


def test_attribute_errors_point_at_the_key() -> None:
    check("add(1, 2, axis=1)", 1, 11, "operator `add` takes no attributes")
    check("free_var %x; nn.conv2d(%x, %x, stride=[1, 1])", 1, 32, "has no attribute `stride`")
    check("free_var %x; nn.conv2d(%x, %x, strides=[[1]])", 1, 32, "Conv2DAttrs.strides")
    check('free_var %x; nn.softmax(%x, axis="one")', 1, 29, "SoftmaxAttrs.axis")
    check("free_var %x; nn.softmax(%x, axis=1, axis=2)", 1, 37, "duplicate attribute `axis`")
    check("fn (Primitive=1, Primitive=2) { 0 }", 1, 18, "duplicate attribute `Primitive`")


def test_missing_required_attribute_points_at_the_call() -> None:
    check("free_var %x; clip(%x, a_max=6f)", 1, 14, "missing required attribute `a_min`")
    check("free_var %x; (clip)(%x, a_max=6f)", 1, 14, "missing required attribute `a_min`")


def test_keyword_attributes_on_a_non_operator() -> None:
    check("free_var %f; %f(1, axis=1)", 1, 20, "only allowed in operator calls")
    check("(fn (%x) { %x })(1, axis=1)", 1, 21, "only allowed in operator calls")


def test_argument_order() -> None:
    check("add(1, axis=1, 2)", 1, 14, "positional arguments must come before keyword")
    check("fn (Primitive=1, %x) { %x }", 1, 18, "parameters must come before function attributes")


_DEVICE_META = "\n#[metadata]\n" + json.dumps(
    {
        "root": 1,
        "nodes": [
            {"type_key": ""},
            {"type_key": "Map", "keys": ["VirtualDevice", "relay.Constant"], "data": [2, 4]},
            {"type_key": "Array", "data": [3]},
            {"type_key": "VirtualDevice", "attrs": {"device_type_int": "1"}},
            {"type_key": "Array", "data": [5]},
            {"type_key": "relay.Constant", "attrs": {"data": "0"}},
        ],
        "b64ndarrays": [encode_ndarray(np.ones(1))],
    }
)


def test_meta_attribute_values() -> None:
    check("free_var %x; nn.softmax(%x, axis=meta[VirtualDevice][0])", 1, 34, "no #[metadata]")
    check("free_var %x; nn.softmax(%x, meta[relay.attrs.SoftmaxAttrs][0])", 1, 29, "not supported")
    check("fn (Compiler=meta[VirtualDevice][0]) { 0 }", 1, 14, "no #[metadata] section")
    check("fn (virtual_device=meta[VirtualDevice][0]) { 0 }", 1, 20, "no #[metadata] section")
    check("free_var %x; nn.softmax(%x, axis=meta[VirtualDevice][0])" + _DEVICE_META, 1, 29,
          "SoftmaxAttrs.axis: expected int, got <VirtualDevice from the metadata>")  # fmt: skip
    check("fn (a=meta[relay.Constant][0]) { 0 }" + _DEVICE_META, 1, 7, "cannot be an attribute")
    check("fn (a=[1, [meta[relay.Constant][0]]]) { 0 }" + _DEVICE_META, 1, 12, "cannot be an attr")
    # Parameter braces are accepted and ignored (unresolved).
    fn = parse_expr("fn (%x {virtual_device=meta[VirtualDevice][7]}) { %x }")
    assert len(fn.attrs) == 0


def test_nesting_limit_for_attribute_lists() -> None:
    check("fn (a=" + "[" * 40 + "]" * 40 + ") { 0 }", 1, 14, "nest more than 32 deep")


# ---------------------------------------------------------------------- lexical


def test_unterminated_comment_and_string() -> None:
    check("1 /* a /* nested */ still open", 1, 3, "unterminated block comment")
    check('fn (a="abc) { 0 }', 1, 7, "unterminated string literal")


def test_stray_sigils_and_bad_characters() -> None:
    check("add(% x)", 1, 5, "stray `%`")
    check("@ f", 1, 1, "stray `@`")
    check("1 # comment", 1, 3, "stray `#`")
    check("1 $ 2", 1, 3, "unexpected character '$'")


def test_carriage_return_must_precede_newline() -> None:
    check("1 +\r 2", 1, 4, "carriage return")


def test_header_errors() -> None:
    check('#[version = "0.0.4"]\ndef @f() { 1 }', 1, 1, 'expected "0.0.5"', module=True)
    check("#[version]\ndef @f() { 1 }", 1, 1, "unsupported version", module=True)
    check("#[foo]\ndef @f() { 1 }", 1, 1, "unknown directive", module=True)
    check('def @f() { 1 }\n#[version = "0.0.5"]', 2, 1, "can only appear first", module=True)
    check("def @f() { 1 } #[metadata]", 1, 16, "at the start of a line", module=True)


# ---------------------------------------------------------------------- syntax errors in words


def test_expected_semicolon_after_binding() -> None:
    check("let %x = 1 2", 1, 12, "expected `;` after binding, found `2`")
    check("%0 = add(1, 2) %1 = 2; %1", 1, 16, "expected `;` after binding")
    check("let %x = 1; let %y = 2", 1, 23, "unexpected end of input, expected `;` after binding")


def test_expected_an_expression() -> None:
    check("let %x = ;", 1, 10, "expected an expression, found `;`")
    check("1 +", 1, 4, "unexpected end of input, expected an expression")
    check("1 + + 2", 1, 5, "expected an expression, found `+`")
    check("", 1, 1, "unexpected end of input, expected an expression")
    check("free_var %x;", 1, 13, "expected an expression")


def test_expected_closing_brackets() -> None:
    check("add(1, 2", 1, 9, "unexpected end of input, expected `)`")
    check("(1, 2 3)", 1, 7, "expected `)`")
    check("fn (%x) { %x", 1, 13, "unexpected end of input, expected `}`")
    check(
        "def @f() {\n  let %x = 1;\n  %x\n",
        3,
        5,
        "unexpected end of input, expected `}`",
        module=True,
    )
    check("match (1) { _ => 1 2 }", 1, 20, "expected `}` or `,`")


def test_other_expectations() -> None:
    check("def @f(%x) %x", 1, 12, "expected `->` or `{`, found `%x`", module=True)
    check("fn (%x: ) { %x }", 1, 9, "expected a type, found `)`")
    check("def f() { 1 }", 1, 5, "expected a global (`@f`), found `f`", module=True)
    check("if (True) { 1 }", 1, 16, "expected `else`")
    check("if True { 1 } else { 2 }", 1, 4, "expected `(`")
    check("def @f() { 1 } 2", 1, 16, "found `2`", module=True)
    check("%x = 1; %x", 1, 4, "let %x = ...;")


# ---------------------------------------------------------------------- metadata


def test_meta_reference_errors() -> None:
    meta = write_metadata({"relay.Constant": [np.ones(3, np.float32)]})
    check("meta[relay.Constant][0]", 1, 1, "there is no #[metadata] section")
    check("meta[relay.Constant][1]\n#[metadata]\n" + meta, 1, 1, "out of range")
    check("meta[tir.SizeVar][0]\n#[metadata]\n" + meta, 1, 1, "no `tir.SizeVar` entries")
    check("1 + meta[relay.Constant][99999999999999999999999]\n#[metadata]\n" + meta, 1, 5, "range")


def test_opaque_meta_objects_are_not_expressions() -> None:
    text = (
        'free_var %x; meta[VirtualDevice][0]\n#[metadata]\n{"root": 1, "nodes": [{"type_key": ""},'
        ' {"type_key": "Map", "keys": ["VirtualDevice"], "data": [2]},'
        ' {"type_key": "Array", "data": [3]}, {"type_key": "VirtualDevice"}],'
        ' "b64ndarrays": [], "attrs": {"tvm_version": "0.8.0"}}'
    )
    check(text, 1, 14, "is not a constant and cannot be used as an expression")
    dim = text.replace(
        "free_var %x; meta[VirtualDevice][0]",
        "free_var %x: Tensor[(meta[VirtualDevice][0],), float32]; %x",
    )
    check(dim, 1, 22, "is not a shape variable")


def test_meta_constant_used_as_shape_and_shape_var_as_expression() -> None:
    meta = write_metadata(
        {"relay.Constant": [np.ones(3, np.float32)], "tir.SizeVar": [ShapeVar("n")]}
    )
    check("meta[tir.SizeVar][0]\n#[metadata]\n" + meta, 1, 1, "is not a constant")
    check("fn (%x: Tensor[(meta[relay.Constant][0]), float32]) { %x }\n#[metadata]\n" + meta,
          1, 17, "is not a shape variable")  # fmt: skip


def test_malformed_metadata_points_at_the_section() -> None:
    check("def @f() { 1 }\n#[metadata]\n{not json", 2, 1, "malformed metadata", module=True)


def test_parse_file_missing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ParseError, match="cannot read"):
        parse_file(tmp_path / "missing.relay")


# ---------------------------------------------------------------------- keywords are whole words


@pytest.mark.parametrize(
    ("text", "line", "column", "fragment"),
    [
        ("typeOption[]", 1, 1, "found `typeOption`"),
        ("type Foo { A }\ntypeBar { B }", 2, 1, "found `typeBar`"),
        ("type Foo { A }\ntypeOption { B }", 2, 1, "found `typeOption`"),
        ("externtype Foo", 1, 1, "found `externtype`"),
        ("extern typeOption", 1, 8, "expected `type`, found `typeOption`"),
        ("defmain() { 1 }", 1, 1, "found `defmain`"),
        ("def @f() { 1 }\ndefmap() { 2 }", 2, 1, "found `defmap`"),
        ("def @main() { if (True) { 1 } elsex { 2 } }", 1, 31, "expected `else`, found `elsex`"),
        ("def @main() { letx = 1; 2 }", 1, 20, "found `=`"),
        ("def @main() { fnx }", 1, 15, "unknown operator or constructor `fnx`"),
        ("def @main() { free_varx; 1 }", 1, 15, "unknown operator or constructor `free_varx`"),
        ("def @main() { refx(1) }", 1, 15, "unknown operator or constructor `refx`"),
        ("def @main() { matchx (1) { _ => 1 } }", 1, 15, "unknown operator or constructor"),
    ],
)
def test_a_keyword_glued_to_a_name_is_one_name(text: str, line: int, column: int, fragment: str):
    error = check(text, line, column, fragment, module=True)
    assert "internal" not in error.message
    assert "^" in str(error)


def test_a_keyword_needs_no_space_before_a_sigil_or_bracket() -> None:
    mod = parse(
        "def@main() { let%x = 1; free_var%y: int32; if(True) { %x } else{ %y } }\n"
        "extern type/**/Storage\n"
        "def @g() { match(1) { _ => 2 } }",
        on_warning=lambda _: None,
    )
    assert {gv.name_hint for gv in mod.functions} == {"main", "g"}


def test_a_glued_keyword_declares_nothing_for_the_prelude_to_lose() -> None:
    # `typeOption` is a name, not a declaration of `Option`: the prelude's stays in use.
    check("def @f() { Some(1) }\ntypeOption[A] { Some(A) }", 2, 1, "typeOption", module=True)


def test_meta_references_are_one_token_for_the_declaration_scan() -> None:
    meta = write_metadata(
        {'relay."Constant': [np.ones(1, np.float32)], "tir.Size(Var": [ShapeVar("n")]}
    )
    # A `"` inside a meta reference starts no string: the declarations after it count.
    quoted = parse(
        'def @main() { meta[relay."Constant][0] }\n'
        "type Option[A] { Mine(A) }\n"
        'def @f() -> Option[int32] { Mine(1) }  // a lone quote: "\n'
        "#[metadata]\n" + meta,
        on_warning=lambda _: None,
    )
    assert {t.name_hint for t in quoted.type_definitions} == {"Option"}
    # Brackets inside a meta reference in a constructor's fields are not the field list's.
    bracketed = parse(
        "type Option[A] { Foo(Tensor[(meta[tir.Size(Var][0]), float32]), Some(A) }\n"
        "def @f() -> Option[int32] { Some(1) }\n"
        "#[metadata]\n" + meta,
        on_warning=lambda _: None,
    )
    option = bracketed.get_type("Option")
    assert [c.name_hint for c in option.constructors] == ["Foo", "Some"]


_GAPS = ["", " ", "\n", "\t", "/**/", "//\n", '"', "meta[x][0]", "(", "{"]
_ITEMS = [
    "type{0}Option{1}[A]{2}{{{3}Some(A){4}}}",
    "type{0}Mine{1}{{{2}Cons{3}({4}int32), Nil }}",
    "extern{0}type{1}Option{2}",
    "def{0}@map{1}(){2}{{{3}Some(1){4}}}",
    "def{0}@main(){1}{{{2}%x{3}}}",
]


@settings(max_examples=200)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_ITEMS), st.lists(st.sampled_from(_GAPS), min_size=5, max_size=5)
        ),
        max_size=4,
    )
)
def test_scan_and_parser_agree_on_declarations(items: list[tuple[str, list[str]]]) -> None:
    """Whatever the text, a declaration the parser reads was seen by the scan (a miss is an
    internal parser error): items of prelude names, glued or spaced in many ways."""
    text = "\n".join(item.format(*gaps) for item, gaps in items)
    try:
        parse(text, on_warning=lambda _: None)
    except ParseError as error:
        assert "internal parser error" not in str(error), text


def test_the_pre_pass_reads_meta_references_like_the_lexer() -> None:
    from pathlib import Path

    import relay.grammar
    from relay.grammar.prepass import META_REFERENCE

    grammar = (Path(relay.grammar.__file__).parent / "relay.lark").read_text()
    line = next(t for t in grammar.splitlines() if t.startswith("META"))
    assert line.split(": ", 1)[1] == f"/{META_REFERENCE.pattern}/"
