"""Every registered pass and the `-O3` pipeline on generated well-typed programs through
the pass checker, and `relay.build` against the interpreter: no internal error, no
difference (a bounded run; `bench/fuzz.py` runs these stages for longer)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from relay.lang.printer import print_module
from relay.passes import PASSES
from relay.testing import dataflow_programs, functional_programs
from relay.testing.fuzz import builtin_passes, run_stage
from relay.testing.fuzz.stages import O3


def scaled(n: int) -> int:
    """`n` examples in CI; more under `HYPOTHESIS_PROFILE=long`."""
    return max(n, settings.default.max_examples // 5)


PROGRAMS = (
    dataflow_programs(max_ops=6)
    | dataflow_programs(max_ops=5, dtypes=("float32", "int32"))
    | functional_programs(max_size=15)
)


def assert_no_finding(stage: str, text: str, seed: int) -> int:
    outcomes = run_stage(stage, text, seed, valid=True)
    findings = [o for o in outcomes if o.is_finding]
    assert not findings, f"{findings[0].signature}\n{findings[0].detail}\n{text}"
    return len(outcomes)


def test_every_registered_pass_is_checked() -> None:
    assert set(builtin_passes()) == set(PASSES) - {"identity"}
    program = '#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) { add(%x, %x) }\n'
    assert assert_no_finding("opt", program, 0) == len(builtin_passes()) + 1  # and O3


def test_a_wrong_pass_is_a_mismatch(monkeypatch) -> None:
    from relay.testing.fuzz import stages

    def double_everything(mod):
        from relay.grammar import parse

        return parse(mod.astext().replace("add(", "multiply("))

    monkeypatch.setattr(stages, "_transform", lambda name: double_everything)
    program = '#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) { add(%x, %x) }\n'
    outcomes = run_stage("opt", program, 3, valid=True, passes=(O3,))
    assert [o.signature for o in outcomes] == ["opt:mismatch:O3:check_pass: O3: the values differ"]


@settings(max_examples=scaled(12))
@given(PROGRAMS.map(print_module), st.integers(0, 2**32 - 1))
def test_passes_on_generated_programs(text: str, seed: int) -> None:
    assert_no_finding("opt", text, seed)


@settings(max_examples=scaled(6))
@given(dataflow_programs(max_ops=4).map(print_module), st.integers(0, 2**32 - 1))
def test_build_against_the_interpreter(text: str, seed: int) -> None:
    assert_no_finding("build", text, seed)
