"""Every declared operator has every facet: a type relation, a reference implementation, a
compute definition, a schedule rule (its own or its pattern kind's) and a test generator.

A failure names the operator and the facet ("operator `X` has no compute definition"). An
operator that legitimately lacks a facet goes in `ALLOWED_MISSING`, with the reason.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest
from relay.backend.lower import computes, schedules
from relay.backend.runtime import op_impls
from relay.lang import all_ops
from relay.lang.op import OpPattern
from relay.lang.optable import MissingFacetError, OpTable
from relay.testing import typed_ops
from relay.typecheck import relations

FACETS: dict[str, tuple[OpTable[object], str]] = {
    # facet -> (the facet's table, the name of the family tables in its package's modules)
    "type relation": (relations.RELATIONS, "RELATIONS"),
    "reference implementation": (op_impls.IMPLS, "IMPLS"),
    "compute definition": (computes.COMPUTES, "COMPUTES"),
    "test generator": (typed_ops.GENERATORS, "GENERATORS"),
}

PACKAGES = {
    "type relation": relations,
    "reference implementation": op_impls,
    "compute definition": computes,
    "test generator": typed_ops,
    "schedule": schedules,
}

ALLOWED_MISSING: dict[tuple[str, str], str] = {
    # (operator name, facet) -> why the operator has no such facet today. Empty: every
    # declared operator has all five (schedules through their pattern kind when they have
    # no rule of their own).
}


def _missing(facet: str, lookup: object) -> list[str]:
    found = []
    for op in all_ops():
        if (op.name, facet) in ALLOWED_MISSING:
            continue
        try:
            lookup(op)  # type: ignore[operator]
        except MissingFacetError as err:
            found.append(err.message)
    return found


@pytest.mark.parametrize("facet", list(FACETS))
def test_every_operator_has_the_facet(facet: str) -> None:
    table, _ = FACETS[facet]
    assert table.facet == facet
    missing = _missing(facet, table.lookup)
    assert not missing, "\n".join(missing)


def test_every_operator_has_a_schedule_rule() -> None:
    assert set(schedules.BY_PATTERN) == set(OpPattern)  # the fallback covers every kind
    missing = _missing("schedule", schedules.schedule_rule)
    assert not missing, "\n".join(missing)
    assert schedules.SCHEDULES.facet == "schedule"
    assert all(op in all_ops() for op in schedules.SCHEDULES)


def test_the_allow_list_is_not_stale() -> None:
    lookups = {facet: table.lookup for facet, (table, _) in FACETS.items()}
    lookups["schedule"] = schedules.schedule_rule
    stale = []
    for name, facet in ALLOWED_MISSING:
        op = next(op for op in all_ops() if op.name == name)
        try:
            lookups[facet](op)
            stale.append(f"operator `{name}` has a {facet} now")
        except MissingFacetError:
            pass
    assert not stale, "\n".join(stale)


@pytest.mark.parametrize("facet", list(PACKAGES))
def test_every_family_table_is_listed_in_its_facet(facet: str) -> None:
    """A family module's table that its package forgot to list would drop its operators."""
    package = PACKAGES[facet]
    merged = package.SCHEDULES if facet == "schedule" else FACETS[facet][0]
    name = "SCHEDULES" if facet == "schedule" else FACETS[facet][1]
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        family = getattr(module, name, None)
        if isinstance(family, OpTable):
            assert family.facet == facet, info.name
            for op, value in family.items():
                assert merged.get(op) is value, f"{info.name}: `{op.name}` is not in {name}"
