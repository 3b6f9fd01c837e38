"""The inputs of each fuzz stage, made from (seed, stage, index) alone, so any input of a
long run can be made again from three numbers.

* `parse`: mutants of the seed programs (examples, prelude, hand-written, their items),
  texts from the grammar, mutants of printed syntactic modules, truncations, token soup
  and random characters;
* `check`: ill-typed variants of generated well-typed programs and of the valid seed
  programs (`perturb`), printed syntactic modules (usually ill-typed), mutants;
* `opt` and `build`: generated well-typed programs, printed (valid by construction: a
  diagnostic for one is a finding too).
"""

from __future__ import annotations

import functools
import random
import string

from attrs import frozen

from .choice import RandomChooser, pick
from .corpus import seed_programs, valid_seed_programs
from .grammar_gen import generate
from .mutate import VOCABULARY, mutate, perturb
from .programs import syntactic_program, well_typed_program


@frozen
class FuzzInput:
    """One program for one stage: its text, the seed of its run-time inputs, whether it is
    valid by construction, and how it was made."""

    stage: str
    index: int
    text: str
    seed: int
    valid: bool
    origin: str


POOL = 256  # generated programs are slow to make: mutants start from a pool of them
EPOCH = 20000  # inputs after which the pool is renewed


@functools.lru_cache(maxsize=2 * POOL)
def _pooled(seed: int, kind: str, number: int) -> str:
    rng = random.Random(f"{seed}/{kind}/{number}")
    program = syntactic_program(rng) if kind == "syntactic" else well_typed_program(rng)
    return program.astext()


def _from_pool(rng: random.Random, index: int, kind: str) -> str:
    seed = rng.randrange(2**32) if rng.randrange(20) == 0 else 0  # 5%: a fresh one
    return _pooled(seed, kind, rng.randrange(POOL) + POOL * (index // EPOCH))


def _parse_input(rng: random.Random, chooser: RandomChooser, index: int) -> tuple[str, str]:
    roll = rng.randrange(100)
    seeds = seed_programs()
    if roll < 45:
        return mutate(pick(chooser, seeds), chooser, seeds), "mutant of a seed program"
    if roll < 58:
        return generate(chooser, "module", 20 + rng.randrange(120)), "grammar (module)"
    if roll < 63:
        body = generate(chooser, "expression", 10 + rng.randrange(60))
        return f'#[version = "0.0.5"]\ndef @main() {{\n{body}\n}}\n', "grammar (expression)"
    if roll < 78:
        text = _from_pool(rng, index, "syntactic")
        return mutate(text, chooser, seeds), "mutant of a syntactic module"
    if roll < 88:
        text = pick(chooser, seeds)
        return text[: rng.randrange(len(text) + 1)], "truncated seed program"
    if roll < 96:
        words = [pick(chooser, VOCABULARY) for _ in range(rng.randrange(40))]
        return rng.choice([" ", ""]).join(words), "token soup"
    chars = string.printable + "λ\x00\u2028"
    return "".join(rng.choice(chars) for _ in range(rng.randrange(200))), "random characters"


def _check_input(rng: random.Random, chooser: RandomChooser, index: int) -> tuple[str, str]:
    roll = rng.randrange(100)
    if roll < 40:
        text = _from_pool(rng, index, "well-typed")
        return perturb(text, chooser), "perturbed well-typed program"
    if roll < 60:
        return perturb(pick(chooser, valid_seed_programs()), chooser), "perturbed seed program"
    if roll < 70:
        return syntactic_program(rng).astext(), "syntactic module"
    if roll < 80:
        return perturb(_from_pool(rng, index, "syntactic"), chooser), "perturbed syntactic module"
    seeds = seed_programs()
    return mutate(pick(chooser, seeds), chooser, seeds), "mutant of a seed program"


def make_input(stage: str, seed: int, index: int) -> FuzzInput:
    """Input number `index` of `stage` in the run with `seed` (deterministic)."""
    rng = random.Random(f"{seed}/{stage}/{index}")
    chooser = RandomChooser(rng)
    inputs_seed = rng.randrange(2**32)
    if stage == "parse":
        text, origin = _parse_input(rng, chooser, index)
        return FuzzInput(stage, index, text, inputs_seed, False, origin)
    if stage == "check":
        text, origin = _check_input(rng, chooser, index)
        return FuzzInput(stage, index, text, inputs_seed, False, origin)
    if stage in ("opt", "build"):
        text = well_typed_program(rng).astext()
        return FuzzInput(stage, index, text, inputs_seed, True, "generated well-typed program")
    raise ValueError(f"unknown fuzz stage `{stage}`")
