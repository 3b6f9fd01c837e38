"""Storage reuse: allocations whose lifetimes do not overlap share one piece of memory.

Lifetimes are measured on statement sequences. For a sequence `[s0, s1, ...]`:

* a buffer allocated around the whole sequence (a chain of `Allocate`s whose body is the
  sequence) lives from the first statement that touches it to the last one;
* a buffer allocated around one statement `sk` (directly, or in a chain) lives during `sk`.

Buffers of the same scope and dtype with constant sizes whose live intervals are disjoint are
given one allocation of the largest size (greedy interval colouring); each keeps its shape
through an alias `Buffer` sharing the merged buffer's data pointer. The merged `Allocate`
wraps the whole sequence. `func.attrs["storage_reuse_bytes_saved"]` reports the bytes of
allocation removed (absent when nothing was merged). Buffers of other scopes, with symbolic
sizes, or never used are left alone.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ..arith import simplify
from ..buffer import Buffer
from ..expr import BufferLoad, IntImm, Var
from ..stmt import Allocate, BufferStore, PrimFunc, SeqStmt, Stmt
from ..visitor import StmtMutator, rewrite_expr, sub_expressions

BYTES_SAVED = "storage_reuse_bytes_saved"


def _const_size(buffer: Buffer) -> int | None:
    n = 1
    for d in buffer.shape:
        d = simplify(d)
        if not isinstance(d, IntImm):
            return None
        n *= d.value
    return n


def _peel(s: Stmt) -> tuple[list[Buffer], Stmt]:
    allocs: list[Buffer] = []
    while isinstance(s, Allocate):
        allocs.append(s.buffer)
        s = s.body
    return allocs, s


def _wrap(allocs: list[Buffer], body: Stmt) -> Stmt:
    for b in reversed(allocs):
        body = Allocate(b, body)
    return body


def _touched(s: Stmt) -> set[int]:
    return {
        id(n.buffer.data)
        for n in sub_expressions(s)
        if isinstance(n, (BufferLoad, BufferStore, Allocate))
    }


def _retarget(node: Any, aliases: dict[int, Var]) -> Any:
    """`node` with every access to a buffer whose data is in `aliases` moved to the new data."""
    cache: dict[int, Buffer] = {}
    keep: list[Buffer] = []

    def alias(buf: Buffer) -> Buffer:
        got = cache.get(id(buf))
        if got is None:
            got = attrs.evolve(buf, data=aliases[id(buf.data)])
            cache[id(buf)] = got
            keep.append(buf)
        return got

    def fn(n: Any) -> Any:
        if isinstance(n, (BufferLoad, BufferStore)) and id(n.buffer.data) in aliases:
            return attrs.evolve(n, buffer=alias(n.buffer))
        return None

    return rewrite_expr(node, fn)


class _Reuse(StmtMutator):
    def __init__(self) -> None:
        self.saved = 0

    def leave(self, s: Stmt, entered: Stmt) -> Stmt:
        if isinstance(s, Allocate):
            allocs, body = _peel(s)
            if isinstance(body, SeqStmt):
                return self.region(allocs, body)
        elif isinstance(s, SeqStmt):
            return self.region([], s)
        return s

    def region(self, chain: list[Buffer], seq: SeqStmt) -> Stmt:
        """Merge the buffers of `chain` (around `seq`) and of the chains around its items."""
        stmts = list(seq.stmts)
        candidates: list[tuple[int, int, Buffer, int]] = []  # start, end, buffer, owner
        owned = [(k, k, buf, k) for k, st in enumerate(stmts) for buf in _peel(st)[0]]
        if len(owned) + len(chain) < 2:
            return _wrap(chain, seq)  # fewer than two buffers: nothing to share
        if chain:
            touched = [_touched(st) for st in stmts]
            for buf in chain:
                uses = [k for k, t in enumerate(touched) if id(buf.data) in t]
                if uses:
                    candidates.append((uses[0], uses[-1], buf, -1))
        candidates += owned
        slots = self.colour(candidates)
        if not slots:
            return _wrap(chain, seq)
        aliases: dict[int, Var] = {}
        merged: list[Buffer] = []
        drop: set[int] = set()
        for members in slots:
            size = max(n for _, n in members)
            first = members[0][0]
            data = Var(first.data.name, "handle")
            merged.append(Buffer(first.name, first.dtype, (IntImm(size),), data, first.scope))
            itemsize = np.dtype(first.dtype).itemsize
            self.saved += (sum(n for _, n in members) - size) * itemsize
            for buf, _ in members:
                aliases[id(buf.data)] = data
                drop.add(id(buf))
        new_stmts = []
        for st in stmts:
            inner, body = _peel(st)
            if any(id(b) in drop for b in inner):
                st = _wrap([b for b in inner if id(b) not in drop], body)
            new_stmts.append(st)
        new_seq = _retarget(SeqStmt(tuple(new_stmts)), aliases)
        kept = [b for b in chain if id(b) not in drop]
        return _wrap(kept + merged, new_seq)

    @staticmethod
    def colour(candidates: list[tuple[int, int, Buffer, int]]) -> list[list[tuple[Buffer, int]]]:
        """Greedy interval colouring per (scope, dtype); only slots of 2+ buffers."""
        groups: dict[tuple[str, str], list[tuple[int, int, Buffer, int]]] = {}
        for c in candidates:
            size = _const_size(c[2])
            if size is None or size <= 0:
                continue
            groups.setdefault((c[2].scope, c[2].dtype), []).append((c[0], c[1], c[2], size))
        out: list[list[tuple[Buffer, int]]] = []
        for items in groups.values():
            items.sort(key=lambda c: (c[0], c[1]))
            slots: list[tuple[int, list[tuple[Buffer, int]]]] = []  # (end, members)
            for start, end, buf, size in items:
                free = [k for k, (e, _) in enumerate(slots) if e < start]
                if free:
                    best = max(free, key=lambda k: max(n for _, n in slots[k][1]))
                    slots[best] = (end, [*slots[best][1], (buf, size)])
                else:
                    slots.append((end, [(buf, size)]))
            out.extend(m for _, m in slots if len(m) > 1)
        return out


def storage_reuse(func: PrimFunc) -> PrimFunc:
    """`func` with non-overlapping allocations sharing memory; the bytes saved are in
    `func.attrs["storage_reuse_bytes_saved"]`."""
    reuse = _Reuse()
    body = reuse.visit(func.body)
    if not reuse.saved:
        return func if body is func.body else attrs.evolve(func, body=body)
    saved = func.attrs.get(BYTES_SAVED, 0) + reuse.saved
    return attrs.evolve(func, body=body, attrs={**func.attrs, BYTES_SAVED: saved})


__all__ = ["BYTES_SAVED", "storage_reuse"]
