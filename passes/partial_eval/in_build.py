"""Partial evaluation in `relay.build`: when it runs, and where in the pipeline.

`partial-evaluate` is not part of the standard pipelines: on a program without static
control flow it only costs time, and on a program whose recursion runs over data known
only at run time it cannot unfold anything. It pays on a `@main` whose control flow runs
over static data — a list or tree built in `@main` from its parameters or constants, as
in `examples/lstm.relay` — where it unfolds the recursion into first-order, straight-line
code that fusion and the static (AOT) executor then compile like any dataflow graph.

A build asks for it with `relay.build(..., partial_evaluate=True)`, or by naming the pass
in the `PassContext`'s `required_pass` (`PassContext(required_pass=["partial-evaluate"])`;
`disabled_pass` wins over both). It then runs first in the pipeline (after the globals
`@main` calls are inlined), at any opt level, with the context's options for it
(`config={"partial-evaluate": {"fuel": 200}}`); what it leaves is optimized and fused by the
rest of the pipeline. A residual program that is still not first-order (recursion over a
run-time list) goes to the VM, like the program would have without it.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from ..context import PassContext
from ..pipeline import ExtraPasses

PASS_NAME = "partial-evaluate"


def wants_partial_evaluation(ctx: PassContext, requested: bool | None) -> bool:
    """Whether a build under `ctx` partially evaluates: `requested` when given (True or
    False), otherwise whether `ctx` names the pass in `required_pass`; never when `ctx`
    disables it."""
    if PASS_NAME in ctx.disabled_pass:
        return False
    if requested is not None:
        return requested
    return PASS_NAME in ctx.required_pass


def with_partial_evaluation(
    ctx: PassContext, passes: ExtraPasses | None
) -> tuple[PassContext, ExtraPasses]:
    """`ctx` requiring `partial-evaluate` (so it runs at any opt level) and `passes` with
    it added at the start of the pipeline, before the user's own start passes."""
    if PASS_NAME not in ctx.required_pass:
        ctx = attrs.evolve(ctx, required_pass=(*ctx.required_pass, PASS_NAME))
    given = list(passes.items()) if isinstance(passes, Mapping) else list(passes or ())
    return ctx, [("start", PASS_NAME), *given]


__all__ = ["wants_partial_evaluation", "with_partial_evaluation"]
