"""Memory planning: intermediate buffers share one workspace by liveness.

Each intermediate tensor is live from the step that writes it to the last step that reads
it. Steps are visited in order; a step's outputs are placed first (in the smallest free
block that fits, else at the end of the workspace), then the blocks of inputs it read for
the last time are freed and merged with free neighbours. A kernel therefore never writes
over a tensor it is still reading. Offsets are multiples of `ALIGNMENT` bytes. The result
is a `MemoryPlan` value (`backend.runtime.plan`), which the compiled model reads.
`place_slots(plan)` decides where each slot of a graph plan lives and plans the workspace
of the intermediates; loading an artifact runs it again to check the stored layout.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..runtime.plan import GraphPlan, MemoryPlan, flatten_tree

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


def place_slots(plan: GraphPlan) -> tuple[dict[int, tuple[str, int]], list[int], MemoryPlan]:
    """Where each slot of `plan` lives — `input`, `param`, `output` (the model's results, in
    order) or `workspace` — the output slots, and the workspace layout of the rest."""
    slot_kind: dict[int, tuple[str, int]] = {}
    output_slots: list[int] = []
    for s in flatten_tree(plan.output):
        if plan.slots[s].kind == "kernel" and s not in slot_kind:
            slot_kind[s] = ("output", len(output_slots))
            output_slots.append(s)
    temps = []
    for s, slot in enumerate(plan.slots):
        if slot.kind == "input":
            slot_kind[s] = ("input", slot.index)
        elif slot.kind == "constant":
            slot_kind[s] = ("param", slot.index)
        elif s not in slot_kind:
            slot_kind[s] = ("workspace", 0)
            temps.append(s)
    temp_set = set(temps)
    sizes = [plan.slots[s].nbytes if s in temp_set else 0 for s in range(len(plan.slots))]
    memory = plan_memory(
        sizes,
        [
            (
                tuple(i for i in st.inputs if i in temp_set),
                tuple(o for o in st.outputs if o in temp_set),
            )
            for st in plan.steps
        ],
    )
    return slot_kind, output_slots, memory
