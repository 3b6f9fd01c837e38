"""The front end never crashes: mutated seed programs (examples, prelude, hand-written),
texts from the grammar, mutated printed modules, truncations, token soup and random
text either parse or give a `ParseError` located inside the text; never another
exception, and never an error that only wraps one ("internal parser error")."""

from __future__ import annotations

import string
import time

from hypothesis import given, settings
from hypothesis import strategies as st
from relay.grammar import parse, parse_expr
from relay.lang import IRModule
from relay.lang.diagnostics import Error
from relay.lang.printer import print_module
from relay.testing import modules
from relay.testing.fuzz import (
    grammar_texts,
    mutants,
    perturbed,
    run_stage,
    seed_programs,
    valid_seed_programs,
)
from relay.testing.fuzz.corpus import CONV_BLOCK, HAND_WRITTEN, LISTS, MISC, ODDITIES
from relay.testing.fuzz.mutate import VOCABULARY, mutate
from relay.testing.fuzz.stages import SOURCE_NAME, diagnosed, internal


def assert_front_end_copes(text: str, stage: str = "parse") -> None:
    """`stage` (parse or check) gives ok or a well-located diagnostic, quickly."""
    start = time.monotonic()
    outcomes = run_stage(stage, text)
    findings = [o for o in outcomes if o.is_finding]
    assert not findings, findings[0].detail
    assert time.monotonic() - start < 10, "took too long"


def assert_expression_copes(text: str) -> None:
    """`parse_expr` gives an expression or a well-located diagnostic."""
    try:
        parse_expr(text, SOURCE_NAME)
    except Error as err:
        outcome = diagnosed("parse", err, text)
    except Exception as exc:
        outcome = internal("parse", exc)
    else:
        return
    assert not outcome.is_finding, outcome.detail


def test_seed_programs_are_mostly_valid() -> None:
    for text in (LISTS, CONV_BLOCK, MISC):
        assert isinstance(parse(text), IRModule)
    assert run_stage("parse", ODDITIES)[0].kind == "diagnostic"  # its metadata only
    assert len(valid_seed_programs()) > len(seed_programs()) // 2
    assert {o.kind for t in valid_seed_programs() for o in run_stage("check", t)} == {"ok"}


@given(mutants())
def test_mutated_seed_programs(text: str) -> None:
    assert_front_end_copes(text)


@given(mutants(HAND_WRITTEN))
def test_mutated_hand_written_programs_through_the_type_checker(text: str) -> None:
    assert_front_end_copes(text, "check")


@given(modules(max_depth=3).map(print_module), st.data())
def test_mutated_printed_modules(text: str, data: st.DataObject) -> None:
    assert_front_end_copes(data.draw(mutants([text])))


@given(grammar_texts())
def test_texts_from_the_grammar(text: str) -> None:
    assert_front_end_copes(text, "check")


@given(grammar_texts("expression", budget=40))
def test_expressions_from_the_grammar(text: str) -> None:
    assert_expression_copes(text)


def test_every_truncation_of_hand_written_programs() -> None:
    for text in (LISTS, MISC, CONV_BLOCK[: CONV_BLOCK.index("#[metadata]") + 40]):
        for end in range(len(text)):
            assert_front_end_copes(text[:end])


@given(st.lists(st.sampled_from(VOCABULARY), max_size=30), st.sampled_from([" ", ""]))
def test_random_token_soup(words: list[str], separator: str) -> None:
    text = separator.join(words)
    assert_front_end_copes('#[version = "0.0.5"]\n' + text)
    assert_front_end_copes(text)
    assert_expression_copes(text)


@settings(max_examples=max(150, settings.default.max_examples))
@given(
    st.text(alphabet=st.sampled_from('%@#()[]{},;:=<>+-*/.?!_"\\ \n\r\tabfinx019ĳ'), max_size=60)
)
def test_random_characters(text: str) -> None:
    assert_front_end_copes(text)
    assert_expression_copes(text)


@given(st.text(string.printable, max_size=200) | st.text(max_size=100))
def test_random_text(text: str) -> None:
    assert_front_end_copes(text)


@given(perturbed(st.sampled_from(valid_seed_programs())))
def test_ill_typed_variants_of_the_seed_programs(text: str) -> None:
    assert_front_end_copes(text, "check")


def test_long_whitespace_before_an_error_is_fast() -> None:
    # A starred group of whitespace runs would backtrack exponentially here.
    assert_expression_copes("1" + " \n\t" * 3000 + "$")
    assert_front_end_copes("def @f() {" + " " * 5000)


def test_mutation_changes_the_text() -> None:
    import random

    from relay.testing.fuzz import RandomChooser

    chooser = RandomChooser(random.Random(7))
    changed = sum(mutate(LISTS, chooser) != LISTS for _ in range(50))
    assert changed >= 45
