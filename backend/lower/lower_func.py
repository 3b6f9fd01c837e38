"""Lower one fused Relay function (`Primitive=1`) to a scheduled loop-IR kernel.

    kernel = lower_primitive(fn, types, "fused_dense_relu", Target.host())
    kernel.func        # PrimFunc(params: fn's params, lifted constants, outputs)
    kernel.constants   # the arrays to pass for the lifted constants

Four steps:

1. `lower_to_te`: the body is walked in post-order (iteratively); a parameter becomes a
   placeholder, an operator call its compute definition (`computes.apply_compute`), a tuple a
   Python tuple of tensors. A scalar constant becomes an immediate (a 0-d compute that is
   inlined); any other constant is lifted to an extra input. Every output tensor is one that
   the kernel writes: an output that is an input, a constant, or another output is copied.
2. `schedule_outputs`: injective stages that are not outputs are inlined into their
   consumers, unless the inlined expression would grow deeper than `MAX_INLINE_DEPTH` (or
   larger than `MAX_INLINE_SIZE` nodes), in which case the deepest producers stay at root.
   The anchor picks the schedule function by the operator whose compute made it
   (`schedules.pick_anchor`: the operator with the highest fusion pattern kind that has a
   rule for it, e.g. conv2d, dense, a pool, softmax or a reduction); every materialized
   stage it leaves untouched at root gets the default loop nest of its kind
   (`schedules.generic.schedule_secondary`).
3. With `constant_params` (the weights: parameters every call passes a constant), the
   stages that depend only on weights (a packed weight) are folded: computed at build time
   and read by the kernel as inputs (`fold_constants`; `LoweredKernel.inputs`, `.folded`).
4. `te.lower` builds the PrimFunc (inputs the outputs do not read still get a param), and
   `parallel_plan.plan_function` decides each parallel loop's threads and tasks.

Errors: `MissingComputeError` (an operator has no compute definition) and `LoweringError`
(dynamic shapes, non-tensor values, calls of functions) tell the executor to run the
function another way; neither is a user error.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
from attrs import frozen

from ...lang.expr import Call, Constant, Expr, Function, Let, Tuple, TupleGetItem, Var
from ...lang.op import Op
from ...lang.traversal import post_order
from ...lang.tuples import tuple_leaves
from ...lang.types import FuncType, ShapeVar, TensorType, TupleType, Type
from ...typecheck import infer_expr
from ...typecheck.result import ModuleTypes
from ..target import Target
from ..te.tensor import ComputeOp, ExternOp, Operation, PlaceholderOp, Tensor, compute, placeholder
from ..tir.buffer import decl_buffer
from ..tir.expr import Reduce, const
from ..tir.stmt import PrimFunc
from ..tir.visitor import children as tir_children
from .computes import apply_compute, has_compute, lowering_for
from .fold_constants import FoldedStage, fold_constant_stages
from .parallel_plan import plan_function
from .schedules import is_injective_tag, stage_order
from .symbolic import dim_expr

MAX_INLINE_DEPTH = 150
"""Deepest expression (nodes on the longest path) that inlining may build."""

MAX_INLINE_SIZE = 4000
"""Largest expression tree (nodes, shared subtrees counted once per use) inlining may build."""


class LoweringError(Exception):
    """A Primitive function this lowering cannot compile (the executor falls back to the
    interpreter for it): dynamic shapes, non-tensor values, calls of functions."""


class MissingComputeError(LoweringError):
    """An operator of the function has no compute definition; `op` names it."""

    def __init__(self, op: Op) -> None:
        super().__init__(f"operator `{op.name}` has no compute definition")
        self.op = op


@frozen(eq=False)
class TEGraph:
    """A Primitive function as tensor expressions.

    `params`: one placeholder per tensor parameter (tuple-typed parameters flattened depth
    first); `constants`: the lifted constants as (placeholder, array) pairs; `outputs`: one
    tensor per tensor of the result (a tuple result flattened depth first), each written by
    a stage of its own (never a placeholder, never the same tensor twice)."""

    params: tuple[Tensor, ...]
    constants: tuple[tuple[Tensor, np.ndarray], ...]
    outputs: tuple[Tensor, ...]
    param_types: tuple[TensorType, ...]
    output_types: tuple[TensorType, ...]

    @property
    def args(self) -> list[Tensor]:
        """The kernel's parameters in order: inputs, lifted constants, outputs."""
        return [*self.params, *(t for t, _ in self.constants), *self.outputs]


