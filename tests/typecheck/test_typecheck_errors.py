"""Type errors: every independent error reported once, at its own span, with both types."""

from __future__ import annotations

import pytest
from relay.grammar import parse
from relay.lang import (
    Call,
    Error,
    Function,
    GlobalVar,
    IRModule,
    Let,
    ShapeVar,
    TensorType,
    Tuple,
    TypeCheckError,
    TypeVar,
    Var,
    const,
    get_op,
)
from relay.typecheck import check_module, infer_expr, infer_module

HEADER = '#[version = "0.0.5"]\n'
LIST = "type List[A] { Cons(A, List[A]), Nil }\n"


def errors_of(src: str) -> list[tuple[int, int, str]]:
    """(line, column, message) of each error, lines counted in `src` (after the header)."""
    with pytest.raises(TypeCheckError) as info:
        check_module(parse(HEADER + src))
    return [(d.span.line - 1, d.span.column, d.message) for d in info.value.diagnostics]


def test_independent_errors_are_all_reported_each_at_its_span():
    src = """def @f(%x: Tensor[(3), float32]) -> Tensor[(3), float32] { %x }
def @main(%a: Tensor[(2, 3), float32], %b: Tensor[(4), float32], %c: int32) {
  %0 = add(%a, %b);
  %1 = @f(%c);
  %2 = if (%a) { 1f } else { 2 };
  %3 = (%0, %1, %2);
  %3.7
}
def @other(%y: float32) -> int32 { %y }
"""
    found = errors_of(src)
    # A variable is shown where it is used, not where it is bound.
    assert [(line, col) for line, col, _ in found] == [
        (3, 8),
        (4, 11),
        (5, 12),
        (5, 30),
        (7, 3),
        (9, 36),
    ]
    messages = [m for _, _, m in found]
    assert messages[0] == (
        "add: shapes (2, 3) and (4) do not broadcast: cannot broadcast dimension 3 with 4"
    )
    assert messages[1] == ("argument 1 of `@f`: expected `Tensor[(3), float32]`, found `int32`")
    assert messages[2] == "the condition of `if`: expected `bool`, found `Tensor[(2, 3), float32]`"
    assert "expected `float32`, found `int32`" in messages[3]
    assert messages[4].startswith("tuple index 7 is out of range")
    assert messages[5] == (
        "the body of the function has the wrong type: expected `int32`, found `float32`"
    )


def test_error_rendering_shows_location_line_and_caret():
    with pytest.raises(Error) as info:
        check_module(parse(HEADER + "def @main(%a: float32) {\n  add(%a, 1)\n}\n", "m.relay"))
    text = str(info.value)
    assert text.splitlines()[0] == (
        "m.relay:3:3: error: add: the operands have different dtypes: `float32` and `int32`"
    )
    assert "  add(%a, 1)" in text
    assert "^~~~~~~~~~" in text


@pytest.mark.parametrize(
    ("src", "message"),
    [
        (
            "def @main(%a: float32) { add(%a) }",
            "`add` takes 2 arguments (lhs, rhs), but 1 was given",
        ),
        (
            "def @f(%x: float32) -> float32 { %x } def @main(%a: float32) { @f(%a, %a) }",
            "`@f` takes 1 argument, but 2 were given",
        ),
        (LIST + "def @main() { Cons(1f) }", "`Cons` takes 2 arguments, but 1 was given"),
        (
            "def @main(%a: float32) { %a(1f) }",
            "cannot call `%a`: it has type `float32`, not a function",
        ),
        (
            "def @main() { let %y: int32 = 1f; %y }",
            "the value bound to `%y` does not have its declared type: expected `int32`, found `float32`",
        ),
        (
            "def @main(%a: float32) { ref_read(%a) }",
            "`ref_read` of a value: expected `ref(_)`, found `float32`",
        ),
        (
            "def @main(%r: ref(float32)) { ref_write(%r, 1) }",
            "`ref_write` of a value of another type: expected `ref(float32)`, found `ref(int32)`",
        ),
        (
            "def @bad[T](%x: T) -> T { 1f }",
            "the body of the function has the wrong type: expected `T`, found `float32`",
        ),
        (
            "def @main(%t: float32) { %t.0 }",
            "cannot take field 0 of a value of type `float32`: it is not a tuple",
        ),
        (
            "def @main() { let %f = fn (%x) { %x(%x) }; %f }",
            "cannot type this call: `_` would have to contain itself: it occurs in `fn (_) -> _`",
        ),
        (
            "def @main() { let %f = fn (%z) { %z }; 1f }",
            "cannot infer the type of `%z`",
        ),
    ],
)
def test_single_error_messages(src, message):
    found = errors_of(src)
    assert [m for _, _, m in found] == [message]


