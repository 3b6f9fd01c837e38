"""`fold-scale-axis`: fold a per-output-channel constant scale into a constant weight.

Backward: `multiply(nn.conv2d(x, W), c)` (NCHW data, OIHW kernel) where `W`
and `c` are constants and `c` broadcasts along axis 1 only (shape `(C, 1, 1)` or
`(1, C, 1, 1)` with `C` the output channels) becomes `nn.conv2d(x, W * c)`;
`multiply(nn.dense(x, W), c)` with `c` of shape `(units,)` or `(1, units)` becomes
`nn.dense(x, W * c)`. The operand order of the multiply does not matter. The convolution
(or dense) must have no other reader and the multiply must not change its type.
Forward: `nn.conv2d(multiply(x, c), W)` (NCHW/OIHW, `groups=1`, `c` of shape `(Cin, 1, 1)`
or `(1, Cin, 1, 1)`) becomes `nn.conv2d(x, W * c.reshape(1, Cin, 1, 1))` (zero padding
commutes with the scale); likewise `nn.dense(multiply(x, c), W)` with `c` of shape `(k,)`
or `(1, k)`. The multiply must be read only by the convolution and must not broadcast `x`.
A scale between two convolutions folds backward (into the first). Both directions also
see through `let`-bound variables. The folds are planned on the input (with one type
inference), then made by one rule in one bottom-up sweep of the rewrite driver.

    def @main(%x: Tensor[(1, 2, 4, 4), float32]) {
      %0 = nn.conv2d(%x, <W: Tensor[(3, 2, 1, 1), float32]>, channels=3, kernel_size=[1, 1]);
      multiply(%0, <c: Tensor[(3, 1, 1), float32]>)
    }

becomes

    def @main(%x: Tensor[(1, 2, 4, 4), float32]) {
      nn.conv2d(%x, <W * c.reshape(3, 1, 1, 1)>, channels=3, kernel_size=[1, 1])
    }
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..lang.expr import Call, Constant, Expr, Function, Let, Var
from ..lang.module import IRModule
from ..lang.op import Op
from ..lang.structural import structural_equal
from ..lang.traversal import children, post_order
from ..typecheck import ModuleTypes, infer_expr
from .context import PassContext
from .pass_base import NoOptions, function_pass
from .pattern import RewriteContext, Rule, apply_rules, is_op, wildcard


def _op_name(e: Expr) -> str:
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else ""


def _channel_scale(c: Constant, channels: int, rank: int) -> np.ndarray | None:
    """`c` as a vector of `channels` values if it broadcasts along axis `rank - 1` of the
    last `rank` axes only (axis 1 of NCHW: rank 3; the last axis of dense: rank 1)."""
    shape = c.data.shape
    wanted = (channels,) + (1,) * (rank - 1)
    if shape == wanted or shape == (1, *wanted):
        return c.data.reshape(channels)
    return None


def _fold(producer: Call, c: Constant) -> Expr | None:
    name = _op_name(producer)
    if len(producer.args) != 2 or not isinstance(producer.args[1], Constant):
        return None
    weight = producer.args[1].data
    if weight.dtype != c.data.dtype or weight.ndim < 1:
        return None
    attrs = producer.attrs
    if name == "nn.conv2d":
        if attrs is None or attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW":
            return None
        if attrs.out_layout not in ("", "NCHW") or weight.ndim != 4:
            return None
        vector = _channel_scale(c, weight.shape[0], 3)
    elif name == "nn.dense":
        vector = _channel_scale(c, weight.shape[0], 1) if weight.ndim == 2 else None
    else:
        return None
    if vector is None:
        return None
    scaled = (weight * vector.reshape((-1,) + (1,) * (weight.ndim - 1))).astype(
        weight.dtype, copy=False
    )
    scaled.setflags(write=False)  # fresh: the constant keeps it without a copy
    new_weight = Constant(scaled, span=producer.args[1].span)
    return producer.replace(args=(producer.args[0], new_weight))


class _Uses:
    """What the plans need to know of a function, from one walk: how many nodes read each
    node (a `let` binder is not a read), the variables bound by `let` to a call, and the
    calls of `multiply` and of `nn.conv2d` / `nn.dense` (children first)."""

    def __init__(self, order: Sequence[Expr]) -> None:
        readers: dict[int, int] = {}
        self.readers = readers
        self.bound: dict[Var, Call] = {}
        self.multiplies: list[Call] = []
        self.consumers: list[Call] = []
        for node in order:
            if type(node) is Call:
                name = _op_name(node)
                if name == "multiply":
                    self.multiplies.append(node)
                elif name in ("nn.conv2d", "nn.dense"):
                    self.consumers.append(node)
            kids = children(node)
            if not kids:
                continue
            if isinstance(node, Let):
                kids = kids[1:]
                if isinstance(node.value, Call):
                    self.bound[node.var] = node.value
            for kid in kids:
                readers[id(kid)] = readers.get(id(kid), 0) + 1


def _plan(
    fn: Function, mod: IRModule | None, uses: _Uses
) -> tuple[dict[int, Constant], dict[int, Expr]]:
    """The folds to make: scale by call id, and the multiplies (by id) to replace by their
    producer operand."""
    readers, bound = uses.readers, uses.bound
    scales: dict[int, Constant] = {}
    replaced: dict[int, Expr] = {}
    types: ModuleTypes | None = None
    for node in uses.multiplies:
        for operand, c in (node.args, node.args[::-1]):
            producer = bound.get(operand) if isinstance(operand, Var) else operand
            if not isinstance(producer, Call) or not isinstance(c, Constant):
                continue
            if readers.get(id(operand), 0) != 1 or id(producer) in scales:
                continue
            if _fold(producer, c) is None:
                continue
            if types is None:
                types = infer_expr(fn, mod)
            if structural_equal(types.type_of(node), types.type_of(operand)):
                scales[id(producer)] = c
                replaced[id(node)] = operand
                break
    return scales, replaced


def _input_scale(consumer: Call, c: Constant) -> np.ndarray | None:
    """The per-input-channel weight factor that folds `multiply(x, c)` into `consumer`."""
    weight = consumer.args[1]
    if not isinstance(weight, Constant) or weight.data.dtype != c.data.dtype:
        return None
    w, attrs, name = weight.data, consumer.attrs, _op_name(consumer)
    if name == "nn.conv2d" and w.ndim == 4 and attrs is not None:
        if attrs.data_layout != "NCHW" or attrs.kernel_layout != "OIHW" or attrs.groups != 1:
            return None
        vector = _channel_scale(c, w.shape[1], 3)
        return None if vector is None else vector.reshape(1, -1, 1, 1)
    if name == "nn.dense" and w.ndim == 2:
        vector = _channel_scale(c, w.shape[1], 1)
        return None if vector is None else vector.reshape(1, -1)
    return None


def _plan_forward(
    fn: Function, mod: IRModule | None, replaced: dict[int, Expr], uses: _Uses
) -> dict[int, tuple[Expr, np.ndarray]]:
    """Convolutions and dense calls (by id) whose data is `multiply(x, c)` read only by
    them: the `x` to read instead and the factor for the weight."""
    readers, bound = uses.readers, uses.bound
    forward: dict[int, tuple[Expr, np.ndarray]] = {}
    types: ModuleTypes | None = None
    for node in uses.consumers:
        data = node.args[0]
        scaled = bound.get(data) if isinstance(data, Var) else data
        if not isinstance(scaled, Call) or _op_name(scaled) != "multiply":
            continue
        if readers.get(id(data), 0) != 1 or id(scaled) in replaced:
            continue
        for x, c in (scaled.args, scaled.args[::-1]):
            factor = _input_scale(node, c) if isinstance(c, Constant) else None
            if factor is None:
                continue
            if types is None:
                types = infer_expr(fn, mod)
            if structural_equal(types.type_of(scaled), types.type_of(x)):
                forward[id(node)] = (x, factor)
                break
    return forward


def plan_rule(
    fn: Function, mod: IRModule | None = None, order: Sequence[Expr] | None = None
) -> Rule | None:
    """The rule that makes the folds planned for `fn` (None when there are none): at a
    planned node, a backward fold replaces the multiply by its producer operand, a forward
    fold makes the convolution read `x` with a scaled weight, and a planned producer gets
    its weight scaled (in that order, so one node can take part in both directions).
    `order`, if given, is `post_order(fn)`."""
    uses = _Uses(list(post_order(fn)) if order is None else order)
    if not uses.multiplies:
        return None
    scales, replaced = _plan(fn, mod, uses)
    forward = _plan_forward(fn, mod, replaced, uses)
    if not scales and not forward:
        return None

    def fold(node: Expr, ctx: RewriteContext) -> Expr | None:
        key = id(ctx.original)
        rewritten = ctx.rewritten
        result = node
        if key in replaced:
            result = rewritten(replaced[key])
        if key in forward and isinstance(result, Call):
            x, factor = forward[key]
            weight = result.args[1]
            assert isinstance(weight, Constant)
            new_weight = Constant((weight.data * factor).astype(weight.data.dtype))
            result = result.replace(args=(rewritten(x), new_weight))
        if key in scales and isinstance(result, Call):
            result = _fold(result, scales[key]) or result
        return result

    # every planned node is a call of one of these (the driver tries the rule only there)
    planned = is_op("multiply") | is_op("nn.conv2d") | is_op("nn.dense")
    return Rule(planned(wildcard(), wildcard()).named("node"), fold, "fold_scale")


def fold_scale_axis_function(fn: Function, mod: IRModule | None = None) -> Function:
    """`fn` with per-output-channel constant scales folded into constant weights."""
    order = list(post_order(fn))
    folds = plan_rule(fn, mod, order)
    if folds is None:
        return fn
    out = apply_rules(folds, fn, mod, fixpoint=False, nodes=order)
    assert isinstance(out, Function)
    return out


@function_pass(name="fold-scale-axis", opt_level=3, include_primitive=True)
def fold_scale_axis_pass(
    fn: Function, mod: IRModule, ctx: PassContext, options: NoOptions
) -> Function:
    """Fold constant per-channel multiplies around `nn.conv2d` / `nn.dense` into weights."""
    return fold_scale_axis_function(fn, mod)
