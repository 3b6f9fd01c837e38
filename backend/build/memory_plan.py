"""Memory planning: intermediate buffers share one workspace by liveness.

Each intermediate tensor is live from the step that writes it to the last step that reads
it. Steps are visited in order; a step's outputs are placed first (in the smallest free
block that fits, else at the end of the workspace), then the blocks of inputs it read for
the last time are freed and merged with free neighbours. A kernel therefore never writes
over a tensor it is still reading. Offsets are multiples of `ALIGNMENT` bytes. The result
is a `MemoryPlan` value (`backend.runtime.plan`), which the compiled model reads.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..runtime.plan import MemoryPlan

ALIGNMENT = 64
"""Bytes every buffer offset is a multiple of (a cache line; AVX-512 vector width)."""


def _aligned(size: int) -> int:
    return max(ALIGNMENT, (size + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT)


def plan_memory(
    sizes: Sequence[int], steps: Sequence[tuple[Sequence[int], Sequence[int]]]
) -> MemoryPlan:
    """Offsets for buffers `0..len(sizes)-1` (sizes in bytes), given the `(reads, writes)`
    buffer indices of each step in execution order. Buffers never written are not placed
    (offset 0, no space); a buffer written but never read stays live for its step only."""
    last_use: dict[int, int] = {}
    for index, (reads, writes) in enumerate(steps):
        for b in (*reads, *writes):
            last_use[b] = index
    offsets = [0] * len(sizes)
    free: list[tuple[int, int]] = []  # (offset, size), sorted by offset
    end = 0
    placed: set[int] = set()

    def allocate(size: int) -> int:
        nonlocal end
        best = -1
        for k, (_, block) in enumerate(free):
            if block >= size and (best < 0 or block < free[best][1]):
                best = k
        if best < 0:
            if free and free[-1][0] + free[-1][1] == end:
                offset, _ = free.pop()
                end = offset + size
                return offset
            offset = end
            end += size
            return offset
        offset, block = free[best]
        if block == size:
            free.pop(best)
        else:
            free[best] = (offset + size, block - size)
        return offset

    def release(offset: int, size: int) -> None:
        free.append((offset, size))
        free.sort()
        merged: list[tuple[int, int]] = []
        for o, s in free:
            if merged and merged[-1][0] + merged[-1][1] == o:
                merged[-1] = (merged[-1][0], merged[-1][1] + s)
            else:
                merged.append((o, s))
        free[:] = merged

    for index, (reads, writes) in enumerate(steps):
        for b in writes:
            if b not in placed:
                placed.add(b)
                offsets[b] = allocate(_aligned(sizes[b]))
        dead = {b for b in (*reads, *writes) if last_use[b] == index and b in placed}
        for b in sorted(dead):
            release(offsets[b], _aligned(sizes[b]))
    naive = sum(_aligned(sizes[b]) for b in placed)
    return MemoryPlan(tuple(offsets), end, naive)
