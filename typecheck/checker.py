"""Constraint generation: one iterative walk over an expression that gives every node a
type (possibly with holes), unifies what must be equal and hands operator calls, tuple
projections and calls of not-yet-known callees to the solver as deferred constraints.

The walk is written as generators driven by `relay.lang.trampoline.run` (no Python
recursion per node); a chain of `let`s is handled by a loop inside one generator, so a
100,000-binding chain costs one stack frame. Nodes are memoized by identity: a shared
subexpression (graph normal form) is visited once.

Scoping: a variable's type is fixed where it is bound (its annotation, or a fresh hole),
before anything that can refer to it is walked: a `let` bound to a function literal sees
its own variable (recursive closures), and the variable of any other `let` gets the type
of its value before the body is walked, so a polymorphic function bound by `let` is
instantiated afresh at every call in the body.

Polymorphism: a call of a function with type parameters instantiates them with fresh
holes (or the call's explicit `type_args`). A global or constructor is instantiated at
every use, also when it is passed as a value (`@map(@id, %l)`, `@map(Some, %l)`), except
when it is bound by `let` (`let %g = @id;`): the variable keeps the polymorphic type and
each call of it instantiates it afresh. A polymorphic value (a `fn[A]` literal, a
variable of polymorphic type) where a function that is not polymorphic is expected is
instantiated by the solver (see `solver.py`), and two branches of an `if` or `match`, one
polymorphic and one not, join at the plain one's type. Each use of a global from outside
the group being inferred also gets fresh copies of its shape variables; copies that
nothing binds resolve to `?`.

Where errors point: a problem with a child of a node is reported at the child as it is
written there (`locate.Use`): for a variable or a value bound in graph form, that is the
text of the use, with a note saying where it is bound.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from ..lang.adt import Constructor
from ..lang.diagnostics import Diagnostic
from ..lang.expr import (
    Call,
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
)
from ..lang.op import Op
from ..lang.span import Span
from ..lang.trampoline import run
from ..lang.types import (
    UNIT_TYPE,
    FuncType,
    IncompleteType,
    RefType,
    ShapeVar,
    TensorType,
    TupleType,
    Type,
    TypeVar,
)
from .constraints import DeferredCall, OpCall, Projection, project
from .locate import Use, binding_notes
from .patterns import bind_pattern, check_exhaustive, plural
from .relations import RELATIONS
from .scope import Scope
from .show import type_text
from .solver import TypeSolver, UnifyError
from .subst import (
    func_type,
    holes_of,
    replace_holes,
    shape_vars,
    substitute,
    tuple_type,
    type_call,
)

BOOL_SCALAR = TensorType((), "bool")

_CONSTANT_TYPES: dict[tuple[tuple[int, ...], object], TensorType] = {}
"""Types of constants by (shape, numpy dtype): building a TensorType checks its dtype."""

Step = Generator[Any, Any, Type]


def _place(at: Span | Use | None) -> tuple[Span | None, tuple[str, ...]]:
    """The span of an error and notes saying where a value used there is bound."""
    if isinstance(at, Use):
        return at.place()
    return at, ()


def _callee_text(e: Expr) -> str:
    if isinstance(e, GlobalVar):
        return f"`@{e.name_hint}`"
    if isinstance(e, Var):
        return f"`%{e.name_hint}`" if e.name_hint else "this variable"
    if isinstance(e, Constructor):
        return f"`{e.name_hint}`"
    if isinstance(e, Function):
        return "this function"
    return "the callee"


class Checker:
    """Generates the constraints of one or more expressions into one solver."""

    def __init__(self, solver: TypeSolver, scope: Scope) -> None:
        self.solver = solver
        self.scope = scope
        self.types: dict[Expr, Type] = {}
        self.type_args: dict[Call, tuple[Type, ...]] = {}
        self.warnings: list[Diagnostic] = []
        self._where: tuple[str, ...] = ()
        self._sections: list[tuple[int, tuple[str, ...]]] = []
        self._foreign: dict[GlobalVar, tuple[FuncType, list[ShapeVar]]] = {}
        self._shared: dict[Expr, Type] = {}
        """Types of globals and constructors: shared by all uses, instantiated per use."""
        self._op_results: dict[tuple[object, ...], tuple[Type, object, list[Type]]] = {}
        """The result types of operator calls whose argument and result types are static,
        by operator, attributes and argument types (by identity): a relation given static
        types decides at once and binds nothing, so a call like an earlier one (a chain
        of the same operator on one shape) gets its result without running it again."""
        self._static_types: dict[Type, Type] = {}

    # ------------------------------------------------------------------ driving
    def check(self, expr: Expr, where: str | None = None) -> Type:
        """Generate the constraints of `expr`; return its (unsolved) type.

        `where` ("@main") is added as a note to diagnostics without a source span.
        """
        self._where = (f"in {where}",) if where else ()
        self._sections.append((len(self.types), self._where))
        found = self.types.get(expr)
        if found is not None:
            return found
        step = self._sub(expr)
        return run(step) if isinstance(step, Generator) else step

    def _sub(self, e: Expr) -> Type | Step:
        """A child's type, or the generator that computes it (for `yield`)."""
        t = self.types.get(e)
        if t is not None:
            return t
        handler = _HANDLERS.get(type(e))
        if handler is None:
            handler = _handler_for(type(e))
        return handler(self, e)

    # ------------------------------------------------------------------ errors
    def notes(self, span: Span | None, *notes: str) -> tuple[str, ...]:
        """`notes`, plus "in @f" when there is no span to show where the problem is."""
        return (*notes, *self._where) if span is None else notes

    def error(self, at: Span | Use | None, message: str, *notes: str) -> IncompleteType:
        """Report an error; return a poisoned hole to stand for the faulty node's type."""
        span, bound = _place(at)
        self.solver.report(Diagnostic("error", message, span, self.notes(span, *notes, *bound)))
        return self.solver.fresh_poisoned()

    def expect(self, expected: Type, found: Type, at: Span | Use | None, what: str) -> bool:
        """Unify, reporting "what: expected E, found F" on failure.

        `at` is where: a span, or a `Use` (a child in its parent) placed only on failure.
        """
        try:
            self.solver.unify(expected, found)
        except UnifyError as exc:
            span, bound = _place(at)
            if isinstance(at, Use):
                bound = (*self._generic_note(at.child), *bound)
            self.solver.report(
                Diagnostic(
                    "error",
                    f"{what}: expected `{type_text(exc.lhs)}`, found `{type_text(exc.rhs)}`",
                    span,
                    self.notes(span, exc.reason, *bound),
                )
            )
            return False
        return True

    def _generic_note(self, e: Expr) -> tuple[str, ...]:
        """For a polymorphic global or constructor, a note showing its type before it was
        instantiated (the message shows the instance)."""
        t = self._shared.get(e)
        if not isinstance(t, FuncType) or not t.type_params:
            return ()
        name = f"@{e.name_hint}" if isinstance(e, GlobalVar) else getattr(e, "name_hint", "")
        return (f"`{name}` has type `{type_text(t)}`; no instance of it fits here",)

    # ------------------------------------------------------------------ leaves
    def _var(self, v: Var) -> Type:
        t = v.type_annotation if v.type_annotation is not None else self.solver.fresh()
        self.types[v] = t
        return t

    def _constant(self, c: Constant) -> Type:
        key = (c.data.shape, c.data.dtype)
        t = _CONSTANT_TYPES.get(key)
        if t is None:
            t = TensorType(c.data.shape, c.dtype)
            if len(_CONSTANT_TYPES) < 4096:
                _CONSTANT_TYPES[key] = t
        self.types[c] = t
        return t

    def _global_var(self, gv: GlobalVar) -> Type:
        sig, dims = self._global_signature(gv)
        self._shared.setdefault(gv, sig)
        return self._value_instance(sig, dims)

    def _generic_value(self, e: GlobalVar | Constructor) -> Type:
        """A global or constructor bound by `let`: its polymorphic type (fresh shape
        variables), instantiated at each use of the variable."""
        if isinstance(e, GlobalVar):
            sig, dims = self._global_signature(e)
            self._shared.setdefault(e, sig)
        else:
            sig, dims = self._constructor_type(e), []
        return substitute(sig, {}, {d: self.solver.fresh_dim(d) for d in dims}) if dims else sig

    def _value_instance(self, t: Type, dims: list[ShapeVar]) -> Type:
        """A global or constructor used as a value (not called): a fresh instance of its
        type parameters and shape variables, so that it can be passed at any type."""
        dim_map = {d: self.solver.fresh_dim(d) for d in dims}
        if isinstance(t, FuncType) and t.type_params:
            mapping: dict[TypeVar, Type] = {p: self.solver.fresh() for p in t.type_params}
            return func_type(
                [substitute(a, mapping, dim_map) for a in t.arg_types],
                substitute(t.ret_type, mapping, dim_map),
            )
        return substitute(t, {}, dim_map) if dim_map else t

    def _global_signature(self, gv: GlobalVar) -> tuple[Type, list[ShapeVar]]:
        """The signature of a global and its shape variables (to copy per call)."""
        canon = self.scope.canon(gv)
        if canon is None:
            return self.error(gv.span, f"`@{gv.name_hint}` is not defined in the module"), []
        local = self.scope.local.get(canon)
        if local is not None:
            return local, []
        memo = self._foreign.get(canon)
        if memo is None:
            sig = self.scope.signatures.get(canon)
            if sig is None:
                return self.error(gv.span, f"the type of `@{gv.name_hint}` is not known"), []
            holes = holes_of(sig)
            if holes:  # its own inference failed: do not report its holes again here
                self.solver.upstream_errors = True
                rehomed = replace_holes(sig, {h: self.solver.fresh_poisoned() for h in holes})
                assert isinstance(rehomed, FuncType)
                sig = rehomed
            memo = (sig, shape_vars(sig))
            self._foreign[canon] = memo
        return memo

    def _op(self, op: Op) -> Type:
        t = self.error(op.span, f"operator `{op.name}` must be called; it is not a value")
        self.types[op] = t
        return t

    def _constructor(self, ctor: Constructor) -> Type:
        return self._value_instance(self._constructor_type(ctor), [])

    def _constructor_type(self, ctor: Constructor) -> Type:
        """The polymorphic type of a constructor (an undefined ADT is reported once)."""
        t = self._shared.get(ctor)
        if t is None:
            data = self.scope.constructor_data(ctor)
            if data is None:
                t = self.unknown_adt(ctor, ctor.span)
            else:
                result = type_call(data.header, data.type_vars)
                t = func_type(ctor.inputs, result, data.type_vars)
            self._shared[ctor] = t
        return t

    def unknown_adt(self, ctor: Constructor, span: Span | None) -> IncompleteType:
        """Report a constructor whose ADT the module does not define."""
        return self.error(
            span,
            f"constructor `{ctor.name_hint}` belongs to `{ctor.belong_to.name_hint}`, "
            "which is not defined in the module",
        )

    # ------------------------------------------------------------------ compound
    def _tuple(self, e: Tuple) -> Step:
        return self._dataflow_steps(e)

    def _tuple_get_item(self, e: TupleGetItem) -> Step:
        return self._dataflow_steps(e)

    def _projection(self, e: TupleGetItem, t: Type) -> Type:
        """The type of `e`, a projection of a value of type `t`."""
        known = self.solver.find(t)
        result: Type
        if isinstance(known, IncompleteType):
            if known in self.solver.poisoned:
                result = self.solver.fresh_poisoned()
            else:
                constraint = Projection(t, e.index, e.span, self.notes(e.span))
                result = self.solver.add(constraint)
        else:
            field_type = project(known, e.index)
            if isinstance(field_type, str):
                result = self.error(e.span, field_type, *binding_notes(e.tuple_value))
            else:
                result = field_type
        self.types[e] = result
        return result

    def _let(self, e: Let) -> Step:
        types = self.types
        chain: list[Let] = []
        node: Expr = e
        while type(node) is Let and node not in types:
            let: Let = node  # type: ignore[assignment]
            var = let.var
            value = let.value
            var_type = types.get(var)
            if var_type is None and isinstance(value, Function):
                var_type = self._var(var)  # in scope in its own value: recursion
            value_type = types.get(value)
            if value_type is None and isinstance(value, GlobalVar | Constructor):
                value_type = self._generic_value(value)  # stays polymorphic in the body
            if value_type is None:
                value_type = yield self._sub(value)
                var_type = types.get(var)  # the value may have used it (ill-scoped, but typed)
            if var_type is None:
                if var.type_annotation is None:
                    types[var] = value_type
                else:
                    types[var] = var.type_annotation
                    self._expect_annotation(var, value_type, value, let)
            elif var_type is not value_type:
                self._expect_annotation(var, value_type, value, let)
            chain.append(let)
            node = let.body
        body_type = types.get(node)
        if body_type is None:
            body_type = yield self._sub(node)
        for let in chain:
            types[let] = body_type
        return body_type

    def _expect_annotation(self, var: Var, value_type: Type, value: Expr, let: Let) -> None:
        name = f"`%{var.name_hint}`" if var.name_hint else "the variable"
        what = f"the value bound to {name} does not have its declared type"
        self.expect(self.types[var], value_type, Use(value, let, "value"), what)

    def _if(self, e: If) -> Step:
        types = self.types
        cond = types.get(e.cond)
        if cond is None:
            cond = yield self._sub(e.cond)
        self.expect(BOOL_SCALAR, cond, Use(e.cond, e, "cond"), "the condition of `if`")
        then_type = types.get(e.true_branch)
        if then_type is None:
            then_type = yield self._sub(e.true_branch)
        else_type = types.get(e.false_branch)
        if else_type is None:
            else_type = yield self._sub(e.false_branch)
        then_type = self._instance_like(then_type, else_type)
        self.expect(
            then_type,
            else_type,
            Use(e.false_branch, e, "else"),
            "the `else` branch has a different type than the `then` branch",
        )
        types[e] = then_type
        return then_type

    def _instance_like(self, t: Type, other: Type) -> Type:
        """`t`, instantiated if it is a polymorphic function and `other` is a function that
        is not: two branches that join must have one type, so the polymorphic one is
        used at the other's type."""
        known = self.solver.find(t)
        if not isinstance(known, FuncType) or not known.type_params:
            return t
        peer = self.solver.find(other)
        if not isinstance(peer, FuncType) or peer.type_params:
            return t
        mapping: dict[TypeVar, Type] = {p: self.solver.fresh() for p in known.type_params}
        return func_type(
            [substitute(a, mapping) for a in known.arg_types],
            substitute(known.ret_type, mapping),
        )

    def _function(self, e: Function) -> Step:
        types = self.types
        params: list[Type] = []
        for p in e.params:
            t = types.get(p)
            if t is None:
                t = self._var(p)
            params.append(t)
        body = types.get(e.body)
        if body is None:
            body = yield self._sub(e.body)
        ret = body
        if e.ret_type is not None:
            ret = e.ret_type
            self.expect(
                ret, body, Use(e.body, e, "body"), "the body of the function has the wrong type"
            )
        result = func_type(params, ret, e.type_params)
        types[e] = result
        return result

    def _ref_create(self, e: RefCreate) -> Step:
        t = self.types.get(e.value)
        if t is None:
            t = yield self._sub(e.value)
        result = RefType(t)
        self.types[e] = result
        return result

    def _ref_read(self, e: RefRead) -> Step:
        t = self.types.get(e.ref)
        if t is None:
            t = yield self._sub(e.ref)
        known = self.solver.find(t)
        result: Type
        if isinstance(known, RefType):
            result = known.value
        else:
            result = self.solver.fresh()
            if not self.expect(RefType(result), t, Use(e.ref, e, "ref"), "`ref_read` of a value"):
                self.solver.poison(result)
        self.types[e] = result
        return result

    def _ref_write(self, e: RefWrite) -> Step:
        types = self.types
        ref = types.get(e.ref)
        if ref is None:
            ref = yield self._sub(e.ref)
        value = types.get(e.value)
        if value is None:
            value = yield self._sub(e.value)
        self.expect(ref, RefType(value), e.span, "`ref_write` of a value of another type")
        types[e] = UNIT_TYPE
        return UNIT_TYPE

    def _match(self, e: Match) -> Step:
        types = self.types
        data = types.get(e.data)
        if data is None:
            data = yield self._sub(e.data)
        result: Type | None = None
        for index, clause in enumerate(e.clauses):
            if not bind_pattern(self, clause.lhs, data, e):
                data = self.solver.fresh_poisoned()  # one message for a wrong scrutinee
            arm = types.get(clause.rhs)
            if arm is None:
                arm = yield self._sub(clause.rhs)
            if result is None:
                result = arm
            else:
                result = self._instance_like(result, arm)
                self.expect(
                    result,
                    arm,
                    Use(clause.rhs, e, "arm", index),
                    "this `match` arm has a different type than the first arm",
                )
        if result is None:
            result = self.solver.fresh()
        if e.complete:
            check_exhaustive(self, e)
        types[e] = result
        return result

    # ------------------------------------------------------------------ calls
    def _call(self, e: Call) -> Type | Step:
        # Fast path (A-normal form): every argument is typed already, no generator needed.
        if not isinstance(e.op, Op | Constructor | GlobalVar):
            return self._call_steps(e)
        get = self.types.get
        args = [get(a) for a in e.args]
        if any(a is None for a in args):
            if not all(type(a) in _LEAF_HANDLERS for a, t in zip(e.args, args) if t is None):
                return self._dataflow_steps(e)
            # untyped leaves (constants, variables): typed at once, left to right
            for i, (a, t) in enumerate(zip(e.args, args)):
                if t is None:
                    args[i] = _LEAF_HANDLERS[type(a)](self, a)
        return self._call_typed(e, args)  # type: ignore[arg-type]

    def _dataflow_steps(self, root: Call | Tuple | TupleGetItem) -> Step:
        """The type of `root`, a dataflow node (a call of an operator, constructor or
        global, a tuple, a projection), typing the dataflow nodes below it on an explicit
        stack of frames (graph normal form: a chain of 100,000 nested calls is one
        generator, not one per node). Children are typed left to right, depth first, as
        the handlers would (other nodes go to their handlers), so the result, the holes
        made and the errors reported are the same."""
        types = self.types
        # frame: the node, its children, how many were typed, their types
        frames: list[tuple[Expr, tuple[Expr, ...], list[Type]]] = [
            (root, _dataflow_children(root), [])
        ]
        while True:
            node, kids, got = frames[-1]
            if len(got) < len(kids):
                kid = kids[len(got)]
                t = types.get(kid)
                if t is None:
                    leaf = _LEAF_HANDLERS.get(type(kid))
                    if leaf is not None:
                        t = leaf(self, kid)
                    elif _is_dataflow(kid):
                        frames.append((kid, _dataflow_children(kid), []))
                        continue
                    else:
                        t = yield self._sub(kid)
                got.append(t)
                continue
            frames.pop()
            result = self._dataflow_type(node, got)
            if not frames:
                return result
            frames[-1][2].append(result)

    def _dataflow_type(self, e: Expr, children: list[Type]) -> Type:
        """The type of a dataflow node from the types of its `_dataflow_children`."""
        if type(e) is Call:
            return self._call_typed(e, children)
        if type(e) is Tuple:
            result = tuple_type(children)
            self.types[e] = result
            return result
        assert type(e) is TupleGetItem
        return self._projection(e, children[0])

    def _call_steps(self, e: Call) -> Step:
        types = self.types
        args: list[Type] = []
        for a in e.args:
            t = types.get(a)
            if t is None:
                t = yield self._sub(a)
            args.append(t)
        callee = e.op
        if isinstance(callee, Op | Constructor | GlobalVar):
            return self._call_typed(e, args)
        f = types.get(callee)
        if f is None:
            f = yield self._sub(callee)
        result = self._apply(e, f, args)
        types[e] = result
        return result

    def _call_typed(self, e: Call, args: list[Type]) -> Type:
        callee = e.op
        result: Type
        if type(callee) is Op:
            result = self._op_call(e, callee, args)
        elif isinstance(callee, Constructor):
            result = self._constructor_call(e, callee, args)
        else:
            assert isinstance(callee, GlobalVar)
            sig, dims = self._global_signature(callee)
            self._shared.setdefault(callee, sig)
            if dims:  # shape polymorphism: fresh sizes at each call
                sig = substitute(sig, {}, {d: self.solver.fresh_dim(d) for d in dims})
            result = self._apply(e, sig, args)
        self.types[e] = result
        return result

    def _op_call(self, e: Call, op: Op, args: list[Type]) -> Type:
        rel = RELATIONS.get(op)
        if rel is None:
            return self.error(e.span, f"operator `{op.name}` has no type relation")
        if op.num_inputs >= 0 and len(args) != op.num_inputs:
            names = f" ({', '.join(op.arg_names)})" if op.arg_names else ""
            return self.error(
                e.span,
                f"`{op.name}` takes {plural(op.num_inputs, 'argument')}{names}, "
                f"but {len(args)} {'was' if len(args) == 1 else 'were'} given",
            )
        self.type_args[e] = tuple(args)
        attrs = e.attrs
        key = (op, id(attrs), *map(id, args))
        known = self._op_results.get(key)
        if known is not None:
            return known[0]
        result = self.solver.add(OpCall(op, rel, attrs, args, e.span, self.notes(e.span)))
        if _static(result) and all(map(_static, args)):
            # one object per static type, so that the next call of a chain hits
            result = self._static_types.setdefault(result, result)
            self._op_results[key] = (result, attrs, args)  # keeps the ids in `key` valid
        return result

    def _constructor_call(self, e: Call, ctor: Constructor, args: list[Type]) -> Type:
        self._constructor_type(ctor)  # reports an undefined ADT once
        data = self.scope.constructor_data(ctor)
        if data is None:
            return self.solver.fresh_poisoned()
        inst = self._instantiate(e, f"`{ctor.name_hint}`", data.type_vars)
        mapping: dict[TypeVar, Type] = dict(zip(data.type_vars, inst))
        inputs = [substitute(t, mapping) for t in ctor.inputs]
        self._check_args(e, f"`{ctor.name_hint}`", inputs, args)
        return type_call(data.header, inst)

    def _instantiate(self, e: Call, what: str, params: tuple[TypeVar, ...]) -> list[Type]:
        """Type arguments for a call: the explicit ones, then fresh holes."""
        explicit = list(e.type_args)
        if len(explicit) > len(params):
            self.error(
                e.span,
                f"{what} takes {plural(len(params), 'type argument')}, "
                f"but {len(explicit)} were given",
            )
            explicit = explicit[: len(params)]
        inst = explicit + [self.solver.fresh() for _ in params[len(explicit) :]]
        if params:
            self.type_args[e] = tuple(inst)
        return inst

    def _check_args(self, e: Call, what: str, params: list[Type], args: list[Type]) -> None:
        if len(params) != len(args):
            self.error(
                e.span,
                f"{what} takes {plural(len(params), 'argument')}, "
                f"but {len(args)} {'was' if len(args) == 1 else 'were'} given",
            )
        for i, (param, arg, node) in enumerate(zip(params, args, e.args)):
            self.expect(param, arg, Use(node, e, "arg", i), f"argument {i + 1} of {what}")

    def _apply(self, e: Call, callee_type: Type, args: list[Type]) -> Type:
        known = self.solver.find(callee_type)
        if isinstance(known, IncompleteType):
            if known in self.solver.poisoned:
                return self.solver.fresh_poisoned()
            where = self._where

            def apply(t: Type) -> Type:
                saved, self._where = self._where, where
                try:
                    return self._apply_known(e, t, args)
                finally:
                    self._where = saved

            return self.solver.add(
                DeferredCall(callee_type, args, apply, e.span, self.notes(e.span))
            )
        return self._apply_known(e, known, args)

    def _apply_known(self, e: Call, f: Type, args: list[Type]) -> Type:
        what = _callee_text(e.op)
        if not isinstance(f, FuncType):
            shown = type_text(self.solver.resolve(f))
            return self.error(
                e.span,
                f"cannot call {what}: it has type `{shown}`, not a function",
                *binding_notes(e.op),
            )
        params = list(f.arg_types)
        ret = f.ret_type
        if f.type_params:
            inst = self._instantiate(e, what, f.type_params)
            mapping: dict[TypeVar, Type] = dict(zip(f.type_params, inst))
            params = [substitute(p, mapping) for p in params]
            ret = substitute(ret, mapping)
        elif e.type_args:
            self.error(e.span, f"{what} takes no type arguments")
        self._check_args(e, what, params, args)
        return ret

    # ------------------------------------------------------------------ results
    def finish(self) -> tuple[dict[Expr, Type], dict[Call, tuple[Type, ...]]]:
        """Solve, then resolve every node's type; report what stays unknown."""
        solver = self.solver
        solver.solve()
        reported: set[IncompleteType] = set()
        unknown: list[tuple[Expr, Type, list[IncompleteType], tuple[str, ...]]] = []
        table: dict[Expr, Type] = {}
        sections = self._sections
        section = 0
        where: tuple[str, ...] = ()
        full_resolve = solver.resolve
        plain = solver.tensors_resolved()  # tensor types resolve to themselves

        def resolve(t: Type) -> Type:
            return t if plain and type(t) is TensorType else full_resolve(t)

        boundaries = [start for start, _ in sections] + [len(self.types)]
        for index, (e, t) in enumerate(self.types.items()):
            if index == boundaries[section]:
                while index == boundaries[section] and section < len(sections):
                    where = sections[section][1]
                    section += 1
            r = resolve(t)
            if type(r) is not TensorType:
                if type(e) is Op:
                    continue
                holes = holes_of(r)
                if holes:
                    unknown.append((e, r, holes, where))
            table[e] = r
        for e, t in self._shared.items():
            table[e] = resolve(t)
        # Report each unknown once, preferably at a variable that is nothing but unknown;
        # holes poisoned by an error (or by an unknown reported here) are not reported.
        unknown.sort(key=_report_order)
        for e, r, holes, where in unknown:
            excuse_poisoned = bool(solver.errors) or solver.upstream_errors
            new = [
                h
                for h in holes
                if h not in reported and not (excuse_poisoned and h in solver.poisoned)
            ]
            reported.update(holes)
            if new:
                self._report_unknown(e, r, where)
        type_args = {call: tuple(map(resolve, args)) for call, args in self.type_args.items()}
        return table, type_args

    def _report_unknown(self, e: Expr, t: Type, where: tuple[str, ...]) -> None:
        if isinstance(e, Var):
            what = f"`%{e.name_hint}`" if e.name_hint else "this variable"
        else:
            what = "this expression"
        notes: list[str] = []
        if not isinstance(t, IncompleteType):
            notes.append(f"it is only known to be `{type_text(t)}`")
        if isinstance(e, Var) and e.type_annotation is None:
            notes.append("add a type annotation")
        if e.span is None:
            notes.extend(where)
        self.solver.report(
            Diagnostic("error", f"cannot infer the type of {what}", e.span, tuple(notes))
        )


