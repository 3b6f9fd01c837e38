"""The parser builds the right IR for every construct of the text format."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from relay.grammar import parse, parse_expr, parse_file
from relay.lang.adt import Constructor
from relay.lang.attrs import FuncAttrs
from relay.lang.diagnostics import Diagnostic, ParseError, RelayWarning
from relay.lang.expr import (
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from relay.lang.metadata import write_metadata
from relay.lang.module import IRModule
from relay.lang.op import Op, get_op
from relay.lang.types import (
    ANY,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    TensorType,
    TupleType,
    TypeCall,
    TypeVar,
)

PRELUDE_STYLE = """\
#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}

def @map[A, B](%f: fn(A) -> B, %xs: List[A]) -> List[B] {
  match (%xs) {
    Cons(%x, %rest) => Cons(%f(%x), @map(%f, %rest)),
    Nil => Nil,
  }
}
"""


def op(name: str) -> Op:
    return get_op(name)


def is_call_of(node: object, name: str) -> bool:
    return isinstance(node, Call) and node.op is op(name)


# ---------------------------------------------------------------------- modules and items


def test_prelude_style_module() -> None:
    mod = parse(PRELUDE_STYLE)
    assert isinstance(mod, IRModule)
    data = mod.get_type("List")
    assert [c.name_hint for c in data.constructors] == ["Cons", "Nil"]
    assert [c.tag for c in data.constructors] == [0, 1]
    (a,) = data.type_vars
    cons, nil = data.constructors
    assert cons.inputs[0] is a
    assert cons.inputs[1] == TypeCall(data.header, (a,))
    assert cons.belong_to is data.header and nil.inputs == ()

    fn = mod["map"]
    ta, tb = fn.type_params
    f, xs = fn.params
    assert f.type_annotation == FuncType((ta,), tb)
    assert xs.type_annotation == TypeCall(data.header, (ta,))
    assert fn.ret_type == TypeCall(data.header, (tb,))
    match = fn.body
    assert isinstance(match, Match) and match.complete and match.data is xs
    first, second = match.clauses
    assert isinstance(first.lhs, PatternConstructor) and first.lhs.constructor is cons
    x_pat, rest_pat = first.lhs.patterns
    assert isinstance(x_pat, PatternVar) and isinstance(rest_pat, PatternVar)
    body = first.rhs
    assert isinstance(body, Call) and body.op is cons
    inner, recursive = body.args
    assert isinstance(inner, Call) and inner.op is f and inner.args == (x_pat.var,)
    assert isinstance(recursive, Call) and recursive.op is mod.get_global_var("map")
    assert recursive.args == (f, rest_pat.var)
    # A bare nullary constructor means a call of it.
    assert second.lhs == PatternConstructor(nil, ())
    assert isinstance(second.rhs, Call) and second.rhs.op is nil and second.rhs.args == ()


def test_global_var_is_interned_and_may_be_used_before_definition() -> None:
    mod = parse("def @f() { @g() }\ndef @g() { @f() }")
    f, g = mod.get_global_var("f"), mod.get_global_var("g")
    assert mod["f"].body.op is g
    assert mod["g"].body.op is f
    assert list(mod.functions) == [f, g]


def test_adt_may_be_used_before_its_definition() -> None:
    mod = parse("def @f(%x: Box[int32]) { %x }\ntype Box[A] { MkBox(A) }")
    box = mod.get_global_type_var("Box")
    assert mod["f"].params[0].type_annotation == TypeCall(box, (TensorType((), "int32"),))


def test_header_is_optional_with_a_warning() -> None:
    with pytest.warns(RelayWarning, match="missing version header"):
        assert len(parse("def @main() { 1 }")) == 1
    with pytest.warns(RelayWarning):
        assert len(parse("")) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(parse('#[version = "0.0.5"]\ndef @main() { 1 }')) == 1
        # Comments (nested ones too) may come first; expressions need no header.
        assert len(parse('/* a /* b */ */ // c\n#[version = "0.0.5"] def @main() { 1 }')) == 1
        assert parse_expr("1").data == 1


def test_missing_header_warning_says_how_to_fix_it() -> None:
    seen: list[Diagnostic] = []
    parse("\ndef @main() { 1 }", "model.relay", on_warning=seen.append)
    (warning,) = seen
    assert warning.level == "warning"
    assert str(warning.span) == "model.relay:1:1"
    assert warning.render().startswith("model.relay:1:1: warning: missing version header")
    assert any('#[version = "0.0.5"]' in note for note in warning.notes)
    with pytest.warns(RelayWarning) as record:
        parse("def @main() { 1 }", "m.relay")
    assert record[0].message.diagnostic.span.source_name == "m.relay"


def test_strict_rejects_a_missing_header(tmp_path) -> None:
    with pytest.raises(ParseError) as info:
        parse("def @main() { 1 }", strict=True)
    assert (info.value.span.line, info.value.span.column) == (1, 1)
    assert "missing version header" in info.value.message
    assert 'add the line #[version = "0.0.5"]' in str(info.value)
    path = tmp_path / "m.relay"
    path.write_text("def @main() { 1 }\n")
    with pytest.raises(ParseError, match=r"m\.relay:1:1: error: missing version header"):
        parse_file(path, strict=True)
    with pytest.warns(RelayWarning, match=r"m\.relay:1:1"):
        parse_file(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(parse('#[version = "0.0.5"]\ndef @main() { 1 }', strict=True)) == 1


def test_extern_type_anywhere_and_nullary_constructors_with_parentheses() -> None:
    mod = parse(
        "extern type Storage[A]\n"
        "type Nat { Z(), S(Nat) }\n"
        "extern type Handle\n"
        "def @f(%s: Storage[], %h: Handle) -> Nat { S(Z()) }"
    )
    assert mod.get_type("Storage").constructors == ()
    assert len(mod.get_type("Storage").type_vars) == 1
    assert mod.get_type("Handle").type_vars == ()
    s, h = mod["f"].params
    assert s.type_annotation == TypeCall(mod.get_global_type_var("Storage"), ())
    assert h.type_annotation == TypeCall(mod.get_global_type_var("Handle"), ())
    body = mod["f"].body
    z, succ = mod.get_type("Nat").constructors
    assert body.op is succ and body.args[0].op is z and body.args[0].args == ()


def test_constructor_with_fields_used_bare_is_the_constructor() -> None:
    mod = parse(
        "type List[A] { Cons(A, List[A]), Nil }\n"
        "def @f(%g: fn (int32, List[int32]) -> List[int32]) { %g }\n"
        "def @main() { @f(Cons) }"
    )
    arg = mod["main"].body.args[0]
    assert isinstance(arg, Constructor) and arg.name_hint == "Cons"


def test_function_attributes_and_param_braces() -> None:
    fn = parse_expr(
        "fn (%p0: Tensor[(1, 8), float32], %p1 {virtual_device=meta[VirtualDevice][0]}, "
        'Primitive=1, relay.reshape_only=1, Compiler="ccompiler", Inline=True) '
        "{ reshape(%p0, newshape=[8]) }"
    )
    assert isinstance(fn, Function)
    assert [p.name_hint for p in fn.params] == ["p0", "p1"]
    assert fn.attrs == FuncAttrs(
        {"Primitive": 1, "relay.reshape_only": 1, "Compiler": "ccompiler", "Inline": True}
    )
    assert fn.is_primitive
    assert fn.body.attrs.newshape == (8,)


def test_def_with_only_attributes() -> None:
    fn = parse('def @f(global_symbol="f") { 0 }')["f"]
    assert fn.params == () and fn.attrs.get("global_symbol") == "f"


# ---------------------------------------------------------------------- bindings and scope


def test_graph_bindings_share_nodes() -> None:
    e = parse_expr("free_var %x: float32; %0 = add(%x, %x); %1 = multiply(%0, %0); (%1, %0)")
    assert isinstance(e, Tuple)
    mul, add = e.fields
    assert is_call_of(mul, "multiply") and is_call_of(add, "add")
    assert mul.args[0] is add and mul.args[1] is add
    x = add.args[0]
    assert isinstance(x, Var) and x.name_hint == "x" and add.args[1] is x
    assert x.type_annotation == TensorType((), "float32")


def test_graph_numbers_are_global_to_the_parse() -> None:
    mod = parse(
        "def @f() { %0 = fn () { %1 = add(1, 2); %1 }; %0 }\n"
        "def @g() { %2 = multiply(3, 4); %2 }\n"
        "def @h() { %2 }"
    )
    assert mod["h"].body is mod["g"].body
    assert is_call_of(mod["h"].body, "multiply")


def test_printer_style_projection_and_graph_number_gaps() -> None:
    e = parse_expr("%5 = (1, 2); %9 = %5.0; %9")
    assert isinstance(e, TupleGetItem) and e.index == 0 and isinstance(e.tuple_value, Tuple)


def test_let_and_sequence() -> None:
    e = parse_expr("let %x: int32 = 1; let %y = add(%x, %x); %y; %x")
    assert isinstance(e, Let) and e.var.name_hint == "x"
    assert e.var.type_annotation == TensorType((), "int32")
    inner = e.body
    assert isinstance(inner, Let) and inner.var.type_annotation is None
    assert inner.value.args == (e.var, e.var)
    seq = inner.body
    assert isinstance(seq, Let) and seq.var.name_hint == "" and seq.value is inner.var
    assert seq.body is e.var


def test_let_variable_is_in_scope_in_its_own_value() -> None:
    e = parse_expr(
        "let %f = fn (%n: int32) -> int32 { if (%n == 0) { 1 } else { %n * %f(%n - 1) } }; %f(5)"
    )
    assert isinstance(e, Let)
    fn = e.value
    recursive = fn.body.false_branch.args[1]
    assert recursive.op is e.var
    assert e.body.op is e.var


def test_shadowing_and_block_scopes() -> None:
    e = parse_expr("let %x = 1; let %y = { let %x = 2; %x }; let %x = 3; (%x, %y)")
    outer = e
    block_let = outer.body.value
    third = outer.body.body
    assert isinstance(block_let, Let) and block_let.body is block_let.var
    assert block_let.var is not outer.var
    assert third.body.fields[0] is third.var
    assert third.body.fields[1] is outer.body.var


def test_block_statement_is_a_sequence_item() -> None:
    e = parse_expr("free_var %x; { %x }; %x")
    assert isinstance(e, Let) and e.var.name_hint == "" and isinstance(e.value, Var)


def test_free_var_declarations() -> None:
    e = parse_expr("free_var %a: Tensor[(4), float32]; free_var %b; add(%a, %b)")
    a, b = e.args
    assert a.type_annotation == TensorType((4,), "float32") and b.type_annotation is None


def test_pattern_variables_are_scoped_to_their_arm() -> None:
    mod = parse(
        "type T { A(int32), B(int32) }\n"
        "def @f(%t: T, %x: int32) { match (%t) { A(%x) => %x, B(_) => %x } }"
    )
    fn = mod["f"]
    first, second = fn.body.clauses
    assert first.rhs is first.lhs.patterns[0].var
    assert first.rhs is not fn.params[1]
    assert second.rhs is fn.params[1]
    assert second.lhs.patterns == (PatternWildcard(),)


def test_match_forms() -> None:
    mod = parse(
        "type List[A] { Cons(A, List[A]), Nil }\n"
        "def @f(%l: List[int32], %r: List[int32]) {\n"
        "  let %m = match? %l { Cons(%h, _) => %h };\n"
        "  %0 = match (%l, %r) {\n"
        "    (Cons(%h: int32, %t), Nil()) => { let %n = %h; Cons(%n, %t) },\n"
        "    (%a, %b) => %a,\n"
        "  };\n"
        "  %0\n"
        "}"
    )
    body = mod["f"].body
    partial = body.value
    assert isinstance(partial, Match) and not partial.complete
    full = body.body
    assert isinstance(full, Match) and full.complete and isinstance(full.data, Tuple)
    pattern = full.clauses[0].lhs
    assert isinstance(pattern, PatternTuple)
    h = pattern.patterns[0].patterns[0].var
    assert h.type_annotation == TensorType((), "int32")
    assert pattern.patterns[1] == PatternConstructor(mod.get_constructor("Nil"), ())
    assert full.clauses[0].rhs.value is h


def test_one_element_tuple_pattern() -> None:
    e = parse_expr("match ((1,)) { (%a) => %a }")
    pattern = e.clauses[0].lhs
    assert isinstance(pattern, PatternTuple) and len(pattern.patterns) == 1


def test_params_are_scoped_to_the_function() -> None:
    e = parse_expr("free_var %x; (fn (%x) { %x }, %x)")
    fn, outer = e.fields
    assert fn.body is fn.params[0] and outer is not fn.params[0]


# ---------------------------------------------------------------------- calls and operators


def test_curried_calls_and_callees() -> None:
    e = parse_expr("free_var %f; %f(0)(1)")
    assert isinstance(e, Call) and isinstance(e.op, Call) and e.op.op.name_hint == "f"
    e = parse_expr("(fn (%x) { %x })(1)")
    assert isinstance(e.op, Function)
    e = parse_expr("fn (%x) { %x }(1)")
    assert isinstance(e.op, Function)


def test_operator_call_with_keyword_attributes() -> None:
    e = parse_expr(
        "free_var %x; free_var %w; "
        "nn.conv2d(%x, %w, strides=[2, 2], padding=[3, 3, 3, 3], channels=64, kernel_size=[7, 7])"
    )
    assert e.op is op("nn.conv2d")
    assert e.attrs.strides == (2, 2) and e.attrs.padding == (3, 3, 3, 3)
    assert e.attrs.channels == 64 and e.attrs.kernel_size == (7, 7)
    assert e.attrs.dilation == (1, 1) and e.attrs.data_layout == "NCHW"


def test_operator_call_without_keywords_gets_default_attrs() -> None:
    e = parse_expr("free_var %x; nn.softmax(%x)")
    assert e.attrs is not None and e.attrs.axis == -1
    assert parse_expr("add(1, 2)").attrs is None


def test_attribute_value_forms() -> None:
    e = parse_expr('free_var %x; nn.pad(%x, %x, pad_width=[[0, 0], [1, 1]], pad_mode="edge")')
    assert e.attrs.pad_width == ((0, 0), (1, 1))
    assert e.attrs.pad_mode == "edge"
    e = parse_expr("free_var %x; nn.leaky_relu(%x, alpha=(0.5f))")
    assert e.attrs.alpha == 0.5
    e = parse_expr("free_var %x; nn.conv2d(%x, %x, channels=None)")
    assert e.attrs.channels is None
    e = parse_expr("free_var %x; nn.conv2d(%x, %x, kernel_size=nullptr)")
    assert e.attrs.kernel_size is None
    e = parse_expr("free_var %x; nn.batch_norm(%x, %x, %x, %x, %x, epsilon=1e-05f, scale=False)")
    assert e.attrs.epsilon == pytest.approx(1e-05) and e.attrs.scale is False
    e = parse_expr("free_var %x; clip(%x, a_min=-inff, a_max=6f)")
    assert e.attrs.a_min == -math.inf and e.attrs.a_max == 6.0
    e = parse_expr('free_var %x; cast(%x, dtype="int64")')
    assert e.attrs.dtype == "int64"


def test_string_escapes_are_processed() -> None:
    fn = parse_expr(r'fn (Composite="a\"b\\c\nd\te\q") { 0 }')
    assert fn.attrs.get("Composite") == 'a"b\\c\nd\te\\q'


def test_infix_operators_precedence_and_associativity() -> None:
    e = parse_expr("1 * 1 + 1 < 1 == 1")
    assert is_call_of(e, "equal")
    less = e.args[0]
    assert is_call_of(less, "less") and is_call_of(less.args[0], "add")
    assert is_call_of(less.args[0].args[0], "multiply")
    e = parse_expr("1 == 1 < 1 + 1 * 1")
    assert is_call_of(e, "equal") and is_call_of(e.args[1], "less")
    assert is_call_of(e.args[1].args[1], "add") and is_call_of(
        e.args[1].args[1].args[1], "multiply"
    )
    e = parse_expr("8 - 4 - 2")
    assert is_call_of(e, "subtract") and is_call_of(e.args[0], "subtract")
    assert e.args[1].data == 2
    e = parse_expr("8 / 4 * 2 != 1 >= 0 <= 3 > 2")
    assert is_call_of(e, "not_equal")
    chain = e.args[1]
    assert is_call_of(chain, "greater") and is_call_of(chain.args[0], "less_equal")
    assert is_call_of(chain.args[0].args[0], "greater_equal")
    assert is_call_of(e.args[0], "multiply") and is_call_of(e.args[0].args[0], "divide")


def test_calls_bind_tighter_than_infix() -> None:
    e = parse_expr("free_var %id; 10 * %id(10)")
    assert is_call_of(e, "multiply") and isinstance(e.args[1], Call)


def test_minus_and_negative_literals() -> None:
    for text in ("free_var %a; %a - 1", "free_var %a; %a -1", "free_var %a; %a-1"):
        e = parse_expr(text)
        assert is_call_of(e, "subtract"), text
        assert e.args[1].data == 1
    e = parse_expr("1-2")
    assert is_call_of(e, "subtract") and e.args[0].data == 1 and e.args[1].data == 2
    e = parse_expr("(-1, -2.5f)")
    assert e.fields[0].data == -1 and e.fields[1].data == np.float32(-2.5)
    e = parse_expr("add(-1, 2)")
    assert e.args[0].data == -1


def test_statement_starting_with_graph_var_comparison() -> None:
    e = parse_expr("%0 = 1; %0 == 1")
    assert is_call_of(e, "equal")


# ---------------------------------------------------------------------- atoms


def test_tuples_and_projections() -> None:
    unit = parse_expr("()")
    assert isinstance(unit, Tuple) and len(unit.fields) == 0
    assert len(parse_expr("(1,)").fields) == 1
    assert len(parse_expr("(1, 2)").fields) == 2
    assert len(parse_expr("(1, 2,)").fields) == 2
    paren = parse_expr("(1)")
    assert isinstance(paren, Constant)
    e = parse_expr("free_var %t; %t.0.1")
    assert isinstance(e, TupleGetItem) and e.index == 1
    assert isinstance(e.tuple_value, TupleGetItem) and e.tuple_value.index == 0
    e = parse_expr("(fn () { (1, 2) })().1")
    assert isinstance(e, TupleGetItem) and isinstance(e.tuple_value, Call)


def test_if_and_references() -> None:
    e = parse_expr("if (True) { 1 } else { 2 }")
    assert isinstance(e, If) and e.cond.data == np.True_
    e = parse_expr("let %r = ref(1); ref_write(%r, 2); ref_read(%r)")
    assert isinstance(e.value, RefCreate)
    assert isinstance(e.body.value, RefWrite) and e.body.value.ref is e.var
    assert isinstance(e.body.body, RefRead)


def test_fn_with_type_parameters() -> None:
    fn = parse_expr("fn [A, B](%x: A, %y: B) -> (A, B) { (%x, %y) }")
    a, b = fn.type_params
    assert fn.params[0].type_annotation is a and fn.ret_type == TupleType((a, b))


def test_unknown_names_resolve_to_operators() -> None:
    e = parse_expr("add")
    assert e is op("add")
    e = parse_expr("free_var %x; nn.relu(%x)")
    assert e.op is op("nn.relu") and e.attrs is None


# ---------------------------------------------------------------------- literals

LITERALS = [
    ("5", 5, "int32"),
    ("-05", -5, "int32"),
    ("2147483647", 2**31 - 1, "int32"),
    ("2147483648", 2**31, "int64"),
    ("9223372036854775807", 2**63 - 1, "int64"),
    ("5i", 5, "int32"),
    ("5i32", 5, "int32"),
    ("7i16", 7, "int16"),
    ("-32768i16", -32768, "int16"),
    ("3i64", 3, "int64"),
    ("1f", 1.0, "float32"),
    ("1.5f", 1.5, "float32"),
    ("1e-5f", 1e-5, "float32"),
    ("1.0E+1f", 10.0, "float32"),
    ("3f16", 3.0, "float16"),
    ("3f32", 3.0, "float32"),
    ("3.25f64", 3.25, "float64"),
    ("1.5", 1.5, "float32"),
    ("1e3", 1000.0, "float32"),
    ("65504f16", 65504.0, "float16"),
    # A run of minus signs folds into the literal (TVM's lexer): even is positive.
    ("--10", 10, "int32"),
    ("---10", -10, "int32"),
    ("----7i16", 7, "int16"),
    ("---2147483648", -(2**31), "int32"),
    ("--2147483648", 2**31, "int64"),
    ("--1.5f", 1.5, "float32"),
    ("---1.5f", -1.5, "float32"),
    ("---2.5e-1f64", -0.25, "float64"),
    ("True", True, "bool"),
    ("False", False, "bool"),
]


@pytest.mark.parametrize(("text", "value", "dtype"), LITERALS)
def test_literals(text: str, value: object, dtype: str) -> None:
    e = parse_expr(text)
    assert isinstance(e, Constant) and e.data.ndim == 0
    assert e.dtype == dtype
    assert e.data == np.array(value, dtype=e.data.dtype)


def test_runs_of_minus_signs_in_special_floats_attributes_and_dimensions() -> None:
    assert parse_expr("--inff").data == np.inf
    assert parse_expr("---inff").data == -np.inf
    e = parse_expr("free_var %x: Tensor[(--3,), float32]; nn.leaky_relu(%x, alpha=---0.5f)")
    assert e.attrs.alpha == -0.5
    assert e.args[0].type_annotation == TensorType((3,), "float32")
    e = parse_expr("free_var %x; nn.softmax(%x, axis=--1)")
    assert e.attrs.axis == 1
    e = parse_expr("add(1, --2)")
    assert e.args[1].data == 2 and e.args[1].dtype == "int32"
    e = parse_expr("free_var %a; %a - ---1")
    assert is_call_of(e, "subtract") and e.args[1].data == -1


def test_special_floats() -> None:
    inf = parse_expr("inff")
    assert inf.dtype == "float32" and inf.data == np.inf
    neg = parse_expr("-inff")
    assert neg.data == -np.inf
    nan = parse_expr("nanf")
    assert nan.dtype == "float32" and np.isnan(nan.data)
    assert parse_expr("nanf16").dtype == "float16"
    assert parse_expr("nanf64").dtype == "float64"
    assert parse_expr("inff64").dtype == "float64"


# ---------------------------------------------------------------------- types


def test_types() -> None:
    fn = parse_expr(
        "fn (%a: Tensor[(1, 3, 224, 224), float32], %b: Tensor[(?, 1), int8], "
        "%c: Tensor[(10), float16], %d: Tensor[(10,), float16], %e: Tensor[(), bool], "
        "%f: float, %g: int, %h: (int32), %i: (int32,), %j: (), "
        "%k: fn (int32, int32) -> int32, %l: fn () -> int32, %m: fn [A](A) -> A, "
        "%n: ref(float32), %o: _, %p: uint8, %q: Tensor[(2, 3i64), float32]) { 0 }"
    )
    t = {p.name_hint: p.type_annotation for p in fn.params}
    assert t["a"] == TensorType((1, 3, 224, 224), "float32")
    assert t["b"] == TensorType((ANY, 1), "int8")
    assert t["c"] == TensorType((10,), "float16") == t["d"]
    assert t["e"] == TensorType((), "bool")
    assert t["f"] == TensorType((), "float32") and t["g"] == TensorType((), "int32")
    assert t["h"] == TupleType((TensorType((), "int32"),)) == t["i"]
    assert t["j"] == TupleType(())
    assert t["k"] == FuncType((TensorType((), "int32"),) * 2, TensorType((), "int32"))
    assert t["l"] == FuncType((), TensorType((), "int32"))
    generic = t["m"]
    assert isinstance(generic, FuncType) and len(generic.type_params) == 1
    assert generic.arg_types[0] is generic.type_params[0] is generic.ret_type
    assert t["n"] == RefType(TensorType((), "float32"))
    assert isinstance(t["o"], IncompleteType)
    assert t["p"] == TensorType((), "uint8")
    assert t["q"] == TensorType((2, 3), "float32")


def test_type_variables_come_from_enclosing_lists() -> None:
    mod = parse(
        "type Pair[A, B] { MkPair(A, B) }\n"
        "def @swap[A, B](%p: Pair[A, B]) -> Pair[B, A] {\n"
        "  match (%p) { MkPair(%a, %b) => MkPair(%b, %a) }\n"
        "}"
    )
    pair = mod.get_type("Pair")
    mk = pair.constructors[0]
    assert mk.inputs == pair.type_vars
    fn = mod["swap"]
    a, b = fn.type_params
    assert a is not pair.type_vars[0]
    assert fn.ret_type == TypeCall(pair.header, (b, a))
    assert isinstance(fn.ret_type.func, GlobalTypeVar)
    assert isinstance(a, TypeVar)


# ---------------------------------------------------------------------- comments, spans, files


def test_comments_are_skipped_and_nest() -> None:
    e = parse_expr(
        "// a line comment\n"
        "/* outer /* inner */ still comment */ add(1 /* ty=int32 */, 2) // trailing\n"
    )
    assert is_call_of(e, "add")


def test_crlf_line_endings() -> None:
    mod = parse("def @f() {\r\n  1\r\n}\r\n")
    assert mod["f"].body.span.line == 2


def test_positions_do_not_index_the_whole_metadata_section() -> None:
    meta = write_metadata({"relay.Constant": [np.zeros(4096, np.float32)] * 3})
    text = '#[version = "0.0.5"]\ndef @main() {\n  meta[relay.Constant][2]\n}\n#[metadata]\n' + meta
    body = parse(text, "w.relay")["main"].body
    assert (body.span.line, body.span.column) == (3, 3)
    source = body.span.source
    assert source._line_starts == []  # line starts are computed only when needed
    offsets = [0, 5, text.index("#[metadata]"), text.index("b64ndarrays"), len(text) - 1]
    lazy = [source.position(o) for o in offsets]
    assert source._line_starts == []
    naive = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    assert source.line_starts() == naive
    assert [source.position(o) for o in offsets] == lazy
    assert lazy[2] == (5, 1) and source.line_text(5) == "#[metadata]"


def test_spans_point_at_the_source() -> None:
    text = "def @main(%x: float32) {\n  %0 = add(%x, %x);\n  let %y = multiply(%0, 2f);\n  %y\n}\n"
    mod = parse(text, "model.relay")
    fn = mod["main"]
    assert (fn.span.line, fn.span.column, fn.span.end_line, fn.span.end_column) == (1, 1, 5, 2)
    assert fn.span.source_name == "model.relay"
    x = fn.params[0]
    assert (x.span.line, x.span.column, x.span.end_column) == (1, 11, 13)
    let = fn.body
    assert (let.span.line, let.span.column) == (3, 3)
    assert (let.var.span.line, let.var.span.column) == (3, 7)
    mul = let.value
    assert (mul.span.line, mul.span.column, mul.span.end_column) == (3, 12, 28)
    add = mul.args[0]
    assert (add.span.line, add.span.column, add.span.end_column) == (2, 8, 19)
    two = mul.args[1]
    assert (two.span.line, two.span.column, two.span.end_column) == (3, 25, 27)
    assert str(add.span) == "model.relay:2:8"


def test_spans_of_infix_projection_and_constructors() -> None:
    mod = parse("type T { A, B(int32) }\ndef @f(%t: (int32, int32)) {\n  %t.0 + %t.1\n}")
    body = mod["f"].body
    assert (body.span.line, body.span.column, body.span.end_column) == (3, 3, 14)
    assert (body.args[1].span.column, body.args[1].span.end_column) == (10, 14)
    a, b = mod.get_type("T").constructors
    assert (a.span.line, a.span.column) == (1, 10)
    assert (b.span.column, b.span.end_column) == (13, 21)
    assert mod.get_type("T").span.line == 1


def test_parse_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "m.relay"
    path.write_text('#[version = "0.0.5"]\ndef @main() { 42 }\n')
    mod = parse_file(str(path))
    assert mod["main"].body.data == 42
    assert mod["main"].span.source_name == str(path)


def test_parse_expr_returns_expr_and_accepts_header() -> None:
    e = parse_expr('#[version = "0.0.5"]\n(1, 2)')
    assert isinstance(e, Tuple)
    g = parse_expr("@f")
    assert isinstance(g, GlobalVar) and g.name_hint == "f"


def test_commas_in_types_and_attributes_do_not_end_let_scopes() -> None:
    e = parse_expr(
        "let %x = fn (%a: Tensor[(1, 2), float32], %b: (int32, int32)) -> Tensor[(1), float32] "
        "{ nn.softmax(%a, axis=1) };\n"
        "let %y: Tensor[(2, 2), float32] = reshape(%x, newshape=[2, 2]);\n"
        "(%x, %y)"
    )
    assert e.body.body.fields[0] is e.var
    assert e.body.value.args[0] is e.var


def test_every_grammar_rule_has_an_action() -> None:
    """A rule without a callback would put a lark Tree into the IR."""
    from lark import Lark
    from relay.grammar.actions import Actions
    from relay.grammar.parser import _GRAMMAR

    grammar = Lark(_GRAMMAR.read_text(), parser="lalr", start=["module", "expression"])
    for rule in grammar.rules:
        name = str(rule.alias or rule.origin.name)
        if name.startswith("_"):
            continue  # lark's helpers for `item*` and `header?`, spliced into the parent
        passthrough = rule.options.expand1 and len(rule.expansion) == 1
        assert passthrough or hasattr(Actions, name), name


def test_a_let_whose_body_is_a_variable_spans_to_the_use():
    """The span of a binding ends where its body is written, even when the body is a
    reference whose node was bound earlier."""
    text = '#[version = "0.0.5"]\ndef @main(%x: int32) {\n  let %y: int32 = %x;\n  %y\n}\n'
    span = parse(text)["main"].body.span
    assert (span.line, span.column, span.end_line, span.end_column) == (3, 3, 4, 5)
