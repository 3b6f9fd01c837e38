"""`inline`: inline the calls of global functions marked `Inline=1` (TVM's `Inline`).

A call `@f(a, b)` of a global `@f = fn (%p, %q, Inline=1) { body }` becomes a fresh copy
of `body` in which `%p` and `%q` are replaced by the arguments, and every variable bound
inside `body` (let variables, parameters of nested functions, pattern variables) is
renamed to a new `Var`, so no variable is bound twice in the result. An argument whose
evaluation has effects (see `to_graph.pure_nodes`) is first bound by a `let`, so it is
still evaluated exactly once. So is an argument whose parameter's annotation may say more
than the argument's own type (`to_graph.annotation_informs`): `@pick(Left(%x))` of
`@pick(%e: Either[T, T])` becomes `let %e: Either[T, T] = Left(%x); …`, since `Left(%x)`
alone leaves the `Right` type open; likewise the body is bound to a variable annotated with
such a return type. Inlining repeats until no inlinable call is left; then the
inlined globals that nothing refers to any more are removed (never `@main`).

Not inlined: functions with type parameters, and functions that reach themselves through
inlinable calls (inlining them would never end).

    def @double(%x: float32, Inline=1) -> float32 { add(%x, %x) }
    def @main(%y: float32) -> float32 { @double(exp(%y)) }

becomes

    def @main(%y: float32) -> float32 { %0 = exp(%y); add(%0, %0) }
"""

from __future__ import annotations

from typing import cast

from ..lang.expr import Call, Expr, Function, GlobalVar, Let, Tuple, Var
from ..lang.freevars import bound_vars
from ..lang.module import IRModule
from ..lang.traversal import post_order, rewrite_post_order, substitute
from .context import PassContext
from .pass_base import NoOptions, module_pass
from .to_graph import annotation_informs, pure_nodes


def fresh_copy(body: Expr, params: dict[Var, Expr]) -> Expr:
    """A copy of `body` with `params` replaced and every variable bound inside renamed."""
    renamed: dict[Var, Expr] = dict(params)
    for var in bound_vars(body):
        renamed[var] = Var(var.name_hint, var.type_annotation, span=var.span)
    return substitute(body, renamed)


def _calls_of(fn: Function, candidates: set[GlobalVar]) -> set[GlobalVar]:
    return {
        node.op
        for node in post_order(fn)
        if isinstance(node, Call) and isinstance(node.op, GlobalVar) and node.op in candidates
    }


def inlinable(mod: IRModule) -> set[GlobalVar]:
    """The globals of `mod` whose calls `inline` replaces (see the module docstring)."""
    marked = {
        gv for gv, fn in mod.functions.items() if fn.attrs.get("Inline", 0) and not fn.type_params
    }
    edges = {gv: _calls_of(mod[gv], marked) for gv in marked}
    result: set[GlobalVar] = set()
    for start in marked:  # keep `start` unless it reaches itself
        seen: set[GlobalVar] = set()
        stack = list(edges[start])
        while stack:
            gv = stack.pop()
            if gv not in seen:
                seen.add(gv)
                stack.extend(edges[gv])
        if start not in seen:
            result.add(start)
    return result


def _inline_call(call: Call, fn: Function) -> Expr:
    pure = pure_nodes(list(post_order(Tuple(call.args))))
    bindings: list[tuple[Var, Expr]] = []
    params: dict[Var, Expr] = {}
    for param, arg in zip(fn.params, call.args):
        if id(arg) in pure and not annotation_informs(param.type_annotation):
            params[param] = arg
        else:
            var = Var(param.name_hint, param.type_annotation)
            bindings.append((var, arg))
            params[param] = var
    result = fresh_copy(fn.body, params)
    if annotation_informs(fn.ret_type):
        name = call.op.name_hint if isinstance(call.op, GlobalVar) else "result"
        returned = Var(name, fn.ret_type)
        result = Let(returned, result, returned)
    for var, value in reversed(bindings):
        result = Let(var, value, result)
    return result


@module_pass(name="inline", opt_level=1, options=NoOptions)
def inline_pass(mod: IRModule, ctx: PassContext, options: NoOptions) -> IRModule:
    """Inline the calls of globals marked `Inline=1`; drop them when unused."""
    targets = inlinable(mod)
    if not targets:
        return mod

    def rewrite(node: Expr) -> Expr | None:
        if isinstance(node, Call) and isinstance(node.op, GlobalVar) and node.op in targets:
            return _inline_call(node, out[node.op])
        return None

    out = mod
    for _ in range(len(targets) + 1):  # each round removes one level of nesting
        changed = False
        for gv, fn in out.functions.items():
            new = cast(Function, rewrite_post_order(fn, rewrite))
            if new is not fn:
                out = out.with_function(gv, new)
                changed = True
        if not changed:
            break
    used: set[GlobalVar] = set()
    for gv, fn in out.functions.items():
        used.update(n for n in post_order(fn) if isinstance(n, GlobalVar) and n is not gv)
    for gv in targets:
        if gv not in used and gv.name_hint != "main":
            out = out.without_function(gv)
    return out
