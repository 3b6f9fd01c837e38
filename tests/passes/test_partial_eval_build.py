"""`relay.build(..., partial_evaluate=True)`: a `@main` whose recursion runs over a list
or tree built in it comes out first-order and builds to the static executor; what stays
dynamic goes to the VM; results agree with the interpreter; `relay opt` shows the
residual program."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import relay
from relay.backend.runtime import interpret
from relay.backend.runtime.compiled import CompiledModel
from relay.backend.runtime.vm import VMModel
from relay.passes import PassContext, values_close

ROOT = Path(__file__).resolve().parents[2]
TARGET = "llvm -num-threads=1"


def _bench_vm() -> Any:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import peers
    finally:
        sys.path.pop(0)
    return peers.load_sibling("bench_vm")


def _split(values: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    xs = {k: v for k, v in values.items() if re.fullmatch(r"x\d+", k)}
    return xs, {k: v for k, v in values.items() if k not in xs}


def test_lstm_over_a_static_32_step_list_builds_to_the_static_executor():
    bench = _bench_vm()
    mod = relay.parse(bench.lstm_over_list_source(32))
    xs, weights = _split(bench.weights_for(mod))
    model = relay.build(mod, TARGET, params=weights, partial_evaluate=True)
    assert isinstance(model, CompiledModel), getattr(model, "reason", "")
    expected = interpret(mod, **xs, **weights)
    assert values_close(expected, model.run(**xs), 2e-4, 2e-5)
    without = relay.build(mod, TARGET, params=weights)
    assert isinstance(without, VMModel)  # the flag is what makes it first-order


def test_the_context_asks_for_partial_evaluation_and_disabling_it_wins():
    mod = relay.parse_file(ROOT / "examples" / "lstm.relay")
    bench = _bench_vm()
    xs, weights = _split(bench.weights_for(mod))
    with PassContext(opt_level=3, required_pass=["partial-evaluate"]):
        asked = relay.build(mod, TARGET, params=weights)
    assert isinstance(asked, CompiledModel), getattr(asked, "reason", "")
    assert values_close(interpret(mod, **xs, **weights), asked.run(**xs), 2e-4, 2e-5)
    with PassContext(opt_level=3, disabled_pass=["partial-evaluate"]):
        refused = relay.build(mod, TARGET, params=weights, partial_evaluate=True)
    assert isinstance(refused, VMModel)


def test_treelstm_on_a_static_tree_and_on_a_tree_given_at_run_time():
    bench = _bench_vm()
    static = relay.parse_file(ROOT / "examples" / "treelstm.relay")
    dynamic = relay.parse(bench.treelstm_dynamic_source())
    xs, weights = _split(bench.weights_for(static))
    expected = interpret(static, **xs, **weights)
    on_static = relay.build(static, TARGET, params=weights, partial_evaluate=True)
    assert isinstance(on_static, CompiledModel), getattr(on_static, "reason", "")
    assert values_close(expected, on_static.run(**xs), 2e-4, 2e-5)
    # the recursion runs over data known only at run time: the residual goes to the VM
    on_dynamic = relay.build(dynamic, TARGET, params=weights, partial_evaluate=True)
    assert isinstance(on_dynamic, VMModel), getattr(on_dynamic, "reason", "")
    tree = bench.build_tree(dynamic, xs)
    assert values_close(interpret(dynamic, tree, **weights), on_dynamic.run(tree), 2e-4, 2e-5)
    assert values_close(expected, on_dynamic.run(tree), 2e-4, 2e-5)
    assert on_dynamic.stats.interpreted_calls == 0


ORDERED_WRITES = """#[version = "0.0.5"]
type List[A] {
  Cons(A, List[A]),
  Nil,
}
def @walk(%xs: List[Tensor[(2), float32]], %acc: ref(Tensor[(2), float32])) -> () {
  match (%xs) {
    Cons(%x, %rest) => {
      let %u = ref_write(%acc, multiply(add(ref_read(%acc), %x), 2f));
      @walk(%rest, %acc)
    },
    Nil => (),
  }
}
def @main(%a: Tensor[(2), float32], %b: Tensor[(2), float32], %c: Tensor[(2), float32]) {
  let %r = ref(zeros(shape=[2], dtype="float32"));
  let %u = @walk(Cons(%a, Cons(%b, Cons(%c, Nil))), %r);
  let %first = ref_read(%r);
  let %v = ref_write(%r, add(%first, %a));
  (%first, ref_read(%r))
}
"""


def test_writes_through_a_reference_over_a_static_list_keep_their_order():
    mod = relay.parse(ORDERED_WRITES)
    rng = np.random.default_rng(7)
    inputs = {k: rng.uniform(-2, 2, (2,)).astype("float32") for k in "abc"}
    model = relay.build(mod, TARGET, partial_evaluate=True)
    got = model.run(**inputs)
    expected = interpret(mod, **inputs)
    assert values_close(expected, got, 1e-5, 1e-6)
    a, b, c = inputs["a"], inputs["b"], inputs["c"]
    first = (((a * 2) + b) * 2 + c) * 2
    assert np.allclose(got[0], first) and np.allclose(got[1], first + a)


def _relay_cli(*args: Any) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "relay", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stdout, done.stderr


def _main_text(printed: str) -> str:
    start = printed.index("def @main(")
    end = printed.find("\ndef @", start + 1)
    return printed[start : end if end >= 0 else len(printed)]


def test_relay_opt_shows_the_residual_program():
    lstm = ROOT / "examples" / "lstm.relay"
    code, out, err = _relay_cli("opt", "--passes", "partial-evaluate,fuse-ops", lstm)
    assert code == 0, err
    main = _main_text(out)
    # the list, the match and the recursive call are gone; the kernels are fused calls
    assert "match" not in main and "Cons(" not in main and "@lstm" not in main
    assert main.count("nn.dense(") == 8 and "Primitive=1" in main
    code, graph, err = _relay_cli(
        "opt", "--passes", "partial-evaluate,to-graph-normal-form,fuse-ops", lstm
    )
    assert code == 0, err
    fused = _main_text(graph)
    assert "match" not in fused and "@lstm" not in fused
    # in graph form fusion groups several operators per kernel
    assert fused.count("Primitive=1") < main.count("Primitive=1")
