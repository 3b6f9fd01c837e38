"""Exhaustiveness of `match`: which values no clause covers.

The classic candidate-expansion algorithm (as TVM's `match_exhaustion.cc`): start from
the single candidate `_`; for each clause, drop the candidates it covers, keep those it
cannot match, and split a candidate the clause matches only partly (expand its first
wildcard that the clause refines into every constructor of that ADT, or into a tuple of
wildcards) and look again. The candidates left at the end are the uncovered cases.

Patterns are small, so the helpers recurse on pattern structure; the number of candidates
is capped so that a pathological match cannot take forever.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

from ..lang.adt import Constructor, TypeData
from ..lang.expr import (
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
)

WILD = PatternWildcard()
_BUDGET = 20_000


class _Fit(enum.Enum):
    MATCH = 0
    NO_MATCH = 1
    PARTIAL = 2


def _ctor_pattern(ctor: Constructor, subs: Sequence[Pattern]) -> Pattern:
    return PatternConstructor(ctor, tuple(subs))  # type: ignore[arg-type]  # attrs converter


def _tuple_pattern(subs: Sequence[Pattern]) -> Pattern:
    return PatternTuple(tuple(subs))  # type: ignore[arg-type]  # attrs converter


def _fit(clause: Pattern, candidate: Pattern) -> _Fit:
    if isinstance(clause, PatternWildcard | PatternVar):
        return _Fit.MATCH
    if isinstance(candidate, PatternWildcard | PatternVar):
        return _Fit.PARTIAL
    if isinstance(clause, PatternConstructor):
        if not isinstance(candidate, PatternConstructor):
            return _Fit.NO_MATCH
        if clause.constructor is not candidate.constructor:
            return _Fit.NO_MATCH
        return _fit_all(clause.patterns, candidate.patterns)
    if isinstance(clause, PatternTuple) and isinstance(candidate, PatternTuple):
        return _fit_all(clause.patterns, candidate.patterns)
    return _Fit.NO_MATCH


def _fit_all(clauses: Sequence[Pattern], candidates: Sequence[Pattern]) -> _Fit:
    if len(clauses) != len(candidates):
        return _Fit.NO_MATCH
    result = _Fit.MATCH
    for c, d in zip(clauses, candidates):
        fit = _fit(c, d)
        if fit is _Fit.NO_MATCH:
            return fit
        if fit is _Fit.PARTIAL:
            result = fit
    return result


def _expand(
    clause: Pattern,
    candidate: Pattern,
    type_data: Callable[[Constructor], TypeData | None],
) -> list[Pattern] | None:
    """Split `candidate` at the first wildcard that `clause` refines; None if impossible."""
    if isinstance(candidate, PatternWildcard | PatternVar):
        if isinstance(clause, PatternConstructor):
            data = type_data(clause.constructor)
            if data is None:
                return None
            return [_ctor_pattern(c, [WILD] * len(c.inputs)) for c in data.constructors]
        if isinstance(clause, PatternTuple):
            return [_tuple_pattern([WILD] * len(clause.patterns))]
        return None
    if isinstance(clause, PatternConstructor | PatternTuple) and isinstance(
        candidate, PatternConstructor | PatternTuple
    ):
        subs = list(candidate.patterns)
        for i, (c, d) in enumerate(zip(clause.patterns, subs)):
            if _fit(c, d) is _Fit.PARTIAL:
                parts = _expand(c, d, type_data)
                if parts is None:
                    return None
                out: list[Pattern] = []
                for part in parts:
                    subs[i] = part
                    if isinstance(candidate, PatternConstructor):
                        out.append(_ctor_pattern(candidate.constructor, subs))
                    else:
                        out.append(_tuple_pattern(subs))
                return out
    return None


def missing_cases(
    clauses: Sequence[Pattern],
    type_data: Callable[[Constructor], TypeData | None],
) -> list[Pattern]:
    """Candidate patterns that no clause covers (empty when the match is exhaustive).

    `type_data(ctor)` gives the definition of a constructor's ADT (None if unknown, in
    which case the match is assumed to be exhaustive there).
    """
    candidates: list[Pattern] = [WILD]
    budget = _BUDGET
    for clause in clauses:
        kept: list[Pattern] = []
        work = list(reversed(candidates))
        while work:
            budget -= 1
            if budget < 0:
                return []
            candidate = work.pop()
            fit = _fit(clause, candidate)
            if fit is _Fit.NO_MATCH:
                kept.append(candidate)
            elif fit is _Fit.PARTIAL:
                parts = _expand(clause, candidate, type_data)
                if parts is None:
                    continue
                work.extend(reversed(parts))
        candidates = kept
        if not candidates:
            break
    return candidates


def pattern_text(p: Pattern) -> str:
    """A pattern as the text format writes it: `Cons(_, Nil)`, `(_, _)`, `_`."""
    if isinstance(p, PatternConstructor):
        if not p.patterns:
            return p.constructor.name_hint
        inner = ", ".join(pattern_text(s) for s in p.patterns)
        return f"{p.constructor.name_hint}({inner})"
    if isinstance(p, PatternTuple):
        if len(p.patterns) == 1:
            return f"({pattern_text(p.patterns[0])},)"
        return "(" + ", ".join(pattern_text(s) for s in p.patterns) + ")"
    if isinstance(p, PatternVar):
        return "%" + (p.var.name_hint or "x")
    return "_"
