"""`reshape`'s special `newshape` values (TVM's `ReshapeRel` and topi `reshape`).

0 copies the input dimension at the same position (a literal 0 with `allowzero`), -1 is
inferred from the rest, -2 copies all remaining input dimensions, -3 merges the next two
input dimensions, -4 splits the next input dimension into the two values that follow it
(one of them may be -1).

`reshape_plan` reads `newshape` against the input's rank alone and says where each output
dimension comes from; a facet evaluates the plan in its own arithmetic (the type relation
over symbolic dimensions, `reshape_shape` here over integers).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .error import SemanticsError


class ReshapeError(SemanticsError):
    """A `newshape` that does not fit the input; the message is the reason alone.

    Callers put the input shape and `newshape` in front: "cannot reshape the input of
    shape (2, 3) to newshape=[5, -1]: <reason>".
    """


@dataclass(frozen=True)
class Copy:
    """Input dimension `src`, copied (a 0 or a -2)."""

    src: int


@dataclass(frozen=True)
class Merge:
    """Input dimensions `src` and `src + 1` multiplied (a -3)."""

    src: int


@dataclass(frozen=True)
class Part:
    """A size given after a -4: one part of input dimension `src`, split."""

    src: int
    size: int


@dataclass(frozen=True)
class Rest:
    """Input dimension `src` divided by `known`: the -1 part of a -4 split."""

    src: int
    known: int


@dataclass(frozen=True)
class Infer:
    """The -1: whatever the element count leaves."""


OutDim = int | Copy | Merge | Part | Rest | Infer
"""Where one output dimension comes from (an int: that size, given in `newshape`)."""


@dataclass(frozen=True)
class ReshapePlan:
    """The output dimensions of a reshape, and which dimensions the -1 does not share.

    The -1 is the element count of the input dimensions not in `used_in` divided by the
    sizes of the output dimensions not in `used_out` (nor the -1 itself), as in TVM.
    """

    dims: tuple[OutDim, ...]
    used_in: frozenset[int]
    used_out: frozenset[int]
    infer_at: int
    """The position of the -1 in `dims`, or -1."""


def reshape_plan(ndim: int, newshape: Sequence[int], allowzero: bool = False) -> ReshapePlan:
    """Read `newshape` for an input of rank `ndim`; `ReshapeError` if it cannot apply."""
    dims: list[OutDim] = []
    used_in: set[int] = set()
    used_out: set[int] = set()
    src = 0
    infer_at = -1
    i = 0
    while i < len(newshape):
        v = newshape[i]
        if v > 0 or (v == 0 and allowzero):
            dims.append(v)
            src += 1
        elif v == 0:
            if src >= ndim:
                raise ReshapeError(
                    f"the 0 at position {i} copies input dimension {src}, "
                    f"but the input has {ndim} dimensions"
                )
            used_in.add(src)
            used_out.add(len(dims))
            dims.append(Copy(src))
            src += 1
        elif v == -1:
            if infer_at >= 0:
                raise ReshapeError("only one dimension can be -1 (inferred)")
            infer_at = len(dims)
            dims.append(Infer())
            src += 1
        elif v == -2:
            while src < ndim:
                used_in.add(src)
                used_out.add(len(dims))
                dims.append(Copy(src))
                src += 1
        elif v == -3:
            if src + 1 >= ndim:
                raise ReshapeError(
                    f"the -3 at position {i} merges input dimensions {src} "
                    f"and {src + 1}, but the input has {ndim} dimensions"
                )
            used_in.update((src, src + 1))
            used_out.add(len(dims))
            dims.append(Merge(src))
            src += 2
        elif v == -4:
            if i + 2 >= len(newshape):
                raise ReshapeError(f"the -4 at position {i} must be followed by two sizes")
            if src >= ndim:
                raise ReshapeError(
                    f"the -4 at position {i} splits input dimension {src}, "
                    f"but the input has {ndim} dimensions"
                )
            d1, d2 = newshape[i + 1], newshape[i + 2]
            if d1 < -1 or d2 < -1 or d1 == 0 or d2 == 0 or d1 == d2 == -1:
                raise ReshapeError(
                    f"the -4 split into ({d1}, {d2}) needs two positive sizes "
                    "or one positive size and -1"
                )
            used_in.add(src)
            used_out.update((len(dims), len(dims) + 1))
            first: OutDim = Rest(src, d2) if d1 == -1 else Part(src, d1)
            second: OutDim = Rest(src, d1) if d2 == -1 else Part(src, d2)
            dims += [first, second]
            src += 1
            i += 2
        else:
            raise ReshapeError(
                f"{v} at position {i} is neither a size nor one of the "
                "special values 0, -1, -2, -3, -4"
            )
        i += 1
    return ReshapePlan(tuple(dims), frozenset(used_in), frozenset(used_out), infer_at)


def _shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")"


def reshape_shape(
    ishape: Sequence[int], newshape: Sequence[int], allowzero: bool = False
) -> tuple[int, ...]:
    """The output shape of `reshape(newshape)` of a tensor of static shape `ishape`.

    `SemanticsError` if `newshape` does not apply or the element counts differ.
    """
    try:
        return _evaluate(tuple(ishape), reshape_plan(len(ishape), newshape, allowzero))
    except ReshapeError as exc:
        raise SemanticsError(
            f"cannot reshape the input of shape {_shape_text(ishape)} to "
            f"newshape={list(newshape)}: {exc}"
        ) from None


def _evaluate(ishape: tuple[int, ...], plan: ReshapePlan) -> tuple[int, ...]:
    oshape: list[int] = []
    for d in plan.dims:
        if isinstance(d, int):
            oshape.append(d)
        elif isinstance(d, Copy):
            oshape.append(ishape[d.src])
        elif isinstance(d, Merge):
            oshape.append(ishape[d.src] * ishape[d.src + 1])
        elif isinstance(d, Part):
            oshape.append(d.size)
        elif isinstance(d, Rest):
            if ishape[d.src] % d.known:
                raise ReshapeError(
                    f"input dimension {ishape[d.src]} does not split into {d.known}s"
                )
            oshape.append(ishape[d.src] // d.known)
        else:
            oshape.append(1)
    if plan.infer_at >= 0:
        num = math.prod(d for j, d in enumerate(ishape) if j not in plan.used_in)
        den = math.prod(
            d for j, d in enumerate(oshape) if j not in plan.used_out and j != plan.infer_at
        )
        if den == 0:
            raise ReshapeError("-1 cannot be inferred next to a size 0")
        if num % den:
            raise ReshapeError(f"{num} elements do not divide into blocks of {den}")
        oshape[plan.infer_at] = num // den
    size_in, size_out = math.prod(ishape), math.prod(oshape)
    if size_in != size_out:
        raise SemanticsError(
            f"cannot reshape the input of shape {_shape_text(ishape)} ({size_in} elements) "
            f"to {_shape_text(oshape)} ({size_out} elements)"
        )
    return tuple(oshape)
