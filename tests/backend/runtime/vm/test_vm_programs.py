"""The VM runs control flow with native kernels: fixed programs with `if`, `match` (nested
patterns, wildcards), closures (captured, recursive, returned), references, tuples and the
prelude's list functions over tensors agree with the interpreter; deep recursion runs
without Python recursion; bad inputs and saving are clear errors."""

from __future__ import annotations

import numpy as np
import pytest
import relay
from relay.backend.runtime import ConstructorValue, interpret
from relay.backend.runtime.vm import VMModel
from relay.driver import InterpretedModel
from relay.grammar import parse
from relay.lang.diagnostics import Error, InputError
from relay.passes import values_close

HEADER = '#[version = "0.0.5"]\n'


def vm_model(text: str) -> tuple[relay.IRModule, VMModel]:
    """The module of `text` and what `relay.build` makes of it (asserted to be the VM)."""
    mod = parse(HEADER + text)
    model = relay.build(mod, target="llvm -num-threads=1")
    assert isinstance(model, VMModel), getattr(model, "reason", model)
    assert model.native and model.stats.executor == "vm"
    return mod, model


def agrees(mod: relay.IRModule, model: VMModel, *args: object, **inputs: object) -> object:
    """The VM's result, asserted to agree with the interpreter's."""
    expected = interpret(mod, *args, **inputs)
    got = model.run(*args, **inputs)
    assert values_close(expected, got, 1e-5, 1e-6), (expected, got)
    return got


def tensor_list(cons: object, nil: object, items: list[np.ndarray]) -> ConstructorValue:
    """A prelude `List` of `items` (built iteratively)."""
    value = ConstructorValue(nil, ())  # type: ignore[arg-type]
    for item in reversed(items):
        value = ConstructorValue(cons, (item, value))  # type: ignore[arg-type]
    return value


def list_constructors(mod: relay.IRModule) -> tuple[object, object]:
    """`Cons` and `Nil` of the module's `List`."""
    data = next(d for gv, d in mod.type_definitions.items() if gv.name_hint == "List")
    by_name = {c.name_hint: c for c in data.constructors}
    return by_name["Cons"], by_name["Nil"]


RNG = np.random.default_rng(7)


def rand(*shape: int) -> np.ndarray:
    return RNG.uniform(-1, 1, shape).astype("float32")


def test_if_runs_each_branch_with_kernels():
    mod, model = vm_model(
        """
def @main(%x: Tensor[(3, 4), float32], %y: Tensor[(3, 4), float32]) {
  let %s = sum(%x);
  if (%s > 0f) { nn.relu(%x * %y) + %x } else { tanh(%x - %y) }
}"""
    )
    x, y = rand(3, 4), rand(3, 4)
    agrees(mod, model, x, y)
    agrees(mod, model, -np.abs(x), y)
    agrees(mod, model, np.abs(x), y)
    assert model.stats.native_calls >= 2


def test_match_with_nested_patterns_wildcards_and_a_jump_table():
    mod, model = vm_model(
        """
type Shape { Leaf(Tensor[(4), float32]), Pair(Shape, Shape), Empty }
def @weigh(%s: Shape) -> Tensor[(4), float32] {
  match (%s) {
    Pair(Leaf(%a), Leaf(%b)) => %a * %b,
    Pair(Empty, %rest) => @weigh(%rest) + 1f,
    Pair(%l, _) => @weigh(%l) - 1f,
    Leaf(%v) => exp(%v),
    _ => zeros(shape=[4], dtype="float32"),
  }
}
def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
  (
    @weigh(Pair(Leaf(%x), Leaf(%y))),
    @weigh(Pair(Empty, Leaf(%y))),
    @weigh(Pair(Pair(Leaf(%x), Empty), Leaf(%y))),
    @weigh(Leaf(%x)),
    @weigh(Empty),
    @weigh(Pair(Empty, Pair(Empty, Empty))),
  )
}"""
    )
    got = agrees(mod, model, rand(4), rand(4))
    assert len(got) == 6  # type: ignore[arg-type]
    assert "Switch" in model.program.astext() and "JumpIfTagNot" in model.program.astext()


def test_a_match_no_clause_matches_is_a_match_error():
    mod, model = vm_model(
        """
type T { A(Tensor[(2), float32]), B }
def @main(%x: Tensor[(2), float32], %c: bool) {
  let %v = if (%c) { A(%x) } else { B };
  match? (%v) { A(%y) => %y * 2f }
}"""
    )
    agrees(mod, model, rand(2), True)
    with pytest.raises(Error, match="no clause"):
        model.run(rand(2), False)


