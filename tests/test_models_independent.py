"""Every example model type-checks and runs in the interpreter; ResNet-18, the transformer
layer and the MLP agree with an independent numpy computation (bench/numpy_models.py).

Weights come from examples/make_weights.py (seed 0, in memory). ResNet-18's softmax is
saturated with these weights (logits span about ±300, the top class gets ~0.98), so its
probabilities only check the largest classes: the logits are compared too, on a copy of the
model whose head stops before the softmax.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from relay.backend.runtime import interpret
from relay.grammar import parse
from relay.lang.dtype import numpy_dtype
from relay.lang.module import IRModule
from relay.lang.types import TensorType
from relay.typecheck import check_module

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
MODELS = ["mlp", "lenet", "resnet18", "mobilenet_v2", "transformer_layer", "lstm", "treelstm"]
CLASSIFIERS = {"mlp", "lenet", "resnet18", "mobilenet_v2"}
SOFTMAX_HEAD = "nn.softmax(%logits, axis=1)"


def _load(name: str, path: Path) -> ModuleType:
    """Import a file that is not in a package, once per test session."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


make_weights = _load("relay_examples_make_weights", EXAMPLES / "make_weights.py")
numpy_models = _load("relay_bench_numpy_models", ROOT / "bench" / "numpy_models.py")


def _text(name: str) -> str:
    return (EXAMPLES / f"{name}.relay").read_text(encoding="utf-8")


@functools.cache
def _module(name: str) -> IRModule:
    return parse(_text(name), f"{name}.relay")


@functools.cache
def _weights(name: str) -> dict[str, np.ndarray]:
    return make_weights.make_weights(make_weights.parameter_specs(EXAMPLES / f"{name}.relay"))


@functools.cache
def _interpreted(name: str) -> np.ndarray:
    out = interpret(_module(name), **_weights(name))
    assert isinstance(out, np.ndarray)
    return out


@pytest.mark.parametrize("name", MODELS)
def test_model_type_checks_and_runs_to_its_inferred_type(name: str) -> None:
    types = check_module(_module(name))
    ret = types.global_types["main"].ret_type
    assert isinstance(ret, TensorType) and ret.is_static()
    out = _interpreted(name)
    assert out.shape == ret.shape
    assert out.dtype == numpy_dtype(ret.dtype)
    assert np.isfinite(out).all()
    if name in CLASSIFIERS:
        assert (out >= 0).all()
        np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)
    if name in ("lstm", "treelstm"):  # h = o * tanh(c) with o in (0, 1)
        assert (np.abs(out) < 1).all() and np.abs(out).max() > 0


@pytest.mark.parametrize("name", ["mlp", "resnet18", "transformer_layer"])
def test_model_output_matches_numpy(name: str) -> None:
    expected = numpy_models.MODELS[name](_weights(name))
    assert expected.shape == _interpreted(name).shape
    # atol covers outputs near zero: saturated probabilities, layer-normed values
    atol = 1e-4 if name == "transformer_layer" else 1e-6
    np.testing.assert_allclose(_interpreted(name), expected, rtol=1e-4, atol=atol)


def _resnet18_logits_module() -> IRModule:
    text = _text("resnet18")
    assert text.count(SOFTMAX_HEAD) == 1
    return parse(text.replace(SOFTMAX_HEAD, "%logits"), "resnet18_logits.relay")


def test_resnet18_logits_match_numpy() -> None:
    weights = _weights("resnet18")
    logits = interpret(_resnet18_logits_module(), **weights)
    expected = numpy_models.resnet18_logits(weights)
    assert isinstance(logits, np.ndarray) and logits.shape == expected.shape == (1, 1000)
    assert np.abs(expected).max() > 10  # the softmax saturates: the logits are the check
    scale = float(np.abs(expected).max())
    np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-5 * scale)
    # the comparison is sharp enough to see one batch-norm variance off by 10% in layer4
    changed = dict(weights)
    changed["layer4_1_bn2_var"] = weights["layer4_1_bn2_var"] * np.float32(1.1)
    off = numpy_models.resnet18_logits(changed)
    assert not np.allclose(logits, off, rtol=1e-4, atol=1e-5 * scale)
