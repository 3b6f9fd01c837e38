"""Realize: the annotated function in integer arithmetic.

Each value is plain float (`RFloat`) or an integer tensor with its domain scale (`QInt`:
real value = integer * scale). At a quantize point a float becomes
`clip(round(x / s), lo, hi)` (still float32, integer-valued; constants are converted to
int8 now), and an integer value changes scale with shifts or a fixed-point multiply
(`arith.rescale`) then clips. Per-operator rules (`REALIZE_RULES`, keyed by the `Op`):

* `nn.conv2d`, `nn.dense`: data cast to `dtype_input`, weight to `dtype_weight`,
  `out_dtype=dtype_activation` (int32 accumulation); the scales multiply (per output
  channel with `per_channel` weights: the value's scale is then an array, `(C, 1, 1)` for
  a conv2d's NCHW result, `(C,)` for dense).
* `add`, `nn.bias_add`, `concatenate`: operands at one scale add as they are (an int32
  bias at its accumulator's scale); else they are brought to the smallest of their scales
  (per-channel scales count as their largest) in int32 (a left shift for a power-of-two
  ratio). `multiply`: int32 product, scales multiply.
* `clip`: bounds divided by the scale (rounded inwards; per channel, `maximum` / `minimum`
  with constant arrays); `nn.avg_pool2d` in int32; `nn.relu`, `nn.max_pool2d` and the
  shape operators work on the integers as they are (a per-channel value is first brought
  to one scale before a shape operator).

Any other reader of an integer value, and the function's result, get it back in float:
`cast(x, "float32") * scale`. Only core operators are used (no QNN dialect): the result is
an ordinary program that prints, parses and type-checks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ...lang.expr import Call, Constant, Expr, Function, GlobalVar, Tuple, TupleGetItem, Var
from ...lang.op import Op, get_op
from ...lang.traversal import post_order
from .annotate import BIAS, FORWARDING, Annotated, QPoint
from .arith import call, cast, quantize_array, quantize_float, rescale, scalar, scale_constant
from .calibrate import PointScale, Scale
from .config import QConfig, QuantizeError

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


@attrs.frozen
class RFloat:
    """A float value."""

    expr: Expr


@attrs.frozen
class QInt:
    """An integer-valued tensor (`dtype`, possibly float32 holding integers) whose real
    value is `expr * scale` (`scale` an array: per channel, broadcasting against it)."""

    expr: Expr
    scale: Scale
    dtype: str


@attrs.frozen
class RTuple:
    """A tuple of realized values."""

    node: Tuple
    fields: tuple[RValue, ...]


RValue = RFloat | QInt | RTuple

Rule = Callable[[QConfig, Call, list[RValue]], RValue | None]
"""A realize rule: the call (original attributes) and its realized arguments → the
result, or None to run the call in float."""


def dequantize(value: RValue) -> Expr:
    """`value` as a float32 expression."""
    if isinstance(value, RTuple):
        return value.node.replace(fields=tuple(dequantize(f) for f in value.fields))
    if isinstance(value, RFloat):
        return value.expr
    if isinstance(value.expr, Constant):
        real = value.expr.data.astype(np.float32) * np.asarray(value.scale, np.float32)
        return Constant(real.astype(np.float32))
    as_float = cast(value.expr, value.dtype, "float32")
    return call("multiply", as_float, scale_constant(value.scale))


def _to_int32(value: QInt, config: QConfig) -> Expr:
    return cast(value.expr, value.dtype, config.dtype_activation)


def _same_scale(a: Scale, b: Scale) -> bool:
    """Whether two scales are the same (per-channel arrays: the same values in order)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        flat_a, flat_b = np.ravel(a), np.ravel(b)
        return flat_a.size == flat_b.size and bool(np.all(flat_a == flat_b))
    return a == b


def _coarsest(scale: Scale) -> float:
    return float(np.max(scale)) if isinstance(scale, np.ndarray) else scale


def _unify(values: list[QInt], config: QConfig) -> tuple[list[Expr], Scale]:
    """Integer operands at one scale, in `dtype_activation`: their common scale when they
    share one (the widest-shaped of equal per-channel scales), else the smallest (a
    per-channel scale counting as its largest, so no channel is scaled up)."""
    first = values[0].scale
    if all(_same_scale(first, v.scale) for v in values[1:]):
        target = max((v.scale for v in values), key=lambda sc: np.ndim(sc))
        return [_to_int32(v, config) for v in values], target
    low = min(_coarsest(v.scale) for v in values)
    exprs = [rescale(_to_int32(v, config), v.scale / low, config) for v in values]
    return exprs, low


