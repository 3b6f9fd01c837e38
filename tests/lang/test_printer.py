"""The text printer: golden output for each construct, names, graph form, round trips."""

import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from relay.grammar import parse, parse_expr
from relay.lang import (
    ANY,
    Call,
    Clause,
    Constant,
    Function,
    FuncType,
    GlobalTypeVar,
    GlobalVar,
    If,
    IncompleteType,
    IRModule,
    Let,
    Match,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefType,
    RefWrite,
    ShapeVar,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    TypeCall,
    TypeVar,
    Var,
    assert_structural_equal,
    const,
    get_op,
    let_chain,
    scalar_type,
)
from relay.lang.adt import Constructor, TypeData
from relay.lang.attrs import FuncAttrs
from relay.lang.metadata import read_metadata
from relay.lang.printer import (
    attr_value_text,
    format_float,
    print_expr,
    print_module,
    print_type,
    sanitize_name,
    scalar_literal,
)

ADD = get_op("add")
MUL = get_op("multiply")
F32x2 = TensorType((2,), "float32")


def golden(text):
    return textwrap.dedent(text).lstrip("\n")


def main_module(*params, body, **kwargs):
    return IRModule({GlobalVar("main"): Function(list(params), body, **kwargs)})


def round_trip(mod):
    """Print, parse back: structurally equal, and printing again gives the same text."""
    text = print_module(mod)
    back = parse(text)
    assert_structural_equal(back, mod, map_free_vars=True)
    assert print_module(back) == text
    return text


def round_trip_expr(expr):
    text = print_expr(expr)
    back = parse_expr(text)
    assert_structural_equal(back, expr, map_free_vars=True)
    assert print_expr(back) == text
    return text


def list_adt():
    a = TypeVar("A")
    lst = GlobalTypeVar("List")
    cons = Constructor("Cons", [a, TypeCall(lst, [a])], lst, 0)
    nil = Constructor("Nil", [], lst, 1)
    return TypeData(lst, [a], [cons, nil]), cons, nil


# ------------------------------------------------------------------------ module layout


def test_module_layout_and_graph_bindings():
    x = Var("x", F32x2)
    shared = Call(ADD, [x, x])
    body = Call(MUL, [shared, shared])
    mod = main_module(x, body=body, ret_type=F32x2)
    assert round_trip(mod) == golden("""
        #[version = "0.0.5"]
        def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
          %0 = add(%x, %x);
          multiply(%0, %0)
        }
    """)


def test_single_use_call_argument_is_still_bound():
    x = Var("x")
    body = Call(ADD, [Call(MUL, [x, x]), Call(ADD, [x, const(1.0)])])
    assert round_trip(main_module(x, body=body)) == golden("""
        #[version = "0.0.5"]
        def @main(%x) {
          %0 = multiply(%x, %x);
          %1 = add(%x, 1f);
          add(%0, %1)
        }
    """)


def test_types_then_functions_sorted_and_separated():
    data, cons, nil = list_adt()
    a = TypeVar("a")
    xs = Var("xs", TypeCall(data.header, [a]))
    h = Var("h")
    body = Match(
        xs,
        [
            Clause(PatternConstructor(cons, [PatternVar(h), PatternWildcard()]), h),
            Clause(PatternConstructor(nil), Call(nil, [])),
        ],
        complete=False,
    )
    tree = GlobalTypeVar("Tree")
    leaf = Constructor("Leaf", [], tree, 0)
    node = Constructor("Node", [TypeCall(tree), TypeCall(tree)], tree, 1)
    mod = IRModule(
        {
            GlobalVar("zeta"): Function([], Call(leaf, [])),
            GlobalVar("head"): Function([xs], body, type_params=[a]),
        },
        {data.header: data, tree: TypeData(tree, [], [leaf, node])},
    )
    assert round_trip(mod) == golden("""
        #[version = "0.0.5"]
        type List[A] {
          Cons(A, List[A]),
          Nil,
        }

        type Tree {
          Leaf,
          Node(Tree, Tree),
        }

        def @head[a](%xs: List[a]) {
          match? (%xs) {
            Cons(%h, _) => {
              %h
            },
            Nil => {
              Nil
            },
          }
        }

        def @zeta() {
          Leaf
        }
    """)


