"""Inference of each language construct (programs written as text and built in Python)."""

from __future__ import annotations

import numpy as np
import pytest
from relay.grammar import parse
from relay.lang import (
    ANY,
    Call,
    Constant,
    Function,
    GlobalVar,
    IncompleteType,
    IRModule,
    Let,
    RefRead,
    RefType,
    ShapeVar,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    TypeCall,
    TypeVar,
    Var,
    const,
    get_op,
    post_order,
)
from relay.lang.op import Op
from relay.typecheck import check_module, infer_expr, infer_module, type_text

HEADER = '#[version = "0.0.5"]\n'
PRELUDE = """
type List[A] {
  Cons(A, List[A]),
  Nil,
}
type Option[A] {
  Some(A),
  None,
}
"""


def check(src: str):
    mod = parse(HEADER + src)
    return mod, check_module(mod)


def sig(src: str, name: str = "main") -> str:
    return type_text(check(src)[1].global_types[name])


def test_every_expression_gets_a_resolved_type():
    mod, types = check(
        PRELUDE
        + """
def @main(%x: Tensor[(2, 3), float32]) {
  let %t = (%x, 1f, Cons(2, Nil));
  %0 = add(%t.0, %t.1);
  if (less(%t.1, 0f)) { %0 } else { negative(%0) }
}
"""
    )
    fn = mod["main"]
    nodes = [n for n in post_order(fn) if not isinstance(n, Op)]
    assert all(n in types.table for n in nodes)
    for t in types.table.values():
        assert "_" not in type_text(t)
    assert type_text(types.type_of(fn)) == (
        "fn (Tensor[(2, 3), float32]) -> Tensor[(2, 3), float32]"
    )


def test_tuples_and_projection():
    assert sig("def @main(%a: int8) { ((%a, 1f), ()).0.1 }") == "fn (int8) -> float32"


def test_projection_waits_until_the_tuple_type_is_known():
    src = "def @main() { let %f = fn (%t) { %t.1 }; %f((1f, 2)) }"
    assert sig(src) == "fn () -> int32"


def test_if_unifies_branches():
    src = "def @main(%c: bool, %x: float32) { if (%c) { %x } else { 2f } }"
    assert sig(src) == "fn (bool, float32) -> float32"


def test_closures_and_higher_order_functions():
    src = """
def @twice(%f: fn (float32) -> float32, %x: float32) -> float32 { %f(%f(%x)) }
def @main(%y: float32) {
  let %k = 3f;
  let %scale = fn (%v) { multiply(%v, %k) };
  (@twice(%scale, %y), @twice(fn (%w) { add(%w, %y) }, 1f))
}
"""
    assert sig(src) == "fn (float32) -> (float32, float32)"


def test_function_as_argument_without_annotations():
    src = """
def @main() {
  let %apply = fn (%f, %x) { %f(%x) };
  %apply(fn (%v: int32) { add(%v, 1) }, 2)
}
"""
    mod, types = check(src)
    apply_fn = mod["main"].body.value
    assert type_text(types.type_of(apply_fn)) == "fn (fn (int32) -> int32, int32) -> int32"


def test_polymorphic_global_applied_at_two_types():
    src = """
def @id[T](%x: T) -> T { %x }
def @main(%a: Tensor[(3), float32], %b: bool) { (@id(%a), @id(%b), @id(@id)(%b)) }
"""
    assert sig(src, "id") == "fn [T](T) -> T"
    assert sig(src) == "fn (Tensor[(3), float32], bool) -> (Tensor[(3), float32], bool, bool)"


def test_polymorphic_globals_and_constructors_passed_as_values():
    src = (
        PRELUDE
        + """
def @id[T](%x: T) -> T { %x }
def @map[A, B](%f: fn (A) -> B, %l: List[A]) -> List[B] {
  match (%l) { Cons(%h, %t) => Cons(%f(%h), @map(%f, %t)), Nil => Nil }
}
def @main(%l: List[float32]) { (@map(@id, %l), @map(Some, %l), @map(@id, Cons(1, Nil))) }
"""
    )
    mod, types = check(src)
    assert type_text(types.global_types["main"]) == (
        "fn (List[float32]) -> (List[float32], List[Option[float32]], List[int32])"
    )
    assert type_text(types.type_of(mod.get_global_var("id"))) == "fn [T](T) -> T"


