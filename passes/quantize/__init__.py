"""Automatic quantization to int8, following TVM's `relay.quantize` flow.

    annotate  →  calibrate  →  realize (or simulate)

* `annotate` picks the quantize points of a float dataflow `@main` with per-operator rules
  (tables keyed by the `Op`): conv2d and dense read 8-bit inputs and weights and
  accumulate in 32 bits; add, multiply, concatenate, pooling, relu, clip and the shape
  operators keep values quantized; global average pooling ends quantization.
* `calibrate` gives every point a scale: weights from their values (`power2` or `max`,
  per tensor or with `per_channel` per output channel), biases (`bias_mode="int32"`)
  their accumulator's, inputs and activations from `global_scale`, or from the values
  seen on a calibration dataset (`kl_divergence`, `percentile`).
* `realize` writes the integer program; `simulate` (TVM's `do_simulation=True`) writes the
  float program with a fake quantization at every point.

Design choice: the realized program uses core operators only — `cast`, `clip`, `floor`,
`multiply`, `add`, `left_shift` / `right_shift`, and `nn.conv2d` / `nn.dense` with
`out_dtype="int32"` on int8 operands — rather than a QNN dialect, so it is an ordinary
`.relay` program that prints, parses back, type-checks and builds with no new operators.
Requantization is a rounding right shift when the scale ratio is a power of two (always
the case with `weight_scale="power2"` and `global_scale` calibration), else a 31-bit
fixed-point multiply in int64; with `per_channel` weight scales the shift amounts or the
multipliers are constant arrays over the channels.

Departures from TVM's flow, as `qconfig` options (see `QConfig`): `bias_mode="int32"`
(the default: biases at their accumulator's scale, as TFLite and ONNX Runtime do),
`per_channel` and `bias_correction` (`correct`).

The public API (`qconfig`, `quantize`) is `relay.quantize`, which binds parameters and
runs the prerequisite passes before `quantize_dataflow`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs

from ...lang.expr import Function
from ...typecheck import ModuleTypes
from .annotate import (
    ACTIVATION,
    ANNOTATE_RULES,
    BIAS,
    IDENTITY,
    INPUT,
    KIND_NAMES,
    WEIGHT,
    Annotated,
    QPoint,
    annotate,
)
from .calibrate import (
    KL_BINS,
    Batch,
    PointScale,
    Runner,
    calibrate,
    collect_stats,
    default_runner,
    kl_threshold,
    percentile_threshold,
    weight_scale,
)
from .config import OPTIONS, QConfig, QuantizeError, current_qconfig, make_qconfig, qconfig
from .realize import REALIZE_RULES, realize
from .simulate import simulate


@attrs.frozen
class QuantizeReport:
    """What quantization did: the points (kind name → count), each point's scale, the
    operators left in float because no rule covers them (name → count), and whether the
    result is the simulated program."""

    points: dict[str, int]
    scales: tuple[tuple[QPoint, PointScale], ...]
    float_ops: dict[str, int]
    simulated: bool


def quantize_dataflow(
    fn: Function,
    types: ModuleTypes,
    config: QConfig,
    dataset: Iterable[Batch] | None = None,
    runner: Runner = default_runner,
    progress: Callable[[int], None] | None = None,
) -> tuple[Function, QuantizeReport]:
    """Annotate, calibrate and realize (or simulate, per `config.do_simulation`) the float
    dataflow function `fn` typed by `types`; returns the new function and a report."""
    annotated = annotate(fn, types, config)
    scales = calibrate(annotated, config, dataset, runner, progress)
    if config.do_simulation:
        result = simulate(annotated, scales, config)
    else:
        result = realize(annotated, scales, config)
    counts: dict[str, int] = {}
    for point in annotated.points.values():
        counts[KIND_NAMES[point.kind]] = counts.get(KIND_NAMES[point.kind], 0) + 1
    ordered = tuple(sorted(scales.items(), key=lambda item: item[0].index))
    report = QuantizeReport(counts, ordered, dict(annotated.float_ops), config.do_simulation)
    return result, report


__all__ = [
    "ACTIVATION",
    "ANNOTATE_RULES",
    "BIAS",
    "IDENTITY",
    "INPUT",
    "KIND_NAMES",
    "KL_BINS",
    "OPTIONS",
    "REALIZE_RULES",
    "WEIGHT",
    "Annotated",
    "PointScale",
    "QConfig",
    "QPoint",
    "QuantizeError",
    "QuantizeReport",
    "annotate",
    "calibrate",
    "collect_stats",
    "current_qconfig",
    "kl_threshold",
    "make_qconfig",
    "percentile_threshold",
    "qconfig",
    "quantize_dataflow",
    "realize",
    "simulate",
    "weight_scale",
]
