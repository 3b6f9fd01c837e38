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
from ...lang.expr import Call, Expr, Function
from ...lang.module import IRModule
from ...lang.op import Op
from ...lang.traversal import children, post_order, with_children
from ...typecheck import ModuleTypes, infer_expr
from .matcher import Matcher, consumers, root_classes, root_op_names
from .patterns import DFPattern
from .retype import SweepTypes

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


class RuleIndex:
    """The rules that can fire at a node, in their order: a rule whose pattern needs a call
    of certain operators (or a certain node class) at its root is tried only there."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = tuple(rules)
        self._names = [root_op_names(r.pattern) for r in self.rules]
        self._classes = [root_classes(r.pattern) for r in self.rules]
        self._cache: dict[tuple[type, str], tuple[Rule, ...]] = {}

    def at(self, node: Expr) -> tuple[Rule, ...]:
        """The rules worth trying at `node`."""
        name = node.op.name if isinstance(node, Call) and isinstance(node.op, Op) else ""
        key = (type(node), name)
        found = self._cache.get(key)
        if found is None:
            found = tuple(
                r
                for r, names, classes in zip(self.rules, self._names, self._classes)
                if (classes is None or type(node) in classes) and (names is None or name in names)
            )
            self._cache[key] = found
        return found


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
    """One bottom-up sweep; returns the new root.

    Types are inferred for `root` when a rule first needs one, then kept up to date for
    the nodes the sweep rebuilds or creates (`SweepTypes`), so every rewrite a sweep can
    see is done in that sweep.
    """
    sweep: SweepTypes | None = None
    # (node, rebuilt, result) of the nodes visited before types were first needed
    pending: list[tuple[Expr, Expr, Expr]] = []
    current: tuple[Expr, Expr] = (root, root)

    def sweep_types() -> ModuleTypes | None:
        nonlocal sweep
        base = types()
        if base is None:
            return None
        sweep = SweepTypes(base)
        for node, rebuilt, result in pending:
            sweep.carry(node, rebuilt)
            if result is not rebuilt:
                sweep.add(result)
        pending.clear()
        sweep.carry(*current)
        return base

    matcher = Matcher(sweep_types, lambda: consumers(root))
    memo: dict[int, Expr] = {}
    keep: list[Expr] = []
    index = RuleIndex(rules)
    for node in post_order(root):
        kids = children(node)
        rebuilt = with_children(node, [memo[id(k)] for k in kids]) if kids else node
        if sweep is not None and rebuilt is not node:
            sweep.carry(node, rebuilt)
        current = (node, rebuilt)
        result = rebuilt
        for r in index.at(rebuilt):
            found = matcher.match(r.pattern, rebuilt)
            if found is None:
                continue
            replacement = r.callback(**found.captures)
            if replacement is not None and replacement is not rebuilt:
                fired.append((r, rebuilt, replacement))
                result = replacement
                if sweep is not None:
                    sweep.add(replacement)
                break
        if sweep is None and (rebuilt is not node or result is not rebuilt):
            pending.append((node, rebuilt, result))
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
