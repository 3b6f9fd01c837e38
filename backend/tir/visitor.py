"""Generic walks over loop-IR expressions and statements.

Children are found from the attrs fields of each node: a field holding an expression or
statement, or a tuple of them, is a child. Walks use explicit stacks (no recursion).
`rewrite_expr` rebuilds an expression bottom-up with a callback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import attrs

from .expr import PrimExpr
from .stmt import Stmt

Node = Any


_NOT_CHILDREN = frozenset(
    [
        "buffer",
        "var",
        "loop_var",
        "combiner",
        "producer",
        "axis",
        "annotations",
        "dtype",
        "name",
        "attrs",
        "outputs",
        "lanes",
        "value_index",
        "kind",
        "params",
    ]
)


@cache
def _child_fields(cls: type) -> tuple[tuple[str, bool], ...]:
    """(field name, is-a-tuple) for the fields of `cls` that may hold child nodes."""
    out = []
    for f in attrs.fields(cls):
        if f.name in (
            "buffer",
            "var",
            "loop_var",
            "combiner",
            "producer",
            "axis",
            "annotations",
            "dtype",
            "name",
        ):
            continue
        if f.name in ("attrs", "outputs", "lanes", "value_index", "kind", "params"):
            continue
        out.append((f.name, f.name in ("indices", "args", "source", "stmts", "result", "identity")))
    return tuple(out)


def children(node: Node) -> list[Node]:
    """The expressions and statements directly inside `node`, in field order."""
    out: list[Node] = []
    for name, many in _child_fields(type(node)):  # type: ignore[arg-type]
        value = getattr(node, name)
        if many:
            out.extend(v for v in value if isinstance(v, (PrimExpr, Stmt)))
        elif isinstance(value, (PrimExpr, Stmt)):
            out.append(value)
    return out


def sub_expressions(root: Node) -> Iterator[Node]:
    """Every node under `root` (itself included), pre-order, each object once."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(reversed(children(node)))


def with_children(node: Node, new_children: list[Node]) -> Node:
    """`node` with its children replaced (in `children` order); `node` itself if unchanged."""
    old = children(node)
    if all(a is b for a, b in zip(old, new_children)):
        return node
    it = iter(new_children)
    updates: dict[str, Any] = {}
    for name, many in _child_fields(type(node)):  # type: ignore[arg-type]
        value = getattr(node, name)
        if many:
            updates[name] = tuple(next(it) if isinstance(v, (PrimExpr, Stmt)) else v for v in value)
        elif isinstance(value, (PrimExpr, Stmt)):
            updates[name] = next(it)
    return attrs.evolve(node, **updates)


def rewrite_expr(root: Node, fn: Callable[[Node], Node | None]) -> Node:
    """Rebuild `root` bottom-up: each node is first rebuilt from its rewritten children, then
    `fn(node)` may return a replacement (or None to keep it). Shared nodes are rewritten once."""
    done: dict[int, Node] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in done:
            continue
        kids = children(node)
        if not expanded:
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in done)
            continue
        rebuilt = with_children(node, [done[id(k)] for k in kids])
        replaced = fn(rebuilt)
        done[id(node)] = rebuilt if replaced is None else replaced
    return done[id(root)]
