"""Graph planning: the execution plan of a fused, first-order, statically shaped `@main`.

After fusion, `@main` is a dataflow graph whose operator work is all in calls of
`Primitive` functions. `plan_graph` walks it once (iteratively) and names every tensor
value a *slot*: the model's inputs, its constants, and each kernel output. Each kernel
call becomes a `KernelStep` reading and writing slots; tuples and projections are only
bookkeeping. Identical primitive functions share one kernel. Anything the native executor
cannot run (control flow, closures, ADTs, references, dynamic shapes) raises
`NotCompilable` with the reason, and the build falls back to the interpreter. The plan's
values (`GraphPlan`, `Slot`, `KernelStep`) live in `backend.runtime.plan`, which runs them.
"""

from __future__ import annotations

import numpy as np

from ...lang.diagnostics import Error
from ...lang.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from ...lang.structural import structural_equal, structural_hash
from ...lang.types import TensorType, TupleType, Type
from ...typecheck.result import ModuleTypes
from ..runtime.plan import GraphPlan, KernelStep, OutputTree, Slot, flatten_tree


class NotCompilable(Error):
    """A program the native executor cannot run; the message says why."""


def _static_tensor(ty: Type, what: str) -> TensorType:
    if not isinstance(ty, TensorType):
        raise NotCompilable(f"{what} has type {ty}, not a tensor")
    if not all(isinstance(d, int) for d in ty.shape):
        raise NotCompilable(f"{what} has a dynamic shape {ty}")
    return ty


def _is_primitive(e: Expr) -> bool:
    return isinstance(e, Function) and e.attrs is not None and bool(e.attrs.get("Primitive"))


def _result_slots(ty: Type, where: str) -> list[TensorType]:
    """The tensors of a (nested tuple) result type, depth first."""
    out: list[TensorType] = []
    stack: list[Type] = [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, TupleType):
            stack.extend(reversed(t.fields))
        else:
            out.append(_static_tensor(t, where))
    return out


def _rebuild_tree(ty: Type, flat: list[int]) -> OutputTree:
    """`flat` slot ids shaped like the (nested tuple) type `ty`."""
    it = iter(flat)

    def build(t: Type) -> OutputTree:  # bounded by the type's nesting, not the program
        if isinstance(t, TupleType):
            return tuple(build(f) for f in t.fields)
        return next(it)

    return build(ty)


def _dataflow_post_order(root: Expr) -> list[Expr]:
    """The nodes of `root` in post-order, each once, without entering function bodies."""
    from ...lang.traversal import children, post_order_by

    return post_order_by(root, lambda node: () if isinstance(node, Function) else children(node))


def plan_graph(main: Function, types: ModuleTypes) -> GraphPlan:
    """The plan of a fused `@main`; `NotCompilable` when it uses anything but tensors,
    tuples, projections, constants and calls of `Primitive` functions."""
    slots: list[Slot] = []
    value_of: dict[int, OutputTree] = {}
    kernels: list[Function] = []
    kernel_index: dict[int, list[int]] = {}
    constants: list[np.ndarray] = []
    steps: list[KernelStep] = []
    input_slots: list[int] = []
    for k, param in enumerate(main.params):
        ty = _static_tensor(types.type_of(param), f"parameter %{param.name_hint}")
        value_of[id(param)] = len(slots)
        input_slots.append(len(slots))
        slots.append(Slot(tuple(int(d) for d in ty.shape), ty.dtype, "input", k))  # type: ignore[arg-type]

    def kernel_for(fn: Function) -> int:
        h = structural_hash(fn)
        for k in kernel_index.get(h, []):
            if structural_equal(kernels[k], fn):
                return k
        kernel_index.setdefault(h, []).append(len(kernels))
        kernels.append(fn)
        return len(kernels) - 1

    for node in _dataflow_post_order(main.body):
        if id(node) in value_of or _is_primitive(node):
            continue
        if isinstance(node, Var):
            raise NotCompilable(
                f"%{node.name_hint} is bound by a let, closure or match that remains after "
                "optimization (control flow, closures and ADTs run in the interpreter)"
            )
        if isinstance(node, Function):
            raise NotCompilable(
                "@main builds a closure (control flow, closures and ADTs run in the interpreter)"
            )
        if isinstance(node, Constant):
            ty = _static_tensor(types.type_of(node), "a constant")
            value_of[id(node)] = len(slots)
            slots.append(Slot(tuple(node.data.shape), ty.dtype, "constant", len(constants)))
            constants.append(node.data)
        elif isinstance(node, Tuple):
            value_of[id(node)] = tuple(value_of[id(f)] for f in node.fields)
        elif isinstance(node, TupleGetItem):
            tup = value_of[id(node.tuple_value)]
            if not isinstance(tup, tuple):
                raise NotCompilable("a projection of a non-tuple")
            value_of[id(node)] = tup[node.index]
        elif isinstance(node, Call) and _is_primitive(node.op):
            args: list[int] = []
            for a in node.args:
                args.extend(flatten_tree(value_of[id(a)]))
            result_type = types.type_of(node)
            outs = []
            for t in _result_slots(result_type, "a fused kernel's result"):
                outs.append(len(slots))
                slots.append(Slot(tuple(int(d) for d in t.shape), t.dtype, "kernel"))  # type: ignore[arg-type]
            steps.append(KernelStep(kernel_for(node.op), tuple(args), tuple(outs)))  # type: ignore[arg-type]
            value_of[id(node)] = _rebuild_tree(result_type, outs)
        else:
            raise NotCompilable(
                f"`{type(node).__name__}` in @main is not supported by the native executor"
            )
    return GraphPlan(
        tuple(slots),
        tuple(kernels),
        tuple(constants),
        tuple(steps),
        tuple(p.name_hint for p in main.params),
        tuple(input_slots),
        value_of[id(main.body)],
    )
