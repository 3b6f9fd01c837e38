"""The online partial evaluator: the interpreter's rules run on partially static values.

Evaluation follows the reference interpreter (strict, left to right) over a program in
A-normal form, but on `PValue`s: what is static is computed now, what is not is emitted as
residual code into the current `Scope`. In short:

* an operator whose arguments are all static tensors is run with its reference
  implementation (never the effectful or random ones); otherwise the call is emitted;
* tuples, constructor calls and function literals build static values and emit nothing;
  they become residual code (`reify`) only where a dynamic context needs them;
* `if` and `match` on a static scrutinee continue in the chosen branch; otherwise every
  branch is evaluated in a scope of its own, with a copy of the store, and the residual
  `if` / `match` is emitted;
* a call of a known function (a global or a closure) is *unfolded*, its body evaluated
  with the arguments bound, while fuel lasts and unless it recurses without progress;
  otherwise it stays a residual call, which forgets the store. With memoization, a global
  called with static data that is not unfolded is specialized to that data: one residual
  global per function and static arguments, shared by every such call;
* references are created, read and written in the residual program exactly as in the
  source, so no effect is duplicated or dropped; the store only lets reads see values
  known at compile time.

Every rule is a generator driven by `lang.trampoline.run`, so neither long let chains
nor deep unfolding grow the Python stack.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

import numpy as np

from ...backend.runtime.op_impls import IMPLS
from ...lang import trampoline
from ...lang.adt import Constructor
from ...lang.dtype import dtype_of_array
from ...lang.expr import (
    Call,
    Clause,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    pattern_vars,
    replace_pattern_vars,
)
from ...lang.module import IRModule
from ...lang.op import Op
from ...lang.types import Type
from ..fold_constant import NEVER_FOLDED
from .residual import Scope
from .store import Store
from .values import (
    Env,
    PValue,
    SClosure,
    SCtor,
    SRef,
    STuple,
    closed_skeleton,
    closed_type,
    dynamic,
    size_measure,
    unit,
    value_type,
)

Step = Generator[Any, Any, Any]


class Frame:
    """Where evaluation happens: the residual scope, the store and the environment."""

    __slots__ = ("env", "scope", "store")

    def __init__(self, scope: Scope, store: Store, env: Env) -> None:
        self.scope, self.store, self.env = scope, store, env

    def with_env(self, env: Env) -> Frame:
        """The same scope and store with another environment."""
        return Frame(self.scope, self.store, env)


_YES, _NO, _UNKNOWN = "yes", "no", "unknown"


class PartialEvaluator:
    """Partially evaluates the global functions of one module (in A-normal form, each
    variable bound once).

    `types` are the inferred types of the module's nodes (used to annotate residual
    bindings where type inference needs it). `fuel` bounds the number of calls unfolded
    while evaluating one global; with `memo`, calls not unfolded are specialized to their
    static arguments once per function and arguments (`specializations`).
    """

    def __init__(
        self,
        mod: IRModule,
        types: Mapping[Expr, Type],
        fuel: int,
        memo: bool,
        max_elements: int,
    ) -> None:
        self.mod = mod
        self.types = types
        self.fuel_per_global = fuel
        self.fuel = fuel
        self.memo = memo
        self.max_elements = max_elements
        self.active: list[tuple[Function, list[PValue]]] = []
        self.globals: dict[GlobalVar, PValue] = {}
        self.next_ref = 0
        self.memo_table: dict[tuple[object, ...], GlobalVar] = {}
        self.specializations: dict[GlobalVar, Function] = {}
        self.unfolded = 0

    # ------------------------------------------------------------------ entry point
    def residual_global(self, fn: Function) -> Function:
        """`fn` (a global function) partially evaluated with its parameters dynamic."""
        self.fuel = self.fuel_per_global
        scope = Scope()
        params = {p: dynamic(p, scope, self.type_of(p)) for p in fn.params}
        frame = Frame(scope, Store(), Env(params))
        body = trampoline.run(self._body(fn, list(params.values()), frame))
        return fn.replace(body=body)

    def _body(self, fn: Function, args: list[PValue], frame: Frame) -> Step:
        """The residual body of `fn` evaluated in `frame` (whose scope it fills)."""
        self.active.append((fn, args))
        try:
            result = yield self.eval(fn.body, frame)
            atom = yield self.reify(result, frame)
        finally:
            self.active.pop()
        return frame.scope.finish(atom)

    # ------------------------------------------------------------------ helpers
    def type_of(self, node: Expr) -> Type | None:
        """The closed type of an original node, if known (else its annotation)."""
        found = self.types.get(node)
        if found is None:
            found = getattr(node, "type_annotation", None)
        return closed_type(found)

    def global_value(self, gv: GlobalVar) -> PValue:
        """The value of a global: a known function (or, for a fused kernel, just its name)."""
        found = self.globals.get(gv)
        if found is None:
            fn = self.mod.functions.get(gv)
            if fn is None or fn.is_primitive:
                found = dynamic(gv, None)
            else:
                found = PValue(SClosure(fn, None, gv), gv, None)
            self.globals[gv] = found
        return found

    def operand(self, expr: Expr, frame: Frame) -> PValue | None:
        """The value of an atom (None if `expr` is not one)."""
        cls = type(expr)
        if cls is Var:
            found = frame.env.lookup(expr)  # type: ignore[arg-type]
            return found if found is not None else dynamic(expr, None, self.type_of(expr))
        if cls is Constant:
            return PValue(expr.data, expr, None)  # type: ignore[attr-defined]
        if cls is GlobalVar:
            return self.global_value(expr)  # type: ignore[arg-type]
        if cls is Op or cls is Constructor:
            return PValue(expr, expr, None)
        return None

    def value(self, expr: Expr, frame: Frame) -> Step:
        """The value of any expression (atoms without a generator of their own)."""
        found = self.operand(expr, frame)
        if found is not None:
            return found
        return (yield self.eval(expr, frame))

    # ------------------------------------------------------------------ evaluation
    def eval(self, expr: Expr, frame: Frame) -> Step:
        """Evaluate `expr`, emitting residual code into `frame.scope`; its `PValue`."""
        while isinstance(expr, Let):  # a let chain of any length in this one generator
            found = self.operand(expr.value, frame)
            if found is None:
                found = yield self.step(expr.value, frame, expr.var.name_hint)
            frame.env.vars[expr.var] = found
            expr = expr.body
        found = self.operand(expr, frame)
        if found is not None:
            return found
        return (yield self.step(expr, frame, "x"))

    def step(self, expr: Expr, frame: Frame, hint: str) -> Step:
        """The evaluation of a non-atomic, non-let expression (a generator)."""
        if isinstance(expr, Call):
            return self.call(expr, frame, hint)
        if isinstance(expr, Function | Tuple):
            return self.literal(expr, frame)
        if isinstance(expr, TupleGetItem):
            return self.project(expr, frame, hint)
        if isinstance(expr, If):
            return self.if_(expr, frame, hint)
        if isinstance(expr, Match):
            return self.match(expr, frame, hint)
        if isinstance(expr, RefCreate | RefRead | RefWrite):
            return self.reference(expr, frame, hint)
        if isinstance(expr, Let):
            return self.eval(expr, frame)
        raise TypeError(f"partial evaluation: unhandled {type(expr).__name__}")

    def literal(self, expr: Function | Tuple, frame: Frame) -> Step:
        """A function literal (a closure over the environment) or a tuple: static."""
        if isinstance(expr, Function):
            if expr.is_primitive:
                return dynamic(expr, None)
            return PValue(SClosure(expr, frame.env), type=self.type_of(expr))
        fields = []
        for f in expr.fields:
            fields.append(self.operand(f, frame) or (yield self.eval(f, frame)))
        return PValue(STuple(tuple(fields)), type=self.type_of(expr))

    def emit_dynamic(
        self,
        node: Expr,
        value: Expr,
        frame: Frame,
        hint: str,
        *,
        impure: bool = False,
        inner: tuple[Scope, ...] = (),
    ) -> PValue:
        """Bind `value` (residual code for the original `node`) in the current scope."""
        t = self.type_of(node)
        var = frame.scope.emit(value, hint, t, impure=impure, inner=inner)
        return dynamic(var, frame.scope, t)

    def project(self, expr: TupleGetItem, frame: Frame, hint: str) -> Step:
        """`t.i`: the field of a static tuple, else a residual projection."""
        tup = yield self.value(expr.tuple_value, frame)
        if isinstance(tup.static, STuple) and 0 <= expr.index < len(tup.static.fields):
            return tup.static.fields[expr.index]
        atom = yield self.reify(tup, frame)
        return self.emit_dynamic(expr, expr.replace(tuple_value=atom), frame, hint)

    # ------------------------------------------------------------------ calls
    def call(self, expr: Call, frame: Frame, hint: str) -> Step:
        """A call of an operator, constructor, known function or unknown value."""
        operand = self.operand
        callee = operand(expr.op, frame) or (yield self.eval(expr.op, frame))
        args: list[PValue] = []
        for arg in expr.args:
            args.append(operand(arg, frame) or (yield self.eval(arg, frame)))
        static = callee.static
        if isinstance(static, Op):
            return (yield self.op_call(expr, static, args, frame, hint))
        if isinstance(static, Constructor) and len(args) == len(static.inputs):
            return PValue(SCtor(static, tuple(args)), type=self.type_of(expr))
        if isinstance(static, SClosure) and len(args) == len(static.function.params):
            if self.may_unfold(static.function, args):
                return (yield self.unfold(static, args, frame))
            if self.memo and static.global_var is not None:
                special = yield self.specialized_call(static, args, expr, frame, hint)
                if special is not None:
                    return special
        return (yield self.residual_call(expr, callee, args, frame, hint))

    def residual_call(
        self, expr: Call, callee: PValue, args: list[PValue], frame: Frame, hint: str
    ) -> Step:
        """Emit the call as it is; the callee may write any reference."""
        op = yield self.reify(callee, frame)
        atoms = []
        for arg in args:
            atoms.append((yield self.reify(arg, frame)))
        frame.store.forget()
        residual = expr.replace(op=op, args=tuple(atoms))
        return self.emit_dynamic(expr, residual, frame, hint, impure=True)

    def op_call(self, expr: Call, op: Op, args: list[PValue], frame: Frame, hint: str) -> Step:
        """Run the operator now if its arguments are static tensors, else emit the call."""
        if op.name not in NEVER_FOLDED:
            folded = self.fold(op, args, expr)
            if folded is not None:
                return folded
        atoms = []
        for arg in args:
            atoms.append((yield self.reify(arg, frame)))
        residual = expr.replace(args=tuple(atoms))
        return self.emit_dynamic(expr, residual, frame, hint, impure=op.name in NEVER_FOLDED)

    def fold(self, op: Op, args: list[PValue], expr: Call) -> PValue | None:
        """The static result of `op` on static tensor arguments, if it can be computed."""
        values = [_tensor_value(a) for a in args]
        impl = IMPLS.get(op)
        if impl is None or any(v is None for v in values):
            return None
        try:
            with np.errstate(all="ignore"):
                result = impl(values, expr.attrs)
        except Exception:
            return None
        return _static_result(result, self.max_elements)

    def may_unfold(self, fn: Function, args: list[PValue]) -> bool:
        """Whether a call of `fn` may be unfolded: fuel remains, and `fn` is not being
        unfolded already or some argument's static data shrank since (progress)."""
        if self.fuel <= 0 or fn.is_primitive:
            return False
        for active, previous in reversed(self.active):
            if active is fn:
                return _progress(previous, args)
        return True

    def unfold(self, closure: SClosure, args: list[PValue], frame: Frame) -> Step:
        """Evaluate the body of a known function on `args`, inline."""
        self.fuel -= 1
        self.unfolded += 1
        fn = closure.function
        env = Env(dict(zip(fn.params, args)), closure.env)
        self.active.append((fn, args))
        try:
            result = yield self.eval(fn.body, frame.with_env(env))
        finally:
            self.active.pop()
        return result

    def specialized_call(
        self, closure: SClosure, args: list[PValue], expr: Call, frame: Frame, hint: str
    ) -> Step:
        """A call of the specialization of a global to the static data of `args` (made
        on first use), or None when the arguments carry no such data."""
        skeleton = closed_skeleton(args, self.generalized(closure.function, args))
        if skeleton is None:
            return None
        key, holes = skeleton
        if any(value_type(h) is None for h in holes):
            return None  # a parameter of the specialization would have no known type
        assert closure.global_var is not None
        full_key = (id(closure.global_var), *key)
        gv = self.memo_table.get(full_key)
        if gv is None:
            gv = GlobalVar(f"{closure.global_var.name_hint}_{len(self.specializations) + 1}")
            self.memo_table[full_key] = gv
            yield self.specialize(gv, closure, args, holes)
        atoms = []
        for hole in holes:
            atoms.append((yield self.reify(hole, frame)))
        frame.store.forget()
        residual = Call(gv, atoms, span=expr.span)
        return self.emit_dynamic(expr, residual, frame, hint, impure=True)

    def generalized(self, fn: Function, args: list[PValue]) -> set[int]:
        """The positions of `args` whose static data differs from the one of the
        enclosing activation of `fn`: they are passed as dynamic (an accumulator that
        changes at each recursive call would otherwise make a specialization each time)."""
        for active, previous in reversed(self.active):
            if active is fn:
                return {
                    i
                    for i, (old, new) in enumerate(zip(previous, args))
                    if not _same_static(old, new)
                }
        return set()

    def specialize(
        self, gv: GlobalVar, closure: SClosure, args: list[PValue], holes: list[PValue]
    ) -> Step:
        """Make the global `gv`: `closure`'s body on `args` with each dynamic part
        (`holes`) a parameter."""
        fn = closure.function
        scope = Scope()
        params = [Var(_hint(h), value_type(h)) for h in holes]
        fresh = {id(h): dynamic(p, scope, p.type_annotation) for h, p in zip(holes, params)}
        rebuilt = [_replace_holes(a, fresh) for a in args]
        self.specializations[gv] = fn  # placeholder: the name exists while the body is made
        frame = Frame(scope, Store(), Env(dict(zip(fn.params, rebuilt)), closure.env))
        body = yield self._body(fn, rebuilt, frame)
        ret = closed_type(fn.ret_type)
        self.specializations[gv] = Function(params, body, ret, span=fn.span)

    # ------------------------------------------------------------------ control flow
    def if_(self, expr: If, frame: Frame, hint: str) -> Step:
        """A static condition picks its branch; else both are specialized."""
        cond = yield self.value(expr.cond, frame)
        if isinstance(cond.static, np.ndarray) and cond.static.ndim == 0:
            branch = expr.true_branch if bool(cond.static) else expr.false_branch
            return (yield self.eval(branch, frame))
        atom = yield self.reify(cond, frame)
        then = yield self.branch(expr.true_branch, frame, {})
        other = yield self.branch(expr.false_branch, frame, {})
        frame.store.join([then[1], other[1]])
        residual = expr.replace(cond=atom, true_branch=then[0], false_branch=other[0])
        return self.emit_dynamic(expr, residual, frame, hint, inner=(then[2], other[2]))

    def branch(self, body: Expr, frame: Frame, bindings: dict[Var, PValue]) -> Step:
        """A branch that may or may not run: its residual block and its store."""
        scope = Scope(frame.scope)
        store = frame.store.copy()
        inner = Frame(scope, store, frame.env)
        for bound in bindings.values():
            bound.scope = scope  # pattern variables are bound in the clause's block
        frame.env.vars.update(bindings)
        result = yield self.eval(body, inner)
        atom = yield self.reify(result, inner)
        return scope.finish(atom), store, scope

    def match(self, expr: Match, frame: Frame, hint: str) -> Step:
        """A scrutinee static enough to pick a clause continues there; else every clause
        is specialized and the residual `match` emitted."""
        data = yield self.value(expr.data, frame)
        for clause in expr.clauses:
            outcome, bindings = _match_static(clause.lhs, data)
            if outcome == _NO:
                continue
            if outcome == _YES:
                frame.env.vars.update(bindings)
                return (yield self.eval(clause.rhs, frame))
            break
        atom = yield self.reify(data, frame)
        clauses: list[Clause] = []
        stores: list[Store] = []
        blocks: list[Scope] = []
        for clause in expr.clauses:
            olds = pattern_vars(clause.lhs)
            news = {v: Var(v.name_hint, v.type_annotation) for v in olds}
            scope_vars = {v: dynamic(news[v], None, self.type_of(v)) for v in olds}
            lhs = replace_pattern_vars(clause.lhs, news) if news else clause.lhs
            body, store, block = yield self.branch(clause.rhs, frame, scope_vars)
            clauses.append(Clause(lhs, body))
            stores.append(store)
            blocks.append(block)
        frame.store.join(stores)
        residual = expr.replace(data=atom, clauses=tuple(clauses))
        # an incomplete match may fail at run time: kept even when its value is unused
        impure = not expr.complete
        return self.emit_dynamic(expr, residual, frame, hint, impure=impure, inner=tuple(blocks))

    # ------------------------------------------------------------------ references
    def reference(self, expr: Expr, frame: Frame, hint: str) -> Step:
        """`ref`, `ref_read` and `ref_write`: always in the residual program; the store
        remembers what is known of the cells."""
        store = frame.store
        if isinstance(expr, RefCreate):
            content = yield self.value(expr.value, frame)
            atom = yield self.reify(content, frame)
            made = self.emit_dynamic(expr, expr.replace(value=atom), frame, hint)
            self.next_ref += 1
            made.static = SRef(self.next_ref)
            store.write(self.next_ref, content)
            return made
        if isinstance(expr, RefRead):
            ref = yield self.value(expr.ref, frame)
            if isinstance(ref.static, SRef):
                known = store.read(ref.static.ref_id)
                if known is not None:
                    return known
            atom = yield self.reify(ref, frame)
            read = self.emit_dynamic(expr, expr.replace(ref=atom), frame, hint)
            if isinstance(ref.static, SRef):
                store.write(ref.static.ref_id, read)
            return read
        assert isinstance(expr, RefWrite)
        ref = yield self.value(expr.ref, frame)
        content = yield self.value(expr.value, frame)
        ref_atom = yield self.reify(ref, frame)
        content_atom = yield self.reify(content, frame)
        frame.scope.emit(expr.replace(ref=ref_atom, value=content_atom), hint or "u", impure=True)
        if isinstance(ref.static, SRef):
            store.write(ref.static.ref_id, content)
        else:
            store.forget()  # it may be any cell
        return unit()

    # ------------------------------------------------------------------ residualization
    def reify(self, value: PValue, frame: Frame) -> Step:
        """An atom computing `value` in the current scope, emitting what it needs."""
        scope = frame.scope
        if value.atom is not None and scope.sees(value.scope):
            return value.atom
        static = value.static
        atom: Expr
        if isinstance(static, np.ndarray):
            value.atom, value.scope = Constant(static), None
            return value.atom
        if isinstance(static, STuple):
            fields = []
            for f in static.fields:
                fields.append((yield self.reify(f, frame)))
            atom = scope.emit(Tuple(fields), "t", value.type)
        elif isinstance(static, SCtor):
            fields = []
            for f in static.fields:
                fields.append((yield self.reify(f, frame)))
            atom = scope.emit(Call(static.constructor, fields), "c", value.type)
        elif isinstance(static, SClosure):
            if static.global_var is not None:
                return static.global_var
            atom = yield self.residual_function(value, static, frame)
        elif isinstance(static, Op | Constructor):
            return static
        else:
            raise RuntimeError("partial evaluation: a dynamic value is used out of its scope")
        value.atom, value.scope = atom, scope
        return atom

    def residual_function(self, value: PValue, closure: SClosure, frame: Frame) -> Step:
        """Emit the function literal of `closure` specialized to its environment (its
        parameters dynamic); the variable bound to it."""
        fn = closure.function
        var = Var("f", value.type)
        value.atom, value.scope = var, frame.scope  # a recursive closure calls `var`
        scope = Scope(frame.scope)
        params = [
            Var(p.name_hint, closed_type(p.type_annotation) or self.type_of(p)) for p in fn.params
        ]
        bound = {p: dynamic(q, scope, q.type_annotation) for p, q in zip(fn.params, params)}
        inner = Frame(scope, Store(), Env(bound, closure.env))
        body = yield self._body(fn, list(bound.values()), inner)
        literal = Function(params, body, closed_type(fn.ret_type), attrs=fn.attrs, span=fn.span)
        frame.scope.bind(var, literal, body=scope)
        return var


