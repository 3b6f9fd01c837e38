"""The type solver: unification with union-find, and deferred constraints run to a fixpoint.

Holes (`IncompleteType`) and shape variables (`ShapeVar`) are the unknowns. Each lives in
a union-find forest (`find`, `find_dim`, with path compression, iterative): a hole points
to another hole or to a type that may itself mention holes; a shape variable points to
another shape variable, an integer or `?`. `unify(a, b)` makes two types equal or raises
`UnifyError` saying where they first differ:

* `TensorType`: same dtype, same rank, each dimension unified (`int ~ int` must be equal,
  a shape variable is bound to the other side, `? ~ x` succeeds and binds nothing);
* `TupleType`, `RefType`, `TypeCall` (same ADT, arguments unified; a bare
  `GlobalTypeVar` is the ADT applied to nothing);
* `FuncType`: same arity; the right side's type parameters are renamed to the left
  side's before unifying. A polymorphic function where a less polymorphic one is expected
  is instantiated: its extra type parameters become fresh holes (as in TVM). Only the
  side that provides the value may be instantiated: the right side (`unify(expected,
  found)`), the left side inside function parameters, neither inside references and ADT
  arguments (so a monomorphic function is never accepted as a polymorphic one);
* `TypeVar` is rigid: it is equal only to itself (a hole may be bound to it);
* a hole is bound to the other side, after an occurs check.

A `Constraint` is a typing rule that may need more information than is known when it is
created (an operator's type relation, a tuple projection of a value whose type is not
known yet, a call of a value of unknown type). `add` runs it at once; if it cannot decide
yet it *watches* the unknowns in its inputs and is queued again (FIFO) whenever one of them
is bound. `solve` drains the queue; when nothing moves and some constraints are still
undecided, it runs the oldest one in *final* mode (it must decide or give up), then drains
again, until every constraint is decided.

Errors do not stop the solver: they are collected as diagnostics in `errors`, and the
faulty result becomes a *poisoned* hole, which later steps treat as "already reported"
so that one mistake gives one message.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from ..lang.diagnostics import Diagnostic, TypeCheckError
from ..lang.span import Span
from ..lang.types import (
    AnyDim,
    Dim,
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    RefType,
    ShapeVar,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)
from .show import dim_text, plural, type_text
from .subst import func_type, substitute, tuple_type, type_call

_INVARIANT = 0
_FOUND_RIGHT = 1
_FOUND_LEFT = -1
"""Which side of a unification is the value whose polymorphic type may be instantiated
(the other is what the context expects); flipped inside function parameters."""


class UnifyError(TypeCheckError):
    """Two types cannot be made equal.

    `lhs` and `rhs` are the two types (as far as they were known), `reason` says where
    they first differ, e.g. "dimension 1 conflicts: 3 does not match 4".
    """

    def __init__(self, lhs: Type, rhs: Type, reason: str) -> None:
        self.lhs = lhs
        self.rhs = rhs
        self.reason = reason
        super().__init__(f"cannot unify `{type_text(lhs)}` with `{type_text(rhs)}`: {reason}")


class _Mismatch(Exception):
    """Internal: raised deep inside unification, turned into a `UnifyError` at the top."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Constraint:
    """A typing rule decided by the solver once enough is known.

    Subclasses implement `run(solver, final)`: return True once decided (after calling
    `solver.deliver(self, result)` when the rule has a result), False to wait for more
    information. In final mode the rule must decide; returning False then means "give up"
    (the solver reports it if all inputs were known). `inputs()` lists the types whose
    holes and shape variables the rule waits on. `span` is where errors are reported.
    """

    __slots__ = ("done", "notes", "out", "queued", "span", "watching")

    def __init__(self, span: Span | None = None, notes: tuple[str, ...] = ()) -> None:
        self.span = span
        self.notes = notes
        self.out: Type | None = None
        self.done = False
        self.queued = False
        self.watching: set[IncompleteType | ShapeVar] = set()

    def inputs(self) -> Iterable[Type]:
        """The types this rule reads."""
        return ()

    def run(self, solver: TypeSolver, final: bool) -> bool:
        """Try to decide the rule; True when decided."""
        raise NotImplementedError

    def describe(self) -> str:
        """What the rule computes, for messages ("the result of `add`")."""
        return "this expression"


