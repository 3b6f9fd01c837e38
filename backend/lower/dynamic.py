"""Lowering a fused function whose types have `?` or symbolic dimensions: one kernel for
every size.

    kernel = lower_dynamic(fn, param_types, "k0", target)
    kernel.lowered.func      # PrimFunc(inputs, lifted constants, outputs, dims)
    kernel.signature         # what the caller binds, checks and allocates at run time

1. Each `?` dimension of the parameters' types becomes a `ShapeVar` of its own (symbolic
   dimensions stay). When the operators cannot be typed that way (two `?` batch dimensions
   meet in a broadcast), the `?` dimensions at the same axis are given one `ShapeVar` — an
   assumption the caller checks on every call (`DynamicSignature.inputs`).
2. The function is typed again on those parameter types: the operators' type relations
   compute every intermediate and output shape in terms of the `ShapeVar`s — the shape
   function of the kernel, evaluated once at build time, in the one place each operator's
   shape rule lives. A kernel any of whose types still has a `?` (a relation could not say
   the size: concatenating along a `?` axis) or a `ShapeVar` no input binds is refused.
3. The compute definitions see each `ShapeVar` as an `int64` loop variable
   (`symbolic.dim_expr`), the schedules run as for static kernels (a split of a run-time
   extent gets a tail guard from `te.lower`), and the kernel reads the variables' values
   from an extra last parameter, an int64 array (`PrimFunc.attrs["shape_vars"]`; codegen
   loads them on entry).

The caller (the VM) binds the variables from the input shapes, checks that every other
occurrence agrees and every static dimension matches, allocates the outputs from
`DynamicSignature.outputs` and passes the values. `LoweringError` when the function cannot
be compiled this way; it then runs in the interpreter.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from attrs import frozen

from ...lang.diagnostics import Error
from ...lang.expr import Expr, Function, Var
from ...lang.traversal import post_order, substitute
from ...lang.types import AnyDim, Dim, ShapeVar, TensorType, TupleType, Type, leaf_types
from ...typecheck import infer_expr
from ..target import Target
from ..tir.buffer import decl_buffer
from ..tir.dtypes import INDEX_DTYPE
from ..tir.stmt import PrimFunc
from .lower_func import LoweredKernel, LoweringError, lower_primitive
from .symbolic import shape_variable

DimCode = int
"""A dimension of a `DynamicSignature`: `d >= 0` a static size, `d < 0` the value of
variable `-1 - d`."""

Layout = tuple[tuple[DimCode, ...], str]
"""(dimensions, dtype) of one tensor of a dynamic kernel."""


@frozen
class DynamicSignature:
    """What a caller of a dynamic kernel needs: the layouts of its (flattened) inputs and
    outputs, whose dimensions are static sizes or variables (`DimCode`), and the names of
    the variables (the kernel's last argument is an int64 array of their values, in
    order). Every variable appears in some input; an input binds it at its first
    occurrence and every later occurrence must agree."""

    inputs: tuple[Layout, ...]
    outputs: tuple[Layout, ...]
    variables: tuple[str, ...]


@frozen(eq=False)
class DynamicKernel:
    """A lowered dynamic-shape kernel (`lowered.func` takes the dims array last) and its
    signature."""

    lowered: LoweredKernel
    signature: DynamicSignature


def is_dynamic_type(ty: Type) -> bool:
    """Whether a tensor of `ty` (or of a field of the tuple `ty`) has a dimension that is
    not an integer."""
    stack = [ty]
    while stack:
        t = stack.pop()
        if isinstance(t, TupleType):
            stack.extend(t.fields)
        elif isinstance(t, TensorType) and not t.is_static():
            return True
    return False


def _with_dims(
    ty: Type, shared: bool, made: dict[tuple[int, int], ShapeVar], leaf: list[int]
) -> Type:
    """`ty` with each `?` replaced by a `ShapeVar`: one per (tensor, axis), or with
    `shared` one per axis (`made` keeps them); `leaf` counts the tensors seen so far.
    Recursion is bounded by the type's tuple nesting."""
    if isinstance(ty, TupleType):
        return TupleType(tuple(_with_dims(f, shared, made, leaf) for f in ty.fields))
    if not isinstance(ty, TensorType):
        raise LoweringError(f"a kernel parameter has type {ty}, not a tensor type")
    index = leaf[0]
    leaf[0] += 1
    dims: list[Dim] = []
    for axis, d in enumerate(ty.shape):
        if isinstance(d, AnyDim):
            key = (0 if shared else index, axis)
            if key not in made:
                made[key] = ShapeVar(f"d{key[0]}_{axis}", "int64")
            d = made[key]
        dims.append(d)
    return TensorType(tuple(dims), ty.dtype)


