"""Padding and slicing attributes: `padding` pairs and `strided_slice`'s begin/end/strides.

`padding` has 1 value (every side), one per spatial axis (both sides) or two per spatial
axis (all befores, then all afters: `[top, left, bottom, right]` in 2-D).

`strided_slice` canonicalizes begin and end like TVM: `strides` None (or omitted) means a
stride of 1 on every sliced axis (TVM's Python default); with `axes` None the lists cover the
leading axes and the rest is padded (whole axis with stride 1; a missing end with a
negative stride is 0, which TVM keeps); in "size" mode `end` holds lengths (negative: to
the end) and strides are 1; a negative index counts from the end, then it is clamped to
`[0, dim]` (positive stride) or `[-1, dim - 1]` (negative stride). A range that runs the
wrong way for its stride is an error (TVM rejects it), not an empty slice.
"""

from __future__ import annotations

from collections.abc import Sequence

from .axes import normalize_axes
from .error import SemanticsError

MAX_INDEX = 2**63 - 1
"""TVM's stand-in for "to the end" in strided_slice (int64 max)."""


def pad_pairs(padding: Sequence[int], n: int) -> list[tuple[int, int]]:
    """The `(before, after)` padding of each of `n` spatial axes from a padding attribute."""
    pads = [int(p) for p in padding]
    if len(pads) == 1:
        return [(pads[0], pads[0])] * n
    if len(pads) == n:
        return [(p, p) for p in pads]
    if len(pads) == 2 * n:
        return list(zip(pads[:n], pads[n:]))
    counts = sorted({1, n, 2 * n})
    raise SemanticsError(
        f"padding={pads} must have {', '.join(map(str, counts[:-1]))} or "
        f"{counts[-1]} values for {n} spatial axes"
    )


def strided_slice_axes(
    ndim: int,
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int] | None,
    axes: Sequence[int] | None,
    slice_mode: str,
    subject: str = "the input",
) -> list[tuple[int, int, int, int]]:
    """`(axis, begin, end, stride)` of each sliced axis, before clamping to the axis.

    `strides` None means 1 on every sliced axis. `subject` names the input in messages.
    The stride is never 0 (an error).
    """
    if slice_mode not in ("end", "size"):
        raise SemanticsError(
            f'the attribute `slice_mode` must be one of "end", "size", not "{slice_mode}"'
        )
    given = strides
    begin, end = list(begin), list(end)
    strides = [1] * (len(begin) if axes is None else len(axes)) if given is None else list(given)
    if axes is not None:
        if not len(axes) == len(begin) == len(end) == len(strides):
            lists = f"axes={list(axes)}, begin={begin}"
            lists += f" and end={end}" if given is None else f", end={end} and strides={strides}"
            raise SemanticsError(f"{lists} must have the same length")
        chosen = normalize_axes(axes, ndim)
    else:
        for name, values in (("begin", begin), ("end", end), ("strides", strides)):
            if len(values) > ndim:
                raise SemanticsError(
                    f"{name}={values} has {len(values)} values, but {subject} has only {ndim} axes"
                )
        chosen = list(range(ndim))
        strides += [1] * (ndim - len(strides))
        begin += [0 if s > 0 else MAX_INDEX for s in strides[len(begin) :]]
        end += [0 if s < 0 else MAX_INDEX for s in strides[len(end) :]]
    if slice_mode == "size":
        strides = [1] * len(strides)
        end = [MAX_INDEX if e < 0 else b + e for b, e in zip(begin, end)]
    for s, ax in zip(strides, chosen):
        if s == 0:
            raise SemanticsError(f"strides={strides}: a stride cannot be 0 (axis {ax})")
    return list(zip(chosen, begin, end, strides))


def _canonical(index: int, extent: int, stride: int) -> int:
    low, high = (-1, extent - 1) if stride < 0 else (0, extent)
    if index < 0:
        index += extent
    return min(max(index, low), high)


def slice_range(axis: int, begin: int, end: int, stride: int, extent: int) -> tuple[int, int]:
    """`(first, count)`: the slice of an axis of size `extent` reads `first + k * stride`
    for `k < count`. A slice running backwards for its stride is an error."""
    first, stop = _canonical(begin, extent, stride), _canonical(end, extent, stride)
    if (stop > first) if stride < 0 else (first > stop):
        raise SemanticsError(
            f"the slice from {begin} to {end} with stride {stride} of axis {axis} "
            f"(size {extent}) runs backwards: it starts at {first} and ends at {stop}"
        )
    return first, (abs(stop - first) + abs(stride) - 1) // abs(stride)


def strided_slice_ranges(
    shape: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int] | None,
    axes: Sequence[int] | None,
    slice_mode: str,
) -> list[tuple[int, int, int] | None]:
    """`(first, stride, count)` per axis of a static `shape` (None: the axis is not sliced;
    `strides` None: 1 on every sliced axis)."""
    ranges: list[tuple[int, int, int] | None] = [None] * len(shape)
    for ax, b, e, s in strided_slice_axes(len(shape), begin, end, strides, axes, slice_mode):
        first, count = slice_range(ax, b, e, s, shape[ax])
        ranges[ax] = (first, s, count)
    return ranges
