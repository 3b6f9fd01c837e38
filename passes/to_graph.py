"""`to-graph-normal-form`: turn `let` bindings of pure values into shared dataflow nodes.

The rule: `let %v = value; body` is removed, and every use of `%v` in `body` refers to the
(one, shared) rewritten `value`, when

- `value` is *pure*: evaluating it has no effect, so evaluating it at its uses instead
  (or not at all, or once per call of an enclosing function) cannot change a result.
  Pure are atoms, tuples, projections, function literals (making a closure does nothing),
  calls of operators, constructors and `Primitive` functions with pure arguments, and
  `if` / `match` / `let` whose parts are pure;
- `%v` is not free in `value` (a recursive function keeps its `let`);
- `%v` has no annotation that may say more than `value`'s own type
  (`annotation_informs`): `let %o: Option[float32] = Nothing` stays, or `%o` would be an
  `Option[_]` nothing pins down.

A variable bound twice (by a pass that copied code without renaming it) is first renamed
apart (`distinct_binders`), so every use refers to the binding around it.

Values that create, read or write references, or call a closure or a global function
(which may have effects or not terminate), keep their `let`, so the result is in graph
normal form exactly when the program has no such bindings (nor informative annotations).
The pass therefore promises the "any" form (`normal_form_problem(mod, "graph")` holds
for effect-free programs).

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
from ..lang.freevars import distinct_binders
from ..lang.module import IRModule
from ..lang.op import Op
from ..lang.traversal import LEAF_CLASSES, children, post_order, with_children
from ..lang.types import FuncType, RefType, TupleType, Type, TypeCall, TypeVar
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
    add, all_pure = pure.add, pure.issuperset
    leaves = LEAF_CLASSES
    for node in order:
        cls = type(node)
        if cls in leaves:
            add(id(node))
        elif cls is Call:
            op = node.op  # type: ignore[attr-defined]
            if (
                isinstance(op, (Op, Constructor)) or (isinstance(op, Function) and op.is_primitive)
            ) and all_pure(map(id, children(node))):
                add(id(node))
        elif isinstance(node, Function) or (
            _locally_pure(node) and all_pure(map(id, children(node)))
        ):
            add(id(node))
    return pure


def annotation_informs(t: Type | None) -> bool:
    """Whether a variable annotated `t` may know more than the value bound to it: `t`
    mentions a function type, an ADT applied to type arguments or a type variable. (The
    value `Nothing` of `let %o: Option[float32] = Nothing` is only an `Option[_]`; a
    function literal may leave its parameters' types to the annotation.) Such a binding
    must stay a binding when code is moved around, or the program may no longer
    type-check."""
    if t is None:
        return False
    stack: list[Type] = [t]
    while stack:
        item = stack.pop()
        if isinstance(item, (FuncType, TypeVar)) or (isinstance(item, TypeCall) and item.args):
            return True
        if isinstance(item, TupleType):
            stack.extend(item.fields)
        elif isinstance(item, RefType):
            stack.append(item.value)
    return False


def _inlinable_lets(order: list[Expr]) -> dict[Var, Expr]:
    """The let variables of `order` (a post-order without rebound variables) to replace by
    their values: pure values that do not use their own variable (a recursive function
    keeps its `let`), bound to variables whose annotation tells nothing more."""
    pure = pure_nodes(order)
    inline: dict[Var, Expr] = {}
    for node in order:
        if (
            isinstance(node, Let)
            and id(node.value) in pure
            and node.value is not node.var
            and not annotation_informs(node.var.type_annotation)
        ):
            inline[node.var] = node.value
    # A use of a variable met before its value is finished lies inside that value.
    finished: set[int] = set()
    done = finished.add
    for node in order:
        if type(node) in LEAF_CLASSES:  # no children
            done(id(node))
            continue
        for kid in children(node):
            if type(kid) is Var and kid in inline and id(inline[kid]) not in finished:  # type: ignore[comparison-overlap]
                del inline[kid]  # type: ignore[arg-type]
        done(id(node))
    return inline


def _targets(inline: dict[Var, Expr]) -> dict[Var, Expr]:
    """For each inlined variable, the value its uses become: an alias `let %b = %a` of an
    inlined `%a` is followed to `%a`'s value."""
    target: dict[Var, Expr] = {}
    for start in inline:
        path: list[Var] = []
        value: Expr = start
        while isinstance(value, Var) and value in inline and value not in target:
            if value in path:  # only a program with a variable out of scope gets here
                break
            path.append(value)
            value = inline[value]
        end = target.get(value, value) if isinstance(value, Var) else value
        for var in path:
            target[var] = end
    return target


def to_graph_normal_form_expr(root: Expr) -> Expr:
    """`root` with its lets of pure values turned into shared nodes."""
    order = list(post_order(root))
    unique = distinct_binders(root, order)  # a variable bound twice makes `inline` ambiguous
    if unique is not root:
        root, order = unique, list(post_order(unique))
    inline = _inlinable_lets(order)
    if not inline:
        return root
    target = _targets(inline)
    # A hand loop rather than `ExprMutator`: a use of an inlined variable reads what its
    # value became (`target` skips aliases, whose own `Var` nodes are never rebuilt).
    memo: dict[int, Expr] = {}
    # the uses of an inlined variable read its target's result, recorded when it is made
    waiting: dict[int, list[Var]] = {}
    for var, value in target.items():
        waiting.setdefault(id(value), []).append(var)
    leaves = LEAF_CLASSES
    result: Expr
    for node in order:
        cls = type(node)
        if cls in leaves:
            if cls is Var and node in inline:  # type: ignore[comparison-overlap]
                continue
            result = node
        elif cls is Let and node.var in inline:  # type: ignore[attr-defined]
            result = memo[id(node.body)]  # type: ignore[attr-defined]
        else:
            result = with_children(node, [memo[id(k)] for k in children(node)])
        memo[id(node)] = result
        readers = waiting.pop(id(node), None)
        if readers is not None:
            for var in readers:
                memo[id(var)] = result
    return memo[id(root)]


@function_pass(
    name="to-graph-normal-form",
    opt_level=1,
    options=NoOptions,
    produces="any",
    include_primitive=True,
)
def to_graph_normal_form_pass(
    fn: Function, mod: IRModule, ctx: PassContext, options: NoOptions
) -> Function:
    """Turn the lets of pure values into shared dataflow nodes. See the module docstring."""
    return cast(Function, to_graph_normal_form_expr(fn))
