"""Generated programs for the fuzz stages, outside of a hypothesis test.

`sample(strategy, rng)` runs any hypothesis strategy on random bytes (hypothesis's
`fuzz_one_input`), so the well-typed program generators of `typed_programs` and the
syntactic modules of `strategies` serve long seeded runs too. `make_inputs(mod, seed)`
gives `@main` deterministic inputs, so a program's text and a seed reproduce a run.
"""

from __future__ import annotations

import random
from typing import Any, TypeVar

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ...lang.dtype import numpy_dtype
from ...lang.module import IRModule
from ...lang.types import TensorType, TupleType, Type
from ..strategies import modules
from ..typed_programs import dataflow_programs, functional_programs

_T = TypeVar("_T")
_SAMPLERS: dict[int, tuple[st.SearchStrategy[Any], Any, list[Any]]] = {}
_QUIET = settings(
    database=None, deadline=None, suppress_health_check=list(HealthCheck), max_examples=1
)


def sample(strategy: st.SearchStrategy[_T], rng: random.Random, size: int = 4096) -> _T:
    """A value of `strategy` made from random bytes drawn from `rng` (deterministic)."""
    entry = _SAMPLERS.get(id(strategy))
    if entry is None or entry[0] is not strategy:
        box: list[Any] = []

        @_QUIET
        @given(strategy)
        def capture(value: Any) -> None:
            box.append(value)

        runner: Any = capture  # `given` adds `.hypothesis.fuzz_one_input`
        entry = _SAMPLERS[id(strategy)] = (strategy, runner, box)
    _, runner, box = entry
    for attempt in range(8):  # a buffer too short for the value: try a longer one
        box.clear()
        runner.hypothesis.fuzz_one_input(rng.randbytes(size << attempt))
        if box:
            return box[0]  # type: ignore[no-any-return]
    raise RuntimeError(f"could not draw a value from {strategy!r}")


# One strategy object each (hypothesis validates each new strategy once).
DATAFLOW = {
    "float32": dataflow_programs(max_ops=10),
    "mixed": dataflow_programs(max_ops=10, dtypes=("float32", "int32")),
    "integer": dataflow_programs(max_ops=8, dtypes=("int32", "int8", "bool")),
}
FUNCTIONAL = functional_programs(max_depth=4, max_size=30)
SYNTACTIC = modules(max_depth=3)


def well_typed_program(rng: random.Random) -> IRModule:
    """A generated well-typed module: a dataflow graph over the operator library (mostly
    float32, sometimes with integer or bool tensors) or a functional program."""
    roll = rng.randrange(100)
    if roll < 35:
        return sample(FUNCTIONAL, rng)
    if roll < 75:
        return sample(DATAFLOW["float32"], rng)
    if roll < 92:
        return sample(DATAFLOW["mixed"], rng)
    return sample(DATAFLOW["integer"], rng)


def syntactic_program(rng: random.Random) -> IRModule:
    """A generated well-formed module that is usually ill-typed (`strategies.modules`)."""
    return sample(SYNTACTIC, rng)


def _value(t: Type, rng: np.random.Generator) -> Any:
    if isinstance(t, TupleType):
        return tuple(_value(f, rng) for f in t.fields)
    if not isinstance(t, TensorType):
        raise ValueError(f"make_inputs: cannot make a value of type {t}")
    shape = [d if isinstance(d, int) else 2 for d in t.shape]  # symbolic and `?`: 2
    dtype = numpy_dtype(t.dtype)
    if dtype.kind == "b":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -4, 5, shape).astype(dtype)
    return (np.round(rng.uniform(-2.0, 2.0, shape) * 16) / 16).astype(dtype)


def make_inputs(mod: IRModule, seed: int) -> dict[str, Any]:
    """Inputs for `@main`: floats in [-2, 2] (multiples of 1/16), integers in [-4, 4],
    random bools, symbolic dimensions of size 2; the same for the same seed."""
    rng = np.random.default_rng(seed)
    main = mod["main"]
    out = {}
    for p in main.params:
        if p.type_annotation is None:
            raise ValueError(f"make_inputs: parameter %{p.name_hint} of @main has no type")
        out[p.name_hint] = _value(p.type_annotation, rng)
    return out