def _is_dataflow(e: Expr) -> bool:
    """Whether `_dataflow_steps` types `e` itself (its handler would do the same)."""
    cls = type(e)
    if cls is Call:
        return type(e.op) in (Op, Constructor, GlobalVar)  # type: ignore[attr-defined]
    return cls is Tuple or cls is TupleGetItem


def _dataflow_children(e: Expr) -> tuple[Expr, ...]:
    cls = type(e)
    if cls is Call:
        return e.args  # type: ignore[attr-defined, no-any-return]
    if cls is Tuple:
        return e.fields  # type: ignore[attr-defined, no-any-return]
    return (e.tuple_value,)  # type: ignore[attr-defined]


def _static(t: Type) -> bool:
    """Whether `t` is a tensor type of static shape, or a tuple of such types."""
    if type(t) is TensorType:
        return all(type(d) is int for d in t.shape)
    if type(t) is TupleType:
        return all(map(_static, t.fields))  # type: ignore[attr-defined]
    return False


def _report_order(item: tuple[Expr, Type, list[IncompleteType], tuple[str, ...]]) -> int:
    e, t = item[0], item[1]
    if isinstance(t, IncompleteType):
        return 0 if isinstance(e, Var) else 1
    return 2


_HANDLERS: dict[type, Callable[[Checker, Any], Type | Step]] = {
    Var: Checker._var,
    Constant: Checker._constant,
    GlobalVar: Checker._global_var,
    Op: Checker._op,
    Constructor: Checker._constructor,
    Tuple: Checker._tuple,
    TupleGetItem: Checker._tuple_get_item,
    Call: Checker._call,
    Let: Checker._let,
    If: Checker._if,
    Function: Checker._function,
    Match: Checker._match,
    RefCreate: Checker._ref_create,
    RefRead: Checker._ref_read,
    RefWrite: Checker._ref_write,
}


_LEAF_HANDLERS: dict[type, Callable[[Checker, Any], Type]] = {
    Var: Checker._var,
    Constant: Checker._constant,
    GlobalVar: Checker._global_var,
    Constructor: Checker._constructor,
}
"""The handlers that return a type at once (leaves), by exact node class."""


def _handler_for(cls: type) -> Callable[[Checker, Any], Type | Step]:
    for base in cls.__mro__:
        if base in _HANDLERS:
            _HANDLERS[cls] = _HANDLERS[base]
            return _HANDLERS[base]
    raise TypeError(f"type inference: unhandled node class {cls.__name__}")
