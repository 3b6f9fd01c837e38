"""Free and bound variables of expressions."""

from __future__ import annotations

from .expr import Expr, Function, Let, Match, Var, pattern_vars
from .traversal import post_order


def bound_vars(root: Expr) -> list[Var]:
    """Variables bound inside `root` (let variables, parameters, pattern variables)."""
    bound: list[Var] = []
    for node in post_order(root):
        if isinstance(node, Let):
            bound.append(node.var)
        elif isinstance(node, Function):
            bound.extend(node.params)
        elif isinstance(node, Match):
            for clause in node.clauses:
                bound.extend(pattern_vars(clause.lhs))
    return bound


def free_vars(root: Expr) -> list[Var]:
    """Variables used in `root` but not bound in it, in order of first appearance."""
    bound = {id(v) for v in bound_vars(root)}
    return [node for node in post_order(root) if isinstance(node, Var) and id(node) not in bound]
