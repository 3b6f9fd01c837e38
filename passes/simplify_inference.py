"""`simplify-inference`: inference-time expansions of normalizations; dropout removed.

`nn.batch_norm(x, gamma, beta, mean, var, axis=a, epsilon=e).0` becomes
`x * scale + shift` with `scale = gamma / sqrt(var + e)` (`1 / sqrt(var + e)` when
`scale=False`) and `shift = beta - mean * scale` (`-(mean * scale)` when `center=False`),
both broadcast along axis `a` with `expand_dims`; `nn.dropout(x).0` becomes `x`. Other
projections of the same call (`.1`, `.2`) keep reading the original call; a projection
of a `let`-bound variable is expanded when the call's arguments are atoms.
`nn.layer_norm` and `nn.instance_norm` become `(x - mean) * rsqrt(variance + e)` (biased
variance, `mean` ops with `keepdims`; TVM divides by `sqrt`, we multiply by one reciprocal
per row) times gamma plus beta, and `nn.l2_normalize` becomes
`x / sqrt(maximum(sum(x * x), eps))`, so that they can fuse. `nn.group_norm` is kept.
The rules run through the rewrite driver in one bottom-up sweep; types (the rank of `x`)
come from one inference of each function, carried to the nodes the sweep rebuilds.

    def @main(%x: Tensor[(1, 2, 3, 3), float32], %g: Tensor[(2), float32],
              %b: Tensor[(2), float32], %m: Tensor[(2), float32], %v: Tensor[(2), float32]) {
      %0 = nn.batch_norm(%x, %g, %b, %m, %v);
      %0.0
    }

becomes

    def @main(%x: Tensor[(1, 2, 3, 3), float32], %g: Tensor[(2), float32],
              %b: Tensor[(2), float32], %m: Tensor[(2), float32], %v: Tensor[(2), float32]) {
      %0 = add(%v, 1e-05f);
      %1 = sqrt(%0);
      %2 = divide(%g, %1);
      %3 = expand_dims(%2, axis=1, num_newaxis=2);
      %4 = multiply(%x, %3);
      %5 = multiply(%m, %2);
      %6 = subtract(%b, %5);
      %7 = expand_dims(%6, axis=1, num_newaxis=2);
      add(%4, %7)
    }
"""

from __future__ import annotations

from ..lang.expr import Call, Constant, Expr, Function, GlobalVar, Let, TupleGetItem, Var, const
from ..lang.module import IRModule
from ..lang.op import Op, get_op
from ..lang.traversal import post_order
from ..lang.types import TensorType
from .context import PassContext
from .pass_base import NoOptions, function_pass
from .pattern import RewriteContext, Rule, RuleSet, apply_rules, is_op, is_tuple_get_item, wildcard


def _call(name: str, *args: Expr, **attrs: object) -> Call:
    op = get_op(name)
    return Call(op, args, op.make_attrs(**attrs) if op.attrs_schema is not None else None)


def _along(value: Expr, axis: int, ndim: int) -> Expr:
    """`value` (shape `(C,)`) made to broadcast along `axis` of a rank-`ndim` tensor."""
    trailing = ndim - 1 - axis
    return value if trailing == 0 else _call("expand_dims", value, axis=1, num_newaxis=trailing)


def expand_batch_norm(call: Call, x_type: TensorType) -> Expr:
    """`call.0` (an `nn.batch_norm` call) as arithmetic, for a data argument of `x_type`."""
    x, gamma, beta, mean, var = call.args
    attrs = call.attrs
    assert attrs is not None
    ndim = x_type.ndim
    axis = int(attrs.axis) % ndim
    eps = const(float(attrs.epsilon), x_type.dtype)
    std = _call("sqrt", _call("add", var, eps))
    if attrs.scale:
        scale: Expr = _call("divide", gamma, std)
    else:
        scale = _call("divide", const(1.0, x_type.dtype), std)
    moved = _call("multiply", mean, scale)
    shift = _call("subtract", beta, moved) if attrs.center else _call("negative", moved)
    scaled = _call("multiply", x, _along(scale, axis, ndim))
    return _call("add", scaled, _along(shift, axis, ndim))


def _normalized(x: Expr, axes: list[int], eps: Expr) -> Expr:
    """`(x - mean) * rsqrt(variance + eps)` over `axes` (the biased variance): one
    reciprocal square root per row, then a multiply per element (a vector divide per
    element costs as much as the rest of the normalization)."""
    mean = _call("mean", x, axis=axes, keepdims=True)
    centered = _call("subtract", x, mean)
    square = _call("multiply", centered, centered)
    var = _call("mean", square, axis=axes, keepdims=True)
    return _call("multiply", centered, _call("rsqrt", _call("add", var, eps)))


