"""Integer arithmetic of quantized programs, written in core operators.

Rounding is the same in the simulated and the realized program: `UPWARD` is
`floor(x + 0.5)` (round half up, what a right shift with a 2^(k-1) bias does) and
`TONEAREST` is `round(x)` (half away from zero). A change of scale by `factor` is a left
shift (2^k, k > 0), a right shift with a rounding bias (2^-k, when `round_for_shift`), a
multiply (an integer factor), or else a fixed-point multiply: int64 product with a
31-bit multiplier, rounding bias and arithmetic right shift, cast back to int32.
Constant operands are computed here with numpy rather than left to constant folding.
"""

from __future__ import annotations

import math

import numpy as np

from ...lang.expr import Call, Constant, Expr, const
from ...lang.op import get_op
from .config import QConfig


def call(name: str, *args: Expr, **attributes: object) -> Call:
    """A call of the operator `name` with keyword attributes."""
    op = get_op(name)
    made = op.make_attrs(**attributes) if op.attrs_schema is not None else None
    return Call(op, args, made)


def scalar(value: float | int, dtype: str) -> Constant:
    """A scalar constant of `dtype`."""
    return const(np.array(value, dtype=dtype), dtype)


def cast(expr: Expr, source: str, target: str) -> Expr:
    """`expr` (of dtype `source`) as `target`; a constant is converted now."""
    if source == target:
        return expr
    if isinstance(expr, Constant):
        return Constant(expr.data.astype(target))
    return call("cast", expr, dtype=target)


def round_array(x: np.ndarray, rounding: str) -> np.ndarray:
    """numpy rounding as `round_expr` does it, in the dtype of `x`."""
    if rounding == "UPWARD":
        return np.floor(x + x.dtype.type(0.5))
    return np.sign(x) * np.floor(np.abs(x) + x.dtype.type(0.5))


def round_expr(x: Expr, rounding: str) -> Expr:
    """`x` (float32) rounded to integers: `floor(x + 0.5)` or `round(x)`."""
    if rounding == "UPWARD":
        return call("floor", call("add", x, scalar(0.5, "float32")))
    return call("round", x)


def quantize_float(x: Expr, dom_scale: float, lo: float, hi: float, rounding: str) -> Expr:
    """`clip(round(x / dom_scale), lo, hi)` in float32: integer values in float."""
    scaled = call("multiply", x, scalar(1.0 / dom_scale, "float32"))
    return call("clip", round_expr(scaled, rounding), a_min=lo, a_max=hi)


def quantize_array(
    data: np.ndarray, dom_scale: float, lo: float, hi: float, rounding: str
) -> np.ndarray:
    """`quantize_float` of a constant, in float32."""
    scaled = data.astype(np.float32) * np.float32(1.0 / dom_scale)
    return np.clip(round_array(scaled, rounding), lo, hi).astype(np.float32)


def fixed_point(factor: float) -> tuple[int, int]:
    """`(multiplier, shift)` with `factor ≈ multiplier * 2^(shift - 31)`, the multiplier
    in [2^30, 2^31)."""
    mantissa, exponent = math.frexp(factor)
    multiplier = round(mantissa * (1 << 31))
    if multiplier == 1 << 31:
        multiplier //= 2
        exponent += 1
    return multiplier, exponent


def fixed_point_multiply(x: Expr, factor: float, rounding: str) -> Expr:
    """`round(x * factor)` for an int32 `x`, in integer arithmetic (int64 inside)."""
    multiplier, shift = fixed_point(factor)
    total = min(max(31 - shift, 1), 62)
    wide = call("multiply", call("cast", x, dtype="int64"), scalar(multiplier, "int64"))
    bias: Expr = scalar(1 << (total - 1), "int64")
    if rounding != "UPWARD":  # ties away from zero: one less bias below zero
        negative = call("cast", call("less", wide, scalar(0, "int64")), dtype="int64")
        bias = call("subtract", bias, negative)
    shifted = call("right_shift", call("add", wide, bias), scalar(total, "int64"))
    return call("cast", shifted, dtype="int32")


def _power_of_two(factor: float) -> int | None:
    exponent = math.log2(factor)
    return int(exponent) if exponent == int(exponent) else None


def rescale(x: Expr, factor: float, config: QConfig) -> Expr:
    """The int32 `x` times `factor` (> 0), rounded as `config` says."""
    if factor == 1.0:
        return x
    dtype = "int32"
    if isinstance(x, Constant):
        scaled = round_array(x.data.astype(np.float64) * factor, config.rounding)
        return Constant(scaled.astype(dtype))
    shift = _power_of_two(factor)
    if shift is not None and shift > 0:
        return call("left_shift", x, scalar(shift, dtype))
    if shift is not None and shift < 0:
        if config.round_for_shift:
            x = call("add", x, scalar(1 << (-shift - 1), dtype))
        return call("right_shift", x, scalar(-shift, dtype))
    if factor == int(factor):
        return call("multiply", x, scalar(int(factor), dtype))
    return fixed_point_multiply(x, factor, config.rounding)
