"""Tuning tasks: one per distinct kernel of a model after the build pipeline (fusion).

    tasks = relay.tuning.extract_tasks(mod, params, target)     # heaviest first
    task.space, task.lower(config), task.flops(), task.key, task.weight

A task is a fused Primitive function as the build compiles it: the same pass pipeline
(`driver.optimize`), the same graph plan, and the same weights folded at build time
(`constant_params`), so a config measured for a task is the one the build applies. The key
names the anchor operator and its output shape, then a digest of the function's text, the
folded parameter positions and the target (CPU, features, vector width, threads): two
kernels that print alike for the same machine are one task, whose `weight` counts the
model's calls of it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from typing import Any

import attrs
from attrs import field, frozen

from ...lang.expr import Function
from ...lang.printer import print_expr
from ..lower.cost import kernel_flops
from ..lower.lower_func import LoweringError, lower_primitive, lower_to_te
from ..target import Target
from ..tir.stmt import PrimFunc
from .space import EMPTY, Config, ConfigSpace, anchor_of, space_for


def target_identity(target: Target) -> str:
    """What a task's kernels depend on in a target: CPU, features, vector width, threads."""
    features = ",".join(target.features)
    return f"{target.cpu}|{features}|{target.vector_bits}|{target.num_threads}"


def task_digest(fn: Function, constant_params: Collection[int] | None, target: Target) -> str:
    """The digest part of a task key: the function's text, folded positions, target."""
    text = print_expr(fn)
    folded = tuple(sorted(constant_params)) if constant_params is not None else None
    data = f"{text}\n{folded}\n{target_identity(target)}".encode()
    return hashlib.sha256(data).hexdigest()[:16]


def digest_of_key(key: str) -> str:
    """The digest part of a task key (after the last `-`)."""
    return key.rsplit("-", 1)[-1]


def task_key(fn: Function, constant_params: Collection[int] | None, target: Target) -> str:
    """The key of the task of kernel `fn` (module docstring)."""
    digest = task_digest(fn, constant_params, target)
    graph = lower_to_te(fn, target=target)
    _, _, op_name = anchor_of(graph.outputs)
    shape = "x".join(str(int(getattr(d, "value", 0))) for d in graph.outputs[0].shape)
    return f"{op_name}[{shape}]-{digest}"


@frozen(eq=False)
class Task:
    """A kernel to tune: `fn` (a Primitive function), the target, the parameter positions
    folded at build time, its config `space`, and `weight` (calls per model run)."""

    key: str
    op_name: str
    weight: int
    space: ConfigSpace
    fn: Function
    target: Target
    constant_params: tuple[int, ...] | None = None
    _flops: int = field(default=-1, alias="flops")

    def lower(self, config: Config | None = None) -> PrimFunc:
        """The scheduled loop IR of `config` (the default schedule for None), before the
        TIR passes and code generation."""
        return self.lowered(config).func

    def lowered(self, config: Config | None = None) -> Any:
        """The `LoweredKernel` of `config` (`lower`'s, with constants, trace and TE)."""
        knobs = config.as_dict() if config is not None else None
        return lower_primitive(
            self.fn, None, "tune_kernel", self.target, self.constant_params, config=knobs
        )

    def flops(self) -> float:
        """Floating-point (or integer) operations of one call of the kernel."""
        if self._flops >= 0:
            return float(self._flops)
        return float(kernel_flops(lower_to_te(self.fn, target=self.target)))

    def describe(self) -> str:
        """One line: key, weight, space size."""
        return f"{self.key} x{self.weight} ({self.space.size} configs)"


def make_task(
    fn: Function, target: Target, constant_params: Collection[int] | None = None, weight: int = 1
) -> Task:
    """The task of one Primitive function `fn` (a `LoweringError` when it cannot be compiled)."""
    graph = lower_to_te(fn, target=target)
    _, _, op_name = anchor_of(graph.outputs)
    folded = tuple(sorted(constant_params)) if constant_params is not None else None
    return Task(
        key=task_key(fn, folded, target),
        op_name=op_name,
        weight=weight,
        space=space_for(graph.outputs, target),
        fn=fn,
        target=target,
        constant_params=folded,
        flops=kernel_flops(graph),
    )


def tasks_from_plan(plan: Any, target: Target) -> list[Task]:
    """The tasks of a graph plan built for `target`: one per distinct kernel the build
    compiles (kernels the native backend cannot lower are left out), `weight` = how many
    times a run calls it; the heaviest (weight x FLOPs) first. (`relay.tuning.extract_tasks`
    makes the plan from a module the way the build does.)"""
    from ..build.fold_plan import constant_params

    weights = constant_params(plan)
    calls: dict[int, int] = {}
    for step in plan.steps:
        calls[step.kernel] = calls.get(step.kernel, 0) + 1
    by_key: dict[str, Task] = {}
    for k, fn in enumerate(plan.kernels):
        try:
            task = make_task(fn, target, weights.get(k), calls.get(k, 0))
        except LoweringError:
            continue
        old = by_key.get(task.key)
        if old is not None:
            task = attrs.evolve(old, weight=old.weight + task.weight)
        by_key[task.key] = task
    return sorted(by_key.values(), key=lambda t: -t.weight * t.flops())


__all__ = [
    "EMPTY",
    "Task",
    "digest_of_key",
    "make_task",
    "target_identity",
    "task_digest",
    "task_key",
    "tasks_from_plan",
]
