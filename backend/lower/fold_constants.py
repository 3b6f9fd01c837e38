"""Folding a scheduled kernel's weight-only stages: computed once at build time.

    folding = fold_constant_stages(s, graph, constant_params=(1,))

When a model is built with its weights bound (`relay.build(mod, params=...)`), a kernel's
weights are constants: parameters that every call site passes a constant to
(`constant_params`, positions among the function's flattened parameters), and the lifted
constants of the function. A schedule may still make stages that depend on nothing else:
dense's and batch_matmul's packed rhs, conv2d's channel-blocked weight, any transform of a
weight. Left alone they run on every call. This step, applied after scheduling, replaces
every such stage that the rest of the kernel reads by a new kernel input holding its value:

* a stage *folds* when it depends (transitively) on at least one weight and on no other
  input, writes one tensor, is not an output of the kernel, is read by a stage that is not
  weight-only, and is materialized, or inlined but reading a materialized weight-only stage
  (an expression of weights inlined into its reader stays as it is); its value must not be
  more than `MAX_GROWTH` times the size of the weights it reads;
* the folded stage's place in the schedule becomes a placeholder (`Schedule.make_input`, a
  recorded trace step: the readers load the precomputed value; the stages only it read are
  removed: no loop of the kernel repacks a weight any more), and the weights the kernel no
  longer reads leave its parameters;
* a folded stage that reads only lifted constants becomes a lifted constant (evaluated
  here); one that reads constant parameters becomes an extra kernel input (`FoldedStage`)
  whose value the build computes for each call site from the arrays it passes
  (`FoldedStage.evaluate`), as the weights of two call sites of one kernel differ.

Values are computed by the tensor-expression evaluator (`te.evaluate`), so they are exactly
what the stage computes. Nothing folds when the schedule computes a remaining stage inside
a folded or removed one (`compute_at`); the kernel is then left unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

import numpy as np
from attrs import frozen

from ...lang.dtype import numpy_dtype
from ..te.evaluate import evaluate
from ..te.schedule import AttachKind, Schedule, Stage
from ..te.tensor import ComputeOp, ExternOp, Operation, PlaceholderOp, Tensor
from .schedules import stage_order

MAX_GROWTH = 8
"""A folded value may be at most this many times the bytes of the weights it reads (a
padded packing is a little larger, a Winograd weight transform 4x; a broadcast of a small
weight to a large shape stays in the kernel)."""


@frozen(eq=False)
class FoldedStage:
    """A kernel input computed at build time: `tensor` (the stage's value as a tensor
    expression) of the constant parameters `params` (flattened position, placeholder) and
    the lifted constants `constants` (placeholder, value) it reads; `input` is the
    placeholder the kernel reads instead."""

    tensor: Tensor
    input: Tensor
    params: tuple[tuple[int, Tensor], ...]
    constants: tuple[tuple[Tensor, np.ndarray], ...]

    @property
    def param_positions(self) -> tuple[int, ...]:
        """The positions of the constant parameters the value depends on."""
        return tuple(p for p, _ in self.params)

    def evaluate(self, params: Mapping[int, np.ndarray]) -> np.ndarray:
        """The value for one call site, given the arrays it passes for `param_positions`."""
        bound: dict[Tensor, np.ndarray] = {t: params[p] for p, t in self.params}
        bound.update(self.constants)
        return np.ascontiguousarray(evaluate(self.tensor, bound)[0])


@frozen(eq=False)
class Folding:
    """What folding made of a kernel: the function's parameters it still takes
    (`param_positions`, in order), the inputs computed per call site (`folded`, passed after
    them), and its lifted constants (placeholder, value; folded ones included)."""

    param_positions: tuple[int, ...]
    folded: tuple[FoldedStage, ...]
    constants: tuple[tuple[Tensor, np.ndarray], ...]


def _post_order(roots: Sequence[Operation]) -> list[Operation]:
    """The operations `roots` depend on, producers first (iterative)."""
    return stage_order(op.output(0) for op in roots)


def _nbytes(t: Tensor) -> int:
    shape = [int(getattr(d, "value", 0)) for d in t.shape]
    return math.prod(shape) * numpy_dtype(t.dtype).itemsize


def _weight_only(order: list[Operation], sources: set[int]) -> dict[int, set[int]]:
    """For each operation that depends on no input but the weights `sources` (ids of
    placeholders): the ids of the weights it reads (empty for a weight-free compute)."""
    weights: dict[int, set[int]] = {}
    for op in order:
        if isinstance(op, PlaceholderOp):
            if id(op) in sources:
                weights[id(op)] = {id(op)}
            continue
        reads = op.input_tensors
        if all(id(t.op) in weights for t in reads):
            weights[id(op)] = set().union(*(weights[id(t.op)] for t in reads))
    return weights


def _reads_materialized(op: Operation, s: Schedule, memo: dict[int, bool]) -> bool:
    """Whether inlined weight-only `op` reads, through inlined stages, a materialized
    weight-only stage (iterative over the inlined producers)."""
    stack = [op]
    seen: set[int] = set()
    while stack:
        cur = stack.pop()
        if id(cur) in memo:
            if memo[id(cur)]:
                return True
            continue
        seen.add(id(cur))
        for t in cur.input_tensors:
            producer = t.op
            if isinstance(producer, PlaceholderOp) or id(producer) in seen:
                continue
            if s[producer].attach_kind != AttachKind.INLINE:
                return True
            stack.append(producer)
    for i in seen:
        memo[i] = False
    return False


def _folds(s: Schedule, order: list[Operation], weights: dict[int, set[int]]) -> list[Stage]:
    """The stages to fold (module docstring), producers first."""
    readers: dict[int, list[Operation]] = {id(op): [] for op in order}
    for op in order:
        for t in op.input_tensors:
            readers[id(t.op)].append(op)
    outputs = {id(op) for op in s.outputs}
    memo: dict[int, bool] = {}
    chosen = []
    for op in order:
        if (
            not isinstance(op, (ComputeOp, ExternOp))
            or not weights.get(id(op))
            or id(op) in outputs
            or op.num_outputs != 1
            or all(id(r) in weights for r in readers[id(op)])
        ):
            continue
        stage = s[op]
        if stage.attach_kind == AttachKind.INLINE and not _reads_materialized(op, s, memo):
            continue
        chosen.append(stage)
    return chosen


def _stays(s: Schedule, folded: set[int]) -> set[int]:
    """The operations still computed once the stages `folded` (ids) are inputs."""
    stays: set[int] = set()
    stack = list(s.outputs)
    while stack:
        op = stack.pop()
        if id(op) in stays:
            continue
        stays.add(id(op))
        if id(s[op]) not in folded:
            stack.extend(t.op for t in op.input_tensors)
    return stays


def _attached_to_removed(s: Schedule, folded: set[int]) -> bool:
    """Whether a stage that stays is computed at a loop of a stage that folding turns into
    an input or removes."""
    stays = _stays(s, folded)
    for stage in s.stages:
        if id(stage.op) not in stays or id(stage) in folded:
            continue
        host = stage.attach_stage
        if (
            stage.attach_kind == AttachKind.SCOPE
            and host is not None
            and (id(host) in folded or id(host.op) not in stays)
        ):
            return True
    return False


def fold_constant_stages(
    s: Schedule,
    params: Sequence[Tensor],
    constants: Sequence[tuple[Tensor, np.ndarray]],
    constant_params: Collection[int],
) -> Folding | None:
    """Fold the weight-only stages of the scheduled kernel `s` (module docstring), whose
    parameters are the placeholders `params` (those at `constant_params` are weights) and
    whose lifted constants are `constants`. Edits `s`; None (and `s` untouched) when
    nothing folds."""
    position = {id(params[p].op): p for p in constant_params}
    lifted = {id(t.op): (t, a) for t, a in constants}
    source_bytes = {id(params[p].op): _nbytes(params[p]) for p in constant_params}
    source_bytes.update((id(t.op), _nbytes(t)) for t, _ in constants)
    if not source_bytes:
        return None
    order = _post_order(s.outputs)
    weights = _weight_only(order, set(source_bytes))
    chosen = [
        st
        for st in _folds(s, order, weights)
        if _nbytes(st.op.output(0)) <= MAX_GROWTH * sum(source_bytes[w] for w in weights[id(st.op)])
    ]
    folded_ids = {id(st) for st in chosen}
    if not chosen or _attached_to_removed(s, folded_ids):
        return None
    # the values as the stages compute them now (before a folded producer becomes an input)
    tensors = [stage.op.output(0) for stage in chosen]
    items: list[FoldedStage] = []
    for stage, tensor in zip(chosen, tensors):
        reads = weights[id(tensor.op)]
        at = sorted(position[w] for w in reads if w in position)
        items.append(
            FoldedStage(
                tensor=tensor,
                input=s.make_input(stage, f"{stage.name}_folded"),
                params=tuple((p, params[p]) for p in at),
                constants=tuple(lifted[w] for w in reads if w in lifted),
            )
        )
    live = {id(op) for op in _post_order(s.outputs)}
    positions = tuple(
        k for k, t in enumerate(params) if id(t.op) not in position or id(t.op) in live
    )
    still_lifted = tuple((t, a) for t, a in constants if id(t.op) in live)
    new_lifted = tuple((item.input, item.evaluate({})) for item in items if not item.params)
    return Folding(
        positions, tuple(item for item in items if item.params), still_lifted + new_lifted
    )


__all__ = ["MAX_GROWTH", "FoldedStage", "Folding", "fold_constant_stages"]
