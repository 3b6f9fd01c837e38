"""Auto-tuning of schedules (issue 15): config spaces of the schedule templates (`space`),
tasks extracted from a model (`task`), measurement in worker processes (`measure`), tuning
logs (`log`), applying the best records at build time (`apply`) and the tuning loop
(`tuner`). The cost model, its features and the search (`cost_model`, `features`,
`search`) guide which configs are measured. Task extraction from a module runs the pass
pipeline, so it lives at the package root: `relay.tuning.extract_tasks`.
"""

from __future__ import annotations

from .space import Config, ConfigSpace, Knob, space_for
from .task import Task, make_task, tasks_from_plan

__all__ = ["Config", "ConfigSpace", "Knob", "Task", "make_task", "space_for", "tasks_from_plan"]
