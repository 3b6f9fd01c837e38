"""Default schedules: a table from operators to schedule rules.

    CONV2D = ScheduleRule(schedule_conv2d, last_stage)      # in the family module conv2d.py
    SCHEDULES.add("nn.conv2d", CONV2D)

A schedule function receives the schedule of a fused kernel (its injective non-output stages
already inlined), the kernel's output tensors, the anchor (the stage that picked the
function) and the `Target`. The anchor need not be an output: a conv2d followed by bias and
relu has the relu as output, and the function schedules the output's loops and attaches the
anchor to them (`compute_at`) when the output reads it element for element.

A kernel's schedule is chosen by operator, not by tag: every stage remembers the operator
whose compute made it (`computes.made_by`), an operator's rule is its entry in `SCHEDULES`
(conv2d, dense, batch_matmul, pools, softmax, the normalizations) or else the rule of its
fusion pattern kind (`BY_PATTERN`: reductions; injective and other operators never anchor),
and `pick_anchor` takes the operator with the highest pattern kind (see there).

The helpers below answer the questions every schedule asks: which stages are inlined, how an
output reads a stage (through inlined stages), how many leading axes line up, and they give
the common loop nests (parallel rows, vectorized inner loops).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeAlias

from attrs import frozen

from ....lang.op import Op, OpPattern
from ....lang.optable import OpTable
from ...target import Target
from ...te.tensor import ComputeOp, Operation, PlaceholderOp, ProducerLoad, Tensor
from ...tir.expr import IterVar, PrimExpr, Reduce, Var
from ...tir.visitor import sub_expressions, substitute
from ..computes import made_by
from ..parallel_plan import GRAIN_WORK, choose

Schedule: TypeAlias = Any
"""`backend.te.schedule.Schedule` (kept opaque here to avoid an import cycle)."""

ScheduleFn: TypeAlias = Callable[[Schedule, list[Tensor], Tensor, Target], None]
"""The signature of a schedule function: (schedule, outputs, anchor, target) -> None."""

INJECTIVE_TAGS = frozenset({"elemwise", "broadcast", "injective"})
"""Tag components of stages that map output elements to input elements (inlinable)."""

PARALLEL_MIN_WORK = GRAIN_WORK
"""Below this many inner iterations (output elements × reduction length) no parallel loop:
the grain of `parallel_plan`, which decides every parallel loop's threads and tasks."""

PARALLEL_MIN_ELEMENTS = PARALLEL_MIN_WORK
"""Below this many output elements (of an elementwise loop nest) no parallel loop is made."""

AnchorStage: TypeAlias = Callable[[Sequence[Operation]], Operation | None]
"""Which of an operator's materialized stages (producers first) anchors the kernel, or None."""


@frozen
class ScheduleRule:
    """How kernels anchored by an operator are scheduled: the schedule function, and which
    of the operator's stages is the anchor it is given (`anchor_stage`; None for operators
    that never anchor a kernel, like the injective ones)."""

    schedule: ScheduleFn
    anchor_stage: AnchorStage | None


def last_stage(stages: Sequence[Operation]) -> Operation | None:
    """The operator's last stage: its result (conv2d after its padding, softmax's normalize)."""
    return stages[-1] if stages else None


def last_reduction(stages: Sequence[Operation]) -> Operation | None:
    """The operator's last reduction stage (mean's sum, layer norm's variance); None when
    its compute reduces nothing."""
    found = [op for op in stages if is_reduction(op)]
    return found[-1] if found else None


def tag_components(tag: str) -> list[str]:
    """The comma-separated parts of a tag (`"injective,pad"` → `["injective", "pad"]`)."""
    return [part.strip() for part in tag.split(",") if part.strip()]


def is_injective_tag(tag: str) -> bool:
    """Whether a tag marks an injective stage (elemwise, broadcast, injective): lowering
    inlines such stages into their consumers."""
    return any(part in INJECTIVE_TAGS for part in tag_components(tag))


def schedule_rule(op: Op) -> ScheduleRule:
    """The schedule rule of `op`: its entry in `SCHEDULES`, else the rule of its fusion
    pattern kind (`BY_PATTERN`)."""
    rule = SCHEDULES.get(op)
    return rule if rule is not None else BY_PATTERN[op.pattern]


