"""Per-operator facet tables: one table type, one error for a missing entry.

An operator has several facets besides its declaration: a type relation (typecheck), a
reference implementation (the interpreter), a compute definition and a schedule (backend),
a test generator (testing). Each facet is an `OpTable` keyed by the `Op` object and named
after the facet, so every missing entry fails the same way:

    COMPUTES: OpTable[ComputeFn] = OpTable("compute definition")

    @COMPUTES.register("nn.relu", "nn.leaky_relu")     # names resolved with `lang.op`
    def relu(attrs, inputs, out_type): ...

    COMPUTES.lookup(get_op("tanh"))   # MissingFacetError: operator `tanh` has no compute definition

A facet is written by operator family, one table per family module; the facet's package
lists its family tables explicitly and joins them with `OpTable.merge`, which refuses an
operator that two families both claim.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar, overload

from .diagnostics import Error
from .op import Op, get_op

T = TypeVar("T")
D = TypeVar("D")


class MissingFacetError(Error):
    """An operator has no entry in a facet table; `op` and `facet` say which."""

    def __init__(self, op: Op, facet: str) -> None:
        super().__init__(f"operator `{op.name}` has no {facet}")
        self.op = op
        self.facet = facet


class DuplicateFacetError(ValueError):
    """An operator was given a facet twice (a programming error, raised at import)."""


def _as_op(op: Op | str) -> Op:
    return get_op(op) if isinstance(op, str) else op


class OpTable(Generic[T]):
    """One facet of operators: a value per `Op`, in registration order.

    `register` and `add` refuse an operator that already has an entry; item assignment
    (`table[op] = value`) and deletion exist for tests that patch a table.
    """

    __slots__ = ("_entries", "facet")

    def __init__(self, facet: str) -> None:
        self.facet = facet
        """What the table holds, as the error message names it ("compute definition")."""
        self._entries: dict[Op, T] = {}

    def add(self, op: Op | str, value: T) -> None:
        """Make `value` the entry of `op` (an `Op` or a declared name); an operator that
        already has one is a `DuplicateFacetError`."""
        op = _as_op(op)
        if op in self._entries:
            raise DuplicateFacetError(f"operator `{op.name}` already has a {self.facet}")
        self._entries[op] = value

    def register(self, *ops: Op | str) -> Callable[[T], T]:
        """Decorator: make the decorated value the entry of each of `ops`; the value is
        returned unchanged."""

        def decorate(value: T) -> T:
            for op in ops:
                self.add(op, value)
            return value

        return decorate

    def lookup(self, op: Op) -> T:
        """The entry of `op`; `MissingFacetError` naming the operator and facet if none."""
        try:
            return self._entries[op]
        except KeyError:
            raise MissingFacetError(op, self.facet) from None

    @overload
    def get(self, op: Op) -> T | None: ...
    @overload
    def get(self, op: Op, default: D) -> T | D: ...
    def get(self, op: Op, default: object = None) -> object:
        """The entry of `op`, or `default`."""
        return self._entries.get(op, default)

    def missing(self, ops: Iterable[Op]) -> list[Op]:
        """The operators of `ops` without an entry, in the order given."""
        return [op for op in ops if op not in self._entries]

    def items(self) -> Iterator[tuple[Op, T]]:
        """(operator, entry) pairs in registration order."""
        return iter(list(self._entries.items()))

    @classmethod
    def merge(cls, facet: str, tables: Iterable[OpTable[T]]) -> OpTable[T]:
        """One table holding the entries of `tables` (the families of a facet); an
        operator in two of them is a `DuplicateFacetError`."""
        merged: OpTable[T] = cls(facet)
        for table in tables:
            for op, value in table._entries.items():
                merged.add(op, value)
        return merged

    def __getitem__(self, op: Op) -> T:
        return self.lookup(op)

    def __setitem__(self, op: Op, value: T) -> None:
        self._entries[op] = value

    def __delitem__(self, op: Op) -> None:
        del self._entries[op]

    def __contains__(self, op: object) -> bool:
        return op in self._entries

    def __iter__(self) -> Iterator[Op]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"OpTable({self.facet!r}, {len(self._entries)} operators)"


__all__ = ["DuplicateFacetError", "MissingFacetError", "OpTable"]
