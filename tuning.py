"""Auto-tuning from the package root: task extraction runs the build's pass pipeline, which
`backend.tune` may not import (DESIGN.md, "Layout").

    tasks = relay.tuning.extract_tasks(mod, params, "llvm")
    relay.build(mod, params=params, tuning_log="tune.jsonl")     # apply the best records
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .backend.target import Target
from .backend.tune.task import Task, tasks_from_plan
from .lang.module import IRModule


def extract_tasks(
    mod: IRModule,
    params: Mapping[str, np.ndarray] | None = None,
    target: Target | str | None = None,
    opt_level: int | None = None,
) -> list[Task]:
    """The tuning tasks of `mod`'s `@main` built for `target` with `params` bound: one per
    distinct kernel after the pass pipeline and fusion, weight = calls per run, heaviest
    first (`backend.tune.task`)."""
    from .backend.build import plan_graph
    from .driver import bind_params, optimize, resolve_target
    from .typecheck import check_module

    resolved = resolve_target(target)
    check_module(mod)
    if params:
        mod = bind_params(mod, params)
    optimized = optimize(mod, opt_level, None, resolved.lanes("float32"), None)
    plan = plan_graph(optimized.module["main"], optimized.types)
    return tasks_from_plan(plan, resolved)


__all__ = ["extract_tasks"]
