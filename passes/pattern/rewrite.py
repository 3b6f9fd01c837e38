"""Rewrite rules (a pattern and a callback) and the bottom-up fixpoint driver.

fold = Rule(is_op("multiply")(wildcard().named("x"), is_constant().named("c")),
            lambda x, c: ...)          # returns a replacement, or None for no change
rewrite(fold + other, mod, max_iterations=20, trace=True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal, TypeVar, overload

from attrs import define, field

from ...lang.diagnostics import Error
from ...lang.expr import Expr, Function
from ...lang.module import IRModule
from ...lang.traversal import children, post_order, with_children
from ...typecheck import ModuleTypes, infer_expr
from .matcher import Matcher, consumers, root_classes
from .patterns import DFPattern

Callback = Callable[..., Expr | None]
E = TypeVar("E", bound=Expr | IRModule)


@define(frozen=True, eq=False)
class Rule:
    """A rewrite rule: where `pattern` matches, `callback(**captures)` returns the
    replacement, or None for no change. Rules combine into a `RuleSet` with `+`."""

    pattern: DFPattern
    callback: Callback
    name: str = ""

    def __attrs_post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", getattr(self.callback, "__name__", "rule"))

    def __add__(self, other: Rule | RuleSet) -> RuleSet:
        return RuleSet((self,)) + other


def _rule_tuple(rules: Iterable[Rule]) -> tuple[Rule, ...]:
    return tuple(rules)


@define(frozen=True, eq=False)
class RuleSet:
    """An ordered collection of rules; at each node the first rule that rewrites wins."""

    rules: tuple[Rule, ...] = field(converter=_rule_tuple)

    def __add__(self, other: Rule | RuleSet) -> RuleSet:
        extra = (other,) if isinstance(other, Rule) else other.rules
        return RuleSet(self.rules + extra)

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)


def rule(pattern: DFPattern, name: str = "") -> Callable[[Callback], Rule]:
    """Decorator: `@rule(pattern)` turns a callback into a `Rule` named after it."""

    def wrap(callback: Callback) -> Rule:
        return Rule(pattern, callback, name)

    return wrap


@define(frozen=True)
class RewriteRecord:
    """One rewrite: which `rule` replaced `before` with `after`, in which `iteration`."""

    rule: str
    before: Expr
    after: Expr
    iteration: int


class RewriteBudgetError(Error):
    """A rewrite did not reach a fixpoint within its iteration budget."""


def _rules(rules: Rule | RuleSet) -> tuple[Rule, ...]:
    return (rules,) if isinstance(rules, Rule) else rules.rules


def _one_pass(
    rules: tuple[Rule, ...],
    root: Expr,
    types: Callable[[], ModuleTypes | None],
    fired: list[tuple[Rule, Expr, Expr]],
) -> Expr:
    """One bottom-up sweep; returns the new root."""
    matcher = Matcher(types, lambda: consumers(root))
    memo: dict[int, Expr] = {}
    keep: list[Expr] = []
    kinds = [root_classes(r.pattern) for r in rules]
    for node in post_order(root):
        kids = children(node)
        rebuilt = with_children(node, [memo[id(k)] for k in kids]) if kids else node
        result = rebuilt
        for r, classes in zip(rules, kinds):
            if classes is not None and type(rebuilt) not in classes:
                continue
            found = matcher.match(r.pattern, rebuilt)
            if found is None:
                continue
            replacement = r.callback(**found.captures)
            if replacement is not None and replacement is not rebuilt:
                fired.append((r, rebuilt, replacement))
                result = replacement
                break
        memo[id(node)] = result
        keep.append(node)
    return memo[id(root)]


def _rewrite_expr(
    rules: tuple[Rule, ...],
    expr: Expr,
    mod: IRModule | None,
    max_iterations: int,
    trace: list[RewriteRecord] | None,
) -> Expr:
    fired: list[tuple[Rule, Expr, Expr]] = []
    for iteration in range(max_iterations):
        current = expr

        def types(current: Expr = current) -> ModuleTypes | None:
            return infer_expr(current, mod)

        fired = []
        expr = _one_pass(rules, current, types, fired)
        if trace is not None:
            trace.extend(RewriteRecord(r.name, b, a, iteration) for r, b, a in fired)
        if not fired:
            return expr
    names = sorted({r.name for r, _, _ in fired})
    raise RewriteBudgetError.at(
        expr.span,
        f"rewrite did not reach a fixpoint in {max_iterations} iterations",
        "rules still firing: " + ", ".join(names),
    )


@overload
def rewrite(
    rules: Rule | RuleSet,
    expr_or_module: E,
    max_iterations: int = ...,
    trace: Literal[False] = ...,
) -> E: ...


@overload
def rewrite(
    rules: Rule | RuleSet,
    expr_or_module: E,
    max_iterations: int = ...,
    *,
    trace: Literal[True],
) -> tuple[E, list[RewriteRecord]]: ...


def rewrite(
    rules: Rule | RuleSet,
    expr_or_module: Expr | IRModule,
    max_iterations: int = 100,
    trace: bool = False,
) -> Any:
    """Apply `rules` bottom-up, sweep after sweep, until no rule fires.

    Types for type/shape/dtype constraints are inferred once per sweep, on demand. Every
    function of a module is rewritten. Raises `RewriteBudgetError` naming the rules that
    kept firing if `max_iterations` sweeps do not reach a fixpoint. With `trace=True`,
    returns `(result, records)` where each `RewriteRecord` says which rule rewrote what.
    """
    ordered = _rules(rules)
    records: list[RewriteRecord] | None = [] if trace else None
    result: Expr | IRModule
    if isinstance(expr_or_module, IRModule):
        result = expr_or_module
        for gv in list(expr_or_module.functions):
            new = _rewrite_expr(ordered, result.functions[gv], result, max_iterations, records)
            if not isinstance(new, Function):
                raise Error.at(new.span, f"a rule replaced the function @{gv.name_hint}")
            result = result.with_function(gv, new)
    else:
        result = _rewrite_expr(ordered, expr_or_module, None, max_iterations, records)
    if records is not None:
        return result, records
    return result
