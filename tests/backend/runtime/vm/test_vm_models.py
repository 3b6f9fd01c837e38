"""The example models with control flow (an LSTM over a `List`, a TreeLSTM over a rose
tree) build to the VM with every kernel native, and agree with the interpreter, also on
sequences and trees given at run time; bound weights still agree."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import relay
from relay.backend.runtime import ConstructorValue, interpret
from relay.backend.runtime.vm import VMModel
from relay.passes import values_close

ROOT = Path(__file__).resolve().parents[4]


def _weights_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "make_weights", ROOT / "examples" / "make_weights.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_weights"] = module
    spec.loader.exec_module(module)
    return module


def model_and_inputs(name: str) -> tuple[relay.IRModule, dict[str, np.ndarray]]:
    weights = _weights_module()
    module = relay.parse_file(ROOT / "examples" / f"{name}.relay")
    return module, weights.make_weights(weights.parameter_specs(name), seed=0)


def constructors(mod: relay.IRModule, type_name: str) -> dict[str, Any]:
    data = next(d for gv, d in mod.type_definitions.items() if gv.name_hint == type_name)
    return {c.name_hint: c for c in data.constructors}


@pytest.mark.parametrize(("name", "kernels_per_run"), [("lstm", 20), ("treelstm", None)])
def test_example_with_control_flow_runs_in_the_vm_and_agrees(name, kernels_per_run):
    module, inputs = model_and_inputs(name)
    model = relay.build(module, target="llvm -num-threads=1")
    assert isinstance(model, VMModel), getattr(model, "reason", "")
    assert model.stats.fallback_kernels == 0
    expected = interpret(module, **inputs)
    assert values_close(expected, model.run(**inputs), 2e-4, 2e-5)
    stats = model.stats
    assert stats.executor == "vm" and stats.interpreted_calls == 0
    if kernels_per_run is not None:
        assert stats.native_calls == kernels_per_run  # 5 fused kernels a step, 4 steps
    assert stats.native_calls > 0


def test_lstm_over_sequences_of_any_length_given_at_run_time():
    module, inputs = model_and_inputs("lstm")
    text = module.astext().replace(
        "def @main(", "def @main_fixed("
    )  # keep the example's @main; add one that takes the list
    text += """
def @main(%xs: List[Tensor[(1, 64), float32]], %weight_ih: Tensor[(512, 64), float32],
          %bias_ih: Tensor[(512), float32], %weight_hh: Tensor[(512, 128), float32],
          %bias_hh: Tensor[(512), float32]) -> Tensor[(1, 128), float32] {
  let %zeros = zeros(shape=[1, 128], dtype="float32");
  @lstm(%xs, (%zeros, %zeros), %weight_ih, %bias_ih, %weight_hh, %bias_hh).0
}
"""
    mod = relay.parse(text)
    weights = {k: v for k, v in inputs.items() if not k.startswith("x")}
    model = relay.build(mod, target="llvm -num-threads=1", params=weights)
    assert isinstance(model, VMModel)
    cons = constructors(mod, "List")
    rng = np.random.default_rng(3)
    for steps in (0, 1, 9):
        xs = ConstructorValue(cons["Nil"], ())
        for _ in range(steps):
            step = rng.uniform(-1, 1, (1, 64)).astype("float32")
            xs = ConstructorValue(cons["Cons"], (step, xs))
        expected = interpret(mod, xs, **weights)
        got = model.run(xs)
        assert values_close(expected, got, 2e-4, 2e-5), steps
        assert model.stats.native_calls == 5 * steps


def test_treelstm_on_a_tree_given_at_run_time():
    module, inputs = model_and_inputs("treelstm")
    text = module.astext().replace("def @main(", "def @main_fixed(")
    text += """
def @main(%tree: Tree[Tensor[(1, 64), float32]], %iou_input_weight: Tensor[(384, 64), float32],
          %iou_hidden_weight: Tensor[(384, 128), float32], %iou_bias: Tensor[(384), float32],
          %forget_input_weight: Tensor[(128, 64), float32],
          %forget_hidden_weight: Tensor[(128, 128), float32],
          %forget_bias: Tensor[(128), float32]) -> Tensor[(1, 128), float32] {
  @tree_lstm(%tree, %iou_input_weight, %iou_hidden_weight, %iou_bias,
             %forget_input_weight, %forget_hidden_weight, %forget_bias).0
}
"""
    mod = relay.parse(text)
    weights = {k: v for k, v in inputs.items() if not k.startswith("x")}
    model = relay.build(mod, target="llvm -num-threads=1", params=weights)
    assert isinstance(model, VMModel)
    lists, trees = constructors(mod, "List"), constructors(mod, "Tree")
    rng = np.random.default_rng(5)

    def node(children: list[Any]) -> Any:
        items = ConstructorValue(lists["Nil"], ())
        for child in reversed(children):
            items = ConstructorValue(lists["Cons"], (child, items))
        x = rng.uniform(-1, 1, (1, 64)).astype("float32")
        return ConstructorValue(trees["Rose"], (x, items))

    tree = node([node([]), node([node([]), node([]), node([node([])])]), node([])])
    assert values_close(interpret(mod, tree, **weights), model.run(tree), 2e-4, 2e-5)
