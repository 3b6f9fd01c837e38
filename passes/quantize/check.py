"""Check: the float, simulated and realized values of every quantize point, side by side.

`compare_points` runs three probes of one annotated function on the same inputs — the
float program (a marker is an identity there), the simulated program and the realized one
— each returning the values at every quantize point (`simulate` and `realize` hand them
over as taps). For each point it gives the largest difference between the realized and the
simulated value in units of the point's quantization step (its `dom_scale`: the realized
program should stay within one step where the simulated one rounds a float sum that the
realized one computes exactly) and the cosine of the simulated value against the float
one (how much quantization up to that point has cost). Points come in creation order, which
is dataflow order: the first point where realized and simulated part is where to look.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import numpy as np

from ...lang.expr import Expr, Function, Tuple
from ...lang.module import IRModule
from .annotate import KIND_NAMES, Annotated, QPoint
from .calibrate import PointScale, Runner, default_runner
from .config import QConfig
from .realize import realize
from .simulate import simulate


@attrs.frozen
class PointComparison:
    """One quantize point on one input: its kind name, quantization step (a per-channel
    point's largest), the largest |realized - simulated| in steps (each element in its own
    channel's), the fraction of elements where they differ by half a step or more, and
    the cosine of simulated vs float."""

    point: QPoint
    kind: str
    step: float
    realized_steps: float
    differing: float
    simulated_cosine: float


def _probe(fn: Function, exprs: list[Expr]) -> IRModule:
    return IRModule.from_expr(Function(fn.params, Tuple(tuple(exprs))))


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    if norms == 0.0:
        return 1.0 if not a.any() and not b.any() else 0.0
    return float(np.dot(a, b) / norms)


def compare_points(
    annotated: Annotated,
    scales: dict[QPoint, PointScale],
    config: QConfig,
    inputs: Mapping[str, np.ndarray],
    runner: Runner = default_runner,
) -> list[PointComparison]:
    """Every quantize point of `annotated` (calibrated `scales`) on `inputs`: the realized
    program's distance from the simulated one, in steps, and the simulated program's
    cosine against the float one (see the module docstring)."""
    simulated: dict[QPoint, Expr] = {}
    realized: dict[QPoint, Expr] = {}
    sim_fn = simulate(annotated, scales, config, simulated)
    real_fn = realize(annotated, scales, config, realized)
    markers = annotated.markers()
    points = [p for _, p in markers]
    floats = runner(_probe(annotated.function, [m.args[0] for m, _ in markers]), inputs)
    sims = runner(_probe(sim_fn, [simulated[p] for p in points]), inputs)
    reals = runner(_probe(real_fn, [realized[p] for p in points]), inputs)
    result = []
    for point, want, sim, real in zip(points, floats, sims, reals):
        step = scales[point].dom_scale  # per channel: an array broadcasting against sim
        s = np.asarray(sim, dtype=np.float64)
        steps = (np.abs(np.asarray(real, dtype=np.float64) - s) / step).ravel()
        s = s.ravel()
        f = np.asarray(want, dtype=np.float64).ravel()
        gap = float(np.max(steps)) if s.size else 0.0
        differing = float(np.mean(steps >= 0.5)) if s.size else 0.0
        kind = KIND_NAMES[point.kind]
        coarsest = float(np.max(step))
        result.append(PointComparison(point, kind, coarsest, gap, differing, _cosine(s, f)))
    return result
