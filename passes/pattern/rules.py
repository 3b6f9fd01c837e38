"""Rewrite rules as data: a pattern and a callback; rule sets combine with `+`.

    fold = Rule(is_op("multiply")(wildcard().named("x"), is_constant().named("c")),
                lambda x, c: ...)      # returns a replacement, or None for no change
    rules = fold + other               # a RuleSet: at a node, the first rule that rewrites wins

The callback gets the pattern's named captures as keyword arguments; a callback with a
parameter named `ctx` also gets the driver's `RewriteContext` (types of the sweep, the
node as it was before the sweep), one with a parameter named `types` the inferred types
of the captures (`types["x"]`). Making a rule checks the callback's parameters against
the captures, so a misspelt parameter fails there, not at the first match. `RuleIndex`
tells a driver which rules can fire at a node, so it never tries a rule whose root
operator or node class cannot match.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping

from attrs import define, field

from ...lang.diagnostics import Error
from ...lang.expr import Call, Expr
from ...lang.op import Op
from ...lang.types import Type
from .compiled import CompiledPattern, compile_pattern
from .matcher import root_classes, root_op_names
from .patterns import (
    AltPattern,
    AttrPattern,
    CallPattern,
    CapturePattern,
    DFPattern,
    DominatorPattern,
    DTypePattern,
    ShapePattern,
    TupleGetItemPattern,
    TuplePattern,
    TypePattern,
    WildcardPattern,
)

Callback = Callable[..., Expr | None]

RESERVED = ("ctx", "types")
"""Callback parameters the driver fills itself: the `RewriteContext` and `CaptureTypes`."""


class RuleSignatureError(Error, TypeError):
    """A rule whose callback's parameters do not fit its pattern's captures."""


def captures_of(pattern: DFPattern) -> tuple[frozenset[str], frozenset[str]]:
    """The capture names every match of `pattern` has, and those some match may have (an
    alternative's captures are in every match only if both sides capture them; captures
    inside a dominator's path pattern never reach a match)."""
    if isinstance(pattern, CapturePattern):
        always, maybe = captures_of(pattern.pattern)
        return always | {pattern.name}, maybe | {pattern.name}
    if isinstance(pattern, AltPattern):
        left, right = captures_of(pattern.left), captures_of(pattern.right)
        return left[0] & right[0], left[1] | right[1]
    parts: tuple[DFPattern, ...] = ()
    if isinstance(pattern, DominatorPattern):
        parts = (pattern.parent, pattern.child)
    elif isinstance(pattern, CallPattern):
        parts = (pattern.op, *pattern.args)
    elif isinstance(pattern, TuplePattern):
        parts = pattern.fields
    elif isinstance(pattern, TupleGetItemPattern):
        parts = (pattern.tuple_value,)
    elif isinstance(pattern, AttrPattern | TypePattern | DTypePattern | ShapePattern):
        parts = (pattern.pattern,)
    always = maybe = frozenset[str]()
    for part in parts:
        a, m = captures_of(part)
        always, maybe = always | a, maybe | m
    return always, maybe


def _check_signature(name: str, pattern: DFPattern, callback: Callback) -> set[str]:
    """The reserved parameters (`ctx`, `types`) `callback` takes; `RuleSignatureError`
    if its parameters do not fit the captures of `pattern` (the driver calls it with
    every capture of a match as a keyword argument)."""
    try:
        params = inspect.signature(callback).parameters
    except (TypeError, ValueError):  # a builtin without a signature: nothing to check
        return set()
    always, maybe = captures_of(pattern)
    reserved = set(RESERVED) & set(params)
    clash = sorted(set(RESERVED) & maybe)
    if clash:
        raise RuleSignatureError(
            f"rule {name!r}: a capture may not be named {clash[0]!r} (the driver passes "
            f"its own {clash[0]!r} argument)"
        )
    kind = inspect.Parameter
    takes_any = any(q.kind is kind.VAR_KEYWORD for q in params.values())
    named = {
        n
        for n, q in params.items()
        if q.kind in (kind.POSITIONAL_OR_KEYWORD, kind.KEYWORD_ONLY) and n not in RESERVED
    }
    required = {n for n in named if params[n].default is kind.empty}
    required |= {n for n, q in params.items() if q.kind is kind.POSITIONAL_ONLY}
    problems = []
    unknown = [] if takes_any else sorted(maybe - named)
    if unknown:
        problems.append(f"no parameter for the capture {_names(unknown)}")
    never = sorted(required - maybe)
    if never:
        problems.append(f"the pattern captures no {_names(never)}")
    sometimes = sorted((required & maybe) - always)
    if sometimes:
        problems.append(
            f"{_names(sometimes)} is captured by some alternatives only (give it a default)"
        )
    if problems:
        captured = _names(sorted(maybe)) if maybe else "nothing"
        raise RuleSignatureError(
            f"rule {name!r}: the callback's parameters do not fit the pattern: "
            + "; ".join(problems)
            + f" (the pattern captures {captured}; the callback takes ({', '.join(params)}))"
        )
    return reserved


def _names(names: list[str]) -> str:
    return ", ".join(repr(n) for n in names)


@define(frozen=True, eq=False, repr=False)
class Rule:
    """A rewrite rule: where `pattern` matches, `callback(**captures)` returns the
    replacement, or None for no change. Rules combine into a `RuleSet` with `+`.

    The callback's parameters are checked against the pattern's captures when the rule is
    made (`RuleSignatureError`): every capture needs a parameter (or `**kwargs`), and
    every parameter without a default a capture present in every match. A parameter named
    `ctx` gets the driver's `RewriteContext`; one named `types` gets `CaptureTypes`, the
    inferred type of each capture (computed only when read)."""

    pattern: DFPattern
    callback: Callback
    name: str = ""
    wants_ctx: bool = field(init=False, default=False)
    """Whether the callback has a `ctx` parameter (it then gets the `RewriteContext`)."""
    wants_types: bool = field(init=False, default=False)
    """Whether the callback has a `types` parameter (it then gets `CaptureTypes`)."""

    def __attrs_post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", getattr(self.callback, "__name__", "rule"))
        reserved = _check_signature(self.name, self.pattern, self.callback)
        object.__setattr__(self, "wants_ctx", "ctx" in reserved)
        object.__setattr__(self, "wants_types", "types" in reserved)

    def __add__(self, other: Rule | RuleSet) -> RuleSet:
        return RuleSet((self,)) + other

    def __repr__(self) -> str:
        return f"Rule({self.name!r}, {self.pattern!r})"


class CaptureTypes:
    """The inferred types of a match's captures, by capture name, for a callback's
    `types` parameter: `types["x"]` is the type of capture `x`, or None when the sweep
    does not know it (the driver then tries the rule again in a later sweep). Types are
    inferred only when a callback reads one."""

    def __init__(
        self, captures: Mapping[str, Expr], type_of: Callable[[Expr], Type | None]
    ) -> None:
        self._captures = captures
        self._type_of = type_of

    def __getitem__(self, name: str) -> Type | None:
        return self._type_of(self._captures[name])

    def get(self, name: str) -> Type | None:
        """The type of capture `name` (None if unknown or not captured)."""
        return self[name] if name in self._captures else None

    def __contains__(self, name: object) -> bool:
        return name in self._captures

    def __iter__(self) -> Iterator[str]:
        return iter(self._captures)

    def __len__(self) -> int:
        return len(self._captures)

    def __repr__(self) -> str:
        return f"CaptureTypes({', '.join(self._captures)})"


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
        self.compiled: dict[Rule, CompiledPattern | None] = {
            r: compile_pattern(r.pattern) for r, t in zip(self.rules, self._trivial) if t is None
        }
        """Each rule's compiled pattern (None for one with a dominator; wildcards, which
        match everything, are left out)."""

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
