"""Annotate: choose the quantize points of a float dataflow function.

The walk goes once over `@main`'s dataflow graph in post-order. Each value is either plain
float (kind None) or quantized, with the kind of its last quantize point: `INPUT` (an
8-bit input of a conv/dense, or such a value passed through range-keeping operators such
as relu and max pooling) or `ACTIVATION` (an accumulator: the output of conv2d, dense, add,
multiply, concatenate). Per-operator rules (`ANNOTATE_RULES`, a table keyed by the `Op`)
say which arguments get a quantize point of which kind, following TVM's rules:

* `nn.conv2d`, `nn.dense`: the data becomes `INPUT`, the (constant) weight `WEIGHT`;
  the result is an `ACTIVATION`. `skip_conv_layers` counts conv2d calls in dataflow order;
  `skip_dense_layer` leaves dense in float.
* `add`, `nn.bias_add`, `multiply`: a float operand is quantized (`WEIGHT` when
  constant, else `INPUT`); the result is an `ACTIVATION` (multiply first brings an
  activation operand to `INPUT`).
* `concatenate`: float fields get an `ACTIVATION` point. `nn.max_pool2d`: an activation
  becomes `INPUT` first. Shape and range-keeping operators (`nn.relu`, `clip`,
  `reshape`, `nn.batch_flatten`, `transpose`, `squeeze`, `expand_dims`, `strided_slice`,
  `nn.avg_pool2d`) forward their argument's kind.
* `nn.global_avg_pool2d` reads its argument in float and stops quantization of every
  later node, as TVM does (the classifier head stays float).

Where an activation leaves the quantized region — read by more than one node, by an
operator with no rule, or returned — it gets an `INPUT` point first (TVM's partition and
multi-reference rules), so what crosses a boundary is an 8-bit value.

A quantize point is written in the annotated function as a fresh
`annotation.stop_fusion(x)` call (an identity), recorded in `Annotated.points` by identity:
calibration reads the values flowing into the points, and `simulate` / `realize` replace
each one.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ...lang.expr import Call, Constant, Expr, Function, GlobalVar, Tuple, TupleGetItem, Var
from ...lang.op import Op, get_op
from ...lang.traversal import children, post_order
from ...lang.types import TensorType
from ...typecheck import ModuleTypes
from .config import QConfig, QuantizeError

IDENTITY, INPUT, WEIGHT, ACTIVATION = 0, 1, 2, 3
KIND_NAMES = {IDENTITY: "identity", INPUT: "input", WEIGHT: "weight", ACTIVATION: "activation"}
"""TVM's `QAnnotateKind` values and their names."""


@attrs.frozen
class QPoint:
    """A quantize point: its index (creation order), kind and signedness."""

    index: int
    kind: int
    sign: bool = True


@attrs.frozen
class Q:
    """An annotated value: the expression and its kind (None: plain float)."""

    expr: Expr
    kind: int | None = None


@attrs.frozen
class QTuple:
    """An annotated tuple: the original node and its annotated fields."""

    node: Tuple
    fields: tuple[Value, ...]


Value = Q | QTuple


@attrs.frozen(eq=False)
class Annotated:
    """The annotated function, its quantize points (marker call → point) and the
    operators left in float because no rule covers them (name → count)."""

    function: Function
    points: dict[Call, QPoint]
    float_ops: dict[str, int]

    def markers(self) -> list[tuple[Call, QPoint]]:
        """The markers and their points, in point order."""
        return sorted(self.points.items(), key=lambda item: item[1].index)


class AnnotateContext:
    """What rules use: the configuration, the types, and `attach` to add a point."""

    def __init__(self, config: QConfig, types: ModuleTypes) -> None:
        self.config = config
        self.types = types
        self.points: dict[Call, QPoint] = {}
        self._memo: dict[tuple[int, int], Call] = {}
        self.stopped = False

    def attach(self, expr: Expr, kind: int) -> Call:
        """`expr` through a quantize point of `kind` (one point per value and kind)."""
        key = (id(expr), kind)
        marker = self._memo.get(key)
        if marker is None:
            marker = Call(STOP_FUSION, (expr,))
            self.points[marker] = QPoint(len(self.points), kind)
            self._memo[key] = marker
        return marker

    def release(self, value: Value) -> Expr:
        """`value` as an expression read outside the quantized region: an activation
        gets an `INPUT` point first."""
        if isinstance(value, QTuple):
            return value.node.replace(fields=tuple(self.release(f) for f in value.fields))
        if value.kind == ACTIVATION:
            return self.attach(value.expr, INPUT)
        return value.expr

    def as_input(self, value: Q) -> Expr:
        """`value` as an 8-bit `INPUT`: float and activations get an `INPUT` point."""
        return value.expr if value.kind == INPUT else self.attach(value.expr, INPUT)


