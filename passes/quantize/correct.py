"""Bias correction (`qconfig(bias_correction=True)`): int32 biases absorb the mean error.

For a conv2d or dense `y = conv(x, w) + b` whose bias is an int32 `BIAS` point, the
realized program computes `conv(Q(x), Q(w)) + Q(b)`. Rounding errors of the weight do not
average out over images: with `e = Q(w) - w`, the output is off by `conv(x, e)`, whose
mean `conv(E[x], e)` is the same for every image, and a clipped input (`Q(x)` saturates
at the calibrated threshold) shifts the mean too. Nagel et al. (2019, "Data-Free
Quantization") correct the bias for it. Here the means come from the calibration dataset:
conv2d and dense are linear, so the mean error of the accumulator is exactly

    E[conv(Q(x), Q(w))] - E[conv(x, w)] = conv(E[Q(x)], Q(w)) - conv(E[x], w)

with `E[x]` the mean (over batches) of the float program's value at the conv's input and
`E[Q(x)]` that of its fake-quantized form at the input point's scale. Averaged over every
axis but the channel one, it becomes the `offset` of the bias's `PointScale`, which
`realize` and `simulate` subtract from the bias before quantizing it. The means are taken
in the float program: errors that reach a layer from earlier ones are corrected at the
layer that made them, not again downstream.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...lang.expr import Call, Constant, Expr, Function, Tuple
from ...lang.module import IRModule
from .annotate import Annotated, QPoint, channel_shape
from .arith import quantize_array
from .calibrate import PointScale, Runner
from .config import QConfig


def correction_inputs(annotated: Annotated) -> dict[QPoint, QPoint | Expr]:
    """For each `BIAS` point that can be corrected (its channel axis known), where the
    values at its conv's input come from: the input point itself when the conv reads its
    marker, else the conv's data expression (to measure on the calibration batches)."""
    result: dict[QPoint, QPoint | Expr] = {}
    for point, source in annotated.biases.items():
        if source.shape is None:
            continue
        data = source.accumulator.args[0]
        marked = annotated.points.get(data) if isinstance(data, Call) else None
        result[point] = marked if marked is not None else data
    return result


def fake_quantize(data: np.ndarray, s: PointScale, rounding: str) -> np.ndarray:
    """`data` quantized at `s` and back in float32 (what `simulate` computes)."""
    q = quantize_array(data, s.dom_scale, s.clip_min, s.clip_max, rounding)
    return (q * np.asarray(s.dom_scale, np.float32)).astype(np.float32)


def _channel_means(error: np.ndarray, acc: Call, shape: tuple[int, ...]) -> np.ndarray:
    """The per-channel mean of `error` (a value of `acc`'s result), shaped for the bias."""
    error = np.asarray(error, dtype=np.float64)
    layout = channel_shape(acc, error.ndim)
    assert layout is not None  # a known channel axis: `correction_inputs` checked it
    channel = error.ndim - len(layout)
    others = tuple(a for a in range(error.ndim) if a != channel)
    return error.mean(axis=others).reshape(shape)


def bias_offsets(
    annotated: Annotated,
    scales: Mapping[QPoint, PointScale],
    inputs: Mapping[QPoint, list[np.ndarray]],
    config: QConfig,
    runner: Runner,
) -> dict[QPoint, np.ndarray]:
    """The mean accumulator error of each `BIAS` point in `inputs` (its conv's input
    values, one array per calibration batch), per channel, shaped for the bias."""
    exprs: list[Expr] = []
    order: list[tuple[QPoint, Call, tuple[int, ...]]] = []
    for point, values in inputs.items():
        source = annotated.biases[point]
        if not values or source.shape is None:
            continue
        mean = np.mean(np.stack(values), axis=0, dtype=np.float64).astype(np.float32)
        in_scale = scales[source.input]
        quantized = [fake_quantize(v, in_scale, config.rounding) for v in values]
        mean_q = np.mean(np.stack(quantized), axis=0, dtype=np.float64).astype(np.float32)
        acc = source.accumulator
        weight_marker = acc.args[1]
        assert isinstance(weight_marker, Call) and isinstance(weight_marker.args[0], Constant)
        weight = weight_marker.args[0].data
        weight_q = fake_quantize(weight, scales[source.weight], config.rounding)
        exprs.append(acc.replace(args=(Constant(mean_q), Constant(weight_q))))
        exprs.append(acc.replace(args=(Constant(mean), Constant(weight))))
        order.append((point, acc, source.shape))
    if not exprs:
        return {}
    outputs = list(runner(IRModule.from_expr(Function([], Tuple(tuple(exprs)))), {}))
    offsets: dict[QPoint, np.ndarray] = {}
    for k, (point, acc, shape) in enumerate(order):
        with_q, exact = outputs[2 * k], outputs[2 * k + 1]
        offsets[point] = _channel_means(with_q, acc, shape) - _channel_means(exact, acc, shape)
    return offsets
