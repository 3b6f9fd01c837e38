"""Binders through every pass: shadowed names, aliases and variables bound twice survive
graph normal form and the build, and inlining, lifting and graph form keep the type
information that annotations carry (polymorphic ADTs, globals called from `@main`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import relay
from hypothesis import given, settings
from hypothesis import strategies as st
from relay.backend.runtime import interpret
from relay.driver import inline_into_main, optimize
from relay.lang import IRModule
from relay.lang.adt import Constructor, TypeData
from relay.lang.expr import (
    Call,
    Clause,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    PatternConstructor,
    PatternVar,
    Var,
)
from relay.lang.freevars import bound_vars, distinct_binders, rebound_vars
from relay.lang.op import get_op
from relay.lang.types import GlobalTypeVar, TensorType
from relay.lang.types import TypeVar as TypeParam
from relay.passes import PASSES, check_well_formed, to_graph_normal_form_pass, values_close
from relay.testing import check_once, functional_programs, inputs_for
from relay.testing.check_pass import _as_transform
from relay.typecheck import check_module

HEADER = '#[version = "0.0.5"]\n'


def _transforms() -> list[tuple[Any, str]]:
    """Every registered pass, and what a build runs: inlining into `@main`, then the
    standard pipeline."""
    found = [_as_transform(p) for p in PASSES.values()]
    found.append((inline_into_main, "inline_into_main"))
    found.append((lambda mod: optimize(mod).module, "optimize (inlining and -O3)"))
    return found


def assert_survives(mod: IRModule, inputs: dict[str, Any]) -> None:
    """Every pass keeps `mod` well-formed, well-typed and computing the same values, and
    `relay.build` (llvm, every opt level) computes what the interpreter does."""
    check_module(mod)
    for transform, label in _transforms():
        check_once(transform, label, mod, inputs)
    expected = interpret(mod, **inputs)
    for level in (0, 1, 2, 3):
        model = relay.build(mod, target="llvm", opt_level=level)
        assert values_close(expected, model.run(**inputs), 1e-5, 1e-6), level


def _inputs(mod: IRModule, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for p in mod["main"].params:
        t = p.type_annotation
        assert isinstance(t, TensorType)
        shape = tuple(int(d) for d in t.shape)  # type: ignore[call-overload]
        if t.dtype == "bool":
            out[p.name_hint] = np.asarray(rng.random(shape) < 0.5)
        else:
            out[p.name_hint] = rng.uniform(-2, 2, shape).astype(t.dtype)
    return out


def _survives_text(text: str) -> None:
    mod = relay.parse(HEADER + text)
    assert_survives(mod, _inputs(mod))
    for flag in (True, False):  # both branches, where there is a condition
        inputs = _inputs(mod, 1)
        if "c" in inputs:
            inputs["c"] = np.asarray(flag)
            assert_survives(mod, inputs)


# --------------------------------------------------------------------------- shadowing

SHADOWING = {
    "if-branch lets rebind an outer name, patterns shadow outer lets": """
type Box[A] { MkBox(A) }
def @main(%x: Tensor[(2, 2), float32], %c: bool) -> Tensor[(2, 2), float32] {
  let %b = negative(%x);
  let %r = if (%c) { let %t = add(%b, %x); let %b = %t; %b }
           else { let %u = multiply(%b, %x); let %b = %u; %b };
  match (MkBox(%r)) {
    MkBox(%r) => match (MkBox(%b)) { MkBox(%b) => add(%b, %r) }
  }
}
""",
    "a chain of aliases of a pure value": """
def @main(%x: Tensor[(3), float32]) -> Tensor[(3), float32] {
  let %t = add(%x, %x);
  let %u = %t;
  let %w = %u;
  let %t1 = multiply(%w, %u);
  let %u = %t1;
  subtract(%u, %t)
}
""",
    "nested closures whose parameters shadow outer variables": """
def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  let %y = add(%x, %x);
  let %f = fn (%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
    let %y1 = %y;
    let %g = fn (%x: Tensor[(2), float32]) -> Tensor[(2), float32] { multiply(%x, %y1) };
    let %y = %g(add(%x, 1f));
    %y
  };
  let %z = %f(%y);
  let %y = %f(%z);
  add(%f(%y), %y)
}
""",
    "a global's parameter, lets and patterns named like @main's, called twice": """
