"""A tree of nested scopes (a function body, the branches of an `if`, the arms of a
`match`, ...), numbered from 0 (the body), with the lowest common ancestor of two scopes:
where a value used in both must be bound. A-normal form and the VM compiler place shared
nodes with it."""

from __future__ import annotations


class ScopeTree:
    """Scopes as ints: 0 is the root; `new(parent)` adds a child scope."""

    def __init__(self) -> None:
        self.parent: list[int] = [-1]
        self.depth: list[int] = [0]

    def new(self, parent: int) -> int:
        """A new scope inside `parent`."""
        self.parent.append(parent)
        self.depth.append(self.depth[parent] + 1)
        return len(self.parent) - 1

    def lca(self, a: int, b: int) -> int:
        """The innermost scope that holds both `a` and `b`."""
        while self.depth[a] > self.depth[b]:
            a = self.parent[a]
        while self.depth[b] > self.depth[a]:
            b = self.parent[b]
        while a != b:
            a, b = self.parent[a], self.parent[b]
        return a


__all__ = ["ScopeTree"]
