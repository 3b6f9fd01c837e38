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
  activation operand to `INPUT`). With `bias_mode="int32"`, a constant added to a
  conv2d/dense result is a `BIAS` point instead: its scale is the accumulator's
  (`Annotated.biases` names the input and weight points it follows from).
* With `per_channel`, the weight point of a conv2d (OIHW weight, NCHW data and result) or
  dense has `axis=0`: one scale per output channel (`channel_shape` gives the shape that
  scale takes against the result).
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

IDENTITY, INPUT, WEIGHT, ACTIVATION, BIAS = 0, 1, 2, 3, 4
KIND_NAMES = {
    IDENTITY: "identity",
    INPUT: "input",
    WEIGHT: "weight",
    ACTIVATION: "activation",
    BIAS: "bias",
}
"""TVM's `QAnnotateKind` values and their names, and `BIAS` (an int32 bias at its
accumulator's scale, `bias_mode="int32"`)."""


@attrs.frozen
class QPoint:
    """A quantize point: its index (creation order), kind and signedness; `axis` is the
    axis of a per-channel weight along which scales vary (None: one scale)."""

    index: int
    kind: int
    sign: bool = True
    axis: int | None = None


@attrs.frozen(eq=False)
class BiasSource:
    """Where a `BIAS` point's scale comes from: the accumulator's input and weight points
    (scale = input scale x weight scale), the shape per-channel values (weight scales,
    bias corrections) take against the bias (`(-1, 1, 1)` for an `add` on NCHW, `(-1,)`
    for `nn.bias_add` or dense; None: the channel axis is unknown), and the annotated
    conv2d/dense call."""

    input: QPoint
    weight: QPoint
    shape: tuple[int, ...] | None
    accumulator: Call


@attrs.frozen
class Q:
    """An annotated value: the expression and its kind (None: plain float); an `INPUT`
    value knows the point whose scale it has (`origin`: it may have passed range-keeping
    operators since)."""

    expr: Expr
    kind: int | None = None
    origin: QPoint | None = None


@attrs.frozen
class QTuple:
    """An annotated tuple: the original node and its annotated fields."""

    node: Tuple
    fields: tuple[Value, ...]


Value = Q | QTuple
Shape = tuple[int, ...]


@attrs.frozen(eq=False)
class Annotated:
    """The annotated function, its quantize points (marker call → point) and the
    operators left in float because no rule covers them (name → count)."""

    function: Function
    points: dict[Call, QPoint]
    float_ops: dict[str, int]
    biases: dict[QPoint, BiasSource] = attrs.field(factory=dict)

    def markers(self) -> list[tuple[Call, QPoint]]:
        """The markers and their points, in point order."""
        return sorted(self.points.items(), key=lambda item: item[1].index)


class AnnotateContext:
    """What rules use: the configuration, the types, and `attach` to add a point."""

    def __init__(self, config: QConfig, types: ModuleTypes) -> None:
        self.config = config
        self.types = types
        self.points: dict[Call, QPoint] = {}
        self._memo: dict[tuple[int, int, int], Call] = {}
        self.stopped = False
        self.biases: dict[QPoint, BiasSource] = {}
        self.accumulators: dict[int, tuple[QPoint, QPoint, Shape | None, Shape]] = {}
        """id of an annotated conv2d/dense call → its input and weight points, its
        `channel_shape` (None: another layout) and its result's shape."""

    def attach(self, expr: Expr, kind: int, axis: int | None = None, owner: int = 0) -> Call:
        """`expr` through a quantize point of `kind` (one point per value, kind and
        `owner`; `axis` for a per-channel weight)."""
        key = (id(expr), kind, owner)
        marker = self._memo.get(key)
        if marker is None:
            marker = Call(STOP_FUSION, (expr,))
            self.points[marker] = QPoint(len(self.points), kind, axis=axis)
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

    def as_input(self, value: Q) -> Q:
        """`value` as an 8-bit `INPUT`: float and activations get an `INPUT` point."""
        if value.kind == INPUT:
            return value
        marker = self.attach(value.expr, INPUT)
        return Q(marker, INPUT, self.points[marker])


STOP_FUSION = get_op("annotation.stop_fusion")

Rule = Callable[[AnnotateContext, Call, list[Value]], Value | None]
"""An annotate rule: the call, its annotated arguments → the annotated result, or None to
leave the call in float."""


def channel_shape(call: Call, rank: int) -> tuple[int, ...] | None:
    """The shape per-channel scales take against the result of the conv2d or dense
    `call` (rank `rank`): `(-1, 1, 1)` for a conv2d on NCHW with OIHW weights, `(-1,)`
    for dense; None for another layout (per-tensor scales only)."""
    attributes = call.attrs
    name = call.op.name  # type: ignore[attr-defined]
    if name == "nn.dense":
        return (-1,) if rank == 2 else None
    layouts = (
        getattr(attributes, "data_layout", "NCHW"),
        getattr(attributes, "kernel_layout", "OIHW"),
        getattr(attributes, "out_layout", "") or getattr(attributes, "data_layout", "NCHW"),
    )
    return (-1, 1, 1) if layouts == ("NCHW", "OIHW", "NCHW") and rank == 4 else None


