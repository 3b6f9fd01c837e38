"""Pass instruments: timing, IR printing, and the debug checker (well-formedness, types,
types a pass handed to the context, normal forms, `@main`'s signature), plus the
well-formedness check itself."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO, cast

from ..lang.adt import Constructor
from ..lang.diagnostics import Error
from ..lang.expr import (
    Constant,
    Expr,
    Function,
    GlobalVar,
    Let,
    Match,
    Var,
    pattern_vars,
)
from ..lang.module import IRModule
from ..lang.op import Op
from ..lang.traversal import children, pre_order, scope_operands
from ..lang.types import Type
from ..typecheck.result import ModuleTypes
from ..typecheck.show import type_text
from .pass_base import Pass, PassError

if TYPE_CHECKING:
    from .context import PassContext


class PassInstrument:
    """Base of instruments: every hook does nothing unless overridden."""

    def enter_pipeline(self, mod: IRModule, ctx: PassContext) -> None:
        """Called when a `Sequential` starts."""

    def exit_pipeline(self, mod: IRModule, ctx: PassContext) -> None:
        """Called when a `Sequential` finishes (with its result)."""

    def before_pass(self, p: Pass, mod: IRModule, ctx: PassContext) -> None:
        """Called before `p` runs on `mod`."""

    def after_pass(self, p: Pass, before: IRModule, after: IRModule, ctx: PassContext) -> None:
        """Called after `p` turned `before` into `after`."""

    def skipped_pass(self, p: Pass, reason: str, ctx: PassContext) -> None:
        """Called when a `Sequential` does not run `p`."""


class TimingInstrument(PassInstrument):
    """Wall-clock time of every pass run; `report()` is a table, `skipped` lists skips."""

    def __init__(self) -> None:
        self.times: list[tuple[str, float]] = []
        self.skipped: list[tuple[str, str]] = []
        self._start = 0.0

    def before_pass(self, p: Pass, mod: IRModule, ctx: PassContext) -> None:
        """Start the clock."""
        self._start = time.perf_counter()

    def after_pass(self, p: Pass, before: IRModule, after: IRModule, ctx: PassContext) -> None:
        """Record the elapsed time."""
        self.times.append((str(p), time.perf_counter() - self._start))

    def skipped_pass(self, p: Pass, reason: str, ctx: PassContext) -> None:
        """Record the skip."""
        self.skipped.append((str(p), reason))

    @property
    def total(self) -> float:
        """Seconds spent in passes."""
        return sum(t for _, t in self.times)

    def report(self) -> str:
        """A table: pass, milliseconds, share of the total; then the skipped passes."""
        width = max([len("pass"), *(len(n) for n, _ in self.times)])
        total = self.total or 1.0
        lines = [f"{'pass':<{width}}  {'ms':>10}  {'%':>6}"]
        for name, t in self.times:
            lines.append(f"{name:<{width}}  {t * 1e3:>10.3f}  {100 * t / total:>6.1f}")
        lines.append(f"{'total':<{width}}  {self.total * 1e3:>10.3f}  {100.0:>6.1f}")
        lines.extend(f"skipped {name}: {reason}" for name, reason in self.skipped)
        return "\n".join(lines)


class PrintIR(PassInstrument):
    """Print the module before and/or after the chosen passes (all when `passes` is None)."""

    def __init__(
        self,
        passes: Iterable[str] | None = None,
        *,
        before: bool = False,
        after: bool = True,
        stream: TextIO | None = None,
    ) -> None:
        self.passes = None if passes is None else frozenset(passes)
        self.before = before
        self.after = after
        self.stream = stream

    def _wanted(self, p: Pass) -> bool:
        return self.passes is None or p.name in self.passes

    def _write(self, text: str) -> None:
        (self.stream if self.stream is not None else sys.stderr).write(text)

    def before_pass(self, p: Pass, mod: IRModule, ctx: PassContext) -> None:
        """Print the input of a chosen pass."""
        if self.before and self._wanted(p):
            self._write(f"// IR before {p}\n{mod.astext()}\n")

    def after_pass(self, p: Pass, before: IRModule, after: IRModule, ctx: PassContext) -> None:
        """Print the output of a chosen pass."""
        if self.after and self._wanted(p):
            self._write(f"// IR after {p}\n{after.astext()}\n")


# ----------------------------------------------------------------------- well-formedness

_ATOMS = (Var, GlobalVar, Constant, Op, Constructor)


def well_formed_problems(mod: IRModule) -> list[str]:
    """What is wrong with `mod`'s scoping (empty when it is well-formed).

    Every variable is used only inside the scope of its binder and bound exactly once;
    module functions have no free variables; referenced globals are in the module;
    constructors belong to one of the module's ADTs. Iterative (no recursion).
    """
    problems: list[str] = []
    ctors = {id(c) for data in mod.type_definitions.values() for c in data.constructors}
    globals_ = {id(gv) for gv in mod.functions}
    bound_once: set[int] = set()
    visited: set[int] = set()
    for gv, fn in mod.functions.items():
        where = f"@{gv.name_hint}"
        in_scope: set[int] = set()
        # stack items: ("visit", expr) | ("bind", vars) | ("unbind", vars)
        stack: list[tuple[str, object]] = [("visit", fn)]
        while stack:
            action, item = stack.pop()
            if action == "unbind":
                for v in item:  # type: ignore[attr-defined]
                    in_scope.discard(id(v))
                continue
            if action == "bind":
                for v in item:  # type: ignore[attr-defined]
                    if id(v) in bound_once:
                        problems.append(f"in {where}: variable %{v.name_hint} is bound twice")
                    bound_once.add(id(v))
                    in_scope.add(id(v))
                continue
            node = cast(Expr, item)
            leaf = isinstance(node, (Var, GlobalVar, Constructor))
            if not leaf and id(node) in visited:
                continue
            visited.add(id(node))
            if isinstance(node, Var):
                if id(node) not in in_scope:
                    problems.append(
                        f"in {where}: variable %{node.name_hint} is used outside the scope "
                        "of its binding (free variable)"
                    )
            elif isinstance(node, GlobalVar):
                if id(node) not in globals_:
                    problems.append(f"in {where}: global @{node.name_hint} is not in the module")
            elif isinstance(node, Constructor):
                if id(node) not in ctors:
                    problems.append(
                        f"in {where}: constructor {node.name_hint} does not belong to an ADT "
                        "of the module"
                    )
            elif isinstance(node, Let):
                stack += [("unbind", (node.var,)), ("visit", node.body)]
                stack += [("visit", node.value), ("bind", (node.var,))]
            elif isinstance(node, Function):
                stack += [("unbind", node.params), ("visit", node.body)]
                stack.append(("bind", node.params))
            elif isinstance(node, Match):
                for clause in reversed(node.clauses):
                    pvars = tuple(pattern_vars(clause.lhs))
                    stack += [("unbind", pvars), ("visit", clause.rhs), ("bind", pvars)]
                stack.append(("visit", node.data))
            else:
                stack.extend(("visit", c) for c in reversed(children(node)))
    return problems


def normal_form_problem(mod: IRModule, form: str) -> str | None:
    """Why `mod` is not in normal form `form` ("graph", "anf", "any"), or None if it is.

    Graph form: no `let`. A-normal form: every operand of a call, tuple, projection,
    condition, match or reference operation is an atom (variable, global, constant,
    operator or constructor).
    """
    if form == "any":
        return None
    for gv, fn in mod.functions.items():
        for node in pre_order(fn):
            if form == "graph" and isinstance(node, Let):
                return f"@{gv.name_hint} has a let binding of %{node.var.name_hint}"
            if form == "anf":
                for operand in scope_operands(node):
                    if not isinstance(operand, _ATOMS):
                        return (
                            f"@{gv.name_hint} has a {type(node).__name__} whose operand is a "
                            f"{type(operand).__name__}, not an atom"
                        )
    return None


def check_well_formed(mod: IRModule, culprit: str = "the module") -> None:
    """Raise `PassError` listing the problems `well_formed_problems` finds in `mod`."""
    problems = well_formed_problems(mod)
    if problems:
        raise PassError(f"{culprit} is not well-formed: " + "; ".join(problems[:5]))


def _same_type(a: Type, b: Type) -> bool:
    # shape variables compare by identity; two inferences may name the same one apart
    return a is b or a == b or type_text(a) == type_text(b)


def types_disagreement(claimed: ModuleTypes, inferred: ModuleTypes) -> str | None:
    """How `claimed` (types a pass handed over) contradicts `inferred` (the type checker's
    types of the same module), or None: every inferred node and global signature must be
    claimed with the same type."""
    for expr, ty in inferred.table.items():
        other = claimed.table.get(expr)
        if other is None:
            return f"no type for a {type(expr).__name__} node"
        if not _same_type(other, ty):
            return f"a {type(expr).__name__} node has type {type_text(ty)}, not {type_text(other)}"
    for name, sig in inferred.global_types.items():
        other_sig = claimed.global_types.get(name)
        if other_sig is None or not _same_type(other_sig, sig):
            return f"@{name} has no or another signature"
    return None


class DebugInstrument(PassInstrument):
    """After every pass: well-formedness, type inference (types the pass handed to the
    context must agree with it), the promised normal form, and the types of `@main` (its
    signature) unchanged. Before every pass: the normal form it needs.

    Failures raise `PassError` naming the pass responsible.
    """

    def __init__(self) -> None:
        self._last: IRModule | None = None
        self._last_signature: str | None = None

    def _signature(self, mod: IRModule, ctx: PassContext, culprit: str) -> str | None:
        claimed = ctx.remembered_types(mod)
        try:
            types = ctx.checked_types(mod)
        except Error as err:
            raise PassError(f"{culprit}: the result does not type-check:\n{err.render()}") from err
        if claimed is not None and claimed is not types:
            problem = types_disagreement(claimed, types)
            if problem is not None:
                raise PassError(f"{culprit} handed over wrong types: {problem}")
        sig = types.global_types.get("main")
        return None if sig is None else type_text(sig)

    def before_pass(self, p: Pass, mod: IRModule, ctx: PassContext) -> None:
        """Check the input's normal form; remember `@main`'s signature."""
        problem = normal_form_problem(mod, p.needs)
        if problem is not None:
            raise PassError(f"pass '{p.name}' needs {p.needs} normal form, but {problem}")
        if mod is not self._last:
            self._last_signature = self._signature(mod, ctx, f"the input of pass '{p.name}'")
            self._last = mod

    def after_pass(self, p: Pass, before: IRModule, after: IRModule, ctx: PassContext) -> None:
        """Check the output; `PassError` naming `p` if it broke anything."""
        culprit = f"pass '{p.name}'"
        if after is before and before is self._last:
            signature = self._last_signature  # unchanged, and checked already
        else:
            check_well_formed(after, f"the result of {culprit}")
            signature = self._signature(after, ctx, culprit)
        if signature != self._last_signature:
            raise PassError(
                f"{culprit} changed the signature of @main from "
                f"{self._last_signature} to {signature}"
            )
        problem = normal_form_problem(after, p.produces)
        if problem is not None:
            raise PassError(f"{culprit} promises {p.produces} normal form, but {problem}")
        self._last = after
        self._last_signature = signature
