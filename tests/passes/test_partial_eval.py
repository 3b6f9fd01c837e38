"""`partial-evaluate`: static parts computed, known calls unfolded within fuel, memoized
specializations, effects kept, semantics preserved (the interpreter is the oracle)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import relay
from relay.backend.runtime import interpret
from relay.cli import main as cli_main
from relay.grammar.prelude import prelude_module
from relay.lang.expr import (
    Call,
    Constant,
    Function,
    GlobalVar,
    If,
    Match,
    RefRead,
    RefWrite,
    Var,
    let_chain,
)
from relay.lang.module import IRModule
from relay.lang.op import get_op
from relay.lang.traversal import post_order
from relay.lang.types import TensorType
from relay.passes import check_well_formed, parse_pipeline, values_close
from relay.testing import check_pass, functional_programs
from relay.transform import PartialEvaluate
from relay.typecheck import check_module

HEADER = '#[version = "0.0.5"]\n'
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def parse(text: str) -> IRModule:
    return relay.parse(HEADER + text)


def nodes(fn: Function, kind: type) -> list[Any]:
    return [n for n in post_order(fn) if isinstance(n, kind)]


def global_calls(fn: Function) -> list[str]:
    return [c.op.name_hint for c in nodes(fn, Call) if isinstance(c.op, GlobalVar)]


def evaluated(mod: IRModule, **options: Any) -> IRModule:
    """`mod` partially evaluated: well-formed, well-typed, @main's type unchanged."""
    out = PartialEvaluate(**options)(mod)
    check_well_formed(out)
    check_module(out)
    return out


def same_values(before: IRModule, after: IRModule, **inputs: Any) -> None:
    assert values_close(interpret(before, **inputs), interpret(after, **inputs), 1e-5, 1e-6)


X2 = {"x": np.asarray([0.5, -1.5], "float32")}

# --------------------------------------------------------------------------- properties


def test_semantics_on_generated_functional_programs() -> None:
    check_pass(PartialEvaluate(), functional_programs(), max_examples=40, min_changed=0.5)


def test_semantics_with_polymorphic_adts_helpers_and_shadowing() -> None:
    programs = functional_programs(polymorphic=True, helpers=2, shadowing=True)
    check_pass(PartialEvaluate(), programs, max_examples=30)


@pytest.mark.parametrize("options", [{"fuel": 0}, {"fuel": 1, "memo": False}, {"fuel": 2}])
def test_semantics_when_fuel_runs_out(options: dict[str, Any]) -> None:
    check_pass(PartialEvaluate(**options), functional_programs(max_depth=5), max_examples=20)


# --------------------------------------------------------------------------- examples


@pytest.mark.parametrize("name", ["lstm", "treelstm"])
def test_examples_unroll_into_first_order_code(name: str) -> None:
    mod = relay.parse_file(EXAMPLES / f"{name}.relay")
    out = evaluated(mod)
    main = out["main"]
    assert not nodes(main, Match) and not global_calls(main)  # no recursion, no list, no tree
    rng = np.random.default_rng(0)
    inputs = {
        p.name_hint: rng.standard_normal([int(d) for d in p.type_annotation.shape]).astype(
            "float32"
        )
        for p in mod["main"].params
    }
    same_values(mod, out, **inputs)


def test_terminates_on_every_prelude_function_and_keeps_them_well_typed() -> None:
    prelude = prelude_module()
    out = evaluated(prelude)
    assert set(gv.name_hint for gv in prelude.functions) <= {gv.name_hint for gv in out.functions}


def test_prelude_functions_on_static_and_dynamic_lists() -> None:
    mod = parse("""
def @main(%x: int32) -> (int32, int32, List[int32]) {
  let %xs = Cons(1, Cons(%x, Cons(3, Nil)));
  let %ys = @map(fn (%v: int32) { %v * 2 }, %xs);
  (@sum(%ys), @length(@filter(fn (%v: int32) { %v > 1 }, %ys)), @concat(%ys, %xs))
}
""")
    out = evaluated(mod)
    # the filter's test on %x * 2 is dynamic, so the list it returns is too: only the
    # fold of @length over it stays a (residual, recursive) call
    assert global_calls(out["main"]) == ["foldl"]
    for x in (-3, 0, 7):
        same_values(mod, out, x=np.asarray(x, "int32"))


# --------------------------------------------------------------------------- fixed cases


