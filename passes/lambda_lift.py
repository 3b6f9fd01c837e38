"""`lambda-lift`: turn function literals (closures) into global functions.

Every function literal not marked `Primitive` becomes a new global whose parameters are
the variables the literal captures (its free variables), then its own parameters.

- A call of the literal, or of the variable a `let` binds it to, becomes a call of the
  global with the captured variables passed first; a `let` whose variable is then unused
  is dropped. A recursive closure calls the global from its own body.
- Where the closure is used as a value it is replaced by the global itself when it
  captures nothing, else by a small wrapper closure `fn (%p...) { @g(%c..., %p...) }`
  (the wrapper stays a closure: it is the captured environment). An escaping recursive
  closure gets such a wrapper bound at the top of its global's body too.

Literals are lifted innermost first, so lifted bodies contain no other closure but such
wrappers. The new globals' parameters and return types are annotated with the inferred
types where the literal had none, since the context that fixed them is left behind.
Limitation: a closure capturing a variable whose type mentions type parameters of the
enclosing function is lifted without those type parameters.

    def @main(%x: float32) -> float32 {
      let %f = fn (%y: float32) -> float32 { add(%x, %y) };
      %f(%x)
    }

becomes

    def @main_lifted0(%x1: float32, %y: float32) -> float32 { add(%x1, %y) }
    def @main(%x: float32) -> float32 { @main_lifted0(%x, %x) }
"""

from __future__ import annotations

from typing import cast

from ..lang.expr import Call, Expr, Function, GlobalVar, Let, Var
from ..lang.freevars import free_vars
from ..lang.module import IRModule
from ..lang.traversal import ExprMutator, children, post_order, substitute
from ..lang.types import FuncType, Type
from ..typecheck import ModuleTypes, infer_module
from .context import PassContext
from .pass_base import NoOptions, module_pass


class _Literal:
    """What the lifting knows about one function literal."""

    def __init__(self, gv: GlobalVar, captured: list[Var], rec: Var | None) -> None:
        self.gv = gv
        self.captured = captured
        self.rec = rec


def _fresh(var: Var) -> Var:
    return Var(var.name_hint, var.type_annotation)


def _wrapper(fn: Function, gv: GlobalVar, captured: list[Var], own: list[Var]) -> Expr:
    """The value standing for lifted `fn` (whose parameters are like `own`) as a value."""
    if not captured:
        return gv
    params = [_fresh(p) for p in own]
    return Function(params, Call(gv, (*captured, *params)), fn.ret_type, fn.type_params)


def _captured(
    found: list[Var],
    rec: Var | None,
    literals: dict[int, _Literal],
    let_bound: dict[Var, Function],
    escaping: set[Var],
) -> list[Var]:
    """What a literal with free variables `found` captures once lifted: a free variable
    bound to an already lifted closure is called as that closure's global, so the literal
    captures what that closure captures instead (and the variable itself only where it
    escapes as a value)."""
    captured: dict[Var, None] = {}
    for v in found:
        if v is rec:
            continue
        inner = literals.get(id(let_bound[v])) if v in let_bound else None
        if inner is None or v in escaping:
            captured[v] = None
        if inner is not None:
            captured.update(dict.fromkeys(inner.captured))
    return list(captured)


