"""Default schedules: a table from compute tags to schedule functions.

    @register_schedule("comm_reduce", PRIORITY_REDUCE)
    def schedule_reduce(s, outputs, anchor, target): ...

A schedule function receives the schedule of a fused kernel (its injective non-output stages
already inlined), the kernel's output tensors, the anchor (the stage whose tag chose the
function) and the `Target`. The anchor need not be an output: a conv2d followed by bias and
relu has the relu as output, and the function schedules the output's loops and attaches the
anchor to them (`compute_at`) when the output reads it element for element.

A tag is matched component by component (`"injective,pad"` has two) against the registered
keys: an exact key first, else the longest key that is a prefix of the component. Among the
stages of a kernel, the one with the highest priority anchors it (conv2d/dense/batch_matmul
over pool/softmax/reduce over injective); an unknown tag gets `generic`.

The helpers below answer the questions every schedule asks: which stages are inlined, how an
output reads a stage (through inlined stages), how many leading axes line up, and they give
the common loop nests (parallel rows, vectorized inner loops).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeAlias

from attrs import frozen

from ...te.tensor import ComputeOp, Operation, PlaceholderOp, ProducerLoad, Tensor
from ...tir.expr import IterVar, PrimExpr, Reduce, Var
from ...tir.visitor import rewrite_expr, sub_expressions
from ..target import Target

Schedule: TypeAlias = Any
"""`backend.te.schedule.Schedule` (kept opaque here to avoid an import cycle)."""

ScheduleFn: TypeAlias = Callable[[Schedule, list[Tensor], Tensor, Target], None]
"""The signature of a schedule function: (schedule, outputs, anchor, target) -> None."""

PRIORITY_GENERIC = 0
PRIORITY_INJECTIVE = 1
PRIORITY_REDUCE = 2
PRIORITY_COMPLEX = 3

INJECTIVE_TAGS = frozenset({"elemwise", "broadcast", "injective"})
"""Tag components of stages that map output elements to input elements (inlinable)."""

PARALLEL_MIN_ELEMENTS = 32 * 1024
"""Below this many output elements (of an elementwise loop nest) no parallel loop is made."""

PARALLEL_MIN_WORK = 64 * 1024
"""Below this many inner iterations (output elements × reduction length) no parallel loop."""


@frozen
class ScheduleRule:
    """One entry of the table: the key (a tag or tag prefix), its priority, the function."""

    key: str
    priority: int
    fn: ScheduleFn


SCHEDULES: dict[str, ScheduleRule] = {}
"""The registered schedule rules, by key."""


def register_schedule(tag_or_prefix: str, priority: int) -> Callable[[ScheduleFn], ScheduleFn]:
    """Decorator: schedule kernels anchored by a stage whose tag is (or starts with)
    `tag_or_prefix` with the function. A key registered twice is a `ValueError`."""

    def register(fn: ScheduleFn) -> ScheduleFn:
        if tag_or_prefix in SCHEDULES:
            raise ValueError(f"a schedule for tag `{tag_or_prefix}` is already registered")
        SCHEDULES[tag_or_prefix] = ScheduleRule(tag_or_prefix, priority, fn)
        return fn

    return register


def tag_components(tag: str) -> list[str]:
    """The comma-separated parts of a tag (`"injective,pad"` → `["injective", "pad"]`)."""
    return [part.strip() for part in tag.split(",") if part.strip()]


def rule_for_tag(tag: str) -> ScheduleRule | None:
    """The rule a tag selects (the highest priority over its components), or None."""
    best: ScheduleRule | None = None
    for part in tag_components(tag):
        rule = SCHEDULES.get(part)
        if rule is None:
            prefixes = [k for k in SCHEDULES if part.startswith(k)]
            if prefixes:
                rule = SCHEDULES[max(prefixes, key=len)]
        if rule is not None and (best is None or rule.priority > best.priority):
            best = rule
    return best


def priority_of(tag: str) -> int:
    """The priority of the rule a tag selects (`PRIORITY_GENERIC` when none)."""
    rule = rule_for_tag(tag)
    return rule.priority if rule is not None else PRIORITY_GENERIC


def is_injective_tag(tag: str) -> bool:
    """Whether a tag marks an injective stage (elemwise, broadcast, injective)."""
    return any(part in INJECTIVE_TAGS for part in tag_components(tag))


def schedule_for(anchor: Tensor) -> ScheduleFn:
    """The schedule function for a kernel anchored by `anchor` (generic if its tag is not
    in the table)."""
    rule = rule_for_tag(getattr(anchor.op, "tag", ""))
    if rule is not None:
        return rule.fn
    from .generic import schedule_generic

    return schedule_generic


def pick_anchor(order: Sequence[Operation], outputs: Sequence[Tensor], inlined: set[int]) -> Tensor:
    """The stage that picks the schedule: among the materialized stages, the one with the
    highest priority (the last in producer-to-consumer order on ties); the first output
    when nothing ranks above injective."""
    best: Operation | None = None
    best_priority = PRIORITY_INJECTIVE
    for op in order:
        if isinstance(op, PlaceholderOp) or id(op) in inlined:
            continue
        p = priority_of(getattr(op, "tag", ""))
        if p > best_priority or (p == best_priority and best is not None):
            best, best_priority = op, p
    return best.output(0) if best is not None else outputs[0]


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


def substitute(expr: PrimExpr, mapping: dict[Var, PrimExpr]) -> PrimExpr:
    """`expr` with the variables of `mapping` replaced."""
    if not mapping:
        return expr
    return rewrite_expr(expr, lambda n: mapping.get(n) if isinstance(n, Var) else None)  # type: ignore[no-any-return]


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
    (the outer part of a split innermost loop, or None): fuse the rows into one parallel loop
    when they give every thread several iterations, else fuse the tail in too. Nothing when
    `work` (inner iterations in all) is below `min_work` or there is one thread. Returns
    the parallel loop."""
    if work < min_work or target.num_threads < 2:
        return None
    row_extent = math.prod(row_sizes)
    if rows and row_extent >= 4 * target.num_threads:
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


from . import (  # noqa: E402, F401  (each module registers its schedule rules)
    batch_matmul,
    conv2d,
    dense,
    generic,
    injective,
    pool,
    reduce,
    softmax,
)
