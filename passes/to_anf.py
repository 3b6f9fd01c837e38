"""`to-anf`: convert every function to A-normal form (TVM's `ToANormalForm`).

Every non-atomic subexpression is bound by a `let` to a fresh variable, in evaluation
order, and every operand becomes an atom (variable, global, constant, operator or
constructor). Sharing is preserved: a node used several times is bound once, in the
innermost scope that dominates all its uses (function bodies, `if` branches and `match`
clauses are scopes). The value of an existing `let` is bound to that let's own variable.

    def @main(%x: Tensor[(2), float32], %c: bool) {
      %0 = add(%x, %x);
      if (%c) { multiply(%0, %0) } else { %0 }
    }

becomes

    def @main(%x: Tensor[(2), float32], %c: bool) {
      let %a = add(%x, %x);
      let %b = if (%c) { let %m = multiply(%a, %a); %m } else { %a };
      %b
    }
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ..lang.adt import Constructor
from ..lang.expr import (
    Clause,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Var,
)
from ..lang.module import IRModule
from ..lang.op import Op
from ..lang.scopes import ScopeTree
from ..lang.trampoline import run
from ..lang.traversal import children, post_order, with_children
from .context import PassContext
from .pass_base import NoOptions, function_pass

ATOMS = (Var, GlobalVar, Constant, Op, Constructor)
"""The node classes that A-normal form allows as operands."""


def _child_scopes(
    node: Expr, scope: int, scopes: ScopeTree, inner: dict[tuple[int, int], int]
) -> list[int]:
    """The scope each child of `node` (in `children` order) is evaluated in."""
    kids = children(node)
    result = [scope] * len(kids)
    if isinstance(node, If):
        for i in (1, 2):
            result[i] = inner.setdefault((id(node), i), scopes.new(scope))
    elif isinstance(node, Function):
        result[-1] = inner.setdefault((id(node), 0), scopes.new(scope))
    elif isinstance(node, Match):
        position = 1
        for i, clause in enumerate(node.clauses):
            s = inner.setdefault((id(node), i), scopes.new(scope))
            count = len(children_of_clause(clause))
            for j in range(position, position + count):
                result[j] = s
            position += count
    return result


def children_of_clause(clause: Clause) -> list[Expr]:
    """The children `children(match)` lists for one clause: its pattern vars, then its rhs."""
    from ..lang.expr import pattern_vars

    return [*pattern_vars(clause.lhs), clause.rhs]


class _Converter:
    """Converts one function body; see the module docstring.

    Not an `ExprMutator`: a node's result depends on the scope it is bound in, and the
    bindings are emitted in evaluation order (operands left to right, a scope's lets
    before its result), so the walk is a recursive descent run on a trampoline
    (`lang.trampoline`), not a bottom-up rebuild.
    """

    def __init__(self, body: Expr) -> None:
        self.scopes = ScopeTree()
        self.inner: dict[tuple[int, int], int] = {}
        self.scope_of: dict[int, int] = {id(body): 0}
        self.uses: dict[int, int] = {}
        order = list(post_order(body))
        for node in reversed(order):  # parents before children
            if isinstance(node, ATOMS):
                continue
            scope = self.scope_of[id(node)]
            kids = children(node)
            for child, s in zip(kids, _child_scopes(node, scope, self.scopes, self.inner)):
                if isinstance(child, ATOMS):
                    continue
                self.uses[id(child)] = self.uses.get(id(child), 0) + 1
                old = self.scope_of.get(id(child))
                self.scope_of[id(child)] = s if old is None else self.scopes.lca(old, s)
        self.memo: dict[int, Expr] = {}
        self.open: dict[int, list[tuple[Var, Expr]]] = {}

    def convert_scope(self, expr: Expr, scope: int) -> Generator[Any, Any, Expr]:
        """`expr` (evaluated in `scope`) as a let chain ending in an atom."""
        bindings: list[tuple[Var, Expr]] = []
        self.open[scope] = bindings
        atom = yield self.atom(expr)
        del self.open[scope]
        result: Expr = atom
        for var, value in reversed(bindings):
            result = Let(var, value, result)
        return result

    def bind(self, scope: int, value: Expr, var: Var | None = None) -> Var:
        """Bind `value` in (open) `scope`; the bound variable."""
        if var is None:
            var = Var("x")
        self.open[scope].append((var, value))
        return var

    def atom(self, node: Expr) -> Generator[Any, Any, Expr]:
        """The atom standing for `node`, after emitting the bindings it needs."""
        if isinstance(node, ATOMS):
            return node
        done = self.memo.get(id(node))
        if done is not None:
            return done
        if isinstance(node, Let):
            chain: list[Let] = []
            current: Expr = node
            scope = self.scope_of[id(node)]
            while isinstance(current, Let) and id(current) not in self.memo:
                chain.append(current)
                value = current.value
                if (
                    isinstance(value, (*ATOMS, Let))
                    or id(value) in self.memo
                    or self.uses[id(value)] > 1
                ):
                    self.bind(scope, (yield self.atom(value)), current.var)
                else:
                    self.bind(scope, (yield self.shallow(value)), current.var)
                current = current.body
            result = yield self.atom(current)
            for let in chain:
                self.memo[id(let)] = result
            return result
        var = self.bind(self.scope_of[id(node)], (yield self.shallow(node)))
        self.memo[id(node)] = var
        return var

    def shallow(self, node: Expr) -> Generator[Any, Any, Expr]:
        """`node` with its operands converted to atoms (sub-scopes to let chains)."""
        if isinstance(node, Function):
            body_scope = self.inner[(id(node), 0)]
            return node.replace(body=(yield self.convert_scope(node.body, body_scope)))
        if isinstance(node, If):
            cond = yield self.atom(node.cond)
            then = yield self.convert_scope(node.true_branch, self.inner[(id(node), 1)])
            other = yield self.convert_scope(node.false_branch, self.inner[(id(node), 2)])
            return node.replace(cond=cond, true_branch=then, false_branch=other)
        if isinstance(node, Match):
            data = yield self.atom(node.data)
            clauses = []
            for i, clause in enumerate(node.clauses):
                rhs = yield self.convert_scope(clause.rhs, self.inner[(id(node), i)])
                clauses.append(Clause(clause.lhs, rhs))
            return node.replace(data=data, clauses=tuple(clauses))
        new = []
        for child in children(node):
            new.append((yield self.atom(child)))
        return with_children(node, new)


def to_anf_expr(body: Expr) -> Expr:
    """`body` (a function body, or any closed-over expression) in A-normal form."""
    converter = _Converter(body)
    return run(converter.convert_scope(body, 0))


def to_anf_function(fn: Function) -> Function:
    """`fn` with its body (and every nested function) in A-normal form."""
    return fn.replace(body=to_anf_expr(fn.body))


@function_pass(
    name="to-anf",
    opt_level=1,
    options=NoOptions,
    produces="anf",
    include_primitive=True,
    tvm_name="ToANormalForm",
)
def to_anf_pass(fn: Function, mod: IRModule, ctx: PassContext, options: NoOptions) -> Function:
    """Convert every global function to A-normal form."""
    return to_anf_function(fn)
