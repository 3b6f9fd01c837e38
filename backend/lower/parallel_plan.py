"""The parallel plan of a kernel: how many threads each parallel loop uses, in how many tasks.

Schedules mark loops parallel (`Stage.parallel`, most through `schedules.parallel_rows`); this
module decides, at build time, from each loop's work and the target's thread count:

* **threads**: 1 when the loop's work (`work_of`: the leaf statements it runs, vector lanes
  counted one by one, a reduction step weighing 1 and any other store `ELEMENT_WEIGHT`) is
  below `GRAIN_WORK`; otherwise the count the cost model below finds fastest, which is fewer
  than all for medium work (each thread costs `THREAD_NS`);
* **fusion**: the loops perfectly nested right inside the parallel loop (serial, constant
  extent) that are fused into it (`f = i * J + j`) when the parallel loop alone cannot give
  the threads even shares (only then: fused indices cost divisions and hide the loops from
  loop partitioning, so the fewest fused loops with a balanced plan are taken);
* **tasks**: how many chunks the (fused) loop is cut into; a thread claims one at a time.

A plan is balanced when its `imbalance` (`kernel_cost.ParallelLoop.imbalance`: the slowest
thread's share in the worst claiming order over the mean share) is at most `MAX_IMBALANCE`;
the fastest balanced plan at the fewest fused loops is taken, and an unbalanced one only
when no balanced plan with two threads or more exists (a loop of 7 iterations with nothing
to fuse on 4 threads).

    plan_function(prim, target.num_threads)   # -> PrimFunc with every parallel loop planned

Each outermost parallel loop gets the annotation `PLAN_KEY` (a `ParallelLoop`), read by code
generation (`codegen.parallel`), and the function the attribute `PLAN_KEY` (the tuple of its
loops' plans, in order), which `describe_kernel` copies into the kernel's `KernelCost`.
Parallel loops nested in another run serially and are not planned.

The cost model, in nanoseconds, of running `work` iterations on `k > 1` threads:

    work * ITER_NS * slowest_share + SYNC_NS + THREAD_NS * k + TASK_NS * ceil(tasks / k)
         + work * ITER_NS / tasks * LATE_TASK + FUSE_NS * extent / k * (loops fused - 1)

against `work * ITER_NS` on one thread. `GRAIN_WORK` is where two threads start to win in the
model (about 64 K, the fixed threshold schedules used before plans existed).

The work is counted in reduction steps: a step of a reduction (`c[i] = c[i] + a * b`, a lane
of a fused multiply-add into an accumulator the kernel keeps in registers: what GEMM and
convolution loops run) weighs 1, an iteration storing a fresh value (elementwise, copies,
padding, packing; a reduction's first and last writes) `ELEMENT_WEIGHT`. The weight is
fitted to the grain measured on elementwise loops, which is where the break-even of the two
kinds differs:

Measured (`python bench/threads.py --grain --rounds 3`: `(x + y) * x` over n float32 on one
thread and on two threads in two tasks, 2-core AMD EPYC, load average 1.2-1.4, five rounds
in two runs): two threads cost 0.7-1.4 us more than one on a tiny loop (the model's
`SYNC_NS + 2 * THREAD_NS` is 1.34 us) and win from 32 K elements (from 16 K in one round;
1.1-1.4x at 32 K, 1.5x at 128 K). For FMA-bound loops `GRAIN_WORK` is where that overhead
puts the break-even (64 K lanes at `ITER_NS`, about 3 us of work). An elementwise iteration
costs about 0.3 ns alone, six times `ITER_NS`, but two threads share the memory traffic and
gain only ~1.5x where an FMA loop gains ~2x, so its break-even is not at a sixth of the
grain but at about half: `ELEMENT_WEIGHT = 2` puts it at 32 K elements, as measured (again
in the one round of three that the load let two threads win, load average 6.4). With other
processes holding the second core (load 1.5-6) two threads mostly never won at any size: the
measurement needs a quiet machine.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs
from attrs import frozen

from ..kernel_cost import PLAN_KEY, ParallelLoop
from ..tir.expr import BufferLoad, FloorDiv, FloorMod, IntImm, PrimExpr, Var
from ..tir.stmt import (
    Allocate,
    BufferStore,
    Evaluate,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
)
from ..tir.visitor import StmtMutator, sub_expressions, substitute

ITER_NS = 0.05
"""Nanoseconds per inner iteration on one thread (a vector lane of a fused multiply-add at
about half the fp32 peak, or of an elementwise loop at memory speed)."""

SYNC_NS = 900.0
"""Fixed cost of one parallel loop on the pool: publishing the job, the last task's join."""

