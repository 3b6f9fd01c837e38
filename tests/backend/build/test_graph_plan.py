"""Graph planning: slots for inputs, constants and kernel outputs, one kernel per distinct
primitive function, the result as a tree, and a reason for what cannot be compiled."""

import pytest
import relay
from relay.backend.build import NotCompilable, plan_graph
from relay.backend.build.compile_plan import place_slots
from relay.driver import optimize


def _planned(text: str):
    optimized = optimize(relay.parse(text), 3)
    return plan_graph(optimized.module["main"], optimized.types)


def test_identical_kernels_are_shared_and_the_result_is_a_tree():
    plan = _planned(
        """#[version = "0.0.5"]
def @main(%x: Tensor[(8, 8), float32], %y: Tensor[(8, 8), float32]) {
  %0 = nn.relu(%x);
  %1 = nn.relu(%y);
  (%0, %1, %x)
}
"""
    )
    assert plan.input_names == ("x", "y")
    assert [plan.slots[s].kind for s in plan.input_slots] == ["input", "input"]
    assert len(plan.kernels) == 1 and len(plan.steps) == 2
    assert {st.kernel for st in plan.steps} == {0}
    assert isinstance(plan.output, tuple) and len(plan.output) == 3
    assert plan.output[2] == plan.input_slots[0]  # an input returned as is
    slot_kind, outputs, memory = place_slots(plan)
    assert [slot_kind[s][0] for s in outputs] == ["output", "output"]
    assert memory.workspace_bytes == 0  # nothing intermediate


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            """#[version = "0.0.5"]
def @main(%x: Tensor[(?, 4), float32]) { nn.relu(%x) }
""",
            "dynamic shape",
        ),
        (
            """#[version = "0.0.5"]
def @main(%c: bool, %x: Tensor[(4), float32]) {
  if (%c) { nn.relu(%x) } else { %x }
}
""",
            "`If` in @main",
        ),
    ],
)
def test_what_the_native_executor_cannot_run_says_why(text, reason):
    with pytest.raises(NotCompilable, match=reason):
        _planned(text)
    model = relay.build(relay.parse(text))
    assert model.reason  # run by the VM or the interpreter, which say why