def _one_scale(value: QInt, config: QConfig) -> QInt:
    """`value` at a single scale (a per-channel value rescaled to its largest scale)."""
    if not isinstance(value.scale, np.ndarray):
        return value
    target = _coarsest(value.scale)
    scaled = rescale(_to_int32(value, config), value.scale / target, config)
    return QInt(scaled, target, config.dtype_activation)


def _conv_like(config: QConfig, node: Call, args: list[RValue]) -> RValue | None:
    data, weight = args[0], args[1]
    if not isinstance(data, QInt) or not isinstance(weight, QInt):
        return None
    assert node.attrs is not None
    new_args = (
        cast(data.expr, data.dtype, config.dtype_input),
        cast(weight.expr, weight.dtype, config.dtype_weight),
    )
    attributes = node.attrs.replace(out_dtype=config.dtype_activation)
    result = Call(node.op, new_args, attributes, node.type_args, span=node.span)
    weight_scale = weight.scale
    if isinstance(weight_scale, np.ndarray):  # per output channel, against the result
        conv = node.op.name == "nn.conv2d"  # type: ignore[attr-defined]
        weight_scale = weight_scale.reshape((-1, 1, 1) if conv else (-1,))
    return QInt(result, data.scale * weight_scale, config.dtype_activation)


def _add(config: QConfig, node: Call, args: list[RValue]) -> RValue | None:
    if not all(isinstance(a, QInt) for a in args):
        return None
    exprs, scale = _unify([a for a in args if isinstance(a, QInt)], config)
    return QInt(node.replace(args=tuple(exprs)), scale, config.dtype_activation)


def _multiply(config: QConfig, node: Call, args: list[RValue]) -> RValue | None:
    lhs, rhs = args
    if not isinstance(lhs, QInt) or not isinstance(rhs, QInt):
        return None
    lhs, rhs = _one_scale(lhs, config), _one_scale(rhs, config)
    exprs = (_to_int32(lhs, config), _to_int32(rhs, config))
    return QInt(node.replace(args=exprs), lhs.scale * rhs.scale, config.dtype_activation)


def _concatenate(config: QConfig, node: Call, args: list[RValue]) -> RValue | None:
    fields = args[0]
    if not isinstance(fields, RTuple) or not all(isinstance(f, QInt) for f in fields.fields):
        return None
    exprs, scale = _unify([f for f in fields.fields if isinstance(f, QInt)], config)
    joined = node.replace(args=(fields.node.replace(fields=tuple(exprs)),))
    return QInt(joined, scale, config.dtype_activation)


CHANNEL_KEEPING = frozenset(("nn.relu", "nn.max_pool2d"))
"""Forwarding operators that keep every channel where it is (per-channel scales hold)."""


def _forward(config: QConfig, node: Call, args: list[RValue]) -> RValue | None:
    data = args[0]
    if not isinstance(data, QInt) or len(args) != 1:
        return None
    if node.op.name not in CHANNEL_KEEPING:  # type: ignore[attr-defined]
        data = _one_scale(data, config)
    return QInt(node.replace(args=(data.expr,)), data.scale, data.dtype)


def _bound(value: float, scale: Scale, rounding: Callable[[Any], Any]) -> Any:
    """`value / scale` rounded by `rounding` (ceil or floor) and kept in int32."""
    if isinstance(scale, np.ndarray):
        bounds = np.clip(rounding(np.float64(value) / scale), INT32_MIN, INT32_MAX)
        return bounds.astype(np.int32) if np.any(bounds != bounds.flat[0]) else bounds.flat[0]
    return min(max(rounding(value / scale), INT32_MIN), INT32_MAX)


def _clip(config: QConfig, node: Call, args: list[RValue]) -> RValue | None:
    data = args[0]
    if not isinstance(data, QInt):
        return None
    assert node.attrs is not None
    lo = _bound(node.attrs.a_min, data.scale, np.ceil)
    hi = _bound(node.attrs.a_max, data.scale, np.floor)
    x = _to_int32(data, config)
    if not isinstance(lo, np.ndarray) and not isinstance(hi, np.ndarray):
        clipped = call("clip", x, a_min=float(lo), a_max=float(hi))
        return QInt(clipped, data.scale, config.dtype_activation)
    for name, bound in (("maximum", lo), ("minimum", hi)):
        if isinstance(bound, np.ndarray):
            x = call(name, x, Constant(bound))
        elif INT32_MIN < bound < INT32_MAX:
            x = call(name, x, scalar(int(bound), "int32"))
    return QInt(x, data.scale, config.dtype_activation)