type Box[A] { MkBox(A) }
def @f(%y: Tensor[(2, 2), float32]) -> Tensor[(2, 2), float32] {
  let %b = negative(%y);
  let %y2 = %b;
  match (MkBox(%y2)) {
    MkBox(%b) => add(%b, %y)
  }
}
def @main(%x: Tensor[(2, 2), float32], %c: bool) -> Tensor[(2, 2), float32] {
  let %y = add(%x, %x);
  let %b = @f(%y);
  if (%c) {
    let %z = @f(%b);
    let %y = %z;
    match (MkBox(%y)) {
      MkBox(%b) => add(@f(%b), %y)
    }
  } else {
    let %b1 = %b;
    let %b = @f(%b1);
    %b
  }
}
""",
}


@pytest.mark.parametrize("name", list(SHADOWING))
def test_shadowing_survives_every_pass_and_the_build(name: str) -> None:
    _survives_text(SHADOWING[name])


# --------------------------------------------------------------------------- one Var bound twice

T = TensorType((3,), "float32")


def _op(name: str, *args: Any) -> Call:
    return Call(get_op(name), args)


def _module(params: list[Var], body: Any) -> IRModule:
    return IRModule({GlobalVar("main"): Function(params, body)})


def _branches_share_a_variable() -> tuple[IRModule, Var]:
    """`if (%c) { let %a = add(%x, %x); … } else { let %a = exp(%x); … }` with ONE `%a`
    object, as a pass that copied code without renaming it would leave."""
    x, c, a = Var("x", T), Var("c", TensorType((), "bool")), Var("a")
    then = Let(a, _op("add", x, x), _op("multiply", a, x))
    other = Let(a, _op("exp", x), _op("subtract", a, a))
    return _module([x, c], If(c, then, other)), a


def _clauses_and_a_let_share_a_variable() -> IRModule:
    """One `%v` bound by a let, by a pattern inside it and by a closure parameter."""
    box = GlobalTypeVar("Box")
    a = TypeParam("A")
    mk = Constructor("MkBox", [a], box, 0)
    x, v = Var("x", T), Var("v")
    pattern = PatternConstructor(mk, [PatternVar(v)])
    inner = Match(Call(mk, (_op("negative", v),)), [Clause(pattern, _op("add", v, x))])
    fn = Function([v], _op("multiply", v, v))
    body = Let(v, _op("exp", x), _op("add", inner, Call(fn, (v,))))
    return IRModule({GlobalVar("main"): Function([x], body)}, {box: TypeData(box, [a], [mk])})


def test_graph_form_of_a_variable_bound_in_both_branches() -> None:
    mod, _ = _branches_share_a_variable()
    graph = to_graph_normal_form_pass(mod)
    check_well_formed(graph)
    check_module(graph)
    x = np.asarray([0.5, -1.0, 2.0], "float32")
    for flag in (True, False):
        inputs = {"x": x, "c": np.asarray(flag)}
        assert values_close(interpret(mod, **inputs), interpret(graph, **inputs), 1e-6, 1e-6)


def test_a_variable_bound_by_let_pattern_and_parameter_keeps_its_values() -> None:
    mod = _clauses_and_a_let_share_a_variable()
    assert rebound_vars(mod["main"])
    x = np.asarray([0.5, -1.0, 2.0], "float32")
    expected = interpret(mod, x=x)
    graph = to_graph_normal_form_pass(mod)
    check_well_formed(graph)
    assert values_close(expected, interpret(graph, x=x), 1e-6, 1e-6)


def test_distinct_binders_renames_apart_and_keeps_the_rest() -> None:
    mod, a = _branches_share_a_variable()
    body = mod["main"].body
    assert rebound_vars(body) == {id(a)}
    renamed = distinct_binders(body)
    assert not rebound_vars(renamed)
    assert sum(v is a for v in bound_vars(renamed)) == 1  # the first binder keeps `%a`
    assert isinstance(renamed, If) and renamed.cond is body.cond  # the rest is shared
    for branch in (renamed.true_branch, renamed.false_branch):
        assert isinstance(branch, Let) and isinstance(branch.body, Call)
        assert branch.var.name_hint == "a"
        assert branch.var in branch.body.args  # each use refers to its own binder
    x, y = Var("x", T), Var("y")
    clean = Let(y, _op("exp", x), _op("add", y, y))
    assert distinct_binders(clean) is clean


# --------------------------------------------------------------------------- type information

TYPED = {
    "Either with two type parameters, a global called with both constructors": """