def test_polymorphic_let_bound_function_and_type_args():
    _, types = check(
        """
def @main(%x: float32, %i: int32) {
  let %id = fn [T](%v: T) -> T { %v };
  (%id(%x), %id(%i))
}
"""
    )
    assert type_text(types.global_types["main"]) == "fn (float32, int32) -> (float32, int32)"
    instantiations = sorted(type_text(args[0]) for args in types.type_args.values() if args)
    assert instantiations == ["float32", "int32"]


def test_explicit_type_arguments():
    t = TypeVar("T")
    v = Var("v", t)
    poly = Function([v], v, ret_type=t, type_params=[t])
    f = Var("f")
    call = Call(f, [const(1.5)], type_args=[TensorType((), "float32")])
    types = infer_expr(Let(f, poly, call))
    assert types.type_of(call) == TensorType((), "float32")
    assert types.type_args[call] == (TensorType((), "float32"),)


def test_recursive_global_and_local_closure():
    src = """
def @fact(%n: int32) -> int32 {
  if (less(%n, 1)) { 1 } else { multiply(%n, @fact(subtract(%n, 1))) }
}
def @sum_to(%n: int32) {
  if (less(%n, 1)) { 0 } else { add(%n, @sum_to(subtract(%n, 1))) }
}
def @main() {
  let %loop = fn (%i: int32, %acc: float32) {
    if (less(%i, 10)) { %loop(add(%i, 1), multiply(%acc, 2f)) } else { %acc }
  };
  (@fact(5), @sum_to(4), %loop(0, 1f))
}
"""
    _, types = check(src)
    assert type_text(types.global_types["sum_to"]) == "fn (int32) -> int32"
    assert type_text(types.global_types["main"]) == "fn () -> (int32, int32, float32)"


def test_mutual_recursion_between_unannotated_globals():
    src = """
def @even(%n) { if (equal(%n, 0)) { True } else { @odd(subtract(%n, 1)) } }
def @odd(%n: int32) { if (equal(%n, 0)) { False } else { @even(subtract(%n, 1)) } }
def @main() { @even(10) }
"""
    _, types = check(src)
    assert type_text(types.global_types["even"]) == "fn (int32) -> bool"
    assert type_text(types.global_types["odd"]) == "fn (int32) -> bool"


def test_globals_inferred_in_dependency_order():
    src = """
def @main() { @b(1f) }
def @b(%x: float32) { @a(%x) }
def @a(%x: float32) { (%x, %x) }
"""
    assert sig(src) == "fn () -> (float32, float32)"
    assert sig(src, "b") == "fn (float32) -> (float32, float32)"


def test_constructors_instantiate_the_adt():
    mod, types = check(PRELUDE + "def @main() { (Cons(1f, Nil), Some(Cons(2, Nil))) }")
    ret = types.global_types["main"].ret_type
    assert type_text(ret) == "(List[float32], Option[List[int32]])"
    calls = [n for n in post_order(mod["main"]) if isinstance(n, Call)]
    cons = next(c for c in calls if getattr(c.op, "name_hint", "") == "Cons")
    assert types.type_args[cons] == (TensorType((), "float32"),)


def test_nested_match_binds_pattern_variables():
    src = (
        PRELUDE
        + """
def @second[A](%l: List[A]) -> Option[A] {
  match (%l) {
    Cons(_, Cons(%y, _)) => Some(%y),
    _ => None,
  }
}
def @pairs(%p: (List[int32], float32)) {
  match (%p) {
    (Cons(%h, %t), %f) => (%h, %t, %f),
    (Nil, %g) => (0, Nil, %g),
  }
}
def @main() { @second(Cons(1f, Cons(2f, Nil))) }
"""
    )
    _mod, types = check(src)
    assert type_text(types.global_types["main"]) == "fn () -> Option[float32]"
    assert type_text(types.global_types["pairs"]) == (
        "fn ((List[int32], float32)) -> (int32, List[int32], float32)"
    )
    assert types.warnings == []


