"""What a lowered kernel does, for profiles: its fused operators, TVM's name for it, and the
floating-point operations and compulsory bytes its compute definitions give.

    cost = describe_kernel(fn, lowered)   # KernelCost(name, ops, kind, flops, bytes)

Names: `fused_` and the operator names of the function's calls in evaluation order, `.`
replaced by `_` (`fused_nn_conv2d_add_nn_relu`); a function without calls is `fused_copy`.
A name longer than `MAX_NAME_LENGTH` keeps the whole operator names that fit and ends in
`_` and 8 hex digits of a CRC-32 of the full name, so it stays readable, bounded, and
distinct for distinct chains.

FLOPs count the compute definitions, not the schedule: every compute stage the outputs
depend on counts once (inlining is a schedule decision), as output elements × operations per
element. A body that is a `Reduce` costs, per element, the product of its reduction extents
× (the operations of its sources + those of the combiner): a sum is 1 add per reduced point,
a multiply-accumulate 2. Per element, each expression node counts once, however often the
body uses it (`d * d` with `d = x - m` is 2 operations).

What counts (1 per lane):
* float arithmetic: add, sub, mul, div, min, max, and float math intrinsics (exp, log, tanh,
  sqrt, erf, sigmoid, pow, fabs, floor, ...; not the NaN/inf tests);
* float comparisons: the definitions write `max(x, 0)` as `x > 0 ? x : 0` (relu, clip), so
  the compare is the operation (the select itself is free);
* integer arithmetic and bit intrinsics computed from tensor data (a load somewhere below
  it, or a reduction's partial values): int8 kernels accumulating in int32 count 2 per
  multiply-accumulate, as "ops".
What never counts: index arithmetic (load indices are not walked; integer arithmetic not
computed from data is index or bounds arithmetic), integer comparisons, logic, selects and
`if_then_else` themselves (the operations in both branches count), casts, loads, constants,
reduction conditions, extern stages.

Bytes are the compulsory traffic: the size of every argument of the kernel (inputs, lifted
constants, outputs), each read or written at least once. A function the lowering cannot
compile (`interpreted_cost`: the interpreter runs it) has no FLOPs and the bytes of its
static parameter and result types.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Sequence

from ...lang.expr import Call, Function
from ...lang.op import Op
from ...lang.traversal import post_order
from ...lang.types import TensorType, TupleType, Type
from ..kernel_cost import KernelCost
from ..te.tensor import ComputeOp, ProducerLoad, Tensor
from ..tir import expr as tir
from ..tir.dtypes import bits_of, element_of, is_bool, is_float, lanes_of
from ..tir.visitor import children as tir_children
from ..tir.visitor import sub_expressions
from .computes import made_by
from .lower_func import LoweredKernel, TEGraph, choose_inlined
from .parallel_plan import kernel_plans
from .schedules import pick_anchor, stage_order

MAX_NAME_LENGTH = 80
"""The longest kernel name `fused_name` makes (TVM cuts its fused names at 80 as well)."""

_ARITHMETIC = (
    tir.Add,
    tir.Sub,
    tir.Mul,
    tir.Div,
    tir.Mod,
    tir.FloorDiv,
    tir.FloorMod,
    tir.Min,
    tir.Max,
)
_NOT_ARITHMETIC_CALLS = frozenset(
    {"if_then_else", "likely", "reinterpret", "isnan", "isinf", "isfinite"}
)
_LEAVES = (tir.IntImm, tir.FloatImm, tir.StringImm)


# ------------------------------------------------------------------------------------ names


def fused_ops(fn: Function) -> tuple[str, ...]:
    """The operator names of the calls in `fn`'s body (a Primitive function), in evaluation
    (post) order: `("nn.conv2d", "add", "nn.relu")`. Calls of anything but an operator are
    skipped."""
    return tuple(
        node.op.name
        for node in post_order(fn.body)
        if isinstance(node, Call) and isinstance(node.op, Op)
    )


def fused_name(ops: Sequence[str]) -> str:
    """TVM's name of a function fusing `ops`: `fused_nn_conv2d_add_nn_relu` (`fused_copy`
    without operators), at most `MAX_NAME_LENGTH` characters (see the module docstring)."""
    parts = [op.replace(".", "_") for op in ops] or ["copy"]
    full = "_".join(["fused", *parts])
    if len(full) <= MAX_NAME_LENGTH:
        return full
    suffix = f"_{zlib.crc32(full.encode()):08x}"
    name = "fused"
    for part in parts:
        if len(name) + 1 + len(part) + len(suffix) > MAX_NAME_LENGTH:
            break
        name = f"{name}_{part}"
    return (name + suffix)[:MAX_NAME_LENGTH]


# ------------------------------------------------------------------------------------ flops


def _int_value(e: tir.PrimExpr) -> int:
    value = getattr(e, "value", None)
    if not isinstance(value, int):
        raise ValueError(f"a kernel with a symbolic extent {e} has no static cost")
    return value


def _elements(t: Tensor) -> int:
    return math.prod(_int_value(d) for d in t.shape)


def _node_ops(node: tir.PrimExpr, from_data: bool) -> int:
    """The operations of one expression node (without its children)."""
    if isinstance(node, _ARITHMETIC):
        dtype = node.dtype
    elif isinstance(node, tir.CmpOp):
        dtype = node.a.dtype
        if not is_float(dtype):
            return 0
    elif isinstance(node, tir.Call) and node.name not in _NOT_ARITHMETIC_CALLS:
        dtype = node.args[0].dtype if node.args else node.dtype
    else:
        return 0
    if is_float(dtype) or (from_data and not is_bool(dtype)):
        return lanes_of(dtype)
    return 0


def _let_data_vars(roots: Iterable[tir.PrimExpr], data_vars: set[int]) -> set[int]:
    """`data_vars` and the variables bound by `Let`s (under `roots`) to values computed from
    data (rare in compute definitions)."""
    found = set(data_vars)
    lets = [n for root in roots for n in sub_expressions(root) if isinstance(n, tir.Let)]
    for let in lets:  # pre-order: an outer binding before the bindings inside it
        if _reads_data(let.value, found):
            found.add(id(let.var))
    return found


def _reads_data(root: tir.PrimExpr, data_vars: set[int]) -> bool:
    for node in sub_expressions(root):
        if isinstance(node, (ProducerLoad, tir.BufferLoad)):
            return True
        if isinstance(node, tir.Var) and id(node) in data_vars:
            return True
    return False


def expr_ops(roots: Iterable[tir.PrimExpr], data_vars: Iterable[tir.Var] = ()) -> int:
    """The operations to evaluate `roots` once (each node once, however often it is used):
    see the module docstring for what counts. `data_vars` are variables holding data (a
    reducer's partial values), so integer arithmetic on them counts."""
    roots = list(roots)
    data = _let_data_vars(roots, {id(v) for v in data_vars})
    from_data: dict[int, bool] = {}
    total = 0
    stack: list[tuple[tir.PrimExpr, bool]] = [(r, False) for r in reversed(roots)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if key in from_data:
            continue
        if isinstance(node, (ProducerLoad, tir.BufferLoad)):
            from_data[key] = True  # indices are index arithmetic: never walked
            continue
        if isinstance(node, tir.Var):
            from_data[key] = key in data
            continue
        if isinstance(node, _LEAVES):
            from_data[key] = False
            continue
        if isinstance(node, tir.Reduce):  # only at the top of a body, but be total
            from_data[key] = True
            total += _reduce_ops(node)
            continue
        kids = tir_children(node)
        if not expanded:
            stack.append((node, True))
            stack.extend((k, False) for k in reversed(kids) if id(k) not in from_data)
            continue
        flag = any(from_data[id(k)] for k in kids)
        from_data[key] = flag
        total += _node_ops(node, flag)
    return total


def _reduce_ops(r: tir.Reduce) -> int:
    """Per output element: the reduced points × (sources + combiner)."""
    points = math.prod(_int_value(iv.dom.extent) for iv in r.axis)
    combiner = r.combiner
    per_point = expr_ops(r.source) + expr_ops(
        combiner.result, data_vars=(*combiner.lhs, *combiner.rhs)
    )
    return points * per_point


def stage_flops(op: ComputeOp) -> int:
    """The operations of one compute stage: output elements × operations per element (the
    bodies of a multi-output stage share their nodes; a tuple reduction counts once)."""
    per_element = 0
    plain: list[tir.PrimExpr] = []
    combiners: set[int] = set()
    for body in op.body:
        if isinstance(body, tir.Reduce):
            if id(body.combiner) not in combiners:
                combiners.add(id(body.combiner))
                per_element += _reduce_ops(body)
        else:
            plain.append(body)
    per_element += expr_ops(plain)
    return _elements(op.output(0)) * per_element


def kernel_flops(graph: TEGraph) -> int:
    """The operations of a kernel's compute definitions: every compute stage its outputs
    depend on, each once (see the module docstring)."""
    return sum(stage_flops(op) for op in stage_order(graph.outputs) if isinstance(op, ComputeOp))


# ------------------------------------------------------------------------------------ bytes


def tensor_bytes(t: Tensor) -> int:
    """The size of a tensor in memory (bool takes a byte per element)."""
    bits = bits_of(element_of(t.dtype)) * lanes_of(t.dtype)
    return _elements(t) * ((bits + 7) // 8)


def kernel_bytes(graph: TEGraph) -> int:
    """The compulsory traffic of a kernel: the size of every argument (inputs, lifted
    constants, outputs)."""
    return sum(tensor_bytes(t) for t in graph.args)


# ----------------------------------------------------------------------------------- kernel


def anchor_operator(graph: TEGraph) -> str | None:
    """The name of the operator that chose the kernel's schedule (as `lower_primitive` picks
    it: `schedules.pick_anchor` after the same inlining), or None when none did."""
    from .schedules.generic import schedule_generic

    inlined = {id(op) for op in choose_inlined(graph.outputs)}
    anchor, schedule = pick_anchor(stage_order(graph.outputs), graph.outputs, inlined)
    if schedule is schedule_generic:
        return None
    op = made_by(anchor.op)
    return op.name if op is not None else None


def describe_kernel(fn: Function, lowered: LoweredKernel) -> KernelCost:
    """The `KernelCost` of a Primitive function and its lowered kernel: `fused_name` (not
    unique yet), the fused operators, the anchor operator as kind (else the first operator,
    else `copy`), the FLOPs and bytes of its compute definitions, and its parallel plan."""
    ops = fused_ops(fn)
    kind = anchor_operator(lowered.te) or (ops[0] if ops else "copy")
    return KernelCost(
        name=fused_name(ops),
        ops=ops,
        kind=kind,
        flops=kernel_flops(lowered.te),
        bytes=kernel_bytes(lowered.te),
        parallel=kernel_plans(lowered.func),
    )


def _type_bytes(ty: Type | None) -> int:
    """The size of the static tensors of a (possibly tuple) type; 0 for what is unknown."""
    total = 0
    stack: list[Type | None] = [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, TupleType):
            stack.extend(t.fields)
        elif isinstance(t, TensorType) and t.is_static():
            elements = 1
            for d in t.shape:
                elements *= int(d)  # type: ignore[arg-type]
            total += elements * ((bits_of(element_of(t.dtype)) + 7) // 8)
    return total


def interpreted_cost(fn: Function) -> KernelCost:
    """The `KernelCost` of a Primitive function the lowering could not compile (the
    interpreter runs it): its name, operators and kind (the first operator, else `copy`) as
    for a compiled kernel; no FLOPs (no compute definition to count them from); the bytes of
    its annotated parameter and result types, where they are static."""
    ops = fused_ops(fn)
    return KernelCost(
        name=fused_name(ops),
        ops=ops,
        kind=ops[0] if ops else "copy",
        flops=0,
        bytes=sum(_type_bytes(p.type_annotation) for p in fn.params) + _type_bytes(fn.ret_type),
    )


__all__ = [
    "MAX_NAME_LENGTH",
    "anchor_operator",
    "describe_kernel",
    "expr_ops",
    "fused_name",
    "fused_ops",
    "interpreted_cost",
    "kernel_bytes",
    "kernel_flops",
    "stage_flops",
    "tensor_bytes",
]
