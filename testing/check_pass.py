"""`check_pass`: property-test any pass (yours too) on generated well-typed programs; the
contract is in `help(check_pass)`. `check_once` runs the same checks on one program."""

from __future__ import annotations

import random
import traceback
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

import numpy as np
from attrs import frozen
from hypothesis import Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from ..lang.diagnostics import Error
from ..lang.module import IRModule
from ..lang.op import Op
from .shrink_bindings import shrink_bindings
from .typed_programs import dataflow_programs, inputs_for

Transform = Callable[[IRModule], IRModule]

INLINE_CONSTANTS = 16
"""Constants of at most this many elements show their values in reports."""


def _as_transform(pass_or_function: Any) -> tuple[Transform, str]:
    """A callable IRModule -> IRModule for a `Pass`, a `Sequential`, pipeline text or a
    plain function, and a name for messages."""
    from ..passes import Pass, PassContext, Sequential, parse_pipeline

    if isinstance(pass_or_function, str):
        pass_or_function = parse_pipeline(pass_or_function)
    if isinstance(pass_or_function, Pass | Sequential):
        runnable = pass_or_function
        label = f"pass '{runnable}'"

        def run(mod: IRModule) -> IRModule:
            # Under an entered context, its settings; otherwise every pass of a pipeline runs.
            entered = bool(PassContext._stack)
            ctx = PassContext.current() if entered else PassContext(opt_level=3)
            return runnable(mod, ctx)

        return run, label
    if callable(pass_or_function):
        name = getattr(pass_or_function, "__name__", type(pass_or_function).__name__)
        return pass_or_function, f"function {name}"
    raise TypeError(
        "check_pass: expected a Pass, pipeline text or a function IRModule -> IRModule, "
        f"not {type(pass_or_function).__name__}"
    )


def _show_inputs(inputs: Mapping[str, Any]) -> str:
    lines = []
    for name, value in inputs.items():
        text = np.array2string(np.asarray(value), threshold=64) if _is_array(value) else repr(value)
        lines.append(f"  %{name} = {text}")
    return "\n".join(lines) or "  (none)"


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray | np.generic)


def _text(mod: IRModule) -> str:
    return mod.astext(inline_constants=INLINE_CONSTANTS)


def _fail(
    check: str, label: str, before: IRModule, after: IRModule | None, detail: str
) -> NoReturn:
    parts = [f"check_pass: {label}: {check}", detail, "program before:", _text(before)]
    if after is not None:
        parts += ["program after:", _text(after)]
    raise AssertionError("\n".join(p for p in parts if p))


def _crash_text(err: Exception) -> str:
    if isinstance(err, Error):
        return err.render()
    frames = traceback.extract_tb(err.__traceback__)[-3:]
    where = "".join(traceback.format_list(frames))
    return f"{type(err).__name__}: {err}\n{where}".rstrip()


def _main_type(mod: IRModule) -> str | None:
    from ..typecheck import infer_module
    from ..typecheck.show import type_text

    sig = infer_module(mod).global_types.get("main")
    return None if sig is None else type_text(sig)


