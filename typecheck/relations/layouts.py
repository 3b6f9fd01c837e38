"""Data layouts (`NCHW`, `NHWC`, `NCHW16c`, `OIHW8i8o`) and converting shapes between them.

A layout names each axis of a tensor. An upper-case letter is a *primal* axis; a
lower-case letter preceded by a factor is a *sub-axis* split off its primal: in `NCHW16c`
the channels are stored as `C` blocks of 16 (`c`), so 64 channels have shape
`(.., 4, .., 16)`. Two layouts convert into each other when they have the same primal
axes (TVM's `BijectiveLayout`): the full extent of a primal axis is its dimension times
the factor of its sub-axis (if any), and the target layout splits it again. This module
writes its own small version of TVM's layout algebra over symbolic dimensions (the layout
strings themselves are read by `lang/opdefs/semantics`); sizes that do not divide evenly
are reported rather than rounded down.
"""

from __future__ import annotations

from ...lang.opdefs import semantics
from ...lang.types import ANY, AnyDim, Dim
from ..show import dim_text, shape_text
from . import RelationError
from .shapes import lost, mul, semantic_errors


class Layout:
    """A parsed layout: its axes as (letter, factor) pairs, factor 0 for primal axes."""

    __slots__ = ("axes", "name")

    def __init__(self, name: str, axes: tuple[tuple[str, int], ...]) -> None:
        self.name = name
        self.axes = axes

    @classmethod
    def parse(cls, text: str, what: str = "layout") -> Layout:
        """Parse `text` (`semantics.parse_layout`); RelationError saying what is wrong."""
        with semantic_errors():
            return cls(text, semantics.parse_layout(text, what))

    @property
    def ndim(self) -> int:
        """The number of axes (the rank of a tensor in this layout)."""
        return len(self.axes)

    def primals(self) -> frozenset[str]:
        """The primal axes."""
        return frozenset(a for a, f in self.axes if not f)

    def index_of(self, letter: str) -> int:
        """The position of axis `letter`, or -1."""
        for i, (a, _) in enumerate(self.axes):
            if a == letter:
                return i
        return -1

    def factor_of(self, primal: str) -> int:
        """The factor of the sub-axis split off `primal` (0 if it is not split)."""
        for a, f in self.axes:
            if a == primal.lower() and f:
                return f
        return 0

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Layout({self.name!r})"


def require_convertible(layout: Layout, ref: str, what: str) -> None:
    """RelationError unless `layout` has the same primal axes as the layout `ref`."""
    if layout.primals() != frozenset(ref):
        raise RelationError(
            f'{what} "{layout}" must be convertible to {ref} (have the axes '
            f"{', '.join(ref)}, each at most once, possibly split)"
        )


def _regroup(extent: Dim, have: int, want: int, primal: str, dst: Layout, what: str) -> Dim:
    """A primal axis of `extent` blocks of `have` regrouped into blocks of `want`."""
    if have % want == 0:
        return mul(extent, have // want)
    if type(extent) is int:
        total = extent * have
        if total % want:
            raise RelationError(
                f"{what} has {total} elements on the {primal} axis, which do not split into "
                f'blocks of {want} as layout "{dst}" requires'
            )
        return total // want
    if isinstance(extent, AnyDim):
        return ANY
    return lost()


def convert_shape(shape: tuple[Dim, ...], src: Layout, dst: Layout, what: str) -> tuple[Dim, ...]:
    """`shape` in layout `src` as a shape in layout `dst` (they must have the same primals).

    `what` names the tensor in messages ("the input", "the weight").
    """
    if src.primals() != dst.primals():
        raise RelationError(f'cannot convert {what} from layout "{src}" to "{dst}"')
    if len(shape) != src.ndim:
        raise RelationError(
            f'{what} has shape {shape_text(shape)} (rank {len(shape)}), but its layout "{src}" '
            f"has {src.ndim} axes"
        )
    extent: dict[str, Dim] = {}
    for i, ((letter, factor), d) in enumerate(zip(src.axes, shape)):
        if factor:
            if type(d) is int and d != factor:
                raise RelationError(
                    f"{what} has shape {shape_text(shape)}, but dimension {i} must be {factor} "
                    f'(the sub-axis {factor}{letter} of layout "{src}"), not {dim_text(d)}'
                )
        else:
            extent[letter] = d
    out: list[Dim] = []
    for letter, factor in dst.axes:
        if factor:
            out.append(factor)
        else:
            have = src.factor_of(letter) or 1
            want = dst.factor_of(letter) or 1
            out.append(_regroup(extent[letter], have, want, letter, dst, what))
    return tuple(out)


def to_reference(
    shape: tuple[Dim, ...], layout: str, ref: str, what: str, layout_what: str
) -> tuple[Layout, tuple[Dim, ...]]:
    """Parse `layout`, check that it converts to `ref` (e.g. "NCHW"), and convert `shape`."""
    parsed = Layout.parse(layout, layout_what)
    require_convertible(parsed, ref, layout_what)
    return parsed, convert_shape(shape, parsed, Layout.parse(ref), what)


def from_reference(shape: tuple[Dim, ...], ref: str, layout: Layout, what: str) -> tuple[Dim, ...]:
    """`shape` in the reference layout `ref` converted to `layout`."""
    return convert_shape(shape, Layout.parse(ref), layout, what)
