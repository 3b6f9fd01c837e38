"""Calibrate: the scale of every quantize point.

For a point with `nbit` bits (signed), `valid_range = 2^(nbit - 1)`, the domain scale is
`scale / valid_range` and values are clipped to `±(valid_range - 1)` (TVM's rule). The
scale of a `WEIGHT` point comes from its constant (`weight_scale`: `power2` =
2^ceil(log2 max|w|), `max` = max|w|; with `per_channel`, one per output channel: an
array shaped to broadcast against the weight). A `BIAS` point's domain scale is its
accumulator's, the product of its input's and weight's domain scales (`nbit_activation`
bits). Every other point's scale comes from `calibrate_mode`:

* `global_scale`: the configured constant (8.0 by default); needs no data.
* `kl_divergence`: the threshold that minimizes the KL divergence between the histogram
  (`KL_BINS` = 2048 bins over [-max|x|, max|x|]) of the point's values on the dataset and
  its 255-level quantized form (TensorRT's method, with TVM's smoothing).
* `percentile`: the `percentile` quantile (0.99999) of |x| over the dataset.

The values are those flowing into each point when the float program runs on the
calibration batches (`collect_stats`, on the reference interpreter by default).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from ...lang.diagnostics import Diagnostic, Error
from ...lang.expr import Constant, Expr, Function, Tuple
from ...lang.module import IRModule
from .annotate import BIAS, WEIGHT, Annotated, QPoint
from .config import QConfig, QuantizeError

KL_BINS = 2048
"""Histogram bins of `kl_divergence` calibration."""
KL_QUANTIZED_BINS = 255
"""Levels of the quantized distribution KL calibration compares against."""

Batch = Mapping[str, Any]
Runner = Callable[[IRModule, Batch], Any]
"""Runs `@main` of a module on one batch of named inputs (the interpreter by default)."""


Scale = float | np.ndarray
"""One scale, or per-channel scales (float64, shaped to broadcast against their tensor)."""


@attrs.frozen(eq=False)
class PointScale:
    """The calibrated scale of a quantize point and what follows from it (`scale` and
    `dom_scale` are arrays for a per-channel weight or bias); `offset` is subtracted from
    a `BIAS` point's constant before it is quantized (`bias_correction`)."""

    scale: Scale
    dom_scale: Scale
    clip_min: float
    clip_max: float
    offset: Scale = 0.0


def point_scale(scale: Scale, nbit: int) -> PointScale:
    """The domain scale and clip range of a signed `nbit` point of threshold `scale`."""
    valid_range = 2.0 ** (nbit - 1)
    return PointScale(scale, scale / valid_range, -(valid_range - 1), valid_range - 1)


def weight_scale(data: np.ndarray, mode: str, axis: int | None = None) -> Scale:
    """The scale of a weight: `power2` = 2^ceil(log2 max|w|), `max` = max|w| (1.0 for an
    all-zero weight); with `axis`, one per index along it (an array that broadcasts
    against `data`, the peak taken over the other axes)."""
    if axis is None or data.ndim == 0:
        peak = float(np.max(np.abs(data))) if data.size else 0.0
        if not math.isfinite(peak):
            raise QuantizeError("a weight to quantize holds a non-finite value (inf or nan)")
        if peak == 0.0:
            return 1.0
        return float(2.0 ** math.ceil(math.log2(peak))) if mode == "power2" else peak
    others = tuple(a for a in range(data.ndim) if a != axis % data.ndim)
    peaks = np.max(np.abs(data.astype(np.float64)), axis=others, keepdims=True)
    if not np.all(np.isfinite(peaks)):
        raise QuantizeError("a weight to quantize holds a non-finite value (inf or nan)")
    peaks = np.where(peaks == 0.0, 1.0, peaks)
    return np.exp2(np.ceil(np.log2(peaks))) if mode == "power2" else peaks


def bias_scale(
    input_scale: PointScale, weight: PointScale, shape: tuple[int, ...] | None, nbit: int
) -> PointScale:
    """The scale of a `BIAS` point: the accumulator's domain scale (input x weight domain
    scales; per-channel weight scales reshaped to `shape`), `nbit` bits."""
    weight_dom = weight.dom_scale
    if isinstance(weight_dom, np.ndarray):
        assert shape is not None
        weight_dom = weight_dom.reshape(shape)
    dom = input_scale.dom_scale * weight_dom
    valid_range = 2.0 ** (nbit - 1)
    return PointScale(dom * valid_range, dom, -(valid_range - 1), valid_range - 1)