def check_once(
    transform: Transform,
    label: str,
    mod: IRModule,
    inputs: Mapping[str, Any],
    *,
    idempotent: bool = False,
    rtol: float = 1e-5,
    atol: float = 1e-6,
) -> IRModule:
    """Run every check of `check_pass` on one program and one set of inputs; returns the
    transformed module, raises `AssertionError` describing the first failed check."""
    from ..backend.runtime import interpret
    from ..lang.structural import structural_diff
    from ..passes import check_well_formed, values_close

    try:
        after = transform(mod)
    except Exception as err:  # a crash of the pass is a finding like any other
        _fail("the pass raised an error", label, mod, None, _crash_text(err))
    if not isinstance(after, IRModule):
        _fail("the result is not an IRModule", label, mod, None, repr(after))
    try:
        check_well_formed(after, "the result")
    except Error as err:
        _fail("the result is not well-formed", label, mod, after, err.message)
    expected_type = _main_type(mod)
    try:
        actual_type = _main_type(after)
    except Error as err:
        _fail("the result does not type-check", label, mod, after, err.render())
    if actual_type != expected_type:
        detail = f"@main had type {expected_type}, now {actual_type}"
        _fail("the type of @main changed", label, mod, after, detail)
    expected = interpret(mod, **inputs)
    shown = "inputs:\n" + _show_inputs(inputs)
    try:
        actual = interpret(after, **inputs)
    except Error as err:
        _fail("the result fails to run", label, mod, after, f"{err.render()}\n{shown}")
    if not values_close(expected, actual, rtol, atol):
        detail = f"expected {expected!r}\ngot {actual!r}\n{shown}"
        _fail(f"the values differ (rtol={rtol}, atol={atol})", label, mod, after, detail)
    if idempotent:
        try:
            twice = transform(after)
        except Exception as err:
            _fail("the second run raised an error", label, after, None, _crash_text(err))
        diff = structural_diff(after, twice)
        if diff is not None:
            detail = f"running it again changed the result: {diff}\nafter twice:\n{_text(twice)}"
            _fail("not idempotent", label, mod, after, detail)
    return after


@frozen
class CheckPassReport:
    """What a passing `check_pass` saw: how many programs the pass changed, of how many
    it ran on, and the seed of the run."""

    label: str
    changed: int
    total: int
    seed: int

    def __repr__(self) -> str:
        return (
            f"check_pass: {self.label} changed {self.changed} of {self.total} programs "
            f"(seed={self.seed})"
        )


def _pick_seed(seed: int | None, label: str) -> int:
    if seed is not None:
        return seed
    if settings.default is not None and settings.default.derandomize:
        return zlib.crc32(label.encode())  # a derandomized profile: the same seed every run
    return random.SystemRandom().randrange(2**32)


def _first_line(message: str) -> str:
    return message.split("\n", 1)[0]


