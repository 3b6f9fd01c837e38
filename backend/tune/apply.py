"""Applying a tuning log at build time: the best record per task, the default elsewhere.

    chooser = BestConfigs.from_log("tune.jsonl", target)
    compile_plan(plan, target, configs=chooser)    # what `relay.build(tuning_log=...)` does
    chooser.applied, chooser.messages

For each kernel the build lowers, `BestConfigs` computes its task digest (the function's
text, folded weights, target: `task.task_digest`) and, when the log has a working record
of that task measured on this host, returns the record's config if it is a point of the
kernel's space today (a record of an older space is reported and ignored). Kernels without
a record keep the default schedule.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import Any

from ...lang.expr import Function
from ..lower.lower_func import LoweringError, lower_to_te
from ..target import Target
from .log import best_records, read_log
from .space import Config, space_for
from .task import digest_of_key, task_digest


class BestConfigs:
    """The config chooser of a build (`compile_plan(configs=...)`): records by task digest."""

    def __init__(self, best: dict[str, dict[str, Any]], target: Target) -> None:
        self.by_digest = {digest_of_key(k): r for k, r in best.items()}
        self.target = target
        self.applied: list[str] = []
        """Task keys whose best config a build used."""
        self.messages: list[str] = []
        """What the user should hear: corrupt lines, foreign records, stale configs."""

    @classmethod
    def from_log(cls, path: str | os.PathLike[str], target: Target) -> BestConfigs:
        """The best records of the log at `path` for this host."""
        contents = read_log(path)
        chooser = cls(best_records(contents), target)
        chooser.messages.extend(contents.messages())
        return chooser

    def __call__(
        self, fn: Function, constant_params: Collection[int] | None
    ) -> dict[str, Any] | None:
        """The knobs of the best record of kernel `fn`'s task, or None (default schedule)."""
        if not self.by_digest:
            return None
        record = self.by_digest.get(task_digest(fn, constant_params, self.target))
        if record is None:
            return None
        stored = Config.from_json(record["config"])
        try:
            space = space_for(lower_to_te(fn, target=self.target).outputs, self.target)
        except LoweringError:
            return None
        config = space.normalize(stored)
        if config is None:
            self.messages.append(
                f"the tuning record of {record['task']} ({stored}) is not a point of the "
                "kernel's space any more; the default schedule is used"
            )
            return None
        self.applied.append(record["task"])
        return config.as_dict()


__all__ = ["BestConfigs"]