def test_non_exhaustive_match_is_a_warning_naming_a_missing_case():
    _mod, types = check(
        PRELUDE
        + """
def @head(%l: List[float32]) -> float32 { match (%l) { Cons(%x, _) => %x } }
def @two(%l: List[float32]) -> float32 {
  match (%l) { Cons(%x, Cons(_, _)) => %x, Nil => 0f }
}
def @partial(%l: List[float32]) -> float32 { match? (%l) { Cons(%x, _) => %x } }
"""
    )
    messages = [w.message for w in types.warnings]
    assert messages == [
        "match is not exhaustive: `Nil` is not covered",
        "match is not exhaustive: `Cons(_, Nil)` is not covered",
    ]
    assert all(w.level == "warning" and w.span is not None for w in types.warnings)


def test_references():
    src = """
def @main(%x: float32) {
  let %r = ref(%x);
  let %u = ref_write(%r, add(ref_read(%r), 1f));
  (%r, ref_read(%r), %u)
}
"""
    _mod, _types = check(src)
    assert sig(src) == "fn (float32) -> (ref(float32), float32, ())"


def test_unannotated_parameters_are_inferred_from_use():
    src = "def @main(%x, %y: float32) { let %z: float32 = %x; (add(%y, %z), %x) }"
    assert sig(src) == "fn (float32, float32) -> (float32, float32)"


def test_shape_variables_are_copied_per_call_of_a_global():
    n = ShapeVar("n")
    x = Var("x", TensorType((n, 2), "float32"))
    f_gv = GlobalVar("f")
    f = Function([x], Call(get_op("negative"), [x]), ret_type=TensorType((n, 2), "float32"))
    a = Var("a", TensorType((3, 2), "float32"))
    b = Var("b", TensorType((5, 2), "float32"))
    main = Function([a, b], Call(get_op("add"), [Call(f_gv, [a]), Call(f_gv, [a])]))
    main2 = Function([a, b], Tuple([Call(f_gv, [a]), Call(f_gv, [b])]))
    mod = IRModule({f_gv: f, GlobalVar("main"): main})
    types = check_module(mod)
    assert type_text(types.global_types["main"].ret_type) == "Tensor[(3, 2), float32]"
    mod2 = IRModule({f_gv: f, GlobalVar("main"): main2})
    ret = check_module(mod2).global_types["main"].ret_type
    assert type_text(ret) == "(Tensor[(3, 2), float32], Tensor[(5, 2), float32])"


def test_relation_waits_for_a_shape_variable_to_be_bound():
    n, m = ShapeVar("n"), ShapeVar("m")
    x = Var("x", TensorType((n, 3), "float32"))
    y = Var("y", TensorType((m, 3), "float32"))
    s = Var("s", TensorType((m, 3), "float32"))
    total = Call(get_op("add"), [x, y])
    body = Let(s, x, total)  # unifies n with m after `add` was first tried
    types = infer_expr(Function([x, y], body))
    assert type_text(types.type_of(total)) in ("Tensor[(m, 3), float32]", "Tensor[(n, 3), float32]")


def test_any_dimensions_flow_through_relations():
    x = Var("x", TensorType((ANY, 3), "float32"))
    call = Call(get_op("add"), [x, const(1.0)])
    assert type_text(infer_expr(Function([x], call)).type_of(call)) == "Tensor[(?, 3), float32]"


def test_op_calls_record_argument_types_as_type_args():
    x = Var("x", TensorType((2,), "int32"))
    call = Call(get_op("less"), [x, const(1)])
    types = infer_expr(Function([x], call))
    assert types.type_args[call] == (TensorType((2,), "int32"), TensorType((), "int32"))
    assert types.type_of(call) == TensorType((2,), "bool")


