"""Inlining for lowering and bound inference: the bodies of stages with inlined producers
substituted in (`B[i] = A[i] + 1` inlined into `C[i] = B[i * 2]` gives `C[i] = A[i * 2] + 1`)."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from ...lang.trampoline import run
from ..tir.expr import PrimExpr, Var
from ..tir.visitor import children, with_children
from .errors import ScheduleError
from .schedule import AttachKind, Schedule, Stage
from .tensor import ComputeOp, ExternOp, ProducerLoad


def _expander(schedule: Schedule) -> Any:
    """A generator function `expand(node, env)` for `lang.trampoline.run`: `node` with the
    variables of `env` substituted and every load of an inlined stage replaced by that
    stage's body (expanded in turn). Results are memoized per (node, env)."""
    memo: dict[tuple[int, int], PrimExpr] = {}
    envs: list[Mapping[Var, PrimExpr]] = []

    def expand(node: Any, env: Mapping[Var, PrimExpr]) -> Generator[Any, Any, Any]:
        key = (id(node), id(env))
        done = memo.get(key)
        if done is not None:
            return done
        if isinstance(node, Var):
            return env.get(node, node)
        kids = []
        for kid in children(node):
            kids.append((yield expand(kid, env)))
        result: Any
        if isinstance(node, ProducerLoad) and (
            schedule[node.producer].attach_kind == AttachKind.INLINE
        ):
            pop = schedule[node.producer].op
            assert isinstance(pop, ComputeOp)
            inner_env = {iv.var: i for iv, i in zip(pop.axis, kids)}
            envs.append(inner_env)
            result = yield expand(pop.body[node.producer.value_index], inner_env)
        else:
            result = with_children(node, kids)
        memo[key] = result
        return result

    return expand


def expand_inline(schedule: Schedule) -> dict[Stage, tuple[PrimExpr, ...]]:
    """For every compute stage that is not inlined, its bodies with the loads of inlined
    stages replaced by their bodies at the loaded indices (transitively). Raises
    `ScheduleError` when an inlined stage is read by an extern op."""
    expanded: dict[Stage, tuple[PrimExpr, ...]] = {}
    expand = _expander(schedule)
    top: dict[Var, PrimExpr] = {}
    for stage in schedule.stages:
        op = stage.op
        if isinstance(op, ExternOp):
            for t in op.inputs:
                if schedule[t].attach_kind == AttachKind.INLINE:
                    raise ScheduleError(
                        f"stage {schedule[t].name} is inlined but extern op {stage.name} reads it"
                    )
        if isinstance(op, ComputeOp) and stage.attach_kind != AttachKind.INLINE:
            expanded[stage] = tuple(run(expand(b, top)) for b in op.body)
    return expanded


__all__ = ["expand_inline"]