# --------------------------------------------------------------------------- helpers


def _hint(value: PValue) -> str:
    atom = value.atom
    return atom.name_hint if isinstance(atom, Var) and atom.name_hint else "p"


def _tensor_value(value: PValue) -> Any:
    """The static tensor (or tuple of static tensors) of `value`, else None."""
    static = value.static
    if isinstance(static, np.ndarray):
        return static
    if isinstance(static, STuple):
        fields = [_tensor_value(f) for f in static.fields]  # operator tuples are shallow
        return None if any(f is None for f in fields) else tuple(fields)
    return None


def _static_result(result: Any, max_elements: int) -> PValue | None:
    """An operator's result as a static value, if it is tensors of supported dtypes
    and at most `max_elements` elements in all."""
    if isinstance(result, tuple):
        fields: list[PValue] = []
        total = 0
        for item in result:
            made = _static_result(item, max_elements)
            if made is None:
                return None
            fields.append(made)
            if isinstance(made.static, np.ndarray):
                total += int(made.static.size)
        return PValue(STuple(tuple(fields))) if total <= max_elements else None
    if not isinstance(result, np.ndarray | np.generic):
        return None
    array = np.asarray(result)
    if array.size > max_elements:
        return None
    try:
        dtype_of_array(array)
    except ValueError:
        return None
    array = array.copy()
    array.setflags(write=False)
    return PValue(array)


