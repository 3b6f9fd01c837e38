"""Tensorize: a loop nest replaced by a declared intrinsic.

A tensor intrinsic is a small compute (what it does, over placeholders) and the name of an
LLVM body that does exactly that (`codegen.tensor_intrinsics`):

    a = placeholder((2,), "int16", "a")
    b = placeholder((8, 2), "int16", "b")
    k = reduce_axis(2, "k")
    c = compute((8,), lambda j: sum_(cast("int32", a[k]) * cast("int32", b[j, k]), axis=k))
    AVX2_DOT = declare("avx2_dot_i16", c, body="x86.pmaddwd.256", features=("avx2",))

`s[C].tensorize(iv, AVX2_DOT)` says: the loops of `C` from `iv` inward are the intrinsic.
Before and after, for `C[m, n] = sum(k: int32(A[m, k]) * int32(B[n // 8, k // 2, n % 8, k % 2]))`
split as `n = no*8 + ni`, `k = ko*2 + ki` and ordered `(m, no, ko, ni, ki)`:

    for m: for no: for ko:                          for m: for no: for ko:
      for ni: for ki:                                 C[m, no*8 : +8] = tensor.x86.pmaddwd.256(
        C[m, no*8+ni] += A[m, ko*2+ki]          =>        C[m, no*8 : +8], A[m, ko*2 : +2],
                         * B[no, ko, ni, ki]               B[no, ko, 0:16])

Lowering checks that the nest matches the intrinsic's compute, or raises a `ScheduleError`
saying what differs: the loops under `iv` must be as many as the intrinsic's axes, data-parallel
ones matching its axes in order and reduction ones its reduce axes, with the same extents;
the body must have the same operations, dtypes and constants (the same reduction, when it is
one); and every tensor the body reads, like the result it writes, must be read over a region
laid out as the intrinsic's operand (row-major, contiguous: the flat index, as a function of
the inner loops, is the operand's own flat index plus a base). No guard may involve the inner
loops, and no stage may be computed inside them. A reduction's init stays a loop nest
(vectorized innermost); the loops between the first reduction loop and `iv` wrap the call.
The step is recorded in the trace as `tensorize("C", "ni", "avx2_dot_i16")` (intrinsics are
looked up by name, so traces replay).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from attrs import frozen

from ..tir.arith import as_int, canonical, simplify
from ..tir.dtypes import INDEX_DTYPE, with_lanes
from ..tir.expr import (
    BufferLoad,
    Call,
    Cast,
    FloatImm,
    IntImm,
    IterKind,
    PrimExpr,
    Ramp,
    Reduce,
    Var,
    const,
)
from ..tir.op import TENSOR_PREFIX
from ..tir.stmt import BufferStore, For, ForKind, Stmt, seq
from ..tir.visitor import children, sub_expressions, substitute
from .errors import ScheduleError
from .tensor import ComputeOp, PlaceholderOp, ProducerLoad, Tensor

if TYPE_CHECKING:
    from .bound import StageBound
    from .lower import _Lowering
    from .schedule import Stage


@frozen(eq=False)
class TensorIntrinsic:
    """A declared intrinsic: `output` is the compute it replaces (one output over the
    placeholders `inputs`, in the order the body takes them), `body` the LLVM body's name,
    `features` the target features the body needs (those of the instruction it uses)."""

    name: str
    output: Tensor
    inputs: tuple[Tensor, ...]
    body: str
    features: tuple[str, ...] = ()

    @property
    def op(self) -> ComputeOp:
        """The compute it replaces."""
        return self.output.op  # type: ignore[return-value]

    @property
    def call_name(self) -> str:
        """The loop-IR call a tensorized region becomes."""
        return TENSOR_PREFIX + self.body


REGISTRY: dict[str, TensorIntrinsic] = {}
"""Every declared intrinsic by name (what traces name)."""


def declare(name: str, output: Tensor, body: str, features: Sequence[str] = ()) -> TensorIntrinsic:
    """Declare (and register) the intrinsic `name` replacing the compute of `output`, whose
    inputs (placeholders, in the order they are first read) are the body's operands."""
    op = output.op
    if not isinstance(op, ComputeOp) or op.num_outputs != 1:
        raise ScheduleError(f"intrinsic {name}: the declaration must be a one-output compute")
    inputs: list[Tensor] = []
    for node in sub_expressions(op.body[0]):
        if isinstance(node, ProducerLoad) and all(node.producer is not t for t in inputs):
            if not isinstance(node.producer.op, PlaceholderOp):
                raise ScheduleError(f"intrinsic {name}: it may only read placeholders")
            inputs.append(node.producer)
    for iv in (*op.axis, *op.reduce_axis):
        if as_int(iv.dom.extent) is None:
            raise ScheduleError(f"intrinsic {name}: every axis needs a constant extent")
    old = REGISTRY.get(name)
    if old is not None and (old.body != body or old.output.shape != output.shape):
        raise ScheduleError(f"intrinsic `{name}` is declared twice, differently")
    intrinsic = TensorIntrinsic(name, output, tuple(inputs), body, tuple(features))
    REGISTRY[name] = intrinsic
    return intrinsic