def pick_anchor(
    order: Sequence[Operation], outputs: Sequence[Tensor], inlined: set[int]
) -> tuple[Tensor, ScheduleFn]:
    """The anchor of a kernel and the schedule function it picks.

    Each operator that made materialized stages (`computes.made_by`) offers the stage its
    rule names (`ScheduleRule.anchor_stage`); the anchor is the offer of the operator with
    the highest fusion pattern kind, the later stage (producer-to-consumer `order`) on ties,
    as TVM picks its anchor operator. With no offer (injective kernels, operators without a
    schedule of their own) the first output anchors and every output gets its default loop
    nest (`generic.schedule_generic`).
    """
    stages_of: dict[Op, list[Operation]] = {}
    position: dict[int, int] = {}
    for k, stage in enumerate(order):
        if isinstance(stage, PlaceholderOp) or id(stage) in inlined:
            continue
        op = made_by(stage)
        if op is not None:
            stages_of.setdefault(op, []).append(stage)
            position[id(stage)] = k
    best: tuple[tuple[int, int], Operation, ScheduleFn] | None = None
    for op, stages in stages_of.items():
        rule = schedule_rule(op)
        offer = rule.anchor_stage(stages) if rule.anchor_stage is not None else None
        if offer is None:
            continue
        rank = (int(op.pattern), position[id(offer)])
        if best is None or rank > best[0]:
            best = (rank, offer, rule.schedule)
    if best is None:
        from .generic import schedule_generic

        return outputs[0], schedule_generic
    return best[1].output(0), best[2]


# ----------------------------------------------------------------------- questions on stages


def stage_order(outputs: Iterable[Tensor]) -> list[Operation]:
    """Every operation the outputs depend on, producers before consumers (iterative)."""
    order: list[Operation] = []
    seen: set[int] = set()
    stack: list[tuple[Operation, bool]] = [(t.op, False) for t in reversed(list(outputs))]
    while stack:
        op, expanded = stack.pop()
        if expanded:
            order.append(op)
            continue
        if id(op) in seen:
            continue
        seen.add(id(op))
        stack.append((op, True))
        stack.extend((t.op, False) for t in reversed(op.input_tensors) if id(t.op) not in seen)
    return order


def reads_through(
    consumer: Operation, producer: Operation, inlined: set[int]
) -> list[tuple[PrimExpr, ...]]:
    """The index tuples (in `consumer`'s axis variables) at which `consumer`'s bodies read
    any output of `producer`, looking through the stages in `inlined` (their ids)."""
    if not isinstance(consumer, ComputeOp):
        return []
    found: list[tuple[PrimExpr, ...]] = []
    work: list[tuple[PrimExpr, dict[Var, PrimExpr]]] = [(b, {}) for b in consumer.body]
    visited = 0
    while work:
        expr, mapping = work.pop()
        for node in sub_expressions(expr):
            if not isinstance(node, ProducerLoad):
                continue
            op = node.producer.op
            if op is producer:
                found.append(tuple(substitute(i, mapping) for i in node.indices))
            elif id(op) in inlined and isinstance(op, ComputeOp):
                inner = {iv.var: substitute(i, mapping) for iv, i in zip(op.axis, node.indices)}
                work.append((op.body[node.producer.value_index], inner))
                visited += 1
                if visited > 10_000:  # a pathological inlined graph: give up, unaligned
                    return [()]
    return found


def aligned_depth(consumer: Operation, producer: Operation, inlined: set[int]) -> int:
    """How many leading axes of `consumer` read `producer` element for element: the largest
    `k` such that, for `d < k`, axis `d` has the same extent in both and every read of
    `producer` has the consumer's axis `d` as index `d` (any index when the extent is 1).
    Zero when it does not read it or is not a compute."""
    if not isinstance(consumer, ComputeOp):
        return 0
    reads = reads_through(consumer, producer, inlined)
    if not reads:
        return 0
    p_shape = producer.output(0).shape
    depth = 0
    for d, iv in enumerate(consumer.axis):
        if d >= len(p_shape) or _extent(iv) != _int(p_shape[d]):
            break
        if _extent(iv) != 1 and not all(len(r) > d and r[d] is iv.var for r in reads):
            break
        depth += 1
    return depth


def _int(e: PrimExpr) -> int | None:
    v = getattr(e, "value", None)
    return v if isinstance(v, int) else None


