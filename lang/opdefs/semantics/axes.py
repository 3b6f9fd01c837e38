"""Axis attributes: negative axes count from the end; reductions' `axis` and `exclude`;
an `axis` list that may be None (every axis)."""

from __future__ import annotations

from collections.abc import Iterable

from .error import SemanticsError


def normalize_axis(axis: int, ndim: int, what: str = "axis", extra: int = 0) -> int:
    """`axis` (negative counts from the end) as an index in `[0, ndim + extra)`.

    `extra` widens the range for axes that name a new position (`expand_dims` and `stack`
    take `extra=1`: an axis in `[-ndim - 1, ndim]`); `what` names the attribute in the
    message.
    """
    size = ndim + extra
    if not -size <= axis < size:
        if size == 0:
            raise SemanticsError(f"{what} {axis} is invalid for a scalar input")
        raise SemanticsError(
            f"{what} {axis} is out of range for an input of rank {ndim} "
            f"(expected {-size} <= {what} < {size})"
        )
    return axis + size if axis < 0 else axis


def normalize_axes(axes: Iterable[int], ndim: int, what: str = "axis") -> list[int]:
    """Each axis normalized, in the given order; an axis out of range or given twice is an
    error."""
    out: list[int] = []
    for a in axes:
        n = normalize_axis(a, ndim, what)
        if n in out:
            raise SemanticsError(f"{what} {a} is given twice (as axis {n})")
        out.append(n)
    return out


def reduce_axes(ndim: int, axis: Iterable[int] | None, exclude: bool) -> tuple[int, ...]:
    """The axes a reduction reduces, in increasing order (TVM's `GetReduceAxes`).

    `axis` None or empty means every axis; `exclude` reduces the axes *not* listed.
    """
    listed = [] if axis is None else list(axis)
    if not listed:
        return tuple(range(ndim))
    chosen = normalize_axes(listed, ndim)
    if exclude:
        return tuple(i for i in range(ndim) if i not in chosen)
    return tuple(sorted(chosen))


def listed_axes(axis: Iterable[int] | None, ndim: int, what: str = "axis") -> tuple[int, ...]:
    """The axes an optional axis list names, normalized and in increasing order.

    None names every axis (`nn.l2_normalize`'s `axis=None`, TVM's null array); an empty
    list names none. An axis out of range or given twice is an error.
    """
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(normalize_axes(axis, ndim, what)))