def lookup(name: str) -> TensorIntrinsic:
    """The intrinsic declared as `name` (the x86 ones are declared on first use)."""
    if name not in REGISTRY:
        from . import intrinsics_x86  # noqa: F401  (declares them)
    found = REGISTRY.get(name)
    if found is None:
        known = ", ".join(sorted(REGISTRY)) or "none"
        raise ScheduleError(f"no tensor intrinsic named `{name}` (declared: {known})")
    return found


# ------------------------------------------------------------------------------ lowering


def _mismatch(stage: Stage, intrinsic: TensorIntrinsic, why: str) -> ScheduleError:
    return ScheduleError(
        f"tensorize: the loops of stage {stage.name} do not match intrinsic {intrinsic.name}: {why}"
    )


def _flat(shape: Sequence[PrimExpr], indices: Sequence[PrimExpr]) -> PrimExpr:
    total: PrimExpr = const(0)
    stride: PrimExpr = const(1)
    for d, i in zip(reversed(list(shape)), reversed(list(indices))):
        total = total + i * stride
        stride = stride * d
    return total


class _Match:
    """The correspondence between a stage's body (loop IR in its leaf variables) and the
    intrinsic's compute: which buffer access stands for each operand placeholder."""

    def __init__(self, stage: Stage, intrinsic: TensorIntrinsic) -> None:
        self.stage = stage
        self.intrinsic = intrinsic
        self.operands: dict[int, BufferLoad] = {}

    def walk(self, mine: PrimExpr, theirs: PrimExpr) -> None:
        stack = [(mine, theirs)]
        while stack:
            a, b = stack.pop()
            if isinstance(b, ProducerLoad):
                if not isinstance(a, BufferLoad):
                    raise self._differs(a, b)
                if a.dtype != b.dtype:
                    raise self._differs(a, b)
                seen = self.operands.get(id(b.producer))
                if seen is not None and seen.buffer is not a.buffer:
                    raise _mismatch(self.stage, self.intrinsic, f"{b.producer.name} is read twice")
                self.operands[id(b.producer)] = a
                continue
            if type(a) is not type(b) or a.dtype != b.dtype:
                raise self._differs(a, b)
            if isinstance(a, (IntImm, FloatImm)) and a.value != b.value:  # type: ignore[attr-defined]
                raise self._differs(a, b)
            if isinstance(a, Call) and a.name != b.name:  # type: ignore[attr-defined]
                raise self._differs(a, b)
            if isinstance(a, Var):
                raise self._differs(a, b)
            kids_a, kids_b = children(a), children(b)
            if len(kids_a) != len(kids_b):
                raise self._differs(a, b)
            stack.extend(zip(kids_a, kids_b))

    def _differs(self, a: Any, b: Any) -> ScheduleError:
        def show(e: Any) -> str:
            if isinstance(e, BufferLoad):
                return f"a load of {e.buffer.name} ({e.dtype})"
            if isinstance(e, ProducerLoad):
                return f"a load of {e.producer.name} ({e.dtype})"
            if isinstance(e, Cast):
                return f"a cast to {e.dtype}"
            return f"{type(e).__name__} ({getattr(e, 'dtype', '?')})"

        return _mismatch(
            self.stage, self.intrinsic, f"the body has {show(a)} where it has {show(b)}"
        )


