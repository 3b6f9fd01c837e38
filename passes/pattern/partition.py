"""Partitioning: each match of a pattern becomes a call of a function that computes it.

As TVM's `partition`: matches are found from the outputs towards the inputs and never
overlap; a match whose inner nodes are used outside it is left alone (outlining it would
compute them twice). The function's parameters are the match's inputs (every node the
matched region uses that is not in it: the expressions matched by wildcard, variable,
constant and expression patterns, named or not, in order of first appearance), so the
function is closed; it carries the given attributes plus `PartitionedFromPattern` (the matched
operators' names, each followed by `_`, inputs first).
"""

from __future__ import annotations

from collections.abc import Mapping

from ...lang.attrs import FuncAttrs
from ...lang.expr import Call, Expr, Function, Var
from ...lang.module import IRModule
from ...lang.op import Op
from ...lang.traversal import ExprMutator, children, post_order, with_children
from ...typecheck import infer_expr
from .matcher import Match, Matcher, consumers, root_classes
from .patterns import DFPattern


def _outline(found: Match, attrs: Mapping[str, object], args: list[Expr]) -> Call:
    """The call of a new function computing `found`'s region, applied to `args`.

    The walk is the match's region only (it stops at the inputs, which become parameters,
    and at nodes outside the region), so it is not a whole-graph `ExprMutator`."""
    params = {id(e): Var(f"FunctionVar_{i}") for i, e in enumerate(found.inputs)}
    region = {id(e) for e in found.region}
    memo: dict[int, Expr] = {}
    op_names: list[str] = []
    stack: list[tuple[Expr, bool]] = [(found.expr, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in memo:
            continue
        if id(node) in params:
            memo[id(node)] = params[id(node)]
            continue
        if id(node) not in region:
            memo[id(node)] = node
            continue
        kids = children(node)
        if not expanded:
            stack.append((node, True))
            stack.extend((k, False) for k in reversed(kids) if id(k) not in memo)
            continue
        if isinstance(node, Call) and isinstance(node.op, Op):
            op_names.append(node.op.name + "_")
        memo[id(node)] = with_children(node, [memo[id(k)] for k in kids])
    func_attrs = FuncAttrs({**attrs, "PartitionedFromPattern": "".join(op_names)})
    body = memo[id(found.expr)]
    function = Function(tuple(params[id(e)] for e in found.inputs), body, attrs=func_attrs)
    return Call(function, tuple(args))


def _claim(found: Match, uses: dict[int, list[Expr]], claimed: set[int]) -> bool:
    region = {id(e) for e in found.region}
    if any(i in claimed for i in region):
        return False
    for e in found.region:
        if e is found.expr:
            continue
        if any(id(u) not in region for u in uses.get(id(e), [])):
            return False
    claimed.update(region)
    return True


def partition(
    pattern: DFPattern,
    expr: Expr,
    attrs: Mapping[str, object] | None = None,
    mod: IRModule | None = None,
) -> Expr:
    """`expr` with every (non-overlapping) match of `pattern` replaced by a call of a
    function with attributes `attrs` whose parameters are the match's inputs."""
    nodes = list(post_order(expr))
    uses = consumers(expr)
    matcher = Matcher(lambda: infer_expr(expr, mod), lambda: uses)
    claimed: set[int] = set()
    groups: dict[int, Match] = {}
    classes = root_classes(pattern)
    for node in reversed(nodes):
        if id(node) in claimed or isinstance(node, Op | Var | Function):
            continue
        if classes is not None and type(node) not in classes:
            continue
        found = matcher.match(pattern, node)
        if found is not None and found.region and _claim(found, uses, claimed):
            groups[id(node)] = found
    return _Outliner(groups, attrs or {}).visit(expr, nodes)


class _Outliner(ExprMutator):
    """Replaces the root of each match in `groups` (by id) by a call of its outlined
    function, applied to the rewritten inputs."""

    def __init__(self, groups: dict[int, Match], attrs: Mapping[str, object]) -> None:
        super().__init__()
        self.groups = groups
        self.attrs = attrs

    def rewrite_node(self, node: Expr) -> Expr:
        found = self.groups.get(id(node))
        if found is None:
            return self.rebuilt(node)
        return _outline(found, self.attrs, [self.rewritten(e) for e in found.inputs])