def _avg_pool(config: QConfig, node: Call, args: list[RValue]) -> RValue | None:
    data = args[0]
    if not isinstance(data, QInt):
        return None
    pooled = node.replace(args=(_to_int32(data, config),))
    return QInt(pooled, data.scale, config.dtype_activation)


REALIZE_RULES: dict[Op, Rule] = {
    **{get_op(name): _forward for name in FORWARDING},
    get_op("nn.max_pool2d"): _forward,
    get_op("clip"): _clip,
    get_op("nn.avg_pool2d"): _avg_pool,
    get_op("nn.conv2d"): _conv_like,
    get_op("nn.dense"): _conv_like,
    get_op("add"): _add,
    get_op("nn.bias_add"): _add,
    get_op("multiply"): _multiply,
    get_op("concatenate"): _concatenate,
}
"""The realize rule of each operator that runs on integers."""


def _requantize(value: RValue, point: QPoint, s: PointScale, config: QConfig) -> QInt:
    """`value` at a quantize point of scale `s`."""
    if isinstance(value, RTuple):
        raise QuantizeError("internal: a quantize point on a tuple")
    if isinstance(value, RFloat):
        x = value.expr
        if isinstance(x, Constant):
            wide = point.kind == BIAS
            lo, hi = s.clip_min, s.clip_max
            data = x.data - s.offset if wide else x.data
            q = quantize_array(data, s.dom_scale, lo, hi, config.rounding, wide)
            dtype = config.dtype_of(point.kind)
            return QInt(Constant(q.astype(dtype)), s.dom_scale, dtype)
        q_expr = quantize_float(x, s.dom_scale, s.clip_min, s.clip_max, config.rounding)
        return QInt(q_expr, s.dom_scale, "float32")
    if _same_scale(value.scale, s.dom_scale) and not isinstance(value.scale, np.ndarray):
        clipped = call("clip", value.expr, a_min=s.clip_min, a_max=s.clip_max)
        return QInt(clipped, s.dom_scale, value.dtype)
    scaled = rescale(_to_int32(value, config), value.scale / s.dom_scale, config)
    clipped = call("clip", scaled, a_min=s.clip_min, a_max=s.clip_max)
    return QInt(clipped, s.dom_scale, config.dtype_activation)


def _has_int(value: RValue) -> bool:
    if isinstance(value, RTuple):
        return any(_has_int(f) for f in value.fields)
    return isinstance(value, QInt)


def realize(
    annotated: Annotated,
    scales: dict[QPoint, PointScale],
    config: QConfig,
    taps: dict[QPoint, Expr] | None = None,
) -> Function:
    """The integer program of `annotated` with calibrated `scales`. When `taps` is given,
    it receives each point's value as a float expression of the realized program
    (`cast(q, "float32") * dom_scale`; `quantize.check` compares them with the simulated
    program's)."""
    fn = annotated.function
    values: dict[int, RValue] = {}
    for node in post_order(fn.body):
        result: RValue | None = None
        if isinstance(node, (Var, Constant, GlobalVar, Op)):
            result = RFloat(node)
        elif isinstance(node, Tuple):
            result = RTuple(node, tuple(values[id(f)] for f in node.fields))
        elif isinstance(node, TupleGetItem):
            inner = dequantize(values[id(node.tuple_value)])
            result = RFloat(node.replace(tuple_value=inner))
        elif isinstance(node, Call):
            args = [values[id(a)] for a in node.args]
            point = annotated.points.get(node)
            if point is not None:
                result = _requantize(args[0], point, scales[point], config)
            elif isinstance(node.op, Op) and any(_has_int(a) for a in args):
                rule = REALIZE_RULES.get(node.op)
                result = rule(config, node, args) if rule is not None else None
            if result is None:
                result = RFloat(node.replace(args=tuple(dequantize(a) for a in args)))
        else:
            raise QuantizeError.at(node.span, f"cannot realize a {type(node).__name__}")
        values[id(node)] = result
    if taps is not None:
        for marker, point in annotated.points.items():
            taps[point] = dequantize(values[id(marker)])
    return fn.replace(body=dequantize(values[id(fn.body)]))
