"""ResNet-18, the transformer layer and the MLP of `examples/`, written directly in numpy.

An independent computation of the same networks, for checking the interpreter's results
(tests/test_models_independent.py) and as the baseline of bench/bench_interpreter.py. Nothing
here uses relay: convolution is im2col + one matrix product, the other layers are a few numpy
calls each, and every array stays float32 (as a hand-written numpy model would).

Each model takes the weight dict of its example (`examples/make_weights.py`): the keys are
the names of `@main`'s parameters without `%` (`data`, `conv1_weight`, `layer2_0_bn1_var`,
...). Import this file by path (bench/ is not a package):

    spec = importlib.util.spec_from_file_location("numpy_models", "bench/numpy_models.py")
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

Array = np.ndarray
Weights = Mapping[str, Array]

BN_EPSILON = 1e-5
"""The batch-norm epsilon of the examples (nn.batch_norm's default)."""
LN_EPSILON = 1e-5
"""The layer-norm epsilon of the transformer layer."""


def conv2d(x: Array, w: Array, stride: int = 1, pad: int = 0) -> Array:
    """NCHW convolution with an OIHW weight: im2col, then one matrix product."""
    n, c, _, _ = x.shape
    o, _, kh, kw = w.shape
    if pad:
        x = np.pad(x, [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    windows = sliding_window_view(x, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    oh, ow = windows.shape[2:4]
    # (N, C, OH, OW, KH, KW) -> rows (N, OH, OW), columns (C, KH, KW)
    cols = windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, c * kh * kw)
    out = cols @ w.reshape(o, c * kh * kw).T
    return np.ascontiguousarray(out.reshape(n, oh, ow, o).transpose(0, 3, 1, 2))


def batch_norm(x: Array, weights: Weights, prefix: str) -> Array:
    """Inference batch norm over axis 1 with `<prefix>_gamma/_beta/_mean/_var`."""
    gamma, beta = weights[f"{prefix}_gamma"], weights[f"{prefix}_beta"]
    mean, var = weights[f"{prefix}_mean"], weights[f"{prefix}_var"]
    scale = gamma / np.sqrt(var + np.float32(BN_EPSILON))
    shift = beta - mean * scale
    return x * scale[:, None, None] + shift[:, None, None]


def relu(x: Array) -> Array:
    """max(x, 0)."""
    return np.maximum(x, np.float32(0))


def max_pool(x: Array, size: int, stride: int, pad: int) -> Array:
    """NCHW max pooling; padding never wins (it is -inf)."""
    x = np.pad(x, [(0, 0), (0, 0), (pad, pad), (pad, pad)], constant_values=-np.inf)
    windows = sliding_window_view(x, (size, size), axis=(2, 3))[:, :, ::stride, ::stride]
    return windows.max(axis=(4, 5))


def global_avg_pool(x: Array) -> Array:
    """NCHW -> NC, the mean over the spatial axes."""
    return x.mean(axis=(2, 3))


def dense(x: Array, weight: Array, bias: Array) -> Array:
    """x W^T + b with W laid out as (out features, in features)."""
    return x @ weight.T + bias


def softmax(x: Array, axis: int = -1) -> Array:
    """Softmax along `axis` (shifted by the maximum)."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layer_norm(x: Array, gamma: Array, beta: Array) -> Array:
    """Layer norm over the last axis."""
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + np.float32(LN_EPSILON)) * gamma + beta


_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x: Array) -> Array:
    """0.5 x (1 + erf(x / sqrt(2))), erf from the C library (`math.erf`)."""
    erf = _erf(x / np.float32(math.sqrt(2.0))).astype(np.float32)
    return np.float32(0.5) * x * (np.float32(1) + erf)


def basic_block(x: Array, weights: Weights, prefix: str, stride: int) -> Array:
    """ResNet basic block `<prefix>` (`layer2_0`); a 1x1 projection when it downsamples."""
    out = conv2d(x, weights[f"{prefix}_conv1_weight"], stride, 1)
    out = relu(batch_norm(out, weights, f"{prefix}_bn1"))
    out = conv2d(out, weights[f"{prefix}_conv2_weight"], 1, 1)
    out = batch_norm(out, weights, f"{prefix}_bn2")
    if f"{prefix}_downsample_weight" in weights:
        shortcut = conv2d(x, weights[f"{prefix}_downsample_weight"], stride, 0)
        shortcut = batch_norm(shortcut, weights, f"{prefix}_downsample_bn")
    else:
        shortcut = x
    return relu(out + shortcut)


def resnet18_logits(weights: Weights) -> Array:
    """ResNet-18 up to the classifier's logits (1, 1000), before the softmax."""
    x = conv2d(weights["data"], weights["conv1_weight"], 2, 3)
    x = relu(batch_norm(x, weights, "bn1"))
    x = max_pool(x, 3, 2, 1)
    for stage in (1, 2, 3, 4):
        for block in (0, 1):
            stride = 2 if stage > 1 and block == 0 else 1
            x = basic_block(x, weights, f"layer{stage}_{block}", stride)
    return dense(global_avg_pool(x), weights["fc_weight"], weights["fc_bias"])


def resnet18(weights: Weights) -> Array:
    """ResNet-18 as examples/resnet18.relay computes it: class probabilities (1, 1000)."""
    return softmax(resnet18_logits(weights), axis=1)


def _heads(x: Array) -> Array:
    return x.reshape(128, 8, 64).transpose(1, 0, 2)


def self_attention(x: Array, weights: Weights) -> Array:
    """8-head scaled dot-product self-attention of a 128x512 token matrix."""
    q, k, v = (
        _heads(dense(x, weights[f"attn_{n}_weight"], weights[f"attn_{n}_bias"]))
        for n in ("query", "key", "value")
    )
    scores = np.einsum("hid,hjd->hij", q, k) * np.float32(1 / math.sqrt(64))
    context = softmax(scores, axis=-1) @ v
    merged = context.transpose(1, 0, 2).reshape(128, 512)
    return dense(merged, weights["attn_out_weight"], weights["attn_out_bias"])


def transformer_layer(weights: Weights) -> Array:
    """The post-norm encoder layer of examples/transformer_layer.relay: (1, 128, 512)."""
    x = weights["data"].reshape(128, 512)
    x1 = layer_norm(x + self_attention(x, weights), weights["ln1_gamma"], weights["ln1_beta"])
    hidden = gelu(dense(x1, weights["ffn1_weight"], weights["ffn1_bias"]))
    ffn = dense(hidden, weights["ffn2_weight"], weights["ffn2_bias"])
    x2 = layer_norm(x1 + ffn, weights["ln2_gamma"], weights["ln2_beta"])
    return x2.reshape(1, 128, 512)


def mlp(weights: Weights) -> Array:
    """The MNIST MLP of examples/mlp.relay: class probabilities (1, 10)."""
    h = relu(dense(weights["data"], weights["fc1_weight"], weights["fc1_bias"]))
    h = relu(dense(h, weights["fc2_weight"], weights["fc2_bias"]))
    return softmax(dense(h, weights["fc3_weight"], weights["fc3_bias"]), axis=1)


MODELS = {"resnet18": resnet18, "transformer_layer": transformer_layer, "mlp": mlp}
"""Example name -> its numpy forward function (what the example's @main returns)."""
