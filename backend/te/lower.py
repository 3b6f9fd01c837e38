"""Lowering a schedule to a loop-IR kernel (`PrimFunc`), in "normal form 1".

    func = lower(s, [A, B, C], "matmul")

The kernel's params are the buffers of `args` in order (inputs, then outputs). Each stage
with loops becomes a loop nest over its leaf iteration variables, outermost first, each
`For` of the kind the schedule gave (serial, parallel, vectorized, unrolled), in
topological order at the top of the kernel (stages at root) or inside the loop of the
consumer it is computed at. Intermediate stages get an `Allocate`d buffer: the whole domain
(scope `global`) at root, the region bound inference found (scope `local`, constant size)
inside the attach loop. Accesses are multi-dimensional (one index per dimension); a buffer
holding a region is indexed relative to the region's start.

The body of a stage stores each output; inlined stages are substituted into their readers.
A reduction is an init nest then an update nest:

    for i:                                  # loops before the first reduction loop
      for j.init: C[i, j.init] = 0          # data-parallel loops after it, fresh variables
      for k: for j: C[i, j] = C[i, j] + A[i, k] * B[k, j]

(a tuple reduction binds every combined value with `LetStmt`s, then stores each). A loop
that may run past its range (a split whose factor does not divide the extent, a region that
reaches outside the domain) guards the stores with `if likely(i.outer * 4 + i.inner < 13)`,
which loop partitioning later removes from the bulk of the loop. Extern ops insert their
statement with their buffers replaced by the real ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..tir.arith import add, as_int, canonical, const_bound, sub
from ..tir.buffer import Buffer
from ..tir.dtypes import INDEX_DTYPE
from ..tir.expr import (
    And,
    BufferLoad,
    IntImm,
    IterKind,
    IterVar,
    PrimExpr,
    Reduce,
    Var,
    const,
)
from ..tir.op import likely
from ..tir.stmt import (
    Allocate,
    BufferStore,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    Stmt,
    seq,
)
from ..tir.visitor import children, rewrite_expr, substitute
from .bound import Bounds, StageBound, infer_bound
from .errors import ScheduleError
from .schedule import AttachKind, Schedule, Split, Stage, create_schedule
from .tensor import ComputeOp, ExternOp, PlaceholderOp, ProducerLoad, Tensor

Offsets = tuple[PrimExpr, ...] | None


class _Lowering:
    def __init__(self, schedule: Schedule, args: Sequence[Tensor]) -> None:
        self.schedule = schedule
        self.bounds: Bounds = infer_bound(schedule)
        self.params: list[Buffer] = []
        self.buffers: dict[Tensor, tuple[Buffer, Offsets]] = {}
        self.allocs: dict[Stage, list[Buffer]] = {}
        self.ranges = dict(self.bounds.ranges)
        self._attach_map: dict[Stage, dict[int, list[Stage]]] | None = None
        self._bind_args(args)
        self._bind_stages()

    # -------------------------------------------------------------------------- buffers

    def _bind_args(self, args: Sequence[Tensor]) -> None:
        seen: set[int] = set()
        for t in args:
            if not isinstance(t, Tensor):
                raise ScheduleError(f"lower: arguments must be tensors, got {t!r}")
            stage = self.schedule[t]
            current = self.schedule.tensor(t)
            if id(current) in seen:
                raise ScheduleError(f"lower: {current.name} is given twice as an argument")
            seen.add(id(current))
            if stage.attach_kind == AttachKind.INLINE:
                raise ScheduleError(f"lower: argument {stage.name} is inlined")
            name = stage.name if current.value_index == 0 else f"{stage.name}.{current.value_index}"
            buf = Buffer(name, current.dtype, current.shape)
            self.params.append(buf)
            self.buffers[current] = (buf, None)

    def _bind_stages(self) -> None:
        for stage in self.schedule.stages:
            op = stage.op
            if isinstance(op, PlaceholderOp):
                if op.output(0) not in self.buffers:
                    raise ScheduleError(f"lower: input {stage.name} is not among the arguments")
                continue
            if stage.attach_kind == AttachKind.INLINE:
                continue
            sb = self.bounds[stage]
            at_root = stage.attach_kind == AttachKind.ROOT or sb.at_full_domain()
            for k in range(op.num_outputs):
                t = op.output(k)
                if t in self.buffers:
                    continue
                name = stage.name if k == 0 else f"{stage.name}.{k}"
                shape = tuple(t.shape) if isinstance(op, ExternOp) else sb.shape
                if stage.attach_kind == AttachKind.SCOPE and any(as_int(d) is None for d in shape):
                    raise ScheduleError(
                        f"stage {stage.name}: the region computed at its compute_at location has"
                        " no constant size"
                    )
                scope = "global" if stage.attach_kind == AttachKind.ROOT else "local"
                buf = Buffer(name, t.dtype, shape, scope=scope)
                self.allocs.setdefault(stage, []).append(buf)
                self.buffers[t] = (buf, None if at_root else sb.offsets)

    def _load(self, node: ProducerLoad) -> PrimExpr:
        found = self.buffers.get(node.producer)
        if found is None:
            raise ScheduleError(f"lower: tensor {node.producer.name} has no buffer")
        buf, offsets = found
        indices = node.indices
        if offsets is not None:
            indices = tuple(sub(i, o) for i, o in zip(indices, offsets))
        return BufferLoad(buf, tuple(canonical(i) for i in indices))

    def _convert(self, e: PrimExpr, values: dict[Var, PrimExpr]) -> PrimExpr:
        """A body expression in loop variables, reading buffers."""

        def fn(node: Any) -> Any:
            if isinstance(node, ProducerLoad):
                return self._load(node)
            return None

        return rewrite_expr(substitute(e, values), fn)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------------- predicates

    def _predicates(self, stage: Stage, sb: StageBound) -> list[tuple[PrimExpr, bool]]:
        """Guards of the body: (condition, involves a reduction loop). Ranges flow from the
        leaves up the relations; an iteration variable that may pass its extent is guarded
        (and from then on known to be within it); a root whose region may reach outside the
        domain is guarded against the domain."""
        preds: list[tuple[PrimExpr, bool]] = []
        rng: dict[IterVar, tuple[int, int] | None] = {}
        for leaf in stage.leaf_iter_vars:
            n = as_int(sb.extents[leaf])
            rng[leaf] = (0, n - 1) if n is not None else None

        def check(iv: IterVar, r: tuple[int, int] | None) -> None:
            n = as_int(sb.extents[iv])
            if r is None or n is None or r[1] >= n:
                preds.append((canonical(sb.rel[iv]) < sb.extents[iv], iv.kind == IterKind.REDUCE))
                r = (0, n - 1) if n is not None else None
            rng[iv] = r

        for rel in reversed(stage.relations):
            if isinstance(rel, Split):
                outer, inner, stride = rng[rel.outer], rng[rel.inner], as_int(sb.strides[rel])
                if outer is None or inner is None or stride is None:
                    check(rel.parent, None)
                else:
                    check(rel.parent, (outer[0] * stride + inner[0], outer[1] * stride + inner[1]))
            else:
                fused, e = rng[rel.fused], as_int(sb.extents[rel.inner])
                if fused is None or e is None:
                    check(rel.outer, None)
                    check(rel.inner, None)
                    continue
                lo, hi = fused
                check(rel.outer, (lo // e, hi // e))
                same_block = lo // e == hi // e
                check(rel.inner, (lo % e, hi % e) if same_block else (0, e - 1))
        for iv in stage.root_iter_vars:
            dmin, dext = iv.dom.min, iv.dom.extent
            if iv in sb.full:
                continue
            base = const_bound(sb.root_min[iv], self.ranges)
            r = rng.get(iv)
            value = sb.value[iv.var]
            red = iv.kind == IterKind.REDUCE
            a, n = as_int(dmin), as_int(dext)
            vlo = None if base[0] is None or r is None else base[0] + r[0]
            vhi = None if base[1] is None or r is None else base[1] + r[1]
            if vlo is None or a is None or vlo < a:
                preds.append((value >= dmin, red))
            if vhi is None or a is None or n is None or vhi >= a + n:
                preds.append((value < canonical(add(dmin, dext)), red))
        return preds

    @staticmethod
    def _guard(body: Stmt, preds: Sequence[PrimExpr]) -> Stmt:
        if not preds:
            return body
        cond = preds[0]
        for p in preds[1:]:
            cond = And(cond, p)
        return IfThenElse(likely(cond), body)

    # ------------------------------------------------------------------------- loop nests

    def _loop(self, stage: Stage, leaf: IterVar, var: Var, ext: PrimExpr, body: Stmt) -> Stmt:
        kind = stage.annotations.get(leaf, ForKind.SERIAL)
        pragmas = {f"pragma_{key}": True for key in stage.pragmas.get(leaf, ())}
        return For(var, const(0), ext, kind, body, pragmas)

    def _check_leaves(self, stage: Stage, sb: StageBound) -> None:
        leaves = stage.leaf_iter_vars
        attached = self._attached(stage)
        for pos, leaf in enumerate(leaves):
            if stage.annotations.get(leaf) != ForKind.VECTORIZED:
                continue
            name = f"`{stage.iv_name(leaf)}` of stage {stage.name}"
            if as_int(sb.extents[leaf]) is None:
                raise ScheduleError(f"vectorize: {name} has no constant extent")
            for later in leaves[pos + 1 :]:
                if as_int(sb.extents[later]) != 1:
                    raise ScheduleError(
                        f"vectorize: {name} is not the innermost loop (`{stage.iv_name(later)}`"
                        " is inside it)"
                    )
            if any(p >= pos for p in attached):
                raise ScheduleError(f"vectorize: a stage is computed inside the vector loop {name}")

    def _attached(self, stage: Stage) -> dict[int, list[Stage]]:
        """The stages computed at each leaf position of `stage` (topological order)."""
        if self._attach_map is None:
            self._attach_map = {}
            for other in self.schedule.stages:
                path = self.bounds.paths.get(other)
                if path:
                    target, pos = path[0]
                    self._attach_map.setdefault(target, {}).setdefault(pos, []).append(other)
        return self._attach_map.get(stage, {})

    def _nest(
        self,
        stage: Stage,
        sb: StageBound,
        positions: Sequence[int],
        body: Stmt,
        stmts: dict[Stage, Stmt],
        attached: dict[int, list[Stage]],
    ) -> Stmt:
        """Wrap `body` in the loops of `positions` (outermost first), each with the stages
        computed at it (and their allocations) before the rest of its body."""
        leaves = stage.leaf_iter_vars
        for pos in reversed(positions):
            here = attached.get(pos, [])
            if here:
                inner = seq(*(stmts[a] for a in here), body)
                for a in reversed(here):
                    for buf in reversed(self.allocs.get(a, [])):
                        inner = Allocate(buf, inner)
                body = inner
            leaf = leaves[pos]
            body = self._loop(stage, leaf, leaf.var, sb.extents[leaf], body)
        return body

    def _compute_stmt(self, stage: Stage, stmts: dict[Stage, Stmt]) -> Stmt:
        if stage.tensorized is not None:
            from .tensorize import lower_tensorized

            return lower_tensorized(self, stage, stmts)
        op = stage.op
        assert isinstance(op, ComputeOp)
        sb = self.bounds[stage]
        self._check_leaves(stage, sb)
        attached = self._attached(stage)
        bodies = self.bounds.expanded[stage]
        stores = [self.buffers[t] for t in op.outputs]
        indices = [
            tuple(sb.rel[iv] if offsets is not None else sb.value[iv.var] for iv in op.axis)
            for _, offsets in stores
        ]
        preds = self._predicates(stage, sb)
        leaves = stage.leaf_iter_vars
        if not isinstance(bodies[0], Reduce):
            values = [self._convert(b, sb.value) for b in bodies]
            body = seq(
                *(BufferStore(buf, v, idx) for (buf, _), v, idx in zip(stores, values, indices))
            )
            body = self._guard(body, [p for p, _ in preds])
            return self._nest(stage, sb, range(len(leaves)), body, stmts, attached)
        reduce = bodies[0]
        first = next((k for k, iv in enumerate(leaves) if iv.kind == IterKind.REDUCE), len(leaves))
        # init: fresh loop variables for the data-parallel loops after the first reduce loop
        init_vars = {
            leaves[k].var: Var(f"{stage.iv_name(leaves[k])}.init", INDEX_DTYPE)
            for k in range(first, len(leaves))
            if leaves[k].kind != IterKind.REDUCE
        }
        init: Stmt = seq(
            *(
                BufferStore(buf, ident, tuple(substitute(i, init_vars) for i in idx))
                for (buf, _), ident, idx in zip(stores, reduce.combiner.identity, indices)
            )
        )
        init = self._guard(init, [substitute(p, init_vars) for p, red in preds if not red])
        for k in reversed(range(first, len(leaves))):
            leaf = leaves[k]
            if leaf.kind != IterKind.REDUCE:
                init = self._loop(stage, leaf, init_vars[leaf.var], sb.extents[leaf], init)
        update = self._update(stage, sb, bodies, stores, indices)
        update = self._guard(update, [p for p, _ in preds])
        update = self._nest(stage, sb, range(first, len(leaves)), update, stmts, attached)
        return self._nest(stage, sb, range(first), seq(init, update), stmts, attached)

    def _update(
        self,
        stage: Stage,
        sb: StageBound,
        bodies: Sequence[PrimExpr],
        stores: Sequence[tuple[Buffer, Offsets]],
        indices: Sequence[tuple[PrimExpr, ...]],
    ) -> Stmt:
        reduce = bodies[0]
        assert isinstance(reduce, Reduce)
        combiner = reduce.combiner
        sources = [self._convert(s, sb.value) for s in reduce.source]
        olds = [BufferLoad(buf, idx) for (buf, _), idx in zip(stores, indices)]
        lets: list[tuple[Var, PrimExpr]] = []
        rhs: dict[Var, PrimExpr] = {}
        single = len(sources) == 1
        for y, src in zip(combiner.rhs, sources):
            if single and _count(combiner.result[0], y) <= 1:
                rhs[y] = src
            else:
                fresh = Var(f"{stage.name}.rhs", src.dtype)
                lets.append((fresh, src))
                rhs[y] = fresh
        mapping: dict[Var, PrimExpr] = dict(zip(combiner.lhs, olds))
        mapping.update(rhs)
        results = [substitute(r, mapping) for r in combiner.result]
        if single:
            body: Stmt = BufferStore(stores[0][0], results[0], indices[0])
        else:
            fresh_results = [Var(f"{stage.name}.v{k}", r.dtype) for k, r in enumerate(results)]
            body = seq(
                *(
                    BufferStore(buf, v, idx)
                    for (buf, _), v, idx in zip(stores, fresh_results, indices)
                )
            )
            for v, r in reversed(list(zip(fresh_results, results))):
                body = LetStmt(v, r, body)
        for var, value in reversed(lets):
            body = LetStmt(var, value, body)
        cond = self._convert(reduce.condition, sb.value)
        if not (isinstance(cond, IntImm) and cond.value):
            body = IfThenElse(cond, body)
        return body

    def _extern_stmt(self, stage: Stage) -> Stmt:
        op = stage.op
        assert isinstance(op, ExternOp)
        remap: dict[Buffer, Buffer] = {}
        for old, t in zip(op.input_buffers, op.inputs):
            buf, offsets = self.buffers[self.schedule.tensor(t) if t not in self.buffers else t]
            assert offsets is None
            remap[old] = buf
        for old, t in zip(op.output_buffers, op.outputs):
            remap[old] = self.buffers[t][0]
        datas = {old.data: new.data for old, new in remap.items()}

        def fn(node: Any) -> Any:
            if isinstance(node, BufferLoad) and node.buffer in remap:
                return BufferLoad(remap[node.buffer], node.indices)
            if isinstance(node, BufferStore) and node.buffer in remap:
                return BufferStore(remap[node.buffer], node.value, node.indices)
            if isinstance(node, Var) and node in datas:
                return datas[node]
            return None

        return rewrite_expr(op.body, fn)  # type: ignore[no-any-return]

    # ---------------------------------------------------------------------------- driver

    def run(self, name: str) -> PrimFunc:
        stmts: dict[Stage, Stmt] = {}
        top: list[Stmt] = []
        root_allocs: list[Buffer] = []
        for stage in self.schedule.stages:
            op = stage.op
            if isinstance(op, PlaceholderOp) or stage.attach_kind == AttachKind.INLINE:
                continue
            if isinstance(op, ExternOp):
                stmts[stage] = self._extern_stmt(stage)
            else:
                stmts[stage] = self._compute_stmt(stage, stmts)
            if stage.attach_kind == AttachKind.ROOT:
                top.append(stmts[stage])
                root_allocs.extend(self.allocs.get(stage, []))
        body = seq(*top) if top else SeqStmt(())
        for buf in reversed(root_allocs):
            body = Allocate(buf, body)
        _check_parallel(body)
        num_outputs = sum(
            1 for b in self.params if not isinstance(self._producer_of(b), PlaceholderOp)
        )
        return PrimFunc(name, tuple(self.params), body, {"num_outputs": num_outputs})

    def _producer_of(self, buf: Buffer) -> Any:
        for t, (b, _) in self.buffers.items():
            if b is buf:
                return t.op
        return None


def _count(expr: PrimExpr, var: Var) -> int:
    """How many times `var` occurs in `expr` (shared subtrees counted each time)."""
    count, stack = 0, [expr]
    while stack:
        node = stack.pop()
        if node is var:
            count += 1
        stack.extend(children(node))
    return count


def _check_parallel(body: Stmt) -> None:
    stack: list[tuple[Any, bool]] = [(body, False)]
    while stack:
        node, inside = stack.pop()
        if isinstance(node, For) and node.kind == ForKind.PARALLEL:
            if inside:
                raise ScheduleError(
                    f"parallel: loop `{node.loop_var.name}` is inside another parallel loop"
                )
            inside = True
        if isinstance(node, Stmt):
            stack.extend((k, inside) for k in children(node) if isinstance(k, Stmt))


def lower(schedule: Schedule, args: Sequence[Tensor], name: str = "main") -> PrimFunc:
    """The kernel computing `schedule`: params are the buffers of `args` (inputs then
    outputs, as given), the body the scheduled loop nests (see the module docstring)."""
    return _Lowering(schedule, args).run(name)


def lower_default(
    outputs: Tensor | Sequence[Tensor], args: Sequence[Tensor], name: str = "main"
) -> PrimFunc:
    """`lower` with the naive schedule: every non-output compute stage without a reduction
    inlined (unless it is an argument or an extern op reads it), everything else at root."""
    s = create_schedule(outputs if isinstance(outputs, Tensor) else list(outputs))
    arg_ops = {id(t.op) for t in args}
    extern_inputs = {
        id(t.op) for stage in s.stages if isinstance(stage.op, ExternOp) for t in stage.op.inputs
    }
    for stage in s.stages:
        op = stage.op
        if (
            isinstance(op, ComputeOp)
            and not stage.is_output
            and not op.reduce_axis
            and id(op) not in arg_ops
            and id(op) not in extern_inputs
        ):
            stage.compute_inline()
    return lower(s, args, name)


__all__ = ["lower", "lower_default"]