STOP_FUSION = get_op("annotation.stop_fusion")

Rule = Callable[[AnnotateContext, Call, list[Value]], Value | None]
"""An annotate rule: the call, its annotated arguments → the annotated result, or None to
leave the call in float."""


def _weight(ctx: AnnotateContext, call: Call, value: Value) -> Expr | None:
    expr = value.expr if isinstance(value, Q) else None
    if isinstance(expr, Constant):
        return ctx.attach(expr, WEIGHT)
    if isinstance(expr, Var):
        raise QuantizeError.at(
            call.span,
            f"the weight of {call.op.name} is the parameter %{expr.name_hint}: quantization "  # type: ignore[attr-defined]
            "needs the weights bound as constants (pass params=... / --params W.npz)",
        )
    return None


def _conv_like(ctx: AnnotateContext, call: Call, args: list[Value]) -> Value | None:
    data, weight = args[0], args[1]
    if not isinstance(data, Q):
        return None
    quantized_weight = _weight(ctx, call, weight)
    if quantized_weight is None:
        return None
    return Q(call.replace(args=(ctx.as_input(data), quantized_weight)), ACTIVATION)


def _operand(ctx: AnnotateContext, value: Q) -> Expr:
    kind = WEIGHT if isinstance(value.expr, Constant) else INPUT
    return ctx.attach(value.expr, kind)


def _add(ctx: AnnotateContext, call: Call, args: list[Value]) -> Value | None:
    lhs, rhs = args
    if not isinstance(lhs, Q) or not isinstance(rhs, Q) or (lhs.kind is None and rhs.kind is None):
        return None
    new_lhs = _operand(ctx, lhs) if lhs.kind is None else lhs.expr
    if rhs.kind is None:
        new_rhs = _operand(ctx, rhs)
    elif lhs.kind == ACTIVATION and rhs.kind == ACTIVATION:
        new_rhs = ctx.attach(rhs.expr, INPUT)
    else:
        new_rhs = rhs.expr
    return Q(call.replace(args=(new_lhs, new_rhs)), ACTIVATION)


def _multiply(ctx: AnnotateContext, call: Call, args: list[Value]) -> Value | None:
    lhs, rhs = args
    if not isinstance(lhs, Q) or not isinstance(rhs, Q) or (lhs.kind is None and rhs.kind is None):
        return None
    new = [_operand(ctx, v) if v.kind is None else ctx.as_input(v) for v in (lhs, rhs)]
    return Q(call.replace(args=tuple(new)), ACTIVATION)


def _forward(ctx: AnnotateContext, call: Call, args: list[Value]) -> Value | None:
    data = args[0]
    if not isinstance(data, Q) or data.kind is None or len(args) != 1:
        return None
    return Q(call.replace(args=(data.expr,)), data.kind)


def _max_pool(ctx: AnnotateContext, call: Call, args: list[Value]) -> Value | None:
    data = args[0]
    if not isinstance(data, Q) or data.kind is None:
        return None
    return Q(call.replace(args=(ctx.as_input(data),)), INPUT)


def _concatenate(ctx: AnnotateContext, call: Call, args: list[Value]) -> Value | None:
    fields = args[0]
    if not isinstance(fields, QTuple) or not all(isinstance(f, Q) for f in fields.fields):
        return None
    qs = [f for f in fields.fields if isinstance(f, Q)]
    if all(f.kind is None for f in qs):
        return None
    new = tuple(ctx.attach(f.expr, ACTIVATION) if f.kind is None else f.expr for f in qs)
    return Q(call.replace(args=(fields.node.replace(fields=new),)), ACTIVATION)


