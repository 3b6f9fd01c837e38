"""`cse`: common subexpression elimination — equal pure computations are shared.

Before::

    def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
      %0 = add(%x, %y);
      %1 = add(%x, %y);
      %2 = exp(%0);
      %3 = exp(%1);
      multiply(%2, %3)
    }

After::

    def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32]) {
      %0 = add(%x, %y);
      %1 = exp(%0);
      multiply(%1, %1)
    }

A rule run by the rewrite driver in one bottom-up sweep compares nodes by a key made of
their kind, operator, attributes and the identities of their (already shared) children,
so one pass finds every merge: operator calls (not `debug`, `nn.dropout` or other
effectful or random operators, nor calls of closures or globals), constants with equal
dtype, shape and bytes, tuples and projections. Nodes are merged only within one function
body (a closure's body is a scope of its own). The value of a `let` is neither replaced
nor shared (it may be out of scope elsewhere); its operands are.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

from ..lang.expr import Call, Constant, Expr, Function, Let, Tuple, TupleGetItem
from ..lang.module import IRModule
from ..lang.op import Op
from ..lang.traversal import children, post_order
from .context import PassContext
from .fold_constant import NEVER_FOLDED
from .pass_base import function_pass
from .pattern import RewriteContext, Rule, apply_rules, wildcard


def _scopes(root: Expr, order: Iterable[Expr] | None = None) -> tuple[dict[int, int], set[int]]:
    """For each node (by id), the id of the function whose body first reaches it (empty
    when `root` has no function literal: every node is then in scope 0); and the ids of
    the values bound by `let`. `order`, if given, is `post_order(root)`."""
    let_values: set[int] = set()
    has_function = False
    for node in post_order(root) if order is None else order:
        cls = type(node)
        if cls is Let:
            let_values.add(id(node.value))  # type: ignore[attr-defined]
        elif cls is Function:
            has_function = True
    scope: dict[int, int] = {}
    stack: list[tuple[Expr, int]] = [(root, 0)] if has_function else []
    while stack:
        node, owner = stack.pop()
        if id(node) in scope:
            continue
        scope[id(node)] = owner
        inner = id(node) if isinstance(node, Function) else owner
        stack.extend((kid, inner) for kid in reversed(children(node)))
    return scope, let_values


def _key(node: Expr) -> Hashable | None:
    """The merge key of `node` (children by identity), or None if it must not be merged."""
    cls = type(node)
    if cls is Call:
        op = node.op  # type: ignore[attr-defined]
        if type(op) is not Op or op.name in NEVER_FOLDED:
            return None
        return ("call", op, node.attrs, node.type_args, *map(id, node.args))  # type: ignore[attr-defined]
    if cls is Constant:
        data = node.data  # type: ignore[attr-defined]  # its numpy dtype decides its relay dtype
        return ("const", data.dtype, data.shape, data.tobytes())
    if cls is Tuple:
        return ("tuple", *map(id, node.fields))  # type: ignore[attr-defined]
    if cls is TupleGetItem:
        return ("proj", node.index, id(node.tuple_value))  # type: ignore[attr-defined]
    return None


def sharing_rule(root: Expr, order: Iterable[Expr] | None = None) -> Rule:
    """The rule that replaces a node of `root` by the first equal node met before it in
    the same function body (the driver rewrites bottom-up, so children are shared
    already and comparing them by identity suffices). `order`, if given, is
    `post_order(root)`."""
    scope, let_values = _scopes(root, order)
    table: dict[tuple[int, Hashable], Expr] = {}

    def share(node: Expr, ctx: RewriteContext) -> Expr | None:
        original = ctx.original
        if id(original) in let_values:
            return None
        key = _key(node)
        if key is None:
            return None
        try:
            seen = table.setdefault((scope.get(id(original), 0), key), node)
        except TypeError:  # an attribute value that cannot be hashed
            return None
        return None if seen is node else seen

    return Rule(wildcard().named("node"), share, "share")


def cse_expr(root: Expr) -> Expr:
    """`root` with equal pure subexpressions of the same function body shared."""
    order = list(post_order(root))
    return apply_rules(sharing_rule(root, order), root, fixpoint=False, nodes=order)


@function_pass(name="cse", opt_level=3, tvm_name="EliminateCommonSubexpr")
def cse_pass(fn: Function, mod: IRModule, ctx: PassContext, options: object) -> Function:
    """Share equal pure subexpressions within each function body."""
    body = cse_expr(fn.body)
    return fn if body is fn.body else fn.replace(body=body)
