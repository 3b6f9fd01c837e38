"""The indexed forward dataflow graph of a function and its post-dominator tree (for fusion).

`IndexedGraph.build(body, params, types)` numbers the nodes of a function body in post-DFS
order (operands before users) and records, for each node, its operator pattern and its
consumers with the *consumer's* edge pattern, following TVM's `IndexedForwardGraph`:

* an operator call has its operator's pattern; a broadcast edge whose operand has the
  call's output shape is downgraded to elementwise;
* tuples are `TUPLE` with injective edges from tensor fields; a projection of a tuple of
  tensors is injective; scalar constants (int32/int64/float32/float64/bool) are
  elementwise; everything else (variables, other constants, `let`, `if`, `match`,
  references, function literals, calls of non-operators) is opaque;
* the operands of opaque boundaries (`let`, `if`, `match`, references, function literals),
  the parameters and the body are `extern_ref`: nothing fuses through them.

`post_dominator_tree(graph)` gives each node its immediate post-dominator (the least
common ancestor of its consumers) and the combined edge pattern on the way to it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from attrs import define, field

from ..lang.expr import (
    Call,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Match,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
)
from ..lang.op import Op, OpPattern
from ..lang.traversal import children
from ..lang.types import TensorType, TupleType, Type
from ..typecheck.result import ModuleTypes

_SIMPLE_SCALAR_DTYPES = frozenset({"int32", "int64", "float32", "float64", "bool"})
_BOUNDARIES = (Let, If, Match, RefCreate, RefRead, RefWrite, Function)


def is_simple_scalar(expr: Expr) -> bool:
    """Whether `expr` is a scalar constant that fusion inlines into a group."""
    return (
        isinstance(expr, Constant) and expr.data.ndim == 0 and expr.dtype in _SIMPLE_SCALAR_DTYPES
    )


def is_opaque_leaf(expr: Expr) -> bool:
    """Nodes the graph does not look into: operators and already fused functions."""
    return isinstance(expr, Op) or (isinstance(expr, Function) and expr.is_primitive)


def graph_post_order(root: Expr) -> Iterator[Expr]:
    """Post-DFS order over `root`, not entering operators or `Primitive` functions.

    `lang.traversal.post_order` enters every node; fusion must treat fused functions as
    leaves, hence this walk of its own (a visit, not a rebuild)."""
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            yield node
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        if is_opaque_leaf(node):
            continue
        for child in reversed(children(node)):
            if id(child) not in seen:
                stack.append((child, False))


@define(eq=False)
class GraphNode:
    """One node of the forward graph: its expression, pattern and consumers."""

    expr: Expr
    index: int
    pattern: OpPattern = OpPattern.OPAQUE
    extern_ref: bool = False
    outputs: list[tuple[int, OpPattern]] = field(factory=list)
    """(consumer index, edge pattern), in the order the edges were added."""


def _tensor_shape(ty: Type | None) -> tuple[object, ...] | None:
    return tuple(ty.shape) if isinstance(ty, TensorType) else None


@define(eq=False)
class IndexedGraph:
    """The dataflow graph of a function body, nodes in post-DFS order."""

    nodes: list[GraphNode]
    index_of: dict[int, int]
    """`id(expr)` → node index."""

    def node_of(self, expr: Expr) -> GraphNode | None:
        """The node of `expr`, or None if it is not in the graph (operators, ...)."""
        i = self.index_of.get(id(expr))
        return None if i is None else self.nodes[i]

    @staticmethod
    def build(body: Expr, params: Sequence[Expr], types: ModuleTypes) -> IndexedGraph:
        """The graph of `body` (a function's body, with its parameters `params`)."""
        order = [e for e in graph_post_order(body) if not isinstance(e, Op)]
        index_of = {id(e): i for i, e in enumerate(order)}
        nodes = [GraphNode(e, i) for i, e in enumerate(order)]

        def type_of(e: Expr) -> Type | None:
            return types.table.get(e)

        def update(child: Expr, parent: GraphNode | None, pattern: OpPattern) -> None:
            i = index_of.get(id(child))
            if i is None:
                return
            if parent is None:
                nodes[i].extern_ref = True
            else:
                nodes[i].outputs.append((parent.index, pattern))

        for node in nodes:
            e = node.expr
            if isinstance(e, Call):
                if isinstance(e.op, Op):
                    node.pattern = e.op.pattern
                    out_shape = _tensor_shape(type_of(e))
                    for arg in e.args:
                        edge = node.pattern
                        if (
                            edge == OpPattern.BROADCAST
                            and out_shape is not None
                            and _tensor_shape(type_of(arg)) == out_shape
                        ):
                            edge = OpPattern.ELEMWISE
                        update(arg, node, edge)
                else:
                    update(e.op, node, OpPattern.OPAQUE)
                    for arg in e.args:
                        update(arg, node, OpPattern.OPAQUE)
            elif isinstance(e, Tuple):
                node.pattern = OpPattern.TUPLE
                for f in e.fields:
                    if isinstance(type_of(f), TensorType):
                        update(f, node, OpPattern.INJECTIVE)
                    else:
                        update(f, None, OpPattern.OPAQUE)
            elif isinstance(e, TupleGetItem):
                tt = type_of(e.tuple_value)
                if isinstance(tt, TupleType) and all(isinstance(f, TensorType) for f in tt.fields):
                    node.pattern = OpPattern.INJECTIVE
                    update(e.tuple_value, node, OpPattern.INJECTIVE)
                else:
                    update(e.tuple_value, None, OpPattern.OPAQUE)
            elif isinstance(e, Constant):
                if is_simple_scalar(e):
                    node.pattern = OpPattern.ELEMWISE
            elif isinstance(e, _BOUNDARIES) and not is_opaque_leaf(e):
                for child in children(e):
                    update(child, None, OpPattern.OPAQUE)
        for p in params:
            update(p, None, OpPattern.OPAQUE)
        update(body, None, OpPattern.OPAQUE)
        return IndexedGraph(nodes, index_of)


@define(eq=False)
class PostDomTree:
    """For each node: its immediate post-dominator, depth and combined edge pattern."""

    parent: list[int | None]
    depth: list[int]
    pattern: list[OpPattern]


def post_dominator_tree(graph: IndexedGraph) -> PostDomTree:
    """The post-dominator tree of `graph`, built in one reverse-topological pass.

    A node's parent is the least common ancestor, in the tree, of all its consumers; its
    pattern is the maximum of the edge patterns and tree patterns met on the way there.
    `extern_ref` nodes have no parent and are opaque.
    """
    n = len(graph.nodes)
    parent: list[int | None] = [None] * n
    depth = [1] * n
    pattern = [OpPattern.OPAQUE] * n

    def lca(lhs: int | None, rhs: int | None, pat: OpPattern) -> tuple[int | None, OpPattern]:
        while lhs != rhs:
            if lhs is None or rhs is None:
                return None, pat
            if depth[lhs] < depth[rhs]:
                pat = max(pat, pattern[rhs])
                rhs = parent[rhs]
            elif depth[rhs] < depth[lhs]:
                pat = max(pat, pattern[lhs])
                lhs = parent[lhs]
            else:
                pat = max(pat, pattern[lhs], pattern[rhs])
                lhs = parent[lhs]
                rhs = parent[rhs]
        return lhs, pat

    for i in range(n - 1, -1, -1):
        node = graph.nodes[i]
        if node.extern_ref or not node.outputs:
            continue
        pat = OpPattern.ELEMWISE
        first, edge = node.outputs[0]
        found: int | None = first
        pat = max(pat, edge)
        for out, edge in node.outputs[1:]:
            found, pat = lca(found, out, pat)
            pat = max(pat, edge)
        parent[i] = found
        depth[i] = 1 if found is None else depth[found] + 1
        pattern[i] = pat
    return PostDomTree(parent, depth, pattern)
