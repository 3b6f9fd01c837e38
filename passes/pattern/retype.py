"""Types of a graph that a sweep is rewriting, kept up to date without re-inferring it.

A sweep rebuilds every node above a rewrite. Re-inferring the whole function after each
rewrite (or leaving the rebuilt nodes untyped until the next sweep) makes a sweep over a
long chain quadratic. Instead, `SweepTypes` keeps the table of the sweep's start and

* carries a node's type to its rebuilt copy when every child kept its type (the type of a
  node depends only on the node and the types of its children), and
* infers the type of a node a rule created from the types of its children, one node at a
  time (an operator call is checked with its non-constant arguments replaced by variables
  annotated with their types).

Both are O(1) per node, so a sweep stays linear in the size of the graph.
"""

from __future__ import annotations

from ...lang.expr import Call, Constant, Expr, Tuple, TupleGetItem, Var
from ...lang.op import Op
from ...lang.traversal import children
from ...lang.types import TupleType, Type
from ...typecheck import ModuleTypes, infer_expr


class SweepTypes:
    """The types of the nodes of a graph being rewritten (see the module docstring).

    `types` is the inference result of the graph at the start of the sweep; its table is
    extended in place, so a `Matcher` reading `types` sees the new entries.
    """

    def __init__(self, types: ModuleTypes) -> None:
        self.types = types
        self.table = types.table
        self._failed: set[int] = set()
        self._keep: list[Expr] = []  # keeps failed nodes alive, so their ids stay theirs

    def of(self, e: Expr) -> Type | None:
        """The type of `e`, or None if it is not known."""
        return self.table.get(e)

    def carry(self, old: Expr, new: Expr) -> None:
        """Give `new` (`old` rebuilt with new children) the type of `old` when every
        child of `new` has the type of the corresponding child of `old`."""
        table = self.table
        if new is old or new in table:
            return
        t = table.get(old)
        if t is None:
            return
        old_kids, new_kids = children(old), children(new)
        if len(old_kids) != len(new_kids):
            return
        for a, b in zip(old_kids, new_kids):
            if a is b:
                continue
            ta, tb = table.get(a), table.get(b)
            if ta is None or tb is None or (ta is not tb and ta != tb):
                return
        table[new] = t

    def add(self, root: Expr) -> None:
        """Type the untyped nodes of `root` (typically a rule's replacement) bottom-up from
        their children's types; nodes that cannot be typed locally stay untyped."""
        table = self.table
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if node in table or id(node) in self._failed:
                continue
            if not expanded:
                stack.append((node, True))
                stack.extend((k, False) for k in children(node) if k not in table)
                continue
            t = self._local(node)
            if t is None:
                self._failed.add(id(node))
                self._keep.append(node)
            else:
                table[node] = t

    def _local(self, node: Expr) -> Type | None:
        """The type of `node` from its children's types, or None."""
        table = self.table
        if isinstance(node, Var):
            return node.type_annotation
        if isinstance(node, Tuple):
            fields = [table.get(f) for f in node.fields]
            if any(f is None for f in fields):
                return None
            return TupleType(tuple(f for f in fields if f is not None))
        if isinstance(node, TupleGetItem):
            t = table.get(node.tuple_value)
            if isinstance(t, TupleType) and 0 <= node.index < len(t.fields):
                return t.fields[node.index]
            return None
        if isinstance(node, Constant):
            return self._infer(node)
        if isinstance(node, Call) and isinstance(node.op, Op):
            args: list[Expr] = []
            for i, arg in enumerate(node.args):
                if isinstance(arg, Constant):
                    args.append(arg)
                    continue
                t = table.get(arg)
                if t is None:
                    return None
                args.append(Var(f"a{i}", t))
            return self._infer(node.replace(args=tuple(args)))
        return None

    def _infer(self, e: Expr) -> Type | None:
        result = infer_expr(e, raise_errors=False)  # operators and constants need no module
        if not result.ok:
            return None
        return result.table.get(e)
