"""A polymorphic function where a monomorphic function type is expected is instantiated
(its type parameters become fresh unknowns), as TVM's solver does; a function that is not
polymorphic is never accepted where a polymorphic one is required.

Every accepted program is also run, in the interpreter and built for `llvm` (which falls
back to the interpreter for closures), and both agree with a numpy computation.
"""

from __future__ import annotations

import numpy as np
import pytest
import relay
from relay.grammar import parse
from relay.lang import TensorType, TypeCheckError
from relay.lang.types import FuncType, TypeVar
from relay.typecheck import check_module
from relay.typecheck.solver import TypeSolver, UnifyError

HEADER = '#[version = "0.0.5"]\n'
F2 = "Tensor[(2), float32]"
APPLY = f"def @apply(%f: fn({F2}) -> {F2}, %x: {F2}) {{ %f(%x) }}\n"
ID = "def @id[A](%x: A) -> A { %x }\n"

X = np.array([1.5, -2.0], dtype="float32")
N = np.array([3, 4, 5], dtype="int32")


def run_everywhere(src: str, **inputs: np.ndarray) -> list[object]:
    """Check `src`, then run its `@main` in the interpreter and built for llvm."""
    mod = parse(HEADER + src)
    check_module(mod)
    interpreted = relay.interpret(mod, **inputs)
    built = relay.build(mod, target="llvm -num-threads=1").run(**inputs)
    return [interpreted, built]


def as_list(value: object) -> list[np.ndarray]:
    if isinstance(value, tuple | list):
        return [np.asarray(v) for v in value]
    return [np.asarray(value)]


def assert_results(results: list[object], *expected: np.ndarray) -> None:
    for value in results:
        got = as_list(value)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype
            np.testing.assert_allclose(g, e)


def test_polymorphic_global_bound_by_let_is_called_at_two_types():
    src = ID + (
        "def @main(%x: Tensor[(2), float32], %n: Tensor[(3), int32]) {\n"
        "  let %g = @id;\n"
        "  (%g(%x), %g(%n))\n"
        "}\n"
    )
    types = check_module(parse(HEADER + src))
    assert types.global_types["main"].ret_type.fields[1] == TensorType((3,), "int32")
    assert_results(run_everywhere(src, x=X, n=N), X, N)


def test_polymorphic_constructor_bound_by_let_is_used_at_two_types():
    src = (
        "type Box[A] { Box(A) }\n"
        "def @main(%x: Tensor[(2), float32], %n: Tensor[(3), int32]) {\n"
        "  let %box = Box;\n"
        "  match ((%box(%x), %box(%n))) { (Box(%a), Box(%b)) => (%a, %b) }\n"
        "}\n"
    )
    assert_results(run_everywhere(src, x=X, n=N), X, N)


def test_let_bound_polymorphic_literal_passed_where_a_plain_function_is_expected():
    src = APPLY + (
        f"def @main(%x: {F2}) {{\n  let %id = fn[A](%y: A) -> A {{ %y }};\n  @apply(%id, %x)\n}}\n"
    )
    assert_results(run_everywhere(src, x=X), X)


def test_polymorphic_literal_passed_directly():
    src = APPLY + f"def @main(%x: {F2}) {{ @apply(fn[A](%y: A) -> A {{ %y }}, %x) }}\n"
    assert_results(run_everywhere(src, x=X), X)


def test_let_bound_polymorphic_literal_is_also_used_at_another_type():
    src = APPLY + (
        f"def @main(%x: {F2}, %n: Tensor[(3), int32]) {{\n"
        "  let %id = fn[A](%y: A) -> A { %y };\n"
        "  (@apply(%id, %x), %id(%n))\n"
        "}\n"
    )
    assert_results(run_everywhere(src, x=X, n=N), X, N)


def test_def_declared_to_return_a_plain_function_returns_a_polymorphic_literal():
    src = (
        f"def @get() -> fn({F2}) -> {F2} {{ fn[A](%y: A) -> A {{ %y }} }}\n"
        f"def @main(%x: {F2}) {{ @get()(%x) }}\n"
    )
    types = check_module(parse(HEADER + src))
    assert not types.global_types["get"].ret_type.type_params
    assert_results(run_everywhere(src, x=X), X)


