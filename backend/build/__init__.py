"""The build step: from a fused, typed `@main` to a runnable `CompiledModel`.

The route is `plan_graph` (the fused graph → slots and kernel steps; `NotCompilable` when
the native executor cannot run it) → `compile_plan` (for each kernel: `lower` → `te`
schedule → `tir` passes → `codegen`; then the memory plan and one library with an entry
point, all for a `Target`) → `backend.runtime.CompiledModel`. Artifacts: `save_artifact`
and `load_artifact` write and read a compiled model without recompiling.

* `graph_plan`: `plan_graph`, `NotCompilable`.
* `memory_plan`: `plan_memory` (workspace offsets by liveness), `place_slots`.
* `compile_plan`: `compile_plan`.
* `artifact`: `save_artifact`, `load_artifact` (refusing damaged or foreign files with an
  `ArtifactError`), `ARTIFACT_FORMAT`.
"""

from .artifact import ARTIFACT_FORMAT, ArtifactError, load_artifact, save_artifact
from .compile_plan import compile_plan
from .graph_plan import NotCompilable, plan_graph
from .memory_plan import place_slots, plan_memory

__all__ = [
    "ARTIFACT_FORMAT",
    "ArtifactError",
    "NotCompilable",
    "compile_plan",
    "load_artifact",
    "place_slots",
    "plan_graph",
    "plan_memory",
    "save_artifact",
]