def _extent(iv: IterVar) -> int | None:
    return _int(iv.dom.extent)


def extents(op: Operation) -> list[int]:
    """The static extents of `op`'s output axes."""
    return [int(_int(d) or 0) for d in op.output(0).shape]


def reduce_extent(op: Operation) -> int:
    """The product of `op`'s reduction extents (1 when it does not reduce)."""
    if not isinstance(op, ComputeOp):
        return 1
    return math.prod(int(_extent(iv) or 1) for iv in op.reduce_axis)


def is_reduction(op: Operation) -> bool:
    """Whether `op` is a compute whose body is a reduction."""
    return isinstance(op, ComputeOp) and isinstance(op.body[0], Reduce)


def attach_depths(
    out: Tensor, stages: Sequence[Operation], inlined: set[int], order: Sequence[Operation]
) -> dict[int, int]:
    """For each stage in `stages` (materialized, not outputs): up to how many leading axes
    of `out` it can be computed inside `out`'s loops element for element. A stage read by
    stages outside `stages` and `out` gets 0. Keyed by `id(op)`."""
    members = {id(op) for op in stages} | {id(out.op)}
    depth: dict[int, int] = {id(out.op): len(out.shape)}
    readers: dict[int, list[Operation]] = {id(op): [] for op in order}
    materialized = [op for op in order if id(op) not in inlined]
    for op in materialized:
        for producer in _reads_materialized(op, inlined):
            readers.setdefault(producer, []).append(op)
    for op in reversed(order):
        if id(op) not in members or op is out.op:
            continue
        users = readers.get(id(op), [])
        k = len(out.shape) if users else 0
        for user in users:
            if id(user) not in members or id(user) not in depth:
                k = 0
                break
            k = min(k, depth[id(user)], aligned_depth(user, op, inlined))
        depth[id(op)] = k
    return {k: v for k, v in depth.items() if k != id(out.op)}


def _reads_materialized(op: Operation, inlined: set[int]) -> list[int]:
    """Ids of the materialized operations `op` reads (through inlined stages)."""
    found: list[int] = []
    seen: set[int] = set()
    stack = [t.op for t in op.input_tensors]
    while stack:
        p = stack.pop()
        if id(p) in seen:
            continue
        seen.add(id(p))
        if id(p) in inlined:
            stack.extend(t.op for t in p.input_tensors)
        else:
            found.append(id(p))
    return found


def innermost_read(op: ComputeOp, inlined: set[int]) -> str:
    """What the last index of `op`'s reads of materialized tensors follows, by majority:
    `"data"` when it involves `op`'s last data axis (`x[..., j]`, a window `x[..., j*2 + kw]`),
    `"reduce"` when it involves only reduction axes (`x[i, k]`), `"other"` otherwise."""
    reduce_vars = {id(iv.var) for iv in op.reduce_axis}
    last = id(op.axis[-1].var) if op.axis else None
    votes = {"reduce": 0, "data": 0, "other": 0}
    for producer in {id(t.op): t.op for t in _leaf_inputs(op, inlined)}.values():
        for r in reads_through(op, producer, inlined):
            if not r:
                continue
            used = {id(n) for n in sub_expressions(r[-1]) if isinstance(n, Var)}
            if last in used:
                votes["data"] += 1
            elif used and used <= reduce_vars:
                votes["reduce"] += 1
            else:
                votes["other"] += 1
    return max(votes, key=lambda k: votes[k])


def _leaf_inputs(op: Operation, inlined: set[int]) -> list[Tensor]:
    found: list[Tensor] = []
    seen: set[int] = set()
    stack = list(op.input_tensors)
    while stack:
        t = stack.pop()
        if id(t.op) in seen:
            continue
        seen.add(id(t.op))
        if id(t.op) in inlined:
            stack.extend(t.op.input_tensors)
        else:
            found.append(t)
    return found


# ------------------------------------------------------------------------ common loop nests


def vector_factor(extent: int, lanes: int) -> int:
    """The split factor that vectorizes a loop of `extent`: `lanes` when it divides the
    extent, else the largest power of two from `lanes / 2` down to 4 that divides it, else
    `lanes` (a guarded tail) when the loop is at least that long; 0 when it is too short."""
    if extent % lanes == 0:
        return lanes
    f = lanes // 2
    while f >= 4:
        if extent % f == 0:
            return f
        f //= 2
    return lanes if extent >= lanes else 0


