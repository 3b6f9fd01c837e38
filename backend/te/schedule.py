"""Schedules: how the loops that compute tensor expressions run.

A `Schedule` has one `Stage` per operation reachable from its outputs (placeholders too,
though they make no loops), in topological order. A stage starts with one loop per axis of
its operation (data-parallel axes, then reduce axes) and the primitives reshape that nest:

    s = create_schedule(C)              # for i: for j: for k: C[i, j] += A[i, k] * B[k, j]
    io, ii = s[C].split(C.op.axis[0], factor=4)
                                        # for i.outer: for i.inner: for j: for k: ...
    s[C].reorder(io, C.op.reduce_axis[0], ii)
                                        # for i.outer: for k: for i.inner: for j: ...
    s[C].vectorize(ii)                  # ... the i.inner loop becomes a vector loop

Splits whose factor does not divide the extent are allowed: the lowering guards the body
with `likely(i.outer * 4 + i.inner < n)`. Placement primitives say where a producer's loops
go: `compute_at(consumer, loop)` (inside a consumer's loop, computing only the region that
loop needs), `compute_inline()` (substituted into its consumers), `compute_root()`.
`cache_read`/`cache_write` add copy stages. `replace_compute(tensor, "dense.gemm", nb=16)`
makes a stage compute a view of new computes that a registered compute rewrite builds from
its operation and a few parameters (`rewrite`: a packed product, a channel-blocked
convolution), and `make_input(tensor, name)` makes a stage an input computed elsewhere (a
weight packed at build time). Every primitive is recorded in `schedule.trace` (see
`trace`), naming stages and iteration variables by stable names ("C", "i.outer"), so a
trace replays on a fresh schedule of the same computation. Misuse raises `ScheduleError`.
Scheduling never changes what is computed (a rewrite computes the same values).
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Union

from attrs import frozen

from ..tir.arith import as_int, ceildiv, mul
from ..tir.dtypes import INDEX_DTYPE
from ..tir.expr import IterKind, IterVar, PrimExpr, Range, Var, const
from ..tir.stmt import ForKind
from ..tir.visitor import rewrite_expr
from .errors import ScheduleError
from .tensor import ComputeOp, ExternOp, Operation, PlaceholderOp, ProducerLoad, Tensor
from .trace import ScheduleStep, Trace


class AttachKind(enum.Enum):
    """Where a stage's loop nest goes."""

    ROOT = "root"
    INLINE = "inline"
    SCOPE = "scope"


@frozen(eq=False)
class Split:
    """`parent` = `outer * stride + inner`, with `factor` (inner extent) or `nparts` (outer
    extent) given."""

    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: int | None
    nparts: int | None


@frozen(eq=False)
class Fuse:
    """`fused` = `outer * extent(inner) + inner`."""

    outer: IterVar
    inner: IterVar
    fused: IterVar


Relation = Union[Split, Fuse]  # noqa: UP007


def split_extents(
    extent: PrimExpr, factor: int | None, nparts: int | None
) -> tuple[PrimExpr, PrimExpr, PrimExpr]:
    """(outer extent, inner extent, stride) of splitting a loop of `extent`. A factor larger
    than a constant extent is clamped to it (one outer iteration)."""
    n = as_int(extent)
    if factor is not None:
        f = min(factor, n) if n is not None and n > 0 else factor
        return ceildiv(extent, const(f)), const(f), const(f)
    assert nparts is not None
    inner = ceildiv(extent, const(nparts))
    return const(nparts), inner, inner


_ANNOTATIONS = {
    "vectorize": ForKind.VECTORIZED,
    "unroll": ForKind.UNROLLED,
    "parallel": ForKind.PARALLEL,
}


PRAGMAS = {
    "no_unroll": "LLVM keeps the loop a loop (`llvm.loop.unroll.disable`): for small serial "
    "loops whose unrolled copies cost compile time and buy no speed",
}
"""The keys of `Stage.pragma` and what each asks of code generation."""