class _Lifter:
    def __init__(self, mod: IRModule, types: ModuleTypes) -> None:
        self.types = types
        self.names = {gv.name_hint for gv in mod.functions}
        self.new_globals: list[tuple[GlobalVar, Function]] = []

    def fresh_global(self, base: str) -> GlobalVar:
        index = 0
        while f"{base}_lifted{index}" in self.names:
            index += 1
        name = f"{base}_lifted{index}"
        self.names.add(name)
        return GlobalVar(name)

    def lift(self, name: str, fn: Function) -> Function:
        """`fn` (a global function) with its closures lifted into `self.new_globals`."""
        order = list(post_order(fn.body))
        literals: dict[int, _Literal] = {}
        let_bound: dict[Var, Function] = {}
        for node in order:
            if isinstance(node, Let) and isinstance(node.value, Function):
                let_bound.setdefault(node.var, node.value)
        rec_of = {id(lit): var for var, lit in let_bound.items()}
        escaping: set[Var] = set()
        for node in order:
            for i, kid in enumerate(children(node)):
                if isinstance(kid, Var) and kid in let_bound:
                    binder = isinstance(node, Let) and i == 0
                    callee = isinstance(node, Call) and i == 0
                    if not (binder or callee):
                        escaping.add(kid)
        if isinstance(fn.body, Var) and fn.body in let_bound:
            escaping.add(fn.body)
        for node in order:
            if isinstance(node, Function) and not node.is_primitive:
                found = free_vars(node)
                rec = rec_of.get(id(node))
                captured = _captured(found, rec, literals, let_bound, escaping)
                recursive = rec if rec is not None and rec in found else None
                literals[id(node)] = _Literal(self.fresh_global(name), captured, recursive)
        if not literals:
            return fn
        rewriter = _Rewriter(self, literals, let_bound, escaping)
        return fn.replace(body=rewriter.visit(fn.body))

    def _typed(self, var: Var) -> Var:
        """A new variable like `var`, annotated with its inferred type if it had none."""
        annotation = var.type_annotation
        if annotation is None:
            annotation = self.types.type_of(var)
        return Var(var.name_hint, annotation)

    def _return_type(self, literal: Function) -> Type | None:
        """`literal`'s return type: its annotation, else the inferred one (which may come
        from the context: `let %f: fn () -> Opt[float32] = fn () { Nothing }`)."""
        if literal.ret_type is not None:
            return literal.ret_type
        inferred = self.types.type_of(literal) if literal in self.types else None
        return inferred.ret_type if isinstance(inferred, FuncType) else None

    def make_global(
        self, fn: Function, lit: _Literal, escaping: set[Var], literal: Function
    ) -> Expr:
        """Add the global for rewritten literal `fn` (`literal` before the rewriting); the
        value that replaces it."""
        params = [self._typed(v) for v in lit.captured]
        own = [self._typed(p) for p in fn.params]
        mapping: dict[Var, Expr] = dict(zip(lit.captured, params))
        mapping.update(zip(fn.params, own))
        body = fn.body
        if lit.rec is not None and lit.rec in escaping:
            inner = _fresh(lit.rec)
            mapping[lit.rec] = inner
            body = Let(inner, _wrapper(fn, lit.gv, lit.captured, own), body)
        body = substitute(body, mapping) if mapping else body
        ret_type = self._return_type(literal)
        global_fn = Function(
            (*params, *own), body, ret_type, fn.type_params, fn.attrs, span=fn.span
        )
        self.new_globals.append((lit.gv, global_fn))
        return _wrapper(fn, lit.gv, lit.captured, own)


class _Rewriter(ExprMutator):
    """Rewrites one global function's body once its literals are known: calls of lifted
    literals call their globals, literals become their wrappers, and the lets of lifted
    literals that do not escape are dropped."""

    def __init__(
        self,
        lifter: _Lifter,
        literals: dict[int, _Literal],
        let_bound: dict[Var, Function],
        escaping: set[Var],
    ) -> None:
        super().__init__()
        self.lifter = lifter
        self.literals = literals
        self.let_bound = let_bound
        self.escaping = escaping

    def rewrite_node(self, node: Expr) -> Expr:
        if (
            isinstance(node, Let)
            and node.var not in self.escaping
            and self.let_bound.get(node.var) is node.value
        ):
            return self.rewritten(node.body)
        new = self.rebuilt(node)
        if isinstance(node, Call):
            lit = self._called(node.op)
            if lit is not None:
                call = cast(Call, new)
                return Call(lit.gv, (*lit.captured, *call.args), call.attrs, call.type_args)
        elif isinstance(node, Function) and id(node) in self.literals:
            literal = self.literals[id(node)]
            return self.lifter.make_global(cast(Function, new), literal, self.escaping, node)
        return new

    def _called(self, op: Expr) -> _Literal | None:
        if isinstance(op, Var) and op in self.let_bound:
            return self.literals.get(id(self.let_bound[op]))
        if isinstance(op, Function):
            return self.literals.get(id(op))
        return None


@module_pass(name="lambda-lift", opt_level=1, options=NoOptions)
def lambda_lift_pass(mod: IRModule, ctx: PassContext, options: NoOptions) -> IRModule:
    """Lift every non-primitive function literal to a global function. The module must
    type-check: the new globals' parameters are annotated with inferred types (see the
    module docstring)."""
    lifter = _Lifter(mod, infer_module(mod))
    out = mod
    for gv, fn in mod.functions.items():
        new = lifter.lift(gv.name_hint, fn)
        if new is not fn:
            out = out.with_function(gv, new)
    for gv, fn in lifter.new_globals:
        out = out.with_function(gv, fn)
    return out