def check_pass(
    pass_or_function: Any,
    programs: st.SearchStrategy[IRModule] | None = None,
    *,
    ops: Sequence[str | Op] | None = None,
    idempotent: bool = False,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    max_examples: int | None = None,
    min_changed: float = 0.0,
    seed: int | None = None,
    shrink: bool = True,
) -> CheckPassReport:
    """Check a pass on hypothesis-generated well-typed programs against the interpreter.

        from relay.testing import check_pass, programs_around

        def test_my_pass():
            check_pass(my_pass, ops=["add", "multiply"], idempotent=True)
            check_pass(my_fold, programs_around(my_pattern), min_changed=0.5)

    What is checked. `pass_or_function` is a `Pass`, a `Sequential`, pipeline text
    (`"fold-constant,dce"`) or a function `IRModule -> IRModule`. For each program (from
    `programs`, a strategy such as `programs_around(pattern)`, else `dataflow_programs(
    ops=ops)`) and inputs from `inputs_for(mod)`, the result of the pass must

    1. be produced without an exception,
    2. be an `IRModule`, well-formed and well-typed, with `@main`'s type unchanged,
    3. compute the same values as the program in the interpreter (floats within `rtol` /
       `atol`, NaN equal to NaN),
    4. with `idempotent=True`, come back structurally equal when the pass runs on it again.

    Coverage. A pass that never fires passes every check. `check_pass` counts the programs
    the pass changed (structurally) and returns a `CheckPassReport` whose repr reads
    "check_pass: pass 'p' changed N of M programs (seed=S)". With `min_changed=f` (a
    fraction in [0, 1]), fewer than `f * M` changed programs is a failure too: the rewrite
    rarely fires on these programs; generate programs that contain its pattern.

    Failures. The first failing program is shrunk by hypothesis, then (with `shrink`, for
    dataflow programs) to the bindings the failure needs: unrelated outputs are dropped,
    calls after the fault are bypassed and calls before it become parameters that take the
    values they had. The `AssertionError` says which check failed and shows the program
    before and after (constants of up to 16 elements with their values), the inputs, and
    the seed that reproduces it: `check_pass(..., seed=S)` with the same settings.
    Hypothesis's own example dump and explanation lines are left out.

    Settings. Passes run under the current `PassContext` if one was entered, else under
    `PassContext(opt_level=3)`. The active hypothesis settings profile applies, except
    that there is no example database (the seed is what reproduces a run);
    `max_examples` overrides its number of examples. Without `seed`, a random one (a
    fixed one under a profile with `derandomize=True`).
    """
    transform, label = _as_transform(pass_or_function)
    if programs is not None and ops is not None:
        raise ValueError("check_pass: give `programs` or `ops`, not both")
    if not 0.0 <= min_changed <= 1.0:
        raise ValueError(f"check_pass: min_changed is a fraction in [0, 1], not {min_changed}")
    strategy = programs if programs is not None else dataflow_programs(ops=ops)
    chosen_seed = _pick_seed(seed, label)
    options = {"idempotent": idempotent, "rtol": rtol, "atol": atol}
    counts = {"total": 0, "changed": 0}
    failing: list[tuple[IRModule, dict[str, Any]]] = []

    def one(program: _Shown, data: st.DataObject) -> None:
        mod = program.mod
        inputs = data.draw(inputs_for(mod), label="inputs")
        try:
            after = check_once(transform, label, mod, inputs, **options)  # type: ignore[arg-type]
        except AssertionError:
            failing.append((mod, inputs))
            raise
        counts["total"] += 1
        if after is not mod and _changed(mod, after):
            counts["changed"] += 1

    overrides: dict[str, Any] = {
        "report_multiple_bugs": False,  # one clear failure
        "database": None,
        "phases": (Phase.generate, Phase.shrink),  # no "explain" phase
    }
    if max_examples is not None:
        overrides["max_examples"] = max_examples
    shown = strategy.map(_Shown)
    test = hypothesis_seed(chosen_seed)(settings(**overrides)(given(shown, st.data())(one)))
    try:
        test()
    except AssertionError as err:
        if not failing:
            raise
        mod, inputs = failing[-1]  # hypothesis runs the shrunk example last
        message = _report(transform, label, mod, inputs, options, str(err), shrink)
        raise AssertionError(f"{message}\nreproduce: check_pass(..., seed={chosen_seed})") from None
    report = CheckPassReport(label, counts["changed"], counts["total"], chosen_seed)
    if counts["changed"] < min_changed * counts["total"] or (min_changed and not counts["total"]):
        raise AssertionError(
            f"{report!r}: fewer than min_changed={min_changed} of them; the rewrite rarely "
            "fires on these programs (generate programs that contain its pattern, e.g. "
            "with relay.testing.programs_around)"
        )
    return report


class _Shown:
    """A generated module whose repr (which hypothesis computes for every failing example)
    is the short program text, not the repr of every node."""

    __slots__ = ("mod",)

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod

    def __repr__(self) -> str:
        return _text(self.mod)


def _changed(before: IRModule, after: IRModule) -> bool:
    from ..lang.structural import structural_diff

    return structural_diff(before, after) is not None


def _report(
    transform: Transform,
    label: str,
    mod: IRModule,
    inputs: dict[str, Any],
    options: dict[str, Any],
    message: str,
    shrink: bool,
) -> str:
    """The failure message of the smallest failing program found from `mod`."""
    if not message.startswith("check_pass: "):
        return message
    check = _first_line(message)

    def fails(candidate: IRModule, candidate_inputs: Mapping[str, Any]) -> bool:
        try:
            check_once(transform, label, candidate, candidate_inputs, **options)
        except AssertionError as err:
            return _first_line(str(err)) == check
        return False

    if shrink:
        mod, inputs = shrink_bindings(mod, inputs, fails)
    try:
        check_once(transform, label, mod, inputs, **options)
    except AssertionError as err:
        return str(err)
    return message
