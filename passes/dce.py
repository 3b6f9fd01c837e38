"""`dce`: dead code elimination — drop `let` bindings whose variable is never used.

Before::

    def @main(%x: float32) {
      let %a = add(%x, %x);
      let %b = multiply(%a, %a);
      let %c = subtract(%x, %x);
      %c
    }

After (`%b` is unused, and then so is `%a`)::

    def @main(%x: float32) {
      let %c = subtract(%x, %x);
      %c
    }

Only pure values are dropped: a value that writes a reference (`ref_write`) or calls
something other than an operator or constructor (a closure or global, which may have
effects) is kept unless the option `ignore-impurity=true` is given. A function literal is
pure as a value. The removal is done by reference counting, so a chain of dead bindings
goes in one pass; a binding used only by its own value (a recursive closure) is kept.
Programs in graph form (no `let`) are returned unchanged.
"""

from __future__ import annotations

from attrs import frozen

from ..lang.adt import Constructor
from ..lang.expr import Call, Expr, Function, Let, Match, RefWrite, Var
from ..lang.module import IRModule
from ..lang.op import Op
from ..lang.traversal import LEAF_CLASSES, ExprMutator, children, post_order
from .context import PassContext
from .pass_base import function_pass


@frozen
class DCEOptions:
    """Options of the `dce` pass."""

    ignore_impurity: bool = False
    """Drop unused bindings even when their value may have side effects."""


def operands(node: Expr) -> tuple[Expr, ...]:
    """The children of `node` that are uses (binding occurrences of variables left out)."""
    if isinstance(node, Let):
        return (node.value, node.body)
    if isinstance(node, Function):
        return (node.body,)
    if isinstance(node, Match):
        return (node.data, *(clause.rhs for clause in node.clauses))
    return children(node)


def _locally_pure(node: Expr) -> bool:
    if isinstance(node, RefWrite):
        return False
    if isinstance(node, Call):
        return isinstance(node.op, Op | Constructor)
    return True


def dce_expr(expr: Expr, ignore_impurity: bool = False) -> Expr:
    """`expr` without its unused (pure, unless `ignore_impurity`) let bindings."""
    nodes = list(post_order(expr))
    lets = [n for n in nodes if type(n) is Let]
    if not lets:
        return expr
    # in one loop: whether evaluating each node is free of side effects (a function
    # literal is: its body runs only when called), and how often each node is used
    pure: dict[int, bool] = {}
    count: dict[int, int] = {}
    get = count.get
    leaves = LEAF_CLASSES
    for node in nodes:
        cls = type(node)
        if cls in leaves:
            pure[id(node)] = True
            continue
        kids = (node.value, node.body) if cls is Let else operands(node)  # type: ignore[attr-defined]
        for kid in kids:
            count[id(kid)] = get(id(kid), 0) + 1
        if cls is Function:
            pure[id(node)] = True
        else:
            pure[id(node)] = _locally_pure(node) and all(pure[id(k)] for k in kids)
    binding: dict[int, Let] = {id(n.var): n for n in lets}  # type: ignore[attr-defined]
    removed: set[int] = set()  # lets replaced by their body
    deleted: set[int] = set()  # nodes no longer reachable

    def release(start: Expr) -> list[Let]:
        """Drop one use of `start`; the lets whose variables became unused."""
        freed: list[Let] = []
        stack = [start]
        while stack:
            node = stack.pop()
            count[id(node)] -= 1
            if count[id(node)] > 0 or id(node) in deleted:
                continue
            if isinstance(node, Var):
                let = binding.get(id(node))
                if let is not None:
                    freed.append(let)
                continue
            deleted.add(id(node))
            if isinstance(node, Let) and id(node) in removed:
                stack.append(node.body)
            else:
                stack.extend(operands(node))
        return freed

    def droppable(let: Let) -> bool:
        return (
            id(let) not in removed
            and id(let) not in deleted
            and count.get(id(let.var), 0) == 0
            and (ignore_impurity or pure[id(let.value)])
        )

    work: list[Let] = lets  # type: ignore[assignment]
    while work:
        let = work.pop()
        if droppable(let):
            removed.add(id(let))
            work.extend(release(let.value))
    if not removed:
        return expr
    return _DropLets(removed).visit(expr, nodes)


class _DropLets(ExprMutator):
    """Replaces the lets in `removed` (by id) by their rewritten bodies."""

    def __init__(self, removed: set[int]) -> None:
        super().__init__()
        self.removed = removed

    def rewrite_node(self, node: Expr) -> Expr:
        if id(node) in self.removed:
            return self.rewritten(node.body)  # type: ignore[attr-defined]
        return self.rebuilt(node)


@function_pass(name="dce", opt_level=1, options=DCEOptions, tvm_name="DeadCodeElimination")
def dce_pass(fn: Function, mod: IRModule, ctx: PassContext, options: DCEOptions) -> Function:
    """Remove the unused let bindings of each function."""
    body = dce_expr(fn.body, options.ignore_impurity)
    return fn if body is fn.body else fn.replace(body=body)
