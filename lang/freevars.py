"""Free and bound variables of expressions, and renaming a variable bound twice apart."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence

from .expr import Expr, Function, Let, Match, Var, pattern_vars
from .traversal import children, post_order, with_children


def binders(node: Expr) -> list[Var]:
    """The variables `node` itself binds: a let's variable, a function's parameters, the
    pattern variables of a match's clauses."""
    if isinstance(node, Let):
        return [node.var]
    if isinstance(node, Function):
        return list(node.params)
    if isinstance(node, Match):
        return [v for clause in node.clauses for v in pattern_vars(clause.lhs)]
    return []


def bound_vars(root: Expr, order: Iterable[Expr] | None = None) -> list[Var]:
    """Variables bound inside `root` (let variables, parameters, pattern variables);
    `order`, if given, is `post_order(root)`."""
    bound: list[Var] = []
    for node in post_order(root) if order is None else order:
        if isinstance(node, (Let, Function, Match)):
            bound.extend(binders(node))
    return bound


def free_vars(root: Expr) -> list[Var]:
    """Variables used in `root` but not bound in it, in order of first appearance (for a
    program where no variable is bound twice, see `distinct_binders`)."""
    bound = {id(v) for v in bound_vars(root)}
    return [node for node in post_order(root) if isinstance(node, Var) and id(node) not in bound]


def rebound_vars(root: Expr, order: Iterable[Expr] | None = None) -> set[int]:
    """The ids of the variables that two different binders inside `root` bind (a shared
    node counts once); `order`, if given, is `post_order(root)`."""
    counts = Counter(id(v) for v in bound_vars(root, order))
    return {key for key, n in counts.items() if n > 1}


class _Scope:
    """The renamings in force at a point of the walk: variable id -> its new variable."""

    __slots__ = ("key", "names")

    def __init__(self, names: dict[int, Var]) -> None:
        self.names = names
        self.key = tuple(sorted((k, id(v)) for k, v in names.items()))


def distinct_binders(root: Expr, order: Sequence[Expr] | None = None) -> Expr:
    """`root` with its variables renamed apart so that no variable is bound twice, every
    use referring to the nearest binder around it (as evaluation does); `root` itself when
    no variable is bound twice.

    A pass that copies code without renaming its binders (or a program built by hand that
    reuses a `Var` object) can bind one variable in two places: `if (%c) { let %a = …; %a }
    else { let %a = …; %a }` with one `%a`. The first binder the walk meets keeps the
    variable, the others get fresh copies (same name hint, annotation and span). Only the
    nodes that mention such a variable are rebuilt, and a shared node is rebuilt once per
    distinct set of renamings around it. `order`, if given, is `post_order(root)`."""
    if order is None:
        order = list(post_order(root))
    rebound = rebound_vars(root, order)
    if not rebound:
        return root
    touches: set[int] = set()  # nodes mentioning a rebound variable, as binder or use
    for node in order:
        if isinstance(node, Var):
            if id(node) in rebound:
                touches.add(id(node))
        elif any(id(c) in touches for c in children(node)):
            touches.add(id(node))
    kept: set[int] = set()  # rebound variables whose first binder was met
    made: list[object] = []  # keeps the ids in `results` and scope keys valid

    def enter(scope: _Scope, variables: list[Var]) -> _Scope:
        fresh: dict[int, Var] = {}
        for v in variables:
            if id(v) not in rebound:
                continue
            if id(v) in kept:
                fresh[id(v)] = Var(v.name_hint, v.type_annotation, span=v.span)
            else:
                kept.add(id(v))
                fresh[id(v)] = v
        if not fresh:
            return scope
        inner = _Scope({**scope.names, **fresh})
        made.append(inner)
        return inner

    results: dict[tuple[int, tuple[tuple[int, int], ...]], Expr] = {}

    def result(node: Expr, scope: _Scope) -> Expr:
        if id(node) not in touches:
            return node
        if isinstance(node, Var):
            return scope.names.get(id(node), node)
        return results[(id(node), scope.key)]

    stack: list[tuple[Expr, _Scope, list[tuple[Expr, _Scope]] | None]] = [(root, _Scope({}), None)]
    while stack:
        node, scope, kids = stack.pop()
        if kids is not None:
            built = with_children(node, [result(k, s) for k, s in kids])
            results[(id(node), scope.key)] = built
            made.append(built)
            continue
        if id(node) not in touches or isinstance(node, Var):
            continue
        if (id(node), scope.key) in results:
            continue
        kids = _scoped_children(node, scope, enter)
        stack.append((node, scope, kids))
        stack.extend((k, s, None) for k, s in reversed(kids))
    return result(root, _Scope({}))


def _scoped_children(
    node: Expr, scope: _Scope, enter: Callable[[_Scope, list[Var]], _Scope]
) -> list[tuple[Expr, _Scope]]:
    """`children(node)`, each with the scope it is evaluated in."""
    if isinstance(node, (Let, Function)):
        inner = enter(scope, binders(node))  # a let's variable is in scope in its value
        return [(k, inner) for k in children(node)]
    if isinstance(node, Match):
        out: list[tuple[Expr, _Scope]] = [(node.data, scope)]
        for clause in node.clauses:
            variables = pattern_vars(clause.lhs)
            inner = enter(scope, variables)
            out.extend((v, inner) for v in variables)
            out.append((clause.rhs, inner))
        return out
    return [(k, scope) for k in children(node)]