def test_global_calls_and_empty_module():
    f = GlobalVar("f")
    x = Var("x")
    mod = IRModule({f: Function([x], x), GlobalVar("main"): Function([], Call(f, [const(1)]))})
    assert round_trip(mod) == golden("""
        #[version = "0.0.5"]
        def @f(%x) {
          %x
        }

        def @main() {
          @f(1)
        }
    """)
    assert print_module(IRModule()) == '#[version = "0.0.5"]\n'


# ----------------------------------------------------------------------- let and scopes


def test_let_chain_with_annotations():
    x = Var("x", F32x2)
    y = Var("y", F32x2)
    z = Var("z")
    body = let_chain([(y, Call(ADD, [x, x])), (z, Call(MUL, [y, y]))], z)
    assert round_trip(main_module(x, body=body)) == golden("""
        #[version = "0.0.5"]
        def @main(%x: Tensor[(2), float32]) {
          let %y: Tensor[(2), float32] = add(%x, %x);
          let %z = multiply(%y, %y);
          %z
        }
    """)


def test_let_value_that_is_a_let_is_parenthesized():
    x, a, b = Var("x"), Var("a"), Var("b")
    inner = Let(b, Call(ADD, [x, x]), b)
    body = Let(a, inner, a)
    assert round_trip(main_module(x, body=body)) == golden("""
        #[version = "0.0.5"]
        def @main(%x) {
          let %a = (
            let %b = add(%x, %x);
            %b
          );
          %a
        }
    """)


def test_shared_let_is_bound_in_parentheses():
    x, v = Var("x"), Var("v")
    shared = Let(v, x, v)
    body = Tuple([shared, shared])
    assert round_trip(main_module(x, body=body)) == golden("""
        #[version = "0.0.5"]
        def @main(%x) {
          %0 = (
            let %v = %x;
            %v
          );
          (%0, %0)
        }
    """)


def test_match_as_let_value_is_bare_and_as_argument_is_bound():
    data, cons, _nil = list_adt()
    xs = Var("xs", TypeCall(data.header, [scalar_type("int32")]))
    h, t, r = Var("h"), Var("t"), Var("r")
    m = Match(
        xs,
        [
            Clause(PatternConstructor(cons, [PatternVar(h), PatternVar(t)]), h),
            Clause(PatternWildcard(), const(0)),
        ],
    )
    body = Let(r, m, Call(ADD, [r, m]))
    mod = IRModule({GlobalVar("main"): Function([xs], body)}, {data.header: data})
    assert round_trip(mod) == golden("""
        #[version = "0.0.5"]
        type List[A] {
          Cons(A, List[A]),
          Nil,
        }

        def @main(%xs: List[int32]) {
          %0 = match (%xs) {
            Cons(%h, %t) => {
              %h
            },
            _ => {
              0
            },
          };
          let %r = %0;
          add(%r, %0)
        }
    """)


def test_if_with_bound_condition_and_nested_scopes():
    x = Var("x", scalar_type("int32"))
    cond = Call(get_op("less"), [x, const(0)])
    then = Call(MUL, [Call(ADD, [x, x]), x])
    body = If(cond, then, x)
    assert round_trip(main_module(x, body=body)) == golden("""
        #[version = "0.0.5"]
        def @main(%x: int32) {
          %0 = less(%x, 0);
          if (%0) {
            %1 = add(%x, %x);
            multiply(%1, %x)
          } else {
            %x
          }
        }
    """)


def test_numbers_count_up_across_defs_inner_bindings_first():
    x, p = Var("x"), Var("p")
    inner = Function([p], Call(MUL, [Call(ADD, [p, p]), p]), attrs=FuncAttrs({"Primitive": 1}))
    f = Function([x], Call(inner, [Call(ADD, [x, x])]))
    g = Function([Var("y")], Call(ADD, [Call(ADD, [const(1), const(2)]), const(3)]))
    mod = IRModule({GlobalVar("a"): f, GlobalVar("b"): g})
    assert round_trip(mod) == golden("""
        #[version = "0.0.5"]
        def @a(%x) {
          %1 = fn (%p, Primitive=1) {
            %0 = add(%p, %p);
            multiply(%0, %p)
          };
          %2 = add(%x, %x);
          %1(%2)
        }

        def @b(%y) {
          %3 = add(1, 2);
          add(%3, 3)
        }
    """)


