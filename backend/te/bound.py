"""Bound inference: the region of each stage's axes that must be computed, and the extent of
every loop.

A stage at root computes its whole domain. A stage computed at loop `L` of a consumer
computes, on each iteration of `L`, the region its readers need during that iteration: every
index expression that reads it, with the readers' loop variables replaced by their ranges
except the loops enclosing `L` (which are fixed on that iteration). With

    for i.outer in [0, 4):
        B computed here
        for i.inner in [0, 8): C[i.outer*8 + i.inner] = B[i.outer*8 + i.inner + 1]

`B`'s region is `[i.outer*8 + 1, i.outer*8 + 9)`: extent 8, offset `i.outer*8 + 1`. Extents
must come out constant (they size the stage's buffer); when the canonical form of
`tir.arith` cannot make one constant, a constant upper bound over the enclosing loops is
used, and when that is no smaller than the whole domain the stage computes the whole domain.

From the root regions, extents flow down the split/fuse relations to the leaf loops, and
index values flow up: each iteration variable's value in terms of the leaf loop variables
(`i = i.outer * 8 + i.inner`, relative to the region's start).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..tir.arith import (
    add,
    as_int,
    canonical,
    const_bound,
    floordiv,
    floormod,
    interval,
    maximum,
    minimum,
    mul,
    sub,
)
from ..tir.expr import IterVar, PrimExpr, Var, const
from ..tir.visitor import sub_expressions, substitute
from .errors import ScheduleError
from .inline import expand_inline
from .schedule import AttachKind, Fuse, Schedule, Split, Stage, split_extents
from .tensor import ComputeOp, ExternOp, PlaceholderOp, ProducerLoad


class StageBound:
    """What bound inference found for one stage.

    * `extents[iv]`: the number of iterations of every iteration variable (for a root axis,
      the extent of the region computed);
    * `root_min[iv]`: where the region of a root axis starts (an expression in the loop
      variables enclosing the stage's attach point);
    * `rel[iv]`: the value of each iteration variable relative to its start, in terms of
      the stage's leaf loop variables;
    * `value[var]`: the value of each root variable (`root_min + rel`), what the body's
      axis variables stand for;
    * `strides[split]`: the multiplier of each split's outer loop;
    * `full`: the root iteration variables whose whole domain is computed.
    """

    def __init__(self, stage: Stage) -> None:
        self.stage = stage
        self.extents: dict[IterVar, PrimExpr] = {}
        self.root_min: dict[IterVar, PrimExpr] = {}
        self.rel: dict[IterVar, PrimExpr] = {}
        self.value: dict[Var, PrimExpr] = {}
        self.strides: dict[Split, PrimExpr] = {}
        self.full: set[IterVar] = set()
        self.shape: tuple[PrimExpr, ...] = ()
        self.offsets: tuple[PrimExpr, ...] = ()

    def at_full_domain(self) -> bool:
        """Whether the stage computes its whole domain (its buffer is indexed absolutely)."""
        if isinstance(self.stage.op, ExternOp):
            return True
        op = self.stage.op
        assert isinstance(op, ComputeOp)
        return all(iv in self.full for iv in op.axis)


class Bounds:
    """Bound inference of a whole schedule: a `StageBound` per stage with loops (placeholder
    and inlined stages have none), the constant ranges of every leaf loop variable, the
    expanded (inlined) bodies, and each stage's enclosing loops."""

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule
        self.stages: dict[Stage, StageBound] = {}
        self.ranges: dict[Var, tuple[int, int]] = {}
        self.expanded: dict[Stage, tuple[PrimExpr, ...]] = {}
        self.paths: dict[Stage, list[tuple[Stage, int]]] = {}

    def __getitem__(self, stage: Stage) -> StageBound:
        return self.stages[stage]

    def enclosing_vars(self, stage: Stage) -> set[Var]:
        """The loop variables of every loop around `stage`'s attach point."""
        out: set[Var] = set()
        for target, pos in self.paths[stage]:
            out.update(iv.var for iv in target.leaf_iter_vars[: pos + 1])
        return out


def attach_path(stage: Stage) -> list[tuple[Stage, int]]:
    """The loops enclosing `stage`'s nest: (consumer stage, leaf position) pairs from the
    innermost attach point outwards. Checks that every attach point is a loop of a stage
    that has loops, and that attach points do not form a cycle."""
    path: list[tuple[Stage, int]] = []
    seen = {id(stage)}
    current = stage
    while current.attach_kind == AttachKind.SCOPE:
        target, ivar = current.attach_stage, current.attach_ivar
        assert target is not None and ivar is not None
        if target.attach_kind == AttachKind.INLINE:
            raise ScheduleError(
                f"stage {current.name} is computed at stage {target.name}, which is inlined"
            )
        pos = next((k for k, iv in enumerate(target.leaf_iter_vars) if iv is ivar), None)
        if pos is None:
            raise ScheduleError(
                f"stage {current.name} is computed at `{target.iv_name(ivar)}` of stage"
                f" {target.name}, which is no longer one of its loops"
            )
        if id(target) in seen:
            raise ScheduleError(f"stage {stage.name}: compute_at attach points form a cycle")
        seen.add(id(target))
        path.append((target, pos))
        current = target
    return path


def _reads(bounds: Bounds) -> dict[Stage, list[tuple[Stage, tuple[PrimExpr, ...] | None]]]:
    """For each stage, who reads it and at which indices (None: an extern op reads it all)."""
    schedule = bounds.schedule
    reads: dict[Stage, list[tuple[Stage, tuple[PrimExpr, ...] | None]]] = {
        s: [] for s in schedule.stages
    }
    for stage in schedule.stages:
        if stage.attach_kind == AttachKind.INLINE:
            continue
        if isinstance(stage.op, ExternOp):
            for t in stage.op.inputs:
                reads[schedule[t]].append((stage, None))
        elif stage in bounds.expanded:
            for body in bounds.expanded[stage]:
                for node in sub_expressions(body):
                    if isinstance(node, ProducerLoad):
                        reads[schedule[node.producer]].append((stage, node.indices))
    return reads


def _inside(reader: Stage, target: Stage, pos: int, bounds: Bounds) -> bool:
    if reader is target:
        return True
    return any(t is target and p >= pos for t, p in bounds.paths[reader])


def _region(
    stage: Stage,
    reads: Sequence[tuple[Stage, tuple[PrimExpr, ...] | None]],
    bounds: Bounds,
) -> list[tuple[PrimExpr, PrimExpr]]:
    """(min, extent) per axis of a stage computed at a consumer's loop."""
    op = stage.op
    assert isinstance(op, ComputeOp)
    target, pos = bounds.paths[stage][0]
    fixed = bounds.enclosing_vars(stage)
    relax: dict[Var, tuple[PrimExpr, PrimExpr]] = {}
    for sb in bounds.stages.values():
        for leaf in sb.stage.leaf_iter_vars:
            if leaf.var not in fixed:
                relax[leaf.var] = (const(0), sub(sb.extents[leaf], const(1)))
    ndim = len(op.axis)
    lows: list[PrimExpr | None] = [None] * ndim
    highs: list[PrimExpr | None] = [None] * ndim
    unbounded = [not reads] * ndim
    for reader, indices in reads:
        if not _inside(reader, target, pos, bounds):
            raise ScheduleError(
                f"stage {stage.name} is computed at `{target.iv_name(target.leaf_iter_vars[pos])}`"
                f" of stage {target.name}, but stage {reader.name} reads it outside that loop"
            )
        if indices is None:
            unbounded = [True] * ndim
            continue
        values = bounds.stages[reader].value
        for d, index in enumerate(indices):
            if unbounded[d]:
                continue
            lo, hi = interval(substitute(index, values), relax, opaque=(ProducerLoad,))
            if lo is None or hi is None:
                unbounded[d] = True
                continue
            old_lo, old_hi = lows[d], highs[d]
            lows[d] = lo if old_lo is None else canonical(minimum(old_lo, lo))
            highs[d] = hi if old_hi is None else canonical(maximum(old_hi, hi))
    region = []
    for d, iv in enumerate(op.axis):
        full = (iv.dom.min, iv.dom.extent)
        lo, hi = lows[d], highs[d]
        if unbounded[d] or lo is None or hi is None:
            region.append(full)
            continue
        extent = canonical(add(sub(hi, lo), const(1)))
        n = as_int(extent)
        if n is None:
            n = const_bound(extent, bounds.ranges)[1]
        dom_n = as_int(iv.dom.extent)
        if n is None or (dom_n is not None and n >= dom_n):
            if dom_n is None:
                raise ScheduleError(
                    f"stage {stage.name}: cannot bound the region of axis `{iv.var.name}` by a"
                    " constant at its compute_at location"
                )
            region.append(full)
        else:
            region.append((lo, const(max(n, 1))))
    return region


def _pass_down(sb: StageBound) -> None:
    for rel in sb.stage.relations:
        if isinstance(rel, Split):
            outer, inner, stride = split_extents(sb.extents[rel.parent], rel.factor, rel.nparts)
            sb.extents[rel.outer], sb.extents[rel.inner] = outer, inner
            sb.strides[rel] = stride
        else:
            sb.extents[rel.fused] = mul(sb.extents[rel.outer], sb.extents[rel.inner])


def _pass_up(sb: StageBound) -> None:
    stage = sb.stage
    for leaf in stage.leaf_iter_vars:
        sb.rel[leaf] = leaf.var
    for rel in reversed(stage.relations):
        if isinstance(rel, Split):
            sb.rel[rel.parent] = add(mul(sb.rel[rel.outer], sb.strides[rel]), sb.rel[rel.inner])
        elif isinstance(rel, Fuse):
            fused, inner_ext = sb.rel[rel.fused], sb.extents[rel.inner]
            if as_int(sb.extents[rel.outer]) == 1:
                sb.rel[rel.outer], sb.rel[rel.inner] = const(0), fused
            else:
                sb.rel[rel.outer] = floordiv(fused, inner_ext)
                sb.rel[rel.inner] = floormod(fused, inner_ext)
    for iv in stage.root_iter_vars:
        sb.value[iv.var] = canonical(add(sb.root_min[iv], sb.rel[iv]))


def infer_bound(schedule: Schedule) -> Bounds:
    """Bound inference for every stage of `schedule` (consumers before producers)."""
    bounds = Bounds(schedule)
    bounds.expanded = expand_inline(schedule)
    for stage in schedule.stages:
        if stage.attach_kind != AttachKind.INLINE:
            bounds.paths[stage] = attach_path(stage)
    reads = _reads(bounds)
    for stage in reversed(schedule.stages):
        op = stage.op
        if isinstance(op, PlaceholderOp) or stage.attach_kind == AttachKind.INLINE:
            continue
        sb = StageBound(stage)
        if isinstance(op, ExternOp):
            sb.shape = tuple(op.outputs[0].shape)
            sb.offsets = tuple(const(0) for _ in sb.shape)
            bounds.stages[stage] = sb
            continue
        assert isinstance(op, ComputeOp)
        if stage.attach_kind == AttachKind.SCOPE:
            region = _region(stage, reads[stage], bounds)
        else:
            region = [(iv.dom.min, iv.dom.extent) for iv in op.axis]
        region += [(iv.dom.min, iv.dom.extent) for iv in op.reduce_axis]
        for iv, (lo, ext) in zip(stage.root_iter_vars, region):
            if lo is iv.dom.min and ext is iv.dom.extent:
                sb.full.add(iv)
            sb.root_min[iv], sb.extents[iv] = canonical(lo), canonical(ext)
        sb.shape = tuple(sb.extents[iv] for iv in op.axis)
        sb.offsets = tuple(sb.root_min[iv] for iv in op.axis)
        _pass_down(sb)
        _pass_up(sb)
        for leaf in stage.leaf_iter_vars:
            n = as_int(sb.extents[leaf])
            if n is not None:
                bounds.ranges[leaf.var] = (0, max(n - 1, 0))
        bounds.stages[stage] = sb
    return bounds


__all__ = ["Bounds", "StageBound", "attach_path", "infer_bound"]