def _leaves(ty: Type) -> list[TensorType]:
    out: list[TensorType] = []
    for t in leaf_types(ty):
        if not isinstance(t, TensorType):
            raise LoweringError(f"a kernel has a value of type {t}, not a tensor")
        out.append(t)
    return out


def _retyped(fn: Function, param_types: Sequence[Type]) -> Function:
    """`fn` with its parameters annotated with `param_types`."""
    fresh = [Var(p.name_hint, t, span=p.span) for p, t in zip(fn.params, param_types)]
    body = substitute(fn.body, dict(zip(fn.params, fresh)))
    return fn.replace(params=tuple(fresh), body=body, ret_type=None)


def _typed_symbolically(fn: Function, param_types: Sequence[Type]) -> Function:
    """`fn` retyped with ShapeVars for its parameters' `?` dimensions such that every type
    inside it is known in terms of them (step 1 and 2 of the module docstring)."""
    reasons = []
    for shared in (False, True):
        made: dict[tuple[int, int], ShapeVar] = {}
        leaf = [0]
        types = [_with_dims(t, shared, made, leaf) for t in param_types]
        retyped = _retyped(fn, types)
        try:
            table = infer_expr(retyped)
        except Error as exc:  # a relation refused the symbolic shapes: try the next way
            reasons.append(str(exc).splitlines()[0])
            continue
        bound: set[object] = {d for t in types for leaf_t in _leaves(t) for d in leaf_t.shape}
        problem = _unknown_dimension(retyped.body, table.table, bound)
        if problem is None:
            return retyped
        reasons.append(problem)
    raise LoweringError("; ".join(reasons))


def _unknown_dimension(body: Expr, table: dict[Expr, Type], bound: set[object]) -> str | None:
    """Why a type inside the kernel has a dimension its inputs do not determine (None when
    every one is an integer or a bound ShapeVar)."""
    for node in post_order(body):
        ty = table.get(node)
        if ty is None or not isinstance(ty, TensorType | TupleType):
            continue
        for t in _leaves(ty):
            for d in t.shape:
                if isinstance(d, AnyDim):
                    return f"a tensor inside the kernel has a `?` dimension ({t})"
                if isinstance(d, ShapeVar) and d not in bound:
                    return f"dimension {d.name_hint} of {t} is not given by an input"
    return None


def _signature(types: Sequence[Type], result: Type) -> tuple[DynamicSignature, list[ShapeVar]]:
    """The signature of a kernel with (symbolic) parameter `types` and `result` type, and
    its variables in order of first occurrence in the inputs."""
    order: dict[ShapeVar, int] = {}

    def code(d: Dim) -> int:
        if isinstance(d, ShapeVar):
            return -1 - order.setdefault(d, len(order))
        return int(d)  # type: ignore[arg-type]

    inputs = tuple((tuple(code(d) for d in t.shape), t.dtype) for ty in types for t in _leaves(ty))
    outputs = tuple((tuple(code(d) for d in t.shape), t.dtype) for t in _leaves(result))
    names = tuple(v.name_hint for v in order)
    return DynamicSignature(inputs, outputs, names), list(order)


def lower_dynamic(
    fn: Function, param_types: Sequence[Type], name: str, target: Target
) -> DynamicKernel:
    """Primitive function `fn`, whose parameters have `param_types` (with `?` or symbolic
    dimensions), as one kernel for all sizes (see the module docstring); `LoweringError`
    when it cannot be."""
    typed = _typed_symbolically(fn, param_types)
    types: list[Type] = [p.type_annotation for p in typed.params]  # type: ignore[misc]
    result = infer_expr(typed).type_of(typed.body)
    signature, variables = _signature(types, result)
    try:
        lowered = lower_primitive(typed, None, name, target, symbolic=True)
    except LoweringError:
        raise
    except Exception as exc:
        raise LoweringError(f"the kernel cannot be scheduled with run-time extents: {exc}") from exc
    dims = decl_buffer((max(1, len(variables)),), INDEX_DTYPE, "dims")
    func = lowered.func
    func = PrimFunc(
        func.name,
        (*func.params, dims),
        func.body,
        {**func.attrs, "shape_vars": tuple(shape_variable(v) for v in variables)},
    )
    return DynamicKernel(attrs.evolve(lowered, func=func), signature)


__all__ = ["DynamicKernel", "DynamicSignature", "is_dynamic_type", "lower_dynamic"]