def _same_static(old: PValue, new: PValue) -> bool:
    """Whether two values carry the same static data (their dynamic parts aside)."""
    before, after = closed_skeleton([old]), closed_skeleton([new])
    if before is None or after is None:
        return before is None and after is None
    return before[0] == after[0]


def _progress(previous: list[PValue], current: list[PValue]) -> bool:
    """Whether some argument's static data is smaller than in the enclosing unfolding."""
    for old, new in zip(previous, current):
        before, after = size_measure(old), size_measure(new)
        if before is not None and after is not None and after < before:
            return True
    return False


def _match_static(pattern: Pattern, value: PValue) -> tuple[str, dict[Var, PValue]]:
    """Whether `value` surely matches `pattern` (with the bindings), surely does not, or
    cannot be decided at compile time."""
    bindings: dict[Var, PValue] = {}
    unknown = False
    stack: list[tuple[Pattern, PValue]] = [(pattern, value)]
    while stack:
        p, v = stack.pop()
        if isinstance(p, PatternVar):
            bindings[p.var] = v
        elif isinstance(p, PatternWildcard):
            continue
        elif isinstance(p, PatternConstructor):
            static = v.static
            if not isinstance(static, SCtor):
                unknown = True
            elif static.constructor is not p.constructor:
                return _NO, {}
            elif len(static.fields) == len(p.patterns):
                stack.extend(zip(p.patterns, static.fields))
            else:
                return _NO, {}
        elif isinstance(p, PatternTuple):
            static = v.static
            if not isinstance(static, STuple):
                unknown = True
            elif len(static.fields) == len(p.patterns):
                stack.extend(zip(p.patterns, static.fields))
            else:
                return _NO, {}
        else:
            raise TypeError(f"unknown pattern {p!r}")
    return (_UNKNOWN, {}) if unknown else (_YES, bindings)


def _replace_holes(value: PValue, fresh: dict[int, PValue]) -> PValue:
    """`value` with each dynamic part listed in `fresh` (by id) replaced; static parts
    without holes are shared."""
    # ADT values can be long lists: rebuilt bottom-up with an explicit stack
    order: list[PValue] = []
    stack = [value]
    while stack:
        item = stack.pop()
        order.append(item)
        if isinstance(item.static, STuple | SCtor):
            stack.extend(item.static.fields)
    done: dict[int, PValue] = {}
    for item in reversed(order):
        if id(item) in fresh:
            done[id(item)] = fresh[id(item)]
            continue
        static = item.static
        if isinstance(static, STuple | SCtor):
            fields = tuple(done[id(f)] for f in static.fields)
            if all(a is b for a, b in zip(fields, static.fields)):
                done[id(item)] = item
            elif isinstance(static, STuple):
                done[id(item)] = PValue(STuple(fields), type=item.type)
            else:
                done[id(item)] = PValue(SCtor(static.constructor, fields), type=item.type)
        else:
            done[id(item)] = item
    return done[id(value)]