THREAD_NS = 220.0
"""Cost of each thread taking part: a worker noticing the job and joining it."""

TASK_NS = 40.0
"""Cost of one task: claiming it (an atomic add) and the call."""

LATE_TASK = 0.25
"""What a thread starting late (descheduled by another process, woken from sleep) costs the
loop, in tasks of the loop: more, smaller tasks let the others absorb it."""

FUSE_NS = 2.0
"""Cost per fused iteration of recovering the loop indices (a division and a remainder)."""

MAX_IMBALANCE = 1.125
"""A plan is balanced when the slowest thread's share is at most this over the mean."""

MAX_TASKS = 1024
"""The most tasks a loop is cut into."""

TASKS_PER_THREAD = (1, 2, 3, 4, 6, 8)
"""Tasks per thread a plan may choose (besides one task per iteration for short loops)."""

MAX_FUSED = 3

ELEMENT_WEIGHT = 2
"""What an iteration that stores a fresh value (elementwise, copies, packing) weighs in a
loop's work, against 1 for a reduction step (a lane of a fused multiply-add into an
accumulator); see the module docstring for the measurement it is fitted to."""


def _serial_ns(work: int) -> float:
    return work * ITER_NS


@frozen
class Choice:
    """A plan for one loop: `fused` loops fused (1: the parallel loop alone), their
    `extent`, `threads` and `tasks`, the modelled time `ns` and the `loop` record."""

    fused: int
    extent: int
    threads: int
    tasks: int
    ns: float
    loop: ParallelLoop


def serial_choice(work: int, extent: int) -> Choice:
    """The plan that runs a loop on one thread, in one task."""
    return Choice(1, extent, 1, 1, _serial_ns(work), ParallelLoop(work, extent, 1, 1, 1))


def _task_counts(extent: int, threads: int) -> list[int]:
    counts = {threads * m for m in TASKS_PER_THREAD if threads * m <= min(extent, MAX_TASKS)}
    if extent <= MAX_TASKS:
        counts.add(extent)
    return sorted(counts)


def choose(work: int, extents: Sequence[int], threads: int) -> Choice:
    """The plan of a parallel loop doing `work` inner iterations in all, whose extent is
    `extents[0]` and `extents[1:]` the extents of the loops that could be fused into it
    (perfectly nested, outermost first), on a target with `threads` threads."""
    first = max(1, int(extents[0])) if extents else 1
    if threads <= 1 or work < GRAIN_WORK:
        return serial_choice(work, first)
    return _fastest(work, extents, threads)