def test_shared_node_across_scopes_keeps_its_number():
    x, b = Var("x"), Var("b", scalar_type("bool"))
    shared = Call(ADD, [x, x])
    body = Tuple([If(b, Call(MUL, [shared, shared]), x), shared])
    assert round_trip(main_module(x, b, body=body)) == golden("""
        #[version = "0.0.5"]
        def @main(%x, %b: bool) {
          %1 = if (%b) {
            %0 = add(%x, %x);
            multiply(%0, %0)
          } else {
            %x
          };
          (%1, %0)
        }
    """)


def test_shared_node_across_defs():
    x = Var("x")
    shared = Call(ADD, [const(1), const(2)])
    mod = IRModule(
        {
            GlobalVar("f"): Function([], Call(MUL, [shared, shared])),
            GlobalVar("g"): Function([x], Call(ADD, [shared, x])),
        }
    )
    text = round_trip(mod)
    assert "%0 = add(1, 2);" in text and "add(%0, %x)" in text


# ---------------------------------------------------------------- functions and closures


def test_fn_with_type_params_ret_type_and_attrs():
    a = TypeVar("A")
    x = Var("x", a)
    ident = Function([x], x, ret_type=a, type_params=[a])
    f = Var("f")
    y = Var("y", scalar_type("float32"))
    attrs = FuncAttrs({"Primitive": 1, "Compiler": "ccompiler", "relay.reshape_only": True})
    g = Function([y], y, attrs=attrs)
    body = let_chain([(f, ident)], Call(f, [Call(g, [const(1.5)])]))
    assert round_trip(main_module(body=body)) == golden("""
        #[version = "0.0.5"]
        def @main() {
          let %f = fn [A](%x: A) -> A {
            %x
          };
          %0 = fn (%y: float32, Compiler="ccompiler", Primitive=1, relay.reshape_only=True) {
            %y
          };
          %1 = %0(1.5f);
          %f(%1)
        }
    """)


def test_recursive_closure_and_def_attrs():
    f, n = Var("f"), Var("n", scalar_type("int32"))
    loop = Function([n], Call(f, [n]))
    body = Let(f, loop, f)
    mod = IRModule(
        {GlobalVar("main"): Function([], body, attrs=FuncAttrs({"global_symbol": "main"}))}
    )
    assert round_trip(mod) == golden("""
        #[version = "0.0.5"]
        def @main(global_symbol="main") {
          let %f = fn (%n: int32) {
            %f(%n)
          };
          %f
        }
    """)


def test_free_variables_are_declared():
    x, y = Var("x", F32x2), Var("y")
    mod = main_module(x, body=Call(ADD, [x, Call(MUL, [y, y])]))
    assert round_trip(mod) == golden("""
        #[version = "0.0.5"]
        def @main(%x: Tensor[(2), float32]) {
          free_var %y;
          %0 = multiply(%y, %y);
          add(%x, %0)
        }
    """)


# ------------------------------------------------------------------ small constructs


def test_tuples_projections_and_references():
    x = Var("x")
    t = Tuple([x, Tuple([]), Tuple([x])])
    r = Var("r")
    body = let_chain(
        [(r, RefCreate(TupleGetItem(t, 2)))],
        Tuple([RefWrite(r, TupleGetItem(x, 0)), RefRead(r), TupleGetItem(TupleGetItem(x, 1), 0)]),
    )
    assert round_trip_expr(body) == golden("""
        free_var %x;
        %0 = ();
        %1 = (%x,);
        %2 = (%x, %0, %1);
        %3 = %2.2;
        let %r = ref(%3);
        %4 = %x.0;
        %5 = ref_write(%r, %4);
        %6 = ref_read(%r);
        %7 = %x.1;
        %8 = %7.0;
        (%5, %6, %8)
    """).rstrip("\n")


def test_expression_forms_round_trip():
    x, y, c = Var("x"), Var("y"), Var("c", scalar_type("bool"))
    assert round_trip_expr(Function([x], Call(ADD, [x, y]))) == golden("""
        free_var %y;
        fn (%x) {
          add(%x, %y)
        }
    """).rstrip("\n")
    assert round_trip_expr(If(c, x, y)) == golden("""
        free_var %c: bool;
        free_var %x;
        free_var %y;
        if (%c) {
          %x
        } else {
          %y
        }
    """).rstrip("\n")
    match = Match(y, [Clause(PatternVar(Var("z")), const(1))])
    assert round_trip_expr(Let(x, match, x)) == golden("""
        free_var %y;
        let %x = match (%y) {
          %z => {
            1
          },
        };
        %x
    """).rstrip("\n")
    # a sequence `e1; e2` is a let of a nameless variable
    assert round_trip_expr(Let(Var(""), Call(ADD, [y, y]), y)) == (
        "free_var %y;\nlet %v = add(%y, %y);\n%y"
    )
    assert round_trip_expr(const(1)) == "1"