def test_infer_expr_of_a_rewritten_function_uses_known_signatures():
    mod = parse(
        HEADER
        + """
def @helper(%x: float32) { (%x, %x) }
def @main(%a: float32) { @helper(%a) }
"""
    )
    whole = infer_module(mod)
    a = Var("a", TensorType((), "float32"))
    rewritten = Function([a], Call(mod.get_global_var("helper"), [a]))
    local = infer_expr(rewritten, mod)
    assert type_text(local.type_of(rewritten)) == "fn (float32) -> (float32, float32)"
    assert all(node in list(post_order(rewritten)) for node in local.table)  # only this function
    merged = whole.merged(local)
    assert rewritten in merged and mod["main"] in merged
    given = infer_expr(rewritten, mod, global_types=whole.global_types)
    assert given.type_of(rewritten) == local.type_of(rewritten)


def test_free_variables_take_their_annotations():
    x = Var("x", TensorType((4,), "float32"))
    call = Call(get_op("exp"), [x])
    assert infer_expr(call).type_of(call) == TensorType((4,), "float32")


def test_types_are_not_stored_in_nodes_and_reinference_is_repeatable():
    x = Var("x")
    body = Call(get_op("add"), [x, const(2.0)])
    fn = Function([x], body)
    unknown = infer_expr(fn, raise_errors=False)
    assert isinstance(unknown.type_of(x), IncompleteType)
    assert [d.message for d in unknown.errors] == ["cannot infer the type of `%x`"]
    # The same nodes, inside a context that fixes `%x`, infer cleanly: nothing was cached.
    y = Var("y", TensorType((), "float32"))
    outer = Let(x, y, body)
    known = infer_expr(Function([y], outer))
    assert known.type_of(body) == TensorType((), "float32")
    assert not hasattr(body, "checked_type")


def test_nested_tuple_and_ref_types():
    r = Var("r", RefType(TupleType([TensorType((), "int32")])))
    read = Call(get_op("add"), [TupleGetItem(RefRead(r), 0), const(1)])
    types = infer_expr(Function([r], read))
    assert types.type_of(read) == TensorType((), "int32")


def test_adt_type_calls_in_annotations():
    _mod, types = check(PRELUDE + "def @main(%l: List[float32]) -> Option[float32] { None }")
    assert isinstance(types.global_types["main"].ret_type, TypeCall)


@pytest.mark.parametrize(
    "text",
    [
        "def @main() { 1f }",
        "def @main(%x: float32) -> float32 { %x }",
        "def @main() { () }",
    ],
)
def test_small_programs_check(text):
    check(text)


def test_constant_types():
    c = Constant(np.zeros((2, 3), dtype="int8"))
    assert infer_expr(c).type_of(c) == TensorType((2, 3), "int8")


@pytest.mark.parametrize(
    ("ty", "clauses", "missing"),
    [
        (
            "(List[int32], List[int32])",
            "(Nil, _) => 0, (_, Nil) => 1, (Cons(_, _), Cons(_, _)) => 2",
            None,
        ),
        (
            "(List[int32], List[int32])",
            "(Nil, _) => 0, (Cons(_, _), Cons(_, _)) => 2",
            "`(Cons(_, _), Nil)`",
        ),
        ("Option[List[int32]]", "Some(Cons(_, _)) => 0, None => 1", "`Some(Nil)`"),
        ("Option[List[int32]]", "%x => 0, None => 1", None),
        ("Option[List[int32]]", "Some(_) => 0", "`None`"),
    ],
)
def test_exhaustiveness_of_nested_patterns(ty, clauses, missing):
    _, types = check(PRELUDE + f"def @f(%p: {ty}) -> int32 {{ match (%p) {{ {clauses} }} }}")
    messages = [w.message for w in types.warnings]
    if missing is None:
        assert messages == []
    else:
        assert messages == [f"match is not exhaustive: {missing} is not covered"]
