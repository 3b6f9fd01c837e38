"""ResNet-18 and the transformer layer in PyTorch against the interpreter (optional).

    pip install torch==2.13.0      # a local CPU wheel on this machine; not a dependency
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/compare_torch.py [--repeat 5]

Both networks are written again with `torch.nn.functional` (conv2d, batch_norm, max_pool2d,
linear, layer_norm, exact GELU, softmax), loading the weights of examples/make_weights.py
(seed 0). For each, prints the largest absolute and relative error of the interpreter's
output against PyTorch's, and the median time of `--repeat` runs of each. ResNet-18's
softmax saturates with these weights, so its logits are compared as well (on a copy of the
model whose head stops before the softmax). Without torch, prints how to install it and
exits with status 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from relay.backend.runtime import interpret
from relay.grammar import parse

ROOT = Path(__file__).resolve().parents[1]
SOFTMAX_HEAD = "nn.softmax(%logits, axis=1)"


def load(name: str, path: Path) -> ModuleType:
    """Import a file that is not in a package (examples/)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def median_time(
    repeat: int, fn: Callable[..., Any], *args: Any, **kwargs: Any
) -> tuple[float, Any]:
    """Median wall time of `repeat` calls `fn(*args, **kwargs)`, and the last result."""
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def torch_resnet18(torch: Any, w: Mapping[str, Any]) -> tuple[Any, Any]:
    """ResNet-18 in torch.nn.functional: (logits, probabilities)."""
    f = torch.nn.functional

    def bn(x: Any, p: str) -> Any:
        return f.batch_norm(
            x, w[f"{p}_mean"], w[f"{p}_var"], w[f"{p}_gamma"], w[f"{p}_beta"], False, 0.0, 1e-5
        )

    x = f.relu(bn(f.conv2d(w["data"], w["conv1_weight"], stride=2, padding=3), "bn1"))
    x = f.max_pool2d(x, 3, stride=2, padding=1)
    for stage in (1, 2, 3, 4):
        for block in (0, 1):
            p = f"layer{stage}_{block}"
            stride = 2 if stage > 1 and block == 0 else 1
            out = f.conv2d(x, w[f"{p}_conv1_weight"], stride=stride, padding=1)
            out = f.relu(bn(out, f"{p}_bn1"))
            out = bn(f.conv2d(out, w[f"{p}_conv2_weight"], padding=1), f"{p}_bn2")
            if f"{p}_downsample_weight" in w:
                shortcut = f.conv2d(x, w[f"{p}_downsample_weight"], stride=stride)
                x = bn(shortcut, f"{p}_downsample_bn")
            x = f.relu(out + x)
    pooled = f.adaptive_avg_pool2d(x, 1).flatten(1)
    logits = f.linear(pooled, w["fc_weight"], w["fc_bias"])
    return logits, f.softmax(logits, dim=1)


def torch_transformer_layer(torch: Any, w: Mapping[str, Any]) -> Any:
    """The post-norm encoder layer in torch.nn.functional: (1, 128, 512)."""
    f = torch.nn.functional
    x = w["data"].reshape(128, 512)

    def heads(name: str) -> Any:
        y = f.linear(x, w[f"attn_{name}_weight"], w[f"attn_{name}_bias"])
        return y.reshape(128, 8, 64).transpose(0, 1)

    q, k, v = heads("query"), heads("key"), heads("value")
    attention = f.softmax(q @ k.transpose(1, 2) * 0.125, dim=-1)
    merged = (attention @ v).transpose(0, 1).reshape(128, 512)
    attended = f.linear(merged, w["attn_out_weight"], w["attn_out_bias"])
    x1 = f.layer_norm(x + attended, (512,), w["ln1_gamma"], w["ln1_beta"], 1e-5)
    hidden = f.gelu(f.linear(x1, w["ffn1_weight"], w["ffn1_bias"]))
    ffn = f.linear(hidden, w["ffn2_weight"], w["ffn2_bias"])
    x2 = f.layer_norm(x1 + ffn, (512,), w["ln2_gamma"], w["ln2_beta"], 1e-5)
    return x2.reshape(1, 128, 512)


TORCH_MODELS: dict[str, Callable[[Any, Mapping[str, Any]], Any]] = {
    "resnet18": torch_resnet18,
    "transformer_layer": torch_transformer_layer,
}


def errors(label: str, ours: Any, theirs: np.ndarray) -> None:
    """Print the largest absolute and relative error of `ours` against `theirs`."""
    diff = np.abs(np.asarray(ours, np.float64) - theirs)
    scale = float(np.abs(theirs).max())
    rel = float((diff / np.maximum(np.abs(theirs), 1e-30)).max())
    print(
        f"  {label:<14} max abs err {diff.max():.2e}  max rel err {rel:.2e}  "
        f"max abs err / max |value| {diff.max() / scale:.2e}"
    )


def main() -> int:
    """Compare and time; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print(
            "PyTorch is not installed; this comparison is optional. Install the CPU build\n"
            "with `pip install torch==2.13.0` (a local wheel on this machine), then run\n"
            "`python bench/compare_torch.py` again."
        )
        return 0
    weights_mod = load("make_weights", ROOT / "examples" / "make_weights.py")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, repeat {args.repeat}")
    for name in ("resnet18", "transformer_layer"):
        path = ROOT / "examples" / f"{name}.relay"
        text = path.read_text(encoding="utf-8")
        module = parse(text, str(path))
        weights = weights_mod.make_weights(weights_mod.parameter_specs(path))
        tensors = {k: torch.from_numpy(v) for k, v in weights.items()}
        forward = TORCH_MODELS[name]
        with torch.inference_mode():
            forward(torch, tensors)  # warm up
            torch_s, result = median_time(args.repeat, forward, torch, tensors)
        expected = result[1] if name == "resnet18" else result
        relay_s, out = median_time(args.repeat, interpret, module, **weights)
        print(
            f"{name}: interpreter {relay_s * 1e3:.1f} ms, torch {torch_s * 1e3:.1f} ms, "
            f"ratio {relay_s / torch_s:.2f}x"
        )
        errors("output", out, expected.numpy())
        if name == "resnet18":
            head_cut = parse(text.replace(SOFTMAX_HEAD, "%logits"), "resnet18_logits.relay")
            errors("logits", interpret(head_cut, **weights), result[0].numpy())
    return 0


if __name__ == "__main__":
    sys.exit(main())
