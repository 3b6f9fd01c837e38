"""Generic traversal of expressions: children, rebuilding, post-order, visitors, mutators.

Every walk here is iterative (an explicit stack) and memoized on node identity, so a
100,000-binding let chain or a 10,000-deep nested call is handled with Python's default
recursion limit, and a shared subgraph is visited once.

The two tables `_CHILDREN` and `_REBUILD` are the only place that knows the shape of each
node class; everything else (visitors, mutators, free variables, the printer's use
counts) is written against `children` / `with_children`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import is_

from .adt import Constructor
from .expr import (
    Call,
    Clause,
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
    pattern_vars,
    replace_pattern_vars,
)
from .op import Op


def _match_children(m: Match) -> tuple[Expr, ...]:
    out: list[Expr] = [m.data]
    for clause in m.clauses:
        out.extend(pattern_vars(clause.lhs))
        out.append(clause.rhs)
    return tuple(out)


def _rebuild_match(m: Match, new: Sequence[Expr]) -> Match:
    data = new[0]
    position = 1
    clauses: list[Clause] = []
    for clause in m.clauses:
        old_vars = pattern_vars(clause.lhs)
        new_vars = new[position : position + len(old_vars)]
        position += len(old_vars)
        rhs = new[position]
        position += 1
        mapping = {o: n for o, n in zip(old_vars, new_vars) if o is not n}
        lhs = replace_pattern_vars(clause.lhs, mapping) if mapping else clause.lhs  # type: ignore[arg-type]
        if lhs is clause.lhs and rhs is clause.rhs:
            clauses.append(clause)
        else:
            clauses.append(Clause(lhs, rhs))
    if data is m.data and all(a is b for a, b in zip(clauses, m.clauses)):
        return m
    return m.replace(data=data, clauses=tuple(clauses))


_LEAF: Callable[[Expr], tuple[Expr, ...]] = lambda e: ()  # noqa: E731

_CHILDREN: dict[type, Callable[[Expr], tuple[Expr, ...]]] = {
    Var: _LEAF,
    GlobalVar: _LEAF,
    Constant: _LEAF,
    Op: _LEAF,
    Constructor: _LEAF,
    Tuple: lambda e: e.fields,  # type: ignore[attr-defined]
    TupleGetItem: lambda e: (e.tuple_value,),  # type: ignore[attr-defined]
    Call: lambda e: (e.op, *e.args),  # type: ignore[attr-defined]
    Let: lambda e: (e.var, e.value, e.body),  # type: ignore[attr-defined]
    If: lambda e: (e.cond, e.true_branch, e.false_branch),  # type: ignore[attr-defined]
    Function: lambda e: (*e.params, e.body),  # type: ignore[attr-defined]
    Match: _match_children,  # type: ignore[dict-item]
    RefCreate: lambda e: (e.value,),  # type: ignore[attr-defined]
    RefRead: lambda e: (e.ref,),  # type: ignore[attr-defined]
    RefWrite: lambda e: (e.ref, e.value),  # type: ignore[attr-defined]
}

LEAF_CLASSES = frozenset(cls for cls, kids in _CHILDREN.items() if kids is _LEAF)
"""The node classes without children (variables, globals, constants, operators,
constructors), for walks that test a node's exact class."""


def _same(new: Sequence[Expr], old: Sequence[Expr]) -> bool:
    """Whether `new` holds exactly the objects of `old`, in order."""
    return len(new) == len(old) and all(map(is_, new, old))


# Rebuilding calls the class's constructor directly (`replace` goes through
# `attrs.evolve`, several times slower): these run once per rebuilt node of every pass.
def _rebuild_tuple(e: Tuple, c: Sequence[Expr]) -> Expr:
    return e if _same(c, e.fields) else Tuple(c, span=e.span)


def _rebuild_projection(e: TupleGetItem, c: Sequence[Expr]) -> Expr:
    value = c[0]
    return e if value is e.tuple_value else TupleGetItem(value, e.index, span=e.span)


def _rebuild_call(e: Call, c: Sequence[Expr]) -> Expr:
    op, args = c[0], c[1:]
    if op is e.op and _same(args, e.args):
        return e
    return Call(op, args, e.attrs, e.type_args, span=e.span)


def _rebuild_let(e: Let, c: Sequence[Expr]) -> Expr:
    var, value, body = c
    if var is e.var and value is e.value and body is e.body:
        return e
    return Let(var, value, body, span=e.span)  # type: ignore[arg-type]


