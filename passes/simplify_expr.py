"""`simplify-expr`: algebraic peepholes written with the dataflow pattern language.

Each rule is a pattern and a few-line callback reading types from the driver's context;
the rules are combined with `+` and run by the rewrite driver (`pattern.rewrite`)
bottom-up, each node rewritten until none fires there. Types are inferred once, then
carried to rebuilt nodes and inferred locally for new ones, so one linear sweep reaches
the fixpoint (another runs only if a rule lacked a type). Rules:
`x * 1`, `1 * x`, `x + 0`, `0 + x`, `x - 0`, `x / 1` (only when the result type equals
`x`'s type, so broadcasting never changes); chains of `reshape`/`squeeze`/`expand_dims`
→ one `reshape` (or `x` when the shape is unchanged); `transpose` of `transpose` → one
`transpose` (or `x` when the permutation is the identity); `cast` to `x`'s own dtype →
`x`; `cast(cast(x, a), b)` → `cast(x, b)` when `a` holds every value of `x`'s dtype.

    def @main(%x: Tensor[(2, 3), float32]) {
      %0 = multiply(%x, 1f);
      %1 = transpose(%0, axes=[1, 0]);
      transpose(%1, axes=[1, 0])
    }

becomes

    def @main(%x: Tensor[(2, 3), float32]) {
      %x
    }
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..lang.dtype import normalize_dtype, numpy_dtype
from ..lang.expr import Call, Constant, Expr, Function
from ..lang.module import IRModule
from ..lang.op import Op, get_op
from ..lang.structural import structural_equal
from ..lang.types import TensorType
from .context import PassContext
from .pass_base import NoOptions, function_pass
from .pattern import (
    DFPattern,
    RewriteContext,
    Rule,
    RuleSet,
    apply_rules,
    is_constant,
    is_op,
    wildcard,
)

MAX_SWEEPS = 100
"""The most sweeps (and rewrites of one node) `simplify-expr` makes before giving up (a
rule set bug)."""


def _static(ctx: RewriteContext, e: Expr) -> TensorType | None:
    """The type of `e` if it is a tensor of static shape."""
    t = ctx.type_of(e)
    if isinstance(t, TensorType) and all(isinstance(d, int) for d in t.shape):
        return t
    return None


def _same_type(ctx: RewriteContext, a: Expr, b: Expr) -> bool:
    ta, tb = ctx.type_of(a), ctx.type_of(b)
    if isinstance(ta, TensorType) and isinstance(tb, TensorType):
        return ta.dtype == tb.dtype and ta.shape == tb.shape
    return ta is not None and tb is not None and structural_equal(ta, tb)


def _all_equal(c: Constant, value: int) -> bool:
    data = c.data
    if data.size == 1:  # the common scalar: `item` is far cheaper than a numpy reduction
        return bool(data.item() == value)
    return data.size > 0 and bool((data == value).all())


def _call(name: str, *args: Expr, **attrs: object) -> Call:
    op = get_op(name)
    return Call(op, args, op.make_attrs(**attrs) if op.attrs_schema is not None else None)


def _op_name(e: Expr) -> str:
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else ""


def _arith_rules() -> RuleSet:
    def identity(value: int) -> Callable[..., Expr | None]:
        def callback(call: Expr, x: Expr, c: Constant, ctx: RewriteContext) -> Expr | None:
            return x if _all_equal(c, value) and _same_type(ctx, call, x) else None

        return callback

    x, c = wildcard().named("x"), is_constant().named("c")
    return (
        Rule(is_op("multiply")(x, c).named("call"), identity(1), "x*1")
        + Rule(is_op("multiply")(c, x).named("call"), identity(1), "1*x")
        + Rule(is_op("add")(x, c).named("call"), identity(0), "x+0")
        + Rule(is_op("add")(c, x).named("call"), identity(0), "0+x")
        + Rule(is_op("subtract")(x, c).named("call"), identity(0), "x-0")
        + Rule(is_op("divide")(x, c).named("call"), identity(1), "x/1")
    )


def _safe_newshape(call: Call) -> bool:
    """Whether `call`'s `newshape` means the same whatever its input's shape."""
    if _op_name(call) != "reshape" or call.attrs is None:
        return False
    low = 0 if call.attrs.allowzero else 1
    return all(isinstance(d, int) and (d >= low or d == -1) for d in call.attrs.newshape)


def _reshape_rules() -> RuleSet:
    def reshape_like() -> DFPattern:
        # a fresh pattern each time: one pattern object matches one expression
        return is_op("reshape") | is_op("squeeze") | is_op("expand_dims")

    def unchanged(call: Expr, x: Expr, ctx: RewriteContext) -> Expr | None:
        out = _static(ctx, call)
        return x if out is not None and _same_type(ctx, call, x) else None

    def chain(call: Call, inner: Expr, x: Expr, ctx: RewriteContext) -> Expr | None:
        if _same_type(ctx, call, x) and _static(ctx, call) is not None:
            return x
        out = _static(ctx, call)
        if out is not None:
            shape = [d for d in out.shape if isinstance(d, int)]
            return _call("reshape", x, newshape=shape, allowzero=int(0 in shape))
        if _safe_newshape(call):
            return Call(call.op, (x,), call.attrs, span=call.span)
        return None

    inner = reshape_like()(wildcard().named("x")).named("inner")
    same = Rule(reshape_like()(wildcard().named("x")).named("call"), unchanged, "reshape_same")
    return same + Rule(reshape_like()(inner).named("call"), chain, "reshape_reshape")


def _axes(call: Call, ndim: int | None) -> list[int] | None:
    axes = call.attrs.axes if call.attrs is not None else None
    if axes is None:
        return None if ndim is None else list(range(ndim - 1, -1, -1))
    n = len(axes)
    return [int(a) % n for a in axes]


def _ndim(ctx: RewriteContext, e: Expr) -> int | None:
    t = ctx.type_of(e)
    return t.ndim if isinstance(t, TensorType) else None


def _transpose_rules() -> RuleSet:
    def identity(call: Call, x: Expr, ctx: RewriteContext) -> Expr | None:
        axes = _axes(call, _ndim(ctx, x))
        return x if axes is not None and axes == list(range(len(axes))) else None

    def compose(call: Call, inner: Call, x: Expr, ctx: RewriteContext) -> Expr | None:
        first = _axes(inner, _ndim(ctx, x))
        second = _axes(call, len(first) if first is not None else _ndim(ctx, inner))
        if first is None or second is None or len(first) != len(second):
            return None
        axes = [first[a] for a in second]
        if axes == list(range(len(axes))):
            return x
        return _call("transpose", x, axes=axes)

    x = wildcard().named("x")
    return Rule(is_op("transpose")(x).named("call"), identity, "transpose_identity") + Rule(
        is_op("transpose")(is_op("transpose")(x).named("inner")).named("call"),
        compose,
        "transpose_transpose",
    )


def widens_losslessly(src: str, mid: str) -> bool:
    """Whether every value of dtype `src` is exactly representable in dtype `mid`."""
    try:
        a, b = numpy_dtype(src), numpy_dtype(mid)
    except (ValueError, TypeError):
        return normalize_dtype(src) == normalize_dtype(mid)
    if a.kind in "iu" and b.kind == "f":
        magnitude_bits = a.itemsize * 8 - (1 if a.kind == "i" else 0)
        return magnitude_bits <= np.finfo(b).nmant + 1
    return bool(np.can_cast(a, b, casting="safe"))


def _cast_rules() -> RuleSet:
    def same(call: Call, x: Expr, ctx: RewriteContext) -> Expr | None:
        t = ctx.type_of(x)
        assert call.attrs is not None
        if isinstance(t, TensorType) and normalize_dtype(t.dtype) == normalize_dtype(
            str(call.attrs.dtype)
        ):
            return x
        return None

    def twice(call: Call, inner: Call, x: Expr, ctx: RewriteContext) -> Expr | None:
        t = ctx.type_of(x)
        assert inner.attrs is not None
        if isinstance(t, TensorType) and widens_losslessly(t.dtype, str(inner.attrs.dtype)):
            return Call(call.op, (x,), call.attrs, span=call.span)
        return None

    x = wildcard().named("x")
    return Rule(is_op("cast")(x).named("call"), same, "cast_same") + Rule(
        is_op("cast")(is_op("cast")(x).named("inner")).named("call"), twice, "cast_cast"
    )


SIMPLIFY_RULES = _arith_rules() + _reshape_rules() + _transpose_rules() + _cast_rules()
"""Every rule of `simplify-expr` (types come from the driver's `RewriteContext`)."""


def simplify_expr_function(fn: Function, mod: IRModule | None = None) -> Function:
    """`fn` with the `simplify-expr` rules applied until none fires."""
    out = apply_rules(SIMPLIFY_RULES, fn, mod, settle=True, max_sweeps=MAX_SWEEPS)
    assert isinstance(out, Function)
    return out


@function_pass(name="simplify-expr", opt_level=0, include_primitive=True)
def simplify_expr_pass(
    fn: Function, mod: IRModule, ctx: PassContext, options: NoOptions
) -> Function:
    """Algebraic peepholes: identities of arithmetic, reshape, transpose and cast."""
    return simplify_expr_function(fn, mod)