def test_wrong_scrutinee_is_reported_once():
    found = errors_of(
        LIST + "def @main(%a: float32) { match (%a) { Cons(%h, _) => %h, Nil => 0f } }"
    )
    assert [m for _, _, m in found] == [
        "pattern `Cons(%h, _)` does not fit the matched value: expected `float32`, found `List[_]`"
    ]


def test_error_in_a_callee_does_not_cascade_into_callers():
    found = errors_of("def @bad(%x: float32) { add(%x, 1) }\ndef @main() { @bad(1f) }")
    assert [(line, m.split(":")[0]) for line, _, m in found] == [(1, "add")]


def test_unresolved_types_are_reported_once_at_the_variable():
    found = errors_of("def @main() {\n  let %g = fn (%p) { negative(%p) };\n  1f\n}")
    assert found == [(2, 16, "cannot infer the type of `%p`")]


def test_raise_errors_false_returns_errors_and_holes():
    mod = parse(HEADER + "def @main(%a: float32) { (add(%a, 1), 2f) }")
    types = infer_module(mod, raise_errors=False)
    assert not types.ok
    assert len(types.errors) == 1
    assert types.type_of(mod["main"].body.fields[1]) == TensorType((), "float32")
    with pytest.raises(TypeCheckError):
        types.raise_errors()


def test_errors_without_spans_name_the_function():
    x = Var("x", TensorType((2,), "float32"))
    bad = Function([x], Call(get_op("add"), [x, const(1)]))
    mod = IRModule({GlobalVar("main"): bad})
    with pytest.raises(TypeCheckError) as info:
        check_module(mod)
    (diag,) = info.value.diagnostics
    assert diag.span is None
    assert diag.notes == ("in @main",)


def test_undefined_global_and_unknown_adt():
    call = Call(GlobalVar("nowhere"), [])
    with pytest.raises(TypeCheckError, match="`@nowhere` is not defined"):
        infer_expr(call, IRModule())


def test_too_many_type_arguments():
    t = TypeVar("T")
    v = Var("v", t)
    f_gv = GlobalVar("id")
    ident = Function([v], v, ret_type=t, type_params=[t])
    scalar = TensorType((), "float32")
    call = Call(f_gv, [const(1.0)], type_args=[scalar, scalar])
    mod = IRModule({f_gv: ident, GlobalVar("main"): Function([], call)})
    with pytest.raises(TypeCheckError, match="takes 1 type argument, but 2 were given"):
        check_module(mod)


def test_explicit_type_argument_conflicting_with_the_argument():
    t = TypeVar("T")
    v = Var("v", t)
    ident = Function([v], v, ret_type=t, type_params=[t])
    f = Var("f")

    call = Call(f, [const(1.0)], type_args=[TensorType((), "int32")])
    with pytest.raises(
        TypeCheckError, match="argument 1 of `%f`: expected `int32`, found `float32`"
    ):
        infer_expr(Let(f, ident, call))


def test_symbolic_sizes_that_never_meet_are_reported_by_the_relation():
    n, m = ShapeVar("n"), ShapeVar("m")
    x = Var("x", TensorType((n,), "float32"))
    y = Var("y", TensorType((m,), "float32"))
    with pytest.raises(TypeCheckError, match="cannot broadcast dimension n with m"):
        infer_expr(Function([x, y], Call(get_op("add"), [x, y])))


def test_relation_result_conflicting_with_the_context():
    x = Var("x", TensorType((2,), "float32"))
    y = Var("y")

    # %y is used at an int32 type first, then bound to a float32 call result
    user = Var("u", TensorType((2,), "int32"))
    body = Let(user, y, Tuple([]))
    expr = Function([x], Let(y, Call(get_op("negative"), [x]), body))
    with pytest.raises(TypeCheckError, match="expected `Tensor\\[\\(2\\), int32\\]`"):
        infer_expr(expr)
