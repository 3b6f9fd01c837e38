"""Generated functional programs (`relay.testing.functional_programs`: let, if, closures,
tuples, ADTs with match, recursion through a global, references, polymorphic ADTs and
helper globals) built with `relay.build` compute what the interpreter computes; those with
control flow run in the VM."""

from __future__ import annotations

from typing import Any

import numpy as np
import relay
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from relay.backend.runtime import interpret
from relay.backend.runtime.vm import VMModel
from relay.driver import InterpretedModel
from relay.lang import IRModule
from relay.passes import values_close
from relay.testing import functional_programs, inputs_for

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))


def agrees(mod: IRModule, inputs: dict[str, Any]) -> Any:
    """Build `mod` (one thread), check it is not left to the interpreter and that it
    agrees with the interpreter on `inputs`; the model."""
    with np.errstate(all="ignore"):
        expected = interpret(mod, **inputs)
    model = relay.build(mod, target="llvm -num-threads=1")
    assert not isinstance(model, InterpretedModel), model.reason
    with np.errstate(all="ignore"):
        got = model.run(**inputs)
    assert values_close(expected, got, 1e-5, 1e-6), (expected, got)
    return model


@SETTINGS
@given(functional_programs(max_depth=4, max_size=30), st.data())
def test_functional_programs_with_refs_agree(mod: IRModule, data: Any) -> None:
    model = agrees(mod, data.draw(inputs_for(mod), label="inputs"))
    if isinstance(model, VMModel):
        assert model.stats.executor == "vm"


@SETTINGS
@given(functional_programs(polymorphic=True, helpers=2, shadowing=True), st.data())
def test_polymorphic_programs_with_helpers_and_shadowing_agree(mod: IRModule, data: Any) -> None:
    agrees(mod, data.draw(inputs_for(mod), label="inputs"))


def test_the_generator_reaches_the_vm() -> None:
    """The properties above exercise the VM, not only the static executor."""
    seen: list[bool] = []

    @settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
    @given(functional_programs(max_depth=4, max_size=30), st.data())
    def probe(mod: IRModule, data: Any) -> None:
        model = agrees(mod, data.draw(inputs_for(mod), label="inputs"))
        seen.append(isinstance(model, VMModel))

    probe()
    assert any(seen)
