"""The type checker on generated ill-typed programs (well-typed ones with a perturbed
type, shape, attribute or argument) and on printed syntactic modules: always a result or
a diagnostic, never an internal error."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from relay.lang.printer import print_module
from relay.testing import dataflow_programs, functional_programs, modules
from relay.testing.fuzz import make_input, perturbed, run_stage


def assert_checks_cleanly(text: str) -> str:
    outcomes = run_stage("check", text)
    assert len(outcomes) == 1
    assert not outcomes[0].is_finding, outcomes[0].detail
    return outcomes[0].kind


@given(perturbed(dataflow_programs(max_ops=6).map(print_module)))
def test_perturbed_dataflow_programs(text: str) -> None:
    assert_checks_cleanly(text)


@given(perturbed(functional_programs(max_size=20).map(print_module)))
def test_perturbed_functional_programs(text: str) -> None:
    assert_checks_cleanly(text)


@given(modules(max_depth=3).map(print_module))
def test_syntactic_modules(text: str) -> None:
    assert_checks_cleanly(text)


def test_the_check_stage_inputs_are_mostly_ill_typed() -> None:
    kinds = Counter(assert_checks_cleanly(make_input("check", 1, i).text) for i in range(60))
    assert kinds["diagnostic"] > 30, kinds  # perturbations do break the typing
    assert kinds["ok"] >= 1, kinds  # ... but not always