def _fastest(work: int, extents: Sequence[int], threads: int) -> Choice:
    """The modelled-fastest plan (balanced first), serial when nothing beats it."""
    first = max(1, int(extents[0])) if extents else 1
    per_depth: list[tuple[bool, float, Choice]] = []  # the best plan at each fusion depth
    extent = 1
    for fused, e in enumerate(list(extents)[:MAX_FUSED], start=1):
        extent *= max(1, int(e))
        found: tuple[bool, float, Choice] | None = None
        for k in range(2, min(threads, extent) + 1):
            for tasks in _task_counts(extent, k):
                loop = ParallelLoop(work, extent, k, tasks, fused)
                share = loop.imbalance / k
                ns = (
                    _serial_ns(work) * share
                    + SYNC_NS
                    + THREAD_NS * k
                    + TASK_NS * math.ceil(tasks / k)
                    + _serial_ns(work) / tasks * LATE_TASK
                    + FUSE_NS * extent / k * (fused - 1)
                )
                unbalanced = loop.imbalance > MAX_IMBALANCE
                if found is None or (unbalanced, ns) < found[:2]:
                    found = (unbalanced, ns, Choice(fused, extent, k, tasks, ns, loop))
        if found is not None:
            per_depth.append(found)
    best: Choice | None = None
    # the fewest fused loops that give a balanced plan; the fastest plan when none does
    balanced = [choice for unbalanced, _, choice in per_depth if not unbalanced]
    if balanced:
        best = balanced[0]
    elif per_depth:
        best = min(per_depth, key=lambda d: d[1])[2]
    if best is None or best.ns >= _serial_ns(work):
        return serial_choice(work, first)
    return best


def _grain() -> int:
    """The least work for which the model runs a long loop on two threads rather than one."""
    lo, hi = 1, 1 << 40
    while lo < hi:
        mid = (lo + hi) // 2
        if _fastest(mid, [MAX_TASKS], 2).threads > 1:
            hi = mid
        else:
            lo = mid + 1
    return lo


GRAIN_WORK = _grain()
"""Below this many inner iterations a parallel loop runs on one thread (the model's
break-even for two threads, about 64 K with the constants above)."""


# ------------------------------------------------------------------------- loop-IR analysis


def _int(e: PrimExpr) -> int | None:
    return e.value if isinstance(e, IntImm) else None


def _accumulates(store: BufferStore) -> bool:
    """Whether `store` updates its buffer in place (`c[i] = c[i] + a * b`: a reduction's
    step, which a compiled kernel keeps in registers) rather than writing a fresh value."""
    return any(
        isinstance(node, BufferLoad) and node.buffer is store.buffer
        for node in sub_expressions(store.value)
    )


def work_of(stmt: Stmt, unknown_extent: int = 1024) -> int:
    """The weighted inner iterations `stmt` runs: its leaf statements counted once per
    iteration of the loops around them (vector and unrolled loops too), a reduction step
    (a store updating its own buffer in place, or an evaluation) weighing 1 and any other
    store (elementwise, copies, packing, a reduction's first or last write) weighing
    `ELEMENT_WEIGHT`; both branches of an `if` counted; a loop of unknown extent counts as
    `unknown_extent` iterations."""
    total = 0
    weights: dict[int, int] = {}  # by id of the leaf (a leaf is met once per path to it)
    stack: list[tuple[Stmt, int]] = [(stmt, 1)]
    while stack:
        s, times = stack.pop()
        if isinstance(s, BufferStore):
            weight = weights.get(id(s))
            if weight is None:
                weight = 1 if _accumulates(s) else ELEMENT_WEIGHT
                weights[id(s)] = weight
            total += times * weight
        elif isinstance(s, Evaluate):
            total += times
        elif isinstance(s, For):
            extent = _int(s.extent)
            stack.append((s.body, times * (extent if extent is not None else unknown_extent)))
        elif isinstance(s, SeqStmt):
            stack.extend((c, times) for c in s.stmts)
        elif isinstance(s, IfThenElse):
            stack.append((s.then_case, times))
            if s.else_case is not None:
                stack.append((s.else_case, times))
        elif isinstance(s, (LetStmt, Allocate)):
            stack.append((s.body, times))
    return total