@frozen(eq=False)
class LoweredKernel:
    """A scheduled kernel for one Primitive function.

    `func` takes, in order, a buffer per (flattened) parameter of the function (`inputs`
    says which: all of them unless weight-only stages were folded), one per folded stage
    (`folded`: compute each from the weights a call passes), one per lifted constant (pass
    `constants` for them) and one per output tensor. `anchor_tag` is the tag of the anchor
    stage (whose operator chose the schedule); `trace` is the schedule's recorded
    primitives; `te` the tensor expressions it was built from."""

    name: str
    func: PrimFunc
    constants: tuple[np.ndarray, ...]
    param_types: tuple[TensorType, ...]
    output_types: tuple[TensorType, ...]
    anchor_tag: str
    trace: Any
    te: TEGraph
    param_positions: tuple[int, ...] | None = None
    folded: tuple[FoldedStage, ...] = ()

    @property
    def inputs(self) -> tuple[int, ...]:
        """The (flattened) parameters of the function the kernel takes, in order: all of
        them, unless folding dropped weights it no longer reads."""
        if self.param_positions is None:
            return tuple(range(len(self.param_types)))
        return self.param_positions


# ------------------------------------------------------------------------------ types


def _function_types(func: Function, types: ModuleTypes | FuncType | Sequence[Any] | None) -> Any:
    """A type table covering every node of `func`."""
    if isinstance(types, ModuleTypes) and func.body in types:
        return types
    if isinstance(types, FuncType):
        arg_types: Sequence[Type] | None = types.arg_types
    elif isinstance(types, Sequence) and len(types) == 2 and not isinstance(types, str):
        arg_types = list(types[0])
    else:
        arg_types = None
    if arg_types is None:
        if any(p.type_annotation is None for p in func.params):
            raise LoweringError("the parameters of the function have no types")
        return infer_expr(func)
    if len(arg_types) != len(func.params):
        raise LoweringError(
            f"{len(arg_types)} parameter types given for {len(func.params)} parameters"
        )
    # Type the function as applied to variables of the given types.
    args = [Var(f"a{k}", t) for k, t in enumerate(arg_types)]
    return infer_expr(Call(func, args))


def _static_tensor_type(ty: Type, what: str, symbolic: bool = False) -> TensorType:
    """`ty` as a tensor type with known dimensions (`symbolic`: integers or `ShapeVar`s)."""
    if not isinstance(ty, TensorType):
        raise LoweringError(f"{what} has type {ty}, not a tensor type")
    if not ty.is_static() and (
        not symbolic or any(not isinstance(d, int | ShapeVar) for d in ty.shape)
    ):
        raise LoweringError(f"{what} has a dynamic shape {ty.shape}")
    return ty


def _flatten_type(ty: Type, what: str, symbolic: bool = False) -> list[TensorType]:
    out: list[TensorType] = []
    stack: list[Type] = [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, TupleType):
            stack.extend(reversed(t.fields))
        else:
            out.append(_static_tensor_type(t, what, symbolic))
    return out


# --------------------------------------------------------------------------- relay → TE

TensorTree = Any  # a Tensor, or a tuple of TensorTrees


def _placeholder_tree(
    ty: Type, name: str, made: list[Tensor], types: list[TensorType], symbolic: bool = False
) -> Any:
    """Placeholders for a (possibly tuple-typed) parameter, appended to `made` in order."""
    if isinstance(ty, TupleType):
        return tuple(
            _placeholder_tree(f, f"{name}_{k}", made, types, symbolic)
            for k, f in enumerate(ty.fields)
        )
    tt = _static_tensor_type(ty, f"parameter %{name}", symbolic)
    t = placeholder(tuple(dim_expr(d) for d in tt.shape), tt.dtype, name)
    made.append(t)
    types.append(tt)
    return t


def _scalar_immediate(c: Constant) -> Tensor:
    value = c.data.item()
    return compute((), lambda: const(value, c.dtype), name="scalar", tag="elemwise")  # type: ignore[no-any-return]


def _copy(t: Tensor) -> Tensor:
    return compute(t.shape, lambda *i: t[i], name=f"{t.op.name}_copy", tag="elemwise")  # type: ignore[no-any-return]