def test_closures_capture_recurse_and_escape():
    mod, model = vm_model(
        """
def @adder(%k: Tensor[(3), float32]) -> fn (Tensor[(3), float32]) -> Tensor[(3), float32] {
  fn (%v: Tensor[(3), float32]) -> Tensor[(3), float32] { %v + %k }
}
def @main(%x: Tensor[(3), float32], %n: int32) {
  let %scale = 2f;
  let %f = fn (%v: Tensor[(3), float32]) -> Tensor[(3), float32] { %v * %scale };
  let %g = @adder(%x);
  let %loop = fn (%i: int32, %acc: Tensor[(3), float32]) -> Tensor[(3), float32] {
    if (%i < 1) { %acc } else { %loop(%i - 1, %g(%f(%acc))) }
  };
  (%loop(%n, %x), %f(%g(%x)))
}"""
    )
    for n in (0, 1, 5):
        agrees(mod, model, rand(3), np.int32(n))
    assert model.stats.calls > 5


def test_references_are_read_and_written_in_order():
    mod, model = vm_model(
        """
def @bump(%r: ref(Tensor[(2), float32]), %by: Tensor[(2), float32]) -> () {
  ref_write(%r, ref_read(%r) * %by + 1f)
}
def @main(%x: Tensor[(2), float32], %y: Tensor[(2), float32]) {
  let %r = ref(%x);
  let %before = ref_read(%r);
  let %u = @bump(%r, %y);
  let %w = @bump(%r, %y);
  let %shared = ref(%y);
  let %alias = %shared;
  let %done = ref_write(%alias, ref_read(%r));
  (%before, ref_read(%r), ref_read(%shared), %u, %done)
}"""
    )
    agrees(mod, model, rand(2), rand(2))


def test_tuples_of_kernel_results_and_projections():
    mod, model = vm_model(
        """
def @parts(%x: Tensor[(4, 6), float32]) -> (Tensor[(4, 3), float32], Tensor[(4, 3), float32]) {
  let %halves = split(%x, indices_or_sections=2, axis=1);
  (%halves.1, %halves.0 * 2f)
}
def @main(%x: Tensor[(4, 6), float32], %c: bool) {
  let %p = if (%c) { @parts(%x) } else { @parts(%x * %x) };
  ((%p.0 + %p.1, %p), %p.1)
}"""
    )
    agrees(mod, model, rand(4, 6), True)
    agrees(mod, model, rand(4, 6), False)


def test_prelude_list_functions_over_tensors():
    mod, model = vm_model(
        """
def @main(%xs: List[Tensor[(2, 3), float32]], %w: Tensor[(3, 3), float32]) {
  let %mapped = @map(fn (%x: Tensor[(2, 3), float32]) { nn.dense(%x, %w) }, %xs);
  let %total = @foldl(fn (%a: Tensor[(2, 3), float32], %x: Tensor[(2, 3), float32]) {
    %a + sigmoid(%x)
  }, zeros(shape=[2, 3], dtype="float32"), %mapped);
  let %right = @foldr(fn (%x: Tensor[(2, 3), float32], %a: Tensor[(2, 3), float32]) {
    %a * 0.5f + %x
  }, ones(shape=[2, 3], dtype="float32"), %xs);
  let %kept = @filter(fn (%x: Tensor[(2, 3), float32]) { sum(%x) > 0f }, %xs);
  let %both = @zip(@rev(%xs), @concat(%mapped, %kept));
  (%total, %right, @length(%kept), @nth(%mapped, 1), @hd(@rev(%both)).1, @length(%both))
}"""
    )
    cons, nil = list_constructors(mod)
    xs = tensor_list(cons, nil, [rand(2, 3) for _ in range(5)])
    agrees(mod, model, xs, rand(3, 3))
    assert model.stats.native_calls >= 15


def test_globals_and_constructors_used_as_values():
    mod, model = vm_model(
        """
def @double(%x: Tensor[(2), float32]) -> Tensor[(2), float32] { %x * 2f }
def @main(%xs: List[Tensor[(2), float32]]) {
  let %wrapped = @map(Some, @map(@double, %xs));
  @map(fn (%o: Option[Tensor[(2), float32]]) {
    match (%o) { Some(%v) => %v, None => zeros(shape=[2], dtype="float32") }
  }, %wrapped)
}"""
    )
    cons, nil = list_constructors(mod)
    agrees(mod, model, tensor_list(cons, nil, [rand(2) for _ in range(3)]))


