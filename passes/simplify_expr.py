"""`simplify-expr`: algebraic peepholes written with the dataflow pattern language.

Each rule is a pattern and a few-line callback; the rules are combined with `+` and run
bottom-up, each node rewritten until none fires there. Types are inferred once, then
carried to rebuilt nodes and inferred locally for new ones (`pattern.retype`), so one
linear sweep reaches the fixpoint (another runs only if a rule lacked a type). Rules:
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
from ..lang.traversal import children, post_order, with_children
from ..lang.types import TensorType, Type
from ..typecheck import ModuleTypes, infer_expr
from .context import PassContext
from .pass_base import NoOptions, PassError, module_pass
from .pattern import DFPattern, Rule, RuleSet, is_constant, is_op, wildcard
from .pattern.matcher import Matcher, consumers
from .pattern.retype import SweepTypes
from .pattern.rewrite import RuleIndex

MAX_SWEEPS = 100
"""The most sweeps `simplify_expr` makes before giving up (a rule set bug)."""

_RESHAPES = ("reshape", "squeeze", "expand_dims")


class _Types:
    """The types of the current sweep (looked up by node identity); `missing` records that
    a rule asked for a type nobody knew (so another sweep, with fresh types, is needed)."""

    def __init__(self) -> None:
        self.types = ModuleTypes()
        self.missing = False

    def of(self, e: Expr) -> Type | None:
        t = self.types.table.get(e)
        if t is None:
            self.missing = True
        return t

    def static(self, e: Expr) -> TensorType | None:
        t = self.of(e)
        if isinstance(t, TensorType) and all(isinstance(d, int) for d in t.shape):
            return t
        return None

    def same(self, a: Expr, b: Expr) -> bool:
        ta, tb = self.of(a), self.of(b)
        if isinstance(ta, TensorType) and isinstance(tb, TensorType):
            return ta.dtype == tb.dtype and ta.shape == tb.shape
        return ta is not None and tb is not None and structural_equal(ta, tb)


def _all_equal(c: Constant, value: int) -> bool:
    return c.data.size > 0 and bool(np.all(c.data == value))


def _call(name: str, *args: Expr, **attrs: object) -> Call:
    op = get_op(name)
    return Call(op, args, op.make_attrs(**attrs) if op.attrs_schema is not None else None)


def _op_name(e: Expr) -> str:
    return e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else ""


def _arith_rules(ty: _Types) -> RuleSet:
    def identity(value: int) -> Callable[..., Expr | None]:
        def callback(call: Expr, x: Expr, c: Constant) -> Expr | None:
            return x if _all_equal(c, value) and ty.same(call, x) else None

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


def _reshape_rules(ty: _Types) -> RuleSet:
    def reshape_like() -> DFPattern:
        # a fresh pattern each time: one pattern object matches one expression
        return is_op("reshape") | is_op("squeeze") | is_op("expand_dims")

    def unchanged(call: Expr, x: Expr) -> Expr | None:
        out = ty.static(call)
        return x if out is not None and ty.same(call, x) else None

    def chain(call: Call, inner: Expr, x: Expr) -> Expr | None:
        if ty.same(call, x) and ty.static(call) is not None:
            return x
        out = ty.static(call)
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


def _transpose_rules(ty: _Types) -> RuleSet:
    def ndim(e: Expr) -> int | None:
        t = ty.of(e)
        return t.ndim if isinstance(t, TensorType) else None

    def identity(call: Call, x: Expr) -> Expr | None:
        axes = _axes(call, ndim(x))
        return x if axes is not None and axes == list(range(len(axes))) else None

    def compose(call: Call, inner: Call, x: Expr) -> Expr | None:
        first = _axes(inner, ndim(x))
        second = _axes(call, len(first) if first is not None else ndim(inner))
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


def _cast_rules(ty: _Types) -> RuleSet:
    def same(call: Call, x: Expr) -> Expr | None:
        t = ty.of(x)
        assert call.attrs is not None
        if isinstance(t, TensorType) and normalize_dtype(t.dtype) == normalize_dtype(
            str(call.attrs.dtype)
        ):
            return x
        return None

    def twice(call: Call, inner: Call, x: Expr) -> Expr | None:
        t = ty.of(x)
        assert inner.attrs is not None
        if isinstance(t, TensorType) and widens_losslessly(t.dtype, str(inner.attrs.dtype)):
            return Call(call.op, (x,), call.attrs, span=call.span)
        return None

    x = wildcard().named("x")
    return Rule(is_op("cast")(x).named("call"), same, "cast_same") + Rule(
        is_op("cast")(is_op("cast")(x).named("inner")).named("call"), twice, "cast_cast"
    )


def simplify_rules(ty: _Types) -> RuleSet:
    """Every rule of `simplify-expr`, reading types from `ty`."""
    return _arith_rules(ty) + _reshape_rules(ty) + _transpose_rules(ty) + _cast_rules(ty)


_RULE_OPS = ("multiply", "add", "subtract", "divide", "transpose", "cast", *_RESHAPES)


def _settle(rules: RuleIndex, matcher: Matcher, types: SweepTypes, node: Expr) -> Expr:
    """`node` (whose operands are simplified already) rewritten until no rule fires."""
    result = node
    for _ in range(MAX_SWEEPS):
        if _op_name(result) not in _RULE_OPS:
            return result
        for r in rules.at(result):
            found = matcher.match(r.pattern, result)
            if found is None:
                continue
            replacement = r.callback(**found.captures)
            if replacement is not None and replacement is not result:
                types.add(replacement)
                result = replacement
                break
        else:
            return result
    raise PassError.at(node.span, f"simplify-expr did not settle in {MAX_SWEEPS} rewrites")


def _sweep(rules: RuleIndex, root: Expr, types: SweepTypes) -> tuple[Expr, bool]:
    """One bottom-up sweep: each node, rebuilt on its simplified operands, is rewritten
    until no rule fires (every replacement is a new node on simplified operands, or one of
    them, so the sweep leaves nothing to do unless a rule lacked a type)."""
    memo: dict[int, Expr] = {}
    fired = False
    matcher = Matcher(lambda: types.types, lambda: consumers(root))
    for node in post_order(root):
        kids = children(node)
        rebuilt = with_children(node, [memo[id(k)] for k in kids]) if kids else node
        if rebuilt is not node:
            types.carry(node, rebuilt)
        result = _settle(rules, matcher, types, rebuilt)
        fired = fired or result is not rebuilt
        memo[id(node)] = result
    return memo[id(root)], fired


def simplify_function(fn: Function, mod: IRModule | None = None) -> Function:
    """`fn` with the `simplify-expr` rules applied until none fires."""
    ty = _Types()
    rules = RuleIndex(simplify_rules(ty))
    expr: Expr = fn
    if not any(_op_name(node) in _RULE_OPS for node in post_order(expr)):
        return fn
    for _ in range(MAX_SWEEPS):
        ty.types = infer_expr(expr, mod)
        ty.missing = False
        expr, fired = _sweep(rules, expr, SweepTypes(ty.types))
        if not fired or not ty.missing:
            break
    else:
        raise PassError.at(fn.span, f"simplify-expr did not settle in {MAX_SWEEPS} sweeps")
    assert isinstance(expr, Function)
    return expr


def simplify_expr(mod: IRModule) -> IRModule:
    """Every global function of `mod` simplified (TVM's `SimplifyExpr`)."""
    out = mod
    for gv, fn in mod.functions.items():
        new = simplify_function(fn, out)
        if new is not fn:
            out = out.with_function(gv, new)
    return out


@module_pass(name="simplify-expr", opt_level=0)
def simplify_expr_pass(mod: IRModule, ctx: PassContext, options: NoOptions) -> IRModule:
    """Algebraic peepholes: identities of arithmetic, reshape, transpose and cast."""
    return simplify_expr(mod)
