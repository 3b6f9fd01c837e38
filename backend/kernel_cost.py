"""What a compiled kernel does, for profiles and reports: a plain value the lowering makes
(from the compute definitions), compiled models keep and artifacts save."""

from __future__ import annotations

import math

from attrs import frozen

PLAN_KEY = "parallel_plan"
"""The loop-IR annotation of a planned parallel loop (its `ParallelLoop`), and the PrimFunc
attribute holding the plans of a kernel's parallel loops."""


@frozen
class ParallelLoop:
    """The plan of one parallel loop of a kernel (`backend.lower.parallel_plan` decides it):
    `work` inner iterations in all (weighted: `parallel_plan.work_of`), `extent` iterations
    of the parallel loop (after `fused` loops were fused into it), cut into `tasks` chunks
    run on `threads` threads."""

    work: int
    extent: int
    threads: int
    tasks: int
    fused: int = 1

    @property
    def imbalance(self) -> float:
        """The slowest thread's share of the work over the mean share, in the worst order
        of claiming tasks: it runs `ceil(tasks / threads)` tasks of `ceil(extent / tasks)`
        iterations (1.0: perfectly even)."""
        if self.threads <= 1 or self.extent <= 0:
            return 1.0
        tasks = max(1, min(self.tasks, self.extent))
        slowest = math.ceil(tasks / self.threads) * math.ceil(self.extent / tasks)
        return float(min(slowest, self.extent) * self.threads / self.extent)

    def describe(self) -> str:
        """`14 tasks on 8 threads` (`1 task on 1 thread` for a serial loop)."""
        tasks = "task" if self.tasks == 1 else "tasks"
        threads = "thread" if self.threads == 1 else "threads"
        return f"{self.tasks} {tasks} on {self.threads} {threads}"


@frozen
class KernelCost:
    """What a kernel does, for profiles: `name` as TVM would call the fused function
    (`fused_nn_conv2d_add_nn_relu`, made unique in the model), the operators fused into it
    in evaluation order, `kind` the operator that chose its schedule (the anchor, e.g.
    `nn.conv2d`; the first operator when nothing did), and per call the floating-point
    operations and the bytes of its arguments (inputs, lifted constants, outputs) as the
    compute definitions give them."""

    name: str
    ops: tuple[str, ...]
    kind: str
    flops: int
    bytes: int
    parallel: tuple[ParallelLoop, ...] = ()

    def describe_parallel(self) -> str:
        """How the kernel runs on the thread pool: its parallel loops' plans, or `serial`."""
        if not self.parallel:
            return "serial (no parallel loop)"
        return ", ".join(p.describe() for p in self.parallel)


__all__ = ["PLAN_KEY", "KernelCost", "ParallelLoop"]