def parallel_rows(
    stage: Any,
    rows: Sequence[IterVar],
    row_sizes: Sequence[int],
    tail: IterVar | None,
    tail_extent: int,
    work: int,
    target: Target,
    min_work: int = PARALLEL_MIN_WORK,
) -> IterVar | None:
    """Parallelize the outer loops `rows` (consecutive, outermost first), followed by `tail`
    (the outer part of a split innermost loop, or None): fuse the rows into one parallel loop,
    and the tail too when the parallel plan (`parallel_plan.choose`) needs it to give the
    threads even shares. Nothing when `work` (inner iterations in all) is below `min_work`
    or the plan runs the loop on one thread. Returns the parallel loop."""
    if work < min_work or target.num_threads < 2:
        return None
    row_extent = math.prod(row_sizes)
    extents = [row_extent, tail_extent] if tail is not None else [row_extent]
    if not rows:
        extents = [tail_extent]
    plan = choose(work, extents, target.num_threads)
    if plan.threads < 2:
        return None
    if rows and row_extent > 1 and plan.fused == 1:
        loop = stage.fuse(*rows) if len(rows) > 1 else rows[0]
    elif tail is not None and row_extent * tail_extent > 1:
        loop = stage.fuse(*rows, tail) if rows else tail
    elif rows and row_extent > 1:
        loop = stage.fuse(*rows) if len(rows) > 1 else rows[0]
    else:
        return None
    stage.parallel(loop)
    return loop  # type: ignore[no-any-return]


# -------------------------------------------------------------------- questions on a schedule


def inlined_ops(s: Schedule) -> set[int]:
    """Ids of the operations whose stages are inlined in `s`."""
    from ...te.schedule import AttachKind

    found: set[int] = set()
    for stage in s.stages:
        if stage.attach_kind is AttachKind.INLINE:
            found.add(id(stage.op))
            found.add(id(stage.origin_op))
    return found


def stage_state(s: Schedule, op: Operation | Tensor) -> str:
    """`"inlined"`, `"attached"` (computed at a consumer's loop), `"transformed"` (at root
    with loops split/fused/reordered/annotated, or with stages computed inside its loops)
    or `"untouched"` (at root, natural loops, nothing attached)."""
    from ...te.schedule import AttachKind, root_iter_vars

    stage = s[op]
    if stage.attach_kind is AttachKind.INLINE:
        return "inlined"
    if stage.attach_kind is AttachKind.SCOPE:
        return "attached"
    if stage.relations or stage.annotations:
        return "transformed"
    if any(other.attach_stage is stage for other in s.stages):
        return "transformed"  # other stages are computed inside its loops
    if list(stage.leaf_iter_vars) != list(root_iter_vars(stage.op)):
        return "transformed"
    return "untouched"


# The families, each with its table of operators; `SCHEDULES` joins them (an operator in two
# is an error). Imported last: they use the helpers above.
from . import (  # noqa: E402
    batch_matmul,
    conv2d,
    conv2d_nchwc,
    dense,
    generic,
    injective,
    pool,
    reduce,
    softmax,
    winograd,
)

SCHEDULES: OpTable[ScheduleRule] = OpTable.merge(
    "schedule",
    [
        batch_matmul.SCHEDULES,
        conv2d.SCHEDULES,
        conv2d_nchwc.SCHEDULES,
        dense.SCHEDULES,
        pool.SCHEDULES,
        reduce.SCHEDULES,
        softmax.SCHEDULES,
        winograd.SCHEDULES,
    ],
)
"""The schedule rule of each operator that has one of its own, keyed by the `Op` object."""

BY_PATTERN: dict[OpPattern, ScheduleRule] = {
    OpPattern.ELEMWISE: injective.INJECTIVE,
    OpPattern.BROADCAST: injective.INJECTIVE,
    OpPattern.INJECTIVE: injective.INJECTIVE,
    OpPattern.COMM_REDUCE: reduce.REDUCE,
    OpPattern.OUT_ELEMWISE_FUSABLE: generic.GENERIC,
    OpPattern.TUPLE: generic.GENERIC,
    OpPattern.OPAQUE: generic.GENERIC,
}
"""The schedule rule of an operator without an entry in `SCHEDULES`, by its pattern kind."""
