"""Replace global objects (ADTs, constructors, global functions) in types and functions.

Used to give a copy of prelude definitions new names: every reference to a replaced
`GlobalTypeVar`, `Constructor` or `GlobalVar` is swapped for its replacement, in
expressions, patterns and every type annotation. Walks are iterative; nodes that mention
nothing replaced are shared, not copied.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..lang.adt import Constructor
from ..lang.expr import (
    Call,
    Clause,
    Expr,
    Function,
    GlobalVar,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    Var,
)
from ..lang.trampoline import Step, run
from ..lang.traversal import post_order, rewrite_post_order
from ..lang.types import FuncType, GlobalTypeVar, RefType, TupleType, Type, TypeCall


def type_children(t: Type) -> tuple[Type, ...]:
    """The types directly inside `t`."""
    if isinstance(t, TypeCall):
        return t.args
    if isinstance(t, TupleType):
        return t.fields
    if isinstance(t, FuncType):
        return (*t.arg_types, t.ret_type, *t.type_constraints)
    if isinstance(t, RefType):
        return (t.value,)
    return ()


def adts_in(types: Iterable[Type | None]) -> set[GlobalTypeVar]:
    """The ADTs that `types` mention."""
    found: set[GlobalTypeVar] = set()
    stack = [t for t in types if t is not None]
    while stack:
        t = stack.pop()
        if isinstance(t, TypeCall):
            found.add(t.func)
        stack.extend(type_children(t))
    return found


def map_type(t: Type, adts: Mapping[GlobalTypeVar, GlobalTypeVar]) -> Type:
    """`t` with the ADTs in `adts` replaced (`t` itself if it mentions none of them)."""
    if not adts:
        return t
    return run(_map_type(t, adts))


def _map_type(t: Type, adts: Mapping[GlobalTypeVar, GlobalTypeVar]) -> Step[Type]:
    kids = type_children(t)
    new: list[Type] = []
    for kid in kids:
        new.append((yield _map_type(kid, adts)))
    same = all(a is b for a, b in zip(new, kids))
    if isinstance(t, TypeCall):
        func = adts.get(t.func, t.func)
        return t if same and func is t.func else TypeCall(func, new)
    if same:
        return t
    if isinstance(t, TupleType):
        return TupleType(new)
    if isinstance(t, FuncType):
        count = len(t.arg_types)
        return FuncType(new[:count], new[count], t.type_params, new[count + 1 :])
    assert isinstance(t, RefType)
    return RefType(new[0])


def map_types(
    types: tuple[Type, ...], adts: Mapping[GlobalTypeVar, GlobalTypeVar]
) -> tuple[Type, ...]:
    """`map_type` over a tuple (the tuple itself if nothing changes)."""
    new = tuple(map_type(t, adts) for t in types)
    return types if all(a is b for a, b in zip(new, types)) else new


class Renaming:
    """Replacements for ADTs, constructors and global functions, applied to functions."""

    def __init__(
        self,
        adts: Mapping[GlobalTypeVar, GlobalTypeVar],
        constructors: Mapping[Constructor, Constructor],
        globals_: Mapping[GlobalVar, GlobalVar],
    ) -> None:
        self.adts = adts
        self.constructors = constructors
        self.globals = globals_

    def type(self, t: Type | None) -> Type | None:
        """A type with the ADTs replaced."""
        return None if t is None else map_type(t, self.adts)

    def function(self, fn: Function) -> Function:
        """`fn` with every replaced object swapped for its replacement."""
        result = rewrite_post_order(fn, self._node)
        assert isinstance(result, Function)
        return result

    def _node(self, node: Expr) -> Expr | None:
        if isinstance(node, GlobalVar):
            return self.globals.get(node)
        if isinstance(node, Constructor):
            return self.constructors.get(node)
        if isinstance(node, Var):
            annotation = self.type(node.type_annotation)
            if annotation is node.type_annotation:
                return None
            return Var(node.name_hint, annotation, span=node.span)
        if isinstance(node, Call) and node.type_args:
            return node.replace(type_args=map_types(node.type_args, self.adts))  # type: ignore[no-any-return]
        if isinstance(node, Function):
            return node.replace(ret_type=self.type(node.ret_type))  # type: ignore[no-any-return]
        if isinstance(node, Match):
            clauses = tuple(self._clause(c) for c in node.clauses)
            if all(a is b for a, b in zip(clauses, node.clauses)):
                return None
            return node.replace(clauses=clauses)  # type: ignore[no-any-return]
        return None

    def _clause(self, clause: Clause) -> Clause:
        lhs = run(self._pattern(clause.lhs))
        return clause if lhs is clause.lhs else Clause(lhs, clause.rhs)

    def _pattern(self, pattern: Pattern) -> Step[Pattern]:
        if not isinstance(pattern, PatternConstructor | PatternTuple):
            return pattern  # variables were replaced as children of the match
        subs: list[Pattern] = []
        for sub in pattern.patterns:
            subs.append((yield self._pattern(sub)))
        unchanged = all(a is b for a, b in zip(subs, pattern.patterns))
        if isinstance(pattern, PatternTuple):
            return pattern if unchanged else PatternTuple(subs)
        ctor = self.constructors.get(pattern.constructor, pattern.constructor)
        if unchanged and ctor is pattern.constructor:
            return pattern
        return PatternConstructor(ctor, subs)


def references(fn: Function) -> tuple[set[GlobalVar], set[GlobalTypeVar]]:
    """The global functions and ADTs that `fn` mentions (constructors count as their ADT)."""
    globals_: set[GlobalVar] = set()
    types: list[Type | None] = []
    adts: set[GlobalTypeVar] = set()
    for node in post_order(fn):
        if isinstance(node, GlobalVar):
            globals_.add(node)
        elif isinstance(node, Constructor):
            adts.add(node.belong_to)
        elif isinstance(node, Var):
            types.append(node.type_annotation)
        elif isinstance(node, Function):
            types.append(node.ret_type)
        elif isinstance(node, Call):
            types.extend(node.type_args)
        elif isinstance(node, Match):
            stack = [clause.lhs for clause in node.clauses]
            while stack:
                pattern = stack.pop()
                if isinstance(pattern, PatternConstructor):
                    adts.add(pattern.constructor.belong_to)
                if isinstance(pattern, PatternConstructor | PatternTuple):
                    stack.extend(pattern.patterns)
    return globals_, adts | adts_in(types)