def test_projection_of_a_non_name_is_parenthesized():
    assert print_expr(TupleGetItem(const(5), 0)) == "(5).0"
    assert print_expr(Call(const(5), [])) == "(5)()"


def test_constructor_calls_and_patterns():
    data, cons, nil = list_adt()
    x, h, a, _b = Var("x"), Var("h", scalar_type("int32")), Var("a"), Var("b")
    lst = Call(cons, [const(1), Call(nil, [])])
    pattern = PatternTuple(
        [
            PatternConstructor(cons, [PatternVar(h), PatternConstructor(nil)]),
            PatternTuple([PatternVar(a)]),
            PatternTuple([]),
            PatternWildcard(),
        ]
    )
    body = Match(Tuple([lst, Tuple([x]), Tuple([]), x]), [Clause(pattern, Tuple([h, a]))])
    mod = IRModule({GlobalVar("main"): Function([x], body)}, {data.header: data})
    text = round_trip(mod)
    assert text.endswith(
        golden("""
        def @main(%x) {
          %0 = Cons(1, Nil);
          %1 = (%x,);
          %2 = ();
          %3 = (%0, %1, %2, %x);
          match (%3) {
            (Cons(%h: int32, Nil), (%a,), (), _) => {
              (%h, %a)
            },
          }
        }
    """)
    )
    assert print_expr(Call(get_op("add"), [cons, cons])) == "add(Cons, Cons)"


# --------------------------------------------------------------------------- constants


@pytest.mark.parametrize(
    "value, dtype, text",
    [
        (5, "int32", "5"),
        (-2147483648, "int32", "-2147483648"),
        (5, "int64", "5i64"),
        (-9223372036854775808, "int64", "-9223372036854775808i64"),
        (5, "int16", "5i16"),
        (1.5, "float32", "1.5f"),
        (-2.0, "float32", "-2f"),
        (0.1, "float32", "0.1f"),
        (1e-5, "float32", "1e-05f"),
        (1.5, "float16", "1.5f16"),
        (0.1, "float64", "0.1f64"),
        (1e300, "float64", "1e+300f64"),
        (-0.0, "float32", "-0f"),
        (float("inf"), "float32", "inff"),
        (float("-inf"), "float16", "-inff16"),
        (float("nan"), "float64", "nanf64"),
        (True, "bool", "True"),
        (False, "bool", "False"),
    ],
)
def test_scalar_literals(value, dtype, text):
    constant = const(value, dtype)
    assert scalar_literal(constant) == text
    assert print_expr(constant) == text
    back = parse_expr(text)
    assert back.data.dtype == constant.data.dtype
    assert back.data.tobytes() == constant.data.tobytes()


def test_constants_without_literals_go_to_metadata():
    weights = const(np.arange(6, dtype=np.float32).reshape(2, 3))
    same_weights = const(np.arange(6, dtype=np.float32).reshape(2, 3))
    small = const(3, "int8")
    odd_nan = Constant(np.array([0x7FC00001], dtype=np.uint32).view(np.float32).reshape(()))
    x = Var("x")
    body = Tuple([Call(ADD, [x, weights]), Call(ADD, [x, same_weights]), small, odd_nan])
    text = round_trip(main_module(x, body=body))
    head, meta = text.split("#[metadata]\n")
    assert head == golden("""
        #[version = "0.0.5"]
        def @main(%x) {
          %0 = add(%x, meta[relay.Constant][0]);
          %1 = add(%x, meta[relay.Constant][0]);
          (%0, %1, meta[relay.Constant][1], meta[relay.Constant][2])
        }
    """)
    table = read_metadata(meta)
    assert list(table) == ["relay.Constant"]
    assert [a.dtype.name for a in table["relay.Constant"]] == ["float32", "int8", "float32"]
    assert table["relay.Constant"][2].tobytes() == odd_nan.data.tobytes()


def test_no_metadata_section_without_entries():
    assert "#[metadata]" not in print_module(main_module(body=const(1)))


