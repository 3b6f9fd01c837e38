"""Layout strings (`NCHW`, `NHWC`, `NCHW16c`, `OIHW8i8o`): their axes and factors.

A layout names each axis of a tensor. An upper-case letter is a *primal* axis; a
lower-case letter preceded by a factor is a *sub-axis* split off its primal: in `NCHW16c`
the channels are stored as `C` blocks of 16 (`c`).
"""

from __future__ import annotations

from functools import lru_cache

from .error import SemanticsError

LayoutAxes = tuple[tuple[str, int], ...]
"""A parsed layout: `(letter, factor)` per axis, factor 0 for a primal axis."""


@lru_cache(maxsize=4096)  # pure; passes and type relations parse the same few layouts
def parse_layout(text: str, what: str = "layout") -> LayoutAxes:
    """The axes of the layout `text`; `what` names the attribute in the message.

    An empty or `__undef__` layout, a factor on a primal axis, a sub-axis without a
    positive factor or without its primal, and an axis given twice are errors.
    """
    if not text or text == "__undef__":
        raise SemanticsError(f"{what} is undefined (empty)")
    axes: list[tuple[str, int]] = []
    factor = ""
    for ch in text:
        if ch.isdigit():
            factor += ch
        elif ch.isascii() and ch.isupper():
            if factor:
                raise SemanticsError(
                    f'{what} "{text}" is invalid: the primal axis {ch} cannot have a '
                    f"factor ({factor})"
                )
            axes.append((ch, 0))
        elif ch.isascii() and ch.islower():
            if not factor or int(factor) <= 0:
                raise SemanticsError(
                    f'{what} "{text}" is invalid: the sub-axis {ch} needs a positive '
                    f"factor, as in 16{ch}"
                )
            axes.append((ch, int(factor)))
            factor = ""
        else:
            raise SemanticsError(f'{what} "{text}" is invalid: unexpected character "{ch}"')
    if factor:
        raise SemanticsError(f'{what} "{text}" is invalid: it ends with a factor')
    letters = [a for a, _ in axes]
    for a in letters:
        if letters.count(a) > 1:
            raise SemanticsError(f'{what} "{text}" is invalid: the axis {a} appears twice')
        if a.islower() and a.upper() not in letters:
            raise SemanticsError(
                f'{what} "{text}" is invalid: the sub-axis {a} has no primal axis {a.upper()}'
            )
    return tuple(axes)


def layout_letters(text: str) -> list[str]:
    """The axis letters of a layout, in order (`NCHW8c` → N C H W c)."""
    return [a for a, _ in parse_layout(text)]


def spatial_positions(text: str, letters: str = "DHW") -> list[int]:
    """Positions of the primal axes `letters` that the layout has, in the order of
    `letters` (`NHWC` → [1, 2] for H and W)."""
    names = layout_letters(text)
    return [names.index(c) for c in letters if c in names]
