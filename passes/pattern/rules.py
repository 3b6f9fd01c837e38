"""Rewrite rules as data: a pattern and a callback; rule sets combine with `+`.

    fold = Rule(is_op("multiply")(wildcard().named("x"), is_constant().named("c")),
                lambda x, c: ...)      # returns a replacement, or None for no change
    rules = fold + other               # a RuleSet: at a node, the first rule that rewrites wins

The callback gets the pattern's named captures as keyword arguments; a callback with a
parameter named `ctx` also gets the driver's `RewriteContext` (types of the sweep, the
node as it was before the sweep). `RuleIndex` tells a driver which rules can fire at a
node, so it never tries a rule whose root operator or node class cannot match.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator

from attrs import define, field

from ...lang.expr import Call, Expr
from ...lang.op import Op
from .matcher import root_classes, root_op_names
from .patterns import CapturePattern, DFPattern, WildcardPattern

Callback = Callable[..., Expr | None]


def _wants_ctx(callback: Callback) -> bool:
    try:
        return "ctx" in inspect.signature(callback).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


@define(frozen=True, eq=False)
class Rule:
    """A rewrite rule: where `pattern` matches, `callback(**captures)` returns the
    replacement, or None for no change. Rules combine into a `RuleSet` with `+`."""

    pattern: DFPattern
    callback: Callback
    name: str = ""
    wants_ctx: bool = field(init=False, default=False)
    """Whether the callback has a `ctx` parameter (it then gets the `RewriteContext`)."""

    def __attrs_post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", getattr(self.callback, "__name__", "rule"))
        object.__setattr__(self, "wants_ctx", _wants_ctx(self.callback))

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


def as_rules(rules: Rule | RuleSet | Iterable[Rule]) -> tuple[Rule, ...]:
    """`rules` as a tuple of rules, in order."""
    return (rules,) if isinstance(rules, Rule) else tuple(rules)


def trivial_capture(pattern: DFPattern) -> str | None:
    """For a pattern that matches every node (a wildcard, perhaps named), the name it
    captures the node under ("" for none); None for any other pattern. A driver calls
    such a rule's callback directly, without the matcher."""
    if isinstance(pattern, WildcardPattern):
        return ""
    if isinstance(pattern, CapturePattern) and isinstance(pattern.pattern, WildcardPattern):
        return pattern.name
    return None


Candidate = tuple[Rule, str | None]
"""A rule that can fire at a node, with its `trivial_capture`."""


class RuleIndex:
    """The rules that can fire at a node, in their order: a rule whose pattern needs a call
    of certain operators (or a certain node class) at its root is tried only there."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = tuple(rules)
        self._names = [root_op_names(r.pattern) for r in self.rules]
        self._classes = [root_classes(r.pattern) for r in self.rules]
        self._trivial = [trivial_capture(r.pattern) for r in self.rules]
        self._cache: dict[object, tuple[Candidate, ...]] = {}

    def at(self, node: Expr) -> tuple[Candidate, ...]:
        """The rules worth trying at `node`, each with its `trivial_capture`."""
        key: object = type(node)
        if isinstance(node, Call):
            key = node.op.name if isinstance(node.op, Op) else ""
        found = self._cache.get(key)
        if found is None:
            name = key if isinstance(key, str) else ""
            found = tuple(
                (r, trivial)
                for r, names, classes, trivial in zip(
                    self.rules, self._names, self._classes, self._trivial
                )
                if (classes is None or type(node) in classes) and (names is None or name in names)
            )
            self._cache[key] = found
        return found
