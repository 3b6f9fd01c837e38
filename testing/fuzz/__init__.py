"""`relay.testing.fuzz`: mutation and grammar fuzzing, ill-typed program generation, the
fuzz stages with their outcome classification, a minimizer and a campaign runner.

    from relay.testing.fuzz import mutants, run_stage

    @given(mutants())
    def test_parser_never_crashes(text):
        assert not any(o.is_finding for o in run_stage("parse", text))

* `tokens`: a lossless tokenizer of Relay text;
* `mutate`: token-aware mutators (`mutate`, `perturb`) and their hypothesis strategies;
* `grammar_gen`: texts derived from the parser's grammar (`generate`, `grammar_texts`);
* `corpus`: the seed programs (examples, prelude, hand-written, their items);
* `programs`: generated programs outside hypothesis tests (`sample`) and their inputs;
* `stages`: `parse`, `check`, `opt`, `build` and the outcome kinds (`Outcome`);
* `minimize`: delta debugging over lines, then tokens;
* `inputs`, `campaign`: the inputs of a seeded run and the multi-process runner behind
  `bench/fuzz.py`, which writes each finding as a minimized `.relay` case (`replay`).
"""

from .campaign import Campaign, Finding, StageStats, minimize_finding, replay, run_batch
from .choice import Chooser, DrawChooser, RandomChooser
from .corpus import seed_programs, valid_seed_programs
from .grammar_gen import generate, grammar_texts
from .inputs import FuzzInput, make_input
from .minimize import minimize, same_finding
from .mutate import mutants, mutate, perturb, perturbed
from .programs import make_inputs, sample, syntactic_program, well_typed_program
from .stages import FINDINGS, STAGES, Outcome, builtin_passes, run_stage, worst
from .tokens import Token, tokenize

__all__ = [
    "FINDINGS",
    "STAGES",
    "Campaign",
    "Chooser",
    "DrawChooser",
    "Finding",
    "FuzzInput",
    "Outcome",
    "RandomChooser",
    "StageStats",
    "Token",
    "builtin_passes",
    "generate",
    "grammar_texts",
    "make_input",
    "make_inputs",
    "minimize",
    "minimize_finding",
    "mutants",
    "mutate",
    "perturb",
    "perturbed",
    "replay",
    "run_batch",
    "run_stage",
    "same_finding",
    "sample",
    "seed_programs",
    "syntactic_program",
    "tokenize",
    "valid_seed_programs",
    "well_typed_program",
    "worst",
]