def _rebuild_if(e: If, c: Sequence[Expr]) -> Expr:
    cond, then, other = c
    if cond is e.cond and then is e.true_branch and other is e.false_branch:
        return e
    return If(cond, then, other, span=e.span)


def _rebuild_function(e: Function, c: Sequence[Expr]) -> Expr:
    params, body = c[:-1], c[-1]
    if body is e.body and _same(params, e.params):
        return e
    return Function(params, body, e.ret_type, e.type_params, e.attrs, span=e.span)  # type: ignore[arg-type]


_REBUILD: dict[type, Callable[[Expr, Sequence[Expr]], Expr]] = {
    Tuple: _rebuild_tuple,  # type: ignore[dict-item]
    TupleGetItem: _rebuild_projection,  # type: ignore[dict-item]
    Call: _rebuild_call,  # type: ignore[dict-item]
    Let: _rebuild_let,  # type: ignore[dict-item]
    If: _rebuild_if,  # type: ignore[dict-item]
    Function: _rebuild_function,  # type: ignore[dict-item]
    Match: _rebuild_match,  # type: ignore[dict-item]
    RefCreate: lambda e, c: e.replace(value=c[0]),
    RefRead: lambda e, c: e.replace(ref=c[0]),
    RefWrite: lambda e, c: e.replace(ref=c[0], value=c[1]),
}


def _lookup(table: dict, node: Expr, what: str):  # type: ignore[no-untyped-def, type-arg]
    try:
        return table[type(node)]
    except KeyError:
        for cls in type(node).__mro__:
            if cls in table:
                table[type(node)] = table[cls]
                return table[cls]
        raise TypeError(f"{what}: unhandled node class {type(node).__name__}") from None


