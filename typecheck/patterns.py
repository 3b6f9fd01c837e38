"""Patterns of `match`: typing them against the scrutinee, and exhaustiveness warnings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lang.adt import Constructor, TypeData
from ..lang.diagnostics import Diagnostic
from ..lang.expr import Match, Pattern, PatternConstructor, PatternTuple, PatternVar
from ..lang.types import TupleType, Type, TypeVar
from .exhaustive import missing_cases, pattern_text
from .locate import Use
from .show import plural
from .subst import substitute, tuple_type, type_call

if TYPE_CHECKING:
    from .checker import Checker


def bind_pattern(checker: Checker, pattern: Pattern, scrutinee: Type, match: Match) -> bool:
    """Check `pattern` against the scrutinee type, typing the variables it binds.

    Returns False if the pattern as a whole does not fit the scrutinee.
    """
    span = match.span
    at_scrutinee = Use(match.data, match, "scrutinee")
    solver = checker.solver
    top_fits = True
    stack: list[tuple[Pattern, Type]] = [(pattern, scrutinee)]
    while stack:
        p, expected = stack.pop()
        top = p is pattern and expected is scrutinee
        if isinstance(p, PatternVar):
            var = p.var
            if var.type_annotation is not None or var in checker.types:
                declared = checker.types.get(var, var.type_annotation)
                assert declared is not None
                checker.types[var] = declared
                fits = checker.expect(
                    declared,
                    expected,
                    var.span or span,
                    f"pattern variable `%{var.name_hint}` does not fit the matched value",
                )
                top_fits = top_fits and (fits or not top)
            else:
                checker.types[var] = expected
        elif isinstance(p, PatternConstructor):
            ctor = p.constructor
            data = checker.scope.constructor_data(ctor)
            if data is None:
                checker.unknown_adt(ctor, span)
                stack.extend((s, solver.fresh_poisoned()) for s in p.patterns)
                continue
            fresh: list[Type] = [solver.fresh() for _ in data.type_vars]
            mapping: dict[TypeVar, Type] = dict(zip(data.type_vars, fresh))
            fits = checker.expect(
                expected,
                type_call(data.header, fresh),
                at_scrutinee if top else span,
                f"pattern `{pattern_text(p)}` does not fit the matched value",
            )
            top_fits = top_fits and (fits or not top)
            if len(p.patterns) != len(ctor.inputs):
                checker.error(
                    span,
                    f"constructor `{ctor.name_hint}` has {plural(len(ctor.inputs), 'field')}, "
                    f"but the pattern `{pattern_text(p)}` gives {len(p.patterns)}",
                )
                fits = False
            for i, sub in enumerate(p.patterns):
                if fits:
                    stack.append((sub, substitute(ctor.inputs[i], mapping)))
                else:
                    stack.append((sub, solver.fresh_poisoned()))
        elif isinstance(p, PatternTuple):
            known = solver.find(expected)
            if isinstance(known, TupleType) and len(known.fields) == len(p.patterns):
                stack.extend(zip(p.patterns, known.fields))
                continue
            fields: list[Type] = [solver.fresh() for _ in p.patterns]
            ok = checker.expect(
                expected,
                tuple_type(fields),
                at_scrutinee if top else span,
                f"pattern `{pattern_text(p)}` does not fit the matched value",
            )
            top_fits = top_fits and (ok or not top)
            for sub, t in zip(p.patterns, fields):
                stack.append((sub, t if ok else solver.fresh_poisoned()))
    return top_fits


def check_exhaustive(checker: Checker, e: Match) -> None:
    """Warn (naming up to three missing cases) if the clauses of `e` do not cover all values."""

    def data_of(ctor: Constructor) -> TypeData | None:
        return checker.scope.constructor_data(ctor)

    missing = missing_cases([c.lhs for c in e.clauses], data_of)
    if not missing:
        return
    shown = [f"`{pattern_text(p)}`" for p in missing[:3]]
    listed = ", ".join(shown) + (", ..." if len(missing) > 3 else "")
    verb = "is" if len(missing) == 1 else "are"
    checker.warnings.append(
        Diagnostic(
            "warning",
            f"match is not exhaustive: {listed} {verb} not covered",
            e.span,
            checker.notes(e.span),
        )
    )
