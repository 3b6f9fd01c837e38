"""Residual code: scopes of `let` bindings that the partial evaluator emits, in order.

A `Scope` is the body being built of one residual block: a function body, an `if` branch
or a `match` arm. Bindings are appended in evaluation order and every operand is an atom,
so the residual program is in A-normal form. Scopes nest lexically (`parent`): an atom
bound in a scope may be used in that scope and in the scopes nested in it.

Each binding records the variables it uses and whether it may have an effect, so that
`finish` drops the bindings nothing needs (dead code) in one backward sweep, keeping
every effect.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...lang.expr import Expr, Let, Var
from ...lang.traversal import scope_operands
from ...lang.types import Type
from .values import needs_annotation


class Scope:
    """One residual block under construction."""

    __slots__ = ("bindings", "impure", "parent", "used")

    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self.bindings: list[tuple[Var, Expr, frozenset[Var], bool]] = []
        self.used: frozenset[Var] = frozenset()
        """After `finish`: the variables the block uses (its own included)."""
        self.impure = False
        """After `finish`: whether running the block may have an effect."""

    def sees(self, scope: Scope | None) -> bool:
        """Whether atoms bound in `scope` are visible here (None: bound everywhere)."""
        if scope is None:
            return True
        current: Scope | None = self
        while current is not None:
            if current is scope:
                return True
            current = current.parent
        return False

    def emit(
        self,
        value: Expr,
        hint: str = "x",
        type_: Type | None = None,
        *,
        impure: bool = False,
        inner: Iterable[Scope] = (),
    ) -> Var:
        """Bind `value` to a fresh variable (annotated with `type_` where it helps type
        inference); the variable. `impure`: the value may have an effect (it is kept even
        if unused); `inner`: the finished blocks nested in `value` (branches, a body)."""
        var = Var(hint or "x", type_ if needs_annotation(type_) else None)
        self.bind(var, value, impure=impure, inner=inner)
        return var

    def bind(
        self,
        var: Var,
        value: Expr,
        *,
        impure: bool = False,
        inner: Iterable[Scope] = (),
        body: Scope | None = None,
    ) -> None:
        """Bind `value` to the given (fresh) variable; `body`: the finished body of a
        function literal (its uses count, its effects happen only when it is called)."""
        uses = {e for e in scope_operands(value) if type(e) is Var}
        for block in inner:
            uses |= block.used
            impure = impure or block.impure
        if body is not None:
            uses |= body.used
        self.bindings.append((var, value, frozenset(uses), impure))

    def finish(self, result: Expr) -> Expr:
        """The block: its needed bindings as a let chain around `result` (built without
        recursion); sets `used` and `impure`."""
        live: set[Var] = {result} if type(result) is Var else set()  # type: ignore[arg-type]
        kept: list[tuple[Var, Expr]] = []
        impure = False
        for var, value, uses, effect in reversed(self.bindings):
            if effect or var in live:
                kept.append((var, value))
                live |= uses
                impure = impure or effect
        self.used, self.impure = frozenset(live), impure
        body = result
        for var, value in kept:  # innermost first
            body = Let(var, value, body)
        return body
