"""`to-graph-normal-form`: turn `let` bindings of pure values into shared dataflow nodes.

The rule: `let %v = value; body` is removed, and every use of `%v` in `body` refers to the
(one, shared) rewritten `value`, when

- `value` is *pure*: evaluating it has no effect, so evaluating it at its uses instead
  (or not at all, or once per call of an enclosing function) cannot change a result.
  Pure are atoms, tuples, projections, function literals (making a closure does nothing),
  calls of operators, constructors and `Primitive` functions with pure arguments, and
  `if` / `match` / `let` whose parts are pure;
- `%v` is not free in `value` (a recursive function keeps its `let`).

Values that create, read or write references, or call a closure or a global function
(which may have effects or not terminate), keep their `let`, so the result is in graph
normal form exactly when the program has no such bindings. The pass therefore promises
the "any" form (`normal_form_problem(mod, "graph")` holds for effect-free programs).

    def @main(%x: Tensor[(2), float32]) {
      let %a = add(%x, %x);
      let %r = ref(%a);
      multiply(%a, %a)
    }

becomes

    def @main(%x: Tensor[(2), float32]) {
      %0 = add(%x, %x);
      let %r = ref(%0);
      multiply(%0, %0)
    }
"""

from __future__ import annotations

from typing import cast

from ..lang.adt import Constructor
from ..lang.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from ..lang.freevars import free_vars
from ..lang.module import IRModule
from ..lang.op import Op
from ..lang.traversal import children, post_order, with_children
from .context import PassContext
from .pass_base import NoOptions, function_pass

_ATOMS = (Var, GlobalVar, Constant, Op, Constructor)


def _locally_pure(node: Expr) -> bool:
    """Whether evaluating `node` itself (its children aside) has no effect."""
    if isinstance(node, (RefCreate, RefRead, RefWrite)):
        return False
    if isinstance(node, Call):
        op = node.op
        return isinstance(op, (Op, Constructor)) or (isinstance(op, Function) and op.is_primitive)
    return isinstance(node, (*_ATOMS, Tuple, TupleGetItem, Function, If, Let, Match))


def pure_nodes(order: list[Expr]) -> set[int]:
    """The ids of the nodes of `order` (a post-order) whose evaluation has no effect (see
    the module docstring); a function literal is pure whatever its body does."""
    pure: set[int] = set()
    for node in order:
        if not _locally_pure(node):
            continue
        if isinstance(node, Function) or all(id(c) in pure for c in children(node)):
            pure.add(id(node))
    return pure


def to_graph_expr(root: Expr) -> Expr:
    """`root` with its lets of pure values turned into shared nodes."""
    order = list(post_order(root))
    pure = pure_nodes(order)
    has_function: set[int] = set()  # only through a function can a value use its own var
    for node in order:
        if isinstance(node, Function) or any(id(c) in has_function for c in children(node)):
            has_function.add(id(node))
    inline: dict[Var, Expr] = {}
    for node in order:
        if (
            isinstance(node, Let)
            and id(node.value) in pure
            and (id(node.value) not in has_function or node.var not in free_vars(node.value))
        ):
            inline[node.var] = node.value
    if not inline:
        return root
    # A hand loop rather than `ExprMutator`: a use of an inlined variable must read what its
    # value became, and that value may itself be a variable inlined later in the walk.
    memo: dict[int, Expr] = {}

    def get(kid: Expr) -> Expr:
        if isinstance(kid, Var) and kid in inline:
            return memo[id(inline[kid])]
        return memo[id(kid)]

    for node in order:
        if isinstance(node, Var) and node in inline:
            continue
        if isinstance(node, Let) and node.var in inline:
            memo[id(node)] = get(node.body)
            continue
        kids = children(node)
        memo[id(node)] = with_children(node, [get(k) for k in kids]) if kids else node
    return memo[id(root)]


@function_pass(
    name="to-graph-normal-form",
    opt_level=1,
    options=NoOptions,
    produces="any",
    include_primitive=True,
)
def to_graph_pass(fn: Function, mod: IRModule, ctx: PassContext, options: NoOptions) -> Function:
    """Turn the lets of pure values into shared dataflow nodes (see the module docstring)."""
    return cast(Function, to_graph_expr(fn))


def to_graph(mod: IRModule) -> IRModule:
    """Every global function of `mod` with its pure lets turned into shared nodes."""
    return to_graph_pass.apply(mod, PassContext())
