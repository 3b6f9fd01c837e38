"""`check_pass`: property-test any pass (yours too) on generated well-typed programs.

    from relay.testing import check_pass

    def test_my_pass():
        check_pass(my_pass, ops=["add", "multiply"], idempotent=True)

For each generated program (`dataflow_programs(ops=ops)` unless `programs` is given) the
pass's result must be well-formed and well-typed, keep `@main`'s type, and compute the
same values in the interpreter on `inputs_for(mod)` (floats within `rtol`/`atol`, NaN
equal to NaN); with `idempotent=True`, running the pass on its own result must change
nothing (structural equality). A failure is an `AssertionError` saying which check failed,
with the program before and after and the inputs (hypothesis shrinks it first).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ..lang.diagnostics import Error
from ..lang.module import IRModule
from ..lang.op import Op
from .typed_programs import dataflow_programs, inputs_for

Transform = Callable[[IRModule], IRModule]


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


def _fail(
    check: str, label: str, before: IRModule, after: IRModule | None, detail: str
) -> NoReturn:
    parts = [f"check_pass: {label}: {check}", detail, "program before:", before.astext()]
    if after is not None:
        parts += ["program after:", after.astext()]
    raise AssertionError("\n".join(p for p in parts if p))


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
    except Error as err:
        _fail("the pass raised an error", label, mod, None, err.render())
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
        except Error as err:
            _fail("the second run raised an error", label, after, None, err.render())
        diff = structural_diff(after, twice)
        if diff is not None:
            detail = f"running it again changed the result: {diff}\nafter twice:\n{twice.astext()}"
            _fail("not idempotent", label, mod, after, detail)
    return after


def check_pass(
    pass_or_function: Any,
    programs: st.SearchStrategy[IRModule] | None = None,
    *,
    ops: Sequence[str | Op] | None = None,
    idempotent: bool = False,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    max_examples: int | None = None,
) -> None:
    """Check a pass on hypothesis-generated well-typed programs; `AssertionError` on failure.

    `pass_or_function` is a `Pass`, a `Sequential`, pipeline text (`"fold-constant,dce"`)
    or a plain function `IRModule -> IRModule`. Programs come from `programs`, else from
    `dataflow_programs(ops=ops)`. Passes run under the current `PassContext` if one was
    entered, else under `PassContext(opt_level=3)`. The active hypothesis settings profile
    applies; `max_examples` overrides its number of examples; only the first (shrunk)
    failure is reported. See the module docstring for the checks.
    """
    transform, label = _as_transform(pass_or_function)
    if programs is not None and ops is not None:
        raise ValueError("check_pass: give `programs` or `ops`, not both")
    strategy = programs if programs is not None else dataflow_programs(ops=ops)

    def one(mod: IRModule, data: st.DataObject) -> None:
        inputs = data.draw(inputs_for(mod), label="inputs")
        check_once(transform, label, mod, inputs, idempotent=idempotent, rtol=rtol, atol=atol)

    overrides: dict[str, Any] = {"report_multiple_bugs": False}  # one clear failure
    if max_examples is not None:
        overrides["max_examples"] = max_examples
    settings(**overrides)(given(strategy, st.data())(one))()