def test_a_100000_step_recursion_over_a_list_runs_without_python_recursion():
    mod, model = vm_model(
        """
def @total(%xs: List[Tensor[(2), float32]]) -> Tensor[(2), float32] {
  match (%xs) {
    Cons(%x, %rest) => %x + @total(%rest),
    Nil => zeros(shape=[2], dtype="float32"),
  }
}
def @count(%xs: List[Tensor[(2), float32]], %n: int32) -> int32 {
  match (%xs) { Cons(_, %rest) => @count(%rest, %n + 1), Nil => %n }
}
def @main(%xs: List[Tensor[(2), float32]]) { (@total(%xs), @count(%xs, 0)) }"""
    )
    cons, nil = list_constructors(mod)
    items = [np.full(2, 1.0 / (1 + k % 7), dtype="float32") for k in range(100_000)]
    total, count = model.run(tensor_list(cons, nil, items))  # type: ignore[misc]
    assert int(count) == 100_000
    expected = np.zeros(2, dtype="float32")
    for item in reversed(items):  # the order the program adds in
        expected = item + expected
    np.testing.assert_allclose(total, expected, rtol=1e-5)
    assert model.stats.native_calls >= 200_000


def test_a_wrong_tensor_inside_a_list_argument_is_an_input_error():
    mod, model = vm_model(
        """
def @main(%xs: List[Tensor[(2), float32]]) {
  @foldl(fn (%a: Tensor[(2), float32], %x: Tensor[(2), float32]) { %a + %x },
         zeros(shape=[2], dtype="float32"), %xs)
}"""
    )
    cons, nil = list_constructors(mod)
    bad = tensor_list(cons, nil, [rand(2), rand(5)])
    with pytest.raises(InputError, match=r"Tensor\[\(2\), float32\]"):
        model.run(bad)
    with pytest.raises(InputError, match="xs"):
        model.run(rand(2))


def test_build_picks_the_executor_and_says_why():
    text = """
def @main(%x: Tensor[(3), float32], %c: bool) { if (%c) { %x * 2f } else { %x } }"""
    mod, model = vm_model(text)
    assert "If" in model.reason
    assert isinstance(relay.build(mod, target="interp"), InterpretedModel)
    straight = relay.build(parse(HEADER + "def @main(%x: Tensor[(3), float32]) { %x * 2f }"))
    assert not isinstance(straight, (VMModel, InterpretedModel)) and straight.native
    dynamic = parse(
        HEADER + "def @main(%x: Tensor[(?), float32], %c: bool) { if (%c) { %x * 2f } else { %x } }"
    )
    compiled = relay.build(dynamic)  # a `?` dimension: one native kernel for every size
    assert isinstance(compiled, VMModel) and compiled.native and "dynamic shape" in compiled.reason


def test_results_are_owned_by_the_caller_and_out_buffers_are_filled(tmp_path):
    _mod, model = vm_model(
        """
def @main(%x: Tensor[(3), float32], %c: bool) { if (%c) { (%x, %x * 2f) } else { (%x, %x) } }"""
    )
    x = rand(3)
    first, second = model.run(x, False)  # type: ignore[misc]
    assert not np.shares_memory(first, x) and not np.shares_memory(first, second)
    out = (np.empty(3, "float32"), np.empty(3, "float32"))
    assert model.run(x, True, out=out) is out
    np.testing.assert_allclose(out[1], x * 2)
    model.save(tmp_path / "model.relaymod")
    again = relay.load(tmp_path / "model.relaymod")
    for flag in (False, True):
        for got, want in zip(again.run(x, flag), model.run(x, flag)):
            np.testing.assert_array_equal(got, want)


def test_non_contiguous_tensors_inside_and_outside_lists_are_read_correctly():
    mod, model = vm_model(
        """
def @main(%xs: List[Tensor[(3, 4), float32]], %y: Tensor[(3, 4), float32]) {
  @foldl(fn (%a: Tensor[(3, 4), float32], %x: Tensor[(3, 4), float32]) { %a * 0.5f + %x },
         %y, %xs)
}"""
    )
    cons, nil = list_constructors(mod)
    strided = rand(4, 3).T  # a view: Fortran order
    fortran = np.asfortranarray(rand(3, 4))  # owns its data, not C-contiguous
    sliced = rand(3, 8)[:, ::2]
    xs = tensor_list(cons, nil, [strided, sliced, fortran])
    agrees(mod, model, xs, np.asfortranarray(rand(3, 4)))