def test_static_if_and_match_are_resolved() -> None:
    mod = parse("""
type Opt[A] { Some(A), Nothing }
def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  let %o: Opt[float32] = Some(3f);
  let %k = match (%o) { Some(%v) => %v, Nothing => 0f };
  if (%k > 1f) { multiply(%x, %k) } else { negative(%x) }
}
""")
    out = evaluated(mod)
    main = out["main"]
    assert not nodes(main, Match) and not nodes(main, If)
    assert [c.op.name for c in nodes(main, Call)] == ["multiply"]
    same_values(mod, out, **X2)


def test_dynamic_if_keeps_both_branches_specialized() -> None:
    mod = parse("""
def @main(%x: Tensor[(2), float32], %c: bool) -> Tensor[(2), float32] {
  let %k = add(1f, 2f);
  if (%c) { multiply(%x, %k) } else { add(%x, %k) }
}
""")
    out = evaluated(mod)
    assert len(nodes(out["main"], If)) == 1
    assert all(
        c.op.name != "add" or isinstance(c.args[1], Constant) for c in nodes(out["main"], Call)
    )
    for flag in (True, False):
        same_values(mod, out, c=np.asarray(flag), **X2)


def test_static_map_over_a_static_list_is_fully_evaluated() -> None:
    mod = parse("""
def @main(%x: float32) -> float32 {
  let %ys = @map(fn (%v: float32) { %v * 2f }, Cons(1f, Cons(2f, Cons(3f, Nil))));
  add(%x, @foldl(fn (%a: float32, %b: float32) { %a + %b }, 0f, %ys))
}
""")
    out = evaluated(mod)
    main = out["main"]
    assert not nodes(main, Match) and not global_calls(main) and not nodes(main, Function)[:-1]
    (add,) = nodes(main, Call)
    assert add.op.name == "add" and float(add.args[1].data) == 12.0
    same_values(mod, out, x=np.asarray(0.25, "float32"))


SPECIALIZE = """
def @scale(%v: Tensor[(2), float32], %k: float32) -> Tensor[(2), float32] {
  multiply(%v, add(%k, 1f))
}
def @main(%x: Tensor[(2), float32], %y: Tensor[(2), float32]) -> Tensor[(2), float32] {
  add(@scale(%x, 2f), @scale(%y, 2f))
}
"""


def test_a_known_function_with_a_static_argument_is_specialized() -> None:
    mod = parse(SPECIALIZE)
    out = evaluated(mod)
    main = out["main"]
    assert not global_calls(main)
    folded = [float(a.data) for c in nodes(main, Call) for a in c.args if isinstance(a, Constant)]
    assert folded == [3.0, 3.0]  # `add(%k, 1f)` computed at compile time in both copies
    same_values(mod, out, x=X2["x"], y=-X2["x"])


def test_memo_specializes_once_for_equal_static_arguments() -> None:
    mod = parse(SPECIALIZE)
    inputs = {"x": X2["x"], "y": -X2["x"]}
    memo = evaluated(mod, fuel=0, memo=True)
    calls = [c for c in nodes(memo["main"], Call) if isinstance(c.op, GlobalVar)]
    assert len(calls) == 2 and calls[0].op is calls[1].op and calls[0].op.name_hint != "scale"
    assert all(len(c.args) == 1 for c in calls)  # the static 2f is baked in
    special = memo[calls[0].op]
    assert [
        float(a.data) for c in nodes(special, Call) for a in c.args if isinstance(a, Constant)
    ] == [3.0]
    assert len(memo.functions) == len(mod.functions) + 1
    same_values(mod, memo, **inputs)
    plain = evaluated(mod, fuel=0, memo=False)
    assert global_calls(plain["main"]) == ["scale", "scale"]
    assert len(plain.functions) == len(mod.functions)
    same_values(mod, plain, **inputs)


LOOP = """
def @loop(%n: int32, %acc: Tensor[(2), float32]) -> Tensor[(2), float32] {
  if (%n < 1) { %acc } else { @loop(%n - 1, add(%acc, %acc)) }
}
def @main(%x: Tensor[(2), float32]) -> Tensor[(2), float32] {
  @loop(10, %x)
}
"""


def test_a_static_loop_unrolls_and_the_fuel_bound_leaves_a_residual_call() -> None:
    mod = parse(LOOP)
    unrolled = evaluated(mod)
    assert not global_calls(unrolled["main"]) and len(nodes(unrolled["main"], Call)) == 10
    same_values(mod, unrolled, **X2)
    for memo in (True, False):
        bounded = evaluated(mod, fuel=3, memo=memo)
        assert len(global_calls(bounded["main"])) == 1
        assert (
            len([c for c in nodes(bounded["main"], Call) if not isinstance(c.op, GlobalVar)]) == 3
        )
        same_values(mod, bounded, **X2)


