"""`OpTable`: registration by name or object, one error for a missing entry, merging the
family tables of a facet, and the mapping protocol tests use to patch a table."""

from __future__ import annotations

import pytest
from relay.lang.diagnostics import AttrsError, Error
from relay.lang.op import Op, OpPattern, get_op
from relay.lang.optable import DuplicateFacetError, MissingFacetError, OpTable


def test_register_by_name_or_object_and_look_up() -> None:
    table: OpTable[str] = OpTable("test facet")

    @table.register("exp", get_op("log"))
    def value() -> str:
        return "v"

    assert table.lookup(get_op("exp")) is value and table[get_op("log")] is value
    assert get_op("exp") in table and "exp" not in table  # keyed by the Op object
    assert list(table) == [get_op("exp"), get_op("log")] and len(table) == 2
    assert dict(table.items()) == {get_op("exp"): value, get_op("log"): value}


def test_a_missing_entry_is_one_error_naming_operator_and_facet() -> None:
    table: OpTable[int] = OpTable("schedule")
    tanh = get_op("tanh")
    with pytest.raises(MissingFacetError) as info:
        table.lookup(tanh)
    assert info.value.message == "operator `tanh` has no schedule"
    assert isinstance(info.value, Error)  # a diagnosed error of the project's family
    assert info.value.op is tanh and info.value.facet == "schedule"
    with pytest.raises(MissingFacetError):
        table[tanh]
    assert table.get(tanh) is None and table.get(tanh, 7) == 7


def test_registering_twice_or_an_unknown_name_is_an_error() -> None:
    table: OpTable[int] = OpTable("test facet")
    table.add("exp", 1)
    with pytest.raises(DuplicateFacetError, match="operator `exp` already has a test facet"):
        table.register("log", "exp")(2)
    with pytest.raises(ValueError):  # DuplicateFacetError is a ValueError
        table.add(get_op("exp"), 3)
    with pytest.raises(AttrsError, match=r"unknown operator `no\.such\.op`"):
        table.add("no.such.op", 4)


def test_missing_lists_operators_without_an_entry_in_order() -> None:
    table: OpTable[int] = OpTable("test facet")
    table.add("exp", 1)
    ops = [get_op("log"), get_op("exp"), get_op("tanh")]
    assert table.missing(ops) == [get_op("log"), get_op("tanh")]


def test_merge_joins_family_tables_and_refuses_overlaps() -> None:
    first: OpTable[int] = OpTable("test facet")
    second: OpTable[int] = OpTable("test facet")
    first.add("exp", 1)
    second.add("log", 2)
    merged = OpTable.merge("test facet", [first, second])
    assert merged.facet == "test facet" and dict(merged.items()) == {
        get_op("exp"): 1,
        get_op("log"): 2,
    }
    second.add("exp", 3)
    with pytest.raises(DuplicateFacetError, match="`exp` already has a test facet"):
        OpTable.merge("test facet", [first, second])


def test_tests_can_patch_a_table(monkeypatch: pytest.MonkeyPatch) -> None:
    table: OpTable[int] = OpTable("test facet")
    table.add("exp", 1)
    fake = Op("test.fake", 1, None, OpPattern.OPAQUE)
    with monkeypatch.context() as m:
        m.setitem(table, fake, 5)  # type: ignore[arg-type]
        m.delitem(table, get_op("exp"))  # type: ignore[arg-type]
        assert table[fake] == 5 and get_op("exp") not in table
    assert fake not in table and table[get_op("exp")] == 1
    assert repr(table) == "OpTable('test facet', 1 operators)"
