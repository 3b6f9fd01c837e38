"""Plain-text tables that fit a width: numbers right-aligned in human units, text columns
cut with "…" down to a minimum, and the least useful columns hidden when even that does not
fit."""

from __future__ import annotations

from collections.abc import Sequence

from attrs import evolve, frozen

_GAP = "  "
_PREFIXES = ("", "k", "M", "G", "T", "P")


@frozen
class Column:
    """One column: `key` names it for hiding, `title` heads it, `cells` are its text per row.
    A numeric column is right-aligned; a column with `min_width` > 0 may be cut to that many
    characters (its title included) when the table is too wide."""

    key: str
    title: str
    cells: tuple[str, ...]
    numeric: bool = True
    min_width: int = 0

    @property
    def natural_width(self) -> int:
        """The width that shows every cell and the title whole."""
        return max([len(self.title), *(len(cell) for cell in self.cells)])

    @property
    def narrowest(self) -> int:
        """The width it may be cut to."""
        if self.min_width <= 0:
            return self.natural_width
        return min(self.natural_width, self.min_width)


def fit_columns(
    columns: Sequence[Column], width: int, drop_order: Sequence[str]
) -> tuple[list[Column], list[Column]]:
    """The columns to show within `width` characters, text columns cut to fit, and the
    columns hidden for it. Columns whose cells are all empty are left out first; then
    columns are hidden in `drop_order` until the cut table fits (or nothing more can go)."""
    kept = [c for c in columns if c.min_width > 0 or any(c.cells)]
    dropped: list[Column] = []
    pending = [key for key in drop_order if any(c.key == key for c in kept)]
    while _width(kept, narrowest=True) > width and pending:
        key = pending.pop(0)
        dropped += [c for c in kept if c.key == key]
        kept = [c for c in kept if c.key != key]
    return _cut(kept, width), dropped


def _width(columns: Sequence[Column], narrowest: bool) -> int:
    widths = [c.narrowest if narrowest else c.natural_width for c in columns]
    return sum(widths) + len(_GAP) * max(len(columns) - 1, 0)


def _cut(columns: list[Column], width: int) -> list[Column]:
    """Cut the cuttable columns, the last ones first, until the table fits `width`."""
    excess = _width(columns, narrowest=False) - width
    for index in reversed(range(len(columns))):
        column = columns[index]
        if excess <= 0:
            break
        room = column.natural_width - column.narrowest
        if room <= 0:
            continue
        target = column.natural_width - min(room, excess)
        excess -= column.natural_width - target
        columns[index] = evolve(
            column,
            title=_truncate(column.title, target),
            cells=tuple(_truncate(cell, target) for cell in column.cells),
        )
    return columns


def _truncate(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def render(columns: Sequence[Column]) -> list[str]:
    """The table's lines: the titles, a rule, then one line per row (no trailing spaces)."""
    if not columns:
        return []
    widths = [c.natural_width for c in columns]

    def line(texts: Sequence[str]) -> str:
        parts = [
            text.rjust(w) if c.numeric else text.ljust(w)
            for text, w, c in zip(texts, widths, columns)
        ]
        return _GAP.join(parts).rstrip()

    rows = len(columns[0].cells)
    lines = [line([c.title for c in columns]), "-" * _width(columns, narrowest=False)]
    lines += [line([c.cells[row] for c in columns]) for row in range(rows)]
    return lines


def format_us(ns: float) -> str:
    """Nanoseconds as microseconds with a precision that suits their size."""
    us = ns / 1000.0
    if abs(us) < 10:
        return f"{us:.2f}"
    if abs(us) < 1000:
        return f"{us:.1f}"
    return f"{us:,.0f}"


def format_count(value: float | None) -> str:
    """A count with an SI prefix and three significant digits (`1.23k`, `45.6M`); blank
    when unknown."""
    if value is None:
        return ""
    exponent = 0
    while abs(value) / 1000**exponent >= 999.5 and exponent < len(_PREFIXES) - 1:
        exponent += 1
    if exponent == 0 and float(value).is_integer():
        return f"{value:.0f}"
    return _three_digits(value / 1000**exponent) + _PREFIXES[exponent]


def _three_digits(value: float) -> str:
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def format_rate(value: float | None) -> str:
    """A rate (GFLOP/s, GB/s): one decimal below 1000, thousands separated above; blank
    when unknown."""
    if value is None:
        return ""
    return f"{value:.1f}" if abs(value) < 1000 else f"{value:,.0f}"


__all__ = ["Column", "fit_columns", "format_count", "format_rate", "format_us", "render"]