def test_def_returns_a_let_bound_polymorphic_global_it_also_uses_at_another_type():
    src = ID + (
        f"def @get() -> fn({F2}) -> {F2} {{\n"
        "  let %g = @id;\n"
        "  let %n = %g(7);\n"
        "  %g\n"
        "}\n"
        f"def @main(%x: {F2}) {{ @get()(%x) }}\n"
    )
    assert_results(run_everywhere(src, x=X), X)


def test_if_joining_a_polymorphic_and_a_plain_function():
    src = (
        f"def @main(%x: {F2}, %c: bool) {{\n"
        "  let %f = if (%c) { fn[A](%y: A) -> A { %y } }\n"
        f"           else {{ fn (%z: {F2}) {{ add(%z, %z) }} }};\n"
        "  %f(%x)\n"
        "}\n"
    )
    for flag, expected in ((True, X), (False, X + X)):
        assert_results(run_everywhere(src, x=X, c=np.array(flag)), expected)


def test_an_instance_that_does_not_fit_is_rejected_clearly():
    src = APPLY + (
        f"def @main(%x: {F2}) {{\n"
        "  let %dup = fn[A](%y: A) -> (A, A) { (%y, %y) };\n"
        "  @apply(%dup, %x)\n"
        "}\n"
    )
    with pytest.raises(TypeCheckError) as info:
        check_module(parse(HEADER + src))
    [d] = info.value.diagnostics
    assert d.message == (
        f"argument 1 of `@apply`: expected `fn ({F2}) -> {F2}`, found `fn [A](A) -> (A, A)`"
    )
    assert d.notes[0] == (f"result: tensor type `{F2}` does not match tuple type `({F2}, {F2})`")


def test_a_polymorphic_global_that_does_not_fit_shows_its_type():
    src = APPLY + "def @dup[A](%x: A) -> (A, A) { (%x, %x) }\n"
    src += f"def @main(%x: {F2}) {{ @apply(@dup, %x) }}\n"
    with pytest.raises(TypeCheckError) as info:
        check_module(parse(HEADER + src))
    [d] = info.value.diagnostics
    assert d.message.startswith("argument 1 of `@apply`")
    assert "`@dup` has type `fn [A](A) -> (A, A)`; no instance of it fits here" in d.notes


def test_a_plain_function_is_not_accepted_where_a_polymorphic_one_is_required():
    src = (
        f"def @twice(%f: fn[A](A) -> A, %x: {F2}, %n: int32) {{ (%f(%x), %f(%n)) }}\n"
        f"def @main(%x: {F2}) {{ @twice(fn (%y: {F2}) {{ add(%y, %y) }}, %x, 1) }}\n"
    )
    with pytest.raises(TypeCheckError) as info:
        check_module(parse(HEADER + src))
    [d] = info.value.diagnostics
    assert d.message.startswith("argument 1 of `@twice`: expected `fn [A](A) -> A`")
    assert d.notes[0] == (
        "a function with 1 type parameter does not match a function with 0 type parameters "
        "(a function that is not polymorphic cannot be used as one)"
    )


def test_a_reference_to_a_polymorphic_function_cannot_hold_a_plain_one():
    src = (
        f"def @main(%x: {F2}) {{\n"
        "  let %r = ref(fn[A](%y: A) -> A { %y });\n"
        f"  ref_write(%r, fn (%z: {F2}) {{ add(%z, %z) }});\n"
        "  %x\n"
        "}\n"
    )
    with pytest.raises(TypeCheckError) as info:
        check_module(parse(HEADER + src))
    [d] = info.value.diagnostics
    assert d.message.startswith("`ref_write` of a value of another type")
    assert d.notes[0] == (
        "a function with 1 type parameter does not match a function with 0 type parameters"
    )


def test_solver_instantiates_only_the_found_side():
    a = TypeVar("A")
    f32 = TensorType((), "float32")
    poly = FuncType([a], a, [a])
    mono = FuncType([f32], f32)
    TypeSolver().unify(mono, poly)  # a polymorphic value where a plain one is expected
    with pytest.raises(UnifyError, match="cannot be used as one"):
        TypeSolver().unify(poly, mono)
    # Inside a parameter the roles swap: the callers provide the argument. A function
    # taking a plain function can be given a polymorphic one, not the other way round.
    TypeSolver().unify(FuncType([poly], f32), FuncType([mono], f32))
    with pytest.raises(UnifyError, match="parameter 0"):
        TypeSolver().unify(FuncType([mono], f32), FuncType([poly], f32))