class TypeSolver:
    """Union-find over holes and shape variables, plus a queue of deferred constraints."""

    def __init__(self) -> None:
        self._parent: dict[IncompleteType, Type] = {}
        self._dim_parent: dict[ShapeVar, Dim] = {}
        self._copies: set[ShapeVar] = set()
        self._watchers: dict[IncompleteType | ShapeVar, list[Constraint]] = {}
        self._queue: deque[Constraint] = deque()
        self._pending: dict[Constraint, None] = {}
        self.poisoned: set[IncompleteType] = set()
        self.errors: list[Diagnostic] = []
        self.upstream_errors = False
        """Set when a type comes from code whose errors were reported elsewhere."""

    # ------------------------------------------------------------------ unknowns
    def fresh(self) -> IncompleteType:
        """A new hole."""
        return IncompleteType()

    def fresh_poisoned(self) -> IncompleteType:
        """A new hole standing for a part of the program where an error was reported."""
        hole = IncompleteType()
        self.poisoned.add(hole)
        return hole

    def fresh_dim(self, like: ShapeVar) -> ShapeVar:
        """A fresh copy of a shape variable (per-call instantiation); `?` if left unbound."""
        copy = ShapeVar(like.name_hint, like.dtype)
        self._copies.add(copy)
        return copy

    def find(self, t: Type) -> Type:
        """The representative of `t`: an unbound hole, or a type that is not a hole."""
        if not isinstance(t, IncompleteType):
            return t
        parent = self._parent
        nxt = parent.get(t)
        if nxt is None or not isinstance(nxt, IncompleteType):
            return t if nxt is None else nxt
        path = [t]
        cur: Type = nxt
        while isinstance(cur, IncompleteType):
            step = parent.get(cur)
            if step is None:
                break
            path.append(cur)
            cur = step
        for hole in path:
            parent[hole] = cur
        return cur

    def find_dim(self, d: Dim) -> Dim:
        """The representative of a dimension: an int, `?`, or an unbound shape variable."""
        if not isinstance(d, ShapeVar):
            return d
        parent = self._dim_parent
        nxt = parent.get(d)
        if nxt is None:
            return d
        path = [d]
        cur: Dim = nxt
        while isinstance(cur, ShapeVar):
            step = parent.get(cur)
            if step is None:
                break
            path.append(cur)
            cur = step
        for var in path:
            parent[var] = cur
        return cur

    def poison(self, t: Type) -> None:
        """Mark every unbound hole in `t` as standing for an already reported error."""
        for hole in self.holes(t):
            self.poisoned.add(hole)

    # ---------------------------------------------------------------- resolution
    def tensors_resolved(self) -> bool:
        """Whether `resolve` returns every tensor type as it is (no shape variable is
        bound or copied yet): a caller resolving many types can skip it for those."""
        return not self._dim_parent and not self._copies

    def resolve(self, t: Type) -> Type:
        """`t` with every bound hole and shape variable replaced, as far as known."""
        if isinstance(t, TensorType):
            if not self._dim_parent and not self._copies:
                return t
            return self._resolve_tensor(t)
        if isinstance(t, IncompleteType):
            found = self.find(t)
            return found if found is t else self.resolve(found)
        if isinstance(t, TupleType):
            fields = [self.resolve(f) for f in t.fields]
            if all(a is b for a, b in zip(fields, t.fields)):
                return t
            return tuple_type(fields)
        if isinstance(t, FuncType):
            args = [self.resolve(a) for a in t.arg_types]
            ret = self.resolve(t.ret_type)
            if ret is t.ret_type and all(a is b for a, b in zip(args, t.arg_types)):
                return t
            return func_type(args, ret, t.type_params, t.type_constraints)
        if isinstance(t, RefType):
            value = self.resolve(t.value)
            return t if value is t.value else RefType(value)
        if isinstance(t, TypeCall):
            targs = [self.resolve(a) for a in t.args]
            if all(a is b for a, b in zip(targs, t.args)):
                return t
            return type_call(t.func, targs)
        return t

    def _resolve_tensor(self, t: TensorType) -> TensorType:
        changed = False
        dims: list[Dim] = []
        for d in t.shape:
            if isinstance(d, ShapeVar):
                r = self.find_dim(d)
                if isinstance(r, ShapeVar) and r in self._copies:
                    r = AnyDim()
                changed = changed or r is not d
                dims.append(r)
            else:
                dims.append(d)
        return TensorType(tuple(dims), t.dtype) if changed else t

    def holes(self, t: Type) -> Iterator[IncompleteType]:
        """The unbound holes of `t` (after following bindings)."""
        for unknown in self._unknowns(t, dims=False):
            if isinstance(unknown, IncompleteType):
                yield unknown

    def _unknowns(self, t: Type, dims: bool = True) -> Iterator[IncompleteType | ShapeVar]:
        stack = [t]
        while stack:
            cur = self.find(stack.pop())
            if isinstance(cur, TensorType):
                if dims:
                    for d in cur.shape:
                        r = self.find_dim(d)
                        if isinstance(r, ShapeVar):
                            yield r
            elif isinstance(cur, IncompleteType):
                yield cur
            elif isinstance(cur, TupleType):
                stack.extend(cur.fields)
            elif isinstance(cur, FuncType):
                stack.extend(cur.arg_types)
                stack.append(cur.ret_type)
            elif isinstance(cur, RefType):
                stack.append(cur.value)
            elif isinstance(cur, TypeCall):
                stack.extend(cur.args)

    # ---------------------------------------------------------------- unification
    def unify(self, lhs: Type, rhs: Type) -> None:
        """Make `lhs` (what is expected) and `rhs` (what is found) equal, or raise `UnifyError`.

        On failure, bindings made before the conflict was found are kept (as in TVM);
        the caller reports the error and carries on.
        """
        try:
            self._unify(lhs, rhs, _FOUND_RIGHT)
        except _Mismatch as exc:
            raise UnifyError(self.resolve(lhs), self.resolve(rhs), exc.reason) from None

    def _unify(self, a: Type, b: Type, found: int = _INVARIANT) -> None:
        """Unify; `found` says which side is the value (may be instantiated), if either."""
        a = self.find(a)
        b = self.find(b)
        if a is b:
            return
        if isinstance(a, IncompleteType):
            self._bind(a, b)
        elif isinstance(b, IncompleteType):
            self._bind(b, a)
        elif isinstance(a, TensorType) and isinstance(b, TensorType):
            self._unify_tensor(a, b)
        elif isinstance(a, TupleType) and isinstance(b, TupleType):
            fa, fb = a.fields, b.fields
            if len(fa) != len(fb):
                raise _Mismatch(
                    f"a tuple of {len(fa)} fields does not match a tuple of {len(fb)} fields"
                )
            for i, (x, y) in enumerate(zip(fa, fb)):
                try:
                    self._unify(x, y, found)
                except _Mismatch as exc:
                    raise _Mismatch(f"field {i}: {exc.reason}") from None
        elif isinstance(a, FuncType) and isinstance(b, FuncType):
            self._unify_func(a, b, found)
        elif isinstance(a, RefType) and isinstance(b, RefType):
            self._unify(a.value, b.value)
        elif isinstance(a, TypeCall | GlobalTypeVar) and isinstance(b, TypeCall | GlobalTypeVar):
            self._unify_adt(a, b)
        elif isinstance(a, TypeVar) or isinstance(b, TypeVar):
            raise _Mismatch(
                f"`{type_text(a)}` does not match `{type_text(b)}` "
                "(a type parameter is equal only to itself)"
            )
        else:
            raise _Mismatch(
                f"{_kind(a)} `{type_text(self.resolve(a))}` does not match "
                f"{_kind(b)} `{type_text(self.resolve(b))}`"
            )

    def _bind(self, hole: IncompleteType, t: Type) -> None:
        if isinstance(t, IncompleteType):
            if hole in self.poisoned:
                self.poisoned.add(t)
        elif not isinstance(t, TensorType) and any(h is hole for h in self.holes(t)):
            raise _Mismatch(
                f"`_` would have to contain itself: it occurs in `{type_text(self.resolve(t))}`"
            )
        self._parent[hole] = t
        self._wake(hole)

    def _unify_tensor(self, a: TensorType, b: TensorType) -> None:
        if a.dtype != b.dtype:
            raise _Mismatch(f"dtype `{a.dtype}` does not match `{b.dtype}`")
        if len(a.shape) != len(b.shape):
            raise _Mismatch(
                f"a tensor of rank {len(a.shape)} does not match a tensor of rank {len(b.shape)}"
            )
        if a.shape == b.shape:
            return
        for i, (x, y) in enumerate(zip(a.shape, b.shape)):
            if x is y or (type(x) is int and x == y):
                continue
            try:
                self.unify_dim(x, y)
            except _Mismatch as exc:
                raise _Mismatch(f"dimension {i} conflicts: {exc.reason}") from None

    def unify_dim(self, x: Dim, y: Dim) -> None:
        """Make two dimensions equal (`?` is compatible with anything and binds nothing)."""
        x = self.find_dim(x)
        y = self.find_dim(y)
        if x is y or x == y:
            return
        if isinstance(x, AnyDim) or isinstance(y, AnyDim):
            return
        if isinstance(x, ShapeVar):
            self._dim_parent[x] = y
            self._wake(x)
            return
        if isinstance(y, ShapeVar):
            self._dim_parent[y] = x
            self._wake(y)
            return
        raise _Mismatch(f"{dim_text(x)} does not match {dim_text(y)}")

    def _unify_func(self, a: FuncType, b: FuncType, found: int) -> None:
        if len(a.arg_types) != len(b.arg_types):
            raise _Mismatch(
                f"a function of {len(a.arg_types)} parameters does not match "
                f"a function of {len(b.arg_types)} parameters"
            )
        na, nb = len(a.type_params), len(b.type_params)
        if na != nb:
            if (na > nb and found != _FOUND_LEFT) or (nb > na and found != _FOUND_RIGHT):
                raise _Mismatch(
                    f"a function with {plural(na, 'type parameter')} does not match "
                    f"a function with {plural(nb, 'type parameter')}"
                    + (
                        " (a function that is not polymorphic cannot be used as one)"
                        if found != _INVARIANT
                        else ""
                    )
                )
            if na > nb:
                a = self._instantiate_extra(a, nb)
            else:
                b = self._instantiate_extra(b, na)
        b_args, b_ret = b.arg_types, b.ret_type
        if a.type_params and any(x is not y for x, y in zip(a.type_params, b.type_params)):
            renaming: dict[TypeVar, Type] = dict(zip(b.type_params, a.type_params))
            b_args = tuple(substitute(t, renaming) for t in b_args)
            b_ret = substitute(b_ret, renaming)
        for i, (x, y) in enumerate(zip(a.arg_types, b_args)):
            try:
                self._unify(x, y, -found)
            except _Mismatch as exc:
                raise _Mismatch(f"parameter {i}: {exc.reason}") from None
        try:
            self._unify(a.ret_type, b_ret, found)
        except _Mismatch as exc:
            raise _Mismatch(f"result: {exc.reason}") from None

    def _instantiate_extra(self, f: FuncType, keep: int) -> FuncType:
        """`f` with its type parameters after the first `keep` replaced by fresh holes."""
        extra = f.type_params[keep:]
        mapping: dict[TypeVar, Type] = {p: self.fresh() for p in extra}
        return func_type(
            [substitute(t, mapping) for t in f.arg_types],
            substitute(f.ret_type, mapping),
            f.type_params[:keep],
            f.type_constraints,
        )

    def _unify_adt(self, a: TypeCall | GlobalTypeVar, b: TypeCall | GlobalTypeVar) -> None:
        fa, args_a = (a.func, a.args) if isinstance(a, TypeCall) else (a, ())
        fb, args_b = (b.func, b.args) if isinstance(b, TypeCall) else (b, ())
        if fa is not fb and fa.name_hint != fb.name_hint:
            raise _Mismatch(f"type `{fa.name_hint}` does not match type `{fb.name_hint}`")
        if len(args_a) != len(args_b):
            raise _Mismatch(
                f"`{fa.name_hint}` applied to {len(args_a)} arguments does not match "
                f"`{fb.name_hint}` applied to {len(args_b)}"
            )
        for x, y in zip(args_a, args_b):
            self._unify(x, y)

    # ---------------------------------------------------------------- constraints
    def add(self, constraint: Constraint) -> Type:
        """Run `constraint` now if it can decide, else defer it; return its result type.

        The result is the delivered type when decided at once, else a fresh hole that the
        constraint fills in later (poisoned if it fails).
        """
        decided = self._run(constraint, final=False)
        if constraint.out is None:
            constraint.out = self.fresh_poisoned() if decided else self.fresh()
        if not decided:
            self._pending[constraint] = None
            self._watch(constraint)
        return constraint.out

    def deliver(self, constraint: Constraint, result: Type) -> None:
        """Record the result of a decided constraint (unified with its hole, if any).

        Raises `TypeCheckError` at the constraint's span if the result conflicts with
        what the context already required of it.
        """
        if constraint.out is None:
            constraint.out = result
            return
        try:
            self.unify(constraint.out, result)
        except UnifyError as exc:
            raise TypeCheckError(
                Diagnostic(
                    "error",
                    f"{constraint.describe()} has type `{type_text(exc.rhs)}`, "
                    f"but `{type_text(exc.lhs)}` is expected here",
                    constraint.span,
                    (exc.reason, *constraint.notes),
                )
            ) from None

    def report(self, diagnostic: Diagnostic) -> None:
        """Record an error and keep going."""
        self.errors.append(diagnostic)

    def solve(self) -> None:
        """Run constraints until every one is decided (see the module docstring)."""
        queue = self._queue
        pending = self._pending
        while True:
            while queue:
                constraint = queue.popleft()
                constraint.queued = False
                if constraint.done:
                    continue
                if self._run(constraint, final=False):
                    pending.pop(constraint, None)
                else:
                    self._watch(constraint)
            if not pending:
                return
            constraint = next(iter(pending))
            pending.pop(constraint)
            self._run(constraint, final=True)

    def _run(self, constraint: Constraint, final: bool) -> bool:
        try:
            decided = constraint.run(self, final)
        except TypeCheckError as exc:
            self.errors.extend(exc.diagnostics)
            decided = True
            if constraint.out is not None:
                self.poison(constraint.out)
        if not decided and final:
            decided = True
            self._give_up(constraint)
        if decided:
            constraint.done = True
        return decided

    def _give_up(self, constraint: Constraint) -> None:
        unknown = any(True for t in constraint.inputs() for _ in self.holes(t))
        if not unknown:
            shown = ", ".join(f"`{type_text(self.resolve(t))}`" for t in constraint.inputs())
            self.report(
                Diagnostic(
                    "error",
                    f"cannot determine {constraint.describe()} from {shown}",
                    constraint.span,
                    constraint.notes,
                )
            )
        if constraint.out is not None:
            self.poison(constraint.out)

    def _watch(self, constraint: Constraint) -> None:
        for t in constraint.inputs():
            for unknown in self._unknowns(t):
                if unknown not in constraint.watching:
                    constraint.watching.add(unknown)
                    self._watchers.setdefault(unknown, []).append(constraint)

    def _wake(self, unknown: IncompleteType | ShapeVar) -> None:
        waiting = self._watchers.pop(unknown, None)
        if not waiting:
            return
        for constraint in waiting:
            constraint.watching.discard(unknown)
            if not constraint.done and not constraint.queued:
                constraint.queued = True
                self._queue.append(constraint)

    @property
    def pending(self) -> int:
        """How many constraints are still undecided."""
        return len(self._pending)


def _kind(t: Type) -> str:
    if isinstance(t, TensorType):
        return "tensor type"
    if isinstance(t, TupleType):
        return "tuple type"
    if isinstance(t, FuncType):
        return "function type"
    if isinstance(t, RefType):
        return "reference type"
    if isinstance(t, TypeCall | GlobalTypeVar):
        return "ADT"
    if isinstance(t, TypeVar):
        return "type parameter"
    return "type"