def lower_to_te(
    func: Function,
    types: ModuleTypes | FuncType | Sequence[Any] | None = None,
    symbolic: bool = False,
    target: Target | None = None,
) -> TEGraph:
    """The tensor expressions of a Primitive function (see the module docstring).
    `types` is the module's type table, the function's type, `(param_types, result_type)`,
    or None (the parameters' annotations are used). With `symbolic`, dimensions may be
    `ShapeVar`s (a dynamic-shape kernel: `backend.lower.dynamic`). `target` (None: the
    host) is the one the kernel is for: definitions may pad their own stages to its vectors
    (`computes.lowering_for`)."""
    with lowering_for(target):
        return _lower_to_te(func, types, symbolic)


def _lower_to_te(
    func: Function, types: ModuleTypes | FuncType | Sequence[Any] | None, symbolic: bool
) -> TEGraph:
    table = _function_types(func, types)
    params: list[Tensor] = []
    param_types: list[TensorType] = []
    values: dict[int, TensorTree] = {}
    for k, p in enumerate(func.params):
        name = p.name_hint or f"p{k}"
        values[id(p)] = _placeholder_tree(table.type_of(p), name, params, param_types, symbolic)
    let_values: dict[int, Expr] = {}
    constants: list[tuple[Tensor, np.ndarray]] = []

    def value_of(e: Expr) -> TensorTree:
        while isinstance(e, Var) and id(e) in let_values:
            e = let_values[id(e)]
        if id(e) not in values:
            raise LoweringError(f"free variable %{getattr(e, 'name_hint', '?')} in the function")
        return values[id(e)]

    order = list(post_order(func.body))
    for node in order:
        if isinstance(node, Let):
            let_values[id(node.var)] = node.value
    for node in order:
        if isinstance(node, Var):
            continue
        if isinstance(node, Let):
            values[id(node)] = value_of(node.body)
        elif isinstance(node, Constant):
            if node.is_scalar:
                values[id(node)] = _scalar_immediate(node)
            else:
                t = placeholder(node.data.shape, node.dtype, f"const{len(constants)}")
                constants.append((t, np.ascontiguousarray(node.data)))
                values[id(node)] = t
        elif isinstance(node, Tuple):
            values[id(node)] = tuple(value_of(f) for f in node.fields)
        elif isinstance(node, TupleGetItem):
            tup = value_of(node.tuple_value)
            if not isinstance(tup, tuple):
                raise LoweringError("projection from a value that is not a tuple")
            values[id(node)] = tup[node.index]
        elif isinstance(node, Call):
            values[id(node)] = _lower_call(node, value_of, table, symbolic)
        elif isinstance(node, Op):
            continue
        else:
            raise LoweringError(f"cannot lower a {type(node).__name__} inside a kernel")
    result = value_of(func.body)
    output_types = _flatten_type(table.type_of(func.body), "the result", symbolic)
    outputs = _distinct_outputs(tuple_leaves(result))
    if len(outputs) != len(output_types):
        raise LoweringError(
            f"the result has {len(output_types)} tensors but lowering made {len(outputs)}"
        )
    return TEGraph(
        params=tuple(params),
        constants=tuple(constants),
        outputs=tuple(outputs),
        param_types=tuple(param_types),
        output_types=tuple(output_types),
    )


def _lower_call(node: Call, value_of: Any, table: Any, symbolic: bool = False) -> TensorTree:
    op = node.op
    if not isinstance(op, Op):
        raise LoweringError(f"a kernel cannot call a {type(op).__name__}")
    if not has_compute(op):
        raise MissingComputeError(op)
    inputs: list[Tensor] = []
    for arg in node.args:
        inputs.extend(tuple_leaves(value_of(arg)))
    out_type = table.type_of(node)
    flat_out = _flatten_type(out_type, f"the result of {op.name}", symbolic)
    try:
        results = apply_compute(op, node.attrs, inputs, out_type)
    except (TypeError, ValueError) as exc:
        if not symbolic:
            raise
        # a compute definition that needs integer extents where this kernel has run-time ones
        raise LoweringError(f"{op.name} cannot compute with symbolic dimensions: {exc}") from exc
    if len(results) != len(flat_out):
        raise LoweringError(
            f"the compute of {op.name} returned {len(results)} tensors for {len(flat_out)} outputs"
        )
    for t, tt in zip(results, flat_out):
        if symbolic and not tt.is_static():
            _check_symbolic_shape(op, t, tt)
            continue
        shape = tuple(_const_int(d) for d in t.shape)
        if shape != tuple(tt.shape) or t.dtype != tt.dtype:
            raise LoweringError(
                f"the compute of {op.name} made {t.dtype}{list(shape)}, "
                f"the type is {tt.dtype}{list(tt.shape)}"
            )
    if isinstance(out_type, TupleType):
        return _rebuild_tuple(out_type, iter(results))
    return results[0]