@pytest.mark.parametrize(
    "dtype",
    ["float16", "float32", "float64"],
)
@given(data=st.data())
def test_float_text_reads_back_to_the_same_bits(dtype, data):
    width = {"float16": 16, "float32": 32, "float64": 64}[dtype]
    value = data.draw(st.floats(width=width, allow_nan=False))
    scalar = np.asarray(value, dtype=dtype)
    text = format_float(value, dtype)
    assert np.asarray(float(text), dtype=dtype).tobytes() == scalar.tobytes()
    constant = Constant(scalar)
    back = parse_expr(print_expr(constant))
    assert back.data.dtype == scalar.dtype and back.data.tobytes() == scalar.tobytes()


def test_float_text_is_short():
    assert format_float(0.1, "float32") == "0.1"
    assert format_float(np.float32(3.14159), "float32") == "3.14159"
    assert format_float(100.0, "float32") == "100"
    assert format_float(1e20, "float32") == "1e+20"
    assert format_float(2.5e-7, "float64") == "2.5e-07"
    # the shortest text of float32's max is above it as a double: write it exactly
    assert format_float(np.finfo(np.float32).max, "float32") == "3.4028234663852886e+38"


# ---------------------------------------------------------------------------- attributes


def test_operator_attributes_non_default_in_schema_order():
    x, w = Var("x"), Var("w")
    conv = get_op("nn.conv2d")
    call = Call(conv, [x, w], conv.make_attrs(channels=64, kernel_size=(3, 3), padding=(1, 1)))
    assert print_expr(call) == (
        "free_var %x;\nfree_var %w;\n"
        "nn.conv2d(%x, %w, padding=[1, 1], channels=64, kernel_size=[3, 3])"
    )
    dense = get_op("nn.dense")
    assert print_expr(Call(dense, [x, w], dense.make_attrs(units=None))).endswith(
        "nn.dense(%x, %w, units=None)"
    )
    clip = get_op("clip")
    text = print_expr(Call(clip, [x], clip.make_attrs(a_min=-float("inf"), a_max=6)))
    assert text.endswith("clip(%x, a_min=-inff, a_max=6f)")
    pad = get_op("nn.pad")
    text = print_expr(Call(pad, [x], pad.make_attrs(pad_width=((0, 0), (1, 2)), pad_mode="edge")))
    assert text.endswith('nn.pad(%x, pad_width=[[0, 0], [1, 2]], pad_mode="edge")')
    cast = get_op("cast")
    assert print_expr(Call(cast, [x], cast.make_attrs(dtype="int8"))).endswith(
        'cast(%x, dtype="int8")'
    )
    softmax = get_op("nn.softmax")
    assert print_expr(Call(softmax, [x], softmax.make_attrs())).endswith("nn.softmax(%x)")


