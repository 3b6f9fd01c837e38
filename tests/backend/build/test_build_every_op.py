"""Every operator, compiled to native code, agrees with the interpreter on random valid
calls (shapes from `relay.testing.op_calls`, so sizes no vector width divides occur).

Each test builds one module whose `@main` makes three independent calls of the operator
(one kernel each) and returns them as a tuple, so one LLVM compilation covers three calls.
"""

from __future__ import annotations

import numpy as np
import pytest
import relay
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from relay.backend.runtime import interpret
from relay.lang import Call, Constant, Function, IRModule, Tuple, Var, all_ops
from relay.lang.dtype import numpy_dtype
from relay.testing import op_calls
from relay.testing.typed_ops import GENERATORS, Nonzero, OpCall

DTYPES = ("float32", "int32", "int8", "uint8", "bool", "float64")
CALLS_PER_MODULE = 3


def _value(spec: object, rng: np.random.Generator) -> np.ndarray:
    t = spec.type if isinstance(spec, Nonzero) else spec
    dtype = numpy_dtype(t.dtype)  # type: ignore[attr-defined]
    shape = tuple(int(d) for d in t.shape)  # type: ignore[attr-defined]
    if dtype.kind == "b":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind in "iu":
        value = rng.integers(0 if dtype.kind == "u" else -5, 6, shape).astype(dtype)
        if isinstance(spec, Nonzero):
            value[value == 0] = 1
        return np.asarray(value)
    value = rng.uniform(-2, 2, shape).astype(dtype)
    if isinstance(spec, Nonzero):
        value[np.abs(value) < 0.1] = 0.5
    return value


def _module(
    calls: list[OpCall], rng: np.random.Generator
) -> tuple[IRModule, dict[str, np.ndarray]]:
    params: list[Var] = []
    inputs: dict[str, np.ndarray] = {}
    results = []
    for c, call in enumerate(calls):
        args = []
        for a, spec in enumerate(call.args):
            if isinstance(spec, np.ndarray):
                args.append(Constant(spec))
                continue
            t = spec.type if isinstance(spec, Nonzero) else spec
            var = Var(f"c{c}_a{a}", t)
            params.append(var)
            inputs[var.name_hint] = _value(spec, rng)
            args.append(var)
        results.append(Call(call.op, [Tuple(args)] if call.tuple_arg else args, call.attrs))
    return IRModule.from_expr(Function(params, Tuple(results))), inputs


def _assert_agrees(ours, expected, where):
    if isinstance(expected, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(expected), where
        for k, (a, b) in enumerate(zip(ours, expected)):
            _assert_agrees(a, b, f"{where}.{k}")
        return
    assert ours.shape == expected.shape and ours.dtype == expected.dtype, where
    if expected.dtype.kind == "f":
        tol = 1e-3 if expected.dtype == np.float16 else 2e-5
        np.testing.assert_allclose(
            ours, expected, rtol=tol, atol=tol, equal_nan=True, err_msg=where
        )
    else:
        np.testing.assert_array_equal(ours, expected, err_msg=where)


@pytest.mark.parametrize("op", [op for op in all_ops() if op in GENERATORS], ids=lambda op: op.name)
@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_operator_compiles_and_agrees_with_the_interpreter(op, data, seed):
    calls = [data.draw(op_calls(op, DTYPES)) for _ in range(CALLS_PER_MODULE)]
    rng = np.random.default_rng(seed)
    mod, inputs = _module(calls, rng)
    with np.errstate(all="ignore"):
        expected = interpret(mod, **inputs)
    model = relay.build(mod)
    assert model.native, getattr(model, "reason", "")
    assert model.stats.fallback_kernels == 0
    with np.errstate(all="ignore"):
        ours = model.run(**inputs)
    _assert_agrees(ours, expected, op.name)