def _region(
    stage: Stage,
    intrinsic: TensorIntrinsic,
    what: str,
    buffer_shape: Sequence[PrimExpr],
    indices: Sequence[PrimExpr],
    operand_shape: Sequence[PrimExpr],
    operand_indices: Sequence[PrimExpr],
    to_inner: dict[Var, PrimExpr],
    inner: Sequence[Var],
    ranges: dict[Var, tuple[int, int]],
) -> tuple[PrimExpr, ...]:
    """The indices of the region's first element, its last index made a `Ramp` over the
    operand's elements, after checking the region is laid out as the operand."""
    zero = {v: const(0) for v in inner}
    mine = _flat(buffer_shape, indices)
    base = substitute(mine, zero)
    theirs = substitute(_flat(operand_shape, operand_indices), to_inner)
    diff = simplify(canonical(mine - base - theirs), ranges)
    if not (isinstance(diff, IntImm) and diff.value == 0):
        raise _mismatch(
            stage,
            intrinsic,
            f"{what} is not read over a contiguous region laid out as the intrinsic's operand",
        )
    lanes = math.prod(int(as_int(d) or 0) for d in operand_shape)
    first = [simplify(substitute(i, zero), ranges) for i in indices]
    if lanes > 1:
        first[-1] = Ramp(first[-1], const(1, first[-1].dtype), lanes)
    return tuple(first)


def lower_tensorized(low: _Lowering, stage: Stage, stmts: dict[Stage, Stmt]) -> Stmt:
    """The loop nest of a tensorized stage (module docstring)."""
    leaf, intrinsic = stage.tensorized  # type: ignore[misc]
    op = stage.op
    if not isinstance(op, ComputeOp) or op.num_outputs != 1:
        raise ScheduleError(f"tensorize: stage {stage.name} is not a one-output compute")
    sb: StageBound = low.bounds[stage]
    leaves = stage.leaf_iter_vars
    if not any(v is leaf for v in leaves):
        raise ScheduleError(
            f"tensorize: `{stage.iv_name(leaf)}` is no longer a loop of stage {stage.name}"
        )
    pos = next(k for k, v in enumerate(leaves) if v is leaf)
    inner = leaves[pos:]
    iop = intrinsic.op
    data = [iv for iv in inner if iv.kind != IterKind.REDUCE]
    red = [iv for iv in inner if iv.kind == IterKind.REDUCE]
    if len(data) != len(iop.axis) or len(red) != len(iop.reduce_axis):
        raise _mismatch(
            stage,
            intrinsic,
            f"{len(data)} data-parallel and {len(red)} reduction loops from"
            f" `{stage.iv_name(leaf)}` inward, the intrinsic has {len(iop.axis)} and"
            f" {len(iop.reduce_axis)}",
        )
    to_inner: dict[Var, PrimExpr] = {}
    for mine, theirs in zip([*data, *red], [*iop.axis, *iop.reduce_axis]):
        n, want = as_int(sb.extents[mine]), as_int(theirs.dom.extent)
        if n != want:
            raise _mismatch(
                stage,
                intrinsic,
                f"loop `{stage.iv_name(mine)}` has {n} iterations, the intrinsic's"
                f" `{theirs.var.name}` {want}",
            )
        to_inner[theirs.var] = mine.var
        if mine in stage.annotations:
            raise ScheduleError(
                f"tensorize: loop `{stage.iv_name(mine)}` of stage {stage.name} is annotated"
                f" {stage.annotations[mine].value}; tensorized loops take no annotation"
            )
    attached = low._attached(stage)
    if any(p >= pos for p in attached):
        raise ScheduleError(
            f"tensorize: a stage is computed inside the tensorized loops of stage {stage.name}"
        )
    inner_ids = {id(iv.var) for iv in inner}
    preds = low._predicates(stage, sb)
    for p, _ in preds:
        if any(id(x) in inner_ids for x in sub_expressions(p) if isinstance(x, Var)):
            raise ScheduleError(
                f"tensorize: the loops of stage {stage.name} from `{stage.iv_name(leaf)}` inward"
                " may run past their range (split them by a factor that divides the extent,"
                " or pad the compute)"
            )
    body, ibody = low.bounds.expanded[stage][0], iop.body[0]
    if isinstance(body, Reduce) != isinstance(ibody, Reduce):
        raise _mismatch(stage, intrinsic, "one is a reduction and the other is not")
    if isinstance(body, Reduce):
        assert isinstance(ibody, Reduce)
        if body.combiner.name != ibody.combiner.name or len(body.source) != 1:
            raise _mismatch(stage, intrinsic, "the reductions differ")
        for cond in (body.condition, ibody.condition):
            if not (isinstance(cond, IntImm) and cond.value):
                raise _mismatch(stage, intrinsic, "a reduction has a condition")
        mine_src, their_src = body.source[0], ibody.source[0]
    else:
        mine_src, their_src = body, ibody
    match = _Match(stage, intrinsic)
    match.walk(low._convert(mine_src, sb.value), their_src)
    ranges: dict[Var, tuple[int, int]] = {}
    for iv in leaves:
        n = as_int(sb.extents[iv])
        if n is not None:
            ranges[iv.var] = (0, n - 1)
    inner_vars = [iv.var for iv in inner]
    args: list[PrimExpr] = []
    for t in intrinsic.inputs:
        load = match.operands.get(id(t.op.output(0)))
        if load is None:
            raise _mismatch(stage, intrinsic, f"the body does not read operand {t.name}")
        idx = _region(stage, intrinsic, f"{load.buffer.name}", load.buffer.shape, load.indices,
                      t.shape, _operand_indices(iop, t), to_inner, inner_vars, ranges)  # fmt: skip
        args.append(BufferLoad(load.buffer, idx))
    buf, offsets = low.buffers[op.output(0)]
    out_idx = tuple(sb.rel[iv] if offsets is not None else sb.value[iv.var] for iv in op.axis)
    out_region = _region(stage, intrinsic, f"the result {buf.name}", buf.shape, out_idx,
                         intrinsic.output.shape, [iv.var for iv in iop.axis], to_inner,
                         inner_vars, ranges)  # fmt: skip
    lanes = math.prod(int(as_int(d) or 0) for d in intrinsic.output.shape)
    dtype = with_lanes(intrinsic.output.dtype, lanes) if lanes > 1 else intrinsic.output.dtype
    if isinstance(body, Reduce):
        args.insert(0, BufferLoad(buf, out_region))
    update: Stmt = BufferStore(buf, Call(dtype, intrinsic.call_name, tuple(args)), out_region)
    update = low._guard(update, [p for p, _ in preds])
    if not isinstance(body, Reduce):
        return low._nest(stage, sb, range(pos), update, stmts, attached)
    first = next((k for k, iv in enumerate(leaves) if iv.kind == IterKind.REDUCE), len(leaves))
    start = min(first, pos)
    init = _init_nest(low, stage, sb, start, body, buf, out_idx, preds)
    update = low._nest(stage, sb, range(start, pos), update, stmts, attached)
    return low._nest(stage, sb, range(start), seq(init, update), stmts, attached)