def _global_pool(ctx: AnnotateContext, call: Call, args: list[Value]) -> Value | None:
    data = args[0]
    if not isinstance(data, Q) or data.kind is None:
        return None
    ctx.stopped = True
    return Q(call.replace(args=(ctx.release(data),)), None)


FORWARDING = (
    "nn.relu",
    "clip",
    "reshape",
    "nn.batch_flatten",
    "transpose",
    "squeeze",
    "expand_dims",
    "strided_slice",
    "nn.avg_pool2d",
)
"""Operators that keep their argument's kind (range and scale unchanged)."""

ANNOTATE_RULES: dict[Op, Rule] = {
    get_op("nn.conv2d"): _conv_like,
    get_op("nn.dense"): _conv_like,
    get_op("add"): _add,
    get_op("nn.bias_add"): _add,
    get_op("multiply"): _multiply,
    get_op("concatenate"): _concatenate,
    get_op("nn.max_pool2d"): _max_pool,
    get_op("nn.global_avg_pool2d"): _global_pool,
    **{get_op(name): _forward for name in FORWARDING},
}
"""The annotate rule of each operator that can be quantized."""


def annotate_rule(op: Op) -> Rule:
    """The annotate rule of `op`; a `QuantizeError` naming it when it has none."""
    try:
        return ANNOTATE_RULES[op]
    except KeyError:
        raise QuantizeError(f"operator {op.name} has no annotate rule") from None


def _is_float32(types: ModuleTypes, node: Expr) -> bool:
    try:
        ty = types.type_of(node)
    except KeyError:
        return False
    return isinstance(ty, TensorType) and ty.dtype == "float32"


def _skipped(ctx: AnnotateContext, op: Op, conv_index: list[int]) -> bool:
    config = ctx.config
    if op.name == "nn.conv2d":
        index = conv_index[0]
        conv_index[0] += 1
        if config.skip_conv_layers is not None and index in config.skip_conv_layers:
            return True
    if op.name == "nn.dense" and config.skip_dense_layer:
        return True
    if config.debug_enabled_ops is not None and op.name not in config.debug_enabled_ops:
        return True
    return ctx.stopped


def _reader_counts(body: Expr) -> dict[int, int]:
    counts: dict[int, int] = {}
    for node in post_order(body):
        kids = children(node)[1:] if isinstance(node, Call) else children(node)
        for kid in kids:
            counts[id(kid)] = counts.get(id(kid), 0) + 1
    return counts


def annotate(fn: Function, types: ModuleTypes, config: QConfig) -> Annotated:
    """Quantize points for the dataflow function `fn` (typed by `types`) under `config`."""
    ctx = AnnotateContext(config, types)
    readers = _reader_counts(fn.body)
    values: dict[int, Value] = {}
    float_ops: dict[str, int] = {}
    conv_index = [0]
    for node in post_order(fn.body):
        if isinstance(node, (Var, Constant, GlobalVar, Op)):
            values[id(node)] = Q(node)
        elif isinstance(node, Tuple):
            values[id(node)] = QTuple(node, tuple(values[id(f)] for f in node.fields))
        elif isinstance(node, TupleGetItem):
            inner = ctx.release(values[id(node.tuple_value)])
            values[id(node)] = Q(node.replace(tuple_value=inner))
        elif isinstance(node, Call) and isinstance(node.op, Op):
            args = [values[id(a)] for a in node.args]
            result: Value | None = None
            rule = ANNOTATE_RULES.get(node.op)
            if rule is None:
                float_ops[node.op.name] = float_ops.get(node.op.name, 0) + 1
            elif not _skipped(ctx, node.op, conv_index) and _is_float32(types, node):
                result = rule(ctx, node, args)
            if result is None:
                result = Q(node.replace(args=tuple(ctx.release(a) for a in args)))
            if isinstance(result, Q) and result.kind == ACTIVATION and readers.get(id(node), 0) > 1:
                result = Q(ctx.attach(result.expr, INPUT), INPUT)
            values[id(node)] = result
        else:
            raise QuantizeError.at(
                node.span,
                f"quantization needs a dataflow @main (calls, tuples, constants); "
                f"found a {type(node).__name__}",
            )
    body = ctx.release(values[id(fn.body)])
    function = fn.replace(body=body)
    return Annotated(function, ctx.points, float_ops)