def test_attribute_values():
    assert attr_value_text([1, [2, 3], []]) == "[1, [2, 3], []]"
    assert attr_value_text(0.25) == "0.25f"
    assert attr_value_text(1e-5) == "1e-05f"
    assert attr_value_text(float("nan")) == "nanf"
    assert attr_value_text(-float("inf")) == "-inff"
    assert attr_value_text(1e300) == "1e+300f64"  # beyond float32: `f` would not read back
    assert attr_value_text(True) == "True"
    assert attr_value_text(None) == "None"
    assert attr_value_text('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'
    assert attr_value_text(np.int64(3)) == "3"


def test_attributes_round_trip():
    x = Var("x", TensorType((1, 3, 8, 8), "float32"))
    w = Var("w", TensorType((4, 3, 3, 3), "float32"))
    conv = get_op("nn.conv2d")
    bn = get_op("nn.batch_norm")
    leaky = get_op("nn.leaky_relu")
    c = Call(conv, [x, w], conv.make_attrs(channels=4, kernel_size=(3, 3), padding=(1, 1, 1, 1)))
    g, b, m, v = (Var(n, TensorType((4,), "float32")) for n in "gbmv")
    norm = Call(bn, [c, g, b, m, v], bn.make_attrs(epsilon=1e-3, center=False))
    out = Call(leaky, [TupleGetItem(norm, 0)], leaky.make_attrs(alpha=0.1))
    text = round_trip(main_module(x, w, g, b, m, v, body=out))
    assert "epsilon=0.001f, center=False" in text and "alpha=0.1f" in text


# -------------------------------------------------------------------------------- types


def test_print_type():
    a = TypeVar("A")
    lst = GlobalTypeVar("List")
    n = ShapeVar("n")
    cases = [
        (TensorType((1, 3), "float32"), "Tensor[(1, 3), float32]"),
        (TensorType((10,), "float32"), "Tensor[(10), float32]"),
        (TensorType((), "float32"), "float32"),
        (TensorType((), "int8x4"), "int8x4"),
        (TensorType((), "bfloat16"), "Tensor[(), bfloat16]"),
        (TensorType((ANY, 2), "int64"), "Tensor[(?, 2), int64]"),
        (
            TensorType((n, n), "float16"),
            "Tensor[(meta[tir.SizeVar][0], meta[tir.SizeVar][0]), float16]",
        ),
        (TupleType([]), "()"),
        (TupleType([scalar_type("bool")]), "(bool,)"),
        (TupleType([scalar_type("bool"), a]), "(bool, A)"),
        (FuncType([a, a], scalar_type("int32")), "fn (A, A) -> int32"),
        (FuncType([], TupleType([])), "fn () -> ()"),
        (FuncType([a], a, [a]), "fn [A](A) -> A"),
        (TypeCall(lst, [a]), "List[A]"),
        (TypeCall(lst, []), "List"),
        (lst, "List"),
        (RefType(scalar_type("int32")), "ref(int32)"),
        (IncompleteType(), "_"),
    ]
    for t, text in cases:
        assert print_type(t) == text


def test_types_round_trip():
    data, _cons, _nil = list_adt()
    a = TypeVar("A")
    n = ShapeVar("n")
    types = [
        TensorType((n, 3), "float32"),
        TensorType((ANY,), "int64"),
        TupleType([scalar_type("bool"), TupleType([])]),
        TupleType([scalar_type("int16")]),
        FuncType([a], TypeCall(data.header, [a]), [a]),
        RefType(scalar_type("float64")),
        IncompleteType(),
        TypeCall(data.header, [TensorType((2, 2), "uint8")]),
    ]
    params = [Var(f"p{i}", t) for i, t in enumerate(types)]
    mod = IRModule(
        {GlobalVar("main"): Function(params, Tuple(params), ret_type=TupleType([]))},
        {data.header: data},
    )
    text = round_trip(mod)
    assert "%p0: Tensor[(meta[tir.SizeVar][0], 3), float32]" in text
    assert read_metadata(text.split("#[metadata]\n")[1])["tir.SizeVar"][0].name_hint == "n"


def test_type_annotations_as_comments():
    x = Var("x", F32x2)
    y = Var("y")
    one = const(1.0)
    s = Call(ADD, [x, one])
    body = Let(y, s, Call(MUL, [y, s]))
    f = Function([x], body)
    types = {x: F32x2, y: F32x2, one: scalar_type("float32"), s: F32x2, body.body: F32x2}
    text = print_module(IRModule({GlobalVar("main"): f}), types=types)
    assert text == golden("""
        #[version = "0.0.5"]
        def @main(%x: Tensor[(2), float32] /* ty=Tensor[(2), float32] */) {
          %0 = add(%x, 1f /* ty=float32 */) /* ty=Tensor[(2), float32] */;
          let %y /* ty=Tensor[(2), float32] */ = %0;
          multiply(%y, %0) /* ty=Tensor[(2), float32] */
        }
    """)
    back = parse(text)
    assert_structural_equal(back, IRModule({GlobalVar("main"): f}))


# -------------------------------------------------------------------------------- names


@pytest.mark.parametrize(
    "hint, name",
    [
        ("x", "x"),
        ("conv1.weight", "conv1_weight"),
        ("_x", "v_x"),
        ("", "v"),
        ("1", "v1"),
        ("a/b", "a/b"),  # TVM's lexer reads `/` inside names
        ("base/x/", "base/x/"),
        ("/x", "v/x"),
        ("a//b", "a_/b"),  # `//` would start a comment
        ("a/*b", "a/_b"),
        ("x-y:z", "x_y_z"),
        ("é", "v_"),
    ],
)
def test_sanitize_name(hint, name):
    assert sanitize_name(hint) == name


def test_names_with_slashes_print_as_written_and_parse_back():
    t = TensorType((2,), "float32")
    x, y, z = Var("base/x", t), Var("a//b", TupleType((t,))), Var("c/", t)
    fn = Function([x, y, z], Tuple([x, TupleGetItem(y, 0), z]))
    mod = IRModule({GlobalVar("main"): fn})
    text = print_module(mod)
    assert "def @main(%base/x: Tensor[(2), float32], %a_/b: (Tensor[(2), float32],), %c/:" in text
    again = parse(text)
    assert_structural_equal(again, mod)
    assert [p.name_hint for p in again["main"].params] == ["base/x", "a_/b", "c/"]
    assert print_module(again) == text
    source = '#[version = "0.0.5"]\ndef @main(%base/x: float32) {\n  %base/x\n}\n'
    assert print_module(parse(source)) == source


def test_names_are_unique_within_each_definition():
    xs = [Var("x"), Var("x"), Var("x1"), Var("x"), Var("")]
    body = Tuple(xs)
    inner = Var("x")
    mod = IRModule(
        {
            GlobalVar("main"): Function(xs, body),
            GlobalVar("other"): Function([inner], inner),
        }
    )
    text = round_trip(mod)
    assert "def @main(%x, %x1, %x11, %x2, %v) {" in text
    # each definition is its own naming scope: @other's parameter keeps its name
    assert "def @other(%x) {" in text


def test_graph_numbers_and_names_never_clash():
    v = Var("0")
    assert print_expr(Call(ADD, [Call(ADD, [v, v]), v])) == (
        "free_var %v0;\n%0 = add(%v0, %v0);\nadd(%0, %v0)"
    )


def test_type_variable_names():
    lst = GlobalTypeVar("List")
    tvs = [
        TypeVar("A"),
        TypeVar("A"),
        TypeVar("_"),
        TypeVar("int32"),
        TypeVar("Tensor"),
        TypeVar("List"),
        TypeVar("fn"),
    ]
    x = Var("x", TupleType(tvs))
    f = Function([x], x, type_params=tvs)
    data = TypeData(lst, [], [Constructor("Nil", [], lst, 0)])
    mod = IRModule({GlobalVar("main"): f}, {lst: data})
    text = round_trip(mod)
    assert "def @main[A, A1, t_, tint32, Tensor1, List1, fn1](" in text


def test_unchanged_module_prints_identically_twice():
    data, _cons, nil = list_adt()
    mod = IRModule({GlobalVar("main"): Function([], Call(nil, []))}, {data.header: data})
    assert print_module(mod) == print_module(mod)
    assert mod.astext() == print_module(mod)


# -------------------------------------------------------------------------- deep inputs


def test_deep_let_chain():
    limit = sys.getrecursionlimit()
    x = Var("x", F32x2)
    bindings = []
    prev = x
    for _ in range(100_000):
        v = Var("a")
        bindings.append((v, Call(ADD, [prev, prev])))
        prev = v
    mod = main_module(x, body=let_chain(bindings, prev))
    text = print_module(mod)
    lines = text.splitlines()
    assert len(lines) == 100_004
    assert lines[2] == "  let %a = add(%x, %x);"
    assert lines[-3] == "  let %a99999 = add(%a99998, %a99998);"
    assert sys.getrecursionlimit() == limit


def test_deep_nested_call():
    x = Var("x")
    e = x
    for _ in range(10_000):
        e = Call(ADD, [e, x])
    text = round_trip(main_module(x, body=e))
    assert text.splitlines()[-2] == "  add(%9998, %x)"


def test_deep_nested_scopes():
    x, b = Var("x"), Var("b", scalar_type("bool"))
    e = x
    for i in range(2_000):
        kind = i % 4
        if kind == 0:
            e = Function([Var("p")], e)
        elif kind == 1:
            e = If(b, e, x)
        elif kind == 2:
            v = Var("l")
            e = Let(v, e, v)
        else:
            v = Var("m")
            e = Let(v, Let(Var("n"), x, e), v)
    text = print_module(main_module(x, b, body=e))
    assert text.count("fn (") == 500 and text.count("if (%b)") == 500
    assert max(len(line) - len(line.lstrip()) for line in text.splitlines()) > 2_000
    back = parse(text)
    assert_structural_equal(back, main_module(x, b, body=e))


def test_deep_types_and_patterns():
    t = scalar_type("int32")
    for _ in range(5_000):
        t = TupleType([t])
    assert print_type(t).startswith("((((") and print_type(t).endswith(",),)")
    p = PatternWildcard()
    for _ in range(5_000):
        p = PatternTuple([p])
    x = Var("x")
    text = print_expr(Match(x, [Clause(p, x)]))
    assert "(((_,),)," in text
