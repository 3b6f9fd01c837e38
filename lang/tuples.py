"""Nested Python tuples as trees: the shape of a tuple-typed value, a result or an output."""

from __future__ import annotations

from typing import Any


def tuple_leaves(tree: Any) -> list[Any]:
    """The leaves of a tree of nested Python tuples, depth first, left to right (a value
    that is not a tuple is one leaf). Iterative, so any depth is fine."""
    out: list[Any] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            stack.extend(reversed(node))
        else:
            out.append(node)
    return out
