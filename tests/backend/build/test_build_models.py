"""Every example model compiled to native code agrees with the interpreter; weights bound
as constants fold away and still agree. (Artifacts and memory planning: tests/backend/build.)"""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import relay
from relay import build
from relay.backend.runtime import interpret

ROOT = Path(__file__).resolve().parents[3]
FIRST_ORDER_MODELS = ["mlp", "lenet", "resnet18", "mobilenet_v2", "transformer_layer"]


def _weights_module():
    spec = importlib.util.spec_from_file_location(
        "make_weights", ROOT / "examples" / "make_weights.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_weights"] = module
    spec.loader.exec_module(module)
    return module


def _model_and_inputs(name):
    weights = _weights_module()
    module = relay.parse_file(ROOT / "examples" / f"{name}.relay")
    inputs = weights.make_weights(weights.parameter_specs(name), seed=0)
    return module, inputs


def _assert_close(ours, expected):
    if isinstance(expected, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(expected)
        for a, b in zip(ours, expected):
            _assert_close(a, b)
        return
    assert ours.shape == expected.shape and ours.dtype == expected.dtype
    np.testing.assert_allclose(ours, expected, rtol=2e-4, atol=2e-5)


@pytest.fixture(scope="module")
def compiled():
    return {}


@pytest.mark.parametrize("name", FIRST_ORDER_MODELS)
def test_example_model_compiles_natively_and_agrees(name, compiled):
    module, inputs = _model_and_inputs(name)
    model = build(module, target="llvm", opt_level=3)
    assert model.native, getattr(model, "reason", "")
    assert model.stats.fallback_kernels == 0
    _assert_close(model.run(**inputs), interpret(module, **inputs))
    compiled[name] = model


def test_treelstm_with_adts_runs_in_the_vm_and_agrees():
    module, inputs = _model_and_inputs("treelstm")
    model = build(module, target="llvm")
    assert model.native and model.stats.executor == "vm" and model.reason
    _assert_close(model.run(**inputs), interpret(module, **inputs))


def test_binding_the_weights_as_constants_folds_them_and_still_agrees():
    module, inputs = _model_and_inputs("mobilenet_v2")
    data = module["main"].params[0].name_hint
    weights = {k: v for k, v in inputs.items() if k != data}
    unbound = build(module)
    bound = build(module, params=weights)
    assert bound.native and bound.input_names == (data,)
    assert bound.stats.kernels < unbound.stats.kernels  # parameter-only groups folded away
    _assert_close(bound.run(**{data: inputs[data]}), interpret(module, **inputs))


def test_binding_an_unknown_or_ill_shaped_parameter_is_an_error_naming_it():
    module, inputs = _model_and_inputs("mlp")
    with pytest.raises(relay.Error, match="cannot bind `nope`"):
        build(module, params={"nope": inputs["fc1_bias"]})
    with pytest.raises(relay.Error, match="fc1_bias"):
        build(module, params={"fc1_bias": inputs["fc2_bias"]})