def _operand_indices(iop: ComputeOp, t: Tensor) -> tuple[PrimExpr, ...]:
    for node in sub_expressions(iop.body[0]):
        if isinstance(node, ProducerLoad) and node.producer is t:
            return node.indices
    raise ScheduleError(f"intrinsic does not read {t.name}")  # pragma: no cover


def _init_nest(
    low: _Lowering,
    stage: Stage,
    sb: StageBound,
    start: int,
    body: Reduce,
    buf: Any,
    out_idx: tuple[PrimExpr, ...],
    preds: list[tuple[PrimExpr, bool]],
) -> Stmt:
    """The reduction's identity stored over the data-parallel loops from `start` inward
    (fresh variables), the innermost vectorized when it has a constant extent."""
    leaves = stage.leaf_iter_vars
    loops = [iv for iv in leaves[start:] if iv.kind != IterKind.REDUCE]
    fresh = {iv.var: Var(f"{stage.iv_name(iv)}.init", INDEX_DTYPE) for iv in loops}
    init: Stmt = BufferStore(
        buf, body.combiner.identity[0], tuple(substitute(i, fresh) for i in out_idx)
    )
    init = low._guard(init, [substitute(p, fresh) for p, red in preds if not red])
    for k, iv in enumerate(reversed(loops)):
        kind = stage.annotations.get(iv, ForKind.SERIAL)
        if k == 0 and iv not in stage.annotations and as_int(sb.extents[iv]) is not None:
            kind = ForKind.VECTORIZED
        init = For(fresh[iv.var], const(0), sb.extents[iv], kind, init)
    return init


__all__ = ["REGISTRY", "TensorIntrinsic", "declare", "lookup", "lower_tensorized"]
