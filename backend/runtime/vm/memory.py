"""Static memory planning of the VM inside basic blocks.

A kernel output whose register is confined to one basic block (a straight run of
instructions between jump targets and jumps) is dead once its last reader there has run;
a later `AllocTensor` of the same byte size in that block may take its storage instead of
allocating (`AllocTensor.reuse`). The rule, per function:

* a *candidate* register is written only by one `AllocTensor` (not an argument) and read
  only by `InvokeKernel`s of the same block, as an input or as the output it writes;
  anything else — a `Move`, a tuple, ADT, closure or reference holding it, a call of a
  function, an operator or interpreted kernel, a return, a read in another block — lets
  it escape, and its storage is never reused (a tuple, ADT value, field or copy built
  into a register that nothing reads does not count);
* instructions are visited in order; an `AllocTensor` takes the smallest free buffer of
  the block at least its byte size (its output is a view of that buffer's first bytes),
  then the candidates whose last reader is this instruction are freed. A kernel therefore
  never writes over a tensor it reads: its outputs are allocated before the call that
  reads its inputs. An escaping output may take a dead candidate's storage (it then
  leaves the pool for good).

This is the static executor's rule (`backend.build.memory_plan`: place outputs, then free
what the step read last) applied to whole buffers instead of offsets in one workspace: a
VM frame has no workspace of its own, and a buffer handed on is the unit recursion and
escaping values keep alive.

The plan is part of the bytecode (`plan_function` fills in `reuse`); an artifact's loader
recomputes it and refuses bytecode whose plan differs (`check_plan`), so a damaged file
cannot make a kernel write into storage that is live or too small.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterator
from math import prod

import attrs

from . import bytecode as bc

_REGISTER_FIELDS = ("dst", "src", "cond", "tag", "closure", "ref")
_REGISTER_TUPLES = ("inputs", "outputs", "args", "fields", "captured")
_JUMPS = (bc.Goto, bc.JumpIfFalse, bc.JumpIfTagNot, bc.Switch)
_ENDS = (*_JUMPS, bc.Ret, bc.TailInvoke, bc.TailInvokeClosure, bc.Fail)


def registers_of(ins: bc.Instruction) -> Iterator[int]:
    """Every register instruction `ins` reads or writes (not `AllocTensor.reuse`)."""
    for f in attrs.fields(type(ins)):
        if f.name in _REGISTER_FIELDS and f.type == "int":
            yield getattr(ins, f.name)
        elif f.name in _REGISTER_TUPLES:
            yield from getattr(ins, f.name)


def basic_blocks(code: tuple[bc.Instruction, ...]) -> list[int]:
    """The basic block index of each instruction of `code`."""
    leaders = {0}
    for pc, ins in enumerate(code):
        if isinstance(ins, (bc.Goto, bc.JumpIfFalse, bc.JumpIfTagNot)):
            leaders.add(ins.target)
        elif isinstance(ins, bc.Switch):
            leaders.add(ins.default)
            leaders.update(t for _, t in ins.table)
        if isinstance(ins, _ENDS):
            leaders.add(pc + 1)
    blocks = []
    block = -1
    for pc in range(len(code)):
        if pc in leaders:
            block += 1
        blocks.append(block)
    return blocks


def _nbytes(ins: bc.AllocTensor) -> int:
    return prod(ins.shape) * ins.dtype.itemsize


_PURE = (bc.Move, bc.AllocTuple, bc.GetField, bc.AllocADT, bc.GetADTField, bc.GetTag)


def _reads(ins: bc.Instruction) -> list[int]:
    """The registers `ins` reads (its `dst`, when it has one, is written, not read)."""
    found = list(registers_of(ins))
    if hasattr(ins, "dst"):
        found.remove(ins.dst)
    return found


def _unread_pure(code: tuple[bc.Instruction, ...]) -> set[int]:
    """The instructions (by pc) that only build a value into a register nothing reads: a
    tuple, an ADT value, a field or a copy no one uses does not make its fields escape."""
    readers: dict[int, set[int]] = {}
    for pc, ins in enumerate(code):
        for r in _reads(ins):
            readers.setdefault(r, set()).add(pc)
    dead: set[int] = set()
    changed = True
    while changed:
        changed = False
        for pc, ins in enumerate(code):
            if pc not in dead and isinstance(ins, _PURE) and not readers.get(ins.dst, set()) - dead:
                dead.add(pc)
                changed = True
    return dead


def plan_reuse(fn: bc.VMFunction) -> tuple[int, ...]:
    """Per instruction of `fn`, the register whose storage its `AllocTensor` reuses, or -1
    (see the module docstring)."""
    code = fn.code
    blocks = basic_blocks(code)
    unread = _unread_pure(code)
    defs: dict[int, int] = {}  # candidate register -> pc of its AllocTensor
    escaped: set[int] = set(range(fn.arity))
    for pc, ins in enumerate(code):
        if isinstance(ins, bc.AllocTensor):
            if ins.dst in defs:
                escaped.add(ins.dst)
            defs[ins.dst] = pc
        elif pc in unread:
            escaped.add(ins.dst)  # type: ignore[union-attr]
        elif not isinstance(ins, bc.InvokeKernel):
            escaped.update(registers_of(ins))
    last_use: dict[int, int] = {}
    for pc, ins in enumerate(code):
        if isinstance(ins, bc.InvokeKernel):
            for r in (*ins.inputs, *ins.outputs):
                if r not in defs or blocks[defs[r]] != blocks[pc] or defs[r] > pc:
                    escaped.add(r)
                else:
                    last_use[r] = pc
    frees: dict[int, list[int]] = {}
    for r, pc in last_use.items():
        if r not in escaped:
            frees.setdefault(pc, []).append(r)
    reuse = [-1] * len(code)
    free: list[tuple[int, int]] = []  # sorted (bytes, register) of the block's dead candidates
    for pc, ins in enumerate(code):
        if pc and blocks[pc] != blocks[pc - 1]:
            free.clear()
        if isinstance(ins, bc.AllocTensor):
            k = bisect_left(free, (_nbytes(ins), -1))
            if k < len(free):
                reuse[pc] = free.pop(k)[1]
        for r in sorted(frees.get(pc, ())):
            alloc = code[defs[r]]
            assert isinstance(alloc, bc.AllocTensor)
            insort(free, (_nbytes(alloc), r))
    return tuple(reuse)


def plan_function(fn: bc.VMFunction) -> bc.VMFunction:
    """`fn` with each `AllocTensor`'s `reuse` set by the plan."""
    reuse = plan_reuse(fn)
    code = tuple(
        attrs.evolve(ins, reuse=reuse[pc]) if isinstance(ins, bc.AllocTensor) else ins
        for pc, ins in enumerate(fn.code)
    )
    return attrs.evolve(fn, code=code)


def without_plan(fn: bc.VMFunction) -> bc.VMFunction:
    """`fn` allocating every kernel output afresh (`reuse` cleared)."""
    code = tuple(
        attrs.evolve(ins, reuse=-1) if isinstance(ins, bc.AllocTensor) else ins for ins in fn.code
    )
    return attrs.evolve(fn, code=code)


def check_plan(fn: bc.VMFunction) -> int:
    """The first instruction of `fn` whose stored `reuse` is not the plan's, or -1."""
    expected = plan_reuse(fn)
    for pc, ins in enumerate(fn.code):
        stored = ins.reuse if isinstance(ins, bc.AllocTensor) else -1
        if stored != expected[pc]:
            return pc
    return -1


def reuse_count(fn: bc.VMFunction) -> int:
    """How many `AllocTensor`s of `fn` reuse storage."""
    return sum(1 for ins in fn.code if isinstance(ins, bc.AllocTensor) and ins.reuse >= 0)


__all__ = [
    "basic_blocks",
    "check_plan",
    "plan_function",
    "plan_reuse",
    "registers_of",
    "reuse_count",
    "without_plan",
]
