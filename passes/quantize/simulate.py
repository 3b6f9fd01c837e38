"""Simulate: the annotated function with every quantize point made a fake quantization.

A point of domain scale `s` and range `[lo, hi]` becomes, in float32,
`clip(round(x * (1 / s)), lo, hi) * s` (rounding as `arith.round_expr`); a constant
weight or bias is fake-quantized now (per channel when its scale is an array; an int32
bias rounded in float64, as `realize` does). This is TVM's `do_simulation=True`
program, in core ops.
"""

from __future__ import annotations

import numpy as np

from ...lang.expr import Call, Constant, Expr, Function
from ...lang.traversal import ExprMutator
from .annotate import BIAS, Annotated, QPoint
from .arith import call, quantize_array, quantize_float, scale_constant
from .calibrate import PointScale
from .config import QConfig


class _Simulator(ExprMutator):
    """Rebuilds bottom-up; a marker (looked up by its original node) becomes a fake
    quantization of its rebuilt argument."""

    def __init__(
        self,
        annotated: Annotated,
        scales: dict[QPoint, PointScale],
        config: QConfig,
        taps: dict[QPoint, Expr] | None,
    ):
        super().__init__()
        self.points = annotated.points
        self.scales = scales
        self.rounding = config.rounding
        self.taps = taps

    def rewrite_node(self, node: Expr) -> Expr:
        rebuilt = self.rebuilt(node)
        point = self.points.get(node) if isinstance(node, Call) else None
        if point is None:
            return rebuilt
        assert isinstance(rebuilt, Call)
        s = self.scales[point]
        x = rebuilt.args[0]
        fake: Expr
        if isinstance(x, Constant):
            wide = point.kind == BIAS
            data = x.data - s.offset if wide else x.data
            q = quantize_array(data, s.dom_scale, s.clip_min, s.clip_max, self.rounding, wide)
            fake = Constant((q * np.asarray(s.dom_scale, np.float32)).astype(np.float32))
        else:
            q_expr = quantize_float(x, s.dom_scale, s.clip_min, s.clip_max, self.rounding)
            fake = call("multiply", q_expr, scale_constant(s.dom_scale))
        if self.taps is not None:
            self.taps[point] = fake
        return fake


def simulate(
    annotated: Annotated,
    scales: dict[QPoint, PointScale],
    config: QConfig,
    taps: dict[QPoint, Expr] | None = None,
) -> Function:
    """The simulated (float) program of `annotated` with calibrated `scales`; `taps`, when
    given, receives each point's fake-quantized value (see `realize`)."""
    result = _Simulator(annotated, scales, config, taps).visit(annotated.function)
    assert isinstance(result, Function)
    return result
