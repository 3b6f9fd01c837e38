"""The deferred constraints that expressions generate: operator calls (type relations),
tuple projections, and calls of a value whose type is not known yet."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..lang.attrs import Attrs
from ..lang.diagnostics import Diagnostic, TypeCheckError
from ..lang.op import Op
from ..lang.span import Span
from ..lang.types import IncompleteType, TupleType, Type
from .relations import Relation, RelationContext, RelationError
from .show import type_text
from .solver import Constraint, TypeSolver, UnifyError
from .subst import func_type


class _Context(RelationContext):
    """The solver as a relation sees it."""

    def __init__(self, solver: TypeSolver, op: Op, final: bool) -> None:
        self.solver = solver
        self.op = op
        self.final = final

    def unify(self, lhs: Type, rhs: Type) -> None:
        try:
            self.solver.unify(lhs, rhs)
        except UnifyError as exc:
            raise RelationError(
                f"`{type_text(exc.lhs)}` and `{type_text(exc.rhs)}` do not agree: {exc.reason}"
            ) from None

    def fresh(self) -> IncompleteType:
        return self.solver.fresh()

    def resolve(self, t: Type) -> Type:
        return self.solver.resolve(t)


def _prefixed(op: Op, message: str) -> str:
    return message if message.startswith(f"{op.name}:") else f"{op.name}: {message}"


class OpCall(Constraint):
    """A call of an operator: its type relation over the argument types."""

    __slots__ = ("args", "attrs", "op", "rel")

    def __init__(
        self,
        op: Op,
        rel: Relation,
        attrs: Attrs | None,
        args: list[Type],
        span: Span | None,
        notes: tuple[str, ...],
    ) -> None:
        super().__init__(span, notes)
        self.op = op
        self.rel = rel
        self.attrs = attrs
        self.args = args

    def inputs(self) -> Iterable[Type]:
        return self.args

    def describe(self) -> str:
        return f"the result of `{self.op.name}`"

    def run(self, solver: TypeSolver, final: bool) -> bool:
        args = [solver.resolve(a) for a in self.args]
        try:
            result = self.rel(args, self.attrs, _Context(solver, self.op, final))
        except RelationError as exc:
            raise TypeCheckError(
                Diagnostic("error", _prefixed(self.op, exc.message), self.span, self.notes)
            ) from None
        except (ValueError, OverflowError) as exc:
            # A relation that missed a bad attribute and then failed to build a type
            # (`TensorType` rejects a negative dimension): still an error of this call.
            message = f"cannot type this call: {exc}"
            raise TypeCheckError(
                Diagnostic("error", _prefixed(self.op, message), self.span, self.notes)
            ) from None
        if result is None:
            return False
        solver.deliver(self, result)
        return True


class Projection(Constraint):
    """`t.i`: waits until the type of `t` is known to be a tuple."""

    __slots__ = ("index", "tuple_type")

    def __init__(
        self, tuple_type: Type, index: int, span: Span | None, notes: tuple[str, ...]
    ) -> None:
        super().__init__(span, notes)
        self.tuple_type = tuple_type
        self.index = index

    def inputs(self) -> Iterable[Type]:
        return (self.tuple_type,)

    def describe(self) -> str:
        return f"field {self.index} of this tuple"

    def run(self, solver: TypeSolver, final: bool) -> bool:
        t = solver.find(self.tuple_type)
        if isinstance(t, IncompleteType):
            return False
        field = project(t, self.index)
        if isinstance(field, str):
            raise TypeCheckError(Diagnostic("error", field, self.span, self.notes))
        solver.deliver(self, field)
        return True


def project(t: Type, index: int) -> Type | str:
    """Field `index` of the tuple type `t`, or an error message."""
    if not isinstance(t, TupleType):
        return f"cannot take field {index} of a value of type `{type_text(t)}`: it is not a tuple"
    if not 0 <= index < len(t.fields):
        return (
            f"tuple index {index} is out of range for `{type_text(t)}` "
            f"({len(t.fields)} field{'s' if len(t.fields) != 1 else ''})"
        )
    return t.fields[index]


class DeferredCall(Constraint):
    """A call whose callee's type is not known yet.

    It waits for the callee's type (so that a polymorphic function is instantiated
    properly); if it never becomes known, the callee is taken to be a monomorphic
    function of the argument types.
    """

    __slots__ = ("apply", "args", "callee_type")

    def __init__(
        self,
        callee_type: Type,
        args: list[Type],
        apply: Callable[[Type], Type],
        span: Span | None,
        notes: tuple[str, ...] = (),
    ) -> None:
        super().__init__(span, notes)
        self.callee_type = callee_type
        self.args = args
        self.apply = apply

    def inputs(self) -> Iterable[Type]:
        return (self.callee_type,)

    def describe(self) -> str:
        return "the result of this call"

    def run(self, solver: TypeSolver, final: bool) -> bool:
        t = solver.find(self.callee_type)
        if isinstance(t, IncompleteType):
            if not final:
                return False
            if t in solver.poisoned:
                return False
            t = func_type(self.args, solver.fresh())
            try:
                solver.unify(self.callee_type, t)
            except UnifyError as exc:
                solver.poison(self.callee_type)
                message = f"cannot type this call: {exc.reason}"
                raise TypeCheckError(Diagnostic("error", message, self.span, self.notes)) from None
        solver.deliver(self, self.apply(t))
        return True
