"""Walks and rewrites of loop-IR expressions and statements, all with explicit stacks.

* Any node: `children` are found from the attrs fields of each node (a field holding an
  expression or statement, or a tuple of them); `sub_expressions` visits every node once,
  `rewrite_expr` rebuilds a tree bottom-up with a callback (expressions and statements
  alike); `substitute` replaces variables, `replace_buffers` buffers, `fresh_binders`
  renames what a statement binds.
* Statements: `stmt_children` / `with_stmt_children` see only sub-statements, and
  `StmtMutator` rebuilds a statement tree with hooks: `enter` sees each statement top-down
  (it may rewrite the statement's own expressions or replace it), `open_scope` and
  `close_scope` bracket the visit of its sub-statements, and `leave` sees it bottom-up with
  its rebuilt sub-statements. `make_seq` builds flat sequences, `NOOP` does nothing.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import Any

import attrs

from .buffer import Buffer
from .expr import BinaryOp, BufferLoad, CmpOp, Let, PrimExpr, Var
from .stmt import Allocate, BufferStore, For, IfThenElse, LetStmt, SeqStmt, Stmt

Node = Any


_TUPLE_FIELDS = frozenset(["indices", "args", "source", "stmts", "result", "identity"])
"""Fields that hold a tuple of children."""

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
    return tuple(
        (f.name, f.name in _TUPLE_FIELDS) for f in attrs.fields(cls) if f.name not in _NOT_CHILDREN
    )


_NODE_TYPES = (PrimExpr, Stmt)

ChildrenFn = Callable[[Node], list[Node]]
_CHILDREN_BY_CLASS: dict[type, ChildrenFn] = {}
"""The `children` function of each node class seen (`_children_fn`)."""


def _no_children(node: Node) -> list[Node]:
    return []


def _children_fn(cls: type) -> ChildrenFn:
    """`children` for nodes of class `cls`, specialized to its fields (the walks of every
    loop-IR pass call it once per node, so it is worth a function per class)."""
    fields = _child_fields(cls)
    fn: ChildrenFn
    if not fields:
        fn = _no_children
    elif len(fields) == 1 and fields[0][1]:
        get_many = operator.attrgetter(fields[0][0])

        def fn(node: Node) -> list[Node]:
            return [v for v in get_many(node) if isinstance(v, _NODE_TYPES)]

    elif len(fields) == 1:
        get_one = operator.attrgetter(fields[0][0])

        def fn(node: Node) -> list[Node]:
            v = get_one(node)
            return [v] if isinstance(v, _NODE_TYPES) else []

    elif not any(many for _, many in fields):
        get_all = operator.attrgetter(*(name for name, _ in fields))

        def fn(node: Node) -> list[Node]:
            return [v for v in get_all(node) if isinstance(v, _NODE_TYPES)]

    else:

        def fn(node: Node) -> list[Node]:
            out: list[Node] = []
            for name, many in fields:
                value = getattr(node, name)
                if many:
                    out.extend(v for v in value if isinstance(v, _NODE_TYPES))
                elif isinstance(value, _NODE_TYPES):
                    out.append(value)
            return out

    _CHILDREN_BY_CLASS[cls] = fn
    return fn


def _operands(node: Node) -> list[Node]:
    return [node.a, node.b]


def children(node: Node) -> list[Node]:
    """The expressions and statements directly inside `node`, in field order."""
    fn = _CHILDREN_BY_CLASS.get(type(node))
    if fn is None:
        fn = _children_fn(type(node))
    return fn(node)


for _cls in (*BinaryOp.__subclasses__(), *CmpOp.__subclasses__()):
    # the most common nodes: both operands are always expressions
    _CHILDREN_BY_CLASS[_cls] = _operands


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
        kids = children(node)
        if kids:
            kids.reverse()
            stack.extend(kids)


def with_children(node: Node, new_children: list[Node]) -> Node:
    """`node` with its children replaced (in `children` order); `node` itself if unchanged."""
    return rebuild_node(node, children(node), new_children)


@cache
def _init_fields(cls: type) -> tuple[tuple[str, str], ...]:
    """(attribute, argument name) of each field `cls.__init__` takes."""
    return tuple((f.name, f.alias) for f in attrs.fields(cls) if f.init)


def rebuild_node(node: Node, old: list[Node], new_children: list[Node]) -> Node:
    """`node`, whose children are `old` (`children(node)`), with them replaced by
    `new_children`; `node` itself when every child is unchanged."""
    for a, b in zip(old, new_children):
        if a is not b:
            break
    else:
        return node
    cls = type(node)
    if _CHILDREN_BY_CLASS.get(cls) is _operands:  # binary and compare nodes: (a, b)
        return cls(new_children[0], new_children[1])
    it = iter(new_children)
    updates: dict[str, Any] = {}
    for name, many in _child_fields(type(node)):  # type: ignore[arg-type]
        value = getattr(node, name)
        if many:
            updates[name] = tuple(next(it) if isinstance(v, _NODE_TYPES) else v for v in value)
        elif isinstance(value, _NODE_TYPES):
            updates[name] = next(it)
    # attrs.evolve, without its per-call look-up of the fields
    kwargs = {
        alias: updates[name] if name in updates else getattr(node, name)
        for name, alias in _init_fields(type(node))  # type: ignore[arg-type]
    }
    return type(node)(**kwargs)


def rewrite_expr(root: Node, fn: Callable[[Node], Node | None]) -> Node:
    """Rebuild `root` bottom-up: each node is first rebuilt from its rewritten children, then
    `fn(node)` may return a replacement (or None to keep it). Shared nodes are rewritten once."""
    done: dict[int, Node] = {}
    # Entries: (node, None) to expand, (node, its children) to rebuild once they are done.
    stack: list[tuple[Node, list[Node] | None]] = [(root, None)]
    while stack:
        node, kids = stack.pop()
        if id(node) in done:
            continue
        if kids is None:
            kids = children(node)
            if kids:
                stack.append((node, kids))
                stack.extend((k, None) for k in kids if id(k) not in done)
                continue
            rebuilt = node  # a leaf: no need to come back to it
        else:
            rebuilt = rebuild_node(node, kids, [done[id(k)] for k in kids])
        replaced = fn(rebuilt)
        done[id(node)] = rebuilt if replaced is None else replaced
    return done[id(root)]


# ----------------------------------------------------------------------------- statements

NOOP: Stmt = SeqStmt(())
"""The statement that does nothing (an empty sequence)."""

_MAX_REPLACEMENTS = 1_000_000


def is_noop(s: Stmt | None) -> bool:
    """Whether `s` does nothing (None or an empty sequence)."""
    return s is None or (isinstance(s, SeqStmt) and not s.stmts)


def stmt_children(s: Stmt) -> list[Stmt]:
    """The statements directly inside `s`."""
    if isinstance(s, SeqStmt):
        return list(s.stmts)
    if isinstance(s, (For, LetStmt, Allocate)):
        return [s.body]
    if isinstance(s, IfThenElse):
        return [s.then_case] if s.else_case is None else [s.then_case, s.else_case]
    return []


def with_stmt_children(s: Stmt, new: list[Stmt]) -> Stmt:
    """`s` with its sub-statements replaced (itself when none changed)."""
    old = stmt_children(s)
    if all(a is b for a, b in zip(old, new)):
        return s
    if isinstance(s, SeqStmt):
        return SeqStmt(tuple(new))
    if isinstance(s, IfThenElse):
        return attrs.evolve(s, then_case=new[0], else_case=new[1] if len(new) > 1 else None)
    return attrs.evolve(s, body=new[0])  # type: ignore[misc]


def make_seq(stmts: list[Stmt]) -> Stmt:
    """A sequence of `stmts` with nested sequences flattened and no-ops dropped."""
    flat: list[Stmt] = []
    for s in stmts:
        if isinstance(s, SeqStmt):
            flat.extend(c for c in s.stmts if not is_noop(c))
        elif not is_noop(s):
            flat.append(s)
    if not flat:
        return NOOP
    return flat[0] if len(flat) == 1 else SeqStmt(tuple(flat))


class StmtMutator:
    """Rebuilds a statement tree iteratively; override the hooks."""

    def enter(self, s: Stmt) -> Stmt:
        """Top-down hook: return `s`, or a replacement (which is entered in turn)."""
        return s

    def open_scope(self, s: Stmt, index: int) -> None:
        """Called before visiting sub-statement number `index` of `s` (as `enter` left it)."""

    def close_scope(self, s: Stmt, index: int) -> None:
        """Called after visiting sub-statement number `index` of `s`."""

    def leave(self, s: Stmt, entered: Stmt) -> Stmt:
        """Bottom-up hook: `s` is `entered` rebuilt with its visited sub-statements."""
        return s

    def visit(self, root: Stmt) -> Stmt:
        """The rewritten `root`."""
        results: list[Stmt] = []
        stack: list[tuple[str, Stmt, int]] = [("enter", root, 0)]
        while stack:
            tag, s, n = stack.pop()
            if tag == "open":
                self.open_scope(s, n)
                continue
            if tag == "close":
                self.close_scope(s, n)
                continue
            if tag == "leave":
                kids = results[len(results) - n :] if n else []
                if n:
                    del results[len(results) - n :]
                results.append(self.leave(with_stmt_children(s, kids), s))
                continue
            for _ in range(_MAX_REPLACEMENTS):
                t = self.enter(s)
                if t is s:
                    break
                s = t
            else:
                raise RuntimeError(f"{type(self).__name__}.enter kept replacing a statement")
            kids = stmt_children(s)
            stack.append(("leave", s, len(kids)))
            for i in reversed(range(len(kids))):
                stack.append(("close", s, i))
                stack.append(("enter", kids[i], 0))
                stack.append(("open", s, i))
        return results[0]


def substitute(node: Any, mapping: Mapping[Var, PrimExpr]) -> Any:
    """`node` (expression or statement) with variables replaced by `mapping`."""
    if not mapping:
        return node
    return rewrite_expr(node, lambda n: mapping.get(n) if isinstance(n, Var) else None)


_NO_VARS: frozenset[Var] = frozenset()


class VarSets:
    """The variables occurring in each node (those `substitute` would see), remembered per
    node for the lifetime of this object, so that the expressions of a kernel, which share
    most of their subexpressions, are walked once in all."""

    def __init__(self) -> None:
        # id(node) -> (node, its variables): the node is kept so that its id stays its own
        self.memo: dict[int, tuple[Node, frozenset[Var]]] = {}

    def of(self, root: Node) -> frozenset[Var]:
        """The variables occurring in `root` (itself included when it is one)."""
        return memoized_fold(root, self.memo, _vars_of)


def _vars_of(node: Node, parts: list[frozenset[Var]]) -> frozenset[Var]:
    if isinstance(node, Var):
        return frozenset([node])
    out = _NO_VARS
    for found in parts:
        if found is not out and found:
            out = found if not out else out | found
    return out


def memoized_fold(
    root: Any, memo: dict[int, tuple[Any, Any]], combine: Callable[[Any, list[Any]], Any]
) -> Any:
    """`combine(node, [the results of its children])` at `root`, bottom-up without
    recursion, each node computed once for the lifetime of `memo` (id(node) -> (node,
    result): the node is kept so that its id stays its own)."""
    stack: list[tuple[Any, list[Any] | None]] = [(root, None)]
    while stack:
        node, kids = stack.pop()
        got = memo.get(id(node))
        if got is not None and got[0] is node:
            continue
        if kids is None:
            kids = children(node)
            if kids:
                stack.append((node, kids))
                stack.extend((k, None) for k in kids)
                continue
        memo[id(node)] = (node, combine(node, [memo[id(k)][1] for k in kids]))
    return memo[id(root)][1]


def replace_buffers(node: Any, mapping: Mapping[Any, Any]) -> Any:
    """`node` with buffers of loads and stores replaced by `mapping` (keyed by buffer)."""

    def fn(n: Any) -> Any:
        if isinstance(n, (BufferLoad, BufferStore)):
            new = mapping.get(n.buffer)
            if new is not None:
                return attrs.evolve(n, buffer=new)
        return None

    return rewrite_expr(node, fn)


def fresh_binders(body: Stmt, replace: Mapping[Var, PrimExpr] | None = None) -> Stmt:
    """`body` with every variable it binds and every buffer it allocates renamed (and the
    free variables in `replace` replaced, in the same walk)."""
    vars_: dict[Var, Any] = dict(replace) if replace else {}
    buffers: dict[Any, Buffer] = {}
    used: dict[int, Buffer] = {}  # the buffers of the nodes, in first-use order
    for n in sub_expressions(body):
        if isinstance(n, (Let, LetStmt)):
            vars_[n.var] = Var(n.var.name, n.var.dtype)
        elif isinstance(n, For):
            vars_[n.loop_var] = Var(n.loop_var.name, n.loop_var.dtype)
        elif isinstance(n, Allocate):
            old = n.buffer
            data = Var(old.data.name, old.data.dtype)
            buffers[old.data] = Buffer(old.name, old.dtype, old.shape, data, old.scope)
        buf = getattr(n, "buffer", None)
        if isinstance(buf, Buffer):
            used.setdefault(id(buf), buf)
    if not vars_ and not buffers:
        return body
    # Every node with a buffer keeps it through the renaming of variables (a buffer is not
    # a child), so the buffers to re-point are known before it: one rewrite does both.
    by_buffer = {
        buf: attrs.evolve(buf, data=buffers[buf.data].data)
        for buf in used.values()
        if buf.data in buffers
    }

    def fn(n: Any) -> Any:
        if isinstance(n, Var):
            return vars_.get(n)
        if isinstance(n, (Let, LetStmt)) and n.var in vars_:
            return attrs.evolve(n, var=vars_[n.var])
        if isinstance(n, For) and n.loop_var in vars_:
            return attrs.evolve(n, loop_var=vars_[n.loop_var])
        if by_buffer and isinstance(n, (BufferLoad, BufferStore)):
            new = by_buffer.get(n.buffer)
            if new is not None:
                return attrs.evolve(n, buffer=new)
        elif by_buffer and isinstance(n, Allocate) and n.buffer in by_buffer:
            return Allocate(by_buffer[n.buffer], n.body)
        return None

    out = rewrite_expr(body, fn)
    return out  # type: ignore[no-any-return]


__all__ = [
    "NOOP",
    "StmtMutator",
    "VarSets",
    "children",
    "fresh_binders",
    "is_noop",
    "make_seq",
    "rebuild_node",
    "replace_buffers",
    "rewrite_expr",
    "stmt_children",
    "sub_expressions",
    "substitute",
    "with_children",
    "with_stmt_children",
]
