"""`ModuleTypes`: what type inference returns (types are never stored in the IR nodes)."""

from __future__ import annotations

from attrs import define, field

from ..lang.diagnostics import Diagnostic, TypeCheckError
from ..lang.expr import Call, Expr
from ..lang.types import FuncType, Type


@define(eq=False)
class ModuleTypes:
    """The inferred type of every expression of a module or expression, keyed by node.

    * `table`: expression node → fully resolved type (identity keys; usable as the
      printer's `types=`); operator nodes, which are shared by every call, are not in it.
    * `global_types`: name → signature of each global function that was needed.
    * `type_args`: for each call, the resolved instantiation: the argument types for an
      operator call, the type arguments for a call of a polymorphic function or of a
      constructor.
    * `warnings` (e.g. a non-exhaustive `match`) and `errors` (empty unless inference
      was asked not to raise).
    """

    table: dict[Expr, Type] = field(factory=dict)
    global_types: dict[str, FuncType] = field(factory=dict)
    type_args: dict[Call, tuple[Type, ...]] = field(factory=dict)
    warnings: list[Diagnostic] = field(factory=list)
    errors: list[Diagnostic] = field(factory=list)

    def type_of(self, expr: Expr) -> Type:
        """The type of `expr`; KeyError (with what was asked) if it was not inferred."""
        try:
            return self.table[expr]
        except KeyError:
            raise KeyError(
                f"no type was inferred for this {type(expr).__name__} "
                "(it is not part of what was type-checked)"
            ) from None

    def __contains__(self, expr: object) -> bool:
        return expr in self.table

    @property
    def ok(self) -> bool:
        """Whether inference found no error."""
        return not self.errors

    def raise_errors(self) -> None:
        """Raise a `TypeCheckError` carrying every error, if there is any."""
        if self.errors:
            raise TypeCheckError(self.errors)

    def merged(self, other: ModuleTypes) -> ModuleTypes:
        """A new result with `other`'s entries added (and winning on conflicts).

        Use it after re-inferring one rewritten function with `infer_expr`.
        """
        return ModuleTypes(
            {**self.table, **other.table},
            {**self.global_types, **other.global_types},
            {**self.type_args, **other.type_args},
            [*self.warnings, *other.warnings],
            [*self.errors, *other.errors],
        )