type Either[A, B] { Left(A), Right(B) }
def @pick(%e: Either[Tensor[(2), float32], Tensor[(2), float32]]) -> Tensor[(2), float32] {
  match (%e) {
    Left(%v) => add(%v, %v),
    Right(%v) => multiply(%v, %v),
  }
}
def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  add(@pick(Left(%x)), @pick(Right(%x)))
}
""",
    "a global whose return type alone fixes the ADT's argument": """
type Opt[A] { Some(A), Nothing }
def @none(%x: Tensor[(2), float32]) -> Opt[Tensor[(2), float32]] { Nothing }
def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  match (@none(%x)) {
    Some(%a) => exp(%x),
    Nothing => negative(%x),
  }
}
""",
    "an annotated let of a constructor call whose type has a hole": """
type Opt[A] { Some(A), Nothing }
def @main(%x: Tensor[(2), float32], %c: bool) -> Tensor[(2), float32] {
  let %none: Opt[Tensor[(2), float32]] = Nothing;
  let %o = if (%c) { Some(%x) } else { %none };
  let %alias: Opt[Tensor[(2), float32]] = %none;
  let %r = match (%o) { Some(%a) => %a, Nothing => exp(%x) };
  match (%alias) { Some(%a) => %a, Nothing => add(%r, %x) }
}
""",
    "a closure whose return type only its let annotation fixes": """
type Opt[A] { Some(A), Nothing }
def @main(%x: float32) -> float32 {
  let %g: fn (float32) -> Opt[float32] = fn (%p: float32) { Nothing };
  let %k = fn (%q: float32) { add(%q, %x) };
  match (%g(%x)) { Some(%a) => %k(%a), Nothing => %x }
}
""",
    "a global nested in a global, both taking polymorphic ADT values": """
type Either[A, B] { Left(A), Right(B) }
type Opt[A] { Some(A), Nothing }
def @unwrap(%o: Opt[Tensor[(2), float32]], %d: Tensor[(2), float32]) -> Tensor[(2), float32] {
  match (%o) { Some(%d) => %d, Nothing => %d }
}
def @pick(%e: Either[float32, Tensor[(2), float32]], %d: Tensor[(2), float32]) -> Tensor[(2), float32] {
  match (%e) {
    Left(%s) => @unwrap(Nothing, multiply(%d, %s)),
    Right(%v) => @unwrap(Some(%v), %d),
  }
}
def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  add(@pick(Left(2f), %x), @pick(Right(%x), %x))
}
""",
}


@pytest.mark.parametrize("name", list(TYPED))
def test_type_information_survives_every_pass_and_the_build(name: str) -> None:
    _survives_text(TYPED[name])


def test_inlining_binds_an_argument_its_annotation_says_more_about() -> None:
    mod = relay.parse(HEADER + TYPED[next(iter(TYPED))])
    main = inline_into_main(mod)["main"]
    lets = [n for n in relay.lang.post_order(main) if isinstance(n, Let)]
    assert len(lets) == 2
    assert all(let.var.type_annotation == mod["pick"].params[0].type_annotation for let in lets)


# --------------------------------------------------------------------------- properties

POLYMORPHIC = functional_programs(polymorphic=True, helpers=2, shadowing=True)


@settings(max_examples=15)
@given(POLYMORPHIC, st.data())
def test_every_pass_keeps_polymorphic_programs_with_globals(mod: IRModule, data: Any) -> None:
    inputs = data.draw(inputs_for(mod), label="inputs")
    for transform, label in _transforms():
        check_once(transform, label, mod, inputs)


@settings(max_examples=8)
@given(functional_programs(polymorphic=True, helpers=2, shadowing=True, refs=False), st.data())
def test_build_agrees_with_the_interpreter_on_polymorphic_programs(
    mod: IRModule, data: Any
) -> None:
    inputs = data.draw(inputs_for(mod), label="inputs")
    model = relay.build(mod, target="llvm")
    assert values_close(interpret(mod, **inputs), model.run(**inputs), 1e-5, 1e-6)
