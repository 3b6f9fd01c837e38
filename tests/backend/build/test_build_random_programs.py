"""Hypothesis-generated dataflow programs (random operators, shapes, attributes and
sharing) compiled to native code agree with the interpreter."""

from __future__ import annotations

import numpy as np
import relay
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from relay.backend.runtime import interpret
from relay.testing import dataflow_programs, inputs_for

COMMON_OPS = [
    "add", "multiply", "subtract", "divide", "maximum", "exp", "tanh", "sigmoid", "nn.relu",
    "sqrt", "abs", "negative", "nn.conv2d", "nn.dense", "nn.bias_add", "nn.batch_norm",
    "nn.softmax", "nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d", "sum", "mean",
    "max", "reshape", "transpose", "concatenate", "strided_slice", "expand_dims", "squeeze",
    "nn.batch_matmul", "nn.layer_norm", "clip", "cast", "where", "take", "argmax",
]  # fmt: skip


def _agree(ours, expected):
    if isinstance(expected, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(expected)
        for a, b in zip(ours, expected):
            _agree(a, b)
        return
    assert ours.shape == expected.shape and ours.dtype == expected.dtype
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-4, equal_nan=True)
    else:
        np.testing.assert_array_equal(ours, expected)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(mod=dataflow_programs(ops=COMMON_OPS, max_ops=8), data=st.data())
def test_random_programs_compile_and_agree(mod, data):
    inputs = data.draw(inputs_for(mod))
    with np.errstate(all="ignore"):
        expected = interpret(mod, **inputs)
    model = relay.build(mod)
    assert model.native and model.stats.fallback_kernels == 0
    with np.errstate(all="ignore"):
        _agree(model.run(**inputs), expected)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(mod=dataflow_programs(max_ops=6, dtypes=("float32", "int32", "int8")), data=st.data())
def test_random_programs_of_every_operator_compile_and_agree(mod, data):
    inputs = data.draw(inputs_for(mod))
    with np.errstate(all="ignore"):
        expected = interpret(mod, **inputs)
    model = relay.build(mod)
    assert model.native and model.stats.fallback_kernels == 0
    with np.errstate(all="ignore"):
        _agree(model.run(**inputs), expected)
