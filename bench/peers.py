"""PyTorch and ONNX Runtime versions of the example models, for bench/bench_native.py.

Every function here computes exactly what the example's `@main` computes, with the weights
of `examples/make_weights.py` (a dict keyed by `@main`'s parameter names without `%`,
`data` included):

* `torch_mlp` and `torch_mobilenet_v2` are written here, layer by layer after
  examples/mlp.relay and examples/mobilenet_v2.relay (the same strides, paddings, groups,
  ReLU6 as `clip(x, 0, 6)`, batch norm with epsilon 1e-5, residual adds only where the
  .relay adds them);
* ResNet-18 and the transformer layer are the functions of bench/compare_torch.py
  (imported, not copied); `TORCH_MODELS["resnet18"]` keeps the probabilities, which is
  what `@main` returns.

`torch_module` wraps one of them as an `nn.Module` whose weights are buffers and whose only
input is `data`, and `export_onnx` writes that module with the TorchScript exporter
(`dynamo=False`) for `onnxruntime_session`. PyTorch and ONNX Runtime are optional (the
`bench` extra): `import_torch` and `import_onnxruntime` return None, after printing how
to install them, when they are missing.

bench/ is not a package: import this file by path, e.g. with `load_file`.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
INSTALL_HINT = "pip install -e '.[bench]'"
"""How to install the optional peers (PyTorch, ONNX, ONNX Runtime), from the checkout."""
BN_EPSILON = 1e-5
"""nn.batch_norm's default epsilon, which every example uses."""
ONNX_OPSET = 17
"""The ONNX opset of exported models (17 has LayerNormalization)."""


def load_file(name: str, path: Path) -> ModuleType:
    """Import a Python file that is not in a package (bench/, examples/) as `name`.

    A module already imported under `name` from the same file is reused.
    """
    loaded = sys.modules.get(name)
    if loaded is not None and Path(getattr(loaded, "__file__", "")).resolve() == path.resolve():
        return loaded
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_sibling(name: str) -> ModuleType:
    """Import `bench/<name>.py` (compare_torch, numpy_models, ...)."""
    return load_file(name, BENCH_DIR / f"{name}.py")


def load_make_weights() -> ModuleType:
    """Import examples/make_weights.py (weights of the example models, seed 0)."""
    return load_file("make_weights", ROOT / "examples" / "make_weights.py")


def _missing(what: str, module: str) -> None:
    print(f"{what} is not installed (`import {module}` failed): its column is skipped.")
    print(f"  Install the optional peers with `{INSTALL_HINT}` from the checkout.")


def import_torch(quiet: bool = False) -> Any | None:
    """The `torch` module, or None (with a hint to install it unless `quiet`)."""
    try:
        import torch
    except ImportError:
        if not quiet:
            _missing("PyTorch", "torch")
        return None
    return torch


def import_onnxruntime(quiet: bool = False) -> Any | None:
    """The `onnxruntime` module, or None (with a hint to install it unless `quiet`)."""
    try:
        import onnxruntime
    except ImportError:
        if not quiet:
            _missing("ONNX Runtime", "onnxruntime")
        return None
    return onnxruntime


# ---------------------------------------------------------------------------- models


def _batch_norm(torch: Any, w: Mapping[str, Any], x: Any, prefix: str) -> Any:
    """Inference batch norm with `<prefix>_gamma/_beta/_mean/_var`."""
    return torch.nn.functional.batch_norm(
        x,
        w[f"{prefix}_mean"],
        w[f"{prefix}_var"],
        w[f"{prefix}_gamma"],
        w[f"{prefix}_beta"],
        False,
        0.0,
        BN_EPSILON,
    )


def torch_mlp(torch: Any, w: Mapping[str, Any]) -> Any:
    """examples/mlp.relay: 784 -> 512 -> 256 -> 10 with ReLU, then softmax (1, 10)."""
    f = torch.nn.functional
    h = f.relu(f.linear(w["data"], w["fc1_weight"], w["fc1_bias"]))
    h = f.relu(f.linear(h, w["fc2_weight"], w["fc2_bias"]))
    return f.softmax(f.linear(h, w["fc3_weight"], w["fc3_bias"]), dim=1)


MOBILENET_V2_BLOCKS: tuple[tuple[int, int, int, int], ...] = (
    # (expansion t, input channels, output channels, stride) of block1 .. block17
    (1, 32, 16, 1),
    (6, 16, 24, 2),
    (6, 24, 24, 1),
    (6, 24, 32, 2),
    (6, 32, 32, 1),
    (6, 32, 32, 1),
    (6, 32, 64, 2),
    (6, 64, 64, 1),
    (6, 64, 64, 1),
    (6, 64, 64, 1),
    (6, 64, 96, 1),
    (6, 96, 96, 1),
    (6, 96, 96, 1),
    (6, 96, 160, 2),
    (6, 160, 160, 1),
    (6, 160, 160, 1),
    (6, 160, 320, 1),
)
"""The 17 inverted residual blocks of examples/mobilenet_v2.relay, in order."""