def test_a_recursive_function_on_dynamic_data_stays_residual() -> None:
    mod = parse(
        LOOP.replace("@loop(10, %x)", "@loop(%n, %x)").replace(
            "@main(%x: Tensor[(2), float32])", "@main(%x: Tensor[(2), float32], %n: int32)"
        )
    )
    out = evaluated(mod)
    assert global_calls(out["main"]) == ["loop"] and global_calls(out["loop"]) == ["loop"]
    for n in (0, 3):
        same_values(mod, out, n=np.asarray(n, "int32"), **X2)


# --------------------------------------------------------------------------- effects


def test_an_unused_ref_write_still_happens_and_known_reads_fold() -> None:
    mod = parse("""
def @main(%x: float32) -> float32 {
  let %r = ref(1f);
  let %u = ref_write(%r, 2f);
  let %s = ref(%x);
  let %w = ref_write(%s, 5f);
  add(%x, ref_read(%r))
}
""")
    out = evaluated(mod)
    main = out["main"]
    assert len(nodes(main, RefWrite)) == 2 and not nodes(main, RefRead)
    (add,) = [c for c in nodes(main, Call) if c.op is get_op("add")]
    assert float(add.args[1].data) == 2.0  # the read saw the write
    same_values(mod, out, x=np.asarray(0.5, "float32"))


def test_a_read_after_an_unknown_call_is_not_stale() -> None:
    mod = parse("""
def @bump(%r: ref(float32)) -> () {
  ref_write(%r, add(ref_read(%r), 1f))
}
def @main(%x: float32) -> (float32, float32) {
  let %r = ref(%x);
  let %before = ref_read(%r);
  let %u = @bump(%r);
  let %after = ref_read(%r);
  let %v = ref_write(%r, multiply(%after, 2f));
  (%before, ref_read(%r))
}
""")
    out = evaluated(mod, fuel=0)  # @bump is not unfolded: its effect is unknown
    main = out["main"]
    assert global_calls(main) == ["bump"] and len(nodes(main, RefRead)) == 1
    same_values(mod, out, x=np.asarray(0.5, "float32"))
    unfolded = evaluated(mod)
    assert not global_calls(unfolded["main"]) and len(nodes(unfolded["main"], RefWrite)) == 2
    same_values(mod, unfolded, x=np.asarray(0.5, "float32"))


def test_writes_in_dynamic_branches_forget_what_the_store_knew() -> None:
    mod = parse("""
def @main(%x: float32, %c: bool) -> float32 {
  let %r = ref(1f);
  let %u = if (%c) { ref_write(%r, %x) } else { () };
  add(ref_read(%r), %x)
}
""")
    out = evaluated(mod)
    assert len(nodes(out["main"], RefRead)) == 1
    for flag in (True, False):
        same_values(mod, out, x=np.asarray(4.0, "float32"), c=np.asarray(flag))


# --------------------------------------------------------------------------- scale and API


def test_a_100000_binding_let_chain() -> None:
    x = Var("x", TensorType((2,), "float32"))
    bindings, previous = [], x
    for _ in range(100_000):
        v = Var("v")
        bindings.append((v, Call(get_op("add"), [previous, x])))
        previous = v
    mod = IRModule({GlobalVar("main"): Function([x], let_chain(bindings, previous))})
    out = PartialEvaluate()(mod)
    assert len(nodes(out["main"], Call)) == 100_000
    assert np.array_equal(interpret(out, x=np.ones(2, "float32")), np.full(2, 100_001.0, "float32"))


def test_options_in_pipeline_text_and_transform() -> None:
    (p,) = parse_pipeline("partial-evaluate{fuel=3,memo=false}").passes
    assert (p.options.fuel, p.options.memo) == (3, False)
    assert str(PartialEvaluate(fuel=3, memo=False)) == "partial-evaluate{fuel=3,memo=false}"
    assert PartialEvaluate() is parse_pipeline("partial-evaluate").passes[0]


def test_relay_opt_shows_the_residual_program() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli_main(
            ["opt", "--passes", "partial-evaluate,fuse-ops", str(EXAMPLES / "lstm.relay")]
        )
    assert code == 0
    text = out.getvalue()
    main = text[text.index("def @main") :]
    assert "match" not in main and "@lstm" not in main and "Primitive=1" in main
