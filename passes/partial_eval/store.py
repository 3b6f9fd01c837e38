"""The store: what the partial evaluator knows about the contents of reference cells.

References created during partial evaluation get ids (`SRef`); the store maps an id to
the `PValue` last written to it. Knowledge is dropped conservatively: when code that may
write any reference runs (a residual call of an unknown or non-unfolded function, a write
through a reference that is not known), the whole store is forgotten; after an `if` or a
`match` whose branch is not known, only what both branches agree on is kept. No alias or
escape analysis is done.
"""

from __future__ import annotations

from .values import PValue


class Store:
    """Known contents of reference cells, by ref id."""

    __slots__ = ("cells",)

    def __init__(self, cells: dict[int, PValue] | None = None) -> None:
        self.cells: dict[int, PValue] = {} if cells is None else cells

    def read(self, ref_id: int) -> PValue | None:
        """The known contents of the cell, or None if unknown."""
        return self.cells.get(ref_id)

    def write(self, ref_id: int, value: PValue) -> None:
        """Record that the cell now holds `value`."""
        self.cells[ref_id] = value

    def forget(self) -> None:
        """Forget everything (something may have written any cell)."""
        self.cells.clear()

    def copy(self) -> Store:
        """An independent copy (for a branch that may or may not run)."""
        return Store(dict(self.cells))

    def join(self, others: list[Store]) -> None:
        """Keep only the cells every one of `others` knows to hold the same value (the
        state after one of several branches ran)."""
        if not others:
            self.cells.clear()
            return
        first, rest = others[0], others[1:]
        self.cells = {
            ref_id: value
            for ref_id, value in first.cells.items()
            if all(o.cells.get(ref_id) is value for o in rest)
        }
