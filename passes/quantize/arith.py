"""Integer arithmetic of quantized programs, written in core operators.

Rounding is the same in the simulated and the realized program: `UPWARD` is
`floor(x + 0.5)` (round half up, what a right shift with a 2^(k-1) bias does) and
`TONEAREST` is `round(x)` (half away from zero). A change of scale by `factor` is a left
shift (2^k, k > 0), a right shift with a rounding bias (2^-k, when `round_for_shift`), a
multiply (an integer factor), or else a fixed-point multiply: int64 product with a
31-bit multiplier, rounding bias and arithmetic right shift, cast back to int32. A
per-channel factor (an array shaped to broadcast against `x`, from per-channel weight
scales) is a fixed-point multiply whose multiplier, bias and shift are constant arrays of
that shape. Constant operands are computed here with numpy rather than left to constant
folding.
"""

from __future__ import annotations

import math

import numpy as np

from ...lang.expr import Call, Constant, Expr, const
from ...lang.op import get_op
from .config import QConfig, QuantizeError


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


def scale_constant(scale: float | np.ndarray, dtype: str = "float32") -> Constant:
    """A scale (one, or an array of per-channel scales) as a constant of `dtype`."""
    if isinstance(scale, np.ndarray):
        return Constant(scale.astype(dtype))
    return scalar(scale, dtype)


def quantize_float(
    x: Expr, dom_scale: float | np.ndarray, lo: float, hi: float, rounding: str
) -> Expr:
    """`clip(round(x / dom_scale), lo, hi)` in float32: integer values in float."""
    scaled = call("multiply", x, scale_constant(1.0 / dom_scale))
    return call("clip", round_expr(scaled, rounding), a_min=lo, a_max=hi)


def quantize_array(
    data: np.ndarray,
    dom_scale: float | np.ndarray,
    lo: float,
    hi: float,
    rounding: str,
    wide: bool = False,
) -> np.ndarray:
    """`quantize_float` of a constant, in float32 (a per-channel `dom_scale` broadcasts
    against `data`); `wide`: in float64, for integers past float32's 24 bits (an int32
    bias), returned as int64."""
    if wide:
        exact = data.astype(np.float64) / np.asarray(dom_scale, dtype=np.float64)
        return np.clip(round_array(exact, rounding), lo, hi).astype(np.int64)
    inverse = np.asarray(1.0 / np.asarray(dom_scale, dtype=np.float64), dtype=np.float32)
    scaled = data.astype(np.float32) * inverse
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


def _fixed_point_parts(factor: float) -> tuple[int, int]:
    """`(multiplier, total)`: `factor ≈ multiplier / 2^total`, `total` in [1, 62] (a
    factor below 2^-32 is 0: no int32 times it rounds to another value)."""
    multiplier, shift = fixed_point(factor)
    total = 31 - shift
    if total > 62:
        return 0, 62
    if total < 1:
        raise QuantizeError(f"internal: rescale factor {factor:g} is too large for int32")
    return multiplier, total


def fixed_point_multiply(x: Expr, factor: float | np.ndarray, rounding: str) -> Expr:
    """`round(x * factor)` for an int32 `x`, in integer arithmetic (int64 inside); a
    per-channel `factor` array gives constant arrays of its shape."""
    constants: tuple[Expr, Expr, Expr]
    if isinstance(factor, np.ndarray):
        parts = [_fixed_point_parts(float(f)) for f in factor.ravel()]
        multipliers = np.array([m for m, _ in parts], np.int64).reshape(factor.shape)
        totals = np.array([t for _, t in parts], np.int64).reshape(factor.shape)
        biases = np.left_shift(np.int64(1), totals - 1)
        constants = (Constant(multipliers), Constant(biases), Constant(totals))
    else:
        multiplier, total = _fixed_point_parts(factor)
        constants = (
            scalar(multiplier, "int64"),
            scalar(1 << (total - 1), "int64"),
            scalar(total, "int64"),
        )
    multiplier_c, total_c = constants[0], constants[2]
    bias: Expr = constants[1]
    wide = call("multiply", call("cast", x, dtype="int64"), multiplier_c)
    if rounding != "UPWARD":  # ties away from zero: one less bias below zero
        negative = call("cast", call("less", wide, scalar(0, "int64")), dtype="int64")
        bias = call("subtract", bias, negative)
    shifted = call("right_shift", call("add", wide, bias), total_c)
    return call("cast", shifted, dtype="int32")


def _power_of_two(factor: float) -> int | None:
    exponent = math.log2(factor)
    return int(exponent) if exponent == int(exponent) else None


def _rescale_channels(x: Expr, factor: np.ndarray, config: QConfig) -> Expr:
    """`x` times a per-channel `factor`: rounding right shifts by int32 arrays when every
    factor is 2^-k (k >= 0, e.g. power-of-two weight scales), else a fixed-point multiply."""
    exponents = np.log2(factor)
    shifts = -exponents.astype(np.int64)
    if not np.all(exponents == -shifts) or np.any(shifts < 0) or np.any(shifts > 31):
        return fixed_point_multiply(x, factor, config.rounding)
    if config.round_for_shift:
        bias = np.where(shifts > 0, np.left_shift(1, np.maximum(shifts - 1, 0)), 0)
        x = call("add", x, Constant(bias.astype(np.int32)))
    return call("right_shift", x, Constant(shifts.astype(np.int32)))


def rescale(x: Expr, factor: float | np.ndarray, config: QConfig) -> Expr:
    """The int32 `x` times `factor` (> 0; an array: per channel, broadcasting against
    `x`), rounded as `config` says."""
    if not isinstance(factor, np.ndarray) and factor == 1.0:
        return x
    dtype = "int32"
    if isinstance(x, Constant):
        scaled = round_array(x.data.astype(np.float64) * factor, config.rounding)
        return Constant(scaled.astype(dtype))
    if isinstance(factor, np.ndarray):
        if factor.size and np.all(factor == factor.flat[0]):
            factor = float(factor.flat[0])
        else:
            return _rescale_channels(x, factor, config)
    if factor == 1.0:
        return x
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