def _smooth(p: np.ndarray, eps: float = 1e-4) -> np.ndarray | None:
    zeros = p == 0
    n_zeros = int(zeros.sum())
    n_nonzeros = p.size - n_zeros
    if n_nonzeros == 0:
        return None
    eps1 = eps * n_zeros / n_nonzeros
    if eps1 >= 1.0:
        return None
    return p + np.where(zeros, eps, -eps1)


def _kl(p: np.ndarray, q: np.ndarray) -> float:
    p = p / p.sum()
    q = q / q.sum()
    mask = (p > 0) & (q > 0)
    return float(np.sum(p[mask] * np.log(p[mask] / q[mask])))


def kl_threshold(
    values: np.ndarray, num_bins: int = KL_BINS, num_quantized_bins: int = KL_QUANTIZED_BINS
) -> float:
    """The |x| threshold minimizing the KL divergence between the histogram of `values`
    and its `num_quantized_bins`-level quantization (0.0 when every value is zero).

    For each candidate window of bins around zero, the outliers are folded into the end
    bins (p), the window is merged into the quantized levels and spread back over the
    non-empty bins (q); both are smoothed and the window with the least KL(p||q) wins.
    The threshold is the window's upper bin edge, inside [0, max|x|]."""
    data = np.asarray(values, dtype=np.float64).ravel()
    if data.size == 0:
        raise QuantizeError("no calibration values to compute a KL threshold from")
    if not np.all(np.isfinite(data)):
        raise QuantizeError("calibration values hold inf or nan")
    peak = float(np.max(np.abs(data)))
    if peak == 0.0:
        return 0.0
    hist, edges = np.histogram(data, bins=num_bins, range=(-peak, peak))
    hist = hist.astype(np.float64)
    zero = num_bins // 2
    half = num_quantized_bins // 2
    best, best_divergence = float(edges[-1]), math.inf
    for i in range(half, min(zero, num_bins - zero - 1) + 1):
        start, stop = zero - i, zero + i + 1
        sliced = hist[start:stop].copy()
        sliced[0] = 0.0
        p = hist[start:stop].copy()
        p[0] = hist[: start + 1].sum()
        p[-1] += hist[stop:].sum()
        n = sliced.size
        merged = n // num_quantized_bins
        group = np.minimum(np.arange(n) // merged, num_quantized_bins - 1)
        levels = np.bincount(group, weights=sliced, minlength=num_quantized_bins)
        nonzero = np.bincount(group, weights=sliced != 0, minlength=num_quantized_bins)
        spread = np.divide(levels, nonzero, out=np.zeros_like(levels), where=nonzero > 0)
        q = np.where(p != 0, spread[group], 0.0)
        smooth_p, smooth_q = _smooth(p), _smooth(q)
        if smooth_p is None or smooth_q is None:
            continue
        divergence = _kl(smooth_p, smooth_q)
        if divergence < best_divergence:
            best, best_divergence = float(edges[stop]), divergence
    return min(best, peak)


def percentile_threshold(values: np.ndarray, percentile: float) -> float:
    """The `percentile` quantile of |values| (TVM: the element of rank size*percentile)."""
    data = np.abs(np.asarray(values, dtype=np.float64).ravel())
    if data.size == 0:
        raise QuantizeError("no calibration values to compute a percentile from")
    if not np.all(np.isfinite(data)):
        raise QuantizeError("calibration values hold inf or nan")
    rank = min(int(data.size * percentile), data.size - 1)
    return float(np.partition(data, rank)[rank])


def default_runner(mod: IRModule, batch: Batch) -> Any:
    """Run `@main` of `mod` on `batch` with the reference interpreter."""
    from ...backend.runtime import interpret

    return interpret(mod, **batch)


def collect_stats(
    annotated: Annotated,
    dataset: Iterable[Batch],
    runner: Runner = default_runner,
    progress: Callable[[int], None] | None = None,
) -> dict[QPoint, np.ndarray]:
    """The values flowing into each non-weight point over every batch of `dataset`
    (flattened, float32). `progress(k)` is called after the k-th batch."""
    batches, _ = collect_batches(annotated, dataset, runner, progress)
    return {p: np.concatenate([b.ravel() for b in arrays]) for p, arrays in batches.items()}


def collect_batches(
    annotated: Annotated,
    dataset: Iterable[Batch],
    runner: Runner = default_runner,
    progress: Callable[[int], None] | None = None,
    extra: Sequence[Expr] = (),
) -> tuple[dict[QPoint, list[np.ndarray]], list[list[np.ndarray]]]:
    """The values flowing into each non-weight, non-bias point on every batch of
    `dataset` (one float32 array per batch), and those of the `extra` expressions of the
    annotated function (markers are identities there). `progress(k)` is called after
    the k-th batch."""
    fn = annotated.function
    measured = [(m, p) for m, p in annotated.markers() if p.kind not in (WEIGHT, BIAS)]
    if not measured and not extra:
        return {}, []
    probe = Function(fn.params, Tuple((*(m.args[0] for m, _ in measured), *extra)))
    module = IRModule.from_expr(probe)
    names = [p.name_hint for p in fn.params]
    chunks: list[list[np.ndarray]] = [[] for _ in range(len(measured) + len(extra))]
    count = 0
    for batch in dataset:
        _check_batch(batch, names, count)
        try:
            outputs = runner(module, batch)
        except QuantizeError:
            raise
        except Error as error:
            note = Diagnostic("note", f"while running calibration batch {count}")
            raise QuantizeError([*error.diagnostics, note]) from None
        for chunk, value in zip(chunks, outputs):
            chunk.append(np.asarray(value, dtype=np.float32))
        count += 1
        if progress is not None:
            progress(count)
    if count == 0:
        raise QuantizeError("the calibration dataset is empty: give at least one batch")
    points = {p: chunk for (_, p), chunk in zip(measured, chunks)}
    return points, chunks[len(measured) :]


def _check_batch(batch: object, names: list[str], index: int) -> None:
    if not isinstance(batch, Mapping):
        raise QuantizeError(
            f"calibration batch {index} is a {type(batch).__name__}, not a mapping from "
            f"input names ({', '.join(names)}) to arrays"
        )
    missing = [n for n in names if n not in batch]
    unexpected = [str(k) for k in batch if k not in names]
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(missing)}")
        if unexpected:
            parts.append(f"unexpected {', '.join(unexpected)}")
        raise QuantizeError(
            f"calibration batch {index}: {'; '.join(parts)} (the model's inputs are "
            f"{', '.join(names) or 'none'})"
        )