def _weight(ctx: AnnotateContext, call: Call, value: Value, axis: int | None) -> Expr | None:
    expr = value.expr if isinstance(value, Q) else None
    if isinstance(expr, Constant):
        return ctx.attach(expr, WEIGHT, axis)
    if isinstance(expr, Var):
        raise QuantizeError.at(
            call.span,
            f"the weight of {call.op.name} is the parameter %{expr.name_hint}: quantization "  # type: ignore[attr-defined]
            "needs the weights bound as constants (pass params=... / --params W.npz)",
        )
    return None


def _shape(ctx: AnnotateContext, node: Expr) -> Shape:
    ty = ctx.types.type_of(node)
    if not isinstance(ty, TensorType):
        return ()
    return tuple(d if isinstance(d, int) else -1 for d in ty.shape)


def _conv_like(ctx: AnnotateContext, call: Call, args: list[Value]) -> Value | None:
    data, weight = args[0], args[1]
    if not isinstance(data, Q):
        return None
    out_shape = _shape(ctx, call)
    shape = channel_shape(call, len(out_shape))
    per_channel = ctx.config.per_channel and shape is not None
    quantized_weight = _weight(ctx, call, weight, 0 if per_channel else None)
    if quantized_weight is None:
        return None
    quantized_data = ctx.as_input(data)
    result = call.replace(args=(quantized_data.expr, quantized_weight))
    assert isinstance(quantized_weight, Call)
    weight_point = ctx.points[quantized_weight]
    if quantized_data.origin is not None:
        source = (quantized_data.origin, weight_point, shape, out_shape)
        ctx.accumulators[id(result)] = source
    return Q(result, ACTIVATION)


def _bias(ctx: AnnotateContext, call: Call, acc: Q, bias: Q) -> Expr | None:
    """`bias` (a constant added to the conv2d/dense result `acc`) through a `BIAS` point,
    or None when `bias_mode` is "weight" or the bias does not fit (see `BiasSource`)."""
    source = ctx.accumulators.get(id(acc.expr))
    if ctx.config.bias_mode != "int32" or source is None or not isinstance(bias.expr, Constant):
        return None
    input_point, weight_point, shape, out_shape = source
    bias_shape: Shape | None = shape
    if call.op.name == "nn.bias_add":  # type: ignore[attr-defined]
        axis = call.attrs.axis if call.attrs is not None else 1
        axis = axis - len(out_shape) if axis >= 0 else axis
        bias_shape = (-1,) if shape is not None and axis == -len(shape) else None
    elif _shape(ctx, call) != out_shape or -1 in out_shape:
        return None  # the bias broadcasts the result to a larger shape
    if bias_shape is None and weight_point.axis is not None:
        return None  # per-channel weight scales along another axis than the bias's
    assert isinstance(acc.expr, Call)
    marker = ctx.attach(bias.expr, BIAS, owner=id(acc.expr))
    source_of = BiasSource(input_point, weight_point, bias_shape, acc.expr)
    ctx.biases[ctx.points[marker]] = source_of
    return marker


def _operand(ctx: AnnotateContext, value: Q) -> Expr:
    kind = WEIGHT if isinstance(value.expr, Constant) else INPUT
    return ctx.attach(value.expr, kind)


def _add(ctx: AnnotateContext, call: Call, args: list[Value]) -> Value | None:
    lhs, rhs = args
    if not isinstance(lhs, Q) or not isinstance(rhs, Q) or (lhs.kind is None and rhs.kind is None):
        return None
    if lhs.kind == ACTIVATION and rhs.kind is None:
        bias = _bias(ctx, call, lhs, rhs)
        if bias is not None:
            return Q(call.replace(args=(lhs.expr, bias)), ACTIVATION)
    if rhs.kind == ACTIVATION and lhs.kind is None and call.op.name == "add":  # type: ignore[attr-defined]
        bias = _bias(ctx, call, rhs, lhs)
        if bias is not None:
            return Q(call.replace(args=(bias, rhs.expr)), ACTIVATION)
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
    new = [_operand(ctx, v) if v.kind is None else ctx.as_input(v).expr for v in (lhs, rhs)]
    return Q(call.replace(args=tuple(new)), ACTIVATION)


def _forward(ctx: AnnotateContext, call: Call, args: list[Value]) -> Value | None:
    data = args[0]
    if not isinstance(data, Q) or data.kind is None or len(args) != 1:
        return None
    return Q(call.replace(args=(data.expr,)), data.kind, data.origin)


def _max_pool(ctx: AnnotateContext, call: Call, args: list[Value]) -> Value | None:
    data = args[0]
    if not isinstance(data, Q) or data.kind is None:
        return None
    quantized = ctx.as_input(data)
    return Q(call.replace(args=(quantized.expr,)), INPUT, quantized.origin)


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
                marker = ctx.attach(result.expr, INPUT)
                result = Q(marker, INPUT, ctx.points[marker])
            values[id(node)] = result
        else:
            raise QuantizeError.at(
                node.span,
                f"quantization needs a dataflow @main (calls, tuples, constants); "
                f"found a {type(node).__name__}",
            )
    body = ctx.release(values[id(fn.body)])
    function = fn.replace(body=body)
    return Annotated(function, ctx.points, float_ops, ctx.biases)