def children(node: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of `node`, binders (let variables, parameters) included."""
    get = _CHILDREN.get(type(node)) or _lookup(_CHILDREN, node, "children")
    return get(node)  # type: ignore[no-any-return]


def with_children(node: Expr, new_children: Sequence[Expr]) -> Expr:
    """`node` rebuilt with `new_children` (in `children` order); `node` itself if unchanged."""
    if not new_children:
        return node
    rebuild = _REBUILD.get(type(node)) or _lookup(_REBUILD, node, "with_children")
    return rebuild(node, new_children)  # type: ignore[no-any-return]


def scope_operands(node: Expr) -> tuple[Expr, ...]:
    """The sub-expressions `node` evaluates in its own scope before it runs (its operands):
    a call's callee and arguments, tuple fields, a projected tuple, an `if` condition, a
    `match` scrutinee, reference operands. Bodies, branches and arms, which open scopes of
    their own, are left out. In A-normal form these are exactly the positions that must be
    atoms."""
    if isinstance(node, Call):
        return (node.op, *node.args)
    if isinstance(node, Tuple):
        return node.fields
    if isinstance(node, TupleGetItem):
        return (node.tuple_value,)
    if isinstance(node, If):
        return (node.cond,)
    if isinstance(node, Match):
        return (node.data,)
    if isinstance(node, RefCreate):
        return (node.value,)
    if isinstance(node, RefRead):
        return (node.ref,)
    if isinstance(node, RefWrite):
        return (node.ref, node.value)
    return ()


def post_order_by(root: Expr, children_of: Callable[[Expr], Sequence[Expr]]) -> list[Expr]:
    """The nodes reachable from `root` through `children_of`, each once, children before
    parents (a node is placed when its last child is done; iteratively). Plans use it with
    their own notion of children: `() if isinstance(node, Function) else children(node)`
    keeps out of function bodies."""
    order: list[Expr] = []
    done: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in done:
            continue
        if expanded:
            done.add(id(node))
            order.append(node)
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in reversed(children_of(node)) if id(c) not in done)
    return order


_DONE = object()
"""Pushed above a node on the walk's stack: the node's children are finished."""


def post_order(root: Expr) -> Iterator[Expr]:
    """Every node reachable from `root`, children before parents, each exactly once."""
    # the hottest loop of the project: locals for the lookups, leaves yielded at once, and
    # a marker above an expanded node instead of a (node, flag) pair per stack entry
    seen: set[int] = set()
    mark = seen.add
    table = _CHILDREN
    done = _DONE
    stack: list[object] = [root]
    pop, push = stack.pop, stack.append
    while stack:
        node = pop()
        if node is done:
            yield pop()  # type: ignore[misc]
            continue
        key = id(node)
        if key in seen:
            continue
        mark(key)
        get = table.get(type(node))
        kids = get(node) if get is not None else children(node)  # type: ignore[arg-type]
        if not kids:
            yield node  # type: ignore[misc]
            continue
        push(node)
        push(done)
        for child in reversed(kids):
            if id(child) not in seen:
                push(child)


def pre_order(root: Expr) -> Iterator[Expr]:
    """Every node reachable from `root`, parents before children, each exactly once."""
    seen: set[int] = set()
    stack: list[Expr] = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(reversed(children(node)))


class ExprVisitor:
    """Calls `visit_<Class>(node)` for every node once, children first.

    Subclasses define only the methods they care about; `generic_visit` is called for the
    others.
    """

    def visit(self, root: Expr) -> None:
        """Visit every node reachable from `root`."""
        for node in post_order(root):
            method = getattr(self, "visit_" + type(node).__name__, None)
            if method is None:
                self.generic_visit(node)
            else:
                method(node)

    def generic_visit(self, node: Expr) -> None:
        """Called for nodes without a `visit_<Class>` method; does nothing by default."""


class ExprMutator:
    """Rebuilds an expression bottom-up, calling `visit_<Class>(node)` on each rebuilt node.

    When `visit_Call` (say) is called, the call's children have already been rewritten and
    the call rebuilt with them; the method returns the replacement (or the node itself).
    Results are memoized by identity, so shared subgraphs stay shared and a variable is
    replaced consistently at its binding site and all its uses.

    A subclass that needs the node as it was (to look it up in a table computed on the
    input) overrides `rewrite_node(node)` instead: it returns the replacement of `node`,
    calling `self.rebuilt(node)` for `node` on its rewritten children only when it wants
    it (so a node that is dropped is never rebuilt) and `self.rewritten(e)` for the result
    of a node visited before (children come before parents, and a `let`'s variable and
    value before its body). It may also record the result of a node not visited yet in
    `self.memo` (by id): that node is then not visited.
    """

    def __init__(self) -> None:
        self.memo: dict[int, Expr] = {}
        self._keep: list[Expr] = []
        self._methods: dict[type, Callable[[Expr], Expr] | None] = {}

    def visit(self, root: Expr, nodes: Iterable[Expr] | None = None) -> Expr:
        """The rewritten `root`; `nodes`, if given, is `post_order(root)` (a caller that
        walked it already saves the walk)."""
        memo, keep, rewrite_node = self.memo, self._keep, self.rewrite_node
        for node in post_order(root) if nodes is None else nodes:
            key = id(node)
            if key in memo:
                continue
            memo[key] = rewrite_node(node)
            keep.append(node)  # keeps ids in `memo` valid while we run
        return memo[id(root)]

    def rebuilt(self, node: Expr) -> Expr:
        """`node` on the results of its children (`node` itself if none changed)."""
        cls = type(node)
        get = _CHILDREN.get(cls)
        kids = get(node) if get is not None else children(node)
        if not kids:
            return node
        memo = self.memo
        rebuild = _REBUILD.get(cls) or _lookup(_REBUILD, node, "with_children")
        return rebuild(node, [memo[id(k)] for k in kids])  # type: ignore[no-any-return]

    def rewritten(self, node: Expr) -> Expr:
        """The result of `node`, which must have been visited already."""
        return self.memo[id(node)]

    def rewrite_node(self, node: Expr) -> Expr:
        """The replacement of `node`: by default `visit_<Class>` of `node` rebuilt on its
        rewritten children, or the rebuilt node when the class has no such method."""
        rebuilt = self.rebuilt(node)
        cls = type(rebuilt)
        try:
            method = self._methods[cls]
        except KeyError:
            method = self._methods[cls] = getattr(self, "visit_" + cls.__name__, None)
        return rebuilt if method is None else method(rebuilt)


class _FunctionMutator(ExprMutator):
    """The mutator of `rewrite_post_order`: `rewrite(rebuilt)` or the rebuilt node."""

    def __init__(self, rewrite: Callable[[Expr], Expr | None]) -> None:
        super().__init__()
        self._rewrite = rewrite

    def rewrite_node(self, node: Expr) -> Expr:
        rebuilt = self.rebuilt(node)
        result = self._rewrite(rebuilt)
        return rebuilt if result is None else result


def rewrite_post_order(root: Expr, rewrite: Callable[[Expr], Expr | None]) -> Expr:
    """Rebuild `root` bottom-up; `rewrite(node)` returns a replacement or None for no change."""
    return _FunctionMutator(rewrite).visit(root)


def substitute(root: Expr, mapping: dict[Var, Expr]) -> Expr:
    """`root` with every occurrence of the variables in `mapping` replaced."""
    return rewrite_post_order(root, lambda e: mapping.get(e) if isinstance(e, Var) else None)  # type: ignore[call-overload]