def _check_symbolic_shape(op: Op, t: Tensor, tt: TensorType) -> None:
    """A `LoweringError` unless the compute of `op` made `t` with exactly the dimensions of
    `tt` (integers, or the very variables of its `ShapeVar`s)."""
    expected = [dim_expr(d) for d in tt.shape]
    same = len(expected) == len(t.shape) and t.dtype == tt.dtype
    for want, got in zip(expected, t.shape):
        if isinstance(want, int):
            same = same and getattr(got, "value", None) == want
        else:
            same = same and got is want
    if not same:
        raise LoweringError(
            f"the compute of {op.name} made {t.dtype}{list(t.shape)}, the type is {tt}"
        )


def _rebuild_tuple(ty: Type, items: Any) -> TensorTree:
    if isinstance(ty, TupleType):
        return tuple(_rebuild_tuple(f, items) for f in ty.fields)
    return next(items)


def _const_int(d: Any) -> int:
    value = getattr(d, "value", d)
    if not isinstance(value, int):
        raise LoweringError(f"a compute definition made a tensor with a symbolic dimension {d}")
    return value


def _distinct_outputs(outs: list[Tensor]) -> list[Tensor]:
    """Each output written by a compute stage of its own: copy placeholders and repeats."""
    seen: set[int] = set()
    result = []
    for t in outs:
        if isinstance(t.op, PlaceholderOp) or id(t) in seen:
            t = _copy(t)
        seen.add(id(t))
        result.append(t)
    return result


# -------------------------------------------------------------------------- the stage graph


def _consumers(order: list[Operation]) -> dict[int, list[Operation]]:
    users: dict[int, list[Operation]] = {id(op): [] for op in order}
    for op in order:
        for t in op.input_tensors:
            users[id(t.op)].append(op)
    return users


def is_inlinable(op: Operation) -> bool:
    """Whether `op` can be inlined into its consumers: a single-output, non-reducing compute
    whose tag marks it injective (elemwise, broadcast, injective)."""
    return (
        isinstance(op, ComputeOp)
        and op.num_outputs == 1
        and not isinstance(op.body[0], Reduce)
        and is_injective_tag(op.tag)
    )