def expand_norm(call: Call, x_type: TensorType) -> Expr | None:
    """An `nn.layer_norm`, `nn.instance_norm` or `nn.l2_normalize` call as arithmetic (None
    for an instance norm with nothing to reduce over, which is kept)."""
    assert isinstance(call.op, Op) and call.attrs is not None
    attrs, ndim, x = call.attrs, x_type.ndim, call.args[0]
    if call.op.name == "nn.l2_normalize":
        listed = range(ndim) if attrs.axis is None else attrs.axis  # None: every axis
        axes = sorted({int(a) % ndim for a in listed})
        total = _call("sum", _call("multiply", x, x), axis=axes, keepdims=True)
        floor = _call("maximum", total, const(float(attrs.eps), x_type.dtype))
        return _call("divide", x, _call("sqrt", floor))
    axis = int(attrs.axis) % ndim
    if call.op.name == "nn.layer_norm":
        axes = [axis]
    else:
        axes = [i for i in range(1, ndim) if i != axis]
    if not axes:
        return None
    out = _normalized(x, axes, const(float(attrs.epsilon), x_type.dtype))
    if attrs.scale:
        out = _call("multiply", out, _along(call.args[1], axis, ndim))
    if attrs.center:
        out = _call("add", out, _along(call.args[2], axis, ndim))
    return out


_NORMS = ("nn.layer_norm", "nn.instance_norm", "nn.l2_normalize")
_PROJECTED = ("nn.batch_norm", "nn.dropout")


def _is_call_of(e: Expr, names: tuple[str, ...]) -> bool:
    return isinstance(e, Call) and isinstance(e.op, Op) and e.op.name in names


def _tensor_type(ctx: RewriteContext, e: Expr) -> TensorType | None:
    t = ctx.type_of(e)
    return t if isinstance(t, TensorType) and t.ndim > 0 else None


def _atomic(e: Expr) -> bool:
    return isinstance(e, (Var, Constant, GlobalVar))


def _let_bound(fn: Function) -> dict[Var, Call]:
    """Variables bound by `let` to a batch_norm/dropout call of atoms (safe to re-read)."""
    bound: dict[Var, Call] = {}
    for node in post_order(fn):
        if isinstance(node, Let) and isinstance(node.value, Call):
            value = node.value
            if _is_call_of(value, _PROJECTED) and all(map(_atomic, value.args)):
                bound[node.var] = value
    return bound


def inference_rules(bound: dict[Var, Call]) -> RuleSet:
    """The rules of `simplify-inference`; `bound` maps the variables whose projections are
    expanded to the calls they are bound to (see `_let_bound`)."""

    # types are those of the input (the driver runs with `retype=False`): the data's type
    # is read from the node as it was (`ctx.original`), never from a rebuilt one

    def projection(value: Expr, ctx: RewriteContext) -> Expr | None:
        original = ctx.original
        assert isinstance(original, TupleGetItem)
        target = original.tuple_value
        if isinstance(value, Var) and value in bound:
            value = target = bound[value]
        if not isinstance(value, Call) or not _is_call_of(value, _PROJECTED):
            return None
        if _is_call_of(value, ("nn.dropout",)):
            return value.args[0]
        assert isinstance(target, Call)
        x_type = _tensor_type(ctx, target.args[0])
        return None if x_type is None else expand_batch_norm(value, x_type)

    def norm(call: Call, ctx: RewriteContext) -> Expr | None:
        original = ctx.original
        assert isinstance(original, Call)
        x_type = _tensor_type(ctx, original.args[0])
        return None if x_type is None else expand_norm(call, x_type)

    x, gamma, beta = wildcard(), wildcard(), wildcard()
    scale_shift = (is_op("nn.layer_norm") | is_op("nn.instance_norm"))(x, gamma, beta)
    return (
        Rule(is_tuple_get_item(wildcard().named("value"), 0), projection, "project_norm")
        + Rule(scale_shift.named("call"), norm, "expand_norm")
        + Rule(is_op("nn.l2_normalize")(wildcard()).named("call"), norm, "expand_l2_normalize")
    )


def simplify_inference_function(fn: Function, mod: IRModule | None = None) -> Function:
    """`fn` with `nn.batch_norm(...).0` and `nn.dropout(...).0` expanded."""
    out = apply_rules(inference_rules(_let_bound(fn)), fn, mod, retype=False, fixpoint=False)
    assert isinstance(out, Function)
    return out


@function_pass(name="simplify-inference", opt_level=0, include_primitive=True)
def simplify_inference_pass(
    fn: Function, mod: IRModule, ctx: PassContext, options: NoOptions
) -> Function:
    """Expand normalizations into arithmetic and remove `nn.dropout` for inference."""
    return simplify_inference_function(fn, mod)