def calibrate(
    annotated: Annotated,
    config: QConfig,
    dataset: Iterable[Batch] | None = None,
    runner: Runner = default_runner,
    progress: Callable[[int], None] | None = None,
) -> dict[QPoint, PointScale]:
    """The scale of every quantize point of `annotated` under `config`; `dataset` (an
    iterable of batches: input name → array) is needed by `kl_divergence` and
    `percentile`."""
    from .correct import bias_offsets, correction_inputs

    stats: dict[QPoint, np.ndarray] = {}
    batches: dict[QPoint, list[np.ndarray]] = {}
    extra: list[list[np.ndarray]] = []
    if config.calibrate_mode != "global_scale" or config.bias_correction:
        if dataset is None:
            needs = (
                "bias_correction=True"
                if config.calibrate_mode == "global_scale"
                else f"calibrate_mode={config.calibrate_mode!r}"
            )
            raise QuantizeError(
                f"{needs} needs a calibration dataset "
                "(dataset=[{input name: array}, ...] / --calib data.npz)"
            )
        inputs = correction_inputs(annotated) if config.bias_correction else {}
        probes = [expr for expr in inputs.values() if isinstance(expr, Expr)]
        batches, extra = collect_batches(annotated, dataset, runner, progress, probes)
        if config.calibrate_mode != "global_scale":
            stats = {p: np.concatenate([b.ravel() for b in bs]) for p, bs in batches.items()}
    scales: dict[QPoint, PointScale] = {}
    scale: Scale
    for marker, point in annotated.markers():
        if point.kind == BIAS:
            continue
        if point.kind == WEIGHT:
            source = marker.args[0]
            assert isinstance(source, Constant)
            scale = weight_scale(source.data, config.weight_scale, point.axis)
        elif config.calibrate_mode == "global_scale":
            scale = float(config.global_scale)
        else:
            values = stats[point]
            if config.calibrate_mode == "kl_divergence":
                scale = kl_threshold(values)
            else:
                scale = percentile_threshold(values, config.percentile)
            if not scale > 0.0:  # an all-zero point: any scale represents it exactly
                scale = 1.0
        scales[point] = point_scale(scale, config.nbit_of(point.kind))
    for point, bias in annotated.biases.items():
        nbit = config.nbit_of(BIAS)
        scales[point] = bias_scale(scales[bias.input], scales[bias.weight], bias.shape, nbit)
    if config.bias_correction:
        probed = iter(extra)
        conv_inputs = {
            point: batches[where] if isinstance(where, QPoint) else next(probed)
            for point, where in inputs.items()
        }
        offsets = bias_offsets(annotated, scales, conv_inputs, config, runner)
        for point, offset in offsets.items():
            scales[point] = attrs.evolve(scales[point], offset=offset)
    return scales