def _cost(op: ComputeOp, inlined_cost: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """(depth, tree size) of `op`'s bodies once the producers in `inlined_cost` are inlined."""
    from ..te.tensor import ProducerLoad

    memo: dict[int, tuple[int, int]] = {}
    depth = size = 0
    for body in op.body:
        stack: list[tuple[Any, bool]] = [(body, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in memo:
                continue
            kids = tir_children(node)
            if not expanded:
                stack.append((node, True))
                stack.extend((k, False) for k in kids if id(k) not in memo)
                continue
            d, s = 0, 0
            for k in kids:
                kd, ks = memo[id(k)]
                d, s = max(d, kd), s + ks
            if isinstance(node, ProducerLoad) and id(node.producer.op) in inlined_cost:
                pd, ps = inlined_cost[id(node.producer.op)]
                d, s = max(d, pd), s + ps
            memo[id(node)] = (d + 1, s + 1)
        bd, bs = memo[id(body)]
        depth, size = max(depth, bd), size + bs
    return depth, size


def choose_inlined(outputs: Sequence[Tensor]) -> list[Operation]:
    """The stages to inline: inlinable, not an output, not read by an extern stage, and not
    making any expression deeper than `MAX_INLINE_DEPTH` / larger than `MAX_INLINE_SIZE`."""
    order = stage_order(outputs)
    users = _consumers(order)
    output_ops = {id(t.op) for t in outputs}
    candidates = {
        id(op)
        for op in order
        if id(op) not in output_ops
        and is_inlinable(op)
        and not any(isinstance(u, ExternOp) for u in users[id(op)])
    }
    inlined: dict[int, tuple[int, int]] = {}
    for op in order:
        if not isinstance(op, ComputeOp):
            continue
        while True:
            depth, size = _cost(op, inlined)
            if depth <= MAX_INLINE_DEPTH and size <= MAX_INLINE_SIZE:
                break
            # Keep the costliest inlined producer of `op` at root instead.
            producers = [t.op for t in op.input_tensors if id(t.op) in inlined]
            if not producers:
                break
            worst = max(producers, key=lambda p: inlined[id(p)])
            del inlined[id(worst)]
            candidates.discard(id(worst))
        if id(op) in candidates:
            inlined[id(op)] = (depth, size)
    return [op for op in order if id(op) in inlined]


# ------------------------------------------------------------------------------ scheduling


def schedule_outputs(
    outputs: Sequence[Tensor],
    target: Target | None = None,
    config: Mapping[str, Any] | None = None,
) -> tuple[Any, Tensor]:
    """The schedule of a kernel computing `outputs` (module docstring, step 2), and the
    anchor tensor that chose it. `config` (knob name -> value, `backend.tune`) is passed
    to the anchor's schedule function when given; None (or empty) keeps the defaults."""
    from ..te.schedule import create_schedule
    from .schedules import pick_anchor
    from .schedules.generic import schedule_secondary

    target = target or Target.host()
    s = create_schedule([t.op for t in outputs])
    inlined = choose_inlined(outputs)
    for op in inlined:
        s[op].compute_inline()
    inlined_ids = {id(op) for op in inlined}
    order = stage_order(outputs)
    anchor, schedule = pick_anchor(order, outputs, inlined_ids)
    if config:
        schedule(s, list(outputs), anchor, target, config=config)  # type: ignore[call-arg]
    else:
        schedule(s, list(outputs), anchor, target)
    schedule_secondary(s, target)
    return s, anchor


def _current(s: Any, t: Tensor) -> Tensor:
    """The tensor standing for `t` in `s` after cache stages rewrote the dataflow (`t`
    itself when the schedule does not know it: an unused input)."""
    from ..te.errors import ScheduleError

    try:
        return s.tensor(t)  # type: ignore[no-any-return]
    except ScheduleError:
        return t


def _with_unused_params(s: Any, args: list[Tensor], name: str, te_lower: Any) -> PrimFunc:
    """`te.lower(s, args)`, with a buffer param for each input the outputs do not read (the
    schedule does not know them; the calling convention still passes them)."""
    reachable = {id(op) for op in stage_order([o.output(0) for o in s.outputs])}
    args = [_current(s, t) for t in args]
    used = [t for t in args if id(t.op) in reachable]
    prim = te_lower(s, used, name)
    if len(used) == len(args):
        return prim  # type: ignore[no-any-return]
    given = iter(prim.params)
    params = [
        next(given) if id(t.op) in reachable else decl_buffer(t.shape, t.dtype, t.name)
        for t in args
    ]
    return PrimFunc(prim.name, tuple(params), prim.body, prim.attrs)


def lower_primitive(
    func: Function,
    types: ModuleTypes | FuncType | Sequence[Any] | None,
    name: str,
    target: Target | None = None,
    constant_params: Collection[int] | None = None,
    symbolic: bool = False,
    config: Mapping[str, Any] | None = None,
) -> LoweredKernel:
    """Lower a Primitive function to a scheduled kernel called `name` (module docstring).
    `config` chooses the anchor schedule's knobs (`schedule_outputs`; `backend.tune`).
    With `constant_params` (positions of the flattened parameters every call passes a
    constant to; may be empty), the stages that depend only on those and on the lifted
    constants are computed at build time (`fold_constants`). With `symbolic`, dimensions
    may be `ShapeVar`s, which become free loop-IR variables (`lower.dynamic` binds them).
    `MissingComputeError` if an operator has no compute definition; `LoweringError` for
    anything else this lowering cannot compile."""
    from ..te.lower import lower as te_lower

    graph = lower_to_te(func, types, symbolic, target)
    s, anchor = schedule_outputs(graph.outputs, target, config)
    folding = None
    if constant_params is not None:
        folding = fold_constant_stages(s, graph.params, graph.constants, constant_params)
    if folding is None:
        args = graph.args
        constants = graph.constants
    else:
        constants = folding.constants
        args = [
            *(graph.params[k] for k in folding.param_positions),
            *(f.input for f in folding.folded),
            *(t for t, _ in constants),
            *graph.outputs,
        ]
    prim = _with_unused_params(s, args, name, te_lower)
    prim = plan_function(prim, (target or Target.host()).num_threads)
    return LoweredKernel(
        name=name,
        func=prim,
        constants=tuple(a for _, a in constants),
        param_types=graph.param_types,
        output_types=graph.output_types,
        anchor_tag=getattr(anchor.op, "tag", ""),
        trace=s.trace,
        te=graph,
        param_positions=folding.param_positions if folding is not None else None,
        folded=folding.folded if folding is not None else (),
    )