def fusable_chain(loop: For) -> list[For]:
    """`loop` and the loops perfectly nested in it that could be fused into it: serial,
    starting at a constant, of constant extent, each the whole body of the one before."""
    chain = [loop]
    body = loop.body
    while (
        len(chain) < MAX_FUSED
        and isinstance(body, For)
        and body.kind is ForKind.SERIAL
        and _int(body.min) is not None
        and _int(body.extent) is not None
    ):
        chain.append(body)
        body = body.body
    return chain


def fuse_chain(chain: Sequence[For], plan: ParallelLoop) -> For:
    """The loops of `chain` fused into one parallel loop of `plan.extent` iterations (the
    first loop's variable renamed; the others recovered by division and remainder)."""
    outer = chain[0]
    if len(chain) == 1:
        return attrs.evolve(outer, annotations={**outer.annotations, PLAN_KEY: plan})
    fused = Var(f"{outer.loop_var.name}.fused", outer.loop_var.dtype)
    mapping: dict[Var, PrimExpr] = {}
    stride = 1
    for loop in reversed(chain):
        extent = _int(loop.extent)
        assert extent is not None
        index: PrimExpr = FloorDiv(fused, IntImm(stride, fused.dtype)) if stride > 1 else fused
        if loop is not outer:
            index = FloorMod(index, IntImm(extent, fused.dtype))
        mapping[loop.loop_var] = index + loop.min if _int(loop.min) != 0 else index
        stride *= extent
    body = substitute(chain[-1].body, mapping)
    annotations = {**outer.annotations, PLAN_KEY: plan}
    zero, total = IntImm(0, fused.dtype), IntImm(plan.extent, fused.dtype)
    return For(fused, zero, total, outer.kind, body, annotations)


class _Planner(StmtMutator):
    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.depth = 0  # parallel loops entered
        self.plans: list[ParallelLoop] = []

    def enter(self, s: Stmt) -> Stmt:
        if not isinstance(s, For) or s.kind is not ForKind.PARALLEL or self.depth:
            return s
        if PLAN_KEY in s.annotations:
            return s
        chain = fusable_chain(s)
        extent = _int(s.extent)
        if extent is None:  # a dynamic loop: all threads, tasks decided when it runs
            return s
        work = work_of(s)
        extents = [int(_int(loop.extent) or 1) for loop in chain]
        choice = choose(work, extents, self.threads)
        return fuse_chain(chain[: choice.fused], choice.loop)

    def open_scope(self, s: Stmt, index: int) -> None:
        if isinstance(s, For) and s.kind is ForKind.PARALLEL:
            self.depth += 1
            if self.depth == 1 and PLAN_KEY in s.annotations:
                self.plans.append(s.annotations[PLAN_KEY])

    def close_scope(self, s: Stmt, index: int) -> None:
        if isinstance(s, For) and s.kind is ForKind.PARALLEL:
            self.depth -= 1


def plan_function(func: PrimFunc, threads: int) -> PrimFunc:
    """`func` with each outermost parallel loop planned for `threads` threads (module
    docstring): annotated with its `ParallelLoop`, fused with the loops nested in it when
    the plan says so; the plans in order as the attribute `PLAN_KEY`."""
    planner = _Planner(threads)
    body = planner.visit(func.body)
    return attrs.evolve(func, body=body, attrs={**func.attrs, PLAN_KEY: tuple(planner.plans)})


def kernel_plans(func: PrimFunc) -> tuple[ParallelLoop, ...]:
    """The plans `plan_function` recorded on `func` (none when it was not planned)."""
    found: Any = func.attrs.get(PLAN_KEY, ())
    return tuple(found)


__all__ = [
    "ELEMENT_WEIGHT",
    "FUSE_NS",
    "GRAIN_WORK",
    "ITER_NS",
    "MAX_IMBALANCE",
    "PLAN_KEY",
    "SYNC_NS",
    "TASK_NS",
    "THREAD_NS",
    "Choice",
    "choose",
    "fusable_chain",
    "fuse_chain",
    "kernel_plans",
    "plan_function",
    "serial_choice",
    "work_of",
]