def torch_mobilenet_v2(torch: Any, w: Mapping[str, Any]) -> Any:
    """examples/mobilenet_v2.relay: class probabilities (1, 1000).

    Stem conv 3x3/2 (padding 1) + bn + relu6; 17 inverted residual blocks (1x1 expansion
    conv + bn + relu6 when t > 1, depthwise 3x3 with the block's stride and padding 1 + bn
    + relu6, 1x1 projection + bn, plus the input when the stride is 1 and the channel
    counts agree); head conv 1x1 to 1280 + bn + relu6, global average pool, dense 1000,
    softmax. relu6 is clamp(x, 0, 6), as the .relay's `clip`.
    """
    f = torch.nn.functional

    def relu6(x: Any) -> Any:
        return torch.clamp(x, 0.0, 6.0)

    x = f.conv2d(w["data"], w["stem_conv_weight"], stride=2, padding=1)
    x = relu6(_batch_norm(torch, w, x, "stem_bn"))
    for index, (expansion, cin, cout, stride) in enumerate(MOBILENET_V2_BLOCKS, start=1):
        p = f"block{index}"
        h = x
        if expansion != 1:
            h = relu6(_batch_norm(torch, w, f.conv2d(h, w[f"{p}_expand_weight"]), f"{p}_expand_bn"))
        hidden = cin * expansion
        h = f.conv2d(h, w[f"{p}_depthwise_weight"], stride=stride, padding=1, groups=hidden)
        h = relu6(_batch_norm(torch, w, h, f"{p}_depthwise_bn"))
        h = _batch_norm(torch, w, f.conv2d(h, w[f"{p}_project_weight"]), f"{p}_project_bn")
        x = h + x if stride == 1 and cin == cout else h
    x = relu6(_batch_norm(torch, w, f.conv2d(x, w["head_conv_weight"]), "head_bn"))
    pooled = f.adaptive_avg_pool2d(x, 1).flatten(1)
    return f.softmax(f.linear(pooled, w["fc_weight"], w["fc_bias"]), dim=1)


def torch_resnet18(torch: Any, w: Mapping[str, Any]) -> Any:
    """examples/resnet18.relay: class probabilities (1, 1000) (bench/compare_torch.py's
    network, which also returns the logits)."""
    return load_sibling("compare_torch").torch_resnet18(torch, w)[1]


def torch_resnet18_logits(torch: Any, w: Mapping[str, Any]) -> Any:
    """ResNet-18's logits (1, 1000), before the softmax (its softmax saturates with the
    seed-0 weights, so the logits are the sharper comparison)."""
    return load_sibling("compare_torch").torch_resnet18(torch, w)[0]


def torch_transformer_layer(torch: Any, w: Mapping[str, Any]) -> Any:
    """examples/transformer_layer.relay: (1, 128, 512) (bench/compare_torch.py's layer)."""
    return load_sibling("compare_torch").torch_transformer_layer(torch, w)


TORCH_MODELS: dict[str, Callable[[Any, Mapping[str, Any]], Any]] = {
    "mlp": torch_mlp,
    "resnet18": torch_resnet18,
    "mobilenet_v2": torch_mobilenet_v2,
    "transformer_layer": torch_transformer_layer,
}
"""Example name -> PyTorch forward `(torch, weights) -> what @main returns`."""


def torch_tensors(torch: Any, weights: Mapping[str, Any]) -> dict[str, Any]:
    """The weight dict as torch tensors (sharing memory with the numpy arrays)."""
    return {name: torch.from_numpy(value) for name, value in weights.items()}


def torch_module(torch: Any, name: str, weights: Mapping[str, Any]) -> Any:
    """Example `name` as an `nn.Module` in eval mode: every weight but `data` is a buffer,
    and `forward(data)` returns what `@main` returns."""
    forward_fn = TORCH_MODELS[name]
    tensors = torch_tensors(torch, weights)

    class ExampleModel(torch.nn.Module):
        """One example model with its weights as buffers."""

        def __init__(self) -> None:
            super().__init__()
            self.weight_names = [k for k in tensors if k != "data"]
            for key in self.weight_names:
                self.register_buffer(key, tensors[key].clone())

        def forward(self, data: Any) -> Any:
            """What the example's @main returns for input `data`."""
            w = {key: getattr(self, key) for key in self.weight_names}
            w["data"] = data
            return forward_fn(torch, w)

    return ExampleModel().eval()


def export_onnx(torch: Any, module: Any, data: Any, path: Path) -> Path:
    """Write `module` (one input, `data`) as an ONNX model with the TorchScript exporter
    (`dynamo=False`); weights become initializers. Returns `path`."""
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            (data,),
            str(path),
            dynamo=False,
            input_names=["data"],
            output_names=["output"],
            opset_version=ONNX_OPSET,
        )
    return path


def onnxruntime_session(ort: Any, path: Path) -> Any:
    """An ONNX Runtime session on the CPU provider with its default threads and graph
    optimizations."""
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def run_onnxruntime(session: Any, data: Any) -> Any:
    """The first output of `session` for input `data` (a numpy array)."""
    return session.run(None, {"data": data})[0]