class Stage:
    """The loop nest of one operation: its iteration variables (`all_iter_vars`, the current
    loops `leaf_iter_vars` outermost first), the relations between them, loop annotations and
    where the nest is placed. Get one with `schedule[tensor]`."""

    def __init__(self, schedule: Schedule, op: Operation, name: str) -> None:
        self.schedule = schedule
        self.op: Operation = op
        self.origin_op: Operation = op
        self.name = name
        self.relations: list[Relation] = []
        self.annotations: dict[IterVar, ForKind] = {}
        self.pragmas: dict[IterVar, tuple[str, ...]] = {}
        self.attach_kind = AttachKind.ROOT
        self.attach_stage: Stage | None = None
        self.attach_ivar: IterVar | None = None
        self.is_output = False
        self.scope = "global"
        self.tensorized: tuple[IterVar, Any] | None = None
        self.all_iter_vars: list[IterVar] = []
        self.leaf_iter_vars: list[IterVar] = []
        self._names: dict[IterVar, str] = {}
        self._by_name: dict[str, IterVar] = {}
        self._set_roots(root_iter_vars(op))

    def _set_roots(self, roots: Sequence[IterVar]) -> None:
        self.all_iter_vars = []
        self.leaf_iter_vars = []
        self._names.clear()
        self._by_name.clear()
        self.relations.clear()
        self.annotations.clear()
        self.pragmas.clear()
        for iv in roots:
            self._register(iv, iv.var.name)
            self.leaf_iter_vars.append(iv)

    def _register(self, iv: IterVar, base: str) -> str:
        name, k = base, 1
        while name in self._by_name:
            name, k = f"{base}_{k}", k + 1
        self._names[iv] = name
        self._by_name[name] = iv
        self.all_iter_vars.append(iv)
        return name

    def _new_iv(self, base: str, extent: PrimExpr, kind: IterKind) -> IterVar:
        name, k = base, 1
        while name in self._by_name:
            name, k = f"{base}_{k}", k + 1
        iv = IterVar(Var(name, INDEX_DTYPE), Range(const(0), extent), kind)
        self._register(iv, name)
        return iv

    # ---------------------------------------------------------------------------- queries

    @property
    def root_iter_vars(self) -> tuple[IterVar, ...]:
        """The iteration variables of the operation (axes, then reduce axes)."""
        return root_iter_vars(self.op)

    def iv_name(self, iv: IterVar) -> str:
        """The stable name of an iteration variable of this stage (its variable's name for
        one that is not, or no longer, part of the stage)."""
        return self._names.get(iv, iv.var.name)

    def iv(self, name: str) -> IterVar:
        """The iteration variable of this stage named `name`."""
        found = self._by_name.get(name)
        if found is None:
            raise ScheduleError(
                f"stage {self.name} has no iteration variable `{name}`; it has "
                + ", ".join(self._names[v] for v in self.all_iter_vars)
            )
        return found

    def _leaf_index(self, iv: Any, what: str) -> int:
        if isinstance(iv, str):
            iv = self.iv(iv)
        if not isinstance(iv, IterVar):
            raise ScheduleError(f"{what}: expected an iteration variable, got {iv!r}")
        for pos, leaf in enumerate(self.leaf_iter_vars):
            if leaf is iv:
                return pos
        name = self._names.get(iv, iv.var.name)
        leaves = ", ".join(self._names[v] for v in self.leaf_iter_vars) or "none"
        raise ScheduleError(
            f"{what}: `{name}` is not a loop of stage {self.name} (its loops are: {leaves})"
        )

    def _resolve(self, iv: Any, what: str) -> IterVar:
        return self.leaf_iter_vars[self._leaf_index(iv, what)]

    def _check_unannotated(self, iv: IterVar, what: str) -> None:
        if iv in self.annotations:
            kind = self.annotations[iv].value
            raise ScheduleError(
                f"{what}: `{self._names[iv]}` of stage {self.name} is already marked {kind};"
                " split/fuse loops before annotating them"
            )

    def _check_not_attach_point(self, iv: IterVar, what: str) -> None:
        for other in self.schedule.stages:
            if (
                other.attach_kind == AttachKind.SCOPE
                and other.attach_stage is self
                and other.attach_ivar is iv
            ):
                raise ScheduleError(
                    f"{what}: stage {other.name} is computed at `{self._names[iv]}` of stage"
                    f" {self.name}; split/fuse loops before computing other stages at them"
                )

    def _record(self, primitive: str, *args: Any, **kwargs: Any) -> None:
        self.schedule._trace.append(ScheduleStep.make(primitive, (self.name, *args), kwargs))

    def _check_loops(self, what: str) -> None:
        if isinstance(self.op, (PlaceholderOp, ExternOp)):
            kind = "an input" if isinstance(self.op, PlaceholderOp) else "an extern op"
            raise ScheduleError(f"{what}: stage {self.name} is {kind} and has no loops")

    # ------------------------------------------------------------------------- primitives

    def split(
        self, iv: IterVar | str, factor: int | None = None, nparts: int | None = None
    ) -> tuple[IterVar, IterVar]:
        """Split loop `iv` into `(outer, inner)` with `factor` inner iterations (or `nparts`
        outer ones): `for i` becomes `for i.outer: for i.inner`, `i = i.outer * f + i.inner`.
        A factor that does not divide the extent leaves a guarded tail."""
        self._check_loops("split")
        parent = self._resolve(iv, "split")
        if (factor is None) == (nparts is None):
            raise ScheduleError("split: give exactly one of `factor` and `nparts`")
        amount = factor if factor is not None else nparts
        if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
            raise ScheduleError(f"split: the factor must be a positive integer, got {amount!r}")
        self._check_unannotated(parent, "split")
        self._check_not_attach_point(parent, "split")
        outer_ext, inner_ext, _ = split_extents(parent.dom.extent, factor, nparts)
        name = self._names[parent]
        outer = self._new_iv(f"{name}.outer", outer_ext, parent.kind)
        inner = self._new_iv(f"{name}.inner", inner_ext, parent.kind)
        pos = self._leaf_index(parent, "split")
        self.leaf_iter_vars[pos : pos + 1] = [outer, inner]
        self.relations.append(Split(parent, outer, inner, factor, nparts))
        if factor is not None:
            self._record("split", name, factor=factor)
        else:
            self._record("split", name, nparts=nparts)
        return outer, inner

    def tile(
        self,
        x: IterVar | str,
        y: IterVar | str,
        x_factor: int,
        y_factor: int,
    ) -> tuple[IterVar, IterVar, IterVar, IterVar]:
        """Split `x` and `y` and reorder to `(x.outer, y.outer, x.inner, y.inner)`."""
        xo, xi = self.split(x, factor=x_factor)
        yo, yi = self.split(y, factor=y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def fuse(self, *ivs: IterVar | str) -> IterVar:
        """Fuse consecutive loops (outermost first) into one: `for i: for j` becomes
        `for i.j.fused` with `i = fused // extent(j)`, `j = fused % extent(j)`."""
        self._check_loops("fuse")
        if not ivs:
            raise ScheduleError("fuse: give at least one loop")
        resolved = [self._resolve(iv, "fuse") for iv in ivs]
        if len(resolved) == 1:
            return resolved[0]
        positions = [self._leaf_index(iv, "fuse") for iv in resolved]
        for a, b in itertools.pairwise(positions):
            if b != a + 1:
                shown = ", ".join(self._names[iv] for iv in resolved)
                raise ScheduleError(
                    f"fuse: the loops {shown} of stage {self.name} are not consecutive"
                    " (outermost first)"
                )
        kinds = {iv.kind for iv in resolved}
        if len(kinds) > 1:
            raise ScheduleError(
                f"fuse: stage {self.name} cannot fuse reduction loops with data-parallel loops"
            )
        for iv in resolved:
            self._check_unannotated(iv, "fuse")
            self._check_not_attach_point(iv, "fuse")
        names = [self._names[iv] for iv in resolved]
        fused = resolved[0]
        for inner in resolved[1:]:
            new = self._new_iv(
                f"{self._names[fused]}.{self._names[inner]}.fused",
                mul(fused.dom.extent, inner.dom.extent),
                fused.kind,
            )
            self.relations.append(Fuse(fused, inner, new))
            fused = new
        start = positions[0]
        self.leaf_iter_vars[start : start + len(resolved)] = [fused]
        self._record("fuse", *names)
        return fused

    def reorder(self, *ivs: IterVar | str) -> None:
        """Put the given loops in this order, in the positions they occupy now."""
        self._check_loops("reorder")
        resolved = [self._resolve(iv, "reorder") for iv in ivs]
        if len({id(iv) for iv in resolved}) != len(resolved):
            raise ScheduleError(f"reorder: a loop of stage {self.name} is given twice")
        positions = sorted(self._leaf_index(iv, "reorder") for iv in resolved)
        for pos, iv in zip(positions, resolved):
            self.leaf_iter_vars[pos] = iv
        self._record("reorder", *(self._names[iv] for iv in resolved))

    def _annotate(self, primitive: str, iv: IterVar | str) -> None:
        self._check_loops(primitive)
        leaf = self._resolve(iv, primitive)
        if primitive in ("vectorize", "parallel") and leaf.kind == IterKind.REDUCE:
            raise ScheduleError(
                f"{primitive}: `{self._names[leaf]}` of stage {self.name} is a reduction loop;"
                f" only data-parallel loops can be {primitive}d"
            )
        self.annotations[leaf] = _ANNOTATIONS[primitive]
        self._record(primitive, self._names[leaf])

    def vectorize(self, iv: IterVar | str) -> None:
        """Run loop `iv` (innermost, constant extent) as vector lanes."""
        self._annotate("vectorize", iv)

    def unroll(self, iv: IterVar | str) -> None:
        """Unroll loop `iv`."""
        self._annotate("unroll", iv)

    def parallel(self, iv: IterVar | str) -> None:
        """Split loop `iv`'s iterations across the thread pool."""
        self._annotate("parallel", iv)

    def pragma(self, iv: IterVar | str, key: str) -> None:
        """Attach a code-generation hint `key` (one of `PRAGMAS`) to loop `iv`; the loop of
        the lowered nest carries it as the annotation `pragma_<key>`."""
        self._check_loops("pragma")
        leaf = self._resolve(iv, "pragma")
        if key not in PRAGMAS:
            raise ScheduleError(f"pragma: unknown key {key!r} (known: {', '.join(PRAGMAS)})")
        if key not in self.pragmas.get(leaf, ()):
            self.pragmas[leaf] = (*self.pragmas.get(leaf, ()), key)
        self._record("pragma", self._names[leaf], key)

    def tensorize(self, iv: IterVar | str, intrinsic: Any) -> None:
        """Replace the loops from `iv` inward by `intrinsic` (a declared
        `tensorize.TensorIntrinsic` or its name); lowering checks that they compute what it
        does (see `tensorize`)."""
        from .tensorize import TensorIntrinsic, lookup

        self._check_loops("tensorize")
        leaf = self._resolve(iv, "tensorize")
        intr = lookup(intrinsic) if isinstance(intrinsic, str) else intrinsic
        if not isinstance(intr, TensorIntrinsic):
            raise ScheduleError(f"tensorize: expected a tensor intrinsic, got {intrinsic!r}")
        if lookup(intr.name) is not intr:
            raise ScheduleError(f"tensorize: intrinsic {intr.name} is not the declared one")
        self.tensorized = (leaf, intr)
        self._record("tensorize", self._names[leaf], intr.name)

    def compute_at(self, parent: Stage | Tensor | Operation | str, iv: IterVar | str) -> None:
        """Compute this stage inside loop `iv` of `parent` (a consumer), only the region the
        body of that loop needs, in a buffer allocated there."""
        target = self.schedule[parent]
        if isinstance(self.op, PlaceholderOp):
            raise ScheduleError(f"compute_at: stage {self.name} is an input")
        if isinstance(self.op, ExternOp):
            raise ScheduleError(
                f"compute_at: stage {self.name} is an extern op; it can only be computed at root"
            )
        if self.is_output:
            raise ScheduleError(f"compute_at: stage {self.name} is an output of the schedule")
        if target is self:
            raise ScheduleError(f"compute_at: stage {self.name} cannot be computed at itself")
        leaf = target._resolve(iv, "compute_at")
        self.attach_kind = AttachKind.SCOPE
        self.attach_stage = target
        self.attach_ivar = leaf
        self.schedule._trace.append(
            ScheduleStep.make("compute_at", (self.name, target.name, target._names[leaf]), {})
        )

    def compute_inline(self) -> None:
        """Substitute this stage's body into its consumers (no loops of its own)."""
        op = self.op
        if not isinstance(op, ComputeOp):
            raise ScheduleError(f"compute_inline: stage {self.name} is not a compute stage")
        if op.reduce_axis:
            raise ScheduleError(f"compute_inline: stage {self.name} is a reduction")
        if self.is_output:
            raise ScheduleError(f"compute_inline: stage {self.name} is an output of the schedule")
        for stage in self.schedule.stages:
            if isinstance(stage.op, ExternOp) and any(t.op is op for t in stage.op.inputs):
                raise ScheduleError(
                    f"compute_inline: stage {self.name} is read by extern op {stage.name}"
                )
        self.attach_kind = AttachKind.INLINE
        self.attach_stage = self.attach_ivar = None
        self._record("compute_inline")

    def compute_root(self) -> None:
        """Compute this stage in its own loop nest at the top of the kernel."""
        if isinstance(self.op, PlaceholderOp):
            raise ScheduleError(f"compute_root: stage {self.name} is an input")
        self.attach_kind = AttachKind.ROOT
        self.attach_stage = self.attach_ivar = None
        self._record("compute_root")

    def __repr__(self) -> str:
        leaves = ", ".join(self._names[v] for v in self.leaf_iter_vars)
        return f"Stage({self.name}: {leaves})"


def root_iter_vars(op: Operation) -> tuple[IterVar, ...]:
    """The loops an operation starts with: a compute's axes then its reduce axes."""
    if isinstance(op, ComputeOp):
        return tuple(op.axis) + tuple(op.reduce_axis)
    return ()


def _reachable(roots: Sequence[Operation], stop: Operation) -> set[int]:
    """Ids of the operations `roots` read, transitively, not looking past `stop`."""
    found: set[int] = set()
    stack = list(roots)
    while stack:
        op = stack.pop()
        if id(op) in found:
            continue
        found.add(id(op))
        if op is not stop:
            stack.extend(t.op for t in op.input_tensors)
    return found


def _post_order(roots: Sequence[Operation]) -> list[Operation]:
    order: list[Operation] = []
    done: set[int] = set()
    stack: list[tuple[Operation, bool]] = [(op, False) for op in reversed(roots)]
    while stack:
        op, expanded = stack.pop()
        if id(op) in done:
            continue
        if expanded:
            done.add(id(op))
            order.append(op)
            continue
        stack.append((op, True))
        stack.extend((t.op, False) for t in reversed(op.input_tensors) if id(t.op) not in done)
    return order


class Schedule:
    """The stages of a computation (topological order) and the trace of primitives applied.
    `s[tensor]`, `s[op]` or `s["name"]` is a stage."""

    def __init__(self, outputs: Sequence[Operation]) -> None:
        self.outputs: list[Operation] = list(outputs)
        self.stages: list[Stage] = []
        self._by_op: dict[int, tuple[Operation, Stage]] = {}
        self._by_name: dict[str, Stage] = {}
        self._trace: list[ScheduleStep] = []
        for op in _post_order(self.outputs):
            self._add_stage(op, len(self.stages))
        for op in self.outputs:
            self[op].is_output = True

    def _add_stage(self, op: Operation, position: int) -> Stage:
        name, k = op.name, 1
        while name in self._by_name:
            name, k = f"{op.name}_{k}", k + 1
        stage = Stage(self, op, name)
        self.stages.insert(position, stage)
        self._by_name[name] = stage
        self._by_op[id(op)] = (op, stage)
        return stage

    @property
    def trace(self) -> Trace:
        """The primitives applied so far, in order."""
        return Trace(tuple(self._trace))

    def __getitem__(self, key: Tensor | Operation | Stage | str) -> Stage:
        if isinstance(key, Stage):
            if key.schedule is not self:
                raise ScheduleError(f"stage {key.name} belongs to another schedule")
            return key
        if isinstance(key, str):
            stage = self._by_name.get(key)
            if stage is None:
                raise ScheduleError(f"the schedule has no stage named `{key}`")
            return stage
        op = key.op if isinstance(key, Tensor) else key
        found = self._by_op.get(id(op))
        if found is None:
            raise ScheduleError(f"{getattr(op, 'name', op)!r} is not part of this schedule")
        return found[1]

    def tensor(self, t: Tensor) -> Tensor:
        """The tensor that now stands for `t` (after cache stages rewrote the dataflow)."""
        return self[t].op.output(t.value_index)

    # --------------------------------------------------------------------- dataflow edits

    def _replace_dataflow(self, vmap: dict[Tensor, Tensor], skip: Iterable[Stage] = ()) -> None:
        """Make every stage (but `skip`) read `vmap[t]` instead of `t`, rebuilding readers and
        then the readers of rebuilt stages."""
        skipped = {id(s) for s in skip}
        for stage in self.stages:
            if id(stage) in skipped:
                continue
            new_op = _replace_inputs(stage.op, vmap)
            if new_op is stage.op:
                continue
            for k in range(stage.op.num_outputs):
                vmap[stage.op.output(k)] = new_op.output(k)
            self._set_op(stage, new_op)

    def _set_op(self, stage: Stage, op: Operation) -> None:
        if stage.is_output:
            self.outputs = [op if o is stage.op else o for o in self.outputs]
        stage.op = op
        self._by_op[id(op)] = (op, stage)

    def cache_read(
        self,
        tensor: Tensor,
        scope: str,
        readers: Tensor | Operation | Stage | Sequence[Tensor | Operation | Stage],
    ) -> Tensor:
        """A copy of `tensor` (stage `"<name>.<scope>"`) that `readers` read instead of
        `tensor`; compute it at a reader's loop to copy only the needed region."""
        producer = self[tensor]
        current = producer.op.output(tensor.value_index)
        items = readers if isinstance(readers, (list, tuple)) else [readers]
        reader_stages = [self[r] for r in items]  # type: ignore[index]
        if not reader_stages:
            raise ScheduleError("cache_read: give at least one reader")
        for r in reader_stages:
            if not any(t is current for t in r.op.input_tensors):
                raise ScheduleError(f"cache_read: stage {r.name} does not read {producer.name}")
        from .tensor import compute

        cache = compute(
            current.shape,
            lambda *idx: current[idx],
            name=f"{current.name}.{scope}",
        )
        stage = self._add_stage(cache.op, self.stages.index(producer) + 1)
        stage.scope = scope
        vmap: dict[Tensor, Tensor] = {}
        for r in reader_stages:
            new_op = _replace_inputs(r.op, {current: cache})
            for k in range(r.op.num_outputs):
                vmap[r.op.output(k)] = new_op.output(k)
            self._set_op(r, new_op)
        self._replace_dataflow(vmap)
        kwargs = {"output": tensor.value_index} if tensor.value_index else {}
        names = [r.name for r in reader_stages]
        self._trace.append(ScheduleStep.make("cache_read", (producer.name, scope, names), kwargs))
        return cache

    def cache_write(self, tensor: Tensor, scope: str) -> Tensor:
        """Compute `tensor`'s stage into a new stage `"<name>.<scope>"` (all of its outputs)
        and make the original stage copy from it; returns the cache's tensor for `tensor`.
        Apply before splitting or reordering the original stage."""
        stage = self[tensor]
        op = stage.op
        if not isinstance(op, ComputeOp):
            raise ScheduleError(f"cache_write: stage {stage.name} is not a compute stage")
        if stage.relations or stage.annotations or stage.leaf_iter_vars != list(root_iter_vars(op)):
            raise ScheduleError(
                f"cache_write: stage {stage.name} already has split/fuse/reorder/annotations;"
                " call cache_write first"
            )
        if stage.attach_kind == AttachKind.INLINE:
            raise ScheduleError(f"cache_write: stage {stage.name} is inlined")
        for other in self.stages:
            if other.attach_kind == AttachKind.SCOPE and other.attach_stage is stage:
                raise ScheduleError(
                    f"cache_write: stage {other.name} is computed at stage {stage.name};"
                    " call cache_write first"
                )
        new_axis = tuple(
            IterVar(Var(f"{stage.iv_name(iv)}.c", INDEX_DTYPE), iv.dom, iv.kind) for iv in op.axis
        )
        sub = {old.var: new.var for old, new in zip(op.axis, new_axis)}
        bodies = _substitute_many(op.body, sub)
        cache_op = ComputeOp(f"{op.name}.{scope}", op.tag, op.attrs, new_axis, bodies)
        copy_op = ComputeOp(
            op.name,
            op.tag,
            op.attrs,
            op.axis,
            tuple(t[tuple(iv.var for iv in op.axis)] for t in cache_op.outputs),
        )
        cache_stage = self._add_stage(cache_op, self.stages.index(stage))
        cache_stage.scope = scope
        old_outputs = [op.output(k) for k in range(op.num_outputs)]
        self._set_op(stage, copy_op)
        stage._set_roots(root_iter_vars(copy_op))
        vmap = {old: copy_op.output(k) for k, old in enumerate(old_outputs)}
        self._replace_dataflow(vmap, skip=[stage, cache_stage])
        kwargs = {"output": tensor.value_index} if tensor.value_index else {}
        self._trace.append(ScheduleStep.make("cache_write", (stage.name, scope), kwargs))
        return cache_op.output(tensor.value_index)

    def replace_compute(
        self, tensor: Tensor | Operation | Stage | str, rewrite: str, **params: Any
    ) -> dict[str, Tensor]:
        """Make `tensor`'s stage compute the `"view"` of the registered compute rewrite
        `rewrite` (see `te.rewrite`) applied to its current operation with `params`, and
        return the rewrite's tensors by name. The view has the stage's shape and dtype; a
        stage is added for every operation it reads that the schedule has not (before the
        stage, producers first); readers of the stage read the view from then on; the
        stage's loops become the view's. Apply before splitting the stage or computing other
        stages at it. Recorded as `replace_compute("stage", "rewrite", key=value, ...)`."""
        from .rewrite import build_rewrite, check_params

        stage = self[tensor]
        old = stage.op
        if not isinstance(old, ComputeOp) or old.num_outputs != 1:
            raise ScheduleError(
                f"replace_compute: stage {stage.name} is not a one-output compute stage"
            )
        if (
            stage.relations
            or stage.annotations
            or stage.leaf_iter_vars != list(root_iter_vars(old))
        ):
            raise ScheduleError(
                f"replace_compute: stage {stage.name} already has split/fuse/reorder/"
                "annotations; replace its computation first"
            )
        for other in self.stages:
            if other.attach_kind == AttachKind.SCOPE and other.attach_stage is stage:
                raise ScheduleError(
                    f"replace_compute: stage {other.name} is computed at stage {stage.name};"
                    " replace its computation first"
                )
        checked = check_params(params)
        parts = build_rewrite(rewrite, old, checked)
        view = parts["view"]
        got = [as_int(d) for d in view.shape]
        want = [as_int(d) for d in old.output(0).shape]
        if view.dtype != old.output(0).dtype or got != want:
            raise ScheduleError(
                f"replace_compute: rewrite `{rewrite}` made {view.dtype}{got} for stage"
                f" {stage.name} of {old.output(0).dtype}{want}"
            )
        position = self.stages.index(stage)
        for op in _post_order([view.op]):
            if op is view.op or id(op) in self._by_op:
                continue
            if isinstance(op, PlaceholderOp):
                raise ScheduleError(
                    f"replace_compute: rewrite `{rewrite}` reads {op.name}, which is not an"
                    " input of the schedule"
                )
            self._add_stage(op, position)
            position += 1
        self._set_op(stage, view.op)
        stage._set_roots(root_iter_vars(view.op))
        self._replace_dataflow({old.output(0): view}, skip=[stage])
        self._trace.append(ScheduleStep.make("replace_compute", (stage.name, rewrite), checked))
        return parts

    def make_input(self, tensor: Tensor | Operation | Stage | str, name: str) -> Tensor:
        """Make `tensor`'s stage an input: a placeholder named `name` of its shape and dtype
        (a value computed elsewhere, e.g. a weight's packing at build time), which its
        readers read from then on; the stages nothing reads any more leave the schedule.
        Returns the placeholder. Recorded as `make_input("stage", "name")`."""
        from .tensor import placeholder

        stage = self[tensor]
        old = stage.op
        if isinstance(old, PlaceholderOp):
            raise ScheduleError(f"make_input: stage {stage.name} is an input already")
        if old.num_outputs != 1:
            raise ScheduleError(f"make_input: stage {stage.name} has several outputs")
        if stage.is_output:
            raise ScheduleError(f"make_input: stage {stage.name} is an output of the schedule")
        stays = _reachable(self.outputs, stop=old)
        for other in self.stages:
            host = other.attach_stage
            if other is stage or id(other.op) not in stays or host is None:
                continue
            if other.attach_kind == AttachKind.SCOPE and (
                host is stage or id(host.op) not in stays
            ):
                raise ScheduleError(
                    f"make_input: stage {other.name} is computed at stage {host.name}, which"
                    " would have no loops any more"
                )
        out = old.output(0)
        value = placeholder(tuple(out.shape), out.dtype, name)
        self._set_op(stage, value.op)
        stage._set_roots(())
        stage.attach_kind = AttachKind.ROOT
        stage.attach_stage = stage.attach_ivar = None
        stage.tensorized = None
        self._replace_dataflow({out: value}, skip=[stage])
        live = {id(op) for op in _post_order(self.outputs)}
        for dead in [st for st in self.stages if id(st.op) not in live]:
            self.stages.remove(dead)
            self._by_name.pop(dead.name, None)
            for key in [k for k, (_, st) in self._by_op.items() if st is dead]:
                del self._by_op[key]
        self._trace.append(ScheduleStep.make("make_input", (stage.name, name), {}))
        return value

    def __repr__(self) -> str:
        return "Schedule(" + ", ".join(s.name for s in self.stages) + ")"


def _substitute_many(
    bodies: Sequence[PrimExpr], sub: Mapping[Var, PrimExpr]
) -> tuple[PrimExpr, ...]:
    def fn(node: Any) -> Any:
        return sub.get(node) if isinstance(node, Var) else None

    return tuple(rewrite_expr(b, fn) for b in bodies)


def _replace_inputs(op: Operation, vmap: dict[Tensor, Tensor]) -> Operation:
    """`op` reading `vmap[t]` for each tensor `t` it reads (itself when it reads none)."""
    if not any(t in vmap for t in op.input_tensors):
        return op
    if isinstance(op, ExternOp):
        inputs = tuple(vmap.get(t, t) for t in op.inputs)
        return ExternOp(op.name, op.tag, inputs, op.input_buffers, op.output_buffers, op.body)
    assert isinstance(op, ComputeOp)

    def fn(node: Any) -> Any:
        if isinstance(node, ProducerLoad) and node.producer in vmap:
            return ProducerLoad(vmap[node.producer], node.indices)
        return None

    bodies = tuple(rewrite_expr(b, fn) for b in op.body)
    return ComputeOp(op.name, op.tag, op.attrs, op.axis, bodies)


def create_schedule(outputs: Tensor | Operation | Sequence[Tensor | Operation]) -> Schedule:
    """A schedule with one stage per operation reachable from `outputs`, every stage at root
    with its loops in their natural order."""
    items = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    ops: list[Operation] = []
    for item in items:
        op = item.op if isinstance(item, Tensor) else item
        if not isinstance(op, Operation):
            raise ScheduleError(f"create_schedule: expected tensors, got {item!r}")
        if all(op is not o for o in ops):
            ops.append(op)
    return Schedule(ops)


__all__ = [
    "AttachKind",
    "Fuse",
    "Schedule",
    "ScheduleError",
    "Split",
    "Stage",
    "create_schedule",
    "root_iter_vars",
    "split_extents",
]
